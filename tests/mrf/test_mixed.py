"""Mixed graphical models (MixedGraphicalModel) against known graphs, the optimality
conditions of every node-wise regression, the EBIC recomputed from the fit, IsingFit on
binary data, and the sampler's known covariance."""

import numpy as np
import pytest

import spargel
from reliability_helpers import sigint_at_call
from spargel.errors import DataFormatError, ParameterError
from spargel.mrf import mixed as mixed_module
from spargel.mrf import nodewise
from spargel.mrf.mixed import MixedGraphicalModel, design, make_mixed_data, mixed_gibbs_sample
from spargel.mrf.nodewise import IsingFit


def f1(truth, found):
    t, f = set(map(tuple, np.asarray(truth).tolist())), set(map(tuple, np.asarray(found).tolist()))
    return 2 * len(t & f) / (len(t) + len(f))


@pytest.fixture(scope="module")
def mixed30():
    types = "gc" * 15
    X, edges, params = make_mixed_data(1000, types, 30, seed=0)
    return types, X, edges


@pytest.fixture(scope="module")
def small():
    """6 variables: 2 continuous, a binary, a 3-level and a 4-level categorical, one more
    continuous; 6 edges."""
    types = "gcgccg"
    X, edges, _ = make_mixed_data(600, types, 6, levels=[2, 2, 2, 3, 4, 2], seed=4)
    return types, X, edges


def test_recovers_a_30_variable_mixed_graph(mixed30):
    types, X, edges = mixed30
    fit = MixedGraphicalModel(types).fit(X)
    assert f1(edges, fit.edges_) >= 0.9
    assert np.allclose(fit.adjacency_, fit.adjacency_.T) and np.all(np.diag(fit.adjacency_) == 0)
    on = np.zeros_like(fit.adjacency_, bool)
    on[tuple(fit.edges_.T)] = True
    assert np.array_equal(fit.adjacency_ > 0, on | on.T)
    assert set(map(tuple, fit.edges_.tolist())) == set(fit.edge_params_)
    orr = MixedGraphicalModel(types, rule="or").fit(X)
    assert set(map(tuple, fit.edges_.tolist())) <= set(map(tuple, orr.edges_.tolist()))
    # one thread or two: the same fit
    two = MixedGraphicalModel(types, n_jobs=2).fit(X)
    assert all(np.array_equal(a, b) for a, b in zip(two.coef_, fit.coef_))
    assert np.array_equal(two.adjacency_, fit.adjacency_)


def _standardised(fit, X):
    """The design of the fit's data: standardised columns, their scale and shift, levels."""
    Z, gstart, scale, shift, levels, codes = design(np.asarray(X, float), fit.types_)
    return Z, gstart, scale, shift, levels, codes


def _loglik_and_resid(fit, i, Z, gstart, scale, shift, levels, codes):
    """The regression of variable i at its fit, computed here: its log-likelihood
    (Gaussian: -RSS/2 on the standardised response), the residuals (n, K) on its linear
    predictors and its kind (0 Gaussian, 1 logistic, 2 multinomial)."""
    raw = Z * scale[:, None] + shift[:, None]            # standardised continuous, 0/1 dummies
    eta = fit.intercepts_[i] + raw.T @ fit.coef_[i]
    if fit.types_[i] == "g":
        r = Z[gstart[i]][:, None] - eta
        return -0.5 * float((r ** 2).sum()), r, 0
    K = len(levels[i])
    if K == 2:
        y = codes[i][:, None].astype(float)
        return float((y * eta - np.logaddexp(0, eta)).sum()), y - 1 / (1 + np.exp(-eta)), 1
    onehot = np.eye(K)[codes[i]]
    lse = np.logaddexp.reduce(eta, axis=1, keepdims=True)
    return float((onehot * (eta - lse)).sum()), onehot - np.exp(eta - lse), 2


def test_every_regression_meets_the_group_lasso_optimality_conditions(small):
    types, X, _ = small
    fit = MixedGraphicalModel(types, tol=1e-13).fit(X)
    Z, gstart, scale, shift, levels, codes = _standardised(fit, X)
    n = X.shape[0]
    kinds = set()
    for i in range(len(types)):
        ll, r, kind = _loglik_and_resid(fit, i, Z, gstart, scale, shift, levels, codes)
        kinds.add(kind)
        lam = fit.lambdas_[i]
        assert np.allclose(r.mean(axis=0), 0, atol=1e-6)           # the intercepts' conditions
        grad = Z @ r / n                                            # (m, K), standardised columns
        beta = fit.coef_[i] * scale[:, None]
        for g in range(len(types)):
            if g == i:
                assert np.all(fit.coef_[i][gstart[g]:gstart[g + 1]] == 0)
                continue
            gg, bg = grad[gstart[g]:gstart[g + 1]], beta[gstart[g]:gstart[g + 1]]
            w = lam * np.sqrt(gstart[g + 1] - gstart[g])
            if np.any(bg != 0):                     # on the group: gradient = w beta / ||beta||
                assert np.allclose(gg, w * bg / np.linalg.norm(bg), atol=2e-5 * max(1.0, w / lam))
            else:
                assert np.linalg.norm(gg) <= w * (1 + 1e-6) + 1e-9
    assert kinds == {0, 1, 2}


def test_the_ebic_is_that_of_the_chosen_fit(small):
    types, X, _ = small
    fit = MixedGraphicalModel(types, gamma=0.5, tol=1e-13).fit(X)
    Z, gstart, scale, shift, levels, codes = _standardised(fit, X)
    n, m = X.shape[0], Z.shape[0]
    for i in range(len(types)):
        ll, r, kind = _loglik_and_resid(fit, i, Z, gstart, scale, shift, levels, codes)
        dev = n * np.log(2 * np.pi * (-2 * ll) / n) + n if kind == 0 else -2 * ll
        J = int(np.count_nonzero(fit.coef_[i]))
        cand = m - (gstart[i + 1] - gstart[i])
        direct = dev + J * np.log(n) + 2 * 0.5 * J * np.log(cand)
        k = int(np.nanargmin(fit.ebic_[i]))
        assert np.isclose(fit.ebic_[i, k], direct, rtol=1e-9)


def test_a_gaussian_regression_is_the_lasso_solved_directly():
    """Continuous variables only: each regression is the lasso on standardised data; a
    direct solve (scipy's L-BFGS-B on the split positive/negative parts) agrees."""
    from scipy.optimize import minimize
    X, _, _ = make_mixed_data(300, "gggggg", 5, seed=2)
    fit = MixedGraphicalModel("gggggg", tol=1e-14).fit(X)
    Z = (X - X.mean(0)) / X.std(0)
    n = len(X)
    for i in range(6):
        others = [j for j in range(6) if j != i]
        A, y, lam = Z[:, others], Z[:, i], fit.lambdas_[i]

        def obj(v):
            b = v[:5] - v[5:]
            r = y - A @ b
            g = -A.T @ r / n
            return 0.5 * (r @ r) / n + lam * v.sum(), np.concatenate([g + lam, -g + lam])
        res = minimize(obj, np.zeros(10), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 10,
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
        direct = res.x[:5] - res.x[5:]
        assert np.allclose(fit.coef_[i][others, 0], direct, atol=1e-5)


def test_binary_data_alone_is_isingfit(mixed30):
    types, X, _ = mixed30
    B = X[:, 1::2].astype(int)                                    # the binary variables
    ising = IsingFit().fit(B)
    mgm = MixedGraphicalModel("c" * B.shape[1]).fit(B)
    assert np.array_equal(mgm.edges_, ising.edges_)
    # the same engine; the columns are standardised one at a time here (sums in another
    # order: the last bits differ)
    coef = np.array([c[:, 0] for c in mgm.coef_])
    assert np.allclose(coef, ising.coef_, rtol=1e-8, atol=1e-10)
    assert np.allclose(np.array([b[0] for b in mgm.intercepts_]), ising.thresholds_, rtol=1e-8)
    assert np.allclose(mgm.ebic_, ising.ebic_, rtol=1e-10, equal_nan=True)


def test_edge_blocks_have_the_shapes_of_their_variables(small):
    types, X, _ = small
    fit = MixedGraphicalModel(types, rule="or").fit(X)
    k = [1 if t == "g" else len(lv) for t, lv in zip(types, fit.levels_)]
    cols = [1 if t == "g" else len(lv) - 1 for t, lv in zip(types, fit.levels_)]
    K = [1 if t == "g" or kk == 2 else kk for t, kk in zip(types, k)]
    assert [len(lv) if lv is not None else None for lv in fit.levels_] == [None, 2, None, 3, 4, None]
    assert np.array_equal(np.diff(fit.groups_), cols)
    assert fit.edge_params_
    for (i, j), (bij, bji) in fit.edge_params_.items():
        assert bij.shape == (cols[j], K[i]) and bji.shape == (cols[i], K[j])
        assert np.isclose(fit.adjacency_[i, j], np.abs(np.concatenate([bij.ravel(), bji.ravel()])).mean())
        if bij.size == 1 and bji.size == 1:
            assert fit.signs_[i, j] == np.sign(bij.sum() + bji.sum())
        else:
            assert fit.signs_[i, j] == 0


def test_the_sampler_has_the_gaussian_covariance_of_its_precision():
    theta = 0.6
    X = mixed_gibbs_sample("gg", [0, 0], [(0, 1)], [theta], 20000, burn_in=50, seed=1)
    d = 1 + theta
    cov = np.linalg.inv(np.array([[d, -theta], [-theta, d]]))
    assert np.allclose(np.cov(X.T), cov, atol=0.03)
    # a binary variable beside a continuous one: P(y = 1 | x) is logistic in rho x
    X = mixed_gibbs_sample("gc", [0, 2], [(0, 1)], [np.array([0.0, 1.5])], 40000, burn_in=50, seed=2)
    x, y = X[:, 0], X[:, 1]
    for lo, hi in ((-0.2, 0.0), (0.4, 0.6)):
        sel = (x > lo) & (x < hi)
        assert abs(y[sel].mean() - 1 / (1 + np.exp(-1.5 * x[sel].mean()))) < 0.03


def test_interrupted_fit_raises_and_keeps_nothing(mixed30, monkeypatch):
    types, X, _ = mixed30
    calls = []
    real = mixed_module.regression_path

    def stop_at_the_fourth(*args, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(mixed_module, "regression_path", stop_at_the_fourth)
    for jobs in (1, 2):
        calls.clear()
        est = MixedGraphicalModel(types, n_jobs=jobs)
        with pytest.raises(KeyboardInterrupt):
            est.fit(X)
        assert not hasattr(est, "edges_") and not hasattr(est, "coef_")
        assert len(calls) < 10                          # the queued regressions were cancelled


def test_verbose_reports_progress(mixed30, capsys):
    types, X, _ = mixed30
    MixedGraphicalModel(types, verbose=True).fit(X)
    err = capsys.readouterr().err
    assert "regression 30/30" in err


def test_bad_input_is_rejected_clearly(small):
    types, X, _ = small
    with pytest.raises(ParameterError, match="6 variables"):
        MixedGraphicalModel("gc").fit(X)
    with pytest.raises(ParameterError, match="'x'"):
        MixedGraphicalModel("gcgcxg").fit(X)
    with pytest.raises(ParameterError, match="rule"):
        MixedGraphicalModel(types, rule="both").fit(X)
    with pytest.raises(ParameterError, match="n_jobs"):
        MixedGraphicalModel(types, n_jobs=0).fit(X)
    with pytest.raises(ParameterError, match="lambda_min_ratio"):
        MixedGraphicalModel(types, lambda_min_ratio=1.5).fit(X)
    Xc = X.copy()
    Xc[:, 0] = 1.0
    with pytest.raises(DataFormatError, match="column 0 .continuous. is constant"):
        MixedGraphicalModel(types).fit(Xc)
    Xc = X.copy()
    Xc[5, 1] = 0.5
    with pytest.raises(DataFormatError, match="6: column 1 .categorical.: 0.5 is not an integer"):
        MixedGraphicalModel(types).fit(Xc)
    Xc = X.copy()
    Xc[:, 1] = 3
    with pytest.raises(DataFormatError, match="single level"):
        MixedGraphicalModel(types).fit(Xc)
    Xc = X.copy()
    Xc[2, 2] = np.nan
    with pytest.raises(DataFormatError, match="missing"):
        MixedGraphicalModel(types).fit(Xc)
    with pytest.raises(DataFormatError, match="2-d"):
        MixedGraphicalModel(types).fit(X[0])
    with pytest.raises(spargel.NotFittedError):
        MixedGraphicalModel(types).to_networkx()


def test_sklearn_conventions():
    from sklearn.base import clone
    est = MixedGraphicalModel("gc", gamma=0.5, rule="or", n_jobs=2)
    assert clone(est).get_params()["types"] == "gc" and clone(est).get_params()["rule"] == "or"
    assert spargel.MixedGraphicalModel is MixedGraphicalModel
    assert nodewise.RULES == ("and", "or")


def test_a_real_sigint_stops_the_threads_cleanly(mixed30, monkeypatch):
    """SIGINT sent from a worker thread lands in the main thread, which waits on the
    regressions: KeyboardInterrupt, the queued ones cancelled, nothing fitted."""
    types, X, _ = mixed30
    real = mixed_module.regression_path
    for jobs in (1, 2):
        est = MixedGraphicalModel(types, n_jobs=jobs)
        with sigint_at_call(4) as at, pytest.raises(KeyboardInterrupt):
            monkeypatch.setattr(mixed_module, "regression_path", at.wrap(real))
            est.fit(X)
        assert not hasattr(est, "edges_") and at.calls < len(types)


def test_the_optimality_checks_gradient_is_the_finite_difference_of_the_loglik(small):
    """The gradient the optimality test above uses, ``Z' r / n`` on the standardised
    columns, against central differences of the log-likelihood it computes."""
    import copy
    types, X, _ = small
    fit = MixedGraphicalModel(types).fit(X)
    Z, gstart, scale, shift, levels, codes = _standardised(fit, X)
    n, h = X.shape[0], 1e-6
    for i in (0, 1, 3):                                 # Gaussian, logistic, multinomial
        _, r, kind = _loglik_and_resid(fit, i, Z, gstart, scale, shift, levels, codes)
        grad = Z @ r / n
        for c in (gstart[(i + 1) % len(types)], gstart[4] + 1):
            for k in range(fit.coef_[i].shape[1]):
                lls = []
                for sgn in (1, -1):
                    f = copy.copy(fit)
                    f.coef_ = [a.copy() for a in fit.coef_]
                    f.intercepts_ = [b.copy() for b in fit.intercepts_]
                    f.coef_[i][c, k] += sgn * h / scale[c]          # a step h on the standardised column:
                    f.intercepts_[i][k] -= sgn * h * shift[c] / scale[c]    # raw = scale Z + shift
                    lls.append(_loglik_and_resid(f, i, Z, gstart, scale, shift, levels, codes)[0])
                assert np.isclose((lls[0] - lls[1]) / (2 * h) / n, grad[c, k], rtol=1e-5, atol=1e-7)


def test_bootstrap_edge_stability_of_a_mixed_model(mixed30):
    from spargel.mrf.stability import edge_stability, edge_weight_matrix
    types, X, edges = mixed30
    st = edge_stability(MixedGraphicalModel(types), X, n_boot=4, random_state=3, n_jobs=2)
    direct = np.stack([edge_weight_matrix(MixedGraphicalModel(types).fit(X[rows])) for rows in st.resamples])
    assert np.array_equal(st.weights, direct)
    fit = MixedGraphicalModel(types).fit(X)
    W = edge_weight_matrix(fit)
    assert np.array_equal(np.abs(W), fit.adjacency_) and np.all((W < 0) == (fit.signs_ < 0))
    assert st.frequency[tuple(np.asarray(edges).T)].mean() > 0.8
