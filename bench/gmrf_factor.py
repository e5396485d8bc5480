"""Sparse Gaussian MRFs on factor-structured data: spargel against R glasso and scikit-learn.

Real data such as asset returns or gene panels have a few strong common
factors: every pair of variables is correlated, the thresholded correlation
graph is one connected component (screening does not split the problem) and
the covariance is badly conditioned (a few huge eigenvalues). This script
generates such data and times every solver on the same problems in the same
run.

Data (``make_factor_data``): ``X = F B^T + E`` with n samples of p variables,
k factors ``F ~ N(0, I_k)``; loadings of the first ("market") factor
``U(0.4, 0.9)``, of the others ``N(0, 0.35^2)``; idiosyncratic part ``E``
Gaussian with a sparse precision matrix (random graph, ``degree`` neighbours
per variable on average, entries +-U(0.2, 0.45), diagonal shifted to smallest
eigenvalue 0.3) scaled to unit variances. Columns are standardised, so S is a
correlation matrix. alpha is found by bisection (on spargel's solution) for a
target fraction of edges among the p (p - 1) / 2 pairs.

Objective for every solver (evaluated by the same code on each returned
matrix)::

    -log det K + tr(S K) + alpha * sum_{i != j} |K_ij|

i.e. the diagonal is *not* penalised: R's ``glasso`` is called with
``penalize.diagonal = FALSE`` (its default TRUE would add ``alpha * sum_i
K_ii``; ``--penalize-diagonal`` runs spargel and glasso on that objective
instead, without scikit-learn, which cannot penalise the diagonal).
``f*`` is the best objective of any solver including a spargel run at
tol = 1e-10; ``rel. gap = (f - f*) / |f*|``.

Solvers (one thread each: OMP/OpenBLAS/MKL/numba threads = 1):

* spargel ``solve_gaussian`` (default solver, Newton-CG) at the default
  ``tol=1e-6`` and at ``tol=1e-9`` (certified duality gap <= tol * |f|);
* R ``glasso`` 1.11 (Friedman, Hastie & Tibshirani's Fortran, Debian's
  ``r-cran-glasso``) at its default ``thr = 1e-4``; run through ``Rscript``,
  the matrix passed in a temporary binary file, the time measured inside R
  around the ``glasso()`` call only. Skipped (with a note) when ``Rscript``
  or the package is missing;
* scikit-learn ``graphical_lasso(mode="cd")`` at its defaults (tol 1e-4,
  max_iter 100); ``--sklearn-max-p`` skips it above a size (it takes minutes).

``--cv`` times the cross-validated path instead: ``SparseGaussianMRFCV``
against scikit-learn's ``GraphicalLassoCV`` with the same 10 alphas
(a geometric grid from alpha_max down to ``--cv-ratio * alpha_max``) and the
same 5 contiguous folds (sklearn's default ``KFold``); spargel scores folds
like sklearn (``center_test="test"``), so both choose from the same curve.

Usage::

    python bench/gmrf_factor.py --sizes 200 450 1000 --factors 3 5 10 --repeats 3
    python bench/gmrf_factor.py --cv --sizes 200 --factors 5
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.gaussian.objective import penalty_matrix, primal_objective  # noqa: E402
from spargel.gaussian.solve import solve_gaussian  # noqa: E402


def make_factor_data(p, n, k, seed=0, degree=3):
    """n x p standardised samples of k common factors plus sparse idiosyncratic
    dependence (see the module docstring)."""
    rng = np.random.default_rng(seed)
    B = rng.normal(0.0, 0.35, (p, k))
    B[:, 0] = rng.uniform(0.4, 0.9, p)
    A = np.triu(rng.random((p, p)) < degree / (p - 1), 1)
    V = rng.uniform(0.2, 0.45, (p, p)) * rng.choice([-1.0, 1.0], (p, p))
    Ke = np.where(A, V, 0.0)
    Ke = Ke + Ke.T
    Ke += np.eye(p) * (0.3 - min(0.0, float(np.linalg.eigvalsh(Ke)[0])))
    Se = np.linalg.inv(Ke)
    sd = np.sqrt(np.diag(Se))
    Se = Se / np.outer(sd, sd)
    F = rng.standard_normal((n, k))
    E = rng.multivariate_normal(np.zeros(p), Se, size=n, method="cholesky")
    X = F @ B.T + E
    return (X - X.mean(axis=0)) / X.std(axis=0)


def density(K):
    p = K.shape[0]
    return np.count_nonzero(np.triu(K, 1)) / (p * (p - 1) / 2)


def find_alpha(S, target, penalize_diagonal=False, iters=20):
    """Bisection on log(alpha) for an edge fraction close to ``target``."""
    A = np.abs(S).copy()
    np.fill_diagonal(A, 0)
    lo, hi = np.log(A.max() * 1e-2), np.log(A.max())
    best = None
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            K = solve_gaussian(S, float(np.exp(mid)), tol=1e-4,
                               penalize_diagonal=penalize_diagonal).precision
        e = density(K)
        if best is None or abs(e - target) < abs(best[1] - target):
            best = (float(np.exp(mid)), e)
        if abs(e - target) <= 0.02 * target:
            break
        if e > target:
            lo = mid
        else:
            hi = mid
    return best[0]


# -- R glasso ------------------------------------------------------------------------

_R_SCRIPT = r"""
suppressMessages(library(glasso))
args <- commandArgs(trailingOnly = TRUE)
p <- as.integer(args[2]); reps <- as.integer(args[4])
S <- matrix(readBin(args[1], "double", n = p * p, endian = "little"), p, p)
rho <- as.double(args[3]); pd <- args[5] == "1"; thr <- as.double(args[6])
times <- numeric(reps)
for (r in seq_len(reps)) {
  t0 <- proc.time()[["elapsed"]]
  fit <- glasso(S, rho = rho, thr = thr, maxit = 10000, penalize.diagonal = pd)
  times[r] <- proc.time()[["elapsed"]] - t0
}
writeBin(as.double(fit$wi), args[7], endian = "little")
cat(times, "\n", file = args[8])
cat(fit$niter, "\n", file = args[8], append = TRUE)
cat(as.character(packageVersion("glasso")), "\n", file = args[8], append = TRUE)
"""


def r_glasso_available():
    if shutil.which("Rscript") is None:
        return "Rscript not found (apt-get install r-cran-glasso)"
    try:
        out = subprocess.run(["Rscript", "-e", "library(glasso)"], capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Rscript failed: {exc}"
    if out.returncode != 0:
        return "R package glasso not installed (apt-get install r-cran-glasso)"
    return None


def r_glasso(S, alpha, repeats, penalize_diagonal=False, thr=1e-4):
    """(precision, median seconds inside R, iterations, version)."""
    p = S.shape[0]
    with tempfile.TemporaryDirectory() as d:
        fs, fk, ft, fr = (os.path.join(d, x) for x in ("S.bin", "K.bin", "t.txt", "run.R"))
        np.asarray(S, dtype="<f8").tofile(fs)        # symmetric: row/column order agree
        Path(fr).write_text(_R_SCRIPT)
        subprocess.run(["Rscript", fr, fs, str(p), repr(float(alpha)), str(repeats),
                        "1" if penalize_diagonal else "0", repr(float(thr)), fk, ft],
                       check=True, capture_output=True, text=True)
        K = np.fromfile(fk, dtype="<f8").reshape(p, p)
        lines = Path(ft).read_text().split("\n")
        times = [float(v) for v in lines[0].split()]
        it = int(float(lines[1].split()[0]))
        version = lines[2].strip()
    return 0.5 * (K + K.T), statistics.median(times), it, version


# -- the timing table ------------------------------------------------------------------

def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run_case(p, n, k, target, args, r_note):
    X = make_factor_data(p, n, k, seed=args.seed)
    S = X.T @ X / n
    pd = args.penalize_diagonal
    alpha = find_alpha(S, target, pd)
    L = penalty_matrix(alpha, p, penalize_diagonal=pd)
    ref = solve_gaussian(S, alpha, tol=1e-10, max_iter=500, penalize_diagonal=pd)
    comps = ref.n_components
    rows = []

    def add(name, t, K, note=""):
        rows.append({"p": p, "n": n, "k": k, "target": target, "alpha": alpha,
                     "solver": name, "time_s": t, "objective": primal_objective(K, S, L),
                     "density": density(K), "components": comps, "note": note})

    for tol in (1e-6, 1e-9):
        t, r = timed(lambda tol=tol: solve_gaussian(S, alpha, tol=tol, penalize_diagonal=pd),
                     args.repeats)
        add(f"spargel (tol {tol:g})", t, r.precision,
            f"{r.solver}, {r.n_iter} it, certified gap {r.duality_gap:.1e}")
    if r_note is None:
        K, t, it, ver = r_glasso(S, alpha, args.repeats, pd)
        add(f"R glasso {ver} (thr 1e-4)", t, K, f"{it} it")
    if "sklearn" in args.peers and not pd and p <= args.sklearn_max_p:
        from sklearn.covariance import graphical_lasso
        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:
                t, (C, K, it) = timed(lambda: graphical_lasso(S, alpha, return_n_iter=True),
                                      1 if p > 300 else args.repeats)
                add("scikit-learn graphical_lasso (cd)", t, K, f"{it} sweeps")
            except FloatingPointError as exc:
                rows.append({"p": p, "n": n, "k": k, "target": target, "alpha": alpha,
                             "solver": "scikit-learn graphical_lasso (cd)",
                             "time_s": float("nan"), "objective": float("nan"),
                             "density": float("nan"), "components": comps,
                             "note": f"failed: {str(exc)[:50]}"})
    fstar = min([r["objective"] for r in rows if np.isfinite(r["objective"])] + [ref.objective])
    for r in rows:
        r["rel_gap"] = (r["objective"] - fstar) / abs(fstar)
    return rows


def cv_case(p, n, k, args):
    from sklearn.covariance import GraphicalLassoCV
    from sklearn.exceptions import ConvergenceWarning

    from spargel.gaussian.estimator import SparseGaussianMRFCV
    from spargel.gaussian.path import alpha_grid

    X = make_factor_data(p, n, k, seed=args.seed)
    S = X.T @ X / n
    alphas = alpha_grid(S, 10, args.cv_ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_sp, sp = timed(lambda: SparseGaussianMRFCV(alphas=list(alphas), cv=5,
                                                     center_test="test").fit(X), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t_sk, sk = timed(lambda: GraphicalLassoCV(alphas=list(alphas), cv=5).fit(X), 1)
    return {"p": p, "n": n, "k": k, "alphas": [float(a) for a in alphas],
            "spargel_time_s": t_sp, "sklearn_time_s": t_sk,
            "spargel_alpha": sp.alpha_, "sklearn_alpha": float(sk.alpha_),
            "spargel_mean_test": [float(v) for v in sp.cv_results_["mean_test_score"]],
            "sklearn_mean_test": [float(v) for v in sk.cv_results_["mean_test_score"]],
            "spargel_density": density(sp.precision_), "sklearn_density": density(sk.precision_)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 450, 1000])
    ap.add_argument("--factors", type=int, nargs="+", default=[3, 5, 10])
    ap.add_argument("--densities", type=float, nargs="+", default=[0.04, 0.07])
    ap.add_argument("--n", type=int, default=1250, help="samples (default 1250)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", nargs="*", default=["R", "sklearn"])
    ap.add_argument("--sklearn-max-p", type=int, default=450)
    ap.add_argument("--penalize-diagonal", action="store_true",
                    help="penalise the diagonal too (glasso's default objective); no sklearn")
    ap.add_argument("--cv", action="store_true", help="time the CV path instead")
    ap.add_argument("--cv-ratio", type=float, default=0.1,
                    help="smallest alpha of the CV grid / alpha_max (default 0.1)")
    ap.add_argument("--json", default=None, help="write all rows as JSON")
    args = ap.parse_args(argv)
    # compile spargel's kernels before timing
    X = make_factor_data(30, 200, 3, seed=1)
    solve_gaussian(X.T @ X / 200, 0.05)
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"numpy {np.__version__}; one BLAS / numba thread; median of {args.repeats}; "
          f"seed {args.seed}")
    allrows = []
    if args.cv:
        print("| p | n | k | spargel CV (s) | sklearn GraphicalLassoCV (s) | ratio | alpha "
              "spargel / sklearn | edge fraction spargel / sklearn |")
        print("|---|---|---|---|---|---|---|---|")
        for p in args.sizes:
            for k in args.factors:
                r = cv_case(p, args.n, k, args)
                allrows.append(r)
                print(f"| {p} | {args.n} | {k} | {r['spargel_time_s']:.2f} | "
                      f"{r['sklearn_time_s']:.2f} | {r['spargel_time_s'] / r['sklearn_time_s']:.3f} | "
                      f"{r['spargel_alpha']:.4g} / {r['sklearn_alpha']:.4g} | "
                      f"{r['spargel_density']:.3f} / {r['sklearn_density']:.3f} |", flush=True)
    else:
        r_note = r_glasso_available() if "R" in args.peers else "not requested"
        if r_note:
            print(f"# R glasso skipped: {r_note}")
        print("| p | k | target | alpha | solver | time (s) | vs glasso | (f - f*)/|f*| | "
              "edges | notes |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for p in args.sizes:
            for k in args.factors:
                for target in args.densities:
                    rows = run_case(p, args.n, k, target, args, r_note)
                    allrows.extend(rows)
                    tg = next((r["time_s"] for r in rows if r["solver"].startswith("R glasso")),
                              None)
                    for r in rows:
                        ratio = f"{r['time_s'] / tg:.2f}x" if tg else "-"
                        print(f"| {p} | {k} | {target:.0%} | {r['alpha']:.4g} | {r['solver']} | "
                              f"{r['time_s']:.3f} | {ratio} | {r['rel_gap']:.1e} | "
                              f"{r['density']:.1%} | {r['note']} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(allrows, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
