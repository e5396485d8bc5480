"""Compiled gradient of chosen weights of a pairwise MRF from its beliefs.

Grafting asks for the loss gradient of a few thousand weights at every step and of
every inactive candidate edge (tens of thousands on an image) at every selection. The
gradient of a weight is ``N * E[feature] - count``; an inactive edge's pair marginal is
estimated as the product of its nodes' beliefs (``candidate_estimate="independent"``),
computed here entry by entry instead of being written into a table first.
"""

import numpy as np

from ..core.jit import kernel


@kernel()
def subset_gradient(index, G, n_node, edge_param_ptr, node_b, edge_b, have_pair, Nw, node_counts, edge_counts,
                    table, out):
    """``out[k]``: loss gradient of weight ``index[k]`` (``G``: the graph's
    :data:`~spargel.mrf.graph.GraphArrays`; ``n_node`` node weights, then edge ``e``'s
    weights at ``edge_param_ptr[e]:edge_param_ptr[e+1]``).

    Node weights: ``Nw b_i(a) - count``. Edge weights: with an empty ``table`` one
    weight per table entry (``Nw b_ij(a, b) - count``), otherwise one weight per edge
    (the entries summed, times the feature ``table``). ``b_ij`` is ``edge_b`` where
    ``have_pair[e]``, else the product of the node beliefs. Weights past the edges
    (node features of the conditional model) get NaN: that model computes its own.
    """
    node_ptr, edges, edge_ptr, n_states = G.node_ptr, G.edges, G.edge_ptr, G.n_states
    n_edge_params = edge_param_ptr[len(edge_param_ptr) - 1]
    per_edge = len(table) > 0
    for k in range(len(index)):
        p = index[k]
        if p < n_node:
            out[k] = Nw * node_b[p] - node_counts[p]
            continue
        if p >= n_edge_params:
            out[k] = np.nan
            continue
        e = np.searchsorted(edge_param_ptr, p, side="right") - 1
        t0, t1 = edge_ptr[e], edge_ptr[e + 1]
        if not per_edge:
            t0 = p - n_node
            t1 = t0 + 1
        i0, j0 = node_ptr[edges[e, 0]], node_ptr[edges[e, 1]]
        kj = n_states[edges[e, 1]]
        s = 0.0
        for t in range(t0, t1):
            if have_pair[e]:
                b = edge_b[t]
            else:
                local = t - edge_ptr[e]
                b = node_b[i0 + local // kj] * node_b[j0 + local % kj]
            v = Nw * b - edge_counts[t]
            s += v * table[t] if per_edge else v
        out[k] = s
