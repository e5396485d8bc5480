"""One alpha of the selection's graphical-lasso path, warm-started, without the path.

The dense end of the path that ``SparseGaussianMRFSelect("ebic")`` fits on the
nonparanormal of SRBCT (63 x 2308, huge's 10 lambdas down to 0.1 lambda_max) costs
minutes an alpha. ``save`` fits the path once, as the selection does (the correlation
matrix of the standardised data, ``PATH_TOL``, no polish, each alpha warm-started from
the previous one's precision and inverse), and writes each alpha's solution to
``DIR/alpha_<k>.npz``; ``time`` then refits alpha k warm-started from alpha k - 1's saved
solution, as often as asked, with its CPU seconds, Newton iterations, edges, objective
and gap (and ``--profile``: cProfile's top functions), so that one dense alpha can be
measured again and again.

Usage::

    python bench/gmrf_dense_alpha.py save --data ../shared/data --out srbct-path
    python bench/gmrf_dense_alpha.py time --out srbct-path --index 8 9 --repeats 3
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.gaussian.objective import gram  # noqa: E402
from spargel.gaussian.path import PATH_TOL, alpha_grid  # noqa: E402
from spargel.gaussian.result import GaussianResult  # noqa: E402
from spargel.gaussian.select import standardize  # noqa: E402
from spargel.gaussian.selection import Nonparanormal  # noqa: E402
from spargel.gaussian.solve import solve_gaussian  # noqa: E402


def correlation(data):
    """The selection's correlation matrix of the nonparanormal SRBCT data."""
    X = np.loadtxt(Path(data) / "srbct" / "Khan_xtrain.csv", delimiter=",", skiprows=1)
    Z = standardize(Nonparanormal().fit_transform(X))
    R = gram(Z) / (Z.shape[0] - 1)
    R = 0.5 * (R + R.T)
    np.fill_diagonal(R, 1.0)
    return R


def fit(R, alpha, start):
    """One fit of the selection's path (PATH_TOL, no polish): (result, CPU s)."""
    c0 = time.process_time()
    res = solve_gaussian(R, float(alpha), warm_start=start, validated=True, tol=PATH_TOL,
                         penalize_diagonal=True, polish=0)
    return res, time.process_time() - c0


def summary(res, alpha, cpu):
    p = res.precision.shape[0]
    edges = int((np.count_nonzero(res.precision) - p) // 2)
    return dict(alpha=float(alpha), cpu=round(cpu, 2), n_iter=int(res.n_iter), edges=edges,
                objective=float(res.objective), gap=float(res.duality_gap),
                solver=res.solver, stop=res.stop_reason)


def save(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    R = correlation(args.data)
    alphas = alpha_grid(R, 10, 0.1)
    np.save(out / "R.npy", R)
    np.save(out / "alphas.npy", alphas)
    prev = None
    for k, a in enumerate(alphas):
        prev, cpu = fit(R, a, prev)
        np.savez(out / f"alpha_{k}.npz", precision=prev.precision, covariance=prev.covariance,
                 objective=prev.objective, gap=prev.duality_gap)
        print(json.dumps(dict(index=k, **summary(prev, a, cpu))), flush=True)


def load_start(out, k):
    """Alpha k's saved solution as the path hands it on (the precision and its inverse)."""
    z = np.load(Path(out) / f"alpha_{k}.npz")
    return GaussianResult(precision=z["precision"], covariance=z["covariance"],
                          objective=float(z["objective"]), dual_objective=np.nan,
                          duality_gap=float(z["gap"]), n_iter=0, converged=True,
                          solver="newton-cg")      # its covariance is K's inverse: reused


def time_alpha(args):
    out = Path(args.out)
    R = np.load(out / "R.npy")
    alphas = np.load(out / "alphas.npy")
    fit(R, alphas[1], None)                       # compile the kernels outside the timings
    with open("/proc/loadavg") as fh:
        print(f"# load average {fh.read().split()[0]}", flush=True)
    for k in args.index:
        start = load_start(out, k - 1)
        for _ in range(args.repeats):
            if args.profile:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.enable()
                res, cpu = fit(R, alphas[k], start)
                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
            else:
                res, cpu = fit(R, alphas[k], start)
            row = dict(index=k, **summary(res, alphas[k], cpu))
            saved = Path(out) / f"alpha_{k}.npz"
            if saved.exists():
                z = np.load(saved)
                row["objective_saved"] = float(z["objective"])
                row["edges_saved"] = int((np.count_nonzero(z["precision"]) - R.shape[0]) // 2)
            if args.history:
                row["history"] = [{key: h[key] for key in args.history.split(",") if key in h}
                                  for h in res.history]
            print(json.dumps(row), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save", help="fit the path once and save every alpha's solution")
    s.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    s.add_argument("--out", required=True)
    t = sub.add_parser("time", help="refit alpha k warm-started from alpha k - 1's solution")
    t.add_argument("--out", required=True)
    t.add_argument("--index", type=int, nargs="+", default=[8, 9])
    t.add_argument("--repeats", type=int, default=1)
    t.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions")
    t.add_argument("--history", default="",
                   help="comma-separated history keys to print per iteration")
    args = ap.parse_args(argv)
    return save(args) if args.cmd == "save" else time_alpha(args)


if __name__ == "__main__":
    sys.exit(main())
