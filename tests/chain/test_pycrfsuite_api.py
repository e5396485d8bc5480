"""``spargel.pycrfsuite``: python-crfsuite's API on spargel.

Ground truth without python-crfsuite: ``data/crfsuite_small.crfsuite`` was written by
python-crfsuite's ``Trainer`` and ``data/crfsuite_small.json`` holds what its ``Tagger``
answered (see test_crfsuite_format.py); probabilities and marginals are checked against
enumeration over every label sequence from the weights ``info()`` lists. The tests that
exchange files with python-crfsuite itself run only where it is installed."""

import io
import itertools
import json
import math
import os
from contextlib import redirect_stdout

import numpy as np
import pytest

from spargel import pycrfsuite
from spargel.errors import ItemFormatError, ModelFileError

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
SMALL = os.path.join(DATA, "crfsuite_small.crfsuite")

X = [[{"w": "the", "n": 0.5}, {"w": "dog"}, {"w": "barks", "end": True}],
     [{"w": "a"}, {"w": "cat", "n": 2.0}],
     [{"w": "the"}, {"w": "cat"}, {"w": "sleeps", "end": True}],
     [["w:a"], ["w:dog"], ["w:runs", "end"]]]
Y = [["D", "N", "V"], ["D", "N"], ["D", "N", "V"], ["D", "N", "V"]]


def _train(tmp_path, algorithm="lbfgs", params=None, name="m.crfsuite", cls=None, holdout=-1, groups=None):
    trainer = (cls or pycrfsuite.Trainer)(algorithm, verbose=False)
    for i, (x, y) in enumerate(zip(X, Y)):
        trainer.append(x, y, group=0 if groups is None else groups[i])
    trainer.set_params(params or {"c2": 0.01, "max_iterations": 100})
    path = str(tmp_path / name)
    trainer.train(path, holdout=holdout)
    return trainer, path


# --------------------------------------------------------------------------- the module
def test_both_import_forms_give_the_module():
    import spargel.pycrfsuite as by_path
    assert by_path is pycrfsuite
    for name in ("Trainer", "BaseTrainer", "Tagger", "ItemSequence", "CRFSuiteError", "CRFSUITE_VERSION",
                 "__version__"):
        assert hasattr(pycrfsuite, name)
    assert pycrfsuite.CRFSUITE_VERSION.startswith("0.12") and pycrfsuite.__version__


# --------------------------------------------------------------------------- train and tag
@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "pa", "arow"])
def test_train_then_tag_round_trip(tmp_path, algorithm):
    params = {"max_iterations": 50}
    if algorithm in ("lbfgs", "l2sgd"):
        params["c2"] = 0.01
    _, path = _train(tmp_path, algorithm, params)
    with open(path, "rb") as fh:
        assert fh.read(4) == b"lCRF"
    with pycrfsuite.Tagger().open(path) as tagger:
        assert sorted(tagger.labels()) == ["D", "N", "V"]
        for x, y in zip(X, Y):
            assert tagger.tag(x) == y
    with pytest.raises(ValueError, match="not opened"):
        tagger.labels()


def test_the_trainer_trains_what_the_estimator_trains(tmp_path):
    from spargel import CRF
    _, path = _train(tmp_path, params={"c1": 0.05, "c2": 0.01, "max_iterations": 200})
    crf = CRF(c1=0.05, c2=0.01, max_iterations=200, delta=1e-5, epsilon=1e-5, period=10).fit(X, Y)
    again = CRF.load(path)
    assert again.state_features_.keys() == crf.state_features_.keys()
    for key, w in crf.state_features_.items():
        assert again.state_features_[key] == pytest.approx(w, abs=1e-9)


def test_a_python_crfsuite_file_tags_as_python_crfsuite_did():
    with open(os.path.join(DATA, "crfsuite_small.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    tagger = pycrfsuite.Tagger()
    tagger.open(SMALL)
    assert tagger.labels() == ref["labels"]
    for x, want in zip(ref["X"], ref["reference"]):
        assert tagger.tag(x) == want["tags"]
        assert tagger.tag() == want["tags"]                       # the sequence is kept
        assert tagger.probability(want["tags"]) == pytest.approx(want["probability_of_tags"], rel=1e-9)
        for t, marg in enumerate(want["marginals"]):
            for label, p in marg.items():
                assert tagger.marginal(label, t) == pytest.approx(p, abs=1e-9)
    with open(SMALL, "rb") as fh:
        data = fh.read()
    other = pycrfsuite.Tagger().open_inmemory(data)
    assert [other.tag(x) for x in ref["X"]] == [r["tags"] for r in ref["reference"]]
    info = tagger.info()
    assert info.header["size"] == str(len(data)) and info.header["off_features"] == "0x30"


@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
def test_the_one_call_path_tags_as_the_estimator(tmp_path):
    from spargel import CRF
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    Xr = [[{"w": words[rng.integers(30)], "v": float(rng.normal())} for _ in range(rng.integers(1, 12))]
          for _ in range(60)]
    Yr = [[("A", "B", "C")[(int(t["w"][1:]) + i) % 3] for i, t in enumerate(x)] for x in Xr]
    crf = CRF(c1=0.1, c2=0.01, max_iterations=30).fit(Xr, Yr)
    tagger = crf.tagger_
    Xt = Xr + [[{"w": "unknown"}], [{"w": "w1"}] * 150]          # unknown attributes, a long sequence
    assert [tagger.tag(x) for x in Xt] == crf.predict(Xt)


def test_an_empty_model_name_writes_nothing(tmp_path):
    trainer = pycrfsuite.Trainer(verbose=False)
    for x, y in zip(X, Y):
        trainer.append(x, y)
    trainer.set("max_iterations", 3)
    before = set(os.listdir(tmp_path))
    trainer.train("")
    assert set(os.listdir(tmp_path)) == before
    assert trainer.logparser.iterations and not any(e == "end" for e, *_ in trainer.logparser.events)


def test_no_data_and_a_single_label_train_as_crfsuite(tmp_path):
    trainer = pycrfsuite.Trainer(verbose=False)
    path = str(tmp_path / "empty.crfsuite")
    trainer.train(path)
    assert [e for e, *_ in trainer.logparser.events if e not in ("featgen_progress",)] == \
        ["start", "featgen_end", "prepare_error", "optimization_end", "end"]
    with open(path, "rb") as fh:
        assert fh.read(4) == b"lCRF"
    trainer.append([{"a": 1.0}, {"b": 1.0}], ["only", "only"])
    trainer.append([], [])                          # contributes nothing
    path = str(tmp_path / "one.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger().open(path)
    assert tagger.labels() == ["only"] and tagger.tag([{"a": 1.0}]) == ["only"]


# --------------------------------------------------------------------------- probabilities
def _enumerate(info, labels, xseq):
    """p(y | x) of every label sequence from the listed weights alone."""
    items = pycrfsuite.ItemSequence(xseq).items()
    scores = {}
    for ys in itertools.product(labels, repeat=len(items)):
        s = sum(v * info.state_features.get((a, y), 0.0) for item, y in zip(items, ys) for a, v in item.items())
        s += sum(info.transitions.get((a, b), 0.0) for a, b in zip(ys, ys[1:]))
        scores[ys] = s
    top = max(scores.values())
    z = sum(math.exp(s - top) for s in scores.values())
    return {ys: math.exp(s - top) / z for ys, s in scores.items()}


def test_probability_and_marginals_match_enumeration(tmp_path):
    _, path = _train(tmp_path, params={"c2": 0.1, "max_iterations": 50, "feature.possible_transitions": True})
    tagger = pycrfsuite.Tagger().open(path)
    info, labels = tagger.info(), tagger.labels()
    for x in X:
        probs = _enumerate(info, labels, x)
        tagger.set(x)
        best = max(probs, key=probs.get)
        assert tagger.tag() == list(best)
        for ys, p in probs.items():
            assert tagger.probability(list(ys)) == pytest.approx(p, rel=1e-9, abs=1e-15)
        for t in range(len(x)):
            margs = [tagger.marginal(y, t) for y in labels]
            assert sum(margs) == pytest.approx(1.0, abs=1e-12)
            for y, m in zip(labels, margs):
                assert m == pytest.approx(sum(p for ys, p in probs.items() if ys[t] == y), abs=1e-12)


# --------------------------------------------------------------------------- parameters
def test_parameters_names_defaults_and_help():
    trainer = pycrfsuite.Trainer()
    assert trainer.params() == ["feature.minfreq", "feature.possible_states", "feature.possible_transitions", "c1",
                                "c2", "max_iterations", "num_memories", "epsilon", "period", "delta", "linesearch",
                                "max_linesearch"]
    assert trainer.get_params() == {"feature.minfreq": 0.0, "feature.possible_states": False,
                                    "feature.possible_transitions": False, "c1": 0.0, "c2": 1.0,
                                    "max_iterations": 2147483647, "num_memories": 6, "epsilon": 1e-5,
                                    "period": 10, "delta": 1e-5, "linesearch": "MoreThuente",
                                    "max_linesearch": 20}
    assert "L1" in trainer.help("c1")
    for name, extra in (("l2sgd", {"calibration.eta": 0.1, "calibration.samples": 1000.0, "max_iterations": 1000,
                                   "delta": 1e-6}),
                        ("ap", {"max_iterations": 100, "epsilon": 0.0}),
                        ("averaged-perceptron", {"max_iterations": 100}),
                        ("pa", {"type": 1, "c": 1.0, "error_sensitive": True, "averaging": True}),
                        ("passive-aggressive", {"type": 1}),
                        ("arow", {"variance": 1.0, "gamma": 1.0})):
        trainer.select(name)
        params = trainer.get_params()
        assert all(params[k] == v for k, v in extra.items()), name
        trainer.set_params(params)
        assert trainer.get_params() == params
    trainer.select("l2sgd")
    assert "c1" not in trainer.params() and "L2" in trainer.help("c2")


def test_set_and_get_convert_as_crfsuite():
    trainer = pycrfsuite.Trainer(params={"c2": 100})
    assert trainer.get("c2") == 100.0 and isinstance(trainer.get("c2"), float)
    trainer.set("feature.possible_states", True)
    assert trainer.get("feature.possible_states") is True
    trainer.set("feature.possible_states", "0")
    assert trainer.get("feature.possible_states") is False
    trainer.set("max_iterations", "20")
    trainer.set("c1", "0.5")
    assert trainer.get("max_iterations") == 20 and trainer.get("c1") == 0.5
    trainer.set("c1", 1.0)
    trainer.select("lbfgs")                          # a new selection starts from the defaults
    assert trainer.get("c1") == 0.0


def test_parameter_errors():
    trainer = pycrfsuite.Trainer()
    with pytest.raises(ValueError, match="Parameter not found: foo = 1"):
        trainer.set("foo", True)
    with pytest.raises(ValueError, match="Parameter not found: foo"):
        trainer.get("foo")
    with pytest.raises(ValueError, match="Parameter not found: foo"):
        trainer.help("foo")
    with pytest.raises(ValueError, match="Bad arguments: algorithm='foo'"):
        trainer.select("foo")
    with pytest.raises(ValueError, match="Bad arguments"):
        trainer.select("lbfgs", type="crf2")
    with pytest.raises(ValueError, match="c1 must be a number"):
        trainer.set("c1", "abc")
    with pytest.raises(ValueError, match="max_iterations must be an integer"):
        trainer.set("max_iterations", 2.5)
    with pytest.raises(ValueError, match="linesearch must be one of"):
        trainer.set("linesearch", "Foo")
    with pytest.raises(ValueError, match="finite number"):
        trainer.set("c2", float("nan"))
    trainer.select("ap")
    with pytest.raises(ValueError, match="Parameter not found: c1"):
        trainer.set_params({"c1": 1.0})
    with pytest.raises(ValueError, match=r"\|x\| = 1, \|y\| = 2"):
        trainer.append([{"a": 1.0}], ["x", "y"])
    with pytest.raises(TypeError, match="label must be a string"):
        trainer.append([{"a": 1.0}], [1])


# --------------------------------------------------------------------------- the log
class Recording(pycrfsuite.Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events = []

    def on_start(self, log):
        self.events.append(("start", log))

    def on_featgen_progress(self, log, percent):
        self.events.append(("featgen_progress", percent))

    def on_featgen_end(self, log):
        self.events.append(("featgen_end", log))

    def on_prepared(self, log):
        self.events.append(("prepared", log))

    def on_iteration(self, log, info):
        self.events.append(("iteration", info))

    def on_optimization_end(self, log):
        self.events.append(("optimization_end", log))

    def on_end(self, log):
        self.events.append(("end", log))


def test_callbacks_receive_crfsuite_log_events(tmp_path):
    trainer = Recording("lbfgs", verbose=True)
    for x, y in zip(X, Y):
        trainer.append(x, y)
    trainer.set_params({"c2": 0.01, "max_iterations": 7})
    trainer.train(str(tmp_path / "m.crfsuite"))
    kinds = [e for e, _ in trainer.events]
    assert kinds[0] == "start" and kinds.count("featgen_progress") == 51
    rest = [k for k in kinds if k != "featgen_progress"]
    n = len(trainer.logparser.iterations)
    assert 1 <= n <= 7 and rest == ["start", "featgen_end", "prepared"] + ["iteration"] * n + \
        ["optimization_end", "end"]
    infos = [info for e, info in trainer.events if e == "iteration"]
    assert infos == trainer.logparser.iterations and infos[-1] is trainer.logparser.last_iteration
    assert [i["num"] for i in infos] == list(range(1, n + 1))
    for key in ("loss", "feature_norm", "error_norm", "active_features", "linesearch_trials", "linesearch_step",
                "time"):
        assert key in infos[0]
    assert infos[-1]["loss"] < infos[0]["loss"]
    featgen = dict(trainer.events)["featgen_end"]
    assert "Number of features: " in featgen and "Seconds required: " in featgen
    assert "L-BFGS optimization\nc1: 0.000000\nc2: 0.010000\n" in dict(trainer.events)["prepared"]
    assert dict(trainer.events)["end"].startswith("Storing the model\nNumber of active features: ")


def test_messages_reach_a_subclass_without_init_and_its_errors_stop_training(tmp_path):
    class Capturing(pycrfsuite.Trainer):
        def __init__(self):
            self.messages = []

        def message(self, message):
            self.messages.append(message)

    trainer = Capturing()
    trainer.append(X[0], Y[0])
    trainer.append(X[1], Y[1])
    assert not trainer.messages
    trainer.train(str(tmp_path / "m.crfsuite"))
    assert "type: CRF1d\n" in trainer.messages and "0" in trainer.messages and "\n" in trainer.messages

    class Failing(pycrfsuite.Trainer):
        def message(self, message):
            if message.startswith("***** Iteration"):
                raise KeyError("stop")

    failing = Failing(verbose=False)
    failing.append(X[0], Y[0])
    failing.append(X[1], Y[1])
    with pytest.raises(KeyError, match="stop"):
        failing.train(str(tmp_path / "f.crfsuite"))
    assert not os.path.exists(tmp_path / "f.crfsuite")


def test_holdout_scores_are_logged_and_parsed(tmp_path):
    trainer, _ = _train(tmp_path, params={"c2": 0.01, "max_iterations": 5}, holdout=1, groups=[0, 0, 1, 0])
    log = "".join(trainer.logparser.log)
    assert log.startswith("Holdout group: 2\n\nFeature generation\n")
    it = trainer.logparser.last_iteration
    assert "\nItem accuracy: " in log and " / 3 (" in log and "\nInstance accuracy: " in log and " / 1 (" in log
    assert 0 <= it["item_accuracy_float"] <= 1 and it["instance_accuracy"] in (0, 1)
    assert set(it["scores"]) == {"D", "N", "V"} and 0 <= it["avg_f1"] <= 1
    assert it["scores"]["D"].ref == 1


def test_the_log_parser_reads_a_crfsuite_log():
    lines = ["Feature generation\n", "type: CRF1d\n"] + ["0", ".", ".", ".", ".", "1"] + ["\n",
             "Number of features: 12\n", "Seconds required: 0.010\n", "\n", "Averaged perceptron\n",
             "max_iterations: 2\n", "\n", "***** Iteration #1 *****\n", "Loss: 3.500000\n", "Feature norm: 2.000000\n",
             "Seconds required for this iteration: 0.001\n", "Performance by label (#match, #model, #ref) "
             "(precision, recall, F1):\n", "    A: (1, 2, 1) (0.5000, 1.0000, 0.6667)\n",
             "    B: (0, 0, 0) (******, ******, ******)\n", "Macro-average precision, recall, F1: (0.250000, "
             "0.500000, 0.333333)\n", "Item accuracy: 1 / 2 (0.5000)\n", "Instance accuracy: 0 / 1 (0.0000)\n", "\n",
             "Total seconds required for training: 0.002\n", "\n", "Storing the model\n",
             "Seconds required: 0.003\n", "\n"]
    parser = pycrfsuite.TrainLogParser()
    events = [parser.feed(line) for line in lines]
    assert [e for e in events if e] == ["start"] + ["featgen_progress"] * 6 + \
        ["featgen_end", "prepared", "iteration", "optimization_end", "end"]
    assert parser.featgen_percent == 10 and parser.featgen_num_features == 12 and parser.featgen_seconds == 0.01
    it = parser.last_iteration
    assert it["loss"] == 3.5 and it["feature_norm"] == 2.0 and it["item_accuracy_float"] == 0.5
    assert it["scores"]["A"] == pycrfsuite.LabelScore(1, 2, 1, 0.5, 1.0, 0.6667)
    assert it["scores"]["B"].precision is None
    assert parser.training_seconds == 0.002 and parser.storing_seconds == 0.003
    assert parser.last_log == "Storing the model\nSeconds required: 0.003\n\n"


# --------------------------------------------------------------------------- items
def test_item_sequences_flatten_as_python_crfsuite():
    seq = pycrfsuite.ItemSequence([
        {"a": {"b": "c", "d": 2, "e": ["f", "g"], "h": {"i": {"j": 1}}}, "k": True, "l": False, "m": b"n", b"o": 3},
        ["p", "q"], {"r": {"s"}}, {}])
    assert len(seq) == 4 and repr(seq) == "<ItemSequence of size 4>"
    assert seq.items() == [{"a:b:c": 1.0, "a:d": 2.0, "a:e:f": 1.0, "a:e:g": 1.0, "a:h:i:j": 1.0, "k": 1.0,
                            "l": 0.0, "m:n": 1.0, "o": 3.0}, {"p": 1.0, "q": 1.0}, {"r:s": 1.0}, {}]
    assert pycrfsuite.ItemSequence(seq).items() == seq.items()
    assert pycrfsuite.ItemSequence(seq.items()).items() == seq.items()
    for bad in ("foo", ["foo"], [[{"foo": 1.0}]], [{"a": None}]):
        with pytest.raises(ItemFormatError):
            pycrfsuite.ItemSequence(bad)
    assert issubclass(ItemFormatError, TypeError) and issubclass(ItemFormatError, ValueError)


def test_every_item_format_tags_alike(tmp_path):
    _, path = _train(tmp_path)
    tagger = pycrfsuite.Tagger().open(path)
    x = [{"w": "the", "n": 0.5}, {"w": "dog"}, {"w": "barks", "end": True}]
    want = tagger.tag(x)
    assert tagger.tag(pycrfsuite.ItemSequence(x)) == want
    assert tagger.tag([{"w": b"the", "n": 0.5}, {"w": "dog"}, {"w": "barks", "end": 1}]) == want
    assert tagger.tag([{"w": {"the": 1.0}, "n": 0.5}, {"w": ["dog"]}, {"w": {"barks"}, "end": True}]) == want
    assert tagger.tag(tuple(x)) == want
    with pytest.raises(ItemFormatError):
        tagger.tag("foo")
    with pytest.raises(ValueError):
        tagger.tag([["w:the"], "w:dog"])


# --------------------------------------------------------------------------- the tagger
def test_tagger_errors(tmp_path):
    tagger = pycrfsuite.Tagger()
    with pytest.raises(ValueError, match="not opened"):
        tagger.tag(X[0])
    with pytest.raises(RuntimeError, match="closed"):
        tagger.info()
    with pytest.raises(RuntimeError, match="closed"):
        tagger.dump(str(tmp_path / "d.txt"))
    with pytest.raises(FileNotFoundError):
        tagger.open(str(tmp_path / "missing"))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"lCRF" + b"\0" * 100)
    with pytest.raises(ModelFileError):
        tagger.open(str(garbage))
    with pytest.raises(ValueError):
        tagger.open_inmemory(b"lCRFabc")
    with pytest.raises(TypeError):
        tagger.open_inmemory("lCRF")
    tagger.open(SMALL)
    assert tagger.tag() == []                        # no sequence yet
    tagger.set([{"w": "the"}, {"w": "cat"}])
    with pytest.raises(ValueError, match=r"\|x\| = 2, \|y\| = 1"):
        tagger.probability(["D"])
    with pytest.raises(ValueError, match="label identifier: nope"):
        tagger.probability(["D", "nope"])
    with pytest.raises(ValueError, match="out of range"):
        tagger.marginal(tagger.labels()[0], 2)
    with pytest.raises(ValueError, match="label identifier"):
        tagger.marginal("nope", 0)
    assert tagger.tag([]) == [] and tagger.probability([]) == 0.0


def test_dump_lists_the_model_as_crfsuite(tmp_path):
    tagger = pycrfsuite.Tagger().open(SMALL)
    out = io.StringIO()
    with redirect_stdout(out):
        tagger.dump()
    text = out.getvalue()
    target = tmp_path / "dump.txt"
    tagger.dump(str(target))
    assert target.read_text(encoding="utf-8") == text
    sections = [line for line in text.splitlines() if line.endswith("= {")]
    assert sections == ["FILEHEADER = {", "LABELS = {", "ATTRIBUTES = {", "TRANSITIONS = {", "STATE_FEATURES = {"]
    info = tagger.info()
    assert f"  magic: lCRF\n  size: {info.header['size']}\n  type: FOMC\n" in text
    label, i = next(iter(info.labels.items()))
    assert f"\n  {int(i):5d}: {label}\n" in text
    (a, b), w = next(iter(info.transitions.items()))
    assert f"\n  (1) {a} --> {b}: {w:f}\n" in text
    (a, b), w = next(iter(info.state_features.items()))
    assert f"\n  (0) {a} --> {b}: {w:f}\n" in text


# --------------------------------------------------------------------------- python-crfsuite itself
def test_files_move_both_ways_with_python_crfsuite(tmp_path):
    real = pytest.importorskip("pycrfsuite", reason="python-crfsuite is not installed")
    if real is pycrfsuite:
        pytest.skip("pycrfsuite is spargel's module here")
    _, ours = _train(tmp_path, params={"c1": 0.05, "c2": 0.01, "max_iterations": 100})
    trainer = real.Trainer("lbfgs", verbose=False)
    for x, y in zip(X, Y):
        trainer.append(x, y)
    trainer.set_params({"c1": 0.05, "c2": 0.01, "max_iterations": 100})
    theirs = str(tmp_path / "theirs.crfsuite")
    trainer.train(theirs)
    probe = X + [[{"w": "a"}, {"w": "dog", "n": 1.5}, {"w": "sleeps"}]]
    for path in (ours, theirs):
        a, b = real.Tagger(), pycrfsuite.Tagger()
        a.open(path)
        b.open(path)
        assert a.labels() == b.labels()
        for x in probe:
            assert b.tag(x) == a.tag(x)
            a.set(x)
            b.set(x)
            assert b.probability(a.tag()) == pytest.approx(a.probability(a.tag()), rel=1e-9)
            for t in range(len(x)):
                for y in a.labels():
                    assert b.marginal(y, t) == pytest.approx(a.marginal(y, t), abs=1e-9)
        assert b.info().header == a.info().header
        assert b.info().attributes == a.info().attributes
    # the same training gives the same model (CRFsuite's objective, solved to its tolerance)
    mine, theirs_info = pycrfsuite.Tagger().open(ours).info(), real.Tagger()
    theirs_info.open(theirs)
    theirs_info = theirs_info.info()
    for key, w in theirs_info.state_features.items():
        assert mine.state_features.get(key, 0.0) == pytest.approx(w, abs=2e-3)


def test_the_per_call_encoder_reads_items_as_the_batch_encoder():
    from spargel.data.featuredicts import encode_known, encode_sequences
    from spargel.data.vocab import Vocabulary
    vocab = Vocabulary(["w:the", "w:dog", "n", "end", "p:q:r", "k:x", "k:y", "o", "a"])
    seq = [{"w": "the", "n": 0.5}, {"w": "dog", "end": True, "n": 0}, {"w": "cat", "zz": 1.0, "qq": "v"},
           {b"w": "the", b"n": 1, "end": False}, {"p": {"q": "r"}, "k": ["x", "y"]}, ["w:the", "o", "nope"],
           [("n", 2.5), "a"], ("a", "o"), {}, {"w": b"dog", "o": 1}]
    ptr, ids, vals = encode_known(seq, vocab, ":")
    _, tok_ptr, want_ids, want_vals = encode_sequences([seq], vocab, False, ":")
    assert ptr == tok_ptr.tolist()[:1] + ptr[1:] and len(ptr) == len(seq) + 1
    for t in range(len(seq)):
        got = sorted((i, 1.0 if vals is None else vals[k]) for k, i in enumerate(ids) if ptr[t] <= k < ptr[t + 1]
                     and i >= 0)
        want = sorted((int(want_ids[k]), float(want_vals[k])) for k in range(tok_ptr[t], tok_ptr[t + 1]))
        assert got == want, t
    for bad in (["w:the"], [{"w": None}], [{"w": float("nan")}], [[{"a": 1}]]):
        with pytest.raises((TypeError, ValueError)):
            encode_known([bad[0]] if isinstance(bad[0], dict) else bad, vocab, ":")


def test_tagging_from_several_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor
    from spargel import CRF
    crf = CRF.load(SMALL)
    with open(os.path.join(DATA, "crfsuite_small.json"), encoding="utf-8") as fh:
        ref = json.load(fh)
    xs = [x * k for x in ref["X"] for k in (1, 7, 40)]              # lengths that grow the buffers
    want = [crf.predict([x])[0] for x in xs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(crf.predict_single, xs * 5)) == want * 5


def test_extreme_weights_go_to_log_space_and_stay_right():
    from spargel import CRF
    from spargel.chain.crfsuite_compat import Tagger
    crf = CRF.load(SMALL)
    crf.weights_ = crf.weights_ * 800.0              # the scaled recursion cannot hold these
    tagger = Tagger(crf)
    with open(os.path.join(DATA, "crfsuite_small.json"), encoding="utf-8") as fh:
        x = json.load(fh)["X"][0]
    tagger.set(x)
    assert tagger._fast().posterior(tagger._encoded()) is None
    best = tagger.tag()
    assert best == crf.predict([x])[0]
    margs = [[tagger.marginal(y, t) for y in tagger.labels()] for t in range(len(x))]
    assert all(abs(sum(m) - 1.0) < 1e-9 for m in margs)
    want = float(np.exp(-crf._inference().sequence_loss(crf.space_, crf._dataset([x], [best]), crf.weights_)[0]))
    assert tagger.probability(best) == pytest.approx(want, rel=1e-9)
