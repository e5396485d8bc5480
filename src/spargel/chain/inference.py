"""Chain inference, written once: scaled forward-backward with a log-space fallback,
marginals, transition expectations, Viterbi and n-best over a chain of ``S`` states.

Every chain model (first-order CRF, second-order CRF over label pairs, the per-sample
step of SGD, the span updates of block coordinate descent) reduces a sequence of ``n``
positions to

* per-position state scores ``E[t, s]`` (log domain), and
* a transition structure ``trans`` (the same at every position, built once per weight
  vector by :func:`make_transitions`), plus optional per-position *corrections*: pairs
  ``(i, j)`` whose transition score is raised by ``B_t[i, j]`` at position ``t`` (the
  observation-conditioned bigram weights of a CRF).

The transition factor at position t is ``M_t[i, j] = exp(T[i, j] + B_t[i, j])`` over
the *allowed* pairs. ``trans`` stores it in one of four forms (``kind``):

``DENSE``
    every pair allowed; ``expT = exp(T - tshift)`` as a padded ``Sp x Sp`` matrix (and its
    transpose), so a forward or backward step is ``S`` contiguous row updates;
``ONES``
    every pair allowed and few non-zero ``T``: ``M = 1 + sum of corrections``, with the
    non-zero transitions as a *global* correction list ``expm1(T)`` (Sokolovska et al.
    2010, §3.2: a step costs ``O(S + nnz)``);
``LIST``
    only the listed pairs allowed (e.g. ``(a, b) -> (b, c)`` in a second-order chain),
    ``M = exp(T - tshift)`` on them: a step costs the number of allowed pairs;
``PAIR_ONES``
    second-order chains over label pairs: ``S = A * L`` states ``a * L + b`` (``b`` a label,
    ``a`` a label or, for ``a >= L``, a begin marker: states that start a chain and are
    never entered), allowed pairs exactly ``(a, b) -> (b, c)`` with ``b, c < L``, and few
    non-zero transition weights: ``M[(a, b), (b', c)] = [b = b'] (1 + expm1(T))``: a step
    costs ``O(S + nnz)``.

A position correction is given as ``(i, j, c, v, k)``: ``c = Mbase[i, j] * expm1(v)`` is
what it adds to ``M_t[i, j]`` (``Mbase`` the structure's own entry, see
:func:`base_entry`), ``v`` the raw score it adds to ``log M_t[i, j]`` and ``k`` the
index of the pair in the structure's list of allowed pairs (see below). Corrections of
a sequence are flat arrays with a pointer per position, a
:class:`~spargel.chain.kernel_data.Corrections` ``corr``: ``corr.ptr`` (read as ``cptr``)
and per entry ``corr.src``, ``corr.dst``, ``corr.factor``, ``corr.score``, ``corr.pair``
(``i, j, c, v, k``; read as ``ci, cj, cc, cv, ck``).

``1 + expm1(v)`` cancels when ``v`` is strongly negative (``v = -20`` leaves 9 digits,
``v = -37`` none), so a position with such a score lists its *whole* matrix instead:
its first entry is the sentinel ``i = -1`` (see :data:`FULL`), the structure's base is
not used there, and every allowed pair follows with ``c = Mbase[i, j] * exp(v)``.

A position may instead give its whole factor as a stored dense matrix (one entry, ``ci =
MAT``, ``cj`` the matrix's index in the structure's stack ``trans.mats``, its transpose
in ``trans.matsT``, its raw scores in ``trans.mscores`` flat as ``j * S + i``): where most pairs are
corrected, the vectorised dense step beats one scattered update per correction. Only
:func:`forward`, :func:`backward`, :func:`pair_matrix` and :func:`viterbi` read such
positions (the log-space and n-best functions get explicit lists); :func:`backward`
gathers such a position's transition expectations from its pair marginals (into
``pos``).

Scaling: each alpha row is normalised (Rabiner); emission rows are shifted by their
maximum before ``exp`` and ``M`` by ``tshift``, so every number stays in range unless a
whole row underflows, which :func:`forward` reports as NaN -- the caller then runs
:func:`forward_backward_log` on that sequence, which cannot underflow. That pass reads
every allowed pair (O(S^2) a position whatever the structure); a ONES structure listing
every weighted pair, on a sequence without corrections, has its own,
:func:`forward_backward_log_ones`, O(S + nnz) a position. ONES stores ``1 + expm1(T)``
unshifted, so a transition weight past about 320 (a line search's far trial point)
fails :func:`forward`'s bound (and past 709 overflows): the sparse log-space pass keeps
such sequences off the O(S^2) path.

Viterbi, n-best and the log-space pass read the allowed pairs as a list sorted by
destination state: ``fptr[j]:fptr[j+1]`` are the entries of the pairs ``(fi[k], j)`` with
raw score ``fv[k]`` (for DENSE and ONES all ``S^2`` pairs, ``k = j * S + i``).

Rows are padded to ``Sp`` (``S`` rounded up to :data:`LANES`) with zeros, so the dense
updates vectorise.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..core.jit import inner, kernel

LANES = 4
NEG_INF = -np.inf
# largest finite double. Under the 'reassoc' fast-math flag LLVM folds math.isfinite(x)
# (computed as x - x) to True, so finiteness is tested with ordered comparisons, which
# NaN fails: 0 < x < FLOAT_MAX.
FLOAT_MAX = 1.7976931348623157e308
DENSE, ONES, LIST, PAIR_ONES = 0, 1, 2, 3
# the scaled recursion is trusted only where a bound proves that no path it loses to
# underflow can matter (see :func:`forward`): a factor's log range times the rows'
# magnitudes stays within this many nats of the double range (708 nats down to the
# smallest normal double, less 2^53 of precision, the number of terms and a margin)
SCALED_LIMIT = 640.0
# ``1 + expm1(T)`` (ONES, PAIR_ONES) cancels below this score: such structures are made
# DENSE / LIST instead (see make_transitions)
CANCEL_LIMIT = 12.0
FULL = -1           # ci of the first correction of a position that lists its whole matrix
MAT = -2            # ci of the only entry of a position whose factor is a stored dense matrix
# re-association lets LLVM vectorise the row updates; NaN / inf keep their IEEE meaning
FAST = {"reassoc", "contract", "nsz", "arcp"}
EXP_FAST = {"contract", "nsz", "arcp"}      # no 'reassoc': x - k ln2 must keep its two steps


@kernel()
def padded(S):
    """``S`` rounded up to a multiple of :data:`LANES`."""
    return -(-S // LANES) * LANES


# --------------------------------------------------------------------------- structure
#: the transition structure of a chain (:func:`make_transitions`): its kind, the number
#: of states ``S`` (and of labels ``L`` for PAIR_ONES), the factors' shift and range
#: ``tshift``, the stored factors ``expT`` and their transpose ``expTT`` (DENSE), the
#: global corrections ``gi``, ``gj``, ``gc`` (ONES, PAIR_ONES; the pairs and factors
#: under LIST), the list of every allowed transition by destination (``fptr``, ``fi``,
#: ``fv``: sources and raw scores), ``gk`` the list index of each global correction,
#: the refresh scratch ``kbuf`` / ``ebuf``, the position matrices ``mats``,
#: ``matsT``, ``mscores`` (:func:`with_matrices`) and the log scores ``start`` / ``end``
#: that a constrained chain adds to its first and last state rows (0 or -inf per state;
#: both empty when every state may start and end a chain, :func:`end_scores`)
Transitions = namedtuple("Transitions", "kind S L tshift expT expTT gi gj gc fptr fi fv gk kbuf ebuf mats matsT "
                                        "mscores start end")


def make_transitions(S, src, dst, score, kind=None, n_labels=0, all_pairs=True, keep_zeros=False,
                     ones_fraction=None, allowed=None, start=None, end=None, steps=None):
    """The ``trans`` tuple of a chain with ``S`` states.

    ``src``, ``dst``, ``score``: the pairs with a (possibly zero) transition score.
    ``all_pairs``: every pair ``(i, j)`` is allowed (unlisted ones score 0); otherwise
    exactly the listed pairs are allowed. ``kind``: None picks ``ONES`` when at most
    ``ones_fraction`` of the pairs have a non-zero score, else ``DENSE`` (with
    ``all_pairs``) or ``LIST`` (without); ``PAIR_ONES`` is made only when asked for. The
    default fraction follows the costs of a step: a DENSE step is ``S * Sp`` vectorised
    multiply-adds, a ONES step ``S`` adds plus one scattered multiply-add (about three
    times dearer) per non-zero score, so ONES wins below about ``Sp / (12 S)``, some 8%
    of the pairs. (Callers know better: a chain whose positions carry corrections anyway
    favours ONES more, one that needs every pair's expectation at every position less.)
    ``n_labels``: for ``PAIR_ONES``, the L with ``S = A * L``, ``A >= L`` (then the
    allowed pairs are exactly ``(a, b) -> (b, c)`` with ``b, c < L``, and ``src``/``dst``
    list the pairs with a weight, zero ones included: their expected counts are gathered,
    and :func:`refresh_pairs` loads new scores in place).
    ``keep_zeros``: under ONES, list every given pair (zero scores included) as a global
    correction, so that :func:`refresh` can load new scores in place.
    ``allowed`` (S x S booleans, ``[i, j]``: the pair ``(i, j)`` may occur), ``start`` /
    ``end`` (S booleans: the state may start / end a chain): a *constrained* chain. With
    ``all_pairs`` (a DENSE structure then) the forbidden pairs get the score -inf (factor
    0), so every kernel that reads the structure -- forward-backward, its log space,
    Viterbi, n-best -- sums or maximises over the allowed paths only; a LIST takes -inf
    scores for its forbidden pairs from the caller (and ``steps``, see
    :func:`_shift_range`). The forbidden starts and ends go to ``trans.start`` /
    ``trans.end`` as -inf, which :func:`end_scores` adds to a sequence's first and last
    state rows.

    Returns a :class:`Transitions` ``(kind, S, L, tshift, expT, expTT, gi, gj, gc, fptr,
    fi, fv, gk, kbuf, ebuf, mats, matsT, mscores, start, end)``, read by name in the kernels: ``tshift`` is the array ``[tshift, lo, hi, steps]`` of the shift of the
    stored factors, the least and largest log of an allowed pair's factor (so compiled code can refresh a
    structure in place, see :func:`refresh`; :func:`forward` bounds its rounding with them)
    and the steps in which every state reaches every other (:func:`_shift_range`), ``gk[q]`` the list index of global
    correction q, ``kbuf`` / ``ebuf`` scratch for that refresh, ``mats`` / ``matsT`` /
    ``mscores`` the (empty) stack of position matrices (see :data:`MAT`;
    :func:`with_matrices`).
    """
    st = en = np.zeros(0)
    if allowed is not None or start is not None or end is not None:
        st, en = (np.where(np.ones(S, bool) if m is None else np.asarray(m, dtype=bool), 0.0, NEG_INF)
                  for m in (start, end))
        if st.shape != (S,) or en.shape != (S,):
            raise ValueError(f"start and end must have {S} entries")
        if allowed is not None:
            if not all_pairs:
                raise ValueError("allowed pairs need an all-pairs structure (a LIST lists its own)")
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (S, S):
                raise ValueError(f"allowed must be {S} x {S}, got {allowed.shape}")
            bi, bj = np.nonzero(~allowed)
            src = np.concatenate([np.asarray(src, dtype=np.int64), bi])
            dst = np.concatenate([np.asarray(dst, dtype=np.int64), bj])
            score = np.concatenate([np.asarray(score, dtype=np.float64), np.full(len(bi), NEG_INF)])
            steps = reach(allowed) if steps is None else steps
        if all_pairs:
            kind = DENSE
    trans = _make_transitions(S, src, dst, score, kind, n_labels, all_pairs, keep_zeros, ones_fraction)
    if steps is not None:
        trans[3][3] = max(trans[3][3], float(steps))
    # the refresh scratch only where refresh_dense uses it (two S^2 tables less otherwise)
    n_scratch = S * S if trans[0] == DENSE else 0
    return Transitions(*trans, np.zeros(n_scratch, np.int64), np.zeros(n_scratch), np.zeros((0, 1, 1)),
                       np.zeros((0, 1, 1)), np.zeros((0, 1)), st, en)


def with_matrices(trans, mats, matsT, scores):
    """The structure ``trans`` with the stack of position matrices ``mats`` (k x Sp x Sp,
    padding zero), their transposes and their raw scores (k x S^2, ``j * S + i``)."""
    return trans._replace(mats=mats, matsT=matsT, mscores=scores)


def _make_transitions(S, src, dst, score, kind, n_labels, all_pairs, keep_zeros, ones_fraction):
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    Sp = padded(S)
    L = int(n_labels)
    nz = score != 0
    if all_pairs:
        dense = np.zeros(S * S)
        np.add.at(dense, src * S + dst, score)
        if kind is None:
            frac = padded(S) / (12.0 * S) if ones_fraction is None else ones_fraction
            # (1 + expm1(T) cancels for strongly negative T: DENSE then)
            kind = ONES if (np.count_nonzero(nz) <= frac * S * S
                            and not (S and dense.min() < -CANCEL_LIMIT)) else DENSE
        fptr = np.arange(S + 1, dtype=np.int64) * S
        fi = np.tile(np.arange(S, dtype=np.int64), S)
        fv = dense.reshape(S, S).T.ravel().copy()           # entry k = j * S + i
        if kind == DENSE:
            allowed = dense[dense > NEG_INF]          # (-inf: a pair a constraint forbids)
            tshift = float(allowed.max()) if len(allowed) else 0.0
            expT = np.zeros((Sp, Sp))
            expT[:S, :S] = np.exp(dense.reshape(S, S) - tshift)
            return (DENSE, S, L, _shift_range(tshift, dense), expT, np.ascontiguousarray(expT.T),
                    np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), fptr, fi, fv, np.zeros(0, np.int64))
        if keep_zeros:
            pairs = np.unique(src * S + dst)
        else:
            pairs = np.flatnonzero(dense)
        gi, gj = pairs // S, pairs % S
        with np.errstate(over="ignore"):         # (inf: forward then fails, log space takes over)
            gc = np.expm1(dense[pairs])
        return (ONES, S, L, _shift_range(0.0, dense), np.zeros((1, 1)), np.zeros((1, 1)), gi, gj, gc, fptr, fi,
                fv, gj * S + gi)
    if kind == PAIR_ONES:
        # allowed: exactly (a, b) -> (b, c); the listed pairs (zero scores included) are
        # the global corrections, so their expected counts are accumulated
        if L < 1 or S % L or S // L < L:
            raise ValueError("PAIR_ONES needs S = A * n_labels states with A >= n_labels")
        A = S // L
        if len(src) and (np.any(src % L != dst // L) or src.min() < 0 or src.max() >= S or dst.min() < 0
                         or dst.max() >= L * L):
            raise ValueError("PAIR_ONES pairs must have the form (a, b) -> (b, c) with b, c < n_labels")
        # list order: by destination j = (b, c), then source (a, b): k = j * A + a; the
        # begin-marker states (a >= L) are never destinations
        gk = dst * A + src // L
        if len(np.unique(gk)) != len(gk):
            raise ValueError("PAIR_ONES pairs are repeated")
        fd = np.repeat(np.arange(L * L, dtype=np.int64), A)
        fs = np.tile(np.arange(A, dtype=np.int64), L * L) * L + fd // L
        fv = np.zeros(L * L * A)
        fv[gk] = score
        fptr = np.minimum(np.arange(S + 1, dtype=np.int64), L * L) * A
        with np.errstate(over="ignore"):
            gc = np.expm1(score)
        return (PAIR_ONES, S, L, _shift_range(0.0, np.append(score, 0.0), 2.0), np.zeros((1, 1)), np.zeros((1, 1)), src,
                dst, gc, fptr, fs, fv, gk)
    # LIST: exactly the listed pairs
    if len(np.unique(src * S + dst)) != len(src):
        raise ValueError("LIST pairs are repeated")
    order = np.lexsort((src, dst))
    src, dst, score = src[order], dst[order], score[order]
    fptr = np.zeros(S + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=S), out=fptr[1:])
    tshift = float(score.max()) if len(score) else 0.0
    return (LIST, S, L, _shift_range(tshift, score, 2.0), np.zeros((1, 1)), np.zeros((1, 1)), src, dst, np.exp(score - tshift), fptr,
            src.copy(), score.copy(), np.arange(len(src), dtype=np.int64))


def _shift_range(tshift, scores, steps=1.0):
    """``trans.tshift``: ``[tshift, lo, hi, steps]``, the shift of the stored factors, the
    least and largest log of a stored factor (``score - tshift`` over the allowed pairs,
    -inf scores left out; scores empty: 0) and ``steps``, in how many steps every state
    reaches every other (1: all pairs allowed; 2: pair chains; see :func:`forward`)."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[scores > NEG_INF]
    if len(scores) == 0:
        return np.array([tshift, 0.0, 0.0, steps])
    return np.array([tshift, float(scores.min()) - tshift, float(scores.max()) - tshift, steps])


def reach(allowed):
    """In how many steps every state of a chain whose allowed pairs are ``allowed`` (S x
    S booleans) reaches every other state it can reach at all: the factor by which
    :func:`forward` multiplies a step's log range when it bounds what underflow loses (a
    state that only lost mass feeds can be raised against the kept ones once per step of
    the way). 1 when every pair is allowed, else at least 2 (:func:`forward` then also
    counts the range of the state factors)."""
    A = np.asarray(allowed, dtype=bool)
    if A.all():
        return 1.0
    R = A.copy()
    steps = 2
    R = R | ((R.astype(np.int64) @ A.astype(np.int64)) > 0)
    while steps < len(A):
        nxt = R | ((R.astype(np.int64) @ A.astype(np.int64)) > 0)
        if np.array_equal(nxt, R):
            break
        R = nxt
        steps += 1
    return float(steps)


@njit(cache=True, nogil=True, inline="always")
def base_entry(trans, i, j, k):
    """``Mbase``: the structure's factor for the allowed pair ``(i, j)`` with list index
    k (read from ``expT`` under DENSE; exactly 1 for an unscored pair under ONES)."""
    if trans.kind == DENSE:
        return trans.expT[i, j]
    x = trans.fv[k] - trans.tshift[0]
    return 1.0 if x == 0.0 else math.exp(x)


@inner()
def refresh(trans, T):
    """Load new transition scores ``T`` (S x S, flat ``i * S + j``) into a DENSE
    structure, or into a ONES structure made with ``keep_zeros`` (the scores of the
    unlisted pairs must stay 0), in place."""
    if trans.kind == ONES:
        S = trans.S
        gi, gj, gc, fv = trans.gi, trans.gj, trans.gc, trans.fv
        lo = 0.0
        hi = 0.0
        for q in range(len(gi)):
            x = T[gi[q] * S + gj[q]]
            gc[q] = math.expm1(x)
            fv[gj[q] * S + gi[q]] = x
            lo = min(lo, x)
            hi = max(hi, x)
        trans.tshift[1] = lo
        trans.tshift[2] = hi
    else:
        refresh_dense(trans, T)


@inner(fastmath=EXP_FAST)
def refresh_dense(trans, T):
    """Load new transition scores ``T`` (S x S, flat) into a DENSE structure in place
    (its scratch ``trans.kbuf``, ``trans.ebuf`` takes the vectorised exponentials)."""
    S = trans.S
    expT, expTT, fv, kbuf, e = trans.expT, trans.expTT, trans.fv, trans.kbuf, trans.ebuf
    m = exp_shifted(T, e, S * S, kbuf)
    trans.tshift[0] = m
    lo = 0.0
    for p in range(S * S):
        lo = min(lo, T[p] - m)
    trans.tshift[1] = lo
    trans.tshift[2] = 0.0
    for i in range(S):
        for j in range(S):
            x = e[i * S + j]
            expT[i, j] = x
            expTT[j, i] = x
            fv[j * S + i] = T[i * S + j]


@inner()
def refresh_pairs(trans, x):
    """Load new scores into a PAIR_ONES structure in place: ``x[q]`` is the score of its
    q-th listed pair (the order of ``src``/``dst`` given to :func:`make_transitions`)."""
    gc, fv, gk = trans.gc, trans.fv, trans.gk
    lo = 0.0
    hi = 0.0
    for q in range(len(gk)):
        gc[q] = math.expm1(x[q])
        fv[gk[q]] = x[q]
        lo = min(lo, x[q])
        hi = max(hi, x[q])
    trans.tshift[1] = lo
    trans.tshift[2] = hi


@inner()
def refresh_list(trans, k, x):
    """Load new scores into a LIST structure in place: ``x[q]`` is the score of the pair
    with list index ``k[q]``; the other pairs keep theirs."""
    fv, gc = trans.fv, trans.gc
    for q in range(len(k)):
        fv[k[q]] = x[q]
    m = fv[0] if len(fv) else 0.0
    for p in range(1, len(fv)):
        if fv[p] > m:
            m = fv[p]
    trans.tshift[0] = m
    lo = 0.0
    for p in range(len(fv)):
        gc[p] = math.exp(fv[p] - m)
        lo = min(lo, fv[p] - m)
    trans.tshift[1] = lo
    trans.tshift[2] = 0.0


# --------------------------------------------------------------------------- emissions
# exp(x) for x <= 0 as Cody-Waite reduction + degree-13 Taylor polynomial + exponent
# bits: within ~1 ulp of math.exp, and the loop vectorises (math.exp is a libm call).
# k = round(x / ln 2) comes from the shifter trick, not a float -> int64 conversion.
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SHIFTER = 6755399441055744.0            # 1.5 * 2^52: adding it rounds to an integer
_SHIFTER_BITS = np.int64(0x4338000000000000)
_C2, _C3, _C4, _C5, _C6, _C7 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040
_C8, _C9, _C10, _C11, _C12, _C13 = 1 / 40320, 1 / 362880, 1 / 3628800, 1 / 39916800, 1 / 479001600, 1 / 6227020800


@njit(cache=True, nogil=True, fastmath=EXP_FAST, inline="always")
def exp_nonpos(x, m, out, n, kbuf):
    """``out[:n] = exp(x[:n] - m)`` for ``x <= m`` (``out`` may be ``x``); finite differences
    below -708 give exp(-708) (so that 0 means exactly a state that is not allowed, -inf:
    :func:`forward` bounds what the rows lose to underflow from their least non-zero
    entry), -inf gives 0, NaN stays NaN. ``kbuf`` is an int64 scratch of length >= n."""
    kview = kbuf.view(np.float64)
    for y in range(n):
        d = x[y] - m
        v = d if not (d < -708.0) else -708.0
        j = v * _LOG2E + _SHIFTER          # k = round(v / ln 2) in the low bits of j
        k = j - _SHIFTER
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
        out[y] = p if not (d == NEG_INF) else 0.0
        kview[y] = j
    for y in range(n):                     # 2^k from the bits of j (no float -> int conversion,
        kbuf[y] = (kbuf[y] - _SHIFTER_BITS + 1023) << 52       # which AVX2 lacks)
    for y in range(n):
        out[y] *= kview[y]


@njit(cache=True, nogil=True, fastmath=EXP_FAST, inline="always")
def exp_shifted(x, out, n, kbuf):
    """``out[:n] = exp(x[:n] - m)`` with ``m = max x[:n]``; returns m (see
    :func:`exp_nonpos`)."""
    m = x[0]
    for y in range(1, n):
        if x[y] > m:
            m = x[y]
    exp_nonpos(x, m, out, n, kbuf)
    return m


@inner(fastmath=EXP_FAST)
def exp_rows(E, psi, shift, n, S, kbuf):
    """``psi[t, :S] = exp(E[t, :S] - shift[t])`` with ``shift[t] = max E[t, :S]`` for
    t < n (padding lanes zero); ``kbuf`` is an int64 scratch of :func:`exp_scratch` (at
    least two padded rows). The rows are exponentiated as many at a time as ``kbuf``
    holds, as one flat vector: a loop of |Y| iterations per row would not vectorise for
    few labels."""
    Sp = psi.shape[1]
    rows = len(kbuf) // (2 * Sp)
    for t0 in range(0, n, rows):
        t1 = min(n, t0 + rows)
        N = (t1 - t0) * Sp
        kb = kbuf[:N]
        fb = kbuf[N:2 * N].view(np.float64)
        for t in range(t0, t1):
            m = E[t, 0]
            for y in range(1, S):
                if E[t, y] > m:
                    m = E[t, y]
            shift[t] = m
            b = (t - t0) * Sp
            for y in range(S):
                fb[b + y] = E[t, y] - m
            for y in range(S, Sp):
                fb[b + y] = NEG_INF
        exp_nonpos(fb, 0.0, fb, N, kb)
        for t in range(t0, t1):
            b = (t - t0) * Sp
            for y in range(Sp):
                psi[t, y] = fb[b + y]


def exp_scratch(maxlen, Sp):
    """The ``kbuf`` of :func:`exp_rows` for sequences of up to ``maxlen`` positions: one
    block of at most 64 rows (at least one)."""
    return np.zeros(2 * min(max(maxlen, 1), 64) * Sp, np.int64)


# --------------------------------------------------------------------------- steps
@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def forward_step(prev, cur, trans, ci, cj, cc, q0, q1):
    """``cur = prev @ M_t`` (unnormalised, psi not applied), with the position
    corrections ``q0:q1`` of ``(ci, cj, cc)``."""
    kind, S, L = trans.kind, trans.S, trans.L
    Sp = len(cur)
    if q1 > q0 and ci[q0] == FULL:
        for y in range(Sp):
            cur[y] = 0.0
        for q in range(q0 + 1, q1):
            cur[cj[q]] += prev[ci[q]] * cc[q]
        return
    if kind == DENSE:
        expT = trans.expT
        for y in range(Sp):
            cur[y] = 0.0
        for i in range(S):
            a = prev[i]
            if a != 0.0:
                for y in range(Sp):
                    cur[y] += a * expT[i, y]
    elif kind == ONES:
        s = 0.0
        for i in range(S):
            s += prev[i]
        for y in range(S):
            cur[y] = s
        for y in range(S, Sp):
            cur[y] = 0.0
    elif kind == PAIR_ONES:
        # the column sums over the source label, added row by row into cur[:L]
        # (contiguous: the loop vectorises; a sum down a column is a chain of dependent
        # additions), then copied to the destinations, the last middle label first so
        # that cur[:L] is read before it is overwritten
        for b in range(L):
            cur[b] = 0.0
        for a in range(S // L):
            for b in range(L):
                cur[b] += prev[a * L + b]
        for b in range(L - 1, -1, -1):
            s = cur[b]
            for c in range(L):
                cur[b * L + c] = s
        for y in range(L * L, Sp):
            cur[y] = 0.0
    else:
        for y in range(Sp):
            cur[y] = 0.0
    gi, gj, gc = trans.gi, trans.gj, trans.gc
    for q in range(len(gi)):
        e = gc[q]
        if e != 0.0:             # listed pairs with weight 0 (kept for their counts)
            cur[gj[q]] += prev[gi[q]] * e
    for q in range(q0, q1):
        cur[cj[q]] += prev[ci[q]] * cc[q]


@njit(cache=True, nogil=True, fastmath=FAST, inline="always")
def backward_step(r, out, trans, ci, cj, cc, q0, q1, prev=None, glob=None, whole=False):
    """``out = M_t @ r`` with the position corrections ``q0:q1``. With ``glob`` (and
    ``prev``, the normalised alpha of t - 1), the expected counts of the global
    corrections are added in the same sweep (see :func:`backward`; not at a FULL
    position): their correction part, or with ``whole`` (and always under PAIR_ONES)
    the whole expected count of the pair."""
    kind, S, L = trans.kind, trans.S, trans.L
    Sp = len(out)
    if q1 > q0 and ci[q0] == FULL:
        for y in range(Sp):
            out[y] = 0.0
        for q in range(q0 + 1, q1):
            out[ci[q]] += cc[q] * r[cj[q]]
        return
    if kind == DENSE:
        expTT = trans.expTT
        for y in range(Sp):
            out[y] = 0.0
        for j in range(S):
            b = r[j]
            if b != 0.0:
                for y in range(Sp):
                    out[y] += b * expTT[j, y]
    elif kind == ONES:
        s = 0.0
        for j in range(S):
            s += r[j]
        for y in range(S):
            out[y] = s
        for y in range(S, Sp):
            out[y] = 0.0
    elif kind == PAIR_ONES:
        # the row sums over the next label into out[:L], then copied to every source
        # block (contiguous copies instead of stores L apart)
        for b in range(L):
            s = 0.0
            for c in range(L):
                s += r[b * L + c]
            out[b] = s
        for a in range(1, S // L):
            for b in range(L):
                out[a * L + b] = out[b]
        for y in range(S, Sp):
            out[y] = 0.0
    else:
        for y in range(Sp):
            out[y] = 0.0
    gi, gj, gc = trans.gi, trans.gj, trans.gc
    base = 1.0 if kind == PAIR_ONES or whole else 0.0      # glob holds whole counts
    for q in range(len(gi)):
        e = gc[q]
        x = r[gj[q]]
        if glob is not None:
            glob[q] += prev[gi[q]] * (e + base) * x
        if e != 0.0:             # listed pairs with weight 0 (kept for their counts)
            out[gi[q]] += e * x
    for q in range(q0, q1):
        out[ci[q]] += cc[q] * r[cj[q]]


@inner(fastmath=FAST)
def pair_matrix(prev, r, trans, ci, cj, cc, q0, q1, P):
    """``P[i * S + j] = prev[i] M_t[i, j] r[j]`` (the pairwise marginals when prev is the
    normalised alpha of t-1 and ``r = psi_t beta_t / scale_t``; zero for pairs that are
    not allowed), for every kind of structure."""
    kind, S, L = trans.kind, trans.S, trans.L
    gi, gj, gc = trans.gi, trans.gj, trans.gc
    if q1 > q0 and ci[q0] == MAT:
        M = trans.mats[cj[q0]]
        for i in range(S):
            a = prev[i]
            for j in range(S):
                P[i * S + j] = a * M[i, j] * r[j]
        return
    if (q1 > q0 and ci[q0] == FULL) or kind == LIST or kind == PAIR_ONES:
        for p in range(S * S):
            P[p] = 0.0
    if q1 > q0 and ci[q0] == FULL:
        q0 += 1
    elif kind == DENSE:
        expT = trans.expT
        for i in range(S):
            a = prev[i]
            for j in range(S):
                P[i * S + j] = a * expT[i, j] * r[j]
    else:
        if kind == ONES:
            for i in range(S):
                a = prev[i]
                for j in range(S):
                    P[i * S + j] = a * r[j]
        elif kind == PAIR_ONES:
            for i in range(S):
                a = prev[i]
                b = i % L
                for c in range(L):
                    P[i * S + b * L + c] = a * r[b * L + c]
        for q in range(len(gi)):
            P[gi[q] * S + gj[q]] += prev[gi[q]] * gc[q] * r[gj[q]]
    for q in range(q0, q1):
        P[ci[q] * S + cj[q]] += prev[ci[q]] * cc[q] * r[cj[q]]


# --------------------------------------------------------------------------- forward-backward
@njit(cache=True, nogil=True, inline="always")
def factor_range(trans, corr, t):
    """``(lo, hi)``: bounds on the log of the factor entries (as stored, after ``tshift``)
    of the allowed pairs at position ``t >= 1``: the structure's own, widened by the
    position's corrections (a stored matrix, :data:`MAT`, has its own in ``mscores``)."""
    S, tshift = trans.S, trans.tshift[0]
    lo, hi = trans.tshift[1], trans.tshift[2]
    cptr, ci, cj, cv, ck = corr.ptr, corr.src, corr.dst, corr.score, corr.pair
    q0, q1 = cptr[t], cptr[t + 1]
    if q1 == q0:
        return lo, hi
    if ci[q0] == MAT:
        ms = trans.mscores[cj[q0]]
        return ms[S * S] - tshift, ms[S * S + 1] - tshift
    fv = trans.fv
    if ci[q0] == FULL:
        lo = np.inf
        hi = NEG_INF
        q0 += 1
    for q in range(q0, q1):
        x = fv[ck[q]] + cv[q] - tshift
        if x > NEG_INF:             # (-inf: a pair a constraint forbids)
            lo = min(lo, x)
            hi = max(hi, x)
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def correction_range(trans, ci, cj, cv, q0, q1):
    """:func:`factor_range` of a step of an all-pairs structure (DENSE, ONES) with the
    corrections ``q0:q1`` (raw scores ``cv``, pair ``(ci, cj)``, a :data:`FULL` position
    included), for callers that keep no list indices."""
    S, tshift = trans.S, trans.tshift[0]
    lo, hi = trans.tshift[1], trans.tshift[2]
    if q1 > q0 and ci[q0] == FULL:
        lo = np.inf
        hi = NEG_INF
        q0 += 1
    if q1 > q0:
        fv = trans.fv
        # a ONES structure whose scores went below the cancellation limit (a block
        # step on the transitions) counts as unbounded: the caller refuses it
        if trans.kind == ONES and lo < -CANCEL_LIMIT:
            return NEG_INF, hi
        for q in range(q0, q1):
            x = fv[cj[q] * S + ci[q]] + cv[q] - tshift
            lo = min(lo, x)
            hi = max(hi, x)
    elif trans.kind == ONES and lo < -CANCEL_LIMIT:
        return NEG_INF, hi
    return lo, hi


@inner(fastmath=FAST)
def forward(psi, shift, n, trans, corr, alpha, scale, t0):
    """Scaled forward recursion over positions t0..n-1 (rows before t0 already valid):
    alpha rows sum to 1, ``scale[t]`` their normaliser. Returns the sum over t0..n-1 of
    ``shift[t] + log scale[t]`` (+ ``tshift`` for t >= 1), which over 0..n-1 is log Z;
    NaN when a row underflowed or overflowed, or when the rows could have lost a path
    that matters (then use :func:`forward_backward_log`).

    What a row loses to underflow (products below the smallest double, psi entries
    below exp(-708)) is below ``exp(-708) max(1, e^hi)`` in absolute terms (``hi`` the
    largest log factor of its step), so a fraction ``exp(-708) max(1, e^hi) / min(c, 1)``
    of its mass (``c`` its normaliser). A later step can raise a lost state against the
    kept ones by at most the factor's log range ``D = hi - lo`` of the next position (all
    pairs allowed: the rows of one factor differ by at most that much), or ``k D`` plus
    the log range of the next psi row where not every pair is allowed and every state
    reaches every other in ``k`` steps (``trans.tshift[3]``: 2 over label pairs, LIST and
    PAIR_ONES; a constrained chain's own, :func:`reach`). A row is trusted when that stays below
    exp(-:data:`SCALED_LIMIT`); weights far from any a model learns with
    regularisation (exp(640): |scores| in the hundreds) send a sequence to log space.

    The common step -- DENSE structure, no corrections at the position -- is written
    out here (a tight loop that vectorises; through :func:`forward_step` it is twice as
    slow), and so is a position with a stored matrix (:data:`MAT`); every other step
    goes through :func:`forward_step`."""
    kind, S, tshift = trans.kind, trans.S, trans.tshift[0]
    expT = trans.expT
    cptr, ci, cj, cc = corr.ptr, corr.src, corr.dst, corr.factor
    Sp = alpha.shape[1]
    steps = trans.tshift[3]
    pairs = steps > 1.0           # not every pair allowed: psi's range counts too
    lo_b, hi_b = trans.tshift[1], trans.tshift[2]
    amp_b = steps * (hi_b - lo_b)
    # the bound of a row after a row, both with the structure's own factor
    thr_b = math.exp(max(0.0, hi_b) + amp_b - SCALED_LIMIT)
    hi_prev = 0.0
    base_prev = False             # the previous row's step had the structure's own factor
    if t0 > 1:
        hi_prev = factor_range(trans, corr, t0 - 1)[1]
        base_prev = cptr[t0] == cptr[t0 - 1]
    logz = 0.0
    prod = 1.0
    for t in range(t0, n):
        cur = alpha[t]
        pmin = 1.0
        if t == 0:
            for y in range(Sp):
                cur[y] = psi[0, y]
            hi_t = 0.0
            base_t = False
        else:
            q0 = cptr[t]
            base_t = cptr[t + 1] == q0
            mat = not base_t and ci[q0] == MAT
            if (kind == DENSE and base_t) or mat:
                M = trans.mats[cj[q0]] if mat else expT
                prev = alpha[t - 1]
                for y in range(Sp):
                    cur[y] = 0.0
                i = 0
                while i + 3 < S:         # four rows per sweep: a quarter of the stores
                    a0, a1, a2, a3 = prev[i], prev[i + 1], prev[i + 2], prev[i + 3]
                    for y in range(Sp):
                        cur[y] += a0 * M[i, y] + a1 * M[i + 1, y] + a2 * M[i + 2, y] + a3 * M[i + 3, y]
                    i += 4
                while i < S:
                    a = prev[i]
                    for y in range(Sp):
                        cur[y] += a * M[i, y]
                    i += 1
            else:
                forward_step(alpha[t - 1], cur, trans, ci, cj, cc, q0, cptr[t + 1])
            if pairs:
                for y in range(Sp):
                    p = psi[t, y]
                    cur[y] *= p
                    if p > 0.0 and p < pmin:
                        pmin = p
            else:
                for y in range(Sp):
                    cur[y] *= psi[t, y]
            logz += tshift
            # what row t - 1 lost must stay negligible after this step
            if base_t and base_prev:
                thr = thr_b
                hi_t = hi_b
            else:
                lo_t, hi_t = factor_range(trans, corr, t)
                amp = steps * (hi_t - lo_t)
                thr = math.exp(max(0.0, hi_prev) + amp - SCALED_LIMIT)
            kept = min(scale[t - 1], 1.0)
            if pairs:
                kept *= pmin
            if not (kept >= thr):
                return np.nan
        c = 0.0
        for y in range(Sp):
            c += cur[y]
        if not (c > 0.0 and c < FLOAT_MAX):
            return np.nan
        inv = 1.0 / c
        for y in range(Sp):
            cur[y] *= inv
        scale[t] = c
        hi_prev = hi_t
        base_prev = base_t
        logz += shift[t]
        if c > 1e-100 and c < 1e100:      # one logarithm per sequence, not per position
            prod *= c
            if not (prod > 1e-200 and prod < 1e200):
                logz += math.log(prod)
                prod = 1.0
        else:
            logz += math.log(c)
    # what the last row lost is not raised again
    if n > t0 and not (min(scale[n - 1], 1.0) >= math.exp(max(0.0, hi_prev) - SCALED_LIMIT)):
        return np.nan
    return logz + math.log(prod)


@inner(fastmath=FAST)
def backward(psi, n, trans, corr, alpha, scale, beta, gamma, acc, need, P, tmp):
    """Scaled backward recursion and expectations, after :func:`forward` over 0..n-1.

    Fills ``beta`` and the point marginals ``gamma`` (which may be ``alpha`` itself: row t
    of alpha is not read again once gamma[t] is written). ``acc = (outer, glob, pos)``
    accumulates the transition expectations (see :func:`transition_counts`):
    ``outer[i, y] += alpha[t-1, i] r_t[y]`` (DENSE and ONES, unless ``outer`` is 1 x 1),
    ``glob[q]`` the part of global correction q (for PAIR_ONES and LIST, and for ONES
    without ``outer``, its whole expected count: a ONES structure made with
    ``keep_zeros`` lists every pair that has a weight, so a step costs ``O(S +
    weighted pairs)`` instead of ``S^2``), ``pos[k]`` the part of the position corrections of the pair with
    list index k (``pos`` empty: not gathered, for a model without transition
    weights). The pairwise marginals of every position t >= 1 with ``need[t] != 0``
    are written to ``P[t]`` (S x S, any kind of structure; the gradient of
    observation-conditioned bigram weights needs them); ``P`` None: no pair marginals
    (a model without bigram attributes), and :func:`pair_matrix` is not even compiled.
    ``tmp`` is a scratch row."""
    kind, S = trans.kind, trans.S
    cptr, ci, cj, cc, ck = corr.ptr, corr.src, corr.dst, corr.factor, corr.pair
    outer, glob, pos = acc[0], acc[1], acc[2]
    Sp = alpha.shape[1]
    want_outer = outer.shape[0] > 1
    # ONES without the outer product: the global corrections are every pair with a
    # weight (make_transitions' keep_zeros), and glob gathers their whole counts
    whole = kind == ONES and not want_outer
    for y in range(Sp):
        beta[n - 1, y] = 1.0 if y < S else 0.0
    for t in range(n - 1, 0, -1):
        inv = 1.0 / scale[t]
        r = tmp
        for y in range(Sp):
            r[y] = psi[t, y] * beta[t, y] * inv
        prev = alpha[t - 1]
        q0, q1 = cptr[t], cptr[t + 1]
        mat = q1 > q0 and ci[q0] == MAT
        if (kind == DENSE and q0 == q1) or mat:
            # the common step written out (see forward): beta[t-1, i] as a dot product
            # of row i of M with r, in one sweep with the outer-product accumulation
            M = trans.mats[cj[q0]] if mat else trans.expT
            out = beta[t - 1]
            if want_outer and not mat:
                for i in range(S):
                    a = prev[i]
                    s = 0.0
                    for y in range(Sp):
                        ry = r[y]
                        s += M[i, y] * ry
                        outer[i, y] += a * ry
                    out[i] = s
            else:
                for i in range(S):
                    s = 0.0
                    for y in range(Sp):
                        s += M[i, y] * r[y]
                    out[i] = s
            for i in range(S, Sp):
                out[i] = 0.0
            if P is not None:            # (a model without pair marginals: not compiled)
                if need[t] != 0 or (mat and len(pos) > 0):
                    pair_matrix(prev, r, trans, ci, cj, cc, q0, q1, P[t])
                    if mat and len(pos) > 0:
                        # a stored matrix's position: its whole pair marginals are its counts
                        Pt = P[t]
                        for i in range(S):
                            for j in range(S):
                                pos[j * S + i] += Pt[i * S + j]
            for y in range(Sp):
                gamma[t, y] = alpha[t, y] * beta[t, y]
            continue
        # the step, with the global corrections' expected counts in the same sweep
        backward_step(r, beta[t - 1], trans, ci, cj, cc, q0, q1, prev, glob, whole)
        if q1 > q0 and ci[q0] == FULL:
            q0 += 1
        elif want_outer and (kind == DENSE or kind == ONES):
            for i in range(S):
                a = prev[i]
                if a != 0.0:
                    for y in range(Sp):
                        outer[i, y] += a * r[y]
        if len(pos) > 0:
            for q in range(q0, q1):
                pos[ck[q]] += prev[ci[q]] * cc[q] * r[cj[q]]
        if P is not None:
            if need[t] != 0:
                pair_matrix(prev, r, trans, ci, cj, cc, cptr[t], q1, P[t])
        for y in range(Sp):
            gamma[t, y] = alpha[t, y] * beta[t, y]
    for y in range(Sp):
        gamma[0, y] = alpha[0, y] * beta[0, y]


@kernel()
def transition_counts(trans, acc, out):
    """Add the expected transition counts gathered by :func:`backward` to ``out``,
    indexed by list index (``k = j * S + i`` for DENSE and ONES). Exact for every allowed
    pair under DENSE / ONES (with ``outer``), for the listed pairs under LIST and for the
    global pairs (those with a weight) under PAIR_ONES and under ONES without ``outer``."""
    kind, S = trans.kind, trans.S
    outer, glob, pos = acc[0], acc[1], acc[2]
    if (kind == DENSE or kind == ONES) and outer.shape[0] > 1:
        expT = trans.expT
        for i in range(S):
            for j in range(S):
                out[j * S + i] += outer[i, j] * (expT[i, j] if kind == DENSE else 1.0)
    for k in range(len(pos)):
        out[k] += pos[k]
    gk = trans.gk
    for q in range(len(glob)):
        out[gk[q]] += glob[q]


@inner()
def _lse(x, n):
    m = NEG_INF
    for i in range(n):
        if x[i] > m:
            m = x[i]
    if m == NEG_INF:
        return m
    s = 0.0
    for i in range(n):
        s += math.exp(x[i] - m)
    return m + math.log(s)


@inner()
def position_scores(trans, corr, t, fv_t):
    """Raw log scores of the allowed pairs at position t (list order) into fv_t."""
    fv = trans.fv
    cptr, cv, ck = corr.ptr, corr.score, corr.pair
    for k in range(len(fv)):
        fv_t[k] = fv[k]
    for q in range(cptr[t], cptr[t + 1]):
        fv_t[ck[q]] += cv[q]


@inner()
def end_scores(E, n, trans):
    """Add a constrained chain's start and end scores (0 or -inf per state,
    ``trans.start`` / ``trans.end``) to the first and last of the ``n`` state rows ``E``
    (nothing when they are empty: an unconstrained chain)."""
    st, en = trans.start, trans.end
    if len(st) > 0 and n > 0:
        for y in range(trans.S):
            E[0, y] += st[y]
            E[n - 1, y] += en[y]


@inner()
def log_marginals(la, lb, n, S, gamma):
    """``gamma[t] = exp(la[t] + lb[t])`` of the log-space passes, each row normalised by
    its own log-sum-exp (in exact arithmetic it is log 1 = 0): where the scores are huge
    (weights near 1e100) ``la + lb`` is the difference of two huge numbers, its rounding
    error far above 1, and exp of it alone is 0 or inf."""
    for t in range(n):
        m = NEG_INF
        for y in range(S):
            v = la[t, y] + lb[t, y]
            gamma[t, y] = v
            if v > m:
                m = v
        tot = 0.0
        for y in range(S):
            e = math.exp(gamma[t, y] - m) if m > NEG_INF else 0.0
            gamma[t, y] = e
            tot += e
        if tot > 0.0:
            inv = 1.0 / tot
            for y in range(S):
                gamma[t, y] *= inv


@inner()
def forward_backward_log(E, n, trans, corr, la, lb, logc, gamma, tcount, need, P, fv_t, cand):
    """Log-space forward-backward (cannot underflow): returns log Z, fills ``gamma``
    (point marginals), adds the expected transition counts to ``tcount`` (by list
    index, like :func:`transition_counts`) and writes the pairwise marginals of the
    positions with ``need[t] != 0`` to ``P[t]`` (``i * S + j``). Each forward row is
    shifted by its log normaliser ``logc[t]`` (the log-domain twin of scaling, so the
    numbers stay small on long sequences and keep their precision); ``cand`` is a
    scratch of length >= max(2 S, largest in-degree). Slower than the scaled
    recursion: run only where that one underflowed."""
    S = trans.S
    fptr, fi = trans.fptr, trans.fi
    for t in range(n):
        if t == 0:
            for y in range(S):
                la[0, y] = E[0, y]
        else:
            position_scores(trans, corr, t, fv_t)
            for j in range(S):
                k0 = fptr[j]
                for k in range(k0, fptr[j + 1]):
                    cand[k - k0] = la[t - 1, fi[k]] + fv_t[k]
                la[t, j] = _lse(cand, fptr[j + 1] - k0) + E[t, j]
        c = _lse(la[t], S)
        if not (c > NEG_INF and c < np.inf):
            return c
        logc[t] = c
        for y in range(S):
            la[t, y] -= c
    logz = 0.0
    for t in range(n):
        logz += logc[t]
    for y in range(S):
        lb[n - 1, y] = 0.0
    for t in range(n - 1, 0, -1):
        position_scores(trans, corr, t, fv_t)
        # lb[t-1, i] = log sum_j exp(fv(i, j) + E[t, j] + lb[t, j]) - logc[t]: maximum, then sum
        for i in range(S):
            cand[i] = NEG_INF
            cand[S + i] = 0.0
        for j in range(S):
            base = E[t, j] + lb[t, j]
            for k in range(fptr[j], fptr[j + 1]):
                v = fv_t[k] + base
                if v > cand[fi[k]]:
                    cand[fi[k]] = v
        for j in range(S):
            base = E[t, j] + lb[t, j]
            for k in range(fptr[j], fptr[j + 1]):
                i = fi[k]
                if cand[i] != NEG_INF:
                    cand[S + i] += math.exp(fv_t[k] + base - cand[i])
        for i in range(S):
            lb[t - 1, i] = cand[i] + math.log(cand[S + i]) - logc[t] if cand[i] != NEG_INF else NEG_INF
        pairs = need[t] != 0
        for j in range(S):
            base = E[t, j] + lb[t, j] - logc[t]
            for k in range(fptr[j], fptr[j + 1]):
                i = fi[k]
                p = math.exp(la[t - 1, i] + fv_t[k] + base)
                tcount[k] += p
                if P is not None:
                    if pairs:
                        P[t, i * S + j] = p
    log_marginals(la, lb, n, S, gamma)
    return logz



@inner()
def _sparse_log_step(x, trans, out, rev, mx):
    """One step of :func:`forward_backward_log_ones` in log space, O(S + nnz): ``out[j] =
    log sum_i exp(x[i] + T[i, j])`` (forward; ``rev``: ``out[i] = log sum_j exp(T[i, j] +
    x[j])``, backward) over every pair, ``T`` zero but on the structure's listed pairs
    ``q`` (``trans.gi[q], trans.gj[q]``, score ``trans.fv[trans.gk[q]]``, ``trans.gc[q] =
    expm1`` of it). Each output has its own shift: ``m = max x`` for the unlisted pairs'
    part ``s = sum exp(x - m)``, raised to the largest listed term into that output where
    that is higher, so no term overflows and one large transition weight does not make
    the other pairs' terms underflow. Returns ``m`` (-inf: every ``x`` is -inf, and so is
    every ``out``). ``mx`` is a scratch row of length S."""
    S = trans.S
    gi, gj, gc, gk, fv = trans.gi, trans.gj, trans.gc, trans.gk, trans.fv
    m = NEG_INF
    for i in range(S):
        if x[i] > m:
            m = x[i]
    if m == NEG_INF:
        for y in range(S):
            out[y] = NEG_INF
        return m
    s = 0.0
    for i in range(S):
        s += math.exp(x[i] - m)
    for y in range(S):
        mx[y] = 0.0
        out[y] = 0.0
    # the shift of each output: its largest listed term (relative to m), at least 0
    for q in range(len(gi)):
        a, b = gi[q], gj[q]
        if rev:
            a, b = b, a
        v = x[a] - m + fv[gk[q]]
        if v > mx[b]:
            mx[b] = v
    # the listed pairs' part, exp(x[a] - m) (e^T - 1) shifted: above T = 1 as the
    # difference of two exponentials (expm1(T) may overflow, and exp(x - m - mx) underflow
    # where the product does not), below as a product (no cancellation)
    for q in range(len(gi)):
        a, b = gi[q], gj[q]
        if rev:
            a, b = b, a
        T = fv[gk[q]]
        d = x[a] - m - mx[b]
        if T > 1.0:
            out[b] += math.exp(d + T) - math.exp(d)
        else:
            out[b] += math.exp(d) * gc[q]
    for y in range(S):
        # a sum of non-negative terms (1 + expm1(T) >= e^-12 under ONES), the largest
        # about 1 (>= e^-1): no underflow, and what underflows in a term is negligible
        out[y] = m + mx[y] + math.log(out[y] + (s if mx[y] == 0.0 else s * math.exp(-mx[y])))
    return m


@inner()
def forward_backward_log_ones(E, n, trans, la, lb, logc, gamma, tcount, mx):
    """:func:`forward_backward_log` for a ONES structure whose pairs with a weight are all
    listed (``make_transitions(..., keep_zeros=True)``) and a sequence without position
    corrections or pair marginals: O(S + nnz) per position instead of O(S^2). Each step is
    :func:`_sparse_log_step` (per-output shifts: a transition weight of 1,000 neither
    overflows nor makes the unlisted pairs' terms underflow, which is what sends a
    sequence here from :func:`forward`); the forward rows are normalised by their log
    normalisers ``logc[t]`` as in :func:`forward_backward_log`. Returns log Z, fills
    ``gamma`` and adds the expected counts of the *listed* pairs to ``tcount`` (at list
    index ``trans.gk[q]``; those of the unlisted pairs, which have no weight, are not
    gathered). ``mx``: a scratch row of at least S entries."""
    S = trans.S
    gi, gj, gk, fv = trans.gi, trans.gj, trans.gk, trans.fv
    for t in range(n):
        if t == 0:
            for y in range(S):
                la[0, y] = E[0, y]
        else:
            if _sparse_log_step(la[t - 1], trans, la[t], False, mx) == NEG_INF:
                return NEG_INF
            for y in range(S):
                la[t, y] += E[t, y]
        c = _lse(la[t], S)
        if not (c > NEG_INF and c < np.inf):
            return c
        logc[t] = c
        for y in range(S):
            la[t, y] -= c
    logz = 0.0
    for t in range(n):
        logz += logc[t]
    for y in range(S):
        lb[n - 1, y] = 0.0
    r = gamma[0]                   # (row 0 of gamma is written last)
    for t in range(n - 1, 0, -1):
        for y in range(S):
            r[y] = E[t, y] + lb[t, y]
        _sparse_log_step(r, trans, lb[t - 1], True, mx)
        for y in range(S):
            lb[t - 1, y] -= logc[t]
        for q in range(len(gi)):
            tcount[gk[q]] += math.exp(la[t - 1, gi[q]] + fv[gk[q]] + r[gj[q]] - logc[t])
    log_marginals(la, lb, n, S, gamma)
    return logz
