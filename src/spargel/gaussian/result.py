"""The result object every Gaussian solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["GaussianResult"]


@dataclass
class GaussianResult:
    """Solution of one sparse inverse covariance problem.

    Attributes
    ----------
    precision : (n, n) array, the estimate K (positive definite).
    covariance : (n, n) array, its exact inverse.
    objective : primal value f(K).
    dual_objective : value g(W) of the dual-feasible point used to certify K.
    duality_gap : ``objective - dual_objective`` (>= f(K) - f*).
    n_iter : outer iterations (summed over screened components).
    converged : whether the requested tolerance was reached.
    history : one dict per iteration (iteration, objective, duality_gap,
        active_edges, elapsed, ...); gap entries are NaN when not computed.
    solver : the solver that produced it ('newton-cg', 'newton-cd', ...).
    n_components : independent blocks found by screening.
    stop_reason : 'tol' (converged), 'max_iter', 'linesearch' (no further
        decrease at the precision limit), 'stalled' or 'callback'.
    costs : ``(objective, duality_gap)`` of the *whole* problem after every
        iteration (screened components that have stopped count with their
        final values; NaN gap where some component's gap was not computed);
        one row for a problem solved in closed form.
    """

    precision: np.ndarray
    covariance: np.ndarray
    objective: float
    dual_objective: float
    duality_gap: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    solver: str = ""
    n_components: int = 1
    stop_reason: str = ""
    costs: list = field(default_factory=list)
