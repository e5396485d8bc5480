"""Factorisations of the Newton solvers: dense LAPACK, or sparse when the matrix is.

Each Newton iteration factorises trial points ``X + t D`` (positive definiteness and
log det) and inverts the accepted one (``W = X^-1``). Dense, that is ``n^3 / 3`` flops
for the Cholesky factor and ``2 n^3 / 3`` for the inverse (LAPACK ``dpotrf`` /
``dpotri``), whatever the sparsity of X. Yet X is the sparse estimate plus a direction
on the free set: on a chain or a graph of small separators its sparse factor (a
minimum-degree ordering) has a few entries per row, and the dense work is almost all
wasted (p = 20,000: 30 s a Cholesky, 60 s an inverse on one core).

:class:`Factorizer` (one per solve) decides per matrix:

* **Cholesky** -- a matrix of order at least :data:`SPARSE_MIN_ORDER` with at most
  :data:`SPARSE_MAX_PER_ROW` non-zeros per row on average is factorised by SuperLU
  (``scipy.sparse.linalg.splu``: minimum-degree ordering on ``A + A^T``, symmetric mode,
  diagonal pivots only, so the factor is ``P^T A P = L D L^T`` with ``U = D L^T``). A
  symmetric matrix is positive definite exactly when such a factorisation exists with
  every pivot positive; log det is the sum of the pivots' logs. A matrix SuperLU cannot
  factorise on its diagonal (a zero pivot, an off-diagonal pivot) is not positive
  definite. Once a factor's fill passes :data:`SPARSE_MAX_FILL` times ``n^2`` the solve
  stops trying (dense LAPACK from then on): the sparse path is never much slower than
  the dense one.
* **Inverse** -- from a sparse factor with at most :data:`INVERSE_MAX_FILL` times ``n^2``
  entries, by solving for the identity in slabs of :data:`SLAB` columns (each column
  costs about twice the factor's entries in flops, against ``2 n^2 / 3`` per column
  for ``dpotri``); otherwise the dense factor and inverse of the same matrix, as
  before. Either way the inverse is written into the trial point's memory and is
  exactly symmetric (its lower triangle mirrored), so the solvers keep their four
  n x n arrays.

SuperLU's work is many small BLAS calls, which OpenBLAS's threads only slow down (on
a busy machine by half again): the sparse factorisations and solves run on one BLAS
thread. The dense primitives (:func:`dense_cholesky`, :func:`dense_inverse`) are LAPACK's in
place; every factor, dense or sparse, holds the memory it came from.

>>> import numpy as np
>>> A = np.eye(3) * 2.0
>>> fz = Factorizer(3)
>>> f, logdet = fz.cholesky(A.copy())
>>> round(logdet, 12) == round(3 * np.log(2.0), 12)
True
>>> fz.inverse(f, lambda W: None)[0, 0]
0.5
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .objective import one_blas_thread

__all__ = ["Factorizer", "dense_cholesky", "dense_inverse", "SPARSE_MIN_ORDER"]

#: matrices of smaller order are always factorised dense (LAPACK is fast there)
SPARSE_MIN_ORDER = 1000
#: the sparse factorisation is tried when the matrix has at most this many non-zeros
#: per row on average
SPARSE_MAX_PER_ROW = 64
#: a sparse factor with more entries than this share of n^2 ends the sparse attempts
#: of a solve (SuperLU's supernodes are slower than LAPACK's dense blocks)
SPARSE_MAX_FILL = 0.05
#: the inverse is computed from the sparse factor when it has at most this share of n^2
#: entries (measured break-even on this project's machines: about 0.02)
INVERSE_MAX_FILL = 0.015
#: columns of the identity solved for at a time
SLAB = 256


def dense_cholesky(B):
    """Upper Cholesky of the symmetric C-contiguous B, in B's memory (as the lower
    triangle of B in C order). Returns (factor view, log det), or (None, -inf) when B
    is not positive definite."""
    c, info = lapack.dpotrf(B.T, lower=False, clean=False, overwrite_a=True)
    if info != 0:
        return None, -np.inf
    return c, 2.0 * float(np.sum(np.log(np.diagonal(c))))


def dense_inverse(c, mirror):
    """Inverse from :func:`dense_cholesky`'s factor: the C-contiguous symmetric matrix
    in the same memory (``mirror`` copies its lower triangle to the upper one)."""
    inv, info = lapack.dpotri(c, lower=False, overwrite_c=True)
    if info != 0:  # pragma: no cover - the factor came from a successful dpotrf
        raise np.linalg.LinAlgError("dpotri failed")
    A = inv.T  # C-contiguous view; its lower triangle holds the inverse
    mirror(A)
    return A


class SparseFactor:
    """SuperLU's factor of the symmetric matrix held in ``B`` (left unchanged)."""

    __slots__ = ("lu", "B", "fill")

    def __init__(self, lu, B, fill):
        self.lu, self.B, self.fill = lu, B, fill


class Factorizer:
    """The factorisations of one solve of order n (see the module's text).

    ``sparse`` (default: from the order) allows the sparse path; ``stats`` counts the
    factorisations and inverses of each kind."""

    def __init__(self, n, sparse=None):
        self.n = n
        self.sparse = n >= SPARSE_MIN_ORDER if sparse is None else bool(sparse)
        self.stats = {"dense_cholesky": 0, "sparse_cholesky": 0, "dense_inverse": 0,
                      "sparse_inverse": 0}
        self._csr = None

    def cholesky(self, B):
        """Factor of the symmetric C-contiguous B with its log det, or (None, -inf)
        when B is not positive definite. A dense factor overwrites B; a sparse one
        leaves it as it is."""
        if self.sparse:
            got = self._sparse_cholesky(B)
            if got is not None:
                return got
        self.stats["dense_cholesky"] += 1
        return dense_cholesky(B)

    def inverse(self, factor, mirror):
        """The inverse of the factorised matrix, C-contiguous and exactly symmetric, in
        the factor's memory."""
        if not isinstance(factor, SparseFactor):
            self.stats["dense_inverse"] += 1
            return dense_inverse(factor, mirror)
        B = factor.B
        if factor.fill > INVERSE_MAX_FILL * self.n * self.n:
            c, _ = dense_cholesky(B)
            if c is None:  # pragma: no cover - SuperLU found it positive definite
                raise np.linalg.LinAlgError("a matrix with a positive sparse factor failed dpotrf")
            self.stats["dense_inverse"] += 1
            return dense_inverse(c, mirror)
        n = self.n
        E = np.zeros((n, min(SLAB, n)), order="F")
        with one_blas_thread():
            for a in range(0, n, SLAB):
                b = min(a + SLAB, n)
                E[:, :b - a] = 0.0
                E[np.arange(a, b), np.arange(b - a)] = 1.0
                cols = factor.lu.solve(E[:, :b - a])
                B[a:b] = cols.T                      # rows a..b of the symmetric inverse
        mirror(B)
        self.stats["sparse_inverse"] += 1
        return B

    def _sparse_cholesky(self, B):
        """SuperLU's factor of B when B is sparse enough (None: use LAPACK)."""
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        from ._newton_cg_kernels import dense_to_csr

        n = self.n
        if self._csr is None:           # room for SPARSE_MAX_PER_ROW non-zeros a row
            cap = SPARSE_MAX_PER_ROW * n
            self._csr = (np.empty(n + 1, dtype=np.int64), np.empty(cap, dtype=np.int64), np.empty(cap))
        indptr, indices, data = self._csr
        nnz = dense_to_csr(B, indptr, indices, data)
        if nnz < 0:                     # too many non-zeros: LAPACK
            return None
        # B is symmetric: its compressed rows are its compressed columns
        A = sp.csc_matrix((data[:nnz], indices[:nnz], indptr), shape=(n, n))
        self.stats["sparse_cholesky"] += 1
        try:
            with one_blas_thread():
                lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                          options={"SymmetricMode": True})
        except RuntimeError:       # a zero pivot: singular, so not positive definite
            return None, -np.inf
        fill = int(lu.nnz)              # the entries of L and U
        if fill > SPARSE_MAX_FILL * n * n:
            self.sparse = False
        pivots = lu.U.diagonal()
        if not (np.array_equal(lu.perm_r, lu.perm_c) and np.all(pivots > 0.0)):
            return None, -np.inf
        return SparseFactor(lu, B, fill), float(np.sum(np.log(pivots)))
