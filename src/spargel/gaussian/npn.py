"""Nonparanormal transforms (Liu, Lafferty & Wasserman 2009; Liu et al. 2012).

A nonparanormal vector has ``f_j(X_j)`` jointly Gaussian for unknown monotone
``f_j``; the graph of the Gaussian is estimated after estimating the ``f_j``:

* ``shrinkage``: ``f_j(x) = Phi^-1(r_j(x) / (n + 1))``, ``r_j`` the rank of ``x``
  among the ``n`` values of column j (ties share their average rank), the whole
  matrix then divided by the sample standard deviation of its first column
  (so every column without ties has standard deviation 1);
* ``truncation``: ``Phi^-1`` of the rank over n clipped to ``[delta, 1 - delta]``,
  ``delta = 1 / (4 n^(1/4) sqrt(pi log n))``, scaled the same way;
* ``skeptic``: no transformed data but the correlation matrix
  ``2 sin(pi / 6 * rho)``, ``rho`` Spearman's rank correlation (the SKEPTIC
  estimate of the latent Gaussian correlation).

These are the definitions of R's ``huge.npn`` (shrinkage, truncation, skeptic).
Everything here is numpy/scipy.

>>> import numpy as np
>>> x = np.array([[3.0], [1.0], [2.0]])
>>> z = npn_shrinkage(x)                 # ranks 3, 1, 2 -> Phi^-1(3/4), Phi^-1(1/4), 0
>>> bool(np.allclose(z.ravel(), [1.0, -1.0, 0.0]))
True
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

__all__ = ["npn_shrinkage", "npn_truncation", "skeptic_correlation", "average_ranks"]


def average_ranks(X):
    """Column-wise ranks 1..n of X, ties sharing their average rank."""
    return rankdata(np.asarray(X, dtype=np.float64), method="average", axis=0)


def _scale_by_first(Z):
    sd = float(np.std(Z[:, 0], ddof=1)) if Z.shape[0] > 1 else 0.0
    if not sd > 0:
        raise ValueError("the first column is constant: the nonparanormal transform scales by "
                         "its standard deviation; remove constant columns")
    return Z / sd, sd


def npn_shrinkage(X, return_scale=False):
    """``Phi^-1(rank / (n + 1))`` per column, divided by the standard deviation
    (``n - 1``) of the first transformed column."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Z, sd = _scale_by_first(ndtri(average_ranks(X) / (n + 1)))
    return (Z, sd) if return_scale else Z


def truncation_level(n):
    """``1 / (4 n^(1/4) sqrt(pi log n))``, the default clipping of the truncated ECDF."""
    return 1.0 / (4.0 * n ** 0.25 * np.sqrt(np.pi * np.log(n)))


def npn_truncation(X, delta=None, return_scale=False):
    """``Phi^-1(min(max(rank / n, delta), 1 - delta))`` per column, scaled as
    :func:`npn_shrinkage`."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    d = truncation_level(n) if delta is None else float(delta)
    Z, sd = _scale_by_first(ndtri(np.clip(average_ranks(X) / n, d, 1.0 - d)))
    return (Z, sd) if return_scale else Z


def skeptic_correlation(X):
    """``2 sin(pi / 6 * rho_ij)`` with ``rho`` Spearman's correlation (1 on the
    diagonal)."""
    R = average_ranks(X)
    R -= R.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", R, R))
    if np.any(norms == 0):
        j = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(f"column {j} is constant: its rank correlation is undefined")
    from .objective import gram

    rho = gram(R) / np.outer(norms, norms)
    C = 2.0 * np.sin(np.pi / 6.0 * rho)
    C = 0.5 * (C + C.T)
    np.fill_diagonal(C, 1.0)
    return C
