"""Exact inference on a pairwise MRF: a junction tree for small treewidth, and brute-force
enumeration (for tests and tiny models).

The junction tree is the *elimination tree* of a greedy min-fill ordering: eliminating
variable ``v`` creates the clique ``C_v = {v} + its neighbours still present``; the
parent of ``C_v`` is the clique of the first-eliminated variable of ``C_v - {v}``, which
contains that separator whole. Sum-product on this tree, in log space (numpy tables, one
axis per variable), gives ``log Z`` and every node and edge marginal. It is exact on any
graph; its cost is exponential in the treewidth, so :func:`junction_tree` refuses a
graph whose largest clique table would exceed ``max_table`` entries (then use loopy BP).

>>> import numpy as np
>>> from spargel.mrf.graph import Graph
>>> g = Graph([2, 2, 2], [[0, 1], [1, 2], [0, 2]])          # a triangle
>>> th_n = np.array([0.0, 0.5, 0.0, 0.0, 0.0, -0.3]); th_e = np.tile([1.0, 0, 0, 1.0], 3)
>>> jt = junction_tree(g, th_n, th_e); bf = brute_force(g, th_n, th_e)
>>> bool(np.isclose(jt.log_z, bf.log_z)), bool(np.allclose(jt.edge_beliefs, bf.edge_beliefs))
(True, True)
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp

from ..errors import CapabilityError
from .graph import one_hot_states
from .potentials import ExactResult, shift_potentials

__all__ = ["ExactResult", "junction_tree", "brute_force", "elimination_order", "pair_marginals_by_clamping"]


def elimination_order(n, adjacency):
    """A greedy min-fill elimination order (ties: fewest neighbours, then lowest id).

    ``adjacency``: list of sets. Returns (order, cliques) with ``cliques[v]`` the sorted
    tuple of ``v`` and its neighbours at elimination time.
    """
    adj = [set(a) for a in adjacency]
    alive = set(range(n))
    order, cliques = [], [None] * n
    while alive:
        best, best_key = None, None
        for v in alive:
            nb = adj[v]
            fill = sum(1 for a, b in itertools.combinations(nb, 2) if b not in adj[a])
            key = (fill, len(nb), v)
            if best_key is None or key < best_key:
                best, best_key = v, key
        v = best
        nb = adj[v]
        for a, b in itertools.combinations(nb, 2):
            adj[a].add(b)
            adj[b].add(a)
        for a in nb:
            adj[a].discard(v)
        cliques[v] = tuple(sorted(nb | {v}))
        order.append(v)
        alive.discard(v)
    return order, cliques


def _aligned(vars_src, table, vars_dst):
    """``table`` over ``vars_src`` reshaped to broadcast against a table over ``vars_dst``
    (``vars_src`` must be a subset; both sorted)."""
    pos = [vars_dst.index(v) for v in vars_src]
    shape = [1] * len(vars_dst)
    for p, size in zip(pos, table.shape):
        shape[p] = size
    return table.reshape(shape)


def _marginal(vars_src, table, keep):
    """log-sum-exp of ``table`` over the variables not in ``keep`` (sorted result)."""
    axes = tuple(a for a, v in enumerate(vars_src) if v not in keep)
    if not axes:
        return table
    return logsumexp(table, axis=axes)


def junction_tree(graph, node_theta, edge_theta, *, max_table=2_000_000, evidence=None):
    """Exact log Z and marginals on the active edges of ``graph``.

    When the active edges form a forest this is compiled sum-product on it
    (:func:`~spargel.mrf.tree.forest_inference`, linear in the number of
    variables); otherwise the junction tree below.

    ``evidence``: optional ``{variable: state}`` clamps (then ``log_z`` is the log of the
    clamped sum, and the marginals are conditional). Raises :class:`CapabilityError`
    when a clique table would exceed ``max_table`` entries.
    """
    from .tree import forest_inference, forest_plan_of
    if forest_plan_of(graph) is not None:          # a forest: compiled, linear in its size
        return forest_inference(graph, node_theta, edge_theta, evidence=evidence)
    n, ns = graph.n_nodes, graph.n_states
    order, cliques, rank, parent, children, largest = _plan(graph)
    node_theta, edge_theta, shift = shift_potentials(graph, node_theta, edge_theta)
    if largest > max_table:
        raise CapabilityError(f"exact inference needs a clique table of {largest} entries (treewidth "
                              f"{max(len(c) for c in cliques) - 1}), above max_table={max_table}; "
                              f"use inference='loopy-bp'")
    psi = [np.zeros(tuple(ns[list(c)])) for c in cliques]
    for i in range(n):
        t = node_theta[graph.node_ptr[i]:graph.node_ptr[i + 1]].copy()
        if evidence and i in evidence:
            keep = t[evidence[i]]
            t[:] = -np.inf
            t[evidence[i]] = keep
        psi[i] = psi[i] + _aligned((i,), t, cliques[i])
    for e in graph.active:
        i, j = (int(v) for v in graph.edges[e])
        host = i if rank[i] < rank[j] else j
        t = edge_theta[graph.edge_ptr[e]:graph.edge_ptr[e + 1]].reshape(ns[i], ns[j])
        psi[host] = psi[host] + _aligned((i, j), t, cliques[host])
    up = [None] * n                       # message v -> parent, over sep_v
    belief = [None] * n
    for v in order:                       # children are eliminated before their parent
        b = psi[v]
        for c in children[v]:
            b = b + _aligned(_sep(cliques, c), up[c], cliques[v])
        belief[v] = b
        if parent[v] >= 0:
            up[v] = _marginal(cliques[v], b, set(_sep(cliques, v)))
    # downward pass: no subtraction of messages (evidence puts -inf in the tables)
    log_z = shift
    top = [None] * n                      # psi_v + the message from v's parent
    for v in reversed(order):             # parents before children
        p = parent[v]
        if p < 0:
            log_z += float(logsumexp(belief[v]))
            top[v] = psi[v]
        else:
            sep = _sep(cliques, v)
            rest = top[p]
            for c in children[p]:
                if c != v:
                    rest = rest + _aligned(_sep(cliques, c), up[c], cliques[p])
            down = _marginal(cliques[p], rest, set(sep))
            top[v] = psi[v] + _aligned(sep, down, cliques[v])
            belief[v] = belief[v] + _aligned(sep, down, cliques[v])
    node_b = np.empty(graph.n_node_values)
    for i in range(n):
        m = _marginal(cliques[i], belief[i], {i})
        node_b[graph.node_ptr[i]:graph.node_ptr[i + 1]] = np.exp(m - logsumexp(m))
    edge_b = np.zeros(graph.n_edge_values)
    for e in graph.active:
        i, j = (int(v) for v in graph.edges[e])
        host = i if rank[i] < rank[j] else j
        m = _marginal(cliques[host], belief[host], {i, j})
        edge_b[graph.edge_ptr[e]:graph.edge_ptr[e + 1]] = np.exp(m - logsumexp(m)).ravel()
    return ExactResult(log_z, node_b, edge_b, max(len(c) for c in cliques) - 1)


def _plan(graph):
    """Elimination order, cliques, ranks, tree and largest table of ``graph``'s active
    edges (computed once per graph object: clamped reruns share it)."""
    plan = graph.__dict__.get("_jt_plan")
    if plan is not None:
        return plan
    n, ns = graph.n_nodes, graph.n_states
    adjacency = [set() for _ in range(n)]
    for e in graph.active:
        i, j = graph.edges[e]
        adjacency[i].add(int(j))
        adjacency[j].add(int(i))
    order, cliques = elimination_order(n, adjacency)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    largest = max(int(np.prod(ns[list(c)].astype(float))) for c in cliques)
    parent = [-1] * n
    for v in order:
        sep = [u for u in cliques[v] if u != v]
        if sep:
            parent[v] = min(sep, key=lambda u: rank[u])
    children = [[] for _ in range(n)]
    for v in range(n):
        if parent[v] >= 0:
            children[parent[v]].append(v)
    plan = (order, cliques, rank, parent, children, largest)
    graph.__dict__["_jt_plan"] = plan
    return plan


def _sep(cliques, v):
    return tuple(u for u in cliques[v] if u != v)


def brute_force(graph, node_theta, edge_theta, *, max_states=2_000_000):
    """Exact log Z and marginals by enumerating every joint state (tests, tiny models)."""
    logp, states, shift = _joint(graph, node_theta, edge_theta, max_states)
    p = np.exp(logp - logsumexp(logp))
    node_b = np.empty(graph.n_node_values)
    for i in range(graph.n_nodes):
        node_b[graph.node_ptr[i]:graph.node_ptr[i + 1]] = np.bincount(states[:, i], p, graph.n_states[i])
    edge_b = np.zeros(graph.n_edge_values)
    for e in graph.active:
        i, j = graph.edges[e]
        kj = graph.n_states[j]
        edge_b[graph.edge_ptr[e]:graph.edge_ptr[e + 1]] = np.bincount(
            states[:, i] * kj + states[:, j], p, graph.n_states[i] * kj)
    return ExactResult(float(logsumexp(logp)) + shift, node_b, edge_b, graph.n_nodes - 1)


def enumerate_moments(graph, node_theta, edge_theta, max_states=1 << 17):
    """Exact log Z, node marginals and the (K, K) matrix of *every* pairwise marginal
    (``K`` = total states; entry ``[(i, a), (j, b)] = p(x_i = a, x_j = b)``) by
    enumeration; ``None`` when the joint state space exceeds ``max_states``. Cheap for
    small models, and it gives exact gradients for every candidate edge at once."""
    total = int(np.prod(graph.n_states.astype(float)))
    if total > max_states:
        return None
    logp, states, shift = _joint(graph, node_theta, edge_theta, max_states)
    log_z = float(logsumexp(logp))
    p = np.exp(logp - log_z)
    log_z += shift
    O = graph.__dict__.get("_enum_onehot")
    if O is None:                       # the one-hot joint states, kept with the graph
        O = one_hot_states(states, graph.node_ptr)
        graph.__dict__["_enum_onehot"] = O
    M = O.T @ (O * p[:, None])
    return log_z, p @ O, M


def brute_force_pair(graph, node_theta, edge_theta, i, j):
    """The exact (k_i, k_j) marginal of any pair of variables, by enumeration."""
    logp, states, _ = _joint(graph, node_theta, edge_theta, 2_000_000)
    p = np.exp(logp - logsumexp(logp))
    ki, kj = graph.n_states[i], graph.n_states[j]
    return np.bincount(states[:, i] * kj + states[:, j], p, ki * kj).reshape(ki, kj)


def _joint(graph, node_theta, edge_theta, max_states):
    ns = graph.n_states
    total = int(np.prod(ns.astype(float)))
    if total > max_states:
        raise CapabilityError(f"brute force over {total} joint states exceeds max_states={max_states}")
    states = graph.__dict__.get("_enum_states")
    if states is None:
        states = np.stack(np.unravel_index(np.arange(total), tuple(ns)), axis=1).astype(np.int64)
        graph.__dict__["_enum_states"] = states
    node_theta, edge_theta, shift = shift_potentials(graph, node_theta, edge_theta)
    logp = np.zeros(total)
    for i in range(graph.n_nodes):
        logp += node_theta[graph.node_ptr[i] + states[:, i]]
    for e in graph.active:
        i, j = graph.edges[e]
        logp += edge_theta[graph.edge_ptr[e] + states[:, i] * ns[j] + states[:, j]]
    return logp, states, shift


def pair_marginals_by_clamping(graph, marginals, pairs, node_b):
    """Pairwise marginals of arbitrary ``pairs`` (i, j) as ``p(x_i) p(x_j | x_i)``.

    ``marginals(evidence) -> node beliefs`` runs inference with ``x_i`` clamped (exact
    with a junction tree, approximate with loopy BP); it is called once per state of each
    distinct first variable. Returns a flat array of the pairs' tables, row-major, in the
    order given.
    """
    ns, ptr = graph.n_states, graph.node_ptr
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    sizes = ns[pairs[:, 0]] * ns[pairs[:, 1]]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    out = np.zeros(int(offs[-1]))
    for i in np.unique(pairs[:, 0]):
        rows = np.flatnonzero(pairs[:, 0] == i)
        pi = node_b[ptr[i]:ptr[i + 1]]
        for a in range(ns[i]):
            if pi[a] <= 0:
                continue
            cond = marginals({int(i): a})
            for r in rows:
                j = pairs[r, 1]
                kj = ns[j]
                out[offs[r] + a * kj: offs[r] + (a + 1) * kj] = pi[a] * cond[ptr[j]:ptr[j + 1]]
    return out
