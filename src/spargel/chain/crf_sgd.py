"""The linear-chain CRF's SGD capability: one compiled pass of lazily penalised SGD
(:mod:`spargel.core.lazy_l1`) over a list of sequences, and the summed loss of a list of
sequences. Inference is :mod:`spargel.chain.inference`; the features are those of
:mod:`spargel.chain.crf_kernels`.

Per step (``batch`` sequences) the pass

1. *settles* the blocks the step's sequences use (lazy variants): brings each touched
   attribute block, the transitions and the bigram blocks up to date with the l1
   penalty accrued since they were last touched -- fused with the emission scores, so
   each block is settled the first time the step meets it;
2. computes the gradient of the sequences' negative log-likelihood at these weights;
   with one sequence per step it is scattered straight into the weights, with
   mini-batches into a buffer kept zero outside the touched blocks;
3. advances the schedule, the l2 shrink factor and the penalty accumulator.

The step's own l1 penalty reaches a weight at its next settlement (next touch, or
``settle_all`` at the end of the pass): with no gradient in between, applying the rule
at ``u_k`` and later at ``u_j`` gives exactly what applying it once at ``u_j`` gives.
So a step costs O(attributes x labels of its sequences + length x |Y|^2), never
O(model size) -- except for ``naive``, which by definition penalises every weight.

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

from collections import namedtuple

import numpy as np
from numba import njit

from ..core.jit import inner, kernel

from ..core import lazy_l1 as Z
from . import inference as C
from . import crf_kernels as K
from .kernel_data import BigramList, Marks, Penalty
from ..core.ranges import concat_ranges

FAST = C.FAST
LOSS, MARK, SETTLE = 0, 1, 2          # what a step does with the blocks it meets
LOSS_ONLY = -1                        # variant code of a pass that only sums the losses
DONE, DIVERGED, NEEDS_LOG = 0, 1, 2   # what a pass returns (with the step to resume from)
FELL_BACK, STOPPED = -1.0, -2.0       # buf.scale[0] after a step: it used log space / it needs it
SCALED, LOG_SPACE = 0, 1              # how phase_marginals ran (or NEEDS_LOG)


# --------------------------------------------------------------------------- layouts
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
    meets it. The token lists (``tok``, see :func:`work`) name every weight of every
    attribute met, so this settles exactly the attribute blocks the step touches."""
    W, R, dmark = rows[1], rows[2], rows[3]
    eaux, wmark = tok
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
def phase_marginals(E, n, S, trans, psi, alpha, beta, scale, shift, tmp, kbuf, P, need, corr, xbuf, want, logsp):
    """log Z of a sequence's ``n`` rows of state scores ``E`` (``S`` states) and, with
    ``want``, its marginals and transition counts (``xbuf[5]``, by list index): returns
    ``(log Z, how)``, ``how`` SCALED when the scaled recursion held (marginals in
    ``alpha``), LOG_SPACE when it took log space (marginals in ``xbuf[2]``), ``NEEDS_LOG`` when
    it would need log space but ``logsp`` is None (the fallback is then not compiled;
    nothing was computed). One phase of both orders' :func:`sample_step` (compiled on
    its own, so that the fallback's code is left out where ``logsp`` is None)."""
    la, lb, gam, fv_t, cand, tcount, acc = xbuf
    C.exp_rows(E, psi, shift, n, S, kbuf)
    logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
    for q in range(len(tcount)):
        tcount[q] = 0.0
    if logz != logz:
        if logsp is not None:
            logz = C.forward_backward_log(E, n, trans, corr, la, lb, scale, gam, tcount, need, P, fv_t, cand)
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
    the gold score. ``trans`` is the (DENSE) transition
    structure at the current weights. Returns NaN when even log space fails.

    ``tok`` not None: the padded-rows pass, whose emissions and scatter are the batch
    gradient's own kernels (``crf_kernels.emissions`` / ``scatter`` over the token lists,
    rows in ``rows[1]``); ``flat`` not None: the general pass (each attribute read as its
    block of v). One of the two is None, and numba compiles no code under a test of an
    argument that is None (a tuple is not known to be not None), so each pass compiles
    only its own path. ``big`` None: the data has no bigram attributes (no corrections,
    pair marginals or bigram marking compiled). ``logsp`` None: the log-space fallback
    is not compiled; a sequence whose scaled recursion fails then stops the step before
    it writes any gradient (``buf.scale[0] = STOPPED``, returns 0) and the pass is resumed
    by the variant that has it (see :func:`run_pass`)."""
    E, psi, alpha, beta, scale, shift, tmp = buf.E, buf.psi, buf.alpha, buf.beta, buf.scale, buf.shift, buf.tmp
    kbuf, P, need, cacc, mark, corr = buf.kbuf, buf.P, buf.need, buf.cacc, buf.mark, buf.corr
    gam, tcount = xbuf[2], xbuf[5]
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
        K.emissions(v, space, tok[0], lo, hi, E)
        if a != 1.0:
            for i in range(n):
                for y in range(E.shape[1]):
                    E[i, y] *= a
    if flat is not None:
        flat_emissions(v, m, a, space, data, lo, hi, E, pen, rows[0], marks.tu, marks.ntu, stamp, mode)
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
        logz, how = phase_marginals(E, n, L, trans, psi, alpha, beta, scale, shift, tmp, kbuf, P, need, corr, xbuf,
                                    want, logsp)
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
                K.scatter(space, data, tok[0], lo, hi, gamma, P, need, cs, g, rows[1])
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


# --------------------------------------------------------------------------- passes
def has_partial(partial, order):
    """Whether a partially labelled sequence is among ``order`` (``partial``: 0/1 flags
    per sequence, or None)."""
    return partial is not None and bool(np.any(partial[order]))


#: the scratch of a pass (:func:`work`):
#: ``umark`` / ``bmark`` -- per unigram / bigram attribute the stamp of the last step that met it;
#: ``W`` / ``R`` -- the padded rows' weights / penalty records; ``dmark`` -- per row its stamp;
#: ``tu`` / ``tb`` -- the unigram / bigram attributes a step met, ``ntu[0]`` / ``ntb[0]`` of them;
#: ``g`` -- the gradient (``v`` itself for a direct pass); ``T`` -- the transition weights;
#: ``buf`` -- the kernels' :class:`~spargel.chain.kernel_data.Work`; ``xbuf`` -- marginal scratch;
#: ``sw`` / ``partial`` -- sequence weights / partial-label flags (None: none);
#: ``tok`` -- token lists of the padded-rows pass (None: the general pass);
#: ``flat`` -- True for the general pass (None: padded rows);
#: ``big`` -- True when the data has bigram attributes (else None);
#: ``logsp`` -- True: the log-space fallback is compiled (None: not)
PassWork = namedtuple("PassWork", "umark W R dmark bmark tu tb ntu ntb g T buf xbuf sw partial tok flat big "
                                  "logsp")


def work(view, order, v, aux, use_rows, direct, sw=None, partial=None, logsp=None):
    """Everything a pass over the sequences ``order`` of a :class:`~spargel.chain.crf.CRFView`
    needs, allocated here (kernels allocate nothing): ``(wk, lanes)``, ``wk`` a
    :class:`PassWork`; ``sw`` the per-sequence weights and ``partial`` the 0/1 flags of partially
    labelled sequences (None, in the tuple too: all weights 1, no partial labels among
    ``order``; the pass then compiles without their code). With ``use_rows`` the
    view's dense attributes (``row_attrs``) get padded rows W (weights) and R (penalty
    records) loaded from v / aux (``lanes``, see :func:`row_lanes`), and ``tok`` holds
    the view's token lists over those rows with a per-weight mark array (else None, and
    ``flat`` True: the general pass; see :func:`sample_step`). ``big`` is None when the
    data has no bigram attributes (the pass then compiles without their code); ``logsp``
    None: the variant without the log-space fallback (see :func:`run_pass`)."""
    space, data = view.space_t, view.data_t
    L = space.L
    Lp = C.padded(L)
    row_attrs = view.d_attr if use_rows else view.d_attr[:0]
    W, R = np.zeros((len(row_attrs), Lp)), np.zeros((len(row_attrs), Lp))
    lanes = row_lanes(space, row_attrs)
    load_rows(lanes, v, aux, W, R)
    tok = None
    if use_rows:
        # the batch model's token lists, reading the pass's rows (every row in use)
        eaux = view.aux._replace(Wd=W, dnz=np.ones(len(row_attrs), np.uint8))
        tok = (eaux, np.full(len(space.u_lab), -1, dtype=np.int64))
    has_big = len(data.big_ids) > 0
    maxlen = K.max_length(data.seq_ptr, order)
    n_corr = K.correction_capacity(space, data, np.diff(space.b_ptr), order) if has_big else 0
    buf = K.work_buffers(L, Lp, maxlen, n_corr, has_big)
    outer = np.zeros((Lp, Lp)) if len(space.t_pair) > 0 else np.zeros((1, 1))
    pos = np.zeros(L * L) if has_big else np.zeros(0)     # corrections only come from bigram attributes
    xbuf = (np.empty((maxlen, L)), np.empty((maxlen, L)), np.zeros((maxlen, Lp)), np.empty(L * L),
            np.empty(2 * L + 1), np.zeros(L * L), (outer, np.zeros(0), pos))
    n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
    wk = PassWork(np.full(n_u, -1, dtype=np.int64), W, R, np.full(len(row_attrs), -1, dtype=np.int64),
                  np.full(n_b, -1, dtype=np.int64),
                  np.empty(n_u, dtype=np.int64), np.empty(n_b, dtype=np.int64), np.zeros(1, dtype=np.int64),
                  np.zeros(1, dtype=np.int64), v if direct else np.zeros(len(v)), np.zeros(L * L), buf, xbuf,
                  None if sw is None or len(sw) == 0 else np.ascontiguousarray(sw, dtype=np.float64),
                  np.ascontiguousarray(partial, dtype=np.uint8) if has_partial(partial, order) else None,
                  tok,
                  None if use_rows else True, True if has_big else None, logsp)
    return wk, lanes


def run_pass(view, trans, order, v, aux, l1w, m, st, prm, sw=None, partial=None):
    """One pass of SGD-L1 (:func:`sgd_pass`) over the sequences ``order`` of a view,
    with its scratch; the padded rows (if the pass uses them) are written back to v /
    aux at the end. Returns the pass's status (DONE or DIVERGED).

    The log-space fallback (a sequence whose scaled recursion under- or overflows,
    weights in the hundreds) is rare, and its code is a fifth of the pass's compilation,
    so the common pass -- one sequence per step, no partial labels -- runs first without
    it: a sequence that needs it stops the pass before its step has written anything
    but settled weights (settling again at the same point changes nothing), and the
    variant with the fallback, compiled on first need, resumes from that step. Other
    passes (mini-batches, whose earlier sequences have written their gradients, and
    partial labels, whose second recursion runs after the first one's scatter) carry the
    fallback from the start."""
    direct, use_rows = pass_layout(prm, l1w, m)
    resumable = direct and not has_partial(partial, order)
    wk, lanes = work(view, order, v, aux, use_rows, direct, sw, partial, None if resumable else True)
    status = _resumed_pass(view, trans, order, v, aux, l1w, m, st, prm, wk, None if direct else True)
    if use_rows:
        store_rows(lanes, wk.W, wk.R, v, aux)
    return status


def loss_only():
    """``(st, prm)`` of a pass that only sums the losses (variant ``LOSS_ONLY``, one
    step over every sequence): both orders' :func:`summed_loss`."""
    st = np.zeros(6)
    prm = np.zeros(8)
    prm[3], prm[4], prm[6] = LOSS_ONLY, 1.0, 1.0
    return st, prm


def summed_loss(view, trans, order, w, sw=None, partial=None):
    """Sum of ``c_s (-log p(y_s | x_s))`` over the sequences ``order`` at w (the pass's
    ``LOSS_ONLY`` variant)."""
    wk, _ = work(view, order, w, np.zeros(len(w)), True, False, sw, partial)
    st, prm = loss_only()
    nothing = np.zeros(0)
    # nothing moves (whatever the labels): a stopped sum restarts from its beginning
    _resumed_pass(view, trans, order, w, nothing, nothing, nothing, st, prm, wk, None)
    return float(st[4])


def _resumed_pass(view, trans, order, v, aux, l1w, m, st, prm, wk, general):
    """:func:`sgd_pass` from the start; where the variant without the log-space fallback
    stopped, the variant with it resumes. Returns DONE or DIVERGED."""
    status, step = sgd_pass(view.space_t, view.data_t, trans, order, v, aux, l1w, m, st, prm, wk, 0, general)
    if status == NEEDS_LOG:
        status, _ = sgd_pass(view.space_t, view.data_t, trans, order, v, aux, l1w, m, st, prm, wk._replace(logsp=True),
                             step, general)
    return status


@njit(cache=True, nogil=True, inline="always")
def _set_transitions(v, m, a, space, T, trans):
    L, t_pair, t_base = space.L, space.t_pair, space.t_base
    for p in range(L * L):
        T[p] = 0.0
    for k in range(len(t_pair)):
        T[t_pair[k]] = Z.weight(v, m, a, t_base + k)
    C.refresh_dense(trans, T)


def pass_layout(prm, l1w, m):
    """(direct, use_rows) of a pass: the gradient goes straight into the weights with one
    sample per step and no l2 mask; padded rows need a uniform l1 too."""
    lazy = int(prm[3]) != Z.NAIVE
    direct = lazy and max(1, int(prm[6])) == 1 and len(m) == 0
    return direct, direct and len(l1w) == 0


@inner()
def step_touched(v, g, l1w, l1, m, space, prm, eta, nb, a_new, inc, lazy, tu, ntu, tb, ntb):
    """The gradient step of a step's touched weights from the buffer ``g`` (the unigram
    blocks ``tu[:ntu[0]]``, the bigram / pair blocks ``tb[:ntb[0]]`` and the
    transitions; lazy variants: their own penalty of this step reaches them at their
    next settlement), or ``naive``'s step of every weight; ``g`` is left zero. Shared
    by both orders' passes."""
    u_ptr, b_ptr, b_base, t_base = space.u_ptr, space.b_ptr, space.b_base, space.t_base
    n = len(v)
    if lazy:
        inv_a = 1.0 / a_new
        for r in range(ntu[0]):
            at = tu[r]
            Z.step_block(v, g, m, inv_a, eta, u_ptr[at], u_ptr[at + 1])
        for r in range(ntb[0]):
            at = tb[r]
            Z.step_block(v, g, m, inv_a, eta, b_base + b_ptr[at], b_base + b_ptr[at + 1])
        Z.step_block(v, g, m, inv_a, eta, t_base, n)
    else:
        Z.naive_step(v, g, l1w, l1, m, eta, nb, prm[5], prm[4], inc)
        for r in range(ntu[0]):
            at = tu[r]
            g[u_ptr[at]:u_ptr[at + 1]] = 0.0
        for r in range(ntb[0]):
            at = tb[r]
            g[b_base + b_ptr[at]:b_base + b_ptr[at + 1]] = 0.0
        g[t_base:] = 0.0


@kernel()
def sgd_pass(space, data, trans, order, v, aux, l1w, m, st, prm, wk, first, general):
    """One pass of SGD-L1 over the sequences ``order`` (in that order) from
    ``order[first]`` on, mini-batches of ``prm[6]`` sequences (see :mod:`spargel.core.lazy_l1`
    for ``st`` and ``prm``). Updates v, aux and st in place; returns ``(status, step)``:
    DONE, DIVERGED when a loss became non-finite (the pass stops there), or NEEDS_LOG
    when the variant without the log-space fallback met a sequence that needs it
    (``step``: the index in ``order`` where the stopped step starts, to resume from).
    ``trans`` is a DENSE transition structure used as scratch, ``wk`` the scratch of
    :func:`work` (its ``g`` is ``v`` itself for a direct pass; padded rows are written
    back by the caller, :func:`run_pass`). ``general`` is None for a pass of single
    lazy steps whose gradient goes straight into v (the mini-batch and naive steps are
    then not compiled), True otherwise. With variant ``LOSS_ONLY`` nothing moves:
    st[4] receives the summed loss at v (one entry point for both uses keeps first-use
    compilation short)."""
    t_base = space.t_base
    l1 = prm[7]
    variant, B = int(prm[3]), max(1, int(prm[6]))
    n = len(v)
    lazy = variant != Z.NAIVE
    umark, W, R, dmark, bmark, tu, tb, ntu, ntb = wk.umark, wk.W, wk.R, wk.dmark, wk.bmark, wk.tu, wk.tb, wk.ntu, wk.ntb
    g, T, buf, xbuf, sw, partial = wk.g, wk.T, wk.buf, wk.xbuf, wk.sw, wk.partial
    tok, flat, big, logsp = wk.tok, wk.flat, wk.big, wk.logsp
    loss_only = variant == LOSS_ONLY        # no step: the summed loss at v, into st[4]
    if loss_only:
        B = max(1, len(order))
        lazy = False
        st[1] = 1.0                         # the weights are v itself
    direct = lazy and B == 1 and len(m) == 0
    Lp = W.shape[1]
    rows = (umark, W, R, dmark)
    mode = np.int64(SETTLE if lazy else MARK)
    status = DONE
    for start in range(first, len(order), B):
        end = min(start + B, len(order))
        nb = end - start
        eta, a_new = Z.step_rate(st, prm, nb)
        a, us, up = st[1], st[2], st[3]
        ntu[0] = 0
        ntb[0] = 0
        marks = Marks(umark, tu, ntu, bmark, tb, ntb, np.int64(start))
        pen = Penalty(aux, l1w, l1, us, up, np.int64(variant))
        if lazy:
            Z.penalise_block(v, aux, l1w, l1, m, us, up, t_base, n, variant)
        _set_transitions(v, m, a, space, T, trans)
        coef = 0.0 if loss_only else (-eta / a_new if direct else 1.0)
        if loss_only:
            mode = np.int64(LOSS)
            a = 1.0
        step_loss = 0.0
        for r in range(start, end):
            buf.scale[0] = 0.0
            step_loss += sample_step(v, m, a, space, data, order[r], trans, g, coef, mode, buf, xbuf, rows, tok,
                                     flat, big, logsp, pen, marks, sw, partial)
            if logsp is None:
                if buf.scale[0] == STOPPED:
                    return NEEDS_LOG, start
            elif buf.scale[0] == FELL_BACK:
                st[5] += 1.0
        if loss_only:
            st[4] = step_loss
            return DONE, len(order)
        if not (step_loss > -np.inf and step_loss < np.inf):
            status = DIVERGED
            break
        st[4] += step_loss
        inc = Z.step_done(st, prm, eta, nb, a_new, lazy)
        # the gradient step of the touched weights (unless it was scattered into v); their
        # own penalty of this step reaches them at their next settlement
        if general is None:
            pass
        elif not direct:
            step_touched(v, g, l1w, l1, m, space, prm, eta, nb, a_new, inc, lazy, tu, ntu, tb, ntb)
        if st[1] < Z.RENORMALISE_BELOW:
            a = st[1]
            for r in range(W.shape[0]):
                for y in range(Lp):
                    W[r, y] *= a
                    if lazy:
                        R[r, y] *= a
            Z.renormalise(v, aux, m, st, variant)
    return status, len(order)
