"""Memory of the dense path, counted in dense p x p float64 arrays (numpy reports its
allocations to tracemalloc): the rescaled problem is built and mapped back in place,
and a problem that is one screened component is solved without copies."""

import tracemalloc
import warnings

import numpy as np
import pytest

from spargel.gaussian.solve import solve_gaussian


def _peak_arrays(S, **kw):
    solve_gaussian(S[:20, :20], 0.3)                        # compile / load kernels first
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_gaussian(S, **kw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / (8.0 * S.shape[0] ** 2), res


def test_dense_path_peak():
    p = 400
    rng = np.random.default_rng(0)
    X = rng.standard_normal((p // 2, p))
    for j in range(1, p):
        X[:, j] += 0.5 * X[:, j - 1]                        # a chain: one component
    X -= X.mean(axis=0)
    S = X.T @ X / X.shape[0]
    peak, res = _peak_arrays(S, alpha=0.3, screen=False)
    assert res.converged and res.n_components == 1
    # Newton-CG's own state (K, W, direction, its scratch, a Cholesky buffer, a float32
    # copy of W: about 6 arrays; the gradient S - W is read, not stored) plus the
    # validated and rescaled S and the weights; it was 17 before the in-place
    # rescaling and the free-set vectors sized to the free set (and one scratch shared
    # by CD and CG), 11 before the gradient was dropped
    assert peak <= 10.0, peak


@pytest.mark.parametrize("loners, limit", [(0, 9.0), (60, 8.6)])
def test_estimator_dense_peak(loners, limit):
    """The estimator's S is rescaled in place: the whole fit (S included) holds about
    8.5 dense p x p arrays at its peak. With several screened components (a chain and
    ``loners`` unconnected variables) each block is rescaled when it is solved and a
    scalar alpha never becomes a full weight matrix: about 8 arrays (9.2 before)."""
    from spargel.gaussian.estimator import SparseGaussianMRF

    p = 600
    rng = np.random.default_rng(1)
    X = rng.standard_normal((p // 4, p))
    for j in range(1, p - loners):
        X[:, j] += 0.5 * X[:, j - 1]
    X /= X.std(axis=0)
    SparseGaussianMRF(alpha=0.3).fit(X[:, :20])
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SparseGaussianMRF(alpha=0.3).fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model.converged_
    assert model.n_components_ == 1 if loners == 0 else model.n_components_ > 10
    assert peak / (8.0 * p * p) <= limit, peak / (8.0 * p * p)
