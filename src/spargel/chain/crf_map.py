"""The first-order CRF's ``map`` capability (:mod:`spargel.core.protocol`): a compiled
pass that decodes each sequence with the current weights (Viterbi), forms the sparse
difference of the gold and the decoded path's feature counts and applies an online
update rule of :mod:`spargel.core.online_rules` (perceptron, passive-aggressive, AROW).

The pass reads the plain data and space tuples (``crf.data_tuple``,
``FeatureSpace.as_tuple``): per token the state scores of its attributes, per position
the transition weights plus the observation-conditioned pair weights of its bigram
attributes. A sequence with an unlabelled token (label -1) is skipped.
"""

import numpy as np

from ..core import online_rules as R
from ..core.jit import inner, kernel


@inner()
def _viterbi(w, space, data, lo, hi, E, D, back, T, Tt, path):
    """The best path of tokens lo..hi-1 under w into path[0:hi-lo] (ties: lowest label)."""
    L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index = space
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n = hi - lo
    for t in range(n):
        for y in range(L):
            E[t, y] = 0.0
        for j in range(uni_ptr[lo + t], uni_ptr[lo + t + 1]):
            a = uni_ids[j]
            x = uni_vals[j]
            for k in range(u_ptr[a], u_ptr[a + 1]):
                E[t, u_lab[k]] += w[k] * x
    for y in range(L):
        D[0, y] = E[0, y]
    if n > 1:
        for p in range(L * L):
            T[p] = 0.0
        for i in range(len(t_pair)):
            T[t_pair[i]] = w[t_base + i]
    for t in range(1, n):
        M = T
        if big_ptr[lo + t] < big_ptr[lo + t + 1]:
            for p in range(L * L):
                Tt[p] = T[p]
            for j in range(big_ptr[lo + t], big_ptr[lo + t + 1]):
                a = big_ids[j]
                x = big_vals[j]
                for k in range(b_ptr[a], b_ptr[a + 1]):
                    Tt[b_pair[k]] += w[b_base + k] * x
            M = Tt
        for b in range(L):
            D[t, b] = -np.inf
            back[t, b] = 0
        for a in range(L):
            da = D[t - 1, a]
            base = a * L
            for b in range(L):
                s = da + M[base + b]
                if s > D[t, b]:
                    D[t, b] = s
                    back[t, b] = a
        for b in range(L):
            D[t, b] += E[t, b]
    best = -np.inf
    arg = 0
    for y in range(L):
        if D[n - 1, y] > best:
            best = D[n - 1, y]
            arg = y
    path[n - 1] = arg
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]


@inner()
def _find(lab, lo, hi, y):
    for k in range(lo, hi):
        if lab[k] == y:
            return k
    return -1


@inner()
def _unigram_diff(u_ptr, u_lab, uni_ptr, uni_ids, uni_vals, tok, g, p, acc, mark, idx, nnz):
    """The unigram weights of token ``tok`` under label ``g`` (+x) and ``p`` (-x) into
    idx / acc (both orders' difference passes); returns the new nnz."""
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        a = uni_ids[j]
        x = uni_vals[j]
        k = _find(u_lab, u_ptr[a], u_ptr[a + 1], g)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, k, x)
        k = _find(u_lab, u_ptr[a], u_ptr[a + 1], p)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, k, -x)
    return nnz


@inner()
def _diff(space, data, lo, hi, gold, path, acc, mark, idx):
    """The distinct weights of F(gold) - F(path) into idx / acc; returns (nnz, d)."""
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
        if t == 0:
            continue
        gp = gold[lo + t - 1] * L + g
        pp = path[t - 1] * L + p
        if gp == pp:
            continue
        ti = t_index[gp]
        if ti >= 0:
            nnz = R.collect(acc, mark, idx, nnz, t_base + ti, 1.0)
        ti = t_index[pp]
        if ti >= 0:
            nnz = R.collect(acc, mark, idx, nnz, t_base + ti, -1.0)
        for j in range(big_ptr[lo + t], big_ptr[lo + t + 1]):
            a = big_ids[j]
            x = big_vals[j]
            k = _find(b_pair, b_ptr[a], b_ptr[a + 1], gp)
            if k >= 0:
                nnz = R.collect(acc, mark, idx, nnz, b_base + k, x)
            k = _find(b_pair, b_ptr[a], b_ptr[a + 1], pp)
            if k >= 0:
                nnz = R.collect(acc, mark, idx, nnz, b_base + k, -x)
    return nnz, d


@kernel()
def map_pass(space, data, order, w, ws, cov, sw, prm, st, bufs):
    """One pass of the rule prm[0] over the sequences ``order`` (see
    :mod:`spargel.core.online_rules`); with rule ``DIFF_ONLY`` only the first sequence's
    difference is reported: idx[:nnz], val[:nnz] and info = [nnz, d, n_tokens]."""
    E, D, back, T, Tt, path, acc, mark, idx, val, info = bufs
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
        _viterbi(w, space, data, lo, hi, E, D, back, T, Tt, path)
        nnz, d = _diff(space, data, lo, hi, labels, path, acc, mark, idx)
        R.gather(acc, mark, idx, val, nnz)
        if prm[0] == R.DIFF_ONLY:
            info[0] = nnz
            info[1] = d
            info[2] = n
            return
        weight = sw[s] if len(sw) > 0 else 1.0
        R.update(w, ws, cov, idx, val, nnz, d, n, weight, prm, st)


def make_buffers(space, data):
    """The pass's scratch arrays for the longest sequence: a path difference touches at
    most each token's attributes twice, and two transitions and each bigram attribute
    twice per position."""
    L = int(space.n_labels)
    seq_ptr = np.asarray(data.seq_ptr, dtype=np.int64)
    lens = np.diff(seq_ptr)
    n = max(int(lens.max()) if len(lens) else 1, 1)
    per = np.diff(data.uni_ptr) + np.diff(data.big_ptr)
    csum = np.concatenate([[0], np.cumsum(per)])
    most = int((csum[seq_ptr[1:]] - csum[seq_ptr[:-1]]).max()) if len(seq_ptr) > 1 else 0
    m = 2 * most + 2 * n + 2
    npar = int(space.n_params)
    return (np.zeros((n, L)), np.zeros((n, L)), np.zeros((n, L), dtype=np.int64), np.zeros(L * L), np.zeros(L * L),
            np.zeros(n, dtype=np.int64), np.zeros(npar), np.zeros(npar, dtype=np.uint8),
            np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(3, dtype=np.int64))


class MapCapability:
    """The ``map`` capability of a chain model whose view offers the plain ``space_t``
    / ``data_t`` tuples of a first-order CRF (mixed into :class:`~spargel.chain.crf.ChainCRF`)."""

    def _map_buffers(self):
        bufs = getattr(self, "_map_bufs", None)
        if bufs is None:
            bufs = self._map_bufs = make_buffers(self.space, self.data)
        return bufs

    def map_pass(self, order, w, ws, cov, st, prm):
        """One compiled pass of an online rule over the sequences ``order`` (see
        :mod:`spargel.core.online_rules`): decodes each with the current ``w`` (Viterbi)
        and updates ``w`` (and ``ws``, ``cov``, ``st``) in place."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        map_pass(self.view.space_t, self.view.data_t, order, w, ws, cov, self.sw, prm, st, self._map_buffers())

    def map_sample(self, i, w):
        """The Viterbi labels' difference for sequence ``i`` at ``w``: ``(idx, delta, d,
        n_parts)`` with ``delta = F(gold) - F(decoded)`` on the distinct weights ``idx``
        (unweighted), ``d`` wrong tokens of ``n_parts``; ``None`` for a sequence with an
        unlabelled token."""
        return map_sample(self, i, w)


def map_sample(model, i, w):
    bufs = model._map_buffers()
    w = np.ascontiguousarray(w, dtype=np.float64)
    prm = np.array([R.DIFF_ONLY, 0, 0, 0, 0], dtype=np.float64)
    info = bufs[-1]
    info[:] = -1
    model.map_pass(np.array([i], dtype=np.int64), w, w, w, np.zeros(3), prm)
    if info[0] < 0:
        return None
    nnz = int(info[0])
    return bufs[-3][:nnz].copy(), bufs[-2][:nnz].copy(), int(info[1]), int(info[2])
