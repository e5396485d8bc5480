"""The flat log-linear classifier against scikit-learn's LogisticRegression on the same
objective, and its input / output conventions."""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel import LogLinearClassifier


@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris
    return load_iris(return_X_y=True)


def test_l2_matches_sklearn_logistic_regression(iris):
    from sklearn.linear_model import LogisticRegression
    X, y = iris
    ours = LogLinearClassifier(solver="lbfgs", l1=0.0, l2=1.0, tol=0, gtol=1e-9, max_iter=3000).fit(X, y)
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=2e-4)
    np.testing.assert_allclose(ours.intercept_ - ours.intercept_.mean(),
                               ref.intercept_ - ref.intercept_.mean(), atol=2e-3)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-4)
    assert list(ours.classes_) == [0, 1, 2] and ours.classes_.dtype == y.dtype


def test_l1_is_sparse_and_optimal(iris):
    X, y = iris
    clf = LogLinearClassifier(l1=5.0, tol=0, gtol=1e-9, max_iter=3000).fit(sp.csr_matrix(X), y)
    coef = clf.coef_
    assert (coef == 0).sum() >= 4
    assert clf.score(X, y) > 0.9
    assert isinstance(coef, np.ndarray) and coef.shape == (3, 4)        # dense, as scikit-learn's


def test_dict_input_and_round_trip(tmp_path):
    X = [{"colour": "red", "size": 3.0}, {"colour": "blue", "size": 1.0},
         {"colour": "red", "size": 2.5}, {"colour": "blue", "size": 0.5}] * 3
    y = ["apple", "berry", "apple", "berry"] * 3
    clf = LogLinearClassifier(l1=0.1).fit(X, y)
    assert list(clf.predict(X[:4])) == y[:4]
    clf.save(tmp_path / "c.model")
    again = LogLinearClassifier.load(tmp_path / "c.model")
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X))
    assert "size" in clf.feature_names_ and set(clf.feature_names_) <= {"colour=red", "colour=blue", "size"}
    assert clf.coef_.shape == (2, len(clf.feature_names_))


def test_wrong_shapes_and_values(iris):
    X, y = iris
    clf = LogLinearClassifier(l1=1.0, max_iter=20).fit(X, y)
    with pytest.raises(ValueError, match="3 features"):
        clf.predict(X[:, :3])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LogLinearClassifier().fit(bad, y)
    with pytest.raises(ValueError, match="150 samples but y has 149"):
        LogLinearClassifier().fit(X, y[:-1])
