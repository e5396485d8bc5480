"""Sparse Gaussian MRFs at genomics scale: time and peak memory against R's glasso / huge.

Synthetic chain graphs as R's ``huge.generator(graph = "band", g = 1)`` makes them
(precision ``0.3`` on the first off-diagonal, diagonal ``|lambda_min| + 0.2``,
rescaled to a correlation matrix), sampled here through the banded Cholesky factor
of the precision (never a dense p x p matrix) and standardised, written once per p
to a binary file that every contender reads. Each contender runs in its own
process; peak resident memory is that process's (``getrusage`` for spargel, GNU
``time -f %M`` for R), time is the fit alone (data loading excluded), as wall-clock
and as the process's CPU time (the fairer number on a shared machine).

Contenders (``--which``):

* ``dense``: ``SparseGaussianMRF(alpha)`` (forms S = X^T X / n, p x p);
* ``from_data``: ``SparseGaussianMRF(alpha, covariance="from_data")`` (screening from
  X by column slabs, each screened component solved on its own covariance block);
* ``glasso``: R ``glasso(S, rho = alpha, penalize.diagonal = FALSE)`` on ``S = cor(x)``;
* ``huge``: R ``huge(x, lambda = alpha, method = "glasso")``.

Edge recall / precision are against the chain's edges. R runs are skipped above
``--r-max-p`` (default 5000) and when R or the package is missing.

    python bench/gmrf_scale.py --p 2000 5000 10000 --n 1000 --alpha 0.2 \\
        --which dense from_data glasso huge
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
chain <- sum(up[, 2] - up[, 1] == 1 | up[, 1] - up[, 2] == 1)
cat(sprintf('{"time": %.3f, "cpu": %.3f, "edges": %d, "chain_edges": %d}\n', el, cpu,
            nrow(up), chain))
"""


def chain_data(p, n, seed=0):
    """Standardised samples of huge's band graph (g = 1) with p variables."""
    from scipy.linalg import cholesky_banded, solve_banded

    v, u = 0.3, 0.1
    lam_min = -2 * v * np.cos(np.pi / (p + 1))         # of the zero-diagonal band
    diag = abs(lam_min) + 0.1 + u
    ab = np.zeros((2, p))                               # upper banded storage
    ab[0, 1:] = v
    ab[1, :] = diag
    R = cholesky_banded(ab)                             # precision = R^T R
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((p, n))
    # x = R^-1 z has covariance (R^T R)^-1
    Xt = solve_banded((0, 1), R, Z)
    X = np.ascontiguousarray(Xt.T)
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    return X


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
    chain = int(np.count_nonzero(np.abs(e[:, 0] - e[:, 1]) == 1))
    print(json.dumps({"time": el, "cpu": cpu, "peak_mb": peak_rss_mb(), "edges": int(len(e)),
                      "chain_edges": chain, "components": int(m.n_components_),
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


def run_spargel(which, data, p, n, alpha, timeout):
    cmd = [sys.executable, __file__, "--worker", which, "--data", str(data), "--p", str(p),
           "--n", str(n), "--alpha", str(alpha)]
    got = _run(cmd, timeout)
    if got is None:
        return {"time": None, "note": f"over {timeout} s"}
    if got[0] != 0:
        return {"note": got[2].strip().splitlines()[-1][:300]}
    return json.loads(got[1].strip().splitlines()[-1])


def run_r(pkg, data, p, n, alpha, timeout, tmp):
    script = Path(tmp) / "fit.R"
    script.write_text(_R)
    cmd = ["/usr/bin/time", "-f", "%M", "Rscript", str(script), str(data), str(p), str(n),
           str(alpha), pkg]
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
    ap.add_argument("--r-max-p", type=int, default=5000)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
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
            chain_data(p, args.n).tofile(data)
            for which in args.which:
                if which in ("glasso", "huge"):
                    if not have_r or p > args.r_max_p:
                        continue
                    r = run_r(which, data, p, args.n, args.alpha, args.timeout, tmp)
                else:
                    r = run_spargel(which, data, p, args.n, args.alpha, args.timeout)
                r.update(p=p, n=args.n, which=which)
                if r.get("edges"):
                    r["recall"] = r["chain_edges"] / (p - 1)
                    r["precision"] = r["chain_edges"] / r["edges"]
                rows.append(r)
                print(json.dumps(r), flush=True)
            data.unlink()
    print(markdown_table(rows, [("p", "p", None), ("n", "n", None), ("which", "fit", None),
                                ("time", "seconds", "{:.1f}"), ("cpu", "CPU s", "{:.1f}"), ("peak_mb", "peak MiB", "{:.0f}"),
                                ("edges", "edges", None), ("recall", "recall", "{:.3f}"),
                                ("precision", "precision", "{:.3f}"),
                                ("components", "components", None), ("note", "note", None)]))


if __name__ == "__main__":
    main()
