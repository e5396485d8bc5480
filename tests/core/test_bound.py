"""The quadratic bound of Jebara & Choromanska (Algorithm 1), its low-rank form
(Algorithm 4), the flat log-linear model's bound and the bound majoriser, against
brute force: exact log-partitions at random points, finite differences, dense
matrices, the OWL-QN optimum."""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.errors import CapabilityError
from spargel.core.bound import DenseCurvature, compute_bound, positive_shift
from spargel.loglinear.bound import flat_bound
from spargel.loglinear.bound_lowrank import LowRankCurvature
from spargel.loglinear.model import FlatLogLinear
from spargel.core.penalties import ElasticNet, GroupLasso
from spargel.solvers import get_solver


def log_z(theta, F, log_h):
    a = F @ theta + log_h
    m = a.max()
    return m + np.log(np.exp(a - m).sum())


# --------------------------------------------------------------------------- Algorithm 1
@pytest.mark.parametrize("n_conf", [2, 3, 7, 60])
def test_algorithm1_upper_bounds_tight_and_gradient(n_conf):
    """Thousands of random (f, h, theta~, theta): the bound is above log Z, equal at
    theta~, its mu is the gradient of log Z (finite differences) and its curvature
    dominates the Hessian (the gap has a minimum at theta~)."""
    rng = np.random.default_rng(n_conf)
    worst = np.inf
    for trial in range(40):
        d = int(rng.integers(1, 6))
        F = rng.normal(size=(n_conf, d)) * rng.choice([0.3, 1.0, 4.0])
        log_h = rng.normal(size=n_conf) * 2
        log_h[rng.random(n_conf) < 0.1] = -np.inf                      # h(y) = 0 allowed
        if not np.any(np.isfinite(log_h)):
            log_h[0] = 0.0
        t = rng.normal(size=d)
        lz, mu, S = compute_bound(t, F, log_h=log_h)
        assert lz == pytest.approx(log_z(t, F, log_h), rel=1e-12, abs=1e-12)
        e = 1e-6
        fd = np.array([(log_z(t + e * u, F, log_h) - log_z(t - e * u, F, log_h)) / (2 * e) for u in np.eye(d)])
        np.testing.assert_allclose(mu, fd, atol=1e-6)
        p = np.exp(F @ t + log_h - lz)
        H = (F * p[:, None]).T @ F - np.outer(mu, mu)
        assert np.linalg.eigvalsh(S - H).min() >= -1e-9
        for _ in range(60):
            theta = t + rng.normal(size=d) * rng.choice([0.01, 0.5, 3.0, 20.0])
            diff = theta - t
            gap = lz + diff @ mu + 0.5 * diff @ S @ diff - log_z(theta, F, log_h)
            worst = min(worst, gap / max(1.0, abs(lz)))
    assert worst >= -1e-12


def test_two_configurations_is_the_jaakkola_jordan_bound():
    """|Omega| = 2: Sigma = tanh(u/2) / (2u) (f1 - f2)(f1 - f2)' with u the log odds."""
    F = np.array([[1.0, 0.0], [0.2, 2.0]])
    t = np.array([0.3, -0.4])
    lz, mu, S = compute_bound(t, F)
    u = (F[1] - F[0]) @ t
    l = F[1] - F[0]
    np.testing.assert_allclose(S, np.tanh(u / 2) / (2 * u) * np.outer(l, l), rtol=1e-12)


def test_h_as_weights_or_logs():
    rng = np.random.default_rng(1)
    F, t = rng.normal(size=(5, 2)), rng.normal(size=2)
    h = np.array([1.0, 0.0, 2.0, 0.5, 3.0])
    a = compute_bound(t, F, h=h)
    b = compute_bound(t, F[[0, 2, 3, 4]], log_h=np.log(h[[0, 2, 3, 4]]))
    assert a[0] == pytest.approx(b[0])
    np.testing.assert_allclose(a[1], b[1])
    np.testing.assert_allclose(a[2], b[2])
    with pytest.raises(ValueError, match="h must be >= 0"):
        compute_bound(t, F, h=-h)
    with pytest.raises(ValueError, match="dimensions"):
        compute_bound(np.zeros(3), F)


# --------------------------------------------------------------------------- the flat model
def flat_problem(rng, n=9, d=3, K=4, sparse=False, weights=False, intercept=True):
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    sw = rng.random(n) + 0.2 if weights else None
    return FlatLogLinear(sp.csr_matrix(X) if sparse else X, y, K, fit_intercept=intercept, sample_weight=sw), X, y, sw


def flat_reference(m, X, y, sw, w, order):
    """Per sample, Algorithm 1 over f(k) = e_k (x) [x, 1] in the model's flat layout."""
    n, d = X.shape
    K, p = m.K, m.n_params
    db = d + (1 if m.fit_intercept else 0)
    S, G, L = np.zeros((p, p)), np.zeros(p), 0.0
    for i in range(n):
        xb = np.append(X[i], 1.0) if m.fit_intercept else X[i]
        F = np.zeros((K, p))
        for k in range(K):
            V = np.zeros((db, K))
            V[:, k] = xb
            F[k] = V.ravel()
        sc = F @ w
        o = {"natural": np.arange(K), "descending": np.argsort(-sc, kind="stable"),
             "ascending": np.argsort(sc, kind="stable")}[order]
        lz, mu, Sig = compute_bound(w, F[o])
        s = 1.0 if sw is None else sw[i]
        S += s * Sig
        G += s * (mu - F[y[i]])
        L += s * (lz - F[y[i]] @ w)
    return L, G, S


@pytest.mark.parametrize("order", ["natural", "descending", "ascending"])
@pytest.mark.parametrize("sparse,weights,intercept", [(False, False, True), (True, True, True), (False, True, False)])
def test_flat_bound_is_algorithm1_per_sample(order, sparse, weights, intercept):
    rng = np.random.default_rng(7)
    m, X, y, sw = flat_problem(rng, sparse=sparse, weights=weights, intercept=intercept)
    w = rng.normal(size=m.n_params)
    L, G, S = flat_reference(m, X, y, sw, w, order)
    v = rng.normal(size=m.n_params)
    for curvature in ("dense", "woodbury", "cg"):
        B = flat_bound(m, w, curvature=curvature, order=order)
        assert B.loss == pytest.approx(L, rel=1e-12)
        np.testing.assert_allclose(B.grad, G, atol=1e-12)
        np.testing.assert_allclose(B.grad, m.loss_grad(w)[1], atol=1e-12)
        np.testing.assert_allclose(B.curvature.matvec(v), S @ v, atol=1e-11)
        np.testing.assert_allclose(B.curvature.diagonal(), np.diag(S), atol=1e-12)
        if B.curvature.exact_solve:
            shift = np.where(rng.random(m.n_params) < 0.5, 0.2, 0.7)
            np.testing.assert_allclose((S + np.diag(shift)) @ B.curvature.solve(v, shift), v, atol=1e-10)
            # unpenalised weights (shift 0) get a tiny ridge: still a solution of the system
            zero = m.layout.penalty_scale if m.fit_intercept else np.ones(m.n_params)
            x = B.curvature.solve(v - v.mean() * (1 - zero), shift * zero)
            eps = positive_shift(shift * zero, np.diag(S))
            assert np.abs((S + np.diag(eps)) @ x - (v - v.mean() * (1 - zero))).max() < 1e-6 * np.abs(x).max()
    np.testing.assert_allclose(flat_bound(m, w, curvature="dense", order=order).curvature.dense().M, S, atol=1e-12)


def test_flat_bound_upper_bounds_the_loss():
    rng = np.random.default_rng(2)
    m, X, y, sw = flat_problem(rng, n=30, d=4, K=5, weights=True)
    worst = np.inf
    for _ in range(20):
        w = rng.normal(size=m.n_params) * 2
        B = flat_bound(m, w)
        for _ in range(50):
            dlt = rng.normal(size=m.n_params) * rng.choice([0.01, 0.3, 3.0])
            worst = min(worst, B.value(dlt) - m.loss(w + dlt))
    assert worst >= -1e-9


def test_mask_freezes_weights():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    y = np.arange(12) % 3
    mask = (rng.random(9) < 0.6).astype(float)
    mask = np.concatenate([mask, np.ones(3)])
    m = FlatLogLinear(X, y, 3, mask=mask)
    res = get_solver("bound")(m, ElasticNet(0.0, 0.5, m.layout.penalty_scale), max_iter=300, tol=0, gtol=1e-9)
    assert np.all(res.w[mask == 0] == 0)
    ref = get_solver("lbfgs")(m, ElasticNet(0.0, 0.5, m.layout.penalty_scale), max_iter=3000, tol=0, gtol=1e-10)
    assert res.objective == pytest.approx(ref.objective, rel=1e-8)


# --------------------------------------------------------------------------- Algorithm 4
def test_lowrank_is_an_upper_bound_and_exact_at_full_rank():
    rng = np.random.default_rng(4)
    n = 12
    R = rng.normal(size=(40, n)) * rng.random((40, 1))
    exact = R.T @ R
    for rank in (0, 1, 3, 7):
        lr = LowRankCurvature.build([R[i:i + 5] for i in range(0, 40, 5)], n, rank)
        assert lr.rank <= rank
        assert np.linalg.eigvalsh(lr.dense() - exact).min() >= -1e-9 * np.abs(exact).max()
        v = rng.normal(size=n)
        np.testing.assert_allclose(lr.matvec(v), lr.dense() @ v, atol=1e-10)
        np.testing.assert_allclose(lr.diagonal(), np.diag(lr.dense()), atol=1e-10)
        shift = np.full(n, 0.3)
        np.testing.assert_allclose((lr.dense() + np.diag(shift)) @ lr.solve(v, shift), v, atol=1e-8)
    full = LowRankCurvature.build([R[i:i + 5] for i in range(0, 40, 5)], n, n)
    np.testing.assert_allclose(full.dense(), exact, atol=1e-9)
    one = LowRankCurvature.build([R[i:i + 1] for i in range(40)], n, 4)       # the paper's one-at-a-time
    assert np.linalg.eigvalsh(one.dense() - exact).min() >= -1e-9 * np.abs(exact).max()


def test_lowrank_flat_bound_still_bounds_and_majorises():
    rng = np.random.default_rng(5)
    m, X, y, sw = flat_problem(rng, n=25, d=5, K=3)
    w = rng.normal(size=m.n_params)
    B = flat_bound(m, w, curvature="lowrank", rank=4)
    worst = np.inf
    for _ in range(300):
        dlt = rng.normal(size=m.n_params) * rng.choice([0.01, 0.3, 3.0])
        worst = min(worst, B.value(dlt) - m.loss(w + dlt))
    assert worst >= -1e-9
    pen = ElasticNet(0.0, 0.1, m.layout.penalty_scale)
    res = get_solver("bound")(m, pen, max_iter=40, tol=0, gtol=0, curvature="lowrank", rank=4)
    obj = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))


# --------------------------------------------------------------------------- the majoriser
@pytest.mark.parametrize("curvature", ["dense", "woodbury", "cg", "lowrank"])
@pytest.mark.parametrize("l1,l2", [(0.0, 0.5), (0.4, 0.1), (1.0, 0.0)])
def test_bound_majoriser_is_monotone_and_reaches_the_optimum(curvature, l1, l2):
    """Every step lowers the objective; l2, elastic net and l1 reach the OWL-QN optimum to
    1e-6 (relative) on a small problem."""
    rng = np.random.default_rng(11)
    m, X, y, sw = flat_problem(rng, n=20, d=3, K=3, sparse=curvature == "cg")
    pen = ElasticNet(l1, l2, m.layout.penalty_scale)
    ref = get_solver("owlqn")(m, pen, max_iter=2000, tol=1e-15, gtol=1e-10)
    res = get_solver("bound")(m, pen, max_iter=2000, tol=0, gtol=1e-7, curvature=curvature,
                              rank=6 if curvature == "lowrank" else None)
    assert res.stop_reason == "gtol"
    obj = [ref_ for ref_ in (h["objective"] for h in res.history)]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    if l1 > 0:
        assert np.array_equal(res.w == 0, np.abs(ref.w) < 1e-6)


def test_dense_coordinate_descent_solves_the_lasso_on_a_quadratic():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(8, 8))
    M = A.T @ A + 0.1 * np.eye(8)
    g, w = rng.normal(size=8), rng.normal(size=8)
    l1, l2 = np.full(8, 0.7), np.full(8, 0.2)
    d, _ = DenseCurvature(M).coordinate_descent(g, w, l1, l2, np.zeros(8), max_sweeps=10000, tol=1e-14)
    x = w + d
    # optimality of g.d + d'Md/2 + l1|w + d| + l2/2 (w + d)^2
    grad = g + M @ d + l2 * x
    assert np.all(np.abs(grad[x != 0] + l1[x != 0] * np.sign(x[x != 0])) < 1e-9)
    assert np.all(np.abs(grad[x == 0]) <= l1[x == 0] + 1e-9)
    lr = LowRankCurvature(np.zeros((0, 8)), np.zeros(0), np.diag(M).copy())
    d2, _ = lr.coordinate_descent(g, w, l1, l2, np.zeros(8), max_sweeps=100, tol=1e-14)
    x2 = w + d2
    np.testing.assert_allclose(x2, np.sign(np.diag(M) * w - g) * np.maximum(np.abs(np.diag(M) * w - g) - l1, 0)
                               / (np.diag(M) + l2), atol=1e-12)


def test_the_solver_refuses_what_it_cannot_do():
    rng = np.random.default_rng(0)
    m, *_ = flat_problem(rng)
    with pytest.raises(CapabilityError, match="separable"):
        get_solver("bound")(m, GroupLasso(1.0, m.layout), max_iter=2)

    class NoBound:
        n_params = 3
        layout = m.layout

        def loss_grad(self, w):
            return 0.0, np.zeros(3)

    with pytest.raises(CapabilityError, match="'bound'"):
        get_solver("bound")(NoBound(), ElasticNet(0, 1), max_iter=2)
    with pytest.raises(ValueError, match="rank"):
        flat_bound(m, np.zeros(m.n_params), curvature="lowrank")
    with pytest.raises(ValueError, match="curvature"):
        flat_bound(m, np.zeros(m.n_params), curvature="cholesky")


def test_classifier_with_solver_bound():
    from sklearn.datasets import load_iris

    from spargel import LogLinearClassifier
    X, y = load_iris(return_X_y=True)
    a = LogLinearClassifier(solver="bound", l1=0.0, l2=1.0, tol=0, gtol=1e-8, max_iter=1000).fit(X, y)
    b = LogLinearClassifier(solver="lbfgs", l1=0.0, l2=1.0, tol=1e-14, gtol=1e-8, max_iter=5000).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-5)
    assert a.stop_reason_ == "gtol"


def test_over_relaxation_is_the_default_and_needs_fewer_iterations():
    """The default bound solver over-relaxes (steps longer than the bound's, eta > 1, in
    its history) and reaches the same optimum as the plain majoriser in fewer
    iterations; both stay monotone."""
    rng = np.random.default_rng(4)
    m, X, y, sw = flat_problem(rng, n=60, d=8, K=3, sparse=False)
    pen = ElasticNet(0.0, 0.5, m.layout.penalty_scale)
    ref = get_solver("lbfgs")(m, pen, max_iter=3000, tol=0, gtol=1e-11)
    default = get_solver("bound")(m, pen, max_iter=3000, tol=0, gtol=1e-8)
    plain = get_solver("bound")(m, pen, max_iter=3000, tol=0, gtol=1e-8, overrelax=False)
    assert default.stop_reason == plain.stop_reason == "gtol"
    assert max(r["eta"] for r in default.history) > 1.0 and all(r["eta"] == 1.0 for r in plain.history)
    for res in (default, plain):
        obj = [r["objective"] for r in res.history]
        assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))
        assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert default.n_iter < plain.n_iter
