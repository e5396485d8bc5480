"""The solver table: one record per solver, the only place that says what a solver is.

Estimators, the command line and the documentation read it: its defaults (``max_iter``,
``tol``), whether it draws a random order (``stochastic``: the estimator hands it its
``random_state``), whether stopping at ``max_iter`` is worth a ``ConvergenceWarning``,
which capabilities of the model protocol it needs (:mod:`spargel.core.protocol`), the
command-line options of ``spargel train`` that it takes, and the line that describes it
(in ``spargel train --help`` and the guide's solver table, ``docs/guide.md``).

Two kinds of solvers share the table: ``works_on="model"``, a function
``minimize(model, penalty, w0=None, *, max_iter, tol, gtol, window, monitor, **options)``
over any model of the protocol (``spargel.solvers.get_solver`` picks it by name), and
``works_on="covariance"``, the Gaussian MRFs' solvers on a covariance matrix
(``spargel.gaussian.solve``).

To add a solver: add its record here, write its function (``function`` names it), add
its row to the guide's solver table; ``docs/architecture.md``, "Adding a solver", says
the rest. This module imports nothing heavy (``import spargel`` stays fast).

>>> solver("owlqn").max_iter, solver("owlqn").needs
(500, ('loss_grad',))
>>> [s.name for s in SOLVER_TABLE if s.stochastic and not s.warn_at_max_iter]
['sgd-l1', 'ap', 'pa', 'arow']
>>> solvers_for({"loss_grad"}, nothing_else=True)
['lbfgs', 'owlqn', 'fista', 'rprop', 'rprop+', 'rprop-']
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParameterError

__all__ = ["Solver", "SOLVER_TABLE", "solver", "solver_names", "solvers_for"]


@dataclass(frozen=True)
class Solver:
    """What spargel knows about one solver (see the module documentation)."""

    #: the name users give (``solver="owlqn"``, ``--solver owlqn``)
    name: str
    #: one line: what it does and when to use it (CLI help, the guide's table)
    doc: str
    #: ``"module:function"`` of its implementation
    function: str
    #: iterations (passes over the data for SGD, epochs for the online trainers) when the
    #: estimator's ``max_iter`` is None
    max_iter: int
    #: the relative objective change over the window when the estimator's ``tol`` is None
    #: (the Gaussian solvers: the relative duality gap)
    tol: float = 1e-5
    #: ``"model"`` (any model of the protocol) or ``"covariance"`` (Gaussian MRFs)
    works_on: str = "model"
    #: the capabilities the model must offer (``core/protocol.CAPABILITIES``)
    needs: tuple = ()
    #: capabilities it uses when the model offers them (a faster path), none required
    uses: tuple = ()
    #: the reason it refuses l1 > 0, shown after ``solver='name'`` ("" when it takes l1)
    refuses_l1: str = ""
    #: visits samples or blocks in a random order: the estimator passes its ``random_state``
    stochastic: bool = False
    #: stopping at ``max_iter`` before its tolerance earns a ``ConvergenceWarning``
    #: (False for the solvers whose runs are a fixed number of passes by design)
    warn_at_max_iter: bool = True
    #: ``spargel train``'s options that reach it: (argument name, ``solver_options`` key)
    cli_options: tuple = ()
    #: a name users may give (False: run only on another solver's behalf)
    public: bool = True
    #: Gaussian solvers: what runs instead when the penalty has blocks (None: refused)
    with_blocks: str | None = None
    #: Gaussian solvers that work from the data matrix only (never on a covariance)
    from_data_only: bool = False
    #: how a fit's weight-sized vectors are counted (``core/limits.weight_copies``):
    #: ``"curvature"`` (a quasi-Newton method's curvature pairs and five more), ``"sgd"``
    #: (the weights, their penalty records and a trial pair); None: no formula stated
    memory_formula: str | None = None


_RPROP_CLI = (("stpmin", "stpmin"), ("stpmax", "stpmax"), ("stpinc", "stpinc"), ("stpdec", "stpdec"),
              ("cutoff", "cutoff"))
_RPROP_DOC = ("Wapiti's 'rprop' / 'rprop+': resilient propagation (per-weight steps from the gradient's signs) "
              "with weight backtracking; l1 by the orthant projection or Wapiti's cutoff")

SOLVER_TABLE = (
    # -- on any model of the protocol (spargel.solvers) ------------------------------------
    Solver("lbfgs", "L-BFGS, smooth objectives (l1 = 0)", "spargel.solvers.owlqn:minimize_owlqn",
           max_iter=500, tol=2e-4, needs=("loss_grad",), memory_formula="curvature",
           cli_options=(("histsz", "memory"),), refuses_l1="handles smooth objectives only: set l1=0 or use solver='owlqn'"),
    Solver("owlqn", "OWL-QN (orthant-wise L-BFGS), l1 / elastic net", "spargel.solvers.owlqn:minimize_owlqn",
           max_iter=500, tol=2e-4, needs=("loss_grad",), memory_formula="curvature",
           cli_options=(("histsz", "memory"),)),
    Solver("sgd-l1", "stochastic gradient with the cumulative l1 penalty; fast first passes on big data",
           "spargel.solvers.sgd:minimize_sgd_l1", max_iter=30, needs=("sgd",), stochastic=True,
           warn_at_max_iter=False, memory_formula="sgd"),
    Solver("cd", "coordinate descent (one weight at a time), elastic net; small problems",
           "spargel.solvers.coordinate_descent:minimize_cd", max_iter=200, needs=("blocks",),
           uses=("block_sweep",), stochastic=True),
    Solver("bcd", "blockwise coordinate descent (one attribute's weights at a time), elastic net / group",
           "spargel.solvers.coordinate_descent:minimize_bcd", max_iter=200, needs=("blocks",),
           uses=("block_sweep",), stochastic=True),
    Solver("fista", "accelerated proximal gradient; any penalty with a prox (group lasso)",
           "spargel.solvers.proximal:minimize_fista", max_iter=2000, needs=("loss_grad",)),
    Solver("bound", "bound majorisation (Jebara & Choromanska): few, monotone steps on a quadratic upper bound; "
                    "l2 / elastic net", "spargel.solvers.bound:minimize_bound", max_iter=100, needs=("bound",)),
    Solver("grafting-light", "Grafting-Light: one OWL-QN step over a growing working set, then the most violating "
                             "features join it; structure learning",
           "spargel.solvers.grafting:minimize_grafting_light", max_iter=2000, needs=("loss_grad",),
           uses=("grafting",)),
    Solver("grafting", "Grafting: the working set re-optimised by OWL-QN after every selection",
           "spargel.solvers.grafting:minimize_grafting", max_iter=5000, needs=("loss_grad",), uses=("grafting",)),
    Solver("gauss-seidel", "Gauss-Seidel: the most violating features optimised with the others fixed",
           "spargel.solvers.grafting:minimize_gauss_seidel", max_iter=5000, needs=("loss_grad",),
           uses=("grafting", "blocks")),
    Solver("ap", "averaged perceptron (CRFsuite's 'ap'): MAP decoding and additive updates, averaged; no penalty",
           "spargel.solvers.online_margin:minimize_ap", max_iter=100, needs=("map",), stochastic=True,
           warn_at_max_iter=False),
    Solver("pa", "passive-aggressive, types 0 / I / II (CRFsuite's 'pa'); no penalty",
           "spargel.solvers.online_margin:minimize_pa", max_iter=100, needs=("map",), stochastic=True,
           warn_at_max_iter=False),
    Solver("arow", "AROW, adaptive regularisation of weight vectors (CRFsuite's 'arow'); no penalty",
           "spargel.solvers.online_margin:minimize_arow", max_iter=100, needs=("map",), stochastic=True,
           warn_at_max_iter=False),
    Solver("l2sgd", "CRFsuite's 'l2sgd': per-sample SGD with an l2 penalty, step 1 / (lambda (t0 + t)), "
                    "t0 calibrated", "spargel.solvers.l2sgd:minimize_l2sgd", max_iter=1000, needs=("sgd",),
           stochastic=True,
           refuses_l1="is CRFsuite's SGD with an l2 penalty only (CRFsuite has no l1 term there): set l1=0, "
                      "or use solver='sgd-l1' for l1 / elastic-net penalties"),
    Solver("mira", "CRF++'s MIRA: single-best, cost-sensitive (margin = wrong tokens), steps bounded by C, "
                   "shrinking; no penalty", "spargel.solvers.online_margin:minimize_mira", max_iter=100,
           needs=("map",), stochastic=True, cli_options=(("mira_c", "c"), ("shrinking_size", "shrinking_size"))),
    Solver("rprop", _RPROP_DOC, "spargel.solvers.rprop:minimize_rprop", max_iter=500, needs=("loss_grad",),
           cli_options=_RPROP_CLI),
    Solver("rprop+", "the same as 'rprop' (Wapiti's spelling)", "spargel.solvers.rprop:minimize_rprop",
           max_iter=500, needs=("loss_grad",), cli_options=_RPROP_CLI),
    Solver("rprop-", "Wapiti's 'rprop-': Rprop without backtracking", "spargel.solvers.rprop:minimize_rprop_minus",
           max_iter=500, needs=("loss_grad",), cli_options=_RPROP_CLI),
    # -- on a covariance matrix (Gaussian MRFs, spargel.gaussian.solve) ---------------------
    # tol: the relative duality gap; the Newton methods converge superlinearly, so their
    # last digits are cheap and they stop where K agrees with other exact solvers to about
    # 1e-7 (docs/gaussian.md, "The default stop"); the first-order projected gradients stop earlier
    Solver("newton-cg", "orthant-wise Newton with preconditioned conjugate-gradient directions (the default "
                        "for l1)", "spargel.gaussian.newton_cg:newton_cg", max_iter=100, tol=1e-10,
           works_on="covariance"),
    Solver("newton-cd", "orthant-wise Newton with coordinate-descent directions (QUIC-like)",
           "spargel.gaussian.newton_cd:newton_cd", max_iter=100, tol=1e-10, works_on="covariance"),
    Solver("projected-gradient", "projected gradient on the dual (Duchi et al.'s Algorithm 1; Algorithm 3, "
                                 "'block-l1', with blocks)",
           "spargel.gaussian.projected_gradient:projected_gradient", max_iter=1000, tol=1e-6,
           works_on="covariance", with_blocks="block-l1"),
    Solver("sparse-newton-cg", "from the data matrix only: orthant-wise Newton-CG on the screened sparse pattern "
                               "with a sparse LDL^T factor, never a p x p matrix ('auto' takes it for large "
                               "components with sparse screened graphs); tol bounds the largest subgradient entry",
           "spargel.gaussian.sparse_newton:solve_component_sparse", max_iter=100, tol=1e-7, works_on="covariance",
           from_data_only=True),
    Solver("block-l1", "projected gradient on the dual of a block-l1 penalty (Duchi et al.'s Algorithm 3; run by "
                       "'projected-gradient' and 'auto' when there are blocks)",
           "spargel.gaussian.block_l1:block_l1_projected_gradient", max_iter=2000, tol=1e-6, works_on="covariance",
           public=False),
)

_BY_NAME = {s.name: s for s in SOLVER_TABLE}


def solver_names(works_on="model"):
    """The names users may give for solvers of that kind, in table order."""
    return [s.name for s in SOLVER_TABLE if s.works_on == works_on and s.public]


def solver(name, works_on="model"):
    """The record of solver ``name`` (a :class:`~spargel.errors.ParameterError` naming the
    choices when there is none)."""
    record = _BY_NAME.get(name)
    if record is None or record.works_on != works_on:
        raise ParameterError(f"unknown solver {name!r}; choose one of {', '.join(solver_names(works_on))}")
    return record


def solvers_for(capabilities, *, nothing_else=False):
    """The public model solvers that a model offering ``capabilities`` can run (with
    ``nothing_else``: those that use nothing of the model beyond ``capabilities``, not
    even a faster path; e.g. on the batch likelihood of a constrained CRF)."""
    offered = set(capabilities)
    return [s.name for s in SOLVER_TABLE
            if s.works_on == "model" and s.public and set(s.needs) <= offered
            and (not nothing_else or set(s.uses) <= offered)]
