"""The second-order CRF's ``map`` capability (:mod:`spargel.core.protocol`): a compiled
pass that decodes each sequence by Viterbi over the pair states ``(y_{t-1}, y_t)``
(the begin marker ``L`` before the first token, :mod:`spargel.chain.crf2_space`),
forms the sparse difference of the gold and the decoded path's feature counts
(unigram, pair and triple weights) and applies an online update rule of
:mod:`spargel.core.online_rules`. A sequence with an unlabelled token is skipped."""

import numpy as np

from ..core import online_rules as R
from ..core.jit import inner, kernel
from .crf_map import MapCapability, _find, _unigram_diff


@inner()
def _viterbi2(w, space, data, lo, hi, E, D, back, Tq, path):
    L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index = space
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n = hi - lo
    S = (L + 1) * L
    # E[t, s]: the score of state s = a * L + b at token t (unigram weights of b, pair
    # weights of (a, b)), without the triple weights
    for t in range(n):
        for s in range(S):
            E[t, s] = 0.0
        for j in range(uni_ptr[lo + t], uni_ptr[lo + t + 1]):
            a = uni_ids[j]
            x = uni_vals[j]
            for k in range(u_ptr[a], u_ptr[a + 1]):
                y = u_lab[k]
                v = w[k] * x
                for p in range(L + 1):
                    E[t, p * L + y] += v
        for j in range(big_ptr[lo + t], big_ptr[lo + t + 1]):
            a = big_ids[j]
            x = big_vals[j]
            for k in range(b_ptr[a], b_ptr[a + 1]):
                E[t, b_pair[k]] += w[b_base + k] * x
    if n > 1:
        for q in range(S * L):
            Tq[q] = 0.0
        for i in range(len(t_pair)):
            Tq[t_pair[i]] = w[t_base + i]
    for s in range(S):
        D[0, s] = E[0, s] if s >= L * L else -np.inf
    for t in range(1, n):
        for s in range(S):
            D[t, s] = -np.inf
            back[t, s] = 0
        # (a2, a) -> (a, b): the triple (a2, a, b)
        for a2 in range(L + 1):
            for a in range(L):
                src = a2 * L + a
                ds = D[t - 1, src]
                if ds == -np.inf:
                    continue
                base = src * L
                for b in range(L):
                    sc = ds + Tq[base + b]
                    dst = a * L + b
                    if sc > D[t, dst]:
                        D[t, dst] = sc
                        back[t, dst] = a2
        for s in range(L * L):
            D[t, s] += E[t, s]
    best = -np.inf
    arg = 0
    for s in range(S):
        if D[n - 1, s] > best:
            best = D[n - 1, s]
            arg = s
    state = arg
    for t in range(n - 1, -1, -1):
        path[t] = state % L
        if t > 0:
            a = state // L
            state = back[t, state] * L + a


@inner()
def _diff2(space, data, lo, hi, gold, path, acc, mark, idx):
    L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index = space
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    nnz = 0
    d = 0
    n = hi - lo
    for t in range(n):
        g, p = gold[lo + t], path[t]
        if g != p:
            d += 1
            nnz = _unigram_diff(u_ptr, u_lab, uni_ptr, uni_ids, uni_vals, lo + t, g, p, acc, mark, idx, nnz)
        g1 = gold[lo + t - 1] if t > 0 else L
        p1 = path[t - 1] if t > 0 else L
        gp, pp = g1 * L + g, p1 * L + p
        if gp != pp:
            for j in range(big_ptr[lo + t], big_ptr[lo + t + 1]):
                a = big_ids[j]
                x = big_vals[j]
                k = _find(b_pair, b_ptr[a], b_ptr[a + 1], gp)
                if k >= 0:
                    nnz = R.collect(acc, mark, idx, nnz, b_base + k, x)
                k = _find(b_pair, b_ptr[a], b_ptr[a + 1], pp)
                if k >= 0:
                    nnz = R.collect(acc, mark, idx, nnz, b_base + k, -x)
        if t == 0:
            continue
        # the triples differ where the pairs do, or two tokens back
        g2 = gold[lo + t - 2] if t > 1 else L
        p2 = path[t - 2] if t > 1 else L
        gq, pq = (g2 * L + g1) * L + g, (p2 * L + p1) * L + p
        if gq == pq:
            continue
        ti = t_index[gq]
        if ti >= 0:
            nnz = R.collect(acc, mark, idx, nnz, t_base + ti, 1.0)
        ti = t_index[pq]
        if ti >= 0:
            nnz = R.collect(acc, mark, idx, nnz, t_base + ti, -1.0)
    return nnz, d


@kernel()
def map_pass2(space, data, order, w, ws, cov, sw, prm, st, bufs):
    """:func:`spargel.chain.crf_map.map_pass` for the second-order chain."""
    E, D, back, Tq, path, acc, mark, idx, val, info = bufs
    seq_ptr, labels = data[0], data[7]
    for r in range(len(order)):
        s = order[r]
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        skip = n == 0
        for t in range(lo, hi):
            if labels[t] < 0:
                skip = True
        if skip:
            if prm[0] != R.DIFF_ONLY:
                st[0] += 1.0
            continue
        _viterbi2(w, space, data, lo, hi, E, D, back, Tq, path)
        nnz, d = _diff2(space, data, lo, hi, labels, path, acc, mark, idx)
        R.gather(acc, mark, idx, val, nnz)
        if prm[0] == R.DIFF_ONLY:
            info[0] = nnz
            info[1] = d
            info[2] = n
            return
        weight = sw[s] if len(sw) > 0 else 1.0
        R.update(w, ws, cov, idx, val, nnz, d, n, weight, prm, st)


def make_buffers2(space, data):
    L = int(space.n_labels)
    S = (L + 1) * L
    seq_ptr = np.asarray(data.seq_ptr, dtype=np.int64)
    lens = np.diff(seq_ptr)
    n = max(int(lens.max()) if len(lens) else 1, 1)
    per = np.diff(data.uni_ptr) + np.diff(data.big_ptr)
    csum = np.concatenate([[0], np.cumsum(per)])
    most = int((csum[seq_ptr[1:]] - csum[seq_ptr[:-1]]).max()) if len(seq_ptr) > 1 else 0
    m = 2 * most + 2 * n + 2
    npar = int(space.n_params)
    return (np.zeros((n, S)), np.zeros((n, S)), np.zeros((n, S), dtype=np.int64), np.zeros(S * L),
            np.zeros(n, dtype=np.int64), np.zeros(npar), np.zeros(npar, dtype=np.uint8),
            np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(3, dtype=np.int64))


class MapCapability2(MapCapability):
    """The ``map`` capability of :class:`~spargel.chain.crf2.ChainCRF2`."""

    def _map_buffers(self):
        bufs = getattr(self, "_map_bufs", None)
        if bufs is None:
            bufs = self._map_bufs = make_buffers2(self.space, self.data)
        return bufs

    def map_pass(self, order, w, ws, cov, st, prm):
        """One compiled pass of an online rule over the sequences ``order`` (Viterbi over
        the pair states; see :mod:`spargel.core.online_rules`)."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        map_pass2(self.view.space_t, self.view.data_t, order, w, ws, cov, self.sw, prm, st, self._map_buffers())
