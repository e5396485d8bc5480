"""Objective, dual, duality gap and input validation for sparse Gaussian MRFs.

The problem (Banerjee et al. 2006; Duchi, Gould & Koller 2008, eq. 1) is

    minimise_{K > 0}  f(K) = -log det K + tr(S K) + sum_ij L_ij |K_ij|

with S the empirical covariance and L a symmetric matrix of non-negative
per-entry weights (the full-matrix sum counts every off-diagonal pair twice,
as in the paper and in scikit-learn's ``GraphicalLasso``). Its dual (eq. 2) is

    maximise_{|W_ij| <= L_ij}  g(W) = log det(S + W) + n

and for any primal K > 0 and dual-feasible W with S + W > 0,
``f(K) - g(W) >= f(K) - f* >= 0``: the *duality gap* is a certified bound on
the primal suboptimality. For the primal-dual pair K = (S + W)^-1 it reduces to
the paper's ``tr(S K) + sum_ij L_ij |K_ij| - n``.

Everything here is plain numpy/LAPACK; no numba.

>>> import numpy as np
>>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
>>> L = penalty_matrix(0.1, 2)
>>> K = np.linalg.inv(S + np.array([[0, -0.1], [-0.1, 0]]))
>>> round(primal_objective(K, S, L) - dual_objective(S + np.array([[0, -0.1], [-0.1, 0]])), 12)
0.0
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
from scipy.linalg import lapack

from ..errors import DataFormatError, NonNumericDataError, ParameterError

__all__ = [
    "as_matrix",
    "validate_covariance",
    "penalty_matrix",
    "empirical_covariance",
    "logdet_pd",
    "primal_objective",
    "dual_objective",
    "duality_gap",
    "dual_point_from_primal",
    "interior_dual_start",
    "alpha_max",
]


def _check_finite(A, name):
    if not np.all(np.isfinite(A)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(A))[0])
        raise DataFormatError(name, None, f"contains NaN or infinite values (first at row {i}, "
                              f"column {j})")


def as_matrix(A, name="X"):
    """``A`` as a 2-D float64 array, or a clear :class:`DataFormatError`.

    Refuses sparse matrices, complex numbers, non-numeric entries, 1-D input
    and empty input (scikit-learn's wording where its checks look for it).

    >>> as_matrix([[1, 2], [3, 4]]).dtype
    dtype('float64')
    >>> as_matrix([1.0, 2.0])
    Traceback (most recent call last):
    ...
    spargel.errors.DataFormatError: X: must be a 2-D array (samples x variables), got a 1-D array of shape (2,); use X.reshape(-1, 1) for one variable or X.reshape(1, -1) for one sample
    """
    if hasattr(A, "nnz") and hasattr(A, "toarray"):
        raise DataFormatError(name, None, "sparse matrices are not supported: pass a dense "
                              "array (X.toarray())")
    if hasattr(A, "to_numpy") and hasattr(A, "columns"):   # a data frame
        A = A.to_numpy()
    try:
        arr = np.asarray(A)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(name, None, f"must be a numeric matrix ({exc})") from None
    if np.iscomplexobj(arr):
        raise DataFormatError(name, None, "Complex data not supported")
    try:
        arr = np.array(arr, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise NonNumericDataError(name, None, f"must be a numeric matrix: {exc}") from None
    if arr.ndim != 2:
        if arr.ndim == 1:
            raise DataFormatError(name, None, "must be a 2-D array (samples x variables), got a "
                                  f"1-D array of shape {arr.shape}; use {name}.reshape(-1, 1) "
                                  f"for one variable or {name}.reshape(1, -1) for one sample")
        raise DataFormatError(name, None, f"must be a 2-D array, got {arr.ndim} dimension(s)")
    if arr.shape[0] < 1:
        raise DataFormatError(name, None, f"0 sample(s) (shape={arr.shape}) while a minimum of 1 "
                              "is required.")
    if arr.shape[1] < 1:
        raise DataFormatError(name, None, f"0 feature(s) (shape={arr.shape}) while a minimum of 1 "
                              "is required.")
    _check_finite(arr, name)
    return arr


def validate_covariance(S, name="S", check_psd=False):
    """Return S as a C-contiguous float64 symmetric matrix, or raise DataFormatError.

    Checks: 2-D, square, finite, symmetric (to 1e-10 relative), non-negative
    diagonal, and with ``check_psd`` positive semidefinite (up to rounding).
    Asymmetry below the tolerance is removed by symmetrising.

    >>> validate_covariance([[1.0, 0.2], [0.2, 2.0]]).shape
    (2, 2)
    >>> validate_covariance([[1.0, 0.2], [0.3, 2.0]])
    Traceback (most recent call last):
    ...
    spargel.errors.DataFormatError: S: is not symmetric (max |S - S.T| = 0.1)
    """
    S = as_matrix(S, name)
    if S.shape[0] != S.shape[1]:
        raise DataFormatError(name, None, f"must be square, got shape {S.shape}")
    asym = float(np.max(np.abs(S - S.T)))
    scale = float(np.max(np.abs(S)))
    if asym > 1e-10 * scale:
        raise DataFormatError(name, None, f"is not symmetric (max |{name} - {name}.T| = {asym:.3g})")
    S = 0.5 * (S + S.T)
    diag = np.diag(S)
    if np.any(diag < 0):
        j = int(np.flatnonzero(diag < 0)[0])
        raise DataFormatError(name, None, f"has a negative diagonal entry ({name}[{j}, {j}] = "
                              f"{diag[j]:.3g}); variances must be >= 0")
    if check_psd:
        _check_psd(S, name)
    return S


def _check_psd(S, name):
    """Raise unless S is positive semidefinite up to rounding: S + delta I
    must have a Cholesky factor, delta = 100 eps n max(diag S)."""
    n = S.shape[0]
    top = float(np.max(np.diag(S))) if n else 0.0
    if top == 0.0:
        if np.any(S != 0):
            raise DataFormatError(name, None, "is not positive semidefinite (zero diagonal but "
                                  "non-zero off-diagonal entries)")
        return
    delta = 100.0 * np.finfo(float).eps * n * top
    s = np.sqrt(np.maximum(np.diag(S), delta))
    # correlation scale, so that the test does not depend on the units
    C = S / np.outer(s, s)
    C[np.diag_indices(n)] += 100.0 * np.finfo(float).eps * n
    _, info = lapack.dpotrf(C, lower=False, clean=False, overwrite_a=True)
    if info != 0:
        lam = float(np.linalg.eigvalsh(S)[0])
        raise DataFormatError(name, None, f"is not positive semidefinite (smallest eigenvalue "
                              f"{lam:.3g}); a covariance matrix must be")


def penalty_matrix(alpha, n, penalize_diagonal=False):
    """Per-entry weight matrix L from a scalar or an (n, n) array.

    A scalar gives ``alpha`` on every off-diagonal entry and 0 (or ``alpha``
    when ``penalize_diagonal``) on the diagonal. An array is validated
    (shape, finite, non-negative, symmetric) and used as is, except that its
    diagonal is zeroed unless ``penalize_diagonal`` is true.

    >>> penalty_matrix(0.5, 2)
    array([[0. , 0.5],
           [0.5, 0. ]])
    """
    if isinstance(alpha, (str, bytes, bool, np.bool_)):
        raise ParameterError(f"alpha must be a number or an (n, n) array, got {alpha!r}")
    if np.ndim(alpha) == 0:
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise ParameterError(f"alpha must be a number or an (n, n) array, got {alpha!r}") from None
        if not np.isfinite(a):
            raise ParameterError("alpha must be finite")
        if a < 0:
            raise ParameterError(f"alpha must be non-negative, got {a}")
        L = np.full((n, n), a)
        if not penalize_diagonal:
            np.fill_diagonal(L, 0.0)
        return L
    try:
        L = np.array(alpha, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"alpha must be a number or an (n, n) array: {exc}") from None
    if L.shape != (n, n):
        raise ParameterError(f"alpha as a weight matrix must have shape ({n}, {n}), got {L.shape}")
    _check_finite(L, "alpha (weight matrix)")
    if np.any(L < 0):
        raise ParameterError("alpha (weight matrix) has negative weights; weights must be >= 0")
    if float(np.max(np.abs(L - L.T))) > 1e-12 * max(1.0, float(np.max(L))):
        raise ParameterError("alpha (weight matrix) is not symmetric")
    L = 0.5 * (L + L.T)
    if not penalize_diagonal:
        np.fill_diagonal(L, 0.0)
    return L


#: Gram matrices of at least this many entries are computed by row slabs: numpy's
#: ``X.T @ X`` calls OpenBLAS's threaded syrk, which in OpenBLAS 0.3.31 (numpy 2.4's)
#: crashes once the result passes 2**31 bytes (p = 16,500 with 1,000 rows: a segfault;
#: p = 15,000 works); the limit keeps a factor of two from that size
GRAM_SLAB_ENTRIES = 2 ** 27
#: rows of the Gram matrix computed at a time above that size
GRAM_SLAB = 2048


#: matrices of this order or more are factorised and inverted with one BLAS thread:
#: OpenBLAS 0.3.31's threaded Cholesky (through its threaded symmetric rank-k update)
#: crashes once the matrix passes 2**31 bytes (p = 17,000: a segfault; with one thread
#: it factorises in 24 s and inverts in 43 s on this project's 2-core machines)
ONE_THREAD_ORDER = 15_000


def one_blas_thread():
    """A context in which BLAS and LAPACK run on one thread (``threadpoolctl``)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


#: below this order the dense factorisations and products of the solvers run on one BLAS
#: thread: each call is too short for the threads to pay, and on a busy machine OpenBLAS's
#: waiting threads spin: a p = 452 fit took 6.6 s of wall time on two threads beside one
#: busy process (0.75 s on one), p = 1,500 34 s (14 s on one), on a 2-core machine
MULTI_THREAD_MIN_ORDER = 4096


def machine_is_busy():
    """Whether the last minute's load average reaches the number of cores (then a BLAS
    thread more only waits for a core, spinning)."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1)
    except (AttributeError, OSError):           # no load average on this platform
        return False


def lapack_threads(p):
    """A context for the dense linear algebra of a p x p problem: one BLAS thread
    (:func:`one_blas_thread`) below :data:`MULTI_THREAD_MIN_ORDER`, on a busy machine
    (:func:`machine_is_busy`) and from :data:`ONE_THREAD_ORDER` on; BLAS's own setting
    otherwise."""
    if p < MULTI_THREAD_MIN_ORDER or p >= ONE_THREAD_ORDER or machine_is_busy():
        return one_blas_thread()
    return contextlib.nullcontext()


def gram(X):
    """``X.T @ X`` for a 2-D float64 ``X``: numpy's product (a symmetric rank-k update)
    for up to :data:`GRAM_SLAB_ENTRIES` entries, else by slabs of :data:`GRAM_SLAB`
    rows (general products into the result, then each pair of off-diagonal blocks
    made equal: the result is exactly symmetric either way).

    >>> X = np.arange(6.0).reshape(3, 2)
    >>> gram(X)
    array([[20., 26.],
           [26., 35.]])
    """
    p = X.shape[1]
    if p * p < GRAM_SLAB_ENTRIES:
        return X.T @ X
    b = GRAM_SLAB
    C = np.empty((p, p))
    for i in range(0, p, b):
        np.matmul(X[:, i:i + b].T, X, out=C[i:i + b])
    for i in range(0, p, b):
        D = C[i:i + b, i:i + b]
        D[...] = 0.5 * (D + D.T)
        for j in range(i + b, p, b):
            upper, lower = C[i:i + b, j:j + b], C[j:j + b, i:i + b]
            upper += lower.T
            upper *= 0.5
            lower[...] = upper.T
    return C


def fold_location(Xtr, Xte, assume_centered, center_test):
    """Where a cross-validation fold's held-out rows are centred: at 0 (``assume_centered``), at their
    own mean (``center_test="test"``) or at the training rows' mean."""
    if assume_centered:
        return np.zeros(Xtr.shape[1])
    return Xte.mean(axis=0) if center_test == "test" else Xtr.mean(axis=0)


def empirical_covariance(X, assume_centered=False, name="X", overwrite_X=False):
    """Maximum-likelihood covariance ``X_c.T @ X_c / m`` (divides by m, as
    scikit-learn's ``empirical_covariance``), after validating X.

    Computed on columns rescaled to ``max |x| = 1`` and scaled back, so that
    data in very large or very small units neither overflow nor lose their
    precision; a variance that does not fit in double precision (below
    ~2e-308 or above ~1.8e308) is a clear error rather than an ``inf`` or 0.
    The work is done in place on one validated copy of X and on the result
    (one n x n array; ``overwrite_X=True``, for a caller that owns a C-contiguous
    float64 X and no longer needs it, uses X itself, which is then garbage).

    >>> empirical_covariance([[1.0, 0.0], [-1.0, 0.0]])
    array([[1., 0.],
           [0., 0.]])
    """
    own = overwrite_X and isinstance(X, np.ndarray) and X.dtype == np.float64 \
        and X.ndim == 2 and X.flags.c_contiguous and X.flags.writeable
    X = X if own else as_matrix(X, name)
    if own:
        _check_finite(X, name)
    m = X.shape[0]
    if not assume_centered:
        X -= X.mean(axis=0)
    a = np.max(np.abs(X), axis=0)
    a_safe = np.where(a > 0, a, 1.0)
    X /= a_safe
    C = gram(X)
    del X
    C /= m
    c_diag = np.diag(C).copy()
    with np.errstate(over="ignore", under="ignore"):
        S = C
        S *= a_safe[:, None]
        S *= a_safe[None, :]
        var = c_diag * a_safe * a_safe
    tiny = np.finfo(float).tiny
    bad = (c_diag > 0) & ~((var >= tiny) & np.isfinite(var))
    if np.any(bad):
        j = int(np.flatnonzero(bad)[0])
        sd = float(np.sqrt(c_diag[j]) * a_safe[j])
        raise DataFormatError(name, None, f"column {j} has standard deviation {sd:.3g}: its variance "
                              "is outside the range of double precision, and so would be its "
                              f"precision; rescale the variables (e.g. standardise the columns)")
    S[np.diag_indices_from(S)] = var
    return np.ascontiguousarray(S)


def logdet_pd(A):
    """``(log det A, True)`` for a symmetric positive definite A, else ``(-inf, False)``.

    Uses one LAPACK Cholesky (dpotrf) on a copy.

    >>> bool(np.isclose(logdet_pd(np.eye(3) * 2)[0], 3 * np.log(2)))
    True
    """
    c, info = lapack.dpotrf(A, lower=False, clean=False, overwrite_a=False)
    if info != 0:
        return -np.inf, False
    d = np.diag(c)
    return 2.0 * float(np.sum(np.log(d))), True


def primal_objective(K, S, L):
    """``-log det K + tr(S K) + sum_ij L_ij |K_ij|``; +inf when K is not PD.

    >>> primal_objective(np.eye(2), np.eye(2), np.zeros((2, 2)))
    2.0
    """
    ld, ok = logdet_pd(K)
    if not ok:
        return np.inf
    return -ld + float(np.vdot(S, K)) + float(np.vdot(L, np.abs(K)))


def dual_objective(Sigma):
    """Dual value ``log det(S + W) + n`` given ``Sigma = S + W``; -inf if not PD."""
    ld, ok = logdet_pd(Sigma)
    if not ok:
        return -np.inf
    return ld + Sigma.shape[0]


def dual_point_from_primal(K_inv, S, L):
    """Dual-feasible ``W = clip(K^-1 - S, -L, L)`` (entries with L = 0 get W = 0).

    At the optimum ``K^-1 = S + W*`` so this is exact there; elsewhere it is a
    feasible point whose dual value certifies the primal iterate.
    """
    return np.clip(K_inv - S, -L, L)


def duality_gap(K, S, L, K_inv=None):
    """Certified duality gap ``f(K) - g(W)`` with W the clipped dual point.

    Returns ``(gap, f, g)``; ``gap >= f(K) - f*`` always holds (up to
    rounding); it is +inf when the dual point is not positive definite
    (then nothing is certified).

    >>> S = np.array([[2.0, 0.1], [0.1, 1.0]])
    >>> L = penalty_matrix(0.5, 2)           # 0.5 > |S_12|: K* is diagonal
    >>> K = np.diag(1 / np.diag(S))
    >>> gap, f, g = duality_gap(K, S, L)
    >>> abs(gap) < 1e-12
    True
    """
    if K_inv is None:
        K_inv = np.linalg.inv(K)
    f = primal_objective(K, S, L)
    W = dual_point_from_primal(K_inv, S, L)
    g = dual_objective(S + W)
    if not np.isfinite(f) or not np.isfinite(g):
        return np.inf, f, g
    return f - g, f, g


def interior_dual_start(S, L):
    """The interior dual start point of Lemma 1 (generalised to per-entry weights).

    Returns ``Sigma0 = S + W0`` positive definite with ``|W0_ij| < L_ij`` off the
    diagonal, ``W0_ii = L_ii``. With D = diag(S) + diag(L) and
    ``Sigma(g) = g S_off + D`` this is the paper's eq. (3) for g in [0, 1); g is
    halved from the largest value with ``|(1-g) S_ij| <= 0.99 L_ij`` until
    Sigma(g) is positive definite (g = 0, a diagonal matrix, always is when
    diag(S) + diag(L) > 0). Entries with ``L_ij = 0`` off the diagonal need
    ``W_ij = 0``; they are kept at S_ij and positive definiteness is checked.

    Raises ValueError when no strictly feasible start exists.
    """
    n = S.shape[0]
    d = np.diag(S) + np.diag(L)
    if np.any(d <= 0):
        bad = int(np.flatnonzero(d <= 0)[0])
        raise ValueError(
            f"variable {bad} has zero variance and an unpenalised diagonal: the "
            "likelihood is unbounded (remove constant columns or penalise the diagonal)")
    free = L > 0
    np.fill_diagonal(free, False)
    off = S.copy()
    np.fill_diagonal(off, 0.0)
    shrink = np.where(free, off, 0.0)      # entries moved towards 0 by (1 - g)
    fixed = np.where(free, 0.0, off)       # L_ij = 0: W_ij = 0, entry stays S_ij
    a = np.abs(shrink)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(a > 0, 1.0 - L / np.where(a > 0, a, 1.0), -np.inf)
    g_min = max(0.0, float(need.max()))
    for frac in (0.5, 0.9, 0.99, 0.1, 0.0):
        g = g_min + frac * (1.0 - g_min)
        Sigma = g * shrink + fixed
        Sigma[np.diag_indices(n)] = d
        if logdet_pd(Sigma)[1]:
            return Sigma
    raise ValueError(
        "no strictly feasible dual point: with zero weights on some off-diagonal "
        "entries the problem is unbounded for this S (use positive weights)")


def alpha_max(S, penalty_weights=None):
    """Smallest scalar alpha for which the solution is diagonal.

    With weights ``alpha * P`` (P the off-diagonal pattern, all ones by
    default) the solution is diagonal iff ``|S_ij| <= alpha P_ij`` for all
    i != j (the maximum-determinant completion argument of Sec. 2.1), so
    ``alpha_max = max_{i != j} |S_ij| / P_ij``.

    >>> alpha_max(np.array([[1.0, -0.3], [-0.3, 1.0]]))
    0.3
    """
    S = np.asarray(S, dtype=np.float64)
    A = np.abs(S).copy()
    np.fill_diagonal(A, 0.0)
    if penalty_weights is None:
        return float(A.max()) if A.size > 1 else 0.0
    P = np.asarray(penalty_weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(P > 0, A / P, np.where(A > 0, np.inf, 0.0))
    np.fill_diagonal(r, 0.0)
    return float(r.max())
