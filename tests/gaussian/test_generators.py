"""make_graph_data: each graph's documented structure (R huge.generator's), the
precision and unit-diagonal covariance, the sparse path for large p, the samples."""

import numpy as np
import pytest
import scipy.sparse as sp

import spargel
from spargel.errors import ParameterError
from spargel.gaussian.generators import GRAPHS, make_graph, make_graph_data


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _check_model(d, p):
    """Symmetric 0/1 graph with zero diagonal; precision with exactly the graph's
    off-diagonal zeros, positive definite, the inverse of a unit-diagonal covariance
    ``D^-1/2 K0^-1 D^-1/2`` with ``K0 = v theta + (|e| + 0.1 + u) I``."""
    theta = _dense(d.graph)
    assert theta.shape == (p, p) and np.array_equal(theta, theta.T)
    assert set(np.unique(theta)) <= {0, 1} and not np.any(np.diag(theta))
    K = _dense(d.precision)
    off = ~np.eye(p, dtype=bool)
    assert np.array_equal(K[off] != 0, theta[off] == 1)
    assert np.linalg.eigvalsh(K)[0] > 0
    v, u = d.params["v"], d.params["u"]
    e = np.linalg.eigvalsh(v * theta)[0] if theta.any() else 0.0
    K0 = v * theta + (abs(e) + 0.1 + u) * np.eye(p)
    C0 = np.linalg.inv(K0)
    s = np.sqrt(np.diag(C0))
    np.testing.assert_allclose(K, K0 * np.outer(s, s), rtol=1e-9, atol=1e-12)
    if d.covariance is not None:
        np.testing.assert_allclose(np.diag(d.covariance), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(d.covariance, C0 / np.outer(s, s), atol=1e-12)
        np.testing.assert_allclose(d.covariance @ K, np.eye(p), atol=1e-9)


@pytest.mark.parametrize("g", [1, 2, 4])
def test_band_has_bandwidth_g(g):
    p = 30
    d = make_graph_data(50, p, "band", g=g, random_state=0)
    i, j = np.nonzero(_dense(d.graph))
    assert np.array_equal(np.unique(np.abs(i - j)), np.arange(1, g + 1))
    assert d.n_edges == (2 * p - 1 - g) * g // 2
    _check_model(d, p)


def test_hub_degrees():
    p, g = 50, 4
    d = make_graph_data(40, p, "hub", g=g, random_state=0)
    deg = np.asarray(d.graph.sum(axis=1)).ravel()
    b = [0, 12, 24, 37, 50]          # as huge.generator(d = 50, graph = "hub", g = 4) splits
    for c in range(g):
        assert deg[b[c]] == b[c + 1] - b[c] - 1                 # the hub: its whole group
        assert np.all(deg[b[c] + 1:b[c + 1]] == 1)              # the others: the hub only
        assert np.all(_dense(d.graph)[b[c] + 1:b[c + 1], b[c]] == 1)
    assert d.n_edges == p - g
    _check_model(d, p)
    assert make_graph(100, "hub")[1]["g"] == 5 and make_graph(30, "hub")[1]["g"] == 2


def test_cluster_blocks_and_edge_count():
    p, g, prob = 60, 3, 0.4
    counts = []
    for seed in range(20):
        d = make_graph_data(10, p, "cluster", g=g, prob=prob, random_state=seed)
        lab = np.repeat(np.arange(g), p // g)
        i, j = np.nonzero(_dense(d.graph))
        assert np.all(lab[i] == lab[j])                         # nothing across clusters
        counts.append(d.n_edges)
    expected = g * (p // g) * (p // g - 1) / 2 * prob           # 228
    sd = np.sqrt(expected * (1 - prob) / 20)
    assert abs(np.mean(counts) - expected) < 4 * sd
    _check_model(d, p)
    assert make_graph(60, "cluster", g=3)[1]["prob"] == pytest.approx(0.3)   # 6 g / p
    assert make_graph(200, "cluster", g=2)[1]["prob"] == 0.3                 # p / g > 30


def test_random_edge_count_and_default_prob():
    p = 80
    counts = [make_graph(p, "random", random_state=s)[0].nnz // 2 for s in range(30)]
    pairs, prob = p * (p - 1) / 2, 3 / p
    assert abs(np.mean(counts) - pairs * prob) < 4 * np.sqrt(pairs * prob / 30)
    d = make_graph_data(30, p, "random", random_state=1)
    assert d.params["prob"] == pytest.approx(3 / p)
    _check_model(d, p)
    full = make_graph(12, "random", prob=1.0)[0]
    assert full.nnz == 12 * 11


def test_scale_free_is_a_tree_with_hubs():
    from scipy.sparse.csgraph import connected_components

    p = 400
    d = make_graph_data(10, p, "scale-free", random_state=0)
    assert d.n_edges == p - 1
    assert connected_components(d.graph, directed=False)[0] == 1
    deg = np.asarray(d.graph.sum(axis=1)).ravel()
    assert deg.max() >= 15 and np.mean(deg == 1) > 0.5          # preferential attachment
    _check_model(make_graph_data(10, 40, "scale-free", random_state=3), 40)


@pytest.mark.parametrize("g", [1, 2])
def test_sparse_path_matches_the_dense_construction(g, monkeypatch):
    from spargel.gaussian import generators

    monkeypatch.setattr(generators, "_DENSE_COMPONENT", 50)      # ARPACK on the large ones
    p = 300
    for graph in GRAPHS:
        kw = {"g": g} if graph == "band" else {}
        dense = make_graph_data(5, p, graph, random_state=4, **kw)
        n = 20000 if graph in ("band", "random") else 5
        sparse = make_graph_data(n, p, graph, dense_max=100, random_state=4, **kw)
        assert sp.issparse(sparse.precision) and sparse.covariance is None
        assert (dense.graph != sparse.graph).nnz == 0
        np.testing.assert_allclose(sparse.precision.toarray(), dense.precision, rtol=1e-8,
                                   atol=1e-12)
        if n > 5:       # the samples drawn through the sparse factor: covariance Sigma
            S = sparse.data.T @ sparse.data / n
            assert np.max(np.abs(S - dense.covariance)) < 0.045


def test_inverse_diagonal_from_the_factor():
    from spargel.gaussian.generators import _SparseFactor, graph_precision

    theta, _ = make_graph(200, "random", prob=0.05, random_state=2)
    K0 = graph_precision(theta)
    f = _SparseFactor(K0)
    np.testing.assert_allclose(f.inverse_diagonal(), np.diag(np.linalg.inv(K0.toarray())),
                               rtol=1e-10)


@pytest.mark.parametrize("graph", GRAPHS)
def test_sample_covariance_approaches_the_covariance(graph):
    d = make_graph_data(40000, 12, graph, v=0.5, random_state=7)
    assert d.data.shape == (40000, 12)
    S = d.sample_covariance                                      # huge's sigmahat
    np.testing.assert_allclose(S, np.cov(d.data.T, bias=True), atol=1e-12)
    assert np.max(np.abs(S - d.covariance)) < 0.04              # about 4 sd of an entry
    assert np.max(np.abs(d.data.mean(axis=0))) < 0.03


def test_seeded_and_exported():
    a = spargel.make_graph_data(20, 10, "hub", random_state=5)
    b = spargel.gaussian.make_graph_data(20, 10, "hub", random_state=5)
    assert np.array_equal(a.data, b.data)
    assert a.edges.tolist() == sorted(map(list, zip(*np.nonzero(np.triu(_dense(a.graph), 1)))))


@pytest.mark.parametrize("kw, msg", [
    (dict(graph="ring"), "graph must be one of"),
    (dict(p=1), "p must be an integer >= 2"),
    (dict(n=0), "n must be an integer >= 1"),
    (dict(v=0.0), "v must be a finite number > 0"),
    (dict(u=-1.0), "u must be a finite number >= 0"),
    (dict(graph="random", prob=1.5), "prob must be a finite number >= 0.0 and <= 1.0"),
    (dict(graph="band", g=10), "bandwidth"),
    (dict(graph="hub", g=6), "at most p / 2"),
    (dict(graph="random", g=2), "g does not apply"),
    (dict(graph="hub", prob=0.2), "prob does not apply"),
    (dict(graph="band", g=1.5), "g must be an integer"),
])
def test_bad_parameters(kw, msg):
    args = dict(n=10, p=10, graph="random") | kw
    with pytest.raises(ParameterError, match=msg):
        make_graph_data(args.pop("n"), args.pop("p"), args.pop("graph"), **args)


def test_vis_draws_the_four_panels():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spargel.gaussian.plot import plot_graph_data

    d = make_graph_data(100, 20, "hub", random_state=0, vis=True)
    fig = plot_graph_data(d)
    titles = [a.get_title() for a in fig.axes]
    assert "adjacency matrix: 18 edges (hub)" in titles
    assert "covariance matrix" in titles and "empirical covariance matrix" in titles
    plt.close("all")


@pytest.mark.parametrize("graph", ["band", "hub", "scale-free"])
def test_large_p_forms_no_dense_matrix(graph):
    import tracemalloc

    p = 10_000
    make_graph_data(2, 50, graph, dense_max=10, random_state=0)     # compile the kernel
    tracemalloc.start()
    try:
        d = make_graph_data(5, p, graph, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sp.issparse(d.precision) and d.covariance is None and d.data.shape == (5, p)
    with pytest.raises(ValueError, match="not formed"):
        d.sample_covariance
    assert peak < 8 * p * p / 40                      # one p x p array would be 800 MB
    diag = d.precision.diagonal()
    assert np.all(diag > 0) and d.precision.nnz == p + 2 * d.n_edges
