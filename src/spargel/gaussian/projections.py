"""Euclidean projections onto the dual feasible sets.

* the box ``{W : |W_ij| <= L_ij}`` of the l1 problem (eq. 2): a clip;
* the l1 ball ``{w : ||w||_1 <= z}`` in expected linear time by the
  randomised pivoting method of Duchi, Shalev-Shwartz, Singer & Chandra
  (2008, Fig. 2), with a sort-based O(d log d) reference;
* the block-l1 dual set (eq. 5): one l1 ball per disjoint block of entries,
  projected block by block (``project_blocks``).

The numba kernels compile on first use (cached on disk).

>>> import numpy as np
>>> project_l1_ball(np.array([3.0, -1.0, 0.5]), 2.0)
array([2., 0., 0.])
"""

from __future__ import annotations

import numpy as np
from ..core.jit import kernel

__all__ = ["project_box", "project_l1_ball", "project_l1_ball_sort", "project_blocks"]


def project_box(W, L, out=None):
    """Clip W entrywise to ``[-L, L]``.

    >>> project_box(np.array([2.0, -3.0, 0.1]), np.array([1.0, 1.0, 1.0]))
    array([ 1. , -1. ,  0.1])
    """
    out = np.empty_like(W) if out is None else out
    np.minimum(W, L, out=out)
    np.maximum(out, -L, out=out)
    return out


@kernel()
def _xorshift(state):
    x = state[0]
    x ^= (x << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x ^= x >> np.uint64(7)
    x ^= (x << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    state[0] = x
    return x


@kernel()
def _l1_threshold(u, m, z, state):
    """Threshold theta with sum(max(u - theta, 0)) = z for the first m
    entries of u (all >= 0, sum > z). u[:m] is permuted in place.

    Randomised pivoting: keep a candidate set U = u[lo:hi]; pick a random
    pivot, partition U into the entries >= pivot (G) and < pivot; if the
    entries of G can all stay positive (s + sum(G) - (rho + |G|) pivot < z)
    they are in the support: accumulate them and recurse on the smaller
    part, otherwise recurse on G minus the pivot. Expected O(m) time.
    """
    lo = 0
    hi = m
    s = 0.0
    rho = 0
    while lo < hi:
        k = lo + int(_xorshift(state) % np.uint64(hi - lo))
        pivot = u[k]
        # move pivot to lo, partition u[lo+1:hi] into >= pivot (front) / < pivot
        u[k] = u[lo]
        u[lo] = pivot
        front = lo + 1
        ds = pivot
        for p in range(lo + 1, hi):
            v = u[p]
            if v >= pivot:
                u[p] = u[front]
                u[front] = v
                front += 1
                ds += v
        drho = front - lo
        if (s + ds) - (rho + drho) * pivot < z:
            s += ds
            rho += drho
            lo = front          # continue with the entries < pivot
        else:
            lo = lo + 1         # continue with G minus the pivot
            hi = front
    return (s - z) / rho


@kernel()
def _project_l1_inplace(v, z, work, state):
    m = v.shape[0]
    total = 0.0
    for i in range(m):
        total += abs(v[i])
    if total <= z:
        return
    if z <= 0.0:
        for i in range(m):
            v[i] = 0.0
        return
    for i in range(m):
        work[i] = abs(v[i])
    theta = _l1_threshold(work, m, z, state)
    for i in range(m):
        a = abs(v[i]) - theta
        if a <= 0.0:
            v[i] = 0.0
        elif v[i] > 0.0:
            v[i] = a
        else:
            v[i] = -a


def project_l1_ball(v, z, random_state=0):
    """Euclidean projection of the vector v onto ``{w : ||w||_1 <= z}``.

    Expected linear time (Duchi et al. 2008). ``random_state`` seeds the
    pivot choice only; the result does not depend on it.

    >>> project_l1_ball(np.array([0.5, -0.25]), 1.0)   # already inside
    array([ 0.5 , -0.25])
    """
    v = np.array(v, dtype=np.float64, copy=True).ravel()
    if not np.all(np.isfinite(v)):
        raise ValueError("v contains NaN or infinite values")
    z = float(z)
    if not z >= 0:
        raise ValueError(f"radius z must be >= 0, got {z}")
    state = np.array([np.uint64(random_state) * np.uint64(2654435761) + np.uint64(88172645463325252)],
                     dtype=np.uint64)
    _project_l1_inplace(v, z, np.empty_like(v), state)
    return v


def project_l1_ball_sort(v, z):
    """Reference O(d log d) projection onto the l1 ball by sorting.

    >>> project_l1_ball_sort(np.array([3.0, -1.0, 0.5]), 2.0)
    array([2., 0., 0.])
    """
    v = np.asarray(v, dtype=np.float64).ravel()
    a = np.abs(v)
    if a.sum() <= z:
        return v.copy()
    if z <= 0:
        return np.zeros_like(v)
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    j = np.arange(1, u.size + 1)
    rho = int(np.nonzero(u - (css - z) / j > 0)[0][-1]) + 1
    theta = (css[rho - 1] - z) / rho
    return np.where(a > theta, np.sign(v) * (a - theta), 0.0)


@kernel()
def project_blocks(W, block_ptr, rows, cols, radius, work, state):
    """Project the symmetric matrix W (in place) onto the block-l1 dual set.

    Block k owns the upper-triangle positions ``(rows[p], cols[p])`` for
    ``p`` in ``block_ptr[k]:block_ptr[k+1]``; their values are projected onto
    the l1 ball of radius ``radius[k]`` and mirrored to the lower triangle.
    Positions outside every block are left untouched (box-project them
    separately).
    """
    nb = block_ptr.shape[0] - 1
    for k in range(nb):
        a = block_ptr[k]
        b = block_ptr[k + 1]
        m = b - a
        if m == 0:
            continue
        z = radius[k]
        total = 0.0
        for p in range(a, b):
            total += abs(W[rows[p], cols[p]])
        if total <= z:
            continue
        vals = work[:m]
        for p in range(a, b):
            vals[p - a] = W[rows[p], cols[p]]
        buf = work[m:2 * m]
        _project_l1_inplace(vals, z, buf, state)
        for p in range(a, b):
            i = rows[p]
            j = cols[p]
            W[i, j] = vals[p - a]
            W[j, i] = vals[p - a]
