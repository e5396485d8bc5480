"""Latent conditional likelihood (mixtures of Gaussian-gated logistic regressions):
the model against finite differences, its bound against the exact loss, the EM
baseline against Bayes' rule, and the estimator's conventions."""

import warnings

import numpy as np
import pytest

from spargel import LatentLogLinearClassifier, LogLinearClassifier
from spargel.loglinear.latent_model import LatentLogLinear, em_fit
from spargel.core.penalties import ElasticNet
from spargel.solvers import get_solver


def xor(rng, n=120):
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def small_model(seed=0, M=3, weights=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(25, 3))
    y = rng.integers(0, 3, 25)
    sw = rng.random(25) + 0.5 if weights else None
    return LatentLogLinear(X, y, 3, M, sample_weight=sw), rng


def test_gradient_and_hessian_vector_products():
    m, rng = small_model()
    w = rng.normal(size=m.n_params)
    loss, g = m.loss_grad(w)
    e = 1e-6
    for _ in range(5):
        v = rng.normal(size=m.n_params)
        assert g @ v == pytest.approx((m.loss(w + e * v) - m.loss(w - e * v)) / (2 * e), rel=1e-6, abs=1e-8)
        fd = (m.loss_grad(w + e * v)[1] - m.loss_grad(w - e * v)[1]) / (2 * e)
        np.testing.assert_allclose(m.hessp(w, v), fd, atol=1e-5)


def test_loss_is_the_negative_conditional_log_likelihood():
    m, rng = small_model(weights=False)
    w = rng.normal(size=m.n_params)
    Z = m.scores(w).reshape(m.n, m.K, m.M)
    num = np.log(np.exp(Z).sum(axis=2))                     # log sum_m per class
    logp = num - np.log(np.exp(Z).sum(axis=(1, 2)))[:, None]
    assert m.loss(w) == pytest.approx(-logp[np.arange(m.n), m.y].sum(), rel=1e-12)
    np.testing.assert_allclose(m.class_log_proba(w, m.X), logp, atol=1e-12)


@pytest.mark.parametrize("M", [1, 2, 4])
def test_bound_upper_bounds_the_latent_loss(M):
    """Jensen below the numerator, Algorithm 1 above the denominator: an upper bound on
    the (non-convex) loss, tight at w with the exact gradient."""
    m, rng = small_model(M, M=M)
    worst = np.inf
    for _ in range(10):
        w = rng.normal(size=m.n_params) * 1.5
        B = m.bound(w)
        assert B.loss == pytest.approx(m.loss(w), rel=1e-12)
        np.testing.assert_allclose(B.grad, m.loss_grad(w)[1], atol=1e-12)
        for _ in range(100):
            d = rng.normal(size=m.n_params) * rng.choice([0.01, 0.3, 3.0])
            worst = min(worst, B.value(d) - m.loss(w + d))
    assert worst >= -1e-9


@pytest.mark.parametrize("l1", [0.0, 0.3])
def test_bound_majoriser_never_lowers_the_likelihood(l1):
    m, rng = small_model(5, M=2)
    pen = ElasticNet(l1, 0.1, m.layout.penalty_scale)
    res = get_solver("bound")(m, pen, rng.normal(size=m.n_params) * 0.3, max_iter=300, tol=0, gtol=1e-6)
    obj = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))
    assert obj[-1] < obj[0]


def test_one_component_is_multinomial_logistic_regression():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    a = LatentLogLinearClassifier(n_components=1, solver="lbfgs", l2=1.0, random_state=0, tol=1e-14,
                                  gtol=1e-9).fit(X, y)
    b = LogLinearClassifier(solver="lbfgs", l1=0.0, l2=1.0, tol=1e-14, gtol=1e-9, max_iter=5000).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-7)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-5)


def test_em_is_bayes_rule_of_the_fitted_mixture():
    """The EM baseline's weights reproduce p(k | x) computed from its Gaussians by Bayes'
    rule, and EM never lowers the joint likelihood."""
    rng = np.random.default_rng(2)
    X, y = xor(rng, 80)
    m = LatentLogLinear(X, y, 2, 2)
    w, hist, stop = em_fit(m, m.responsibilities(rng.normal(size=m.n_params)), max_iter=100, tol=1e-12)
    obj = [h["objective"] for h in hist]
    assert all(b <= a + 1e-9 for a, b in zip(obj, obj[1:]))
    # rebuild the Gaussians from the weights: var from theta = mean / var is not identifiable,
    # so check Bayes' rule through the joint log-densities computed by em_fit's own M step
    d, KM = 2, 4
    theta = w[:d * KM].reshape(d, KM).T
    nu = w[d * KM:]
    logj = X @ theta.T + nu                                     # log p(x, k, m) + shared terms
    post = np.exp(logj - logj.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    pk = post.reshape(-1, 2, 2).sum(axis=2)
    np.testing.assert_allclose(np.exp(m.class_log_proba(w, X)), pk, atol=1e-12)


def test_estimator_conventions_and_restarts():
    rng = np.random.default_rng(0)
    X, y = xor(rng)
    labels = np.array(["neg", "pos"])[y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LatentLogLinearClassifier(n_components=2, n_init=3, random_state=0, l2=1e-2, max_iter=300,
                                        solver_options={"overrelax": True}).fit(X, labels)
    assert list(clf.classes_) == ["neg", "pos"]
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert clf.score(X, labels) > 0.9
    assert clf.objective_ == min(clf.init_objectives_) and len(clf.init_objectives_) == 3
    ll = clf.log_likelihood(X, labels)
    assert ll == pytest.approx(np.log(P[np.arange(len(y)), y]).sum())
    assert clf.coef_.shape == (2, 2, 2) and clf.intercept_.shape == (2, 2)
    assert LatentLogLinearClassifier(n_components=1, random_state=0, max_iter=50).fit(X, y).score(X, y) < 0.75


def test_same_seed_same_starts_for_every_solver():
    rng = np.random.default_rng(1)
    X, y = xor(rng, 40)
    starts = []
    for solver in ("bound", "lbfgs", "sd", "cg"):      # (scipy's trust-ncg always takes one step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = LatentLogLinearClassifier(n_components=2, solver=solver, random_state=7, max_iter=0).fit(X, y)
        starts.append(c.weights_)
    for s in starts[1:]:
        np.testing.assert_array_equal(s, starts[0])


def test_bad_parameters():
    X, y = xor(np.random.default_rng(0), 20)
    for kwargs, match in [({"solver": "em", "l2": 1.0}, "no penalty"), ({"solver": "newton", "l1": 1.0}, "smooth"),
                          ({"solver": "sgd"}, "solver must be"), ({"n_components": 0}, "n_components"),
                          ({"n_init": 1.5}, "n_init")]:
        with pytest.raises((ValueError, TypeError), match=match):
            LatentLogLinearClassifier(**kwargs).fit(X, y)
    from spargel.errors import NotFittedError
    with pytest.raises(NotFittedError, match="not fitted"):
        LatentLogLinearClassifier().predict(X)
    clf = LatentLogLinearClassifier(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="3 features"):
        clf.predict(np.zeros((2, 3)))


def test_em_on_features_of_1e160_is_the_same_fit_in_other_units():
    """EM at features scaled by 1e160 (their squares overflow): from the same
    responsibilities, the same mixture, the weights per unit of the scaled features, the
    same probabilities; the estimator gives finite weights and no RuntimeWarning."""
    rng = np.random.default_rng(5)
    X, y = xor(rng, 60)
    s = np.array([1e160, 3e159])
    ref_m, big_m = LatentLogLinear(X, y, 2, 2), LatentLogLinear(X * s, y, 2, 2)
    resp = ref_m.responsibilities(rng.normal(size=ref_m.n_params))
    w_ref, h_ref, _ = em_fit(ref_m, resp, max_iter=50, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)         # no overflow on the way
        w_big, h_big, _ = em_fit(big_m, resp, max_iter=50, tol=0.0)
    d, KM = 2, 4
    np.testing.assert_allclose(w_big[:d * KM].reshape(d, KM) * s[:, None], w_ref[:d * KM].reshape(d, KM),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w_big[d * KM:], w_ref[d * KM:], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.exp(big_m.class_log_proba(w_big, X * s)),
                               np.exp(ref_m.class_log_proba(w_ref, X)), atol=1e-6)   # rounding, amplified by 50 EM steps
    # the joint log-likelihood is a density of the features as given: it moves by N log|det|
    assert h_big[-1]["objective"] == pytest.approx(h_ref[-1]["objective"] + len(y) * np.log(s).sum(), rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = LatentLogLinearClassifier(n_components=2, solver="em", random_state=0).fit(X * s, y)
    assert np.all(np.isfinite(clf.weights_))
    P = clf.predict_proba(X * s)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert clf.score(X * s, y) > 0.9


def test_all_zero_sample_weights_are_refused():
    X, y = xor(np.random.default_rng(0), 20)
    for solver in ("em", "bound"):
        with pytest.raises(ValueError, match="zero for every sample"):
            LatentLogLinearClassifier(solver=solver).fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="finite"):
        LatentLogLinearClassifier().fit(X, y, sample_weight=np.full(len(y), np.nan))
