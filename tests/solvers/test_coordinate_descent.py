"""Coordinate descent (cd) and blockwise coordinate descent (bcd) on the model
protocol: the CRF's block primitives against ground truth (the batch loss and
gradient), the same optimum as OWL-QN (elastic net) and FISTA (group lasso) on the same
objective, the fused compiled sweep against the generic loop, history, stop reasons,
blocks, refusals."""

import numpy as np
import pytest

from spargel import CRF
from spargel.datasets import make_chain_data
from spargel.errors import CapabilityError
from spargel.chain import inference as C
from spargel.chain.crf import ChainCRF
from spargel.chain.crf_bcd import BlockIndex
from spargel.data.feature_space import FeatureSpace
from spargel.core.penalties import ElasticNet, GroupLasso
from spargel.solvers import get_solver
from spargel.solvers.coordinate_descent import minimize_bcd, minimize_cd
from spargel.solvers.owlqn import minimize_owlqn
from spargel.solvers.proximal import minimize_fista

from crf_reference import random_data, random_space

TIGHT = dict(max_iter=3000, tol=1e-13, gtol=1e-10, window=1)


def problem(seed, kind, transitions, n_seq=25, bigrams=True, real_values=True):
    """A small CRF with random unigram and bigram attributes (real or 0/1 values)."""
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_seq=n_seq, max_len=6, n_labels=3, n_uni=8, n_big=4 if bigrams else 0,
                       real_values=real_values)
    space = random_space(rng, data, kind, 3, 8, 4 if bigrams else 0, transitions)
    return ChainCRF(space, data)


def chain_problem(kind="observed", n_sequences=30):
    """A CRF on make_chain_data (0/1 unigram attributes, transitions)."""
    X, y, _ = make_chain_data(n_sequences=n_sequences, n_irrelevant=15, random_state=5)
    est = CRF(feature_space=kind)
    data = est._dataset(X, y, grow=True)
    return ChainCRF(est._feature_space(data), data)


def reference(model, pen):
    return minimize_owlqn(model, pen, max_iter=3000, tol=1e-14, gtol=1e-12)


def check_optimum(model, pen, res, ref):
    assert res.stop_reason in ("tol", "gtol")
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    # the reported objective is the true one at the weights returned
    assert model.loss(res.w) + pen.value(res.w) == pytest.approx(res.objective, rel=1e-10)
    big = np.abs(ref.w) > 1e-4
    assert np.array_equal(res.w[big] != 0, ref.w[big] != 0)
    _, g = model.loss_grad(res.w)
    assert pen.optimality_violation(res.w, g) < 1e-4


# --------------------------------------------------------------------------- primitives
@pytest.mark.parametrize("kind,real_values", [("full", True), ("observed", False)])
def test_block_primitives_match_the_batch_loss_and_gradient(kind, real_values):
    model = problem(7, kind, True, n_seq=12, real_values=real_values)
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.5, size=model.n_params) * (rng.random(model.n_params) < 0.6)
    ptr, index = model.block_layout()
    assert np.array_equal(np.sort(index), np.arange(model.n_params))     # a partition of the weights
    model.block_begin(w)
    assert model.block_loss() == pytest.approx(model.loss(w), rel=1e-12)
    loss0, grad = model.loss_grad(w)
    for b in range(len(ptr) - 1):
        idx = index[ptr[b]:ptr[b + 1]]
        g, h = model.block_grad_hess(b)
        np.testing.assert_allclose(g, grad[idx], rtol=1e-9, atol=1e-9)
        assert np.all(h >= 0) and np.all(np.isfinite(h))
        dw = rng.normal(scale=0.3, size=len(idx))
        w2 = w.copy()
        w2[idx] += dw
        delta = model.block_change(b, dw)                   # exact, not a model of the change
        assert delta == pytest.approx(model.loss(w2) - loss0, abs=1e-9 * abs(loss0))
        model.block_discard()
        assert np.array_equal(model.block_weights(), w)
    assert model.block_loss() == pytest.approx(loss0, rel=1e-12)
    # committed changes accumulate: the cached state follows the weights
    for b in (0, len(ptr) - 2):
        idx = index[ptr[b]:ptr[b + 1]]
        model.block_grad_hess(b)
        dw = np.full(len(idx), 0.1)
        model.block_change(b, dw)
        model.block_commit()
        w[idx] += dw
    assert np.array_equal(model.block_weights(), w)
    assert model.block_loss() == pytest.approx(model.loss(w), rel=1e-11)
    _, grad = model.loss_grad(w)
    g, _ = model.block_grad_hess(1)
    np.testing.assert_allclose(g, grad[index[ptr[1]:ptr[2]]], rtol=1e-9, atol=1e-9)


def test_curvature_is_the_papers_diagonal_estimate():
    # one sequence, one unigram attribute at one token: h_k = v^2 p_k (1 - p_k) exactly
    from spargel.data.dataset import SequenceData
    data = SequenceData(np.array([0, 2]), np.array([0, 1, 2]), np.array([0, 1], np.int32), np.array([2.0, 1.0]),
                        np.array([0, 0, 0]), np.zeros(0, np.int32), np.zeros(0), np.array([1, 0], np.int32))
    model = ChainCRF(FeatureSpace.full(3, 2, 0, True), data)
    w = np.random.default_rng(0).normal(size=model.n_params)
    ptr, index = model.block_layout()
    model.block_begin(w)
    from spargel.chain.crf import marginals
    p = marginals(model.space, data, w)[0][0]
    b = int(np.flatnonzero([index[ptr[k]] == 0 for k in range(len(ptr) - 1)])[0])
    _, h = model.block_grad_hess(b)
    np.testing.assert_allclose(h, 4.0 * p * (1 - p), rtol=1e-10)


def test_blocks_group_an_observation_unigram_and_bigram_weights():
    # a '*' pattern gives each letter a unigram and a bigram attribute at the same tokens
    words = ["abc", "cab", "bca", "aab"]
    X = [[[c] for c in w] for w in words]
    y = [[c.upper() for c in w] for w in words]
    est = CRF(template="*00:%x[0,0]\n", feature_space="full")
    data = est._dataset(X, y, grow=True)
    space = FeatureSpace.full(3, len(est._uni_vocab), len(est._big_vocab), False)
    ix = BlockIndex(space, data)
    assert ix.n_groups == 3 and list(np.diff(ix.grp_ptr)) == [2, 2, 2]
    for g in range(3):
        u, b = ix.grp_attr[ix.grp_ptr[g]:ix.grp_ptr[g + 1]]
        assert est._uni_vocab.names[u][4:] == est._big_vocab.names[b - ix.n_u][4:]
    # spans: one per sequence containing the letter
    assert ix.sp_ptr[-1] == sum(len(set(w)) for w in words)
    # split: unigram part then bigram part; single: one weight per block
    assert ix.n_blocks == 6 and list(ix.blk_c1 - ix.blk_c0) == [3, 9] * 3
    assert BlockIndex(space, data, split=False).n_blocks == 3
    assert BlockIndex(space, data, single=True).n_blocks == space.n_params
    assert BlockIndex(space, data, group=False).n_groups == 6


# --------------------------------------------------------------------------- optima
@pytest.mark.parametrize("kind,transitions,bigrams", [("full", True, True), ("observed", True, True),
                                                       ("full", False, True), ("observed", True, False)])
@pytest.mark.parametrize("solver", [minimize_bcd, minimize_cd])
def test_reaches_the_owlqn_optimum(solver, kind, transitions, bigrams):
    model = problem(0, kind, transitions, bigrams=bigrams)
    pen = ElasticNet(0.3, 0.1)
    check_optimum(model, pen, solver(model, pen, **TIGHT), reference(model, pen))


@pytest.mark.parametrize("kind", ["full", "observed"])
def test_chain_data_pure_l1(kind):
    model = chain_problem(kind)
    pen = ElasticNet(2.0)
    ref = reference(model, pen)
    check_optimum(model, pen, minimize_bcd(model, pen, **TIGHT), ref)
    assert np.count_nonzero(ref.w) < model.n_params            # sparse
    res = minimize_cd(model, pen, **TIGHT)
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)


def test_binary_bigram_attributes_and_per_weight_penalties():
    model = problem(1, "full", True, real_values=False)
    l1 = np.full(model.n_params, 0.5)
    l1[:5] = 0.0                                     # a few unpenalised weights
    pen = ElasticNet(l1, 0.0)
    ref = reference(model, pen)
    res = minimize_bcd(model, pen, hessian_damping=2.0, block_order="random", random_state=0, **TIGHT)
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)


def test_group_lasso_reaches_the_fista_optimum():
    model = problem(2, "full", True, n_seq=15)
    pen = GroupLasso(2.5, model.layout, l2=0.1)
    ref = minimize_fista(model, pen, max_iter=20000, tol=1e-15, gtol=1e-10, window=10)
    res = minimize_bcd(model, pen, **TIGHT)
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    norms = pen.group_norms(res.w)
    assert np.any(norms == 0) and np.array_equal(norms == 0, pen.group_norms(ref.w) < 1e-6)
    with pytest.raises(CapabilityError, match="separable"):
        minimize_cd(model, pen)


def test_options_do_not_change_the_optimum():
    model = problem(2, "full", True)
    pen = ElasticNet(0.2, 0.05)
    base = minimize_bcd(model, pen, **TIGHT).objective
    for opts in ({"group_blocks": False}, {"split_blocks": False}, {"skip_zero_blocks": False},
                 {"max_step": 0.5, "damping_factor": 2.0}, {"chunk_blocks": 3}):
        assert minimize_bcd(model, pen, **TIGHT, **opts).objective == pytest.approx(base, rel=1e-7)


# --------------------------------------------------------------------------- fused == generic
@pytest.mark.parametrize("kind,real_values,order", [("full", True, "cyclic"), ("observed", False, "random")])
def test_fused_sweep_equals_the_generic_loop(kind, real_values, order):
    model = problem(3, kind, True, real_values=real_values)
    pen = ElasticNet(np.linspace(0.2, 3.0, model.n_params), 0.02)
    opts = dict(max_iter=6, tol=0.0, gtol=0.0, block_order=order, random_state=4, max_skip=2)
    fused = minimize_bcd(model, pen, **opts)
    generic = minimize_bcd(model, pen, fused=False, **opts)
    np.testing.assert_allclose(fused.w, generic.w, rtol=0, atol=1e-12)
    for a, b in zip(fused.history, generic.history):
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-13)
        for key in ("blocks_visited", "blocks_skipped", "blocks_moved", "rejected_steps"):
            assert a[key] == b[key]
    assert sum(r["blocks_skipped"] for r in fused.history) > 0           # skipping was exercised
    # coordinate descent too
    a = minimize_cd(model, pen, max_iter=3, tol=0.0, gtol=0.0)
    b = minimize_cd(model, pen, max_iter=3, tol=0.0, gtol=0.0, fused=False)
    np.testing.assert_allclose(a.w, b.w, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- history, refusals
def test_history_rows_and_stop_reasons():
    model = problem(3, "observed", True)
    pen = ElasticNet(0.2, 0.01)
    res = minimize_bcd(model, pen, max_iter=3, tol=0.0, gtol=0.0)
    assert res.stop_reason == "max_iter" and res.n_iter == 3 and len(res.history) == 3
    row = res.history[-1]
    assert {"iteration", "objective", "loss", "penalty", "active", "n_evals", "elapsed", "sweep_time", "sweep_cpu",
            "blocks_visited", "blocks_skipped", "blocks_moved", "rejected_steps", "max_violation",
            "median_damping"} <= set(row)
    objs = [r["objective"] for r in res.history]
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(objs, objs[1:]))      # monotone descent
    seen = []
    res = minimize_bcd(model, pen, max_iter=50, monitor=lambda row, w: seen.append(row) or len(seen) == 2)
    assert res.stop_reason == "callback" and res.n_iter == 2

    def interrupt(row, w):
        raise KeyboardInterrupt

    for fused in (True, False):
        res = minimize_cd(model, pen, max_iter=50, monitor=interrupt, fused=fused)
        assert res.stop_reason == "interrupted" and np.all(np.isfinite(res.w))
        assert res.objective == pytest.approx(model.loss(res.w) + pen.value(res.w), rel=1e-12)


def test_warm_start_and_bad_input():
    model = problem(4, "full", True)
    pen = ElasticNet(0.3, 0.1)
    first = minimize_bcd(model, pen, **TIGHT)
    again = minimize_bcd(model, pen, first.w, **TIGHT)
    assert again.n_iter <= 2
    with pytest.raises(ValueError, match="shape"):
        minimize_bcd(model, pen, np.zeros(3))
    with pytest.raises(TypeError, match="unknown option"):
        minimize_bcd(model, pen, bogus=1)
    with pytest.raises(ValueError, match="block_order"):
        minimize_bcd(model, pen, block_order="sorted")
    assert get_solver("bcd") is minimize_bcd and get_solver("cd") is minimize_cd
    ptr, _ = model.block_layout()
    with pytest.raises(RuntimeError, match="block_begin"):
        model.block_grad_hess(0)
    model.block_begin(np.zeros(model.n_params))
    with pytest.raises(RuntimeError, match="block_grad_hess"):
        model.block_change(0, np.zeros(ptr[1]))
    model.block_grad_hess(0)
    with pytest.raises(ValueError, match="coordinates"):
        model.block_change(0, np.zeros(ptr[1] + 1))
    with pytest.raises(IndexError, match="out of range"):
        model.block_grad_hess(len(ptr) - 1)


class _SmoothOnly:
    """A model with a loss but no block primitives."""
    n_params = 3
    layout = None
    n_samples = 1

    def loss(self, w):
        return float(w @ w)

    def loss_grad(self, w):
        return self.loss(w), 2 * w


def test_a_model_without_blocks_is_refused():
    for solver in (minimize_bcd, minimize_cd):
        with pytest.raises(CapabilityError, match="'blocks'"):
            solver(_SmoothOnly(), ElasticNet(1.0))


def test_estimator_with_bcd_matches_owlqn():
    X, y, _ = make_chain_data(n_sequences=40, n_irrelevant=20, random_state=1)
    a = CRF(solver="bcd", l1=1.0, l2=0.1, max_iter=500, tol=1e-10, window=1).fit(X, y)
    b = CRF(solver="owlqn", l1=1.0, l2=0.1, max_iter=1000, tol=1e-12, gtol=1e-10).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    assert a.history_ and "sweep_time" in a.history_[0]
