"""Exact inference against brute-force enumeration on random tiny models."""

import numpy as np
import pytest

from spargel.models import crf as M
from spargel.models import crf_kernels as K

from crf_reference import (brute_logz, brute_loss, brute_marginals, enumerate_paths, random_data,
                           random_space)

CASES = [("full", True), ("observed", True), ("full", False), ("observed", False)]


def problem(seed, kind, transitions, n_labels=3, scale=1.0):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_labels=n_labels)
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


@pytest.mark.parametrize("kind,transitions", CASES)
def test_gradient_matches_finite_differences(kind, transitions):
    space, data, w = problem(7, kind, transitions)
    model = M.ChainCRF(space, data)
    _, g = model.loss_grad(w)
    eps = 1e-6
    fd = np.empty_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        fd[i] = (model.loss(w + e) - model.loss(w - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


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
    from spargel.models.feature_space import FeatureSpace
    space = FeatureSpace.full(5, 6, 0)
    for scale in (1.0, 50.0, 800.0):
        w = rng.normal(scale=scale, size=space.n_params)
        marg, logz = M.marginals(space, data, w)
        assert np.isfinite(logz).all() and np.isfinite(marg).all()
        np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)
        model = M.ChainCRF(space, data)
        loss, g = model.loss_grad(w)
        assert np.isfinite(loss) and np.isfinite(g).all() and loss >= -1e-6 * abs(logz[0])
        # compare the scaled kernel (or its fallback) with the log-space kernel
        st, dt = space.as_tuple(), M.data_tuple(data)
        E = np.empty((n, 5)); la = np.empty((n, 5)); lb = np.empty((n, 5))
        K.emission_scores(w, st, dt, 0, n, E)
        trans = K.transition_matrix(w, st)
        ref = K.forward_backward_log(w, st, dt, 0, n, E, trans, la, lb, np.empty(n), np.empty(25), np.empty(5))
        assert logz[0] == pytest.approx(ref, rel=1e-10)


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
