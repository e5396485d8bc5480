"""Bad and extreme input: clear errors, never an inf or NaN result."""

import numpy as np
import pytest

from spargel.errors import DataFormatError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV
from spargel.gaussian.solve import solve_gaussian


def _data(m=60, n=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.8 * X[:, 0]
    X[:, 3] -= 0.5 * X[:, 2]
    return X


def test_tiny_scale_is_a_clear_error():
    # variances ~1e-320 are subnormal: the precision (~1e320) cannot be represented
    with pytest.raises(DataFormatError, match="outside the range of double precision"):
        SparseGaussianMRF(alpha=0.1).fit(_data() * 1e-160)


def test_huge_scale_is_a_clear_error():
    # variances ~1e320 overflow (the objective used to be NaN)
    with pytest.raises(DataFormatError, match="outside the range of double precision"):
        SparseGaussianMRF(alpha=0.1).fit(_data() * 1e160)


@pytest.mark.parametrize("c", [1e-100, 1e-30, 1e30, 1e100])
def test_rescaled_data_give_the_rescaled_model(c):
    """f(c X, c^2 alpha) is the same problem: K scales by 1/c^2, the duality gap
    and the iterations do not change, and everything stays finite."""
    X = _data()
    ref = SparseGaussianMRF(alpha=0.1, tol=1e-10).fit(X)
    m = SparseGaussianMRF(alpha=0.1 * c * c, tol=1e-10).fit(X * c)
    assert m.converged_ and np.all(np.isfinite(m.precision_)) and np.all(np.isfinite(m.covariance_))
    np.testing.assert_allclose(m.precision_ * (c * c), ref.precision_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(m.covariance_ / (c * c), ref.covariance_, rtol=1e-6, atol=1e-9)
    assert m.edges_.tolist() == ref.edges_.tolist()
    # the objective shifts by the constant n log c^2; the gap is scale-free
    assert m.objective_ == pytest.approx(ref.objective_ + 6 * np.log(c * c), rel=1e-9, abs=1e-6)
    assert abs(m.duality_gap_ - ref.duality_gap_) < 1e-6
    assert m.score(X * c) == pytest.approx(ref.score(X) - 6 * np.log(c), rel=1e-8)


def test_per_variable_units_do_not_matter():
    """Rescaling one variable by 1e8 with its weights rescaled alike is the same
    problem (internally everything is solved on the correlation scale)."""
    X = _data()
    s = np.array([1e8, 1.0, 1e-6, 3.0, 1.0, 1e4])
    L = np.full((6, 6), 0.1)
    ref = SparseGaussianMRF(alpha=L, tol=1e-10).fit(X)
    m = SparseGaussianMRF(alpha=L * np.outer(s, s), tol=1e-10).fit(X * s)
    np.testing.assert_allclose(m.precision_ * np.outer(s, s), ref.precision_, rtol=1e-6,
                               atol=1e-9)


def test_nan_inf_and_empty_input():
    X = _data()
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb[3, 2] = bad
        with pytest.raises(DataFormatError, match=r"NaN or infinite values \(first at row 3, column 2\)"):
            SparseGaussianMRF().fit(Xb)
        with pytest.raises(DataFormatError, match="NaN"):
            SparseGaussianMRFCV().fit(Xb)
    m = SparseGaussianMRF(alpha=0.1).fit(X)
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with pytest.raises(DataFormatError, match="NaN"):
        m.score(Xb)
    with pytest.raises(DataFormatError, match=r"0 sample\(s\)"):
        SparseGaussianMRF().fit(np.empty((0, 3)))
    with pytest.raises(DataFormatError, match=r"0 feature\(s\)"):
        SparseGaussianMRF().fit(np.empty((5, 0)))


def test_constant_column_and_one_sample():
    X = _data()
    X[:, 4] = 7.0
    with pytest.raises(DataFormatError, match="column 4 is constant"):
        SparseGaussianMRF(alpha=0.1).fit(X)
    with pytest.raises(DataFormatError, match="column 4 is constant"):
        SparseGaussianMRFCV(alphas=3, cv=3).fit(X)
    # with a penalised diagonal the problem is bounded: K_44 = 1 / alpha exactly
    m = SparseGaussianMRF(alpha=0.1, penalize_diagonal=True, tol=1e-10).fit(X)
    assert m.converged_ and m.precision_[4, 4] == pytest.approx(10.0)
    assert np.all(m.precision_[4, np.arange(6) != 4] == 0)
    with pytest.raises(DataFormatError, match="need at least 2 samples.*got 1 sample"):
        SparseGaussianMRF().fit(X[:1])
    with pytest.raises(DataFormatError, match="1 sample"):
        SparseGaussianMRFCV().fit(X[:1])


def test_precomputed_covariance_checks():
    S = np.cov(_data().T, bias=True)
    with pytest.raises(DataFormatError, match="not symmetric"):
        SparseGaussianMRF(covariance="precomputed").fit(S + np.triu(np.full((6, 6), 1e-3), 1))
    bad = S.copy()
    bad[0, 1] = bad[1, 0] = 5 * np.sqrt(S[0, 0] * S[1, 1])
    with pytest.raises(DataFormatError, match="not positive semidefinite"):
        SparseGaussianMRF(covariance="precomputed").fit(bad)
    with pytest.raises(DataFormatError, match="not positive semidefinite"):
        SparseGaussianMRF().fit_covariance([[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]])
    with pytest.raises(DataFormatError, match="negative diagonal"):
        SparseGaussianMRF().fit_covariance(np.diag([1.0, -1.0]))
    with pytest.raises(DataFormatError, match="NaN"):
        SparseGaussianMRF().fit_covariance(np.full((2, 2), np.nan))
    zero = S.copy()
    zero[2, :] = zero[:, 2] = 0.0
    with pytest.raises(DataFormatError, match="column 2 is constant"):
        SparseGaussianMRF(covariance="precomputed").fit(zero)
    # a singular but positive semidefinite S (fewer samples than variables) is fine
    Xs = _data(m=4, n=6)
    Ss = np.cov(Xs.T, bias=True)
    assert np.linalg.matrix_rank(Ss) < 6
    m = SparseGaussianMRF(alpha=0.2, covariance="precomputed").fit(Ss)
    assert m.converged_ and np.linalg.eigvalsh(m.precision_)[0] > 0


def test_solve_gaussian_errors_and_callback():
    S = np.cov(_data().T, bias=True)
    with pytest.raises(ValueError, match="tol must be"):
        solve_gaussian(S, 0.1, tol=-1)
    with pytest.raises(ValueError, match="max_iter must be"):
        solve_gaussian(S, 0.1, max_iter=0)
    with pytest.raises(ValueError, match="solver must be one of"):
        solve_gaussian(S, 0.1, solver="glasso")
    seen = []
    res = solve_gaussian(S, 0.05, tol=1e-12, callback=lambda row: seen.append(row) or len(seen) >= 2)
    assert len(seen) == 2 and res.stop_reason == "callback" and not res.converged
    assert res.history == seen
