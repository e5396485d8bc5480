"""Memory of the dense path, counted in dense p x p float64 arrays (numpy reports its
allocations to tracemalloc; each measured call runs once before, so that compiling
kernels on a fresh cache -- Python objects tracemalloc also counts -- is not measured): the rescaled problem is built and mapped back in place,
a problem that is one screened component is solved without copies, Newton-CG keeps
four p x p arrays (S, K, W and one scratch), and the caller's data are never written."""

import tracemalloc
import warnings

import numpy as np
import pytest

from spargel.gaussian.solve import solve_gaussian


def _peak_arrays(S, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_gaussian(S, **kw)         # compile / load every kernel the solve meets first

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
    # the validated copy of S, rescaled in place, and Newton-CG's K, W and one scratch
    # (the trial point and its Cholesky factor, the CD sweeps' D W, the float32 W of CG);
    # directions on the free set, a scalar alpha never a weight matrix: 4.3 (it was 17
    # before the in-place rescaling and the free-set vectors, 11 before the gradient
    # was dropped, 9.2 before the changes of this paragraph)
    assert peak <= 4.5, peak


@pytest.mark.parametrize("loners, limit", [(0, 4.3), (60, 4.6)])
def test_estimator_dense_peak(loners, limit):
    """The estimator's S is computed in the memory of its copy of the data (gone before
    the solve) and rescaled in place: the whole fit (S included) holds about 4.1 dense
    p x p arrays at its peak (8.5 before). With several screened components (a chain
    and ``loners`` unconnected variables) each block is rescaled when it is solved and
    the whole K and covariance are assembled one at a time: about 4.5 arrays (8 before)."""
    from spargel.gaussian.estimator import SparseGaussianMRF

    p = 600
    rng = np.random.default_rng(1)
    X = rng.standard_normal((p // 4, p))
    for j in range(1, p - loners):
        X[:, j] += 0.5 * X[:, j - 1]
    X /= X.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SparseGaussianMRF(alpha=0.3).fit(X)         # compile / load the kernels first
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


def test_inputs_are_not_written():
    """solve_gaussian and the estimator work in their own copies: the caller's data and
    covariance come back bit for bit (a covariance given to the estimator too)."""
    from spargel.gaussian.estimator import SparseGaussianMRF

    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 12))
    X[:, 1:] += 0.6 * X[:, :-1]
    S = np.cov(X.T, bias=True)
    X0, S0 = X.copy(), S.copy()
    a = solve_gaussian(S, 0.1)
    np.testing.assert_array_equal(S, S0)
    b = SparseGaussianMRF(alpha=0.1).fit(X)
    np.testing.assert_array_equal(X, X0)
    c = SparseGaussianMRF(alpha=0.1, covariance="precomputed").fit(S)
    np.testing.assert_array_equal(S, S0)
    np.testing.assert_allclose(b.precision_, a.precision, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(c.precision_, a.precision, rtol=1e-8, atol=1e-10)


def test_from_data_component_peak():
    """The from-data path solves a component on its own covariance block: that block
    and Newton-CG's three arrays: about 5.3 blocks with the data and the sparse result
    at p = 500, 4.9 at p = 800 (8.4 there before); the default component limit
    budgets six."""
    from spargel.gaussian.from_data import _ARRAYS_PER_SOLVE, solve_from_data

    p = 500
    rng = np.random.default_rng(3)
    X = rng.standard_normal((p // 4, p))
    for j in range(1, p):
        X[:, j] += 0.5 * X[:, j - 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_from_data(X, 0.3)                     # compile / load the kernels first
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_from_data(X, 0.3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.converged and res.n_components == 1
    assert peak / (8.0 * p * p) <= 5.6, peak / (8.0 * p * p)
    assert _ARRAYS_PER_SOLVE >= peak / (8.0 * p * p)


@pytest.mark.parametrize("slab", [1, 7, 30, 64])
def test_gram_by_slabs_equals_the_product(monkeypatch, slab):
    """Large Gram matrices are computed by row slabs (numpy's threaded X.T @ X crashes
    in OpenBLAS 0.3.31 past 2**31 bytes of result): the same matrix, exactly symmetric,
    and the covariance built on it is unchanged."""
    from spargel.gaussian import objective

    rng = np.random.default_rng(5)
    X = rng.standard_normal((13, 30)) * rng.uniform(0.1, 10, size=30)
    whole = X.T @ X
    S0 = objective.empirical_covariance(X)
    monkeypatch.setattr(objective, "GRAM_SLAB_ENTRIES", 1)
    monkeypatch.setattr(objective, "GRAM_SLAB", slab)
    G = objective.gram(X)
    assert np.array_equal(G, G.T)
    # two summation orders of the same m products differ entry by entry by at most
    # 2 gamma_m sum_k |x_ki| |x_kj| (gamma_m = m eps / (1 - m eps)), whatever kernel
    # the BLAS picks: a bound from the computation, not from one CPU's last bits
    m = X.shape[0]
    gamma = (m + 2) * np.finfo(float).eps / (1 - (m + 2) * np.finfo(float).eps)
    absX = np.abs(X)
    assert np.all(np.abs(G - whole) <= 2 * gamma * (absX.T @ absX))
    S = objective.empirical_covariance(X)
    Xc = np.abs(X - X.mean(axis=0))    # the centring is the same code on both sides
    assert np.all(np.abs(S - S0) <= 2 * gamma * (Xc.T @ Xc) / m)


def test_large_factorisations_run_on_one_blas_thread(monkeypatch):
    """From ONE_THREAD_ORDER on (OpenBLAS's threaded Cholesky crashes past 2**31 bytes)
    the solve runs with one BLAS thread, and gives the same result."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from spargel.gaussian import objective, solve

    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 40))
    S = X.T @ X / 60
    seen = []
    real = objective.lapack_threads

    def spy(p):
        ctx = real(p)
        seen.append((p, type(ctx).__name__))
        return ctx

    monkeypatch.setattr(solve, "lapack_threads", spy)
    monkeypatch.setattr(objective, "MULTI_THREAD_MIN_ORDER", 10)     # p = 40: BLAS's threads
    monkeypatch.setattr(objective, "machine_is_busy", lambda: False)
    base = solve.solve_gaussian(S, 0.2)
    monkeypatch.setattr(objective, "ONE_THREAD_ORDER", 40)
    inside = []
    orig = solve._solve_l1

    def probe(*a, **k):
        inside.append([i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"])
        return orig(*a, **k)

    monkeypatch.setattr(solve, "_solve_l1", probe)
    one = solve.solve_gaussian(S, 0.2)
    assert seen[0] == (40, "nullcontext") and seen[1][0] == 40 and seen[1][1] != "nullcontext"
    assert inside and inside[0] and all(n == 1 for n in inside[0])
    assert np.allclose(one.precision, base.precision, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p, busy, one", [
    (452, False, True),          # small: one thread always (the threads only wait, spinning)
    (452, True, True),
    (5000, False, False),        # large on an idle machine: BLAS's own setting
    (5000, True, True),          # large on a busy machine: one thread
    (20000, False, True),        # past ONE_THREAD_ORDER: one thread (OpenBLAS's crash)
])
def test_blas_threads_chosen_by_size_and_load(monkeypatch, p, busy, one):
    from spargel.gaussian import objective

    monkeypatch.setattr(objective, "machine_is_busy", lambda: busy)
    ctx = objective.lapack_threads(p)
    assert (type(ctx).__name__ != "nullcontext") == one


def test_a_small_solve_runs_on_one_blas_thread(monkeypatch):
    """A p = 60 fit's dense algebra runs with one BLAS thread whatever BLAS's default
    (two threads on a busy 2-core machine multiplied a p = 452 fit's wall time by ten)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from spargel.gaussian import solve

    rng = np.random.default_rng(3)
    X = rng.standard_normal((80, 60))
    S = X.T @ X / 80
    inside = []
    orig = solve._solve_l1

    def probe(*a, **k):
        inside.append([i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"])
        return orig(*a, **k)

    monkeypatch.setattr(solve, "_solve_l1", probe)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        solve.solve_gaussian(S, 0.2)
    assert inside and inside[0] and all(n == 1 for n in inside[0])
