"""How a Gaussian solver runs: when it stops and whom it tells.

Every solver on the covariance matrix (``newton_cg``, ``newton_cd``,
``projected_gradient``, ``block_l1_projected_gradient``) shares these options, so they
travel as one record, :class:`RunControl`: :func:`~.solve.solve_gaussian` builds it once
from its keywords and hands it to the solver of every screened component (the Dask
tasks receive a copy without the reporting). What is particular to one solver (its
line search, CG or sweep limits, ``step_rule``) stays a keyword of that solver.

>>> c = RunControl(tol=1e-8)
>>> c.max_iter_for("newton-cd"), c.polish
(100, 0)
>>> c.report({"iteration": 1, "objective": 2.5}, [], "demo")
False
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..core.solver_table import solver as solver_record
from .progress import record

__all__ = ["RunControl"]


@dataclass(frozen=True)
class RunControl:
    """The options every Gaussian solver shares (see the module documentation).

    tol, atol : stop when the certified duality gap is ``<= max(atol, tol * max(1, |f|))``.
    max_iter : the iteration limit; None: the solver's default from the solver table
        (``core/solver_table.py``).
    polish : the Newton solvers: once the tolerance is met, up to this many further
        Newton steps towards the rounding floor (``newton_cd.polish_done``); the
        projected gradients ignore it.
    verbose : each iteration's row as one line on stderr.
    callback : ``callback(row)`` after every iteration; returning True stops the solver.
    t0 : the ``time.perf_counter()`` the rows' ``elapsed`` counts from (None: when the
        solver starts).
    """

    tol: float = 1e-6
    atol: float = 0.0
    max_iter: Optional[int] = None
    polish: int = 0
    verbose: bool = False
    callback: Optional[Callable] = None
    t0: Optional[float] = None

    @classmethod
    def given(cls, control):
        """``control``, or the defaults when it is None."""
        return cls() if control is None else control

    def threshold(self, f):
        """The gap that stops a solver at objective ``f``: ``max(atol, tol * max(1, |f|))``."""
        return max(self.atol, self.tol * max(1.0, abs(f)))

    def max_iter_for(self, name):
        """The iteration limit of solver ``name`` (its table default when None)."""
        return solver_record(name, "covariance").max_iter if self.max_iter is None \
            else self.max_iter

    def start(self):
        """The time the rows' ``elapsed`` counts from."""
        return time.perf_counter() if self.t0 is None else self.t0

    def report(self, row, history, name):
        """Keep ``row`` in ``history``, print it when verbose; whether the callback
        asks to stop (:func:`~.progress.record`)."""
        return record(row, history, verbose=self.verbose, callback=self.callback, name=name)

    def quiet(self):
        """The same stopping rule without the reporting (for a remote worker: its rows
        reach the caller in the result's history)."""
        return replace(self, verbose=False, callback=None)

    def with_tol(self, tol):
        """The same control with another ``tol``."""
        return replace(self, tol=tol)
