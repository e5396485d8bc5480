"""Compiled one-pass steps of the penalties (no temporaries: the vectors have as many
entries as the model has weights). Used by :mod:`spargel.core.penalties` only."""

import math

import numpy as np
from .jit import inner, kernel


@kernel()
def pseudo_gradient(w, g, l1, out):
    """Minimum-norm sub-gradient of f + sum l1_i |w_i| (l1 of length 1 broadcasts)."""
    scalar = len(l1) == 1
    for i in range(len(w)):
        c = l1[0] if scalar else l1[i]
        wi, gi = w[i], g[i]
        if wi > 0:
            out[i] = gi + c
        elif wi < 0:
            out[i] = gi - c
        elif gi + c < 0:
            out[i] = gi + c
        elif gi - c > 0:
            out[i] = gi - c
        else:
            out[i] = 0.0


@inner()
def soft_threshold(u, c):
    if u > c:
        return u - c
    if u < -c:
        return u + c
    return 0.0


@kernel()
def enet_prox(w, step, l1, l2, out):
    """out = argmin_x sum l1|x| + l2/2 x^2 + ||x - w||^2 / (2 step)."""
    for i in range(len(w)):
        out[i] = soft_threshold(w[i], step * l1[i]) / (1.0 + step * l2[i])


@kernel()
def enet_newton(w, g, h, l1, l2, out):
    """out_i = argmin_x (g_i - h_i w_i) x + (h_i + l2_i) x^2 / 2 + l1_i |x|: the exact
    minimiser of the separable quadratic model plus the elastic net."""
    for i in range(len(w)):
        d = h[i] + l2[i]
        if not d > 0.0:
            d = 1e-12
        out[i] = soft_threshold(h[i] * w[i] - g[i], l1[i]) / d


@kernel()
def enet_violation(w, g_loss, l1, l2):
    worst = 0.0
    for i in range(len(w)):
        g = g_loss[i] + l2[i] * w[i]
        if w[i] > 0:
            v = abs(g + l1[i])
        elif w[i] < 0:
            v = abs(g - l1[i])
        else:
            v = abs(g) - l1[i]
        if v > worst:
            worst = v
    return worst


@kernel(allocates=True)
def group_norms(w, ptr):
    out = np.empty(len(ptr) - 1)
    for k in range(len(ptr) - 1):
        s = 0.0
        for i in range(ptr[k], ptr[k + 1]):
            s += w[i] * w[i]
        out[k] = math.sqrt(s)
    return out


@kernel()
def group_prox(w, step, l1, l2, ptr, gscale, out):
    """out = argmin_x sum_g s_g (l1 ||x_g|| + l2/2 ||x_g||^2) + ||x - w||^2 / (2 step)."""
    for k in range(len(ptr) - 1):
        s = 0.0
        for i in range(ptr[k], ptr[k + 1]):
            s += w[i] * w[i]
        nrm = math.sqrt(s)
        c = step * l1 * gscale[k]
        f = 0.0
        if nrm > c:
            f = (1.0 - c / nrm) / (1.0 + step * l2 * gscale[k])
        for i in range(ptr[k], ptr[k + 1]):
            out[i] = f * w[i]


@kernel()
def group_violation(w, g_loss, l1, l2, ptr, gscale):
    worst = 0.0
    for k in range(len(ptr) - 1):
        s = gscale[k]
        nw = 0.0
        for i in range(ptr[k], ptr[k + 1]):
            nw += w[i] * w[i]
        nw = math.sqrt(nw)
        acc = 0.0
        for i in range(ptr[k], ptr[k + 1]):
            g = g_loss[i] + l2 * s * w[i]
            if nw > 0:
                g += l1 * s * w[i] / nw
            acc += g * g
        v = math.sqrt(acc)
        if nw == 0:
            v -= l1 * s
        if v > worst:
            worst = v
    return worst
