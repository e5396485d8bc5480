"""Newton-CD: a second-order active-set solver for the l1 problem (QUIC-like).

Each outer iteration at the current precision X (with W = X^-1):

1. gradient ``G = S - W`` of the smooth part and the *free set*: positions
   with ``X_ij != 0`` or ``|G_ij| > L_ij`` (every other coordinate of the
   Newton direction is provably zero after one CD pass, so it is skipped);
2. the Newton direction D: cyclic coordinate descent on the l1-regularised
   second-order model restricted to the free set (``1 + k // 3`` sweeps at
   outer iteration k, at most ``max_sweeps``), in a numba kernel;
3. Armijo backtracking ``f(X + t D) <= f(X) + sigma t delta`` starting at
   t = 1, where one Cholesky factorisation both checks positive definiteness
   and gives log det; the accepted factor is reused to form W = X^-1
   (LAPACK dpotri), so an iteration costs one or two O(n^3) LAPACK calls plus
   the O(|free| n) sweeps -- or, for a large sparse X, a sparse factor and
   its solves (:mod:`.factor`);
4. the certified duality gap (one more Cholesky, of the clipped dual point
   ``S + clip(W - S, -L, L)``) once the model decrease ``|delta|`` is below
   ``tol`` times the objective; stop when the gap is below ``tol * max(1, |f|)``.

The method is the one of Hsieh, Sustik, Dhillon & Ravikumar (QUIC, 2011);
this is an independent implementation.

>>> import numpy as np
>>> from spargel.gaussian.control import RunControl
>>> from spargel.gaussian.objective import penalty_matrix
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((50, 8)); S = np.cov(X.T, bias=True)
>>> res = newton_cd(S, penalty_matrix(0.1, 8), control=RunControl(tol=1e-8))
>>> res.converged and res.duality_gap < 1e-6
True
"""

from __future__ import annotations

import time

import numpy as np

from .control import RunControl
from .factor import Factorizer, dense_cholesky, dense_inverse
from .objective import interior_dual_start
from .result import GaussianResult
from .weights import ScalarWeights, dense_weights, weight_args, weights_diag

__all__ = ["newton_cd"]


#: the relative duality gap at which a polish stops: the rounding floor of the
#: objective's terms (log det and tr(S X) are each computed to about n eps |f|)
POLISH_GAP = 1e-15


def polish_done(polished, polish, gap, scale, step, floor):
    """Whether the Newton steps after the tolerance was met (the *polish*) end here.

    A Newton method stopped at a loose tolerance leaves the iterate as far from the
    optimum as that tolerance allows (a relative gap of 1e-7 leaves entries of W
    wrong in their fifth digit); scikit-learn's coordinate descent at the same
    tolerance lands within rounding of the optimum. Newton converges quadratically
    once the tolerance is met, so one or two more steps reach the rounding floor at
    the price of one or two iterations. The polish ends after ``polish`` steps, when
    the certified gap is at ``POLISH_GAP`` of the objective, or when a step makes no
    progress (a failed line search or a model decrease at the rounding floor)."""
    return polished >= polish or gap <= POLISH_GAP * scale or step == 0.0 or floor


class NotPositiveDefinite(ValueError):
    """A warm start that is not positive definite."""


def start_point(S, L, X0, W0=None):
    """The Newton methods' start: ``(S, L, X, W, B, log det X)`` with S and L as
    C-contiguous float64 (L may be a :class:`~.weights.ScalarWeights`), X the warm
    start ``X0`` (its inverse W from one Cholesky) or ``diag(1 / (S_ii + L_ii))``
    (the solution when every off-diagonal weight is large), and B an n x n scratch
    array. ``W0``: the inverse of X0 when the caller has it (the previous fit of a
    path), an array or a function writing it into the n x n array it is given:
    X0's Cholesky factor then only gives log det and the positive definiteness,
    and the inverse (twice the factor's flops) is not recomputed."""
    from ._cd_kernels import mirror_lower_to_upper

    S = np.ascontiguousarray(S, dtype=np.float64)
    if not isinstance(L, ScalarWeights):
        L = np.ascontiguousarray(L, dtype=np.float64)
    n = S.shape[0]
    B = np.empty((n, n))
    if X0 is None:
        diag_d = np.diag(S) + weights_diag(L)
        X = np.zeros((n, n))
        np.fill_diagonal(X, 1.0 / diag_d)
        W = np.zeros((n, n))
        np.fill_diagonal(W, diag_d)
        return S, L, X, W, B, -float(np.sum(np.log(diag_d)))
    X = np.array(X0, dtype=np.float64, order="C")
    W = B
    W[...] = X
    c, logdet = dense_cholesky(W)
    if c is None:
        raise NotPositiveDefinite("warm start X0 is not positive definite")
    if W0 is not None:
        if callable(W0):                # the factor's memory now holds the given inverse
            W0(W)
        else:
            W[...] = W0
        return S, L, X, W, np.empty((n, n)), logdet
    W = dense_inverse(c, mirror_lower_to_upper)
    return S, L, X, W, np.empty((n, n)), logdet


def newton_cd(S, L, *, X0=None, W0=None, control=None, offset=0.0, max_sweeps=10, sigma=1e-4,
              max_line_search=30, gap_check=100.0, sweep_schedule="quic", inner_tol=0.0,
              stall_after=None):
    """Solve ``min -log det X + tr(S X) + sum L_ij |X_ij|`` by Newton-CD.

    Parameters
    ----------
    S : (n, n) validated covariance. L : (n, n) non-negative weights, or a
        :class:`~.weights.ScalarWeights` (a scalar penalty without the matrix).
    X0 : optional positive definite warm start (default
        ``diag(1 / (S_ii + L_ii))``, the solution when every off-diagonal
        weight is large). W0 : its inverse, when known (see :func:`start_point`).
    control : a :class:`~.control.RunControl` (None: its defaults): ``tol``, ``atol``
        (stop when the certified duality gap is <= ``max(atol, tol * max(1, |f|))``),
        ``max_iter`` (outer Newton iterations), ``polish`` (once the tolerance is met,
        up to this many further Newton steps towards the rounding floor,
        :func:`polish_done`), ``verbose``, ``callback`` (``callback(row)`` after every
        iteration; True stops) and ``t0``.
    offset : added to the objective in the history rows (the constant of a
        rescaled problem; ``solve_gaussian`` passes it).
    gap_check : the certified gap (one extra Cholesky) is computed once the
        model decrease is below ``gap_check * tol * max(1, |f|)``.
    stall_after : if given (an iteration count, e.g. 30), stop early — not
        converged — once the model decrease has shrunk by less than half over
        the last 10 iterations after that many iterations (slow, linear
        progress on ill-conditioned problems; ``solve_gaussian`` then hands
        over to the dual projected gradient).

    Returns
    -------
    GaussianResult
    """
    from ._cd_kernels import apply_step, cd_sweeps, direction_terms

    # U: the one n x n scratch (U = D W of the sweeps, then the trial point and its
    # Cholesky factor, which becomes W); the direction D lives on the free set
    st = NewtonState(S, L, X0, W0, control, "newton-cd", gap_check)
    S, Lm, lw, X, n = st.S, st.Lm, st.lw, st.X, st.n
    buf = np.empty(n, dtype=np.float64)
    it = 0
    for it in range(1, st.max_iter + 1):
        W, U = st.W, st.U
        # the free set is the orthant-wise method's (its signs and gradients unused here)
        cnt, sub = st.free_set()
        r, cc = st.rows[:cnt], st.cols[:cnt]
        col_ptr, cog = column_groups(cc)
        D = st.dvec[:cnt]
        D.fill(0.0)
        U.fill(0.0)
        cap = min(1 + (it - 1) // 3, max_sweeps) if sweep_schedule == "quic" and not st.converged \
            else max_sweeps            # (a polish step wants an accurate direction)
        first = cd_sweeps(W, S, X, Lm, lw, D, U, col_ptr, r, cog, 1, buf)
        n_sweeps = 1
        while n_sweeps < cap:
            last = cd_sweeps(W, S, X, Lm, lw, D, U, col_ptr, r, cog, 1, buf)
            n_sweeps += 1
            if last <= inner_tol * first:
                break
        # directional derivative of f along D (the model decrease)
        gd, dpen, trSD, pen0 = direction_terms(W, Lm, lw, X, S, r, cc, D)
        delta = gd + dpen
        step, ft, c, _ = st.cd_search(r, cc, D, pen0, float(np.vdot(S, X)), trSD, delta, sigma,
                                      max_line_search)
        if step > 0.0:
            apply_step(X, r, cc, D, step)
            st.accept(c, ft)
        row = {
            "iteration": it,
            "objective": st.f + offset,
            "duality_gap": np.nan,
            "active_edges": int((np.count_nonzero(X) - n) // 2),
            "free_set": int(cnt),
            "sweeps": int(n_sweeps),
            "step": step,
            "decrement": -delta,
            "subgradient_l1": sub,
        }
        if st.end_of_iteration(row, it, step, -delta, step == 0.0):
            break
        if stall_after is not None and not st.converged and it >= stall_after and \
                -delta > 0.5 * st.history[-11]["decrement"]:
            row["stalled"] = True
            st.reason = "stalled"
            break
    return st.result(it)


def column_groups(cols):
    """The free set's positions grouped by column (``cols`` sorted): ``col_ptr`` (group
    g is ``col_ptr[g]:col_ptr[g + 1]``) and ``col_of_group``, both int64."""
    m = cols.shape[0]
    starts = np.flatnonzero(np.diff(cols)) + 1
    col_ptr = np.concatenate(([0], starts, [m])).astype(np.int64)
    return col_ptr, cols[col_ptr[:-1]]


class NewtonState:
    """What the two Newton solvers (``newton_cd``, ``newton_cg``) share.

    The iterate ``X``, its inverse ``W`` and the one n x n scratch ``U`` (the trial
    points of the line search and their Cholesky factors; the accepted factor becomes
    W and the old W the scratch, :meth:`accept`), the objective ``f``, the free set's
    arrays (:meth:`free_set`), the Armijo search along a coordinate-descent direction
    (:meth:`cd_search`), and the end of an iteration (:meth:`end_of_iteration`: the
    certified gap, the tolerance, the polish, the stop reasons, the history) up to the
    result (:meth:`result`)."""

    def __init__(self, S, L, X0, W0, control, name, gap_check):
        from ._cd_kernels import penalty_sum

        self.control = RunControl.given(control)
        self.name, self.gap_check = name, gap_check
        self.max_iter = self.control.max_iter_for(name)
        self.t_start = self.control.start()
        self.S, self.L, self.X, self.W, self.U, logdet = start_point(S, L, X0, W0)
        self.Lm, self.lw = weight_args(self.L)
        self.n = n = self.S.shape[0]
        self.fz = Factorizer(n)
        self.trSX = float(np.vdot(self.S, self.X))
        self.pen = penalty_sum(self.X, self.Lm, self.lw)
        self.f = -logdet + self.trSX + self.pen
        # the free-set vectors: sized to the free set (grown by a quarter when it grows),
        # not to the n (n + 1) / 2 positions of the triangle (two dense arrays' worth)
        self.size = 0
        self.rows = self.cols = self.sgn = self.grad = self.dvec = None
        self.history = []
        self.gap, self.g_val = np.inf, -np.inf
        self.converged = False
        self.reason = "max_iter"
        self.polished = 0

    def free_set(self):
        """The orthant-wise free set at X into ``rows``, ``cols``, ``sgn``, ``grad``
        (``dvec``: room for a direction on it): ``(count, l1 norm of the minimum-norm
        subgradient)`` (``_newton_cg_kernels.orthant_set``)."""
        from ._newton_cg_kernels import orthant_count, orthant_set

        n = self.n
        need = orthant_count(self.X, self.S, self.W, self.Lm, self.lw)
        if need > self.size:
            self.size = min(n * (n + 1) // 2, max(need, int(1.25 * self.size), 4 * n))
            self.rows = self.cols = self.sgn = self.grad = self.dvec = None
            self.rows = np.empty(self.size, dtype=np.int64)
            self.cols = np.empty(self.size, dtype=np.int64)
            self.sgn = np.empty(self.size)
            self.grad = np.empty(self.size)
            self.dvec = np.empty(self.size)
        return orthant_set(self.X, self.S, self.W, self.Lm, self.lw, self.rows, self.cols,
                           self.sgn, self.grad)

    def cd_search(self, rows, cols, D, pen0, trSX, trSD, delta, sigma, max_line_search):
        """Armijo backtracking from t = 1 along the direction D (on the positions
        ``rows``, ``cols``; ``delta`` its model decrease, ``trSD`` = tr(S D), ``pen0``
        the penalty at X, ``trSX`` = tr(S X)): ``(t, f(X + t D), its Cholesky factor,
        its penalty)``, or ``(0.0, None, None, None)`` when D is no descent direction
        (optimal up to rounding) or no step is accepted. The trial point is left in U."""
        from ._cd_kernels import trial_point

        if not delta < 0.0:
            return 0.0, None, None, None
        t = 1.0
        for _ in range(max_line_search):
            pen = trial_point(self.X, rows, cols, D, t, self.Lm, self.lw, pen0, self.U)
            c, ld = self.fz.cholesky(self.U)
            if c is not None:
                ft = -ld + trSX + t * trSD + pen
                if ft <= self.f + sigma * t * delta:
                    return t, ft, c, pen
            t *= 0.5
        return 0.0, None, None, None

    def accept(self, factor, f):
        """X has moved (objective ``f``, Cholesky ``factor`` in U): W = X^-1 from the
        factor, and the old W's memory becomes the scratch."""
        from ._cd_kernels import mirror_lower_to_upper

        self.f = f
        W_old = self.W
        self.W = self.fz.inverse(factor, mirror_lower_to_upper)
        self.U = W_old

    def end_of_iteration(self, row, it, step, decrease, failed):
        """Certify, report ``row`` and decide: whether the solver stops after iteration
        ``it`` (``step`` taken, model ``decrease``; ``failed``: no further progress is
        possible). The certified gap (one more Cholesky) is computed once the decrease is
        below ``gap_check`` times the tolerance, after a failed or a polishing step, at
        the rounding floor and at the last iteration."""
        control = self.control
        scale = max(1.0, abs(self.f))
        thr = control.threshold(self.f)
        # at the rounding floor the model decrease stops being informative
        floor = decrease <= 1e-15 * scale
        if self.converged or step == 0.0 or floor or decrease <= self.gap_check * thr \
                or it == self.max_iter:
            self.gap, self.g_val = certify(self.W, self.S, self.L, self.X, self.U, self.f,
                                           self.fz)
            row["duality_gap"] = self.gap
        row["elapsed"] = time.perf_counter() - self.t_start
        stop = control.report(row, self.history, self.name)
        if self.converged or self.gap <= thr:
            self.converged = True
            self.reason = "tol"
            if stop or polish_done(self.polished, control.polish, self.gap, scale, step, floor):
                return True
            self.polished += 1
            return False
        if failed or floor:
            self.reason = "linesearch"
            return True
        if stop:
            self.reason = "callback"
            return True
        return False

    def result(self, n_iter):
        """The :class:`~.result.GaussianResult` after ``n_iter`` iterations."""
        return GaussianResult(precision=self.X, covariance=self.W, objective=self.f,
                              dual_objective=self.g_val, duality_gap=self.gap, n_iter=n_iter,
                              converged=self.converged, history=self.history,
                              solver=self.name, stop_reason=self.reason)


def certify(W, S, L, X, B, f, factorizer=None):
    """Certified duality gap of the primal X (inverse W, objective f).

    The dual point is ``clipped_dual_into``'s (exact on the support of X, so
    the gap shrinks like ``|X - X*|^2``); when it is not positive definite,
    the plain clipped point, and failing that a mix with the strictly
    feasible start of Lemma 1. B is scratch; ``factorizer`` (a
    :class:`~.factor.Factorizer`) factorises a sparse dual point sparsely.
    Returns (gap, dual value).
    """
    from ._cd_kernels import clipped_dual_into

    n = S.shape[0]
    chol = (factorizer or Factorizer(n, sparse=False)).cholesky
    clipped_dual_into(W, S, *weight_args(L), X, B)
    c, ld = chol(B)
    if c is None:   # support-based point not PD: plain clipped point
        L = dense_weights(L)
        Sd = S + np.clip(W - S, -L, L)
        B[...] = Sd
        c, ld = chol(B)
        if c is None:
            # far from the optimum: move towards the strictly feasible,
            # positive definite start point of Lemma 1 (the dual set is
            # convex, so every mix is feasible)
            Sigma_in = interior_dual_start(S, L)
            theta = 0.5
            for _ in range(40):
                B[...] = theta * Sd + (1.0 - theta) * Sigma_in
                c, ld = chol(B)
                if c is not None:
                    break
                theta *= 0.5
    g_val = ld + n if c is not None else -np.inf
    return f - g_val, g_val
