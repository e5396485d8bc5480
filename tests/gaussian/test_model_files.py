"""save / load of the Gaussian estimators (spargel's safe model format) and
``spargel gmrf --save-model``."""

import csv
import zipfile

import numpy as np
import pytest

from spargel.cli import main
from spargel.errors import ModelFileError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV
from spargel.gaussian.selection import SparseGaussianMRFSelect
from spargel.core.model_file import load_arrays, save_arrays


def _data(m=80, n=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.9 * X[:, 0]
    X[:, 2] += 0.7 * X[:, 1]
    return X


def _same_fit(a, b, X):
    for name in ("precision_", "covariance_", "location_", "edges_", "edge_weights_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("objective_", "duality_gap_", "n_iter_", "converged_", "stop_reason_",
                 "solver_", "n_components_", "n_features_in_"):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(np.array(a.costs_), np.array(b.costs_))   # NaN gaps too
    assert a.score(X) == b.score(X)
    assert a.get_params().keys() == b.get_params().keys()


def test_roundtrip_plain_with_a_penalty_matrix(tmp_path):
    X = _data()
    W = np.full((5, 5), 0.1)
    W[0, 1] = W[1, 0] = 0.0
    m = SparseGaussianMRF(alpha=W, tol=1e-9, mode="lars").fit(X)
    m.save(tmp_path / "m.model")
    # the file is a zip of .npy arrays and a JSON header, no pickle
    with zipfile.ZipFile(tmp_path / "m.model") as zf:
        assert all(name == "header" or name.endswith(".npy") for name in zf.namelist())
    back = SparseGaussianMRF.load(tmp_path / "m.model")
    _same_fit(m, back, X)
    np.testing.assert_array_equal(back.alpha, W)
    assert back.tol == 1e-9 and back.mode == "lars" and back.history_ == []


def test_roundtrip_cv_and_select(tmp_path):
    X = _data(seed=1)
    cv = SparseGaussianMRFCV(alphas=4, n_refinements=2, cv=3).fit(X)
    cv.save(tmp_path / "cv.model")
    back = SparseGaussianMRFCV.load(tmp_path / "cv.model")
    _same_fit(cv, back, X)
    assert back.alpha_ == cv.alpha_ and back.n_refinements == 2
    np.testing.assert_array_equal(back.alphas_, cv.alphas_)
    assert list(back.cv_results_) == list(cv.cv_results_)
    for k in cv.cv_results_:
        np.testing.assert_array_equal(back.cv_results_[k], cv.cv_results_[k])
    st = SparseGaussianMRFSelect("stars", alphas=4, n_subsamples=3, random_state=0).fit(X)
    st.save(tmp_path / "st.model")
    sb = SparseGaussianMRFSelect.load(tmp_path / "st.model")
    _same_fit(st, sb, X)
    np.testing.assert_array_equal(sb.edge_frequency_, st.edge_frequency_)
    np.testing.assert_array_equal(sb.criterion_scores_, st.criterion_scores_)
    assert sb.criterion == "stars" and sb.alpha_ == st.alpha_


class _Frame:
    """The duck-typed data frame the estimators read names from (no pandas needed)."""

    def __init__(self, values, columns):
        self.values, self.columns, self.shape = values, columns, values.shape

    def to_numpy(self):
        return self.values


def test_feature_names_are_kept(tmp_path):
    X = _Frame(_data(), list("abcde"))
    m = SparseGaussianMRF(alpha=0.1).fit(X)
    m.save(tmp_path / "m.model")
    back = SparseGaussianMRF.load(tmp_path / "m.model")
    assert list(back.feature_names_in_) == list("abcde")
    assert back.score(X) == m.score(X)


def test_bad_files_are_refused(tmp_path):
    X = _data()
    m = SparseGaussianMRF(alpha=0.1).fit(X)
    with pytest.raises(Exception, match="not fitted"):
        SparseGaussianMRF().save(tmp_path / "x.model")
    m.save(tmp_path / "m.model")
    with pytest.raises(ModelFileError, match="SparseGaussianMRF.load, not SparseGaussianMRFCV"):
        SparseGaussianMRFCV.load(tmp_path / "m.model")
    meta, arrays = load_arrays(tmp_path / "m.model", "gaussian-mrf")
    # a precision that is not positive definite (but symmetric and finite)
    bad = dict(arrays, precision=-np.eye(5))
    save_arrays(tmp_path / "b.model", "gaussian-mrf", meta, bad)
    with pytest.raises(ModelFileError, match="not positive definite"):
        SparseGaussianMRF.load(tmp_path / "b.model")
    asym = arrays["precision"].copy()
    asym[0, 1] += 1.0
    save_arrays(tmp_path / "c.model", "gaussian-mrf", meta, dict(arrays, precision=asym))
    with pytest.raises(ModelFileError, match="not symmetric"):
        SparseGaussianMRF.load(tmp_path / "c.model")
    save_arrays(tmp_path / "d.model", "gaussian-mrf", meta,
                dict(arrays, location=np.zeros(3)))
    with pytest.raises(ModelFileError, match="do not match"):
        SparseGaussianMRF.load(tmp_path / "d.model")
    # a damaged byte is caught by the checksums
    raw = bytearray((tmp_path / "m.model").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "e.model").write_bytes(bytes(raw))
    with pytest.raises(ModelFileError):
        SparseGaussianMRF.load(tmp_path / "e.model")
    # another kind of model file
    save_arrays(tmp_path / "f.model", "mrf", {}, {"x": np.zeros(2)})
    with pytest.raises(ModelFileError, match="not a 'gaussian-mrf' model"):
        SparseGaussianMRF.load(tmp_path / "f.model")


def test_cli_save_model(tmp_path, capsys):
    X = _data()
    f = tmp_path / "d.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"v{j}" for j in range(5)])
        w.writerows(X.tolist())
    rc = main(["gmrf", str(f), "--alpha", "0.1", "--save-model", str(tmp_path / "g.model"),
               "--quiet"])
    assert rc == 0
    back = SparseGaussianMRF.load(tmp_path / "g.model")
    ref = SparseGaussianMRF(alpha=0.1).fit(X)
    np.testing.assert_array_equal(back.precision_, ref.precision_)
    assert list(back.feature_names_in_) == [f"v{j}" for j in range(5)]    # the CSV header
    rc = main(["gmrf", str(f), "--cv", "3", "--n-alphas", "3", "--save-model",
               str(tmp_path / "cv.model"), "--quiet"])
    assert rc == 0 and SparseGaussianMRFCV.load(tmp_path / "cv.model").alpha_ > 0
    capsys.readouterr()
    rc = main(["gmrf", str(f), "--alpha", "0.1", "--save-model", str(f)])
    _, err = capsys.readouterr()
    assert rc == 2 and "is also the input file" in err
