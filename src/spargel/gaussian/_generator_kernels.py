"""numba kernel of :mod:`.generators`: the diagonal of the inverse of a sparse matrix
from its ``L D L^T`` factor (imported lazily).

Takahashi's recurrences: with ``B = L D L^T`` (L unit lower triangular) and
``Z = B^-1``, ``Z = D^-1 L^-1 + (I - L^T) Z``, so, column by column from the last,

    Z_ij = - sum_{k in s(j)} L_kj Z_ki        for i in s(j),
    Z_jj = 1 / d_j - sum_{k in s(j)} L_kj Z_kj,

``s(j)`` the rows below the diagonal of column j of L. Every ``Z_ki`` needed lies in
the pattern of L (the filled pattern is closed under elimination), so Z is computed
only there: about ``sum_j |s(j)|^2`` operations, the work of the factorisation itself.
"""

from __future__ import annotations

from ..core.jit import kernel


@kernel()
def inverse_diagonal(indptr, indices, lval, d, zval, zdiag, acc):
    """``zdiag`` <- diag(B^-1) (and ``zval`` <- B^-1 on the pattern of L). ``indptr``,
    ``indices``, ``lval``: L's strictly lower part in CSC with sorted rows; ``acc``: a
    buffer of the longest column's length. Each pair ``k > i`` of column j's rows is
    visited once, ``Z_ki`` found by walking column i's sorted rows alongside column j's
    (the rows of j below i are among i's), and gives to both ``Z_ij`` and ``Z_kj``.
    Returns False when an entry needed is missing from the pattern (then nothing is
    valid)."""
    p = d.size
    for j in range(p - 1, -1, -1):
        a, b = indptr[j], indptr[j + 1]
        for t in range(a, b):
            acc[t - a] = -lval[t] * zdiag[indices[t]]       # the term k = i
        for t in range(a, b):
            i = indices[t]
            r, re = indptr[i], indptr[i + 1]
            for q in range(t + 1, b):
                k = indices[q]
                while r < re and indices[r] < k:
                    r += 1
                if r == re or indices[r] != k:
                    return False
                z = zval[r]                                  # Z_ki, k > i
                acc[t - a] -= lval[q] * z
                acc[q - a] -= lval[t] * z
                r += 1
        x = 1.0 / d[j]
        for t in range(a, b):
            zval[t] = acc[t - a]
            x -= lval[t] * acc[t - a]
        zdiag[j] = x
    return True
