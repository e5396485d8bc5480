"""CONCORD (spargel.Concord): the solution against a generic solver of the same convex
problem, its optimality conditions, the from-data (active set on X's columns) and dense
paths against each other, the recovery of a chain graph, paths, Ctrl-C and bad input."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import spargel
import spargel.gaussian
from spargel.errors import DataFormatError, ParameterError
from spargel.gaussian import concord as concord_module
from spargel.gaussian.concord import Concord


def _data(n, p, seed=0, link=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    for j in range(1, p, 2):
        X[:, j] += link * X[:, j - 1]
    return X


def _z(X, standardize=True):
    Z = X - X.mean(axis=0)
    if standardize:
        Z = Z / Z.std(axis=0)
    return Z, Z.T @ Z / X.shape[0]


def _omega(model):
    """The solution on the standardised scale (the problem solved)."""
    s = model.scale_
    return model.precision_.toarray() * np.outer(s, s)


def _objective(W, S, alpha):
    return (-np.sum(np.log(np.diag(W))) + 0.5 * np.trace(W @ S @ W)
            + alpha * np.sum(np.abs(np.triu(W, 1))))


def _reference(S, alpha):
    """The same convex problem by L-BFGS-B on a smooth reformulation: w_ij = u - v with
    u, v >= 0 (the penalty becomes alpha (u + v)), the diagonal bounded below."""
    p = S.shape[0]
    iu, ju = np.triu_indices(p, 1)
    m = iu.size

    def unpack(x):
        W = np.diag(x[:p])
        W[iu, ju] = W[ju, iu] = x[p:p + m] - x[p + m:]
        return W

    def fg(x):
        W = unpack(x)
        WS = W @ S
        f = -np.sum(np.log(x[:p])) + 0.5 * np.sum(WS * W.T) + alpha * np.sum(x[p:])
        G = WS + WS.T                               # d/dW of 1/2 tr(W S W), symmetric pair
        g = np.empty_like(x)
        g[:p] = np.diag(WS) - 1.0 / x[:p]
        g[p:p + m] = G[iu, ju] + alpha
        g[p + m:] = -G[iu, ju] + alpha
        return f, g

    x0 = np.concatenate([1.0 / np.sqrt(np.diag(S)), np.zeros(2 * m)])
    bounds = [(1e-8, None)] * p + [(0.0, None)] * (2 * m)
    res = scipy.optimize.minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000,
                                           "maxcor": 30})
    return res.fun, unpack(res.x)


@pytest.mark.parametrize("n, p, alpha, covariance", [(60, 8, 0.1, "dense"),
                                                     (60, 8, 0.1, "from_data"),
                                                     (10, 12, 0.3, "from_data")])
def test_objective_matches_a_generic_solver(n, p, alpha, covariance):
    X = _data(n, p, seed=n + p)
    model = Concord(alpha, covariance=covariance, tol=1e-12).fit(X)
    Z, S = _z(X)
    f_ref, W_ref = _reference(S, alpha)
    W = _omega(model)
    assert model.converged_ and model.stop_reason_ == "tol"
    assert model.objective_ == pytest.approx(_objective(W, S, alpha), rel=1e-12)
    # the coordinate descent is at least as low as the generic solver, and within 1e-8
    assert model.objective_ <= f_ref + 1e-12 * abs(f_ref)
    assert abs(model.objective_ - f_ref) <= 1e-8 * abs(f_ref)
    np.testing.assert_allclose(W, W_ref, atol=1e-4)


@pytest.mark.parametrize("covariance", ["dense", "from_data"])
def test_kkt_conditions_hold_at_the_solution(covariance):
    alpha = 0.15
    X = _data(40, 15, seed=3)
    model = Concord(alpha, covariance=covariance, tol=1e-11).fit(X)
    _, S = _z(X)
    W = _omega(model)
    WS = W @ S
    G = WS + WS.T
    np.testing.assert_allclose(np.diag(WS), 1.0 / np.diag(W), rtol=1e-9)
    iu, ju = np.triu_indices(15, 1)
    w, g = W[iu, ju], G[iu, ju]
    nz = w != 0
    assert nz.sum() == len(model.edges_) > 0
    np.testing.assert_allclose(g[nz], -alpha * np.sign(w[nz]), atol=1e-9)
    assert np.all(np.abs(g[~nz]) <= alpha * (1 + 1e-7))
    assert model.kkt_violation_ <= 1e-8
    # the precision is symmetric with a positive diagonal
    K = model.precision_
    assert sp.isspmatrix_csr(K) and abs(K - K.T).max() == 0 and K.diagonal().min() > 0


def test_active_set_on_columns_equals_dense_s():
    X = _data(30, 40, seed=5)                    # fewer samples than variables
    kw = dict(alpha=0.25, tol=1e-12)
    cols = Concord(covariance="from_data", **kw).fit(X)
    dense = Concord(covariance="dense", **kw).fit(X)
    assert cols.solver_ == "from_data" and dense.solver_ == "dense"
    np.testing.assert_array_equal(cols.edges_, dense.edges_)
    np.testing.assert_allclose(cols.precision_.toarray(), dense.precision_.toarray(),
                               atol=1e-9, rtol=1e-9)
    assert cols.objective_ == pytest.approx(dense.objective_, rel=1e-12)
    # a slab of a few rows at a time (many slabs, active pairs masked in each): same result
    small = Concord(covariance="from_data", block_bytes=8 * 40 * 3, **kw).fit(X)
    np.testing.assert_array_equal(small.edges_, cols.edges_)
    np.testing.assert_allclose(small.precision_.toarray(), cols.precision_.toarray(),
                               atol=1e-12)


def _chain_data(p, n, seed=0):
    """Samples of a chain (AR(1)-like band precision: 1 on the diagonal, 0.4 beside it)."""
    from scipy.linalg import cholesky_banded, solve_banded

    ab = np.zeros((2, p))
    ab[0, 1:] = 0.4
    ab[1, :] = 1.0
    R = cholesky_banded(ab)
    Z = np.random.default_rng(seed).standard_normal((p, n))
    return np.ascontiguousarray(solve_banded((0, 1), R, Z).T)


def test_chain_graph_recovered():
    p = 60
    X = _chain_data(p, 400)
    model = Concord(alpha=0.45, covariance="from_data").fit(X)
    chain = np.stack([np.arange(p - 1), np.arange(1, p)], axis=1)
    np.testing.assert_array_equal(model.edges_, chain)
    # the partial correlations of a precision with 0.4 off the diagonal are -0.4,
    # shrunk towards zero by the penalty
    r = np.asarray(model.partial_correlations_[chain[:, 0], chain[:, 1]]).ravel()
    assert np.all((r < -0.1) & (r > -0.4))
    A = model.adjacency_
    assert A.dtype == np.int8 and A.nnz == 2 * (p - 1) and abs(A - A.T).max() == 0
    assert model.partial_correlations_.nnz == 2 * (p - 1)


def test_units_of_the_columns_do_not_matter():
    X = _data(50, 10, seed=7)
    a = Concord(0.1, tol=1e-12).fit(X)
    scale = np.linspace(0.1, 100.0, 10)
    b = Concord(0.1, tol=1e-12).fit(X * scale + 3.0)
    np.testing.assert_allclose(a.partial_correlations_.toarray(),
                               b.partial_correlations_.toarray(), atol=1e-10)
    np.testing.assert_allclose(b.precision_.toarray(),
                               a.precision_.toarray() / np.outer(scale, scale), rtol=1e-8,
                               atol=1e-12)
    # without standardize, the problem is on the centred columns as they are
    c = Concord(0.1, standardize=False, tol=1e-12).fit(X)
    _, S = _z(X, standardize=False)
    assert c.objective_ == pytest.approx(_objective(c.precision_.toarray(), S, 0.1), rel=1e-12)
    np.testing.assert_array_equal(c.scale_, np.ones(10))


def test_path_is_warm_started_and_equals_single_fits():
    X = _data(30, 20, seed=11)
    alphas = [0.2, 0.5, 0.3]
    path = Concord(alphas=alphas, covariance="from_data", tol=1e-12).fit(X)
    assert [r["alpha"] for r in path.path_] == [0.5, 0.3, 0.2]
    assert path.alpha_ == 0.2
    for r in path.path_:
        one = Concord(r["alpha"], covariance="from_data", tol=1e-12).fit(X)
        np.testing.assert_allclose(r["precision"].toarray(), one.precision_.toarray(),
                                   atol=1e-9)
        assert r["n_edges"] == len(one.edges_)
    np.testing.assert_allclose(path.precision_.toarray(), path.path_[-1]["precision"].toarray())
    assert [r["n_edges"] for r in path.path_] == sorted(r["n_edges"] for r in path.path_)


def test_verbose_lines_on_stderr(capsys):
    Concord(0.2, verbose=True).fit(_data(30, 6))
    err = capsys.readouterr().err
    assert "concord it 1" in err and "objective" in err


def test_interrupt_keeps_the_iterate(monkeypatch):
    calls = []
    real = concord_module.ColumnsBackend.sweeps

    def sweeps(self, *args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(self, *args)

    monkeypatch.setattr(concord_module, "_SWEEPS_PER_CALL", 1)
    monkeypatch.setattr(concord_module.ColumnsBackend, "sweeps", sweeps)
    model = Concord(0.1, covariance="from_data", tol=1e-12)
    with pytest.raises(KeyboardInterrupt):
        model.fit(_data(40, 10))
    assert model.stop_reason_ == "interrupted" and not model.converged_
    assert model.n_iter_ == 1 and model.precision_.shape == (10, 10)
    assert np.isfinite(model.objective_)


def test_bad_input_is_refused_clearly():
    X = _data(20, 5)
    with pytest.raises(ParameterError, match="alpha must be a finite number >= 0"):
        Concord(alpha=-0.1).fit(X)
    with pytest.raises(ParameterError, match="alphas"):
        Concord(alphas=[0.1, -1]).fit(X)
    with pytest.raises(ParameterError, match="covariance must be"):
        Concord(covariance="precomputed").fit(X)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(DataFormatError, match="NaN"):
        Concord().fit(bad)
    with pytest.raises(DataFormatError, match="at least 2 samples"):
        Concord().fit(X[:1])
    with pytest.raises(ParameterError, match="alpha = 0 needs a non-singular S"):
        Concord(alpha=0.0).fit(X[:5])               # 5 samples, 5 variables: S has rank 4
    with pytest.warns(spargel.ConvergenceWarning, match="did not converge"):
        Concord(alpha=0.01, max_iter=1, tol=1e-12).fit(X)
    const = X.copy()
    const[:, 4] = 1.0
    with pytest.raises(DataFormatError, match="column 4 is constant"):
        Concord().fit(const)
    with pytest.raises(spargel.NotFittedError):
        Concord().get_precision()


def test_exported_lazily():
    assert spargel.Concord is Concord is spargel.gaussian.Concord
    assert "Concord" in spargel.__all__ and "Concord" in spargel.gaussian.__all__


def test_single_precision_kkt_passes_find_the_same_pairs():
    """The KKT passes' products in single precision with their rounding margin find
    exactly the violators that double precision finds (the pairs near the threshold are
    recomputed in double precision), so both solve to the same solution."""
    X = _data(25, 30, seed=13)
    Z, _ = _z(X)
    res = {}
    for single in (True, False):
        backend = concord_module.ColumnsBackend(Z.T.copy(), block_bytes=8 * 30 * 4,
                                                single=single)
        res[single] = concord_module.concord_solve(backend, 0.3, tol=1e-12)
        # the first pass, at the empty graph's optimum: the same candidates
        d = 1.0 / np.sqrt(backend.sdiag)
        e = np.zeros(0, dtype=np.int64)
        backend.reset(e, e, np.zeros(0), d)
        res[single, "first"] = concord_module._kkt_pass(backend, e, e, np.zeros(0), d, 0.3, 0.3)
    for k in range(2):
        np.testing.assert_array_equal(res[True, "first"][k], res[False, "first"][k])
    assert res[True, "first"][0].size > 0
    for key in ("I", "J", "n_kkt"):
        np.testing.assert_array_equal(res[True][key], res[False][key])
    np.testing.assert_allclose(res[True]["w"], res[False]["w"], atol=1e-12)


def test_kkt_passes_on_a_dask_cluster_give_the_same_fit():
    """Two workers hold slabs of the columns and check the pairs of their rows: the
    same violators in every pass, so the same fit as on one machine."""
    distributed = pytest.importorskip("distributed")
    X = _data(30, 40, seed=5)
    kw = dict(alpha=0.25, covariance="from_data", tol=1e-12, block_bytes=8 * 40 * 3)
    ref = Concord(**kw).fit(X)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        got = Concord(client=client, **kw).fit(X)
        backend = concord_module.ClusterColumnsBackend(_z(X)[0].T.copy(), client)
        assert len(set(backend.owner)) == 2 and len(backend.owner) == 4
        backend.close()
    np.testing.assert_array_equal(got.edges_, ref.edges_)
    np.testing.assert_allclose(got.precision_.toarray(), ref.precision_.toarray(), atol=1e-12)
    assert got.n_kkt_passes_ == ref.n_kkt_passes_ and got.n_iter_ == ref.n_iter_
    assert [r["violators"] for r in got.history_] == [r["violators"] for r in ref.history_]
    with pytest.raises(ParameterError, match="covariance='dense'"):
        Concord(client=object(), covariance="dense").fit(X)


@pytest.mark.parametrize("extra", [[], ["--from-data"]])
def test_cli_method_concord_writes_edges_and_precision(tmp_path, capsys, extra):
    """``spargel gmrf --method concord``: the edge list (weights: the partial correlations)
    and the precision's non-zeros are the estimator's."""
    import csv

    from spargel.cli import main

    X = _data(n=120, p=10, seed=11)
    data = tmp_path / "x.csv"
    with open(data, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"v{j}" for j in range(X.shape[1])])
        w.writerows([[repr(float(v)) for v in row] for row in X])
    edges, prec = tmp_path / "edges.csv", tmp_path / "K.csv"
    rc = main(["gmrf", str(data), "--method", "concord", "--alpha", "0.15", "--out-edges", str(edges),
               "--out-precision", str(prec), *extra])
    err = capsys.readouterr().err
    assert rc == 0 and "CONCORD" in err and "KKT passes" in err
    m = Concord(alpha=0.15, covariance="from_data" if extra else "auto").fit(X)
    rows = list(csv.reader(edges.open()))
    assert rows[0] == ["i", "j", "weight", "name_i", "name_j"]
    assert [(int(r[0]), int(r[1])) for r in rows[1:]] == [tuple(e) for e in np.asarray(m.edges_).tolist()]
    R = m.partial_correlations_.toarray()
    for r in rows[1:]:
        assert float(r[2]) == pytest.approx(R[int(r[0]), int(r[1])])
    K = m.precision_.toarray()
    entries = list(csv.reader(prec.open()))[1:]
    assert len(entries) == np.count_nonzero(np.triu(K))
    for r in entries:
        assert float(r[2]) == pytest.approx(K[int(r[0]), int(r[1])])
    for argv, msg in ((["--method", "concord"], "needs --alpha"),
                      (["--method", "concord", "--alpha", "0.1", "--rule", "and"], "--rule"),
                      (["--method", "concord", "--alpha", "0.1", "--cv", "3"], "--cv")):
        assert main(["gmrf", str(data), *argv]) == 2
        assert msg in capsys.readouterr().err
