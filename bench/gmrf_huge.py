"""spargel's model selection and nonparanormal transforms against R's ``huge``.

Runs R (``Rscript`` with the ``huge`` package; skipped with a message when either
is missing) on the same data as spargel and compares:

* ``npn``: ``Nonparanormal(method)`` against ``huge.npn(x, npn.func=method)`` for
  shrinkage, truncation and skeptic (largest absolute difference);
* ``select``: ``SparseGaussianMRFSelect`` against ``huge`` + ``huge.select`` with
  ``method="glasso"`` on the same standardised data and the same lambda path
  (huge's default: 10 values down to 0.1 lambda_max): EBIC (gamma 0.5), StARS
  (threshold 0.1, 20 subsamples: R draws them, spargel is given the same index
  sets) and RIC (20 rotations: R draws them, spargel is given the same shifts).
  Prints each criterion's chosen lambda and its index on the path for both;
* ``timing``: the default solver on the stock-price data of ``huge``
  (``stockdata``: 452 S&P 500 stocks, log returns of 1257 days) and on SRBCT
  (63 x 2308), standardised, at the default tolerance and at ``tol=1e-6``.

Data: ``--data DIR`` is the folder with ``sachs_cytometry/`` (Sachs et al.
2005 flow cytometry, 7466 x 11; nonparanormal-transformed first, as huge's
users do) and ``gene_expression_bdgraph/`` (60 x 100) and ``srbct/``.

Usage::

    python bench/gmrf_huge.py --data ../shared/data npn select
    python bench/gmrf_huge.py --data ../shared/data timing --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.gaussian.selection import Nonparanormal, SparseGaussianMRFSelect  # noqa: E402
from spargel.gaussian.select import standardize  # noqa: E402

_R_NPN = r"""
args <- commandArgs(TRUE)
suppressMessages(library(huge))
x <- as.matrix(read.csv(args[1]))
for (m in c("shrinkage", "truncation", "skeptic")) {
  z <- huge.npn(x, npn.func = m, verbose = FALSE)
  write.table(format(z, digits = 17), file.path(args[2], paste0(m, ".txt")),
              row.names = FALSE, col.names = FALSE, quote = FALSE)
}
"""

_R_SELECT = r"""
args <- commandArgs(TRUE)
suppressMessages(library(huge))
x <- as.matrix(read.csv(args[1]))
out <- args[2]
n <- nrow(x)
put <- function(name, v) writeLines(paste(format(v, digits = 17), collapse = " "),
                                    file.path(out, paste0(name, ".txt")))
est <- huge(x, method = "glasso", nlambda = 10, lambda.min.ratio = 0.1, verbose = FALSE)
put("lambda", est$lambda)
put("df", est$df)
e <- huge.select(est, criterion = "ebic", ebic.gamma = 0.5, verbose = FALSE)
put("ebic_score", e$ebic.score)
put("ebic_lambda", e$opt.lambda)
ratio <- if (n > 144) 10 * sqrt(n) / n else 0.8
set.seed(1)
subs <- lapply(1:20, function(i) sample(c(1:n), floor(n * ratio), replace = FALSE))
writeLines(sapply(subs, function(s) paste(s, collapse = " ")), file.path(out, "subsamples.txt"))
set.seed(1)
s <- huge.select(est, criterion = "stars", stars.thresh = 0.1, rep.num = 20, verbose = FALSE)
put("stars_variability", s$variability)
put("stars_lambda", s$opt.lambda)
set.seed(2)
r <- if (n > 20) sample(n, 20) else 1:n
put("rotations", r)
set.seed(2)
ric <- huge.select(est, criterion = "ric", rep.num = 20, verbose = FALSE)
put("ric_lambda", ric$opt.lambda)
"""


def have_r():
    if shutil.which("Rscript") is None:
        return False
    ok = subprocess.run(["Rscript", "-e", "suppressMessages(library(huge))"],
                        capture_output=True).returncode == 0
    return ok


def run_r(code, csv, out):
    script = Path(out) / "script.R"
    script.write_text(code)
    subprocess.run(["Rscript", str(script), str(csv), str(out)], check=True,
                   capture_output=True, text=True)


def write_csv(path, X):
    np.savetxt(path, X, delimiter=",", fmt="%.17g",
               header=",".join(f"V{j + 1}" for j in range(X.shape[1])), comments="")


def load(data, name):
    if name == "sachs":
        return np.loadtxt(Path(data) / "sachs_cytometry" / "cyto_full_data.csv", delimiter=",",
                          skiprows=1)
    if name == "gene":
        X = np.genfromtxt(Path(data) / "gene_expression_bdgraph" / "geneExpression.csv",
                          delimiter=",", skip_header=1)
        return X[:, 1:]                       # the first column is the individual's id
    if name == "srbct":
        return np.loadtxt(Path(data) / "srbct" / "Khan_xtrain.csv", delimiter=",", skiprows=1)
    raise ValueError(name)


def numbers(path):
    return np.array([float(v) for v in Path(path).read_text().split()])


def compare_npn(data):
    print("| data | method | shape | max abs difference spargel vs huge.npn |")
    print("|---|---|---|---|")
    for name in ("sachs", "gene"):
        X = load(data, name)
        with tempfile.TemporaryDirectory() as tmp:
            write_csv(Path(tmp) / "x.csv", X)
            run_r(_R_NPN, Path(tmp) / "x.csv", tmp)
            for m in ("shrinkage", "truncation", "skeptic"):
                ref = np.loadtxt(Path(tmp) / f"{m}.txt")
                got = Nonparanormal(m).fit_transform(X)
                print(f"| {name} | {m} | {got.shape[0]} x {got.shape[1]} | "
                      f"{float(np.max(np.abs(got - ref))):.2e} |", flush=True)


def compare_select(data):
    print("| data | n x p | criterion | huge lambda (index) | spargel alpha (index) | same | "
          "spargel time (s) |")
    print("|---|---|---|---|---|---|---|")
    for name in ("sachs", "gene"):
        X = load(data, name)
        if name == "sachs":
            X = Nonparanormal().fit_transform(X)
        Z = standardize(X)
        with tempfile.TemporaryDirectory() as tmp:
            write_csv(Path(tmp) / "x.csv", Z)
            run_r(_R_SELECT, Path(tmp) / "x.csv", tmp)
            lam = numbers(Path(tmp) / "lambda.txt")
            subs = [np.array([int(v) - 1 for v in line.split()])
                    for line in (Path(tmp) / "subsamples.txt").read_text().splitlines()]
            rot = numbers(Path(tmp) / "rotations.txt").astype(int)
            r_choice = {c: float(numbers(Path(tmp) / f"{c}_lambda.txt")[0])
                        for c in ("ebic", "stars", "ric")}
            r_var = numbers(Path(tmp) / "stars_variability.txt")
            r_ebic = numbers(Path(tmp) / "ebic_score.txt")
            r_df = numbers(Path(tmp) / "df.txt")
        kw = dict(alphas=list(lam))
        for crit, extra in (("ebic", {}), ("stars", dict(subsamples=subs)),
                            ("ric", dict(rotations=rot))):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sel = SparseGaussianMRFSelect(crit, **kw, **extra).fit(Z)
            t = time.perf_counter() - t0
            r_lam = r_choice[crit]
            r_idx = int(np.argmin(np.abs(lam - r_lam)))
            s_idx = int(np.argmin(np.abs(lam - sel.alpha_)))
            if crit == "ric":
                same = f"rel. diff {abs(sel.alpha_ - r_lam) / r_lam:.1e}"
                ridx, sidx = "-", "-"
            else:
                same = "yes" if r_idx == s_idx else ("adjacent" if abs(r_idx - s_idx) == 1
                                                      else "NO")
                ridx, sidx = r_idx, s_idx
            print(f"| {name} | {Z.shape[0]} x {Z.shape[1]} | {crit} | {r_lam:.6g} ({ridx}) | "
                  f"{sel.alpha_:.6g} ({sidx}) | {same} | {t:.2f} |", flush=True)
            if crit == "ebic":
                print(f"<!-- {name} edges per lambda: huge {r_df.astype(int).tolist()} spargel "
                      f"{sel.edges_path_.tolist()}; EBIC huge {np.round(r_ebic, 2).tolist()} "
                      f"spargel {np.round(sel.criterion_scores_, 2).tolist()} -->")
            if crit == "stars":
                print(f"<!-- {name} StARS variability huge {np.round(r_var, 4).tolist()} "
                      f"spargel {np.round(sel.criterion_scores_, 4).tolist()} -->")


_R_STOCK = r"""
args <- commandArgs(TRUE)
suppressMessages(library(huge))
data(stockdata)
x <- log(stockdata$data[2:1258, ] / stockdata$data[1:1257, ])
write.csv(x, args[1], row.names = FALSE)
"""


def timing(data, repeats):
    from spargel.gaussian.solve import solve_gaussian

    sets = {}
    if have_r():
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "s.R"
            script.write_text(_R_STOCK)
            subprocess.run(["Rscript", str(script), str(Path(tmp) / "stock.csv")], check=True,
                           capture_output=True)
            sets["stock (452)"] = np.loadtxt(Path(tmp) / "stock.csv", delimiter=",", skiprows=1)
    else:
        print("# R's huge is not available: no stock-price data")
    sets["srbct (2308)"] = load(data, "srbct")
    solve_gaussian(np.cov(np.random.default_rng(0).standard_normal((40, 30)).T), 0.1)  # compile
    print(f"# one BLAS / numba thread; best of {repeats}; CPU time of the process (steadier "
          "than wall time on a shared machine) and wall time")
    print("| data | alpha | tol | CPU (s) | wall (s) | iterations | edges | certified gap |")
    print("|---|---|---|---|---|---|---|---|")
    for name, X in sets.items():
        Z = standardize(X)
        R = Z.T @ Z / (Z.shape[0] - 1)
        alphas = (0.4, 0.2) if name.startswith("stock") else (0.7, 0.6)
        for a in alphas:
            for tol in (None, 1e-6):
                cpu, wall, res = np.inf, np.inf, None
                for _ in range(repeats):
                    t0, c0 = time.perf_counter(), time.process_time()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = solve_gaussian(R, a, tol=tol)
                    cpu = min(cpu, time.process_time() - c0)
                    wall = min(wall, time.perf_counter() - t0)
                edges = int((np.count_nonzero(res.precision) - R.shape[0]) // 2)
                print(f"| {name} | {a} | {'default' if tol is None else tol} | {cpu:.3f} | "
                      f"{wall:.3f} | {res.n_iter} | {edges} | {res.duality_gap:.1e} |", flush=True)


def main(argv=None):
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(v, "1")
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="+", choices=["npn", "select", "timing"])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if ("npn" in args.what or "select" in args.what) and not have_r():
        print("# skipped: Rscript with the huge package is not available "
              "(Debian: apt-get install r-cran-huge)")
        args.what = [w for w in args.what if w == "timing"]
    if "npn" in args.what:
        compare_npn(args.data)
    if "select" in args.what:
        compare_select(args.data)
    if "timing" in args.what:
        timing(args.data, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
