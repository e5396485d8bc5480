"""Compiled kernels of the linear-chain CRF: scaled forward-backward, log Z,
marginals, gradient accumulation, Viterbi and n-best Viterbi.

Every kernel works on two tuples of flat arrays:

``space = (L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index)``
    the parameter layout. Unigram attribute ``a`` owns weights ``k`` in
    ``u_ptr[a]:u_ptr[a+1]`` for labels ``u_lab[k]``; bigram attribute ``a`` owns weights
    ``b_base + k`` for label pairs ``b_pair[k] = prev * L + cur``, ``k`` in
    ``b_ptr[a]:b_ptr[a+1]``; the transition weight of pair ``t_pair[k]`` is
    ``w[t_base + k]`` and ``t_index[pair]`` is that ``k`` (or -1).

``data = (seq_ptr, uni_ptr, uni_ids, uni_vals, big_ptr, big_ids, big_vals, labels)``
    a :class:`~spargel.data.dataset.SequenceData` as a tuple.

Forward-backward is scaled (each alpha row normalised, Rabiner-style); scores are
shifted by their maximum before ``exp``. When scaling underflows (huge weights) the
sequence is redone in log space, which is slower but cannot underflow.
"""

import math

import numpy as np
from numba import njit

NEG_INF = -np.inf
# Re-association lets LLVM vectorise the |Y|^2 dot products; NaN and inf keep their
# IEEE meaning (the kernels rely on them), so no 'fast' flags beyond these.
FAST = {"reassoc", "contract", "nsz", "arcp"}


# --------------------------------------------------------------------------- scores
@njit(cache=True, nogil=True)
def transition_matrix(w, space):
    """Dense (L*L,) transition scores from the weights (0 for absent pairs)."""
    L, t_pair, t_base = space[0], space[6], space[7]
    trans = np.zeros(L * L)
    for k in range(len(t_pair)):
        trans[t_pair[k]] = w[t_base + k]
    return trans


@njit(cache=True, nogil=True)
def emission_scores(w, space, data, lo, hi, E):
    """E[t - lo, y] = sum of the unigram weights firing at token t for label y."""
    u_ptr, u_lab = space[1], space[2]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    for t in range(lo, hi):
        row = E[t - lo]
        row[:] = 0.0
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            a = uni_ids[j]
            v = uni_vals[j]
            for k in range(u_ptr[a], u_ptr[a + 1]):
                row[u_lab[k]] += v * w[k]


@njit(cache=True, nogil=True, inline="always")
def has_bigram_attrs(data, lo, t):
    return t > lo and data[4][t + 1] > data[4][t]


@njit(cache=True, nogil=True)
def position_transitions(w, space, data, t, trans, out):
    """out = transition scores at token t: global transitions + bigram attributes of t."""
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    out[:] = trans
    for j in range(big_ptr[t], big_ptr[t + 1]):
        a = big_ids[j]
        v = big_vals[j]
        for k in range(b_ptr[a], b_ptr[a + 1]):
            out[b_pair[k]] += v * w[b_base + k]


@njit(cache=True, nogil=True)
def gold_score(w, space, data, lo, hi, E, trans):
    """Score of the gold label sequence of tokens lo..hi-1 (E already filled)."""
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    big_ptr, big_ids, big_vals, labels = data[4], data[5], data[6], data[7]
    s = E[0, labels[lo]]
    for t in range(lo + 1, hi):
        y = labels[t]
        pair = labels[t - 1] * L + y
        s += E[t - lo, y] + trans[pair]
        for j in range(big_ptr[t], big_ptr[t + 1]):
            a = big_ids[j]
            for k in range(b_ptr[a], b_ptr[a + 1]):
                if b_pair[k] == pair:
                    s += big_vals[j] * w[b_base + k]
                    break
    return s


# --------------------------------------------------------------------------- scaled forward-backward
@njit(cache=True, nogil=True)
def _exp_shift(src, dst):
    """dst = exp(src - max(src)); returns max(src)."""
    m = src.max()
    for i in range(len(src)):
        dst[i] = math.exp(src[i] - m)
    return m


@njit(cache=True, nogil=True)
def transpose_into(M, MT, L):
    for i in range(L):
        for j in range(L):
            MT[j * L + i] = M[i * L + j]


@njit(cache=True, nogil=True, fastmath=FAST)
def forward_scaled(w, space, data, lo, hi, E, trans, expTT, tmax, psi, alpha, scale, Mlog, Mexp):
    """Scaled forward pass. Fills psi (shifted exp emissions), alpha (rows sum to 1)
    and scale; returns log Z, or NaN when scaling underflowed. ``expTT`` is
    exp(T - tmax) transposed, so each alpha entry is a contiguous dot product."""
    L = space[0]
    n = hi - lo
    logz = 0.0
    m = _exp_shift(E[0], psi[0])
    c = psi[0].sum()
    for y in range(L):
        alpha[0, y] = psi[0, y] / c
    scale[0] = c
    logz += m + math.log(c)
    MT = expTT
    for t in range(1, n):
        shift = tmax
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
            shift = _exp_shift(Mlog, Mexp)
            transpose_into(Mexp, Mlog, L)
            MT = Mlog
        else:
            MT = expTT
        m = _exp_shift(E[t], psi[t])
        c = 0.0
        for j in range(L):
            acc = 0.0
            base = j * L
            for i in range(L):
                acc += alpha[t - 1, i] * MT[base + i]
            acc *= psi[t, j]
            alpha[t, j] = acc
            c += acc
        if not (c > 0.0) or not math.isfinite(c):
            return np.nan
        inv = 1.0 / c
        for j in range(L):
            alpha[t, j] *= inv
        scale[t] = c
        logz += m + shift + math.log(c)
    return logz


# --------------------------------------------------------------------------- log-space fallback
@njit(cache=True, nogil=True)
def _logsumexp(x):
    m = x.max()
    if m == NEG_INF:
        return NEG_INF
    s = 0.0
    for v in x:
        s += math.exp(v - m)
    return m + math.log(s)


@njit(cache=True, nogil=True)
def forward_backward_log(w, space, data, lo, hi, E, trans, la, lb, logc, Mlog, tmp):
    """Log-space alpha (la) and beta (lb), each row shifted by the log normaliser
    logc[t] of the forward pass (the log-domain twin of scaling, so values stay small
    on long sequences); returns log Z = sum(logc). Slower, but cannot underflow."""
    L = space[0]
    n = hi - lo
    la[0, :] = E[0]
    logc[0] = _logsumexp(la[0])
    la[0, :] -= logc[0]
    for t in range(1, n):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
        else:
            Mlog[:] = trans
        for j in range(L):
            for i in range(L):
                tmp[i] = la[t - 1, i] + Mlog[i * L + j]
            la[t, j] = _logsumexp(tmp) + E[t, j]
        logc[t] = _logsumexp(la[t])
        la[t, :] -= logc[t]
    lb[n - 1, :] = 0.0
    for t in range(n - 1, 0, -1):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
        else:
            Mlog[:] = trans
        for i in range(L):
            for j in range(L):
                tmp[j] = Mlog[i * L + j] + E[t, j] + lb[t, j]
            lb[t - 1, i] = _logsumexp(tmp) - logc[t]
    return logc[:n].sum()


# --------------------------------------------------------------------------- batch loss and gradient (training)
# The training kernels use a second, SIMD-friendly view of the unigram features, the
# ``aux`` tuple ``(Lp, binary, dptr, drows, dval, eptr, ek, evals, Wd, dnz)`` built by
# the model (``token_lists`` once per data set, ``refresh_weights`` per weight vector):
#
# * label vectors are padded to ``Lp`` (|Y| rounded up to a multiple of LANES) with zeros;
# * attributes that carry many labels ("dense" ones) get a padded row ``Wd[r]`` of
#   weights (zero for absent labels), so their emission and gradient work is a
#   fixed-length vector add instead of a gather/scatter over a short label list;
#   ``dnz[r]`` says whether the row has a non-zero weight at all (L1 zeros are skipped);
# * per token, ``drows[dptr[t]:dptr[t+1]]`` are the dense rows of its attributes and
#   ``ek[eptr[t]:eptr[t+1]]`` the weight indices of its other attributes, flattened so
#   that a token is two branch-free loops; ``dval`` / ``evals`` hold the attribute
#   values unless all are 1 (``binary``).
#
# The expected counts are accumulated in ``g`` (sparse unigram weights, bigram attributes,
# transitions) and ``Gd`` (dense rows); the empirical counts are subtracted once per
# evaluation (``finish_gradient``) and the gold score is ``w . empirical counts``, so these
# kernels compute only log Z and expectations.

LANES = 8


@njit(cache=True, nogil=True)
def empirical_counts(space, data, emp):
    """emp += feature counts of the gold label sequences (unigram, bigram, transitions)."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    t_base, t_index = space[7], space[8]
    seq_ptr, uni_ptr, uni_ids, uni_vals = data[0], data[1], data[2], data[3]
    big_ptr, big_ids, big_vals, labels = data[4], data[5], data[6], data[7]
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        for t in range(lo, hi):
            y = labels[t]
            for j in range(uni_ptr[t], uni_ptr[t + 1]):
                a = uni_ids[j]
                for k in range(u_ptr[a], u_ptr[a + 1]):
                    if u_lab[k] == y:
                        emp[k] += uni_vals[j]
                        break
            if t == lo:
                continue
            pair = labels[t - 1] * L + y
            ti = t_index[pair]
            if ti >= 0:
                emp[t_base + ti] += 1.0
            for j in range(big_ptr[t], big_ptr[t + 1]):
                a = big_ids[j]
                for k in range(b_ptr[a], b_ptr[a + 1]):
                    if b_pair[k] == pair:
                        emp[b_base + k] += big_vals[j]
                        break


@njit(cache=True, nogil=True)
def token_list_sizes(space, data, drow):
    """(number of dense attribute occurrences, number of sparse (occurrence, weight) entries)."""
    u_ptr = space[1]
    uni_ids = data[2]
    nd = 0
    ne = 0
    for j in range(len(uni_ids)):
        a = uni_ids[j]
        if drow[a] >= 0:
            nd += 1
        else:
            ne += u_ptr[a + 1] - u_ptr[a]
    return nd, ne


@njit(cache=True, nogil=True)
def fill_token_lists(space, data, drow, binary, dptr, drows, dval, eptr, ek, evals):
    """Per token, its dense rows (drows) and the weights of its sparse attributes (ek)."""
    u_ptr = space[1]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    nd = 0
    ne = 0
    dptr[0] = 0
    eptr[0] = 0
    for t in range(len(uni_ptr) - 1):
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            a = uni_ids[j]
            r = drow[a]
            if r >= 0:
                drows[nd] = r
                if not binary:
                    dval[nd] = uni_vals[j]
                nd += 1
            else:
                for k in range(u_ptr[a], u_ptr[a + 1]):
                    ek[ne] = k
                    if not binary:
                        evals[ne] = uni_vals[j]
                    ne += 1
        dptr[t + 1] = nd
        eptr[t + 1] = ne


@njit(cache=True, nogil=True)
def refresh_weights(w, space, d_attr, Wd, dnz):
    """Fill the padded dense rows Wd and their non-zero flags dnz from w."""
    u_ptr, u_lab = space[1], space[2]
    for r in range(len(d_attr)):
        a = d_attr[r]
        Wd[r, :] = 0.0
        nz = 0
        for k in range(u_ptr[a], u_ptr[a + 1]):
            Wd[r, u_lab[k]] = w[k]
            if w[k] != 0.0:
                nz = 1
        dnz[r] = nz


@njit(cache=True, nogil=True)
def finish_gradient(space, d_attr, Gd, emp, g):
    """g += dense-row expectations scattered to their weights; g -= empirical counts."""
    u_ptr, u_lab = space[1], space[2]
    for r in range(len(d_attr)):
        a = d_attr[r]
        for k in range(u_ptr[a], u_ptr[a + 1]):
            g[k] += Gd[r, u_lab[k]]
    for k in range(len(g)):
        g[k] -= emp[k]


@njit(cache=True, nogil=True, fastmath=FAST)
def emissions_padded(w, space, aux, lo, hi, E):
    """E[t - lo, :Lp] = unigram scores of token t (padded lanes 0), from the aux view."""
    u_lab = space[2]
    Lp, binary, dptr, drows, dval, eptr, ek, evals, Wd, dnz = aux
    for t in range(lo, hi):
        row = t - lo
        for y in range(Lp):
            E[row, y] = 0.0
        for j in range(dptr[t], dptr[t + 1]):
            r = drows[j]
            if dnz[r]:
                v = 1.0 if binary else dval[j]
                for y in range(Lp):
                    E[row, y] += v * Wd[r, y]
        for e in range(eptr[t], eptr[t + 1]):
            k = ek[e]
            E[row, u_lab[k]] += (1.0 if binary else evals[e]) * w[k]


@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def _scatter_unigram(space, aux, tok, marg, g, Gd):
    """Expected unigram counts of token tok (point marginals marg) into g / Gd."""
    u_lab = space[2]
    Lp, binary, dptr, drows, dval, eptr, ek, evals = aux[0], aux[1], aux[2], aux[3], aux[4], aux[5], aux[6], aux[7]
    for j in range(dptr[tok], dptr[tok + 1]):
        v = 1.0 if binary else dval[j]
        r = drows[j]
        for y in range(Lp):
            Gd[r, y] += v * marg[y]
    for e in range(eptr[tok], eptr[tok + 1]):
        k = ek[e]
        g[k] += (1.0 if binary else evals[e]) * marg[u_lab[k]]


# exp(x) for x <= 0 as Cody-Waite reduction + degree-13 Taylor polynomial + exponent bits:
# within ~1 ulp of math.exp, and the loop vectorises (math.exp is a scalar libm call).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_C2, _C3, _C4, _C5, _C6, _C7 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040
_C8, _C9, _C10, _C11, _C12, _C13 = 1 / 40320, 1 / 362880, 1 / 3628800, 1 / 39916800, 1 / 479001600, 1 / 6227020800


@njit(cache=True, nogil=True, fastmath={"contract", "nsz", "arcp"})
def _exp_row(src, dst, t, L, kbuf, kview):
    """dst[t, :L] = exp(src[t, :L] - max(src[t, :L])); returns that max. Arguments below
    -708 give 0 (their true value is < 3.4e-308 times the row maximum); NaN stays NaN.
    kbuf is an int64 scratch of length >= L and kview its float64 view. (No 'reassoc':
    the reduction x - k*ln2 must keep its two-step order.)"""
    m = src[t, 0]
    for y in range(1, L):
        if src[t, y] > m:
            m = src[t, y]
    for y in range(L):
        x = src[t, y] - m
        v = x if not (x < -708.0) else -708.0
        k = np.floor(v * _LOG2E + 0.5)
        r = (v - k * _LN2_HI) - k * _LN2_LO
        p = _C13
        p = p * r + _C12
        p = p * r + _C11
        p = p * r + _C10
        p = p * r + _C9
        p = p * r + _C8
        p = p * r + _C7
        p = p * r + _C6
        p = p * r + _C5
        p = p * r + _C4
        p = p * r + _C3
        p = p * r + _C2
        p = p * r + 1.0
        p = p * r + 1.0
        dst[t, y] = p if not (x < -708.0) else 0.0
        kbuf[y] = (np.int64(k) + 1023) << 52
    for y in range(L):
        dst[t, y] *= kview[y]
    return m


@njit(cache=True, nogil=True)
def _exp_padded(Mlog, Mexp, L):
    """Mexp[i, j] = exp(Mlog[i * L + j] - max(Mlog)) for i, j < L (padding left 0)."""
    m = Mlog.max()
    for i in range(L):
        for j in range(L):
            Mexp[i, j] = math.exp(Mlog[i * L + j] - m)
    return m


@njit(cache=True, nogil=True, fastmath=FAST)
def forward_padded(w, space, data, lo, hi, E, trans, expT, tmax, psi, alpha, scale, Mlog, Mexp, tmp, kbuf,
                   kview, Lp):
    """Scaled forward pass on rows padded to Lp (expT is exp(T - tmax), Lp x Lp). Fills
    psi, alpha (rows sum to 1) and scale; returns log Z, or NaN when scaling underflowed."""
    L = space[0]
    n = hi - lo
    m = _exp_row(E, psi, 0, L, kbuf, kview)
    c = 0.0
    for y in range(L):
        c += psi[0, y]
    if not (c > 0.0) or not math.isfinite(c):
        return np.nan
    inv = 1.0 / c
    for y in range(Lp):
        alpha[0, y] = psi[0, y] * inv
    scale[0] = c
    logz = m + math.log(c)
    for t in range(1, n):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
            shift = _exp_padded(Mlog, Mexp, L)
            M = Mexp
        else:
            shift = tmax
            M = expT
        m = _exp_row(E, psi, t, L, kbuf, kview)
        # tmp = alpha[t-1] @ M, as row updates (vectorises over the Lp lanes)
        for y in range(Lp):
            tmp[y] = 0.0
        for i in range(L):
            a = alpha[t - 1, i]
            for y in range(Lp):
                tmp[y] += a * M[i, y]
        c = 0.0
        for y in range(Lp):
            v = tmp[y] * psi[t, y]
            alpha[t, y] = v
            c += v
        if not (c > 0.0) or not math.isfinite(c):
            return np.nan
        inv = 1.0 / c
        for y in range(Lp):
            alpha[t, y] *= inv
        scale[t] = c
        logz += m + shift + math.log(c)
    return logz


@njit(cache=True, nogil=True, fastmath=FAST)
def backward_padded(w, space, data, aux, lo, hi, trans, expTT, psi, alpha, scale, beta, Mlog, Mexp,
                    tmp, tmp2, marg, g, Gd, acc_outer, acc_pair):
    """Scaled backward pass fused with the expected counts: unigram ones into g / Gd,
    transition ones gathered in acc_outer (sum of alpha x (psi*beta/c) outer products at
    plain positions, Lp x Lp, to be multiplied by exp(T - tmax) once) and acc_pair
    (pairwise marginals at positions with bigram attributes, L x L). expTT is
    exp(T - tmax) transposed."""
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    Lp = aux[0]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n = hi - lo
    for y in range(Lp):
        beta[n - 1, y] = 1.0 if y < L else 0.0
    for t in range(n - 1, -1, -1):
        tok = lo + t
        for y in range(Lp):
            marg[y] = alpha[t, y] * beta[t, y]
        _scatter_unigram(space, aux, tok, marg, g, Gd)
        if t == 0:
            break
        inv = 1.0 / scale[t]
        for y in range(Lp):
            tmp[y] = psi[t, y] * beta[t, y] * inv
        if has_bigram_attrs(data, lo, tok):
            position_transitions(w, space, data, tok, trans, Mlog)
            _exp_padded(Mlog, Mexp, L)
            for i in range(L):
                s = 0.0
                ai = alpha[t - 1, i]
                for j in range(L):
                    q = Mexp[i, j] * tmp[j]
                    s += q
                    Mlog[i * L + j] = ai * q          # pairwise marginal p(i, j)
                beta[t - 1, i] = s
            for p in range(L * L):
                acc_pair[p] += Mlog[p]
            for j in range(big_ptr[tok], big_ptr[tok + 1]):
                a = big_ids[j]
                v = big_vals[j]
                for k in range(b_ptr[a], b_ptr[a + 1]):
                    g[b_base + k] += v * Mlog[b_pair[k]]
        else:
            # beta[t-1] = exp(T) @ tmp, as row updates of exp(T) transposed
            for y in range(Lp):
                tmp2[y] = 0.0
            for j in range(L):
                b = tmp[j]
                for y in range(Lp):
                    tmp2[y] += b * expTT[j, y]
            for y in range(Lp):
                beta[t - 1, y] = tmp2[y]
            for i in range(L):
                a = alpha[t - 1, i]
                for y in range(Lp):
                    acc_outer[i, y] += a * tmp[y]


@njit(cache=True, nogil=True)
def grad_log(w, space, data, aux, lo, hi, E, trans, la, lb, logc, Mlog, marg, g, Gd, acc_pair):
    """Expected counts of one sequence from the log-space alpha/beta (fallback path)."""
    L, b_ptr, b_pair, b_base = space[0], space[3], space[4], space[5]
    Lp = aux[0]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n = hi - lo
    for t in range(n):
        tok = lo + t
        for y in range(Lp):
            marg[y] = math.exp(la[t, y] + lb[t, y]) if y < L else 0.0
        _scatter_unigram(space, aux, tok, marg, g, Gd)
        if t == 0:
            continue
        if has_bigram_attrs(data, lo, tok):
            position_transitions(w, space, data, tok, trans, Mlog)
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


@njit(cache=True, nogil=True)
def chunk_logz_grad(w, space, data, aux, s_lo, s_hi, g, Gd, want_grad):
    """Sum of log Z over sequences s_lo..s_hi-1; with want_grad, adds their expected
    feature counts to g (sparse unigram, bigram and transition weights) and Gd (dense
    unigram rows). The empirical counts are not subtracted here."""
    L, t_pair, t_base = space[0], space[6], space[7]
    Lp = aux[0]
    seq_ptr = data[0]
    trans = transition_matrix(w, space)
    tmax = trans.max()
    expT = np.zeros((Lp, Lp))
    expTT = np.zeros((Lp, Lp))
    for i in range(L):
        for j in range(L):
            e = math.exp(trans[i * L + j] - tmax)
            expT[i, j] = e
            expTT[j, i] = e
    maxlen = 1
    for s in range(s_lo, s_hi):
        maxlen = max(maxlen, seq_ptr[s + 1] - seq_ptr[s])
    E = np.zeros((maxlen, Lp))
    psi = np.zeros((maxlen, Lp))
    alpha = np.zeros((maxlen, Lp))
    beta = np.zeros((maxlen, Lp))
    scale = np.empty(maxlen)
    Mlog = np.empty(L * L)
    Mexp = np.zeros((Lp, Lp))
    tmp = np.zeros(Lp)
    tmp2 = np.zeros(Lp)
    marg = np.zeros(Lp)
    kbuf = np.zeros(Lp, dtype=np.int64)
    kview = kbuf.view(np.float64)
    acc_outer = np.zeros((Lp, Lp))
    acc_pair = np.zeros(L * L)
    E2 = np.empty((maxlen, L))          # log-space fallback buffers
    la = np.empty((maxlen, L))
    lb = np.empty((maxlen, L))
    tmpL = np.empty(L)
    total = 0.0
    for s in range(s_lo, s_hi):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        emissions_padded(w, space, aux, lo, hi, E)
        logz = forward_padded(w, space, data, lo, hi, E, trans, expT, tmax, psi, alpha, scale, Mlog, Mexp, tmp,
                              kbuf, kview, Lp)
        if math.isnan(logz):
            emission_scores(w, space, data, lo, hi, E2)
            logz = forward_backward_log(w, space, data, lo, hi, E2, trans, la, lb, scale, Mlog, tmpL)
            if want_grad:
                grad_log(w, space, data, aux, lo, hi, E2, trans, la, lb, scale, Mlog, marg, g, Gd, acc_pair)
        elif want_grad:
            backward_padded(w, space, data, aux, lo, hi, trans, expTT, psi, alpha, scale, beta, Mlog, Mexp,
                            tmp, tmp2, marg, g, Gd, acc_outer, acc_pair)
        total += logz
    if want_grad:
        for k in range(len(t_pair)):
            p = t_pair[k]
            i = p // L
            j = p - i * L
            g[t_base + k] += acc_outer[i, j] * expT[i, j] + acc_pair[p]
    return total


@njit(cache=True, nogil=True)
def sequence_losses(w, space, data, out):
    """out[s] = -log p(y_s | x_s) for every sequence (no gradient)."""
    L = space[0]
    seq_ptr = data[0]
    n_seq = len(seq_ptr) - 1
    trans = transition_matrix(w, space)
    expT = np.empty(L * L)
    tmax = _exp_shift(trans, expT)
    expTT = np.empty(L * L)
    transpose_into(expT, expTT, L)
    maxlen = 1
    for s in range(n_seq):
        maxlen = max(maxlen, seq_ptr[s + 1] - seq_ptr[s])
    E = np.empty((maxlen, L))
    psi = np.empty((maxlen, L))
    alpha = np.empty((maxlen, L))
    beta = np.empty((maxlen, L))
    scale = np.empty(maxlen)
    Mlog = np.empty(L * L)
    Mexp = np.empty(L * L)
    tmp = np.empty(L)
    for s in range(n_seq):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        emission_scores(w, space, data, lo, hi, E)
        logz = forward_scaled(w, space, data, lo, hi, E, trans, expTT, tmax, psi, alpha, scale, Mlog, Mexp)
        if math.isnan(logz):
            logz = forward_backward_log(w, space, data, lo, hi, E, trans, alpha, beta, scale, Mlog, tmp)
        out[s] = logz - gold_score(w, space, data, lo, hi, E, trans)

# --------------------------------------------------------------------------- inference for prediction
@njit(cache=True, nogil=True, fastmath=FAST)
def sequence_marginals(w, space, data, s, out):
    """Point marginals p(y_t = y | x) of sequence s into out (n x L); returns log Z."""
    L = space[0]
    lo, hi = data[0][s], data[0][s + 1]
    n = hi - lo
    trans = transition_matrix(w, space)
    expT = np.empty(L * L)
    tmax = _exp_shift(trans, expT)
    expTT = np.empty(L * L)
    transpose_into(expT, expTT, L)
    E = np.empty((n, L))
    psi = np.empty((n, L))
    alpha = np.empty((n, L))
    beta = np.empty((n, L))
    scale = np.empty(n)
    Mlog = np.empty(L * L)
    Mexp = np.empty(L * L)
    tmp = np.empty(L)
    emission_scores(w, space, data, lo, hi, E)
    logz = forward_scaled(w, space, data, lo, hi, E, trans, expTT, tmax, psi, alpha, scale, Mlog, Mexp)
    if math.isnan(logz):
        logz = forward_backward_log(w, space, data, lo, hi, E, trans, alpha, beta, scale, Mlog, tmp)
        for t in range(n):
            for y in range(L):
                out[t, y] = math.exp(alpha[t, y] + beta[t, y])
        return logz
    beta[n - 1, :] = 1.0
    for t in range(n - 1, 0, -1):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
            _exp_shift(Mlog, Mexp)
            M = Mexp
        else:
            M = expT
        for j in range(L):
            tmp[j] = psi[t, j] * beta[t, j] / scale[t]
        for i in range(L):
            s_ = 0.0
            for j in range(L):
                s_ += M[i * L + j] * tmp[j]
            beta[t - 1, i] = s_
    for t in range(n):
        for y in range(L):
            out[t, y] = alpha[t, y] * beta[t, y]
    return logz


@njit(cache=True, nogil=True)
def viterbi(w, space, data, s, fixed, out):
    """Best label sequence of sequence s into out; fixed[t] >= 0 forces label fixed[t].
    Returns the best path's score."""
    L = space[0]
    lo, hi = data[0][s], data[0][s + 1]
    n = hi - lo
    trans = transition_matrix(w, space)
    E = np.empty((n, L))
    emission_scores(w, space, data, lo, hi, E)
    _apply_constraints(E, fixed, lo, n, L)
    delta = np.empty((n, L))
    back = np.zeros((n, L), dtype=np.int32)
    Mlog = np.empty(L * L)
    delta[0, :] = E[0]
    for t in range(1, n):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
            M = Mlog
        else:
            M = trans
        for j in range(L):
            best = NEG_INF
            arg = 0
            for i in range(L):
                v = delta[t - 1, i] + M[i * L + j]
                if v > best:
                    best = v
                    arg = i
            delta[t, j] = best + E[t, j]
            back[t, j] = arg
    y = int(np.argmax(delta[n - 1]))
    score = delta[n - 1, y]
    for t in range(n - 1, -1, -1):
        out[t] = y
        y = back[t, y]
    return score


@njit(cache=True, nogil=True)
def _apply_constraints(E, fixed, lo, n, L):
    for t in range(n):
        f = fixed[lo + t]
        if f >= 0:
            for y in range(L):
                if y != f:
                    E[t, y] = NEG_INF


@njit(cache=True, nogil=True)
def nbest_viterbi(w, space, data, s, fixed, K, paths, scores):
    """The K best label sequences of sequence s (list Viterbi). paths is (K, n), scores
    (K,); rows past the number of distinct paths get score -inf. Returns that number."""
    L = space[0]
    lo, hi = data[0][s], data[0][s + 1]
    n = hi - lo
    trans = transition_matrix(w, space)
    E = np.empty((n, L))
    emission_scores(w, space, data, lo, hi, E)
    _apply_constraints(E, fixed, lo, n, L)
    delta = np.full((n, L, K), NEG_INF)
    back_lab = np.zeros((n, L, K), dtype=np.int32)
    back_rank = np.zeros((n, L, K), dtype=np.int32)
    Mlog = np.empty(L * L)
    cand = np.empty(L * K)
    delta[0, :, 0] = E[0]
    for t in range(1, n):
        if has_bigram_attrs(data, lo, lo + t):
            position_transitions(w, space, data, lo + t, trans, Mlog)
            M = Mlog
        else:
            M = trans
        for j in range(L):
            for i in range(L):
                for r in range(K):
                    cand[i * K + r] = delta[t - 1, i, r] + M[i * L + j]
            order = np.argsort(-cand, kind="mergesort")
            for r in range(K):
                c = order[r]
                delta[t, j, r] = cand[c] + E[t, j]
                back_lab[t, j, r] = c // K
                back_rank[t, j, r] = c % K
    final = delta[n - 1].ravel()
    order = np.argsort(-final, kind="mergesort")
    found = 0
    for r in range(K):
        c = order[r]
        if final[c] == NEG_INF:
            scores[r] = NEG_INF
            continue
        scores[r] = final[c]
        y = c // K
        rank = c % K
        for t in range(n - 1, -1, -1):
            paths[r, t] = y
            y, rank = back_lab[t, y, rank], back_rank[t, y, rank]
        found += 1
    return found
