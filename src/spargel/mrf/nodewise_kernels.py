"""Compiled penalised regression of one variable on the others, down a path of
penalties, with each point's EBIC: the node-wise step of :mod:`.nodewise` (IsingFit)
and :mod:`.mixed` (mixed graphical models), one engine for both.

The response is Gaussian, binary (logistic) or categorical (multinomial). The
predictors are the standardised design columns ``Z`` (one row per column, ``(m, n)``:
centred, divided by their standard deviation with ``1/n``), in groups (a variable's
columns: one for a continuous or binary variable, ``k - 1`` dummies for a categorical
one with ``k`` levels), so the penalty is ``lam * sum_g sqrt(m_g) ||beta_g||_2`` on the
standardised scale -- for groups of one column, the lasso ``lam * sum_j sd_j |b_j|`` on
the original one (glmnet's ``standardize=TRUE``). Each penalty is solved by proximal
Newton steps: the weighted least-squares approximation of the log-likelihood at the
current fit (exact for a Gaussian), minimised by cyclic block coordinate descent over a
working set (the previous point's active groups and those the sequential strong rule
keeps), then every group's optimality checked and violators added. A one-column group
is updated exactly (soft thresholding); a larger group by a majorised step (the
largest Gershgorin row sum of its weighted Gram matrix) and the group's shrinkage.
"""

from collections import namedtuple

import numpy as np
from ..core.jit import inner, kernel

#: how a node-wise path runs and stops (:func:`group_path`): the EBIC's ``gamma``, the
#: inner convergence ``tol``, at most ``max_outer`` outer iterations per point, glmnet's
#: stopping rules ``devmax`` (deviance ratio) and ``fdev`` (relative gain), and
#: ``ebic_stop`` (stop once no later point can lower the EBIC)
PathRules = namedtuple("PathRules", "gamma tol max_outer devmax fdev ebic_stop")

#: a node-wise path's outputs per penalty: coefficients ``beta`` (n_lambdas, m K),
#: intercepts ``b0`` (n_lambdas, K), the EBIC ``ebic`` and the non-zero count ``nnz``
PathOut = namedtuple("PathOut", "beta b0 ebic nnz")


def path_rules(gamma, tol, max_outer=100, devmax=0.999, fdev=1e-5, ebic_stop=False):
    """A :data:`PathRules` with the types the compiled path takes."""
    return PathRules(float(gamma), float(tol), int(max_outer), float(devmax), float(fdev), bool(ebic_stop))


@inner()
def _soft(v, t):
    """Soft thresholding; ``|v|`` within rounding of ``t`` gives 0 (at the path's first
    penalty the largest gradient equals it, and a coefficient of 1e-16 would count as a
    non-zero in the EBIC)."""
    edge = t * (1.0 + 1e-10)
    if v > edge:
        return v - t
    if v < -edge:
        return v + t
    return 0.0


@inner()
def _linear_predictor(Z, beta, b0, eta):
    """``eta = b0 + sum_j beta_j Z[j]`` over the non-zero coefficients."""
    for i in range(eta.shape[0]):
        eta[i] = b0
    for j in range(Z.shape[0]):
        if beta[j] != 0.0:
            bj = beta[j]
            for i in range(eta.shape[0]):
                eta[i] += bj * Z[j, i]


# --- the general node-wise regression: any response, predictors in groups -----------
#
# A group's penalty ``lam sqrt(m_g) ||beta_g||_2`` runs over its ``m_g`` columns and
# every class of the response: the group is in or out as a whole.

GAUSSIAN, BINOMIAL, MULTINOMIAL = 0, 1, 2


@inner()
def _group_predictor(Z, beta, b0, K, eta):
    """``eta[i K + k] = b0[k] + sum_c beta[c K + k] Z[c, i]`` over the non-zero coefficients."""
    n = Z.shape[1]
    if K == 1:
        _linear_predictor(Z, beta, b0[0], eta)
        return
    for i in range(n):
        for k in range(K):
            eta[i * K + k] = b0[k]
    for c in range(Z.shape[0]):
        for k in range(K):
            bc = beta[c * K + k]
            if bc != 0.0:
                for i in range(n):
                    eta[i * K + k] += bc * Z[c, i]


@inner()
def _working(kind, y, yk, K, eta, w, r, weighted):
    """The quadratic approximation at ``eta``: weights ``w`` and working residuals ``r``
    (``z - eta``) when ``weighted``, else the plain residuals ``y - mean`` (w untouched)
    and the log-likelihood as the value (for a Gaussian, the residual sum of squares;
    0 when ``weighted``, except a Gaussian's)."""
    n = eta.shape[0] // K
    ll = 0.0
    if kind == 0:
        for i in range(n):
            d = y[i] - eta[i]
            r[i] = d
            if weighted:
                w[i] = 1.0
            ll += d * d
    elif kind == 1:
        for i in range(n):
            e = eta[i]
            pr = 1.0 / (1.0 + np.exp(-e))
            if weighted:
                wi = max(pr * (1.0 - pr), 1e-5)
                w[i] = wi
                r[i] = (y[i] - pr) / wi
            else:
                r[i] = y[i] - pr
                ll += y[i] * e - (max(e, 0.0) + np.log1p(np.exp(-abs(e))))
    else:
        for i in range(n):
            top = eta[i * K]
            for k in range(1, K):
                top = max(top, eta[i * K + k])
            s = 0.0
            for k in range(K):
                s += np.exp(eta[i * K + k] - top)
            lse = top + np.log(s)
            if not weighted:
                ll += eta[i * K + yk[i]] - lse
            for k in range(K):
                pr = np.exp(eta[i * K + k] - lse)
                t = 1.0 if yk[i] == k else 0.0
                if weighted:
                    wi = max(pr * (1.0 - pr), 1e-5)
                    w[i * K + k] = wi
                    r[i * K + k] = (t - pr) / wi
                else:
                    r[i * K + k] = t - pr
    return ll


@inner()
def _neg2loglik(kind, ll, n):
    """``-2 loglik`` from ``_working``'s value (a Gaussian's variance profiled out)."""
    if kind == 0:
        return n * np.log(2.0 * np.pi * max(ll, 1e-300) / n) + n
    return -2.0 * ll


@inner()
def _group_gradients(Z, gstart, skip, K, r, grad, gnorm):
    """``grad[c K + k] = Z[c] . r[:, k] / n`` and each group's norm of it."""
    n = Z.shape[1]
    if K == 1:                                         # one class: contiguous sums
        for g in range(gstart.shape[0] - 1):
            if g == skip:
                continue
            ss = 0.0
            for c in range(gstart[g], gstart[g + 1]):
                s = 0.0
                for i in range(n):
                    s += Z[c, i] * r[i]
                s /= n
                grad[c] = s
                ss += s * s
            gnorm[g] = np.sqrt(ss)
        return
    for g in range(gstart.shape[0] - 1):
        if g == skip:
            continue
        ss = 0.0
        for c in range(gstart[g], gstart[g + 1]):
            for k in range(K):
                s = 0.0
                for i in range(n):
                    s += Z[c, i] * r[i * K + k]
                s /= n
                grad[c * K + k] = s
                ss += s * s
        gnorm[g] = np.sqrt(ss)


@kernel(allocates=True)
def group_path(Z, gstart, skip, kind, y, yk, K, lams, rules, out):
    """The path of one regression. ``Z`` (m, n): every design column, standardised;
    group ``g`` is columns ``gstart[g]:gstart[g + 1]``; group ``skip`` (the response's
    own columns) is left out. ``kind`` 0: Gaussian response ``y`` (standardised); 1:
    binary ``y`` (0/1); 2: categorical ``yk`` (0..K-1) with ``K`` linear predictors
    (``K`` is 1 otherwise). ``rules``: the :data:`PathRules`; ``out``: the
    :data:`PathOut`. For each penalty ``lams[k]`` writes the coefficients
    ``out.beta[k]`` (column ``c``, class ``k`` at ``c K + k``), the intercepts
    ``out.b0[k]``, the EBIC ``-2 loglik + J log n + 2 gamma J log(m')`` (``J`` non-zero
    coefficients, ``m'`` candidate columns) and ``J``. The path stops early
    (glmnet's rules) when the deviance ratio passes ``devmax`` or a step gains less than
    ``fdev`` of the deviance, and with ``ebic_stop`` once the EBIC's penalty alone plus a
    lower bound of ``-2 loglik`` exceeds the best EBIC so far (no later point with at
    least as many non-zeros can do better). The bound is 0 for a binary or categorical
    response; a Gaussian's ``-2 loglik`` has none, and the bound used is its value at the
    deviance ratio ``devmax``, where the path stops anyway (only the point that passes it
    could be lower). Returns the
    number of points computed."""
    gamma, tol, max_outer = rules.gamma, rules.tol, rules.max_outer
    devmax, fdev, ebic_stop = rules.devmax, rules.fdev, rules.ebic_stop
    out_beta, out_b0, out_ebic, out_nnz = out.beta, out.b0, out.ebic, out.nnz
    m, n = Z.shape
    G = gstart.shape[0] - 1
    beta = np.zeros(m * K)
    b0 = np.zeros(K)
    eta = np.empty(n * K)
    w = np.ones(n * K)
    r = np.empty(n * K)
    grad = np.zeros(m * K)
    gnorm = np.zeros(G)
    work = np.zeros(G, np.bool_)
    curv = np.zeros(G)
    gw = np.zeros(G)                                   # sqrt(group size)
    for g in range(G):
        gw[g] = np.sqrt(gstart[g + 1] - gstart[g])
    upd = np.zeros(m * K)
    # the null model: intercepts only
    ybar = 0.0
    if kind == 0:
        ybar = 0.0
        for i in range(n):
            ybar += y[i]
        b0[0] = ybar / n
    elif kind == 1:
        ybar = 0.0
        for i in range(n):
            ybar += y[i]
        ybar /= n
        b0[0] = np.log(ybar / (1.0 - ybar))
    else:
        for i in range(n):
            b0[yk[i]] += 1.0
        for k in range(K):
            b0[k] = np.log(b0[k] / n)
    _group_predictor(Z, beta, b0, K, eta)
    null = _neg2loglik(kind, _working(kind, y, yk, K, eta, w, r, False), n)
    null_dev = null
    if kind == 1:                                      # the same sums as the Ising-only kernel had
        null_dev = 0.0
        for i in range(n):
            null_dev -= 2.0 * (y[i] * np.log(ybar) + (1.0 - y[i]) * np.log(1.0 - ybar))
            r[i] = y[i] - ybar
    if kind == 0:
        rss0 = 0.0
        for i in range(n):
            rss0 += r[i] * r[i]
        null_dev = rss0
    floor = 0.0                                        # a lower bound of -2 loglik
    if kind == 0:
        floor = n * np.log(2.0 * np.pi * (1.0 - devmax) * null_dev / n) + n
    _group_gradients(Z, gstart, skip, K, r, grad, gnorm)
    prev_lam = lams[0]
    prev_ratio = 0.0
    n_done = 0
    best = np.inf
    n_cand = m - (gstart[skip + 1] - gstart[skip])
    per_coef = np.log(n) + 2.0 * gamma * np.log(float(n_cand))
    for k in range(lams.shape[0]):
        lam = lams[k]
        for g in range(G):                             # sequential strong rule + the active set
            if g == skip:
                continue
            on = False
            for c in range(gstart[g] * K, gstart[g + 1] * K):
                if beta[c] != 0.0:
                    on = True
            if on or gnorm[g] >= (2.0 * lam - prev_lam) * gw[g]:
                work[g] = True
        while True:
            for it in range(max_outer):
                _group_predictor(Z, beta, b0, K, eta)
                _working(kind, y, yk, K, eta, w, r, True)
                # each working group's curvature bound, fixed while w is: its column's
                # weighted squared norm (one column), else the largest Gershgorin row sum
                # of its weighted Gram matrix, over the classes
                for g in range(G):
                    if not work[g]:
                        continue
                    c0 = gstart[g]
                    c1 = gstart[g + 1]
                    L = 0.0
                    if c1 - c0 == 1 and K == 1:
                        for i in range(n):
                            L += w[i] * Z[c0, i] * Z[c0, i]
                        curv[g] = L / n
                        continue
                    for kk in range(K):
                        for ca in range(c0, c1):
                            row = 0.0
                            for cb in range(c0, c1):
                                s = 0.0
                                for i in range(n):
                                    s += w[i * K + kk] * Z[ca, i] * Z[cb, i]
                                row += abs(s) / n if cb != ca else s / n
                            L = max(L, row)
                    curv[g] = L
                biggest = 0.0
                for sweep in range(1000):
                    change = 0.0
                    for kk in range(K):
                        sw = 0.0
                        swr = 0.0
                        for i in range(n):
                            sw += w[i * K + kk]
                            swr += w[i * K + kk] * r[i * K + kk]
                        d0 = swr / sw
                        if d0 != 0.0:
                            b0[kk] += d0
                            for i in range(n):
                                r[i * K + kk] -= d0
                            change = max(change, sw / n * d0 * d0)
                    for g in range(G):
                        if not work[g]:
                            continue
                        c0 = gstart[g]
                        c1 = gstart[g + 1]
                        a = curv[g]
                        if (c1 - c0) * K == 1:                 # one coefficient: the lasso's update
                            v = 0.0
                            for i in range(n):
                                v += w[i] * Z[c0, i] * r[i]
                            v = v / n + a * beta[c0]
                            new = _soft(v, lam) / a
                            d = new - beta[c0]
                            if d != 0.0:
                                beta[c0] = new
                                for i in range(n):
                                    r[i] -= d * Z[c0, i]
                                change = max(change, a * d * d)
                            continue
                        # a block: a gradient step of length 1/a, then the group's shrinkage
                        nrm = 0.0
                        for c in range(c0, c1):
                            for kk in range(K):
                                s = 0.0
                                for i in range(n):
                                    s += w[i * K + kk] * Z[c, i] * r[i * K + kk]
                                u = beta[c * K + kk] + s / n / a
                                upd[c * K + kk] = u
                                nrm += u * u
                        nrm = np.sqrt(nrm)
                        t = lam * gw[g]
                        shrink = 0.0 if a * nrm <= t * (1.0 + 1e-10) else 1.0 - t / (a * nrm)
                        dd = 0.0
                        for c in range(c0, c1):
                            for kk in range(K):
                                j = c * K + kk
                                d = shrink * upd[j] - beta[j]
                                if d != 0.0:
                                    beta[j] += d
                                    dd += d * d
                                    for i in range(n):
                                        r[i * K + kk] -= d * Z[c, i]
                        change = max(change, a * dd)
                    biggest = max(biggest, change)
                    if change < tol:
                        break
                if biggest < tol or kind == 0:             # a Gaussian's approximation is exact
                    break
            # optimality of every group at the new fit
            _group_predictor(Z, beta, b0, K, eta)
            ll = _working(kind, y, yk, K, eta, w, r, False)
            _group_gradients(Z, gstart, skip, K, r, grad, gnorm)
            added = False
            for g in range(G):
                if g != skip and not work[g] and gnorm[g] > lam * gw[g] * (1.0 + 1e-9):
                    work[g] = True
                    added = True
            if not added:
                break
        dev = _neg2loglik(kind, ll, n)                 # ll: at the fit the check accepted
        nnz = 0
        for j in range(m * K):
            out_beta[k, j] = beta[j]
            if beta[j] != 0.0:
                nnz += 1
        for kk in range(K):
            out_b0[k, kk] = b0[kk]
        out_nnz[k] = nnz
        out_ebic[k] = dev + nnz * per_coef
        best = min(best, out_ebic[k])
        n_done = k + 1
        if ebic_stop and floor + nnz * per_coef > best:
            break
        if kind == 0:
            ratio = 1.0 - ll / null_dev if null_dev > 0 else 1.0
        else:
            ratio = 1.0 - dev / null_dev if null_dev > 0 else 1.0
        prev_lam = lam
        if ratio > devmax:
            break
        if k >= 5 and ratio - prev_ratio < fdev * ratio:
            break
        prev_ratio = ratio
    return n_done
