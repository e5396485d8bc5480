"""spargel: sparse learning of log-linear and graphical models.

The public estimators are imported lazily, so ``import spargel`` stays fast and
compiled kernels are only loaded when a model is first used.

>>> import spargel
>>> crf = spargel.CRF(l1=1.0)            # doctest: +SKIP
"""

from importlib import import_module

__version__ = "0.1.0"

_LAZY = {
    "CRF": "spargel.estimators.crf",
    "LogLinearClassifier": "spargel.estimators.loglinear",
    "SparseGaussianMRF": "spargel.estimators.gaussian",
    "SparseGaussianMRFCV": "spargel.estimators.gaussian",
    "PairwiseMRF": "spargel.estimators.mrf",
    "SpargelError": "spargel.errors",
    "DataFormatError": "spargel.errors",
    "ModelFileError": "spargel.errors",
    "CapabilityError": "spargel.errors",
    "NotFittedError": "spargel.errors",
    "ConvergenceWarning": "spargel.errors",
    "read_conll": "spargel.data.conll",
    "Template": "spargel.data.templates",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spargel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
