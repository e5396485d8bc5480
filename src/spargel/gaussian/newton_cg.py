"""Orthant-wise Newton-CG: the default solver for the l1 problem.

At the current precision X (W = X^-1, gradient ``G = S - W`` of the smooth
part) one outer iteration

1. picks the *free set* F and an orthant: non-zero entries keep their sign,
   a zero entry is freed (with the sign ``-sign(G_ij)`` that decreases the
   objective) only when ``|G_ij| > L_ij``; every other entry stays exactly
   zero. On that orthant the objective is smooth, with gradient
   ``g = G + L sign`` on F;
2. solves the Newton system ``P_F(W D W) = -g`` on F by conjugate gradients,
   *preconditioned by the inverse Hessian* ``V -> P_F(X V X)`` (the exact
   inverse of ``W (.) W`` when F is everything; X is sparse, so one
   application costs O(|F| * nnz per row); a denser X goes through the same
   single-precision dense product as the Hessian, whose vectorised rows then
   cost less than the sparse scatter). This is what makes the method
   insensitive to the condition number of W: on data with a few strong
   common factors (asset returns, gene panels) W has a handful of huge
   eigenvalues, and coordinate descent on the Newton model (QUIC, our
   ``newton-cd``) then needs hundreds of sweeps, whereas preconditioned CG
   needs a few iterations. CG stops at a relative residual
   ``min(0.1, sqrt(|g| / |g_0|))`` (inexact Newton, superlinear);
3. Armijo backtracking on ``f(P(X + t D))``, P the projection onto the
   orthant (entries that would change sign become 0); one Cholesky both
   tests positive definiteness and gives log det, and the accepted factor
   gives ``W = X^-1`` (``dpotri``; a large sparse X is factorised sparsely,
   see :mod:`.factor`);
4. the certified duality gap (as in ``newton_cd``) once the predicted
   decrease ``-<g, D>`` is small; stop when the gap is below
   ``max(atol, tol * max(1, |f|))``.

This is the orthant-based Newton method of Oztoprak, Nocedal, Rennie & Olsen
(*Newton-like methods for sparse inverse covariance estimation*, NIPS 2012)
with our choice of preconditioner; an independent implementation.

On factor data (one strong common factor here) Newton-CG certifies the optimum in a
few outer iterations, where Newton-CD (QUIC's coordinate descent on the same Newton
model) is still short of it after its default 100:

>>> import numpy as np
>>> from spargel.gaussian.control import RunControl
>>> from spargel.gaussian.newton_cd import newton_cd
>>> from spargel.gaussian.objective import penalty_matrix
>>> rng = np.random.default_rng(0)
>>> Z = rng.standard_normal((200, 1)) @ rng.standard_normal((1, 30)) + rng.standard_normal((200, 30))
>>> S, L, run = np.cov(Z.T, bias=True), penalty_matrix(0.2, 30), RunControl(tol=1e-10)
>>> cg, cd = newton_cg(S, L, control=run), newton_cd(S, L, control=run)
>>> cg.converged, cg.n_iter < 30, cd.converged
(True, True, False)
"""

from __future__ import annotations

import numpy as np

from .newton_cd import NewtonState, column_groups

__all__ = ["newton_cg"]

#: the largest relative residual at which conjugate gradients stops (the forcing term
#: is ``min(ETA_MAX, sqrt(|g| / |g_0|))``): on data with strong common factors a looser
#: direction oscillates (its full step leaves a large gradient for the next), and a few
#: more CG products cost less than the Newton iterations they save
ETA_MAX = 0.1
#: the preconditioner ``P_F(X V X)`` by the dense single-precision sandwich when its
#: ``3 |F| n`` vectorised products cost less than the sparse one's ``sum_k nnz_k |F_k|``
#: scattered updates by this factor (measured at p = 452: about 1.6 ns per scattered
#: update, 16 fused products per ns), and p is at most :data:`DENSE_PRECONDITION_N`
DENSE_PRECONDITION = 18.0
#: the largest p of the dense preconditioner: above it the dense products stream from
#: memory (at p = 2,308 the sparse one was faster at every density measured), and its
#: p x p single-precision copy of X (half a dense array more) stays at most 4 MiB
DENSE_PRECONDITION_N = 1024


def _float32_halves(U):
    """Two float32 n x n arrays in the memory of the C-contiguous float64 n x n U."""
    n = U.shape[0]
    flat = U.reshape(-1).view(np.float32)
    if not np.may_share_memory(flat, U):  # pragma: no cover - U is always C-contiguous
        raise ValueError("scratch must be C-contiguous")
    return flat[:n * n].reshape(n, n), flat[n * n:].reshape(n, n)


class _CGBuffers:
    """Scratch of the CG phase, allocated on first use and grown as needed
    (free-set vectors for m entries, compressed rows for nnz non-zeros; the
    n x n float32 copy of W and the products' scratch live in the solver's
    n x n scratch U, see :func:`_float32_halves`)."""

    def __init__(self, n, m, nnz):
        self.n, self.m, self.nnz = n, m, nnz
        self.vectors = np.empty((5, m))                  # d, r, z, q, Hq
        self.indptr = np.empty(n + 1, dtype=np.int64)
        self.indices = np.empty(nnz, dtype=np.int64)
        self.data = np.empty(nnz)
        self.ptr = np.empty(n + 1, dtype=np.int64)
        self.scol = np.empty(2 * m, dtype=np.int64)
        self.spos = np.empty(2 * m, dtype=np.int64)
        self.sval = np.empty(2 * m)
        self.buf32 = np.empty(n, dtype=np.float32)
        self.no_x = np.zeros((0, 0), dtype=np.float32)
        self.x32 = None

    def dense_x(self, X):
        """X as an n x n single-precision array (allocated on first use)."""
        if self.x32 is None:
            self.x32 = np.empty((self.n, self.n), dtype=np.float32)
        self.x32[...] = X
        return self.x32

    @classmethod
    def ensure(cls, bufs, n, m, nnz):
        if bufs is None or bufs.m < m or bufs.nnz < nnz:
            grow = 1.25
            m2 = max(m, int(grow * bufs.m)) if bufs is not None else m
            nnz2 = max(nnz, int(grow * bufs.nnz)) if bufs is not None else nnz
            return cls(n, min(m2, n * (n + 1) // 2), min(nnz2, n * n))
        return bufs


def _dense_preconditioner(indptr, ptr, m, n):
    """Whether the preconditioner's product goes dense (:data:`DENSE_PRECONDITION`):
    X's rows (``indptr``) and the free set's symmetric rows (``ptr``, m positions)."""
    if n > DENSE_PRECONDITION_N:
        return False
    scattered = float(np.dot(np.diff(indptr[:n + 1]), np.diff(ptr[:n + 1])))
    return 3.0 * m * n < DENSE_PRECONDITION * scattered


def _entering_filter(X, dv, S, W, Lm, lw, rows, cols, sgn, grad):
    """Keep the free positions that are non-zero in X, on the diagonal, or
    moved off zero by the CD sweep's direction dv (on the free set; with the sign
    the sweep gave them)."""
    from ._cd_kernels import weights_at

    xv = X[rows, cols]
    keep = (xv != 0.0) | (dv != 0.0) | (rows == cols)
    if keep.all():
        return rows, cols, sgn, grad
    rows, cols = rows[keep], cols[keep]
    sgn = np.where(xv == 0.0, np.sign(dv) * (sgn != 0.0), sgn)[keep]
    lam = np.empty(rows.size)
    weights_at(Lm, lw, rows, cols, lam)
    grad = (S[rows, cols] - W[rows, cols]) + lam * sgn
    return rows, cols, sgn, grad


def newton_cg(S, L, *, X0=None, W0=None, control=None, offset=0.0, max_cg=50, sigma=1e-4,
              max_line_search=40, gap_check=100.0):
    """Solve ``min -log det X + tr(S X) + sum L_ij |X_ij|`` by orthant-wise Newton-CG.

    Parameters
    ----------
    S : (n, n) validated covariance. L : (n, n) non-negative weights, or a
        :class:`~.weights.ScalarWeights` (a scalar penalty without the matrix).
    X0 : optional positive definite warm start (default
        ``diag(1 / (S_ii + L_ii))``). W0 : its inverse, when known (an array, or a
        function writing it into the n x n array it is given; see
        :func:`~.newton_cd.start_point`).
    control : a :class:`~.control.RunControl` (None: its defaults): ``tol``, ``atol``
        (stop when the certified duality gap is <= ``max(atol, tol * max(1, |f|))``),
        ``max_iter`` (outer Newton iterations), ``polish`` (once the tolerance is met,
        up to this many further Newton steps towards the rounding floor, see
        :func:`~.newton_cd.polish_done`), ``verbose``, ``callback`` and ``t0``.
    offset : added to the objective in the history rows (the constant of a
        rescaled problem; ``solve_gaussian`` passes it).
    max_cg : CG iterations per step.
    gap_check : the certified gap (one extra Cholesky) is computed once the
        predicted decrease is below ``gap_check * max(atol, tol * max(1, |f|))``.

    Returns
    -------
    GaussianResult (``stop_reason``: 'tol', 'max_iter', 'linesearch' or 'callback').
    """
    from ._cd_kernels import apply_step, cd_sweeps, direction_terms
    from ._newton_cg_kernels import (CGWork, FreeSet, PreconditionerX, dense_to_csr,
                                     newton_cg_direction, orthant_step, symmetric_rows)

    # four n x n arrays: S, X, W and one scratch U (U = D W of the CD sweeps, the
    # float32 W and the products' scratch of CG, then the trial point of the line
    # search and its Cholesky factor, which becomes W while the old W becomes U);
    # the directions live on the free set, and a scalar penalty needs no matrix
    st = NewtonState(S, L, X0, W0, control, "newton-cg", gap_check)
    S, Lm, lw, X, n = st.S, st.Lm, st.lw, st.X, st.n
    trSX, pen = st.trSX, st.pen
    buf = np.empty(n)
    buf32 = np.empty(n, dtype=np.float32)
    cg = None                          # buffers of the CG phase, sized when first needed
    gnorm0 = None
    mode = "cd"
    edges_prev = -1
    it = 0
    for it in range(1, st.max_iter + 1):
        W, U, f = st.W, st.U, st.f
        m, sub = st.free_set()
        r_, c_, s_, g_ = st.rows[:m], st.cols[:m], st.sgn[:m], st.grad[:m]
        col_ptr, col_of_group = column_groups(c_)
        wts = np.where(r_ == c_, 1.0, 2.0)
        gnorm = float(np.sqrt(np.dot(wts * g_, g_)))
        if gnorm0 is None:
            gnorm0 = max(gnorm, np.finfo(float).tiny)
        step = 0.0
        n_cg = 0
        eta = np.nan
        this_mode = mode
        dv = st.dvec[:m]                   # the CD direction on the free set
        dv.fill(0.0)
        if mode == "cg":
            # one CD sweep picks which zero entries enter, and their signs: in single
            # precision, in U's two halves (the float32 W, kept for CG, and its D W)
            W32, U32 = _float32_halves(U)
            W32[...] = W
            U32.fill(0.0)
            cd_sweeps(W32, S, X, Lm, lw, dv, U32, col_ptr, r_, col_of_group, 1, buf32)
            r_, c_, s_, g_ = _entering_filter(X, dv, S, W, Lm, lw, r_, c_, s_, g_)
            m = r_.size
            col_ptr, col_of_group = column_groups(c_)
            wts = np.where(r_ == c_, 1.0, 2.0)
            # inexact Newton: superlinear forcing, at most ETA_MAX
            eta = min(ETA_MAX, float(np.sqrt(gnorm / gnorm0)))
            cg = _CGBuffers.ensure(cg, n, m, int(np.count_nonzero(X)))
            dense_to_csr(X, cg.indptr, cg.indices, cg.data)
            symmetric_rows(r_, c_, n, cg.ptr, cg.scol, cg.spos)
            # U's halves: the float32 W and the scratch of both products (used in turn)
            X32 = cg.dense_x(X) if _dense_preconditioner(cg.indptr, cg.ptr, m, n) else cg.no_x
            d, r, z, q, hq = (v[:m] for v in cg.vectors)
            n_cg = newton_cg_direction(
                W32, PreconditionerX(X32, cg.indptr, cg.indices, cg.data),
                FreeSet(r_, col_ptr, col_of_group, cg.ptr, cg.scol, cg.spos, wts), g_, d,
                max_cg, eta, CGWork(U32, cg.buf32, U32, cg.sval, r, z, q, hq))
            W32 = U32 = None
            decrease = -float(np.dot(wts * g_, d))     # predicted decrease <g, -D>
            if decrease > 0.0:
                t = 1.0
                for _ in range(max_line_search):
                    dtr, dpen, dlin = orthant_step(X, r_, c_, s_, d, t, S, Lm, lw, W, U, True)
                    c, ld = st.fz.cholesky(U)
                    if c is not None:
                        ft = -ld + trSX + dtr + pen + dpen
                        if ft <= f + sigma * (dlin + dpen):
                            step = t
                            break
                    t *= 0.5
            if step > 0.0:
                dtr, dpen, _ = orthant_step(X, r_, c_, s_, d, step, S, Lm, lw, W, X, False)
                trSX += dtr
                pen += dpen
            if step < 0.5:
                mode = "cd"         # the orthant was a poor guess: back to CD
        else:
            # QUIC's direction: CD sweeps on the l1-regularised Newton model
            # (they find the support; 1 + k // 3 sweeps)
            U.fill(0.0)
            n_sweeps = min(1 + (it - 1) // 3, 10)
            cd_sweeps(W, S, X, Lm, lw, dv, U, col_ptr, r_, col_of_group, n_sweeps, buf)
            gd, dpen, trSD, pen0 = direction_terms(W, Lm, lw, X, S, r_, c_, dv)
            delta = gd + dpen
            decrease = -delta
            step, ft, c, pen_t = st.cd_search(r_, c_, dv, pen0, trSX, trSD, delta, sigma,
                                              max_line_search)
            if step > 0.0:
                apply_step(X, r_, c_, dv, step)
                trSX += step * trSD
                pen = pen_t
        if step > 0.0:
            st.accept(c, ft)
        edges = int((np.count_nonzero(X) - n) // 2)
        if this_mode == "cd" and step == 1.0 and abs(edges - edges_prev) <= 0.05 * edges:
            mode = "cg"             # the support has settled: Newton-CG from here
        edges_prev = edges
        row = {
            "iteration": it,
            "objective": st.f + offset,
            "duality_gap": np.nan,
            "active_edges": edges,
            "free_set": int(m),
            "direction": this_mode,
            "cg_iterations": int(n_cg),
            "eta": eta if this_mode == "cg" else np.nan,
            "gnorm": gnorm,
            "step": step,
            "decrement": decrease,
            "subgradient_l1": sub,
        }
        if st.end_of_iteration(row, it, step, decrease, step == 0.0 and this_mode == "cd"):
            break
    return st.result(it)
