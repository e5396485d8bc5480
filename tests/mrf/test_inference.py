"""Exact inference, loopy BP and Gibbs sampling against brute-force enumeration."""

import warnings

import numpy as np
import pytest

from spargel.errors import CapabilityError, ConvergenceWarning, DataFormatError
from spargel.mrf.bp import loopy_bp
from spargel.mrf.exact import brute_force, brute_force_pair, junction_tree
from spargel.mrf.graph import Graph, all_pairs, grid_edges, validate_edges
from spargel.mrf.sampling import gibbs_sample


def _random_tree(n, rng):
    return [[int(rng.integers(0, v)), v] for v in range(1, n)]


GRAPHS = {
    "chain6": lambda rng: [[i, i + 1] for i in range(5)],
    "tree8": lambda rng: _random_tree(8, rng),
    "grid3x3": lambda rng: grid_edges(3, 3),
    "complete5": lambda rng: all_pairs(5),
    "forest": lambda rng: [[0, 1], [2, 3], [3, 4]],
}
N_NODES = {"chain6": 6, "tree8": 8, "grid3x3": 9, "complete5": 5, "forest": 5}


def _problem(name, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    n = N_NODES[name]
    ns = rng.integers(2, 5, n)                      # 2-4 states
    g = Graph(ns, GRAPHS[name](rng))
    return g, scale * rng.normal(size=g.n_node_values), scale * rng.normal(size=g.n_edge_values)


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("seed", [0, 1])
def test_junction_tree_equals_brute_force(name, seed):
    g, nt, et = _problem(name, seed)
    bf = brute_force(g, nt, et)
    jt = junction_tree(g, nt, et)
    assert jt.log_z == pytest.approx(bf.log_z, abs=1e-10)
    np.testing.assert_allclose(jt.node_beliefs, bf.node_beliefs, atol=1e-12)
    np.testing.assert_allclose(jt.edge_beliefs, bf.edge_beliefs, atol=1e-12)


def test_junction_tree_evidence_gives_conditionals():
    g, nt, et = _problem("grid3x3", 3)
    ev = {4: 1, 0: 0}
    jt = junction_tree(g, nt, et, evidence=ev)
    nt2 = nt.copy()
    for i, a in ev.items():
        lo, hi = g.node_ptr[i], g.node_ptr[i + 1]
        nt2[lo:hi] = -50.0
        nt2[lo + a] = nt[lo + a]
    bf = brute_force(g, nt2, et)
    np.testing.assert_allclose(jt.node_beliefs, bf.node_beliefs, atol=1e-12)
    assert jt.node_beliefs[g.node_ptr[4] + 1] == 1.0


def test_junction_tree_refuses_wide_graph():
    g = Graph(np.full(12, 4), all_pairs(12))
    with pytest.raises(CapabilityError, match="treewidth 11"):
        junction_tree(g, np.zeros(g.n_node_values), np.zeros(g.n_edge_values), max_table=10_000)


@pytest.mark.parametrize("name", ["chain6", "tree8", "forest"])
@pytest.mark.parametrize("schedule", ["sequential", "residual", "parallel"])
def test_loopy_bp_exact_on_trees(name, schedule):
    g, nt, et = _problem(name, 5, scale=1.5)
    bf = brute_force(g, nt, et)
    r = loopy_bp(g, nt, et, schedule=schedule, tol=1e-13, max_iter=100)
    assert r.converged
    assert r.log_z == pytest.approx(bf.log_z, abs=1e-10)
    np.testing.assert_allclose(r.node_beliefs, bf.node_beliefs, atol=1e-10)
    np.testing.assert_allclose(r.edge_beliefs, bf.edge_beliefs, atol=1e-10)


def test_max_product_gives_map_on_tree():
    g, nt, et = _problem("tree8", 7, scale=2.0)
    r = loopy_bp(g, nt, et, max_product=True, tol=1e-12)
    states = np.stack(np.unravel_index(np.arange(np.prod(g.n_states)), tuple(g.n_states)), 1)
    score = sum(nt[g.node_ptr[i] + states[:, i]] for i in range(g.n_nodes))
    for e, (i, j) in enumerate(g.edges):
        score = score + et[g.edge_ptr[e] + states[:, i] * g.n_states[j] + states[:, j]]
    np.testing.assert_array_equal(r.map_state(g), states[np.argmax(score)])
    assert np.isnan(r.log_z)


def test_loopy_bp_on_grid_is_close_and_schedules_agree():
    g, nt, et = _problem("grid3x3", 2, scale=0.5)
    bf = brute_force(g, nt, et)
    results = [loopy_bp(g, nt, et, schedule=s, tol=1e-12, max_iter=500) for s in
               ("sequential", "residual", "parallel")]
    for r in results:
        assert r.converged
        np.testing.assert_allclose(r.node_beliefs, results[0].node_beliefs, atol=1e-9)
        assert abs(r.log_z - bf.log_z) < 0.05            # Bethe: close, not exact
        assert np.abs(r.node_beliefs - bf.node_beliefs).max() < 0.05


def test_warm_start_and_damping():
    g, nt, et = _problem("grid3x3", 4, scale=0.5)
    cold = loopy_bp(g, nt, et, tol=1e-10)
    warm = loopy_bp(g, nt, et, tol=1e-10, messages=cold.messages)
    assert warm.n_iter <= 2 and np.allclose(warm.node_beliefs, cold.node_beliefs, atol=1e-9)
    damped = loopy_bp(g, nt, et, tol=1e-10, damping=0.5, max_iter=1000)
    assert damped.converged and damped.n_iter > cold.n_iter
    np.testing.assert_allclose(damped.node_beliefs, cold.node_beliefs, atol=1e-8)


def test_nonconvergence_warns():
    # strong random couplings on a complete graph, three sweeps: not converged
    rng = np.random.default_rng(0)
    g = Graph(np.full(6, 2), all_pairs(6))
    et = 4 * rng.normal(size=g.n_edge_values)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        r = loopy_bp(g, rng.normal(size=g.n_node_values), et, max_iter=3, tol=1e-12)
    assert not r.converged and r.n_iter == 3


def test_zero_and_extreme_potentials_stay_finite():
    g, nt, et = _problem("grid3x3", 6)
    r = loopy_bp(g, 300 * nt, 300 * et, max_iter=50, warn=False)
    assert np.all(np.isfinite(r.node_beliefs)) and np.all(np.isfinite(r.edge_beliefs))
    np.testing.assert_allclose(np.add.reduceat(r.node_beliefs, g.node_ptr[:-1]), 1.0)


@pytest.mark.parametrize("name", ["chain6", "grid3x3", "complete5"])
def test_gibbs_marginals_match_exact(name):
    g, nt, et = _problem(name, 11, scale=0.7)
    bf = brute_force(g, nt, et)
    X = gibbs_sample(g, nt, et, 6000, seed=3, burn_in=100, thin=3)
    emp = np.concatenate([np.bincount(X[:, i], minlength=g.n_states[i]) / len(X) for i in range(g.n_nodes)])
    # 6000 correlated draws: 5 standard errors of an independent sample, widened for autocorrelation
    se = np.sqrt(bf.node_beliefs * (1 - bf.node_beliefs) / len(X))
    assert np.all(np.abs(emp - bf.node_beliefs) < 6 * se + 0.01)
    e = 0
    i, j = g.edges[e]
    pair = np.bincount(X[:, i] * g.n_states[j] + X[:, j], minlength=g.n_states[i] * g.n_states[j]) / len(X)
    assert np.abs(pair - bf.edge_beliefs[g.edge_ptr[e]:g.edge_ptr[e + 1]]).max() < 0.03


def test_gibbs_is_seeded_and_clamps():
    g, nt, et = _problem("grid3x3", 1)
    a = gibbs_sample(g, nt, et, 50, seed=9)
    b = gibbs_sample(g, nt, et, 50, seed=9)
    c = gibbs_sample(g, nt, et, 50, seed=10)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    obs = np.full(9, -1)
    obs[4] = 1
    d = gibbs_sample(g, nt, et, 30, seed=1, observed=obs)
    assert np.all(d[:, 4] == 1)


def test_brute_force_pair_of_non_adjacent_variables():
    g, nt, et = _problem("chain6", 2)
    p = brute_force_pair(g, nt, et, 0, 5)
    bf = brute_force(g, nt, et)
    np.testing.assert_allclose(p.sum(1), bf.node_beliefs[g.node_ptr[0]:g.node_ptr[1]], atol=1e-12)


@pytest.mark.parametrize("edges, message", [
    ([[0, 0]], "self-loop"),
    ([[0, 1], [1, 0]], "repeats an earlier edge"),
    ([[0, 3]], "outside 0..2"),
    ([[0.5, 1]], "not a pair of integers"),
    ([[0, 1, 2]], r"\(n_edges, 2\)"),
])
def test_bad_edges(edges, message):
    with pytest.raises(DataFormatError, match=message):
        validate_edges(edges, 3)


def test_no_warning_when_converged():
    g, nt, et = _problem("chain6", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loopy_bp(g, nt, et)
