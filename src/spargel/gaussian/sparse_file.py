"""Sparse (CSR) matrices of a Gaussian MRF in spargel's safe model format.

A model fitted on the from-data path (``covariance='from_data'``) holds its
precision and covariance as ``scipy.sparse.csr_matrix``; :meth:`save` writes each
as three plain arrays (``NAME_indptr``, ``NAME_indices``, ``NAME_data``) and
:meth:`load` reads them back through :func:`read_csr`, which trusts nothing: the
array sizes were already bounded by the model file's reader, and here every
offset and index is checked (``indptr`` starts at 0, never decreases and ends
at the number of entries; column indices lie in ``[0, p)`` and increase strictly
within a row) before scipy sees them. :func:`check_precision` then checks the
model itself (finite, symmetric, positive definite) with work bounded by what
the file holds: the positive definiteness is tested by a dense Cholesky
factorisation of each connected component of the precision's pattern, and the
sum of those blocks' sizes may not exceed the entries stored in the file (in a
real model each component lies inside a dense block of the covariance), so a
forged pattern cannot make it allocate more than the file's own arrays.

>>> import numpy as np, scipy.sparse as sp
>>> K = sp.csr_matrix(np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, 0.0], [0.0, 0.0, 1.0]]))
>>> a = csr_arrays("precision", K)
>>> sorted(a)
['precision_data', 'precision_indices', 'precision_indptr']
>>> back = read_csr(a, "precision", 3, "m.model")
>>> bool((back != K).nnz == 0)
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ModelFileError

__all__ = ["csr_arrays", "read_csr", "check_precision"]

_PARTS = ("indptr", "indices", "data")


def csr_arrays(name, A):
    """The CSR arrays of the sparse matrix ``A`` under ``NAME_indptr`` /
    ``NAME_indices`` / ``NAME_data`` (canonical form: sorted indices, no duplicates)."""
    A = sp.csr_matrix(A)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    return {f"{name}_indptr": np.asarray(A.indptr), f"{name}_indices": np.asarray(A.indices),
            f"{name}_data": np.asarray(A.data, dtype=np.float64)}


def _fail(path, message):
    raise ModelFileError(f"{path}: invalid model ({message})")


def read_csr(arrays, name, p, path):
    """The p x p CSR matrix ``name`` from a model file's arrays, every offset and
    index checked first (:class:`ModelFileError` naming ``path`` otherwise)."""
    parts = [arrays.get(f"{name}_{part}") for part in _PARTS]
    if any(a is None for a in parts):
        _fail(path, f"the sparse matrix {name!r} lacks one of its arrays")
    indptr, indices, data = parts
    if indptr.dtype.kind != "i" or indices.dtype.kind != "i" or data.dtype != np.float64:
        _fail(path, f"the sparse matrix {name!r} has arrays of the wrong type")
    if indptr.ndim != 1 or indices.ndim != 1 or data.ndim != 1 or indptr.shape[0] != p + 1:
        _fail(path, f"the sparse matrix {name!r} does not have {p + 1} row offsets")
    nnz = indices.shape[0]
    if data.shape[0] != nnz:
        _fail(path, f"the sparse matrix {name!r} has {data.shape[0]} values for {nnz} indices")
    ptr = indptr.astype(np.int64, copy=False)
    if ptr[0] != 0 or ptr[-1] != nnz or np.any(np.diff(ptr) < 0):
        _fail(path, f"the sparse matrix {name!r} has row offsets out of order or out of range")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= p):
        _fail(path, f"the sparse matrix {name!r} has a column index outside [0, {p})")
    if nnz > 1:
        # strictly increasing within each row: a step down (or a repeat) only at row starts
        steps = np.diff(indices.astype(np.int64, copy=False)) <= 0
        starts = np.zeros(nnz, dtype=bool)
        starts[ptr[1:-1][ptr[1:-1] < nnz]] = True
        if np.any(steps & ~starts[1:]):
            _fail(path, f"the sparse matrix {name!r} has unsorted or repeated column indices")
    if not np.all(np.isfinite(data)):
        _fail(path, f"the sparse matrix {name!r} has non-finite values")
    itype = np.int32 if max(nnz, p) < 2**31 - 1 else np.int64
    return sp.csr_matrix((data.copy(), indices.astype(itype), indptr.astype(itype)),
                         shape=(p, p))


#: a sparse-path model's factor may hold this many entries per value in the file
FACTOR_PER_VALUE = 64
#: ... and at least this many
FACTOR_FLOOR = 2**22


def _symmetric(A):
    return (A != A.T).nnz == 0


def check_precision(K, C, stored, path):
    """Check a sparse model: K and C symmetric, K positive definite (a dense
    Cholesky factorisation per connected component of K's pattern, refused when
    those blocks together would be larger than ``stored``, the number of values
    the file holds)."""
    from scipy.sparse.csgraph import connected_components

    if not _symmetric(K):
        _fail(path, "precision is not symmetric")
    if not _symmetric(C):
        _fail(path, "covariance is not symmetric")
    p = K.shape[0]
    n_comp, labels = connected_components(K, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    if float(np.sum(sizes.astype(np.float64) ** 2)) > stored:
        # a model from the sparse path: its components are sparse, not dense blocks
        return _check_sparse_factor(K, stored, path)
    diag = K.diagonal()
    single = sizes[labels] == 1
    if not np.all(diag[single] > 0):
        _fail(path, "precision is not positive definite")
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    for c in np.flatnonzero(sizes > 1):
        idx = np.sort(order[bounds[c]:bounds[c + 1]])
        try:
            np.linalg.cholesky(K[idx][:, idx].toarray())
        except np.linalg.LinAlgError:
            _fail(path, "precision is not positive definite")
    return p


def _check_sparse_factor(K, stored, path):
    """Positive definiteness of K from a sparse LDL^T factor, in an order found
    without factorising; a factor of more than :data:`FACTOR_PER_VALUE` times the
    values the file stores (or :data:`FACTOR_FLOOR`) is refused before it is
    allocated."""
    from .sparse_newton import SparsePattern, bandwidth_ordering

    p = K.shape[0]
    U = sp.triu(K, 1).tocoo()
    cap = max(FACTOR_FLOOR, FACTOR_PER_VALUE * int(stored))
    perm = bandwidth_ordering(p, U.row.astype(np.int64), U.col.astype(np.int64), cap)
    if perm is None:
        _fail(path, "the precision's sparse factor would be far larger than the file")
    P = SparsePattern(p, U.row, U.col, perm=perm, max_factor=cap)
    x = np.empty(P.m)
    x[P.pair_entry] = U.data
    x[P.diag] = K.diagonal()[P.node_of[P.erow[P.diag]]]
    if not np.isfinite(P.factor(x)):
        _fail(path, "precision is not positive definite")
    return p
