"""Parameters of the Gaussian estimators checked at fit before anything is sized by
them: the grid size, user-given CV splits, StARS's default subsample size on few
samples, RIC's rotations, n_jobs."""

import resource

import numpy as np
import pytest

from spargel.errors import ParameterError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV
from spargel.gaussian.path import alpha_grid
from spargel.gaussian.selection import SparseGaussianMRFSelect


def _X(m=30, p=4, seed=0):
    X = np.random.default_rng(seed).standard_normal((m, p))
    X[:, 1] += X[:, 0]
    return X


@pytest.mark.parametrize("est", [SparseGaussianMRFCV, SparseGaussianMRFSelect])
def test_a_huge_grid_size_is_refused_before_allocating(est):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ParameterError, match=r"alphas must be a grid size from 1 to 10000"):
        est(alphas=10 ** 9).fit(_X())
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100
    with pytest.raises(ParameterError, match="alphas must be a grid size"):
        est(alphas=0).fit(_X())
    with pytest.raises(ParameterError, match="n_alphas must be a grid size"):
        alpha_grid(np.eye(3), 10 ** 9)


@pytest.mark.parametrize("cv, message", [
    ([(np.arange(20), np.arange(20, 31))], "cv split 0: test index 30 is out of range for 30 samples"),
    ([(np.arange(10, 30), np.arange(10)), (np.arange(20), np.array([25, -1]))],
     "cv split 1: test index -1 is out of range"),
    ([(np.arange(5, 40), np.arange(5))], "cv split 0: train index 30 is out of range"),
    ([(np.arange(5, 30) + 0.5, np.arange(5))], "cv split 0: the train indices must be a 1-D array of integer"),
])
def test_user_cv_splits_out_of_range_are_a_clear_value_error(cv, message):
    with pytest.raises(ValueError, match=message):
        SparseGaussianMRFCV(alphas=3, cv=cv).fit(_X())


def test_user_cv_splits_as_boolean_masks_are_positions():
    X = _X()
    mask = np.zeros(30, dtype=bool)
    mask[:10] = True
    a = SparseGaussianMRFCV(alphas=3, cv=[(~mask, mask)]).fit(X)
    b = SparseGaussianMRFCV(alphas=3, cv=[(np.arange(10, 30), np.arange(10))]).fit(X)
    assert a.alpha_ == b.alpha_


def test_stars_on_three_samples_says_why():
    X = _X(m=3)
    with pytest.raises(ValueError, match=r"3 samples give a default subsample size of 2 .* subsample_size"):
        SparseGaussianMRFSelect("stars", alphas=3).fit(X)
    # four samples: the default (0.8 n = 3 rows) works
    SparseGaussianMRFSelect("stars", alphas=3, n_subsamples=3, random_state=0).fit(_X(m=4))


@pytest.mark.parametrize("params, name", [
    (dict(criterion="ric", rotations=[1.5]), "rotations"),
    (dict(criterion="ric", rotations=["2"]), "rotations"),
    (dict(n_jobs=0), "n_jobs"),
    (dict(n_jobs=-2), "n_jobs"),
    (dict(n_jobs=1.5), "n_jobs"),
    (dict(criterion="stars", n_subsamples=2.5), "n_subsamples"),
    (dict(criterion="ric", n_rotations=0), "n_rotations"),
    (dict(criterion="stars", subsample_size=4.5), "subsample_size"),
])
def test_select_refuses_bad_values_at_fit(params, name):
    with pytest.raises(ParameterError, match=rf"^{name} must be"):
        SparseGaussianMRFSelect(**params).fit(_X())


@pytest.mark.parametrize("est", [SparseGaussianMRF, SparseGaussianMRFCV])
@pytest.mark.parametrize("n_jobs", [0, -3, 2.0, True])
def test_n_jobs_zero_or_below_minus_one_is_refused(est, n_jobs):
    with pytest.raises(ParameterError, match=r"^n_jobs must be None, -1 or an integer >= 1"):
        est(n_jobs=n_jobs).fit(_X())


def test_integer_rotations_still_work():
    a = SparseGaussianMRFSelect("ric", rotations=[3, 7]).fit(_X())
    b = SparseGaussianMRFSelect("ric", rotations=np.array([3, 7], dtype=np.int32)).fit(_X())
    assert a.alpha_ == b.alpha_
