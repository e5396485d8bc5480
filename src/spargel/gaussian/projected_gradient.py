"""Algorithm 1 of Duchi, Gould & Koller (2008): projected gradient on the dual.

Maximise ``log det(S + W)`` over the box ``|W_ij| <= L_ij``:

1. ``K = (S + W)^-1`` is the gradient (one Cholesky + dpotri);
2. zero the components that would leave the box: the diagonal (``W_ii = L_ii``
   is optimal and never changes), ``G_ij`` where ``W_ij = L_ij`` and
   ``G_ij > 0``, and where ``W_ij = -L_ij`` and ``G_ij < 0``;
3. Algorithm 2: step ``t = tr(K G) / tr(K G K G)`` (the maximiser of the
   second-order expansion of log det along G), halved until
   ``log det(S + P(W + t G)) >= log det(S + W)``;
4. ``W = P(W + t G)`` and the duality gap
   ``eta = tr(S K) + sum_ij L_ij |K_ij| - n`` of the primal-dual pair
   ``K = (S + W)^-1``; stop when eta <= max(atol, tol * max(1, |f|)).

Every iterate S + W is positive definite (the start point of Lemma 1 is, and
the line search only accepts points with finite log det), so S may be
singular (fewer samples than variables).

The curvature ``tr(K G K G)`` needs one matrix product; it only sets the
trial step, which the line search then safeguards, so it is computed in
single precision (``curvature="float32"``, half the time of a float64 gemm).

>>> import numpy as np
>>> from spargel.gaussian.control import RunControl
>>> from spargel.gaussian.objective import penalty_matrix
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((10, 8)); S = np.cov(X.T, bias=True)   # singular
>>> res = projected_gradient(S, penalty_matrix(0.2, 8), control=RunControl(tol=1e-8, max_iter=5000))
>>> res.converged
True
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import lapack

from .control import RunControl
from .objective import interior_dual_start, logdet_pd
from .result import GaussianResult

__all__ = ["projected_gradient"]


def _chol(A):
    """Upper Cholesky factor of a copy of A and log det; (None, -inf) if not PD."""
    c, info = lapack.dpotrf(A, lower=False, clean=False, overwrite_a=False)
    if info != 0:
        return None, -np.inf
    return c, 2.0 * float(np.sum(np.log(np.diag(c))))


def _inv_from_chol(c):
    inv, info = lapack.dpotri(c, lower=False, overwrite_c=True)
    if info != 0:  # pragma: no cover
        raise np.linalg.LinAlgError("dpotri failed")
    inv = np.triu(inv)
    inv += np.triu(inv, 1).T
    return inv


def curvature(K, G, precision="float32"):
    """``tr(K G K G)`` for symmetric K, G (one matrix product)."""
    if precision == "float32":
        M = K.astype(np.float32) @ G.astype(np.float32)
        return float(np.vdot(M, M.T.astype(np.float32)))
    M = K @ G
    return float(np.vdot(M, M.T))


def projected_gradient(S, L, *, Sigma0=None, control=None, offset=0.0, max_line_search=50,
                       curvature_precision="float32"):
    """Solve the l1 problem by Algorithm 1 (dual projected gradient).

    Parameters
    ----------
    S : (n, n) covariance (may be singular). L : (n, n) weights, L_ij > 0
        off the diagonal for a singular S (Lemma 1).
    Sigma0 : optional dual start ``S + W0`` (positive definite, |W0| <= L);
        default the interior point of Lemma 1.
    control : a :class:`~.control.RunControl` (None: its defaults): ``tol``, ``atol``
        (stop when the duality gap <= max(atol, tol * max(1, |f|))), ``max_iter``,
        ``verbose``, ``callback`` and ``t0``, as in ``newton_cg``.
    offset : added to the reported objectives (the constant of a rescaled problem).

    Returns
    -------
    GaussianResult (``covariance`` is the dual iterate S + W,
    ``precision`` its inverse).
    """
    control = RunControl.given(control)
    max_iter, t_start = control.max_iter_for("projected-gradient"), control.start()
    n = S.shape[0]
    hist = []
    Sigma = None
    if Sigma0 is not None:     # warm start: clip the given dual point into the box
        W0 = np.clip(np.asarray(Sigma0, dtype=np.float64) - S, -L, L)
        np.fill_diagonal(W0, np.diag(L))
        if _chol(S + W0)[0] is not None:
            Sigma = S + W0
    if Sigma is None:
        Sigma = interior_dual_start(S, L)
    W = Sigma - S
    np.fill_diagonal(W, np.diag(L))            # optimal diagonal
    upper = L
    lower = -L
    c, f0 = _chol(S + W)
    if c is None:
        raise ValueError("dual start point is not positive definite")
    K = _inv_from_chol(c)
    penalised = np.triu(L > 0, 1)
    converged = False
    reason = "max_iter"
    n_iter = 0
    step = np.nan
    while True:
        # gap of the current primal-dual pair K = (S + W)^-1 (line 14);
        # f0 = log det(S + W) = -log det K
        pen = float(np.vdot(L, np.abs(K)))
        trSK = float(np.vdot(S, K))
        gap = trSK + pen - n
        f = f0 + trSK + pen
        thr = control.threshold(f)
        row = {"iteration": n_iter, "objective": f + offset, "dual_objective": f0 + n + offset,
               "duality_gap": gap,
               "active_edges": int(np.count_nonzero((np.abs(W) >= upper) & penalised)),
               "step": step, "elapsed": time.perf_counter() - t_start}
        stop = control.report(row, hist, "projected-gradient")
        why = dual_stop(row, gap, thr, n_iter, max_iter, stop,
                        lambda: sparsify_precision(K, _box_support(W, upper, L), S, L, f, f0 + n,
                                                   thr)[2])
        if why is not None:
            converged, reason = why == "tol", why
            break
        # projected gradient direction (lines 4-7)
        G = K.copy()
        np.fill_diagonal(G, 0.0)
        G[(W >= upper) & (G > 0)] = 0.0
        G[(W <= lower) & (G < 0)] = 0.0
        # Algorithm 2: second-order step, halved until log det does not decrease
        num = float(np.vdot(K, G))
        if not num > 0.0:
            reason = "linesearch"
            break       # projected gradient is zero: optimal up to rounding
        den = curvature(K, G, curvature_precision)
        step = num / den if den > 0 else 1.0
        accepted = False
        for _ in range(max_line_search):
            Wt = W + step * G
            np.minimum(Wt, upper, out=Wt)
            np.maximum(Wt, lower, out=Wt)
            ct, ft = _chol(S + Wt)
            if ct is not None and ft >= f0:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            reason = "linesearch"
            break       # no ascent along the projected direction
        W = Wt
        f0 = ft
        K = _inv_from_chol(ct)
        n_iter += 1
    Sigma = S + W
    Kd = K
    K, f, gap = sparsify_precision(K, _box_support(W, upper, L), S, L, f, f0 + n, thr)
    # "converged" is the documented criterion checked on the gap reported: the loop's
    # test used another rounding of the same gap (tr(S K) + P(K) - n, or the
    # sparsified matrix's), which may differ from f - g in the last bits
    converged, reason = certified(converged, reason, gap, thr)
    if K is not Kd:
        Sigma = np.linalg.inv(K)
        Sigma = 0.5 * (Sigma + Sigma.T)
    return GaussianResult(precision=K, covariance=Sigma, objective=f,
                          dual_objective=f0 + n, duality_gap=gap, n_iter=n_iter,
                          converged=converged, history=hist,
                          solver="projected-gradient", stop_reason=reason)


def _box_support(W, upper, L):
    """Complementarity: ``|W_ij| < L_ij`` implies ``K*_ij = 0`` (Sec. 2.1); the entries
    that may be non-zero (the diagonal, the unpenalised ones and those on the box)."""
    keep = (np.abs(W) >= upper) | (L == 0)
    np.fill_diagonal(keep, True)
    return keep


def dual_stop(row, gap, thr, n_iter, max_iter, stop, sparse_gap):
    """Why a dual projected gradient stops after the iteration of ``row`` ('tol',
    'max_iter' or 'callback'), or None to go on. ``gap``: the duality gap of the pair
    ``K = (S + W)^-1``, ``thr`` the tolerance; ``stop``: the callback asked to stop;
    ``sparse_gap()``: the certified gap of the sparsified primal (complementarity),
    which certifies much earlier -- computed near the tolerance, every tenth iteration
    and at the last (and kept in the row as ``duality_gap_sparse`` when it stops)."""
    if gap <= thr:
        return "tol"
    if gap <= 1e4 * thr or n_iter % 10 == 9 or n_iter >= max_iter:
        gs = sparse_gap()
        if gs <= thr:
            row["duality_gap_sparse"] = gs
            return "tol"
    if n_iter >= max_iter:
        return "max_iter"
    if stop:
        return "callback"
    return None


def certified(converged, reason, gap, thr):
    """(converged, stop reason) at the end of a dual solver: converged exactly when the
    gap it reports meets the tolerance ``thr``. A run whose loop saw the tolerance met
    in another rounding of the gap but whose reported gap misses it stopped at the
    precision limit (``linesearch``), not converged."""
    if gap <= thr:
        return True, "tol"
    if converged:
        return False, "linesearch"
    return False, reason


def sparsify_precision(K, keep, S, L, f, g, thr, penalty=None):
    """Zero the entries of the dual-derived K that complementarity says are 0.

    K = (S + W)^-1 is only approximately sparse before exact convergence.
    The sparsified matrix is used when it is positive definite and its
    certified gap against the same dual value g stays within ``max(thr,
    gap of K)``; otherwise K is returned unchanged. Returns (K, f, gap).
    """
    Ks = np.where(keep, K, 0.0)
    ld, ok = logdet_pd(Ks)
    if not ok:
        return K, f, f - g
    pen = penalty(Ks) if penalty is not None else float(np.vdot(L, np.abs(Ks)))
    fs = -ld + float(np.vdot(S, Ks)) + pen
    if fs - g <= max(thr, f - g):
        return Ks, fs, fs - g
    return K, f, f - g
