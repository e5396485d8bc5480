"""The graphical lasso on a sparse pattern (gaussian/sparse_newton.py): its kernels
against dense linear algebra, its solutions against the dense solvers, the check off
the pattern, and the estimator's choice of path."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.errors import ParameterError
from spargel.gaussian import _sparse_factor_kernels as kern, sparse_newton
from spargel.gaussian.estimator import SparseGaussianMRF
from spargel.gaussian.from_data import _Columns, solve_from_data
from spargel.gaussian.objective import empirical_covariance, penalty_matrix, primal_objective
from spargel.gaussian.sparse_newton import SOLVER, SparsePattern, solve_component_sparse

from gmrf_helpers import chain_samples


def _random_pattern(q, density, seed):
    rng = np.random.default_rng(seed)
    a, b = np.nonzero(np.triu(rng.random((q, q)) < density, 1))
    return a, b


def _spd_values(P, seed):
    """Values on the pattern of a diagonally dominant (so positive definite) K."""
    rng = np.random.default_rng(seed)
    x = np.where(P.diag, 0.0, rng.uniform(-1, 1, P.m))
    K = _dense(P, x)
    rowsum = np.abs(K).sum(axis=1)
    x[P.diag] = rowsum[P.erow[P.diag]] + rng.uniform(0.1, 1.0, P.q)
    return x


def _dense(P, x):
    K = np.zeros((P.q, P.q))
    K[P.erow, P.ecol] = x
    K[P.ecol, P.erow] = x
    return K


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_factor_and_selected_inverse_match_dense_algebra(seed):
    q = 40
    a, b = _random_pattern(q, 0.08, seed)
    P = SparsePattern(q, a, b)
    x = _spd_values(P, seed)
    K = _dense(P, x)
    logdet = P.factor(x)
    assert logdet == pytest.approx(np.linalg.slogdet(K)[1], rel=1e-12, abs=1e-12)
    W = np.linalg.inv(K)
    got = P.inverse_on_pattern()
    np.testing.assert_allclose(got, W[P.erow, P.ecol], rtol=1e-10, atol=1e-13)
    # the factor's pattern is a superset of the pattern, and the inverse on it is exact
    Lrows = P.Li
    Lcols = np.repeat(np.arange(q), np.diff(P.Lp))
    np.testing.assert_allclose(P.zL, W[Lrows, Lcols], rtol=1e-10, atol=1e-13)


def test_factor_refuses_indefinite_matrices():
    q = 30
    a, b = _random_pattern(q, 0.1, 3)
    P = SparsePattern(q, a, b)
    x = _spd_values(P, 3)
    x[P.diag] -= 50.0                              # far from positive definite
    assert P.factor(x) == -np.inf
    # and the next factorisation of a good matrix is not disturbed by the failed one
    y = _spd_values(P, 3)
    assert P.factor(y) == pytest.approx(np.linalg.slogdet(_dense(P, y))[1], rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_hessian_product_is_the_derivative_of_the_inverse(seed):
    q = 35
    a, b = _random_pattern(q, 0.1, seed)
    P = SparsePattern(q, a, b)
    x = _spd_values(P, seed)
    P.factor(x)
    P.inverse_on_pattern()
    rng = np.random.default_rng(seed + 10)
    E = rng.standard_normal(P.m)
    got = P.hessian_product(E)
    W = np.linalg.inv(_dense(P, x))
    WEW = W @ _dense(P, E) @ W
    np.testing.assert_allclose(got, WEW[P.erow, P.ecol], rtol=1e-9, atol=1e-12)
    # a finite difference of the selected inverse agrees too
    h = 1e-6
    P.factor(x + h * E)
    plus = P.inverse_on_pattern()
    P.factor(x - h * E)
    minus = P.inverse_on_pattern()
    np.testing.assert_allclose(-(plus - minus) / (2 * h), got, rtol=1e-5, atol=1e-8)


def test_sandwich_solve_and_candidates_kernels():
    q = 30
    a, b = _random_pattern(q, 0.12, 4)
    P = SparsePattern(q, a, b)
    x = _spd_values(P, 4)
    x[np.flatnonzero(~P.diag)[::3]] = 0.0           # some zeros on the pattern
    K = _dense(P, x)
    rng = np.random.default_rng(5)
    free = np.flatnonzero(rng.random(P.m) < 0.6)
    from spargel.gaussian.sparse_newton import _Preconditioner

    pre = _Preconditioner(P, x, free)
    v = rng.standard_normal(free.size)
    V = np.zeros(P.m)
    V[free] = v
    KVK = K @ _dense(P, V) @ K
    np.testing.assert_allclose(pre(v), KVK[P.erow[free], P.ecol[free]], rtol=1e-10, atol=1e-12)
    # K^-1 B
    assert np.isfinite(P.factor(x))
    B = rng.standard_normal((q, 7))
    want = np.linalg.solve(K, B)
    kern.solve_columns(P.Lp, P.Li, P.Lx, P.d, B)
    np.testing.assert_allclose(B, want, rtol=1e-9, atol=1e-12)


def _dense_solution(X, alpha, penalize_diagonal=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparseGaussianMRF(alpha=alpha, solver="newton-cg", tol=1e-12,
                                 penalize_diagonal=penalize_diagonal).fit(X)


@pytest.mark.parametrize("penalize_diagonal", [False, True])
def test_sparse_solution_matches_the_dense_solvers(penalize_diagonal):
    X = chain_samples(300, 60, seed=2, rho=0.5)
    alpha = 0.12
    dense = _dense_solution(X, alpha, penalize_diagonal)
    res = solve_component_sparse(_Columns(X, False), np.arange(60), alpha,
                                 penalize_diagonal=penalize_diagonal)
    assert res.converged and res.solver == SOLVER
    K = res.precision.toarray()
    np.testing.assert_allclose(K, dense.precision_, atol=1e-6 * np.abs(dense.precision_).max())
    assert res.objective == pytest.approx(dense.objective_, rel=1e-10)
    # the objective is the one of the dense formulation at the sparse K
    S = empirical_covariance(X)
    L = penalty_matrix(alpha, 60, penalize_diagonal=penalize_diagonal)
    assert res.objective == pytest.approx(primal_objective(K, S, L), rel=1e-10)
    # the covariance holds K's inverse on K's pattern
    C = res.covariance.tocoo()
    np.testing.assert_allclose(C.data, np.linalg.inv(K)[C.row, C.col], rtol=1e-8, atol=1e-12)


def test_check_off_the_pattern_finds_and_adds_missing_pairs():
    X = chain_samples(400, 50, seed=3, rho=0.6)
    alpha = 0.15
    cols = _Columns(X, False)
    S = empirical_covariance(X)
    iu, ju = np.triu_indices(50, 1)
    strong = np.abs(S[iu, ju]) > alpha
    a, b = iu[strong], ju[strong]
    # leave out every other screened pair: the solve on the smaller pattern is not
    # optimal, and the check must find the pairs that fail
    drop = np.arange(a.size) % 2 == 1
    near = (a[drop], b[drop])
    res = solve_component_sparse(cols, np.arange(50), alpha, pairs=(a[~drop], b[~drop]),
                                 near=near)
    assert any("added" in row for row in res.history)
    dense = _dense_solution(X, alpha)
    np.testing.assert_allclose(res.precision.toarray(), dense.precision_,
                               atol=1e-6 * np.abs(dense.precision_).max())


def test_estimator_chooses_the_sparse_path_and_agrees_with_dense():
    p = 1600
    X = chain_samples(1000, p, seed=4, rho=0.6)
    alpha = 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = SparseGaussianMRF(alpha=alpha, covariance="from_data").fit(X)
        dense = SparseGaussianMRF(alpha=alpha, covariance="from_data", solver="newton-cg").fit(X)
        # with 200 samples the same alpha screens thousands of spurious pairs across the
        # chain: the factor fills in, and 'auto' keeps the dense solver
        noisy = SparseGaussianMRF(alpha=alpha, covariance="from_data").fit(X[:200])
    assert SOLVER in auto.solver_ and SOLVER not in dense.solver_
    assert SOLVER not in noisy.solver_
    assert auto.converged_
    assert auto.objective_ == pytest.approx(dense.objective_, rel=1e-9)
    np.testing.assert_array_equal(auto.edges_, dense.edges_)
    diff = abs(auto.precision_ - dense.precision_).max()
    assert diff <= 1e-6 * abs(dense.precision_).max()


def test_sparse_path_holds_no_dense_matrix(monkeypatch):
    p, n = 3000, 600
    X = chain_samples(n, p, seed=5, rho=0.6)
    cols = _Columns(X, False)
    solve_component_sparse(_Columns(X[:, :50], False), np.arange(50), 0.3)   # compile first
    monkeypatch.setattr(sparse_newton, "BLOCK_BYTES", 2**20)   # W's columns 1 MB at a time
    # the screening (by 64 MB slabs of S, as the from-data path screens) comes first
    pairs, near = sparse_newton._screen_component(cols, np.arange(p), 0.35)
    tracemalloc.start()
    try:
        res = solve_component_sparse(cols, np.arange(p), 0.35, pairs=pairs, near=near)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.converged
    # the data's transpose (8 n p), the pattern, factor and a 1 MB block of W: less
    # than half of one dense p x p array
    assert peak < 8 * n * p + 2**23 and peak < 8 * p * p / 2


def test_forced_solver_and_its_refusals():
    X = chain_samples(100, 40, seed=6)
    res = solve_from_data(X, 0.2, solver=SOLVER)
    assert SOLVER in res.solver and sp.issparse(res.precision)
    with pytest.raises(ParameterError, match="from the data matrix only"):
        SparseGaussianMRF(alpha=0.2, solver=SOLVER).fit(X)


def test_callback_stops_the_sparse_solve():
    X = chain_samples(200, 80, seed=7)
    rows = []

    def stop(row):
        rows.append(row)
        return len(rows) >= 2

    res = solve_component_sparse(_Columns(X, False), np.arange(80), 0.1, callback=stop)
    assert res.stop_reason == "callback" and not res.converged and len(rows) == 2
    assert all(np.isfinite(r["kkt"]) for r in rows)


def test_sparse_path_models_round_trip_and_forged_ones_are_refused(tmp_path):
    from spargel.errors import ModelFileError

    X = chain_samples(120, 200, seed=8, rho=0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SparseGaussianMRF(alpha=0.3, covariance="from_data", solver=SOLVER).fit(X)
    path = tmp_path / "chain.model"
    m.save(path)
    back = SparseGaussianMRF.load(path)
    assert back.solver_ == m.solver_ and sp.issparse(back.precision_)
    assert abs(back.precision_ - m.precision_).max() == 0.0
    assert back.score(X) == pytest.approx(m.score(X), rel=1e-12)
    # a model whose precision is not positive definite (one negative pivot deep inside
    # the chain) is refused by the sparse check, which runs on such models
    from spargel.gaussian.sparse_file import check_precision

    K = m.precision_.tolil(copy=True)
    K[100, 100] = -1.0
    K = K.tocsr()
    C = m.covariance_
    stored = K.nnz + C.nnz + K.shape[0]
    assert check_precision(m.precision_, C, stored, "chain.model") == 200
    with pytest.raises(ModelFileError, match="chain.model.*positive definite"):
        check_precision(K, C, stored, "chain.model")


def test_a_factor_too_large_for_memory_is_refused_before_allocation():
    from spargel.gaussian.sparse_newton import FactorTooLargeError

    a, b = np.triu_indices(60, 1)                    # a complete graph: 1,770 entries
    with pytest.raises(FactorTooLargeError, match="60 variables") as info:
        SparsePattern(60, a, b, max_factor=1000)
    assert isinstance(info.value, MemoryError)
