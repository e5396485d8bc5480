"""save / load of the Gaussian estimators (spargel's safe model format) and
``spargel gmrf --save-model``."""

import csv
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.cli import main
from spargel.errors import ModelFileError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV
from spargel.gaussian.selection import SparseGaussianMRFSelect
from spargel.core.model_file import load_arrays, save_arrays
from spargel.gaussian.sparse_file import csr_arrays

from gmrf_helpers import chain_samples


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


# -- models fitted on the from-data path (sparse precision / covariance) -------------------

def _wide(seed=0):
    """A chain of 60 variables with 20 samples: several screened components."""
    return chain_samples(20, 60, seed)


def _same_csr(a, b):
    assert sp.issparse(b) and b.shape == a.shape
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)


def test_roundtrip_from_data(tmp_path):
    X = _wide()
    m = SparseGaussianMRF(alpha=0.9, covariance="from_data").fit(X)
    assert sp.issparse(m.precision_) and 1 < m.n_components_ < 60
    m.save(tmp_path / "w.model")
    # the file holds the CSR arrays, no p x p array
    meta, arrays = load_arrays(tmp_path / "w.model", "gaussian-mrf")
    assert meta["sparse"] == ["precision", "covariance"]
    assert max(a.size for a in arrays.values()) < 60 * 60 / 2
    back = SparseGaussianMRF.load(tmp_path / "w.model")
    _same_csr(m.precision_, back.precision_)
    _same_csr(m.covariance_, back.covariance_)
    _same_csr(m.precision_, back.get_precision())
    for name in ("location_", "edges_", "edge_weights_"):
        np.testing.assert_array_equal(getattr(m, name), getattr(back, name))
    for name in ("objective_", "duality_gap_", "n_iter_", "converged_", "stop_reason_",
                 "solver_", "n_components_", "n_features_in_", "n_samples_"):
        assert getattr(m, name) == getattr(back, name), name
    np.testing.assert_array_equal(np.array(m.costs_), np.array(back.costs_))
    Xnew = _wide(seed=5)
    assert back.score(X) == m.score(X) and back.score(Xnew) == m.score(Xnew)
    assert back.covariance == "from_data" and back.get_params() == m.get_params()
    # the loaded model scores like the dense model of the same problem
    dense = SparseGaussianMRF(alpha=0.9).fit(X)
    assert back.score(Xnew) == pytest.approx(dense.score(Xnew), rel=1e-8)


def test_roundtrip_from_data_singletons_only(tmp_path):
    X = _wide(seed=2)
    m = SparseGaussianMRF(alpha=50.0, covariance="from_data").fit(X)    # no edges at all
    assert m.n_components_ == 60 and len(m.edges_) == 0
    m.save(tmp_path / "s.model")
    back = SparseGaussianMRF.load(tmp_path / "s.model")
    _same_csr(m.precision_, back.precision_)
    assert back.edges_.shape == (0, 2) and back.score(X) == m.score(X)


def _repeat_in_a_row(ptr, ind):
    """The column indices with the second entry of the first row of two or more
    entries set to the first."""
    r = int(np.flatnonzero(np.diff(ptr) >= 2)[0])
    out = ind.copy()
    out[ptr[r] + 1] = out[ptr[r]]
    return out


def _forged(tmp_path, name, meta, arrays, **changes):
    save_arrays(tmp_path / name, "gaussian-mrf", meta, dict(arrays, **changes))
    return tmp_path / name


def test_forged_sparse_files_are_refused(tmp_path):
    X = _wide(seed=3)
    m = SparseGaussianMRF(alpha=0.9, covariance="from_data").fit(X)
    m.save(tmp_path / "w.model")
    meta, a = load_arrays(tmp_path / "w.model", "gaussian-mrf")
    ptr, ind, val = a["precision_indptr"], a["precision_indices"], a["precision_data"]
    cases = {
        # a forged offset past the end: no read beyond the arrays
        "offset past the end": dict(precision_indptr=np.r_[ptr[:-1], ptr[-1] + 10**9]),
        "decreasing offsets": dict(precision_indptr=np.r_[0, ptr[2], ptr[1], ptr[3:]]),
        "too few offsets": dict(precision_indptr=ptr[:-1]),
        "index out of range": dict(precision_indices=np.r_[ind[:-1], 10**9].astype(ind.dtype)),
        "negative index": dict(precision_indices=np.r_[-1, ind[1:]].astype(ind.dtype)),
        "repeated index": dict(precision_indices=_repeat_in_a_row(ptr, ind)),
        "values short": dict(precision_data=val[:-1]),
        "non-finite": dict(precision_data=np.r_[np.nan, val[1:]]),
        "float offsets": dict(precision_indptr=ptr.astype(np.float64)),
        "negative definite": dict(precision_data=-val),
    }
    messages = {"offset past the end": "row offsets", "decreasing offsets": "row offsets",
                "too few offsets": "row offsets", "index out of range": "column index",
                "negative index": "column index", "repeated index": "repeated",
                "values short": "values for", "non-finite": "non-finite",
                "float offsets": "wrong type", "negative definite": "positive definite"}
    for label, change in cases.items():
        f = _forged(tmp_path, "f.model", meta, a, **change)
        with pytest.raises(ModelFileError, match=messages[label]) as info:
            SparseGaussianMRF.load(f)
        assert "f.model" in str(info.value), label
    # an asymmetric precision
    K = m.precision_.tolil()
    i, j = m.edges_[0]
    K[i, j] += 1.0
    f = _forged(tmp_path, "g.model", meta, a, **csr_arrays("precision", K.tocsr()))
    with pytest.raises(ModelFileError, match="not symmetric"):
        SparseGaussianMRF.load(f)
    # a pattern whose components would need dense blocks larger than the file (a chain
    # through all p variables: 3p entries, a p x p Cholesky) is checked by a sparse
    # factor, as the sparse path's models are: positive definite loads, else refused
    p = 60
    diag = sp.identity(p, format="csr")
    for off, ok in ((-0.1, True), (-0.6, False)):
        chain = sp.diags([np.full(p - 1, off), np.full(p, 1.0), np.full(p - 1, off)],
                         [-1, 0, 1], format="csr")
        f = _forged(tmp_path, "h.model", meta, a, **csr_arrays("precision", chain),
                    **csr_arrays("covariance", diag))
        if ok:
            assert abs(SparseGaussianMRF.load(f).precision_ - chain).max() == 0
        else:
            with pytest.raises(ModelFileError, match="not positive definite"):
                SparseGaussianMRF.load(f)
    # a sparse pattern whose factor would be far larger than the file (a random graph,
    # whose fill no ordering keeps small) is refused before the factor is allocated
    p = 20000
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, p, 3 * p), rng.integers(0, p, 3 * p)
    keep = i != j
    R = sp.coo_matrix((np.full(keep.sum(), -0.01), (i[keep], j[keep])), shape=(p, p))
    R = (R + R.T + sp.identity(p)).tocsr()
    R.sum_duplicates()
    R.sort_indices()
    a2 = dict(a, location=np.zeros(p))
    f = _forged(tmp_path, "r.model", meta, a2, **csr_arrays("precision", R),
                **csr_arrays("covariance", sp.identity(p, format="csr")))
    with pytest.raises(ModelFileError, match="far larger than the file"):
        SparseGaussianMRF.load(f)
    # the sparse list must name real matrices
    for bad in (["precision"], ["precision", "covariance", "other"], "precision", [1]):
        f = _forged(tmp_path, "i.model", dict(meta, sparse=bad), a)
        with pytest.raises(ModelFileError, match="sparse matrices"):
            SparseGaussianMRF.load(f)


def test_damaged_sparse_files_are_refused(tmp_path):
    """Flipped bits and truncations of a from-data model: every load either gives the
    same model or raises ModelFileError naming the file, never another exception."""
    import random
    import tracemalloc

    X = _wide(seed=4)
    m = SparseGaussianMRF(alpha=0.9, covariance="from_data").fit(X)
    m.save(tmp_path / "w.model")
    raw = (tmp_path / "w.model").read_bytes()
    rng = random.Random(37)
    path = tmp_path / "damaged.model"
    refused = same = 0
    for k in range(160):
        b = bytearray(raw)
        if k < 120:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        else:
            b = b[:rng.randrange(len(b))]
        path.write_bytes(bytes(b))
        tracemalloc.start()
        try:
            try:
                back = SparseGaussianMRF.load(path)
            except ModelFileError as exc:
                assert "damaged.model" in str(exc) and "\n" not in str(exc)
                refused += 1
                continue
            finally:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            _same_csr(m.precision_, back.precision_)       # a flip in unused zip fields
            same += 1
        finally:
            assert peak < 16 * 2**20, peak
    assert refused > 100 and refused + same == 160


def test_cli_from_data_save_model(tmp_path, capsys):
    X = _wide(seed=6)
    f = tmp_path / "w.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"g{j}" for j in range(X.shape[1])])
        w.writerows(X.tolist())
    rc = main(["gmrf", str(f), "--alpha", "0.9", "--from-data", "--save-model",
               str(tmp_path / "w.model"), "--quiet"])
    assert rc == 0
    capsys.readouterr()
    back = SparseGaussianMRF.load(tmp_path / "w.model")
    ref = SparseGaussianMRF(alpha=0.9, covariance="from_data").fit(X)
    _same_csr(ref.precision_, back.precision_)
    assert list(back.feature_names_in_) == [f"g{j}" for j in range(X.shape[1])]
