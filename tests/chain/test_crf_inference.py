"""Exact inference against brute-force enumeration on random tiny models: the one
chain-inference core (models/chain.py) through the first-order CRF, in every transition
form (dense, exp(λ)-1 "ones" base with sparse weights), with the log-space fallback."""

import numpy as np
import pytest

from spargel.chain import inference as C
from spargel.chain import crf as M
from spargel.chain.kernel_data import correction_lists

from crf_reference import (brute_logz, brute_loss, brute_marginals, enumerate_paths, random_data,
                           random_space)

CASES = [("full", True), ("observed", True), ("full", False), ("observed", False)]


def problem(seed, kind, transitions, n_labels=3, scale=1.0, real_values=True):
    # real_values=False: attributes at value 1, so that positions with one bigram attribute
    # take the compacted-list copy and the stored matrices (crf_kernels.corrections)
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_labels=n_labels) if real_values else random_data(rng, n_labels=n_labels, n_seq=6,
                                                                               real_values=False)
    space = random_space(rng, data, kind, n_labels, 6, 3, transitions)
    w = rng.normal(scale=scale, size=space.n_params)
    return space, data, w


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_logz_and_marginals_match_enumeration(seed, kind, transitions):
    space, data, w = problem(seed, kind, transitions)
    marg, logz = M.marginals(space, data, w)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz(space, data, w, s), rel=1e-10, abs=1e-10)
        point, _ = brute_marginals(space, data, w, s)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-12)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_loss_matches_enumeration(seed, kind, transitions):
    space, data, w = problem(seed, kind, transitions)
    model = M.ChainCRF(space, data)
    loss, _ = model.loss_grad(w)
    assert loss == pytest.approx(brute_loss(space, data, w), rel=1e-10)
    assert model.loss(w) == pytest.approx(loss, rel=1e-12)


def _finite_differences(model, w, eps=1e-6):
    fd = np.empty_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        fd[i] = (model.loss(w + e) - model.loss(w - e)) / (2 * eps)
    return fd


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("density", [1.0, 0.3, 0.0])
@pytest.mark.parametrize("real_values", [True, False])
def test_gradient_matches_finite_differences(kind, transitions, density, real_values):
    # density 0: every weight zero (no chain corrections at all, yet every bigram and
    # transition weight needs its expected count); 0.3: a sparse model (ones base)
    space, data, w = problem(7, kind, transitions, real_values=real_values)
    w = np.where(np.random.default_rng(1).random(len(w)) < density, w, 0.0)
    for inference in ("auto", "dense"):
        model = M.ChainCRF(space, data, inference=inference)
        _, g = model.loss_grad(w)
        np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_viterbi_and_nbest_match_enumeration(seed, kind, transitions):
    space, data, w = problem(seed, kind, transitions)
    best, best_scores = M.decode(space, data, w)
    lists = M.nbest(space, data, w, k=5)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths(space, data, w, s)
        order = np.argsort(-scores, kind="stable")
        assert list(best[lo:hi]) == list(paths[order[0]])
        assert best_scores[s] == pytest.approx(scores[order[0]])
        expect = scores[order[:5]]
        got = np.array([sc for _, sc in lists[s]])
        np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-12)
        for path, sc in lists[s]:
            assert sc == pytest.approx(scores[paths.index(tuple(path))])
        assert len({tuple(p) for p, _ in lists[s]}) == len(lists[s])


def test_constrained_viterbi_matches_enumeration():
    space, data, w = problem(3, "full", True)
    rng = np.random.default_rng(0)
    fixed = np.where(rng.random(data.n_tokens) < 0.4, rng.integers(space.n_labels, size=data.n_tokens), -1)
    fixed = fixed.astype(np.int32)
    best, _ = M.decode(space, data, w, fixed)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths(space, data, w, s)
        ok = [all(f < 0 or f == y for f, y in zip(fixed[lo:hi], p)) for p in paths]
        allowed = np.where(ok, scores, -np.inf)
        assert list(best[lo:hi]) == list(paths[int(np.argmax(allowed))])


def test_long_sequence_with_large_weights_is_stable():
    rng = np.random.default_rng(1)
    data = random_data(rng, n_seq=1, max_len=1, n_labels=5)
    # one sequence of 10,000 tokens with large weights
    n = 10_000
    from spargel.data.dataset import SequenceData
    uni_ids = rng.integers(6, size=n).astype(np.int32)
    data = SequenceData(np.array([0, n], np.int64), np.arange(n + 1, dtype=np.int64), uni_ids, np.ones(n),
                        np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0), rng.integers(5, size=n).astype(np.int32))
    from spargel.data.feature_space import FeatureSpace
    space = FeatureSpace.full(5, 6, 0)
    for scale in (1.0, 50.0, 800.0):
        w = rng.normal(scale=scale, size=space.n_params)
        marg, logz = M.marginals(space, data, w)
        assert np.isfinite(logz).all() and np.isfinite(marg).all()
        np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)
        model = M.ChainCRF(space, data)
        loss, g = model.loss_grad(w)
        assert np.isfinite(loss) and np.isfinite(g).all() and loss >= -1e-6 * abs(logz[0])
        # compare with a plain log-space forward recursion in numpy
        U = w[:space.b_base].reshape(6, 5)
        T = np.zeros(25)
        T[space.t_pair] = w[space.t_base:]
        E = U[uni_ids]
        la = E[0].copy()
        for t in range(1, n):
            la = np.logaddexp.reduce(la[:, None] + T.reshape(5, 5), axis=0) + E[t]
        assert logz[0] == pytest.approx(np.logaddexp.reduce(la), rel=1e-10)


def test_parallel_gradient_equals_single_thread():
    rng = np.random.default_rng(5)
    data = random_data(rng, n_seq=60, max_len=8, n_labels=4)
    space = random_space(rng, data, "full", 4, 6, 3)
    w = rng.normal(size=space.n_params)
    l1, g1 = M.ChainCRF(space, data, n_jobs=1).loss_grad(w)
    l2, g2 = M.ChainCRF(space, data, n_jobs=3).loss_grad(w)
    assert l2 == pytest.approx(l1, rel=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind,transitions", CASES)
def test_huge_weights_match_enumeration(kind, transitions):
    """Weights so large that scaling underflows: the log-space fallback must agree."""
    space, data, w = problem(11, kind, transitions, scale=900.0)
    marg, logz = M.marginals(space, data, w)
    model = M.ChainCRF(space, data)
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(brute_loss(space, data, w), rel=1e-9, abs=1e-6)
    assert np.isfinite(g).all()
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz(space, data, w, s), rel=1e-10)
        point, _ = brute_marginals(space, data, w, s)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-9)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("density", [1.0, 0.2])
def test_inference_modes_agree(kind, transitions, density):
    """Dense computation (every bigram weight, dense transition matrix) and the sparse one
    (only non-zero bigram weights as corrections, ones base when transitions are sparse)
    give the same loss, gradient and Viterbi paths."""
    space, data, w = problem(4, kind, transitions)
    w = np.where(np.random.default_rng(2).random(len(w)) < density, w, 0.0)
    dense = M.ChainCRF(space, data, inference="dense", n_jobs=2).loss_grad(w)
    sparse = M.ChainCRF(space, data, inference="sparse").loss_grad(w)
    assert sparse[0] == pytest.approx(dense[0], rel=1e-12)
    np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-10, atol=1e-12)
    ids_d, sc_d = M.decode(space, data, w, inference="dense")
    ids_s, sc_s = M.decode(space, data, w, inference="sparse")
    np.testing.assert_array_equal(ids_s, ids_d)
    np.testing.assert_allclose(sc_s, sc_d, rtol=1e-12)
    with pytest.raises(ValueError, match="inference"):
        M.ChainCRF(space, data, inference="fast")


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("density", [0.3, 0.05])
@pytest.mark.parametrize("real_values", [True, False])
def test_sparse_viterbi_matches_enumeration_with_ties(kind, transitions, density, real_values):
    """The O(S + corrections) Viterbi step of a ONES structure: few non-zero weights, all
    small integers (so many paths tie): the best score is the enumerated one and the path
    is the one the dense step picks (the same tie rule)."""
    space, data, w = problem(5, kind, transitions, real_values=real_values)
    rng = np.random.default_rng(3)
    w = np.where(rng.random(len(w)) < density, rng.integers(-2, 3, size=len(w)), 0).astype(float)
    w[space.t_base + 1:] = 0.0             # at most one transition weight: a ONES base
    assert M.ChainCRF(space, data, inference="sparse").view.refresh(w)[0] == C.ONES
    ids_s, sc_s = M.decode(space, data, w, inference="sparse")
    ids_d, sc_d = M.decode(space, data, w, inference="dense")
    np.testing.assert_array_equal(ids_s, ids_d)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths(space, data, w, s)
        assert sc_s[s] == pytest.approx(scores.max(), abs=1e-12)
        assert scores[paths.index(tuple(ids_s[lo:hi]))] == pytest.approx(scores.max(), abs=1e-12)


@pytest.mark.parametrize("inference", ["auto", "dense"])
@pytest.mark.parametrize("transitions", ["none", "dense", "one"])
def test_stored_position_matrices_match_the_correction_lists(monkeypatch, inference, transitions):
    """Bigram attributes with many non-zero weights get a stored dense position matrix
    (chain.MAT): loss, gradient and marginals equal enumeration and the list path."""
    rng = np.random.default_rng(6)
    data = random_data(rng, n_seq=12, n_labels=3, p_big=0.9, real_values=False)
    space = random_space(rng, data, "full", 3, 6, 3, transitions != "none")
    w = rng.normal(size=space.n_params)
    if transitions == "one":
        w[space.t_base + 1:] = 0.0          # one transition weight: a ones base with a global correction
    starts = np.zeros(data.n_tokens, bool)
    starts[data.seq_ptr[:-1]] = True
    assert np.count_nonzero((np.diff(data.big_ptr) == 1) & ~starts) >= 8     # one attribute, not a first token
    model = M.ChainCRF(space, data, inference=inference)
    model.view.refresh(w)
    assert (model.view.bl[7] >= 0).any()
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(brute_loss(space, data, w), rel=1e-10)
    np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)
    marg, logz = M.marginals(space, data, w)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz(space, data, w, s), rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(marg[lo:hi], brute_marginals(space, data, w, s)[0], atol=1e-12)
    monkeypatch.setattr(M, "MATRIX_BUDGET", 0)
    lists = M.ChainCRF(space, data, inference=inference)
    assert len(lists.view.mats) == 0
    loss2, g2 = lists.loss_grad(w)
    assert loss2 == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(g2, g, rtol=1e-10, atol=1e-12)
    ids, scores = M.decode_view(model.view, w)
    ids2, scores2 = M.decode_view(lists.view, w)
    np.testing.assert_array_equal(ids, ids2)
    np.testing.assert_array_equal(scores, scores2)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, sc = enumerate_paths(space, data, w, s)
        assert list(ids[lo:hi]) == list(paths[int(np.argmax(sc))])


@pytest.mark.parametrize("kind", [C.DENSE, C.ONES])
def test_transition_structures_agree(kind):
    """The same transition scores in the DENSE and the ONES form give the same chain."""
    rng = np.random.default_rng(3)
    S, n = 4, 6
    src, dst = np.array([0, 1, 2, 3, 1]), np.array([1, 2, 0, 3, 1])
    sc = rng.normal(size=5)
    psi = np.zeros((n, C.padded(S)))
    psi[:, :S] = rng.random((n, S)) + 0.1
    corr = correction_lists(n, 0)
    out = {}
    for k in (C.DENSE, C.ONES):
        trans = C.make_transitions(S, src, dst, sc, kind=k)
        alpha, scale = np.zeros_like(psi), np.zeros(n)
        out[k] = C.forward(psi, np.zeros(n), n, trans, corr, alpha, scale, 0)
    T = np.zeros((S, S))
    T[src, dst] = sc
    la = np.log(psi[0, :S])
    for t in range(1, n):
        la = np.logaddexp.reduce(la[:, None] + T, axis=0) + np.log(psi[t, :S])
    assert out[kind] == pytest.approx(np.logaddexp.reduce(la), rel=1e-12)


def test_weights_driven_to_a_thousand_on_separable_data():
    """Issue case: L-BFGS without penalty on separable data drives weights to ~1e3; the
    loss must stay the log-space value (it once went negative) and marginals probabilities."""
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=6, max_len=5, n_labels=3, real_values=False)
    space = random_space(rng, data, "observed", 3, 6, 3)
    model = M.ChainCRF(space, data)
    for scale in (1e2, 1e3, 3e3):
        w = rng.normal(scale=scale, size=space.n_params)
        loss = model.loss(w)
        assert loss >= 0 and loss == pytest.approx(brute_loss(space, data, w), rel=1e-9, abs=1e-6)
        marg, _ = M.marginals(space, data, w)
        assert np.all(marg >= 0) and np.all(marg <= 1 + 1e-12)
        np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)


def test_models_do_not_depend_on_the_thread_count():
    """n_jobs 1, 2 and 4 split the batch into the same fixed chunks, summed in the same
    order: identical gradients, hence identical models (issue: 486 vs 476 iterations)."""
    from spargel import CRF
    from spargel.datasets import make_chain_data
    X, y, _ = make_chain_data(n_sequences=80, random_state=3)
    fits = [CRF(l1=0.5, n_jobs=j, tol=1e-8).fit(X, y) for j in (1, 2, 4)]
    for f in fits[1:]:
        assert f.n_iter_ == fits[0].n_iter_
        np.testing.assert_array_equal(f.weights_, fits[0].weights_)


def _brute_partial_loss(space, data, w, sw):
    total = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths(space, data, w, s)
        known = data.labels[lo:hi]
        ok = np.array([all(k < 0 or k == y for k, y in zip(known, p)) for p in paths])
        num = np.logaddexp.reduce(scores[ok])
        total += sw[s] * (np.logaddexp.reduce(scores) - num)
    return total


@pytest.mark.parametrize("kind,transitions", CASES)
def test_partial_labels_and_weights_match_enumeration(kind, transitions):
    space, data, w = problem(5, kind, transitions)
    rng = np.random.default_rng(9)
    data.labels = np.where(rng.random(data.n_tokens) < 0.4, -1, data.labels).astype(np.int32)
    sw = rng.uniform(0.2, 3.0, size=data.n_sequences)
    model = M.ChainCRF(space, data, sample_weight=sw, n_jobs=2)
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(_brute_partial_loss(space, data, w, sw), rel=1e-10)
    np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)
    big = M.ChainCRF(space, data, sample_weight=sw).loss_grad(w * 300)      # log-space fallback too
    assert big[0] == pytest.approx(_brute_partial_loss(space, data, w * 300, sw), rel=1e-9)


def test_integer_weights_equal_duplicated_sequences():
    space, data, w = problem(6, "full", True)
    reps = np.array([2, 1, 3, 1])[:data.n_sequences]
    dup = data.subset(np.repeat(np.arange(data.n_sequences), reps))
    a = M.ChainCRF(space, data, sample_weight=reps.astype(float)).loss_grad(w)
    b = M.ChainCRF(space, dup).loss_grad(w)
    assert a[0] == pytest.approx(b[0], rel=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-12)
