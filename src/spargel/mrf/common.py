"""What the graph learners of :mod:`spargel.mrf` share, below all of them: the check of
a mixed data matrix and of its variable types, the variables' names, and the edge
weights read from any fitted learner (:func:`edge_weight_matrix`).

This module imports nothing else from :mod:`spargel.mrf`, so every other module may
import it (the imports within the package run one way: a test keeps them free of
cycles).

>>> import numpy as np
>>> check_types("gc", 2).tolist()
['g', 'c']
>>> check_mixed_data(np.array([[0.5, 1], [1.5, 0], [2.0, 1]])).shape
(3, 2)
"""

from __future__ import annotations

import numpy as np

from ..errors import DataFormatError, ParameterError

__all__ = ["TYPES", "check_mixed_data", "check_types", "edge_weight_matrix", "variable_names"]

#: a mixed model's variable types: ``"g"`` continuous (Gaussian), ``"c"`` categorical
TYPES = ("g", "c")


def check_types(types, p):
    """``types`` (a string or a sequence of ``'g'`` / ``'c'``, one per variable) as an
    array, or a :class:`~spargel.errors.ParameterError` saying what is wrong."""
    if isinstance(types, str):
        types = list(types)
    try:
        types = [str(t) for t in types]
    except TypeError:
        raise ParameterError(f"types must be a sequence of 'g' (continuous) and 'c' (categorical), got {types!r}") \
            from None
    if len(types) != p:
        raise ParameterError(f"types has {len(types)} entries for {p} variables")
    bad = [t for t in types if t not in TYPES]
    if bad:
        raise ParameterError(f"types must be 'g' (continuous) or 'c' (categorical), got {bad[0]!r}")
    return np.array(types)


def check_mixed_data(X):
    """``X`` as a float (n, p) array of at least 3 rows and 2 columns, every value
    finite, or a :class:`~spargel.errors.DataFormatError` naming the row."""
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError("X", None, f"not a 2-d numeric array ({exc})") from None
    if A.ndim != 2:
        raise DataFormatError("X", None, f"expected a 2-d array (n_samples, n_variables), got {A.ndim}-d")
    if A.shape[1] < 2:
        raise DataFormatError("X", None, "a graphical model needs at least 2 variables")
    if A.shape[0] < 3:
        raise DataFormatError("X", None, f"at least 3 samples are needed, got {A.shape[0]}")
    bad = ~np.isfinite(A)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataFormatError("X", int(r) + 1, f"column {int(c)}: {A[r, c]} (missing values are not allowed)")
    return A


def variable_names(est, labels):
    """The fitted estimator's variable names: ``labels`` checked (one distinct name per
    variable), or 0..p-1."""
    p = int(est.n_features_in_)
    if labels is None:
        return list(range(p))
    labels = list(labels)
    if len(labels) != p or len(set(labels)) != p:
        raise ValueError(f"labels must be {p} distinct names, one per variable")
    return labels


def edge_weight_matrix(estimator):
    """(p, p) symmetric matrix of a fitted estimator's edge weights (0: no edge): an
    :class:`~spargel.mrf.nodewise.IsingFit`'s ``weights_``; a
    :class:`~spargel.mrf.mixed.MixedGraphicalModel`'s ``adjacency_``, negative where
    ``signs_`` is; for a :class:`~spargel.mrf.estimator.PairwiseMRF` the interaction of a
    binary pair in 0/1 coding, ``t_00 - t_01 - t_10 + t_11`` of its table, and the
    coupling strength of a pair with more states. A selector gives its selected model's."""
    if hasattr(estimator, "best_estimator_"):
        estimator = estimator.best_estimator_
    W = getattr(estimator, "weights_", None)
    if isinstance(W, np.ndarray) and W.ndim == 2:
        return np.array(W, dtype=np.float64)
    A = getattr(estimator, "adjacency_", None)
    if isinstance(A, np.ndarray) and A.ndim == 2:          # a mixed graphical model: signed where it has a sign
        return A * np.where(estimator.signs_ < 0, -1.0, 1.0)
    if not hasattr(estimator, "edge_weights_"):
        raise ParameterError(f"{type(estimator).__name__} has no edge weights to read "
                             f"(expected a fitted PairwiseMRF, a selector, IsingFit or MixedGraphicalModel)")
    p = int(estimator.n_features_in_)
    W = np.zeros((p, p))
    for (i, j), t, s in zip(estimator.edges_, estimator.edge_weights_, estimator.edge_strength_):
        v = float(t[0, 0] - t[0, 1] - t[1, 0] + t[1, 1]) if t.shape == (2, 2) else float(s)
        W[i, j] = W[j, i] = v
    return W
