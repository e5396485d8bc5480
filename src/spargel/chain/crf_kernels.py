"""Compiled kernels of the first-order linear-chain CRF: what is specific to its
features (emission scores, bigram-attribute corrections, gold scores, scattering the
expectations into the gradient). Inference itself is :mod:`spargel.chain.inference`;
the batch and prediction kernels of both orders are :mod:`spargel.chain.batch_kernels`.

Two named tuples of flat arrays describe a model (read by name in the kernels):

``space = Space(L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index)``
    the parameter layout (:class:`~spargel.data.feature_space.FeatureSpace`): unigram
    attribute ``a`` owns weights ``k`` in ``u_ptr[a]:u_ptr[a+1]`` for labels ``u_lab[k]``;
    bigram attribute ``a`` owns weights ``b_base + k`` for label pairs ``b_pair[k] = prev *
    L + cur``; the transition weight of pair ``t_pair[k]`` is ``w[t_base + k]`` and
    ``t_index[pair]`` is that ``k`` (or -1).

``data = Data(seq_ptr, uni_ptr, uni_ids, uni_vals, big_ptr, big_ids, big_vals, labels)``
    a :class:`~spargel.data.dataset.SequenceData` as a tuple
    (:mod:`spargel.chain.kernel_data`).

The unigram features are read through a second, SIMD-friendly view, the ``aux`` tuple
(a :class:`~spargel.chain.kernel_data.Aux`: ``Lp, binary, dptr, drows, dval, eptr, ek,
evals, Wd, dnz, el``; built once per data set
in numpy by :func:`spargel.chain.crf.token_lists`, refreshed per weight vector by
:func:`refresh_weights`):

* label vectors are padded to ``Lp`` (|Y| rounded up to ``chain.LANES``) with zeros;
* attributes that carry many labels ("dense" ones) get a padded row ``Wd[r]`` of weights
  (zero for absent labels), so their emission and gradient work is a fixed-length
  vector add; ``dnz[r]`` says whether the row has a non-zero weight at all;
* per token, ``drows[dptr[t]:dptr[t+1]]`` are the dense rows of its attributes and
  ``ek[eptr[t]:eptr[t+1]]`` the weight indices of its other attributes (``el`` their
  labels, read as a stream rather than gathered from ``u_lab``); ``dval`` /
  ``evals`` hold the attribute values unless all are 1 (``binary``).

Bigram attributes become position corrections of the chain through a *bigram list*
``bl = (ptr, pair, base, v, bi, bj, bc, amat)`` (a
:class:`~spargel.chain.kernel_data.BigramList`): attribute ``a`` contributes the weights
``v[base + e]`` for label pairs ``pair[e]``, ``e`` in ``ptr[a]:ptr[a+1]``, zero weights
skipped (``bi``, ``bj``, ``bc``: see :func:`compact_bigrams`; empty in a raw list). Batch kernels get a list compacted once per weight vector by
:func:`compact_bigrams` (only the non-zero weights: the exp(λ)-1 trick of Sokolovska et
al. 2010: a position costs its non-zero pairs, not |Y|²); SGD passes the space's own
layout and its live weights.

Weights are read as ``w_k = a * v_k`` (``a`` a global scale factor; with a 0/1 mask ``m``,
only where ``m[k] = 1``): the batch gradient passes ``a = 1`` and no mask, SGD its lazily
scaled weights.
"""

import math

import numpy as np
from numba import njit

from ..core import lazy_l1 as Z
from ..core.jit import inner, kernel

from . import inference as C
from .kernel_data import LogWork, Work, correction_lists

FAST = C.FAST


def order_flags(space):
    """The chain's order as the two flags ``(first, second)`` that kernels written for
    both orders take: ``(True, None)`` at order 1, ``(None, True)`` at order 2. numba
    compiles no code under a test that an argument ``is not None`` when that argument is
    None (and compiles it when it is anything else), so each order's kernels hold only
    that order's code."""
    return (None, True) if getattr(space, "order", 1) == 2 else (True, None)


# --------------------------------------------------------------------------- layout views
@kernel()
def refresh_weights(w, space, d_attr, Wd, dnz):
    """Fill the padded dense rows Wd and their non-zero flags dnz from w."""
    u_ptr, u_lab = space.u_ptr, space.u_lab
    for r in range(len(d_attr)):
        a = d_attr[r]
        Wd[r, :] = 0.0
        nz = 0
        for k in range(u_ptr[a], u_ptr[a + 1]):
            Wd[r, u_lab[k]] = w[k]
            if w[k] != 0.0:
                nz = 1
        dnz[r] = nz


@kernel()
def row_flags(Wd, dnz):
    """dnz[r] = 1 when row r of Wd has a non-zero entry (rows that are the weights' own,
    :func:`spargel.chain.crf.full_rows`)."""
    for r in range(Wd.shape[0]):
        nz = 0
        for y in range(Wd.shape[1]):
            if Wd[r, y] != 0.0:
                nz = 1
                break
        dnz[r] = nz


# --------------------------------------------------------------------------- per sequence
@inner(fastmath=FAST)
def emissions(w, space, aux, lo, hi, E):
    """E[t - lo, :Lp] = unigram scores of token t (padded lanes 0), from the aux view."""
    Lp, binary, dptr, drows, dval = aux.Lp, aux.binary, aux.dptr, aux.drows, aux.dval
    eptr, ek, evals, Wd, dnz, el = aux.eptr, aux.ek, aux.evals, aux.Wd, aux.dnz, aux.el
    for t in range(lo, hi):
        Er = E[t - lo]
        for y in range(Lp):
            Er[y] = 0.0
        if binary:
            for j in range(dptr[t], dptr[t + 1]):
                r = drows[j]
                if dnz[r]:
                    for y in range(Lp):
                        Er[y] += Wd[r, y]
            for e in range(eptr[t], eptr[t + 1]):
                Er[el[e]] += w[ek[e]]
        else:
            for j in range(dptr[t], dptr[t + 1]):
                r = drows[j]
                if dnz[r]:
                    v = dval[j]
                    for y in range(Lp):
                        Er[y] += v * Wd[r, y]
            for e in range(eptr[t], eptr[t + 1]):
                Er[el[e]] += evals[e] * w[ek[e]]


# below this summed bigram score a position lists its whole transition matrix
# (1 + expm1(-12) keeps all but ~5 of 16 digits)
CANCEL_LIMIT = 12.0


# an attribute whose non-zero bigram weights number at least S * Sp / MAT_SHARE gets a
# stored dense matrix (chain.MAT) where a slot is free: a scattered update per correction
# then costs more than the vectorised dense step
MAT_SHARE = 8


@kernel()
def compact_bigrams(w, space, trans, keep_zeros, bl, slot, mats, matsT, mscores):
    """The bigram list (see the module documentation) of the weights w: per attribute its
    non-zero weights (all of them with ``keep_zeros``: the classic dense computation,
    every pair of a firing attribute at every position), with their pairs' labels ``(bi, bj)`` and the correction ``bc =
    Mbase * expm1(w)`` they make at a position with that attribute alone, at value 1
    (``trans`` the chain's structure at w). ``bl`` is filled in place (its arrays have
    room for every bigram weight). An attribute with a matrix slot (``slot[at] >= 0``)
    and many non-zero weights (see :data:`MAT_SHARE`) also gets its position factor
    ``M[i, j] = Mbase[i, j] exp(w_ij)`` stored in ``mats[slot]`` (transposed in ``matsT``,
    raw scores ``T_ij + w_ij`` in ``mscores[slot][j * L + i]``, their least and largest in
    ``mscores[slot][L * L]`` and ``[L * L + 1]``); ``bl.amat[at]`` says which
    attributes have one (-1: none)."""
    fv = trans.fv
    L, b_ptr, b_pair, b_base = space.L, space.b_ptr, space.b_pair, space.b_base
    bptr, bpair, bw, bi, bj, bc, amat = bl.ptr, bl.pair, bl.v, bl.bi, bl.bj, bl.bc, bl.amat
    Sp = mats.shape[1] if len(mats) else 0
    q = 0
    bptr[0] = 0
    for at in range(len(b_ptr) - 1):
        q0 = q
        for e in range(b_ptr[at], b_ptr[at + 1]):
            x = w[b_base + e]
            if x != 0.0 or keep_zeros:
                p = b_pair[e]
                i = p // L
                j = p - i * L
                bpair[q] = p
                bw[q] = x
                bi[q] = i
                bj[q] = j
                bc[q] = C.base_entry(trans, i, j, j * L + i) * math.expm1(x)
                q += 1
        bptr[at + 1] = q
        amat[at] = -1
        if len(slot) > 0 and slot[at] >= 0 and (q - q0) * MAT_SHARE >= L * Sp:
            r = slot[at]
            M, MT, LT = mats[r], matsT[r], mscores[r]
            for i in range(L):
                for j in range(L):
                    M[i, j] = C.base_entry(trans, i, j, j * L + i)
                    LT[j * L + i] = fv[j * L + i]
            for e in range(q0, q):
                k = bj[e] * L + bi[e]
                # Mbase * exp(w), not Mbase + Mbase * expm1(w), which cancels for w << 0
                M[bi[e], bj[e]] *= math.exp(bw[e])
                LT[k] = fv[k] + bw[e]
            lo = np.inf
            hi = -np.inf
            for i in range(L):
                for j in range(L):
                    MT[j, i] = M[i, j]
                    x = LT[j * L + i]
                    if x > -np.inf:         # (-inf: a pair a constraint forbids)
                        lo = min(lo, x)
                        hi = max(hi, x)
            LT[L * L] = lo           # the range of the raw scores (chain.factor_range)
            LT[L * L + 1] = hi
            amat[at] = r


@inner()
def corrections(m, a, bl, data, lo, hi, trans, corr, acc, mark, need, amat):
    """The chain corrections of tokens lo+1..hi-1 from the bigram list ``bl`` (weights
    read as ``a * v`` where the mask ``m`` allows, see the module documentation) of their
    bigram attributes, into the :class:`~spargel.chain.kernel_data.Corrections` ``corr``
    (positions relative to lo); ``need[t - lo]`` = 1 where the position has bigram attributes (its pair
    marginals are needed for their gradient). A position with a summed score below
    ``-CANCEL_LIMIT`` (under a ONES structure also one whose pair's transition score
    plus summed score is) lists its whole matrix (``chain.FULL``), so no ``1 + expm1``
    cancels. ``acc`` / ``mark`` are |Y|^2 scratch left zeroed.

    A position with one attribute at value 1 copies that attribute's list when the list
    carries its labels and corrections (a compacted list: ``bc`` not empty), or names the
    attribute's stored matrix (``chain.MAT``) when ``amat[at] >= 0`` (``amat`` empty: no
    matrices; see :func:`compact_bigrams`)."""
    L = trans.S
    # under ONES the base entry is exp(T) itself: 1 + expm1(T) + exp(T) expm1(v) cancels
    # when T + v is strongly negative too
    ones = trans.kind == C.ONES
    fv = trans.fv
    b_ptr, b_pair, b_base, v, bi, bj, bc = bl.ptr, bl.pair, bl.base, bl.v, bl.bi, bl.bj, bl.bc
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    cptr, ci, cj, cc, cv, ck = corr.ptr, corr.src, corr.dst, corr.factor, corr.score, corr.pair
    n = hi - lo
    q = 0
    cptr[0] = 0
    need[0] = 0
    for t in range(1, n):
        tok = lo + t
        cptr[t] = q
        j0, j1 = big_ptr[tok], big_ptr[tok + 1]
        need[t] = 1 if j1 > j0 else 0
        q0 = q
        at = big_ids[j0] if j1 > j0 else -1
        if j1 - j0 == 1 and big_vals[j0] == 1.0 and len(amat) > 0 and amat[at] >= 0:
            ci[q], cj[q], cc[q], cv[q], ck[q] = C.MAT, amat[at], 0.0, 0.0, 0
            q += 1
            continue
        if j1 - j0 == 1 and big_vals[j0] == 1.0 and len(bc) > 0:
            lowest = 0.0
            for e in range(b_ptr[at], b_ptr[at + 1]):
                x = v[b_base + e]
                k = bj[e] * L + bi[e]
                ci[q], cj[q], cv[q], ck[q], cc[q] = bi[e], bj[e], x, k, bc[e]
                lowest = min(lowest, x)
                if ones:
                    lowest = min(lowest, x + fv[k])
                q += 1
            if lowest >= -CANCEL_LIMIT:
                continue
            q = q0                    # merged below, which lists the whole matrix
        for jj in range(j0, j1):
            at = big_ids[jj]
            x = big_vals[jj]
            for e in range(b_ptr[at], b_ptr[at + 1]):
                wk = Z.weight(v, m, a, b_base + e)
                if wk == 0.0 and len(bc) == 0:       # (a compacted list keeps the zeros it has)
                    continue
                p = b_pair[e]
                if mark[p] == 0:
                    mark[p] = 1
                    ci[q] = p // L
                    cj[q] = p - (p // L) * L
                    acc[p] = x * wk
                    q += 1
                else:
                    acc[p] += x * wk
        lowest = 0.0
        for e in range(q0, q):
            x = acc[ci[e] * L + cj[e]]
            if x < lowest:
                lowest = x
            if ones:
                lowest = min(lowest, x + fv[cj[e] * L + ci[e]])
        if lowest < -CANCEL_LIMIT:
            # the whole matrix: a sentinel, then every pair (i, j), list index k = j * L + i
            for e in range(q0, q):
                mark[ci[e] * L + cj[e]] = 0
            ci[q0] = C.FULL
            cj[q0] = 0
            cc[q0] = 0.0
            cv[q0] = 0.0
            ck[q0] = 0
            q = q0 + 1
            for j in range(L):
                for i in range(L):
                    p = i * L + j
                    x = acc[p]
                    k = j * L + i
                    ci[q] = i
                    cj[q] = j
                    cv[q] = x
                    ck[q] = k
                    cc[q] = C.base_entry(trans, i, j, k) * math.exp(x)
                    acc[p] = 0.0
                    q += 1
            continue
        for e in range(q0, q):
            i, j = ci[e], cj[e]
            p = i * L + j
            x = acc[p]
            k = j * L + i
            cv[e] = x
            ck[e] = k
            cc[e] = C.base_entry(trans, i, j, k) * math.expm1(x)
            acc[p] = 0.0
            mark[p] = 0
    cptr[n] = q


@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def add_bigram_counts(space, data, t, marg, coef, g):
    """g += coef * the counts of token t's bigram weights: each weight of each bigram
    attribute of t times its value and ``marg[pair]`` (the pair marginals of t for a
    first-order chain, the state marginals for a second-order one, whose states are
    label pairs)."""
    b_ptr, b_pair, b_base = space.b_ptr, space.b_pair, space.b_base
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    for j in range(big_ptr[t], big_ptr[t + 1]):
        a = big_ids[j]
        v = coef * big_vals[j]
        for k in range(b_ptr[a], b_ptr[a + 1]):
            g[b_base + k] += v * marg[b_pair[k]]


@inner(fastmath=FAST)
def scatter(space, data, aux, lo, hi, gamma, P, need, coef, g, Gd):
    """g / Gd += coef * expected counts of tokens lo..hi-1: unigram ones from the point
    marginals ``gamma``, bigram ones from the pair marginals ``P[t - lo]`` where needed."""
    Lp, binary, dptr, drows, dval = aux.Lp, aux.binary, aux.dptr, aux.drows, aux.dval
    eptr, ek, evals, el = aux.eptr, aux.ek, aux.evals, aux.el
    for t in range(hi - 1, lo - 1, -1):          # last tokens first: their rows are still cached
        marg = gamma[t - lo]
        if binary:
            for j in range(dptr[t], dptr[t + 1]):
                r = drows[j]
                for y in range(Lp):
                    Gd[r, y] += coef * marg[y]
            for e in range(eptr[t], eptr[t + 1]):
                g[ek[e]] += coef * marg[el[e]]
        else:
            for j in range(dptr[t], dptr[t + 1]):
                v = coef * dval[j]
                r = drows[j]
                for y in range(Lp):
                    Gd[r, y] += v * marg[y]
            for e in range(eptr[t], eptr[t + 1]):
                g[ek[e]] += coef * evals[e] * marg[el[e]]
        if P is not None:
            if t > lo and need[t - lo]:
                add_bigram_counts(space, data, t, P[t - lo], coef, g)


@inner()
def gold_score(v, m, a, space, data, s, E):
    """Score of the gold labels of sequence s at the weights ``lazy_l1.weight(v, m, a, .)`` (E
    holds its emission rows)."""
    L, b_ptr, b_pair, b_base, t_base, t_index = space.L, space.b_ptr, space.b_pair, space.b_base, space.t_base, space.t_index
    seq_ptr, big_ptr, big_ids, big_vals, labels = data.seq_ptr, data.big_ptr, data.big_ids, data.big_vals, data.labels
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    total = E[0, labels[lo]]
    for t in range(lo + 1, hi):
        pair = labels[t - 1] * L + labels[t]
        total += E[t - lo, labels[t]]
        ti = t_index[pair]
        if ti >= 0:
            total += Z.weight(v, m, a, t_base + ti)
        for j in range(big_ptr[t], big_ptr[t + 1]):
            at = big_ids[j]
            for k in range(b_ptr[at], b_ptr[at + 1]):
                if b_pair[k] == pair:
                    total += big_vals[j] * Z.weight(v, m, a, b_base + k)
                    break
    return total


@njit(cache=True, nogil=True, inline="always")
def span(seq_ptr, order, r):
    """``(s, lo, hi)`` of the r-th sequence of ``order``: its id and its tokens lo..hi-1."""
    s = order[r]
    return s, seq_ptr[s], seq_ptr[s + 1]


# --------------------------------------------------------------------------- buffers
def max_length(seq_ptr, order):
    return max(1, int(np.max(seq_ptr[order + 1] - seq_ptr[order]))) if len(order) else 1


def log_buffers(L, Lp, maxlen):
    """Scratch of the log-space and decoding kernels (a :class:`~spargel.chain.kernel_data.LogWork`)."""
    return LogWork(np.empty((maxlen, L)), np.empty((maxlen, L)), np.zeros((maxlen, Lp)), np.empty(L * L),
                   np.empty(2 * L + 1), np.zeros((maxlen, L), np.int32))


def work_buffers(L, Lp, maxlen, n_corr, pairs):
    """Scratch of one thread (allocated here, in Python: kernels allocate nothing, which
    keeps their compilation short): a :class:`~spargel.chain.kernel_data.Work` whose
    first fields are (E, psi, alpha, beta, scale, shift, tmp, kbuf, P, need, cacc, mark,
    corr, nomask). ``n_corr``: capacity of the correction lists ``corr``; ``pairs``: allocate the
    pair-marginal rows (models with bigram attributes; else P is None: the kernels then
    compile without the pair-marginal code). ``nomask`` is an empty float array: the
    "no mask" of :func:`weight`. The second order's fields are empty (``U`` is ``E``)."""
    corr = correction_lists(maxlen, max(n_corr, 1))
    P = np.zeros((maxlen, L * L)) if pairs else None
    E = np.zeros((maxlen, Lp))
    return Work(E, np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)),
                np.zeros(maxlen), np.zeros(maxlen), np.zeros(Lp), C.exp_scratch(maxlen, Lp), P,
                np.zeros(maxlen, np.uint8), np.zeros(L * L), np.zeros(L * L, np.uint8), corr, np.zeros(0),
                E, np.zeros((1, 1)), np.zeros(0), np.zeros(0), np.zeros(2))


@kernel()
def correction_capacity(space, data, cnt, order):
    """Largest number of corrections a sequence of ``order`` can need: a position with
    bigram attributes may list its whole matrix (|Y|^2 + 1 entries)."""
    L = space.L
    seq_ptr, big_ptr, big_ids = data.seq_ptr, data.big_ptr, data.big_ids
    best = 0
    for r in range(len(order)):
        s = order[r]
        total = 0
        for t in range(seq_ptr[s] + 1, seq_ptr[s + 1]):
            here = 0
            for j in range(big_ptr[t], big_ptr[t + 1]):
                here += cnt[big_ids[j]]
            if here > 0:
                total += L * L + 1
        best = max(best, total)
    return best


# --------------------------------------------------------------------------- batch pass
@inner()
def clamp_labels(E, labels, lo, n, L):
    """Scores of every label but the known one to -inf (-1: not known; constrained
    decoding and the numerator of partially labelled sequences)."""
    for t in range(n):
        f = labels[lo + t]
        if f >= 0:
            for y in range(L):
                if y != f:
                    E[t, y] = -np.inf


@inner()
def add_scaled_acc(acc, part, c):
    """acc += c * part (transition accumulators); part is left zeroed."""
    for i in range(acc[0].shape[0]):
        for y in range(acc[0].shape[1]):
            acc[0][i, y] += c * part[0][i, y]
            part[0][i, y] = 0.0
    for q in range(len(acc[1])):
        acc[1][q] += c * part[1][q]
        part[1][q] = 0.0
    for q in range(len(acc[2])):
        acc[2][q] += c * part[2][q]
        part[2][q] = 0.0
