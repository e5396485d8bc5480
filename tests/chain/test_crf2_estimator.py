"""Second-order CRFs through the estimator, the template language, model files and the
command line: a second-order pattern that order 1 cannot learn, every solver, n-best and
constraints, model files (order 2 round-trips, an order-1 file of the previous release
loads), warm starts and partial_fit across label renumbering, the CLI."""

import json
from pathlib import Path

import numpy as np
import pytest

from spargel import CRF
from spargel.cli import main
from spargel.data.templates import SHA_PEREIRA_TEMPLATE, Template
from spargel.errors import CapabilityError, DataFormatError
from spargel.core.model_file import ModelFileError
from spargel.chain.crf2_space import BOS_NAME, FeatureSpace2

DATA = Path(__file__).resolve().parents[1] / "data"


def periodic(n_seq=60, seed=0, period=("A", "A", "B", "B")):
    """Label sequences that repeat ``period`` from a random phase; only the first two
    tokens' observations reveal their labels, the others carry noise. The next label
    follows from the two before it (AA -> B, AB -> B, BB -> A, BA -> A), never from
    the previous one alone."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        n = int(rng.integers(6, 12))
        phase = int(rng.integers(len(period)))
        labels = [period[(phase + t) % len(period)] for t in range(n)]
        X.append([{"first": labels[t]} if t < 2 else {"noise": str(rng.integers(3))} for t in range(n)])
        y.append(labels)
    return X, y


def test_second_order_pattern_needs_order_two():
    X, y = periodic()
    Xt, yt = periodic(seed=1)
    one = CRF(l1=0.05, order=1).fit(X, y)
    two = CRF(l1=0.05, order=2).fit(X, y)
    assert two.score(Xt, yt) == 1.0
    assert one.score(Xt, yt) < 0.8
    # the triples carry the rule: after (A, A) comes B, after (A, B) comes B
    trans = two.transition_features_
    assert all(len(k) == 3 for k in trans)
    assert trans[("A", "A", "B")] > trans.get(("A", "A", "A"), 0.0)
    assert trans[("B", "B", "A")] > trans.get(("B", "B", "B"), 0.0)


@pytest.mark.parametrize("solver,params", [("owlqn", {"l1": 0.05}), ("lbfgs", {"l1": 0.0, "l2": 0.1}),
                                           ("sgd-l1", {"l1": 0.05, "random_state": 0}),
                                           ("fista", {"l1": 0.05, "max_iter": 3000})])
def test_every_batch_and_stochastic_solver(solver, params):
    X, y = periodic(n_seq=40)
    Xt, yt = periodic(seed=1)
    crf = CRF(solver=solver, order=2, **params).fit(X, y)
    assert crf.score(Xt, yt) == 1.0
    assert type(crf.space_) is FeatureSpace2


def test_capabilities_and_block_solvers():
    """Order 2 offers loss_grad and sgd; the block solvers (when this version has them)
    refuse it with a clear message."""
    from spargel.core.protocol import capabilities
    from spargel.solvers import available_solvers
    X, y = periodic(n_seq=10)
    crf = CRF(order=2)
    data = crf._dataset(X, y, grow=True)
    from spargel.core.factory import make_model
    assert capabilities(make_model("crf2", crf._feature_space(data), data)) == ["loss_grad", "map", "sgd"]
    for solver in set(available_solvers()) & {"bcd", "cd"}:
        with pytest.raises(CapabilityError, match="blocks"):
            CRF(solver=solver, order=2).fit(X, y)


def test_nbest_marginals_and_constraints():
    X, y = periodic(n_seq=40)
    crf = CRF(l1=0.5, order=2).fit(X, y)
    x = [X[0][:5]]
    best = crf.predict(x)[0]
    lists = crf.predict_nbest(x, k=4)[0]
    assert lists[0][0] == best
    probs = [p for _, p in lists]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-12
    marg = crf.predict_marginals(x)[0]
    assert all(abs(sum(m.values()) - 1) < 1e-12 for m in marg)
    # a forced label is kept, and the decoding around it follows the second-order rule
    forced = [None, None, "A" if best[2] == "B" else "B", None, None]
    assert crf.predict(x, constraints=[forced])[0][2] == forced[2]
    assert all(p[2] == forced[2] for p, _ in crf.predict_nbest(x, k=3, constraints=[forced])[0])


def test_template_label_context():
    t = Template.parse("U0:%x[0,0]\n*1:%x[0,1]\nB\nT\n")
    assert t.transitions and t.triples
    assert not Template.parse("U0:%x[0,0]\nB\n").triples          # order-1 files unchanged
    for bad in ("T0", "T:%x[0,0]", "U:%x[0,0]\nT x"):
        with pytest.raises(DataFormatError, match="stands alone"):
            Template.parse(bad)
    rows = [[["the", "DT"], ["dog", "NN"]]]
    with pytest.raises(ValueError, match="line 'T'"):
        CRF(order=2, template="U0:%x[0,0]\nB\n").fit(rows, [["B-NP", "I-NP"]])
    with pytest.raises(ValueError, match="order=2"):
        CRF(order=1, template="U0:%x[0,0]\nT\n").fit(rows, [["B-NP", "I-NP"]])
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        CRF(order=3).fit(rows, [["B-NP", "I-NP"]])
    with pytest.raises(ValueError, match="reserved"):
        CRF(order=2).fit([[{"a": 1}], [{"b": 1}]], [[BOS_NAME], ["x"]])


def test_sha_pereira_template_on_columns():
    rows = [[["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"], ["deficit", "NN"]]] * 4
    labels = [["B-NP", "O", "B-NP", "I-NP"]] * 4
    crf = CRF(order=2, template=SHA_PEREIRA_TEMPLATE, solver="lbfgs", l1=0.0, l2=1.0).fit(rows, labels)
    assert crf.predict(rows[:1]) == labels[:1]
    # each predicate with the label and with the label pair; the first pair starts at BOS
    assert ("*12:pos[0]=PRP", BOS_NAME, "B-NP") in crf.bigram_features_
    assert ("*12:pos[0]=PRP", "B-NP") in crf.state_features_
    assert ("*12:pos[0]=DT", "O", "B-NP") in crf.bigram_features_
    assert (BOS_NAME, "B-NP", "O") in crf.transition_features_
    assert ("B", BOS_NAME, "B-NP") in crf.bigram_features_          # the plain pair weights


def test_model_files_round_trip(tmp_path):
    X, y = periodic(n_seq=30)
    crf = CRF(l1=0.1, order=2).fit(X, y)
    path = tmp_path / "two.spargel"
    crf.save(path)
    back = CRF.load(path)
    assert back.order == 2 and type(back.space_) is FeatureSpace2
    np.testing.assert_array_equal(back.weights_, crf.weights_)
    assert back.predict(X) == crf.predict(X)
    assert back.transition_features_ == crf.transition_features_
    assert back.predict_marginals(X[:2]) == crf.predict_marginals(X[:2])


def test_an_order_one_file_of_the_previous_release_still_loads():
    """tests/data/order1_release.spargel was written by spargel before order 2 existed
    (the commit is in the JSON beside it, with its predictions)."""
    expect = json.loads((DATA / "order1_release.json").read_text())
    crf = CRF.load(DATA / "order1_release.spargel")
    assert crf.order == 1 and getattr(crf.space_, "order", 1) == 1
    assert crf.predict(expect["X"]) == expect["predict"]
    marg = crf.predict_marginals(expect["X"])
    got = [[m[lab] for m, lab in zip(ms, p)] for ms, p in zip(marg, expect["predict"])]
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(expect["marginals"]), rtol=1e-9)


def test_a_file_with_an_unknown_order_is_refused(tmp_path):
    X, y = periodic(n_seq=10)
    crf = CRF(l1=0.1, order=2).fit(X, y)
    crf.order = 3
    crf.save(tmp_path / "bad.spargel")
    with pytest.raises(ModelFileError, match="order 3"):
        CRF.load(tmp_path / "bad.spargel")


def _by_name(crf):
    return crf.state_features_, crf.bigram_features_, crf.transition_features_


def test_warm_start_maps_weights_across_label_numbering():
    """A second fit on data whose labels appear in another order starts from the
    previous weights, matched by names (pairs with the begin marker and triples too)."""
    X, y = periodic(n_seq=30, period=("A", "B", "B", "C"))
    crf = CRF(l1=0.2, order=2, warm_start=True).fit(X, y)
    before, names = _by_name(crf), list(crf._label_vocab.names)
    first = [lab for lab in ("A", "B", "C") if lab != names[0]][0]
    order = sorted(range(len(y)), key=lambda i: y[i][0] != first)   # another label comes first
    crf._remember_for_warm_start()
    data = crf._dataset([X[i] for i in order], [y[i] for i in order], grow=True)
    assert list(crf._label_vocab.names) != names                     # renumbered
    space = crf._feature_space(data)
    w0 = crf._warm_start_weights(space)
    crf._set_fitted(space, w0)
    assert _by_name(crf) == before


def test_partial_fit_grows_labels_and_keeps_weights():
    from spargel.chain.streaming import grow_space
    X, y = periodic(n_seq=20)
    crf = CRF(order=2, solver="sgd-l1", l1=0.01, random_state=0)
    crf.partial_fit(X[:10], y[:10])
    assert sorted(crf.classes_) == ["A", "B"]
    # a chunk with a new label: the layout grows, every old weight keeps its meaning
    X2, y2 = periodic(n_seq=10, seed=3, period=("A", "C", "B"))
    state = crf._stream_state
    old_space, old_w = state.space, state.sgd.v.copy()
    crf.partial_fit(X2, y2)
    new_space = state.space
    assert new_space.n_labels == 3 and type(new_space) is FeatureSpace2
    _, pos = grow_space(old_space, 3, len(state.uni), len(state.big), crf._dataset(X2, y2), "observed", True,
                        FeatureSpace2)
    np.testing.assert_array_equal(np.concatenate(old_space.weight_keys(3)),
                                  np.concatenate(new_space.weight_keys(3))[pos])
    assert set(crf.predict(X)[0]) <= {"A", "B", "C"}
    assert any(obs == "B" for obs, _, _ in crf.bigram_features_)       # the plain pair weights
    with pytest.raises(ValueError, match="order"):
        crf.set_params(order=1).partial_fit(X[:2], y[:2])


def test_path_at_order_two():
    X, y = periodic(n_seq=30)
    rows = CRF(order=2, max_iter=100).path(X, y, n_l1=3)
    assert rows[0]["active"] == 0                                   # l1_max is exact
    assert rows[-1]["active"] > 0 and rows[-1]["active_transitions"] > 0


# --------------------------------------------------------------------------- command line
def _write(path, sents):
    with open(path, "w") as fh:
        for words, tags, labels in sents:
            for w, p, lab in zip(words, tags, labels):
                fh.write(f"{w} {p} {lab}\n")
            fh.write("\n")
    return path


def _periodic_columns(n_seq, seed):
    X, y = periodic(n_seq, seed)
    return [([f"w{t}" for t in range(len(labels))], [x.get("first", "N") for x in seq], labels)
            for seq, labels in zip(X, y)]


def test_cli_train_label_dump_at_order_two(tmp_path, capsys):
    train = _write(tmp_path / "train.txt", _periodic_columns(40, 0))
    test = _write(tmp_path / "test.txt", _periodic_columns(20, 1))
    tpl = tmp_path / "p.tpl"
    tpl.write_text("U0:%x[0,1]\nB\nT\n")
    model = tmp_path / "m.spargel"
    assert main(["train", "--quiet", "--order", "2", "--l1", "0.05", "-p", str(tpl), str(train), str(model)]) == 0
    capsys.readouterr()
    assert main(["label", "-m", str(model), str(test)]) == 0
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if ln.strip()]
    assert all(r[-1] == r[-2] for r in rows)                   # every token right
    assert main(["label", "-m", str(model), "--nbest", "2", "--marginals", str(test)]) == 0
    assert len(capsys.readouterr().out.splitlines()[0].split()) == 3 + 4
    assert main(["dump", "--kind", "transition", str(model)]) == 0
    lines = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert lines and all(obs == "T" and len(prev.split()) == 2 for obs, prev, _, _ in lines)
    # the default template at order 2 has the triples
    assert main(["train", "--quiet", "--order", "2", "--max-iter", "5", str(train), str(model)]) == 0
    assert CRF.load(model).order == 2


def test_cli_order_errors(tmp_path, capsys):
    train = _write(tmp_path / "train.txt", _periodic_columns(5, 0))
    tpl = tmp_path / "p.tpl"
    tpl.write_text("U0:%x[0,1]\nB\n")
    rc = main(["train", "--order", "2", "-p", str(tpl), str(train), str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 1 and "line 'T'" in err and err.count("\n") == 1
    tpl.write_text("U0:%x[0,1]\nT\n")
    rc = main(["train", "-p", str(tpl), str(train), str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 1 and "--order 2" in err
    assert main(["train", "--order", "3", str(train), str(tmp_path / "m")]) == 2


def test_cli_streaming_at_order_two(tmp_path, capsys):
    train = _write(tmp_path / "train.txt", _periodic_columns(40, 0))
    tpl = tmp_path / "p.tpl"
    tpl.write_text("U0:%x[0,1]\nB\nT\n")
    model = tmp_path / "m.spargel"
    rc = main(["train", "--quiet", "--order", "2", "--stream", "10", "--max-iter", "3", "-p", str(tpl), str(train),
               str(model)])
    assert rc == 0
    crf = CRF.load(model)
    assert crf.order == 2 and crf.transition_features_
