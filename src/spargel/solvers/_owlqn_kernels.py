"""Compiled vector steps of L-BFGS / OWL-QN: one pass over the weights each, no
temporaries (these vectors have as many entries as the model has weights)."""

from ..core.jit import kernel

# re-association lets LLVM vectorise the dot products; no NaN/inf assumptions
FAST = {"reassoc", "contract", "nsz", "arcp"}


@kernel(fastmath=FAST)
def two_loop(pg, S, Y, rho, slots, d, alpha):
    """d = -H pg from the curvature pairs in rows ``slots`` (oldest first) of S, Y."""
    n = len(pg)
    for i in range(n):
        d[i] = pg[i]
    m = len(slots)
    for r in range(m - 1, -1, -1):
        k = slots[r]
        a = 0.0
        for i in range(n):
            a += S[k, i] * d[i]
        a *= rho[k]
        alpha[r] = a
        for i in range(n):
            d[i] -= a * Y[k, i]
    if m > 0:
        k = slots[m - 1]
        yy = 0.0
        for i in range(n):
            yy += Y[k, i] * Y[k, i]
        gamma = 1.0 / (rho[k] * yy)
        for i in range(n):
            d[i] *= gamma
    for r in range(m):
        k = slots[r]
        b = 0.0
        for i in range(n):
            b += Y[k, i] * d[i]
        b *= rho[k]
        for i in range(n):
            d[i] += (alpha[r] - b) * S[k, i]
    for i in range(n):
        d[i] = -d[i]


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
