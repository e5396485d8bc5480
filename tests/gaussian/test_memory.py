"""Memory of the dense path, counted in dense p x p float64 arrays (numpy reports its
allocations to tracemalloc): the rescaled problem is built and mapped back in place,
and a problem that is one screened component is solved without copies."""

import tracemalloc
import warnings

import numpy as np

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
    # Newton-CG's own state (K, W, gradient, direction, its scratch: about 10 arrays)
    # plus the rescaled S and weights; it was 17 before the in-place rescaling and the
    # free-set vectors sized to the free set (and one scratch shared by CD and CG)
    assert peak <= 11.0, peak
