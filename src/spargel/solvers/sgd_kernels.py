"""Compiled kernels of SGD-L1 (Tsuruoka, Tsujii & Ananiadou 2009) on a linear-chain CRF.

The model is given by the same flat tuples as ``spargel.models.crf_kernels``:

``space = (L, u_ptr, u_lab, b_ptr, b_pair, b_base, t_pair, t_base, t_index)`` and
``data = (seq_ptr, uni_ptr, uni_ids, uni_vals, big_ptr, big_ids, big_vals, labels)``.

A whole pass over the samples is one compiled loop (:func:`sgd_pass`). Per step it

1. *settles* the weights the step's samples use (lazy variants): brings each touched
   attribute block, the transitions and the bigram blocks up to date with the l1 penalty
   accrued since they were last touched -- fused with the emission scores, so each block
   is settled the first time the step meets it;
2. computes the gradient of the samples' negative log-likelihood (scaled
   forward-backward, log-space fallback) at these weights; with one sample per step it
   is scattered straight into the weights, with mini-batches into a buffer that is kept
   zero outside the touched blocks;
3. advances the learning-rate schedule, the l2 shrink factor and the penalty accumulator.

The step's own l1 penalty is applied to a weight at its next settlement (next touch, or
:func:`settle_all` at the end of the pass): with no gradient in between, applying the
rule at ``u_k`` and later at ``u_j`` gives exactly what applying it once at ``u_j`` gives,
so the settled weights are those of the paper's update (and of the eager formulation
that penalises every weight at every step).

So a step costs O(attributes x labels of its samples + length x |Y|^2), never O(model
size) -- except for ``naive``, which by definition applies the sub-gradient of the
penalty to every weight at every step.

Weights are stored as ``w_i = s_i * v_i`` with one global shrink factor ``a`` (``s_i =
a`` for l2-penalised weights, 1 for the others), which makes the l2 shrink ``w <- (1 -
eta * l2 / N) w`` an O(1) update of ``a``. All penalty bookkeeping is in ``v`` units, in
which the l1 penalty of a step is ``eta * l1_i / (N * a)`` and the paper's rules apply
unchanged. ``aux`` holds per weight the paper's ``q_i`` (total penalty actually
received; ``cumulative``) or ``l1_i * u`` at its last settlement (``clipping``).

State ``st = [k, a, u_s, u_p, online_loss, fallbacks]``: samples processed, shrink
factor, accumulated penalty per unit of l1 in v units for scaled (``u_s``) and unscaled
(``u_p``) weights, the sum of the per-sample losses met during the pass (each at the
weights it was visited with) and the number of sequences that needed log space.

Parameters ``prm = [eta0, alpha, schedule, variant, N, l2, batch, l1]``: schedule 0 =
exponential ``eta0 * alpha ** (k / N)``, 1 = inverse ``eta0 / (1 + k / N)``, 2 =
constant; variant 0 = naive, 1 = clipping, 2 = cumulative; ``l1`` is the uniform l1
weight used when the per-weight array ``l1w`` is empty. ``m`` is empty (every weight
l2-scaled alike) or a 0/1 float mask of the l2-penalised weights.
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic

from ..models.crf_kernels import LANES, _exp_row

NAIVE, CLIPPING, CUMULATIVE = 0, 1, 2
EXPONENTIAL, INVERSE, CONSTANT = 0, 1, 2
FAST = {"reassoc", "contract", "nsz", "arcp"}
RENORMALISE_BELOW = 1e-8      # fold the shrink factor into v when it gets this small

# what sequence_grad does with the blocks it meets
NO_MARK, MARK, MARK_SETTLE = 0, 1, 2


# --------------------------------------------------------------------------- schedule
@njit(cache=True, nogil=True)
def learning_rate(eta0, alpha, schedule, k, N):
    """The paper's eq. 6 (exponential decay, written with alpha < 1) or eq. 5 (inverse)."""
    if schedule == EXPONENTIAL:
        return eta0 * alpha ** (k / N)
    if schedule == INVERSE:
        return eta0 / (1.0 + k / N)
    return eta0


# --------------------------------------------------------------------------- penalty bookkeeping
@njit(cache=True, nogil=True)
def apply_penalty(v, aux, i, pen, variant):
    """Bring weight i up to the accumulated penalty ``pen`` (= l1_i * u, v units); the
    scalar form of the rule that :func:`penalise_block` applies to whole blocks.

    cumulative (the paper's Figure 2, APPLYPENALTY): ``aux[i]`` is q_i, the signed total
    penalty the weight has actually received; a positive weight is pulled towards zero
    by ``u + q_i``, a negative one by ``u - q_i``, never across zero.
    clipping (Carpenter's lazy update): ``aux[i]`` is ``pen`` at the last settlement; the
    weight is pulled towards zero by what accrued since, clipped at zero.
    """
    z = v[i]
    if variant == CUMULATIVE:
        if z > 0.0:
            nz = max(0.0, z - (pen + aux[i]))
        elif z < 0.0:
            nz = min(0.0, z + (pen - aux[i]))
        else:
            return
        v[i] = nz
        aux[i] += nz - z
    else:
        d = pen - aux[i]
        aux[i] = pen
        if z > 0.0:
            v[i] = max(0.0, z - d)
        elif z < 0.0:
            v[i] = min(0.0, z + d)


@njit(cache=True, nogil=True)
def penalise_block(v, aux, l1w, l1, m, us, up, lo, hi, variant):
    """:func:`apply_penalty` on weights lo..hi-1 with accumulators us (l2-scaled weights)
    and up (the others). Written with selects instead of sign branches."""
    mixed = len(m) > 0
    per_weight = len(l1w) > 0
    if variant == CUMULATIVE:
        for i in range(lo, hi):
            uu = up + m[i] * (us - up) if mixed else us
            pen = (l1w[i] if per_weight else l1) * uu
            z = v[i]
            q = aux[i]
            zp = z - (pen + q)
            zn = z + (pen - q)
            zp = zp if zp > 0.0 else 0.0
            zn = zn if zn < 0.0 else 0.0
            nz = zp if z > 0.0 else (zn if z < 0.0 else 0.0)
            v[i] = nz
            aux[i] = q + (nz - z)
    else:
        for i in range(lo, hi):
            uu = up + m[i] * (us - up) if mixed else us
            pen = (l1w[i] if per_weight else l1) * uu
            z = v[i]
            d = pen - aux[i]
            aux[i] = pen
            zp = z - d
            zn = z + d
            zp = zp if zp > 0.0 else 0.0
            zn = zn if zn < 0.0 else 0.0
            v[i] = zp if z > 0.0 else (zn if z < 0.0 else 0.0)


@njit(cache=True, nogil=True)
def _step_block(v, g, m, inv_a, eta, lo, hi):
    """v -= eta * g / s for weights lo..hi-1 (s = a or 1), and g <- 0 there."""
    mixed = len(m) > 0
    for i in range(lo, hi):
        inv_s = 1.0 + m[i] * (inv_a - 1.0) if mixed else inv_a
        v[i] -= eta * g[i] * inv_s
        g[i] = 0.0


@njit(cache=True, nogil=True)
def settle_all(v, aux, l1w, l1, m, st, variant):
    """Bring every weight up to date and fold the shrink factor into v, so that
    afterwards ``v`` is the weight vector and ``st[1] == 1``. O(model size): once per
    pass, never per sample."""
    if variant != NAIVE:
        penalise_block(v, aux, l1w, l1, m, st[2], st[3], 0, len(v), variant)
    _renormalise(v, aux, m, st, variant)


@njit(cache=True, nogil=True)
def _renormalise(v, aux, m, st, variant):
    a = st[1]
    if a == 1.0:
        return
    mixed = len(m) > 0
    for i in range(len(v)):
        if mixed and m[i] == 0.0:
            continue
        v[i] *= a
        if variant != NAIVE:
            aux[i] *= a
    st[2] *= a
    st[1] = 1.0


# --------------------------------------------------------------------------- one sequence
@njit(cache=True, nogil=True)
def _wt(v, m, a, i):
    if len(m) > 0 and m[i] == 0.0:
        return v[i]
    return a * v[i]


@njit(cache=True, nogil=True)
def _has_big(data, lo, tok):
    return tok > lo and data[4][tok + 1] > data[4][tok]


@njit(cache=True, nogil=True)
def _position_scores(v, m, a, space, data, tok, trans, out):
    """out = transition scores at token tok: global transitions + its bigram attributes."""
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    out[:] = trans
    for j in range(big_ptr[tok], big_ptr[tok + 1]):
        at = big_ids[j]
        val = big_vals[j]
        for k in range(b_ptr[at], b_ptr[at + 1]):
            out[b_pair[k]] += val * _wt(v, m, a, b_base + k)


@njit(cache=True, nogil=True, fastmath=FAST)
def _emissions(v, m, a, space, data, lo, hi, E, pen, marks, mode):
    """E[t - lo, y] = unigram scores of the tokens lo..hi-1. With mode MARK(_SETTLE),
    each attribute block met for the first time in this step is recorded in the touched
    list (and settled first)."""
    aux, l1w, l1, us, up, variant = pen
    umark, tu, cnt, stamp = marks[0], marks[2], marks[4], marks[6]
    u_ptr, u_lab = space[1], space[2]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    L = space[0]
    mixed = len(m) > 0
    for t in range(lo, hi):
        row = E[t - lo]
        for y in range(L):
            row[y] = 0.0
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            at = uni_ids[j]
            val = uni_vals[j]
            k0, k1 = u_ptr[at], u_ptr[at + 1]
            if mode != NO_MARK and umark[at] != stamp:
                umark[at] = stamp
                tu[cnt[0]] = at
                cnt[0] += 1
                if mode == MARK_SETTLE:
                    penalise_block(v, aux, l1w, l1, m, us, up, k0, k1, variant)
            if mixed:
                for k in range(k0, k1):
                    row[u_lab[k]] += val * _wt(v, m, a, k)
            else:
                va = val * a
                for k in range(k0, k1):
                    row[u_lab[k]] += va * v[k]


@njit(cache=True, nogil=True)
def _mark_bigrams(v, m, space, data, lo, hi, pen, marks, mode):
    """Record (and settle) the bigram attribute blocks of tokens lo+1..hi-1."""
    aux, l1w, l1, us, up, variant = pen
    bmark, tb, cnt, stamp = marks[1], marks[3], marks[5], marks[6]
    b_ptr, b_base = space[3], space[5]
    big_ptr, big_ids = data[4], data[5]
    for tok in range(lo + 1, hi):
        for j in range(big_ptr[tok], big_ptr[tok + 1]):
            at = big_ids[j]
            if bmark[at] != stamp:
                bmark[at] = stamp
                tb[cnt[0]] = at
                cnt[0] += 1
                if mode == MARK_SETTLE:
                    penalise_block(v, aux, l1w, l1, m, us, up, b_base + b_ptr[at], b_base + b_ptr[at + 1],
                                   variant)


@njit(cache=True, nogil=True)
def _exp_shift(src, dst, n):
    mx = src[0]
    for i in range(1, n):
        if src[i] > mx:
            mx = src[i]
    for i in range(n):
        dst[i] = math.exp(src[i] - mx)
    return mx


@njit(cache=True, nogil=True)
def _lse(x, n):
    mx = x[0]
    for i in range(1, n):
        if x[i] > mx:
            mx = x[i]
    if mx == -np.inf:
        return mx
    s = 0.0
    for i in range(n):
        s += math.exp(x[i] - mx)
    return mx + math.log(s)


@njit(cache=True, nogil=True, fastmath=FAST)
def _scatter_unigram(space, data, tok, marg, y, g, coef):
    """g[k] += coef * val * (p(label_k) - [label_k == gold]) for the unigram weights of tok."""
    u_ptr, u_lab = space[1], space[2]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        at = uni_ids[j]
        cv = coef * uni_vals[j]
        for k in range(u_ptr[at], u_ptr[at + 1]):
            lab = u_lab[k]
            g[k] += cv * (marg[lab] - (1.0 if lab == y else 0.0))


@njit(cache=True, nogil=True)
def _scatter_bigram(space, data, tok, pm, gold_pair, g, coef):
    b_ptr, b_pair, b_base = space[3], space[4], space[5]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    for j in range(big_ptr[tok], big_ptr[tok + 1]):
        at = big_ids[j]
        cv = coef * big_vals[j]
        for k in range(b_ptr[at], b_ptr[at + 1]):
            p = b_pair[k]
            g[b_base + k] += cv * (pm[p] - (1.0 if p == gold_pair else 0.0))


@njit(cache=True, nogil=True, fastmath=FAST)
def sequence_grad(v, m, a, space, data, s, trans, expT, expTT, tmax, g, coef, want_grad, buf, pen, marks, mode):
    """-log p(y_s | x_s) at the weights ``w = s_i * v`` (after settling the blocks it
    meets, mode MARK_SETTLE); with want_grad, adds ``coef`` times its gradient to ``g``
    (only the sequence's own weights are written; ``g`` may be ``v`` itself: the weights
    are not read again once the gradient starts). ``trans``/``expT``/``expTT``/``tmax``:
    dense transition scores, exp(T - tmax) and its transpose at the current weights.
    Returns NaN when even the log-space fallback fails (non-finite weights)."""
    E, psi, alpha, beta, scale, Mlog, Mexp, tmp, acc, accp, marg, Mpos = buf
    L = space[0]
    t_pair, t_base, t_index = space[6], space[7], space[8]
    seq_ptr, labels = data[0], data[7]
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    n = hi - lo
    has_big = data[4][hi] > data[4][lo + 1] if n > 1 else False
    if has_big and mode != NO_MARK:
        _mark_bigrams(v, m, space, data, lo, hi, pen, marks, mode)
    _emissions(v, m, a, space, data, lo, hi, E, pen, marks, mode)
    # gold score; exp of the per-position transition matrices (kept for the backward)
    gold = E[0, labels[lo]]
    for t in range(1, n):
        tok = lo + t
        pair = labels[tok - 1] * L + labels[tok]
        gold += E[t, labels[tok]]
        if has_big and _has_big(data, lo, tok):
            _position_scores(v, m, a, space, data, tok, trans, Mlog)
            gold += Mlog[pair]
            scale[t] = _exp_shift(Mlog, Mpos[t, :L * L], L * L)      # scale[t] holds the shift for now
            Mpos[t, L * L] = 1.0
        else:
            gold += trans[pair]
            if has_big:
                Mpos[t, L * L] = 0.0
    # scaled forward
    logz = _exp_shift(E[0], psi[0], L)
    c = 0.0
    for y in range(L):
        c += psi[0, y]
    ok = c > 0.0 and math.isfinite(c)
    if ok:
        for y in range(L):
            alpha[0, y] = psi[0, y] / c
        logz += math.log(c)
        scale[0] = c
    t = 1
    while ok and t < n:
        logz += _exp_shift(E[t], psi[t], L)
        if has_big and Mpos[t, L * L] == 1.0:
            shift = scale[t]
            Mt = Mpos[t]
            for j in range(L):
                sacc = 0.0
                for i in range(L):
                    sacc += alpha[t - 1, i] * Mt[i * L + j]
                alpha[t, j] = sacc * psi[t, j]
        else:
            shift = tmax
            for j in range(L):
                sacc = 0.0
                base = j * L
                for i in range(L):
                    sacc += alpha[t - 1, i] * expTT[base + i]
                alpha[t, j] = sacc * psi[t, j]
        c = 0.0
        for j in range(L):
            c += alpha[t, j]
        if not (c > 0.0 and math.isfinite(c)):
            ok = False
            break
        inv = 1.0 / c
        for j in range(L):
            alpha[t, j] *= inv
        scale[t] = c
        logz += shift + math.log(c)
        t += 1
    if not ok:
        return _sequence_grad_log(v, m, a, space, data, s, trans, g, coef, want_grad, buf, gold, has_big,
                                  _no_dense())
    loss = logz - gold
    if not want_grad:
        return loss
    # scaled backward fused with the expected counts
    for y in range(L):
        beta[n - 1, y] = 1.0
    for p in range(L * L):
        acc[p] = 0.0
        accp[p] = 0.0
    for t in range(n - 1, -1, -1):
        tok = lo + t
        for y in range(L):
            marg[y] = alpha[t, y] * beta[t, y]
        _scatter_unigram(space, data, tok, marg, labels[tok], g, coef)
        if t == 0:
            break
        inv = 1.0 / scale[t]
        for j in range(L):
            tmp[j] = psi[t, j] * beta[t, j] * inv
        if has_big and Mpos[t, L * L] == 1.0:
            Mt = Mpos[t]
            for i in range(L):
                sacc = 0.0
                ai = alpha[t - 1, i]
                for j in range(L):
                    q = Mt[i * L + j] * tmp[j]
                    sacc += q
                    Mlog[i * L + j] = ai * q            # pairwise marginal p(i, j)
                beta[t - 1, i] = sacc
            for p in range(L * L):
                accp[p] += Mlog[p]
            _scatter_bigram(space, data, tok, Mlog, labels[tok - 1] * L + labels[tok], g, coef)
        else:
            for i in range(L):
                sacc = 0.0
                base = i * L
                ai = alpha[t - 1, i]
                for j in range(L):
                    sacc += expT[base + j] * tmp[j]
                    acc[base + j] += ai * tmp[j]
                beta[t - 1, i] = sacc
    for k in range(len(t_pair)):
        p = t_pair[k]
        g[t_base + k] += coef * (acc[p] * expT[p] + accp[p])
    for t in range(1, n):
        tok = lo + t
        ti = t_index[labels[tok - 1] * L + labels[tok]]
        if ti >= 0:
            g[t_base + ti] -= coef
    return loss


@njit(cache=True, nogil=True)
def _sequence_grad_log(v, m, a, space, data, s, trans, g, coef, want_grad, buf, gold, has_big, dense):
    """Log-space forward-backward for sequences whose scaled recursion underflowed.
    The per-position transition scores are computed once (before any write to g).
    ``dense = (drow, W)``: the padded rows of the fast pass (:func:`_pass_padded`), which
    receive the gradient of their attributes; empty outside it."""
    E, la, lb, scale, Mlog, Mexp, tmp, accp, marg, Mpos = buf[0], buf[2], buf[3], buf[4], buf[5], buf[6], \
        buf[7], buf[9], buf[10], buf[11]
    L = space[0]
    t_pair, t_base, t_index = space[6], space[7], space[8]
    seq_ptr, labels = data[0], data[7]
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    n = hi - lo
    scale[0] = -1.0                      # marks the fallback for the caller's statistics
    if has_big:
        for t in range(1, n):
            _position_scores(v, m, a, space, data, lo + t, trans, Mpos[t, :L * L])
    for y in range(L):
        la[0, y] = E[0, y]
    for t in range(1, n):
        Mt = Mpos[t] if has_big else trans
        for j in range(L):
            for i in range(L):
                tmp[i] = la[t - 1, i] + Mt[i * L + j]
            la[t, j] = _lse(tmp, L) + E[t, j]
    logz = _lse(la[n - 1], L)
    if not math.isfinite(logz) or not math.isfinite(gold):
        return np.nan
    if not want_grad:
        return logz - gold
    for p in range(L * L):
        accp[p] = 0.0
    for y in range(L):
        lb[n - 1, y] = 0.0
    for t in range(n - 1, -1, -1):
        tok = lo + t
        for y in range(L):
            marg[y] = math.exp(la[t, y] + lb[t, y] - logz)
        if len(dense[0]) > 0:
            _scatter_unigram_padded(space, data, tok, marg, labels[tok], g, coef, dense[0], dense[1])
        else:
            _scatter_unigram(space, data, tok, marg, labels[tok], g, coef)
        if t == 0:
            break
        Mt = Mpos[t] if has_big else trans
        for i in range(L):
            for j in range(L):
                tmp[j] = Mt[i * L + j] + E[t, j] + lb[t, j]
            lb[t - 1, i] = _lse(tmp, L)
        for i in range(L):
            for j in range(L):
                p = i * L + j
                Mexp[p] = math.exp(la[t - 1, i] + Mt[p] + E[t, j] + lb[t, j] - logz)
        for p in range(L * L):
            accp[p] += Mexp[p]
        if has_big:
            _scatter_bigram(space, data, tok, Mexp, labels[tok - 1] * L + labels[tok], g, coef)
    for k in range(len(t_pair)):
        g[t_base + k] += coef * accp[t_pair[k]]
    for t in range(1, n):
        tok = lo + t
        ti = t_index[labels[tok - 1] * L + labels[tok]]
        if ti >= 0:
            g[t_base + ti] -= coef
    return logz - gold


@njit(cache=True, nogil=True)
def _buffers(L, maxlen, bigrams):
    return (np.zeros((maxlen, L)), np.zeros((maxlen, L)), np.zeros((maxlen, L)), np.zeros((maxlen, L)),
            np.zeros(maxlen), np.zeros(L * L), np.zeros(L * L), np.zeros(L), np.zeros(L * L),
            np.zeros(L * L), np.zeros(L), np.zeros((maxlen if bigrams else 1, L * L + 1)))


@njit(cache=True, nogil=True)
def _transitions(v, m, a, space, trans, expT, expTT):
    L, t_pair, t_base = space[0], space[6], space[7]
    for p in range(L * L):
        trans[p] = 0.0
    for k in range(len(t_pair)):
        trans[t_pair[k]] = _wt(v, m, a, t_base + k)
    tmax = _exp_shift(trans, expT, L * L)
    for i in range(L):
        for j in range(L):
            expTT[j * L + i] = expT[i * L + j]
    return tmax


@njit(cache=True, nogil=True)
def _max_len(seq_ptr, order):
    n = 1
    for r in range(len(order)):
        s = order[r]
        n = max(n, seq_ptr[s + 1] - seq_ptr[s])
    return n


@njit(cache=True, nogil=True)
def _no_marks():
    e = np.zeros(0, dtype=np.int64)
    return (e, e, e, e, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.int64(0))


@njit(cache=True, nogil=True)
def _no_pen():
    e = np.zeros(0)
    return (e, e, 0.0, 0.0, 0.0, np.int64(0))


# --------------------------------------------------------------------------- fast pass (padded rows)
# The common case -- a lazy variant, one sample per step, the uniform l1 and every
# weight l2-scaled alike (e.g. the CoNLL-2000 benchmark) -- runs _pass_padded, which
# uses the batch kernels' layout tricks (crf_kernels): label vectors padded to Lp (|Y|
# rounded up to LANES), vectorised exp, and attributes with many labels moved for the
# pass into padded rows ``W[r, 0, :]`` (weights) kept next to their penalty records
# ``W[r, 1, :]`` and a 0/1 mask of the labels they own ``W[r, 2, :]``: settling,
# emission and gradient of such an attribute are fixed-length, branch-free vector loops
# over one contiguous block. Absent labels stay exactly 0 (the rule leaves 0 at 0 and the
# mask zeroes their gradient). The rows are loaded from v/aux at the start of the pass
# and written back at its end; the arithmetic per weight is that of the generic path.

@intrinsic
def _prefetch(typingctx, arr, idx):
    """Hint the cache to fetch the element at flat index idx of a contiguous array."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        name = "llvm.prefetch.p0" if str(i8p) == "ptr" else "llvm.prefetch.p0i8"    # opaque / typed pointers
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        i32 = ir.IntType(32)
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [i]), i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True)
def _prefetch_sequence(data, s, meta, W, v, u_lab, phase):
    """Prefetch what the next step will look up (its sequence is known): phase 0 the
    attribute records, phase 1 (records in cache by then) the weights they point to."""
    lo, hi = data[0][s], data[0][s + 1]
    uni_ptr, uni_ids = data[1], data[2]
    row = W.shape[1] * W.shape[2]
    for j in range(uni_ptr[lo], uni_ptr[hi]):
        at = uni_ids[j]
        if phase == 0:
            _prefetch(meta, at * 4)
        else:
            r = meta[at, 2]
            if r >= 0:
                for c in range(0, 2 * W.shape[2] + 1, 8):
                    _prefetch(W, r * row + c)
            else:
                k0 = meta[at, 0]
                _prefetch(v, k0)
                _prefetch(u_lab, k0)


DENSE_FRACTION = 0.25          # as spargel.models.crf: attributes with >= 25% of the labels


@njit(cache=True, nogil=True)
def _no_dense():
    return (np.zeros((0, 4), dtype=np.int32), np.zeros((0, 3, 1)))


@njit(cache=True, nogil=True)
def _load_rows(space, v, aux, Lp):
    """(meta, W): per attribute ``meta[at] = (first weight, end, padded row or -1, mark)``
    (one cache line for everything a step looks up about an attribute) and the padded
    rows W of the attributes with many labels."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    thr = max(2, int(math.ceil(DENSE_FRACTION * L)))
    n_attr = len(u_ptr) - 1
    meta = np.empty((n_attr, 4), dtype=np.int32)
    R = 0
    for at in range(n_attr):
        meta[at, 0] = u_ptr[at]
        meta[at, 1] = u_ptr[at + 1]
        meta[at, 3] = -1
        if u_ptr[at + 1] - u_ptr[at] >= thr:
            meta[at, 2] = R
            R += 1
        else:
            meta[at, 2] = -1
    W = np.zeros((R, 3, Lp))
    for at in range(n_attr):
        r = meta[at, 2]
        if r >= 0:
            for k in range(u_ptr[at], u_ptr[at + 1]):
                y = u_lab[k]
                W[r, 0, y] = v[k]
                W[r, 1, y] = aux[k]
                W[r, 2, y] = 1.0
    return meta, W


@njit(cache=True, nogil=True)
def _store_rows(space, meta, W, v, aux):
    u_ptr, u_lab = space[1], space[2]
    for at in range(len(meta)):
        r = meta[at, 2]
        if r >= 0:
            for k in range(u_ptr[at], u_ptr[at + 1]):
                y = u_lab[k]
                v[k] = W[r, 0, y]
                aux[k] = W[r, 1, y]


@njit(cache=True, nogil=True)
def _scale_rows(W, a, variant):
    for r in range(W.shape[0]):
        for y in range(W.shape[2]):
            W[r, 0, y] *= a
            if variant != NAIVE:
                W[r, 1, y] *= a


@njit(cache=True, nogil=True)
def _settle_row(W, r, pen, Lp, variant):
    """:func:`penalise_block` on padded row r (uniform penalty pen = l1 * u)."""
    if variant == CUMULATIVE:
        for y in range(Lp):
            z = W[r, 0, y]
            q = W[r, 1, y]
            zp = z - (pen + q)
            zn = z + (pen - q)
            zp = zp if zp > 0.0 else 0.0
            zn = zn if zn < 0.0 else 0.0
            nz = zp if z > 0.0 else (zn if z < 0.0 else 0.0)
            W[r, 0, y] = nz
            W[r, 1, y] = q + (nz - z)
    else:
        for y in range(Lp):
            z = W[r, 0, y]
            d = pen - W[r, 1, y]
            W[r, 1, y] = pen
            zp = z - d
            zn = z + d
            zp = zp if zp > 0.0 else 0.0
            zn = zn if zn < 0.0 else 0.0
            W[r, 0, y] = zp if z > 0.0 else (zn if z < 0.0 else 0.0)


@njit(cache=True, nogil=True, fastmath=FAST)
def _scatter_unigram_padded(space, data, tok, marg, y, g, coef, meta, W):
    """:func:`_scatter_unigram` with the padded rows (marg has >= Lp entries, 0 past L)."""
    u_lab = space[2]
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    Lp = W.shape[2]
    for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
        at = uni_ids[j]
        cv = coef * uni_vals[j]
        r = meta[at, 2]
        if r >= 0:
            for lab in range(Lp):
                W[r, 0, lab] += W[r, 2, lab] * (cv * (marg[lab] - (1.0 if lab == y else 0.0)))
        else:
            for k in range(meta[at, 0], meta[at, 1]):
                lab = u_lab[k]
                g[k] += cv * (marg[lab] - (1.0 if lab == y else 0.0))


@njit(cache=True, nogil=True)
def _buffers_padded(L, Lp, maxlen, bigrams):
    return (np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)), np.zeros((maxlen, Lp)),
            np.zeros(maxlen), np.zeros(L * L), np.zeros(L * L), np.zeros(Lp), np.zeros(L * L),
            np.zeros(L * L), np.zeros(Lp), np.zeros((maxlen if bigrams else 1, L * L + 1)))


@njit(cache=True, nogil=True)
def _transitions_padded(v, a, space, T2, eT2, kbuf, kview, expT, expTT):
    """T2[0] (L*L) = transition scores; expT[i, j] = exp(T - max) padded, expTT its
    transpose (vectorised exp, eT2 and kbuf/kview are scratch); returns the max."""
    L, t_pair, t_base = space[0], space[6], space[7]
    for p in range(L * L):
        T2[0, p] = 0.0
    for k in range(len(t_pair)):
        T2[0, t_pair[k]] = a * v[t_base + k]
    mx = _exp_row(T2, eT2, 0, L * L, kbuf, kview)
    for i in range(L):
        for j in range(L):
            e = eT2[0, i * L + j]
            expT[i, j] = e
            expTT[j, i] = e
    return mx


@njit(cache=True, nogil=True, fastmath=FAST)
def _sequence_step_padded(v, aux, a, space, data, s, trans, expT, expTT, tmax, coef, buf, pb, meta, W, dmark,
                          marks, pen, stamp):
    """:func:`sequence_grad` (mode MARK_SETTLE, gradient scattered into v) on the padded
    layout: settles the blocks the sequence meets, adds coef times its gradient to the
    weights (v and the rows W) and returns its loss."""
    E, psi, alpha, beta, scale, Mlog, Mexp, tmp, acc, accp, marg, Mpos = buf
    Mexp3, tmp2, acc_outer, kbuf, kview = pb
    aux_, l1w, l1, us, up, variant = pen
    L = space[0]
    Lp = W.shape[2]
    u_lab = space[2]
    t_pair, t_base, t_index = space[6], space[7], space[8]
    seq_ptr, uni_ptr, uni_ids, uni_vals, labels = data[0], data[1], data[2], data[3], data[7]
    m = l1w
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    n = hi - lo
    has_big = data[4][hi] > data[4][lo + 1] if n > 1 else False
    if has_big:
        _mark_bigrams(v, m, space, data, lo, hi, pen, marks, np.int64(MARK_SETTLE))
    # emissions, settling each attribute block the first time the step meets it
    pen_s = l1 * us
    for t in range(n):
        tok = lo + t
        for y in range(Lp):
            E[t, y] = 0.0
        for j in range(uni_ptr[tok], uni_ptr[tok + 1]):
            at = uni_ids[j]
            va = uni_vals[j] * a
            r = meta[at, 2]
            if r >= 0:
                if dmark[r] != stamp:
                    dmark[r] = stamp
                    _settle_row(W, r, pen_s, Lp, variant)
                for y in range(Lp):
                    E[t, y] += va * W[r, 0, y]
            else:
                k0, k1 = meta[at, 0], meta[at, 1]
                if meta[at, 3] != stamp:
                    meta[at, 3] = stamp
                    penalise_block(v, aux, l1w, l1, m, us, up, k0, k1, variant)
                for k in range(k0, k1):
                    E[t, u_lab[k]] += va * v[k]
    # gold score; exp of the per-position transition matrices (kept for the backward)
    gold = E[0, labels[lo]]
    for t in range(1, n):
        tok = lo + t
        pair = labels[tok - 1] * L + labels[tok]
        gold += E[t, labels[tok]]
        if has_big and _has_big(data, lo, tok):
            _position_scores(v, m, a, space, data, tok, trans, Mlog)
            gold += Mlog[pair]
            mx = Mlog[0]
            for p in range(1, L * L):
                if Mlog[p] > mx:
                    mx = Mlog[p]
            for i in range(L):
                for j in range(L):
                    Mexp3[t, i, j] = math.exp(Mlog[i * L + j] - mx)
            scale[t] = mx                     # the shift, for now
            Mpos[t, L * L] = 1.0
        else:
            gold += trans[pair]
            if has_big:
                Mpos[t, L * L] = 0.0
    # scaled forward (rows padded to Lp, zero past L)
    logz = _exp_row(E, psi, 0, L, kbuf, kview)
    c = 0.0
    for y in range(L):
        c += psi[0, y]
    ok = c > 0.0 and math.isfinite(c)
    if ok:
        inv = 1.0 / c
        for y in range(Lp):
            alpha[0, y] = psi[0, y] * inv
        logz += math.log(c)
        scale[0] = c
    t = 1
    while ok and t < n:
        logz += _exp_row(E, psi, t, L, kbuf, kview)
        for y in range(Lp):
            tmp[y] = 0.0
        if has_big and Mpos[t, L * L] == 1.0:
            shift = scale[t]
            for i in range(L):
                ai = alpha[t - 1, i]
                for y in range(Lp):
                    tmp[y] += ai * Mexp3[t, i, y]
        else:
            shift = tmax
            for i in range(L):
                ai = alpha[t - 1, i]
                for y in range(Lp):
                    tmp[y] += ai * expT[i, y]
        c = 0.0
        for y in range(Lp):
            x = tmp[y] * psi[t, y]
            alpha[t, y] = x
            c += x
        if not (c > 0.0 and math.isfinite(c)):
            ok = False
            break
        inv = 1.0 / c
        for y in range(Lp):
            alpha[t, y] *= inv
        scale[t] = c
        logz += shift + math.log(c)
        t += 1
    if not ok:
        return _sequence_grad_log(v, m, a, space, data, s, trans, v, coef, True, buf, gold, has_big, (meta, W))
    loss = logz - gold
    # scaled backward fused with the expected counts
    for y in range(Lp):
        beta[n - 1, y] = 1.0 if y < L else 0.0
    for i in range(Lp):
        for y in range(Lp):
            acc_outer[i, y] = 0.0
    for p in range(L * L):
        accp[p] = 0.0
    for t in range(n - 1, -1, -1):
        tok = lo + t
        for y in range(Lp):
            marg[y] = alpha[t, y] * beta[t, y]
        _scatter_unigram_padded(space, data, tok, marg, labels[tok], v, coef, meta, W)
        if t == 0:
            break
        inv = 1.0 / scale[t]
        for y in range(Lp):
            tmp[y] = psi[t, y] * beta[t, y] * inv
        if has_big and Mpos[t, L * L] == 1.0:
            for i in range(L):
                sacc = 0.0
                ai = alpha[t - 1, i]
                for j in range(L):
                    q = Mexp3[t, i, j] * tmp[j]
                    sacc += q
                    Mlog[i * L + j] = ai * q            # pairwise marginal p(i, j)
                beta[t - 1, i] = sacc
            for p in range(L * L):
                accp[p] += Mlog[p]
            _scatter_bigram(space, data, tok, Mlog, labels[tok - 1] * L + labels[tok], v, coef)
        else:
            for y in range(Lp):
                tmp2[y] = 0.0
            for j in range(L):
                b = tmp[j]
                for y in range(Lp):
                    tmp2[y] += b * expTT[j, y]
            for y in range(Lp):
                beta[t - 1, y] = tmp2[y]
            for i in range(L):
                ai = alpha[t - 1, i]
                for y in range(Lp):
                    acc_outer[i, y] += ai * tmp[y]
    for k in range(len(t_pair)):
        p = t_pair[k]
        i = p // L
        j = p - i * L
        v[t_base + k] += coef * (acc_outer[i, j] * expT[i, j] + accp[p])
    for t in range(1, n):
        tok = lo + t
        ti = t_index[labels[tok - 1] * L + labels[tok]]
        if ti >= 0:
            v[t_base + ti] -= coef
    return loss


@njit(cache=True, nogil=True)
def _pass_padded(space, data, order, v, aux, l1, st, prm):
    """:func:`sgd_pass` for a lazy variant, one sample per step, uniform l1 and no l2 mask."""
    L = space[0]
    Lp = -(-L // LANES) * LANES
    b_ptr, t_base = space[3], space[7]
    seq_ptr = data[0]
    eta0, alpha, N, l2 = prm[0], prm[1], prm[4], prm[5]
    schedule, variant = int(prm[2]), int(prm[3])
    n = len(v)
    empty = np.zeros(0)
    meta, W = _load_rows(space, v, aux, Lp)
    dmark = np.full(W.shape[0], -1, dtype=np.int64)
    bmark = np.full(len(b_ptr) - 1, -1, dtype=np.int64)
    tb = np.empty(len(b_ptr) - 1, dtype=np.int64)
    ntb = np.zeros(1, dtype=np.int64)
    maxlen = _max_len(seq_ptr, order)
    bigrams = len(data[5]) > 0
    buf = _buffers_padded(L, Lp, maxlen, bigrams)
    kbuf = np.zeros(Lp, dtype=np.int64)
    pb = (np.zeros((maxlen if bigrams else 1, Lp, Lp)), np.zeros(Lp), np.zeros((Lp, Lp)), kbuf,
          kbuf.view(np.float64))
    T2, eT2, kbufT = np.zeros((1, L * L)), np.zeros((1, L * L)), np.zeros(L * L, dtype=np.int64)
    kviewT = kbufT.view(np.float64)
    trans = T2[0]
    expT, expTT = np.zeros((Lp, Lp)), np.zeros((Lp, Lp))
    k, a, us, up = st[0], st[1], st[2], st[3]
    status = 0
    for r in range(len(order)):
        eta = learning_rate(eta0, alpha, schedule, k, N)
        a_new = a * (1.0 - eta * 1 * l2 / N)
        ntb[0] = 0
        marks = (bmark, bmark, tb, tb, ntb, ntb, np.int64(r))
        pen = (aux, empty, l1, us, up, np.int64(variant))
        penalise_block(v, aux, empty, l1, empty, us, up, t_base, n, variant)
        tmax = _transitions_padded(v, a, space, T2, eT2, kbufT, kviewT, expT, expTT)
        # the records of the sequence after next, the weights of the next one (whose
        # records were fetched during this step's predecessor): they arrive during this step
        if r + 2 < len(order):
            _prefetch_sequence(data, order[r + 2], meta, W, v, space[2], 0)
        if r + 1 < len(order):
            _prefetch_sequence(data, order[r + 1], meta, W, v, space[2], 1)
        buf[4][0] = 0.0
        loss = 0.0 + _sequence_step_padded(v, aux, a, space, data, order[r], trans, expT, expTT, tmax, -eta / a_new,
                                           buf, pb, meta, W, dmark, marks, pen, np.int64(r))
        if buf[4][0] < 0.0:
            st[5] += 1.0
        if not math.isfinite(loss):
            status = 1
            break
        st[4] += loss
        inc = eta * 1 / N
        us += inc / a_new
        up += inc
        a = a_new
        k += 1
        if a < RENORMALISE_BELOW:
            st[0], st[1], st[2], st[3] = k, a, us, up
            _scale_rows(W, a, variant)
            _renormalise(v, aux, empty, st, variant)
            a, us = st[1], st[2]
    st[0], st[1], st[2], st[3] = k, a, us, up
    _store_rows(space, meta, W, v, aux)
    return status


# --------------------------------------------------------------------------- one pass
@njit(cache=True, nogil=True)
def sgd_pass(space, data, order, v, aux, l1w, m, st, prm):
    """One pass of SGD-L1 over the samples ``order`` (in that order), mini-batches of
    ``prm[6]`` samples. Updates v, aux and st in place; returns 0, or 1 when a loss
    became non-finite (divergence; the pass stops there)."""
    L = space[0]
    u_ptr, b_ptr, b_base, t_base = space[1], space[3], space[5], space[7]
    seq_ptr = data[0]
    eta0, alpha, N, l2, l1 = prm[0], prm[1], prm[4], prm[5], prm[7]
    schedule, variant, B = int(prm[2]), int(prm[3]), max(1, int(prm[6]))
    n = len(v)
    mixed = len(m) > 0
    lazy = variant != NAIVE
    direct = lazy and B == 1 and not mixed        # scatter the gradient straight into v
    if direct and len(l1w) == 0 and n < 2 ** 31:
        return _pass_padded(space, data, order, v, aux, l1, st, prm)
    umark = np.full(len(u_ptr) - 1, -1, dtype=np.int64)
    bmark = np.full(len(b_ptr) - 1, -1, dtype=np.int64)
    tu = np.empty(len(u_ptr) - 1, dtype=np.int64)
    tb = np.empty(len(b_ptr) - 1, dtype=np.int64)
    ntu = np.zeros(1, dtype=np.int64)
    ntb = np.zeros(1, dtype=np.int64)
    g = v if direct else np.zeros(n)
    buf = _buffers(L, _max_len(seq_ptr, order), len(data[5]) > 0)
    trans, expT, expTT = np.zeros(L * L), np.zeros(L * L), np.zeros(L * L)
    mode = np.int64(MARK_SETTLE if lazy else MARK)
    want = len(v) >= 0
    k, a, us, up = st[0], st[1], st[2], st[3]
    for start in range(0, len(order), B):
        end = min(start + B, len(order))
        nb = end - start
        eta = learning_rate(eta0, alpha, schedule, k, N)
        a_new = a * (1.0 - eta * nb * l2 / N)
        ntu[0] = 0
        ntb[0] = 0
        marks = (umark, bmark, tu, tb, ntu, ntb, np.int64(start))
        pen = (aux, l1w, l1, us, up, np.int64(variant))
        # 1.-2. settle what the samples touch, then their gradient at those weights
        if lazy:
            penalise_block(v, aux, l1w, l1, m, us, up, t_base, n, variant)
        tmax = _transitions(v, m, a, space, trans, expT, expTT)
        coef = -eta / a_new if direct else 1.0
        step_loss = 0.0
        for r in range(start, end):
            buf[4][0] = 0.0
            step_loss += sequence_grad(v, m, a, space, data, order[r], trans, expT, expTT, tmax, g, coef, want,
                                       buf, pen, marks, mode)
            if buf[4][0] < 0.0:
                st[5] += 1.0
        if not math.isfinite(step_loss):
            st[0], st[1], st[2], st[3] = k, a, us, up
            return 1
        st[4] += step_loss
        # 3. advance the accumulated penalty (per unit of l1, v units)
        inc = eta * nb / N
        us += inc / a_new
        up += inc
        # 4. the gradient step of the touched weights (unless it was scattered into v).
        # Their own penalty of this step is *not* applied now: it composes exactly with
        # what accrues until their next settlement (no gradient in between), so it is
        # applied then -- at the next touch, or by settle_all at the end of the pass.
        if lazy:
            if not direct:
                inv_a = 1.0 / a_new
                for r in range(ntu[0]):
                    at = tu[r]
                    _step_block(v, g, m, inv_a, eta, u_ptr[at], u_ptr[at + 1])
                for r in range(ntb[0]):
                    at = tb[r]
                    _step_block(v, g, m, inv_a, eta, b_base + b_ptr[at], b_base + b_ptr[at + 1])
                _step_block(v, g, m, inv_a, eta, t_base, n)
            a = a_new
        else:
            # naive: the sub-gradient of the penalty at the old weights, on every weight
            per_weight = len(l1w) > 0
            shrink = eta * nb * l2 / N
            for i in range(n):
                z = v[i]
                sgn = 1.0 if z > 0.0 else (-1.0 if z < 0.0 else 0.0)
                sh = shrink * m[i] if mixed else shrink
                v[i] = z * (1.0 - sh) - eta * g[i] - inc * (l1w[i] if per_weight else l1) * sgn
            for r in range(ntu[0]):
                at = tu[r]
                g[u_ptr[at]:u_ptr[at + 1]] = 0.0
            for r in range(ntb[0]):
                at = tb[r]
                g[b_base + b_ptr[at]:b_base + b_ptr[at + 1]] = 0.0
            g[t_base:] = 0.0
            us = up
        k += nb
        if a < RENORMALISE_BELOW:
            st[0], st[1], st[2], st[3] = k, a, us, up
            _renormalise(v, aux, m, st, variant)
            a, us = st[1], st[2]
    st[0], st[1], st[2], st[3] = k, a, us, up
    return 0


@njit(cache=True, nogil=True)
def sample_losses(space, data, order, w):
    """Sum of -log p(y_s | x_s) over the samples ``order`` at the weights w (no gradient)."""
    L = space[0]
    buf = _buffers(L, _max_len(data[0], order), len(data[5]) > 0)
    trans, expT, expTT = np.zeros(L * L), np.zeros(L * L), np.zeros(L * L)
    m = np.zeros(0)
    tmax = _transitions(w, m, 1.0, space, trans, expT, expTT)
    dummy = np.zeros(0)
    pen, marks = _no_pen(), _no_marks()
    mode = np.int64(NO_MARK)
    want = len(dummy) > 0          # False, typed as a run-time bool (one compiled sequence_grad)
    total = 0.0
    for r in range(len(order)):
        total += sequence_grad(w, m, 1.0, space, data, order[r], trans, expT, expTT, tmax, dummy, 0.0, want,
                               buf, pen, marks, mode)
    return total


@njit(cache=True, nogil=True)
def sample_gradient(space, data, s, w, g):
    """Adds the gradient of -log p(y_s | x_s) at w to g; returns the loss."""
    L = space[0]
    lo, hi = data[0][s], data[0][s + 1]
    buf = _buffers(L, max(1, hi - lo), len(data[5]) > 0)
    trans, expT, expTT = np.zeros(L * L), np.zeros(L * L), np.zeros(L * L)
    m = np.zeros(0)
    tmax = _transitions(w, m, 1.0, space, trans, expT, expTT)
    want = len(g) >= 0
    return sequence_grad(w, m, 1.0, space, data, s, trans, expT, expTT, tmax, g, 1.0, want, buf, _no_pen(),
                         _no_marks(), np.int64(NO_MARK))
