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
    # newton-cg stops on the gradient (max |g| <= tol); lbfgs also stops on a relative
    # decrease of the objective, which in scikit-learn 1.3 with scipy 1.10 is still 4e-4
    # away from the optimum in the coefficients
    ref = LogisticRegression(C=1.0, solver="newton-cg", tol=1e-8, max_iter=1000).fit(X, y)
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


def test_binary_decision_function_is_the_log_odds_of_the_second_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 2] + 0.3 * rng.normal(size=60) > 0, "yes", "no")
    clf = LogLinearClassifier(l1=0.05, l2=0.1).fit(X, y)
    d = clf.decision_function(X)
    P = clf.predict_proba(X)
    assert d.shape == (60,) and list(clf.classes_) == ["no", "yes"]
    np.testing.assert_allclose(d, np.log(P[:, 1] / P[:, 0]), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(d > 0).astype(int)])
    # three classes: one column per class, argmax is the prediction
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    clf3 = LogLinearClassifier(l1=0.05).fit(X, y3)
    Z = clf3.decision_function(X)
    assert Z.shape == (60, 3)
    np.testing.assert_array_equal(clf3.predict(X), clf3.classes_[Z.argmax(axis=1)])


def test_prediction_changes_no_attribute_and_load_predicts_the_same(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4))
    y = (X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    clf = LogLinearClassifier(l1=0.1).fit(X, y)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(clf).items()}
    P = clf.predict_proba(X)
    clf.predict(X), clf.decision_function(X), clf.predict_log_proba(X), clf.coef_
    assert vars(clf).keys() == before.keys()
    for k, v in vars(clf).items():
        assert v is before[k] or (isinstance(v, np.ndarray) and np.array_equal(v, before[k])), k
    clf.save(tmp_path / "m.model")
    again = LogLinearClassifier.load(tmp_path / "m.model")
    np.testing.assert_allclose(again.predict_proba(X), P)
    np.testing.assert_allclose(again.coef_, clf.coef_)


def test_input_errors_are_explicit():
    from spargel import DataConversionWarning
    from spargel.errors import NonNumericDataError
    X = np.random.default_rng(2).normal(size=(12, 3))
    y = np.arange(12) % 2
    clf = LogLinearClassifier(l1=0.1)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.zeros(12, dtype=int))
    with pytest.raises(ValueError, match="requires y"):
        clf.fit(X, None)
    with pytest.raises(ValueError, match="zero for every sample"):
        clf.fit(X, y, sample_weight=np.zeros(12))
    with pytest.raises(ValueError, match="Complex data not supported"):
        clf.fit(X + 1j, y)
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        clf.fit(np.zeros((12, 0)), y)
    with pytest.raises(NonNumericDataError, match="must be numeric"):
        clf.fit(np.array([[1.0, "a"]] * 12, dtype=object), y)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = LogLinearClassifier(l1=0.1).fit(X, y[:, None])
    np.testing.assert_allclose(column.predict_proba(X), clf.fit(X, y).predict_proba(X))
    with pytest.raises(ValueError, match="Reshape your data"):
        clf.predict(X[0])
    with pytest.raises(ValueError, match="expecting 3 features"):
        clf.predict(X[:, :2])


def test_data_conversion_warning_is_scikit_learns_only_once_it_is_loaded():
    import subprocess
    import sys
    code = ("import sys, warnings, numpy as np\n"
            "from spargel.loglinear.labels import class_labels as _class_labels\n"
            "from spargel.errors import DataConversionWarning\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    _class_labels(np.array([[0], [1]]))\n"
            "assert 'sklearn' not in sys.modules and w[0].category is DataConversionWarning\n"
            "from sklearn.exceptions import DataConversionWarning as Sk\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    _class_labels(np.array([[0], [1]]))\n"
            "assert issubclass(w[0].category, Sk) and issubclass(w[0].category, DataConversionWarning)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


_WIDE = r"""
import sys, tracemalloc
import numpy as np, scipy.sparse as sp
from spargel import LogLinearClassifier
rng = np.random.default_rng(0)
n, d, nnz = 200, 2 ** 24, 2000
X = sp.csr_matrix((rng.normal(size=nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))), shape=(n, d))
y = rng.integers(0, 3, n)
small = sp.random(n, 50, density=0.2, format="csr", random_state=0)   # compiles the same kernels: not measured
LogLinearClassifier(l1=0.1, feature_space=sys.argv[1], max_iter=2).fit(small, y).predict_proba(small)
tracemalloc.start()                         # numpy's and Python's allocations from here on
m = LogLinearClassifier(l1=0.1, feature_space=sys.argv[1]).fit(X, y)
P = m.predict_proba(X)
peak = tracemalloc.get_traced_memory()[1] // 2 ** 20      # before the reference below
tracemalloc.stop()
used = np.unique(X.indices)
Xu = sp.csr_matrix((X.data, np.searchsorted(used, X.indices), X.indptr), shape=(n, len(used)))
ref = LogLinearClassifier(l1=0.1, feature_space=sys.argv[1]).fit(Xu, y)
print(peak, abs(P - ref.predict_proba(Xu)).max(), abs(m.objective_ - ref.objective_) / ref.objective_,
      m.n_features_in_)
"""


@pytest.mark.parametrize("feature_space", ["observed", "full"])
def test_wide_sparse_input_in_bounded_memory(feature_space):
    """200 x 2^24 with 2,000 non-zeros: nothing is sized by the declared width (no name
    per column, no weight per unused column); the fit is that of the used columns."""
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WIDE, feature_space], capture_output=True, text=True,
                         env=dict(os.environ), timeout=600)
    assert out.returncode == 0, out.stderr
    peak_mb, diff, rel, width = out.stdout.split()
    assert int(peak_mb) <= 500                      # MiB allocated by the fit and prediction; was about 25 GB
    assert float(diff) < 1e-12 and float(rel) < 1e-12 and int(width) == 2 ** 24


def test_sparse_input_with_empty_trailing_rows_and_one_used_column():
    import scipy.sparse as sp
    X = sp.csr_matrix((np.array([1.0, -1.0, 2.0]), (np.array([0, 1, 2]), np.array([3, 3, 3]))), shape=(6, 10))
    y = np.array([0, 1, 0, 1, 0, 1])
    m = LogLinearClassifier(l1=0.01).fit(X, y)
    assert m.n_features_in_ == 10 and m.predict_proba(X).shape == (6, 2)


def test_unused_columns_get_zero_weights(iris):
    X, y = iris
    Z = np.zeros((len(y), 7))
    Z[:, [1, 2, 4, 6]] = X
    a = LogLinearClassifier(l1=0.5, l2=0.1).fit(Z, y)
    b = LogLinearClassifier(l1=0.5, l2=0.1).fit(X, y)
    assert a.n_features_in_ == 7 and a.coef_.shape == (3, 7)
    np.testing.assert_array_equal(a.coef_[:, [0, 3, 5]], 0.0)
    np.testing.assert_allclose(a.coef_[:, [1, 2, 4, 6]], b.coef_, rtol=1e-12, atol=1e-12)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(X), atol=1e-12)


def _forged(tmp_path, clf, edit):
    from spargel.core import model_file as io
    p = tmp_path / "m.model"
    clf.save(p)
    meta, arrays = io.load_arrays(p, "loglinear")
    edit(meta)
    io.save_arrays(p, "loglinear", meta, arrays)
    return p


def test_model_file_widths_and_label_dtypes(tmp_path, iris):
    from spargel.errors import ModelFileError
    X, y = iris
    clf = LogLinearClassifier(l1=0.5).fit(X, y)
    # a declared width of 10^12: a valid (very wide) model, kept in memory by its used columns
    p = _forged(tmp_path, clf, lambda m: m.update(n_features_in=10 ** 12))
    wide = LogLinearClassifier.load(p)
    Xw = sp.csr_matrix(X, shape=X.shape).tocoo()
    Xw = sp.csr_matrix((Xw.data, (Xw.row, Xw.col)), shape=(X.shape[0], 10 ** 12))
    np.testing.assert_allclose(wide.predict_proba(Xw), clf.predict_proba(X), atol=1e-12)
    for bad, match in [(True, "n_features_in"), ("4", "n_features_in"), (2 ** 60, "n_features_in"),
                       (0, "n_features_in"), (3, "not a column")]:
        p = _forged(tmp_path, clf, lambda m: m.update(n_features_in=bad))
        with pytest.raises(ModelFileError, match=match):
            LogLinearClassifier.load(p)
    for dt in ("|b1", "<f8", "<M8[s]", "|O", 5):      # "0", "1", "2" are neither booleans nor floats' text
        p = _forged(tmp_path, clf, lambda m: m.update(label_dtype=dt))
        with pytest.raises(ModelFileError, match="label"):
            LogLinearClassifier.load(p)
    p = _forged(tmp_path, clf, lambda m: m.update(label_dtype="<i4"))      # another integer width
    assert LogLinearClassifier.load(p).classes_.tolist() == [0, 1, 2]
    yb = y == 2                                                             # real boolean labels
    cb = LogLinearClassifier(l1=0.5).fit(X, yb)
    p = tmp_path / "b.model"
    cb.save(p)
    back = LogLinearClassifier.load(p)
    assert back.classes_.dtype == bool and back.classes_.tolist() == [False, True]
    np.testing.assert_array_equal(back.predict(X), cb.predict(X))
