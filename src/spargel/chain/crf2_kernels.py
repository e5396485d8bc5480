"""Compiled kernels of the second-order linear-chain CRF: what is specific to its
features (pair-state scores, gold scores, scattering the expectations into the
gradient). Inference itself is :mod:`spargel.chain.inference`, over the ``S = (L + 1) L``
pair states of :mod:`spargel.chain.crf2_space` (state ``a * L + b``: previous label
``a``, ``L`` being the begin marker, and label ``b``).

The ``space``, ``data`` and ``aux`` tuples are those of the first-order kernels
(:mod:`spargel.chain.crf_kernels`), read with the order-2 codes: ``b_pair`` holds pair
codes (= state ids), ``t_pair`` triple codes (= source state ``* L +`` label) and
``t_index`` maps a triple code to its weight (or -1).

Per sequence of ``n`` tokens the chain sees

* state scores ``E[t, (a, b)] = U_t[b] + P_t[(a, b)]``: the unigram scores of label ``b``
  (computed by ``crf_kernels.emissions`` on the padded rows of ``aux``) plus the pair
  attributes' weights of the pair ``(a, b)``; at ``t = 0`` only the states ``(BOS, b)``
  are allowed and at ``t > 0`` only ``(a, b)`` with ``a`` a label (others ``-inf``, so
  that they never set the scale of a row);
* the triple weights as transitions ``(a, b) -> (b, c)``: a ``PAIR_ONES`` structure
  (``1 + expm1(T)`` on the triples of ``t_pair``, cost ``O(S + |t_pair|)`` per position)
  or a ``LIST`` of every allowed transition (cost ``(L + 1) L^2``); both list the
  allowed transitions by destination then source, so the triple ``(a, b, c)`` has list
  index ``(b * L + c) * (L + 1) + a`` in either;
* no position corrections (every observation feature is a state score).
"""

import math

import numpy as np
from numba import njit

from ..core import lazy_l1 as Z
from ..core.jit import inner

from . import inference as C
from . import crf_kernels as K
from .kernel_data import LogWork, Work, correction_lists

FAST = C.FAST
# the least factor of an allowed state (a product of two factors of at least exp(-708)
# may underflow; 0 would read as a state that is not allowed, see chain.forward)
TINY = 2.2250738585072014e-308


@njit(cache=True, nogil=True, inline="always")
def list_index(code, L):
    """Chain list index of the transition of triple ``code``."""
    src = code // L
    c = code - src * L
    a = src // L
    b = src - a * L
    return (b * L + c) * (L + 1) + a


# --------------------------------------------------------------------------- per sequence
@inner(fastmath=FAST)
def state_scores(w, space, data, aux, lo, hi, U, E):
    """E[t - lo, :S] = scores of the pair states at tokens lo..hi-1 (see the module
    documentation); U receives the unigram rows."""
    K.emissions(w, space, aux, lo, hi, U)
    pair_scores(w, w[:0], 1.0, space, data, lo, hi, U, E)


@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def pair_scores(v, m, a, space, data, lo, hi, U, E):
    """E[t - lo, :S] = U[t - lo, b] on the allowed states plus the pair attributes'
    weights ``lazy_l1.weight(v, m, a, .)`` (-inf on the other states)."""
    L, b_ptr, b_pair, b_base = space.L, space.b_ptr, space.b_pair, space.b_base
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    for t in range(lo, hi):
        row = E[t - lo]
        u = U[t - lo]
        first = t == lo
        for p in range(L + 1):
            if (p == L) == first:
                for b in range(L):
                    row[p * L + b] = u[b]
            else:
                for b in range(L):
                    row[p * L + b] = -np.inf
        for j in range(big_ptr[t], big_ptr[t + 1]):
            at = big_ids[j]
            x = big_vals[j]
            for k in range(b_ptr[at], b_ptr[at + 1]):
                row[b_pair[k]] += x * Z.weight(v, m, a, b_base + k)


@inner()
def shared_pair_attribute(data, lo, hi):
    """The pair attribute that every token of lo..hi-1 carries alone, with value 1 (the
    plain label-pair weights, :func:`~spargel.chain.crf2_space.add_pair_bias`); -1 when
    no token carries a pair attribute; -2 otherwise."""
    big_ptr, big_ids, big_vals = data.big_ptr, data.big_ids, data.big_vals
    if big_ptr[hi] == big_ptr[lo]:
        return -1
    found = big_ids[big_ptr[lo]]
    for t in range(lo, hi):
        j = big_ptr[t]
        if big_ptr[t + 1] != j + 1 or big_ids[j] != found or big_vals[j] != 1.0:
            return -2
    return found


@inner(fastmath=FAST)
def pair_factors(w, space, attr, eB):
    """``eB[s] = exp(B[s] - max B)`` over the pair states, ``B`` the weights of the pair
    attribute ``attr`` (-1: none, all zero); returns ``max B``."""
    L, b_ptr, b_pair, b_base = space.L, space.b_ptr, space.b_pair, space.b_base
    S = (L + 1) * L
    for s in range(len(eB)):
        eB[s] = 0.0
    if attr >= 0:
        for k in range(b_ptr[attr], b_ptr[attr + 1]):
            eB[b_pair[k]] += w[b_base + k]
    return exp_less_max(eB, S)


@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def exp_less_max(x, n):
    """``x[:n] = exp(x[:n] - max x[:n])`` in place, at least exp(-708) (never 0: see
    ``chain.exp_nonpos``); returns the max."""
    m = x[0]
    for i in range(1, n):
        if x[i] > m:
            m = x[i]
    for i in range(n):
        x[i] = math.exp(max(x[i] - m, -708.0))
    return m


@inner(fastmath=FAST)
def factored_rows(U, eB, bmax, n, L, psi, shift):
    """``psi[t, (a, b)] = exp(U[t, b] - max U[t]) eB[(a, b)]`` on the allowed states
    (``a`` the begin marker at t = 0, a label after; 0 elsewhere) and ``shift[t] = max
    U[t] + bmax``: the scaled state factors of a sequence whose pair scores are the same
    at every token, for L exponentials a token instead of S. U is overwritten."""
    LL = L * L
    Sp = psi.shape[1]
    for t in range(n):
        u = U[t]
        m = exp_less_max(u, L)
        row = psi[t]
        if t == 0:
            for s in range(LL):
                row[s] = 0.0
            for b in range(L):
                row[LL + b] = max(u[b] * eB[LL + b], TINY)
        else:
            for a in range(L):
                for b in range(L):
                    row[a * L + b] = max(u[b] * eB[a * L + b], TINY)
            for s in range(LL, LL + L):
                row[s] = 0.0
        for s in range(LL + L, Sp):
            row[s] = 0.0
        shift[t] = m + bmax


@inner(fastmath=FAST)
def scaled_rows(w, space, data, aux, lo, hi, buf, cache, fixed, clamp, trans):
    """The scaled state factors ``psi`` and shifts of tokens lo..hi-1 (into ``buf``):
    :func:`factored_rows` when their pair scores are shared (``cache`` = [attribute,
    its max score] of the factors held in ``buf.eB``; start it at [-3, 0] for new
    weights), else the state scores, the labels ``fixed`` clamped when ``clamp``, a
    constrained chain's start and end scores (``trans``, ``chain.end_scores``), and
    their exponentials. Returns the shared attribute (>= -1), or -2."""
    L = space.L
    U, E, psi, shift, kbuf, eB = buf.U, buf.E, buf.psi, buf.shift, buf.kbuf, buf.eB
    n = hi - lo
    attr = -2 if clamp or len(trans.start) > 0 else shared_pair_attribute(data, lo, hi)
    if attr >= -1:
        if cache[0] != attr:
            cache[1] = pair_factors(w, space, attr, eB)
            cache[0] = attr
        K.emissions(w, space, aux, lo, hi, U)
        factored_rows(U, eB, cache[1], n, L, psi, shift)
        return attr
    state_scores(w, space, data, aux, lo, hi, U, E)
    if clamp:
        constrain(E, fixed, lo, n, L)
    C.end_scores(E, n, trans)
    C.exp_rows(E, psi, shift, n, (L + 1) * L, kbuf)
    return -2


@inner()
def constrain(E, fixed, lo, n, L):
    """States whose label is not the forced one (``fixed[t] >= 0``) get ``-inf``."""
    for t in range(n):
        f = fixed[lo + t]
        if f >= 0:
            for s in range((L + 1) * L):
                if s % L != f:
                    E[t, s] = -np.inf


@inner(fastmath=FAST)
def label_marginals(gamma, n, L, lm):
    """lm[t, b] = sum over a of gamma[t, (a, b)] (padding lanes left zero)."""
    for t in range(n):
        row = lm[t]
        for b in range(L):
            row[b] = 0.0
        for a in range(L + 1):          # row by row: contiguous, vectorised
            for b in range(L):
                row[b] += gamma[t, a * L + b]


@inner(fastmath=FAST)
def scatter(space, data, aux, lo, hi, gamma, lm, need0, coef, g, Gd, gB, shared):
    """g / Gd += coef * expected counts of the unigram and pair weights of tokens
    lo..hi-1, from the state marginals ``gamma``; ``lm`` is scratch for the label
    marginals, ``need0`` a zero array (unused: no pair marginals are read). With
    ``shared`` (the tokens' only pair attribute is the shared one of
    :func:`scaled_rows`) its counts are summed over the tokens in ``gB`` instead (one
    vectorised add of the state marginals a token) and reach ``g`` in
    :func:`flush_shared`."""
    label_marginals(gamma, hi - lo, space.L, lm)
    K.scatter(space, data, aux, lo, hi, lm, None, need0, coef, g, Gd)     # (no pair marginals)
    if shared:
        S = (space.L + 1) * space.L
        for t in range(hi - lo):
            row = gamma[t]
            for s in range(S):
                gB[s] += coef * row[s]
    else:
        for t in range(lo, hi):
            K.add_bigram_counts(space, data, t, gamma[t - lo], coef, g)


@inner()
def flush_shared(space, attr, g, gB):
    """g += the counts gathered by :func:`scatter` for the pair attribute ``attr``
    (value 1 at every token); gB is zeroed."""
    b_ptr, b_pair, b_base = space.b_ptr, space.b_pair, space.b_base
    if attr >= 0:
        for k in range(b_ptr[attr], b_ptr[attr + 1]):
            g[b_base + k] += gB[b_pair[k]]
    for s in range(len(gB)):
        gB[s] = 0.0


@inner()
def gold_score(v, m, a, space, data, s, E):
    """Score of the gold labels of sequence s at the weights ``weight(v, m, a, .)`` (E
    holds its state scores)."""
    L, t_base, t_index = space.L, space.t_base, space.t_index
    seq_ptr, labels = data.seq_ptr, data.labels
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    prev2, prev = L, L
    total = 0.0
    for t in range(lo, hi):
        y = labels[t]
        total += E[t - lo, prev * L + y]
        if t > lo:
            ti = t_index[(prev2 * L + prev) * L + y]
            if ti >= 0:
                total += Z.weight(v, m, a, t_base + ti)
        prev2, prev = prev, y
    return total


# --------------------------------------------------------------------------- buffers
def work_buffers(L, maxlen):
    """Scratch of one thread: a :class:`~spargel.chain.kernel_data.Work` with the unigram
    rows ``U`` apart from the state scores ``E``, label marginals ``lm``, the shared pair
    factors ``eB`` of :func:`scaled_rows` and their counts ``gB`` (:func:`scatter`);
    ``corr`` are the (empty) position corrections, ``P`` is 1 x 1 (no pair marginals
    are read) and the corrections' scratch is empty."""
    Lp = C.padded(L)
    S = (L + 1) * L
    Sp = C.padded(S)
    corr = correction_lists(maxlen, 0)
    return Work(np.zeros((maxlen, Sp)), np.zeros((maxlen, Sp)), np.zeros((maxlen, Sp)), np.zeros((maxlen, Sp)),
                np.zeros(maxlen), np.zeros(maxlen), np.zeros(Sp), C.exp_scratch(maxlen, Sp), np.zeros((1, 1)),
                np.zeros(maxlen, np.uint8), np.zeros(0), np.zeros(0, np.uint8), corr, np.zeros(0),
                np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)), np.zeros(Sp), np.zeros(Sp), np.zeros(2))


def log_buffers(L, maxlen):
    """Scratch of the log-space and decoding kernels (a :class:`~spargel.chain.kernel_data.LogWork`)."""
    S = (L + 1) * L
    return LogWork(np.empty((maxlen, S)), np.empty((maxlen, S)), np.zeros((maxlen, C.padded(S))), np.empty(S * L),
                   np.empty(2 * S + L + 1), np.zeros((maxlen, S), np.int32))
