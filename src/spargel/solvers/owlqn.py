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

from .base import HistoryRecorder, SolverResult, require


def _two_loop(pg, memory):
    """-H * pg from the stored (s, y, 1/(y.s)) pairs."""
    q = pg.copy()
    alphas = []
    for s, y, rho in reversed(memory):
        a = rho * np.dot(s, q)
        alphas.append(a)
        q -= a * y
    if memory:
        s, y, rho = memory[-1]
        q *= 1.0 / (rho * np.dot(y, y))
    for (s, y, rho), a in zip(memory, reversed(alphas)):
        b = rho * np.dot(y, q)
        q += (a - b) * s
    return -q


def minimize_owlqn(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                   memory=6, max_linesearch=30, monitor=None, c1=1e-4):
    """Minimise ``model.loss_grad`` + ``penalty`` from ``w0``.

    ``monitor(row, w)`` is called after each iteration with the history row (it may add
    keys to it, e.g. dev metrics, and returns True to stop).
    """
    require(model, "owlqn", "loss_grad")
    n = model.n_params
    w = np.zeros(n) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    if w.shape != (n,):
        raise ValueError(f"initial weights have shape {w.shape}, the model has {n} parameters")
    use_l1 = penalty.has_l1
    history = HistoryRecorder(monitor)

    def evaluate(x):
        loss, g = model.loss_grad(x)
        sv, sg = penalty.smooth_value_grad(x)
        if sg is not None:
            g = g + sg
        return loss, loss + sv + penalty.l1_value(x), g

    n_evals = 0
    loss, F, g = evaluate(w)
    n_evals += 1
    if not np.isfinite(F):
        raise FloatingPointError("the objective is not finite at the initial weights")
    mem = deque(maxlen=memory)
    objectives = [F]
    stop, it = "max_iter", 0
    try:
        for it in range(1, max_iter + 1):
            pg = penalty.pseudo_gradient(w, g)
            pg_norm = float(np.linalg.norm(pg))
            if pg_norm <= gtol * max(1.0, float(np.linalg.norm(w))):
                stop, it = "gtol", it - 1
                break
            d = _two_loop(pg, mem)
            if use_l1:
                d[d * pg >= 0] = 0.0              # keep the sign of the steepest descent
            slope = float(np.dot(d, pg))
            if not slope < 0:
                mem.clear()
                d = -pg
                slope = -pg_norm ** 2
            if use_l1:
                orthant = np.sign(w)
                zero = orthant == 0
                orthant[zero] = -np.sign(pg[zero])
            step = 1.0 / pg_norm if not mem and it == 1 else 1.0
            for _ in range(max_linesearch):
                w_new = w + step * d
                if use_l1:
                    w_new[np.sign(w_new) != orthant] = 0.0
                loss_new, F_new, g_new = evaluate(w_new)
                n_evals += 1
                if np.isfinite(F_new) and F_new <= F + c1 * float(np.dot(pg, w_new - w)):
                    break
                step *= 0.5
            else:
                stop, it = "linesearch", it - 1
                break
            s = w_new - w
            y = g_new - g
            sy = float(np.dot(s, y))
            if sy > 1e-10 * float(np.dot(y, y)):
                mem.append((s, y, 1.0 / sy))
            w, g, loss, F = w_new, g_new, loss_new, F_new
            objectives.append(F)
            if history.record(it, F, loss, F - loss, w, n_evals, step=step,
                              pg_norm=float(np.linalg.norm(penalty.pseudo_gradient(w, g)))):
                stop = "callback"
                break
            if it >= window and (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
                stop = "tol"
                break
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        stop = "interrupted"
    return SolverResult(w=w, objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop, history=history.rows)
