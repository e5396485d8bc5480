"""The Newton solvers' factorisations: the sparse path (SuperLU) against LAPACK's.

Ground truth: numpy's log det and inverse of the same matrix, the smallest
eigenvalue for positive definiteness, and the dense path's solution of the same
problem for the solvers."""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.gaussian import factor as F
from spargel.gaussian._cd_kernels import mirror_lower_to_upper
from spargel.gaussian.control import RunControl
from spargel.gaussian.newton_cd import newton_cd
from spargel.gaussian.newton_cg import newton_cg
from spargel.gaussian.objective import penalty_matrix


def sparse_spd(n, per_row, seed, shift=0.5):
    """A random symmetric matrix with about ``per_row`` off-diagonal entries a row,
    made positive definite by its diagonal (``shift`` above Gershgorin's bound)."""
    rng = np.random.default_rng(seed)
    m = n * per_row // 2
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    E = sp.coo_matrix((rng.uniform(-1, 1, m), (i, j)), shape=(n, n)).toarray()
    A = E + E.T
    np.fill_diagonal(A, 0.0)
    A += np.diag(np.abs(A).sum(axis=1) + shift)
    return A


@pytest.mark.parametrize("seed", range(4))
def test_sparse_cholesky_and_inverse_equal_numpys(seed, monkeypatch):
    monkeypatch.setattr(F, "INVERSE_MAX_FILL", 1.0)     # a random graph fills in
    A = sparse_spd(300, 4, seed)
    fz = F.Factorizer(300, sparse=True)
    B = A.copy()
    factor, logdet = fz.cholesky(B)
    assert isinstance(factor, F.SparseFactor)
    assert np.array_equal(B, A)                     # a sparse factor leaves B as it was
    sign, ref = np.linalg.slogdet(A)
    assert sign == 1 and logdet == pytest.approx(ref, rel=1e-12)
    W = fz.inverse(factor, mirror_lower_to_upper)
    assert np.shares_memory(W, B) and W.flags.c_contiguous
    assert np.array_equal(W, W.T)
    np.testing.assert_allclose(W, np.linalg.inv(A), rtol=0, atol=1e-12 * np.abs(W).max())
    assert fz.stats == {"dense_cholesky": 0, "sparse_cholesky": 1, "dense_inverse": 0,
                        "sparse_inverse": 1}


@pytest.mark.parametrize("seed", range(4))
def test_not_positive_definite_is_found_by_both_paths(seed):
    A = sparse_spd(200, 4, seed)
    lam_min = np.linalg.eigvalsh(A)[0]
    A -= (lam_min + 1e-3) * np.eye(200)             # one eigenvalue just below zero
    for sparse in (True, False):
        factor, logdet = F.Factorizer(200, sparse=sparse).cholesky(A.copy())
        assert factor is None and logdet == -np.inf
    Z = sparse_spd(200, 4, seed)
    Z[7, 7] = 0.0                                    # a zero pivot of a symmetric matrix
    assert F.Factorizer(200, sparse=True).cholesky(Z.copy()) == (None, -np.inf)


def test_too_many_nonzeros_or_too_much_fill_go_dense(monkeypatch):
    dense = sparse_spd(200, 150, 1)                  # about 150 non-zeros a row
    fz = F.Factorizer(200, sparse=True)
    c, logdet = fz.cholesky(dense.copy())
    assert not isinstance(c, F.SparseFactor) and fz.stats["dense_cholesky"] == 1
    assert logdet == pytest.approx(np.linalg.slogdet(dense)[1], rel=1e-12)

    A = sparse_spd(300, 4, 2)
    monkeypatch.setattr(F, "SPARSE_MAX_FILL", 0.0)
    monkeypatch.setattr(F, "INVERSE_MAX_FILL", 0.0)
    fz = F.Factorizer(300, sparse=True)
    c, _ = fz.cholesky(A.copy())
    assert isinstance(c, F.SparseFactor) and not fz.sparse      # no further sparse tries
    W = fz.inverse(c, mirror_lower_to_upper)                    # dense inverse of the same matrix
    assert fz.stats["dense_inverse"] == 1 and np.array_equal(W, W.T)
    np.testing.assert_allclose(W, np.linalg.inv(A), rtol=0, atol=1e-12 * np.abs(W).max())
    c, _ = fz.cholesky(A.copy())
    assert not isinstance(c, F.SparseFactor)


def test_the_order_decides_by_default():
    assert not F.Factorizer(F.SPARSE_MIN_ORDER - 1).sparse
    assert F.Factorizer(F.SPARSE_MIN_ORDER).sparse


def chain_covariance(p, n, seed):
    """Sample covariance of n draws from a chain-graph Gaussian (precision band
    0.3 off the diagonal), standardised."""
    rng = np.random.default_rng(seed)
    K = np.eye(p) * 1.0 + np.diag(np.full(p - 1, 0.3), 1) + np.diag(np.full(p - 1, 0.3), -1)
    Z = rng.standard_normal((n, p)) @ np.linalg.cholesky(np.linalg.inv(K)).T
    Z = (Z - Z.mean(0)) / Z.std(0)
    return Z.T @ Z / n


@pytest.mark.parametrize("solver", [newton_cg, newton_cd])
def test_solvers_reach_the_dense_paths_solution_through_sparse_factors(solver, monkeypatch):
    S = chain_covariance(150, 400, 0)
    L = penalty_matrix(0.15, 150)
    dense = solver(S, L, control=RunControl(tol=1e-12))
    seen = []
    real = F.Factorizer.__init__

    def spy(self, n, sparse=None):
        real(self, n, sparse)
        seen.append(self.stats)

    monkeypatch.setattr(F, "SPARSE_MIN_ORDER", 10)
    monkeypatch.setattr(F, "SPARSE_MAX_FILL", 1.0)      # small orders fill a larger share
    monkeypatch.setattr(F, "INVERSE_MAX_FILL", 1.0)
    monkeypatch.setattr(F.Factorizer, "__init__", spy)
    sparse = solver(S, L, control=RunControl(tol=1e-12))
    assert seen and seen[0]["sparse_cholesky"] > 0 and seen[0]["sparse_inverse"] > 0
    # only the certificates' dual points (S plus a clipped W: dense) are factorised dense
    certified = sum(np.isfinite(h["duality_gap"]) for h in sparse.history)
    assert 0 < certified and seen[0]["dense_cholesky"] <= 3 * certified
    assert sparse.converged and dense.converged
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-12)
    assert np.array_equal(sparse.precision != 0, dense.precision != 0)
    np.testing.assert_allclose(sparse.precision, dense.precision, rtol=0,
                               atol=1e-8 * np.abs(dense.precision).max())
