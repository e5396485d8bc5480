"""PairwiseMRF's defaults (inference="auto", adaptive="auto") and bad values: parameters,
states against samples, table sizes before allocation, extreme node features, forged
model files."""

import resource
import warnings

import numpy as np
import pytest

from spargel.core import model_file as io
from spargel.errors import ConvergenceWarning, DataFormatError, ModelFileError, ParameterError, SpargelError
from spargel.mrf.estimator import PairwiseMRF
from spargel.mrf.model import PairwiseMRFModel
from spargel.mrf.exact import brute_force, junction_tree
from spargel.mrf.graph import Graph, all_pairs, grid_edges
from spargel.mrf.sampling import gibbs_sample


def _quick_example():
    """The guide's quick example: a chain x0 - x1 - x2 and an independent x3."""
    rng = np.random.default_rng(0)
    x0 = rng.integers(0, 2, 500)
    x1 = np.where(rng.random(500) < 0.9, x0, 1 - x0)
    x2 = np.where(rng.random(500) < 0.8, x1, 1 - x1)
    x3 = rng.integers(0, 2, 500)
    return np.column_stack([x0, x1, x2, x3])


def test_quick_example_learns_the_chain_only():
    m = PairwiseMRF(l1=20.0).fit(_quick_example())
    assert m.inference_used_ == "exact" and m.adaptive_used_
    assert m.edges_.tolist() == [[0, 1], [1, 2]]
    assert m.screening_edges_.tolist() == [[0, 1], [0, 2], [1, 2]]   # what the plain lasso keeps
    assert [r["stage"] for r in m.history_][0] == 1 and m.history_[-1]["stage"] == 2
    assert m.history_[-1]["iteration"] == m.n_iter_
    one = PairwiseMRF(l1=20.0, adaptive=False).fit(_quick_example())
    assert one.edges_.tolist() == [[0, 1], [0, 2], [1, 2]] and not one.adaptive_used_


def test_auto_inference_choice():
    rng = np.random.default_rng(1)
    est = PairwiseMRF()
    small = np.full(12, 2)
    assert est._choose_inference(small, None, False) == "exact"            # 4096 joint states
    assert est._choose_inference(np.full(20, 2), None, False) == "pseudo-likelihood"
    tree = [[int(rng.integers(0, v)), v] for v in range(1, 40)]
    assert est._choose_inference(np.full(40, 3), tree, False) == "exact"   # a forest of candidates
    assert est._choose_inference(np.full(30, 2), grid_edges(3, 10), False) == "exact"     # treewidth 3
    assert est._choose_inference(np.full(400, 2), grid_edges(20, 20), False) == "pseudo-likelihood"
    assert est._choose_inference(np.full(12, 2), None, True) == "pseudo-likelihood"      # per sample
    assert est._choose_inference(np.full(9, 2), grid_edges(3, 3), True) == "exact"
    for name in ("loopy-bp", "exact", "pseudo-likelihood"):
        assert PairwiseMRF(inference=name)._choose_inference(small, None, False) == name
    # the chosen methods fit: 20 binary variables on a chain, candidates all pairs
    g = Graph([2] * 20, [[i, i + 1] for i in range(19)])
    X = gibbs_sample(g, np.zeros(40), np.tile([0.8, -0.8, -0.8, 0.8], 19), 400, seed=2, thin=3)
    m = PairwiseMRF(l1=40.0).fit(X)
    assert m.inference_used_ == "pseudo-likelihood"
    assert m.edges_.tolist() == [[i, i + 1] for i in range(19)]


@pytest.mark.parametrize("name, value, kind", [
    ("tol", float("nan"), ValueError), ("tol", -1.0, ValueError), ("max_iter", 0, ValueError),
    ("max_iter", -3, ValueError), ("max_iter", 2.5, TypeError), ("bp_max_iter", 0, ValueError),
    ("bp_max_iter", 10 ** 12, ValueError), ("bp_tol", float("nan"), ValueError), ("n_states", 2.7, ValueError),
    ("n_states", [2, 1.5, 2], ValueError), ("n_states", 1, ValueError), ("n_states", "3", TypeError),
    ("l1", "5", TypeError), ("l1", float("inf"), ValueError), ("l2", -1.0, ValueError),
    ("bp_damping", 1.0, ValueError), ("inference", "bethe", ValueError), ("inference", ["exact"], ValueError),
    ("adaptive", "yes", ValueError), ("random_state", "abc", TypeError), ("edge_features", "pots", ValueError),
    ("bp_schedule", "random", ValueError), ("candidate_estimate", "both", ValueError),
])
def test_bad_parameters_are_refused_at_fit(name, value, kind):
    X = _quick_example()
    with pytest.raises(kind, match=name) as info:
        PairwiseMRF(**{"l1": 20.0, name: value}).fit(X)
    # a ParameterError (a SpargelError, and both a ValueError and a TypeError) naming the value
    assert isinstance(info.value, ParameterError) and isinstance(info.value, SpargelError)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    assert repr(value) in str(info.value)


def test_states_are_checked_against_samples_before_allocating():
    X = np.zeros((40, 3), dtype=np.int64)
    X[::2, :] = 1
    X[5, 1] = 30_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DataFormatError, match=r"X:6: column 1: state 30000000 implies 30000001 states"):
        PairwiseMRF(l1=1.0).fit(X)
    with pytest.raises(DataFormatError, match="above the limit"):
        PairwiseMRF(l1=1.0, n_states=[2, 30_000_001, 2]).fit(X)
    with pytest.raises(DataFormatError, match="above the limit"):
        PairwiseMRFModel(X, [2, 30_000_001, 2])
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024   # KiB on Linux
    assert grown_mb < 100                         # no table of 30 million states was allocated
    # a few missing states below the sample count stay a warning
    Y = np.array([[0, 1], [2, 0], [0, 1], [2, 1]])
    with pytest.warns(ConvergenceWarning, match="state 1 of variable 0 never occurs"):
        PairwiseMRF(l1=0.0, inference="exact").fit(Y)


def _conditional(seed=0):
    rng = np.random.default_rng(seed)
    N, n = 200, 5
    Y = rng.integers(0, 2, (N, n))
    Y[:, 1] = Y[:, 0]
    Y[:, 2] = np.where(rng.random(N) < 0.9, Y[:, 1], 1 - Y[:, 1])
    F = (Y + rng.normal(scale=0.8, size=Y.shape))[:, :, None]
    return Y, F


@pytest.mark.parametrize("inference", ["exact", "loopy-bp", "pseudo-likelihood"])
def test_conditional_marginals_at_huge_node_features(inference):
    """Node features of 1e100: each row's marginals are distributions and equal
    enumeration with the same potentials (the small terms are not lost against 1e100)."""
    Y, F = _conditional()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = PairwiseMRF(l1=5.0, inference=inference).fit(Y, node_features=F)
    q = np.full((3, 5), -1)
    q[1, 0] = 1
    for scale in (1e100, -1e100, 1e300):
        P = m.predict_marginals(q, node_features=F[:3] * scale)
        np.testing.assert_allclose(P.sum(axis=2), 1.0, rtol=1e-12)
        rows = m._row_thetas(F[:3] * scale, 3)
        if m._exact_ok():
            ref = brute_force(m._graph, rows[0], m._edge_theta).node_beliefs
            np.testing.assert_allclose(P[0].ravel(), ref, atol=1e-12)
        assert np.all(np.isfinite(m.score_samples(Y[:3], node_features=F[:3] * scale)))


def test_junction_tree_with_cycles_at_huge_potentials():
    g = Graph([2, 2, 2], [[0, 1], [1, 2], [0, 2]])
    nt = np.array([0.3, -0.5, 1e100, 0.0, 0.0, 0.0])      # x1 pinned to state 0
    et = np.tile([0.7, 0.0, 0.0, 0.7], 3)
    jt, bf = junction_tree(g, nt, et), brute_force(g, nt, et)
    np.testing.assert_allclose(jt.node_beliefs, bf.node_beliefs, atol=1e-12)
    np.testing.assert_allclose(np.add.reduceat(jt.node_beliefs, g.node_ptr[:-1]), 1.0)
    # x1 = 0 for sure; the rest is the exact 2-variable model left over
    sub = brute_force(Graph([2, 2], [[0, 1]]), np.array([0.3 + 0.7, -0.5, 0.7, 0.0]), np.array([0.7, 0, 0, 0.7]))
    np.testing.assert_allclose(jt.node_beliefs[[0, 1, 4, 5]], sub.node_beliefs, atol=1e-12)
    assert jt.log_z == pytest.approx(1e100, rel=1e-15)


def test_pseudo_likelihood_fit_at_overflowing_features_is_refused():
    Y, F = _conditional()
    with pytest.raises(DataFormatError, match="node_features: a feature of magnitude .* rescale"):
        PairwiseMRF(l1=5.0, inference="pseudo-likelihood").fit(Y, node_features=F * 1e200)


def _saved(tmp_path, conditional=False):
    Y, F = _conditional()
    m = PairwiseMRF(l1=5.0, inference="exact").fit(Y, node_features=F if conditional else None)
    p = tmp_path / "m.mrf"
    m.save(p)
    return p, Y


@pytest.mark.parametrize("forge, message", [
    (lambda meta, a: a.update(n_states=np.array([2 ** 62, 2, 2, 2, 2], dtype=np.int64)), "above the limit"),
    (lambda meta, a: meta["params"].update(bp_max_iter=10 ** 12), "bp_max_iter"),
    (lambda meta, a: meta.update(params=[1, 2]), "params must be a mapping"),
    (lambda meta, a: meta["params"].update(random_state="abc"), "random_state"),
    (lambda meta, a: meta["params"].update(tol=-1.0), "tol"),
    (lambda meta, a: meta["params"].update(inference="magic"), "inference"),
    (lambda meta, a: a.update(edges=np.array([[0, 9]], dtype=np.int64)), "outside"),
])
def test_forged_model_files_are_refused(tmp_path, forge, message):
    p, Y = _saved(tmp_path)
    meta, arrays = io.load_arrays(p, "mrf")
    forge(meta, arrays)
    io.save_arrays(p, "mrf", meta, arrays)
    with pytest.raises(ModelFileError, match=message):
        PairwiseMRF.load(p)


def test_forged_conditional_model_file(tmp_path):
    p, Y = _saved(tmp_path, conditional=True)
    assert PairwiseMRF.load(p)._n_input_features == 1
    meta, arrays = io.load_arrays(p, "mrf")
    meta["n_input_features"] = True
    io.save_arrays(p, "mrf", meta, arrays)
    with pytest.raises(ModelFileError, match="n_input_features"):
        PairwiseMRF.load(p)


def test_bp_budget_of_a_model_file(tmp_path):
    """A model file may not ask for more loopy BP work than the budget (sweeps x edges)."""
    import spargel.mrf.estimator as est_mod
    p, Y = _saved(tmp_path)
    meta, arrays = io.load_arrays(p, "mrf")
    meta["params"]["bp_max_iter"] = est_mod.BP_MAX_ITER_LIMIT
    io.save_arrays(p, "mrf", meta, arrays)
    m = PairwiseMRF.load(p)                        # within the budget
    assert m.bp_max_iter == est_mod.BP_MAX_ITER_LIMIT
    old = est_mod.BP_UPDATE_BUDGET
    try:
        est_mod.BP_UPDATE_BUDGET = est_mod.BP_MAX_ITER_LIMIT * (len(m.edges_) - 0.5)
        with pytest.raises(ModelFileError, match="budget"):
            PairwiseMRF.load(p)
    finally:
        est_mod.BP_UPDATE_BUDGET = old


@pytest.mark.parametrize("array, index, value", [
    ("node_theta", 0, 1e308), ("node_theta", 1, -1e308), ("node_theta", 2, 1e200),
    ("edge_theta", 0, -1e300),
])
def test_model_files_with_absurd_potentials_are_refused(tmp_path, array, index, value):
    """Finite but absurd log-potentials gave NaN or all-zero marginals without a word:
    the load refuses them, naming the file and the entry."""
    p, Y = _saved(tmp_path)
    meta, arrays = io.load_arrays(p, "mrf")
    arrays[array] = arrays[array].copy()
    arrays[array][index] = value
    io.save_arrays(p, "mrf", meta, arrays)
    with pytest.raises(ModelFileError, match=rf"{p}: invalid model \({array}\[{index}\] = .* beyond"):
        PairwiseMRF.load(p)


def test_model_files_with_absurd_feature_weights_are_refused(tmp_path):
    p, Y = _saved(tmp_path, conditional=True)
    meta, arrays = io.load_arrays(p, "mrf")
    arrays["feature_weights"] = np.full_like(arrays["feature_weights"], 1e300)
    io.save_arrays(p, "mrf", meta, arrays)
    with pytest.raises(ModelFileError, match=r"feature_weights\[0\] = 1e\+300 is beyond"):
        PairwiseMRF.load(p)


def test_model_files_with_large_but_usable_potentials_load(tmp_path):
    p, Y = _saved(tmp_path)
    meta, arrays = io.load_arrays(p, "mrf")
    arrays["node_theta"] = arrays["node_theta"].copy()
    arrays["node_theta"][0] = 1e6                   # variable 0 pinned to state 0
    io.save_arrays(p, "mrf", meta, arrays)
    P = PairwiseMRF.load(p).predict_marginals(np.full((1, Y.shape[1]), -1))
    assert np.all(np.isfinite(P)) and P[0, 0, 0] == pytest.approx(1.0)
