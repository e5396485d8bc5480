"""Pseudo regularisation path for l1 / elastic-net CRFs (Sokolovska et al. 2010, §7).

Fit a decreasing sequence of ``l1`` values, each fit starting from the weights of the
previous one ("warm starts"), and report for every value the active features, the
objective and, with a development set, its accuracy (and chunk F1 for B-/I- tags).

``l1_max`` is exact: the gradient of the loss at ``w = 0`` is ``g``; zero is optimal for
``L(w) + l1 ||w||_1 + l2/2 ||w||^2`` exactly when ``|g_k| <= l1`` for every weight, so the
smallest such ``l1`` is ``max_k |g_k|`` (the l2 term has zero gradient at zero).

>>> import spargel                                                    # doctest: +SKIP
>>> rows = spargel.path.path(spargel.CRF(solver="bcd", l2=0.01), X, y,  # doctest: +SKIP
...                          n_l1=8, X_dev=X_dev, y_dev=y_dev)
>>> [(r["l1"], r["active"], r["dev_accuracy"]) for r in rows]          # doctest: +SKIP
"""

import time

import numpy as np

from .labels import label_lists

# a guard against rounding: the solvers compute the gradient at zero by other code
# paths, so ``l1_max`` is returned this much (relatively) above max |g|
L1_MAX_GUARD = 1e-9


def _fresh(estimator, **params):
    est = type(estimator)(**estimator.get_params())
    est.set_params(**params)
    return est


def _training_problem(estimator, X, y):
    """The model exactly as ``fit`` builds it, for the estimator's settings: the
    featurizer of its fit plan encodes the data, the plan's model builder makes the
    model."""
    plan = _fresh(estimator).fit_plan()
    featurizer = plan.new_featurizer()
    data = featurizer.encode(X, label_lists(y, "y"), grow=True)
    return plan.builder.build(data, featurizer)


def l1_max(estimator, X, y):
    """The smallest ``l1`` for which the all-zero model is optimal (for the estimator's
    feature settings and any ``l2``): ``max |gradient of the loss at 0|`` over the
    penalised weights (:meth:`~spargel.core.penalties.Penalty.l1_max`)."""
    from ..core.penalties import ElasticNet

    model = _training_problem(estimator, X, y)
    if model.n_params == 0:
        return 0.0
    _, g = model.loss_grad(np.zeros(model.n_params))
    return ElasticNet(1.0, 0.0, model.layout.penalty_scale).l1_max(g) * (1.0 + L1_MAX_GUARD)


def _count_active(est):
    uni = len(est.state_features_)
    big = len(est.bigram_features_)
    trans = len(est.transition_features_)
    return uni, big, trans


def path(estimator, X, y, l1_values=None, n_l1=10, l1_min_ratio=1e-3, X_dev=None, y_dev=None,
         callback=None):
    """Fit ``estimator``'s settings for decreasing ``l1`` values with warm starts.

    ``l1_values``: the values (sorted decreasing here); by default ``n_l1`` values
    spaced geometrically from ``l1_max`` down to ``l1_min_ratio * l1_max``. Works with
    every solver (each accepts initial weights). ``callback(row)`` is called after
    each fit. Returns one dict per value: ``l1``, ``active`` (and its unigram /
    bigram / transition split), ``objective``, ``n_iter``, ``stop_reason``,
    ``fit_seconds`` and, with ``X_dev``/``y_dev``, ``dev_accuracy`` (and ``dev_f1`` for
    chunk tags).
    """
    from ..metrics import sequence_scores

    if l1_values is None:
        if int(n_l1) < 1 or not 0 < float(l1_min_ratio) <= 1:
            raise ValueError("need n_l1 >= 1 and 0 < l1_min_ratio <= 1")
        top = l1_max(estimator, X, y)
        l1_values = np.geomspace(top, top * float(l1_min_ratio), int(n_l1)) if top > 0 else np.zeros(1)
    values = sorted((float(v) for v in l1_values), reverse=True)
    if any(not np.isfinite(v) or v < 0 for v in values):
        raise ValueError("l1 values must be finite and >= 0")
    X = list(X)
    y = list(y)
    est = _fresh(estimator, warm_start=True)
    if "c1" in est.get_params():
        est.set_params(c1=None)                 # the path sets l1 itself
    rows = []
    dev_labels = None if y_dev is None else label_lists(y_dev, "y_dev")
    for v in values:
        est.set_params(l1=v)
        t0 = time.perf_counter()
        est.fit(X, y)
        row = {"l1": v, "active": int(est.n_active_features_), "objective": float(est.objective_),
               "n_iter": int(est.n_iter_), "stop_reason": est.stop_reason_,
               "fit_seconds": time.perf_counter() - t0}
        row["active_unigram"], row["active_bigram"], row["active_transitions"] = _count_active(est)
        if X_dev is not None:
            scores = sequence_scores(dev_labels, est.predict(X_dev))
            row["dev_accuracy"] = scores.accuracy
            if scores.chunk_f1 is not None:
                row["dev_f1"] = scores.chunk_f1
        rows.append(row)
        if callback is not None:
            callback(dict(row))
    return rows
