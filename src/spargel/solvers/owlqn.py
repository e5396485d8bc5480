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
"""

from collections import deque

import numpy as np

from .._vec import dot, norm
from ..models.protocol import require
from .base import HistoryRecorder, SolverResult, check_start, require_separable


def minimize_owlqn(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                   memory=10, max_linesearch=40, monitor=None, c1=1e-4):
    """Minimise ``model.loss_grad`` + ``penalty`` from ``w0``.

    ``monitor(row, w)`` is called after each iteration with the history row (it may add
    keys to it, e.g. dev metrics, and returns True to stop). ``memory`` is the number of
    curvature pairs kept; they live in two preallocated ``memory x n`` arrays and every
    vector step is one compiled pass, so the solver adds little to a gradient evaluation.
    """
    from . import _owlqn_kernels as Q

    require(model, "owlqn", "loss_grad")
    require_separable(penalty, "owlqn")
    w = check_start(model, w0)
    n = model.n_params
    use_l1 = penalty.has_nonsmooth
    history = HistoryRecorder(monitor)

    def evaluate(x):
        loss, g = model.loss_grad(x)
        sv, sg = penalty.smooth_value_grad(x)
        if sg is not None:
            g += sg
        return loss, loss + sv + penalty.nonsmooth_value(x), g

    def pseudo(x, g, out):
        return penalty.pseudo_gradient(x, g, out)

    memory = max(int(memory), 1)
    S = np.empty((memory, n))
    Y = np.empty((memory, n))
    rho = np.empty(memory)
    alpha = np.empty(memory)
    slots = deque(maxlen=memory)               # rows of S / Y in use, oldest first
    d = np.empty(n)
    w_new = np.empty(n)
    pg = np.empty(n)

    n_evals = 1
    loss, F, g = evaluate(w)
    if not np.isfinite(F):
        raise FloatingPointError("the objective is not finite at the initial weights")
    pseudo(w, g, pg)
    objectives = [F]
    stop, it = "max_iter", 0
    try:
        for it in range(1, max_iter + 1):
            pg_norm = norm(pg)
            if pg_norm <= gtol * max(1.0, norm(w)):
                stop, it = "gtol", it - 1
                break
            Q.two_loop(pg, S, Y, rho, np.array(slots, dtype=np.int64), d, alpha)
            slope = Q.constrain_direction(d, pg) if use_l1 else dot(d, pg)
            if not slope < 0:
                slots.clear()
                np.negative(pg, out=d)
            step = 1.0 / pg_norm if not slots and it == 1 else 1.0
            for _ in range(max_linesearch):
                dec = Q.orthant_step(w, d, step, pg, use_l1, w_new)
                loss_new, F_new, g_new = evaluate(w_new)
                n_evals += 1
                if np.isfinite(F_new) and F_new <= F + c1 * dec:
                    break
                # far off (badly scaled features, first iterations): shrink faster
                step *= 0.5 if np.isfinite(F_new) and F_new - F <= 10.0 * abs(dec) else 0.05
            else:
                stop, it = "linesearch", it - 1
                break
            # the new pair takes a free row, or the oldest pair's row
            k = slots.popleft() if len(slots) == memory else min(set(range(memory)) - set(slots))
            sy, yy = Q.store_pair(w_new, w, g_new, g, S, Y, k)
            if sy > 1e-10 * yy:
                rho[k] = 1.0 / sy
                slots.append(k)
            w, w_new = w_new, w
            g, loss, F = g_new, loss_new, F_new
            pseudo(w, g, pg)
            objectives.append(F)
            if history.record(it, F, loss, F - loss, w, n_evals, step=step, pg_norm=norm(pg)):
                stop = "callback"
                break
            if tol > 0 and it >= window and (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
                stop = "tol"
                break
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        stop = "interrupted"
    return SolverResult(w=w.copy(), objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop,
                        history=history.rows)
