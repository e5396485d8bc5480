"""Bootstrap edge stability of a learned graph (bootnet's non-parametric bootstrap):
:func:`edge_stability`.

The estimator is fitted again on ``n_boot`` resamples of the rows (drawn with
replacement, all drawn first from ``random_state``, so the result does not depend on
``n_jobs``); each pair's inclusion frequency is the fraction of fits with the edge, and
its weight's percentile interval comes from the fits' weights (0 where the edge is
absent).

A pair's *weight* is read from the fitted estimator (:func:`edge_weight_matrix`): an
:class:`~spargel.mrf.nodewise.IsingFit`'s ``weights_``; for a
:class:`~spargel.mrf.estimator.PairwiseMRF` (or a selector's ``best_estimator_``) the
interaction of a binary pair in 0/1 coding, ``t_00 - t_01 - t_10 + t_11`` of its table,
and the coupling strength (:attr:`~spargel.mrf.estimator.PairwiseMRF.edge_strength_`) of
a pair with more states; for a :class:`~spargel.mrf.mixed.MixedGraphicalModel` (whose
data may have continuous columns) its ``adjacency_``, negative where ``signs_`` is.
A resample in which a categorical column shows a single level cannot be fitted (the
fit's error says which column).

>>> import numpy as np
>>> from spargel.mrf.nodewise import IsingFit
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 2, (300, 3))
>>> X[:, 1] = np.where(rng.random(300) < 0.9, X[:, 0], 1 - X[:, 0])
>>> st = edge_stability(IsingFit(), X, n_boot=20, random_state=0)
>>> float(st.frequency[0, 1]), bool(st.lower[0, 1] > 0)
(1.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.params import check_number
from ..errors import ParameterError
from .common import check_mixed_data, edge_weight_matrix, map_threads

__all__ = ["EdgeStability", "edge_stability", "edge_weight_matrix"]


@dataclass
class EdgeStability:
    """The result of :func:`edge_stability`: ``frequency`` (p, p) inclusion frequencies;
    ``lower``, ``upper`` (p, p) the percentile interval of each pair's weight; ``weights``
    (n_boot, p, p) every fit's weights; ``resamples`` (n_boot, n) the rows of each fit;
    ``level`` the interval's coverage."""

    frequency: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    weights: np.ndarray
    resamples: np.ndarray
    level: float


def _clone(estimator, n_states):
    params = estimator.get_params()
    if "n_states" in params and params["n_states"] is None and n_states is not None:
        params["n_states"] = n_states          # a resample may miss a state: keep the layout
    if "estimator" in params and params["estimator"] is not None:
        inner = params["estimator"]
        params["estimator"] = _clone(inner, n_states)
    return estimator.__class__(**params)


def edge_stability(estimator, X, n_boot=100, *, random_state=None, n_jobs=1, level=0.95):
    """Refit ``estimator`` (unfitted or fitted: its parameters are used) on ``n_boot``
    bootstrap resamples of the rows of ``X``; returns an :class:`EdgeStability`.
    ``n_jobs`` threads fit resamples concurrently (the compiled kernels release the GIL)."""
    check_number("n_boot", n_boot, low=1, integer=True)
    check_number("n_jobs", n_jobs, low=-1, integer=True, allow_none=True)
    check_number("level", level)
    if not 0 < level < 1:
        raise ParameterError(f"level must be in (0, 1), got {level!r}")
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "fit"):
        raise ParameterError(f"estimator must be a spargel estimator, got {type(estimator).__name__}")
    if "types" in estimator.get_params():              # continuous and categorical columns
        Xc, ns = check_mixed_data(X), None
    else:
        from .model import check_discrete_data
        Xc, ns = check_discrete_data(X)
    n = Xc.shape[0]
    rng = np.random.default_rng(random_state)
    resamples = rng.integers(0, n, size=(int(n_boot), n))
    takes_states = "n_states" in estimator.get_params() or "estimator" in estimator.get_params()

    def one(b):
        est = _clone(estimator, ns if takes_states else None)
        est.fit(Xc[resamples[b]])
        return edge_weight_matrix(est)

    W = np.stack(map_threads(one, range(int(n_boot)), n_jobs))      # Ctrl-C: the queued fits cancelled
    q = 100 * (1 - level) / 2
    lower, upper = np.percentile(W, [q, 100 - q], axis=0)
    return EdgeStability(frequency=(W != 0).mean(axis=0), lower=lower, upper=upper, weights=W,
                         resamples=resamples, level=float(level))
