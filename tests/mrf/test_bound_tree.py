"""The junction-tree bound of a pairwise MRF on a forest (spargel.mrf.bound)
against enumeration: exact log Z and marginals at the bound's point, an upper bound at
random points, a curvature that dominates the exact Hessian, the majoriser against
OWL-QN, and the refusals."""

import numpy as np
import pytest

from spargel.errors import CapabilityError
from spargel.mrf.model import PairwiseMRFModel
from spargel.core.protocol import capabilities
from spargel.core.penalties import ElasticNet
from spargel.solvers import get_solver


def random_forest(rng, n, n_trees=1):
    """Edges of a random forest on n variables (each variable after the first of its tree
    hangs from an earlier one of the same tree)."""
    roots = set(rng.choice(np.arange(1, n), n_trees - 1, replace=False).tolist()) | {0}
    edges, tree_of = [], {}
    for v in range(n):
        if v in roots:
            tree_of[v] = v
            continue
        tree = max(r for r in roots if r < v)
        u = int(rng.choice([x for x in range(v) if tree_of[x] == tree]))
        tree_of[v] = tree
        edges.append((u, v))
    return edges


def tree_model(seed, n=6, n_trees=1, max_states=3, edge_features="full", N=40):
    rng = np.random.default_rng(seed)
    ns = rng.integers(2, max_states + 1, n)
    X = np.stack([rng.integers(0, k, N) for k in ns], axis=1)
    X[:, 0] = np.arange(N) % ns[0]                  # every state seen
    m = PairwiseMRFModel(X, ns, random_forest(rng, n, n_trees), edge_features=edge_features, inference="exact")
    return m, rng


def enumerated_moments(m, w):
    """log Z, the mean and the covariance of the weights' features over all joint states."""
    g = m.graph
    states = np.stack(np.unravel_index(np.arange(int(np.prod(g.n_states))), tuple(g.n_states)), axis=1)
    nn = g.n_node_values
    Phi = np.zeros((len(states), nn + g.n_edge_values))
    rows = np.arange(len(states))
    for i in range(g.n_nodes):
        Phi[rows, g.node_ptr[i] + states[:, i]] = 1.0
    for e, (i, j) in enumerate(g.edges):
        Phi[rows, nn + g.edge_ptr[e] + states[:, i] * g.n_states[j] + states[:, j]] = 1.0
    from spargel.mrf.bound import potential_map
    F = Phi @ potential_map(m)
    a = F @ w
    log_z = a.max() + np.log(np.exp(a - a.max()).sum())
    p = np.exp(a - log_z)
    mean = p @ F
    return log_z, mean, (F * p[:, None]).T @ F - np.outer(mean, mean)


CASES = [(0, 1, "full"), (1, 1, "ising"), (2, 2, "full"), (3, 3, "ising"), (4, 1, "full"), (5, 2, "full")]


@pytest.mark.parametrize("seed,n_trees,features", CASES)
def test_tree_bound_is_exact_at_its_point(seed, n_trees, features):
    m, rng = tree_model(seed, n=6, n_trees=n_trees, edge_features=features)
    w = rng.normal(size=m.n_params)
    B = m.bound(w)
    log_z, mean, _ = enumerated_moments(m, w)
    assert B.info["logz"] == pytest.approx(log_z, rel=1e-12)
    loss, grad = m.loss_grad(w)
    assert B.loss == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(B.grad, grad, atol=1e-10)
    # mu is the mean of the features: the gradient is N mean - counts
    from spargel.mrf.bound import potential_map
    counts = potential_map(m).T @ np.concatenate([m.node_counts, m.edge_counts])
    np.testing.assert_allclose(B.grad, m.total_weight * mean - counts, atol=1e-10)


@pytest.mark.parametrize("seed,n_trees,features", CASES)
def test_tree_bound_upper_bounds_the_loss(seed, n_trees, features):
    m, rng = tree_model(10 + seed, n=6, n_trees=n_trees, edge_features=features)
    worst = np.inf
    for _ in range(4):
        w = rng.normal(size=m.n_params) * 1.5
        B = m.bound(w)
        assert B.value(np.zeros(m.n_params)) == pytest.approx(B.loss, rel=1e-14)
        for _ in range(250):
            d = rng.normal(size=m.n_params) * rng.choice([0.01, 0.3, 2.0, 10.0])
            worst = min(worst, (B.value(d) - m.loss(w + d)) / max(1.0, abs(B.loss)))
    assert worst >= -1e-12


@pytest.mark.parametrize("seed,features", [(0, "full"), (1, "ising"), (2, "full")])
def test_tree_curvature_dominates_the_hessian(seed, features):
    m, rng = tree_model(20 + seed, n=7, edge_features=features)
    w = rng.normal(size=m.n_params)
    H = m.total_weight * enumerated_moments(m, w)[2]
    S = m.bound(w).curvature.M
    assert np.linalg.eigvalsh(S - H).min() >= -1e-9 * np.abs(S).max()


def test_tree_curvature_grows_linearly_on_a_path():
    """The shared curvature per subtree adds up variable by variable: on binary paths its
    trace grows linearly (Algorithm 1 over the enumerated states grows like 2^n)."""
    traces = []
    for n in (4, 8, 16):
        X = np.random.default_rng(0).integers(0, 2, (30, n))
        m = PairwiseMRFModel(X, None, [(i, i + 1) for i in range(n - 1)], inference="exact")
        traces.append(np.trace(m.bound(np.zeros(m.n_params)).curvature.M) / m.total_weight)
    assert traces[2] / traces[1] < 2.5 and traces[1] / traces[0] < 2.5


@pytest.mark.parametrize("l1,l2", [(0.0, 0.5), (0.3, 0.05)])
def test_bound_majoriser_on_a_tree_mrf(l1, l2):
    """Monotone steps; the l2 and elastic-net optima of OWL-QN to 1e-6 (relative)."""
    m, _ = tree_model(40, n=7, n_trees=2, N=80)
    pen = ElasticNet(l1, l2, m.layout.penalty_scale)
    ref = get_solver("owlqn")(m, pen, max_iter=3000, tol=1e-15, gtol=1e-10)
    res = get_solver("bound")(m, pen, max_iter=3000, tol=0, gtol=1e-7)
    obj = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))
    assert res.stop_reason == "gtol"
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)


def test_estimator_with_solver_bound():
    from spargel import PairwiseMRF
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, (200, 5))
    X[:, 1] = np.where(rng.random(200) < 0.8, X[:, 0], X[:, 1])
    tree = [(0, 1), (1, 2), (1, 3), (3, 4)]
    a = PairwiseMRF(l1=0.5, solver="bound", candidate_edges=tree, inference="exact", tol=0, max_iter=2000).fit(X)
    b = PairwiseMRF(l1=0.5, solver="owlqn", candidate_edges=tree, inference="exact", tol=1e-14,
                    max_iter=2000).fit(X)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)


def test_models_without_a_tree_bound_are_refused():
    X = np.random.default_rng(0).integers(0, 2, (30, 4))
    loopy = PairwiseMRFModel(X, None, [(0, 1), (1, 2), (0, 2), (2, 3)], inference="exact")
    assert "bound" in capabilities(loopy)
    with pytest.raises(CapabilityError, match="cycle"):
        loopy.bound(np.zeros(loopy.n_params))
    pl = PairwiseMRFModel(X, None, [(0, 1)], objective="pseudo")
    with pytest.raises(CapabilityError, match="pseudo"):
        pl.bound(np.zeros(pl.n_params))
    cond = PairwiseMRFModel(X, None, [(0, 1)], node_features=np.ones((30, 4, 1)), inference="exact")
    with pytest.raises(CapabilityError, match="node features"):
        cond.bound(np.zeros(cond.n_params))
    tree = PairwiseMRFModel(X, None, [(0, 1)])
    with pytest.raises(ValueError, match="tree"):
        tree.bound(np.zeros(tree.n_params), curvature="dense")


def test_chow_liu_tree_has_the_most_mutual_information():
    """Against every spanning tree of 5 variables (exhaustive)."""
    from itertools import combinations

    from spargel.mrf.graph import Graph, chow_liu_edges
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, (300, 5))
    X[:, 2] = np.where(rng.random(300) < 0.6, X[:, 0], X[:, 2])
    X[:, 4] = np.where(rng.random(300) < 0.4, X[:, 2], X[:, 4])
    ns = np.array([3] * 5)

    def mi(i, j):
        P = np.zeros((3, 3))
        np.add.at(P, (X[:, i], X[:, j]), 1.0 / len(X))
        Q = np.outer(P.sum(1), P.sum(0))
        return float(np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1) / Q), 0.0)))

    pairs = list(combinations(range(5), 2))
    best = max(sum(mi(*e) for e in t) for t in combinations(pairs, 4) if Graph(ns, np.array(t)).is_forest())
    tree = chow_liu_edges(X, ns)
    assert len(tree) == 4 and Graph(ns, tree).is_forest()
    assert sum(mi(i, j) for i, j in tree) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_forest_candidates_take_one_exact_pass(seed):
    """Exact inference on a large forest of candidates (beyond enumeration) runs one
    junction-tree pass over every candidate edge; its loss and gradient equal the
    clamping path's (one run per inactive edge) and the tree bound's exact log Z."""
    from spargel.mrf.bound import tree_bound

    rng = np.random.default_rng(seed)
    n, N = 20, 60
    X = (rng.random((N, n)) < 0.4).astype(np.int64)
    m = PairwiseMRFModel(X, 2, random_forest(rng, n, 2), inference="exact")
    assert m._whole_forest
    w = np.zeros(m.n_params)
    some = m.n_node_params + rng.choice(m.n_params - m.n_node_params, 5, replace=False)
    w[:m.n_node_params] = rng.normal(size=m.n_node_params)
    w[some] = rng.normal(size=5)                     # a few active edges, most inactive
    for point in (np.zeros(m.n_params), w):
        loss, grad = m.loss_grad(point)
        m._whole_forest = False
        loss_c, grad_c = m.loss_grad(point)
        m._whole_forest = True
        assert m.last_inference["method"] == "exact"
        np.testing.assert_allclose(loss, loss_c, rtol=1e-12)
        np.testing.assert_allclose(grad, grad_c, atol=1e-9)
        bound = tree_bound(m, point)
        np.testing.assert_allclose(loss, bound.loss, rtol=1e-12)
        np.testing.assert_allclose(grad, bound.grad, atol=1e-9)
