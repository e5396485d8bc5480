"""Solvers: how to walk. Each asks the model only through the protocol of
:mod:`spargel.core.protocol` and refuses a model (or penalty) that lacks what it
needs with a :class:`~spargel.errors.CapabilityError`.

Every solver is a function ``minimize(model, penalty, w0=None, *, max_iter, tol, gtol,
window, monitor, **options) -> SolverResult``; estimators pick one by name.
"""

from importlib import import_module

from ..errors import ParameterError

# name -> (module, function, what it does)
SOLVERS = {
    "lbfgs": ("spargel.solvers.owlqn", "minimize_owlqn", "L-BFGS, smooth objectives (l1 = 0)"),
    "owlqn": ("spargel.solvers.owlqn", "minimize_owlqn", "OWL-QN (orthant-wise L-BFGS), l1 / elastic net"),
    "sgd-l1": ("spargel.solvers.sgd", "minimize_sgd_l1",
               "stochastic gradient with the cumulative l1 penalty; fast first passes on big data"),
    "cd": ("spargel.solvers.coordinate_descent", "minimize_cd",
           "coordinate descent (one weight at a time), elastic net; small problems"),
    "bcd": ("spargel.solvers.coordinate_descent", "minimize_bcd",
            "blockwise coordinate descent (one attribute's weights at a time), elastic net / group"),
    "fista": ("spargel.solvers.proximal", "minimize_fista",
              "accelerated proximal gradient; any penalty with a prox (group lasso)"),
    "bound": ("spargel.solvers.bound", "minimize_bound",
              "bound majorisation (Jebara & Choromanska): few, monotone steps on a quadratic upper bound; l2 / "
              "elastic net"),
    "grafting-light": ("spargel.solvers.grafting", "minimize_grafting_light",
                       "Grafting-Light: one OWL-QN step over a growing working set, then the most violating "
                       "features join it; structure learning"),
    "grafting": ("spargel.solvers.grafting", "minimize_grafting",
                 "Grafting: the working set re-optimised by OWL-QN after every selection"),
    "gauss-seidel": ("spargel.solvers.grafting", "minimize_gauss_seidel",
                     "Gauss-Seidel: the most violating features optimised with the others fixed"),
    "ap": ("spargel.solvers.online_margin", "minimize_ap",
           "averaged perceptron (CRFsuite's 'ap'): MAP decoding and additive updates, averaged; no penalty"),
    "pa": ("spargel.solvers.online_margin", "minimize_pa",
           "passive-aggressive, types 0 / I / II (CRFsuite's 'pa'); no penalty"),
    "arow": ("spargel.solvers.online_margin", "minimize_arow",
             "AROW, adaptive regularisation of weight vectors (CRFsuite's 'arow'); no penalty"),
    "l2sgd": ("spargel.solvers.l2sgd", "minimize_l2sgd",
              "CRFsuite's 'l2sgd': per-sample SGD with an l2 penalty, step 1 / (lambda (t0 + t)), t0 calibrated"),
    "mira": ("spargel.solvers.online_margin", "minimize_mira",
             "CRF++'s MIRA: single-best, cost-sensitive (margin = wrong tokens), steps bounded by C, "
             "shrinking; no penalty"),
    "rprop": ("spargel.solvers.rprop", "minimize_rprop",
              "Wapiti's 'rprop' / 'rprop+': resilient propagation (per-weight steps from the gradient's signs) "
              "with weight backtracking; l1 by the orthant projection or Wapiti's cutoff"),
    "rprop+": ("spargel.solvers.rprop", "minimize_rprop", "the same as 'rprop' (Wapiti's spelling)"),
    "rprop-": ("spargel.solvers.rprop", "minimize_rprop_minus", "Wapiti's 'rprop-': Rprop without backtracking"),
}


# iterations (passes over the data for SGD) when the estimator's max_iter is None
DEFAULT_MAX_ITER = {"lbfgs": 500, "owlqn": 500, "sgd-l1": 30, "cd": 200, "bcd": 200, "fista": 2000, "bound": 100,
                    "grafting-light": 2000, "grafting": 5000, "gauss-seidel": 5000,
                    "ap": 100, "pa": 100, "arow": 100, "l2sgd": 1000, "mira": 100,
                    "rprop": 500, "rprop+": 500, "rprop-": 500}


def default_max_iter(name):
    return DEFAULT_MAX_ITER.get(name, 500)


# the relative objective change over the window (``tol``) when the estimator's tol is
# None: L-BFGS / OWL-QN stop when the objective improved by less than 0.02% over the
# last ``window`` (10) iterations -- on CoNLL-2000 chunking the test F1 is flat long
# before CRFsuite's 1e-5 fires (docs/algorithms.md, "Stopping rules"); the others keep 1e-5
DEFAULT_TOL = {"lbfgs": 2e-4, "owlqn": 2e-4}


def default_tol(name):
    """The ``tol`` that solver ``name`` uses when the estimator's ``tol`` is None."""
    return DEFAULT_TOL.get(name, 1e-5)


def available_solvers():
    """Names of the solvers whose module is present."""
    names = []
    for name, (module, func, _) in SOLVERS.items():
        try:
            getattr(import_module(module), func)
        except (ImportError, AttributeError):
            continue
        names.append(name)
    return names


def get_solver(name):
    """The minimise function of solver ``name``."""
    if name not in SOLVERS:
        raise ParameterError(f"unknown solver {name!r}; choose one of {', '.join(available_solvers())}")
    module, func, _ = SOLVERS[name]
    try:
        return getattr(import_module(module), func)
    except (ImportError, AttributeError):
        raise ParameterError(f"solver {name!r} is not available in this version of spargel") from None
