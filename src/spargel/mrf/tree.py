"""Exact inference on a pairwise MRF whose active edges form a forest: compiled
sum-product, linear in the number of variables (:mod:`.tree_kernels`), and every
pairwise marginal a structure-learning gradient asks for, one walk over the tree per
distinct first variable.

>>> import numpy as np
>>> from spargel.mrf.graph import Graph
>>> from spargel.mrf.exact import brute_force
>>> g = Graph([2, 3, 2, 2], [[0, 1], [1, 2], [1, 3]])          # a star around variable 1
>>> rng = np.random.default_rng(0)
>>> th_n, th_e = rng.normal(size=g.n_node_values), rng.normal(size=g.n_edge_values)
>>> r, bf = forest_inference(g, th_n, th_e), brute_force(g, th_n, th_e)
>>> bool(np.isclose(r.log_z, bf.log_z)), bool(np.allclose(r.edge_beliefs, bf.edge_beliefs))
(True, True)
"""

from __future__ import annotations

import numpy as np

from .tree_kernels import Forest, forest_pair_marginals, forest_plan, forest_sum_product
from .potentials import ExactResult, shift_potentials

__all__ = ["forest_plan_of", "forest_inference", "forest_pairs"]


def forest_plan_of(graph):
    """The :data:`~spargel.mrf.tree_kernels.Forest` of the active edges of ``graph``
    (its layout, breadth-first order, parents and trees), or None when the active edges
    have a cycle (computed once per graph object)."""
    plan = graph.__dict__.get("_forest_plan", False)
    if plan is not False:
        return plan
    n = graph.n_nodes
    order, parent, pedge, comp = (np.empty(n, np.int64) for _ in range(4))
    ok = forest_plan(graph.adj_ptr, graph.adj_nbr, graph.adj_edge, order, parent, pedge, comp)
    plan = (Forest(graph.n_states, graph.node_ptr, graph.edges, graph.edge_ptr, graph.msg_ptr, graph.adj_ptr,
                   graph.adj_nbr, graph.adj_edge, order, parent, pedge, comp) if ok else None)
    graph.__dict__["_forest_plan"] = plan
    return plan


def forest_inference(graph, node_theta, edge_theta, *, evidence=None):
    """Exact :class:`~spargel.mrf.exact.ExactResult` of a graph whose active
    edges form a forest (``ValueError`` otherwise). ``evidence``: ``{variable: state}``
    clamps (log Z of the clamped sum, conditional marginals)."""
    plan = forest_plan_of(graph)
    if plan is None:
        raise ValueError("the active edges have a cycle")
    node_theta, edge_theta, shift = shift_potentials(graph, node_theta, edge_theta)
    if evidence:
        node_theta = node_theta.copy()
        for i, a in evidence.items():
            lo, hi = graph.node_ptr[i], graph.node_ptr[i + 1]
            keep = node_theta[lo + a]
            node_theta[lo:hi] = -np.inf
            node_theta[lo + a] = keep
    K, M = graph.n_node_values, int(graph.msg_ptr[-1])
    inc, down, node_b = np.empty(K), np.empty(K), np.empty(K)
    up, cav = np.empty(M), np.empty(M)
    edge_b = np.zeros(graph.n_edge_values)
    log_z = forest_sum_product(plan, node_theta, np.ascontiguousarray(edge_theta, dtype=np.float64),
                               inc, up, cav, down, node_b, edge_b)
    return ExactResult(float(log_z) + shift, node_b, edge_b, 1 if len(graph.active) else 0)


def forest_pairs(graph, node_b, edge_b, pairs):
    """Exact pairwise marginals of ``pairs`` (P, 2) of variables (any, not only edges)
    from the exact beliefs of a forest: a flat array of the pairs' row-major
    ``(k_i, k_j)`` tables, in the order given."""
    plan = forest_plan_of(graph)
    if plan is None:
        raise ValueError("the active edges have a cycle")
    ns = graph.n_states
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    sizes = ns[pairs[:, 0]] * ns[pairs[:, 1]]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(int(offs[-1]))
    if not len(pairs):
        return out
    by = np.argsort(pairs[:, 0], kind="stable")
    first = pairs[by, 0]
    starts = np.flatnonzero(np.r_[True, first[1:] != first[:-1]])
    src_ptr = np.r_[starts, len(first)].astype(np.int64)
    kmax = int(ns.max())
    forest_pair_marginals(plan, np.ascontiguousarray(node_b), np.ascontiguousarray(edge_b),
                          src_ptr, np.ascontiguousarray(first[starts]), np.ascontiguousarray(pairs[by, 1]),
                          np.ascontiguousarray(offs[:-1][by]), out, np.empty(kmax * graph.n_node_values),
                          np.empty(graph.n_nodes, np.int64), np.empty(graph.n_nodes, np.int64), kmax)
    return out
