"""Mixed graphical models (MixedGraphicalModel): edge recovery on known mixed graphs and
the wide case of mgm's issue 32 (2,939 variables, 444 samples, half continuous, half
binary).

Ground truth: :func:`spargel.mrf.mixed.make_mixed_data` -- a random graph with as many
edges as variables, parameters +-U(0.5, 1.0) (continuous-continuous ``theta``, the
non-reference levels of ``rho`` and ``phi``), continuous precision ``1 + sum |theta|``
on the diagonal; samples by Gibbs sampling, one chain per sample, 200 sweeps.

    python bench/mixed_graph.py f1            # F1 on 30- and 50-variable graphs, N 1000 and 2000
    python bench/mixed_graph.py select        # F1 of EBIC, StARS and CV on 30- and 50-variable graphs
    python bench/mixed_graph.py wide          # 2,939 variables x 444 samples, EBIC, AND rule
    python bench/mixed_graph.py wide --jobs 1 # the same on one thread
    python bench/mixed_graph.py r-wide        # 100 of its regressions against glmnet (needs R + glmnet)

Times: wall-clock seconds and CPU seconds of the process (all threads).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.mrf.mixed import MixedGraphicalModel, make_mixed_data, nodewise_mixed  # noqa: E402

HERE = Path(__file__).resolve().parent
WIDE_TYPES = "gc" * (2939 // 2) + "g"


def scores(truth, found):
    t = set(map(tuple, np.asarray(truth).tolist()))
    f = set(map(tuple, np.asarray(found).tolist()))
    tp = len(t & f)
    prec = tp / len(f) if f else 1.0
    rec = tp / len(t) if t else 1.0
    return prec, rec, (2 * tp / (len(t) + len(f)) if t or f else 1.0)


def f1(args):
    print("| variables | categorical levels | N | graph | F1 (AND) | F1 (OR) | CPU s (AND) |")
    print("|---|---|---|---|---|---|---|")
    for p, lv, name in ((30, 2, "2"), (30, [2, 3] * 15, "3"), (50, 2, "2")):
        types = "gc" * (p // 2)
        for n in (1000, 2000):
            for seed in args.seeds:
                X, edges, _ = make_mixed_data(n, types, p, levels=lv, seed=seed)
                t = time.process_time()
                fit = MixedGraphicalModel(types).fit(X)
                cpu = time.process_time() - t
                orr = MixedGraphicalModel(types, rule="or").fit(X)
                print(f"| {p} | {name} | {n} | {seed} | {scores(edges, fit.edges_)[2]:.3f} | "
                      f"{scores(edges, orr.edges_)[2]:.3f} | {cpu:.2f} |", flush=True)


def select(args):
    """The criteria side by side (AND rule; StARS and CV on --jobs threads)."""
    print("| variables | N | graph | EBIC | StARS | CV |")
    print("|---|---|---|---|---|---|")
    for p in (30, 50):
        types = "gc" * (p // 2)
        for n in (1000, 2000):
            for seed in args.seeds:
                X, edges, _ = make_mixed_data(n, types, p, seed=seed)
                row = []
                for crit in ("ebic", "stars", "cv"):
                    t, c = time.perf_counter(), time.process_time()
                    fit = MixedGraphicalModel(types, criterion=crit, random_state=0, n_jobs=args.jobs).fit(X)
                    el, cpu = time.perf_counter() - t, time.process_time() - c
                    row.append(f"{scores(edges, fit.edges_)[2]:.3f} ({len(fit.edges_)} edges; {el:.1f} s, "
                               f"{cpu:.1f} CPU s)")
                print(f"| {p} | {n} | {seed} | " + " | ".join(row) + " |", flush=True)


def wide_data(cc_range=None):
    return make_mixed_data(444, WIDE_TYPES, len(WIDE_TYPES), seed=7, cc_range=cc_range)


def wide(args):
    p, n, types = len(WIDE_TYPES), 444, WIDE_TYPES
    t = time.perf_counter()
    X, edges, _ = wide_data(args.cc_range)
    print(f"sampled {p} variables x {n} in {time.perf_counter() - t:.1f} s", flush=True)
    MixedGraphicalModel(types[:6]).fit(X[:, :6])               # compile outside the timing
    t, c = time.perf_counter(), time.process_time()
    fit = MixedGraphicalModel(types, n_jobs=args.jobs, verbose=args.verbose).fit(X)
    el, cpu = time.perf_counter() - t, time.process_time() - c
    P, R, F = scores(edges, fit.edges_)
    print(f"MixedGraphicalModel on {p} variables ({types.count('g')} continuous, {types.count('c')} binary) x {n} "
          f"samples, {args.jobs} thread(s): {el:.1f} s wall, {cpu:.1f} CPU s; {len(fit.edges_)} edges "
          f"(true {len(edges)}), precision {P:.3f} recall {R:.3f} F1 {F:.3f}")
    found = set(map(tuple, fit.edges_.tolist()))
    for kind in ("gg", "gc", "cc"):
        these = [e for e in map(tuple, edges.tolist()) if sorted(types[e[0]] + types[e[1]]) == sorted(kind)]
        print(f"  {kind} edges: {len(these)} true, recall {sum(e in found for e in these) / max(1, len(these)):.3f}")


def against_r_wide(args):
    """100 of the wide data's regressions (every 29th variable) in R (glmnet) and here."""
    X, _, _ = wide_data()
    types = WIDE_TYPES
    g = np.array([t == "g" for t in types])
    X[:, g] = (X[:, g] - X[:, g].mean(axis=0)) / X[:, g].std(axis=0)
    nodes = list(range(0, X.shape[1], 29))[:100]
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "x.csv"), os.path.join(tmp, "coef.csv")
        np.savetxt(data, X, fmt="%.17g", delimiter=",")
        t = time.perf_counter()
        r = subprocess.run(["Rscript", str(HERE / "mixed_glmnet.R"), data, types, out, "0.25",
                            ",".join(map(str, nodes))], check=True, capture_output=True, text=True).stdout.strip()
        r_time = time.perf_counter() - t
        R = np.genfromtxt(out, delimiter=",", skip_header=1, ndmin=2)
    MixedGraphicalModel(types[:6]).fit(X[:, :6])
    t = time.perf_counter()
    coef = nodewise_mixed(X, np.array(list(types)), nodes=nodes)[0]
    s_time = time.perf_counter() - t
    same, worst, kinds = 0, 0.0, {"g": 0, "c": 0}
    for i in nodes:
        rows = R[R[:, 0] == i] if R.size else np.zeros((0, 3))
        c = coef[i][:, 0]
        if set(rows[:, 1].astype(int).tolist()) == set(np.flatnonzero(c).tolist()):
            same += 1
            kinds[types[i]] += 1
            if len(rows):
                worst = max(worst, float(np.abs(c[rows[:, 1].astype(int)] - rows[:, 2]).max()))
    print(f"{same} of {len(nodes)} regressions ({kinds['g']} Gaussian, {kinds['c']} logistic agree) select the same "
          f"predictors in R and spargel; their coefficients agree to {worst:.2g}. R {r_time:.1f} s ({r}), "
          f"spargel {s_time:.1f} s (one thread)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["f1", "select", "wide", "r-wide"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--cc-range", type=float, nargs=2, default=None,
                    help="wide: the magnitude range of the binary-binary parameters (default that of all, 0.5 1.0)")
    args = ap.parse_args()
    {"f1": f1, "select": select, "wide": wide, "r-wide": against_r_wide}[args.what](args)


if __name__ == "__main__":
    main()
