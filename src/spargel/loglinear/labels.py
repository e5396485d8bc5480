"""Class labels of a flat classifier's targets, as every estimator of the family reads them."""

import numbers
import warnings

import numpy as np

from ..errors import DataConversionWarning


def class_labels(y, who="LogLinearClassifier", min_classes=2):
    """(classes_, label ids) from targets y: sorted distinct labels, their dtype kept;
    missing, continuous or multi-column targets and fewer than ``min_classes``
    classes are refused; a column vector is flattened with a
    :class:`~spargel.errors.DataConversionWarning`.

    >>> class_labels(["b", "a", "b"])
    (array(['a', 'b'], dtype='<U1'), array([1, 0, 1]))
    >>> class_labels([3, 3])
    Traceback (most recent call last):
    ...
    ValueError: y has only one class (3); LogLinearClassifier needs at least 2 classes
    """
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(DataConversionWarning("A column-vector y was passed when a 1d array was expected: y was "
                                            "flattened; give y of shape (n_samples,), e.g. y.ravel()"),
                      stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array (one label per sample), got shape {y.shape}")
    if y.dtype == object:
        bad = [v for v in y if v is None or (isinstance(v, float) and v != v)]
        if bad:
            raise ValueError("y contains missing labels (None or NaN)")
        kinds = {type(v) for v in y}
        if len(kinds) > 1 and not all(issubclass(k, numbers.Integral) for k in kinds):
            raise ValueError(f"y mixes label types: {sorted(k.__name__ for k in kinds)}")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        if np.any(y != np.round(y)):
            raise ValueError(f"y looks continuous (non-integer floats): {who} is a classifier")
    classes, ids = np.unique(y, return_inverse=True)
    if len(classes) < min_classes:
        if len(classes) == 0:
            raise ValueError("y is empty")
        raise ValueError(f"y has only one class ({classes.tolist()[0]!r}); {who} needs at least {min_classes} classes")
    return classes, ids.astype(np.int64)
