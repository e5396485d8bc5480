"""Two checkouts' SGD and BCD on CoNLL-2000: the same weights, and the time per pass.

For a change that must not move a bit (a refactoring of the kernels' arguments): run
``--save`` with the old checkout's ``src`` and ``--compare`` with the new one. Each run
fits, on the first ``--sentences`` training sentences of CoNLL-2000 (CRFsuite's chunking
attributes), SGD-L1 in five variants (padded rows; mini-batches with l2; naive; clipping
with exponential decay; order 2), l2sgd and BCD for 2-3 iterations each, and the flat
log-linear classifier's SGD-L1 and BCD on synthetic data, and saves or compares every
weight vector (``np.array_equal``). ``--time`` instead prints the CPU seconds per SGD-L1
pass and per BCD sweep (median of three fits of four iterations, after a warm-up fit that
compiles the kernels).

    python bench/sgd_bcd_same.py --src ../old/src --save old-weights.npz
    python bench/sgd_bcd_same.py --compare old-weights.npz
    python bench/sgd_bcd_same.py --time [--src ../old/src]
"""

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir  # noqa: E402

RUNS = {
    "sgd_rows": dict(solver="sgd-l1", l1=0.5, l2=0.0, max_iter=3, solver_options={"eta0": 0.1}),
    "sgd_general_l2": dict(solver="sgd-l1", l1=0.5, l2=0.1, max_iter=3,
                           solver_options={"eta0": 0.1, "batch_size": 4}),
    "sgd_naive": dict(solver="sgd-l1", l1=0.5, l2=0.0, max_iter=2,
                      solver_options={"eta0": 0.05, "penalty_update": "naive"}),
    "sgd_clip_exp": dict(solver="sgd-l1", l1=0.3, l2=0.0, max_iter=3,
                         solver_options={"eta0": 0.1, "penalty_update": "clipping", "schedule": "exponential",
                                         "alpha": 0.9}),
    "sgd_order2": dict(solver="sgd-l1", l1=0.5, l2=0.0, max_iter=2, order=2, solver_options={"eta0": 0.1}),
    "l2sgd": dict(solver="l2sgd", l1=0.0, l2=1.0, max_iter=3),
    "bcd": dict(solver="bcd", l1=0.5, l2=0.1, max_iter=3),
}


def crf(**kw):
    import spargel
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE

    tpl = CRFSUITE_CHUNKING_TEMPLATE + ("T\n" if kw.get("order") == 2 else "")
    return spargel.CRF(template=tpl, pad=False, n_jobs=1, tol=0.0, random_state=0, **kw)


def weights(sents):
    from spargel.loglinear.estimator import LogLinearClassifier

    y = [s.labels for s in sents]
    out = {name: crf(**kw).fit(sents, y).weights_ for name, kw in RUNS.items()}
    rng = np.random.default_rng(0)
    Xf = [{f"f{j}": float(rng.normal()) for j in rng.choice(50, 6, replace=False)} for _ in range(400)]
    yf = [str(int(sum(d.values()) > 0) + (1 if "f3" in d else 0)) for d in Xf]
    for name, kw in {"flat_sgd": dict(solver="sgd-l1", l1=0.01, max_iter=3, solver_options={"eta0": 0.1}),
                     "flat_bcd": dict(solver="bcd", l1=0.01, max_iter=3)}.items():
        out[name] = LogLinearClassifier(tol=0.0, random_state=0, **kw).fit(Xf, yf).weights_
    return out


def per_iteration(sents):
    y = [s.labels for s in sents]
    out = {}
    for name, kw in {"sgd-l1 pass": dict(solver="sgd-l1", l1=0.5, l2=0.0, solver_options={"eta0": 0.1}),
                     "bcd sweep": dict(solver="bcd", l1=0.5, l2=0.1)}.items():
        times = []
        for rep in range(4):
            est = crf(max_iter=1 if rep == 0 else 4, **kw)
            data = est._dataset(sents, y, grow=True)
            est._check_params()
            c0 = time.thread_time()
            est._fit_data(data)
            if rep:
                times.append((time.thread_time() - c0) / 4)
        out[name] = statistics.median(times)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="a spargel src folder to run instead of the installed one")
    ap.add_argument("--sentences", type=int, default=600)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", metavar="NPZ")
    what.add_argument("--compare", metavar="NPZ")
    what.add_argument("--time", action="store_true")
    args = ap.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
    warnings.simplefilter("ignore")
    from spargel.data.conll import read_conll

    sents = list(read_conll(data_dir("conll2000") / "train.txt"))[:args.sentences]
    if args.time:
        print(" ".join(f"{k} {v:.3f} s" for k, v in per_iteration(sents).items()))
        return 0
    got = weights(sents)
    if args.save:
        np.savez(args.save, **got)
        return 0
    ref = np.load(args.compare)
    same = True
    for name, w in got.items():
        ok = name in ref and np.array_equal(ref[name], w)
        same &= ok
        print(f"{name}: {'identical' if ok else 'DIFFERENT' if name in ref else 'not in ' + args.compare}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
