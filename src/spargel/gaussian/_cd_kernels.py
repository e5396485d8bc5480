"""numba kernels of the Newton-CD solver (imported lazily by ``newton_cd``).

The Newton direction D at X (with W = X^-1, gradient G = S - W) minimises the
l1-regularised quadratic model

    q(D) = tr(G D) + 1/2 tr(W D W D) + sum_ij L_ij |X_ij + D_ij|

by cyclic coordinate descent over a *free set* of upper-triangle positions
(i <= j). One coordinate step on the symmetric pair (i, j), i != j, is

    a = W_ij^2 + W_ii W_jj,  b = G_ij + (W D W)_ij,  c = X_ij + D_ij
    mu = -c + soft(c - b / a, L_ij / a)

and on a diagonal entry a = W_ii^2 with the same b, c (Hsieh et al. 2011).
(W D W)_ij = W[i, :] . U[:, j] with U = D W kept up to date: a step mu on
(i, j) adds mu W[j, :] to row i of U and mu W[i, :] to row j. Positions are
grouped by column j, and column j of U is gathered once into a contiguous
buffer that is patched in O(1) per step, so every step is one contiguous dot
product and two contiguous axpys of length n.

The direction is held on the free set only (``d[p]`` for position
``(rows[p], cols[p])``, the pair standing for both symmetric entries), never
as an n x n matrix; U is the one n x n scratch.

The weights L come as a pair ``(L, lw)`` (see :func:`weight`): a dense matrix
(``lw`` empty), or, for a scalar penalty on the rescaled problem, the vector
``lw`` from which each weight is computed when it is read (``L`` a 0 x 0 array).
"""

from ..core.jit import inner, kernel


@inner()
def weight(L, lw, i, j):
    """The weight ``L_ij``: ``L[i, j]`` when ``lw`` is empty; else, with
    ``lw = [s (n), diag (n), a, cap]``, ``min(a / (s_i s_j), cap)`` off the
    diagonal and ``diag_i`` on it (a scalar ``a`` on the problem rescaled by s,
    computed as the dense rescaling computes it)."""
    if lw.shape[0] == 0:
        return L[i, j]
    n = (lw.shape[0] - 2) // 2
    if i == j:
        return lw[n + i]
    v = lw[2 * n] / (lw[i] * lw[j])
    c = lw[2 * n + 1]
    return v if v < c else c


@kernel(fastmath=True)
def cd_sweeps(W, S, X, L, lw, d, U, col_ptr, rows, cols_of_group, n_sweeps, buf):
    """Run ``n_sweeps`` coordinate-descent sweeps of the Newton subproblem.

    Free positions are given grouped by column: for group g, column
    ``cols_of_group[g]`` and rows ``rows[col_ptr[g]:col_ptr[g+1]]`` (each
    row <= column); ``d[p]`` is the direction at position p (a free-set
    vector, zero to start with, as U = D W). d and U are updated in place. The
    gradient ``G = S - W`` is read entry by entry (never stored). W, U and buf share
    one dtype: float64 for Newton-CD's directions, float32 for Newton-CG's entering
    filter (half the memory traffic; its products and updates then run in single
    precision). Returns the largest |mu| of the last sweep.
    """
    n = W.shape[0]
    zero = W.dtype.type(0.0)
    n_groups = cols_of_group.shape[0]
    max_step = 0.0
    for sweep in range(n_sweeps):
        max_step = 0.0
        for g in range(n_groups):
            j = cols_of_group[g]
            for k in range(n):
                buf[k] = U[k, j]
            wjj = W[j, j]
            for p in range(col_ptr[g], col_ptr[g + 1]):
                i = rows[p]
                # (W D W)_ij = W[i, :] . U[:, j]
                s = zero
                for k in range(n):
                    s += W[i, k] * buf[k]
                wij = W[i, j]
                if i == j:
                    a = wjj * wjj
                else:
                    a = wij * wij + W[i, i] * wjj
                b = (S[i, j] - wij) + s
                c = X[i, j] + d[p]
                lam = weight(L, lw, i, j)
                z = c - b / a
                thr = lam / a
                if z > thr:
                    z = z - thr
                elif z < -thr:
                    z = z + thr
                else:
                    z = 0.0
                mu = z - c
                if mu == 0.0:
                    continue
                am = abs(mu)
                if am > max_step:
                    max_step = am
                # d = z - X exactly, so that X + D is exactly 0 when z is
                mw = W.dtype.type(mu)
                if i == j:
                    d[p] = z - X[j, j]
                    for k in range(n):
                        U[j, k] += mw * W[j, k]
                    buf[j] += mu * wjj
                else:
                    d[p] = z - X[i, j]
                    for k in range(n):
                        U[i, k] += mw * W[j, k]
                    for k in range(n):
                        U[j, k] += mw * W[i, k]
                    buf[i] += mu * wjj
                    buf[j] += mu * wij
    return max_step


@kernel(fastmath=True)
def mirror_lower_to_upper(A):
    """Copy the lower triangle of a C-contiguous square matrix onto its upper
    triangle (in place)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            A[i, j] = A[j, i]


@kernel(fastmath=True)
def direction_terms(W, L, lw, X, S, rows, cols, d):
    """Return (tr(G D), sum L (|X + D| - |X|), tr(S D), sum L |X|), G = S - W, for
    the direction d on the free set (which holds every non-zero of X, so the last
    sum is complete)."""
    gd = 0.0
    dpen = 0.0
    sd = 0.0
    pen = 0.0
    for p in range(rows.shape[0]):
        i = rows[p]
        j = cols[p]
        w = 1.0 if i == j else 2.0
        dd = d[p]
        x = X[i, j]
        lam = weight(L, lw, i, j)
        gd += w * (S[i, j] - W[i, j]) * dd
        sd += w * S[i, j] * dd
        ax = abs(x)
        pen += w * lam * ax
        dpen += w * lam * (abs(x + dd) - ax)
    return gd, dpen, sd, pen


@kernel(fastmath=True)
def trial_point(X, rows, cols, d, step, L, lw, pen0, out):
    """``out = X + step D`` (C-contiguous, symmetric; d on the free set); returns
    ``sum L |out|`` given ``pen0 = sum L |X|``."""
    n = X.shape[0]
    for i in range(n):
        for k in range(n):
            out[i, k] = X[i, k]
    pen = pen0
    for p in range(rows.shape[0]):
        i = rows[p]
        j = cols[p]
        x = X[i, j]
        v = x + step * d[p]
        out[i, j] = v
        out[j, i] = v
        w = 1.0 if i == j else 2.0
        pen += w * weight(L, lw, i, j) * (abs(v) - abs(x))
    return pen


@kernel()
def apply_step(X, rows, cols, d, step):
    """``X += step D`` in place (d on the free set)."""
    for p in range(rows.shape[0]):
        i = rows[p]
        j = cols[p]
        v = X[i, j] + step * d[p]
        X[i, j] = v
        X[j, i] = v


@kernel(fastmath=True)
def penalty_sum(X, L, lw):
    """``sum_ij L_ij |X_ij|``."""
    n = X.shape[0]
    pen = 0.0
    for i in range(n):
        for j in range(n):
            x = X[i, j]
            if x != 0.0:
                pen += weight(L, lw, i, j) * abs(x)
    return pen


@kernel()
def weights_at(L, lw, rows, cols, out):
    """``out[p] = L[rows[p], cols[p]]``."""
    for p in range(rows.shape[0]):
        out[p] = weight(L, lw, rows[p], cols[p])


@kernel()
def weights_dense(L, lw, out):
    """The n x n weight matrix into ``out`` (the rare paths that need all of it)."""
    n = out.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = weight(L, lw, i, j)


@kernel(fastmath=True)
def clipped_dual_into(W, S, L, lw, X, out):
    """out = S + Wd, the dual-feasible point certifying the primal X (with
    inverse W): ``Wd_ij = L_ij sign(X_ij)`` on the support of X (its value at
    the optimum, by complementarity) and ``clip(W_ij - S_ij, -L_ij, L_ij)``
    elsewhere. Exact on the support, its dual value is within O(|X - X*|^2)
    of the optimum (the dual gradient K* vanishes off the support)."""
    n = W.shape[0]
    for i in range(n):
        for j in range(n):
            s = S[i, j]
            lam = weight(L, lw, i, j)
            x = X[i, j]
            if x > 0.0:
                out[i, j] = s + lam
                continue
            if x < 0.0:
                out[i, j] = s - lam
                continue
            w = W[i, j] - s
            if w > lam:
                w = lam
            elif w < -lam:
                w = -lam
            out[i, j] = s + w
