"""Accelerated proximal gradient (FISTA, Beck & Teboulle 2009) with backtracking and
adaptive restart (O'Donoghue & Candes 2015), written here.

It minimises ``L(w) + R(w)`` for any model with ``loss_grad`` and any penalty with a
``prox`` -- in particular the non-separable :class:`~spargel.core.penalties.GroupLasso`,
which OWL-QN and SGD-L1 cannot handle. Each iteration takes a proximal step from the
extrapolated point ``y``::

    w+ = prox_{t R}(y - t grad L(y))

with the step ``t`` halved until the quadratic upper bound holds at ``w+`` (and grown by
``step_growth`` after an accepted step, so it tracks the local curvature); momentum is
reset whenever the objective goes up.

Stopping: ``tol`` (relative objective change over ``window`` iterations), ``gtol``
(optimality violation of the penalty at ``w`` <= ``gtol * max(1, ||w||)``), ``max_iter``,
``linesearch`` (the step fell below 1e-20), ``interrupted`` and ``callback`` as the other
solvers.
"""

import math

from ..core.protocol import require
from ..core.vec import dot, norm
from .base import HistoryRecorder, SolverResult, check_start


def minimize_fista(model, penalty, w0=None, *, max_iter=1000, tol=1e-7, gtol=1e-5, window=10, monitor=None,
                   step=None, step_growth=1.25):
    """Minimise ``model.loss_grad + penalty`` by accelerated proximal gradient.

    ``step``: the initial step (default: ``1 / ||grad||`` at the start, then adapted).
    """
    require(model, "fista", "loss_grad")
    w = check_start(model, w0)
    history = HistoryRecorder(monitor)
    loss, g = model.loss_grad(w)
    n_evals = 1
    F = loss + penalty.value(w)
    if not math.isfinite(F):
        raise FloatingPointError("fista: the objective is not finite at the initial weights")
    t = float(step) if step is not None else 1.0 / max(norm(g), 1e-12)
    y, loss_y, g_y = w.copy(), loss, g
    theta = 1.0
    objectives = [F]
    stop, it = "max_iter", 0
    try:
        for it in range(1, max_iter + 1):
            while True:
                w_new = penalty.prox(y - t * g_y, t)
                d = w_new - y
                loss_new, g_new = model.loss_grad(w_new)
                n_evals += 1
                if math.isfinite(loss_new) and loss_new <= loss_y + dot(g_y, d) + dot(d, d) / (2 * t) + \
                        1e-12 * abs(loss_y):
                    break
                t *= 0.5
                if t < 1e-20:
                    break
            if t < 1e-20:
                stop, it = "linesearch", it - 1
                break
            F_new = loss_new + penalty.value(w_new)
            if F_new > F:                      # adaptive restart: drop the momentum
                theta = 1.0
            theta_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
            beta = (theta - 1.0) / theta_next if F_new <= F else 0.0
            y_next = w_new + beta * (w_new - w)
            w, loss, g, F = w_new, loss_new, g_new, F_new
            theta = theta_next
            viol = penalty.optimality_violation(w, g)
            objectives.append(F)
            if history.record(it, F, loss, F - loss, w, n_evals, step=t, violation=viol):
                stop = "callback"
                break
            if viol <= gtol * max(1.0, norm(w)):
                stop = "gtol"
                break
            if tol > 0 and it >= window and (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
                stop = "tol"
                break
            if beta > 0:
                y = y_next
                loss_y, g_y = model.loss_grad(y)
                n_evals += 1
            else:
                y, loss_y, g_y = w.copy(), loss, g
            t *= step_growth
    except KeyboardInterrupt:
        stop = "interrupted"
    return SolverResult(w=w.copy(), objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop,
                        history=history.rows)
