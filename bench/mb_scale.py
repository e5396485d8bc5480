"""Neighbourhood selection at genomics scale: spargel against pyhuge's ``huge_mb`` and R's
``huge(method = "mb")``.

The data are ``bench/gmrf_scale.py``'s chain (R ``huge.generator``'s band graph with
``g = 1``: an AR(1)-like chain across the variables) or, with ``--graph random``, its
random graph (each pair an edge with probability 3 / p), n samples, standardised and
written once to a binary file that both contenders read. Each contender runs in its own
process; time is the fit alone (data loading excluded), wall-clock and CPU, and peak
resident memory is that process's (``getrusage``; GNU ``time -f %M`` for R). All fit one
lambda with the "or" rule (pyhuge: ``huge_mb(x, lambda_=[alpha], sym="or")``, R:
``huge(x, lambda = alpha, method = "mb", sym = "or")``, their default lossless
settings); each edge set is compared with spargel's by their Jaccard index
(|A & B| / |A | B|), and against the true graph (recall, precision).

pyhuge is not a dependency of spargel: install it in a separate environment and name its
interpreter with ``--pyhuge-python`` (its worker needs only numpy and pyhuge).

    python bench/mb_scale.py --p 2000 10000 --n 1000 --alpha 0.2 \\
        --pyhuge-python /path/to/venv/bin/python
    python bench/mb_scale.py --graph random --p 2000 10000 --alpha 0.1 --pyhuge-python ...
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, peak_rss_mb  # noqa: E402


def worker_spargel(args):
    import warnings

    from spargel.gaussian.neighbourhood import NeighbourhoodSelection

    X = np.fromfile(args.data, dtype=np.float64).reshape(args.n, args.p)
    with warnings.catch_warnings():                 # load the compiled kernels first
        warnings.simplefilter("ignore")
        NeighbourhoodSelection(alpha=0.3, mode="data").fit(X[:50, :40])
    t0, c0 = time.perf_counter(), time.process_time()
    m = NeighbourhoodSelection(alpha=args.alpha, rule="or", n_jobs=args.n_jobs).fit(X)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.asarray(m.edges_, dtype=np.int32).tofile(args.edges)
    print(json.dumps({"time": el, "cpu": cpu, "peak_mb": peak_rss_mb(), "edges": int(len(m.edges_)),
                      "mode": m.mode_, "screened": m.screened_pairs_}))


def worker_pyhuge(args):
    import pyhuge

    X = np.fromfile(args.data, dtype=np.float64).reshape(args.n, args.p)
    t0, c0 = time.perf_counter(), time.process_time()
    fit = pyhuge.huge_mb(X, lambda_=[args.alpha], sym="or", verbose=False)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    A = fit.path[0].tocoo()
    keep = A.row < A.col
    e = np.column_stack([A.row[keep], A.col[keep]]).astype(np.int32)
    e.tofile(args.edges)
    print(json.dumps({"time": el, "cpu": cpu, "peak_mb": peak_rss_mb(), "edges": int(len(e))}))


_R = r"""
args <- commandArgs(TRUE)
p <- as.integer(args[2]); n <- as.integer(args[3]); alpha <- as.numeric(args[4])
x <- matrix(readBin(args[1], "double", n * p), nrow = n, ncol = p, byrow = TRUE)
suppressMessages(library(huge))
t0 <- proc.time()
fit <- huge(x, lambda = alpha, method = "mb", sym = "or", verbose = FALSE)
dt <- proc.time() - t0
A <- fit$path[[1]]
up <- Matrix::which(Matrix::triu(A, 1) != 0, arr.ind = TRUE)
writeBin(as.integer(c(t(up)) - 1L), args[5], size = 4)
cat(sprintf('{"time": %.3f, "cpu": %.3f, "edges": %d}\n', dt[["elapsed"]],
            dt[["user.self"]] + dt[["sys.self"]], nrow(up)))
"""


def run_r(data, p, n, alpha, timeout, tmp, edges):
    """R huge's ``huge(x, lambda, method = "mb")`` under GNU time (its peak RSS)."""
    from gmrf_scale import _run

    script = Path(tmp) / "mb.R"
    script.write_text(_R)
    cmd = ["/usr/bin/time", "-f", "%M", "Rscript", str(script), str(data), str(p), str(n),
           str(alpha), str(edges)]
    got = _run(cmd, timeout)
    if got is None:
        return {"note": f"over {timeout} s"}
    if got[0] != 0:
        return {"note": got[2].strip().splitlines()[-1][:300]}
    res = json.loads(got[1].strip().splitlines()[-1])
    res["peak_mb"] = int(got[2].strip().splitlines()[-1]) / 1024.0
    return res


def _codes(e, p):
    e = np.asarray(e, dtype=np.int64).reshape(-1, 2)
    return np.unique(np.minimum(e[:, 0], e[:, 1]) * p + np.maximum(e[:, 0], e[:, 1]))


def jaccard(a, b, p):
    ca, cb = _codes(a, p), _codes(b, p)
    union = np.union1d(ca, cb).size
    return np.intersect1d(ca, cb).size / union if union else 1.0


def main():
    from gmrf_scale import _run, chain_data, chain_edges, edge_scores, random_data

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.2)
    ap.add_argument("--graph", choices=["chain", "random"], default="chain",
                    help="the chain (default) or huge's random graph (gmrf_scale.py's)")
    ap.add_argument("--n-jobs", type=int, default=1, help="spargel's threads over nodes")
    ap.add_argument("--which", nargs="+", default=["spargel", "pyhuge", "huge"],
                    choices=["spargel", "pyhuge", "huge"],
                    help="contenders: spargel, pyhuge (needs --pyhuge-python), huge (R's, "
                    "when Rscript and the package are there; up to --r-max-p variables)")
    ap.add_argument("--r-max-p", type=int, default=10000)
    ap.add_argument("--pyhuge-python", default=None,
                    help="a Python interpreter that has pyhuge (skipped when not given)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--edges", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.p = args.p[0]
        return (worker_spargel if args.worker == "spargel" else worker_pyhuge)(args)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.p:
            data = Path(tmp) / f"x{p}.bin"
            if args.graph == "chain":
                X, truth = chain_data(p, args.n), chain_edges(p)
            else:
                X, truth = random_data(p, args.n)
            X.tofile(data)
            del X
            found = {}
            these = []
            for which in args.which:
                edges = Path(tmp) / f"edges-{which}.bin"
                if which == "huge":
                    if shutil.which("Rscript") is None or p > args.r_max_p:
                        continue
                    r = run_r(data, p, args.n, args.alpha, args.timeout, tmp, edges)
                else:
                    python = sys.executable if which == "spargel" else args.pyhuge_python
                    if python is None:
                        continue
                    cmd = [python, __file__, "--worker", which, "--data", str(data), "--p", str(p),
                           "--n", str(args.n), "--alpha", str(args.alpha), "--edges", str(edges),
                           "--n-jobs", str(args.n_jobs)]
                    got = _run(cmd, args.timeout)
                    if got is None:
                        r = {"note": f"over {args.timeout} s"}
                    elif got[0] != 0:
                        r = {"note": got[2].strip().splitlines()[-1][:300]}
                    else:
                        r = json.loads(got[1].strip().splitlines()[-1])
                if "edges" in r and edges.exists():
                    found[which] = np.fromfile(edges, dtype=np.int32).reshape(-1, 2)
                    r["recall"], r["precision"] = edge_scores(found[which], truth, p)
                r.update(p=p, n=args.n, which=which, alpha=args.alpha, graph=args.graph)
                these.append(r)
            # the Jaccard index of each edge set against spargel's
            for r in these:
                if r["which"] != "spargel" and r["which"] in found and "spargel" in found:
                    r["jaccard"] = jaccard(found["spargel"], found[r["which"]], p)
            for r in these:
                print(json.dumps(r), flush=True)
            rows += these
            data.unlink()
    print(markdown_table(rows, [("graph", "graph", None), ("p", "p", None), ("n", "n", None), ("which", "fit", None),
                                ("time", "seconds", "{:.2f}"), ("cpu", "CPU s", "{:.2f}"),
                                ("peak_mb", "peak MiB", "{:.0f}"), ("edges", "edges", None),
                                ("jaccard", "Jaccard vs spargel", "{:.4f}"), ("recall", "recall", "{:.3f}"),
                                ("precision", "precision", "{:.3f}"), ("note", "note", None)]))


if __name__ == "__main__":
    main()
