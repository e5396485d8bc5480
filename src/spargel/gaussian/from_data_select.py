"""Choosing alpha on the from-data path (n << p): cross-validation and EBIC / StARS /
RIC without a p x p matrix.

:class:`~spargel.gaussian.estimator.SparseGaussianMRFCV` and
:class:`~spargel.gaussian.selection.SparseGaussianMRFSelect` with
``covariance='from_data'`` (or ``'auto'`` at p >= 2,000 with n < p) use these in
place of their dense steps; each alpha of a path is a from-data fit
(:func:`.from_data.solve_columns`: screening by column slabs, one dense block per
connected component, sparse results), and every score is computed from the data
and the sparse precision K:

* ``log det K`` from a dense Cholesky factorisation per connected component of K's
  pattern (each no larger than a block the fit itself solved);
* ``tr(S K) = sum_ij K_ij (x_i . x_j) / n`` over K's nonzeros, as
  ``sum((K X^T) * X^T) / n`` (an n x p array, the size of the data);
* ``alpha_max = max_{i != j} |S_ij|`` and RIC's largest rotated cross-product
  by slabs of columns;
* StARS's edge counts as sparse matrices (only pairs that are an edge in some
  subsample are stored; the subsamples' from-data paths are those of
  :class:`.stars.GlassoColumnsPath`).

The numbers are those of the dense path up to rounding, so both choose the same
alpha and give the same precision to the solver's tolerance
(``tests/gaussian/test_from_data_select.py``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError
from .from_data import _Columns, screen_from_data, solve_columns

__all__ = ["alpha_max_from_data", "sparse_logdet", "held_out_loglik", "cv_fold_from_data",
           "fit_path",
           "refit_from_data", "SelectPath", "ric_alpha_by_slabs"]

_LOG_2PI = np.log(2 * np.pi)


def _slab_rows(p, block_bytes):
    return max(1, min(max(p // 16, 1), int(block_bytes // (8 * max(p, 1)))))


def alpha_max_from_data(cols, block_bytes=2**26):
    """``max_{i != j} |S_ij|`` of the covariance the columns ``cols`` stand for,
    by slabs of rows of S (never more than ``block_bytes`` of it at once)."""
    p = cols.Y.shape[1]
    rows = _slab_rows(p, block_bytes)
    best = 0.0
    for a in range(0, p - 1, rows):
        b = min(a + rows, p)
        B = cols.block(slice(a, b), slice(a, p))
        np.abs(B, out=B)
        B[np.tril_indices(b - a, 0, B.shape[1])] = 0.0
        best = max(best, float(B.max(initial=0.0)))
    return best


def sparse_logdet(K):
    """``(log det K, positive definite?)`` of a sparse symmetric K, by a dense
    Cholesky factorisation of each connected component of its pattern."""
    from scipy.sparse.csgraph import connected_components

    K = sp.csr_matrix(K)
    n_comp, labels = connected_components(K, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    diag = K.diagonal()
    single = sizes[labels] == 1
    if not np.all(diag[single] > 0):
        return -np.inf, False
    ld = float(np.sum(np.log(diag[single])))
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    for c in np.flatnonzero(sizes > 1):
        idx = np.sort(order[bounds[c]:bounds[c + 1]])
        try:
            L = np.linalg.cholesky(K[idx][:, idx].toarray())
        except np.linalg.LinAlgError:
            return -np.inf, False
        ld += 2.0 * float(np.sum(np.log(np.diag(L))))
    return ld, True


def _trace_SK(K, Xt, divisor):
    """``tr(S K)`` with ``S = X^T X / divisor`` given ``Xt = X^T`` (p x n):
    ``sum_ij K_ij (x_i . x_j) / divisor`` over K's nonzeros."""
    return float(np.sum(np.asarray(K @ Xt) * Xt)) / divisor


def held_out_loglik(Xc, K):
    """Mean Gaussian log-likelihood of the centred rows ``Xc`` (n x p) under the
    sparse precision K, ``(log det K - tr(S K) - p log 2 pi) / 2`` with ``S`` their
    scatter; -inf when K is not positive definite."""
    ld, ok = sparse_logdet(K)
    if not ok:
        return -np.inf
    p = K.shape[0]
    return 0.5 * (ld - _trace_SK(K, np.ascontiguousarray(Xc.T), Xc.shape[0]) - p * _LOG_2PI)


def _upper_nnz(K):
    upper = sp.triu(K, 1)
    return int(np.count_nonzero(upper.data))


def cv_fold_from_data(X, tr, te, f, alphas, kw, assume_centered, center_test,
                      penalize_diagonal):
    """Held-out scores and edge counts along the path of one fold, every alpha a
    from-data fit on the training rows (the dense path's ``_cv_fold``, with no p x p
    array; a plain function, so it runs on a Dask worker as well)."""
    from .objective import fold_location

    Xtr, Xte = X[tr], X[te]
    if Xtr.shape[0] < 2 or Xte.shape[0] < 1:
        raise ValueError(f"fold {f} has {Xtr.shape[0]} training and {Xte.shape[0]} test "
                         "samples; need at least 2 and 1")
    cols = _Columns(Xtr, assume_centered)
    if not penalize_diagonal and np.any(cols.var == 0):
        j = int(np.flatnonzero(cols.var == 0)[0])
        raise DataFormatError(f"X (training part of fold {f})", None,
                              f"column {j} is constant (zero variance): its precision is "
                              "unbounded; remove constant columns or set penalize_diagonal=True")
    Xc = Xte - fold_location(Xtr, Xte, assume_centered, center_test)
    scores = np.full(alphas.size, -np.inf)
    edges = np.zeros(alphas.size)
    for k, res in enumerate(fit_path(cols, alphas, penalize_diagonal, kw)):
        scores[k] = held_out_loglik(Xc, res.precision)
        edges[k] = _upper_nnz(res.precision)
    return scores, edges


def fit_path(cols, alphas, penalize_diagonal, kw):
    """From-data fits of the columns ``cols`` at every alpha (in the order given),
    one after the other (a generator: only the caller keeps what it needs); the
    screening pass runs once, just below the smallest alpha (its near band, see
    :mod:`.sparse_newton`), and each fit keeps the pairs above its own alpha."""
    from .sparse_newton import MARGIN

    alphas = np.asarray(alphas, dtype=np.float64)
    # the near band below the smallest alpha too (the sparse path's check needs it)
    low = (1.0 - MARGIN) * float(alphas.min()) if alphas.size else 0.0
    screened = screen_from_data(cols, low) if low > 0 else None
    for a in alphas:
        yield solve_columns(cols, float(a), penalize_diagonal=penalize_diagonal,
                            screened=screened, screened_at=low if screened else None, **kw)


def refit_from_data(X, alpha, assume_centered, penalize_diagonal, kw):
    """The from-data fit at the chosen alpha on all data."""
    return solve_columns(_Columns(X, assume_centered), float(alpha),
                         penalize_diagonal=penalize_diagonal, **kw)


def ric_alpha_by_slabs(Z, rotations, block_bytes=2**26):
    """:func:`.select.ric_alpha` computed by slabs of columns (no p x p product):
    ``min_r max_{j != k} |sum_m Z[(m + r) mod n, j] Z[m, k]| / n``."""
    Z = np.asarray(Z, dtype=np.float64)
    n, p = Z.shape
    if p < 2:
        return 0.0
    rows = _slab_rows(p, block_bytes)
    best = np.inf
    for r in rotations:
        shift = -(int(r) % n)
        top = 0.0
        for a in range(0, p, rows):
            b = min(a + rows, p)
            M = np.roll(Z[:, a:b], shift, axis=0).T @ Z
            np.abs(M, out=M)
            M[np.arange(b - a), np.arange(a, b)] = 0.0          # j == k
            top = max(top, float(M.max()))
        best = min(best, top)
    return best / n


class SelectPath:
    """The standardised data of :class:`SparseGaussianMRFSelect` as columns whose
    covariance is the correlation matrix R (``Z^T Z / (n - 1)``, unit diagonal), and
    the from-data fits and scores that selection needs."""

    def __init__(self, Z, kw, penalize_diagonal):
        self.n, self.p = Z.shape
        self.cols = _Columns(Z, True, ddof=1)
        self.cols.var = np.ones(self.p)              # R's diagonal is exactly 1
        self.Zt = np.ascontiguousarray(Z.T)
        self.kw, self.penalize_diagonal = kw, penalize_diagonal

    def alpha_max(self):
        return alpha_max_from_data(self.cols)

    def fit(self, alpha):
        return solve_columns(self.cols, float(alpha), penalize_diagonal=self.penalize_diagonal,
                             **self.kw)

    def path(self, alphas):
        """The fits at every alpha (a generator; one screening pass, see
        :func:`fit_path`)."""
        return fit_path(self.cols, alphas, self.penalize_diagonal, self.kw)

    def loglik(self, K):
        """``log det K - tr(R K)`` (R's unit diagonal taken exactly)."""
        ld, ok = sparse_logdet(K)
        if not ok:
            return -np.inf
        d = K.diagonal()
        off = K - sp.diags(d)
        return ld - (_trace_SK(off, self.Zt, self.n - 1) + float(np.sum(d)))

    @staticmethod
    def edges(K):
        return _upper_nnz(K)

    @staticmethod
    def edge_pattern(K):
        """The strict upper triangle of K's pattern (float 1.0 per edge), CSR."""
        upper = sp.triu(K, 1, format="csr")
        upper.eliminate_zeros()
        upper.data = np.ones_like(upper.data)
        return upper


def scale_sparse(A, s, divide):
    """``A_ij / (s_i s_j)`` (``divide``) or ``A_ij * (s_i s_j)`` on A's stored entries
    (same pattern; the dense path's ``A / outer(s, s)`` and ``A * outer(s, s)``)."""
    A = sp.csr_matrix(A, copy=True)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    ss = s[rows] * s[A.indices]
    A.data = A.data / ss if divide else A.data * ss
    return A
