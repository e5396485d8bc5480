"""Sparse forward-backward and sparse Viterbi for the linear-chain CRF
(Sokolovska, Lavergne, Cappé & Yvon 2010, sections 3.2-3.3).

At position t the transition factor is ``M_t = exp(T + B_t)``, where T are the global
transition weights and ``B_t`` the sum of the weights of the bigram attributes firing at
t. Writing ``M_t = base ∘ (1 + (exp(B_t) - 1))``, only the pairs where ``B_t`` is
non-zero contribute a correction, so the forward and backward products cost
``O(|base| + nnz(B_t))`` instead of ``|Y|^2`` exponentials and products:

* ``ones`` base (no transitions, or transitions sparse themselves): ``base = 1``;
  the non-zero transitions join the bigram weights as corrections, and
  ``alpha @ 1`` is one sum, so a position costs ``O(|Y| + nnz)``;
* ``dense`` base (dense transitions): ``base = exp(T - max T)`` and ``alpha @ base`` is
  a dense product, but no exponential is taken per position.

Corrections are ``base * expm1(S)`` (``S`` the summed weights of a pair), exact for
small ``S``. Scaling is as in :mod:`crf_kernels`; when it underflows the sequence is
redone by the dense log-space kernel. Results equal the dense kernels up to rounding.

The ``sp`` tuple (built once per weight vector by :func:`sparse_structure`):

``(ones, expT, tmax, tnz_pair, tnz_val, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1,
tnz_i, tnz_j, tnz_e1)``

``tnz_*`` list the non-zero transitions (used in the ``ones`` base, with their
``expm1``, so a position with no bigram attribute costs no exponential); bigram attribute
``a`` has ``bnz_cnt[a]`` non-zero weights listed in the slots ``b_ptr[a]:`` of the
``bnz_*`` arrays (pair, previous label, label, weight, ``expm1(weight)`` times the base).
"""

import math

import numpy as np
from numba import njit

from .._vec import dot
from . import crf_kernels as K

FAST = K.FAST
NEG_INF = -np.inf

# ``ones`` base when at most this fraction of the |Y|^2 transitions is non-zero
TRANS_SPARSE_FRACTION = 0.25
# automatic choice: the sparse kernels when the mean number of non-zero bigram weights
# at a position is at most this fraction of |Y|^2. Measured (bench/sparse_forward_backward.py,
# docs/benchmarks.md): the sparse forward-backward with gradient is faster than the
# dense one at every density up to 100% (it takes no exponential per position), while
# the sparse Viterbi (sorting, column grouping) only wins below ~10-20%.
AUTO_SPARSE_FRACTION = 1.0
AUTO_SPARSE_FRACTION_VITERBI = 0.1


# --------------------------------------------------------------------------- structure
@njit(cache=True, nogil=True)
def fill_transitions(w, space, ones, expT, tnz_pair, tnz_val, tnz_i, tnz_j, tnz_e1):
    """Base part of the structure: returns (tmax, number of non-zero transitions)."""
    L, t_pair, t_base = space[0], space[6], space[7]
    n = 0
    tmax = 0.0
    for k in range(len(t_pair)):
        v = w[t_base + k]
        if v != 0.0:
            p = t_pair[k]
            tnz_pair[n] = p
            tnz_val[n] = v
            tnz_i[n] = p // L
            tnz_j[n] = p - (p // L) * L
            tnz_e1[n] = math.expm1(v)
            n += 1
    if not ones:
        trans = K.transition_matrix(w, space)
        tmax = trans.max()
        for p in range(L * L):
            expT[p] = math.exp(trans[p] - tmax)
    return tmax, n


@njit(cache=True, nogil=True)
def fill_bigram_attr(w, space, ones, expT, a, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1):
    """List the non-zero weights of bigram attribute a (in its own slots)."""
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    lo = b_ptr[a]
    n = 0
    for k in range(b_ptr[a], b_ptr[a + 1]):
        v = w[b_base + k]
        if v != 0.0:
            p = b_pair[k]
            q = lo + n
            bnz_pair[q] = p
            i = p // L
            bnz_i[q] = i
            bnz_j[q] = p - i * L
            bnz_w[q] = v
            e = math.expm1(v)
            bnz_e1[q] = e if ones else e * expT[p]
            n += 1
    bnz_cnt[a] = n


@njit(cache=True, nogil=True)
def fill_all_bigram(w, space, ones, expT, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1):
    for a in range(len(space[3]) - 1):
        fill_bigram_attr(w, space, ones, expT, a, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1)


def transitions_are_sparse(w, space):
    """True when the ``ones`` base is used: no transitions or few non-zero ones."""
    L = space[0]
    t_pair, t_base = space[6], space[7]
    if len(t_pair) == 0:
        return True
    nnz = int(np.count_nonzero(w[t_base:t_base + len(t_pair)]))
    return nnz <= TRANS_SPARSE_FRACTION * L * L


def sparse_structure(w, space, ones=None):
    """The ``sp`` tuple for weights w and layout tuple ``space`` (see the module doc)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    L = space[0]
    if ones is None:
        ones = transitions_are_sparse(w, space)
    expT = np.ones(L * L)
    nt = max(1, len(space[6]))
    tnz_pair = np.zeros(nt, np.int64)
    tnz_val = np.zeros(nt)
    tnz_i = np.zeros(nt, np.int64)
    tnz_j = np.zeros(nt, np.int64)
    tnz_e1 = np.zeros(nt)
    tmax, n = fill_transitions(w, space, ones, expT, tnz_pair, tnz_val, tnz_i, tnz_j, tnz_e1)
    nb = max(1, len(space[4]))
    bnz_cnt = np.zeros(len(space[3]) - 1, np.int64)
    bnz_pair = np.zeros(nb, np.int64)
    bnz_i = np.zeros(nb, np.int64)
    bnz_j = np.zeros(nb, np.int64)
    bnz_w = np.zeros(nb)
    bnz_e1 = np.zeros(nb)
    fill_all_bigram(w, space, ones, expT, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1)
    return (bool(ones), expT, float(tmax), tnz_pair[:n].copy(), tnz_val[:n].copy(), bnz_cnt, bnz_pair,
            bnz_i, bnz_j, bnz_w, bnz_e1, tnz_i[:n].copy(), tnz_j[:n].copy(), tnz_e1[:n].copy())


INFERENCE_MODES = ("auto", "dense", "sparse")


class SparsityProbe:
    """What the automatic choice needs that does not depend on the weights: the bigram
    attribute ids at non-first positions and the number of such positions."""

    def __init__(self, space, data):
        self.space = space.as_tuple() if hasattr(space, "as_tuple") else space
        first = np.zeros(data.n_tokens, dtype=bool)
        first[data.seq_ptr[:-1]] = True
        tok = np.repeat(np.arange(data.n_tokens), np.diff(data.big_ptr))
        keep = ~first[tok]
        self.ids = data.big_ids[keep].astype(np.int64)
        self.n_pos = int(np.count_nonzero(np.diff(np.unique(np.concatenate([[-1], tok[keep]])))))
        n_attr = len(self.space[3]) - 1
        self.uses = np.bincount(self.ids, minlength=n_attr)[:n_attr] if n_attr else np.zeros(0, np.int64)

    def fraction(self, w):
        """Mean non-zero bigram weights per position with bigram attributes, over |Y|^2
        (-1 when there is no such position)."""
        L, b_ptr, b_base = self.space[0], self.space[3], self.space[5]
        if self.n_pos == 0:
            return -1.0
        nz = np.concatenate([[0], np.cumsum(np.asarray(w[b_base:b_base + b_ptr[-1]]) != 0)])
        per_attr = nz[b_ptr[1:]] - nz[b_ptr[:-1]]
        return float(np.dot(per_attr, self.uses)) / (self.n_pos * L * L)

    def choose(self, w, task="fb"):
        """'sparse' or 'dense' for forward-backward (task 'fb') or Viterbi ('viterbi')."""
        frac = self.fraction(w)
        limit = AUTO_SPARSE_FRACTION_VITERBI if task == "viterbi" else AUTO_SPARSE_FRACTION
        return "sparse" if 0 <= frac <= limit else "dense"


def nonzero_fraction(w, space, data):
    """Mean number of non-zero bigram-attribute (and, with a ``ones`` base, transition)
    weights per position with bigram attributes, as a fraction of |Y|^2; -1 when no
    position has bigram attributes."""
    w = np.asarray(w, dtype=np.float64)
    L, b_ptr, b_base = space[0], space[3], space[5]
    n_attr = len(b_ptr) - 1
    if n_attr == 0 or len(data.big_ids) == 0:
        return -1.0
    nz = (w[b_base:b_base + b_ptr[-1]] != 0).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(nz)])
    per_attr = cum[b_ptr[1:]] - cum[b_ptr[:-1]]
    first = np.zeros(data.n_tokens, dtype=bool)
    first[data.seq_ptr[:-1]] = True
    tok = np.repeat(np.arange(data.n_tokens), np.diff(data.big_ptr))
    keep = ~first[tok]
    if not keep.any():
        return -1.0
    n_pos = len(np.unique(tok[keep]))
    total = float(per_attr[data.big_ids[keep]].sum())
    return total / (n_pos * L * L)


def choose_inference(w, space, data, inference="auto", task="fb"):
    """'sparse' or 'dense' for these weights: ``inference`` unless it is 'auto'; auto
    picks the sparse kernels when there are positions with bigram attributes and the
    mean fraction of non-zero bigram weights per position is at most
    ``AUTO_SPARSE_FRACTION`` (``AUTO_SPARSE_FRACTION_VITERBI`` for ``task="viterbi"``);
    with bigram attributes absent there is little to save (the gradient of the
    transitions needs every pairwise marginal anyway), so the dense kernels run."""
    if inference not in INFERENCE_MODES:
        raise ValueError(f"inference must be 'auto', 'dense' or 'sparse', got {inference!r}")
    if inference != "auto":
        return inference
    return SparsityProbe(space, data).choose(np.asarray(w), task)


# --------------------------------------------------------------------------- per-position corrections
@njit(cache=True, nogil=True)
def gather(space, data, sp, t, acc, mark, tp, ti, tj, tc):
    """Corrections of position t (t is not the first token of its sequence): fills
    tp/ti/tj (pair, previous, current label) and tc (base * expm1(summed weights)) and
    returns their number. acc and mark are |Y|^2 scratch arrays left zeroed."""
    L, b_ptr = space[0], space[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    ones, expT = sp[0], sp[1]
    tnz_pair, tnz_val = sp[3], sp[4]
    bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1 = sp[5], sp[6], sp[7], sp[8], sp[9], sp[10]
    n_t = len(tnz_pair) if ones else 0
    j0, j1 = big_ptr[t], big_ptr[t + 1]
    nt = 0
    if n_t == 0 and j1 - j0 == 1 and big_vals[j0] == 1.0:
        a = big_ids[j0]
        base = b_ptr[a]
        for q in range(bnz_cnt[a]):
            tp[q] = bnz_pair[base + q]
            ti[q] = bnz_i[base + q]
            tj[q] = bnz_j[base + q]
            tc[q] = bnz_e1[base + q]
        return bnz_cnt[a]
    if j1 == j0:                      # transitions only: precomputed corrections
        for q in range(n_t):
            tp[q] = tnz_pair[q]
            ti[q] = sp[11][q]
            tj[q] = sp[12][q]
            tc[q] = sp[13][q]
        return n_t
    for q in range(n_t):
        p = tnz_pair[q]
        mark[p] = 1
        tp[nt] = p
        acc[p] = tnz_val[q]
        nt += 1
    for j in range(j0, j1):
        a = big_ids[j]
        v = big_vals[j]
        base = b_ptr[a]
        for q in range(bnz_cnt[a]):
            p = bnz_pair[base + q]
            if mark[p] == 0:
                mark[p] = 1
                tp[nt] = p
                acc[p] = v * bnz_w[base + q]
                nt += 1
            else:
                acc[p] += v * bnz_w[base + q]
    for q in range(nt):
        p = tp[q]
        i = p // L
        ti[q] = i
        tj[q] = p - i * L
        e = math.expm1(acc[p])
        tc[q] = e if ones else e * expT[p]
        acc[p] = 0.0
        mark[p] = 0
    return nt


@njit(cache=True, nogil=True)
def gather_scores(space, data, sp, t, acc, mark, tp):
    """Summed log-weights of the pairs touched at position t into acc[tp[q]] (caller
    resets acc/mark with :func:`release`); with a dense base these are the bigram
    weights only, with a ``ones`` base they include the non-zero transitions."""
    b_ptr = space[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    ones = sp[0]
    tnz_pair, tnz_val = sp[3], sp[4]
    bnz_cnt, bnz_pair, bnz_w = sp[5], sp[6], sp[9]
    nt = 0
    if ones:
        for q in range(len(tnz_pair)):
            p = tnz_pair[q]
            mark[p] = 1
            tp[nt] = p
            acc[p] = tnz_val[q]
            nt += 1
    for j in range(big_ptr[t], big_ptr[t + 1]):
        a = big_ids[j]
        v = big_vals[j]
        base = b_ptr[a]
        for q in range(bnz_cnt[a]):
            p = bnz_pair[base + q]
            if mark[p] == 0:
                mark[p] = 1
                tp[nt] = p
                acc[p] = v * bnz_w[base + q]
                nt += 1
            else:
                acc[p] += v * bnz_w[base + q]
    return nt


@njit(cache=True, nogil=True)
def release(acc, mark, tp, nt):
    for q in range(nt):
        acc[tp[q]] = 0.0
        mark[tp[q]] = 0


@njit(cache=True, nogil=True, fastmath=FAST)
def forward_step(prev, cur, psi_t, sp, L, nt, ti, tj, tc):
    """cur = psi_t * (prev @ M_t) (unnormalised); returns its sum."""
    if sp[0]:
        s = 0.0
        for i in range(L):
            s += prev[i]
        for j in range(L):
            cur[j] = s
    else:
        expT = sp[1]
        for j in range(L):
            cur[j] = 0.0
        for i in range(L):
            ai = prev[i]
            base = i * L
            for j in range(L):
                cur[j] += ai * expT[base + j]
    for q in range(nt):
        cur[tj[q]] += prev[ti[q]] * tc[q]
    c = 0.0
    for j in range(L):
        v = cur[j] * psi_t[j]
        cur[j] = v
        c += v
    return c


@njit(cache=True, nogil=True, fastmath=FAST)
def backward_step(r, out, sp, L, nt, ti, tj, tc):
    """out = M_t @ r."""
    if sp[0]:
        s = 0.0
        for j in range(L):
            s += r[j]
        for i in range(L):
            out[i] = s
    else:
        expT = sp[1]
        for i in range(L):
            base = i * L
            s = 0.0
            for j in range(L):
                s += expT[base + j] * r[j]
            out[i] = s
    for q in range(nt):
        out[ti[q]] += tc[q] * r[tj[q]]


@njit(cache=True, nogil=True, fastmath=FAST)
def pair_matrix(prev, r, sp, L, nt, ti, tj, tc, P):
    """P[i * L + j] = prev[i] * M_t[i, j] * r[j]."""
    if sp[0]:
        for i in range(L):
            ai = prev[i]
            base = i * L
            for j in range(L):
                P[base + j] = ai * r[j]
    else:
        expT = sp[1]
        for i in range(L):
            ai = prev[i]
            base = i * L
            for j in range(L):
                P[base + j] = ai * expT[base + j] * r[j]
    for q in range(nt):
        P[ti[q] * L + tj[q]] += prev[ti[q]] * tc[q] * r[tj[q]]


@njit(cache=True, nogil=True)
def psi_row(E_row, psi_row_out, L):
    m = E_row[0]
    for y in range(1, L):
        if E_row[y] > m:
            m = E_row[y]
    for y in range(L):
        psi_row_out[y] = math.exp(E_row[y] - m)
    return m


# --------------------------------------------------------------------------- batch loss and gradient
@njit(cache=True, nogil=True)
def _scatter_unigram_plain(space, data, tok, marg, g):
    u_ptr, u_lab = space[1], space[2]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        a = uni_ids[j]
        v = uni_vals[j]
        for k in range(u_ptr[a], u_ptr[a + 1]):
            g[k] += v * marg[u_lab[k]]


@njit(cache=True, nogil=True, fastmath=FAST)
def _scatter_pairs(space, data, tok, P, g, acc_pair, has_t):
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    for j in range(big_ptr[tok], big_ptr[tok + 1]):
        a = big_ids[j]
        v = big_vals[j]
        for k in range(b_ptr[a], b_ptr[a + 1]):
            g[b_base + k] += v * P[b_pair[k]]
    if has_t:
        for p in range(len(acc_pair)):
            acc_pair[p] += P[p]


@njit(cache=True, nogil=True)
def _grad_log_plain(w, space, data, lo, hi, E, trans, la, lb, logc, Mlog, marg, g, acc_pair):
    """Expected counts of one sequence from log-space alpha/beta (fallback path)."""
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n = hi - lo
    for t in range(n):
        tok = lo + t
        for y in range(L):
            marg[y] = math.exp(la[t, y] + lb[t, y])
        _scatter_unigram_plain(space, data, tok, marg, g)
        if t == 0:
            continue
        if K.has_bigram_attrs(data, lo, tok):
            K.position_transitions(w, space, data, tok, trans, Mlog)
        else:
            Mlog[:] = trans
        for i in range(L):
            for j in range(L):
                p = i * L + j
                Mlog[p] = math.exp(la[t - 1, i] + Mlog[p] + E[t, j] + lb[t, j] - logc[t])
                acc_pair[p] += Mlog[p]
        for j in range(big_ptr[tok], big_ptr[tok + 1]):
            a = big_ids[j]
            v = big_vals[j]
            for k in range(b_ptr[a], b_ptr[a + 1]):
                g[b_base + k] += v * Mlog[b_pair[k]]


@njit(cache=True, nogil=True, fastmath=FAST)
def sparse_chunk_logz_grad(w, space, data, sp, s_lo, s_hi, g, want_grad):
    """Sum of log Z over sequences s_lo..s_hi-1 by the sparse recursions; with
    want_grad, adds their expected feature counts to g (empirical counts are not
    subtracted here). The twin of ``crf_kernels.chunk_logz_grad``."""
    L, t_pair, t_base = space[0], space[6], space[7]
    seq_ptr = data[0]
    ones = sp[0]
    has_t = len(t_pair) > 0
    maxlen = 1
    for s in range(s_lo, s_hi):
        maxlen = max(maxlen, seq_ptr[s + 1] - seq_ptr[s])
    LL = L * L
    E = np.zeros((maxlen, L))
    psi = np.zeros((maxlen, L))
    alpha = np.zeros((maxlen, L))
    beta = np.zeros((maxlen, L))
    scale = np.empty(maxlen)
    acc = np.zeros(LL)
    mark = np.zeros(LL, np.uint8)
    tp = np.zeros(LL + len(t_pair) + 1, np.int64)
    ti = np.zeros(LL + len(t_pair) + 1, np.int64)
    tj = np.zeros(LL + len(t_pair) + 1, np.int64)
    tc = np.zeros(LL + len(t_pair) + 1)
    P = np.zeros(LL)
    tmp = np.zeros(L)
    marg = np.zeros(L)
    acc_outer = np.zeros(LL)
    acc_corr = np.zeros(LL)
    acc_pair = np.zeros(LL)
    trans = K.transition_matrix(w, space)
    la = np.empty((maxlen, L))
    lb = np.empty((maxlen, L))
    tmpL = np.empty(L)
    Mlog = np.empty(LL)
    shift = 0.0 if ones else sp[2]
    total = 0.0
    for s in range(s_lo, s_hi):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        K.emission_scores(w, space, data, lo, hi, E)
        ok = True
        m = psi_row(E[0], psi[0], L)
        c = 0.0
        for y in range(L):
            c += psi[0, y]
        if not (c > 0.0) or not math.isfinite(c):
            ok = False
        else:
            for y in range(L):
                alpha[0, y] = psi[0, y] / c
            scale[0] = c
            logz = m + math.log(c)
            for t in range(1, n):
                m = psi_row(E[t], psi[t], L)
                nt = gather(space, data, sp, lo + t, acc, mark, tp, ti, tj, tc)
                c = forward_step(alpha[t - 1], alpha[t], psi[t], sp, L, nt, ti, tj, tc)
                if not (c > 0.0) or not math.isfinite(c):
                    ok = False
                    break
                inv = 1.0 / c
                for y in range(L):
                    alpha[t, y] *= inv
                scale[t] = c
                logz += m + shift + math.log(c)
        if not ok:
            logz = K.forward_backward_log(w, space, data, lo, hi, E, trans, la, lb, scale, Mlog, tmpL)
            if want_grad:
                _grad_log_plain(w, space, data, lo, hi, E, trans, la, lb, scale, Mlog, marg, g, acc_pair)
            total += logz
            continue
        total += logz
        if not want_grad:
            continue
        for y in range(L):
            beta[n - 1, y] = 1.0
        for t in range(n - 1, -1, -1):
            tok = lo + t
            for y in range(L):
                marg[y] = alpha[t, y] * beta[t, y]
            _scatter_unigram_plain(space, data, tok, marg, g)
            if t == 0:
                break
            inv = 1.0 / scale[t]
            for j in range(L):
                tmp[j] = psi[t, j] * beta[t, j] * inv
            nt = gather(space, data, sp, tok, acc, mark, tp, ti, tj, tc)
            backward_step(tmp, beta[t - 1], sp, L, nt, ti, tj, tc)
            if K.has_bigram_attrs(data, lo, tok):
                pair_matrix(alpha[t - 1], tmp, sp, L, nt, ti, tj, tc, P)
                _scatter_pairs(space, data, tok, P, g, acc_pair, has_t)
            elif has_t:
                prev = alpha[t - 1]
                for i in range(L):
                    ai = prev[i]
                    base = i * L
                    for j in range(L):
                        acc_outer[base + j] += ai * tmp[j]
                for q in range(nt):
                    acc_corr[ti[q] * L + tj[q]] += prev[ti[q]] * tc[q] * tmp[tj[q]]
    if want_grad and has_t:
        expT = sp[1]
        for k in range(len(t_pair)):
            p = t_pair[k]
            b = 1.0 if ones else expT[p]
            g[t_base + k] += acc_outer[p] * b + acc_corr[p] + acc_pair[p]
    return total


# --------------------------------------------------------------------------- Viterbi
@njit(cache=True, nogil=True)
def sparse_viterbi(w, space, data, sp, s, fixed, out):
    """Best label sequence of sequence s (as ``crf_kernels.viterbi``, same tie-breaking:
    the lowest previous label wins). With a ``ones`` base each position costs
    O(|Y| log |Y| + nnz): the best unconstrained predecessor comes from the sorted
    previous scores, skipping the pairs that carry a weight."""
    L = space[0]
    lo, hi = data[0][s], data[0][s + 1]
    n = hi - lo
    ones = sp[0]
    trans = K.transition_matrix(w, space)
    E = np.empty((n, L))
    K.emission_scores(w, space, data, lo, hi, E)
    K._apply_constraints(E, fixed, lo, n, L)
    delta = np.empty((n, L))
    back = np.zeros((n, L), dtype=np.int32)
    LL = L * L
    acc = np.zeros(LL)
    mark = np.zeros(LL, np.uint8)
    tp = np.zeros(LL + len(space[6]) + 1, np.int64)
    Ms = np.empty(LL)
    col_cnt = np.zeros(L + 1, np.int64)
    col_i = np.zeros(LL + len(space[6]) + 1, np.int64)
    col_v = np.zeros(LL + len(space[6]) + 1)
    stamp = np.zeros(L, np.int64)
    delta[0, :] = E[0]
    for t in range(1, n):
        nt = gather_scores(space, data, sp, lo + t, acc, mark, tp)
        prev = delta[t - 1]
        if not ones:
            Ms[:] = trans
            for q in range(nt):
                Ms[tp[q]] += acc[tp[q]]
            release(acc, mark, tp, nt)
            for j in range(L):
                best = NEG_INF
                arg = 0
                for i in range(L):
                    v = prev[i] + Ms[i * L + j]
                    if v > best:
                        best = v
                        arg = i
                delta[t, j] = best + E[t, j]
                back[t, j] = arg
            continue
        # group the touched pairs by current label (counting sort)
        for j in range(L + 1):
            col_cnt[j] = 0
        for q in range(nt):
            col_cnt[tp[q] % L + 1] += 1
        for j in range(L):
            col_cnt[j + 1] += col_cnt[j]
        for q in range(nt):
            p = tp[q]
            i = p // L
            j = p - i * L
            k = col_cnt[j]
            col_i[k] = i
            col_v[k] = acc[p]
            col_cnt[j] = k + 1
        for j in range(L - 1, 0, -1):
            col_cnt[j] = col_cnt[j - 1]
        col_cnt[0] = 0
        release(acc, mark, tp, nt)
        order = np.argsort(-prev, kind="mergesort")
        for j in range(L):
            best = NEG_INF
            arg = L
            for k in range(col_cnt[j], col_cnt[j + 1]):
                i = col_i[k]
                stamp[i] = t * L + j + 1
                v = prev[i] + col_v[k]
                if v > best or (v == best and i < arg):
                    best = v
                    arg = i
            for r in range(L):
                i = order[r]
                if stamp[i] != t * L + j + 1:
                    v = prev[i]
                    if v > best or (v == best and i < arg):
                        best = v
                        arg = i
                    break
            if arg == L:         # no candidate (cannot happen for L >= 1); as the dense kernel
                arg = 0
                best = NEG_INF
            delta[t, j] = best + E[t, j]
            back[t, j] = arg
    y = int(np.argmax(delta[n - 1]))
    score = delta[n - 1, y]
    for t in range(n - 1, -1, -1):
        out[t] = y
        y = back[t, y]
    return score


@njit(cache=True, nogil=True)
def sparse_decode_all(w, space, data, sp, fixed, out, scores):
    seq_ptr = data[0]
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        scores[s] = sparse_viterbi(w, space, data, sp, s, fixed, out[lo:hi])


# --------------------------------------------------------------------------- Python entry points
def sparse_loss_grad(model, w, want_grad=True, ones=None):
    """(loss, gradient) of a :class:`~spargel.models.crf.ChainCRF` by the sparse kernels
    (threads over the model's sequence chunks, like ``ChainCRF.loss_grad``). ``ones``
    forces the base (True: ones, False: dense transitions; None: automatic)."""
    from concurrent.futures import ThreadPoolExecutor

    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = model._space_t, model._data_t
    sp = sparse_structure(w, st, ones)
    bounds = model._bounds
    n_chunks = len(bounds) - 1
    grads = [np.zeros(model.n_params) if want_grad else np.zeros(0) for _ in range(n_chunks)]

    def run(c):
        return sparse_chunk_logz_grad(w, st, dt, sp, bounds[c], bounds[c + 1], grads[c], want_grad)

    if n_chunks == 1:
        logz = [run(0)]
    else:
        with ThreadPoolExecutor(max_workers=n_chunks) as pool:
            logz = list(pool.map(run, range(n_chunks)))
    loss = float(sum(logz) - dot(w, model._emp))
    if not want_grad:
        return loss, None
    g = grads[0]
    for c in range(1, n_chunks):
        g += grads[c]
    g -= model._emp
    return loss, g


def sparse_decode(space, data, w, fixed=None, ones=None):
    """Viterbi label ids and path scores by the sparse kernel (same output as
    ``spargel.models.crf.decode``)."""
    from .crf import data_tuple

    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    if fixed is None:
        fixed = np.full(data.n_tokens, -1, dtype=np.int32)
    out = np.empty(data.n_tokens, dtype=np.int32)
    scores = np.empty(data.n_sequences)
    sparse_decode_all(w, st, dt, sparse_structure(w, st, ones), fixed, out, scores)
    return out, scores


def sparse_logz(space, data, w):
    """log Z of every sequence by the sparse forward recursion."""
    from .crf import data_tuple

    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    sp = sparse_structure(w, st)
    out = np.empty(data.n_sequences)
    dummy = np.zeros(0)
    for s in range(data.n_sequences):
        out[s] = sparse_chunk_logz_grad(w, st, dt, sp, s, s + 1, dummy, False)
    return out
