"""The first-order chain CRF's pieces of the SGD pass (:mod:`spargel.chain.sgd_kernels`,
written once for both orders), and the per-sequence kernels both orders' steps share
(the general emission loop, the bigram marking, a sequence's weight and flags, one
phase of marginals). Inference is :mod:`spargel.chain.inference`; the features are
those of :mod:`spargel.chain.crf_kernels`.

Padded rows: with one sequence per step, a uniform l1 and every weight l2-scaled alike
(the common case), unigram attributes with many labels live during the pass in padded
rows ``W[r]`` (weights) and ``R[r]`` (their penalty records; NaN for the lanes of labels
the attribute does not own), loaded from v/aux at the start of a pass and written back
at its end. Such a pass settles the rows and other weights a sequence reads through the
batch model's token lists, then computes its emissions and scatters its gradient with
the batch gradient's own kernels (``crf_kernels.emissions`` / ``scatter``), so a first
SGD fit compiles little code of its own; the general pass (mini-batches, an l2 mask,
per-weight l1) reads each attribute as its block of the flat layout. The arithmetic per
weight is the same (tests check both against eager SGD, with attributes that own only
some labels).
"""

import math

import numpy as np
from numba import njit

from ..core.jit import inner

from ..core import lazy_l1 as Z
from . import inference as C
from . import crf_kernels as K
from .kernel_data import BigramList, PhaseWork, TokenLists
from ..core.ranges import concat_ranges

FAST = C.FAST
LOSS, MARK, SETTLE = 0, 1, 2          # what a step does with the blocks it meets
LOSS_ONLY = -1                        # variant code of a pass that only sums the losses
DONE, DIVERGED, NEEDS_LOG = 0, 1, 2   # what a pass returns (with the step to resume from)
FELL_BACK, STOPPED = -1.0, -2.0       # buf.scale[0] after a step: it used log space / it needs it
SCALED, LOG_SPACE = 0, 1              # how phase_marginals ran (or NEEDS_LOG)


def row_lanes(space, row_attrs):
    """``(k, r, lab)``: during a padded-rows pass weight ``k[i]`` lives in row ``r[i]``,
    lane ``lab[i]`` (``row_attrs[r]`` owns row r)."""
    u_ptr, u_lab = space.u_ptr, space.u_lab
    starts, ends = u_ptr[row_attrs], u_ptr[row_attrs + 1]
    k = concat_ranges(starts, ends)
    return k, np.repeat(np.arange(len(row_attrs), dtype=np.int64), ends - starts), u_lab[k]


def load_rows(lanes, v, aux, W, R):
    """Copy the weights and penalty records of the row attributes into W and R (see
    :func:`row_lanes`); the lanes of labels an attribute does not own get weight 0 and
    record NaN (the mark that settling turns them back to 0: the gradient step adds to
    every lane, and every row is settled before a step reads it)."""
    k, r, lab = lanes
    W[:, :] = 0.0
    R[:, :] = np.nan
    W[r, lab] = v[k]
    R[r, lab] = aux[k]


def store_rows(lanes, W, R, v, aux):
    k, r, lab = lanes
    v[k] = W[r, lab]
    aux[k] = R[r, lab]


# --------------------------------------------------------------------------- one sequence
@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def flat_emissions(v, m, a, space, data, lo, hi, E, pen, umark, tu, ntu, stamp, mode):
    """E[t - lo] = unigram scores of tokens lo..hi-1 at the lazily scaled weights, each
    attribute read as its block of weights; with mode MARK / SETTLE each block met for
    the first time in this step (``umark[at] != stamp``) is recorded in ``tu`` (and
    settled first). Shared by the first- and second-order chains' general passes."""
    aux, l1w, l1, us, up, variant = pen.aux, pen.l1w, pen.l1, pen.us, pen.up, pen.variant
    u_ptr, u_lab = space.u_ptr, space.u_lab
    uni_ptr, uni_ids, uni_vals = data.uni_ptr, data.uni_ids, data.uni_vals
    Lp = E.shape[1]
    unit = len(uni_vals) == 0                   # every value is 1
    for t in range(lo, hi):
        row = E[t - lo]
        for y in range(Lp):
            row[y] = 0.0
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            at = uni_ids[j]
            x = 1.0 if unit else uni_vals[j]
            k0, k1 = u_ptr[at], u_ptr[at + 1]
            if mode != LOSS and umark[at] != stamp:
                umark[at] = stamp
                tu[ntu[0]] = at
                ntu[0] += 1
                if mode == SETTLE:
                    Z.penalise_block(v, aux, l1w, l1, m, us, up, k0, k1, variant)
            if len(m) == 0:               # no mask: a loop the compiler keeps tight
                xa = x * a
                for k in range(k0, k1):
                    row[u_lab[k]] += xa * v[k]
            else:
                for k in range(k0, k1):
                    row[u_lab[k]] += x * Z.weight(v, m, a, k)


@njit(cache=True, nogil=True, inline="always")
def settle_tokens(v, lo, hi, rows, tok, pen, stamp):
    """In a pass with padded rows (one sequence per step, uniform l1, no l2 mask): settle
    every row and every other weight that tokens lo..hi-1 read, the first time the step
    meets it. The token lists (``tok``, see :func:`pass_buffers`) name every weight of
    every attribute met, so this settles exactly the attribute blocks the step touches."""
    W, R, dmark = rows.W, rows.R, rows.dmark
    eaux, wmark = tok.aux, tok.wmark
    dptr, drows, eptr, ek = eaux.dptr, eaux.drows, eaux.eptr, eaux.ek
    aux, p, variant = pen.aux, pen.l1 * pen.us, pen.variant
    for t in range(lo, hi):
        for j in range(dptr[t], dptr[t + 1]):
            r = drows[j]
            if dmark[r] != stamp:
                dmark[r] = stamp
                Z.penalise_row(W[r], R[r], p, variant)
        for e in range(eptr[t], eptr[t + 1]):
            k = ek[e]
            if wmark[k] != stamp:
                wmark[k] = stamp
                v[k], aux[k] = Z._settle(v[k], aux[k], p, variant)


@njit(cache=True, nogil=True, inline="always")
def mark_bigrams(v, m, space, data, lo, hi, pen, bmark, tb, ntb, stamp, mode):
    """Record in ``tb`` (and settle, mode SETTLE) the bigram attribute blocks of tokens
    lo..hi-1 that this step (``stamp``) meets for the first time (``bmark``): both
    orders' passes (pair attributes at order 2)."""
    aux, l1w, l1, us, up, variant = pen.aux, pen.l1w, pen.l1, pen.us, pen.up, pen.variant
    b_ptr, b_base = space.b_ptr, space.b_base
    big_ptr, big_ids = data.big_ptr, data.big_ids
    for j in range(big_ptr[lo], big_ptr[hi]):
        at = big_ids[j]
        if bmark[at] != stamp:
            bmark[at] = stamp
            tb[ntb[0]] = at
            ntb[0] += 1
            if mode == SETTLE:
                Z.penalise_block(v, aux, l1w, l1, m, us, up, b_base + b_ptr[at], b_base + b_ptr[at + 1], variant)


@inner()
def subtract_gold(labels, lo, hi, L, gamma, P, need):
    """gamma -= the gold labels' indicators, and P -= the gold pairs' at the positions
    whose pair marginals are kept (expected minus gold counts, for the scatter)."""
    for t in range(lo, hi):
        gamma[t - lo, labels[t]] -= 1.0
        if P is not None:
            if t > lo and need[t - lo]:
                P[t - lo, labels[t - 1] * L + labels[t]] -= 1.0


@inner(fastmath=FAST)
def scatter_flat(space, data, lo, hi, gamma, P, need, coef, g):
    """g += coef * the counts of tokens lo..hi-1 weighted by ``gamma`` (unigram weights,
    each attribute read as its block) and by ``P`` (bigram weights where needed): the
    general pass's :func:`crf_kernels.scatter`."""
    u_ptr, u_lab = space.u_ptr, space.u_lab
    uni_ptr, uni_ids, uni_vals = data.uni_ptr, data.uni_ids, data.uni_vals
    unit = len(uni_vals) == 0                   # every value is 1
    for t in range(hi - 1, lo - 1, -1):          # last tokens first: their rows are still cached
        marg = gamma[t - lo]
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            at = uni_ids[j]
            x = coef if unit else coef * uni_vals[j]
            for k in range(u_ptr[at], u_ptr[at + 1]):
                g[k] += x * marg[u_lab[k]]
        if P is not None:
            if t > lo and need[t - lo]:
                K.add_bigram_counts(space, data, t, P[t - lo], coef, g)


@inner()
def sample_of(data, s, sw, partial):
    """``(lo, hi, c, clamped)`` of sequence s: its tokens, its weight (``sw`` None: 1)
    and whether it is partially labelled (``partial`` None: none is). Both orders'
    :func:`sample_step`."""
    c = 1.0
    if sw is not None:
        c = sw[s]
    clamped = False
    if partial is not None:
        clamped = partial[s] != 0
    return data.seq_ptr[s], data.seq_ptr[s + 1], c, clamped


@inner(fastmath=FAST)
def phase_marginals(n, S, trans, buf, xbuf, want, logsp):
    """log Z of a sequence's ``n`` rows of state scores ``buf.E`` (``S`` states) and, with
    ``want``, its marginals and transition counts (``xbuf.tcount``, by list index): returns
    ``(log Z, how)``, ``how`` SCALED when the scaled recursion held (marginals in
    ``alpha``), LOG_SPACE when it took log space (marginals in ``xbuf.gamma``), ``NEEDS_LOG`` when
    it would need log space but ``logsp`` is None (the fallback is then not compiled;
    nothing was computed). One phase of both orders' :func:`sample_step` (compiled on
    its own, so that the fallback's code is left out where ``logsp`` is None). ``buf``:
    the order's sequence buffers (``E``, ``psi``, ``alpha``, ``beta``, ``scale``, ``shift``,
    ``tmp``, ``kbuf``, ``P``, ``need``, ``corr``), ``xbuf`` a
    :class:`~spargel.chain.kernel_data.PhaseWork`."""
    E, psi, alpha, beta, scale, shift, tmp = buf.E, buf.psi, buf.alpha, buf.beta, buf.scale, buf.shift, buf.tmp
    kbuf, P, need, corr = buf.kbuf, buf.P, buf.need, buf.corr
    tcount, acc = xbuf.tcount, xbuf.acc
    C.exp_rows(E, psi, shift, n, S, kbuf)
    logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
    # the sparse step's structure (ONES, every weighted pair listed, no pair marginals):
    # only the listed pairs' counts are written and read, so only they are cleared
    sparse = trans.kind == C.ONES and P is None
    if sparse:
        gk = trans.gk
        for q in range(len(gk)):
            tcount[gk[q]] = 0.0
    else:
        for q in range(len(tcount)):
            tcount[q] = 0.0
    if logz != logz:
        if logsp is not None:
            # the O(S + nnz) log-space pass, unless a weight below -CANCEL_LIMIT marked
            # the structure (set_transitions: 1 + expm1(T) would cancel there)
            if sparse and trans.tshift[1] > -np.inf:
                logz = C.forward_backward_log_ones(E, n, trans, xbuf.la, xbuf.lb, scale, xbuf.gamma, tcount,
                                                   xbuf.cand)
            else:
                if sparse:
                    for q in range(len(tcount)):
                        tcount[q] = 0.0
                logz = C.forward_backward_log(E, n, trans, corr, xbuf.la, xbuf.lb, scale, xbuf.gamma, tcount, need,
                                              P, xbuf.fv_t, xbuf.cand)
            return logz, LOG_SPACE
        return logz, NEEDS_LOG
    if want:
        outer, glob, pos = acc
        for i in range(outer.shape[0]):
            for y in range(outer.shape[1]):
                outer[i, y] = 0.0
        for q in range(len(glob)):
            glob[q] = 0.0
        for q in range(len(pos)):
            pos[q] = 0.0
        C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc, need, P, tmp)
        C.transition_counts(trans, acc, tcount)
    return logz, SCALED


@inner(fastmath=FAST)
def sample_step(v, m, a, space, data, s, trans, g, coef, mode, buf, xbuf, rows, tok, flat, big, logsp, pen, marks,
                sw, partial):
    """``c_s (-log p(y_s | x_s))`` at the weights ``w = s_i * v`` (after settling the
    blocks it meets, mode SETTLE), ``c_s`` the sequence's weight (``sw`` None: 1); with
    ``coef != 0``, adds ``coef`` times its gradient to ``g`` (only the sequence's own
    weights are written; ``g`` may be ``v`` itself, the weights are not read again once
    the gradient starts). A partially labelled sequence (``partial[s]``, label -1 where
    unknown; ``partial`` None when the pass has none) has the numerator
    ``log sum_{y consistent} exp(score)``: a second, clamped forward-backward instead of
    the gold score. ``trans`` is the (DENSE or ONES, :func:`set_transitions`) transition
    structure at the current weights. Returns NaN when even log space fails.

    ``tok`` not None: the padded-rows pass, whose emissions and scatter are the batch
    gradient's own kernels (``crf_kernels.emissions`` / ``scatter`` over the token lists,
    rows in ``rows.W``, a :class:`~spargel.chain.kernel_data.PassRows`); ``flat`` not None: the general pass (each attribute read as its
    block of v). One of the two is None, and numba compiles no code under a test of an
    argument that is None (a tuple is not known to be not None), so each pass compiles
    only its own path. ``big`` None: the data has no bigram attributes (no corrections,
    pair marginals or bigram marking compiled). ``logsp`` None: the log-space fallback
    is not compiled; a sequence whose scaled recursion fails then stops the step before
    it writes any gradient (``buf.scale[0] = STOPPED``, returns 0) and the pass is resumed
    by the variant that has it (see :func:`spargel.chain.sgd_kernels.run_pass`)."""
    E, alpha, P, need, cacc, mark, corr = buf.E, buf.alpha, buf.P, buf.need, buf.cacc, buf.mark, buf.corr
    gam, tcount = xbuf.gamma, xbuf.tcount
    L, t_pair, t_base, t_index = space.L, space.t_pair, space.t_base, space.t_index
    labels = data.labels
    lo, hi, c, clamped = sample_of(data, s, sw, partial)
    n = hi - lo
    stamp = marks.stamp
    if big is not None:
        if n > 1 and data.big_ptr[hi] > data.big_ptr[lo + 1] and mode != LOSS:
            mark_bigrams(v, m, space, data, lo + 1, hi, pen, marks.bmark, marks.tb, marks.ntb, stamp, mode)
    if tok is not None:
        if mode == SETTLE:
            settle_tokens(v, lo, hi, rows, tok, pen, stamp)
        K.emissions(v, space, tok.aux, lo, hi, E)
        if a != 1.0:
            for i in range(n):
                for y in range(E.shape[1]):
                    E[i, y] *= a
    if flat is not None:
        flat_emissions(v, m, a, space, data, lo, hi, E, pen, rows.umark, marks.tu, marks.ntu, stamp, mode)
    if big is not None:     # else cptr and need stay all zero: no corrections anywhere
        raw = BigramList(space.b_ptr, space.b_pair, space.b_base, v, space.b_pair[:0], space.b_pair[:0], v[:0],
                         space.b_ptr[:0])     # the live weights
        K.corrections(m, a, raw, data, lo, hi, trans, corr, cacc, mark, need, space.b_ptr[:0])
    want = coef != 0.0
    if not want:
        need[:n] = 0
    total = 0.0 if clamped else -K.gold_score(v, m, a, space, data, s, E)
    if not (total > -np.inf and total < np.inf):
        return np.nan
    # phase 0: log Z and the expected counts; phase 1 (partial labels): the clamped
    # numerator and its expected counts, with the opposite sign
    for phase in range(2 if clamped else 1):
        sign = 1.0 if phase == 0 else -1.0
        if partial is not None and phase == 1:
            K.clamp_labels(E, labels, lo, n, L)
        logz, how = phase_marginals(n, L, trans, buf, xbuf, want, logsp)
        if how == NEEDS_LOG:                 # no gradient written yet (see run_pass)
            buf.scale[0] = STOPPED
            return 0.0
        gamma = alpha
        if how == LOG_SPACE:
            buf.scale[0] = FELL_BACK            # (scale[0], not read again) for the pass statistics
            if not (logz > -np.inf and logz < np.inf):
                return np.nan
            gamma = gam
        total += sign * logz
        if want:
            cs = sign * c * coef
            if not clamped:
                subtract_gold(labels, lo, hi, L, gamma, P, need)
            if tok is not None:
                K.scatter(space, data, tok.aux, lo, hi, gamma, P, need, cs, g, rows.W)
            if flat is not None:
                scatter_flat(space, data, lo, hi, gamma, P, need, cs, g)
            for k in range(len(t_pair)):
                p = t_pair[k]
                i = p // L
                g[t_base + k] += cs * tcount[(p - i * L) * L + i]
    if want and not clamped:
        for t in range(lo + 1, hi):
            ti = t_index[labels[t - 1] * L + labels[t]]
            if ti >= 0:
                g[t_base + ti] -= c * coef
    return c * total


# --------------------------------------------------------------------------- the pass's first-order pieces
def pass_buffers(view, order, v, aux, use_rows, trans):
    """The first order's fields of a pass's :class:`~spargel.chain.kernel_data.PassWork`
    over the sequences ``order`` of a :class:`~spargel.chain.crf.CRFView`: ``(fields,
    lanes)``. With ``use_rows`` the view's dense attributes (``row_attrs``) get padded
    rows W (weights) and R (penalty records) loaded from v / aux (``lanes``, see
    :func:`row_lanes`), and ``tok`` holds the view's token lists over those rows with a
    per-weight mark array (else None, and ``flat`` True: the general pass; see
    :func:`sample_step`). ``big`` is None when the data has no bigram attributes (the
    pass then compiles without their code). ``trans``: the pass's DENSE or ONES transition
    structure (scratch, loaded per step by :func:`set_transitions`)."""
    space, data = view.space_t, view.data_t
    L = space.L
    Lp = C.padded(L)
    row_attrs = view.d_attr if use_rows else view.d_attr[:0]
    tok = None
    if use_rows and view.rows_in_w:
        # the rows are v's and aux's own (every attribute owns every label, crf.full_rows):
        # the pass reads and writes them in place, and no weight lies outside a row
        W, R = view.dense_rows(v), view.dense_rows(aux)
        lanes = None
        wmark = np.full(0, -1, dtype=np.int64)
    else:
        W, R = np.zeros((len(row_attrs), Lp)), np.zeros((len(row_attrs), Lp))
        lanes = row_lanes(space, row_attrs)
        load_rows(lanes, v, aux, W, R)
        wmark = np.full(len(space.u_lab), -1, dtype=np.int64)
    if use_rows:
        # the batch model's token lists, reading the pass's rows (every row in use)
        eaux = view.aux._replace(Wd=W, dnz=np.ones(len(row_attrs), np.uint8))
        tok = TokenLists(eaux, wmark)
    has_big = len(data.big_ids) > 0
    maxlen = K.max_length(data.seq_ptr, order)
    n_corr = K.correction_capacity(space, data, np.diff(space.b_ptr), order) if has_big else 0
    buf = K.work_buffers(L, Lp, maxlen, n_corr, has_big)
    # the sparse step (ONES) gathers each listed pair's whole count (inference.backward),
    # the dense one the L x L outer product
    sparse = trans.kind == C.ONES
    outer = np.zeros((Lp, Lp)) if len(space.t_pair) > 0 and not sparse else np.zeros((1, 1))
    pos = np.zeros(L * L) if has_big else np.zeros(0)     # corrections only come from bigram attributes
    xbuf = PhaseWork(np.empty((maxlen, L)), np.empty((maxlen, L)), np.zeros((maxlen, Lp)), np.empty(L * L),
                     np.empty(2 * L + 1), np.zeros(L * L), (outer, np.zeros(len(trans.gi) if sparse else 0), pos))
    fields = dict(W=W, R=R, dmark=np.full(len(row_attrs), -1, dtype=np.int64), T=np.zeros(L * L), buf=buf,
                  xbuf=xbuf, tok=tok, flat=None if use_rows else True, big=True if has_big else None,
                  trans=trans, lst=None, list_k=None, xbuf_list=None)
    return fields, lanes


@njit(cache=True, nogil=True, inline="always")
def set_transitions(v, m, a, space, T, trans):
    """Load the transition weights (lazily scaled) into the pass's structure ``trans``:
    DENSE (``T``: the L x L scratch), or ONES listing every weighted pair in the order
    of ``space.t_pair`` (:func:`spargel.chain.crf.ChainCRF._sgd_trans`; its step costs
    O(L + weighted pairs) a token). A ONES structure with a weight below
    ``-CANCEL_LIMIT`` (where ``1 + expm1`` cancels) gets the least log factor -inf, so
    :func:`spargel.chain.inference.forward` refuses it and the step takes the full
    log-space pass (:func:`phase_marginals`)."""
    L, t_pair, t_base = space.L, space.t_pair, space.t_base
    if trans.kind == C.ONES:
        gc, fv, gk = trans.gc, trans.fv, trans.gk
        lo = 0.0
        hi = 0.0
        for q in range(len(t_pair)):
            x = Z.weight(v, m, a, t_base + q)
            gc[q] = math.expm1(x)
            fv[gk[q]] = x
            lo = min(lo, x)
            hi = max(hi, x)
        trans.tshift[1] = lo if lo >= -C.CANCEL_LIMIT else -np.inf
        trans.tshift[2] = hi
        return
    for p in range(L * L):
        T[p] = 0.0
    for k in range(len(t_pair)):
        T[t_pair[k]] = Z.weight(v, m, a, t_base + k)
    C.refresh_dense(trans, T)
