"""spargel: sparse learning of log-linear and graphical models.

The public estimators are imported lazily, so ``import spargel`` stays fast and
compiled kernels are only loaded when a model is first used.

>>> import spargel
>>> crf = spargel.CRF(l1=1.0)            # doctest: +SKIP
"""

from .core.exports import lazy_exports as _lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "CRF": "spargel.chain.estimator",
    "LogLinearClassifier": "spargel.loglinear.estimator",
    "LatentLogLinearClassifier": "spargel.loglinear.latent",
    "SparseGaussianMRF": "spargel.gaussian.estimator",
    "SparseGaussianMRFCV": "spargel.gaussian.estimator",
    "SparseGaussianMRFSelect": "spargel.gaussian.selection",
    "Nonparanormal": "spargel.gaussian.selection",
    "make_graph_data": "spargel.gaussian.generators",
    "NeighbourhoodSelection": "spargel.gaussian.neighbourhood",
    "Concord": "spargel.gaussian.concord",
    "PairwiseMRF": "spargel.mrf.estimator",
    "PairwiseMRFSelect": "spargel.mrf.selection",
    "IsingFit": "spargel.mrf.nodewise",
    "MixedGraphicalModel": "spargel.mrf.mixed",
    "edge_stability": "spargel.mrf.stability",
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


__getattr__, __dir__ = _lazy_exports(globals(), _LAZY, _SUBMODULES)
