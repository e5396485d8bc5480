"""Compiled exact inference on forests (sum-product on the tree of active edges) and the
pairwise marginals of every pair, against brute-force enumeration and finite
differences of the exact loss."""

import numpy as np
import pytest

from spargel.mrf.model import PairwiseMRFModel
from spargel.mrf.exact import brute_force, brute_force_pair, enumerate_moments, junction_tree
from spargel.mrf.graph import Graph, all_pairs
from spargel.mrf.tree import forest_inference, forest_pairs, forest_plan_of


def _random_forest(rng, n, keep=0.8):
    ns = rng.integers(2, 5, n)
    edges = [(int(rng.integers(0, v)), v) for v in range(1, n) if rng.random() < keep]
    return Graph(ns, np.array(edges, dtype=np.int64).reshape(-1, 2))


def _clamped(g, theta, evidence):
    theta = theta.copy()
    for i, a in (evidence or {}).items():
        keep = theta[g.node_ptr[i] + a]
        theta[g.node_ptr[i]:g.node_ptr[i + 1]] = -np.inf
        theta[g.node_ptr[i] + a] = keep
    return theta


@pytest.mark.parametrize("seed", range(12))
def test_forest_inference_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    g = _random_forest(rng, int(rng.integers(1, 8)))
    th_n, th_e = 3 * rng.normal(size=g.n_node_values), 3 * rng.normal(size=g.n_edge_values)
    evidence = {int(rng.integers(0, g.n_nodes)): 1} if seed % 2 else None
    r = forest_inference(g, th_n, th_e, evidence=evidence)
    bf = brute_force(g, _clamped(g, th_n, evidence), th_e)
    assert r.log_z == pytest.approx(bf.log_z, rel=1e-12, abs=1e-10)
    np.testing.assert_allclose(r.node_beliefs, bf.node_beliefs, atol=1e-12)
    np.testing.assert_allclose(r.edge_beliefs, bf.edge_beliefs, atol=1e-12)
    # junction_tree takes the same path on a forest
    jt = junction_tree(g, th_n, th_e, evidence=evidence)
    assert jt.log_z == pytest.approx(bf.log_z, rel=1e-12, abs=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_forest_pairs_equal_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    g = _random_forest(rng, int(rng.integers(2, 8)), keep=0.7)
    th_n, th_e = 2 * rng.normal(size=g.n_node_values), 2 * rng.normal(size=g.n_edge_values)
    evidence = {0: 0} if seed % 3 == 2 else None
    r = forest_inference(g, th_n, th_e, evidence=evidence)
    pairs = all_pairs(g.n_nodes)[rng.permutation(g.n_nodes * (g.n_nodes - 1) // 2)]
    vals = forest_pairs(g, r.node_beliefs, r.edge_beliefs, pairs)
    o = 0
    for i, j in pairs:
        ref = brute_force_pair(g, _clamped(g, th_n, evidence), th_e, i, j).ravel()
        np.testing.assert_allclose(vals[o:o + len(ref)], ref, atol=1e-12)
        o += len(ref)
    assert o == len(vals)


def test_cycle_is_not_a_forest():
    g = Graph([2, 2, 2], [[0, 1], [1, 2], [0, 2]])
    assert forest_plan_of(g) is None
    with pytest.raises(ValueError):
        forest_inference(g, np.zeros(6), np.zeros(12))
    assert forest_plan_of(g.with_active([0, 1])) is not None


def test_extreme_potentials_keep_normalised_beliefs():
    """Potentials of 1e100: no message is subtracted again, so nothing cancels."""
    rng = np.random.default_rng(3)
    g = Graph([2] * 6, [[i, i + 1] for i in range(5)])
    th_n = 1e100 * rng.normal(size=g.n_node_values)
    th_e = 1e100 * rng.normal(size=g.n_edge_values)
    r = forest_inference(g, th_n, th_e)
    assert np.isfinite(r.log_z)
    sums = np.add.reduceat(r.node_beliefs, g.node_ptr[:-1])
    np.testing.assert_allclose(sums, 1.0, rtol=1e-12)
    assert np.all(np.isin(r.node_beliefs, [0.0, 1.0]))            # a single joint state dominates
    best = brute_force(g, th_n, th_e)                               # the reference agrees
    np.testing.assert_allclose(r.node_beliefs, best.node_beliefs, atol=1e-12)


def _tree_model(n, seed, k=2):
    """A model with every pair a candidate, the active edges a random tree."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, k, (40, n))
    X[:k] = np.arange(k)[:, None]
    m = PairwiseMRFModel(X, np.full(n, k), inference="exact")
    w = np.zeros(m.n_params)
    w[:m.n_node_params] = rng.normal(size=m.n_node_params)
    index = {tuple(e): i for i, e in enumerate(m.graph.edges.tolist())}
    for v in range(1, n):
        e = index[(int(rng.integers(0, v)), v)]
        w[m.edge_param_ptr[e]:m.edge_param_ptr[e + 1]] = rng.normal(size=k * k)
    return m, w


def test_model_gradient_on_a_tree_equals_enumeration():
    """18 binary variables (past the enumeration limit of training): the loss and every
    candidate edge's gradient from the forest path equal enumeration's."""
    m, w = _tree_model(18, 0)
    assert not m._small
    loss, g = m.loss_grad(w)
    assert m.last_inference["treewidth"] == 1
    node_theta, edge_theta = m.potentials(w)
    graph = m.graph.with_active(m.active_edges(w))
    log_z, node_b, M = enumerate_moments(graph, node_theta, edge_theta, max_states=1 << 19)
    rows, cols = m._edge_index()
    Nw = m.total_weight
    ref = np.concatenate([Nw * node_b - m.node_counts, Nw * M[rows, cols] - m.edge_counts])
    assert loss == pytest.approx(Nw * log_z - node_theta @ m.node_counts - edge_theta @ m.edge_counts,
                                 rel=1e-12)
    np.testing.assert_allclose(g, ref, atol=1e-9 * Nw)


def test_model_gradient_on_a_tree_matches_finite_differences():
    """Central differences of the exact loss, at weights of active and inactive edges
    (moving an inactive edge closes a cycle: the junction tree takes over)."""
    m, w = _tree_model(19, 1, k=3)
    _, g = m.loss_grad(w)
    rng = np.random.default_rng(2)
    active = m.active_edges(w)
    inactive = np.setdiff1d(np.arange(m.graph.n_edges), active)
    coords = [int(rng.integers(0, m.n_node_params))]
    coords += [int(m.edge_param_ptr[e] + rng.integers(0, 9)) for e in rng.choice(active, 2, replace=False)]
    coords += [int(m.edge_param_ptr[e] + rng.integers(0, 9)) for e in rng.choice(inactive, 3, replace=False)]
    h = 1e-5
    for c in coords:
        wp, wm = w.copy(), w.copy()
        wp[c] += h
        wm[c] -= h
        fd = (m.loss(wp) - m.loss(wm)) / (2 * h)
        assert fd == pytest.approx(g[c], rel=1e-6, abs=1e-6 * m.total_weight), c
