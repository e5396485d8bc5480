"""The orthant-wise Newton-CG solver and its kernels, against dense numpy."""

import numpy as np
import pytest

from spargel.gaussian._newton_cg_kernels import (CGWork, FreeSet, PreconditionerX, dense_to_csr,
                                                 newton_cg_direction, orthant_set,
                                                 orthant_step, sandwich_dense, sandwich_sparse,
                                                 symmetric_rows)
from spargel.gaussian.control import RunControl
from spargel.gaussian.newton_cg import newton_cg
from spargel.gaussian.objective import penalty_matrix, primal_objective
from spargel.gaussian.solve import solve_gaussian

from gmrf_helpers import kkt_violation, random_covariance

NO_LW = np.empty(0)         # the kernels' dense-weights mode


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
    m, sub = orthant_set(X, S, W, L, NO_LW, rows, cols, sgn, grad)
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


@pytest.mark.parametrize("dense_preconditioner", [False, True])
def test_cg_direction_solves_the_restricted_newton_system(dense_preconditioner):
    # the preconditioner P_F(X V X) by the sparse kernel, or by the dense one on an
    # n x n copy of X (here in double precision): the same solution either way
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
    it = newton_cg_direction(
        W32, PreconditionerX(X.copy() if dense_preconditioner else np.zeros((0, 0)), indptr, ind, dat),
        FreeSet(r, col_ptr, cog, ptr, scol, spos, wts), grad, d, 200, 1e-16,
        CGWork(np.empty((n, n)), np.empty(n), np.empty((n, n)), np.empty(2 * m), *scratch))
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
    dtr, dpen, dlin = orthant_step(X, r, c, sgn, d, 0.7, S, L, NO_LW, W, out, True)
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
    res = newton_cg(S, L, control=RunControl(tol=1e-10))
    assert res.converged and kkt_violation(res.precision, S, L) < 1e-6
    ref = solve_gaussian(S, L, solver="projected-gradient", tol=1e-10, max_iter=50000)
    assert abs(res.objective - ref.objective) <= 1e-8 * abs(ref.objective)
    warm = newton_cg(S, L * 0.9, X0=res.precision, control=RunControl(tol=1e-10))
    cold = newton_cg(S, L * 0.9, control=RunControl(tol=1e-10))
    assert warm.converged and warm.n_iter <= cold.n_iter
    assert abs(warm.objective - cold.objective) <= 1e-9 * abs(cold.objective)
    with pytest.raises(ValueError, match="not positive definite"):
        newton_cg(S, L, X0=-np.eye(20))


def _scalar_weights(n, seed=0, a=0.07, cap=1e6):
    from spargel.gaussian.weights import ScalarWeights

    rng = np.random.default_rng(seed)
    s = rng.uniform(0.5, 2.0, n)
    diag = rng.uniform(0.0, 0.1, n)
    dense = a / np.outer(s, s)
    np.fill_diagonal(dense, diag)
    return ScalarWeights(s, diag, a, cap), np.minimum(dense, np.where(np.eye(n) > 0, np.inf, cap))


def test_scalar_weights_are_the_rescaled_matrix():
    from spargel.gaussian.weights import dense_weights, weights_diag

    w, L = _scalar_weights(7)
    np.testing.assert_array_equal(dense_weights(w), L)
    np.testing.assert_array_equal(weights_diag(w), np.diag(L))
    w, L = _scalar_weights(7, a=5.0, cap=2.0)             # the cap binds off the diagonal
    np.testing.assert_array_equal(dense_weights(w), L)
    assert dense_weights(w).max() == 2.0
    # the kernels read the same weights as from the matrix
    S, W, X, _, G, *_ = _setup(n=7)
    w, L = _scalar_weights(7, a=0.2)
    size = 28
    out = []
    for args in ((L, NO_LW), (np.empty((0, 0)), w.lw)):
        rows, cols = np.empty(size, np.int64), np.empty(size, np.int64)
        sgn, grad = np.empty(size), np.empty(size)
        m, sub = orthant_set(X, S, W, *args, rows, cols, sgn, grad)
        out.append((rows[:m], cols[:m], sgn[:m], grad[:m], sub))
    for a_, b_ in zip(*out):
        np.testing.assert_array_equal(a_, b_)


def test_free_set_direction_kernels_match_dense():
    from spargel.gaussian._cd_kernels import (apply_step, direction_terms, penalty_sum,
                                              trial_point, weights_at)

    S, W, X, L, G, r, c, sgn, grad, sub = _setup(seed=4)
    n, m = X.shape[0], r.size
    d = np.random.default_rng(3).standard_normal(m) * np.abs(X).max()
    D = _sym(d, r, c, n)
    gd, dpen, sd, pen = direction_terms(W, L, NO_LW, X, S, r, c, d)
    assert gd == pytest.approx(np.vdot(G, D))
    assert sd == pytest.approx(np.vdot(S, D))
    assert pen == pytest.approx(np.vdot(L, np.abs(X)))
    assert pen == pytest.approx(penalty_sum(X, L, NO_LW))
    assert dpen == pytest.approx(np.vdot(L, np.abs(X + D) - np.abs(X)))
    out = np.empty((n, n))
    pt = trial_point(X, r, c, d, 0.3, L, NO_LW, pen, out)
    np.testing.assert_allclose(out, X + 0.3 * D, rtol=1e-15, atol=1e-15)
    assert pt == pytest.approx(np.vdot(L, np.abs(X + 0.3 * D)))
    Y = X.copy()
    apply_step(Y, r, c, d, 0.3)
    np.testing.assert_allclose(Y, out, rtol=1e-14, atol=1e-15)
    lam = np.empty(m)
    weights_at(L, NO_LW, r, c, lam)
    np.testing.assert_array_equal(lam, L[r, c])


def test_cd_sweep_in_single_precision_matches_double():
    """The CD sweep of Newton-CG's entering filter runs on float32 W and U = D W: the
    same direction as in double precision to single-precision rounding, U = D W."""
    from spargel.gaussian._cd_kernels import cd_sweeps

    S, W, X, L, G, r, c, sgn, grad, sub = _setup(n=12, seed=6)
    n, m = X.shape[0], r.size
    col_ptr, cog = _groups(r, c)
    out = {}
    for dtype in (np.float64, np.float32):
        d = np.zeros(m)
        U = np.zeros((n, n), dtype=dtype)
        cd_sweeps(W.astype(dtype), S, X, L, NO_LW, d, U, col_ptr, r, cog, 2,
                  np.empty(n, dtype=dtype))
        assert np.any(d != 0)
        np.testing.assert_allclose(U, _sym(d, r, c, n) @ W, rtol=1e-4,
                                   atol=1e-5 * np.abs(U).max())
        out[dtype] = d
    np.testing.assert_allclose(out[np.float32], out[np.float64], rtol=1e-4,
                               atol=1e-5 * np.abs(out[np.float64]).max())


@pytest.mark.parametrize("solver", ["newton-cg", "newton-cd"])
def test_scalar_weights_solve_the_dense_weights_problem(solver):
    """Both Newton solvers give the solution of the same problem whether the weights
    come as a matrix or computed entry by entry (``ScalarWeights``)."""
    from spargel.gaussian.newton_cd import newton_cd
    from spargel.gaussian.weights import dense_weights

    S = _factor_covariance(p=30, seed=2)
    w, _ = _scalar_weights(30, seed=5, a=0.15)
    run = newton_cg if solver == "newton-cg" else newton_cd
    a = run(S, w, control=RunControl(tol=1e-12))
    b = run(S, dense_weights(w), control=RunControl(tol=1e-12))
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert primal_objective(a.precision, S, dense_weights(w)) == pytest.approx(a.objective,
                                                                               rel=1e-10)
    np.testing.assert_allclose(a.precision, b.precision, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(a.precision != 0, b.precision != 0)


def test_certify_fallbacks_take_scalar_weights(monkeypatch):
    """When the support-based dual point is not positive definite, the certificate
    falls back to the plain clipped point (and to Lemma 1's interior point), which
    need the weight matrix: the same certificate from ScalarWeights as from it."""
    import spargel.gaussian._cd_kernels as kernels
    from spargel.gaussian.newton_cd import certify
    from spargel.gaussian.objective import dual_objective

    S = _factor_covariance(p=20, seed=1)
    w, L = _scalar_weights(20, seed=2, a=0.2)
    X = np.eye(20) + 0.02 * (np.ones((20, 20)) - np.eye(20))
    W = np.linalg.inv(X)
    monkeypatch.setattr(kernels, "clipped_dual_into",
                        lambda W, S, L, lw, X, out: out.__setitem__(Ellipsis, -np.eye(len(S))))
    a = certify(W, S, w, X, np.empty((20, 20)), 0.0)
    b = certify(W, S, L, X, np.empty((20, 20)), 0.0)
    assert a == b
    assert a[1] == pytest.approx(dual_objective(S + np.clip(W - S, -L, L)))


@pytest.mark.parametrize("dense", [False, True])
def test_dense_and_sparse_preconditioner_paths_reach_the_optimum(monkeypatch, dense):
    """Newton-CG with its preconditioner forced dense or sparse
    (``DENSE_PRECONDITION``): along a warm-started path each fit has a certified gap,
    equals the cold fit of the other choice and Newton-CD's optimum."""
    import spargel.gaussian.newton_cg as ncg
    from spargel.gaussian.path import alpha_grid, gaussian_path

    S = _factor_covariance(p=30, seed=2)
    alphas = alpha_grid(S, 5, 0.1)[1:]
    monkeypatch.setattr(ncg, "DENSE_PRECONDITION", np.inf if dense else 0.0)
    seen = []
    real = ncg._dense_preconditioner
    monkeypatch.setattr(ncg, "_dense_preconditioner",
                        lambda *a: seen.append(real(*a)) or seen[-1])
    path = gaussian_path(S, alphas, solver="newton-cg", tol=1e-10)
    assert seen and set(seen) == {dense}
    monkeypatch.setattr(ncg, "DENSE_PRECONDITION", 0.0 if dense else np.inf)
    for a, r in zip(alphas, path):
        L = penalty_matrix(a, S.shape[0])
        f_std = r.objective - np.sum(np.log(np.diag(S) + np.diag(L)))
        assert r.converged and r.duality_gap <= 1e-10 * max(1.0, abs(f_std))
        cold = solve_gaussian(S, a, solver="newton-cg", tol=1e-10)
        cd = solve_gaussian(S, a, solver="newton-cd", tol=1e-10, max_iter=2000)
        for other in (cold, cd):
            assert abs(r.objective - other.objective) <= 1e-9 * abs(other.objective)
            np.testing.assert_allclose(r.precision, other.precision, atol=1e-5)
