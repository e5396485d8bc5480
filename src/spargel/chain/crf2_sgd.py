"""The second-order CRF's SGD capability: one compiled pass of lazily penalised SGD
(:mod:`spargel.core.lazy_l1`) over a list of sequences, and the summed loss of a list of
sequences. Inference is :mod:`spargel.chain.inference` over the pair states of
:mod:`spargel.chain.crf2_kernels`.

Per step (``batch`` sequences) the pass

1. *settles* (lazy variants) the triple block and, the first time the step meets them,
   the unigram and pair attribute blocks its sequences use: each is brought up to date
   with the l1 penalty accrued since it was last touched, before it is read;
2. loads the triple weights into the transition structure (``PAIR_ONES``, or the exact
   ``LIST`` of every transition when a triple weight is below ``-CANCEL_LIMIT``);
3. adds the gradient of the sequences' negative log-likelihood to a buffer that is zero
   outside the touched blocks;
4. takes the gradient step on the touched blocks (every weight for ``naive``) and
   advances the schedule, the l2 shrink factor and the penalty accumulator.

A step costs O(attributes x labels and pairs of its sequences + length x (S + |triples|)),
never O(model size) -- except for ``naive``, which by definition penalises every
weight. Weights are read as ``lazy_l1.weight(v, m, a, k)`` (lazily scaled).
"""

from collections import namedtuple

import numpy as np

from ..core.jit import inner, kernel

from ..core import lazy_l1 as Z
from . import inference as C
from . import crf2_kernels as K2
from . import crf_kernels as K
from . import crf_sgd as S1
from .crf_sgd import LOSS, MARK, SETTLE     # what a step does with the blocks it meets

from .crf_sgd import LOSS_ONLY      # variant code of a pass that only sums the losses
from .kernel_data import Marks, Penalty


@inner(fastmath=C.FAST)
def _unigram_rows(v, m, a, space, data, lo, hi, U, pen, marks, mode):
    """U[t - lo, :L] = unigram scores of tokens lo..hi-1 at the lazily scaled weights;
    with mode MARK / SETTLE each block met for the first time in this step is recorded
    (and settled first): the first-order chain's general emission loop."""
    S1.flat_emissions(v, m, a, space, data, lo, hi, U, pen, marks.umark, marks.tu, marks.ntu, marks.stamp, mode)


@inner(fastmath=C.FAST)
def _scatter(space, data, lo, hi, gamma, lm, tcount, coef, gold, g):
    """g += coef * (expected counts - gold counts if ``gold``) of the sequence's unigram,
    pair and triple weights (gamma: state marginals, lm: label marginals, tcount:
    transition counts by list index)."""
    L, u_ptr, u_lab, b_ptr, b_pair, b_base = space.L, space.u_ptr, space.u_lab, space.b_ptr, space.b_pair, space.b_base
    t_pair, t_base, t_index = space.t_pair, space.t_base, space.t_index
    uni_ptr, uni_ids, uni_vals = data.uni_ptr, data.uni_ids, data.uni_vals
    big_ptr, big_ids, big_vals, labels = data.big_ptr, data.big_ids, data.big_vals, data.labels
    g1 = 1.0 if gold else 0.0
    unit = len(uni_vals) == 0                   # every unigram value is 1
    prev2, prev = L, L
    for t in range(lo, hi):
        y = labels[t]
        marg, st = lm[t - lo], gamma[t - lo]
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            at = uni_ids[j]
            cv = coef if unit else coef * uni_vals[j]
            for k in range(u_ptr[at], u_ptr[at + 1]):
                lab = u_lab[k]
                g[k] += cv * (marg[lab] - (g1 if lab == y else 0.0))
        pair = prev * L + y
        for j in range(big_ptr[t], big_ptr[t + 1]):
            at = big_ids[j]
            cv = coef * big_vals[j]
            for k in range(b_ptr[at], b_ptr[at + 1]):
                p = b_pair[k]
                g[b_base + k] += cv * (st[p] - (g1 if p == pair else 0.0))
        if gold and t > lo:
            ti = t_index[(prev2 * L + prev) * L + y]
            if ti >= 0:
                g[t_base + ti] -= coef
        prev2, prev = prev, y
    for q in range(len(t_pair)):
        g[t_base + q] += coef * tcount[K2.list_index(t_pair[q], L)]


@inner()
def sample_step(v, m, a, space, data, s, trans, g, coef, mode, buf, xbuf, pen, marks, fallbacks, sw, partial):
    """``c_s (-log p(y_s | x_s))`` at the weights ``w = weight(v, m, a, .)`` (after
    settling the blocks it meets, mode SETTLE), ``c_s`` the sequence's weight (``sw``
    None: 1, and the code for other weights is not compiled); with ``coef != 0``, adds ``coef`` times its gradient to ``g``. A partially
    labelled sequence (``partial[s]``, label -1 where unknown) has the numerator ``log
    sum_{y consistent} exp(score)``: a second, clamped forward-backward instead of the
    gold score. ``trans`` is the transition structure at the current weights;
    ``fallbacks[0]`` counts the passes that needed log space. Returns NaN when even log
    space fails."""
    U, E, psi, alpha, beta, scale, shift, tmp = buf.U, buf.E, buf.psi, buf.alpha, buf.beta, buf.scale, buf.shift, buf.tmp
    kbuf, lm, need, P, corr = buf.kbuf, buf.lm, buf.need, buf.P, buf.corr
    gam, tcount = xbuf[2], xbuf[5]
    L = space.L
    S = (L + 1) * L
    labels = data.labels
    lo, hi, c, clamped = S1.sample_of(data, s, sw, partial)
    n = hi - lo
    if mode != LOSS:
        S1.mark_bigrams(v, m, space, data, lo, hi, pen, marks.bmark, marks.tb, marks.ntb, marks.stamp, mode)
    _unigram_rows(v, m, a, space, data, lo, hi, U, pen, marks, mode)
    K2.pair_scores(v, m, a, space, data, lo, hi, U, E)
    total = 0.0 if clamped else -K2.gold_score(v, m, a, space, data, s, E)
    if not (total > -np.inf and total < np.inf):
        return np.nan
    want = coef != 0.0
    # phase 0: log Z and the expected counts; phase 1 (partial labels): the clamped
    # numerator and its expected counts, with the opposite sign
    for phase in range(2 if clamped else 1):
        sign = 1.0 if phase == 0 else -1.0
        if phase == 1:
            K2.constrain(E, labels, lo, n, L)
        logz, how = S1.phase_marginals(E, n, S, trans, psi, alpha, beta, scale, shift, tmp, kbuf, P, need, corr,
                                       xbuf, want, True)
        gamma = alpha
        if how == S1.LOG_SPACE:
            fallbacks[0] += 1.0
            if not (logz > -np.inf and logz < np.inf):
                return np.nan
            gamma = gam
        total += sign * logz
        if want:
            K2.label_marginals(gamma, n, L, lm)
            _scatter(space, data, lo, hi, gamma, lm, tcount, sign * c * coef, not clamped, g)
    return c * total


# --------------------------------------------------------------------------- passes
#: the scratch of a pass (:func:`work`):
#: ``umark`` / ``bmark`` -- per unigram / bigram attribute the stamp of the last step that met it;
#: ``tu`` / ``tb`` -- the unigram / bigram attributes a step met, ``ntu[0]`` / ``ntb[0]`` of them;
#: ``g`` -- the gradient; ``x`` -- the transition weights;
#: ``buf`` -- the kernels' :class:`~spargel.chain.kernel_data.Work`;
#: ``xbuf_ones`` / ``xbuf_list`` -- the marginal scratch under the PAIR_ONES / LIST structure;
#: ``sw`` / ``partial`` -- sequence weights / partial-label flags (None: none)
PassWork = namedtuple("PassWork", "umark bmark tu tb ntu ntb g x buf xbuf_ones xbuf_list sw partial")


def work(space, data, order, n_params, sw=None, partial=None):
    """Everything a pass needs, allocated here (kernels allocate nothing): a
    :class:`PassWork`; ``sw`` the per-sequence weights and ``partial`` the 0/1 flags of partially labelled
    sequences (None, in the tuple too: all weights 1, no partial labels among ``order``;
    the pass then compiles without their code, as the first order's)."""
    L = space.L
    S = (L + 1) * L
    maxlen = K.max_length(data.seq_ptr, order)
    buf = K2.work_buffers(L, maxlen)
    lb = K2.log_buffers(L, maxlen)
    n_t = len(space.t_pair)

    def xbuf(n_glob):
        return (lb[0], lb[1], lb[2], lb[3], lb[4], np.zeros(S * L),
                (np.zeros((1, 1)), np.zeros(n_glob), np.zeros(0)))

    n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
    return PassWork(np.full(n_u, -1, dtype=np.int64), np.full(n_b, -1, dtype=np.int64),
                    np.empty(n_u, dtype=np.int64), np.empty(n_b, dtype=np.int64), np.zeros(1, dtype=np.int64),
                    np.zeros(1, dtype=np.int64), np.zeros(n_params), np.zeros(n_t), buf, xbuf(n_t), xbuf(S * L),
                    None if sw is None or len(sw) == 0 else np.ascontiguousarray(sw, dtype=np.float64),
                    np.ascontiguousarray(partial, dtype=np.uint8) if S1.has_partial(partial, order) else None)


@kernel()
def sgd_pass(space, data, ones, lst, list_k, order, v, aux, l1w, m, st, prm, wk):
    """One pass of SGD-L1 over the sequences ``order`` (in that order), mini-batches of
    ``prm[6]`` sequences (see :mod:`spargel.core.lazy_l1` for ``st`` and ``prm``). Updates v,
    aux and st in place; returns 0, or 1 when a loss became non-finite (divergence; the
    pass stops there). ``ones`` is a PAIR_ONES structure over the layout's triples and
    ``lst`` the LIST of every transition (``list_k``: the list index of each triple),
    both refreshed in place per step; ``wk`` the scratch of :func:`work`. With variant
    ``LOSS_ONLY`` nothing moves: st[4] receives the summed loss at v."""
    t_base = space.t_base
    l1 = prm[7]
    variant, B = int(prm[3]), max(1, int(prm[6]))
    n = len(v)
    lazy = variant != Z.NAIVE
    umark, bmark, tu, tb, ntu, ntb, g, x = wk.umark, wk.bmark, wk.tu, wk.tb, wk.ntu, wk.ntb, wk.g, wk.x
    buf, xbuf_ones, xbuf_list, sw, partial = wk.buf, wk.xbuf_ones, wk.xbuf_list, wk.sw, wk.partial
    loss_only = variant == LOSS_ONLY
    if loss_only:
        B = max(1, len(order))
        lazy = False
    mode = np.int64(SETTLE if lazy else MARK)
    if loss_only:
        mode = np.int64(LOSS)
    status = 0
    for start in range(0, len(order), B):
        end = min(start + B, len(order))
        nb = end - start
        eta, a_new = Z.step_rate(st, prm, nb)
        a, us, up = st[1], st[2], st[3]
        if loss_only:
            a = 1.0
        ntu[0] = 0
        ntb[0] = 0
        marks = Marks(umark, tu, ntu, bmark, tb, ntb, np.int64(start))
        pen = Penalty(aux, l1w, l1, us, up, np.int64(variant))
        if lazy:
            Z.penalise_block(v, aux, l1w, l1, m, us, up, t_base, n, variant)
        lowest = 0.0
        for q in range(len(x)):
            x[q] = Z.weight(v, m, a, t_base + q)
            if x[q] < lowest:
                lowest = x[q]
        exact = lowest < -K.CANCEL_LIMIT
        if exact:
            C.refresh_list(lst, list_k, x)
        else:
            C.refresh_pairs(ones, x)
        coef = 0.0 if loss_only else 1.0
        step_loss = 0.0
        trans = lst if exact else ones
        xbuf = xbuf_list if exact else xbuf_ones
        fallbacks = st[5:6]
        for r in range(start, end):
            step_loss += sample_step(v, m, a, space, data, order[r], trans, g, coef, mode, buf, xbuf, pen, marks,
                                     fallbacks, sw, partial)
        if loss_only:
            st[4] = step_loss
            return 0
        if not (step_loss > -np.inf and step_loss < np.inf):
            status = 1
            break
        st[4] += step_loss
        inc = Z.step_done(st, prm, eta, nb, a_new, lazy)
        S1.step_touched(v, g, l1w, l1, m, space, prm, eta, nb, a_new, inc, lazy, tu, ntu, tb, ntb)
        if st[1] < Z.RENORMALISE_BELOW:
            Z.renormalise(v, aux, m, st, variant)
    return status


def structures(space_t):
    """(PAIR_ONES over the layout's triples, LIST of every transition, list index of each
    triple), all with zero scores: :func:`sgd_pass` loads the weights per step."""
    L, t_pair = space_t.L, space_t.t_pair.astype(np.int64)
    A = L + 1
    S = A * L
    src = t_pair // L
    ones = C.make_transitions(S, src, (src % L) * L + t_pair % L, np.zeros(len(t_pair)), kind=C.PAIR_ONES,
                              n_labels=L, all_pairs=False)
    j = np.repeat(np.arange(L * L, dtype=np.int64), A)
    a = np.tile(np.arange(A, dtype=np.int64), L * L)
    lst = C.make_transitions(S, a * L + j // L, j, np.zeros(S * L), kind=C.LIST, all_pairs=False)
    list_k = ((src % L) * L + t_pair % L) * A + src // L
    return ones, lst, list_k


def run_pass(view, trans, order, v, aux, l1w, m, st, prm, sw=None, partial=None):
    """One pass of SGD-L1 (:func:`sgd_pass`) over the sequences ``order`` of a
    :class:`~spargel.chain.crf2.CRF2View`, with its scratch; ``trans`` are the
    :func:`structures` of its layout. Returns 0, or 1 on divergence (as
    :func:`spargel.chain.crf_sgd.run_pass`)."""
    ones, lst, list_k = trans
    order = np.ascontiguousarray(order, dtype=np.int64)
    wk = work(view.space_t, view.data_t, order, len(v), sw, partial)
    return sgd_pass(view.space_t, view.data_t, ones, lst, list_k, order, v, aux, l1w, m, st, prm, wk)


def summed_loss(view, trans, order, w, sw=None, partial=None):
    """Sum of ``c_s (-log p(y_s | x_s))`` over the sequences ``order`` at w (the pass's
    ``LOSS_ONLY`` variant)."""
    st, prm = S1.loss_only()
    nothing = np.zeros(0)
    run_pass(view, trans, order, w, nothing, nothing, nothing, st, prm, sw, partial)
    return float(st[4])
