"""CRF training: spargel vs python-crfsuite on the same attributes and objective.

Two data sets (``--dataset``):

* ``conll2000`` (default): CoNLL-2000 chunking, 22 labels, CRFsuite's classic chunking
  attributes (word and POS n-grams in a +-2 window);
* ``conll2002``: CoNLL-2002 Spanish NER (``esp.train`` / ``esp.testb``, ISO-8859-1), 9
  labels, generic word / POS n-gram, word-shape and affix attributes (:data:`NER_TEMPLATE`).
  With few labels the per-attribute work, not the |Y|^2 work, dominates.

Both learners see the same attributes (no features past the sentence edges), the
"observed" feature space, and the same objective ``sum -log p(y|x) + 1 * ||w||_1``
(CRFsuite ``lbfgs`` with c1=1, c2=0; spargel OWL-QN with l1=1, l2=0), each with its
default stopping rule (relative objective change < 1e-5 over 10 iterations). Every
learner runs in its own process so that its peak memory can be read.

Reported: final objective (each learner's weights evaluated by the same code),
iterations, gradient evaluations, time per gradient evaluation, test chunk (entity) F1
and token accuracy (conlleval rules), Viterbi tagging speed (feature extraction
excluded), active features and peak memory.

    python bench/conll2000.py [--dataset conll2000|conll2002] [--max-iter N] [--markdown FILE]
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table, peak_rss_mb, run_worker  # noqa: E402

C1 = 1.0

# generic NER attributes: words and POS in a +-2 window, word bigrams, POS bigrams and
# trigrams, shape tests and affixes of the current word (column 0 word, column 1 POS)
NER_TEMPLATE = """\
U00:w[-2]=%x[-2,0]
U01:w[-1]=%x[-1,0]
U02:w[0]=%x[0,0]
U03:w[1]=%x[1,0]
U04:w[2]=%x[2,0]
U05:w[-1]|w[0]=%x[-1,0]|%x[0,0]
U06:w[0]|w[1]=%x[0,0]|%x[1,0]
U07:lw[0]=%X[0,0]
U10:pos[-2]=%x[-2,1]
U11:pos[-1]=%x[-1,1]
U12:pos[0]=%x[0,1]
U13:pos[1]=%x[1,1]
U14:pos[2]=%x[2,1]
U15:pos[-1]|pos[0]=%x[-1,1]|%x[0,1]
U16:pos[0]|pos[1]=%x[0,1]|%x[1,1]
U17:pos[-1]|pos[0]|pos[1]=%x[-1,1]|%x[0,1]|%x[1,1]
U20:cap=%t[0,0,"^[A-ZÁÉÍÓÚÑÜ]"]
U21:allcap=%t[0,0,"^[A-ZÁÉÍÓÚÑÜ]+$"]
U22:digit=%t[0,0,"[0-9]"]
U23:hyphen=%t[0,0,"-"]
U24:punct=%t[0,0,"^[^A-Za-z0-9ÁÉÍÓÚÑÜáéíóúñü]+$"]
U25:cap[-1]=%t[-1,0,"^[A-ZÁÉÍÓÚÑÜ]"]
U26:cap[1]=%t[1,0,"^[A-ZÁÉÍÓÚÑÜ]"]
U30:pre3=%m[0,0,"^.{1,3}"]
U31:suf3=%M[0,0,".{1,3}$"]
U32:suf2=%M[0,0,".{1,2}$"]

B
"""

DATASETS = {
    "conll2000": {"dir": "conll2000", "train": "train.txt", "test": "test.txt", "encoding": "utf-8",
                  "template": None, "f1": 93.6, "accuracy": 95.9, "eval_1": 0.5, "eval_2": 0.3},
    "conll2002": {"dir": "conll2002_spanish", "train": "esp.train", "test": "esp.testb", "encoding": "latin-1",
                  "template": NER_TEMPLATE, "f1": None, "accuracy": None, "eval_1": 0.4, "eval_2": 0.25},
}


def config(args):
    return DATASETS[args.dataset]


def template(args):
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE
    return config(args)["template"] or CRFSUITE_CHUNKING_TEMPLATE


def load(args, which):
    from spargel.data.conll import read_conll
    cfg = config(args)
    return list(read_conll(data_dir(cfg["dir"]) / cfg[which], encoding=cfg["encoding"]))


def worker_crfsuite(args):
    import pycrfsuite
    from spargel.data.templates import Template
    from spargel.metrics import accuracy, chunk_f1

    tpl = Template.parse(template(args))
    train, test = load(args, "train"), load(args, "test")
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in train:
        trainer.append(pycrfsuite.ItemSequence(tpl.extract(s.columns, pad=False)[0]), s.labels)
    trainer.select("lbfgs")
    trainer.set_params({"c1": C1, "c2": 0.0, "max_iterations": args.max_iter})
    model = Path(args.tmp) / "crfsuite.model"
    t0 = time.perf_counter()
    trainer.train(str(model))
    train_time = time.perf_counter() - t0
    its = trainer.logparser.iterations
    n_evals = sum(int(i.get("linesearch_trials", 1)) for i in its)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model))
    xs = [pycrfsuite.ItemSequence(tpl.extract(s.columns, pad=False)[0]) for s in test]
    t0 = time.perf_counter()
    pred = [tagger.tag(x) for x in xs]
    tag_time = time.perf_counter() - t0
    gold = [s.labels for s in test]
    info = tagger.info()
    weights = {"state": [[a, lab, w] for (a, lab), w in info.state_features.items()],
               "trans": [[p, c, w] for (p, c), w in info.transitions.items()]}
    (Path(args.tmp) / "crfsuite_weights.json").write_text(json.dumps(weights))
    return {"learner": "CRFsuite lbfgs (OWL-QN)", "threads": 1, "iterations": len(its), "n_evals": n_evals,
            "train_s": train_time, "per_eval_s": sum(i["time"] for i in its) / n_evals,
            "reported_objective": its[-1]["loss"], "active": its[-1]["active_features"],
            "f1": 100 * chunk_f1(gold, pred), "accuracy": 100 * accuracy(gold, pred),
            "tokens_per_s": sum(len(s) for s in test) / tag_time, "peak_mb": peak_rss_mb()}


def worker_spargel(args):
    import spargel
    from spargel.metrics import accuracy, chunk_f1
    from spargel.chain.crf import decode

    train, test = load(args, "train"), load(args, "test")
    crf = spargel.CRF(l1=C1, l2=0.0, feature_space="observed", template=template(args), pad=False,
                      n_jobs=args.threads, max_iter=args.max_iter)
    t0 = time.perf_counter()
    crf.fit(train, [s.labels for s in train])
    train_time = time.perf_counter() - t0
    hist = crf.history_
    data = crf._dataset(test)
    t0 = time.perf_counter()
    ids, _ = decode(crf.space_, data, crf.weights_)
    tag_time = time.perf_counter() - t0
    names = crf.classes_
    pred = [[names[i] for i in ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]] for s in range(data.n_sequences)]
    gold = [s.labels for s in test]
    out = {"learner": "spargel owlqn", "threads": args.threads, "iterations": crf.n_iter_,
           "n_evals": hist[-1]["n_evals"], "train_s": train_time, "per_eval_s": hist[-1]["elapsed"] / hist[-1]["n_evals"],
           "active": crf.n_active_features_, "stop": crf.stop_reason_,
           "f1": 100 * chunk_f1(gold, pred), "accuracy": 100 * accuracy(gold, pred),
           "tokens_per_s": sum(len(s) for s in test) / tag_time, "peak_mb": peak_rss_mb()}
    crf.save(Path(args.tmp) / f"spargel-{args.threads}.model")
    return out


def worker_objective(args):
    """The objective of both learners' final weights, computed by the same code."""
    import spargel
    from spargel.chain.crf import ChainCRF

    train = load(args, "train")
    est = spargel.CRF(l1=C1, feature_space="observed", template=template(args), pad=False)
    data = est._dataset(train, [s.labels for s in train], grow=True)
    space = est._feature_space(data)
    model = ChainCRF(space, data)
    ours = spargel.CRF.load(Path(args.tmp) / "spargel-1.model")
    return {"objective": objective(model, space, _weights_from_names(ours, space, est), C1),
            "crfsuite_objective": objective(model, space, _crfsuite_weights(Path(args.tmp) / "crfsuite_weights.json",
                                                                          space, est), C1)}


def objective(model, space, w, c1):
    return model.loss(w) + c1 * float(np.abs(w).sum())


def _fill(space, est, w, triples, trans):
    lab = est._label_vocab
    uni = est._uni_vocab
    L = space.n_labels
    for attr, label, value in triples:
        a, y = uni.id(attr), lab.id(label)
        if a < 0 or y < 0:
            raise KeyError(f"feature ({attr!r}, {label!r}) is not in the observed space")
        lo, hi = space.u_ptr[a], space.u_ptr[a + 1]
        k = lo + int(np.searchsorted(space.u_lab[lo:hi], y))
        if k >= hi or space.u_lab[k] != y:
            raise KeyError(f"feature ({attr!r}, {label!r}) is not in the observed space")
        w[k] = value
    for prev, cur, value in trans:
        pos = np.flatnonzero(space.t_pair == lab.id(prev) * L + lab.id(cur))
        w[space.t_base + pos[0]] = value
    return w


def _weights_from_names(crf, space, est):
    w = np.zeros(space.n_params)
    triples = [(a, lab, v) for (a, lab), v in crf.state_features_.items()]
    trans = [(p, c, v) for (p, c), v in crf.transition_features_.items()]
    return _fill(space, est, w, triples, trans)


def _crfsuite_weights(path, space, est):
    raw = json.loads(Path(path).read_text())
    return _fill(space, est, np.zeros(space.n_params), raw["state"], raw["trans"])


COLUMNS = [("learner", "learner", None), ("threads", "threads", None), ("iterations", "iterations", None),
           ("n_evals", "grad evals", None), ("train_s", "train time (s)", "{:.1f}"),
           ("per_eval_s", "s / grad eval", "{:.3f}"), ("ratio_eval", "vs CRFsuite", "{:.2f}x"),
           ("objective", "objective", "{:.2f}"), ("active", "active features", None),
           ("f1", "test chunk F1", "{:.2f}"), ("accuracy", "token acc.", "{:.2f}"),
           ("tokens_per_s", "Viterbi tokens/s", "{:,.0f}"), ("peak_mb", "peak memory (MiB)", "{:.0f}")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="conll2000")
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--worker", choices=["crfsuite", "spargel", "objective"], help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        fn = {"crfsuite": worker_crfsuite, "spargel": worker_spargel, "objective": worker_objective}[args.worker]
        print(json.dumps(fn(args)))
        return
    cfg = config(args)
    data_dir(cfg["dir"])
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--dataset", args.dataset, "--max-iter", str(args.max_iter), "--tmp", tmp]
        one_thread = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        print("training CRFsuite ...", file=sys.stderr)
        cs = run_worker(__file__, ["--worker", "crfsuite", *common], one_thread)
        rows = [cs]
        for threads in (1, 2):
            print(f"training spargel with {threads} thread(s) ...", file=sys.stderr)
            rows.append(run_worker(__file__, ["--worker", "spargel", "--threads", str(threads), *common]))
        objectives = run_worker(__file__, ["--worker", "objective", *common])
    rows[1]["objective"] = objectives["objective"]
    cs["objective"] = objectives["crfsuite_objective"]
    for r in rows:
        r["ratio_eval"] = r["per_eval_s"] / cs["per_eval_s"]
    table = markdown_table(rows, COLUMNS)
    sp1, sp2 = rows[1], rows[2]
    gap = (sp1["objective"] - cs["objective"]) / cs["objective"]
    checks = [
        ("objective within 0.1% of CRFsuite's", f"{100 * gap:+.3f}%", abs(gap) <= 1e-3),
        (f"time per gradient evaluation, 1 thread <= {cfg['eval_1']}x", f"{sp1['ratio_eval']:.2f}x",
         sp1["ratio_eval"] <= cfg["eval_1"]),
        (f"time per gradient evaluation, 2 threads <= {cfg['eval_2']}x", f"{sp2['ratio_eval']:.2f}x",
         sp2["ratio_eval"] <= cfg["eval_2"]),
        (f"test F1 >= CRFsuite's - 0.1" if cfg["f1"] is None else f"test chunk F1 >= {cfg['f1']}",
         f"{sp1['f1']:.2f}", sp1["f1"] >= (cs["f1"] - 0.1 if cfg["f1"] is None else cfg["f1"])),
        (f"token accuracy >= CRFsuite's - 0.1" if cfg["accuracy"] is None else f"token accuracy >= {cfg['accuracy']}",
         f"{sp1['accuracy']:.2f}", sp1["accuracy"] >= (cs["accuracy"] - 0.1 if cfg["accuracy"] is None
                                                        else cfg["accuracy"])),
        ("Viterbi tokens/s >= CRFsuite's", f"{sp1['tokens_per_s'] / cs['tokens_per_s']:.2f}x",
         sp1["tokens_per_s"] >= cs["tokens_per_s"]),
        ("peak memory <= 1.5x CRFsuite's", f"{sp1['peak_mb'] / cs['peak_mb']:.2f}x", sp1["peak_mb"] <= 1.5 * cs["peak_mb"]),
    ]
    check_table = "\n".join(["| target | measured | met |", "|---|---|---|"] +
                            [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in checks])
    text = (f"CRFsuite reported objective {cs['reported_objective']:.2f}; "
            f"spargel stop reason: {sp1['stop']}\n\n{table}\n\n{check_table}\n")
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
