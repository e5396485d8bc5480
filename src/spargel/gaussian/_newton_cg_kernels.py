"""numba kernels of the orthant-wise Newton-CG solver (imported lazily by ``newton_cg``).

Vectors live on the *free set*: upper-triangle positions ``(rows[p], cols[p])``
(``rows[p] <= cols[p]``) listed column by column; an off-diagonal position
stands for the symmetric pair, so the Frobenius inner product of two such
vectors weighs it twice (``weights[p]`` is 2 off the diagonal and 1 on it).

The two products that conjugate gradients needs are both *sandwiches*
``P_F(A V A)`` of a symmetric V supported on the free set F:

* the Hessian of ``-log det X`` at X is ``V -> W V W`` with ``W = X^-1``
  (dense): ``sandwich_dense``;
* the preconditioner is the restriction of the inverse Hessian,
  ``V -> X V X``, with X sparse (compressed rows): ``sandwich_sparse``.

Both form ``U = V A`` row by row (each pair adds a multiple of one row of A
to one row of U) and then read ``(A U)_ij = A[i, :] . U[:, j]``.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def orthant_set(X, G, L, rows, cols, sgn, grad):
    """The free set of the orthant-wise Newton step at X (G = S - X^-1).

    Position (i, j), i <= j, is free when ``X_ij != 0`` or when
    ``|G_ij| > L_ij`` (moving it off zero decreases the objective); the
    diagonal always is. Its orthant sign is ``sign(X_ij)`` for a non-zero
    entry and ``-sign(G_ij)`` for a zero one; an unpenalised entry
    (``L_ij = 0``) gets sign 0 (smooth, never projected). ``grad`` receives
    the gradient of the objective restricted to the orthant,
    ``G_ij + L_ij sign_ij``. Positions are listed column by column.

    Returns (count, l1 norm of the minimum-norm subgradient over all
    entries): the latter is 0 exactly at the optimum.
    """
    n = X.shape[0]
    cnt = 0
    sub = 0.0
    for j in range(n):
        for i in range(j + 1):
            x = X[i, j]
            gij = G[i, j]
            lam = L[i, j]
            if x > 0.0:
                v = abs(gij + lam)
            elif x < 0.0:
                v = abs(gij - lam)
            else:
                v = abs(gij) - lam
                if v < 0.0:
                    v = 0.0
            sub += v if i == j else 2.0 * v
            if lam == 0.0:
                if not (i == j or x != 0.0 or gij != 0.0):
                    continue
                s = 0.0
            elif x != 0.0:
                s = 1.0 if x > 0.0 else -1.0
            elif abs(gij) > lam:
                s = -1.0 if gij > 0.0 else 1.0
            else:
                continue
            rows[cnt] = i
            cols[cnt] = j
            sgn[cnt] = s
            grad[cnt] = gij + lam * s
            cnt += 1
    return cnt, sub


@njit(cache=True, nogil=True, fastmath=True)
def sandwich_dense(A, v, rows, cols, col_ptr, col_of_group, U, buf, out):
    """``out[p] = (A V A)[rows[p], cols[p]]`` for the symmetric V with
    entries v on the free set; A dense symmetric. U (n x n) is scratch."""
    n = A.shape[0]
    m = v.shape[0]
    for i in range(n):
        for k in range(n):
            U[i, k] = 0.0
    for p in range(m):
        vp = v[p]
        if vp == 0.0:
            continue
        i = rows[p]
        j = cols[p]
        if i == j:
            for k in range(n):
                U[i, k] += vp * A[i, k]
        else:
            for k in range(n):
                U[i, k] += vp * A[j, k]
            for k in range(n):
                U[j, k] += vp * A[i, k]
    for grp in range(col_of_group.shape[0]):
        j = col_of_group[grp]
        for k in range(n):
            buf[k] = U[k, j]
        for p in range(col_ptr[grp], col_ptr[grp + 1]):
            i = rows[p]
            s = 0.0
            for k in range(n):
                s += A[i, k] * buf[k]
            out[p] = s


@njit(cache=True, nogil=True, fastmath=True)
def sandwich_sparse(indptr, indices, data, v, rows, cols, U, out):
    """``out[p] = (A V A)[rows[p], cols[p]]`` with A symmetric in compressed
    rows. U (n x n) must be all zeros on entry and is left all zeros."""
    m = v.shape[0]
    for p in range(m):
        vp = v[p]
        if vp == 0.0:
            continue
        i = rows[p]
        j = cols[p]
        for q in range(indptr[j], indptr[j + 1]):
            U[i, indices[q]] += vp * data[q]
        if i != j:
            for q in range(indptr[i], indptr[i + 1]):
                U[j, indices[q]] += vp * data[q]
    for p in range(m):
        i = rows[p]
        j = cols[p]
        s = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            s += data[q] * U[indices[q], j]
        out[p] = s
    for p in range(m):
        i = rows[p]
        j = cols[p]
        for q in range(indptr[j], indptr[j + 1]):
            U[i, indices[q]] = 0.0
        if i != j:
            for q in range(indptr[i], indptr[i + 1]):
                U[j, indices[q]] = 0.0


@njit(cache=True, nogil=True)
def dense_to_csr(X, indptr, indices, data):
    """Compressed rows of the non-zeros of X (arrays sized n + 1 and n * n)."""
    n = X.shape[0]
    nnz = 0
    indptr[0] = 0
    for i in range(n):
        for k in range(n):
            x = X[i, k]
            if x != 0.0:
                indices[nnz] = k
                data[nnz] = x
                nnz += 1
        indptr[i + 1] = nnz
    return nnz


@njit(cache=True, nogil=True, fastmath=True)
def _dot(a, b, w, m):
    s = 0.0
    for p in range(m):
        s += w[p] * a[p] * b[p]
    return s


@njit(cache=True, nogil=True)
def newton_cg_direction(W, indptr, indices, data, rows, cols, col_ptr, col_of_group,
                        weights, grad, d, max_iter, rtol, U, U0, buf, r, z, q, hq):
    """Preconditioned conjugate gradients for ``P_F(W D W) = -grad`` on the
    free set F, started from D = 0 (so every iterate is a descent direction
    of the orthant model). The preconditioner is ``V -> P_F(X V X)`` (X in
    compressed rows): the restriction of the inverse of the Hessian
    ``W (.) W``, exact when F is everything. Stops when the preconditioned
    residual norm has shrunk by ``rtol`` or after ``max_iter`` iterations.
    U must be zero on entry (kept zero); U0 is scratch. Returns the number
    of iterations."""
    m = grad.shape[0]
    for p in range(m):
        d[p] = 0.0
        r[p] = -grad[p]
    sandwich_sparse(indptr, indices, data, r, rows, cols, U, z)
    for p in range(m):
        q[p] = z[p]
    rz = _dot(r, z, weights, m)
    if not rz > 0.0:
        return 0
    stop = rtol * rtol * rz
    it = 0
    while it < max_iter:
        it += 1
        sandwich_dense(W, q, rows, cols, col_ptr, col_of_group, U0, buf, hq)
        qhq = _dot(q, hq, weights, m)
        if not qhq > 0.0:
            break
        a = rz / qhq
        for p in range(m):
            d[p] += a * q[p]
            r[p] -= a * hq[p]
        sandwich_sparse(indptr, indices, data, r, rows, cols, U, z)
        rz_new = _dot(r, z, weights, m)
        if rz_new <= stop:
            break
        beta = rz_new / rz
        rz = rz_new
        for p in range(m):
            q[p] = z[p] + beta * q[p]
    return it


@njit(cache=True, nogil=True)
def orthant_step(X, rows, cols, sgn, d, t, S, L, G, out, copy):
    """``out = P(X + t D)``: X with the free entries moved by t d and every
    entry that would leave its orthant (sign != sgn, sgn != 0) set to 0.
    ``copy``: first copy X into out (out may be X itself when False).

    Returns the changes (full-matrix sums) of ``tr(S X)``, of
    ``sum L |X|`` and of ``tr(G X)``.
    """
    n = X.shape[0]
    if copy:
        for i in range(n):
            for k in range(n):
                out[i, k] = X[i, k]
    dtr = 0.0
    dpen = 0.0
    dlin = 0.0
    for p in range(rows.shape[0]):
        i = rows[p]
        j = cols[p]
        x = X[i, j]
        y = x + t * d[p]
        s = sgn[p]
        if (s > 0.0 and y < 0.0) or (s < 0.0 and y > 0.0):
            y = 0.0
        if y == x:
            continue
        w = 1.0 if i == j else 2.0
        delta = y - x
        dtr += w * S[i, j] * delta
        dlin += w * G[i, j] * delta
        dpen += w * L[i, j] * (abs(y) - abs(x))
        out[i, j] = y
        out[j, i] = y
    return dtr, dpen, dlin
