"""Coordinate descent (cd) and blockwise coordinate descent (bcd) for elastic-net CRFs:
the same optimum as OWL-QN on the same objective, history, stop reasons, blocks."""

import numpy as np
import pytest

from spargel import CRF
from spargel.datasets import make_chain_data
from spargel.models.crf import ChainCRF
from spargel.penalties import ElasticNet
from spargel.solvers import get_solver
from spargel.solvers.coordinate_descent import BlockProblem, minimize_bcd, minimize_cd
from spargel.solvers.owlqn import minimize_owlqn

from crf_reference import random_data, random_space

TIGHT = dict(max_iter=3000, tol=1e-13, gtol=1e-10, window=1)


def problem(seed, kind, transitions, n_seq=25):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_seq=n_seq, max_len=6, n_labels=3, n_uni=8, n_big=4)
    space = random_space(rng, data, kind, 3, 8, 4, transitions)
    return ChainCRF(space, data)


@pytest.mark.parametrize("kind,transitions", [("full", True), ("observed", True), ("full", False)])
@pytest.mark.parametrize("solver", [minimize_bcd, minimize_cd])
def test_reaches_the_owlqn_optimum(solver, kind, transitions):
    model = problem(0, kind, transitions)
    pen = ElasticNet(0.3, 0.1)
    ref = minimize_owlqn(model, pen, max_iter=3000, tol=1e-14, gtol=1e-12)
    res = solver(model, pen, **TIGHT)
    assert res.stop_reason in ("tol", "gtol")
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    # same objective evaluated independently, same sparsity pattern
    assert model.loss(res.w) + pen.value(res.w) == pytest.approx(res.objective, rel=1e-10)
    big = np.abs(ref.w) > 1e-4
    assert np.array_equal(res.w[big] != 0, ref.w[big] != 0)
    _, g = model.loss_grad(res.w)
    assert pen.optimality_violation(res.w, g) < 1e-4


def test_pure_l1_and_per_weight_penalties():
    model = problem(1, "full", True)
    l1 = np.full(model.n_params, 0.5)
    l1[:5] = 0.0                                     # a few unpenalised weights
    pen = ElasticNet(l1, 0.0)
    ref = minimize_owlqn(model, pen, max_iter=3000, tol=1e-14, gtol=1e-12)
    res = minimize_bcd(model, pen, hessian_damping=2.0, block_order="random", random_state=0, **TIGHT)
    assert abs(res.objective - ref.objective) <= 1e-6 * abs(ref.objective)


def test_options_do_not_change_the_optimum():
    model = problem(2, "full", True)
    pen = ElasticNet(0.2, 0.05)
    base = minimize_bcd(model, pen, **TIGHT).objective
    for opts in ({"group_blocks": False}, {"split_blocks": False}, {"skip_zero_blocks": False},
                 {"max_step": 0.5, "damping_factor": 2.0}):
        assert minimize_bcd(model, pen, **TIGHT, **opts).objective == pytest.approx(base, rel=1e-7)


def test_history_rows_and_stop_reasons():
    model = problem(3, "observed", True)
    pen = ElasticNet(0.2, 0.01)
    res = minimize_bcd(model, pen, max_iter=3, tol=0.0, gtol=0.0)
    assert res.stop_reason == "max_iter" and res.n_iter == 3 and len(res.history) == 3
    row = res.history[-1]
    assert {"iteration", "objective", "loss", "penalty", "active", "n_evals", "elapsed", "blocks_visited",
            "blocks_skipped", "rejected_steps", "max_violation"} <= set(row)
    objs = [r["objective"] for r in res.history]
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(objs, objs[1:]))      # monotone descent
    seen = []
    res = minimize_bcd(model, pen, max_iter=50, monitor=lambda row, w: seen.append(row) or len(seen) == 2)
    assert res.stop_reason == "callback" and res.n_iter == 2

    def interrupt(row, w):
        raise KeyboardInterrupt

    res = minimize_cd(model, pen, max_iter=50, monitor=interrupt)
    assert res.stop_reason == "interrupted" and np.all(np.isfinite(res.w))


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
    with pytest.raises(TypeError, match=r"\.space and \.data"):
        minimize_bcd(object(), pen)
    assert get_solver("bcd") is minimize_bcd and get_solver("cd") is minimize_cd


def test_blocks_group_an_observation_unigram_and_bigram_weights():
    # a '*' pattern gives each letter a unigram and a bigram attribute at the same tokens
    words = ["abc", "cab", "bca", "aab"]
    X = [[[c] for c in w] for w in words]
    y = [[c.upper() for c in w] for w in words]
    est = CRF(template="*00:%x[0,0]\n", feature_space="full")
    data = est._dataset(X, y, grow=True)
    from spargel.models.feature_space import FeatureSpace
    space = FeatureSpace.full(3, len(est._uni_vocab), len(est._big_vocab), False)
    prob = BlockProblem(ChainCRF(space, data))
    blk_ptr, blk_attr = prob.blk[0], prob.blk[1]
    assert prob.n_blocks == 3 and list(np.diff(blk_ptr)) == [2, 2, 2]
    for b in range(3):
        u, g = blk_attr[blk_ptr[b]:blk_ptr[b + 1]]
        assert est._uni_vocab.names[u][4:] == est._big_vocab.names[g - prob.n_u][4:]
    # spans: one per sequence containing the letter, first/last occurrence
    assert prob.blk[5][-1] == sum(len(set(w)) for w in words)


def test_estimator_with_bcd_matches_owlqn():
    X, y, _ = make_chain_data(n_sequences=40, n_irrelevant=20, random_state=1)
    a = CRF(solver="bcd", l1=1.0, l2=0.1, max_iter=500, tol=1e-10, window=1).fit(X, y)
    b = CRF(solver="owlqn", l1=1.0, l2=0.1, max_iter=1000, tol=1e-12, gtol=1e-10).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    assert a.history_ and "sweep_time" in a.history_[0]
