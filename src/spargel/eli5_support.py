"""eli5's ``explain_weights`` and ``explain_prediction`` for :class:`spargel.CRF`.

eli5 dispatches on the estimator's class (``functools.singledispatch``); its own CRF
support registers ``sklearn_crfsuite.CRF`` only. Importing this module registers
spargel's ``CRF`` with both functions, so that ``eli5.explain_weights(crf)``,
``eli5.show_weights(crf)`` and ``eli5.explain_prediction(crf, xseq)`` work as they do
for sklearn-crfsuite's CRF::

    import eli5
    import spargel.eli5_support          # noqa: F401  (registers spargel.CRF)

spargel never imports eli5 by itself: this module is imported by the user, or by
spargel when it finds eli5 already imported (when ``spargel.CRF`` is first used, and
after each ``fit`` and ``load``), so a session that imports eli5 before it fits or
loads a model needs no import at all. It imports nothing of ``spargel.chain``: the
estimator module registers its class by calling :func:`register` (an import of this
module by the user imports ``spargel.chain.estimator``, which does).

``explain_weights`` gives what eli5 gives for sklearn-crfsuite: one target per label
(sorted as eli5 sorts named-entity labels, ``B-X`` beside ``I-X``) with its top state
features, and the label transition table. ``explain_prediction`` (which eli5 has no
sklearn-crfsuite version of) gives one target per token of the sequence, in order: the
predicted label, its marginal probability, the sum of that token's state weights for
it (``score``) and the attributes behind that sum (each weight times the attribute's
value); the transition table is that of ``explain_weights``.
"""

from __future__ import annotations

import numpy as np
from eli5.base import Explanation, TargetExplanation, TransitionFeatureWeights
from eli5.explain import explain_prediction, explain_weights
from eli5.utils import get_target_display_names
from eli5._feature_names import FeatureNames
from eli5._feature_weights import get_top_features

from .errors import NotFittedError

__all__ = ["explain_weights_spargel_crf", "explain_prediction_spargel_crf", "state_coef", "transition_coef",
           "register"]

#: the classes registered with eli5's two functions
REGISTERED = set()


def register(cls):
    """Register the estimator class ``cls`` (``spargel.CRF``) with eli5's
    ``explain_weights`` and ``explain_prediction`` (once)."""
    if cls not in REGISTERED:
        explain_weights.register(cls)(explain_weights_spargel_crf)
        explain_prediction.register(cls)(explain_prediction_spargel_crf)
        REGISTERED.add(cls)
    return cls


def _fitted(crf):
    """The fitted model of ``crf`` (a :class:`~spargel.chain.fitted.FittedChain`)."""
    fitted = crf.fitted_model_
    if fitted is None:
        raise NotFittedError(f"this {type(crf).__name__} is not fitted yet; call fit() first")
    return fitted


def state_coef(crf):
    """The ``(labels, attributes)`` array of the state (attribute, label) weights, rows
    in ``crf.classes_``'s order, columns in ``crf.attributes_``'s."""
    fitted = _fitted(crf)
    s = crf.space_
    n_attr = len(fitted.uni)
    coef = np.zeros((len(crf.classes_), n_attr))
    ptr = np.asarray(s.u_ptr[:n_attr + 1], np.int64)
    attr = np.repeat(np.arange(n_attr), np.diff(ptr))
    coef[np.asarray(s.u_lab[:ptr[-1]]), attr] = crf.weights_[:ptr[-1]]
    return coef


def transition_coef(crf):
    """The ``(labels, labels)`` array of the transition weights (previous label, label),
    in ``crf.classes_``'s order (first-order models)."""
    _fitted(crf)
    if getattr(crf.space_, "order", 1) != 1:
        raise ValueError("eli5's transition table is that of a first-order CRF; this model has order 2")
    index = {name: i for i, name in enumerate(crf.classes_)}
    coef = np.zeros((len(index), len(index)))
    for (a, b), w in crf.transition_features_.items():
        coef[index[a], index[b]] = w
    return coef


def _ner_order(classes):
    # eli5's order for sklearn-crfsuite: O first, then B-X beside I-X
    return sorted(classes, key=lambda c: (c.split("-", 1)[1], c) if len(c) > 2 and c[1] == "-" else ("", c))


def _targets(crf, target_names, targets):
    if targets is None:
        targets = _ner_order(crf.classes_)
    indices, names = zip(*get_target_display_names(crf.classes_, target_names, targets))
    return list(indices), list(names)


def _transitions(crf, indices, names):
    ix = np.asarray(indices)
    return TransitionFeatureWeights(class_names=list(names), coef=transition_coef(crf)[ix][:, ix])


def explain_weights_spargel_crf(crf, top=20, target_names=None, targets=None, feature_re=None,
                                feature_filter=None):
    """Explain a fitted ``spargel.CRF``'s weights (see :func:`eli5.explain_weights` for
    ``top``, ``target_names``, ``targets``, ``feature_re`` and ``feature_filter``)."""
    names = np.array(crf.attributes_, dtype=object)
    coef = state_coef(crf)
    if feature_filter is not None or feature_re is not None:
        flt, idx = FeatureNames(list(names)).handle_filter(feature_filter, feature_re)
        names = np.array(flt.feature_names, dtype=object)
        coef = coef[:, idx] if idx is not None else coef
    indices, display = _targets(crf, target_names, targets)
    return Explanation(
        targets=[TargetExplanation(target=label, feature_weights=get_top_features(names, coef[i], top))
                 for i, label in zip(indices, display)],
        transition_features=_transitions(crf, indices, display),
        estimator=repr(crf),
        method="CRF",
    )


def explain_prediction_spargel_crf(crf, xseq, top=20, target_names=None, targets=None, feature_re=None,
                                   feature_filter=None):
    """Explain the labelling of one sequence ``xseq`` by a fitted ``spargel.CRF``: one
    target per token, in order (see the module documentation); ``targets`` orders the
    transition table's labels."""
    data = _fitted(crf).encode([xseq])
    labels = crf.predict_single(xseq)
    marginals = crf.predict_marginals_single(xseq)
    coef = state_coef(crf)
    attrs = list(crf.attributes_)
    label_index = {name: i for i, name in enumerate(crf.classes_)}
    display = dict(get_target_display_names(crf.classes_, target_names))
    out = []
    for t, label in enumerate(labels):
        lo, hi = int(data.uni_ptr[t]), int(data.uni_ptr[t + 1])
        ids = np.asarray(data.uni_ids[lo:hi], np.int64)
        vals = np.asarray(data.uni_vals[lo:hi], np.float64) if data.uni_vals is not None else np.ones(hi - lo)
        keep = ids >= 0
        ids, vals = ids[keep], vals[keep]
        contrib = coef[label_index[label], ids] * vals
        names = np.array([attrs[i] for i in ids], dtype=object)
        if feature_filter is not None or feature_re is not None:
            flt, idx = FeatureNames(list(names)).handle_filter(feature_filter, feature_re)
            if idx is not None:
                names, contrib, vals = np.array(flt.feature_names, dtype=object), contrib[idx], vals[idx]
        out.append(TargetExplanation(
            target=display.get(label_index[label], label),
            feature_weights=get_top_features(names, contrib, top, vals),
            proba=float(marginals[t][label]),
            score=float(contrib.sum()),
        ))
    indices, tnames = _targets(crf, target_names, targets)
    return Explanation(
        targets=out,
        transition_features=_transitions(crf, indices, tnames),
        estimator=repr(crf),
        method="CRF",
        description="one target per token of the sequence, in order: the predicted label, its marginal "
                    "probability, and the token's state features for it (weight times value)",
    )


def _register_loaded():
    """Register ``spargel.CRF`` at once when its module is already loaded (a model fitted
    before eli5 was imported); otherwise the estimator's module registers it when it is
    first imported. (Looked up in ``sys.modules``: this module imports nothing of
    ``spargel.chain``.)"""
    import sys
    module = sys.modules.get("spargel.chain.estimator")
    crf = getattr(module, "CRF", None)
    if crf is not None:
        register(crf)


_register_loaded()
