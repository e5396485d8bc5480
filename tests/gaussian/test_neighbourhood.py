"""Neighbourhood selection (Meinshausen & Buhlmann) with huge's scaling: every node's lasso
against its optimality conditions and scikit-learn's Lasso, the Gram and data modes
against each other, the or / and rules by construction, a chain recovered, paths, threads,
growing buffers, the single-precision screening, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

import spargel
from spargel.errors import ConvergenceWarning, DataFormatError, ParameterError
from spargel.gaussian import neighbourhood as nb
from spargel.gaussian.neighbourhood import NeighbourhoodSelection, screen_pairs, standardize_unit


def _data(n=80, p=12, seed=0, rho=0.6):
    """Samples of an AR(1) chain across the variables (neighbours correlated rho), with
    columns of unequal scales and means."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, p))
    X[:, 0] = rng.standard_normal(n)
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1 - rho ** 2) * rng.standard_normal(n)
    return X * rng.uniform(0.5, 3.0, p) + rng.uniform(-2, 2, p)


def _z(X):
    """huge's standardisation written out: centred, (1/n) z^T z = 1."""
    Z = X - X.mean(axis=0)
    return Z / np.sqrt((Z ** 2).mean(axis=0))


def _kkt_violation(Z, B, alpha):
    """Largest violation of the lasso's optimality conditions over all nodes: for node j,
    c = Z_-j^T (z_j - Z beta) / n must be alpha sign(beta_k) where beta_k != 0 and at
    most alpha in absolute value where beta_k = 0."""
    n, p = Z.shape
    worst = 0.0
    for j in range(p):
        beta = B[j].copy()
        assert beta[j] == 0
        c = Z.T @ (Z[:, j] - Z @ beta) / n
        for k in range(p):
            if k == j:
                continue
            if beta[k] != 0:
                worst = max(worst, abs(c[k] - alpha * np.sign(beta[k])))
            else:
                worst = max(worst, abs(c[k]) - alpha)
    return worst


@pytest.mark.parametrize("mode", ["gram", "data"])
def test_each_node_is_its_lasso(mode):
    sklearn = pytest.importorskip("sklearn.linear_model")
    X = _data()
    alpha = 0.08
    m = NeighbourhoodSelection(alpha=alpha, mode=mode, tol=1e-10).fit(X)
    B = m.coef_.toarray()
    Z = _z(X)
    assert _kkt_violation(Z, B, alpha) < 1e-8
    for j in range(X.shape[1]):
        others = [k for k in range(X.shape[1]) if k != j]
        ref = sklearn.Lasso(alpha=alpha, fit_intercept=False, tol=1e-14,
                            max_iter=100_000).fit(Z[:, others], Z[:, j])
        np.testing.assert_allclose(B[j, others], ref.coef_, atol=1e-7)
    assert m.mode_ == mode and m.n_iter_.shape == (X.shape[1],) and np.all(m.n_iter_ >= 1)


def test_scaling_is_huges_lambda():
    """alpha is on the correlation scale: no edge just above max |R_ij| (huge's lambda
    max for mb), at least one just below; the result ignores the columns' units."""
    X = _data(seed=3)
    R = np.corrcoef(X, rowvar=False)
    top = np.max(np.abs(R - np.eye(R.shape[0])))
    assert len(NeighbourhoodSelection(alpha=top * (1 + 1e-9)).fit(X).edges_) == 0
    assert len(NeighbourhoodSelection(alpha=top * (1 - 1e-6)).fit(X).edges_) >= 1
    a = NeighbourhoodSelection(alpha=0.1).fit(X)
    b = NeighbourhoodSelection(alpha=0.1).fit(X * 1e6 - 3.0)
    np.testing.assert_allclose(a.coef_.toarray(), b.coef_.toarray(), atol=1e-9)
    np.testing.assert_allclose(a.location_, X.mean(axis=0))
    np.testing.assert_allclose(a.scale_, X.std(axis=0))


def test_gram_and_data_modes_agree_with_fewer_samples_than_variables():
    rng = np.random.default_rng(1)
    X = _data(n=40, p=60, seed=1) + 0.3 * rng.standard_normal((40, 1))     # a common factor
    alphas = [0.5, 0.3, 0.2, 0.12]
    g = NeighbourhoodSelection(alphas=alphas, mode="gram", tol=1e-10).fit(X)
    d = NeighbourhoodSelection(alphas=alphas, mode="data", tol=1e-10).fit(X)
    assert d.screened_pairs_ > 0 and g.screened_pairs_ is None
    for Cg, Cd, eg, ed in zip(g.coef_path_, d.coef_path_, g.edges_path_, d.edges_path_):
        np.testing.assert_allclose(Cg.toarray(), Cd.toarray(), atol=1e-8)
        np.testing.assert_array_equal(eg, ed)
    # here tau = 3 / sqrt(40) is above the smaller alphas: variables with alpha < |S_kj| <=
    # tau are not screened, and only the product check finds them (then solved again)
    info = nb.neighbourhood_path(X, alphas, mode="data", tol=1e-10)[4]
    assert info["tau"] > min(alphas) and info["resolved"] > 0


def test_data_mode_dense_neighbourhoods_check_every_variable():
    """Strongly correlated data and a small alpha: supports with ||beta||_1 > 1, and a
    screening threshold above alpha (3 / sqrt(n)), where the screened graph alone does
    not certify optimality: every node is checked by the matrix product, and those with
    violators are solved again."""
    rng = np.random.default_rng(2)
    n, p = 60, 30
    F = rng.standard_normal((n, 3))
    X = F @ rng.standard_normal((3, p)) + 0.3 * rng.standard_normal((n, p))
    alpha = 0.02
    d = NeighbourhoodSelection(alpha=alpha, mode="data", tol=1e-11, max_iter=100_000).fit(X)
    g = NeighbourhoodSelection(alpha=alpha, mode="gram", tol=1e-11, max_iter=100_000).fit(X)
    B = d.coef_.toarray()
    assert np.abs(B).sum(axis=1).max() > 1.0               # the bound did not certify
    assert _kkt_violation(_z(X), B, alpha) < 1e-7
    np.testing.assert_allclose(B, g.coef_.toarray(), atol=1e-7)
    # those nodes went through the product check
    info = nb.neighbourhood_path(X, [alpha], mode="data", tol=1e-11, max_iter=100_000)[4]
    assert info["tau"] > alpha and info["checked"] >= X.shape[1]


@pytest.mark.parametrize("mode", ["gram", "data"])
def test_buffers_grow_for_large_working_sets(mode):
    """Supports of almost every variable: the working set outgrows its first scratch
    (64 variables) and the output its first guess; the result is still the lasso's."""
    rng = np.random.default_rng(4)
    n, p = 300, 90
    X = rng.standard_normal((n, p)) + 0.5 * rng.standard_normal((n, 1))
    alpha = 0.002
    m = NeighbourhoodSelection(alpha=alpha, mode=mode, tol=1e-11, max_iter=100_000).fit(X)
    B = m.coef_.toarray()
    assert (B != 0).sum(axis=1).max() > 64
    assert _kkt_violation(_z(X), B, alpha) < 1e-8


def test_or_and_rules_by_construction():
    X = _data(n=60, p=15, seed=5, rho=0.5)
    for alpha in (0.05, 0.15):
        o = NeighbourhoodSelection(alpha=alpha, rule="or").fit(X)
        a = NeighbourhoodSelection(alpha=alpha, rule="and").fit(X)
        np.testing.assert_array_equal(o.coef_.toarray(), a.coef_.toarray())
        P = o.coef_.toarray() != 0
        want = {"or": P | P.T, "and": P & P.T}
        for m, rule in ((o, "or"), (a, "and")):
            A = m.adjacency_
            assert isinstance(A, sp.csr_matrix) and A.dtype == bool
            np.testing.assert_array_equal(A.toarray(), want[rule])
            assert (A != A.T).nnz == 0 and not A.diagonal().any()
            iu, ju = np.nonzero(np.triu(want[rule], 1))
            np.testing.assert_array_equal(m.edges_, np.column_stack([iu, ju]))
        assert set(map(tuple, a.edges_)) <= set(map(tuple, o.edges_))
    # a one-sided selection exists in this data, so the rules differ somewhere
    assert any((NeighbourhoodSelection(alpha=al, rule="or").fit(X).adjacency_ !=
                NeighbourhoodSelection(alpha=al, rule="and").fit(X).adjacency_).nnz
               for al in (0.05, 0.1, 0.15, 0.2))


def test_chain_is_recovered():
    """huge's band graph (g = 1): a tridiagonal precision; its chain is the graph found."""
    p, n = 40, 600
    K = np.diag(np.full(p, 1.0)) + np.diag(np.full(p - 1, 0.45), 1) + np.diag(np.full(p - 1, 0.45), -1)
    rng = np.random.default_rng(6)
    L = np.linalg.cholesky(np.linalg.inv(K))
    X = rng.standard_normal((n, p)) @ L.T
    chain = np.column_stack([np.arange(p - 1), np.arange(1, p)])
    for mode in ("gram", "data"):
        m = NeighbourhoodSelection(alpha=0.2, mode=mode).fit(X)
        np.testing.assert_array_equal(m.edges_, chain)


def test_path_equals_separate_fits_and_is_ordered():
    X = _data(n=50, p=20, seed=7)
    alphas = [0.1, 0.4, 0.2]
    path = NeighbourhoodSelection(alphas=alphas, tol=1e-11).fit(X)
    np.testing.assert_array_equal(path.alphas_, [0.4, 0.2, 0.1])
    assert path.alpha_ == 0.1 and path.coef_ is path.coef_path_[-1]
    for a, C, E in zip(path.alphas_, path.coef_path_, path.edges_path_):
        one = NeighbourhoodSelection(alpha=a, tol=1e-11).fit(X)
        np.testing.assert_allclose(C.toarray(), one.coef_.toarray(), atol=1e-9)
        np.testing.assert_array_equal(E, one.edges_)
    sizes = [len(e) for e in path.edges_path_]
    assert sizes == sorted(sizes)


def test_threads_give_the_same_result(monkeypatch):
    monkeypatch.setattr(nb, "_CHUNK", 7)                   # several chunks of nodes
    X = _data(n=50, p=40, seed=8)
    for mode in ("gram", "data"):
        one = NeighbourhoodSelection(alphas=[0.3, 0.1], mode=mode).fit(X)
        two = NeighbourhoodSelection(alphas=[0.3, 0.1], mode=mode, n_jobs=2).fit(X)
        for C1, C2 in zip(one.coef_path_, two.coef_path_):
            np.testing.assert_array_equal(C1.toarray(), C2.toarray())
        np.testing.assert_array_equal(one.n_iter_, two.n_iter_)


def test_screening_keeps_exactly_the_pairs_above_tau():
    """Single-precision slabs with a margin, rechecked in double: the same pairs as a
    double-precision screening, also for a threshold a hair from a pair's value."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((30, 50))
    X[:, 1] += X[:, 0]
    Zt = standardize_unit(X)
    S = Zt @ Zt.T / Zt.shape[1]
    np.fill_diagonal(S, 0.0)
    v = abs(S[0, 1])
    for tau in (0.2, v - 1e-12, v, v + 1e-12):
        ptr, idx, val = screen_pairs(Zt, tau, block_bytes=8 * 50 * 7)   # slabs of 14 rows
        got = sp.csr_matrix((val, idx, ptr), shape=S.shape).toarray()
        want = np.where(np.abs(S) > tau, S, 0.0)
        np.testing.assert_allclose(got, want, atol=1e-14)
        np.testing.assert_array_equal(got != 0, np.abs(S) > tau)


def test_convergence_warning_and_progress_lines(capsys):
    X = _data()
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        NeighbourhoodSelection(alpha=0.01, max_iter=1, tol=1e-14).fit(X)
    NeighbourhoodSelection(alpha=0.1, mode="data", verbose=True).fit(X)
    err = capsys.readouterr().err
    assert "screened" in err and "12 of 12 nodes" in err and "edges (or rule)" in err


def test_bad_input_is_refused_clearly():
    X = _data()
    cases = [(dict(alpha=0.1, rule="xor"), "rule must be 'or' or 'and'"),
             (dict(alpha=0.1, mode="dense"), "mode must be"),
             (dict(), "give alpha"),
             (dict(alpha=0.1, alphas=[0.2]), "not both"),
             (dict(alpha=0.0), "alpha must be > 0"),
             (dict(alpha=-1.0), "alpha must be a finite number"),
             (dict(alpha=float("nan")), "alpha must be a finite number"),
             (dict(alpha="0.1"), "alpha must be a number"),
             (dict(alphas=[0.1, -1]), r"alphas\[1\]"),
             (dict(alphas=[0.1, float("inf")]), r"alphas\[1\]"),
             (dict(alphas=[]), "alphas is empty"),
             (dict(alphas=0.1), "alphas must be a list"),
             (dict(alpha=0.1, max_iter=0), "max_iter"),
             (dict(alpha=0.1, tol=-1), "tol")]
    for params, msg in cases:
        with pytest.raises(ParameterError, match=msg):
            NeighbourhoodSelection(**params).fit(X)
    Xc = X.copy()
    Xc[:, 3] = 2.5
    with pytest.raises(DataFormatError, match="column 3 is constant"):
        NeighbourhoodSelection(alpha=0.1).fit(Xc)
    with pytest.raises(DataFormatError, match="at least 2 samples"):
        NeighbourhoodSelection(alpha=0.1).fit(X[:1])
    Xn = X.copy()
    Xn[2, 2] = np.nan
    with pytest.raises(DataFormatError):
        NeighbourhoodSelection(alpha=0.1).fit(Xn)
    with pytest.raises(DataFormatError, match="sparse"):
        NeighbourhoodSelection(alpha=0.1).fit(sp.csr_matrix(X))


def test_public_name_and_parameters():
    assert spargel.NeighbourhoodSelection is NeighbourhoodSelection
    assert spargel.gaussian.NeighbourhoodSelection is NeighbourhoodSelection
    m = NeighbourhoodSelection(alpha=0.2, rule="and", n_jobs=2)
    assert m.get_params()["rule"] == "and" and "NeighbourhoodSelection(" in repr(m)
    assert not m.__sklearn_is_fitted__()
    m.fit(_data())
    assert m.__sklearn_is_fitted__() and m.n_features_in_ == 12


# -- the command line: spargel gmrf --method mb ------------------------------------------

def _write_csv(path, X, names=True):
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        if names:
            w.writerow([f"v{j}" for j in range(X.shape[1])])
        for row in X:
            w.writerow([repr(float(v)) for v in row])
    return path


@pytest.mark.parametrize("extra", [[], ["--from-data"], ["--rule", "and"]])
def test_cli_method_mb_writes_the_edges(tmp_path, capsys, extra):
    import csv

    from spargel.cli import main

    X = _data(n=120, p=10, seed=11)
    data = _write_csv(tmp_path / "x.csv", X)
    out = tmp_path / "edges.csv"
    rc = main(["gmrf", str(data), "--method", "mb", "--alpha", "0.15", "--out-edges", str(out),
               *extra])
    err = capsys.readouterr().err
    assert rc == 0 and "neighbourhood selection" in err
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["i", "j", "weight", "name_i", "name_j"]
    rule = "and" if "and" in extra else "or"
    m = NeighbourhoodSelection(alpha=0.15, rule=rule,
                               mode="data" if "--from-data" in extra else "auto").fit(X)
    got = [(int(r[0]), int(r[1])) for r in rows[1:]]
    assert got == [tuple(e) for e in m.edges_.tolist()] and got
    B = m.coef_.toarray()
    for r in rows[1:]:
        i, j = int(r[0]), int(r[1])
        assert float(r[2]) == pytest.approx(0.5 * (B[i, j] + B[j, i]))
        assert (r[3], r[4]) == (f"v{i}", f"v{j}")


def test_cli_method_mb_refuses_what_it_does_not_do(tmp_path, capsys):
    from spargel.cli import main

    data = _write_csv(tmp_path / "x.csv", _data(n=30, p=5))
    for argv, msg in ((["--method", "mb"], "needs --alpha"),
                      (["--method", "mb", "--alpha", "0.1", "--cv", "3"], "--cv"),
                      (["--method", "mb", "--alpha", "0.1", "--out-precision", str(tmp_path / "K.csv")],
                       "--out-precision"),
                      (["--method", "mb", "--alpha", "0"], "must be > 0"),
                      (["--alpha", "0.1", "--rule", "and"], "--rule goes with --method mb")):
        rc = main(["gmrf", str(data), *argv])
        err = capsys.readouterr().err
        assert rc == 2 and msg in err, (argv, err)
    # glasso stays the default
    assert main(["gmrf", str(data), "--alpha", "0.1", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("i,j,weight")


def test_scikit_learn_estimator_checks():
    """Every check of scikit-learn's check_estimator passes (the estimator does not
    inherit from BaseEstimator: scikit-learn is not a dependency of spargel)."""
    import warnings

    pytest.importorskip("sklearn", minversion="1.6")
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not inherit from .*BaseEstimator")
        warnings.filterwarnings("ignore", message=".*SCIPY_ARRAY_API")
        results = check_estimator(NeighbourhoodSelection(alpha=0.1), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert len(results) > 30 and failed == []
