"""L-BFGS and OWL-QN (Andrew & Gao, 2007), written here.

OWL-QN minimises ``L(w) + l2/2 ||w||^2 + l1 ||w||_1``: it keeps an L-BFGS model of
the smooth part, steps along the quasi-Newton direction of the pseudo-gradient
restricted to the current orthant, and projects every trial point of the
backtracking line search back onto that orthant. With ``l1 = 0`` it is plain L-BFGS
with a backtracking (Armijo) line search.

Stopping (the reason is reported in ``SolverResult.stop_reason``):

* ``tol``: ``(F[k - window] - F[k]) / max(|F[k]|, 1) < tol`` — the objective improved
  by less than a relative ``tol`` over the last ``window`` iterations (CRFsuite's
  ``delta`` / ``period``);
* ``gtol``: ``||pseudo-gradient|| <= gtol * max(1, ||w||)`` (CRFsuite's ``epsilon``);
* ``max_iter``: the iteration limit;
* ``linesearch``: no decrease found along the direction (numerically converged);
* ``interrupted``: Ctrl-C; the current (best) weights are returned.

The two pieces of one iteration -- the direction from the curvature pairs
(:class:`CurvatureMemory`) and the projected backtracking line search
(:func:`orthant_line_search`) -- are shared with the incremental solvers of
:mod:`spargel.solvers.grafting`, which take the same step over a working set.
"""

from collections import deque

import numpy as np

from ..core.vec import all_finite, dot, norm
from ..core.protocol import approximate_loss, convex_loss, require
from ..core.sizes import plain_pages
from .base import HistoryRecorder, SolverResult, check_start, require_separable
from . import _owlqn_kernels as Q


# the line search also trusts the gradients (approximate Wolfe test, see
# orthant_line_search) when the decrease a step predicts is below PREDICTED and the
# objective moved by less than NOISE, both relative to the objective
PREDICTED = 1e-8
NOISE = 1e-10
# with a noisy objective, a trial whose rise over F exceeds PREDICTED (relative) and
# STALE times the rise of the trial before it (at a step twice or more as long) ends
# the search (see orthant_line_search)
STALE = 0.75
# a trial whose objective lies below the tangent plane at the current point by more than
# this (relative to the objective) cannot come from a convex objective: a fault, refused
ABSURD = 1e-6


class CurvatureMemory:
    """The last ``memory`` curvature pairs ``(s, y)`` of L-BFGS, in two preallocated
    ``memory x capacity`` arrays; every vector step is one compiled pass.

    The vectors may get longer (:meth:`grow`): the incremental solvers append the
    features they select to their working set, and a new coordinate is zero in every
    pair stored before it existed.
    """

    def __init__(self, memory, n):
        self.memory = max(int(memory), 1)
        self.n = int(n)
        # (ordinary pages: see plain_pages)
        self.S = plain_pages((self.memory, self.n))
        self.Y = plain_pages((self.memory, self.n))
        self.rho = np.empty(self.memory)
        self.alpha = np.empty(self.memory)
        self.slots = deque(maxlen=self.memory)            # rows of S / Y in use, oldest first

    def __len__(self):
        return len(self.slots)

    def clear(self):
        self.slots.clear()

    def grow(self, n):
        """Make room for ``n`` coordinates; the new ones are zero in the stored pairs."""
        n = int(n)
        if n <= self.n:
            return
        cap = self.S.shape[1]
        if n > cap:
            cap = max(n, 2 * cap)
            for name in ("S", "Y"):
                old = getattr(self, name)
                new = np.zeros((self.memory, cap))
                new[:, :self.n] = old[:, :self.n]
                setattr(self, name, new)
        else:
            self.S[:, self.n:n] = 0.0
            self.Y[:, self.n:n] = 0.0
        self.n = n

    def direction(self, pg, d, constrain):
        """``d = -H pg``; with ``constrain`` (an l1 term) the components that disagree in
        sign with ``-pg`` are zeroed (the orthant-wise direction). When that is no
        descent direction the pairs are dropped and ``d = -pg``."""
        Q.two_loop(pg, self.S, self.Y, self.rho, np.array(self.slots, dtype=np.int64), d, self.alpha)
        slope = Q.constrain_direction(d, pg) if constrain else dot(d, pg)
        if not slope < 0:
            self.slots.clear()
            np.negative(pg, out=d)

    def store(self, w_new, w, g_new, g):
        """Keep the pair ``(w_new - w, g_new - g)`` when its curvature is positive (the
        oldest pair gives way when the memory is full)."""
        memory, slots = self.memory, self.slots
        k = slots.popleft() if len(slots) == memory else min(set(range(memory)) - set(slots))
        sy, yy = Q.store_pair(w_new, w, g_new, g, self.S, self.Y, k)
        if sy > 1e-10 * yy:
            self.rho[k] = 1.0 / sy
            slots.append(k)


def orthant_line_search(evaluate, w, d, pg, F, step, project, w_new, max_linesearch, c1, g=None,
                        noisy=False, convex=False):
    """Backtracking from ``w`` along ``d``, every trial point projected (``project``) onto
    the orthant of ``w`` (of ``-pg`` where ``w`` is zero), until the Armijo condition
    ``F_new <= F + c1 pg . (w_new - w)`` holds.

    Near the optimum the decrease Armijo asks for falls below the rounding of the
    objective (a sum over the whole data) and every trial fails although the step is
    good. With the gradient ``g`` at ``w`` given, a trial whose predicted decrease
    ``-dec`` is below :data:`PREDICTED` and whose objective is within :data:`NOISE`
    (both relative to ``F``) of ``F`` is also accepted when it passes the *approximate
    Wolfe* test of Hager & Zhang (2005): along ``s = w_new - w`` the objective is smooth
    (both points lie in one closed orthant, where the l1 term is linear), its slope at
    the trial point is ``dec + s . (g_new - g)`` with ``dec = pg . s`` the slope at
    ``w``, and ``s . (g_new - g) <= 2 (1 - c1) |dec|`` is the Armijo condition of the
    quadratic model -- a test on gradients, which keep their accuracy where objective
    differences are lost in rounding. (Steps that predict a resolvable decrease are
    judged by Armijo alone: the path of a fit is the plain backtracking one until its
    steps reach the rounding.)

    ``noisy``: the objective comes from approximate inference that is not a function of
    the weights alone (loopy BP warm-started from the previous evaluation's messages;
    the model's ``approximate_loss``). Its values at nearby points then differ by noise
    of their own, and once that noise exceeds the decrease a step can make, no trial
    passes however short the step: each trial's rise over ``F`` stops shrinking with
    the step, which on a smooth function it never does (the rise at least halves when
    the step halves). The search then ends at once, as failed, instead of spending the
    remaining trials (the caller treats it as numerically converged along ``d``).

    A trial is never accepted when its objective or gradient is not finite, nor, with
    ``convex`` (the model's loss is convex: ``protocol.convex_loss``), when its objective
    lies below the tangent plane at ``w`` (``F + pg . (w_new - w)``: both points lie in
    one closed orthant, where the objective is smooth and convex) by more than
    :data:`ABSURD` relative to ``F`` -- which a convex function cannot do, so such a
    value is a fault of the evaluation (say an overflow a kernel missed), not progress;
    the search backtracks as from a failed trial.

    ``evaluate(w_new) -> (loss, objective, gradient)``. Returns ``(result, step,
    n_trials)``; ``result`` is None when no trial was accepted (``w_new`` then holds
    the last trial point).
    """
    scale = max(abs(F), 1.0)
    noise, tiny = NOISE * scale, PREDICTED * scale
    last_rise = np.inf
    for trial in range(max_linesearch):
        dec = Q.orthant_step(w, d, step, pg, project, w_new)
        result = evaluate(w_new)
        F_new = result[1]
        if not _sound(result, F, dec, scale, convex):
            F_new = np.nan
        if np.isfinite(F_new) and F_new <= F + c1 * dec:
            return result, step, trial + 1
        if (g is not None and np.isfinite(F_new) and F_new - F <= noise and -tiny <= dec < 0
                and dot(w_new - w, result[2] - g) <= 2.0 * (1.0 - c1) * -dec):
            return result, step, trial + 1
        rise = F_new - F if np.isfinite(F_new) else np.inf
        if noisy and tiny < rise < np.inf and rise > STALE * last_rise:
            return None, step, trial + 1
        last_rise = rise
        # far off (badly scaled features, first iterations): shrink faster
        step *= 0.5 if rise <= 10.0 * abs(dec) else 0.05
    return None, step, max_linesearch


def _sound(result, F, dec, scale, convex):
    """Whether a trial's (loss, objective, gradient) can be taken at all: finite, and
    (convex objectives) not below the tangent plane at the current point."""
    F_new, g_new = result[1], result[2]
    if not (np.isfinite(F_new) and np.isfinite(result[0]) and all_finite(g_new)):
        return False
    return not (convex and F_new < F + dec - ABSURD * scale)


def stop_test(objectives, pg_norm, w_norm, tol, gtol, window):
    """Which stopping rule the iterate just reached meets, or None.

    ``objectives`` holds the objective of every iterate so far (the starting point
    first). ``tol`` (checked first, as the incremental solvers of
    :mod:`spargel.solvers.grafting` do): the objective improved by less than a relative
    ``tol`` over the last ``window`` iterations, ``(F[k - window] - F[k]) / max(|F[k]|,
    1) < tol`` (CRFsuite's ``delta`` over ``period``), tested once ``window`` iterations
    are done; ``gtol``: ``pg_norm <= gtol * max(1, w_norm)``. ``tol = 0`` switches
    the relative-change rule off; ``gtol = 0`` leaves only an exactly zero
    pseudo-gradient.
    """
    k = len(objectives) - 1
    if tol > 0 and k >= window:
        F = objectives[-1]
        if (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
            return "tol"
    if pg_norm <= gtol * max(1.0, w_norm):
        return "gtol"
    return None


def mark_stop(rows, stop):
    """Name why the solver stopped in its last history row (key ``stop``): the rows
    of the iterations that met a rule say so already; a failed line search, a callback
    or Ctrl-C are known only afterwards."""
    if rows and rows[-1].get("stop") != stop:
        rows[-1]["stop"] = stop


def minimize_owlqn(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                   memory=10, max_linesearch=40, monitor=None, c1=1e-4):
    """Minimise ``model.loss_grad`` + ``penalty`` from ``w0``.

    ``monitor(row, w)`` is called after each iteration with the history row (it may add
    keys to it, e.g. dev metrics, and returns True to stop). ``memory`` is the number of
    curvature pairs kept; they live in two preallocated ``memory x n`` arrays and every
    vector step is one compiled pass, so the solver adds little to a gradient evaluation.
    """
    require(model, "owlqn", "loss_grad")
    require_separable(penalty, "owlqn")
    w = check_start(model, w0)
    n = model.n_params
    use_l1 = penalty.has_nonsmooth
    noisy = approximate_loss(model)
    convex = convex_loss(model)
    history = HistoryRecorder(monitor)

    def evaluate(x):
        loss, g = model.loss_grad(x)
        sv = penalty.add_smooth_grad(x, g)
        return loss, loss + sv + penalty.nonsmooth_value(x), g

    # weight-sized vectors: the 2 * memory curvature vectors, w, w_new, d, g (and the
    # gradient of a trial point while the line search runs) and, with an l1 term, the
    # pseudo-gradient pg (without one, pg is g itself)
    pairs = CurvatureMemory(memory, n)
    d = plain_pages(n)
    w_new = plain_pages(n)

    n_evals = 1
    loss, F, g = evaluate(w)
    if not np.isfinite(F):
        raise FloatingPointError("the objective is not finite at the initial weights")
    pg = plain_pages(n) if use_l1 else g
    penalty.pseudo_gradient(w, g, pg)
    pg_norm = norm(pg)
    objectives = [F]
    stop, it = "max_iter", 0
    try:
        if pg_norm <= gtol * max(1.0, norm(w)):
            stop = "gtol"
        else:
            for it in range(1, max_iter + 1):
                pairs.direction(pg, d, use_l1)
                step = 1.0 / pg_norm if not len(pairs) and it == 1 else 1.0
                result, step, trials = orthant_line_search(evaluate, w, d, pg, F, step, use_l1, w_new,
                                                           max_linesearch, c1, g, noisy, convex)
                n_evals += trials
                if result is None:
                    stop, it = "linesearch", it - 1
                    break
                loss_new, F_new, g_new = result
                pairs.store(w_new, w, g_new, g)
                w, w_new = w_new, w
                g, loss, F = g_new, loss_new, F_new
                if not use_l1:
                    pg = g
                penalty.pseudo_gradient(w, g, pg)
                pg_norm = norm(pg)
                objectives.append(F)
                reason = stop_test(objectives, pg_norm, norm(w), tol, gtol, window)
                if reason is None and it == max_iter:
                    reason = "max_iter"
                extra = {"stop": reason} if reason is not None else {}
                if history.record(it, F, loss, F - loss, w, n_evals, step=step, pg_norm=pg_norm, **extra):
                    stop = "callback"
                    break
                if reason is not None:
                    stop = reason
                    break
    except KeyboardInterrupt:
        stop = "interrupted"
    mark_stop(history.rows, stop)
    del pairs, d, w_new, pg, g          # (w is this solver's own: no copy of it)
    return SolverResult(w=w, objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop,
                        history=history.rows)
