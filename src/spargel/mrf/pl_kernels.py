"""Compiled pseudo-likelihood of a pairwise MRF (Besag): loss and gradient over the data.

For every sample and variable ``i`` the conditional ``p(x_i | x_rest)`` needs only the
weights of ``i``'s edges, so no inference is run. The gradient covers *every* candidate
edge (its weight may be zero: that is how structure learning sees inactive edges), while
the logits sum over the live (non-zero) edges only. Samples are split into one chunk per
thread, each with its own gradient buffer; the buffers are added at the end.
"""

import numpy as np
from numba import prange
from ..core.jit import kernel
from .graph_kernels import most_states, node_conditional


@kernel()
def _chunk(X, sw, lo, hi, G, live, node_theta, edge_theta, g_node, g_edge, logit, resid):
    ns, node_ptr, edge_ptr = G[0], G[1], G[3]
    adj_ptr, adj_nbr, adj_edge, adj_side = G[5], G[6], G[7], G[8]
    n = len(ns)
    loss = 0.0
    for r in range(lo, hi):
        w = sw[r]
        if w == 0.0:
            continue
        x = X[r]
        th = node_theta[r if node_theta.shape[0] > 1 else 0]
        for i in range(n):
            k = ns[i]
            nb = node_ptr[i]
            s = node_conditional(G, i, x, th, edge_theta, live, logit)
            xi = x[i]
            loss -= w * (np.log(logit[xi] / s))
            for a in range(k):                      # residual q - onehot, weighted
                logit[a] = w * logit[a] / s
            logit[xi] -= w
            for a in range(k):
                g_node[nb + a] += logit[a]
            if resid.shape[0] > 0:
                for a in range(k):
                    resid[r, nb + a] = logit[a]
            for t in range(adj_ptr[i], adj_ptr[i + 1]):
                e = adj_edge[t]
                xj = x[adj_nbr[t]]
                eo = edge_ptr[e]
                if adj_side[t] == 0:
                    kj = ns[adj_nbr[t]]
                    for a in range(k):
                        g_edge[eo + a * kj + xj] += logit[a]
                else:
                    for a in range(k):
                        g_edge[eo + xj * k + a] += logit[a]
    return loss


@kernel(allocates=True, parallel=True)
def pl_loss_grad(X, sw, G, live, node_theta, edge_theta, g_node, g_edge, resid, n_chunks):
    """Negative pseudo-log-likelihood summed over samples (weights ``sw``); the gradient
    with respect to the node and edge log-potentials is written into ``g_node`` and
    ``g_edge`` (overwritten). ``node_theta`` is (1, K) or, per sample, (N, K); ``resid``
    (N, K) receives each sample's weighted residuals (conditional model) or is (0, K).
    ``n_chunks``: sample chunks (one per thread)."""
    N = X.shape[0]
    T = max(1, min(n_chunks, N // 64 + 1))
    kmax = most_states(G[0])
    gn = np.zeros((T, len(g_node)))
    ge = np.zeros((T, len(g_edge)))
    losses = np.zeros(T)
    for c in prange(T):
        lo = c * N // T
        hi = (c + 1) * N // T
        logit = np.empty(kmax)
        losses[c] = _chunk(X, sw, lo, hi, G, live, node_theta, edge_theta, gn[c], ge[c], logit, resid)
    g_node[:] = gn.sum(axis=0)
    g_edge[:] = ge.sum(axis=0)
    return losses.sum()


@kernel()
def pair_counts(X, sw, edges, edge_ptr, n_states, out):
    """Weighted counts of every edge's state pairs (flat ``edge_ptr`` layout)."""
    out[:] = 0.0
    for r in range(X.shape[0]):
        w = sw[r]
        for e in range(edges.shape[0]):
            i, j = edges[e, 0], edges[e, 1]
            out[edge_ptr[e] + X[r, i] * n_states[j] + X[r, j]] += w
