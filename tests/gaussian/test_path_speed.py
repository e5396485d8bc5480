"""The fast path: warm starts bring their inverse, the selection's path stops at
PATH_TOL without the polish and its chosen fit is finished at the default tolerance."""

import warnings

import numpy as np
import pytest

from spargel.errors import ParameterError
from spargel.gaussian.path import alpha_grid, gaussian_path
from spargel.gaussian.selection import PATH_TOL, SparseGaussianMRFSelect
from spargel.gaussian.solve import POLISH_STEPS, solve_gaussian


def _factor_data(n=120, p=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, k)) @ rng.standard_normal((k, p)) if k else 0.0
    X = F + rng.standard_normal((n, p))
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    return X, Z.T @ Z / (n - 1)


@pytest.mark.parametrize("solver", ["newton-cg", "newton-cd"])
def test_warm_start_with_inverse_reaches_the_same_optimum(solver):
    # (Newton-CD needs hundreds of sweeps on factor data: none for it)
    _, R = _factor_data(k=3 if solver == "newton-cg" else 0)
    alphas = alpha_grid(R, 6, 0.1)
    warm = gaussian_path(R, alphas, solver=solver, penalize_diagonal=True)
    for a, r in zip(alphas, warm):
        cold = solve_gaussian(R, a, solver=solver, penalize_diagonal=True)
        assert r.converged and r.duality_gap <= 1e-10 * max(1.0, abs(r.objective)) + 1e-12
        assert abs(r.objective - cold.objective) <= 1e-9 * abs(cold.objective)
        np.testing.assert_allclose(r.precision, cold.precision, atol=1e-6)
        # the covariance handed to the next alpha is the precision's inverse
        np.testing.assert_allclose(r.covariance @ r.precision, np.eye(R.shape[0]), atol=1e-8)


def test_warm_start_from_other_components_and_increasing_alpha():
    # a dense fit warm-starting a sparser (split into components) one: the inverse of
    # the previous fit is not that of the blocks, and is not used there
    _, R = _factor_data(p=30)
    dense = solve_gaussian(R, 0.05, penalize_diagonal=True)
    for a in (0.3, 0.6):
        r = solve_gaussian(R, a, warm_start=dense, penalize_diagonal=True)
        cold = solve_gaussian(R, a, penalize_diagonal=True)
        assert abs(r.objective - cold.objective) <= 1e-9 * abs(cold.objective)


def test_warm_start_not_positive_definite_is_dropped():
    _, R = _factor_data(p=20)
    bad = solve_gaussian(R, 0.2)
    bad.precision = -bad.precision                      # not positive definite
    r = solve_gaussian(R, 0.2, warm_start=bad)
    cold = solve_gaussian(R, 0.2)
    assert r.converged and abs(r.objective - cold.objective) <= 1e-9 * abs(cold.objective)


@pytest.mark.parametrize("polish", [-1, 1.5, True, "2"])
def test_polish_is_checked(polish):
    _, R = _factor_data(p=10)
    with pytest.raises(ParameterError, match="polish"):
        solve_gaussian(R, 0.2, polish=polish)


def test_polish_zero_still_meets_the_tolerance():
    _, R = _factor_data()
    r0 = solve_gaussian(R, 0.1, polish=0, tol=1e-9)
    r2 = solve_gaussian(R, 0.1, tol=1e-9)
    assert r0.converged and r0.n_iter <= r2.n_iter
    assert r0.duality_gap <= 1e-9 * abs(r0.objective)


@pytest.mark.parametrize("criterion", ["ebic", "stars", "ric"])
def test_selection_path_tolerance_and_finished_choice(criterion):
    X, R = _factor_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = SparseGaussianMRFSelect(criterion, alphas=6, n_subsamples=4,
                                      random_state=0).fit(X)
        tight = SparseGaussianMRFSelect(criterion, alphas=6, n_subsamples=4, random_state=0,
                                        tol=1e-10).fit(X)
    # the same choice and graphs as the path at the default tolerance
    assert sel.alpha_ == tight.alpha_
    np.testing.assert_array_equal(sel.edges_path_, tight.edges_path_)
    if criterion == "ebic":
        # (log-likelihoods are first-order in the error of K: they agree to about the
        # square root of the tolerance, far below the differences that decide)
        np.testing.assert_allclose(sel.criterion_scores_, tight.criterion_scores_, rtol=1e-5)
    # the chosen fit is certified at the default tolerance
    res = sel._result
    assert res.converged and res.duality_gap <= 1e-10 * max(1.0, abs(res.objective))
    np.testing.assert_allclose(sel.precision_, tight.precision_, atol=1e-6)
    assert PATH_TOL >= 1e-10


def test_warm_start_inverse_is_rescaled():
    # variables in other units (variances 0.01 to 100): the inverse handed over must be
    # rescaled as the precision is; restarting at the optimum of the same alpha is then
    # certified at once
    X, _ = _factor_data(p=25)
    X = X * np.geomspace(0.1, 10.0, X.shape[1])
    S = np.cov(X.T, bias=True)
    for a in (0.5, 0.05):
        first = solve_gaussian(S, a)
        again = solve_gaussian(S, a, warm_start=first)
        # certified at the start (a wrongly scaled inverse is far from it); the polish
        # steps may still run, as many as the rounding of this CPU asks for
        assert again.history[0]["duality_gap"] <= 1e-9 * abs(first.objective)
        assert again.converged and again.n_iter <= 1 + POLISH_STEPS
