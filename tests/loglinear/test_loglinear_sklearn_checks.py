"""scikit-learn's estimator checks for LogLinearClassifier (every check that
``parametrize_with_checks`` yields; none skipped or expected to fail, apart from
``check_array_api_input``, which scikit-learn itself skips unless SCIPY_ARRAY_API is
set). scikit-learn is not a dependency of spargel, so the estimator does not inherit
``BaseEstimator``; scikit-learn's warning about that is silenced here."""

import warnings

import pytest

pytest.importorskip("sklearn", minversion="1.6")      # tags API
sklearn_checks = pytest.importorskip("sklearn.utils.estimator_checks")

from spargel import LogLinearClassifier  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*does not inherit from .*BaseEstimator")
    _parametrize = sklearn_checks.parametrize_with_checks([LogLinearClassifier(l1=0.1, l2=0.1, max_iter=200)])


@pytest.mark.filterwarnings("ignore:.*does not inherit from .*BaseEstimator")
@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
@_parametrize
def test_sklearn_compatible(estimator, check):
    check(estimator)
