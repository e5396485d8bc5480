"""The graph of a pairwise MRF in flat arrays, and its validation.

A graph has ``n`` discrete variables, variable ``i`` with ``n_states[i] >= 2`` states,
and ``E`` undirected edges ``edges[e] = (i, j)`` with ``i < j``. Everything the compiled
kernels need is a flat integer array:

``node_ptr`` (n + 1)
    variable ``i``'s per-state values (log-potentials, beliefs) are
    ``node_ptr[i]:node_ptr[i+1]``;
``edge_ptr`` (E + 1)
    edge ``e``'s ``n_states[i] x n_states[j]`` table (row-major, the first variable's
    state is the row) is ``edge_ptr[e]:edge_ptr[e+1]``;
``msg_ptr`` (2E + 1)
    message ``2e`` goes from ``i`` to ``j`` (``n_states[j]`` values), message
    ``2e + 1`` from ``j`` to ``i``; all messages live in one array;
``adj_ptr, adj_nbr, adj_edge, adj_side`` (CSR adjacency)
    the neighbours of ``i`` are ``adj_nbr[adj_ptr[i]:adj_ptr[i+1]]``, reached through
    edge ``adj_edge[k]``; ``adj_side[k]`` is 0 when ``i`` is that edge's first variable
    and 1 when it is the second. The message into ``i`` along slot ``k`` is
    ``2 * adj_edge[k] + 1 - adj_side[k]``, the message out of it ``2 * adj_edge[k] +
    adj_side[k]``; their offsets in the message array are ``adj_in[k]`` and
    ``adj_out[k]``, and the edge's table starts at ``adj_table[k]``.

The adjacency may cover only a subset of the edges (the *active* ones): kernels then
ignore the others, while their tables and messages keep their places in the flat
arrays. That is how structure learning runs inference on the active graph only.

>>> g = Graph(np.array([2, 3, 2]), np.array([[0, 1], [1, 2]]))
>>> g.edge_ptr.tolist(), g.msg_ptr.tolist()
([0, 6, 12], [0, 3, 5, 7, 10])
>>> g.neighbours(1).tolist()
[0, 2]
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..errors import DataFormatError

#: the graph as the compiled kernels take it (:meth:`Graph.arrays`; numba compiles a
#: named tuple like a plain one, so ``G.adj_ptr`` reads the same slot as ``G[5]``)
GraphArrays = namedtuple("GraphArrays", "n_states node_ptr edges edge_ptr msg_ptr adj_ptr adj_nbr adj_edge adj_side "
                                        "adj_in adj_out adj_table")

__all__ = ["Graph", "validate_edges", "all_pairs", "grid_edges", "chow_liu_edges", "one_hot_states"]


def validate_edges(edges, n_nodes, source="<edges>"):
    """Check an edge list and return it as an (E, 2) int64 array with ``i < j`` in each row.

    Rejects (with a :class:`DataFormatError` naming the first offending row) anything that
    is not a list of integer pairs, variables out of ``0 .. n_nodes - 1``, self-loops and
    repeated edges (``(i, j)`` and ``(j, i)`` count as the same edge).

    >>> validate_edges([[1, 0], [1, 2]], 3).tolist()
    [[0, 1], [1, 2]]
    >>> validate_edges([[0, 0]], 2)
    Traceback (most recent call last):
    ...
    spargel.errors.DataFormatError: <edges>:1: self-loop on variable 0
    """
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise DataFormatError(source, None, f"edges must be an (n_edges, 2) array of variable pairs, "
                                            f"got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = int(np.flatnonzero(~np.isfinite(arr).all(1) | (arr != np.round(arr)).any(1))[0])
            raise DataFormatError(source, bad + 1, f"edge {arr[bad].tolist()} is not a pair of integers")
    elif arr.dtype.kind not in "iu":
        raise DataFormatError(source, None, f"edges must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    out = (arr < 0) | (arr >= n_nodes)
    if out.any():
        r = int(np.flatnonzero(out.any(1))[0])
        raise DataFormatError(source, r + 1, f"edge {arr[r].tolist()} names a variable outside "
                                             f"0..{n_nodes - 1}")
    loops = arr[:, 0] == arr[:, 1]
    if loops.any():
        r = int(np.flatnonzero(loops)[0])
        raise DataFormatError(source, r + 1, f"self-loop on variable {arr[r, 0]}")
    canon = np.sort(arr, axis=1)
    key = canon[:, 0] * n_nodes + canon[:, 1]
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    if len(dup):
        r = int(order[dup[0] + 1])
        raise DataFormatError(source, r + 1, f"edge {arr[r].tolist()} repeats an earlier edge")
    return canon


def all_pairs(n_nodes):
    """Every pair ``i < j`` (the candidate edges of structure learning), row by row."""
    i, j = np.triu_indices(n_nodes, 1)
    return np.stack([i, j], axis=1).astype(np.int64)


def grid_edges(rows, cols):
    """The 4-neighbour grid on ``rows x cols`` variables numbered row by row."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    h = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    v = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return np.concatenate([h, v]).astype(np.int64)


def one_hot_states(states, node_ptr):
    """``(n_rows, node_ptr[-1])`` indicators of joint states: row ``r`` has a 1 at
    ``node_ptr[i] + states[r, i]`` for every variable ``i``."""
    O = np.zeros((states.shape[0], int(node_ptr[-1])))
    rows = np.arange(states.shape[0])
    for i in range(states.shape[1]):
        O[rows, node_ptr[i] + states[:, i]] = 1.0
    return O


def chow_liu_edges(X, n_states):
    """The Chow-Liu tree of discrete data ``X`` (n_samples, n) with ``n_states`` per
    variable: the spanning tree of maximum total empirical mutual information (a forest
    where variables are independent in the data). Candidate edges for models that need a
    tree, such as the bound majoriser on a pairwise MRF.

    >>> X = np.array([[0, 0, 1], [1, 1, 0], [1, 1, 1], [0, 0, 0]])
    >>> chow_liu_edges(X, [2, 2, 2]).tolist()
    [[0, 1]]
    """
    from scipy.sparse.csgraph import minimum_spanning_tree
    X = np.asarray(X, dtype=np.int64)
    ns = np.asarray(n_states, dtype=np.int64)
    O = one_hot_states(X, np.concatenate([[0], np.cumsum(ns)]))
    P = O.T @ O / X.shape[0]                      # every pairwise joint frequency
    p = np.diag(P).copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        T = np.where(P > 0, P * np.log(P / np.outer(p, p)), 0.0)
    owner = np.repeat(np.arange(X.shape[1]), ns)
    mi = np.zeros((X.shape[1], X.shape[1]))
    np.add.at(mi, (owner[:, None], owner[None, :]), T)
    # maximum spanning tree: minimum over (top - mi) on the pairs with some information
    top = mi.max() + 1.0
    W = np.triu(np.where(mi > 1e-12, top - mi, 0.0), 1)
    tree = minimum_spanning_tree(W).tocoo()
    return validate_edges(np.stack([tree.row, tree.col], axis=1), X.shape[1])


class Graph:
    """Variables, edges and the flat offsets of their tables and messages.

    ``active`` (optional boolean mask or index array over the edges) restricts the
    adjacency to those edges; :meth:`with_active` gives the same graph with another
    active set (the offsets do not change).
    """

    def __init__(self, n_states, edges, active=None, validated=False):
        ns = np.asarray(n_states, dtype=np.int64)
        if ns.ndim != 1 or np.any(ns < 2):
            raise ValueError("every variable needs at least 2 states")
        self.n_states = ns
        self.n_nodes = len(ns)
        self.edges = edges if validated else validate_edges(edges, self.n_nodes)
        self.n_edges = len(self.edges)
        self.node_ptr = np.concatenate([[0], np.cumsum(ns)]).astype(np.int64)
        ki = ns[self.edges[:, 0]]
        kj = ns[self.edges[:, 1]]
        self.edge_ptr = np.concatenate([[0], np.cumsum(ki * kj)]).astype(np.int64)
        sizes = np.empty(2 * self.n_edges, dtype=np.int64)
        sizes[0::2] = kj
        sizes[1::2] = ki
        self.msg_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._set_active(active)

    def _set_active(self, active):
        if active is None:
            idx = np.arange(self.n_edges, dtype=np.int64)
        else:
            a = np.asarray(active)
            idx = np.flatnonzero(a).astype(np.int64) if a.dtype == bool else a.astype(np.int64)
        self.active = idx
        e = self.edges[idx]
        ends = np.concatenate([e[:, 0], e[:, 1]])
        nbrs = np.concatenate([e[:, 1], e[:, 0]])
        eid = np.concatenate([idx, idx])
        side = np.concatenate([np.zeros(len(idx), np.int64), np.ones(len(idx), np.int64)])
        order = np.lexsort((nbrs, ends))
        self.adj_nbr = nbrs[order].astype(np.int64)
        self.adj_edge = eid[order].astype(np.int64)
        self.adj_side = side[order]
        counts = np.bincount(ends, minlength=self.n_nodes)
        self.adj_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.degree = counts.astype(np.int64)
        # per slot: where the message into / out of the node sits, and the edge table
        self.adj_in = self.msg_ptr[2 * self.adj_edge + 1 - self.adj_side]
        self.adj_out = self.msg_ptr[2 * self.adj_edge + self.adj_side]
        self.adj_table = self.edge_ptr[self.adj_edge]

    def with_active(self, active):
        """A graph sharing this one's offsets, with adjacency over ``active`` edges only."""
        g = object.__new__(Graph)
        g.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_")})
        g._set_active(active)
        return g

    def neighbours(self, i):
        return self.adj_nbr[self.adj_ptr[i]:self.adj_ptr[i + 1]]

    @property
    def n_node_values(self):
        return int(self.node_ptr[-1])

    @property
    def n_edge_values(self):
        return int(self.edge_ptr[-1])

    def arrays(self):
        """The :data:`GraphArrays` the compiled kernels take."""
        return GraphArrays(self.n_states, self.node_ptr, self.edges, self.edge_ptr, self.msg_ptr,
                self.adj_ptr, self.adj_nbr, self.adj_edge, self.adj_side,
                self.adj_in, self.adj_out, self.adj_table)

    def is_forest(self):
        """True when the active graph has no cycle."""
        parent = np.arange(self.n_nodes)

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for e in self.active:
            a, b = find(self.edges[e, 0]), find(self.edges[e, 1])
            if a == b:
                return False
            parent[a] = b
        return True
