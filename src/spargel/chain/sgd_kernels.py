"""The SGD capability of both chain CRFs, written once with the order as a parameter:
one compiled pass of lazily penalised SGD (:mod:`spargel.core.lazy_l1`) over a list of
sequences, and the summed loss of a list of sequences.

Per step (``batch`` sequences) the pass

1. *settles* the blocks the step's sequences use (lazy variants): brings the
   transitions (first order) / triples (second order) and each touched attribute block
   up to date with the l1 penalty accrued since they were last touched -- fused with
   the state scores, so each block is settled the first time the step meets it;
2. loads the transition weights into the order's transition structure and computes the
   gradient of the sequences' negative log-likelihood at these weights; with one
   sequence per step (first order) it is scattered straight into the weights, else into
   a buffer kept zero outside the touched blocks;
3. advances the schedule, the l2 shrink factor and the penalty accumulator.

The step's own l1 penalty reaches a weight at its next settlement (next touch, or
``settle_all`` at the end of the pass): with no gradient in between, applying the rule
at ``u_k`` and later at ``u_j`` gives exactly what applying it once at ``u_j`` gives.
So a step costs O(attributes x labels (pairs) of its sequences + length x |Y|^2) at
order 1 and O(... + length x (S + |triples|)) at order 2, never O(model size) -- except
for ``naive``, which by definition penalises every weight.

What differs per order comes from the order's own module: the sequence step, the
transition structures and the scratch (first order: :mod:`spargel.chain.crf_sgd`, with
its padded-rows, direct and resumable variants; second order:
:mod:`spargel.chain.crf2_sgd`, whose triples are loaded into a ``PAIR_ONES`` structure,
or the exact ``LIST`` of every transition when a triple weight is below
``-CANCEL_LIMIT``). The pass takes the order as the two flags ``first, second`` of
:func:`~spargel.chain.crf_kernels.order_flags` (one True, the other None): numba
compiles no code under ``if x is not None`` when ``x`` is None, so each order's
compiled pass holds that order's code only.
"""

import numpy as np

from ..core.jit import inner, kernel

from ..core import lazy_l1 as Z
from . import crf_kernels as K
from . import crf_sgd as S1
from . import crf2_sgd as S2
from .crf_sgd import DIVERGED, DONE, FELL_BACK, LOSS, LOSS_ONLY, MARK, NEEDS_LOG, SETTLE, STOPPED
from .kernel_data import Marks, PassRows, PassWork, Penalty


# --------------------------------------------------------------------------- passes
def has_partial(partial, order):
    """Whether a partially labelled sequence is among ``order`` (``partial``: 0/1 flags
    per sequence, or None)."""
    return partial is not None and bool(np.any(partial[order]))


def work(view, trans, order, v, aux, use_rows, direct, sw=None, partial=None, logsp=None):
    """Everything a pass over the sequences ``order`` of a view needs, allocated here
    (kernels allocate nothing): ``(wk, lanes)``, ``wk`` a
    :class:`~spargel.chain.kernel_data.PassWork`; ``sw`` the per-sequence weights and
    ``partial`` the 0/1 flags of partially labelled sequences (None, in the tuple too:
    all weights 1, no partial labels among ``order``; the pass then compiles without
    their code). ``trans``: the order's transition structures. First order: with
    ``use_rows`` the padded rows (``lanes``, see
    :func:`spargel.chain.crf_sgd.pass_buffers`), ``direct``: the gradient goes straight
    into v; ``logsp`` None: the variant without the log-space fallback (see
    :func:`run_pass`). The second order's pass always has the fallback."""
    first, second = view.flags
    space = view.space_t
    lanes = None
    if second:
        fields = S2.pass_buffers(view, order, trans)
        logsp = True
    else:
        fields, lanes = S1.pass_buffers(view, order, v, aux, use_rows, trans)
    n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
    wk = PassWork(umark=np.full(n_u, -1, dtype=np.int64), bmark=np.full(n_b, -1, dtype=np.int64),
                  tu=np.empty(n_u, dtype=np.int64), tb=np.empty(n_b, dtype=np.int64),
                  ntu=np.zeros(1, dtype=np.int64), ntb=np.zeros(1, dtype=np.int64),
                  g=v if direct else np.zeros(len(v)),
                  sw=None if sw is None or len(sw) == 0 else np.ascontiguousarray(sw, dtype=np.float64),
                  partial=np.ascontiguousarray(partial, dtype=np.uint8) if has_partial(partial, order) else None,
                  logsp=logsp, **fields)
    return wk, lanes


def run_pass(view, trans, order, v, aux, l1w, m, st, prm, sw=None, partial=None):
    """One pass of SGD-L1 (:func:`sgd_pass`) over the sequences ``order`` of a view,
    with its scratch; ``trans`` the order's transition structures (first order: a
    DENSE structure used as scratch; second order:
    :func:`spargel.chain.crf2_sgd.structures`). The padded rows (if the pass uses them)
    are written back to v / aux at the end. Returns the pass's status (DONE or
    DIVERGED).

    The log-space fallback (a sequence whose scaled recursion under- or overflows,
    weights in the hundreds) is rare, and its code is a fifth of the pass's compilation,
    so the common first-order pass -- one sequence per step, no partial labels -- runs
    first without it: a sequence that needs it stops the pass before its step has
    written anything but settled weights (settling again at the same point changes
    nothing), and the variant with the fallback, compiled on first need, resumes from
    that step. Other passes (mini-batches, whose earlier sequences have written their
    gradients, partial labels, whose second recursion runs after the first one's
    scatter, and the second order's) carry the fallback from the start."""
    first, second = view.flags
    order = np.ascontiguousarray(order, dtype=np.int64)
    direct, use_rows = pass_layout(prm, l1w, m)
    if second:
        direct = use_rows = False
    resumable = direct and not has_partial(partial, order)
    wk, lanes = work(view, trans, order, v, aux, use_rows, direct, sw, partial, None if resumable else True)
    status = _resumed_pass(view, order, v, aux, l1w, m, st, prm, wk, None if direct else True)
    if use_rows and lanes is not None:          # (None: the rows were v's and aux's own)
        S1.store_rows(lanes, wk.W, wk.R, v, aux)
    return status


def loss_only():
    """``(st, prm)`` of a pass that only sums the losses (variant ``LOSS_ONLY``, one
    step over every sequence)."""
    return Z.new_state(), Z.sgd_params(0.0, 0.0, 0.0, LOSS_ONLY, 1.0, 0.0, 1.0, 0.0)


def summed_loss(view, trans, order, w, sw=None, partial=None):
    """Sum of ``c_s (-log p(y_s | x_s))`` over the sequences ``order`` at w (the pass's
    ``LOSS_ONLY`` variant)."""
    order = np.ascontiguousarray(order, dtype=np.int64)
    _, second = view.flags
    wk, _ = work(view, trans, order, w, np.zeros(len(w)), not second, False, sw, partial)
    st, prm = loss_only()
    nothing = np.zeros(0)
    # nothing moves (whatever the labels): a stopped sum restarts from its beginning
    # (the first order's loss shares its compiled variant with the direct pass)
    _resumed_pass(view, order, w, nothing, nothing, nothing, st, prm, wk, True if second else None)
    return float(st[Z.ONLINE_LOSS])


def _resumed_pass(view, order, v, aux, l1w, m, st, prm, wk, general):
    """:func:`sgd_pass` from the start; where the variant without the log-space fallback
    stopped, the variant with it resumes. Returns DONE or DIVERGED."""
    first, second = view.flags
    status, step = sgd_pass(view.space_t, view.data_t, order, v, aux, l1w, m, st, prm, wk, 0, general, first,
                            second)
    if status == NEEDS_LOG:
        status, _ = sgd_pass(view.space_t, view.data_t, order, v, aux, l1w, m, st, prm, wk._replace(logsp=True),
                             step, general, first, second)
    return status


def pass_layout(prm, l1w, m):
    """(direct, use_rows) of a first-order pass: the gradient goes straight into the
    weights with one sample per step and no l2 mask; padded rows need a uniform l1 too."""
    lazy = int(prm.variant) != Z.NAIVE
    direct = lazy and max(1, int(prm.batch)) == 1 and len(m) == 0
    return direct, direct and len(l1w) == 0


@inner()
def step_touched(v, g, pen, m, space, prm, eta, nb, a_new, inc, lazy, marks):
    """The gradient step of a step's touched weights from the buffer ``g`` (the unigram
    blocks ``tu[:ntu[0]]``, the bigram / pair blocks ``tb[:ntb[0]]`` and the
    transitions, of the :class:`~spargel.chain.kernel_data.Marks` ``marks``; lazy
    variants: their own penalty of this step reaches them at their next settlement), or
    ``naive``'s step of every weight (``pen``: the step's
    :class:`~spargel.chain.kernel_data.Penalty`); ``g`` is left zero."""
    u_ptr, b_ptr, b_base, t_base = space.u_ptr, space.b_ptr, space.b_base, space.t_base
    tu, ntu, tb, ntb = marks.tu, marks.ntu, marks.tb, marks.ntb
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
        Z.naive_step(v, g, pen.l1w, pen.l1, m, eta, nb, prm.l2, prm.N, inc)
        for r in range(ntu[0]):
            at = tu[r]
            g[u_ptr[at]:u_ptr[at + 1]] = 0.0
        for r in range(ntb[0]):
            at = tb[r]
            g[b_base + b_ptr[at]:b_base + b_ptr[at + 1]] = 0.0
        g[t_base:] = 0.0


@kernel()
def sgd_pass(space, data, order, v, aux, l1w, m, st, prm, wk, begin, general, first, second):
    """One pass of SGD-L1 over the sequences ``order`` (in that order) from
    ``order[begin]`` on, mini-batches of ``prm.batch`` sequences (see :mod:`spargel.core.lazy_l1`
    for ``st`` and ``prm``), for the chain of order ``first`` / ``second``. Updates v,
    aux and st in place; returns ``(status, step)``: DONE, DIVERGED when a loss became
    non-finite (the pass stops there), or NEEDS_LOG when the first order's variant
    without the log-space fallback met a sequence that needs it (``step``: the index in
    ``order`` where the stopped step starts, to resume from). ``wk`` is the scratch of
    :func:`work` (its ``g`` is ``v`` itself for a direct pass; padded rows are written
    back by the caller, :func:`run_pass`). ``general`` is None for a pass of single
    lazy steps whose gradient goes straight into v (the mini-batch and naive steps are
    then not compiled), True otherwise. With variant ``LOSS_ONLY`` nothing moves:
    st[ONLINE_LOSS] receives the summed loss at v (one entry point for both uses keeps first-use
    compilation short)."""
    t_base = space.t_base
    l1 = prm.l1
    variant, B = int(prm.variant), max(1, int(prm.batch))
    n = len(v)
    lazy = variant != Z.NAIVE
    umark, W, R, dmark, bmark, tu, tb, ntu, ntb = wk.umark, wk.W, wk.R, wk.dmark, wk.bmark, wk.tu, wk.tb, wk.ntu, wk.ntb
    g, T, buf, xbuf, sw, partial = wk.g, wk.T, wk.buf, wk.xbuf, wk.sw, wk.partial
    tok, flat, big, logsp, trans = wk.tok, wk.flat, wk.big, wk.logsp, wk.trans
    loss_only = variant == LOSS_ONLY        # no step: the summed loss at v, into st[ONLINE_LOSS]
    if loss_only:
        B = max(1, len(order))
        lazy = False
        st[Z.SHRINK] = 1.0                  # the weights are v itself
    direct = False                          # the gradient goes straight into v (first order only)
    if first is not None:
        direct = lazy and B == 1 and len(m) == 0
    Lp = W.shape[1]
    rows = PassRows(umark, W, R, dmark)
    fallbacks = st[Z.FALLBACKS:Z.FALLBACKS + 1]
    mode = np.int64(SETTLE if lazy else MARK)
    status = DONE
    for start in range(begin, len(order), B):
        end = min(start + B, len(order))
        nb = end - start
        eta, a_new = Z.step_rate(st, prm, nb)
        a, us, up = st[Z.SHRINK], st[Z.U_SCALED], st[Z.U_PLAIN]
        ntu[0] = 0
        ntb[0] = 0
        marks = Marks(umark, tu, ntu, bmark, tb, ntb, np.int64(start))
        pen = Penalty(aux, l1w, l1, us, up, np.int64(variant))
        if lazy:
            Z.penalise_block(v, aux, l1w, l1, m, us, up, t_base, n, variant)
        if first is not None:
            S1.set_transitions(v, m, a, space, T, trans)
        exact = False
        if second is not None:
            exact = S2.load_triples(v, m, a, space, T, wk.trans, wk.lst, wk.list_k)
        coef = 0.0 if loss_only else (-eta / a_new if direct else 1.0)
        if loss_only:
            mode = np.int64(LOSS)
            a = 1.0
        step_loss = 0.0
        for r in range(start, end):
            if first is not None:
                buf.scale[0] = 0.0
                step_loss += S1.sample_step(v, m, a, space, data, order[r], trans, g, coef, mode, buf, xbuf, rows,
                                            tok, flat, big, logsp, pen, marks, sw, partial)
                if logsp is None:
                    if buf.scale[0] == STOPPED:
                        return NEEDS_LOG, start
                elif buf.scale[0] == FELL_BACK:
                    st[Z.FALLBACKS] += 1.0
            if second is not None:
                step_loss += S2.step_sequence(v, m, a, space, data, order[r], wk, exact, g, coef, mode, pen, marks,
                                              fallbacks)
        if loss_only:
            st[Z.ONLINE_LOSS] = step_loss
            return DONE, len(order)
        if not (step_loss > -np.inf and step_loss < np.inf):
            status = DIVERGED
            break
        st[Z.ONLINE_LOSS] += step_loss
        inc = Z.step_done(st, prm, eta, nb, a_new, lazy)
        # the gradient step of the touched weights (unless it was scattered into v); their
        # own penalty of this step reaches them at their next settlement
        if general is None:
            pass
        elif not direct:
            step_touched(v, g, pen, m, space, prm, eta, nb, a_new, inc, lazy, marks)
        if st[Z.SHRINK] < Z.RENORMALISE_BELOW:
            a = st[Z.SHRINK]
            for r in range(W.shape[0]):
                for y in range(Lp):
                    W[r, y] *= a
                    if lazy:
                        R[r, y] *= a
            Z.renormalise(v, aux, m, st, variant)
    return status, len(order)
