"""The orthant-wise Newton-CG solver and its kernels, against dense numpy."""

import numpy as np
import pytest

from spargel.gaussian._newton_cg_kernels import (dense_to_csr, newton_cg_direction, orthant_set,
                                                 orthant_step, sandwich_dense, sandwich_sparse,
                                                 symmetric_rows)
from spargel.gaussian.newton_cg import newton_cg
from spargel.gaussian.objective import penalty_matrix, primal_objective
from spargel.gaussian.solve import solve_gaussian

from gmrf_helpers import kkt_violation, random_covariance


def _factor_covariance(p=40, m=200, k=3, seed=0):
    """Correlation matrix of data with k strong common factors (ill-conditioned,
    one screened component) plus sparse idiosyncratic dependence."""
    rng = np.random.default_rng(seed)
    B = rng.normal(0, 0.35, (p, k))
    B[:, 0] = rng.uniform(0.4, 0.9, p)
    E = rng.standard_normal((m, p))
    E[:, 1:] += 0.4 * E[:, :-1]
    X = rng.standard_normal((m, k)) @ B.T + E
    X = (X - X.mean(0)) / X.std(0)
    return X.T @ X / m


def _setup(n=9, seed=0):
    rng = np.random.default_rng(seed)
    S = random_covariance(40, n, seed)
    A = rng.standard_normal((n, n))
    W = A @ A.T + n * np.eye(n)
    X = np.linalg.inv(W)
    X[np.abs(X) < 0.3 * np.abs(X).max() * (1 - np.eye(n))] = 0.0     # a sparse "iterate"
    X = 0.5 * (X + X.T) + n * np.eye(n)
    L = penalty_matrix(0.05, n)
    G = S - W
    size = n * (n + 1) // 2
    rows, cols = np.empty(size, np.int64), np.empty(size, np.int64)
    sgn, grad = np.empty(size), np.empty(size)
    m, sub = orthant_set(X, S, W, L, rows, cols, sgn, grad)
    return S, W, X, L, G, rows[:m].copy(), cols[:m].copy(), sgn[:m].copy(), grad[:m].copy(), sub


def _groups(r, c):
    m = r.size
    starts = np.flatnonzero(np.diff(c)) + 1
    col_ptr = np.concatenate(([0], starts, [m])).astype(np.int64)
    return col_ptr, c[col_ptr[:-1]].copy()


def _sym(v, r, c, n):
    V = np.zeros((n, n))
    V[r, c] = v
    V[c, r] = v
    return V


def test_orthant_set_brute_force():
    S, W, X, L, G, r, c, sgn, grad, sub = _setup()
    n = X.shape[0]
    expect = [(i, j) for j in range(n) for i in range(j + 1)
              if i == j or X[i, j] != 0 or abs(G[i, j]) > L[i, j]]
    assert list(zip(r.tolist(), c.tolist())) == expect
    for p, (i, j) in enumerate(expect):
        s = np.sign(X[i, j]) if X[i, j] != 0 else -np.sign(G[i, j])
        s = 0.0 if L[i, j] == 0 else s
        assert sgn[p] == s and grad[p] == pytest.approx(G[i, j] + L[i, j] * s)
    # minimum-norm subgradient, l1 over the full matrix
    mn = np.where(X > 0, np.abs(G + L), np.where(X < 0, np.abs(G - L),
                                                  np.maximum(np.abs(G) - L, 0)))
    assert sub == pytest.approx(mn.sum())


def test_sandwich_kernels_match_numpy():
    S, W, X, L, G, r, c, sgn, grad, sub = _setup()
    n, m = X.shape[0], r.size
    col_ptr, cog = _groups(r, c)
    ptr = np.empty(n + 1, np.int64)
    scol, spos = np.empty(2 * m, np.int64), np.empty(2 * m, np.int64)
    symmetric_rows(r, c, n, ptr, scol, spos)
    v = np.random.default_rng(1).standard_normal(m)
    V = _sym(v, r, c, n)
    out = np.empty(m)
    sandwich_dense(W, v, ptr, scol, spos, r, col_ptr, cog, np.empty((n, n)), np.empty(n), out)
    np.testing.assert_allclose(out, (W @ V @ W)[r, c], rtol=1e-12)
    W32 = W.astype(np.float32)
    sandwich_dense(W32, v, ptr, scol, spos, r, col_ptr, cog, np.empty((n, n), np.float32),
                   np.empty(n, np.float32), out)
    np.testing.assert_allclose(out, (W @ V @ W)[r, c], rtol=1e-5)
    indptr, ind, dat = np.empty(n + 1, np.int64), np.empty(n * n, np.int64), np.empty(n * n)
    nnz = dense_to_csr(X, indptr, ind, dat)
    assert nnz == np.count_nonzero(X)
    sandwich_sparse(indptr, ind, dat, v, ptr, scol, spos, np.empty(2 * m), r, col_ptr, cog,
                    np.empty((n, n)), out)
    np.testing.assert_allclose(out, (X @ V @ X)[r, c], rtol=1e-12)


def test_cg_direction_solves_the_restricted_newton_system():
    S, W, X, L, G, r, c, sgn, grad, sub = _setup(n=8, seed=3)
    n, m = X.shape[0], r.size
    col_ptr, cog = _groups(r, c)
    ptr = np.empty(n + 1, np.int64)
    scol, spos = np.empty(2 * m, np.int64), np.empty(2 * m, np.int64)
    symmetric_rows(r, c, n, ptr, scol, spos)
    indptr, ind, dat = np.empty(n + 1, np.int64), np.empty(n * n, np.int64), np.empty(n * n)
    dense_to_csr(X, indptr, ind, dat)
    wts = np.where(r == c, 1.0, 2.0)
    d = np.empty(m)
    scratch = [np.empty(m) for _ in range(4)]
    W32 = W.astype(np.float64)        # double precision here, to test the solve itself
    it = newton_cg_direction(W32, indptr, ind, dat, r, col_ptr, cog, ptr, scol, spos, wts,
                             grad, d, 200, 1e-16, np.empty((n, n)), np.empty(n),
                             np.empty((n, n)), np.empty(2 * m), *scratch)
    assert 1 <= it <= 200
    # dense reference: H_FF d = -g in coordinates of the free set
    H = np.empty((m, m))
    for q in range(m):
        e = np.zeros(m)
        e[q] = 1.0
        H[:, q] = (W @ _sym(e, r, c, n) @ W)[r, c]
    np.testing.assert_allclose(d, np.linalg.solve(H, -grad), rtol=1e-7, atol=1e-10)


def test_orthant_step_projects_and_accounts():
    S, W, X, L, G, r, c, sgn, grad, sub = _setup(seed=5)
    n, m = X.shape[0], r.size
    d = np.random.default_rng(2).standard_normal(m) * np.abs(X).max()
    out = np.empty((n, n))
    dtr, dpen, dlin = orthant_step(X, r, c, sgn, d, 0.7, S, L, W, out, True)
    Y = X.copy()
    for p in range(m):
        y = X[r[p], c[p]] + 0.7 * d[p]
        if sgn[p] != 0 and np.sign(y) == -sgn[p]:
            y = 0.0
        Y[r[p], c[p]] = Y[c[p], r[p]] = y
    np.testing.assert_array_equal(out, Y)
    assert dtr == pytest.approx(np.vdot(S, Y - X))
    assert dlin == pytest.approx(np.vdot(G, Y - X))
    assert dpen == pytest.approx(np.vdot(L, np.abs(Y) - np.abs(X)))


@pytest.mark.parametrize("seed", [0, 1])
def test_factor_structured_problem(seed):
    """One screened component, condition number near 100: Newton-CG
    reaches a certified 1e-10 gap, agrees with the other solvers, and its
    zeros are exact."""
    S = _factor_covariance(seed=seed)
    assert np.linalg.cond(S) > 50
    alpha = 0.12
    L = penalty_matrix(alpha, S.shape[0])
    a = solve_gaussian(S, alpha, solver="newton-cg", tol=1e-10)
    assert a.converged and a.n_components == 1 and a.solver == "newton-cg"
    assert any(h.get("direction") == "cg" for h in a.history)
    # the documented certificate: the gap within tol times the objective on the
    # standardised scale (S_ij / sqrt(d_i d_j), d = diag S + diag L)
    f_std = a.objective - np.sum(np.log(np.diag(S) + np.diag(L)))
    assert a.duality_gap <= 1e-10 * max(1.0, abs(f_std))
    assert a.objective == pytest.approx(primal_objective(a.precision, S, L), rel=1e-12)
    b = solve_gaussian(S, alpha, solver="projected-gradient", tol=1e-10, max_iter=50000)
    c = solve_gaussian(S, alpha, solver="newton-cd", tol=1e-10, max_iter=2000)
    assert abs(a.objective - b.objective) <= 1e-8 * abs(a.objective)
    assert abs(a.objective - c.objective) <= 1e-8 * abs(a.objective)
    assert kkt_violation(a.precision, S, L) < 1e-5     # first order: ~ sqrt(gap)
    off = ~np.eye(S.shape[0], dtype=bool)
    assert 0 < np.count_nonzero(a.precision[off]) < off.sum()


def test_zero_weights_warm_start_and_singular_S():
    S = random_covariance(12, 20, 4)                 # singular: 12 samples, 20 variables
    L = penalty_matrix(0.1, 20)
    L[0, 1] = L[1, 0] = 0.0                          # one unpenalised pair
    res = newton_cg(S, L, tol=1e-10)
    assert res.converged and kkt_violation(res.precision, S, L) < 1e-6
    ref = solve_gaussian(S, L, solver="projected-gradient", tol=1e-10, max_iter=50000)
    assert abs(res.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    warm = newton_cg(S, L * 0.9, X0=res.precision, tol=1e-10)
    cold = newton_cg(S, L * 0.9, tol=1e-10)
    assert warm.converged and warm.n_iter <= cold.n_iter
    assert abs(warm.objective - cold.objective) <= 1e-9 * abs(cold.objective)
    with pytest.raises(ValueError, match="not positive definite"):
        newton_cg(S, L, X0=-np.eye(20))
