"""StARS at scale: ``SparseGaussianMRFSelect("stars")`` on huge's random graph, and the same
selection against R huge and pyhuge.

``scale`` (issue 45's goal: p = 3,772, n = 1,313, 20 subsamples x 10 alphas within 30
minutes on 2 cores, peak RSS <= 12 GB, edge F1 >= 0.8): the data are
``make_graph_data(n, p, "random")`` (huge.generator's random graph: each pair an edge with
probability 3 / p); with ``--probe`` one fit of each method (glasso, mb, concord) on one
subsample of huge's default size (``10 sqrt(n)`` rows) at the grid's alpha ``--probe-index``
is timed first, each in its own process; then the whole selection of each ``--methods``
entry runs in its own process (wall, CPU, peak RSS, the chosen alpha and index, the
variabilities, the selected graph's edge F1 against the truth, the load average).

    python bench/stars_scale.py scale --p 3772 --n 1313 --methods mb --probe

``huge`` (MB + StARS against R huge 1.3.5 and pyhuge): the same data to each contender;
R runs ``huge(x, method = "mb", nlambda = 10, lambda.min.ratio = 0.1)`` and
``huge.select(est, "stars", rep.num = 20)``, and writes the subsamples it draws (from
``set.seed(seed)``: huge.mb draws no random numbers, so ``sample`` is called exactly as
huge.select calls it) and its lambdas: spargel is given both, so the variabilities are
comparable number for number. pyhuge draws its own subsamples (numpy's generator): same
grid, other subsamples.

    python bench/stars_scale.py huge --p 800 --n 400 --pyhuge-python /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, peak_rss_mb  # noqa: E402


def f1(found, truth, p):
    """Edge F1 of the pairs ``found`` against ``truth`` (both (E, 2), any order)."""
    def codes(e):
        e = np.asarray(e, dtype=np.int64).reshape(-1, 2)
        return np.unique(np.minimum(e[:, 0], e[:, 1]) * p + np.maximum(e[:, 0], e[:, 1]))

    a, b = codes(found), codes(truth)
    tp = np.intersect1d(a, b).size
    prec = tp / a.size if a.size else 1.0
    rec = tp / b.size if b.size else 1.0
    return (2 * prec * rec / (prec + rec) if prec + rec else 0.0), prec, rec


def _load(args):
    X = np.load(Path(args.dir) / "X.npy")
    truth = np.load(Path(args.dir) / "truth.npy")
    return X, truth


def worker_probe(args):
    """One fit of ``args.method`` on one subsample at the grid's alpha ``probe_index``."""
    import warnings

    from spargel.gaussian.select import default_subsample_size
    from spargel.gaussian.selection import SparseGaussianMRFSelect
    from spargel.gaussian.stars import PathSpec, start_path

    X, _ = _load(args)
    n = X.shape[0]
    rng = np.random.default_rng(args.seed)
    rows = np.sort(rng.choice(n, default_subsample_size(n), replace=False))
    with warnings.catch_warnings():                         # compile the kernels first
        warnings.simplefilter("ignore")
        SparseGaussianMRFSelect("stars", method=args.method, alphas=2, n_subsamples=2,
                                random_state=0).fit(X[:60, :30])
    sel = SparseGaussianMRFSelect(method=args.method, alphas=args.n_alphas)
    grid = np.load(Path(args.dir) / "grid.npy") * (2.0 if args.method == "concord" else 1.0)
    a = float(grid[args.probe_index])
    spec = PathSpec(args.method, lowest=float(grid[-1]), loose=sel._loose_path())
    t0, c0 = time.perf_counter(), time.process_time()
    state = start_path(X, rows, spec)
    _, pattern, _ = state.advance(a)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"method": args.method, "alpha": a, "time": el, "cpu": cpu,
                      "edges": int(pattern.nnz), "rows": int(rows.size),
                      "peak_mb": peak_rss_mb()}))


def worker_select(args):
    """The whole StARS selection of ``args.method``."""
    import warnings

    from spargel.gaussian.selection import SparseGaussianMRFSelect

    X, truth = _load(args)
    p = X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SparseGaussianMRFSelect("stars", method=args.method, alphas=2, n_subsamples=2,
                                random_state=0).fit(X[:60, :30])
    kw = {}
    if args.given:                              # R's lambdas and subsamples
        kw["alphas"] = list(np.load(Path(args.dir) / "r_lambda.npy"))
        kw["subsamples"] = list(np.load(Path(args.dir) / "r_subsamples.npy"))
    else:
        kw["alphas"] = args.n_alphas
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    sel = SparseGaussianMRFSelect("stars", method=args.method, n_subsamples=args.subsamples,
                                  random_state=args.seed, n_jobs=args.n_jobs,
                                  stars_full_path=args.full_path, verbose=args.verbose, **kw)
    sel.fit(X)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    score, prec, rec = f1(sel.edges_, truth, p)
    var = [None if not np.isfinite(v) else float(v) for v in sel.criterion_scores_]
    print(json.dumps({"which": "spargel", "method": args.method, "time": el, "cpu": cpu,
                      "peak_mb": peak_rss_mb(), "alpha": sel.alpha_,
                      "index": sel.selected_index_, "edges": int(len(sel.edges_)), "f1": score,
                      "precision": prec, "recall": rec, "variability": var,
                      "alphas": [float(a) for a in sel.alphas_],
                      "load": [load0[0], os.getloadavg()[0]]}))


def worker_pyhuge(args):
    import pyhuge

    X, truth = _load(args)
    p = X.shape[1]
    np.random.seed(args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    est = pyhuge.huge(X, nlambda=args.n_alphas, lambda_min_ratio=0.1, method="mb",
                      verbose=False)
    sel = pyhuge.huge_select(est, criterion="stars", rep_num=args.subsamples, verbose=False)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    A = sel.refit.tocoo() if hasattr(sel.refit, "tocoo") else __import__("scipy.sparse").sparse.coo_matrix(sel.refit)
    keep = A.row < A.col
    e = np.column_stack([A.row[keep], A.col[keep]])
    score, prec, rec = f1(e, truth, p)
    print(json.dumps({"which": "pyhuge", "time": el, "cpu": cpu, "peak_mb": peak_rss_mb(),
                      "alpha": float(sel.opt_lambda), "index": int(sel.opt_index) - 1
                      if int(sel.opt_index) >= 1 else int(sel.opt_index),
                      "index_raw": int(sel.opt_index), "edges": int(e.shape[0]), "f1": score,
                      "variability": [float(v) for v in np.ravel(sel.variability)],
                      "alphas": [float(a) for a in np.ravel(est.lambda_)]
                      if hasattr(est, "lambda_") else None}))


_R = r"""
args <- commandArgs(TRUE)
dir <- args[1]; seed <- as.integer(args[2]); reps <- as.integer(args[3]); nl <- as.integer(args[4])
x <- as.matrix(read.table(file.path(dir, "X.txt")))
n <- nrow(x); d <- ncol(x)
suppressMessages(library(huge))
ratio <- if (n > 144) 10 * sqrt(n) / n else 0.8
set.seed(seed)                       # the subsamples huge.select draws below (huge.mb draws none)
subs <- t(sapply(1:reps, function(i) sample(c(1:n), floor(n * ratio), replace = FALSE)))
write.table(subs - 1L, file.path(dir, "r_subsamples.txt"), row.names = FALSE, col.names = FALSE)
set.seed(seed)
t0 <- proc.time()
est <- huge(x, method = "mb", nlambda = nl, lambda.min.ratio = 0.1, verbose = FALSE)
sel <- huge.select(est, criterion = "stars", rep.num = reps, verbose = FALSE)
dt <- proc.time() - t0
write.table(est$lambda, file.path(dir, "r_lambda.txt"), row.names = FALSE, col.names = FALSE)
up <- Matrix::which(Matrix::triu(sel$refit, 1) != 0, arr.ind = TRUE)
write.table(up - 1L, file.path(dir, "r_edges.txt"), row.names = FALSE, col.names = FALSE)
cat(sprintf('{"time": %.3f, "cpu": %.3f, "alpha": %.10g, "index": %d, "edges": %d, "variability": [%s]}\n',
            dt[["elapsed"]], dt[["user.self"]] + dt[["sys.self"]], sel$opt.lambda,
            sel$opt.index - 1L, nrow(up), paste(sprintf("%.6g", sel$variability), collapse = ", ")))
"""


def run_r(args, tmp):
    script = Path(tmp) / "stars.R"
    script.write_text(_R)
    cmd = ["/usr/bin/time", "-f", "%M", "Rscript", str(script), str(tmp), str(args.seed),
           str(args.subsamples), str(args.n_alphas)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if out.returncode != 0:
        return {"which": "R huge", "note": out.stderr.strip().splitlines()[-1][:300]}
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["peak_mb"] = int(out.stderr.strip().splitlines()[-1]) / 1024.0
    r["which"] = "R huge"
    np.save(Path(tmp) / "r_lambda.npy", np.loadtxt(Path(tmp) / "r_lambda.txt", ndmin=1))
    np.save(Path(tmp) / "r_subsamples.npy",
            np.loadtxt(Path(tmp) / "r_subsamples.txt", dtype=np.int64, ndmin=2))
    X, truth = _load(argparse.Namespace(dir=tmp))
    e = np.loadtxt(Path(tmp) / "r_edges.txt", dtype=np.int64, ndmin=2).reshape(-1, 2)
    r["f1"] = f1(e, truth, X.shape[1])[0]
    return r


def _worker(args, tmp, which, extra=(), python=None):
    cmd = [python or sys.executable, __file__, args.command, "--worker", which, "--dir", str(tmp),
           "--p", str(args.p), "--n", str(args.n), "--seed", str(args.seed),
           "--subsamples", str(args.subsamples), "--n-alphas", str(args.n_alphas),
           "--n-jobs", str(args.n_jobs), *extra]
    try:                     # (with --verbose the worker's progress lines pass through)
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout,
                             stderr=None if args.verbose else subprocess.PIPE)
    except subprocess.TimeoutExpired:
        return {"which": which, "note": f"over {args.timeout:g} s"}
    if out.returncode != 0:
        return {"which": which, "note": ((out.stderr or "").strip().splitlines() or ["?"])[-1][:300]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["scale", "huge"])
    ap.add_argument("--p", type=int, default=3772)
    ap.add_argument("--n", type=int, default=1313)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--subsamples", type=int, default=20)
    ap.add_argument("--n-alphas", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=2, help="spargel's threads over subsamples")
    ap.add_argument("--methods", nargs="+", default=["mb"], choices=["mb", "glasso", "concord"])
    ap.add_argument("--probe", action="store_true", help="time one fit of each method first")
    ap.add_argument("--probe-index", type=int, default=5)
    ap.add_argument("--probe-methods", nargs="+", default=["mb", "concord", "glasso"])
    ap.add_argument("--full-path", action="store_true", help="stars_full_path=True")
    ap.add_argument("--pyhuge-python", default=None)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="mb", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--given", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return {"probe": worker_probe, "select": worker_select,
                "pyhuge": worker_pyhuge}[args.worker](args)
    from spargel.gaussian.generators import make_graph_data

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        g = make_graph_data(n=args.n, p=args.p, graph="random", random_state=args.seed)
        X = np.ascontiguousarray(g.data)
        np.save(Path(tmp) / "X.npy", X)
        np.save(Path(tmp) / "truth.npy", np.asarray(g.edges, dtype=np.int64))
        Z = (X - X.mean(0)) / X.std(0)
        amax = 0.0
        for a in range(0, args.p, 512):                 # max |R_ij| by slabs
            B = np.abs(Z[:, a:a + 512].T @ Z) / args.n
            B[np.arange(B.shape[0]), np.arange(a, a + B.shape[0])] = 0.0
            amax = max(amax, float(B.max()))
        grid = amax * 0.1 ** (np.arange(args.n_alphas) / max(args.n_alphas - 1, 1))
        np.save(Path(tmp) / "grid.npy", grid)
        print(f"data: n = {args.n}, p = {args.p}, {len(g.edges)} true edges, "
              f"{time.perf_counter() - t0:.1f} s; alpha_max {amax:.4f}", file=sys.stderr,
              flush=True)
        if args.command == "huge":
            np.savetxt(Path(tmp) / "X.txt", X, fmt="%.17g")
        del X, Z, g
        if args.command == "scale":
            if args.probe:
                for m in args.probe_methods:
                    r = _worker(args, tmp, "probe", ["--method", m,
                                                     "--probe-index", str(args.probe_index)])
                    print(json.dumps(r), flush=True)
                    rows.append(dict(r, which=f"probe {m}"))
            for m in args.methods:
                r = _worker(args, tmp, "select", ["--method", m] +
                            (["--full-path"] if args.full_path else []) +
                            (["--verbose"] if args.verbose else []))
                print(json.dumps(r), flush=True)
                rows.append(r)
        else:
            if shutil.which("Rscript"):
                r = run_r(args, tmp)
                print(json.dumps(r), flush=True)
                rows.append(r)
            runs = ([(True, False), (True, True)] if shutil.which("Rscript") else []) + \
                [(False, False)]
            for given, full in runs:
                r = _worker(args, tmp, "select", ["--method", "mb"] +
                            (["--given"] if given else []) + (["--full-path"] if full else []))
                r["which"] = ("spargel, R's lambdas + subsamples" if given else "spargel, own") + \
                    (", whole path" if full else ", bounded")
                print(json.dumps(r), flush=True)
                rows.append(r)
            if args.pyhuge_python:
                r = _worker(args, tmp, "pyhuge", python=args.pyhuge_python)
                print(json.dumps(r), flush=True)
                rows.append(r)
    print(markdown_table(rows, [("which", "run", None), ("method", "method", None),
                                ("time", "wall s", "{:.1f}"), ("cpu", "CPU s", "{:.1f}"),
                                ("peak_mb", "peak MiB", "{:.0f}"), ("alpha", "alpha", "{:.4f}"),
                                ("index", "index", None), ("edges", "edges", None),
                                ("f1", "F1", "{:.3f}"), ("note", "note", None)]))


if __name__ == "__main__":
    main()
