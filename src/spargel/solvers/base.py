"""What every solver shares: the result, the history rows and the stop reasons."""

import time
from dataclasses import dataclass, field

import numpy as np

STOP_REASONS = {
    "tol": "relative objective change over the window fell below tol",
    "gtol": "pseudo-gradient norm fell below gtol * max(1, ||w||)",
    "max_iter": "reached max_iter iterations",
    "linesearch": "the line search found no decrease (at the precision limit)",
    "interrupted": "interrupted by the user (Ctrl-C); the best weights so far are kept",
    "callback": "stopped by the callback",
}


@dataclass
class SolverResult:
    w: np.ndarray
    objective: float
    n_iter: int
    n_evals: int
    stop_reason: str
    history: list = field(default_factory=list)

    @property
    def stop_message(self):
        return STOP_REASONS.get(self.stop_reason, self.stop_reason)


def require(model, solver_name, *methods):
    """Raise a clear TypeError when the model lacks what the solver needs."""
    missing = [m for m in methods if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(f"solver {solver_name!r} needs a model with {', '.join(missing)}(); "
                        f"{type(model).__name__} does not offer it")


class HistoryRecorder:
    """Builds the per-iteration rows of DESIGN.md: iteration, objective, loss, penalty,
    active features, gradient evaluations, elapsed seconds (+ what the monitor adds)."""

    def __init__(self, monitor=None):
        self.rows = []
        self.monitor = monitor
        self.t0 = time.perf_counter()

    def record(self, iteration, objective, loss, penalty, w, n_evals, **extra):
        row = {
            "iteration": iteration,
            "objective": float(objective),
            "loss": float(loss),
            "penalty": float(penalty),
            "active": int(np.count_nonzero(w)),
            "n_evals": int(n_evals),
            "elapsed": time.perf_counter() - self.t0,
        }
        row.update(extra)
        stop = False
        if self.monitor is not None:
            stop = bool(self.monitor(row, w))
        self.rows.append(row)
        return stop
