"""Solvers: how to walk. Each asks the model only through the protocol of
:mod:`spargel.core.protocol` and refuses a model (or penalty) that lacks what it
needs with a :class:`~spargel.errors.CapabilityError`.

Every solver is a function ``minimize(model, penalty, w0=None, *, max_iter, tol, gtol,
window, monitor, **options) -> SolverResult``; estimators pick one by name from the
solver table (:mod:`spargel.core.solver_table`), which also holds their defaults.
"""

from importlib import import_module

from ..core.solver_table import SOLVER_TABLE, solver
from ..errors import ParameterError

#: the solvers on models of the protocol: name -> its record (``core/solver_table.py``,
#: the one place that describes a solver)
SOLVERS = {s.name: s for s in SOLVER_TABLE if s.works_on == "model" and s.public}


def default_max_iter(name):
    """The ``max_iter`` that solver ``name`` uses when the estimator's ``max_iter`` is None."""
    return solver(name).max_iter


def default_tol(name):
    """The ``tol`` that solver ``name`` uses when the estimator's ``tol`` is None: L-BFGS /
    OWL-QN stop when the objective improved by less than 0.02% over the last ``window``
    (10) iterations -- on CoNLL-2000 chunking the test F1 is flat long before CRFsuite's
    1e-5 fires (docs/algorithms.md, "Stopping rules"); the others keep 1e-5."""
    return solver(name).tol


def available_solvers():
    """Names of the solvers whose module is present."""
    names = []
    for name, record in SOLVERS.items():
        try:
            _function(record)
        except (ImportError, AttributeError):
            continue
        names.append(name)
    return names


def get_solver(name):
    """The minimise function of solver ``name``."""
    if name not in SOLVERS:
        raise ParameterError(f"unknown solver {name!r}; choose one of {', '.join(available_solvers())}")
    try:
        return _function(SOLVERS[name])
    except (ImportError, AttributeError):
        raise ParameterError(f"solver {name!r} is not available in this version of spargel") from None


def _function(record):
    module, func = record.function.split(":")
    return getattr(import_module(module), func)
