"""scikit-learn's estimator checks for the Gaussian MRF estimators.

Every check of ``parametrize_with_checks`` runs; none is skipped or expected
to fail. (Checks that need pandas, such as the data-frame column-name checks,
skip themselves when pandas is not installed.)
"""

import pytest

sklearn_checks = pytest.importorskip("sklearn.utils.estimator_checks")

from spargel.estimators.gaussian import SparseGaussianMRF, SparseGaussianMRFCV  # noqa: E402

# small grids keep the CV estimator's checks fast
_ESTIMATORS = [SparseGaussianMRF(alpha=0.05), SparseGaussianMRFCV(alphas=3, cv=3)]


@sklearn_checks.parametrize_with_checks(_ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
