"""CRFsuite's other trainers: spargel vs python-crfsuite on the same attributes.

The first ``--sentences`` (3000) CoNLL-2000 training sentences with CRFsuite's classic
chunking attributes (as ``bench/conll2000.py``), ``--epochs`` (10) epochs of each of
CRFsuite's ``ap``, ``pa``, ``arow`` and ``l2sgd`` (their default parameters otherwise;
l2sgd's learning-rate calibration included), evaluated on the whole CoNLL-2000 test
set (chunk F1, conlleval rules). Both learners get the same pre-extracted attribute
lists; the fit time is python-crfsuite's ``append`` of every sequence plus ``train``
(what sklearn-crfsuite's ``fit`` does) against ``spargel.CRF(algorithm=...).fit``.
Each learner runs in its own process, one thread; spargel's compiled kernels are
loaded by a small fit first (the first-use compilation is not timed). Both the CPU time
of the fitting process and the wall time are reported; the target is checked on CPU
time, which a busy machine disturbs less (both learners are single-threaded).

Both learners visit the samples in a random order, so one run's F1 is one draw:
spargel runs ``--seeds`` (5) orders and reports the mean F1 (and its range) and the
median fit time. Targets: chunk F1 >= CRFsuite's - 0.3 and fit time <= 0.5x
CRFsuite's, each trainer.

    python bench/crfsuite_trainers.py [--sentences N] [--epochs N] [--markdown FILE]

``--sentences 0`` takes the whole training set; ``--epochs 0`` leaves each tool's own
default stopping (CRFsuite: 100 epochs for ap / pa / arow, or an epoch without mistakes
for arow; l2sgd up to 1000 epochs, stopping when the loss improves by less than 1e-6
over 10 epochs; spargel's defaults for ``CRF(algorithm)`` follow them).

    python bench/crfsuite_trainers.py --sentences 0 --epochs 0 --seeds 1
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table, run_worker  # noqa: E402

TRAINERS = ("ap", "pa", "arow", "l2sgd")


def load(args):
    from spargel.data.conll import read_conll
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE, Template
    d = data_dir("conll2000")
    tpl = Template.parse(CRFSUITE_CHUNKING_TEMPLATE)
    train = list(read_conll(d / "train.txt"))
    if args.sentences:
        train = train[:args.sentences]
    test = list(read_conll(d / "test.txt"))

    def feats(sents):
        return [tpl.extract(s.columns, pad=False)[0] for s in sents]
    return feats(train), [s.labels for s in train], feats(test), [s.labels for s in test]


def worker_crfsuite(args):
    import pycrfsuite
    from spargel.metrics import chunk_f1
    X, Y, Xt, Yt = load(args)
    out = {}
    for alg in TRAINERS:
        model = Path(args.tmp) / f"{alg}.crfsuite"
        t0, c0 = time.perf_counter(), time.process_time()
        trainer = pycrfsuite.Trainer(algorithm=alg, verbose=False)
        for x, y in zip(X, Y):
            trainer.append(x, y)
        if args.epochs:
            trainer.set_params({"max_iterations": args.epochs})
        t1 = time.perf_counter()
        trainer.train(str(model))
        t2, c2 = time.perf_counter(), time.process_time()
        tagger = pycrfsuite.Tagger()
        tagger.open(str(model))
        pred = [tagger.tag(x) for x in Xt]
        out[alg] = {"fit_s": t2 - t0, "fit_cpu": c2 - c0, "train_s": t2 - t1, "f1": 100 * chunk_f1(Yt, pred),
                    "epochs": len(trainer.logparser.iterations)}
    return out


def worker_spargel(args):
    import warnings
    import numpy as np
    import spargel
    from spargel.metrics import chunk_f1
    X, Y, Xt, Yt = load(args)
    out = {}
    for alg in TRAINERS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spargel.CRF(alg, max_iterations=1).fit(X[:20], Y[:20])          # load the compiled kernels
            f1, fit_s, fit_cpu = [], [], []
            for seed in range(args.seeds):
                crf = spargel.CRF(alg, max_iterations=args.epochs or None, random_state=seed)
                t0, c0 = time.perf_counter(), time.process_time()
                crf.fit(X, Y)
                t1, c1 = time.perf_counter(), time.process_time()
                fit_s.append(t1 - t0)
                fit_cpu.append(c1 - c0)
                f1.append(100 * chunk_f1(Yt, crf.predict(Xt)))
        out[alg] = {"fit_s": float(np.median(fit_s)), "fit_cpu": float(np.median(fit_cpu)),
                    "f1": float(np.mean(f1)), "f1_range": f"{min(f1):.2f}-{max(f1):.2f}", "epochs": crf.n_iter_}
    return out


COLUMNS = [("trainer", "trainer", None), ("cs_cpu", "CRFsuite fit CPU (s)", "{:.2f}"),
           ("sp_cpu", "spargel fit CPU (s)", "{:.2f}"), ("ratio", "CPU ratio", "{:.2f}x"),
           ("cs_fit", "CRFsuite fit wall (s)", "{:.2f}"), ("cs_train", "of which train (s)", "{:.2f}"),
           ("sp_fit", "spargel fit wall (s)", "{:.2f}"), ("wall_ratio", "wall ratio", "{:.2f}x"), ("cs_f1", "CRFsuite chunk F1", "{:.2f}"),
           ("sp_f1", "spargel chunk F1 (mean)", "{:.2f}"), ("sp_range", "spargel F1 range", None), ("epochs", "epochs (CRFsuite / spargel)", None),
           ("met", "targets met", None)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=3000)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=5, help="spargel runs with random_state 0..N-1 (sample orders)")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--worker", choices=["crfsuite", "spargel"], help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps({"crfsuite": worker_crfsuite, "spargel": worker_spargel}[args.worker](args)))
        return
    import tempfile
    data_dir("conll2000")
    one_thread = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--sentences", str(args.sentences), "--epochs", str(args.epochs), "--seeds", str(args.seeds),
                  "--tmp", tmp]
        print("training CRFsuite ...", file=sys.stderr)
        cs = run_worker(__file__, ["--worker", "crfsuite", *common], one_thread)
        print("training spargel ...", file=sys.stderr)
        sp = run_worker(__file__, ["--worker", "spargel", *common], one_thread)
    rows = []
    for alg in TRAINERS:
        c, s = cs[alg], sp[alg]
        ratio = s["fit_cpu"] / c["fit_cpu"]
        ok = s["f1"] >= c["f1"] - 0.3 and ratio <= 0.5
        rows.append({"trainer": alg, "cs_cpu": c["fit_cpu"], "sp_cpu": s["fit_cpu"], "ratio": ratio,
                     "cs_fit": c["fit_s"], "cs_train": c["train_s"], "sp_fit": s["fit_s"],
                     "wall_ratio": s["fit_s"] / c["fit_s"], "cs_f1": c["f1"], "sp_f1": s["f1"], "sp_range": s["f1_range"], "epochs": f"{c['epochs']} / {s['epochs']}",
                     "met": "yes" if ok else "NO"})
    sentences = f"{args.sentences}" if args.sentences else "all 8,936"
    epochs = f"{args.epochs} epochs" if args.epochs else "each tool's default stopping"
    text = (f"{sentences} CoNLL-2000 training sentences, {epochs}, chunk F1 on the test set; "
            f"spargel: median time and mean F1 over {args.seeds} sample orders (random_state 0..{args.seeds - 1}), "
            f"CRFsuite: its one fixed order\n\n"
            + markdown_table(rows, COLUMNS) + "\n")
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
