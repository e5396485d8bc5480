"""Choosing alpha on the from-data path: SparseGaussianMRFCV and SparseGaussianMRFSelect
with ``covariance='from_data'`` choose what the dense path chooses, from the data and
sparse precisions only (no p x p array)."""

import csv
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.cli import main
from spargel.errors import ParameterError
from spargel.gaussian.estimator import (SparseGaussianMRF, SparseGaussianMRFCV,
                                        _log_likelihood)
from spargel.gaussian.from_data import ComponentTooLargeError, _Columns, solve_from_data
from spargel.gaussian.from_data_select import (alpha_max_from_data, held_out_loglik,
                                               ric_alpha_by_slabs, sparse_logdet)
from spargel.gaussian.objective import empirical_covariance
from spargel.gaussian.path import alpha_max_for
from spargel.gaussian.select import ric_alpha, standardize
from spargel.gaussian.selection import SparseGaussianMRFSelect

from gmrf_helpers import chain_samples


def _groups(n, p, seed=0, size=10, rho=0.7):
    """p variables in chains of ``size`` (independent chains: several components)."""
    return chain_samples(n, p, seed, rho, size)


def _close_precision(fd, dense):
    K = fd.toarray()
    assert np.max(np.abs(K - dense)) <= 1e-5 * np.max(np.abs(dense))


# -- the pieces against their dense definitions ---------------------------------------------

def test_logdet_and_held_out_loglik_match_dense():
    rng = np.random.default_rng(1)
    p = 30
    A = sp.random(p, p, density=0.08, random_state=2).toarray()
    K = A + A.T + np.diag(np.abs(A).sum(axis=1) + np.abs(A).sum(axis=0) + 0.5)   # dominant
    Ks = sp.csr_matrix(K)
    ld, ok = sparse_logdet(Ks)
    assert ok and ld == pytest.approx(np.linalg.slogdet(K)[1], rel=1e-12)
    Xc = rng.standard_normal((7, p))
    ref = _log_likelihood(Xc.T @ Xc / 7, K)
    assert held_out_loglik(Xc, Ks) == pytest.approx(ref, rel=1e-12)
    bad = K.copy()
    bad[3, 3] = -1.0
    assert sparse_logdet(sp.csr_matrix(bad)) == (-np.inf, False)
    assert held_out_loglik(Xc, sp.csr_matrix(bad)) == -np.inf


def test_alpha_max_and_ric_by_slabs():
    X = _groups(25, 47, seed=3)
    S = empirical_covariance(X)
    for block_bytes in (8 * 47 * 3, 2**26):                 # 3 rows per slab, or one slab
        assert alpha_max_from_data(_Columns(X, False), block_bytes) == \
            pytest.approx(alpha_max_for(S), rel=1e-13)
        Z = standardize(X)
        rot = [1, 5, 12, 24, 25, 31]
        assert ric_alpha_by_slabs(Z, rot, block_bytes) == pytest.approx(ric_alpha(Z, rot),
                                                                         rel=1e-13)


def test_one_screening_pass_per_path_gives_the_same_fits():
    from spargel.gaussian.from_data import solve_columns
    from spargel.gaussian.from_data_select import fit_path

    X = _groups(25, 47, seed=6)
    cols = _Columns(X, False)
    alphas = [1.3, 0.9, 0.7, 0.55]
    for res, a in zip(fit_path(cols, alphas, False, {}), alphas):
        one = solve_columns(cols, a)
        assert res.n_components == one.n_components
        assert (res.precision != one.precision).nnz == 0
        assert res.objective == one.objective


# -- the estimators: the dense path's choice ------------------------------------------------

@pytest.mark.parametrize("kw", [dict(alphas=6, alpha_min_ratio=0.3, cv=3),
                                dict(alphas=4, n_refinements=2, alpha_min_ratio=0.25, cv=4,
                                     center_test="test"),
                                dict(alphas=[1.5, 0.9, 0.6, 0.45], cv=3, random_state=2,
                                     penalize_diagonal=True)])
def test_cv_same_choice_as_dense(kw):
    X = _groups(30, 50, seed=0)
    dense = SparseGaussianMRFCV(**kw).fit(X)
    fd = SparseGaussianMRFCV(covariance="from_data", **kw).fit(X)
    assert sp.issparse(fd.precision_) and isinstance(dense.precision_, np.ndarray)
    # the same grid point (alpha_max from slabs of S: equal to the last bits or so)
    assert fd.alpha_ == pytest.approx(dense.alpha_, rel=1e-12)
    np.testing.assert_allclose(fd.alphas_, dense.alphas_, rtol=1e-12)
    _close_precision(fd.precision_, dense.precision_)
    assert fd.n_components_ == dense.n_components_
    # every held-out score is the dense one to the solvers' tolerance (-inf where S_train
    # is singular, the alpha = 0 row here: fewer samples than variables); at the smallest
    # alphas (nearly singular problems) the scores differ by a few 1e-6 relative: the
    # duality gap bounds the precision's error only through the problem's conditioning
    assert list(fd.cv_results_) == list(dense.cv_results_)
    for key in fd.cv_results_:
        if key.startswith("split") or key == "mean_test_score":
            a, b = fd.cv_results_[key], dense.cv_results_[key]
            assert np.array_equal(np.isfinite(a), np.isfinite(b)) and b[-1] == -np.inf
            np.testing.assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], rtol=2e-5)
    assert fd.score(X) == pytest.approx(dense.score(X), rel=1e-6)


def test_cv_more_samples_than_variables():
    """With n > p the alpha = 0 row is finite (inv(S_train)), as on the dense path."""
    X = _groups(90, 12, seed=8, size=4)
    kw = dict(alphas=5, alpha_min_ratio=0.1, cv=3)
    dense = SparseGaussianMRFCV(**kw).fit(X)
    fd = SparseGaussianMRFCV(covariance="from_data", **kw).fit(X)
    assert fd.alpha_ == pytest.approx(dense.alpha_, rel=1e-12)     # the same grid point
    _close_precision(fd.precision_, dense.precision_)
    a, b = fd.cv_results_["mean_test_score"], dense.cv_results_["mean_test_score"]
    assert np.isfinite(b[-1]) and a[-1] == pytest.approx(b[-1], rel=1e-12)
    np.testing.assert_allclose(a, b, rtol=1e-6)          # the solvers: 1e-10 relative gap


@pytest.mark.parametrize("criterion", ["ebic", "stars", "ric"])
def test_select_same_choice_as_dense(criterion):
    X = _groups(28, 44, seed=1, size=11)
    # gamma = 0 (BIC): with 28 samples EBIC's default gamma keeps the empty graph
    kw = dict(criterion=criterion, alphas=6, n_subsamples=4, random_state=0, gamma=0.0,
              ric_data="standardized",       # (the raw data's RIC alpha leaves no edge here)
              tol=1e-10, stars_full_path=True)   # (the from-data path's tolerance, whole path)
    dense = SparseGaussianMRFSelect(**kw).fit(X)
    fd = SparseGaussianMRFSelect(covariance="from_data", **kw).fit(X)
    assert sp.issparse(fd.precision_)
    assert fd.alpha_ == pytest.approx(dense.alpha_, rel=1e-12)
    np.testing.assert_allclose(fd.alphas_, dense.alphas_, rtol=1e-12)
    _close_precision(fd.precision_, dense.precision_)
    _close_precision(fd.covariance_, dense.covariance_)
    np.testing.assert_array_equal(fd.edges_path_, dense.edges_path_)
    np.testing.assert_allclose(fd.loglik_path_, dense.loglik_path_, rtol=1e-6)
    if criterion == "ebic":
        np.testing.assert_allclose(fd.criterion_scores_, dense.criterion_scores_, rtol=1e-6)
        assert int(np.argmin(fd.criterion_scores_)) == int(np.argmin(dense.criterion_scores_))
    if criterion == "stars":
        np.testing.assert_allclose(fd.criterion_scores_, dense.criterion_scores_, atol=1e-12)
        assert sp.issparse(fd.edge_frequency_)
        np.testing.assert_array_equal(fd.edge_frequency_.toarray(), dense.edge_frequency_)
    if criterion == "ric":
        np.testing.assert_array_equal(fd.rotations_, dense.rotations_)
    assert fd.n_components_ == dense.n_components_ and len(fd.edges_) == len(dense.edges_) > 0


def test_refusals():
    X = _groups(20, 30)
    with pytest.raises(ParameterError, match="covariance must be"):
        SparseGaussianMRFCV(covariance="precomputed").fit(X)
    with pytest.raises(ParameterError, match="covariance must be"):
        SparseGaussianMRFSelect(covariance="precomputed").fit(X)
    with pytest.raises(ParameterError, match="block penalties"):
        SparseGaussianMRFCV(covariance="from_data", blocks=np.arange(30) // 3).fit(X)
    # a grid reaching a component larger than allowed: the error names the alpha
    with pytest.raises(ComponentTooLargeError, match="splits every component"):
        SparseGaussianMRFCV(covariance="from_data", alphas=4, cv=3, max_component=5).fit(X)


def test_save_load_from_data_cv_and_stars(tmp_path):
    X = _groups(30, 50, seed=4)
    cv = SparseGaussianMRFCV(covariance="from_data", alphas=4, alpha_min_ratio=0.3,
                             cv=3).fit(X)
    cv.save(tmp_path / "cv.model")
    back = SparseGaussianMRFCV.load(tmp_path / "cv.model")
    assert (back.precision_ != cv.precision_).nnz == 0 and back.alpha_ == cv.alpha_
    assert back.score(X) == cv.score(X) and back.covariance == "from_data"
    for k in cv.cv_results_:
        np.testing.assert_array_equal(back.cv_results_[k], cv.cv_results_[k])
    st = SparseGaussianMRFSelect("stars", covariance="from_data", alphas=4, n_subsamples=3,
                                 random_state=0).fit(X)
    st.save(tmp_path / "st.model")
    sb = SparseGaussianMRFSelect.load(tmp_path / "st.model")
    assert sp.issparse(sb.edge_frequency_)
    assert (sb.edge_frequency_ != st.edge_frequency_).nnz == 0
    assert (sb.precision_ != st.precision_).nnz == 0 and sb.alpha_ == st.alpha_


def test_cli_from_data_cv(tmp_path, capsys):
    X = _groups(30, 50, seed=5)
    f = tmp_path / "w.csv"
    with open(f, "w", newline="") as fh:
        csv.writer(fh).writerows(X.tolist())
    rc = main(["gmrf", str(f), "--from-data", "--cv", "3", "--n-alphas", "4",
               "--alpha-min-ratio", "0.3", "--save-model", str(tmp_path / "m.model"),
               "--out-edges", str(tmp_path / "e.csv"), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    ref = SparseGaussianMRFCV(covariance="from_data", alphas=4, alpha_min_ratio=0.3,
                              cv=3).fit(X)
    back = SparseGaussianMRFCV.load(tmp_path / "m.model")
    assert back.alpha_ == ref.alpha_ and (back.precision_ != ref.precision_).nnz == 0
    rows = list(csv.DictReader(open(tmp_path / "e.csv")))
    assert len(rows) == len(ref.edges_)
    rc = main(["gmrf", str(f), "--cv", "3", "--alpha-min-ratio", "1.5"])
    assert rc == 2 and "--alpha-min-ratio" in capsys.readouterr().err


# -- memory: p = 2,000, n = 50 -------------------------------------------------------------

def _peak(fit):
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return model, peak


def _split_alpha(X, row_sets, assume_centered=False):
    """The smallest alpha at which every screened component of every row set's
    covariance has at most 30 variables (the from-data refusal names it)."""
    out = 0.0
    for rows in row_sets:
        with pytest.raises(ComponentTooLargeError) as info:
            solve_from_data(X[rows], 0.01, max_component=30, assume_centered=assume_centered)
        out = max(out, info.value.split_alpha)
    return out


def test_selection_never_forms_a_dense_matrix():
    p, n = 2000, 50
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n, p))
    for j in range(1, p):
        X[:, j] += 0.6 * X[:, j - 1]
    a = _split_alpha(X, [np.arange(n)] + [np.setdiff1d(np.arange(n), f)
                                          for f in np.array_split(np.arange(n), 3)])
    solve_from_data(X[:, :30], a)                  # kernels compiled / loaded first
    alphas = [2.0 * a, 1.4 * a, 1.1 * a]
    # one dense p x p float64 array is 8 p^2 bytes; the fits hold the data, slabs of a
    # sixteenth of S for the screening and small sparse results: about 0.2 of it
    # 'auto' takes the from-data path at p = 2,000 with n < p
    cv, peak = _peak(lambda: SparseGaussianMRFCV(covariance="auto", alphas=alphas,
                                                 cv=3).fit(X))
    assert sp.issparse(cv.precision_) and cv.n_components_ > 100 and len(cv.edges_) > 0
    assert peak < 0.5 * 8 * p * p, peak / (8 * p * p)
    print(f"cv: peak {peak / (8 * p * p):.3f} x 8 p^2 bytes")
    # the selection estimators work on the correlation matrix R = Z^T Z / (n - 1)
    rng = np.random.default_rng(0)                 # StARS's two subsamples of 0.8 n rows
    subs = [np.sort(rng.choice(n, size=40, replace=False)) for _ in range(2)]
    r = max(_split_alpha(standardize(X[idx]), [np.arange(len(idx))], True) * len(idx) /
            (len(idx) - 1) for idx in [np.arange(n)] + subs)
    ralphas = [2.0 * r, 1.5 * r, 1.2 * r]
    for criterion in ("ebic", "stars"):
        sel, peak = _peak(lambda: SparseGaussianMRFSelect(
            criterion, covariance="auto", alphas=ralphas, n_subsamples=2,
            random_state=0).fit(X))
        assert sp.issparse(sel.precision_) and sel.alpha_ in ralphas
        assert peak < 0.5 * 8 * p * p, (criterion, peak / (8 * p * p))
        print(f"{criterion}: peak {peak / (8 * p * p):.3f} x 8 p^2 bytes")
    # the same model as a plain from-data fit at the chosen alpha
    one = SparseGaussianMRF(alpha=cv.alpha_, covariance="from_data").fit(X)
    assert (one.precision_ != cv.precision_).nnz == 0


def test_stars_threads_give_the_same_result():
    X = _groups(28, 44, seed=2, size=11)
    kw = dict(covariance="from_data", alphas=5, n_subsamples=4, random_state=3)
    one = SparseGaussianMRFSelect("stars", **kw).fit(X)
    two = SparseGaussianMRFSelect("stars", n_jobs=2, **kw).fit(X)
    assert one.alpha_ == two.alpha_
    np.testing.assert_array_equal(one.criterion_scores_, two.criterion_scores_)
    assert (one.edge_frequency_ != two.edge_frequency_).nnz == 0
    assert (one.precision_ != two.precision_).nnz == 0
