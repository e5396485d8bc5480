"""Sparse Gaussian Markov random fields (sparse inverse covariance).

Solvers for ``min_K -log det K + tr(S K) + sum_ij L_ij |K_ij|`` and its
block-l1 extension (Duchi, Gould & Koller 2008):

* ``newton_cg``: orthant-wise Newton with preconditioned conjugate
  gradients (the default for plain l1);
* ``newton_cd``: second-order Newton / coordinate-descent active-set method
  (QUIC's direction);
* ``projected_gradient``: Algorithm 1, projected gradient on the box dual;
* ``block_l1``: Algorithm 3, projected gradient on the l1-ball dual of
  block penalties;
* ``screening``: exact block-diagonal screening;
* ``solve``: ``solve_gaussian``, the one entry point (validation,
  rescaling, screening, dispatch); ``progress``: the history rows.

The public estimators are :class:`spargel.SparseGaussianMRF`,
:class:`spargel.SparseGaussianMRFCV`, :class:`spargel.NeighbourhoodSelection`
(``neighbourhood``) and :class:`spargel.Concord` (``concord``: the l1-penalised symmetric
pseudo-likelihood, by coordinate descent on an active set). Nothing here imports numba until a
solver runs.
"""

from ..core.exports import lazy_exports

_LAZY = {
    "solve_gaussian": "spargel.gaussian.solve",
    "gaussian_path": "spargel.gaussian.path",
    "alpha_grid": "spargel.gaussian.path",
    "alpha_max_for": "spargel.gaussian.path",
    "screen_components": "spargel.gaussian.screening",
    "project_l1_ball": "spargel.gaussian.projections",
    "project_l1_ball_sort": "spargel.gaussian.projections",
    "make_block_penalty": "spargel.gaussian.block_l1",
    "GaussianResult": "spargel.gaussian.result",
    "plot_graph": "spargel.gaussian.plot",
    "plot_heatmap": "spargel.gaussian.plot",
    "plot_overview": "spargel.gaussian.plot",
    "graphical_lasso": "spargel.gaussian.glasso",
    "NeighbourhoodSelection": "spargel.gaussian.neighbourhood",
    "neighbourhood_path": "spargel.gaussian.neighbourhood",
    "Concord": "spargel.gaussian.concord",
    "concord_solve": "spargel.gaussian.concord",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
