"""The chain CRF's in-memory fit route: sequences and labels in, a
:class:`~spargel.estimation.FitOutcome` out, given the estimator's
:class:`~spargel.estimation.FitPlan` (the featurizer encodes, the model builder builds,
the plan's solver solves). ``CRF.fit`` keeps what it returns."""

import numpy as np
from ..core.params import check_sample_weight
from ..data.progress import counted, ReadProgress
from .labels import label_lists, refuse_marker_label
from .monitor import monitor_for


def training_constraints(plan, data, names):
    """The constraints over the training labels ``names``, once every training sequence
    is checked against them (a forbidden gold sequence has probability 0)."""
    from .constraints import violations
    lc = plan.label_constraints(names)
    bad = violations(lc, data.labels, data.seq_ptr)
    if bad is not None:
        s, t, why = bad
        lab = names[data.labels[data.seq_ptr[s] + t]]
        if t and why.startswith("may not follow"):
            why = f"may not follow {names[data.labels[data.seq_ptr[s] + t - 1]]!r}"
        raise ValueError(f"training sequence {s}, token {t}: label {lab!r} {why} under the constraints; "
                         f"constrain_training=True needs every training sequence to be allowed")
    return lc


def encode_training(plan, featurizer, X, y):
    """The training encoding of ``X`` and ``y`` by ``featurizer`` (its vocabularies
    become those of the data), with a progress line on stderr when the plan is
    verbose."""
    if plan.verbose and not isinstance(X, (str, bytes)) and hasattr(X, "__iter__"):
        # a progress line while the training data is read and encoded
        X = counted(X, ReadProgress("reading"))
    return featurizer.encode(X, y, grow=True)


def fit_sequences(plan, X, y, X_dev=None, y_dev=None, callback=None, sample_weight=None):
    """Fit the plan's CRF on the sequences ``X`` and label sequences ``y`` (see
    :meth:`spargel.CRF.fit`); returns the :class:`~spargel.estimation.FitOutcome`."""
    from ..estimation import FitOutcome, solve, warn_large_values

    y = label_lists(y, "y", lazy=True)
    if plan.order == 2:
        y = refuse_marker_label(y)
    featurizer = plan.new_featurizer()
    data = encode_training(plan, featurizer, X, y)
    uni, big, labels = featurizer.uni, featurizer.big, featurizer.labels
    builder = plan.builder
    if plan.constrain_training:
        builder = builder.with_constraints(training_constraints(plan, data, labels.names))
    elif plan.constraints is not None:
        plan.label_constraints(labels.names)     # labels that do not fit: refused now, not at predict
    sw = check_sample_weight(sample_weight, data.n_sequences, "sequence")
    if "blocks" in plan.solver.needs and (sw is not None or np.any(data.labels < 0)):    # the CRF's blocks: cd, bcd
        raise ValueError(f"solver {plan.solver.name!r} does not take sample weights or partially labelled "
                         f"sequences; use solver='owlqn' (or 'sgd-l1')")
    dev = None
    if X_dev is not None:
        y_dev = label_lists(y_dev, "y_dev")
        # dev metrics compare label strings: labels never seen in training are
        # simply errors, so the dev set needs no label ids
        dev = (featurizer.encode(X_dev), y_dev)
    warn_large_values(plan.estimator, data.uni_vals)
    warn_large_values(plan.estimator, data.big_vals)
    space = builder.space(data, len(labels), len(uni), len(big))
    w0 = None if plan.previous is None else plan.previous.weights(space, uni, big, labels)
    model = builder.model(space, data, sample_weight=sw)
    lc = plan.label_constraints(labels.names) if dev is not None else None
    monitor = monitor_for(plan, space, labels.names, lc, dev, callback, featurizer)
    result = solve(plan, model, w0, monitor)
    return FitOutcome(uni, big, labels, space, result.w, result)
