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
from ..core.jit import inner, kernel

from . import decoding as D
from . import inference as C
from . import crf_kernels as K

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
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
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
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
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
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
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
def scaled_rows(w, space, data, aux, lo, hi, buf, cache, fixed, clamp):
    """The scaled state factors ``psi`` and shifts of tokens lo..hi-1 (into ``buf``):
    :func:`factored_rows` when their pair scores are shared (``cache`` = [attribute,
    its max score] of the factors held in ``buf[13]``; start it at [-3, 0] for new
    weights), else the state scores, the labels ``fixed`` clamped when ``clamp``, and
    their exponentials. Returns the shared attribute (>= -1), or -2."""
    L = space[0]
    U, E, psi, shift, kbuf, eB = buf[0], buf[1], buf[2], buf[6], buf[8], buf[13]
    n = hi - lo
    attr = -2 if clamp else shared_pair_attribute(data, lo, hi)
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
    label_marginals(gamma, hi - lo, space[0], lm)
    K.scatter(space, data, aux, lo, hi, lm, None, need0, coef, g, Gd)     # (no pair marginals)
    if shared:
        S = (space[0] + 1) * space[0]
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
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    if attr >= 0:
        for k in range(b_ptr[attr], b_ptr[attr + 1]):
            g[b_base + k] += gB[b_pair[k]]
    for s in range(len(gB)):
        gB[s] = 0.0


@inner()
def gold_score(v, m, a, space, data, s, E):
    """Score of the gold labels of sequence s at the weights ``weight(v, m, a, .)`` (E
    holds its state scores)."""
    L, t_base, t_index = space[0], space[7], space[8]
    seq_ptr, labels = data[0], data[7]
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


@kernel()
def empirical_counts(space, data, order, sw, emp):
    """emp += feature counts of the gold label sequences ``order`` (unigram, pair,
    triple), each times its weight ``sw[s]`` (``sw`` empty: 1)."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    t_base, t_index = space[7], space[8]
    seq_ptr, uni_ptr, uni_ids, uni_vals = data[0], data[1], data[2], data[3]
    big_ptr, big_ids, big_vals, labels = data[4], data[5], data[6], data[7]
    for r in range(len(order)):
        s = order[r]
        c = sw[s] if len(sw) > 0 else 1.0
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        prev2, prev = L, L
        for t in range(lo, hi):
            y = labels[t]
            for j in range(uni_ptr[t], uni_ptr[t + 1]):
                a = uni_ids[j]
                for k in range(u_ptr[a], u_ptr[a + 1]):
                    if u_lab[k] == y:
                        emp[k] += c * uni_vals[j]
                        break
            pair = prev * L + y
            for j in range(big_ptr[t], big_ptr[t + 1]):
                a = big_ids[j]
                for k in range(b_ptr[a], b_ptr[a + 1]):
                    if b_pair[k] == pair:
                        emp[b_base + k] += c * big_vals[j]
                        break
            if t > lo:
                ti = t_index[(prev2 * L + prev) * L + y]
                if ti >= 0:
                    emp[t_base + ti] += c
            prev2, prev = prev, y


# --------------------------------------------------------------------------- buffers
def work_buffers(L, maxlen):
    """Scratch of one thread: (U, E, psi, alpha, beta, scale, shift, tmp, kbuf, lm,
    need, P, corr, eB, gB). ``corr`` are the (empty) position corrections, ``eB`` the
    shared pair factors of :func:`scaled_rows`, ``gB`` their counts
    (:func:`scatter`)."""
    Lp = C.padded(L)
    S = (L + 1) * L
    Sp = C.padded(S)
    corr = (np.zeros(maxlen + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
            np.zeros(0), np.zeros(0, np.int64))
    return (np.zeros((maxlen, Lp)), np.zeros((maxlen, Sp)), np.zeros((maxlen, Sp)), np.zeros((maxlen, Sp)),
            np.zeros((maxlen, Sp)), np.zeros(maxlen), np.zeros(maxlen), np.zeros(Sp), C.exp_scratch(maxlen, Sp),
            np.zeros((maxlen, Lp)), np.zeros(maxlen, np.uint8), np.zeros((1, 1)), corr, np.zeros(Sp), np.zeros(Sp))


def log_buffers(L, maxlen):
    """Scratch of the log-space and decoding kernels: (la, lb, gamma, fv_t, cand, back)."""
    S = (L + 1) * L
    return (np.empty((maxlen, S)), np.empty((maxlen, S)), np.zeros((maxlen, C.padded(S))), np.empty(S * L),
            np.empty(2 * S + L + 1), np.zeros((maxlen, S), np.int32))


# --------------------------------------------------------------------------- batch pass
@kernel(allocates=True)
def chunk_logz_grad(w, space, data, aux, trans, order, want_grad, g, Gd, acc, failed, buf, sw, clamp, glob1):
    """``sum_s c_s log Z_s`` over the sequences ``order``, ``c_s`` their weight ``sw[s]``
    (``sw`` empty: 1); with want_grad, adds ``c_s`` times their expected unigram and
    pair counts to ``g`` / ``Gd`` and their triple counts to the transition accumulators
    ``acc`` (``chain.backward``; ``glob1`` is zeroed scratch of the length of
    ``acc[1]``). With ``clamp`` the partition functions are those of the known labels
    (label -1: unknown, summed over) and ``c_s`` is negated: the numerator of a partially
    labelled sequence. A sequence whose scaled recursion underflows is flagged in
    ``failed`` and skipped (see :func:`chunk_logz_grad_log`)."""
    L = space[0]
    S = (L + 1) * L
    seq_ptr, labels = data[0], data[7]
    psi, alpha, beta, scale, shift, tmp, lm, need, P, corr = buf[2:8] + buf[9:13]
    acc1 = (acc[0], glob1, acc[2])
    cache = np.array([-3.0, 0.0])
    total = 0.0
    for r in range(len(order)):
        s = order[r]
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        c = sw[s] if len(sw) > 0 else 1.0
        if clamp:
            c = -c
        shared = scaled_rows(w, space, data, aux, lo, hi, buf, cache, labels, clamp)
        logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
        if math.isnan(logz):
            failed[r] = 1
            continue
        total += c * logz
        if want_grad:
            if c == 1.0:
                C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc, need, P, tmp)
            else:
                C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc1, need, P, tmp)
                glob = acc[1]
                for q in range(len(glob)):
                    glob[q] += c * glob1[q]
                    glob1[q] = 0.0
            scatter(space, data, aux, lo, hi, alpha, lm, need, c, g, Gd, buf[14], shared >= -1)
    if want_grad:
        flush_shared(space, int(cache[0]), g, buf[14])
    return total


@kernel()
def chunk_logz_grad_log(w, space, data, aux, trans, order, want_grad, g, Gd, tcount, buf, lbuf, sw, clamp, tcount1):
    """:func:`chunk_logz_grad` in log space (for the sequences whose scaled recursion
    underflowed); the transition counts go straight to ``tcount`` (by list index;
    ``tcount1`` is zeroed scratch of the same length)."""
    L = space[0]
    seq_ptr, labels = data[0], data[7]
    U, E, scale, lm, need, P, corr = buf[0], buf[1], buf[5], buf[9], buf[10], buf[11], buf[12]
    la, lb, gamma, fv_t, cand = lbuf[0], lbuf[1], lbuf[2], lbuf[3], lbuf[4]
    total = 0.0
    for r in range(len(order)):
        s = order[r]
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        c = sw[s] if len(sw) > 0 else 1.0
        if clamp:
            c = -c
        state_scores(w, space, data, aux, lo, hi, U, E)
        if clamp:
            constrain(E, labels, lo, n, L)
        logz = C.forward_backward_log(E, n, trans, corr, la, lb, scale, gamma, tcount1, need, P, fv_t, cand)
        total += c * logz
        for k in range(len(tcount)):
            tcount[k] += c * tcount1[k]
            tcount1[k] = 0.0
        if want_grad and math.isfinite(logz):
            scatter(space, data, aux, lo, hi, gamma, lm, need, c, g, Gd, buf[14], False)
    return total


@kernel()
def finish_gradient(space, d_attr, Gd, tcount, emp, g):
    """g += dense-row expectations scattered to their weights and the triple counts
    (``tcount`` by chain list index); g -= empirical counts."""
    L, u_ptr, u_lab, t_pair, t_base = space[0], space[1], space[2], space[6], space[7]
    for r in range(len(d_attr)):
        a = d_attr[r]
        for k in range(u_ptr[a], u_ptr[a + 1]):
            g[k] += Gd[r, u_lab[k]]
    for k in range(len(t_pair)):
        g[t_base + k] += tcount[list_index(t_pair[k], L)]
    for k in range(len(g)):
        g[k] -= emp[k]


# --------------------------------------------------------------------------- prediction
@kernel()
def decode_all(w, space, data, aux, trans, fixed, out, scores, buf, lbuf):
    """Viterbi labels of every sequence into out (flat over tokens), path scores into
    scores; ``fixed[t] >= 0`` forces the label of token t."""
    L = space[0]
    seq_ptr = data[0]
    U, E, corr = buf[0], buf[1], buf[12]
    delta = buf[2]
    fv_t, back = lbuf[3], lbuf[5]
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        state_scores(w, space, data, aux, lo, hi, U, E)
        constrain(E, fixed, lo, n, L)
        scores[s] = D.viterbi(E, n, trans, corr, delta, back, fv_t, out[lo:hi])
        for t in range(lo, hi):
            out[t] = out[t] % L


@kernel(allocates=True)
def marginals_all(w, space, data, aux, trans, out, logz, failed, buf, tcount):
    """Label marginals of every token into out (n_tokens x L) and log Z per sequence by
    the scaled recursion; sequences where it underflows are flagged in ``failed``.
    ``tcount`` is scratch of the chain's list length."""
    L = space[0]
    S = (L + 1) * L
    seq_ptr = data[0]
    psi, alpha, beta, scale, shift, tmp, lm, need, P, corr = buf[2:8] + buf[9:13]
    acc = (P[:1, :1], tcount[:len(trans[6])], tcount)
    cache = np.array([-3.0, 0.0])
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        scaled_rows(w, space, data, aux, lo, hi, buf, cache, data[7], False)
        z = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
        logz[s] = z
        if math.isnan(z):
            failed[s] = 1
            continue
        C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc, need, P, tmp)
        label_marginals(alpha, n, L, lm)
        for t in range(n):
            for y in range(L):
                out[lo + t, y] = lm[t, y]


@kernel()
def marginals_log(w, space, data, aux, trans, order, out, logz, buf, lbuf, tcount):
    """:func:`marginals_all` in log space for the sequences ``order``."""
    L = space[0]
    seq_ptr = data[0]
    U, E, scale, lm, need, P, corr = buf[0], buf[1], buf[5], buf[9], buf[10], buf[11], buf[12]
    la, lb, gamma, fv_t, cand = lbuf[0], lbuf[1], lbuf[2], lbuf[3], lbuf[4]
    for r in range(len(order)):
        s = order[r]
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        state_scores(w, space, data, aux, lo, hi, U, E)
        logz[s] = C.forward_backward_log(E, n, trans, corr, la, lb, scale, gamma, tcount, need, P, fv_t, cand)
        label_marginals(gamma, n, L, lm)
        for t in range(n):
            for y in range(L):
                out[lo + t, y] = lm[t, y]


@kernel(allocates=True)        # chain.nbest allocates its lists
def nbest_one(w, space, data, aux, trans, s, fixed, K_, paths, scores, buf, lbuf):
    """The K best label sequences of sequence s (see ``chain.nbest``)."""
    L = space[0]
    seq_ptr = data[0]
    U, E, corr = buf[0], buf[1], buf[12]
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    n = hi - lo
    state_scores(w, space, data, aux, lo, hi, U, E)
    constrain(E, fixed, lo, n, L)
    found = D.nbest(E, n, trans, corr, K_, lbuf[3], paths, scores)
    for r in range(found):
        for t in range(n):
            paths[r, t] = paths[r, t] % L
    return found


@kernel()
def gold_scores(w, space, data, aux, order, out, buf):
    """Gold path score of every sequence of ``order`` into out."""
    seq_ptr = data[0]
    U, E = buf[0], buf[1]
    for r in range(len(order)):
        s = order[r]
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        state_scores(w, space, data, aux, lo, hi, U, E)
        out[r] = gold_score(w, w[:0], 1.0, space, data, s, E)
