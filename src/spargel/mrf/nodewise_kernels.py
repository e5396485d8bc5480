"""Compiled l1-penalised logistic regression of one variable on the others, down a path
of penalties, with each point's EBIC (the node-wise step of :mod:`.nodewise`).

The predictors are the standardised columns ``Z`` (one row per variable, ``(p, n)``:
centred, divided by their standard deviation with ``1/n``), so the penalty is
``lam * sum_j |beta_j|`` on the standardised scale, i.e. ``lam * sum_j sd_j |b_j|`` on
the original one (glmnet's ``standardize=TRUE``). Each penalty is solved by proximal
Newton steps: the weighted least-squares approximation of the log-likelihood at the
current fit, minimised by cyclic coordinate descent over a working set (the previous
point's active variables and those the sequential strong rule keeps), then every
variable's optimality checked and violators added.
"""

import numpy as np
from ..core.jit import inner, kernel


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


@kernel(allocates=True)
def node_path(Z, node, y, lams, gamma, tol, max_outer, devmax, fdev, ebic_stop, out_beta, out_b0, out_ebic,
              out_nnz):
    """The path of node ``node``: ``y`` its 0/1 values, ``Z`` (p, n) every variable's
    standardised column (row ``node`` is skipped). For each penalty ``lams[k]`` writes the
    standardised coefficients ``out_beta[k]`` (length p, 0 at ``node``), the intercept, the
    EBIC ``-2 loglik + J log n + 2 gamma J log(p - 1)`` and ``J`` (non-zeros). Stops early
    (glmnet's rules) when the deviance ratio passes ``devmax`` or a step gains less than
    ``fdev`` of the deviance, and with ``ebic_stop`` once the EBIC's penalty alone,
    ``J (log n + 2 gamma log(p - 1))``, exceeds the best EBIC so far (a point with at
    least ``J`` non-zeros cannot do better: ``-2 loglik >= 0``). Returns the number of
    points computed."""
    p, n = Z.shape
    beta = np.zeros(p)
    eta = np.empty(n)
    w = np.empty(n)
    r = np.empty(n)
    grad = np.zeros(p)
    work = np.zeros(p, np.bool_)
    curv = np.zeros(p)
    ybar = 0.0
    for i in range(n):
        ybar += y[i]
    ybar /= n
    b0 = np.log(ybar / (1.0 - ybar))
    null_dev = 0.0
    for i in range(n):
        null_dev -= 2.0 * (y[i] * np.log(ybar) + (1.0 - y[i]) * np.log(1.0 - ybar))
    # the gradient at the null model: Z_j . (y - ybar) / n
    for j in range(p):
        if j == node:
            continue
        s = 0.0
        for i in range(n):
            s += Z[j, i] * (y[i] - ybar)
        grad[j] = s / n
    prev_lam = lams[0]
    prev_ratio = 0.0
    n_done = 0
    best = np.inf
    per_coef = np.log(n) + 2.0 * gamma * np.log(p - 1.0)
    for k in range(lams.shape[0]):
        lam = lams[k]
        for j in range(p):                     # sequential strong rule + the active set
            if j != node and (beta[j] != 0.0 or abs(grad[j]) >= 2.0 * lam - prev_lam):
                work[j] = True
        while True:
            for it in range(max_outer):
                # the quadratic approximation at the current fit
                _linear_predictor(Z, beta, b0, eta)
                for i in range(n):
                    pr = 1.0 / (1.0 + np.exp(-eta[i]))
                    wi = max(pr * (1.0 - pr), 1e-5)
                    w[i] = wi
                    r[i] = (y[i] - pr) / wi          # working residual z - eta
                # each working variable's weighted squared norm: fixed while w is
                for j in range(p):
                    if work[j]:
                        a = 0.0
                        for i in range(n):
                            a += w[i] * Z[j, i] * Z[j, i]
                        curv[j] = a / n
                biggest = 0.0
                for sweep in range(1000):
                    change = 0.0
                    sw = 0.0
                    swr = 0.0
                    for i in range(n):
                        sw += w[i]
                        swr += w[i] * r[i]
                    d0 = swr / sw
                    if d0 != 0.0:
                        b0 += d0
                        for i in range(n):
                            r[i] -= d0
                        change = max(change, sw / n * d0 * d0)
                    for j in range(p):
                        if not work[j]:
                            continue
                        a = curv[j]
                        c = 0.0
                        for i in range(n):
                            c += w[i] * Z[j, i] * r[i]
                        c = c / n + a * beta[j]
                        new = _soft(c, lam) / a
                        d = new - beta[j]
                        if d != 0.0:
                            beta[j] = new
                            for i in range(n):
                                r[i] -= d * Z[j, i]
                            change = max(change, a * d * d)
                    biggest = max(biggest, change)
                    if change < tol:
                        break
                if biggest < tol:
                    break
            # optimality of every variable at the new fit
            _linear_predictor(Z, beta, b0, eta)
            for i in range(n):
                r[i] = y[i] - 1.0 / (1.0 + np.exp(-eta[i]))
            added = False
            for j in range(p):
                if j == node:
                    continue
                s = 0.0
                for i in range(n):
                    s += Z[j, i] * r[i]
                grad[j] = s / n
                if not work[j] and abs(grad[j]) > lam * (1.0 + 1e-9):
                    work[j] = True
                    added = True
            if not added:
                break
        loglik = 0.0
        nnz = 0
        for i in range(n):
            e = eta[i]
            # y e - log(1 + exp(e)), stable
            loglik += y[i] * e - (max(e, 0.0) + np.log1p(np.exp(-abs(e))))
        for j in range(p):
            out_beta[k, j] = beta[j]
            if beta[j] != 0.0:
                nnz += 1
        out_b0[k] = b0
        out_nnz[k] = nnz
        out_ebic[k] = -2.0 * loglik + nnz * per_coef
        best = min(best, out_ebic[k])
        n_done = k + 1
        if ebic_stop and nnz * per_coef > best:
            break
        ratio = 1.0 - (-2.0 * loglik) / null_dev if null_dev > 0 else 1.0
        prev_lam = lam
        if ratio > devmax:
            break
        if k >= 5 and ratio - prev_ratio < fdev * ratio:
            break
        prev_ratio = ratio
    return n_done
