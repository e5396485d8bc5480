"""spargel: sparse learning of log-linear and graphical models.

The public estimators are imported lazily, so ``import spargel`` stays fast and
compiled kernels are only loaded when a model is first used.

>>> import spargel
>>> crf = spargel.CRF(l1=1.0)            # doctest: +SKIP
"""

from importlib import import_module

from .core import kernel_cache as _kernel_cache

__version__ = "0.1.0"
_kernel_cache.check()

_LAZY = {
    "CRF": "spargel.chain.estimator",
    "LogLinearClassifier": "spargel.loglinear.estimator",
    "LatentLogLinearClassifier": "spargel.loglinear.latent",
    "SparseGaussianMRF": "spargel.gaussian.estimator",
    "SparseGaussianMRFCV": "spargel.gaussian.estimator",
    "SparseGaussianMRFSelect": "spargel.gaussian.selection",
    "Nonparanormal": "spargel.gaussian.selection",
    "PairwiseMRF": "spargel.mrf.estimator",
    "SpargelError": "spargel.errors",
    "DataFormatError": "spargel.errors",
    "ModelFileError": "spargel.errors",
    "ParameterError": "spargel.errors",
    "CapabilityError": "spargel.errors",
    "NotFittedError": "spargel.errors",
    "ConvergenceWarning": "spargel.errors",
    "DataConversionWarning": "spargel.errors",
    "read_conll": "spargel.data.conll",
    "Template": "spargel.data.templates",
}

#: submodules reachable as attributes (``spargel.metrics``), imported on first use
_SUBMODULES = ("metrics",)

__all__ = sorted(_LAZY) + list(_SUBMODULES) + ["__version__"]


def __getattr__(name):
    if name in _SUBMODULES:
        value = import_module(f"spargel.{name}")
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spargel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
