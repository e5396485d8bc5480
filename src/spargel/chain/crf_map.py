"""The chain CRFs' ``map`` capability (:mod:`spargel.core.protocol`), both orders: a
compiled pass that decodes each sequence with the current weights (Viterbi), forms the
sparse difference of the gold and the decoded path's feature counts and applies an
online update rule of :mod:`spargel.core.online_rules` (perceptron, passive-aggressive,
AROW).

The pass reads the plain data and space tuples (``crf.data_tuple``,
``FeatureSpace.as_tuple``). At order 1 a token's state scores are its attributes'
label weights, a position's transition the transition weights plus the
observation-conditioned pair weights of its bigram attributes. At order 2 the Viterbi
runs over the pair states ``(y_{t-1}, y_t)`` (the begin marker ``L`` before the first
token, :mod:`spargel.chain.crf2_space`) and the difference covers unigram, pair and
triple weights. What differs per order is the Viterbi and which codes a position's
pair and transition weights have; the pass, its buffers and the difference's
collection are one. A sequence with an unlabelled token (label -1) is skipped.
"""

import numpy as np

from ..core import online_rules as R
from ..core.jit import inner, kernel
from .crf_kernels import order_flags


@inner()
def _best_state(row, S):
    """The first of the states 0..S-1 with the highest score in ``row`` (the end of
    both orders' Viterbi)."""
    best = -np.inf
    arg = 0
    for s in range(S):
        if row[s] > best:
            best = row[s]
            arg = s
    return arg


@inner()
def _unigram_row(w, space, data, tok, row):
    """row[:L] = the unigram scores of token ``tok`` (both orders' Viterbi)."""
    u_ptr, u_lab = space.u_ptr, space.u_lab
    uni_ptr, uni_ids, uni_vals = data.uni_ptr, data.uni_ids, data.uni_vals
    unit = len(uni_vals) == 0                   # every value is 1
    for y in range(space.L):
        row[y] = 0.0
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        a = uni_ids[j]
        x = 1.0 if unit else uni_vals[j]
        for k in range(u_ptr[a], u_ptr[a + 1]):
            row[u_lab[k]] += w[k] * x


@inner()
def _viterbi(w, space, data, lo, hi, E, D, back, T, Tt, path):
    """The best path of tokens lo..hi-1 under w into path[0:hi-lo] (ties: lowest label)."""
    L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index = space
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    n = hi - lo
    for t in range(n):
        _unigram_row(w, space, data, lo + t, E[t])
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
    path[n - 1] = _best_state(D[n - 1], L)
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
    unit = len(uni_vals) == 0                   # every value is 1
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        a = uni_ids[j]
        x = 1.0 if unit else uni_vals[j]
        k = _find(u_lab, u_ptr[a], u_ptr[a + 1], g)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, k, x)
        k = _find(u_lab, u_ptr[a], u_ptr[a + 1], p)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, k, -x)
    return nnz


@inner()
def _viterbi2(w, space, data, lo, hi, E, D, back, Tq, path):
    """The best path over the pair states of tokens lo..hi-1 into path[0:hi-lo]."""
    L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index = space
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    n = hi - lo
    S = (L + 1) * L
    # E[t, s]: the score of state s = a * L + b at token t (unigram weights of b, pair
    # weights of (a, b)), without the triple weights
    for t in range(n):
        u = D[t]                        # (scratch here: D is filled below)
        _unigram_row(w, space, data, lo + t, u)
        for p in range(L + 1):
            for y in range(L):
                E[t, p * L + y] = u[y]
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
    state = _best_state(D[n - 1], S)
    for t in range(n - 1, -1, -1):
        path[t] = state % L
        if t > 0:
            a = state // L
            state = back[t, state] * L + a


@inner()
def _pair_diff(space, data, tok, gp, pp, acc, mark, idx, nnz):
    """The pair weights of token ``tok``'s bigram attributes under the pair code ``gp``
    (+x) and ``pp`` (-x) into idx / acc; returns the new nnz."""
    b_ptr, b_pair, b_base = space.b_ptr, space.b_pair, space.b_base
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    for j in range(big_ptr[tok], big_ptr[tok + 1]):
        a = big_ids[j]
        x = big_vals[j]
        k = _find(b_pair, b_ptr[a], b_ptr[a + 1], gp)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, b_base + k, x)
        k = _find(b_pair, b_ptr[a], b_ptr[a + 1], pp)
        if k >= 0:
            nnz = R.collect(acc, mark, idx, nnz, b_base + k, -x)
    return nnz


@inner()
def _transition_diff(space, gq, pq, acc, mark, idx, nnz):
    """The transition weights of the codes ``gq`` (+1) and ``pq`` (-1) into idx / acc."""
    t_base, t_index = space.t_base, space.t_index
    ti = t_index[gq]
    if ti >= 0:
        nnz = R.collect(acc, mark, idx, nnz, t_base + ti, 1.0)
    ti = t_index[pq]
    if ti >= 0:
        nnz = R.collect(acc, mark, idx, nnz, t_base + ti, -1.0)
    return nnz


@inner()
def _diff(space, data, lo, hi, gold, path, acc, mark, idx, first, second):
    """The distinct weights of F(gold) - F(path) into idx / acc; returns (nnz, d).
    The order (``crf_kernels.order_flags``): ``first`` True at order 1 (pairs and
    transitions are label pairs, from the second token on), ``second`` True at order 2
    (pairs from the first token, the begin marker before it; transitions are label
    triples)."""
    L, u_ptr, u_lab = space.L, space.u_ptr, space.u_lab
    uni_ptr, uni_ids, uni_vals = data.uni_ptr, data.uni_ids, data.uni_vals
    nnz = 0
    d = 0
    n = hi - lo
    for t in range(n):
        g, p = gold[lo + t], path[t]
        if g != p:
            d += 1
            nnz = _unigram_diff(u_ptr, u_lab, uni_ptr, uni_ids, uni_vals, lo + t, g, p, acc, mark, idx, nnz)
        if first is not None:
            if t == 0:
                continue
            gp = gold[lo + t - 1] * L + g
            pp = path[t - 1] * L + p
            if gp == pp:
                continue
            nnz = _transition_diff(space, gp, pp, acc, mark, idx, nnz)
            nnz = _pair_diff(space, data, lo + t, gp, pp, acc, mark, idx, nnz)
        if second is not None:
            g1 = gold[lo + t - 1] if t > 0 else L
            p1 = path[t - 1] if t > 0 else L
            gp, pp = g1 * L + g, p1 * L + p
            if gp != pp:
                nnz = _pair_diff(space, data, lo + t, gp, pp, acc, mark, idx, nnz)
            if t == 0:
                continue
            # the triples differ where the pairs do, or two tokens back
            g2 = gold[lo + t - 2] if t > 1 else L
            p2 = path[t - 2] if t > 1 else L
            gq, pq = (g2 * L + g1) * L + g, (p2 * L + p1) * L + p
            if gq != pq:
                nnz = _transition_diff(space, gq, pq, acc, mark, idx, nnz)
    return nnz, d


@kernel()
def map_pass(space, data, order, w, ws, cov, sw, prm, st, bufs, first, second):
    """One pass of the rule prm[0] over the sequences ``order`` (see
    :mod:`spargel.core.online_rules`); with rule ``DIFF_ONLY`` only the first sequence's
    difference is reported: idx[:nnz], val[:nnz] and info = [nnz, d, n_tokens].
    ``sw`` None: every sequence weighs 1 (the code for other weights is not compiled);
    ``first`` / ``second``: the order (``crf_kernels.order_flags``; numba compiles only
    that order's Viterbi and difference)."""
    E, D, back, T, Tt, path, acc, mark, idx, val, info = bufs
    seq_ptr, labels = data.seq_ptr, data.labels
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
        if first is not None:
            _viterbi(w, space, data, lo, hi, E, D, back, T, Tt, path)
        if second is not None:
            _viterbi2(w, space, data, lo, hi, E, D, back, T, path)
        nnz, d = _diff(space, data, lo, hi, labels, path, acc, mark, idx, first, second)
        R.gather(acc, mark, idx, val, nnz)
        if prm[0] == R.DIFF_ONLY:
            info[0] = nnz
            info[1] = d
            info[2] = n
            return
        weight = 1.0
        if sw is not None:
            weight = sw[s]
        R.update(w, ws, cov, idx, val, nnz, d, n, weight, prm, st)


def make_buffers(space, data):
    """The pass's scratch arrays for the longest sequence: ``(E, D, back, T, Tt, path,
    acc, mark, idx, val, info)`` over the chain's states (labels, or pair states at
    order 2; ``T`` the transition scores, ``Tt`` a position's at order 1). A path
    difference touches at most each token's attributes twice, and two transitions and
    each bigram attribute twice per position."""
    L = int(space.n_labels)
    second = order_flags(space)[1] is not None
    S = (L + 1) * L if second else L
    seq_ptr = np.asarray(data.seq_ptr, dtype=np.int64)
    lens = np.diff(seq_ptr)
    n = max(int(lens.max()) if len(lens) else 1, 1)
    per = np.diff(data.uni_ptr) + np.diff(data.big_ptr)
    csum = np.concatenate([[0], np.cumsum(per)])
    most = int((csum[seq_ptr[1:]] - csum[seq_ptr[:-1]]).max()) if len(seq_ptr) > 1 else 0
    m = 2 * most + 2 * n + 2
    npar = int(space.n_params)
    return (np.zeros((n, S)), np.zeros((n, S)), np.zeros((n, S), dtype=np.int64), np.zeros(S * L),
            np.zeros(0 if second else L * L), np.zeros(n, dtype=np.int64), np.zeros(npar),
            np.zeros(npar, dtype=np.uint8), np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(3, dtype=np.int64))


class MapCapability:
    """The ``map`` capability of a chain model whose view offers the plain ``space_t``
    / ``data_t`` tuples (mixed into :class:`~spargel.chain.crf.ChainCRF` and
    :class:`~spargel.chain.crf2.ChainCRF2`)."""

    def _map_buffers(self):
        bufs = getattr(self, "_map_bufs", None)
        if bufs is None:
            bufs = self._map_bufs = make_buffers(self.space, self.data)
        return bufs

    def map_pass(self, order, w, ws, cov, st, prm):
        """One compiled pass of an online rule over the sequences ``order`` (see
        :mod:`spargel.core.online_rules`): decodes each with the current ``w`` (Viterbi,
        over the pair states at order 2) and updates ``w`` (and ``ws``, ``cov``, ``st``) in place."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        map_pass(self.view.space_t, self.view.data_t, order, w, ws, cov, self.sw if len(self.sw) else None, prm, st,
                 self._map_buffers(), *order_flags(self.space))

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
