"""Time one exact loss-and-gradient evaluation of a pairwise MRF whose active edges form
a tree, with every pair of variables a candidate edge (structure learning's case).

    python bench/mrf_exact_tree.py 50 100 1000 [--states 2] [--repeat 3]

Builds a random tree over ``n`` binary (or ``--states``) variables, random node biases
and edge tables on the tree's edges, zero on every other candidate edge, and times
``PairwiseMRFModel(X, inference="exact").loss_grad(w)`` (the first call, which compiles
and plans, is reported apart).
"""

import argparse
import time

import numpy as np

from spargel.mrf.model import PairwiseMRFModel


def setup(n, k, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, k, (200, n))
    X[:k, :] = np.arange(k)[:, None]                       # every state occurs
    model = PairwiseMRFModel(X, np.full(n, k), inference="exact")
    w = np.zeros(model.n_params)
    w[:model.n_node_params] = rng.normal(size=model.n_node_params)
    parent = [int(rng.integers(0, v)) for v in range(1, n)]
    index = {tuple(e): i for i, e in enumerate(model.graph.edges.tolist())}
    for v, p in zip(range(1, n), parent):
        e = index[(p, v)]
        w[model.edge_param_ptr[e]:model.edge_param_ptr[e + 1]] = rng.normal(size=k * k)
    return model, w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", type=int, nargs="+")
    ap.add_argument("--states", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    for n in a.sizes:
        model, w = setup(n, a.states)
        t0 = time.perf_counter()
        loss, g = model.loss_grad(w)
        first = time.perf_counter() - t0
        times = []
        for _ in range(a.repeat):
            w2 = w.copy()
            w2[:model.n_node_params] += 1e-3
            t0 = time.perf_counter()
            model.loss_grad(w2)
            times.append(time.perf_counter() - t0)
        print(f"n={n:5d} candidates={model.graph.n_edges:7d} first {first:8.3f} s  "
              f"then {min(times):8.3f} s (best of {a.repeat})  loss {loss:.6f}", flush=True)


if __name__ == "__main__":
    main()
