"""Sparse forward-backward and sparse Viterbi against the dense kernels and brute force."""

import numpy as np
import pytest

from spargel.models import crf as M
from spargel.models import sparse_kernels as S

from crf_reference import brute_logz, brute_loss, random_data, random_space

CASES = [("full", True), ("observed", True), ("full", False), ("observed", False)]


def problem(seed, kind, transitions, n_labels=3, scale=1.0, zero=0.6):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_seq=6, n_labels=n_labels)
    space = random_space(rng, data, kind, n_labels, 6, 3, transitions)
    w = rng.normal(scale=scale, size=space.n_params)
    w[rng.random(space.n_params) < zero] = 0.0          # sparse weights, as l1 leaves them
    return space, data, w


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("ones", [True, False])
@pytest.mark.parametrize("seed", range(2))
def test_loss_and_gradient_equal_dense(seed, kind, transitions, ones):
    space, data, w = problem(seed, kind, transitions)
    model = M.ChainCRF(space, data)
    loss, g = model.loss_grad(w)
    loss_s, g_s = S.sparse_loss_grad(model, w, ones=ones)
    assert loss_s == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(g_s, g, rtol=1e-10, atol=1e-12)
    assert loss_s == pytest.approx(brute_loss(space, data, w), rel=1e-10)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("ones", [True, False])
def test_viterbi_equals_dense(kind, transitions, ones):
    for seed in range(3):
        space, data, w = problem(seed, kind, transitions, n_labels=4)
        rng = np.random.default_rng(seed)
        fixed = np.where(rng.random(data.n_tokens) < 0.3, rng.integers(4, size=data.n_tokens), -1).astype(np.int32)
        for f in (None, fixed):
            ids, scores = M.decode(space, data, w, f)
            ids_s, scores_s = S.sparse_decode(space, data, w, f, ones=ones)
            assert list(ids_s) == list(ids)
            np.testing.assert_allclose(scores_s, scores, rtol=1e-13, atol=1e-13)


def test_viterbi_ties_break_like_dense():
    space, data, w = problem(0, "full", True, n_labels=4)
    w[:] = 0.0                                  # every path ties
    w[space.b_base + 3] = 0.5
    ids, _ = M.decode(space, data, w)
    ids_s, _ = S.sparse_decode(space, data, w)
    assert list(ids_s) == list(ids)


def test_logz_matches_enumeration():
    space, data, w = problem(4, "full", True)
    logz = S.sparse_logz(space, data, w)
    for s in range(data.n_sequences):
        assert logz[s] == pytest.approx(brute_logz(space, data, w, s), rel=1e-12)


@pytest.mark.parametrize("kind,transitions", CASES)
def test_huge_weights_fall_back_to_log_space(kind, transitions):
    space, data, w = problem(11, kind, transitions, scale=900.0, zero=0.3)
    model = M.ChainCRF(space, data)
    loss, g = model.loss_grad(w)
    loss_s, g_s = S.sparse_loss_grad(model, w)
    assert loss_s == pytest.approx(loss, rel=1e-9, abs=1e-6)
    np.testing.assert_allclose(g_s, g, rtol=1e-7, atol=1e-7)


def test_parallel_chunks_equal_single_thread():
    rng = np.random.default_rng(5)
    data = random_data(rng, n_seq=40, max_len=7, n_labels=4)
    space = random_space(rng, data, "full", 4, 6, 3)
    w = rng.normal(size=space.n_params)
    w[rng.random(space.n_params) < 0.7] = 0.0
    l1, g1 = S.sparse_loss_grad(M.ChainCRF(space, data, n_jobs=1), w)
    l3, g3 = S.sparse_loss_grad(M.ChainCRF(space, data, n_jobs=3), w)
    assert l3 == pytest.approx(l1, rel=1e-12)
    np.testing.assert_allclose(g3, g1, rtol=1e-10, atol=1e-12)


def test_automatic_choice_follows_sparsity():
    space, data, w = problem(2, "full", False, zero=0.0)
    w[space.b_base:space.t_base] += 1.0                # no zero at all: ~2 attributes x |Y|^2 per position
    assert S.choose_inference(w, space, data) == "dense"
    assert S.choose_inference(w, space, data, task="viterbi") == "dense"
    w_sparse = w.copy()
    w_sparse[space.b_base:space.t_base] = 0.0
    w_sparse[space.b_base] = 1.0
    assert S.choose_inference(w_sparse, space, data) == "sparse"
    assert S.choose_inference(w, space, data, "sparse") == "sparse"
    with pytest.raises(ValueError, match="inference"):
        S.choose_inference(w, space, data, "fast")


def test_chaincrf_inference_option_and_decode():
    space, data, w = problem(1, "full", True)
    loss, g = M.ChainCRF(space, data, inference="dense").loss_grad(w)
    for mode in ("sparse", "auto"):
        model = M.ChainCRF(space, data, inference=mode)
        loss_m, g_m = model.loss_grad(w)
        assert loss_m == pytest.approx(loss, rel=1e-12)
        np.testing.assert_allclose(g_m, g, rtol=1e-10, atol=1e-12)
        assert model.loss(w) == pytest.approx(loss, rel=1e-12)
    ids, scores = M.decode(space, data, w, inference="dense")
    ids_s, scores_s = M.decode(space, data, w, inference="sparse")
    assert list(ids_s) == list(ids)
    with pytest.raises(ValueError, match="inference"):
        M.ChainCRF(space, data, inference="fast")
