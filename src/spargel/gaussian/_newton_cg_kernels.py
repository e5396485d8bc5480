"""numba kernels of the orthant-wise Newton-CG solver (imported lazily by ``newton_cg``).

Vectors live on the *free set*: upper-triangle positions ``(rows[p], cols[p])``
(``rows[p] <= cols[p]``) listed column by column; an off-diagonal position
stands for the symmetric pair, so the Frobenius inner product of two such
vectors weighs it twice (``weights[p]`` is 2 off the diagonal and 1 on it).

The two products that conjugate gradients needs are both *sandwiches*
``P_F(A V A)`` of a symmetric V supported on the free set F:

* the Hessian of ``-log det X`` at X is ``V -> W V W`` with ``W = X^-1``
  (dense, used in single precision): ``sandwich_dense``;
* the preconditioner is the restriction of the inverse Hessian,
  ``V -> X V X``, with X sparse (compressed rows): ``sandwich_sparse``.

Both work row by row on the symmetric pattern of F (``symmetric_rows``),
so that every write stays within one row of a scratch matrix.

Conjugate gradients (:func:`newton_cg_direction`) takes its state as three named tuples
(numba compiles a named tuple as a plain one and reads a field by name like a slot):
:data:`FreeSet` (where the vectors live), :data:`PreconditionerX` (X in the forms the
preconditioner reads) and :data:`CGWork` (its scratch).
"""

from collections import namedtuple

from ..core.jit import inner, kernel
from ._cd_kernels import weight

#: the free set F of a CG step: its positions column by column (``rows``; group g, the
#: positions of column ``col_of_group[g]``, is ``col_ptr[g]:col_ptr[g + 1]``), the same
#: positions row by row as a symmetric pattern (``ptr``, ``scol``, ``spos``: see
#: :func:`symmetric_rows`) and the inner product's ``weights`` (2 off the diagonal, 1 on it)
FreeSet = namedtuple("FreeSet", "rows col_ptr col_of_group ptr scol spos weights")
#: X as the preconditioner ``V -> P_F(X V X)`` reads it: in compressed rows (``indptr``,
#: ``indices``, ``data``) and, when the dense single-precision sandwich is the cheaper,
#: ``dense32``, an n x n float32 copy (else a 0 x 0 array: the sparse sandwich runs)
PreconditionerX = namedtuple("PreconditionerX", "dense32 indptr indices data")
#: the scratch of conjugate gradients: ``U32`` (n x n, W32's dtype) and ``buf32`` (n) of
#: the Hessian's dense sandwich, ``UT`` (n x n) and ``sval`` (one entry per position of
#: the symmetric pattern) of the preconditioner's (``UT`` may be ``U32``: the products
#: run in turn), and the vectors ``r``, ``z``, ``q``, ``hq`` on the free set
CGWork = namedtuple("CGWork", "U32 buf32 UT sval r z q hq")


@kernel()
def orthant_count(X, S, W, L, lw):
    """An upper bound on the number of positions :func:`orthant_set` lists at X
    (the diagonal, the non-zeros of X and the zeros with ``|G_ij| > L_ij``, G = S - W):
    the size its arrays need, which it does not check. X, S, W and L are exactly
    symmetric: entry (i, j) is read at (j, i), along rows."""
    n = X.shape[0]
    cnt = 0
    for j in range(n):
        for i in range(j + 1):
            # "not <=" also counts a NaN gradient, which orthant_set lists when L_ij = 0
            if i == j or X[j, i] != 0.0 or not abs(S[j, i] - W[j, i]) <= weight(L, lw, j, i):
                cnt += 1
    return cnt


@inner()
def min_norm_subgradient(x, g, lam):
    """``|minimum-norm subgradient|`` of ``g x + lam |x|`` at one entry x with smooth
    gradient g: ``|g + lam sign(x)|`` off zero, ``max(|g| - lam, 0)`` at zero."""
    if x > 0.0:
        return abs(g + lam)
    if x < 0.0:
        return abs(g - lam)
    v = abs(g) - lam
    return 0.0 if v < 0.0 else v


@kernel()
def orthant_set(X, S, W, L, lw, rows, cols, sgn, grad):
    """The free set of the orthant-wise Newton step at X (W = X^-1; the gradient
    G = S - W is read entry by entry, never stored; the weights as ``(L, lw)``, see
    ``_cd_kernels.weight``).

    Position (i, j), i <= j, is free when ``X_ij != 0`` or when
    ``|G_ij| > L_ij`` (moving it off zero decreases the objective); the
    diagonal always is. Its orthant sign is ``sign(X_ij)`` for a non-zero
    entry and ``-sign(G_ij)`` for a zero one; an unpenalised entry
    (``L_ij = 0``) gets sign 0 (smooth, never projected). ``grad`` receives
    the gradient of the objective restricted to the orthant,
    ``G_ij + L_ij sign_ij``. Positions are listed column by column.

    Returns (count, l1 norm of the minimum-norm subgradient over all
    entries): the latter is 0 exactly at the optimum. X, S, W and L are
    exactly symmetric: entry (i, j) is read at (j, i), along rows.
    """
    n = X.shape[0]
    cnt = 0
    sub = 0.0
    for j in range(n):
        for i in range(j + 1):
            x = X[j, i]
            gij = S[j, i] - W[j, i]
            lam = weight(L, lw, j, i)
            v = min_norm_subgradient(x, gij, lam)
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


@kernel(allocates=True)
def symmetric_rows(rows, cols, n, ptr, scol, spos):
    """Row-wise index of the free set as a symmetric pattern: row i lists
    ``scol[ptr[i]:ptr[i+1]]`` (its partners j, the diagonal included once)
    and ``spos`` (the position p of the pair in the free-set vectors)."""
    m = rows.shape[0]
    for i in range(n + 1):
        ptr[i] = 0
    for p in range(m):
        ptr[rows[p] + 1] += 1
        if rows[p] != cols[p]:
            ptr[cols[p] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:n].copy()
    for p in range(m):
        i = rows[p]
        j = cols[p]
        q = fill[i]
        scol[q] = j
        spos[q] = p
        fill[i] = q + 1
        if i != j:
            q = fill[j]
            scol[q] = i
            spos[q] = p
            fill[j] = q + 1


@kernel(fastmath=True)
def sandwich_dense(A, v, ptr, scol, spos, rows, col_ptr, col_of_group, U, buf, out):
    """``out[p] = (A V A)[rows[p], cols[p]]`` for the symmetric V with entries
    v on the free set; A dense symmetric (single precision: the product only
    steers conjugate gradients, and halves the memory traffic). U (n x n, the
    dtype of A) is scratch: row i of ``U = V A`` is accumulated in one pass,
    then each column group reads its column of U once."""
    n = A.shape[0]
    for i in range(n):
        for k in range(n):
            U[i, k] = 0.0
        for q in range(ptr[i], ptr[i + 1]):
            val = v[spos[q]]
            if val == 0.0:
                continue
            c = scol[q]
            w = A.dtype.type(val)
            for k in range(n):
                U[i, k] += w * A[c, k]
    for grp in range(col_of_group.shape[0]):
        j = col_of_group[grp]
        for k in range(n):
            buf[k] = U[k, j]
        for p in range(col_ptr[grp], col_ptr[grp + 1]):
            i = rows[p]
            s = A.dtype.type(0.0)
            for k in range(n):
                s += A[i, k] * buf[k]
            out[p] = s


@kernel(fastmath=True)
def sandwich_sparse(indptr, indices, data, v, ptr, scol, spos, sval, rows, col_ptr,
                    col_of_group, UT, out):
    """``out[p] = (A V A)[rows[p], cols[p]]`` with A symmetric in compressed
    rows: ``UT = A V`` row by row (row k sums ``A_kl V[l, :]`` over the
    non-zeros of row k of A), then ``out_(i,j) = sum_k A_ik UT[j, k]``
    over the non-zeros of row i. UT (n x n) and sval (>= ptr[n]) are scratch."""
    n = indptr.shape[0] - 1
    for q in range(ptr[n]):
        sval[q] = v[spos[q]]
    for k in range(n):
        for c in range(n):
            UT[k, c] = 0.0
        for q in range(indptr[k], indptr[k + 1]):
            ll = indices[q]
            x = data[q]
            for r in range(ptr[ll], ptr[ll + 1]):
                UT[k, scol[r]] += x * sval[r]
    for grp in range(col_of_group.shape[0]):
        j = col_of_group[grp]
        for p in range(col_ptr[grp], col_ptr[grp + 1]):
            i = rows[p]
            s = 0.0
            for q in range(indptr[i], indptr[i + 1]):
                s += data[q] * UT[j, indices[q]]
            out[p] = s


@kernel()
def dense_to_csr(X, indptr, indices, data):
    """Compressed rows of the non-zeros of X into ``indptr`` (n + 1) and ``indices`` /
    ``data``; returns their number, or -1 (the arrays partly written) when X has more
    non-zeros than ``indices`` has room for."""
    n = X.shape[0]
    cap = indices.shape[0]
    nnz = 0
    indptr[0] = 0
    for i in range(n):
        for k in range(n):
            x = X[i, k]
            if x != 0.0:
                if nnz == cap:
                    return -1
                indices[nnz] = k
                data[nnz] = x
                nnz += 1
        indptr[i + 1] = nnz
    return nnz


@kernel(fastmath=True)
def _dot(a, b, w, m):
    s = 0.0
    for p in range(m):
        s += w[p] * a[p] * b[p]
    return s


@inner()
def _precondition(X, free, v, work, out):
    """``out = P_F(X V X)`` (X a :data:`PreconditionerX`, ``free`` a :data:`FreeSet`,
    ``work`` a :data:`CGWork`): by the dense single-precision sandwich when ``X.dense32``
    is an n x n copy of X (a dense enough X: contiguous, vectorised rows beat the sparse
    scatter), else by the sparse one (``X.dense32`` 0 x 0)."""
    if X.dense32.shape[0] > 0:
        sandwich_dense(X.dense32, v, free.ptr, free.scol, free.spos, free.rows, free.col_ptr,
                       free.col_of_group, work.UT, work.buf32, out)
    else:
        sandwich_sparse(X.indptr, X.indices, X.data, v, free.ptr, free.scol, free.spos,
                        work.sval, free.rows, free.col_ptr, free.col_of_group, work.UT, out)


@kernel()
def newton_cg_direction(W32, X, free, grad, d, max_iter, rtol, work):
    """Preconditioned conjugate gradients for ``P_F(W D W) = -grad`` on the
    free set F (a :data:`FreeSet`), started from D = 0 (so every iterate is a descent
    direction of the orthant model); W32 is W in single precision. The preconditioner
    is ``V -> P_F(X V X)`` (X a :data:`PreconditionerX`): the restriction of the inverse
    of the Hessian ``W (.) W``, exact when F is everything. ``work``: a :data:`CGWork`.
    Stops when the preconditioned
    residual norm has shrunk by ``rtol``, when the last iteration improved
    the quadratic model by less than ``rtol / k`` of its total decrease
    (k iterations; the truncation rule of Nash & Sofer), or after
    ``max_iter`` iterations.
    Returns the number of iterations."""
    m = grad.shape[0]
    weights = free.weights
    r, z, q, hq = work.r, work.z, work.q, work.hq
    for p in range(m):
        d[p] = 0.0
        r[p] = -grad[p]
    _precondition(X, free, r, work, z)
    for p in range(m):
        q[p] = z[p]
    rz = _dot(r, z, weights, m)
    if not rz > 0.0:
        return 0
    stop = rtol * rtol * rz
    it = 0
    model = 0.0           # decrease of the quadratic model, -<g, d> / 2 at CG iterates
    while it < max_iter:
        it += 1
        sandwich_dense(W32, q, free.ptr, free.scol, free.spos, free.rows, free.col_ptr,
                       free.col_of_group, work.U32, work.buf32, hq)
        qhq = _dot(q, hq, weights, m)
        if not qhq > 0.0:
            break
        a = rz / qhq
        for p in range(m):
            d[p] += a * q[p]
            r[p] -= a * hq[p]
        # truncated Newton (Nash & Sofer): stop once the model gains little more
        gain = 0.5 * a * a * qhq
        model += gain
        if it * gain <= rtol * model:
            break
        _precondition(X, free, r, work, z)
        rz_new = _dot(r, z, weights, m)
        if rz_new <= stop:
            break
        beta = rz_new / rz
        rz = rz_new
        for p in range(m):
            q[p] = z[p] + beta * q[p]
    return it


@kernel()
def orthant_step(X, rows, cols, sgn, d, t, S, L, lw, W, out, copy):
    """``out = P(X + t D)``: X with the free entries moved by t d and every
    entry that would leave its orthant (sign != sgn, sgn != 0) set to 0.
    ``copy``: first copy X into out (out may be X itself when False).

    Returns the changes (full-matrix sums) of ``tr(S X)``, of
    ``sum L |X|`` and of ``tr(G X)``, G = S - W.
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
        dlin += w * (S[i, j] - W[i, j]) * delta
        dpen += w * weight(L, lw, i, j) * (abs(y) - abs(x))
        out[i, j] = y
        out[j, i] = y
    return dtr, dpen, dlin
