"""Sharded CRF training on a Dask LocalCluster: time per evaluation, overhead per
evaluation (sending w, scheduling, moving and adding gradients) and peak memory per
worker, for CoNLL-2000 and for the corpus concatenated k times; then the cost model's
prediction for bigger clusters (docs/benchmarks.md, "Dask scale-out").

    python bench/dask_scaling.py --k 1 4 --workers 1 2 --evals 3 --markdown out.md

Each configuration gets a fresh LocalCluster (worker processes, one thread each, a
per-worker memory limit); the workers read their byte ranges of the corpus file
themselves. The single-process model (``ChainCRF``, one thread) on the k = 1 corpus is
the peer: its time per evaluation is the compute the sharded model must add little to.
"""

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table  # noqa: E402


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def corpus(k, folder):
    """CoNLL-2000 train concatenated k times (a file the workers can read)."""
    src = data_dir("conll2000") / "train.txt"
    path = Path(folder) / f"conll2000_x{k}.txt"
    if not path.exists():
        text = src.read_bytes()
        if not text.endswith(b"\n\n"):
            text = text.rstrip(b"\n") + b"\n\n"
        with open(path, "wb") as f:
            for _ in range(k):
                f.write(text)
    return path


def measure(path, n_workers, n_shards, evals, memory_limit, template):
    from distributed import Client, LocalCluster

    from spargel import CRF
    from spargel.chain import scaleout as sequences

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           memory_limit=memory_limit)
    client = Client(cluster)
    try:
        t0 = time.perf_counter()
        built = sequences.build(CRF(template=template, n_shards=n_shards), [str(path)], client=client)
        model = built.model
        model.loss_grad(np.zeros(model.n_params))          # first evaluation: compiles on the workers
        build_s = time.perf_counter() - t0
        rng = np.random.default_rng(0)
        model.timings.clear()
        for _ in range(evals):
            model.loss_grad(rng.normal(scale=0.1, size=model.n_params))
        t = model.timings
        peaks = client.run(_peak_mb)
        return {"n_params": model.n_params, "build_s": build_s,
                "wall": statistics.median(x["wall"] for x in t),
                "compute": statistics.median(x["compute"] for x in t),
                "overhead": statistics.median(x["overhead"] for x in t),
                "peak_mb": max(peaks.values()), "tokens": None}
    finally:
        client.close()
        cluster.close()


def single_process(path, evals, template):
    from spargel import CRF, read_conll
    from spargel.chain.crf import ChainCRF

    sents = list(read_conll(path))
    est = CRF(template=template)
    data = est._dataset(sents, [s.labels for s in sents], grow=True)
    model = ChainCRF(est._feature_space(data), data, n_jobs=1)
    model.loss_grad(np.zeros(model.n_params))
    rng = np.random.default_rng(0)
    times = []
    for _ in range(evals):
        w = rng.normal(scale=0.1, size=model.n_params)
        t0 = time.perf_counter()
        model.loss_grad(w)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), model.n_params, data.n_tokens


def cost_model(n_params, sec_per_token, tokens, workers, gbit=10.0, latency=2e-3):
    """Predicted seconds per evaluation: compute of one worker's share plus sending w to
    every worker and getting the gradients back through a 4-way tree (each level moves
    one gradient per link; the scheduler's per-task latency per level)."""
    import math
    nbytes = 8.0 * n_params
    bw = gbit * 1e9 / 8
    levels = max(1, math.ceil(math.log(max(workers, 2), 4)))
    comm = nbytes / bw * (1 + 4 * levels) + latency * (levels + 1)
    return tokens * sec_per_token / workers, comm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shards-per-worker", type=int, default=1)
    ap.add_argument("--evals", type=int, default=3)
    ap.add_argument("--memory-limit", default="3GiB", help="per worker")
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()

    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE as TPL

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        peer_s, n_params, tokens1 = single_process(corpus(1, tmp), args.evals, TPL)
        print(f"single process, k=1: {peer_s:.3f} s / eval, {n_params} weights, {tokens1} tokens", flush=True)
        for k in args.k:
            path = corpus(k, tmp)
            for nw in args.workers:
                r = measure(path, nw, nw * args.shards_per_worker, args.evals, args.memory_limit, TPL)
                r.update(k=k, workers=nw, tokens=k * tokens1, size_mb=os.path.getsize(path) / 2 ** 20,
                         overhead_pct=100 * r["overhead"] / r["compute"], vs_peer=r["wall"] / (k * peer_s))
                rows.append(r)
                print(r, flush=True)
    cols = [("k", "k", None), ("tokens", "tokens", "{:,}"), ("size_mb", "file MiB", "{:.0f}"),
            ("workers", "workers", None), ("build_s", "build s", "{:.1f}"), ("wall", "s / eval", "{:.3f}"),
            ("compute", "compute s", "{:.3f}"), ("overhead", "overhead s", "{:.3f}"),
            ("overhead_pct", "overhead % of compute", "{:.1f}"), ("vs_peer", "s / eval ÷ (k × single)", "{:.2f}"),
            ("peak_mb", "peak MiB / worker", "{:.0f}")]
    table = markdown_table(rows, cols)
    # the cost model, calibrated on the measured compute per token and worker (1 worker, largest k)
    one = [r for r in rows if r["workers"] == 1]
    ref = max(one, key=lambda r: r["k"]) if one else rows[0]
    spt = ref["compute"] * ref["workers"] / ref["tokens"]
    pred = []
    for w in (8, 32, 128):
        comp, comm = cost_model(rows[0]["n_params"], spt, 100e6, w)
        pred.append({"workers": w, "compute": comp, "comm": comm, "total": comp + comm,
                     "pct": 100 * comm / comp})
    pcols = [("workers", "workers", None), ("compute", "compute s", "{:.2f}"), ("comm", "communication s", "{:.3f}"),
             ("total", "s / eval", "{:.2f}"), ("pct", "comm % of compute", "{:.1f}")]
    text = (f"single process (one thread), k = 1: {peer_s:.3f} s / evaluation, {n_params:,} weights, "
            f"{tokens1:,} tokens\n\n{table}\n\nPredicted, 100 million tokens, {rows[0]['n_params']:,} weights, "
            f"10 Gbit/s, {spt * 1e6:.2f} µs per token (measured):\n\n{markdown_table(pred, pcols)}\n")
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
