"""Compiled loopy belief propagation over the flat graph of :mod:`.graph`.

Messages are *scaled* (each sums to one) in probability space: the potentials are
exponentiated once per weight vector (shifted by their maximum), so the inner loops are
multiply-adds, as the forward-backward of the CRF. The product of a variable's incoming
messages except one (its *cavity* towards that neighbour) is formed from prefix and
suffix products, never by division, so a zero message cannot poison a belief, and it is
rescaled when it drifts towards under- or overflow.

``G`` is the :data:`~spargel.mrf.graph.GraphArrays` of :meth:`Graph.arrays`
(``n_states, node_ptr, edges, edge_ptr, msg_ptr, adj_ptr, adj_nbr, adj_edge, adj_side,
adj_in, adj_out, adj_table``), read by name.
Cavities live in an array shaped like the messages: the cavity of ``v`` towards its
neighbour along edge ``e`` sits where the message *into* ``v`` along ``e`` sits.
"""

import numpy as np
from ..core.jit import inner, kernel
from .graph_kernels import most_states

FAST = {"reassoc", "contract", "nsz", "arcp"}
TINY = 1e-150
HUGE = 1e150

SEQUENTIAL, RESIDUAL, PARALLEL = 0, 1, 2


@kernel(fastmath=FAST)
def _cavities(i, k, nb, a0, a1, adj_in, node_pot, msgs, C, suf):
    """Write the cavities of node ``i`` (``k`` states, node values at ``nb``, slots
    ``a0:a1``) into ``C``."""
    if a1 == a0:
        return
    # prefix products: C[slot t] = phi * prod_{s < t} m_s
    o = adj_in[a0]
    for x in range(k):
        C[o + x] = node_pot[nb + x]
    for t in range(a0 + 1, a1):
        po = o
        o = adj_in[t]
        mx = 0.0
        for x in range(k):
            v = C[po + x] * msgs[po + x]
            C[o + x] = v
            mx = max(mx, v)
        if mx < TINY or mx > HUGE:
            if mx > 0.0:
                for x in range(k):
                    C[o + x] /= mx
    # times suffix products, from the last slot backwards
    for x in range(k):
        suf[x] = 1.0
    for t in range(a1 - 1, a0 - 1, -1):
        o = adj_in[t]
        mx = 0.0
        for x in range(k):
            C[o + x] *= suf[x]
            suf[x] *= msgs[o + x]
            mx = max(mx, suf[x])
        if mx < TINY or mx > HUGE:
            if mx > 0.0:
                for x in range(k):
                    suf[x] /= mx


@kernel(fastmath=FAST)
def _send(i, G, node_pot, edge_pot, src, dst, C, suf, out, damping, maxprod, resid):
    """Recompute every message out of node ``i`` (``G``: the graph's
    :data:`~spargel.mrf.graph.GraphArrays`); returns the largest change."""
    ns, node_ptr, adj_ptr, adj_nbr, adj_side = G.n_states, G.node_ptr, G.adj_ptr, G.adj_nbr, G.adj_side
    adj_in, adj_out, adj_table = G.adj_in, G.adj_out, G.adj_table
    k = ns[i]
    a0, a1 = adj_ptr[i], adj_ptr[i + 1]
    _cavities(i, k, node_ptr[i], a0, a1, adj_in, node_pot, src, C, suf)
    worst = 0.0
    for t in range(a0, a1):
        side = adj_side[t]
        j = adj_nbr[t]
        kj = ns[j]
        co = adj_in[t]
        eo = adj_table[t]
        mo = adj_out[t]
        if k == 2 and kj == 2 and not maxprod:     # binary pair: unrolled
            c0 = C[co]
            c1 = C[co + 1]
            if side == 0:
                out[0] = edge_pot[eo] * c0 + edge_pot[eo + 2] * c1
                out[1] = edge_pot[eo + 1] * c0 + edge_pot[eo + 3] * c1
            else:
                out[0] = edge_pot[eo] * c0 + edge_pot[eo + 1] * c1
                out[1] = edge_pot[eo + 2] * c0 + edge_pot[eo + 3] * c1
        elif side == 0:                     # table[x_i, x_j]: accumulate rows
            for y in range(kj):
                out[y] = 0.0
            for x in range(k):
                c = C[co + x]
                r = eo + x * kj
                if maxprod:
                    for y in range(kj):
                        out[y] = max(out[y], edge_pot[r + y] * c)
                else:
                    for y in range(kj):
                        out[y] += edge_pot[r + y] * c
        else:                               # table[x_j, x_i]: one dot product per x_j
            for y in range(kj):
                r = eo + y * k
                s = 0.0
                if maxprod:
                    for x in range(k):
                        s = max(s, edge_pot[r + x] * C[co + x])
                else:
                    for x in range(k):
                        s += edge_pot[r + x] * C[co + x]
                out[y] = s
        total = 0.0
        for y in range(kj):
            total += out[y]
        delta = 0.0
        if total > 0.0 and np.isfinite(total):
            inv = (1.0 - damping) / total
            for y in range(kj):
                new = out[y] * inv + damping * src[mo + y]
                delta = max(delta, abs(new - src[mo + y]))
                dst[mo + y] = new
        else:                               # all-zero message: keep the old one
            for y in range(kj):
                dst[mo + y] = src[mo + y]
        if delta > resid[j]:
            resid[j] = delta
        worst = max(worst, delta)
    return worst


@inner(allocates=True)
def _cavity_buffers(ns, msgs):
    """The scratch of :func:`_cavities`: the cavities (shaped like the messages) and the
    suffix products over one variable's states."""
    return np.empty_like(msgs), np.empty(most_states(ns))


@kernel(allocates=True)
def run_bp(G, node_pot, edge_pot, msgs, schedule, max_iter, tol, damping, maxprod):
    """Loopy BP until the largest message change is below ``tol`` or ``max_iter`` sweeps.

    ``schedule``: 0 sequential (every node in order, updates seen at once), 1 residual
    (nodes in decreasing order of the change of their incoming messages; nodes whose
    incoming messages changed by less than ``tol`` are skipped), 2 parallel (flooding:
    every message from the previous sweep's messages). Returns (sweeps, last change,
    message updates).
    """
    ns, adj_ptr = G.n_states, G.adj_ptr
    n = len(ns)
    C, suf = _cavity_buffers(ns, msgs)
    out = np.empty_like(suf)
    resid = np.full(n, np.inf)
    src = msgs
    if schedule == PARALLEL:
        src = msgs.copy()
    order = np.arange(n)
    worst = np.inf
    updates = 0
    for it in range(max_iter):
        if schedule == PARALLEL:
            src[:] = msgs
        elif schedule == RESIDUAL:
            order = np.argsort(-resid)
        worst = 0.0
        for i in order:
            if schedule == RESIDUAL and resid[i] <= tol:
                continue
            resid[i] = 0.0
            if adj_ptr[i + 1] == adj_ptr[i]:
                continue
            d = _send(i, G, node_pot, edge_pot, src, msgs, C, suf, out, damping, maxprod, resid)
            updates += adj_ptr[i + 1] - adj_ptr[i]
            worst = max(worst, d)
        if schedule == RESIDUAL:
            worst = max(worst, resid.max())
        if worst < tol:
            return it + 1, worst, updates
    return max_iter, worst, updates


@kernel(allocates=True, fastmath=FAST)
def beliefs(G, node_pot, edge_pot, msgs, active, node_b, edge_b):
    """Normalised node beliefs (all nodes) and edge beliefs of the ``active`` edges."""
    ns, node_ptr, edges, edge_ptr, msg_ptr = G[0], G[1], G[2], G[3], G[4]
    adj_ptr, adj_edge, adj_side = G[5], G[7], G[8]
    n = len(ns)
    C, suf = _cavity_buffers(ns, msgs)
    for i in range(n):
        k = ns[i]
        nb = node_ptr[i]
        a0, a1 = adj_ptr[i], adj_ptr[i + 1]
        _cavities(i, k, nb, a0, a1, G[9], node_pot, msgs, C, suf)
        if a1 == a0:
            for x in range(k):
                node_b[nb + x] = node_pot[nb + x]
        else:
            o = msg_ptr[2 * adj_edge[a0] + 1 - adj_side[a0]]
            for x in range(k):
                node_b[nb + x] = C[o + x] * msgs[o + x]
        s = 0.0
        for x in range(k):
            s += node_b[nb + x]
        if not s > 0.0:                     # contradictory messages: fall back on phi
            s = 0.0
            for x in range(k):
                node_b[nb + x] = node_pot[nb + x]
                s += node_pot[nb + x]
        for x in range(k):
            node_b[nb + x] /= s
    for e in active:
        i, j = edges[e, 0], edges[e, 1]
        ki, kj = ns[i], ns[j]
        ci = msg_ptr[2 * e + 1]             # cavity of i towards j
        cj = msg_ptr[2 * e]                 # cavity of j towards i
        eo = edge_ptr[e]
        mi = 0.0
        for x in range(ki):
            mi = max(mi, C[ci + x])
        mj = 0.0
        for y in range(kj):
            mj = max(mj, C[cj + y])
        s = 0.0
        if mi > 0.0 and mj > 0.0:
            for x in range(ki):
                cx = C[ci + x] / mi
                for y in range(kj):
                    v = edge_pot[eo + x * kj + y] * cx * (C[cj + y] / mj)
                    edge_b[eo + x * kj + y] = v
                    s += v
        if s > 0.0:
            for q in range(eo, eo + ki * kj):
                edge_b[q] /= s
        else:                               # contradictory: product of the node beliefs
            for x in range(ki):
                for y in range(kj):
                    edge_b[eo + x * kj + y] = node_b[node_ptr[i] + x] * node_b[node_ptr[j] + y]


@kernel()
def exp_shifted(theta, ptr, out):
    """``out[block] = exp(theta[block] - max(theta[block]))`` for every block of ``ptr``."""
    for b in range(len(ptr) - 1):
        lo, hi = ptr[b], ptr[b + 1]
        if hi == lo:
            continue
        m = theta[lo]
        for q in range(lo + 1, hi):
            m = max(m, theta[q])
        for q in range(lo, hi):
            out[q] = np.exp(theta[q] - m)
