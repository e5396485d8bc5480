"""``graphical_lasso``: scikit-learn's function of that name, on spargel's solvers.

The signature and return values are those of
``sklearn.covariance.graphical_lasso``; the work is done by
:class:`spargel.SparseGaussianMRF` with ``covariance='precomputed'``, so
``tol`` is spargel's (certified relative duality gap) and ``mode``,
``enet_tol`` and ``eps`` are accepted and checked but change nothing (they
select and stop scikit-learn's inner lasso solver).

>>> import numpy as np
>>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
>>> cov, prec = graphical_lasso(S, alpha=0.0)
>>> bool(np.allclose(prec @ S, np.eye(2)))
True
>>> cov, prec, costs, n_iter = graphical_lasso(S, 0.6, return_costs=True, return_n_iter=True)
>>> float(prec[0, 1]), n_iter                # |S_01| <= alpha: no edge
(0.0, 0)
"""

from __future__ import annotations

import numpy as np

__all__ = ["graphical_lasso"]


def graphical_lasso(emp_cov, alpha, *, mode="cd", tol=None, enet_tol=1e-4, max_iter=None,
                    verbose=False, return_costs=False, eps=float(np.finfo(np.float64).eps),
                    return_n_iter=False, **options):
    """l1-penalised covariance estimate from an empirical covariance.

    Returns ``(covariance, precision)``, then ``costs`` (a list of
    ``(objective, duality_gap)`` of the whole problem after each iteration) when
    ``return_costs``, then the number of iterations when ``return_n_iter``.
    ``options`` are further :class:`spargel.SparseGaussianMRF` parameters
    (``solver``, ``penalize_diagonal``, ``screen``, ...).
    """
    from spargel.gaussian.estimator import SparseGaussianMRF

    model = SparseGaussianMRF(alpha=alpha, covariance="precomputed", tol=tol,
                              max_iter=max_iter, verbose=verbose, mode=mode,
                              enet_tol=enet_tol, eps=eps, **options).fit(emp_cov)
    out = (model.covariance_, model.precision_)
    if return_costs:
        out += (model.costs_,)
    if return_n_iter:
        out += (model.n_iter_,)
    return out
