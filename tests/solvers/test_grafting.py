"""Grafting-Light, Grafting and Gauss-Seidel: the OWL-QN optimum on CRF, log-linear,
exact-inference MRF and plain least-squares problems; Grafting-Light with every feature
in the working set is OWL-QN step for step; the "grafting" capability against the full
gradient; online feature batches; history rows, stop reasons and refusals."""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.errors import CapabilityError
from spargel.chain.crf import ChainCRF
from spargel.loglinear.model import FlatLogLinear
from spargel.mrf.model import PairwiseMRFModel
from spargel.core.protocol import capabilities
from spargel.core.penalties import ElasticNet, GroupLasso
from spargel.solvers import get_solver
from spargel.solvers.grafting import minimize_gauss_seidel, minimize_grafting, minimize_grafting_light
from spargel.solvers.owlqn import minimize_owlqn

from crf_reference import random_data, random_space
from toy_model import make_least_squares

TIGHT = dict(max_iter=20000, tol=1e-14, gtol=1e-10)
SOLVERS = [(minimize_grafting_light, {}), (minimize_grafting, {}), (minimize_gauss_seidel, {"inner": "owlqn"})]


def crf(seed=0, n_uni=15, n_seq=30):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_seq=n_seq, max_len=6, n_labels=3, n_uni=n_uni, n_big=3)
    return ChainCRF(random_space(rng, data, "full", 3, n_uni, 3, True), data)


def loglinear(seed=0, sparse=False, n=150, d=25, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.5] = 0.0
    y = (X[:, :3] @ rng.normal(size=(3, K)) * 2 + rng.normal(size=(n, K))).argmax(axis=1)
    return FlatLogLinear(sp.csr_matrix(X) if sparse else X, y, K)


def mrf_data(n_vars=6, N=150, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((N, n_vars)) < 0.5).astype(int)
    for j in range(1, n_vars, 2):                    # pairs of strongly coupled variables
        X[:, j] = X[:, j - 1] ^ (rng.random(N) < 0.15)
    return X


def check_optimum(model, pen, res, ref, rel=1e-6):
    assert res.stop_reason in ("tol", "gtol"), res.stop_reason
    assert abs(res.objective - ref.objective) <= rel * abs(ref.objective)
    # the reported objective is the objective of the returned weights
    assert model.loss(res.w) + pen.value(res.w) == pytest.approx(res.objective, rel=1e-9)
    _, g = model.loss_grad(res.w)
    assert pen.optimality_violation(res.w, g) < 1e-4 * max(1.0, np.abs(g).max())
    big = np.abs(ref.w) > 1e-3
    assert np.array_equal(res.w[big] != 0, ref.w[big] != 0)


# ------------------------------------------------------------------ the OWL-QN optimum
@pytest.mark.parametrize("solver,opts", SOLVERS + [(minimize_gauss_seidel, {"inner": "blocks"})])
@pytest.mark.parametrize("unit", [1, 7])
def test_crf_reaches_the_owlqn_optimum(solver, opts, unit):
    model = crf()
    pen = ElasticNet(1.0, 0.05)
    ref = minimize_owlqn(model, pen, max_iter=5000, tol=1e-14, gtol=1e-11)
    res = solver(model, pen, select_unit=unit, **TIGHT, **opts)
    check_optimum(model, pen, res, ref)


@pytest.mark.parametrize("solver,opts", SOLVERS + [(minimize_gauss_seidel, {"inner": "blocks"})])
@pytest.mark.parametrize("sparse", [False, True])
def test_loglinear_reaches_the_owlqn_optimum(solver, opts, sparse):
    model = loglinear(sparse=sparse)
    assert "grafting" in capabilities(model)
    pen = ElasticNet(4.0, 0.0, model.layout.penalty_scale)          # intercepts unpenalised
    ref = minimize_owlqn(model, pen, max_iter=5000, tol=1e-14, gtol=1e-11)
    res = solver(model, pen, select_unit=3, **TIGHT, **opts)
    check_optimum(model, pen, res, ref)
    # the intercepts were in the working set from the start and are not zero
    assert np.all(res.w[-model.K:] != 0)


@pytest.mark.parametrize("solver,opts,junction_tree", [s + (False,) for s in SOLVERS]
                         + [(minimize_grafting_light, {}, True), (minimize_grafting, {}, True)])
def test_exact_mrf_reaches_the_owlqn_optimum(solver, opts, junction_tree):
    X = mrf_data(n_vars=4 if junction_tree else 6)
    model = PairwiseMRFModel(X, inference="exact", candidate_estimate="clamp", edge_features="ising")
    if junction_tree:
        model._small = False          # the junction tree and clamped candidates, not enumeration
    pen = ElasticNet(8.0, 0.0, model.layout.penalty_scale)
    w0 = model.initial_weights()
    ref = minimize_owlqn(model, pen, w0, max_iter=5000, tol=1e-14, gtol=1e-11)
    res = solver(model, pen, w0, select_unit=2, **TIGHT, **opts)
    check_optimum(model, pen, res, ref)
    assert 0 < len(model.active_edges(res.w)) < model.graph.n_edges


def test_least_squares_toy_model_and_blocks():
    model = make_least_squares(n=60, d=12, seed=3)
    pen = ElasticNet(3.0, 0.5)
    ref = minimize_owlqn(model, pen, max_iter=5000, tol=1e-15, gtol=1e-12)
    for solver, opts in SOLVERS + [(minimize_gauss_seidel, {"inner": "blocks"}),
                                   (minimize_gauss_seidel, {"select_unit": 4})]:
        res = solver(model, pen, **{"select_unit": 1, **TIGHT, **opts})
        check_optimum(model, pen, res, ref)


# ------------------------------------------------------------------ Grafting-Light = OWL-QN
@pytest.mark.parametrize("make", [crf, loglinear, lambda: make_least_squares(d=10)])
def test_grafting_light_with_every_feature_is_owlqn_step_for_step(make):
    model = make()
    scale = model.layout.penalty_scale
    for pen in (ElasticNet(1.5, 0.1, scale), ElasticNet(np.linspace(0.5, 2.0, model.n_params))):
        ref = minimize_owlqn(model, pen, max_iter=200, tol=1e-9, gtol=1e-9)
        res = minimize_grafting_light(model, pen, select_unit=None, max_iter=200, tol=1e-9, gtol=1e-9)
        assert (res.n_iter, res.n_evals, res.stop_reason) == (ref.n_iter, ref.n_evals, ref.stop_reason)
        objs, ref_objs = [r["objective"] for r in res.history], [r["objective"] for r in ref.history]
        if "grafting" in capabilities(model):        # the subset products round differently
            np.testing.assert_allclose(res.w, ref.w, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(objs, ref_objs, rtol=1e-12)
        else:
            assert np.array_equal(res.w, ref.w) and objs == ref_objs
        assert [r["step"] for r in res.history] == pytest.approx([r["step"] for r in ref.history], rel=1e-9)
        assert all(r["working_set"] == model.n_params for r in res.history)


def test_grafting_light_needs_fewer_evaluations_than_grafting():
    model = crf(1, n_uni=25)
    pen = ElasticNet(1.0)
    light = minimize_grafting_light(model, pen, select_unit=2)
    full = minimize_grafting(model, pen, select_unit=2)
    assert light.n_evals < full.n_evals
    assert light.objective == pytest.approx(full.objective, rel=1e-4)


# ------------------------------------------------------------------ the working set
def test_selection_rows_and_redundant_features():
    model = loglinear(2, d=30)
    pen = ElasticNet(3.0, 0.0, model.layout.penalty_scale)
    res = minimize_grafting_light(model, pen, select_unit=2, **TIGHT)
    rows = res.history
    assert {"iteration", "objective", "loss", "penalty", "active", "n_evals", "elapsed", "working_set", "selected",
            "violating", "violation", "pg_norm", "batches"} <= set(rows[0])
    assert all(r["selected"] <= 2 for r in rows)
    sizes = [r["working_set"] for r in rows]
    assert sizes == sorted(sizes)                            # only grows
    assert sizes[-1] == model.K + sum(r["selected"] for r in rows) + 2   # + the first selection
    assert all(r["active"] <= r["working_set"] for r in rows)
    assert rows[-1]["violating"] == 0 and rows[-1]["violation"] == 0.0
    # n_evals counts loss-and-gradient evaluations, one per line-search trial
    assert rows[-1]["n_evals"] == res.n_evals and res.n_evals >= res.n_iter + 1


def test_group_selection_brings_whole_groups():
    X = mrf_data(n_vars=5)
    model = PairwiseMRFModel(X, inference="exact")                     # full 2x2 edge tables
    pen = ElasticNet(6.0, 0.0, model.layout.penalty_scale)
    w0 = model.initial_weights()
    ref = minimize_owlqn(model, pen, w0, max_iter=5000, tol=1e-14, gtol=1e-11)
    res = minimize_grafting_light(model, pen, w0, select_unit=1, select_by="group", **TIGHT)
    check_optimum(model, pen, res, ref)
    assert all(r["selected"] in (0, 4) for r in res.history)           # one edge table at a time


def test_subset_capability_equals_full_gradients():
    rng = np.random.default_rng(4)
    X = mrf_data(n_vars=6)
    for kw in ({"inference": "exact"}, {"inference": "exact", "candidate_estimate": "clamp", "small": False},
               {"inference": "loopy-bp"}, {"inference": "loopy-bp", "candidate_estimate": "clamp"},
               {"inference": "exact", "edge_features": "ising"}, {"inference": "loopy-bp", "edge_features": "ising"},
               {"objective": "pseudo"}):
        kw = dict(kw)
        small = kw.pop("small", True)
        model = PairwiseMRFModel(X, **kw)
        model._small = model._small and small
        w = model.initial_weights()
        w[model.edge_param_ptr[:4][[0, 2]]] = [0.7, -0.4]
        index = np.sort(rng.choice(model.n_params, 9, replace=False))
        rest = np.setdiff1d(np.arange(model.n_params), index)
        loss, g = model.loss_grad(w)
        loss_s, g_s = model.loss_grad_subset(w, index)
        assert loss_s == pytest.approx(loss, rel=1e-10)
        np.testing.assert_allclose(g_s, g[index], rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(model.candidate_grad(rest), g[rest], rtol=1e-7, atol=1e-7)
    for sparse in (False, True):
        model = loglinear(5, sparse=sparse)
        w = rng.normal(size=model.n_params)
        w[: 10 * model.K] = 0.0
        index = np.array([0, 4, 31, model.n_params - 1])
        loss, g = model.loss_grad(w)
        loss_s, g_s = model.loss_grad_subset(w, index)
        assert loss_s == pytest.approx(loss, rel=1e-12)
        np.testing.assert_allclose(g_s, g[index], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.candidate_grad(np.arange(model.n_params)), g, rtol=1e-10, atol=1e-12)


def test_mrf_structure_learning_runs_inference_on_the_active_graph_only():
    X = mrf_data(n_vars=8, N=200)
    model = PairwiseMRFModel(X, inference="loopy-bp", edge_features="ising")
    pen = ElasticNet(20.0, 0.0, model.layout.penalty_scale)
    seen = []

    def monitor(row, w):
        seen.append(model.last_inference["active_edges"])

    res = minimize_grafting_light(model, pen, model.initial_weights(), select_unit=1, monitor=monitor)
    assert res.stop_reason in ("tol", "gtol")
    # edges enter one at a time: inference never saw more edges than had been selected
    ws = [r["working_set"] - model.n_node_params for r in res.history]
    assert all(a <= b for a, b in zip(seen, ws))
    assert seen[0] <= 1 < max(seen)


# ------------------------------------------------------------------ online feature selection
@pytest.mark.parametrize("solver", [minimize_grafting_light, minimize_grafting, minimize_gauss_seidel])
def test_feature_batches_arrive_and_reach_the_optimum(solver):
    model = loglinear(6, d=24)
    pen = ElasticNet(3.0, 0.0, model.layout.penalty_scale)
    ref = minimize_owlqn(model, pen, max_iter=5000, tol=1e-14, gtol=1e-11)
    K, d = model.K, model.d
    features = np.random.default_rng(0).permutation(d)
    batches = [np.concatenate([np.arange(f * K, (f + 1) * K) for f in part]) for part in np.array_split(features, 4)]
    res = solver(model, pen, select_unit=2, feature_batches=batches, **TIGHT)
    check_optimum(model, pen, res, ref)
    arrived = [r["batches"] for r in res.history]
    assert arrived == sorted(arrived) and arrived[0] >= 1 and arrived[-1] == 4
    # weights that never arrive are never selected
    res = solver(model, pen, select_unit=2, feature_batches=batches[:2], **TIGHT)
    assert not np.any(res.w[np.concatenate(batches[2:])])


def test_group_batches_and_warm_start():
    model = loglinear(7)
    pen = ElasticNet(3.0, 0.0, model.layout.penalty_scale)
    first = minimize_grafting_light(model, pen, select_unit=3, select_by="group",
                                    feature_batches=[np.arange(10)], **TIGHT)
    assert not np.any(first.w[10 * model.K: model.d * model.K])
    # partial_fit style: continue from the first result with every feature available
    res = minimize_grafting_light(model, pen, first.w, select_unit=3, **TIGHT)
    ref = minimize_owlqn(model, pen, max_iter=5000, tol=1e-14, gtol=1e-11)
    check_optimum(model, pen, res, ref)
    assert res.history[0]["working_set"] >= np.count_nonzero(first.w)


# ------------------------------------------------------------------ stops and refusals
def test_stop_reasons():
    model = crf(2)
    pen = ElasticNet(0.5)
    res = minimize_grafting_light(model, pen, max_iter=3, tol=0.0, gtol=0.0)
    assert res.stop_reason == "max_iter" and res.n_iter == 3 and len(res.history) == 3
    seen = []
    res = minimize_grafting(model, pen, monitor=lambda row, w: seen.append(row) or len(seen) == 2)
    assert res.stop_reason == "callback" and len(res.history) == 2

    def interrupt(row, w):
        raise KeyboardInterrupt

    for solver in (minimize_grafting_light, minimize_gauss_seidel):
        res = solver(model, pen, monitor=interrupt)
        assert res.stop_reason == "interrupted"
        assert model.loss(res.w) + pen.value(res.w) == pytest.approx(res.objective, rel=1e-9)
    big = minimize_grafting_light(model, ElasticNet(1e6), **TIGHT)       # w = 0 is optimal
    assert big.stop_reason == "gtol" and big.n_iter == 0 and not np.any(big.w)


def test_registered_and_refusals():
    assert get_solver("grafting-light") is minimize_grafting_light
    assert get_solver("grafting") is minimize_grafting
    assert get_solver("gauss-seidel") is minimize_gauss_seidel
    model = crf(3)
    with pytest.raises(CapabilityError, match="separable"):
        minimize_grafting_light(model, GroupLasso(1.0, model.layout))
    mrf = PairwiseMRFModel(mrf_data(n_vars=4), inference="exact")          # no "blocks"
    with pytest.raises(CapabilityError, match="blocks"):
        minimize_gauss_seidel(mrf, ElasticNet(1.0), mrf.initial_weights(), inner="blocks")

    class NoGradient:
        n_params, layout = model.n_params, model.layout

    with pytest.raises(CapabilityError, match="loss_grad"):
        minimize_grafting(NoGradient(), ElasticNet(1.0))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="select_unit"):
            minimize_grafting_light(model, ElasticNet(1.0), select_unit=bad)
    with pytest.raises(ValueError, match="select_by"):
        minimize_grafting_light(model, ElasticNet(1.0), select_by="edge")
    with pytest.raises(ValueError, match=r"feature_batches\[1\]"):
        minimize_grafting_light(model, ElasticNet(1.0), feature_batches=[[0, 1], [model.n_params]])
    with pytest.raises(ValueError, match="select_unit"):
        minimize_gauss_seidel(model, ElasticNet(1.0), select_unit=None)
    with pytest.raises(TypeError, match="inner='blocks'"):
        minimize_gauss_seidel(model, ElasticNet(1.0), inner="owlqn", max_inner=3)


def test_estimators_accept_the_solvers():
    from spargel import LogLinearClassifier, PairwiseMRF

    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 10))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    ref = LogLinearClassifier(solver="owlqn", l1=2.0, tol=1e-12, gtol=1e-10, max_iter=5000).fit(X, y)
    est = LogLinearClassifier(solver="grafting-light", l1=2.0, tol=1e-12, gtol=1e-10, max_iter=5000,
                              solver_options={"select_unit": 2}).fit(X, y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    assert est.history_[-1]["working_set"] < 3 * 11
    Xd = mrf_data(n_vars=6)
    m = PairwiseMRF(l1=8.0, inference="exact", adaptive=False, solver="grafting-light").fit(Xd)
    r = PairwiseMRF(l1=8.0, inference="exact", adaptive=False).fit(Xd)
    assert m.objective_ == pytest.approx(r.objective_, rel=1e-5)
    assert len(m.edges_) == len(r.edges_)


# ------------------------------------------------------------------ the default unit
def test_auto_unit_is_the_square_root_of_the_candidates():
    from spargel.solvers.grafting import auto_unit
    assert [auto_unit(n) for n in (0, 1, 2, 4, 5, 50, 10 ** 4, 10 ** 4 + 1)] == [1, 1, 2, 2, 3, 8, 100, 101]


def test_default_unit_scales_with_the_candidates_and_reaches_the_optimum():
    """The default select_unit ("auto"): the first selection brings ceil(sqrt(#candidates))
    weights (when that many violate), the solvers reach OWL-QN's optimum, and
    Grafting-Light needs fewer evaluations than with one weight per selection."""
    from spargel.solvers.grafting import auto_unit
    model = loglinear(5, n=300, d=120, K=4)
    pen = ElasticNet(2.0, 0.1, model.layout.penalty_scale)        # l2: a unique optimum
    ref = minimize_owlqn(model, pen, max_iter=20000, tol=1e-14, gtol=1e-10)
    n_fixed = int(np.count_nonzero(model.layout.penalty_scale == 0))      # the intercepts start in S
    n_cands = model.n_params - n_fixed
    assert auto_unit(n_cands) == 22
    for solver in (minimize_grafting_light, minimize_grafting):
        res = solver(model, pen, **TIGHT)
        first = res.history[0]
        # the selection before the first step (a row's "selected" came after its step)
        assert first["working_set"] - first["selected"] == n_fixed + 22
        check_optimum(model, pen, res, ref)
    default = minimize_grafting_light(model, pen)                 # its default tol and gtol
    one = minimize_grafting_light(model, pen, select_unit=1)
    assert default.stop_reason in ("tol", "gtol") and default.n_evals < one.n_evals
    assert default.objective == pytest.approx(ref.objective, rel=1e-4)


@pytest.mark.parametrize("solver, opts", SOLVERS)
def test_the_empty_model_is_returned_when_it_is_optimal(solver, opts):
    # a penalty large enough that no weight may move: Grafting divided by zero (the
    # first step's length from a zero gradient over an empty working set)
    model = crf()
    res = solver(model, ElasticNet(l1=1e4), **opts)
    assert res.stop_reason == "gtol"
    assert not np.any(res.w)
    assert res.objective == pytest.approx(model.loss(np.zeros(model.n_params)))
