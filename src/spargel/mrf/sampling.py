"""Gibbs sampling from a pairwise MRF (seeded, compiled).

Systematic-scan Gibbs: each sweep visits every variable once and redraws it from its
conditional distribution given its neighbours, ``p(x_i | x_N(i)) ∝ exp(theta_i(x_i) +
sum_j theta_ij(x_i, x_j))``. After ``burn_in`` sweeps a sample is kept every ``thin``
sweeps. ``n_chains`` independent chains (started from uniform random states) share the
samples out, which makes the draws less correlated; the same seed gives the same draws.

>>> import numpy as np
>>> from spargel.mrf.graph import Graph
>>> g = Graph([2, 2], [[0, 1]])
>>> X = gibbs_sample(g, np.zeros(4), np.array([2.0, 0, 0, 2.0]), 2000, seed=0)
>>> X.shape, bool(abs(np.mean(X[:, 0] == X[:, 1]) - np.e**2 / (1 + np.e**2)) < 0.05)
((2000, 2), True)
"""

from __future__ import annotations

import numpy as np
from ..core.jit import kernel
from .graph_kernels import most_states, node_conditional

__all__ = ["gibbs_sample"]


@kernel(allocates=True)
def _gibbs(G, node_theta, edge_theta, n_samples, burn_in, thin, n_chains, seed, clamp, out):
    ns = G[0]
    np.random.seed(seed)
    n = len(ns)
    every_edge = np.ones(G[2].shape[0], np.bool_)
    p = np.empty(most_states(ns))
    per_chain = (n_samples + n_chains - 1) // n_chains
    row = 0
    x = np.empty(n, np.int64)
    for c in range(n_chains):
        for i in range(n):
            x[i] = clamp[i] if clamp[i] >= 0 else np.random.randint(ns[i])
        kept = 0
        sweep = 0
        while kept < per_chain and row < n_samples:
            for i in range(n):
                if clamp[i] >= 0:
                    continue
                k = ns[i]
                s = node_conditional(G, i, x, node_theta, edge_theta, every_edge, p)
                u = np.random.random() * s
                a = 0
                acc = p[0]
                while acc < u and a < k - 1:
                    a += 1
                    acc += p[a]
                x[i] = a
            sweep += 1
            if sweep > burn_in and (sweep - burn_in) % thin == 0:
                out[row, :] = x
                row += 1
                kept += 1


def gibbs_sample(graph, node_theta, edge_theta, n_samples, *, burn_in=200, thin=5, n_chains=4,
                 seed=0, observed=None):
    """Draw ``n_samples`` joint states (an (n_samples, n_nodes) int64 array) by Gibbs.

    ``observed``: optional int array of length ``n_nodes`` with a state for clamped
    variables and -1 elsewhere (draws from the conditional distribution).
    """

    n_samples = int(n_samples)
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    for name, v in (("burn_in", burn_in), ("thin", thin), ("n_chains", n_chains)):
        if int(v) < (0 if name == "burn_in" else 1):
            raise ValueError(f"{name} must be {'>= 0' if name == 'burn_in' else '>= 1'}, got {v}")
    clamp = np.full(graph.n_nodes, -1, np.int64) if observed is None else np.asarray(observed, np.int64)
    out = np.empty((n_samples, graph.n_nodes), dtype=np.int64)
    _gibbs(graph.arrays(), np.ascontiguousarray(node_theta, dtype=np.float64),
           np.ascontiguousarray(edge_theta, dtype=np.float64), n_samples, int(burn_in), int(thin),
           min(int(n_chains), n_samples), int(seed) % (2**32), clamp, out)
    return out
