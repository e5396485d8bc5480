"""What every solver shares: the result, the history rows and the stop reasons."""

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.sizes import plain_pages
from ..errors import CapabilityError

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


def check_start(model, w0):
    """A fresh float64 copy of the initial weights (zeros when None), checked (in
    ordinary pages, as the solvers' other weight-sized vectors: ``core/sizes.plain_pages``)."""
    n = int(model.n_params)
    w = plain_pages(n)
    if w0 is not None:
        w0 = np.asarray(w0, dtype=np.float64)
        if w0.shape != (n,):
            raise ValueError(f"initial weights have shape {w0.shape}, the model has {n} parameters")
        w[:] = w0
    if not np.all(np.isfinite(w)):
        raise ValueError("initial weights are not finite")
    return w


def require_separable(penalty, solver_name):
    """Raise :class:`~spargel.errors.CapabilityError` unless the penalty is a sum of
    one-weight terms (l1 / l2 / elastic net)."""
    if not getattr(penalty, "separable", False):
        raise CapabilityError(f"solver {solver_name!r} needs a separable penalty (l1 / elastic net); "
                              f"{type(penalty).__name__} is not: use solver='fista' (proximal gradient) "
                              f"or a block solver")


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
