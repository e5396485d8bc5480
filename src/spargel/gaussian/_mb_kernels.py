"""numba kernels of neighbourhood selection (imported lazily by :mod:`.neighbourhood`).

For node j and weight a, the lasso of the standardised column ``z_j`` on the others,

    min_beta  1/(2n) ||z_j - Z_{-j} beta||^2 + a ||beta||_1,

is solved in its covariance form ``1/2 beta^T S beta - s_j^T beta + a ||beta||_1``
(``S = Z^T Z / n``, unit diagonal) by cyclic coordinate descent on a *working set* W:
a dense |W| x |W| block of S, the vector ``b = S[W, j]`` and ``q = S[W, W] beta``, so a
step on coordinate t is

    beta_t <- soft(b_t - q_t + G_tt beta_t, a) / G_tt,   q += (change) G[:, t].

When the sweeps on W have converged, every variable outside W is checked against the
lasso's optimality (KKT) condition ``|c_k| <= a``, ``c_k = s_kj - S[k, W] beta``; the
violators join W and the sweeps go on. The working set starts with the variables of
``|s_kj| > a`` (at beta = 0 exactly the violators) and the previous alpha's support on a
path (warm start, largest alpha first).

Two sources of S (:class:`Problem`):

* **Gram** (``S`` a p x p array): entries read from it; the check visits every k.
* **data** (``S`` a 0 x 0 array): entries are dot products of rows of ``Zt`` (the
  standardised data, variables in rows), computed when needed; the check uses the
  residual ``r = z_j - Z_W beta`` (``c_k = z_k . r / n``) and visits only the variables
  that can violate: the screened graph ``(adj_ptr, adj_idx, adj_val)`` holds every pair
  with ``|s_kl| > tau``, so a variable k that is not a screened neighbour of j nor of any
  l in the support has ``|c_k| <= tau (1 + ||beta||_1)``; when that bound is <= a only the
  screened neighbours are computed, otherwise the node is flagged for the caller's check
  once its screened neighbours no longer violate.

A kernel call solves one alpha for a list of nodes, each warm-started from its *seeds*
(the previous alpha's coefficients on a path, and the violators the caller's check
found), writing each node's non-zero coefficients to the call's output (:class:`Out`).
In data mode a node whose bound does not certify it is not checked variable by variable
here: it is flagged (``Out.uncertified``), and the caller checks all flagged nodes at once
with one matrix product (:func:`spargel.gaussian.neighbourhood.neighbourhood_path`) and
solves those with violators again, seeded with them. A call returns early (status 1)
when the output might not hold another node, or (status 2) when a working set outgrows
the scratch (:class:`Work`), and is called again from that node with larger buffers.
"""

from collections import namedtuple

from ..core.jit import inner, kernel
from ..core.penalty_kernels import soft_threshold

#: the data of the problem: standardised data ``Zt`` (p x n, a variable per row), the
#: Gram matrix ``S`` (p x p, or 0 x 0 in data mode) and the screened graph (CSR, both
#: directions, pairs with ``|s_kl| > tau``; empty in Gram mode)
Problem = namedtuple("Problem", "Zt S adj_ptr adj_idx adj_val")

#: per-chunk scratch: the working set ``wlist`` and its block ``G`` (wc x wc), ``b``,
#: ``beta``, ``q`` (length wc), the residual ``r`` (n; p in Gram mode: the gradient), the stamps ``mark`` (k is in the
#: working set) and ``seen`` (k already checked in this round), both length p, and
#: ``ctrl = [last mark stamp, last seen stamp]``
Work = namedtuple("Work", "wlist G b beta q r mark seen ctrl")

#: per-call output: the coefficients of the nodes in order (``idx``, ``val``), ``cnt[i]``
#: of them for the i-th node, its coordinate-descent sweeps ``n_iter[i]``, ``unconverged[i]``
#: (1: stopped at max_iter) and ``uncertified[i]`` (1: data mode, the screened bound did
#: not prove the solution optimal; the caller checks it)
Out = namedtuple("Out", "idx val cnt n_iter unconverged uncertified")


@inner(fastmath=True)
def _cov(prob, k, l, inv_n):
    """``S[k, l]``: read from the Gram matrix, or the dot product of two rows of Zt."""
    if prob.S.shape[0] > 0:
        return prob.S[k, l]
    zk = prob.Zt[k]
    zl = prob.Zt[l]
    acc = 0.0
    for m in range(zk.shape[0]):
        acc += zk[m] * zl[m]
    return acc * inv_n


@inner(fastmath=True)
def _add(prob, wk, w, k, j, stamp, inv_n):
    """Append variable k to the working set of size w (beta_k = 0); returns the new
    size, or -1 when the scratch is full."""
    if w == wk.wlist.shape[0]:
        return -1
    G = wk.G
    wk.wlist[w] = k
    wk.mark[k] = stamp
    wk.b[w] = _cov(prob, k, j, inv_n)
    qk = 0.0
    for t in range(w):
        g = _cov(prob, k, wk.wlist[t], inv_n)
        G[w, t] = g
        G[t, w] = g
        qk += g * wk.beta[t]
    G[w, w] = _cov(prob, k, k, inv_n)
    wk.beta[w] = 0.0
    wk.q[w] = qk
    return w + 1


@inner(fastmath=True)
def _sweeps(wk, w, a, tol, max_iter):
    """Coordinate descent on the working set until no coefficient moves more than tol
    (or max_iter sweeps); returns the number of sweeps (negative: not converged)."""
    G, b, beta, q = wk.G, wk.b, wk.beta, wk.q
    for sweep in range(1, max_iter + 1):
        big = 0.0
        for t in range(w):
            g = G[t, t]
            z = b[t] - q[t] + g * beta[t]
            new = soft_threshold(z, a) / g
            d = new - beta[t]
            if d != 0.0:
                beta[t] = new
                for u in range(w):
                    q[u] += d * G[u, t]
                ad = abs(d)
                if ad > big:
                    big = ad
        if big <= tol:
            return sweep
    return -max_iter


@inner(fastmath=True)
def _check(prob, wk, w, j, a, tau, stamp, inv_n):
    """The KKT check outside the working set: adds every violator (|c_k| > a) to it.
    Returns the new size (unchanged: optimal), -1 when the scratch is full, or -2 (data
    mode) when the screened bound ``tau (1 + ||beta||_1) <= a`` does not hold."""
    Zt, S = prob.Zt, prob.S
    p = Zt.shape[0]
    beta, wlist = wk.beta, wk.wlist
    w0 = w
    if S.shape[0] > 0:                      # Gram mode: c = S[j] - beta^T S[supp] (rows)
        r = wk.r                            # S is symmetric: rows are read, contiguous
        Sj = S[j]
        for k in range(p):
            r[k] = Sj[k]
        for t in range(w0):
            bt = beta[t]
            if bt != 0.0:
                Sl = S[wlist[t]]
                for k in range(p):
                    r[k] -= bt * Sl[k]
        for k in range(p):
            if k == j or wk.mark[k] == stamp:
                continue
            c = r[k]
            if abs(c) > a:
                w = _add(prob, wk, w, k, j, stamp, inv_n)
                if w < 0:
                    return -1
        return w
    # data mode: the residual r = z_j - Z_W beta, c_k = z_k . r / n
    r = wk.r
    n = r.shape[0]
    zj = Zt[j]
    for m in range(n):
        r[m] = zj[m]
    l1 = 0.0
    for t in range(w0):
        bt = beta[t]
        if bt != 0.0:
            l1 += abs(bt)
            zl = Zt[wlist[t]]
            for m in range(n):
                r[m] -= bt * zl[m]
    wk.ctrl[1] += 1
    seen = wk.ctrl[1]
    # the screened neighbours of j and of the support: beyond them no k can violate when
    # the bound tau (1 + ||beta||_1) <= a holds (else the caller checks the rest, after
    # these violators are in)
    for t in range(-1, w0):
        if t >= 0 and beta[t] == 0.0:
            continue
        src = j if t < 0 else wlist[t]
        for e in range(prob.adj_ptr[src], prob.adj_ptr[src + 1]):
            k = prob.adj_idx[e]
            if k == j or wk.mark[k] == stamp or wk.seen[k] == seen:
                continue
            wk.seen[k] = seen
            zk = Zt[k]
            c = 0.0
            for m in range(n):
                c += zk[m] * r[m]
            if abs(c * inv_n) > a:
                w = _add(prob, wk, w, k, j, stamp, inv_n)
                if w < 0:
                    return -1
    if w == w0 and tau * (1.0 + l1) > a:    # none here, and the bound does not certify
        return -2
    return w


@kernel(fastmath=True)
def mb_nodes(prob, wk, out, a, tau, nodes, seed_ptr, seed_idx, seed_val, start, pos, tol,
             max_iter):
    """Solve the lasso at weight ``a`` for ``nodes[start:]``, writing from ``pos`` on. Node
    ``nodes[i]`` starts from its seeds ``seed_idx[seed_ptr[i]:seed_ptr[i + 1]]`` with the
    values ``seed_val`` (a warm start), and from the variables with ``|s_kj| > a``.

    Returns ``(status, i, pos)``: status 0 when all are done; 1 when the output may not
    hold the coefficients of ``nodes[i]``, 2 when its working set outgrew the scratch
    (call again from ``i`` and ``pos`` with larger buffers)."""
    Zt, S = prob.Zt, prob.S
    n = Zt.shape[1]
    p = Zt.shape[0]
    inv_n = 1.0 / n
    wc = wk.wlist.shape[0]
    G, beta, q = wk.G, wk.beta, wk.q
    for i in range(start, nodes.shape[0]):
        j = nodes[i]
        if pos + wc > out.idx.shape[0]:
            return 1, i, pos
        wk.ctrl[0] += 1
        stamp = wk.ctrl[0]
        w = 0
        # the seeds, with their values (q = G beta kept up to date)
        for e in range(seed_ptr[i], seed_ptr[i + 1]):
            k = seed_idx[e]
            if k == j or wk.mark[k] == stamp:
                continue
            w = _add(prob, wk, w, k, j, stamp, inv_n)
            if w < 0:
                return 2, i, pos
            v = seed_val[e]
            if v != 0.0:
                t = w - 1
                beta[t] = v
                for u in range(w):
                    q[u] += v * G[u, t]
        # the variables that violate optimality at beta = 0: |s_kj| > a
        if S.shape[0] > 0:
            Sj = S[j]
            for k in range(p):
                if k != j and wk.mark[k] != stamp and abs(Sj[k]) > a:
                    w = _add(prob, wk, w, k, j, stamp, inv_n)
                    if w < 0:
                        return 2, i, pos
        else:
            for e in range(prob.adj_ptr[j], prob.adj_ptr[j + 1]):
                k = prob.adj_idx[e]
                if wk.mark[k] != stamp and abs(prob.adj_val[e]) > a:
                    w = _add(prob, wk, w, k, j, stamp, inv_n)
                    if w < 0:
                        return 2, i, pos
        sweeps = 0
        bad = 0
        flag = 0
        while True:
            s_ = _sweeps(wk, w, a, tol, max_iter)
            if s_ < 0:
                bad = 1
                sweeps -= s_
            else:
                sweeps += s_
            w1 = _check(prob, wk, w, j, a, tau, stamp, inv_n)
            if w1 == -1:
                return 2, i, pos
            if w1 == -2:
                flag = 1
                break
            if w1 == w:
                break
            w = w1
        c = 0
        for t in range(w):
            if beta[t] != 0.0:
                out.idx[pos] = wk.wlist[t]
                out.val[pos] = beta[t]
                pos += 1
                c += 1
        out.cnt[i] = c
        out.n_iter[i] = sweeps
        out.unconverged[i] = bad
        out.uncertified[i] = flag
    return 0, nodes.shape[0], pos


@kernel()
def slab_pairs(B, a, low, I, J):
    """The pairs of a slab ``B = |S[a:a+m, a:]|`` (any sign) in its strict upper
    triangle with ``|B[r, c]| > low``: written to ``I, J`` (global indices, row-major)
    when they are long enough; returns how many there are (call again with arrays of
    that length when it is larger than theirs)."""
    m, w = B.shape
    cap = I.shape[0]
    c = 0
    for r in range(m):
        row = B[r]
        for k in range(r + 1, w):
            if abs(row[k]) > low:
                if c < cap:
                    I[c] = a + r
                    J[c] = a + k
                c += 1
    return c
