"""Regularisation paths with warm starts, and the largest useful alpha.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> S = np.cov(rng.standard_normal((30, 5)).T, bias=True)
>>> alphas = alpha_grid(S, n_alphas=4)
>>> len(gaussian_path(S, alphas))
4
"""

from __future__ import annotations

import numpy as np

from .objective import validate_covariance
from ..errors import ParameterError

#: relative duality-gap tolerance of the path's fits (and StARS's subsample paths) when
#: ``tol`` is None and the solver is a Newton method: the criteria read edges and
#: log-likelihoods, which agree with the default tolerance's to far more digits than
#: they decide, and R huge's glasso path stops further from the optimum than this
#: (docs/benchmarks.md); the polish steps are skipped there too, and the chosen fit is
#: then finished at the solver's default tolerance (a warm start: a few Newton steps)
PATH_TOL = 1e-9

__all__ = ["alpha_max_for", "alpha_grid", "grid_below", "gaussian_path", "MAX_ALPHAS",
           "check_n_alphas"]

#: the largest grid of alphas (each alpha is a fit costing up to seconds; a grid is an
#: array sized by this number, so it is checked before anything is allocated)
MAX_ALPHAS = 10_000


def check_n_alphas(n_alphas, name="n_alphas"):
    """``n_alphas`` as an int if it is an integer in [1, :data:`MAX_ALPHAS`], else a
    :class:`~spargel.errors.ParameterError` naming ``name``."""
    import numbers

    if isinstance(n_alphas, (bool, np.bool_)) or not isinstance(n_alphas, numbers.Integral) \
            or not 1 <= n_alphas <= MAX_ALPHAS:
        raise ParameterError(f"{name} must be a grid size from 1 to {MAX_ALPHAS} (or a list of "
                             f"alphas), got {n_alphas!r}")
    return int(n_alphas)


def alpha_max_for(S, blocks=None, *, block_weight="size"):
    """Smallest scalar alpha whose solution is diagonal (no edges).

    Plain l1: ``max_{i != j} |S_ij|``. With blocks: also every block must be
    inside its ball at W = -S_offdiag, i.e. ``sum_block |S_ij| <= alpha w_k``.
    """
    S = np.asarray(S, dtype=np.float64)
    n = S.shape[0]
    if n < 2:
        return 0.0
    if blocks is None:
        A = np.abs(S).copy()
        np.fill_diagonal(A, 0.0)
        return float(A.max())
    from .block_l1 import make_block_penalty

    bp = make_block_penalty(blocks, n, 1.0, block_weight=block_weight)
    A = np.abs(S).copy()
    np.fill_diagonal(A, 0.0)
    box = bp.L_box > 0
    np.fill_diagonal(box, False)
    a = float(A[box].max()) if np.any(box) else 0.0
    if bp.n_blocks:
        a = max(a, float(np.max(bp.block_l1(S) / bp.radius)))
    return a


def alpha_grid(S, n_alphas=10, alpha_min_ratio=0.01, blocks=None, block_weight="size"):
    """Geometric grid from ``alpha_max`` down to ``alpha_min_ratio * alpha_max``."""
    _check_grid(n_alphas, alpha_min_ratio)
    return grid_below(alpha_max_for(S, blocks, block_weight=block_weight), n_alphas,
                      alpha_min_ratio)


def _check_grid(n_alphas, alpha_min_ratio):
    check_n_alphas(n_alphas)
    if not 0 < alpha_min_ratio < 1:
        raise ValueError(f"alpha_min_ratio must be in (0, 1), got {alpha_min_ratio}")


def grid_below(amax, n_alphas=10, alpha_min_ratio=0.01):
    """:func:`alpha_grid` from its ``alpha_max`` (1 when that is 0)."""
    _check_grid(n_alphas, alpha_min_ratio)
    if amax <= 0:
        amax = 1.0
    return np.geomspace(amax, amax * alpha_min_ratio, int(n_alphas))


def gaussian_path(S, alphas, **solve_kwargs):
    """Solve for every alpha (sorted decreasingly), each warm-started from the
    previous solution. Returns the list of results in the order of ``alphas``
    as given."""
    from .solve import solve_gaussian

    S = validate_covariance(S)
    alphas = np.asarray(alphas, dtype=np.float64).ravel()
    if alphas.size == 0:
        raise ValueError("alphas is empty")
    if np.any(~np.isfinite(alphas)) or np.any(alphas < 0):
        raise ValueError("alphas must be finite and non-negative")
    order = np.argsort(-alphas, kind="stable")
    out = [None] * alphas.size
    prev = None
    for k in order:
        prev = solve_gaussian(S, float(alphas[k]), warm_start=prev, validated=True,
                              **solve_kwargs)
        out[k] = prev
    return out
