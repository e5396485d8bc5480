"""The from-data path (``covariance='from_data'``): screening and component blocks
computed from X, never the p x p covariance; the same precision as the dense path."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from spargel.errors import SpargelError
from spargel.gaussian.estimator import SparseGaussianMRF
from spargel.gaussian.from_data import (ComponentTooLargeError, _Columns, screen_from_data,
                                        solve_from_data)
from spargel.gaussian.objective import empirical_covariance, penalty_matrix, primal_objective

from gmrf_helpers import chain_samples


def _largest_component(X, alpha):
    p = X.shape[1]
    i, j, _ = screen_from_data(_Columns(X, False), alpha)
    g = sp.coo_matrix((np.ones(i.size), (i, j)), shape=(p, p))
    _, labels = connected_components(g, directed=False)
    return int(np.bincount(labels).max())


@pytest.mark.parametrize("penalize_diagonal", [False, True])
def test_same_precision_as_dense(penalize_diagonal):
    X = chain_samples(20, 60)
    S = empirical_covariance(X)
    split = 0
    for alpha in (1.2, 0.9, 0.6, 0.3):
        dense = SparseGaussianMRF(alpha=alpha, penalize_diagonal=penalize_diagonal).fit(X)
        fd = SparseGaussianMRF(alpha=alpha, penalize_diagonal=penalize_diagonal,
                               covariance="from_data").fit(X)
        assert sp.issparse(fd.precision_) and sp.issparse(fd.covariance_)
        K = fd.precision_.toarray()
        assert fd.n_components_ == dense.n_components_
        split += 1 < fd.n_components_ < 60
        # same problem, same solution (both certified to a 1e-10 relative gap)
        assert np.max(np.abs(K - dense.precision_)) <= 1e-6 * np.max(np.abs(dense.precision_))
        # the reported objective is the full problem's objective at the returned K
        f = primal_objective(K, S, penalty_matrix(alpha, 60, penalize_diagonal))
        assert fd.objective_ == pytest.approx(f, rel=1e-10)
        assert fd.duality_gap_ <= 1e-8 * abs(fd.objective_)
        # the covariance is the inverse of the precision
        np.testing.assert_allclose(fd.covariance_.toarray() @ K, np.eye(60), atol=1e-8)
        assert fd.score(X) == pytest.approx(dense.score(X), rel=1e-8)
        big = np.abs(dense.precision_[np.triu_indices(60, 1)]) > 1e-6
        assert len(fd.edges_) == int(big.sum())
    assert split >= 2                   # several alphas gave several non-trivial components


def test_threads_give_the_same_result():
    X = chain_samples(20, 60, seed=4)
    one = SparseGaussianMRF(alpha=0.9, covariance="from_data").fit(X)
    two = SparseGaussianMRF(alpha=0.9, covariance="from_data", n_jobs=2).fit(X)
    assert one.n_components_ > 2
    assert (one.precision_ != two.precision_).nnz == 0
    assert one.objective_ == two.objective_


def test_no_dense_array():
    p, n = 2000, 50
    X = chain_samples(n, p, seed=1)
    with pytest.raises(ComponentTooLargeError) as info:
        solve_from_data(X, 0.5, max_component=40)
    alpha = info.value.split_alpha
    solve_from_data(X[:, :40], alpha)                   # kernels compiled / loaded first
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SparseGaussianMRF(alpha=alpha, covariance="from_data").fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 1 < model.n_components_ < p and len(model.edges_) > 0
    # one dense p x p float64 array is 8 p^2 bytes; the whole fit stays far below it
    assert peak < 0.25 * 8 * p * p, peak / (8 * p * p)


def test_refusal_names_size_and_splitting_alpha():
    X = chain_samples(30, 300, seed=2)
    alpha, limit = 0.5, 25
    size = _largest_component(X, alpha)
    assert size > limit
    with pytest.raises(ComponentTooLargeError) as info:
        SparseGaussianMRF(alpha=alpha, covariance="from_data", max_component=limit).fit(X)
    err = info.value
    assert isinstance(err, SpargelError) and isinstance(err, MemoryError)
    assert err.size == size and err.limit == limit
    assert str(size) in str(err) and f"{err.split_alpha:.6g}" in str(err)
    # the named alpha is the smallest that splits: at it every component fits, just
    # below it one does not
    assert _largest_component(X, err.split_alpha) <= limit
    assert _largest_component(X, np.nextafter(err.split_alpha, 0)) > limit
    ok = SparseGaussianMRF(alpha=err.split_alpha, covariance="from_data",
                           max_component=limit).fit(X)
    assert ok.converged_


def test_auto_switch_and_refusals():
    X = chain_samples(50, 2000, seed=3)
    big = SparseGaussianMRF(alpha=5.0, covariance="auto").fit(X)      # every variable alone
    assert sp.issparse(big.precision_) and big.n_components_ == 2000
    np.testing.assert_allclose(big.precision_.diagonal(), 1.0 / np.var(X, axis=0), rtol=1e-12)
    small = SparseGaussianMRF(alpha=0.5, covariance="auto").fit(X[:, :30])
    assert isinstance(small.precision_, np.ndarray)
    with pytest.raises(SpargelError, match="scalar alpha"):
        SparseGaussianMRF(alpha=np.ones((30, 30)), covariance="from_data").fit(X[:, :30])
    with pytest.raises(ValueError, match="block penalties"):
        SparseGaussianMRF(alpha=0.5, covariance="from_data",
                          blocks=np.arange(30) // 3).fit(X[:, :30])
