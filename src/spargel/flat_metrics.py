"""sklearn-crfsuite's metrics over label sequences: the token ("flat") scores of
scikit-learn computed on the concatenated sequences, and the sequence accuracy.

``y_true`` and ``y_pred`` are lists of label sequences of equal shapes. The flat scores
pass their keyword arguments (``average``, ``labels``, ``digits``, ``zero_division``,
...) to :mod:`sklearn.metrics` (scikit-learn is needed for them, and imported only
when one is called).

>>> flat_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
0.6666666666666666
>>> sequence_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
0.5
"""

__all__ = ["flatten", "flat_accuracy_score", "flat_precision_score", "flat_recall_score", "flat_f1_score",
           "flat_fbeta_score", "flat_classification_report", "sequence_accuracy_score"]


def flatten(sequences):
    """The items of a list of sequences, in order (``[[1, 2], [3]] -> [1, 2, 3]``)."""
    return [item for seq in sequences for item in seq]


def _flat_pair(y_true, y_pred):
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences, y_pred {len(y_pred)}")
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if isinstance(t, str) or isinstance(p, str):
            raise TypeError(f"sequence {i}: expected a list of labels, got a string")
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: {len(t)} true labels but {len(p)} predicted")
    return flatten(y_true), flatten(y_pred)


def flat_accuracy_score(y_true, y_pred):
    """Token accuracy over all sequences."""
    from sklearn import metrics
    return metrics.accuracy_score(*_flat_pair(y_true, y_pred))


def flat_precision_score(y_true, y_pred, **kwargs):
    """scikit-learn's ``precision_score`` over the tokens of all sequences."""
    from sklearn import metrics
    return metrics.precision_score(*_flat_pair(y_true, y_pred), **kwargs)


def flat_recall_score(y_true, y_pred, **kwargs):
    """scikit-learn's ``recall_score`` over the tokens of all sequences."""
    from sklearn import metrics
    return metrics.recall_score(*_flat_pair(y_true, y_pred), **kwargs)


def flat_f1_score(y_true, y_pred, **kwargs):
    """scikit-learn's ``f1_score`` over the tokens of all sequences (e.g.
    ``average="weighted", labels=[...]`` to leave ``O`` out)."""
    from sklearn import metrics
    return metrics.f1_score(*_flat_pair(y_true, y_pred), **kwargs)


def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """scikit-learn's ``fbeta_score`` over the tokens of all sequences."""
    from sklearn import metrics
    return metrics.fbeta_score(*_flat_pair(y_true, y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """scikit-learn's ``classification_report`` over the tokens of all sequences."""
    from sklearn import metrics
    return metrics.classification_report(*_flat_pair(y_true, y_pred), labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """The fraction of sequences predicted entirely right (0 for no sequences)."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences, y_pred {len(y_pred)}")
    if not y_true:
        return 0.0
    return sum(1 for t, p in zip(y_true, y_pred) if list(t) == list(p)) / len(y_true)
