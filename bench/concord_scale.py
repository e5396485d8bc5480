"""CONCORD at genomics scale: time and peak memory of ``spargel.Concord`` on the columns.

The data are ``gmrf_scale.py``'s chain (R huge's band graph, g = 1: precision 0.3 beside
the diagonal, partial correlations about -0.37), n samples, standardised, written once
per p to a binary file. Each fit runs in its own process (after a small fit that loads
the compiled kernels); time is the fit alone (wall-clock and CPU), peak memory is the
process's peak resident set (``getrusage``), printed beside the resident set after
loading the data (X itself: ``8 n p`` bytes). Edges found, recall and precision are
against the chain's ``p - 1`` edges; ``kkt_s`` is the time of the KKT passes (the rest
is coordinate descent and bookkeeping). With ``--client local:2`` the KKT passes run on
a local Dask cluster of two one-thread worker processes (their peak resident sets are
printed too; the client's excludes them).

    python bench/concord_scale.py --p 10000 50000 --n 500 --alpha 0.55
    python bench/concord_scale.py --p 10000 50000 --n 500 --alpha 0.55 --client local:2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, peak_rss_mb  # noqa: E402
from gmrf_scale import chain_data, chain_edges, edge_scores  # noqa: E402


def _worker_peak_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(args):
    from spargel.gaussian.concord import Concord

    client = None
    if args.client:
        from spargel.scaleout.cluster import connect

        client = connect(args.client)
    X = np.fromfile(args.data, dtype=np.float64).reshape(args.n, args.p)
    Concord(alpha=0.5, covariance="from_data", client=client).fit(X[:, :50])  # load kernels
    loaded = peak_rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    m = Concord(alpha=args.alpha, covariance="from_data", verbose=args.verbose,
                client=client).fit(X)
    el, cpu = time.perf_counter() - t0, time.process_time() - c0
    workers_mb = None
    if client is not None:
        workers_mb = sorted(round(v) for v in client.run(_worker_peak_mb).values())
        from spargel.scaleout.cluster import disconnect

        disconnect(client)
    recall, precision = edge_scores(m.edges_, chain_edges(args.p), args.p)
    hist = m.history_
    kkt = sum(r["kkt_seconds"] for r in hist)
    print(json.dumps({"time": el, "cpu": cpu, "kkt_s": kkt, "peak_mb": peak_rss_mb(),
                      "loaded_mb": loaded, "edges": int(len(m.edges_)), "recall": recall,
                      "precision": precision, "kkt_passes": m.n_kkt_passes_,
                      "sweeps": m.n_iter_, "active_set": int(hist[-1]["active_set"]),
                      "converged": bool(m.converged_), "workers_mb": workers_mb}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, nargs="+", default=[10000, 50000])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--alpha", type=float, default=0.55)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--client", help="a Dask scheduler address, or local:N (N worker "
                    "processes of one thread): the KKT passes run on its workers")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.p = args.p[0]
        return worker(args)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.p:
            data = Path(tmp) / f"x{p}.bin"
            chain_data(p, args.n).tofile(data)
            cmd = [sys.executable, __file__, "--worker", "--data", str(data), "--p", str(p),
                   "--n", str(args.n), "--alpha", str(args.alpha)]
            if args.verbose:
                cmd.append("--verbose")
            if args.client:
                cmd += ["--client", args.client]
            out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            r.update(p=p, n=args.n, alpha=args.alpha, fit=f"dask {args.client}" if args.client
                     else "one process")
            rows.append(r)
            print(json.dumps(r), flush=True)
            data.unlink()
    print(markdown_table(rows, [("fit", "fit", None), ("p", "p", None), ("n", "n", None), ("alpha", "alpha", None),
                                ("time", "seconds", "{:.1f}"), ("cpu", "CPU s", "{:.1f}"),
                                ("kkt_s", "KKT s", "{:.1f}"), ("kkt_passes", "KKT passes", None),
                                ("sweeps", "sweeps", None),
                                ("loaded_mb", "MiB with X", "{:.0f}"),
                                ("peak_mb", "peak MiB", "{:.0f}"), ("edges", "edges", None),
                                ("recall", "recall", "{:.4f}"),
                                ("precision", "precision", "{:.4f}"),
                                ("workers_mb", "workers' peak MiB", None)]))


if __name__ == "__main__":
    main()
