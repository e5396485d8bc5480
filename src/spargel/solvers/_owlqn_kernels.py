"""Compiled vector steps of L-BFGS / OWL-QN: one pass over the weights each, no
temporaries (these vectors have as many entries as the model has weights)."""

from ..core.jit import kernel

# re-association lets LLVM vectorise the dot products; no NaN/inf assumptions
FAST = {"reassoc", "contract", "nsz", "arcp"}


@kernel(fastmath=FAST)
def two_loop(pg, S, Y, rho, slots, d, alpha):
    """d = -H pg from the curvature pairs in rows ``slots`` (oldest first) of S, Y.

    The recursion's sums in the textbook order (``a_r = rho_r s_r . d``, ``d -= a_r
    y_r`` from the newest pair to the oldest, ``d *= gamma``, then ``b_r = rho_r y_r .
    d``, ``d += (a_r - b_r) s_r`` from the oldest to the newest, ``d = -d``), every
    element's operations the same, but each update of d done in one pass with the dot
    product that the next step needs (``2m + 3`` passes over the weights for ``m`` pairs
    instead of ``4m + 4``). Each pass keeps its own reduction as the loop's only sum
    over a product with d, and ``a_r - b_r`` is written inside the loop, so that LLVM
    vectorises and contracts them as it did in separate loops: on AVX-512 the results
    are the separate loops' to the bit; compiled for an AVX2 CPU the reductions may be
    associated differently (last bits, ``tests/solvers/test_owlqn_kernels.py``).
    """
    n = len(pg)
    m = len(slots)
    if m == 0:
        for i in range(n):
            d[i] = -pg[i]
        return
    for i in range(n):
        d[i] = pg[i]
    k = slots[m - 1]
    a = 0.0
    for i in range(n):
        a += S[k, i] * d[i]
    # first loop, newest pair first: d -= a_r y_r together with s_{r-1} . d
    for r in range(m - 1, 0, -1):
        k = slots[r]
        a *= rho[k]
        alpha[r] = a
        kn = slots[r - 1]
        s = 0.0
        for i in range(n):
            d[i] -= a * Y[k, i]
            s += S[kn, i] * d[i]
        a = s
    k = slots[0]
    a *= rho[k]
    alpha[0] = a
    # the oldest pair's update together with the newest pair's y . y (for gamma)
    kl = slots[m - 1]
    yy = 0.0
    for i in range(n):
        d[i] -= a * Y[k, i]
        yy += Y[kl, i] * Y[kl, i]
    gamma = 1.0 / (rho[kl] * yy)
    b = 0.0
    for i in range(n):
        d[i] *= gamma
        b += Y[k, i] * d[i]
    # second loop, oldest pair first: d += (a_r - b_r) s_r together with y_{r+1} . d
    for r in range(m - 1):
        k = slots[r]
        b *= rho[k]
        kn = slots[r + 1]
        s = 0.0
        for i in range(n):
            d[i] += (alpha[r] - b) * S[k, i]
            s += Y[kn, i] * d[i]
        b = s
    k = slots[m - 1]
    b *= rho[k]
    for i in range(n):
        d[i] = -(d[i] + (alpha[m - 1] - b) * S[k, i])


@kernel()
def constrain_direction(d, pg):
    """Zero the components of d that do not agree in sign with -pg; returns d . pg."""
    slope = 0.0
    for i in range(len(d)):
        if d[i] * pg[i] >= 0:
            d[i] = 0.0
        else:
            slope += d[i] * pg[i]
    return slope


@kernel(fastmath=FAST)
def orthant_step(w, d, step, pg, project, out):
    """out = w + step * d, projected (when ``project``) onto the orthant of w (of -pg
    where w is zero); returns pg . (out - w) for the Armijo test."""
    dec = 0.0
    for i in range(len(w)):
        v = w[i] + step * d[i]
        if project:
            xi = w[i] if w[i] != 0 else -pg[i]
            if v * xi <= 0:
                v = 0.0
        out[i] = v
        dec += pg[i] * (v - w[i])
    return dec


@kernel(fastmath=FAST)
def store_pair(w_new, w, g_new, g, S, Y, k):
    """S[k] = w_new - w, Y[k] = g_new - g; returns (s.y, y.y)."""
    sy = 0.0
    yy = 0.0
    for i in range(len(w)):
        s = w_new[i] - w[i]
        y = g_new[i] - g[i]
        S[k, i] = s
        Y[k, i] = y
        sy += s * y
        yy += y * y
    return sy, yy
