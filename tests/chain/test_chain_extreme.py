"""Chain inference at extreme weights: every chain kernel path against a small numpy
log-space reference, with weights from ordinary to +-1e4.

The reference below is written for obviousness, not speed: per sequence it builds the
per-position score tables from the dense weight views and runs the forward recursion
with ``logaddexp`` (no scaling, no shortcuts). The paths covered:

* first order, batch loss (``ChainCRF.loss_grad``): the DENSE structure without bigram
  attributes; with bigram attributes the ONES or DENSE base with position corrections,
  whole-matrix positions (``chain.FULL``) and stored matrices (``chain.MAT``); partially
  labelled sequences (the clamped pass);
* the SGD per-sample step (``sample_loss``, the step's own forward and log-space
  fallback) of both orders;
* block coordinate descent's cached rows (``block_loss``);
* second order, batch loss (``ChainCRF2.loss_grad``): PAIR_ONES and LIST structures,
  the factored rows of sequences whose pair scores are shared;
* the chain core itself (``chain.forward``) on DENSE / ONES / LIST / PAIR_ONES
  structures with corrections and whole-matrix positions.

A scaled result is only ever allowed to be NaN (the caller then redoes the sequence in
log space); a finite one must equal the reference to rounding, and so must every loss.
"""

import numpy as np
import pytest

from crf2_reference import dense_weights2, random_space2
from crf_reference import dense_weights, random_data, random_space
from spargel.chain import inference as C
from spargel.chain.crf import ChainCRF
from spargel.chain.crf2 import ChainCRF2
from spargel.chain.kernel_data import Corrections, correction_lists

SCALES = [1.0, 40.0, 400.0, 700.0, 2000.0, 1e4]


@np.errstate(divide="ignore")
def _lse(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _log_z(E, pair):
    """log sum over state paths of sum_t E[t, y_t] + sum_{t>0} pair[t][y_{t-1}, y_t]."""
    a = E[0].copy()
    for t in range(1, len(E)):
        a = _lse(a[:, None] + pair[t], axis=0) + E[t]
    return _lse(a)


def _tables1(space, data, w, s, clamp=False):
    """(E, pair, gold score) of first-order sequence s."""
    U, B, T = dense_weights(space, w)
    L = space.n_labels
    lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
    E = np.zeros((hi - lo, L))
    pair = [None]
    for t in range(lo, hi):
        for j in range(data.uni_ptr[t], data.uni_ptr[t + 1]):
            E[t - lo] += data.uni_vals[j] * U[data.uni_ids[j]]
        if t > lo:
            P = T.reshape(L, L).copy()
            for j in range(data.big_ptr[t], data.big_ptr[t + 1]):
                P += data.big_vals[j] * B[data.big_ids[j]].reshape(L, L)
            pair.append(P)
    y = data.labels[lo:hi]
    known = y >= 0
    Ec = E.copy()
    if clamp:
        for t in np.flatnonzero(known):
            Ec[t, np.arange(L) != y[t]] = -np.inf
    return E, Ec, pair


def reference_loss1(space, data, w):
    """sum over sequences of log Z - log Z(known labels) (the gold score when all are known)."""
    total = 0.0
    for s in range(data.n_sequences):
        E, Ec, pair = _tables1(space, data, w, s, clamp=True)
        total += _log_z(E, pair) - _log_z(Ec, pair)
    return total


def reference_loss2(space, data, w):
    """The second-order loss: states (a, b), a = L the begin marker at t = 0."""
    U, P, T = dense_weights2(space, w)
    L = space.n_labels
    A = L + 1
    total = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        n = hi - lo
        E = np.full((n, A * L), -np.inf)
        for t in range(lo, hi):
            u = np.zeros(L)
            for j in range(data.uni_ptr[t], data.uni_ptr[t + 1]):
                u += data.uni_vals[j] * U[data.uni_ids[j]]
            pb = np.zeros(A * L)
            for j in range(data.big_ptr[t], data.big_ptr[t + 1]):
                pb += data.big_vals[j] * P[data.big_ids[j]]
            for a in ([L] if t == lo else range(L)):
                for b in range(L):
                    E[t - lo, a * L + b] = u[b] + pb[a * L + b]
        pair = np.full((A * L, A * L), -np.inf)
        for a in range(A):
            for b in range(L):
                for c in range(L):
                    pair[a * L + b, b * L + c] = T[(a * L + b) * L + c]
        y = data.labels[lo:hi]
        Ec = np.full_like(E, -np.inf)
        states = [L * L + y[0]] + [y[t - 1] * L + y[t] for t in range(1, n)]
        Ec[np.arange(n), states] = E[np.arange(n), states]
        tables = [None] + [pair] * (n - 1)
        total += _log_z(E, tables) - _log_z(Ec, tables)
    return total


def _weights(rng, n, scale, density=0.7):
    w = rng.uniform(-scale, scale, size=n)
    w[rng.random(n) > density] = 0.0
    return w


def _assert_close(got, want, w):
    # a loss is a difference of sums of scores: its rounding scales with |w| and length
    tol = 1e-9 * (1.0 + abs(want)) + 1e-12 * np.abs(w).max() * 40
    assert np.isfinite(got)
    assert abs(got - want) <= tol, (got, want)


def _cases(n_seeds):
    return [(seed, scale) for seed in range(n_seeds) for scale in SCALES]


@pytest.mark.parametrize("seed,scale", _cases(4))
@pytest.mark.parametrize("bigrams", [False, True])
def test_first_order_batch_loss(seed, scale, bigrams):
    rng = np.random.default_rng(seed)
    L = 3 + seed % 3
    data = random_data(rng, n_seq=5, max_len=7, n_uni=6, n_big=3 if bigrams else 0, n_labels=L,
                       p_big=0.8, real_values=seed % 2 == 0)
    space = random_space(rng, data, "full" if seed % 3 else "observed", L, 6, 3 if bigrams else 0)
    # few non-zero transitions (ONES base) in some cases, all in others (DENSE)
    w = _weights(rng, space.n_params, scale, density=0.3 if seed % 2 else 0.9)
    model = ChainCRF(space, data, inference="dense" if seed % 4 == 3 else "auto")
    loss, g = model.loss_grad(w)
    _assert_close(loss, reference_loss1(space, data, w), w)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("seed,scale", _cases(3))
def test_first_order_partially_labelled(seed, scale):
    rng = np.random.default_rng(100 + seed)
    data = random_data(rng, n_seq=5, max_len=6, n_uni=5, n_big=2, n_labels=3, p_big=0.7)
    data.labels[rng.random(len(data.labels)) < 0.3] = -1
    space = random_space(rng, data, "full", 3, 5, 2)
    w = _weights(rng, space.n_params, scale)
    loss, _ = ChainCRF(space, data).loss_grad(w)
    _assert_close(loss, reference_loss1(space, data, w), w)


def _four_label_problem(rng, bigrams):
    """Five random sequences over 4 labels and 6 unigram attributes (and 3 bigram
    attributes when ``bigrams``), with the full feature space."""
    n_big = 3 if bigrams else 0
    data = random_data(rng, n_seq=5, max_len=7, n_uni=6, n_big=n_big, n_labels=4, p_big=0.8)
    return data, random_space(rng, data, "full", 4, 6, n_big)


@pytest.mark.parametrize("seed,scale", _cases(3))
def test_first_order_sgd_step_loss(seed, scale):
    rng = np.random.default_rng(200 + seed)
    data, space = _four_label_problem(rng, bigrams=seed % 2)
    w = _weights(rng, space.n_params, scale)
    model = ChainCRF(space, data)
    got = model.sample_loss(np.arange(data.n_sequences, dtype=np.int64), w)
    _assert_close(got, reference_loss1(space, data, w), w)


@pytest.mark.parametrize("seed,scale", _cases(3))
def test_bcd_cached_rows_loss(seed, scale):
    rng = np.random.default_rng(300 + seed)
    data, space = _four_label_problem(rng, bigrams=seed % 2)
    w = _weights(rng, space.n_params, scale, density=0.3 if seed < 2 else 0.9)
    model = ChainCRF(space, data)
    model.block_layout()
    model.block_begin(w)
    try:
        loss = model.block_loss()
    except FloatingPointError:
        # block coordinate descent has no log-space rows: it refuses such weights
        assert scale > 40.0
        return
    _assert_close(loss, reference_loss1(space, data, w), w)


@pytest.mark.parametrize("seed,scale", _cases(6))
def test_second_order_batch_loss(seed, scale):
    rng = np.random.default_rng(400 + seed)
    L = 2 + seed % 2
    # no pair attributes (seed % 3 == 0): every sequence takes the factored rows
    n_big = 0 if seed % 3 == 0 else 2
    data = random_data(rng, n_seq=4, max_len=6, n_uni=5, n_big=n_big, n_labels=L, p_big=0.7)
    space = random_space2(data, "full", L, 5, n_big)
    w = _weights(rng, space.n_params, scale)
    if seed % 2:
        w[space.t_base:] = np.abs(w[space.t_base:])          # PAIR_ONES (no triple << 0)
    model = ChainCRF2(space, data, inference="dense" if seed == 5 else "auto")
    loss, g = model.loss_grad(w)
    _assert_close(loss, reference_loss2(space, data, w), w)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("seed,scale", _cases(2))
def test_second_order_sgd_step_loss(seed, scale):
    rng = np.random.default_rng(500 + seed)
    data = random_data(rng, n_seq=4, max_len=6, n_uni=5, n_big=2, n_labels=3, p_big=0.7)
    space = random_space2(data, "full", 3, 5, 2)
    w = _weights(rng, space.n_params, scale)
    model = ChainCRF2(space, data)
    got = model.sample_loss(np.arange(data.n_sequences, dtype=np.int64), w)
    _assert_close(got, reference_loss2(space, data, w), w)


# --------------------------------------------------------------------------- the chain core
@np.errstate(over="ignore", invalid="ignore")
def _core_case(rng, kind, scale, n, mat):
    """(trans, E, per-position pair score tables, corr) of a random chain with
    corrections at some positions, a whole-matrix position and (all-pairs kinds, with
    ``mat``) a stored-matrix position."""
    S = 4
    if kind in (C.DENSE, C.ONES):
        nnz = S * S if kind == C.DENSE else 3
        pairs = rng.choice(S * S, size=nnz, replace=False)
        sc = rng.uniform(-scale, scale, size=nnz)
        if kind == C.ONES:
            sc = np.abs(sc)
        trans = C.make_transitions(S, pairs // S, pairs % S, sc, kind=kind)
        T = np.zeros((S, S))
        T.flat[pairs] = sc
    elif kind == C.LIST:
        pairs = np.array([p for p in range(S * S) if rng.random() < 0.7 or p % (S + 1) == 0])
        sc = rng.uniform(-scale, scale, size=len(pairs))
        trans = C.make_transitions(S, pairs // S, pairs % S, sc, kind=C.LIST, all_pairs=False)
        T = np.full((S, S), -np.inf)
        T.flat[pairs] = sc
    else:
        L = 2
        S = 2 * L
        allowed = [(a * L + b, b * L + c) for a in range(2) for b in range(L) for c in range(L)]
        sc = np.abs(rng.uniform(-scale, scale, size=len(allowed)))
        src = np.array([p[0] for p in allowed])
        dst = np.array([p[1] for p in allowed])
        trans = C.make_transitions(S, src, dst, sc, kind=C.PAIR_ONES, n_labels=L, all_pairs=False)
        T = np.full((S, S), -np.inf)
        T[src, dst] = sc
    fptr, fi = trans.fptr, trans.fi
    listed = [(fi[k], j, k) for j in range(S) for k in range(fptr[j], fptr[j + 1])]
    rows, cptr, tables = [], [0, 0], [None]
    mats, matsT, mscores = [], [], []
    Sp = C.padded(S)
    for t in range(1, n):
        Tt = T.copy()
        if mat and t == 1:
            v = rng.uniform(-scale, scale, size=(S, S))
            M = np.zeros((Sp, Sp))
            raw = T + v
            for i, j, k in listed:
                M[i, j] = C.base_entry(trans, i, j, k) * np.exp(v[i, j])
            mats.append(M)
            matsT.append(M.T.copy())
            mscores.append(np.concatenate([raw.T.ravel(), [raw.min(), raw.max()]]))
            rows.append((C.MAT, 0, 0.0, 0.0, 0))
            Tt = raw
        elif t == 2:
            rows.append((C.FULL, 0, 0.0, 0.0, 0))
            for i, j, k in listed:
                v = rng.uniform(-scale, scale)
                rows.append((i, j, C.base_entry(trans, i, j, k) * np.exp(v), v, k))
                Tt[i, j] += v
        elif t % 2:
            for i, j, k in listed:
                if rng.random() < 0.5:
                    v = rng.uniform(-min(scale, 12.0), scale)       # 1 + expm1(v) keeps its digits
                    if kind == C.ONES:
                        v = max(v, -12.0 - T[i, j])
                    rows.append((i, j, C.base_entry(trans, i, j, k) * np.expm1(v), v, k))
                    Tt[i, j] += v
        cptr.append(len(rows))
        tables.append(Tt)
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    corr = Corrections(np.array(cptr, np.int64), np.array(cols[0], np.int64), np.array(cols[1], np.int64),
                       np.array(cols[2], float), np.array(cols[3], float), np.array(cols[4], np.int64))
    if mats:
        trans = C.with_matrices(trans, np.array(mats), np.array(matsT), np.array(mscores))
    E = rng.uniform(-scale, scale, size=(n, S))
    if kind == C.PAIR_ONES:
        E[1:, S // 2:] = -np.inf             # begin-marker states are never entered
    return trans, E, tables, corr, S


@pytest.mark.parametrize("kind", [C.DENSE, C.ONES, C.LIST, C.PAIR_ONES])
@pytest.mark.parametrize("seed,scale", _cases(8))
def test_chain_core_forward(kind, seed, scale):
    rng = np.random.default_rng(600 + seed)
    n = 6
    mat = kind in (C.DENSE, C.ONES) and seed % 2 == 0
    trans, E, tables, corr, S = _core_case(rng, kind, scale, n, mat)
    want = _log_z(E, tables)
    Sp = C.padded(S)
    Ep = np.zeros((n, Sp))
    Ep[:, :S] = E
    psi, shift = np.zeros((n, Sp)), np.zeros(n)
    C.exp_rows(Ep, psi, shift, n, S, C.exp_scratch(n, Sp))
    with np.errstate(over="ignore", invalid="ignore"):
        got = C.forward(psi, shift, n, trans, corr, np.zeros((n, Sp)), np.zeros(n), 0)
    if not np.isnan(got):                    # NaN: the caller goes to log space
        assert abs(got - want) <= 1e-12 * max(1.0, abs(want)) * n, (got, want)
    if mat:
        return                               # (log space gets explicit lists, never a stored matrix)
    la, lb = np.zeros((n, S)), np.zeros((n, S))
    fv_t = np.zeros(len(trans.fv))
    logz_log = C.forward_backward_log(Ep, n, trans, corr, la, lb, np.zeros(n), np.zeros((n, Sp)),
                                      np.zeros(len(trans.fv)), np.zeros(n, np.uint8), None, fv_t,
                                      np.zeros(2 * S + len(trans.fv) + 1))
    assert abs(logz_log - want) <= 1e-12 * max(1.0, abs(want)) * n, (logz_log, want)


def test_dense_rows_never_drop_a_path_that_matters():
    """The failure seen on CoNLL-2000 with unpenalised L-BFGS (a negative loss): scores
    spread over some 600 nats, so that a state's row entry underflows at one position
    while a later transition makes it the best; the scaled rows dropped it and summed
    only worse paths. Plain DENSE chains, no corrections: a finite scaled log Z must be
    the reference's."""
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(400):
        S, n = int(rng.integers(2, 5)), int(rng.integers(3, 7))
        T = rng.uniform(-600.0, 600.0, size=(S, S))
        E = rng.uniform(-600.0, 600.0, size=(n, S))
        trans = C.make_transitions(S, np.repeat(np.arange(S), S), np.tile(np.arange(S), S), T.ravel(),
                                   kind=C.DENSE)
        Sp = C.padded(S)
        Ep = np.zeros((n, Sp))
        Ep[:, :S] = E
        psi, shift = np.zeros((n, Sp)), np.zeros(n)
        C.exp_rows(Ep, psi, shift, n, S, C.exp_scratch(n, Sp))
        corr = correction_lists(n, 0)
        got = C.forward(psi, shift, n, trans, corr, np.zeros((n, Sp)), np.zeros(n), 0)
        want = _log_z(E, [None] + [T] * (n - 1))
        if not np.isnan(got):
            checked += 1
            assert abs(got - want) <= 1e-12 * abs(want) * n, (got, want)
    assert checked > 0
