"""Sparse Gaussian MRFs at genomics scale: time and peak memory against R's glasso / huge.

Synthetic graphs (``--graph``) as R's ``huge.generator`` makes them, from
:func:`spargel.gaussian.make_graph_data`: ``chain``, its ``graph = "band", g = 1``
(precision ``0.3`` on the first off-diagonal, diagonal ``|lambda_min| + 0.2``, rescaled
to a correlation matrix); ``random``, its ``graph = "random"`` (each pair an edge with
probability ``3 / p``), both sampled through a sparse factor of the precision from
10,000 variables on. Never a dense p x p matrix there; the samples are standardised and written once
per p to a binary file that every contender reads. Each contender runs in its own
process; peak resident memory is that process's (``getrusage`` for spargel, GNU
``time -f %M`` for R), time is the fit alone (data loading excluded), as wall-clock
and as the process's CPU time (the fairer number on a shared machine).

Contenders (``--which``):

* ``dense``: ``SparseGaussianMRF(alpha)`` (forms S = X^T X / n, p x p);
* ``from_data``: ``SparseGaussianMRF(alpha, covariance="from_data")`` (screening from
  X by column slabs, each screened component solved on its own covariance block);
* ``glasso``: R ``glasso(S, rho = alpha, penalize.diagonal = FALSE)`` on ``S = cor(x)``;
* ``huge``: R ``huge(x, lambda = alpha, method = "glasso")``.

Edge recall / precision are against the true graph's edges (each contender writes its
edge list to a file). R runs are skipped above
``--r-max-p`` (default 5000) and when R or the package is missing.

    python bench/gmrf_scale.py --p 2000 5000 10000 --n 1000 --alpha 0.2 \\
        --which dense from_data glasso huge
    python bench/gmrf_scale.py --graph random --p 10000 20000 --n 1000 --which dense
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, peak_rss_mb  # noqa: E402

_R = r"""
args <- commandArgs(TRUE)
p <- as.integer(args[2]); n <- as.integer(args[3]); alpha <- as.numeric(args[4])
x <- matrix(readBin(args[1], "double", n * p), nrow = n, ncol = p, byrow = TRUE)
suppressMessages(library(args[5], character.only = TRUE))
t0 <- proc.time()

if (args[5] == "glasso") {
  fit <- glasso(cor(x), rho = alpha, penalize.diagonal = FALSE)
  K <- fit$wi
} else {
  fit <- huge(x, lambda = alpha, method = "glasso", verbose = FALSE)
  K <- as.matrix(fit$icov[[1]])
}
dt <- proc.time() - t0
el <- dt[["elapsed"]]
cpu <- dt[["user.self"]] + dt[["sys.self"]]
K[abs(K) < 1e-12] <- 0
up <- which(K != 0 & upper.tri(K), arr.ind = TRUE)
writeBin(as.integer(c(t(up)) - 1L), args[6], size = 4)
cat(sprintf('{"time": %.3f, "cpu": %.3f, "edges": %d}\n', el, cpu, nrow(up)))
"""


def _standardised(X):
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    return X


def chain_data(p, n, seed=0):
    """Standardised samples of huge's band graph (g = 1) with p variables
    (:func:`spargel.gaussian.make_graph_data`, sparse from 10,000 variables)."""
    from spargel.gaussian.generators import make_graph_data

    return _standardised(make_graph_data(n, p, "band", g=1, random_state=seed).data)


def random_data(p, n, seed=0):
    """Standardised samples of huge's random graph with p variables, and its edges
    (an (m, 2) array, i < j)."""
    from spargel.gaussian.generators import make_graph_data

    d = make_graph_data(n, p, "random", random_state=seed)
    return _standardised(d.data), d.edges


def chain_edges(p):
    return np.column_stack([np.arange(p - 1), np.arange(1, p)])


def edge_scores(found, truth, p):
    """(recall, precision) of the found edges (an (m, 2) array) against the true ones."""
    code = lambda e: np.minimum(e[:, 0], e[:, 1]).astype(np.int64) * p + np.maximum(e[:, 0], e[:, 1])
    hit = np.isin(code(found), code(truth)).sum()
    return hit / max(len(truth), 1), hit / max(len(found), 1)


def worker(args):
    import warnings

    from spargel.gaussian.estimator import SparseGaussianMRF

    X = np.fromfile(args.data, dtype=np.float64).reshape(args.n, args.p)
    mode = "from_data" if args.which == "from_data" else None
    with warnings.catch_warnings():                 # load the compiled kernels first
        warnings.simplefilter("ignore")
        SparseGaussianMRF(alpha=0.05, covariance=mode).fit(X[:, :40])
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SparseGaussianMRF(alpha=args.alpha, covariance=mode).fit(X)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    e = m.edges_
    np.asarray(e, dtype=np.int32).tofile(args.edges)
    print(json.dumps({"time": el, "cpu": cpu, "peak_mb": peak_rss_mb(), "edges": int(len(e)),
                      "components": int(m.n_components_),
                      "converged": bool(m.converged_)}))


def _run(cmd, timeout):
    """``(returncode, stdout, stderr)`` of cmd in its own process group, or None when
    it ran past ``timeout`` (then the whole group is killed: R under GNU time too)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return proc.returncode, out, err


def run_spargel(which, data, p, n, alpha, timeout, edges):
    cmd = [sys.executable, __file__, "--worker", which, "--data", str(data), "--p", str(p),
           "--n", str(n), "--alpha", str(alpha), "--edges", str(edges)]
    got = _run(cmd, timeout)
    if got is None:
        return {"time": None, "note": f"over {timeout} s"}
    if got[0] != 0:
        return {"note": got[2].strip().splitlines()[-1][:300]}
    return json.loads(got[1].strip().splitlines()[-1])


def run_r(pkg, data, p, n, alpha, timeout, tmp, edges):
    script = Path(tmp) / "fit.R"
    script.write_text(_R)
    cmd = ["/usr/bin/time", "-f", "%M", "Rscript", str(script), str(data), str(p), str(n),
           str(alpha), pkg, str(edges)]
    got = _run(cmd, timeout)
    if got is None:
        return {"time": None, "note": f"over {timeout} s"}
    if got[0] != 0:
        return {"note": got[2].strip().splitlines()[-1][:300]}
    res = json.loads(got[1].strip().splitlines()[-1])
    res["peak_mb"] = int(got[2].strip().splitlines()[-1]) / 1024.0
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.2)
    ap.add_argument("--which", nargs="+", default=["dense", "from_data", "glasso", "huge"])
    ap.add_argument("--graph", choices=["chain", "random"], default="chain")
    ap.add_argument("--r-max-p", type=int, default=5000)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--edges", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.which = args.worker
        args.p = args.p[0]
        return worker(args)
    have_r = shutil.which("Rscript") is not None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.p:
            data = Path(tmp) / f"x{p}.bin"
            edges = Path(tmp) / "edges.bin"
            if args.graph == "chain":
                X, truth = chain_data(p, args.n), chain_edges(p)
            else:
                X, truth = random_data(p, args.n)
            X.tofile(data)
            del X
            for which in args.which:
                edges.unlink(missing_ok=True)
                if which in ("glasso", "huge"):
                    if not have_r or p > args.r_max_p:
                        continue
                    r = run_r(which, data, p, args.n, args.alpha, args.timeout, tmp, edges)
                else:
                    r = run_spargel(which, data, p, args.n, args.alpha, args.timeout, edges)
                r.update(p=p, n=args.n, which=which, graph=args.graph)
                if r.get("edges") and edges.exists():
                    found = np.fromfile(edges, dtype=np.int32).reshape(-1, 2)
                    r["recall"], r["precision"] = edge_scores(found, truth, p)
                rows.append(r)
                print(json.dumps(r), flush=True)
            data.unlink()
    print(markdown_table(rows, [("graph", "graph", None), ("p", "p", None), ("n", "n", None),
                                ("which", "fit", None),
                                ("time", "seconds", "{:.1f}"), ("cpu", "CPU s", "{:.1f}"), ("peak_mb", "peak MiB", "{:.0f}"),
                                ("edges", "edges", None), ("recall", "recall", "{:.3f}"),
                                ("precision", "precision", "{:.3f}"),
                                ("components", "components", None), ("note", "note", None)]))


if __name__ == "__main__":
    main()
