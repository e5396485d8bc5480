"""Compiled kernels of the flat log-linear model: the fused softmax / loss / residual
pass of the batch gradient, and the SGD capability -- one pass of lazily penalised SGD
(:mod:`spargel.core.lazy_l1`) over a list of samples.

A sample touches the blocks of its non-zero features (K weights each) and the
intercepts. Per step the pass settles the touched blocks, computes the class scores,
the softmax and the gradient ``x_j (p - e_y)`` (times the sample weight), and applies
it: straight into the weights with one sample per step, through a buffer with
mini-batches. See :mod:`spargel.chain.sgd_kernels` for the same scheme on a chain.
"""

import math
from collections import namedtuple

import numpy as np
from ..core.jit import kernel

from ..core import lazy_l1 as Z


@kernel()
def softmax_residual(Z, y, sw):
    """In place: the rows of the scores Z (n x K) become ``s_i (p_i - e_{y_i})`` (softmax
    minus the one-hot label, times the sample weight; ``sw`` empty: 1); returns the
    summed loss ``sum_i s_i (log sum_k exp Z_ik - Z_i,y_i)``. One pass, numerically safe
    (each row shifted by its maximum)."""
    n, K = Z.shape
    weighted = len(sw) > 0
    total = 0.0
    for i in range(n):
        m = Z[i, 0]
        for k in range(1, K):
            if Z[i, k] > m:
                m = Z[i, k]
        yi = y[i]
        zy = Z[i, yi] - m
        s = 0.0
        for k in range(K):
            e = math.exp(Z[i, k] - m)
            Z[i, k] = e
            s += e
        wi = sw[i] if weighted else 1.0
        total += wi * (math.log(s) - zy)
        inv = wi / s
        for k in range(K):
            Z[i, k] *= inv
        Z[i, yi] -= wi
    return total


def direct(prm, m):
    """Whether the gradient goes straight into the weights (one sample per step, lazy
    variant, every weight l2-scaled alike)."""
    return int(prm.variant) != Z.NAIVE and max(1, int(prm.batch)) == 1 and len(m) == 0


#: the scratch of :func:`sgd_pass`: ``g`` is ``v`` itself for a direct pass, else a zero
#: buffer; ``z`` (K scores), ``touched`` and ``mark`` (d + 1 blocks)
PassWork = namedtuple("PassWork", "g z touched mark")


@kernel()
def sgd_pass(rows, K, d, fit_intercept, order, v, aux, l1w, m, st, prm, wk):
    """One pass over the samples ``order`` in mini-batches of ``prm.batch`` (see
    :mod:`spargel.core.lazy_l1` for ``st`` and ``prm``). ``rows = (ptr, idx, val, y, sw,
    mask)`` is X in CSR form with the labels, sample weights and the 0/1 mask of the
    weights that exist (empty: all). ``wk``: the scratch, a :data:`PassWork`. Returns 0,
    or 1 when a loss became non-finite."""
    ptr, idx, val, y, sw, fixed = rows
    g, z, touched, mark = wk.g, wk.z, wk.touched, wk.mark
    l1 = prm.l1
    variant, B = int(prm.variant), max(1, int(prm.batch))
    lazy = variant != Z.NAIVE
    dir_ = lazy and B == 1 and len(m) == 0
    ib = d * K
    masked = len(fixed) > 0
    for start in range(0, len(order), B):
        end = min(start + B, len(order))
        nb = end - start
        eta, a_new = Z.step_rate(st, prm, nb)
        a, us, up = st[Z.SHRINK], st[Z.U_SCALED], st[Z.U_PLAIN]
        nt = 0
        coef = -eta / a_new if dir_ else 1.0
        step_loss = 0.0
        for r in range(start, end):
            i = order[r]
            # settle and record the touched blocks; the scores
            for k in range(K):
                z[k] = 0.0
            for q in range(ptr[i], ptr[i + 1]):
                j = idx[q]
                if mark[j] != start:
                    mark[j] = start
                    touched[nt] = j
                    nt += 1
                    if lazy:
                        Z.penalise_block(v, aux, l1w, l1, m, us, up, j * K, (j + 1) * K, variant)
                x = val[q]
                for k in range(K):
                    z[k] += x * Z.weight(v, m, a, j * K + k)
            if fit_intercept:
                if mark[d] != start:
                    mark[d] = start
                    touched[nt] = d
                    nt += 1
                    if lazy:
                        Z.penalise_block(v, aux, l1w, l1, m, us, up, ib, ib + K, variant)
                for k in range(K):
                    z[k] += Z.weight(v, m, a, ib + k)
            mx = z[0]
            for k in range(1, K):
                if z[k] > mx:
                    mx = z[k]
            s = 0.0
            for k in range(K):
                z[k] = math.exp(z[k] - mx)
                s += z[k]
            yi = y[i]
            wi = sw[i]
            step_loss += wi * (mx + math.log(s) - (math.log(z[yi]) + mx))
            # gradient (scattered with coef)
            for k in range(K):
                z[k] = wi * (z[k] / s - (1.0 if k == yi else 0.0)) * coef
            for q in range(ptr[i], ptr[i + 1]):
                j = idx[q]
                x = val[q]
                for k in range(K):
                    if not masked or fixed[j * K + k] != 0.0:
                        g[j * K + k] += x * z[k]
            if fit_intercept:
                for k in range(K):
                    g[ib + k] += z[k]
        if not (step_loss > -np.inf and step_loss < np.inf):
            return 1
        st[Z.ONLINE_LOSS] += step_loss
        inc = Z.step_done(st, prm, eta, nb, a_new, lazy)
        if lazy and not dir_:
            inv_a = 1.0 / a_new
            for q in range(nt):
                j = touched[q]
                Z.step_block(v, g, m, inv_a, eta, j * K, (j + 1) * K)
        elif not lazy:
            Z.naive_step(v, g, l1w, l1, m, eta, nb, prm.l2, prm.N, inc)
            for q in range(nt):
                j = touched[q]
                for k in range(j * K, (j + 1) * K):
                    g[k] = 0.0
        if st[Z.SHRINK] < Z.RENORMALISE_BELOW:
            Z.renormalise(v, aux, m, st, variant)
    return 0
