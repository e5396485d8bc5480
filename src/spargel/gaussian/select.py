"""Model-selection criteria for a regularisation path: EBIC, StARS and RIC.

The path is fitted on standardised data (each column centred and divided by its
sample standard deviation, ``n - 1``), whose covariance is the correlation
matrix ``R``, with penalties ``alpha_1 > alpha_2 > ...`` (RIC's rotations may
also be taken of the data as given, as ``huge.select`` does):

* **EBIC** (Foygel & Drton 2010): ``-n (log det K - tr(R K)) + |E| log n +
  4 gamma |E| log p`` with ``|E|`` the number of edges of ``K``; the alpha
  with the smallest score (the first on ties).
* **StARS** (Liu, Roeder & Wasserman 2010): fit the path on subsamples; with
  ``theta_ij`` the fraction of subsamples that have edge (i, j), the
  variability is ``D = 4 mean_{i<j} theta_ij (1 - theta_ij)`` (twice the paper's
  mean instability ``2 theta (1 - theta)``, so a threshold of 0.1 is the
  paper's beta = 0.05); the choice is the smallest alpha such that every alpha
  above it has ``D < threshold`` (the last one before the first crossing).
* **RIC** (rotation information criterion, Lysen 2009): for rotations
  ``r`` (shifts of the rows of one column against the others),
  ``alpha = min_r max_{j != k} |sum_m Z[(m + r) mod n, j] Z[m, k]| / n``: on
  standardised data, the largest correlation that pure noise (decoupled rows)
  produces. ``huge.select`` computes it from the data as given (neither
  centred nor scaled), so its alpha depends on the units; the estimator offers
  both (``ric_data``). (huge 1.3.5
  takes the maximum over all ordered pairs j != k, as here; huge 1.4 and later
  over j < k only, which can only be smaller.)

These are the criteria of R's ``huge.select`` (``ebic``, ``stars``, ``ric``)
with the same subsample sizes (``10 sqrt(n)`` samples when ``n > 144``, else
``0.8 n``) and rotations; StARS here follows the paper when no alpha crosses
the threshold (the smallest alpha), where ``huge.select`` returns the largest.

>>> import numpy as np
>>> Z = standardize(np.arange(12.0).reshape(4, 3) ** 2)
>>> bool(np.allclose(Z.std(axis=0, ddof=1), 1.0))
True
>>> bool(ebic_scores([0.0, -1.0], [0, 2], n=10, p=4)[1] == 10 + 2 * np.log(10) + 4 * 0.5 * 2 * np.log(4))
True
"""

from __future__ import annotations

import numpy as np

from ..core.selection import default_subsample_size, stars_choice, stars_variability  # noqa: F401 (public here too)

__all__ = ["standardize", "ebic_scores", "stars_variability", "stars_choice", "ric_alpha",
           "default_subsample_size", "log_likelihood_terms"]


def standardize(X):
    """Columns centred and divided by their sample standard deviation (``n - 1``)."""
    X = np.asarray(X, dtype=np.float64)
    Z = X - X.mean(axis=0)
    sd = np.sqrt(np.einsum("ij,ij->j", Z, Z) / max(X.shape[0] - 1, 1))
    if np.any(sd == 0):
        j = int(np.flatnonzero(sd == 0)[0])
        raise ValueError(f"column {j} is constant: it cannot be standardised")
    return Z / sd


def log_likelihood_terms(K, R):
    """``log det K - tr(R K)`` (the data term of the log-likelihood, up to n / 2
    and constants)."""
    sign, ld = np.linalg.slogdet(K)
    if sign <= 0:
        return -np.inf
    return float(ld - np.vdot(R, K))


def ebic_scores(loglik, edges, *, n, p, gamma=0.5):
    """``-n loglik + |E| log n + 4 gamma |E| log p`` per alpha (``loglik`` from
    :func:`log_likelihood_terms`)."""
    loglik = np.asarray(loglik, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    return -n * loglik + np.log(n) * edges + 4.0 * gamma * np.log(p) * edges


def ric_alpha(Z, rotations):
    """``min_r max_{j != k} |sum_m Z[(m + r) mod n, j] Z[m, k]| / n`` over the
    given shifts ``r`` (integers, taken modulo n)."""
    Z = np.asarray(Z, dtype=np.float64)
    n, p = Z.shape
    if p < 2:
        return 0.0
    off = ~np.eye(p, dtype=bool)
    best = np.inf
    for r in rotations:
        M = np.roll(Z, -(int(r) % n), axis=0).T @ Z
        best = min(best, float(np.max(np.abs(M[off]))))
    return best / n
