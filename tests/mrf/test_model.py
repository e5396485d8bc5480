"""The PairwiseMRFModel: losses against enumeration, gradients against finite differences,
candidate-edge estimates, solver integration, bad data."""

import numpy as np
import pytest

from spargel.errors import DataFormatError
from spargel.mrf.model import PairwiseMRFModel, check_discrete_data
from spargel.mrf.exact import brute_force, brute_force_pair
from spargel.core.protocol import capabilities


def _data(n=5, N=60, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, k, (N, n))
    X[:, 1] = np.where(rng.random(N) < 0.7, X[:, 0], X[:, 1])       # a dependency
    return X


def _weights(m, seed, zero_edges=(1, 2)):
    rng = np.random.default_rng(seed)
    w = 0.4 * rng.normal(size=m.n_params)
    for e in zero_edges:
        w[m.edge_param_ptr[e]:m.edge_param_ptr[e + 1]] = 0.0
    return w


def _fd(m, w, h=1e-6):
    g = np.empty_like(w)
    for k in range(len(w)):
        d = np.zeros_like(w)
        d[k] = h
        g[k] = (m.loss(w + d) - m.loss(w - d)) / (2 * h)
    return g


def test_exact_loss_equals_enumeration():
    X = _data()
    m = PairwiseMRFModel(X, inference="exact")
    w = _weights(m, 1)
    nt, et = m.potentials(w)
    g = m.graph.with_active(m.active_edges(w))
    logz = brute_force(g, nt, et).log_z
    direct = 0.0
    for x in X:
        s = sum(nt[m.graph.node_ptr[i] + x[i]] for i in range(X.shape[1]))
        s += sum(et[m.graph.edge_ptr[e] + x[i] * m.n_states[j] + x[j]] for e, (i, j) in enumerate(m.graph.edges))
        direct += logz - s
    assert m.loss(w) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("objective", ["likelihood", "pseudo"])
@pytest.mark.parametrize("features", ["full", "ising"])
def test_exact_gradients_equal_finite_differences(objective, features):
    X = _data(k=2 if features == "ising" else 3)
    m = PairwiseMRFModel(X, inference="exact", objective=objective, edge_features=features,
                         sample_weight=np.linspace(0.5, 1.5, len(X)))
    w = _weights(m, 2)                    # includes inactive candidate edges
    loss, g = m.loss_grad(w)
    assert loss == pytest.approx(m.loss(w))
    np.testing.assert_allclose(g, _fd(m, w), atol=2e-6 * max(1.0, np.abs(g).max()))


def test_pseudo_likelihood_equals_definition():
    X = _data(N=20)
    m = PairwiseMRFModel(X, objective="pseudo")
    w = _weights(m, 3)
    nt, et = m.potentials(w)
    g = m.graph.with_active(m.active_edges(w))
    total = 0.0
    for x in X:
        for i in range(X.shape[1]):
            lp = []
            for a in range(m.n_states[i]):
                y = x.copy()
                y[i] = a
                s = sum(nt[g.node_ptr[v] + y[v]] for v in range(len(y)))
                s += sum(et[g.edge_ptr[e] + y[p] * m.n_states[q] + y[q]] for e, (p, q) in enumerate(g.edges))
                lp.append(s)
            lp = np.array(lp)
            total -= lp[x[i]] - np.log(np.exp(lp - lp.max()).sum()) - lp.max()
    assert m.loss(w) == pytest.approx(total, rel=1e-12)


def test_bp_gradient_is_bethe_gradient_on_loopy_graph():
    """With loopy BP the gradient (including the 'independent' estimate on inactive edges)
    is the gradient of the Bethe loss: finite differences of the loss agree."""
    X = _data(n=5, k=2)
    m = PairwiseMRFModel(X, inference="loopy-bp", bp={"tol": 1e-13, "max_iter": 2000})
    w = _weights(m, 4)
    loss, g = m.loss_grad(w)
    np.testing.assert_allclose(g, _fd(m, w), atol=5e-6 * max(1.0, np.abs(g).max()))


def test_bp_on_nonzero_edges_equals_bp_on_every_candidate():
    """A zero-weight edge sends uniform messages: loopy BP over the non-zero edges gives
    the loss and gradient of BP over the complete candidate graph (edges at 1e-300 take
    part in BP without changing a potential)."""
    X = _data(n=6, k=2)
    m = PairwiseMRFModel(X, edge_features="ising", inference="loopy-bp", bp={"tol": 1e-12, "max_iter": 1000})
    w = _weights(m, 6, zero_edges=(1, 2, 5, 9, 12))
    loss, g = m.loss_grad(w)
    active = m.last_inference["active_edges"]
    w_all = w.copy()
    edges = np.arange(m.n_node_params, m.n_params)
    w_all[edges[w[edges] == 0]] = 1e-300
    m._messages = None
    loss_all, g_all = m.loss_grad(w_all)
    assert active == m.graph.n_edges - 5 and m.last_inference["active_edges"] == m.graph.n_edges
    assert loss_all == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(g_all, g, atol=1e-9)


def test_bp_exact_on_tree_candidates():
    X = _data(n=6)
    chain = [[i, i + 1] for i in range(5)]
    exact = PairwiseMRFModel(X, candidate_edges=chain, inference="exact")
    bp = PairwiseMRFModel(X, candidate_edges=chain, inference="loopy-bp", bp={"tol": 1e-13})
    w = _weights(exact, 5, zero_edges=())
    le, ge = exact.loss_grad(w)
    lb, gb = bp.loss_grad(w)
    assert lb == pytest.approx(le, rel=1e-11)
    np.testing.assert_allclose(gb, ge, atol=1e-8)
    assert bp.last_inference["converged"]


def test_clamp_estimate_is_exact_with_exact_inference():
    X = _data(n=5)
    m = PairwiseMRFModel(X, inference="exact", candidate_estimate="clamp")
    w = _weights(m, 6, zero_edges=(0, 3, 7))
    _, node_b, edge_b = m.infer(w)
    nt, et = m.potentials(w)
    g = m.graph.with_active(m.active_edges(w))
    for e in (0, 3, 7):
        i, j = m.graph.edges[e]
        exact = brute_force_pair(g, nt, et, i, j).ravel()
        np.testing.assert_allclose(edge_b[m.graph.edge_ptr[e]:m.graph.edge_ptr[e + 1]], exact, atol=1e-12)


def test_protocol_and_layout():
    X = _data(n=4)
    m = PairwiseMRFModel(X)
    assert "loss_grad" in capabilities(m)
    assert m.layout.n_groups == 4 + 6
    scale = m.layout.penalty_scale
    assert np.all(scale[:m.n_node_params] == 0) and np.all(scale[m.n_node_params:] == 1)
    assert m.layout.group_names[4] == "edge 0-1"
    mi = PairwiseMRFModel(X, edge_features="ising")
    assert mi.n_params == m.n_node_params + 6


def test_owlqn_fits_with_elastic_net():
    from spargel.core.penalties import ElasticNet
    from spargel.solvers import get_solver

    X = _data(n=5, N=400, k=2, seed=3)
    m = PairwiseMRFModel(X, inference="exact")
    pen = ElasticNet(l1=25.0 * m.layout.penalty_scale)
    res = get_solver("owlqn")(m, pen, m.initial_weights(), max_iter=300, tol=1e-9, gtol=1e-6, window=5)
    loss, g = m.loss_grad(res.w)
    assert pen.optimality_violation(res.w, g) < 1e-2
    assert list(m.active_edges(res.w)) == [0]         # only the planted edge 0-1


@pytest.mark.parametrize("X, message", [
    ([[0, 1], [1, 0.5]], "not an integer state"),
    ([[0, 1], [1, np.nan]], "missing values are not allowed"),
    ([[0, 1], [1, -1]], "negative state"),
    ([[0, 1]], "at least 2 samples"),
    ([[0, 1], [0, 0]], "column 0 is constant"),
    ([["a", "b"], ["c", "d"]], "integer states"),
    ([0, 1, 0], "2-d array"),
])
def test_bad_data(X, message):
    with pytest.raises(DataFormatError, match=message):
        check_discrete_data(np.array(X) if not isinstance(X[0], list) or not isinstance(X[0][0], str)
                            else np.array(X, dtype=object))


def test_state_out_of_range_names_row():
    with pytest.raises(DataFormatError, match=r"X:3: column 1: state 2 is out of range 0..1"):
        check_discrete_data([[0, 1], [1, 0], [0, 2]], n_states=[2, 2])


def test_clamped_junction_tree_gives_exact_candidate_gradients():
    """The junction-tree path (used when enumeration is too large) with clamping."""
    X = _data(n=5)
    m = PairwiseMRFModel(X, inference="exact", candidate_estimate="clamp")
    m._small = False                      # force the junction tree instead of enumeration
    w = _weights(m, 7, zero_edges=(0, 4, 9))
    loss, g = m.loss_grad(w)
    assert m.last_inference["treewidth"] is not None
    np.testing.assert_allclose(g, _fd(m, w), atol=2e-6 * max(1.0, np.abs(g).max()))


def test_dense_and_compiled_pseudo_likelihood_agree():
    X = _data(n=6, k=3)
    m = PairwiseMRFModel(X, objective="pseudo", sample_weight=np.linspace(0.2, 2.0, len(X)))
    w = _weights(m, 8)
    dense_loss, dense_g = m.loss_grad(w)
    assert m._dense is not None           # all pairs: the BLAS path
    m._dense = None                       # the compiled per-sample kernel
    loss, g = m.loss_grad(w)
    assert loss == pytest.approx(dense_loss, rel=1e-12)
    np.testing.assert_allclose(g, dense_g, atol=1e-10)


@pytest.mark.parametrize("objective, inference", [("likelihood", "exact"), ("likelihood", "loopy-bp"),
                                                  ("pseudo", "exact")])
@pytest.mark.parametrize("tied", [False, True])
def test_conditional_gradients_equal_finite_differences(objective, inference, tied):
    """The conditional model (node potentials from per-sample features), on a chain (BP
    exact) with some inactive candidate edges."""
    X = _data(n=4, N=15, k=3)
    F = np.random.default_rng(1).normal(size=(15, 4, 2))
    m = PairwiseMRFModel(X, candidate_edges=[[0, 1], [1, 2], [2, 3], [0, 3]], objective=objective,
                         inference=inference, node_features=F, tie_features=tied,
                         bp={"tol": 1e-13, "max_iter": 500})    # default estimates: exact / Bethe-exact
    assert m.n_params == m.edge_param_ptr[-1] + (3 * 2 if tied else 4 * 3 * 2)
    w = _weights(m, 9, zero_edges=(3,))                 # edge 0-3 inactive: the rest is a chain
    loss, g = m.loss_grad(w)
    np.testing.assert_allclose(g, _fd(m, w), atol=2e-6 * max(1.0, np.abs(g).max()))


def test_conditional_loss_is_sum_of_per_sample_likelihoods():
    X = _data(n=4, N=10)
    F = np.random.default_rng(2).normal(size=(10, 3))          # shared by every variable
    m = PairwiseMRFModel(X, inference="exact", node_features=F)
    w = _weights(m, 10)
    NT = m.sample_node_theta(w)
    _, et = m.potentials(w)
    g = m.graph.with_active(m.active_edges(w))
    total = 0.0
    for r, x in enumerate(X):
        logz = brute_force(g, NT[r], et).log_z
        s = sum(NT[r, g.node_ptr[i] + x[i]] for i in range(4))
        s += sum(et[g.edge_ptr[e] + x[i] * m.n_states[j] + x[j]] for e, (i, j) in enumerate(g.edges))
        total += logz - s
    assert m.loss(w) == pytest.approx(total, rel=1e-12)
    pl = PairwiseMRFModel(X, objective="pseudo", node_features=F)
    dense = pl.loss_grad(w)
    pl._dense = None
    compiled = pl.loss_grad(w)
    assert compiled[0] == pytest.approx(dense[0], rel=1e-12)
    np.testing.assert_allclose(compiled[1], dense[1], atol=1e-10)


def test_bad_node_features():
    X = _data(n=3, N=5)
    with pytest.raises(DataFormatError, match="expected shape"):
        PairwiseMRFModel(X, node_features=np.zeros((4, 3, 2)))
    F = np.zeros((5, 3, 2))
    F[2, 1, 0] = np.nan
    with pytest.raises(DataFormatError, match="node_features:3: variable 1, feature 0"):
        PairwiseMRFModel(X, node_features=F)
