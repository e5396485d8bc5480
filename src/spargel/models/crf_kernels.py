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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True, fastmath=FAST)
def backward_grad(w, space, data, lo, hi, trans, expT, psi, alpha, scale, beta, Mlog, Mexp,
                  tmp, marg, g, acc_outer, acc_pair):
    """Scaled backward pass fused with gradient accumulation of expected minus
    empirical counts. Unigram gradients go to g; transition gradients are gathered in
    acc_outer (sum of alpha x (psi*beta/c) outer products at plain positions, to be
    multiplied by exp(T - tmax) once) and acc_pair (pairwise marginals at positions with
    bigram attributes)."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals, labels = data[4], data[5], data[6], data[7]
    n = hi - lo
    beta[n - 1, :] = 1.0
    for t in range(n - 1, -1, -1):
        tok = lo + t
        # point marginals and unigram gradient at t
        for y in range(L):
            marg[y] = alpha[t, y] * beta[t, y]
        gold = labels[tok]
        for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
            a = uni_ids[j]
            v = uni_vals[j]
            for k in range(u_ptr[a], u_ptr[a + 1]):
                y = u_lab[k]
                if y == gold:
                    g[k] += v * (marg[y] - 1.0)
                else:
                    g[k] += v * marg[y]
        if t == 0:
            break
        # beta[t-1] and the pairwise terms between t-1 and t
        c = scale[t]
        for j in range(L):
            tmp[j] = psi[t, j] * beta[t, j] / c
        prev = alpha[t - 1]
        bprev = beta[t - 1]
        if has_bigram_attrs(data, lo, tok):
            position_transitions(w, space, data, tok, trans, Mlog)
            _exp_shift(Mlog, Mexp)
            for i in range(L):
                s = 0.0
                ai = prev[i]
                base = i * L
                for j in range(L):
                    q = Mexp[base + j] * tmp[j]
                    s += q
                    Mlog[base + j] = ai * q          # pairwise marginal p(i, j)
                bprev[i] = s
            pair_gold = labels[tok - 1] * L + gold
            for p in range(L * L):
                acc_pair[p] += Mlog[p]
            for j in range(big_ptr[tok], big_ptr[tok + 1]):
                a = big_ids[j]
                v = big_vals[j]
                for k in range(b_ptr[a], b_ptr[a + 1]):
                    p = b_pair[k]
                    if p == pair_gold:
                        g[b_base + k] += v * (Mlog[p] - 1.0)
                    else:
                        g[b_base + k] += v * Mlog[p]
        else:
            for i in range(L):
                s = 0.0
                ai = prev[i]
                base = i * L
                for j in range(L):
                    s += expT[base + j] * tmp[j]
                    acc_outer[base + j] += ai * tmp[j]
                bprev[i] = s


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


@njit(cache=True, nogil=True)
def grad_log(w, space, data, lo, hi, E, trans, la, lb, logc, Mlog, marg, g, acc_pair):
    """Gradient of one sequence from the log-space alpha/beta (fallback path)."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals, labels = data[4], data[5], data[6], data[7]
    n = hi - lo
    for t in range(n):
        tok = lo + t
        for y in range(L):
            marg[y] = math.exp(la[t, y] + lb[t, y])
        gold = labels[tok]
        for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
            a = uni_ids[j]
            v = uni_vals[j]
            for k in range(u_ptr[a], u_ptr[a + 1]):
                y = u_lab[k]
                g[k] += v * (marg[y] - (1.0 if y == gold else 0.0))
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
        pair_gold = labels[tok - 1] * L + gold
        for j in range(big_ptr[tok], big_ptr[tok + 1]):
            a = big_ids[j]
            v = big_vals[j]
            for k in range(b_ptr[a], b_ptr[a + 1]):
                p = b_pair[k]
                g[b_base + k] += v * (Mlog[p] - (1.0 if p == pair_gold else 0.0))


# --------------------------------------------------------------------------- batch loss and gradient
@njit(cache=True, nogil=True)
def chunk_loss_grad(w, space, data, s_lo, s_hi, g, want_grad):
    """Sum of -log p(y|x) over sequences s_lo..s_hi-1; adds its gradient to g."""
    L, t_pair, t_base, t_index = space[0], space[6], space[7], space[8]
    seq_ptr, labels = data[0], data[7]
    trans = transition_matrix(w, space)
    expT = np.empty(L * L)
    tmax = _exp_shift(trans, expT)
    expTT = np.empty(L * L)
    transpose_into(expT, expTT, L)
    maxlen = 1
    for s in range(s_lo, s_hi):
        maxlen = max(maxlen, seq_ptr[s + 1] - seq_ptr[s])
    E = np.empty((maxlen, L))
    psi = np.empty((maxlen, L))
    alpha = np.empty((maxlen, L))
    beta = np.empty((maxlen, L))
    scale = np.empty(maxlen)
    Mlog = np.empty(L * L)
    Mexp = np.empty(L * L)
    tmp = np.empty(L)
    marg = np.empty(L)
    acc_outer = np.zeros(L * L)
    acc_pair = np.zeros(L * L)
    gold_pairs = np.zeros(L * L)
    loss = 0.0
    for s in range(s_lo, s_hi):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        emission_scores(w, space, data, lo, hi, E)
        logz = forward_scaled(w, space, data, lo, hi, E, trans, expTT, tmax, psi, alpha, scale, Mlog, Mexp)
        if math.isnan(logz):
            logz = forward_backward_log(w, space, data, lo, hi, E, trans, alpha, beta, scale, Mlog, tmp)
            if want_grad:
                grad_log(w, space, data, lo, hi, E, trans, alpha, beta, scale, Mlog, marg, g, acc_pair)
        elif want_grad:
            backward_grad(w, space, data, lo, hi, trans, expT, psi, alpha, scale, beta, Mlog, Mexp,
                          tmp, marg, g, acc_outer, acc_pair)
        loss += logz - gold_score(w, space, data, lo, hi, E, trans)
        if want_grad:
            for t in range(lo + 1, hi):
                gold_pairs[labels[t - 1] * L + labels[t]] += 1.0
    if want_grad:
        for k in range(len(t_pair)):
            p = t_pair[k]
            g[t_base + k] += acc_outer[p] * expT[p] + acc_pair[p] - gold_pairs[p]
    return loss


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
