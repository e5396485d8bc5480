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

import numpy as np

from ..core.jit import kernel


@kernel()
def inverse_diagonal(indptr, indices, lval, d, zval, zdiag):
    """``zdiag`` <- diag(B^-1) (and ``zval`` <- B^-1 on the pattern of L). ``indptr``,
    ``indices``, ``lval``: L's strictly lower part in CSC with sorted rows. Returns
    False when an entry needed is missing from the pattern (then nothing is valid)."""
    p = d.size
    for j in range(p - 1, -1, -1):
        a, b = indptr[j], indptr[j + 1]
        for t in range(a, b):                        # Z_ij, i = indices[t]
            i = indices[t]
            acc = 0.0
            for q in range(a, b):
                k = indices[q]
                if k == i:
                    zki = zdiag[i]
                else:
                    lo, hi = (i, k) if i < k else (k, i)   # Z_ki in column lo, row hi
                    s, e = indptr[lo], indptr[lo + 1]
                    while s < e:                     # binary search of row hi
                        m = (s + e) // 2
                        if indices[m] < hi:
                            s = m + 1
                        else:
                            e = m
                    if s == indptr[lo + 1] or indices[s] != hi:
                        return False
                    zki = zval[s]
                acc -= lval[q] * zki
            zval[t] = acc
        acc = 1.0 / d[j]
        for t in range(a, b):
            acc -= lval[t] * zval[t]
        zdiag[j] = acc
    return True
