"""The whole alpha path with model selection, spargel against R's ``huge`` in one run.

For each data set: R (``Rscript``, package ``huge``) times, inside R, the nonparanormal
(``huge.npn``, shrinkage; with ``--npn``), the glasso path ``huge(x, method = "glasso",
nlambda = 10, lambda.min.ratio = 0.1)`` and ``huge.select`` with EBIC (gamma 0.5), RIC
(20 rotations) and StARS (20 subsamples, threshold 0.1), in CPU seconds of the R process
(user + system of ``system.time``); spargel times
``Nonparanormal()`` and ``SparseGaussianMRFSelect(criterion, alphas=<huge's lambdas>)``
(the path is fitted inside every ``fit``, as huge's path is inside each R total), given
R's rotations and subsamples. Reported per criterion: seconds of each (CPU seconds: on a
shared machine the steadier measure; spargel's wall seconds too), the ratio of the CPU seconds, the chosen
lambda of both, and the objective ``-log det K + tr(R K) + lambda sum_ij |K_ij|`` (the
diagonal penalised, as huge does) of both paths at the densest lambda.

Data (``--data DIR``): ``srbct/Khan_xtrain.csv`` (63 x 2308), ``gene_expression_bdgraph``
(60 x 100) and ``stock`` (huge's ``stockdata``, log returns, 1257 x 452, written by R).

Usage::

    python bench/gmrf_path_huge.py --data ../shared/data --sets stock gene srbct --npn
    python bench/gmrf_path_huge.py --sets srbct --criteria ebic ric --repeats 3
    python bench/gmrf_path_huge.py --sets srbct --criteria ebic --npn --overlap --skip-path
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gmrf_huge import have_r, load, numbers, write_csv  # noqa: E402
from spargel.gaussian.select import standardize  # noqa: E402
from spargel.gaussian.selection import Nonparanormal, SparseGaussianMRFSelect  # noqa: E402

_R = r"""
args <- commandArgs(TRUE)
suppressMessages(library(huge))
x <- as.matrix(read.csv(args[1]))
out <- args[2]
npn <- args[3] == "1"
crits <- strsplit(args[4], ",")[[1]]
n <- nrow(x)
cpu <- function(t) sum(t[c("user.self", "sys.self")])     # CPU seconds of the R process
put <- function(name, v) writeLines(paste(format(v, digits = 17), collapse = " "),
                                    file.path(out, paste0(name, ".txt")))
t_npn <- 0
if (npn) t_npn <- cpu(system.time(x <- huge.npn(x, npn.func = "shrinkage", verbose = FALSE)))
t_path <- cpu(system.time(est <- huge(x, method = "glasso", nlambda = 10, lambda.min.ratio = 0.1,
                                      verbose = FALSE)))
put("t_npn", t_npn)
put("t_path", t_path)
put("lambda", est$lambda)
put("df", est$df)
put("loglik", est$loglik)                                  # huge's own (its EBIC's)
put("logdet", sapply(est$icov, function(K) as.numeric(determinant(K)$modulus)))
S <- cor(x)
obj <- sapply(seq_along(est$lambda), function(k) {
  K <- est$icov[[k]]
  -as.numeric(determinant(K)$modulus) + sum(S * K) + est$lambda[k] * sum(abs(K))
})
put("objective", obj)
if ("ebic" %in% crits) {
  put("t_ebic", cpu(system.time(e <- huge.select(est, criterion = "ebic", ebic.gamma = 0.5,
                                                 verbose = FALSE))))
  put("ebic_lambda", e$opt.lambda)
}
if ("stars" %in% crits) {
  ratio <- if (n > 144) 10 * sqrt(n) / n else 0.8
  set.seed(1)
  subs <- lapply(1:20, function(i) sample(c(1:n), floor(n * ratio), replace = FALSE))
  writeLines(sapply(subs, function(s) paste(s, collapse = " ")), file.path(out, "subsamples.txt"))
  set.seed(1)
  put("t_stars", cpu(system.time(s <- huge.select(est, criterion = "stars", stars.thresh = 0.1,
                                                  rep.num = 20, verbose = FALSE))))
  put("stars_lambda", s$opt.lambda)
}
if ("ric" %in% crits) {
  set.seed(2)
  r <- if (n > 20) sample(n, 20) else 1:n
  put("rotations", r)
  set.seed(2)
  put("t_ric", cpu(system.time(ric <- huge.select(est, criterion = "ric", rep.num = 20,
                                                  verbose = FALSE))))
  put("ric_lambda", ric$opt.lambda)
}
"""

_R_STOCK = r"""
args <- commandArgs(TRUE)
suppressMessages(library(huge))
data(stockdata)
x <- log(stockdata$data[2:1258, ] / stockdata$data[1:1257, ])
write.csv(x, args[1], row.names = FALSE)
"""


def load_set(data, name, tmp):
    if name == "stock":
        path = Path(tmp) / "stock.csv"
        script = Path(tmp) / "stock.R"
        script.write_text(_R_STOCK)
        subprocess.run(["Rscript", str(script), str(path)], check=True, capture_output=True)
        return np.loadtxt(path, delimiter=",", skiprows=1)
    return load(data, name)


def objective(K, R, lam):
    sign, ld = np.linalg.slogdet(K)
    return float(-ld + np.vdot(R, K) + lam * np.abs(K).sum())


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def huge_lambdas(X, npn):
    """huge's default path (10 lambdas down to 0.1 lambda_max of the correlation matrix
    of the (nonparanormal) data), computed here: ``--overlap`` runs spargel while R runs."""
    Z = standardize(Nonparanormal().fit_transform(X) if npn else X)
    R = Z.T @ Z / (Z.shape[0] - 1)
    np.fill_diagonal(R, 0.0)
    amax = float(np.abs(R).max())
    return np.exp(np.linspace(np.log(amax), np.log(0.1 * amax), 10))


def run(data, name, crits, npn, repeats, tol, overlap=False, skip_path=False):
    with tempfile.TemporaryDirectory() as tmp:
        X = load_set(data, name, tmp)
        write_csv(Path(tmp) / "x.csv", X)
        script = Path(tmp) / "path.R"
        script.write_text(_R)
        proc = subprocess.Popen(["Rscript", str(script), str(Path(tmp) / "x.csv"), tmp,
                                 "1" if npn else "0", ",".join(crits)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if overlap:                   # spargel's EBIC fits while R runs (its CPU time is its own)
            lam = huge_lambdas(X, npn)
            early = {crit: spargel_fits(X, crit, lam, npn, repeats, tol, {}) for crit in crits}
        _, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"R failed: {err}")
        rd = {f.stem: numbers(f) for f in Path(tmp).glob("*.txt") if f.stem != "subsamples"}
        subs = None
        if "stars" in crits:
            subs = [np.array([int(v) - 1 for v in line.split()])
                    for line in (Path(tmp) / "subsamples.txt").read_text().splitlines()]
    if overlap and not np.allclose(lam, rd["lambda"], rtol=1e-10, atol=0):
        raise RuntimeError(f"lambdas differ from huge's: {lam} / {rd['lambda']}")
    lam = rd["lambda"]
    rows = []
    for crit in crits:
        extra = {"ebic": {}, "stars": dict(subsamples=subs),
                 "ric": dict(rotations=rd.get("rotations", np.zeros(0)).astype(int))}[crit]
        sel, walls, cpus = early[crit] if overlap else spargel_fits(X, crit, lam, npn, repeats,
                                                                      tol, extra)
        r_t = float(rd["t_npn"][0] + rd["t_path"][0] + rd[f"t_{crit}"][0])
        w, c = statistics.median(walls), statistics.median(cpus)
        r_lam = float(rd[f"{crit}_lambda"][0])
        same = abs(sel.alpha_ - r_lam) <= 1e-6 * r_lam
        rows.append((crit, w, c, r_t, sel.alpha_, r_lam, same))
        if crit == "ebic":
            # huge's log-likelihood is C++'s log(det(K)) - tr(S K): det overflows to inf
            # once log det K > 709 (p = 2,308), which its EBIC then takes as the best
            print(f"<!-- {name} EBIC: log-likelihood per lambda spargel "
                  f"{np.round(sel.loglik_path_, 2).tolist()} huge {rd['loglik'].tolist()}; "
                  f"log det K huge {np.round(rd['logdet'], 2).tolist()} -->", flush=True)
        if sel.criterion_scores_ is not None and crit == "stars":
            print(f"<!-- {name} StARS alphas fitted on the subsamples: "
                  f"{int(np.sum(np.isfinite(sel.criterion_scores_)))} of {lam.size} -->")
    if skip_path:
        return X.shape, rows, rd, None, sel.edges_path_.tolist(), (np.nan, np.nan)
    # objectives at the densest lambda (spargel's path of the EBIC fit's data)
    Xt = Nonparanormal().fit_transform(X) if npn else X
    Z = standardize(Xt)
    R = Z.T @ Z / (Z.shape[0] - 1)
    from spargel.gaussian.path import gaussian_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (path, pw, pc) = timed(lambda: gaussian_path(R, lam, tol=tol, penalize_diagonal=True))
    f_s = [objective(r.precision, R, a) for r, a in zip(path, lam)]
    e_s = [int((np.count_nonzero(r.precision) - R.shape[0]) // 2) for r in path]
    return X.shape, rows, rd, f_s, e_s, (pw, pc)


def spargel_fits(X, crit, lam, npn, repeats, tol, extra):
    """``repeats`` timed nonparanormal + selection fits: (the last fit, walls, CPUs)."""
    walls, cpus, sel = [], [], None
    for _ in range(repeats):
        def fit():
            Xt = Nonparanormal().fit_transform(X) if npn else X
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return SparseGaussianMRFSelect(crit, alphas=list(lam), tol=tol, **extra).fit(Xt)
        sel, w, c = timed(fit)
        walls.append(w)
        cpus.append(c)
    return sel, walls, cpus


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--sets", nargs="+", default=["stock", "gene", "srbct"],
                    choices=["stock", "gene", "srbct", "sachs"])
    ap.add_argument("--criteria", nargs="+", default=["ebic", "ric", "stars"],
                    choices=["ebic", "ric", "stars"])
    ap.add_argument("--npn", action="store_true", help="nonparanormal (shrinkage) first")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--tol", type=float, default=None, help="spargel's tol (default: its own)")
    ap.add_argument("--overlap", action="store_true",
                    help="EBIC only: spargel's fits run while R runs (lambdas computed as huge "
                         "does, checked against R's; each side's CPU seconds are its own)")
    ap.add_argument("--skip-path", action="store_true",
                    help="no separate timing of spargel's path and no objectives (SRBCT)")
    args = ap.parse_args(argv)
    if args.overlap and args.criteria != ["ebic"]:
        ap.error("--overlap needs --criteria ebic (RIC and StARS take R's draws)")
    if not have_r():
        print("# skipped: Rscript with the huge package is not available")
        return 0
    # compile the kernels outside the timings
    Zc = np.random.default_rng(0).standard_normal((40, 30))
    SparseGaussianMRFSelect("ebic", alphas=3).fit(Zc)
    with open("/proc/loadavg") as fh:
        print(f"# load average {fh.read().split()[0]}; one BLAS thread; spargel median of "
              f"{args.repeats}; R: CPU seconds (user + system) from system.time (npn + path + select)")
    print("| data | n x p | criterion | spargel wall / CPU (s) | R huge CPU (s) | ratio (CPU) | "
          "lambda spargel / huge | same |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        shape, rows, rd, f_s, e_s, (pw, pc) = run(args.data, name, args.criteria, args.npn,
                                                  args.repeats, args.tol, args.overlap,
                                                  args.skip_path)
        for crit, w, c, r_t, a_s, a_r, same in rows:
            print(f"| {name}{' npn' if args.npn else ''} | {shape[0]} x {shape[1]} | {crit} | "
                  f"{w:.2f} / {c:.2f} | {r_t:.2f} | {c / r_t:.2f} | {a_s:.5g} / {a_r:.5g} | "
                  f"{'yes' if same else 'NO'} |", flush=True)
        f_r = rd["objective"]
        if f_s is None:
            print(f"<!-- {name}: huge path {rd['t_path'][0]:.2f} s CPU; edges spargel {e_s} huge "
                  f"{rd['df'].astype(int).tolist()} -->", flush=True)
            continue
        print(f"<!-- {name}: path alone spargel {pw:.2f} s wall / {pc:.2f} CPU, huge "
              f"{rd['t_path'][0]:.2f} s CPU; edges spargel {e_s} huge {rd['df'].astype(int).tolist()}; "
              f"objective at the densest lambda spargel {f_s[-1]:.8f} huge {f_r[-1]:.8f} "
              f"(max over the path of huge - spargel: {max(np.array(f_r) - np.array(f_s)):.2e}) -->",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
