"""Neighbourhood selection at genomics scale: spargel against pyhuge's ``huge_mb``.

The data are ``bench/gmrf_scale.py``'s chain (R ``huge.generator``'s band graph with
``g = 1``: an AR(1)-like chain across the variables) or, with ``--graph random``, its
random graph (each pair an edge with probability 3 / p), n samples, standardised and
written once to a binary file that both contenders read. Each contender runs in its own
process; time is the fit alone (data loading excluded), wall-clock and CPU, and peak
resident memory is that process's (``getrusage``). Both fit one lambda with the "or"
rule (pyhuge: ``huge_mb(x, lambda_=[alpha], sym="or")``, its default lossless
settings); the edge sets are compared by their Jaccard index (|A & B| / |A | B|), and
each against the true chain (recall, precision).

pyhuge is not a dependency of spargel: install it in a separate environment and name its
interpreter with ``--pyhuge-python`` (its worker needs only numpy and pyhuge).

    python bench/mb_scale.py --p 2000 10000 --n 1000 --alpha 0.2 \\
        --pyhuge-python /path/to/venv/bin/python
    python bench/mb_scale.py --graph random --p 2000 10000 --alpha 0.1 --pyhuge-python ...
"""

from __future__ import annotations

import argparse
import json
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
            for which, python in (("spargel", sys.executable), ("pyhuge", args.pyhuge_python)):
                if python is None:
                    continue
                edges = Path(tmp) / f"edges-{which}.bin"
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
                    found[which] = np.fromfile(edges, dtype=np.int32).reshape(-1, 2)
                    r["recall"], r["precision"] = edge_scores(found[which], truth, p)
                r.update(p=p, n=args.n, which=which, alpha=args.alpha, graph=args.graph)
                rows.append(r)
            if len(found) == 2:
                J = jaccard(found["spargel"], found["pyhuge"], p)
                for r in rows[-2:]:
                    r["jaccard"] = J
            for r in rows[-2:]:
                print(json.dumps(r), flush=True)
            data.unlink()
    print(markdown_table(rows, [("graph", "graph", None), ("p", "p", None), ("n", "n", None), ("which", "fit", None),
                                ("time", "seconds", "{:.2f}"), ("cpu", "CPU s", "{:.2f}"),
                                ("peak_mb", "peak MiB", "{:.0f}"), ("edges", "edges", None),
                                ("jaccard", "Jaccard", "{:.4f}"), ("recall", "recall", "{:.3f}"),
                                ("precision", "precision", "{:.3f}"), ("note", "note", None)]))


if __name__ == "__main__":
    main()
