"""scikit-learn's estimator checks for the Gaussian MRF estimators (and CONCORD).

Every check that ``parametrize_with_checks`` yields runs, and none is skipped
or marked as expected to fail. scikit-learn itself skips
``check_array_api_input`` unless the environment variable SCIPY_ARRAY_API is
set (it tests array-API namespaces, which these estimators do not claim to
support). The estimators do not inherit from ``sklearn.base.BaseEstimator``
(scikit-learn is not a dependency of spargel); scikit-learn's warning about
that is silenced here.
"""

import warnings

import pytest

pytest.importorskip("sklearn", minversion="1.6")      # tags API
sklearn_checks = pytest.importorskip("sklearn.utils.estimator_checks")

from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV  # noqa: E402
from spargel.gaussian.selection import Nonparanormal, SparseGaussianMRFSelect  # noqa: E402
from spargel.gaussian.concord import Concord  # noqa: E402

# small grids keep the CV and selection estimators' checks fast
_ESTIMATORS = [SparseGaussianMRF(alpha=0.05), SparseGaussianMRFCV(alphas=3, cv=3),
               SparseGaussianMRFSelect("ebic", alphas=3),
               SparseGaussianMRFSelect("stars", alphas=3, n_subsamples=2),
               SparseGaussianMRFSelect("ric"), Nonparanormal(), Nonparanormal("truncation"),
               Concord(alpha=0.3)]
# (Nonparanormal("skeptic") returns a (p, p) matrix, not transformed rows: the
# transformer checks do not apply to it)

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*does not inherit from .*BaseEstimator")
    _parametrize = sklearn_checks.parametrize_with_checks(_ESTIMATORS)


@pytest.mark.filterwarnings("ignore:.*does not inherit from .*BaseEstimator")
@_parametrize
def test_sklearn_compatible(estimator, check):
    check(estimator)
