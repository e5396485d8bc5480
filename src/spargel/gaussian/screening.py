"""Exact screening: split the l1 problem into independent blocks.

With per-entry weights L, the solution K* is block diagonal with blocks the
connected components of the graph on the variables with an edge (i, j)
whenever ``|S_ij| > L_ij`` (Witten, Friedman & Simon 2011; Mazumder & Hastie
2012): put K* = diag(K_1*, ..., K_c*) with K_b* the solution on component b;
its dual point ``W = (K*)^-1 - S`` equals ``-S_ij`` between components, which
is feasible exactly because ``|S_ij| <= L_ij`` there, and the KKT conditions
hold. Each component is an independent, smaller problem; singletons have the
closed form ``K_ii = 1 / (S_ii + L_ii)``.

This holds for the l1 problem (box dual). It is not applied to block-l1
penalties, whose l1-ball constraints couple entries across components.

>>> import numpy as np
>>> S = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.05], [0.0, 0.05, 1.0]])
>>> L = np.full((3, 3), 0.1); np.fill_diagonal(L, 0)
>>> [c.tolist() for c in screen_components(S, L)]
[[0, 1], [2]]
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["screen_components", "threshold_graph"]


def threshold_graph(S, L):
    """Boolean adjacency ``|S_ij| > L_ij`` off the diagonal."""
    A = np.abs(S) > L
    np.fill_diagonal(A, False)
    return A


def screen_components(S, L):
    """Connected components of the thresholded graph, as a list of sorted
    index arrays, largest first (ties by smallest index)."""
    n = S.shape[0]
    A = threshold_graph(S, L)
    i, j = np.nonzero(A)
    graph = coo_matrix((np.ones(i.size, dtype=np.int8), (i, j)), shape=(n, n)).tocsr()
    n_comp, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    counts = np.bincount(labels, minlength=n_comp)
    splits = np.split(order, np.cumsum(counts)[:-1])
    comps = [np.sort(c) for c in splits]
    comps.sort(key=lambda c: (-c.size, c[0]))
    return comps
