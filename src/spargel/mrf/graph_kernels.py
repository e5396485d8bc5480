"""Compiled helpers on the flat graph of :mod:`.graph` (the tuple ``G`` of
:meth:`Graph.arrays`) shared by the MRF kernels."""

import numpy as np
from ..core.jit import inner


@inner()
def most_states(ns):
    """The largest number of states of a variable (at least 1): the size of a buffer
    over any variable's states."""
    kmax = 1
    for i in range(len(ns)):
        kmax = max(kmax, ns[i])
    return kmax


@inner()
def node_conditional(G, i, x, node_theta, edge_theta, live, p):
    """The conditional distribution of variable ``i`` given the states ``x`` of the others,
    ``p(x_i = a | x_N(i)) ∝ exp(theta_i(a) + sum_j theta_ij(a, x_j))`` over the ``live``
    edges of ``i``, unnormalised: ``p[a]`` gets ``exp`` of the score minus the largest
    score, for its ``ns[i]`` states. Returns ``sum_a p[a]``."""
    ns, node_ptr, edge_ptr = G[0], G[1], G[3]
    adj_ptr, adj_nbr, adj_edge, adj_side = G[5], G[6], G[7], G[8]
    k = ns[i]
    nb = node_ptr[i]
    for a in range(k):
        p[a] = node_theta[nb + a]
    for t in range(adj_ptr[i], adj_ptr[i + 1]):
        e = adj_edge[t]
        if not live[e]:
            continue
        xj = x[adj_nbr[t]]
        eo = edge_ptr[e]
        if adj_side[t] == 0:                    # table[x_i, x_j]
            kj = ns[adj_nbr[t]]
            for a in range(k):
                p[a] += edge_theta[eo + a * kj + xj]
        else:                                   # table[x_j, x_i]
            for a in range(k):
                p[a] += edge_theta[eo + xj * k + a]
    m = p[0]
    for a in range(1, k):
        m = max(m, p[a])
    s = 0.0
    for a in range(k):
        p[a] = np.exp(p[a] - m)
        s += p[a]
    return s
