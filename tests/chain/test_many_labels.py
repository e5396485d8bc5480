"""Hundreds of labels (issue: label sets in the thousands): every attribute with every
label (``all_possible_states``), transition weights on the label pairs seen in training.

The model's padded rows are then the weight vector's own rows (``CRFView.rows_in_w``)
and the chain takes the sparse transition step (a ONES structure over the weighted
pairs); both must give what the copied rows and the dense step give, the gradient must
match finite differences, decoding and marginals must match brute force, and a fit's
weight-sized memory must stay within the documented formula
(:func:`spargel.core.limits.training_bytes`).
"""

import tracemalloc

import numpy as np
import pytest

from spargel import CRF
import spargel.chain.crf as crf_module
from spargel.chain import inference as C
from spargel.chain.crf import ChainCRF, decode, marginals
from spargel.chain.kernel_data import Corrections
from spargel.core.limits import BASE_BYTES, gradient_buffers, training_bytes, weight_copies
from spargel.data.dataset import SequenceData
from spargel.data.feature_space import FeatureSpace


def label_task(L=400, n_seq=160, n_attr=900, per_token=6, seed=0, min_len=3, max_len=9):
    """A data set over L labels (each label occurs: the first tokens run through all of
    them), sparse successors, per_token attributes a token from n_attr."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=n_seq)
    T = int(lengths.sum())
    succ = rng.integers(0, L, size=(L, 3))
    y = np.empty(T, dtype=np.int32)
    seq_ptr = np.zeros(n_seq + 1, dtype=np.int64)
    np.cumsum(lengths, out=seq_ptr[1:])
    cover = rng.permutation(L)
    t = 0
    for s in range(n_seq):
        for k in range(lengths[s]):
            if t < L:
                y[t] = cover[t]
            elif k == 0 or rng.random() < 0.2:
                y[t] = rng.integers(0, L)
            else:
                y[t] = succ[y[t - 1], rng.integers(0, 3)]
            t += 1
    # a label's own attribute, then noise
    ids = np.empty((T, per_token), dtype=np.int32)
    ids[:, 0] = y % n_attr
    ids[:, 1:] = rng.integers(0, n_attr, size=(T, per_token - 1))
    ids.sort(axis=1)
    uni_ptr = np.arange(T + 1, dtype=np.int64) * per_token
    flat = ids.ravel()
    # distinct attributes per token (repeats removed, offsets recomputed)
    keep = np.ones(flat.shape, bool)
    keep.reshape(T, per_token)[:, 1:] = ids[:, 1:] != ids[:, :-1]
    counts = keep.reshape(T, per_token).sum(axis=1)
    uni_ptr = np.zeros(T + 1, dtype=np.int64)
    np.cumsum(counts, out=uni_ptr[1:])
    uni_ids = flat[keep].astype(np.int32)
    data = SequenceData(seq_ptr=seq_ptr, uni_ptr=uni_ptr, uni_ids=uni_ids, uni_vals=np.ones(len(uni_ids)),
                        big_ptr=np.zeros(T + 1, dtype=np.int64), big_ids=np.zeros(0, np.int32),
                        big_vals=np.zeros(0), labels=y)
    space = FeatureSpace.observed(data, L, n_attr, 0, all_states=True)
    return space, data


@pytest.fixture(scope="module")
def task():
    return label_task()


def test_layout_takes_the_in_place_rows_and_the_sparse_step(task):
    space, data = task
    L = space.n_labels
    assert L % C.LANES == 0 and space.n_params == 900 * L + len(space.t_pair)
    assert len(space.t_pair) < crf_module.SPARSE_TRANSITIONS * L * L
    m = ChainCRF(space, data)
    w = np.random.default_rng(1).normal(scale=0.2, size=space.n_params)
    assert m.view.rows_in_w
    assert m.view.refresh(w).kind == C.ONES
    # the rows are the weights themselves, not a copy
    assert np.shares_memory(m.view.aux.Wd, w)
    assert np.array_equal(m.view.aux.Wd.ravel(), w[:900 * L])
    # a transition weight below the cancellation limit takes the dense step
    w2 = w.copy()
    w2[space.t_base] = -2 * C.CANCEL_LIMIT
    assert m.view.refresh(w2).kind == C.DENSE


def test_in_place_rows_and_sparse_step_equal_the_copied_rows_and_the_dense_step(task, monkeypatch):
    space, data = task
    rng = np.random.default_rng(2)
    w = rng.normal(scale=0.3, size=space.n_params)
    w[space.t_base:] = rng.normal(scale=2.0, size=len(space.t_pair))
    fast = ChainCRF(space, data, n_jobs=2)
    dense = ChainCRF(space, data, inference="dense")
    monkeypatch.setattr(crf_module, "full_rows", lambda *a: False)
    copied = ChainCRF(space, data, inference="dense")
    assert fast.view.rows_in_w and dense.view.rows_in_w and not copied.view.rows_in_w
    for x in (w, 0.5 * w):
        lf, gf = fast.loss_grad(x)
        ld, gd = dense.loss_grad(x)
        lc, gc = copied.loss_grad(x)
        assert lf == pytest.approx(lc, rel=1e-12) and ld == pytest.approx(lc, rel=1e-12)
        scale = np.abs(gc).max()
        np.testing.assert_allclose(gf, gc, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(gd, gc, rtol=0, atol=1e-10 * scale)
        assert fast.loss(x) == pytest.approx(lf, rel=1e-12)
    # each call hands out a gradient of its own
    g1 = fast.loss_grad(w)[1]
    g2 = fast.loss_grad(0.5 * w)[1]
    assert not np.shares_memory(g1, g2)
    np.testing.assert_allclose(g1, fast.loss_grad(w)[1], rtol=0, atol=1e-12 * np.abs(g1).max())


def test_gradient_matches_finite_differences_on_a_slice(task):
    space, data = task
    rng = np.random.default_rng(3)
    m = ChainCRF(space, data)
    w = rng.normal(scale=0.2, size=space.n_params)
    w[space.t_base:] = rng.normal(scale=1.0, size=len(space.t_pair))
    _, g = m.loss_grad(w)
    L = space.n_labels
    seen = np.unique(data.uni_ids[:50])
    picks = np.concatenate([seen[:4] * L + rng.integers(0, L, size=4),      # attributes of the first tokens
                            seen[:2] * L + data.labels[:2],                  # gold labels
                            space.t_base + rng.integers(0, len(space.t_pair), size=4)])
    h = 1e-5
    for k in picks:
        e = np.zeros(space.n_params)
        e[k] = h
        fd = (m.loss(w + e) - m.loss(w - e)) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=1e-5, abs=1e-6), k


def _brute(E, T):
    """Best path and marginals of one short sequence by enumerating every path."""
    n, L = E.shape
    if n == 1:
        s = E[0]
    elif n == 2:
        s = E[0][:, None] + T + E[1][None, :]
    else:
        s = E[0][:, None, None] + T[:, :, None] + E[1][None, :, None] + T[None, :, :] + E[2][None, None, :]
    best = np.unravel_index(np.argmax(s), s.shape)
    p = np.exp(s - s.max())
    p /= p.sum()
    marg = [p.sum(axis=tuple(a for a in range(n) if a != t)) for t in range(n)]
    return np.array(best), np.array(marg)


def test_decoding_and_marginals_equal_brute_force_on_short_sequences():
    # 200 labels: three-token sequences enumerate 8 M paths
    space, data = label_task(L=200, n_seq=120, n_attr=500, seed=4, min_len=1, max_len=3)
    L = space.n_labels
    rng = np.random.default_rng(5)
    w = rng.normal(scale=1.0, size=space.n_params)
    w[space.t_base:] = rng.normal(scale=3.0, size=len(space.t_pair))
    assert ChainCRF(space, data).view.refresh(w).kind == C.ONES
    path, _ = decode(space, data, w)
    marg, _ = marginals(space, data, w)
    T = np.zeros((L, L))
    T.ravel()[space.t_pair] = w[space.t_base:]
    W = w[:space.t_base].reshape(-1, L)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        E = np.array([W[data.uni_ids[data.uni_ptr[t]:data.uni_ptr[t + 1]]].sum(axis=0) for t in range(lo, hi)])
        best, bm = _brute(E, T)
        assert np.array_equal(path[lo:hi], best), s
        np.testing.assert_allclose(marg[lo:hi], bm, rtol=0, atol=1e-10)


def _fit_peak(X, y, solver, memory, max_iter):
    """Peak bytes that Python and numpy allocations reach during a fit (tracemalloc
    follows numpy's arrays) and the fitted estimator."""
    crf = CRF(solver=solver, l1=0.01 if solver != "lbfgs" else 0.0, max_iter=max_iter, tol=0, gtol=0,
              all_possible_states=True, solver_options={"memory": memory} if solver != "sgd-l1" else
              {"eta0": 0.05, "calibration_samples": 20})
    crf.fit(X[:4], y[:4])        # compiles what it needs first (kernels allocate nothing)
    tracemalloc.start()
    try:
        crf.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, crf


@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
@pytest.mark.parametrize("solver,memory", [("owlqn", 3), ("lbfgs", 2), ("sgd-l1", 0)])
def test_label_heavy_fit_stays_within_the_memory_formula(solver, memory):
    # 400 labels, about 5,000 attributes: 2 M unigram weights, 16 MB a weight vector;
    # the weight-sized vectors dominate what the fit allocates
    rng = np.random.default_rng(6)
    L, A = 400, 8000
    X, y = [], []
    t = 0
    for s in range(200):
        n = int(rng.integers(3, 8))
        X.append([[f"a{v}" for v in rng.integers(0, A, size=8)] for _ in range(n)])
        y.append([f"y{(t + k) % L}" for k in range(n)])       # every label occurs
        t += n
    peak, crf = _fit_peak(X, y, solver, memory, max_iter=memory + 2 if memory else 2)
    attrs = {a for seq in X for tok in seq for a in tok}
    pairs = {(a, b) for seq in y for a, b in zip(seq[:-1], seq[1:])}
    F = len(attrs) * L + len(pairs)
    assert len(crf.classes_) == L
    formula = training_bytes(L, len(attrs), F, sum(map(len, X)), solver, memory=memory,
                             l1=solver == "owlqn", entries_per_token=8) - BASE_BYTES
    chunks = gradient_buffers(F) if solver != "sgd-l1" else 1
    vectors = 8 * F * weight_copies(solver, memory, l1=solver == "owlqn", n_chunks=chunks)
    # within the formula, and not far below what its weight-sized vectors take
    assert 0.6 * vectors <= peak <= 1.25 * formula, (peak / 2 ** 20, formula / 2 ** 20, vectors / 2 ** 20)


def _ones_structure(S, nnz, rng, big=()):
    """A ONES structure over S states listing nnz pairs (two with weight 0), the first
    ones given the large weights ``big``."""
    pairs = rng.choice(S * S, size=nnz, replace=False)
    score = np.maximum(rng.normal(scale=2.0, size=nnz), -C.CANCEL_LIMIT + 1)
    score[:len(big)] = big
    score[-2:] = 0.0
    return C.make_transitions(S, pairs // S, pairs % S, score, kind=C.ONES, keep_zeros=True)


@pytest.mark.parametrize("big,shift", [((), 0.0), ((1000.0, 400.0, 30.0), 700.0), ((705.0, 650.0), 0.0)])
def test_sparse_log_pass_equals_the_full_log_pass(big, shift):
    # weights of several hundred: the scaled recursion refuses them (forward gives NaN),
    # and the sparse log-space pass must give the full one's log Z, marginals and counts
    rng = np.random.default_rng(7)
    S = 300
    trans = _ones_structure(S, 1200, rng, big)
    for n in (1, 2, 9):
        E = rng.normal(scale=3.0, size=(n, S))
        E[:, :4] += shift
        if n > 2:
            E[1, 5:] = -np.inf            # a clamped position: only five states allowed
        Sp = C.padded(S)
        corr = Corrections(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
                           np.zeros(0), np.zeros(0, np.int64))       # no position corrections
        if big and n > 1:
            psi, sh = np.zeros((n, Sp)), np.zeros(n)
            C.exp_rows(np.pad(E, ((0, 0), (0, Sp - S))), psi, sh, n, S, C.exp_scratch(n, Sp))
            assert np.isnan(C.forward(psi, sh, n, trans, corr, np.zeros((n, Sp)), np.zeros(n), 0))
        la, lb = np.zeros((n, S)), np.zeros((n, S))
        g_full, g_sparse = np.zeros((n, Sp)), np.zeros((n, Sp))
        t_full, t_sparse = np.zeros(S * S), np.zeros(S * S)
        z_full = C.forward_backward_log(E, n, trans, corr, la, lb, np.zeros(n), g_full, t_full,
                                        np.zeros(n, np.uint8), None, np.zeros(S * S), np.zeros(2 * S + 1))
        z_sparse = C.forward_backward_log_ones(E, n, trans, la, lb, np.zeros(n), g_sparse, t_sparse,
                                               np.zeros(2 * S + 1))
        assert z_sparse == pytest.approx(z_full, rel=1e-13, abs=1e-11)
        np.testing.assert_allclose(g_sparse, g_full, rtol=0, atol=1e-12)
        k = trans.gk
        np.testing.assert_allclose(t_sparse[k], t_full[k], rtol=0, atol=1e-11 * max(1.0, n))
        # only the listed pairs' counts are written
        assert np.count_nonzero(np.delete(t_sparse, k)) == 0


def test_large_transition_weights_give_the_dense_paths_results_and_brute_force_marginals(task):
    # a line search's far trial point: transition weights of several hundred, which the
    # scaled recursion refuses for every sequence; the sparse step's log-space pass must
    # give what the dense structure's (O(L^2)) log-space pass gives
    space, data = task
    rng = np.random.default_rng(8)
    w = rng.normal(scale=0.3, size=space.n_params)
    tw = rng.normal(scale=1.0, size=len(space.t_pair))
    tw[rng.choice(len(tw), size=20, replace=False)] = rng.uniform(300, 1000, size=20)
    w[space.t_base:] = tw
    fast = ChainCRF(space, data)
    dense = ChainCRF(space, data, inference="dense")
    assert fast.view.refresh(w).kind == C.ONES and dense.view.refresh(w).kind == C.DENSE
    lf, gf = fast.loss_grad(w)
    ld, gd = dense.loss_grad(w)
    assert lf == pytest.approx(ld, rel=1e-12)
    np.testing.assert_allclose(gf, gd, rtol=0, atol=1e-10 * np.abs(gd).max())
    # marginals on short sequences against enumeration, with weights of 900
    space2, data2 = label_task(L=200, n_seq=60, n_attr=500, seed=9, min_len=2, max_len=3)
    L = space2.n_labels
    w2 = rng.normal(scale=1.0, size=space2.n_params)
    tw2 = rng.normal(scale=1.0, size=len(space2.t_pair))
    tw2[:15] = 900.0 + rng.normal(size=15)
    w2[space2.t_base:] = tw2
    assert ChainCRF(space2, data2).view.refresh(w2).kind == C.ONES
    marg, logz = marginals(space2, data2, w2)
    T = np.zeros((L, L))
    T.ravel()[space2.t_pair] = tw2
    W = w2[:space2.t_base].reshape(-1, L)
    for s in range(data2.n_sequences):
        lo, hi = data2.seq_ptr[s], data2.seq_ptr[s + 1]
        E = np.array([W[data2.uni_ids[data2.uni_ptr[t]:data2.uni_ptr[t + 1]]].sum(axis=0) for t in range(lo, hi)])
        _, bm = _brute(E, T)
        np.testing.assert_allclose(marg[lo:hi], bm, rtol=0, atol=1e-10)


def test_sgd_pass_takes_the_sparse_step_and_sums_the_batch_loss(task):
    # the SGD pass's transition step is the sparse one at this label count; its summed
    # loss must be the batch loss: ordinary weights (scaled recursion), weights of
    # several hundred (the sparse log-space pass) and one below the cancellation limit
    # (the full log-space pass)
    space, data = task
    m = ChainCRF(space, data)
    assert m._sgd_trans().kind == C.ONES
    assert ChainCRF(space, data, inference="dense")._sgd_trans().kind == C.DENSE
    rng = np.random.default_rng(10)
    order = np.arange(data.n_sequences, dtype=np.int64)
    w = rng.normal(scale=0.3, size=space.n_params)
    w[space.t_base:] = rng.normal(scale=2.0, size=len(space.t_pair))
    big = w.copy()
    big[space.t_base + rng.choice(len(space.t_pair), size=10, replace=False)] = rng.uniform(300, 1000, size=10)
    low = w.copy()
    low[space.t_base + 3] = -2 * C.CANCEL_LIMIT
    for x in (w, big, low):
        assert m.sample_loss(order, x) == pytest.approx(m.loss(x), rel=1e-12)


@pytest.mark.parametrize("weights", ["small", "large", "below the cancellation limit"])
def test_sgd_pass_with_the_sparse_step_equals_the_dense_step(task, monkeypatch, weights):
    # small: the scaled recursion; large (transition weights in the hundreds): the sparse
    # log-space pass; one weight of -30: the full log-space pass
    from spargel.core import lazy_l1 as Z
    space, data = task
    rng = np.random.default_rng(11)
    v0 = rng.normal(scale=0.1, size=space.n_params)
    v0[space.t_base:] = rng.normal(scale=0.5, size=len(space.t_pair))
    if weights == "large":
        v0[space.t_base:] = np.abs(rng.normal(scale=400.0, size=len(space.t_pair)))
    elif weights != "small":
        v0[space.t_base + 5] = -30.0
    order = rng.permutation(data.n_sequences).astype(np.int64)
    prm = Z.sgd_params(0.05, 0.9, Z.EXPONENTIAL, Z.CUMULATIVE, data.n_sequences, 0.0, 1, 0.01)
    out = []
    for dense in (False, True):
        m = ChainCRF(space, data)
        if dense:
            L = space.n_labels
            monkeypatch.setattr(m, "_sgd_trans", lambda: C.make_transitions(L, np.zeros(0), np.zeros(0), np.zeros(0),
                                                                           kind=C.DENSE))
        assert m._sgd_trans().kind == (C.DENSE if dense else C.ONES)
        v, aux, st = v0.copy(), np.zeros(space.n_params), Z.new_state()
        assert m.sgd_pass(order, v, aux, np.zeros(0), np.zeros(0), st, prm) == 0
        out.append((v, st))
    (vs, sts), (vd, std) = out
    np.testing.assert_allclose(vs, vd, rtol=1e-9, atol=1e-12 * np.abs(vd).max())
    assert sts[Z.ONLINE_LOSS] == pytest.approx(std[Z.ONLINE_LOSS], rel=1e-10)
    # the log-space pass ran where the weights are large (both structures) or below the
    # cancellation limit (the sparse one: the dense step handles that weight scaled)
    if weights == "below the cancellation limit":
        assert sts[Z.FALLBACKS] > 0 and std[Z.FALLBACKS] == 0
    else:
        assert sts[Z.FALLBACKS] == std[Z.FALLBACKS] and (sts[Z.FALLBACKS] > 0) == (weights == "large")
