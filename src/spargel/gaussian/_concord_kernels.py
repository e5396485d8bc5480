"""numba kernels of CONCORD's coordinate descent (imported lazily by ``concord``).

The problem (on the columns as given to the solver, ``S = X^T X / n``)::

    Q(W) = -sum_i log w_ii + 1/2 tr(W S W) + alpha sum_{i<j} |w_ij|

One coordinate step has a closed form. With ``g_ij = (W S)_ij + (W S)_ji`` the
gradient of the smooth part in the symmetric pair (i, j) and ``a = s_ii + s_jj``
its curvature,

    w_ij <- soft(a w_ij - g_ij, alpha) / a,

and on the diagonal, with ``c = (W S)_ii - s_ii w_ii``, the positive root of
``s_ii w^2 + c w - 1 = 0``.

Two ways of reading ``(W S)``:

* **columns** (``sweeps_columns``): ``Y = X W`` is kept as ``YT`` (p x n, one row
  per variable, beside ``XT = X^T``), so ``(W S)_ij = y_i . x_j / n``; a step
  ``delta`` on (i, j) adds ``delta x_j`` to ``y_i`` and ``delta x_i`` to ``y_j``:
  two dot products and two axpys of length n, memory O(n p);
* **dense** (``sweeps_dense``): ``V = W S`` (p x p) is kept beside ``S``; a step
  adds ``delta S[j, :]`` to row i of V and ``delta S[i, :]`` to row j.

The off-diagonal entries are held on the active pairs only (``I[q] < J[q]``,
value ``w[q]``), the diagonal as the vector ``d``. A sweep visits the diagonal, then
every active pair. The change of an entry is measured on the scale of the
partial correlations, ``|delta| / sqrt(d_i d_j)``; the sweeps stop when the largest
of a sweep is at most ``tol``.
"""

import math

from ..core.jit import inner, kernel
from ..core.penalty_kernels import soft_threshold as soft


@inner(fastmath=True)
def diagonal_root(c, s):
    """The positive root of ``s w^2 + c w - 1 = 0`` (s > 0), without cancellation."""
    r = math.sqrt(c * c + 4.0 * s)
    if c >= 0.0:
        return 2.0 / (c + r)
    return (r - c) / (2.0 * s)


@inner(fastmath=True)
def _axpy_row(A, B, i, j, delta):
    """Row i of A gains ``delta`` times row j of B."""
    for k in range(A.shape[1]):
        A[i, k] += delta * B[j, k]


@inner(fastmath=True)
def _diagonal_step(A, B, i, new, d, big):
    """``w_ii <- new``: row i of the kept product A (``YT`` or ``V``) gains ``delta``
    times row i of B (``XT`` or ``S``); returns the sweep's largest scaled change so far
    (``big``, or ``|delta| / new`` when larger)."""
    delta = new - d[i]
    if delta != 0.0:
        _axpy_row(A, B, i, i, delta)
        ch = abs(delta) / new
        if ch > big:
            big = ch
        d[i] = new
    return big


@inner(fastmath=True)
def _pair_step(A, B, i, j, q, new, w, d, big):
    """``w_ij <- new`` (active pair q): rows i and j of the kept product A gain ``delta``
    times rows j and i of B; returns the sweep's largest scaled change so far (``big``,
    or ``|delta| / sqrt(d_i d_j)`` when larger)."""
    delta = new - w[q]
    if delta != 0.0:
        _axpy_row(A, B, i, j, delta)
        _axpy_row(A, B, j, i, delta)
        w[q] = new
        ch = abs(delta) / math.sqrt(d[i] * d[j])
        if ch > big:
            big = ch
    return big


@kernel(fastmath=True)
def sweeps_columns(XT, YT, sdiag, inv_n, I, J, w, d, alpha, n_sweeps, tol, out):
    """Up to ``n_sweeps`` sweeps on the columns (``YT = W XT`` kept up to date).
    ``out[0]``: sweeps done, ``out[1]``: the largest scaled change of the last one."""
    p, n = XT.shape
    m = I.shape[0]
    big = 0.0
    done = 0
    for sweep in range(n_sweeps):
        big = 0.0
        for i in range(p):
            dot = 0.0
            for k in range(n):
                dot += YT[i, k] * XT[i, k]
            s = sdiag[i]
            c = dot * inv_n - d[i] * s
            big = _diagonal_step(YT, XT, i, diagonal_root(c, s), d, big)
        for q in range(m):
            i = I[q]
            j = J[q]
            dot = 0.0
            for k in range(n):
                dot += YT[i, k] * XT[j, k] + YT[j, k] * XT[i, k]
            a = sdiag[i] + sdiag[j]
            big = _pair_step(YT, XT, i, j, q, soft(a * w[q] - dot * inv_n, alpha) / a, w, d, big)
        done = sweep + 1
        if big <= tol:
            break
    out[0] = done
    out[1] = big


@kernel(fastmath=True)
def sweeps_dense(S, V, I, J, w, d, alpha, n_sweeps, tol, out):
    """Up to ``n_sweeps`` sweeps on the dense ``S`` (``V = W S`` kept up to date).
    ``out`` as in :func:`sweeps_columns`."""
    p = S.shape[0]
    m = I.shape[0]
    big = 0.0
    done = 0
    for sweep in range(n_sweeps):
        big = 0.0
        for i in range(p):
            s = S[i, i]
            c = V[i, i] - d[i] * s
            big = _diagonal_step(V, S, i, diagonal_root(c, s), d, big)
        for q in range(m):
            i = I[q]
            j = J[q]
            a = S[i, i] + S[j, j]
            big = _pair_step(V, S, i, j, q, soft(a * w[q] - (V[i, j] + V[j, i]), alpha) / a, w, d,
                             big)
        done = sweep + 1
        if big <= tol:
            break
    out[0] = done
    out[1] = big


@kernel()
def scan_slab(G, shift, thr, out_i, out_j, stats):
    """The entries of a slab ``G`` above the diagonal -- row r, column ``c > r + shift``
    (``shift``: the slab's first row minus its first column, 0 for a slab of the upper
    triangle starting on the diagonal) -- with ``|G[r, c]| > thr``: their rows and
    columns go to ``out_i``, ``out_j`` (as many as fit), their number is returned;
    ``stats[0]`` is the largest ``|G[r, c]|`` of the others. One pass over the slab
    (numpy needed four)."""
    rows, cols = G.shape
    cap = out_i.shape[0]
    k = 0
    big = 0.0
    for r in range(rows):
        c0 = r + shift + 1
        if c0 < 0:
            c0 = 0
        for c in range(c0, cols):
            v = abs(G[r, c])
            if v > thr:
                if k < cap:
                    out_i[k] = r
                    out_j[k] = c
                k += 1
            elif v > big:
                big = v
    stats[0] = big
    return k
