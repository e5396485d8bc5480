"""The second-order chain CRF's pieces of the SGD pass (:mod:`spargel.chain.sgd_kernels`,
written once for both orders): the sequence step over the pair states of
:mod:`spargel.chain.crf2_kernels` (inference is :mod:`spargel.chain.inference`), the
triples' transition structures and the pass's scratch.

Per step the pass loads the triple weights into the transition structure
(``PAIR_ONES``, or the exact ``LIST`` of every transition when a triple weight is below
``-CANCEL_LIMIT``: :func:`load_triples`); each sequence's step (:func:`sample_step`)
settles (lazy variants), the first time the step meets them, the unigram and pair
attribute blocks it uses, then adds its gradient to a buffer that is zero outside the
touched blocks. A step costs O(attributes x labels and pairs of its sequences + length
x (S + |triples|)).
"""

import numpy as np

from ..core.jit import inner

from ..core import lazy_l1 as Z
from . import inference as C
from . import crf2_kernels as K2
from . import crf_kernels as K
from . import crf_sgd as S1
from .crf_sgd import LOSS      # what a step does with the blocks it meets
from .kernel_data import PhaseWork


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
    U, E, alpha, lm = buf.U, buf.E, buf.alpha, buf.lm
    gam, tcount = xbuf.gamma, xbuf.tcount
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
        logz, how = S1.phase_marginals(n, S, trans, buf, xbuf, want, True)
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


# --------------------------------------------------------------------------- the pass's second-order pieces
@inner()
def load_triples(v, m, a, space, x, ones, lst, list_k):
    """Load the triple weights (lazily scaled) into ``x`` and the structure the step
    uses: ``lst`` (the LIST of every transition, ``list_k`` the list index of each
    triple) when one is below ``-CANCEL_LIMIT`` (returns True), else ``ones``
    (PAIR_ONES; returns False)."""
    t_base = space.t_base
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
    return exact


@inner()
def step_sequence(v, m, a, space, data, s, wk, exact, g, coef, mode, pen, marks, fallbacks):
    """:func:`sample_step` of sequence s under the structure the step loaded
    (:func:`load_triples`: ``exact``, the LIST, else PAIR_ONES) with its scratch
    (``wk``: the pass's :class:`~spargel.chain.kernel_data.PassWork`)."""
    if exact:
        return sample_step(v, m, a, space, data, s, wk.lst, g, coef, mode, wk.buf, wk.xbuf_list, pen, marks,
                           fallbacks, wk.sw, wk.partial)
    return sample_step(v, m, a, space, data, s, wk.trans, g, coef, mode, wk.buf, wk.xbuf, pen, marks, fallbacks,
                       wk.sw, wk.partial)


def structures(space_t):
    """(PAIR_ONES over the layout's triples, LIST of every transition, list index of each
    triple), all with zero scores: the pass loads the weights per step."""
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


def pass_buffers(view, order, trans):
    """The second order's fields of a pass's :class:`~spargel.chain.kernel_data.PassWork`
    over the sequences ``order`` of a :class:`~spargel.chain.crf2.CRF2View`, ``trans``
    its :func:`structures`: no padded rows (the general pass, with the log-space
    fallback), the marginal scratch under each structure (``xbuf`` under PAIR_ONES,
    ``xbuf_list`` under LIST) and ``T`` the triple weights."""
    space, data = view.space_t, view.data_t
    ones, lst, list_k = trans
    L = space.L
    S = (L + 1) * L
    maxlen = K.max_length(data.seq_ptr, order)
    lb = K2.log_buffers(L, maxlen)
    n_t = len(space.t_pair)

    def xbuf(n_glob):
        return PhaseWork(lb.la, lb.lb, lb.gamma, lb.fv_t, lb.cand, np.zeros(S * L),
                         (np.zeros((1, 1)), np.zeros(n_glob), np.zeros(0)))

    return dict(W=np.zeros((0, 1)), R=np.zeros((0, 1)), dmark=np.zeros(0, dtype=np.int64), T=np.zeros(n_t),
                buf=K2.work_buffers(L, maxlen), xbuf=xbuf(n_t), tok=None, flat=True, big=None, trans=ones, lst=lst,
                list_k=list_k, xbuf_list=xbuf(S * L))
