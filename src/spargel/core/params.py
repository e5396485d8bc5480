"""scikit-learn conventions without depending on scikit-learn: parameters are the
arguments of ``__init__``, stored as given; ``get_params``, ``set_params``, ``repr``
and ``sklearn.base.clone`` work."""

import inspect
import numbers

import numpy as np

from ..errors import NotFittedError, ParameterError


def check_number(name, value, *, low=0.0, allow_array=False, integer=False, allow_none=False):
    """Validate an estimator parameter: a finite number >= ``low`` (an int with
    ``integer``; optionally an array of such numbers, or None). Raises ValueError /
    TypeError naming the parameter, never a numpy error from deep inside a solver."""
    if value is None and allow_none:
        return
    if isinstance(value, (str, bytes, bool)) or (isinstance(value, np.ndarray) and value.dtype.kind in "USOb"):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, (np.ndarray, list, tuple)) and allow_array:
        arr = np.asarray(value, dtype=float)
    elif isinstance(value, numbers.Number):
        arr = np.asarray(float(value))
    else:
        raise ParameterError(f"{name} must be a number, got {value!r}")
    if integer and (not isinstance(value, numbers.Integral)):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < low):
        raise ParameterError(f"{name} must be a finite number >= {low:g}, got {value!r}")


def check_n_jobs(value, name="n_jobs"):
    """None, -1 (every core) or a positive integer of threads; anything else (0, -2, 1.5,
    True) is a :class:`ParameterError` naming the parameter, as scikit-learn refuses it.

    >>> check_n_jobs(0)
    Traceback (most recent call last):
    ...
    spargel.errors.ParameterError: n_jobs must be None, -1 or an integer >= 1, got 0
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or not (value == -1 or value >= 1):
        raise ParameterError(f"{name} must be None, -1 or an integer >= 1, got {value!r}")
    return int(value)


def check_sample_weight(sample_weight, n, what="sample"):
    """None, or the float64 array of ``n`` finite weights >= 0 (one per ``what``), not
    all zero (the data would then say nothing).

    >>> check_sample_weight([1, 0.5], 2)
    array([1. , 0.5])
    >>> check_sample_weight([0, 0], 2)
    Traceback (most recent call last):
    ...
    ValueError: sample_weight is zero for every sample; at least one weight must be > 0
    """
    if sample_weight is None:
        return None
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.shape != (n,):
        raise ValueError(f"sample_weight has shape {sw.shape}, expected one weight per {what} ({n},)")
    if not np.all(np.isfinite(sw)) or np.any(sw < 0):
        raise ValueError("sample_weight must be finite and >= 0")
    if n and not np.any(sw > 0):
        raise ValueError(f"sample_weight is zero for every {what}; at least one weight must be > 0")
    return sw


def keep_arguments(obj, arguments):
    """Store every constructor argument on ``obj`` under its own name, unchanged:
    ``keep_arguments(self, locals())`` as the whole body of an estimator's ``__init__``.

    scikit-learn's convention, which ``get_params``, ``set_params``, ``repr`` and
    ``sklearn.base.clone`` rely on: the parameters are the arguments of ``__init__``
    (read from its explicit signature, so the signature stays spelled out), each kept
    as given under its own name, and ``__init__`` does nothing else -- checks and
    derived values wait for ``fit``, so that ``clone`` (which builds a new estimator
    from ``get_params()``) gives an estimator with identical parameters. ``self`` is
    skipped (and ``__class__``, which ``locals()`` holds in a method that calls
    ``super()``); call it first, before any other local exists.

    >>> class Demo:
    ...     def __init__(self, alpha=1.0, tol=None):
    ...         keep_arguments(self, locals())
    >>> vars(Demo(alpha=0.5))
    {'alpha': 0.5, 'tol': None}
    """
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(obj, name, value)


class ParamsMixin:
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ParameterError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                     f"valid parameters: {', '.join(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            value = getattr(self, name)
            default = sig.parameters[name].default
            if default is inspect.Parameter.empty or not _same(value, default):
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    # -- scikit-learn tags (read by scikit-learn's own tools; importing spargel never
    # imports scikit-learn, so the tag classes are imported only when asked for) -------
    _estimator_kind = None          # "classifier", "regressor", "density" or None

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, Tags, TargetTags
        tags = Tags(estimator_type=None, target_tags=TargetTags(required=False))
        if self._estimator_kind == "classifier":
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
            tags.target_tags.required = True
        elif self._estimator_kind == "density":
            tags.estimator_type = "density_estimator"
        self._more_sklearn_tags(tags)
        return tags

    def _more_sklearn_tags(self, tags):
        """Subclasses adjust scikit-learn's tags here (input kinds, ...)."""

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")


def _same(a, b):
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b
