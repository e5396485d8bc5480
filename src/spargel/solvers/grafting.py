"""Incremental l1 solvers: Grafting-Light, Grafting and Gauss-Seidel.

All three minimise ``L(w) + R(w)`` (a model's loss and a separable penalty, l1 or
elastic net) while touching only part of the weights at a time. They keep a *working
set* ``S`` of weights, take OWL-QN steps over ``S`` (the curvature memory and the
projected line search of :mod:`spargel.solvers.owlqn`) and bring in the weights that
violate the optimality conditions the most (eq. 3 of Zhu, Lao & Xing, *Grafting-Light*):
a zero weight ``k`` violates them when ``|dL/dw_k| > l1_k``.

``"grafting-light"`` (Algorithm 1 of the paper)
    one OWL-QN step over ``S``, then the ``select_unit`` (M) most violating weights
    outside ``S`` join it; repeat until no weight violates and the objective settles.
    Weights that the l1 term drives back to zero stay in ``S`` at zero ("redundant
    features fall out").
``"grafting"`` (Perkins, Lacker & Theiler 2003)
    the same selection, but ``S`` is re-optimised to convergence after every selection.
``"gauss-seidel"`` (Shevade & Keerthi 2003)
    the M most violating weights -- zero or not -- are optimised with all the others
    fixed, to convergence; then the next M. ``inner="owlqn"`` optimises them with the
    OWL-QN steps above; ``inner="blocks"`` with the model's block coordinate steps (the
    "blocks" capability: exact Newton steps on one block at a time, damped until the
    objective decreases), M then counting the model's blocks.

Every solver needs the ``"loss_grad"`` capability. A model may also offer
``"grafting"`` (:mod:`spargel.core.protocol`): ``loss_grad_subset(w, index)`` -- the
loss and the gradient of the weights ``index`` only -- and ``candidate_grad(index)`` --
the gradient of other weights at the point of the last ``loss_grad_subset`` call,
reusing its inference. Then the OWL-QN steps ask only for the working set's gradient
and the selection for the candidates' (a pairwise MRF estimates inactive edges from the
inference on its active graph; the log-linear model multiplies only the working set's
columns). Without it every evaluation is a full ``loss_grad``, whose gradient serves
both.

Unpenalised weights (l1 = 0: intercepts, MRF node biases) are in the working set from
the start. ``w0`` warm-starts: its non-zero weights start in the working set.

Options (``solver_options`` of the estimators):

``select_unit`` ("auto"; Gauss-Seidel: 1)
    M: weights (or groups, or blocks) added per selection; ``None`` puts every
    candidate in the working set at once (Grafting-Light is then OWL-QN, step for step).
    ``"auto"``: the square root of the number of candidates left (weights, or groups
    with ``select_by="group"``), rounded up -- one weight at a time is right for a few
    dozen candidates, but with 10^5 candidates and a few thousand weights in the
    solution it needs thousands of selections (and as many gradient evaluations)
    before the working set holds the solution's support; sqrt(n) brings it in within
    a few dozen selections while still picking only the strongest violators.
``select_by`` ("weight")
    "group": select whole groups of the model's layout (an MRF edge's table, a CRF
    attribute's label weights), ranked by their most violating weight.
``feature_batches`` (None)
    online feature selection: a sequence of index arrays (weights, or groups with
    ``select_by="group"``) that arrive one after the other. Only arrived weights are
    candidates; the next batch arrives when the solver has converged on those so far.
``memory`` (10), ``max_linesearch`` (40), ``c1`` (1e-4)
    as OWL-QN.
``inner`` ("auto"), ``max_inner`` (100), ``max_trials`` (12), ``max_step`` (2.0)
    Gauss-Seidel only: the inner optimiser ("auto": "blocks" when the model offers
    them), the block sweeps per selection, the damped retries of a block step and the
    largest change of one weight in one block step.

Stopping: ``gtol`` -- the pseudo-gradient over *every* weight (the working set's and
the candidates' violations) is at most ``gtol * max(1, ||w||)``; ``tol`` --
(Grafting-Light) the objective improved by less than a relative ``tol`` over ``window``
iterations, selections included: weights that join and do not move the objective are
selection noise, and the stop does not wait for the last of them (OWL-QN's rule over
every weight); (Grafting) the same over ``window`` iterations during which the working
set did not change, and no candidate violates; (Gauss-Seidel) over ``window``
selections; ``linesearch`` -- no decrease
over the working set and no candidate to add; ``max_iter`` (iterations = OWL-QN steps,
or block sweeps), ``interrupted``, ``callback``.

History rows add to the usual fields: ``working_set`` (weights in ``S``; for
Gauss-Seidel the weights ever optimised), ``selected`` (weights added in this
iteration), ``violating`` (candidates that violate), ``violation`` (their pseudo-
gradient norm), ``pg_norm`` (the pseudo-gradient norm over every weight where known)
and ``batches`` (feature batches arrived). ``n_evals`` counts loss-and-gradient
evaluations (``loss_grad`` / ``loss_grad_subset``) and, for block steps, the block
gradient evaluations (``block_evals`` on their own).

>>> res = minimize_grafting_light(model, ElasticNet(l1=1.0), select_unit=10)   # doctest: +SKIP
>>> res.history[-1]["working_set"], res.history[-1]["active"]                 # doctest: +SKIP
"""

import inspect
import math
from dataclasses import dataclass

import numpy as np

from ..core.vec import norm
from ..errors import CapabilityError
from ..core.protocol import approximate_loss, capabilities, convex_loss, require
from .base import HistoryRecorder, SolverResult, check_start, require_separable
from .owlqn import CurvatureMemory, orthant_line_search

MODES = {"grafting-light": "light", "grafting": "grafting", "gauss-seidel": "gauss-seidel"}


# --------------------------------------------------------------------------- candidates
class Candidates:
    """Which weights may be selected: the unit of selection (weights or groups), the
    batches of online feature selection and the unpenalised weights."""

    def __init__(self, model, penalty, select_by, feature_batches, name):
        n = int(model.n_params)
        self.n = n
        per_weight = getattr(penalty, "per_weight", None)
        if per_weight is None:
            raise CapabilityError(f"solver {name!r} needs an elastic-net penalty (l1 / l2), "
                                  f"not {type(penalty).__name__}")
        self.fixed = per_weight(n)[0] == 0                   # unpenalised: always in S
        if select_by not in ("weight", "group"):
            raise ValueError(f"select_by must be 'weight' or 'group', got {select_by!r}")
        self.by_group = select_by == "group"
        if self.by_group:
            self.group_ptr = model.layout.group_ptr
            self.group_of = model.layout.group_of()
        n_units = len(self.group_ptr) - 1 if self.by_group else n
        if feature_batches is None:
            self.batches = [None]
        else:
            self.batches = []
            for i, b in enumerate(feature_batches):
                b = np.asarray(b)
                if b.ndim != 1 or (len(b) and (b.dtype.kind not in "iu" or b.min() < 0 or b.max() >= n_units)):
                    unit = "groups" if self.by_group else "weights"
                    raise ValueError(f"feature_batches[{i}] must be a 1-d array of {unit} 0..{n_units - 1}")
                self.batches.append(b.astype(np.int64))
            if not self.batches:
                raise ValueError("feature_batches is empty")
        self.available = np.zeros(n, bool)
        self.arrived = 0
        self.arrive()

    def arrive(self):
        """The next batch arrives; returns False when there was none left."""
        if self.arrived >= len(self.batches):
            return False
        b = self.batches[self.arrived]
        self.arrived += 1
        if b is None:
            self.available[:] = True
        elif self.by_group:
            self.available[np.isin(self.group_of, b)] = True
        else:
            self.available[b] = True
        return True

    @property
    def pending(self):
        return self.arrived < len(self.batches)

    def top(self, index, violation, M, threshold=0.0):
        """The members of ``index`` (weights) to select: the M largest violations above
        ``threshold`` (whole groups with ``select_by="group"``, ranked by their largest),
        as positions into ``index``, sorted."""
        if M is None:
            return np.arange(len(index))
        if self.by_group:
            gid = self.group_of[index]
            gv = np.zeros(len(self.group_ptr) - 1)
            np.maximum.at(gv, gid, violation)
            groups = _largest(gv, M, threshold)
            return np.flatnonzero(np.isin(gid, groups))
        return _largest(violation, M, threshold)


def _largest(v, M, threshold):
    """Positions of the (at most) M largest entries of v above threshold, sorted; ties
    go to the lower position."""
    pos = np.flatnonzero(v > threshold)
    if len(pos) > M:
        order = np.lexsort((pos, -v[pos]))
        pos = pos[order[:M]]
    return np.sort(pos)


def _zero_violation(penalty, index, n, g):
    """|pseudo-gradient| of zero weights ``index`` with loss gradient g (the l2 term
    vanishes at zero): how much each violates the optimality conditions."""
    pen = penalty.subset(index, n)
    return np.abs(pen.pseudo_gradient(np.zeros(len(index)), g))


# --------------------------------------------------------------------------- the problem
class WorkingSet:
    """The weights, the working set and the model evaluations of the incremental solvers.

    ``ws`` (the working set's weight ids) never changes in place: a selection makes a
    new array, so models may cache per working set (by identity). The compact vectors
    ``x`` (weights), ``g`` (objective gradient), ``gl`` (loss gradient), ``pg``
    (pseudo-gradient) follow ``ws``; ``w`` is the full weight vector (outside ``ws`` it
    holds the fixed weights: zero, except for Gauss-Seidel).
    """

    def __init__(self, model, penalty, w, subset, memory):
        self.model, self.penalty, self.subset = model, penalty, subset
        self.n = int(model.n_params)
        self.w = w
        self.ws = np.zeros(0, np.int64)
        self.in_ws = np.zeros(self.n, bool)
        self.x = self.g = self.gl = self.pg = np.zeros(0)
        self.pen = penalty.subset(self.ws, self.n)
        self.offset = 0.0                        # penalty of the weights outside ws
        self.pairs = CurvatureMemory(memory, 0)
        self.full_grad = None                    # last full loss gradient (no "grafting" capability)
        self.last_gl = None
        self.n_evals = 0
        self.loss = self.F = math.nan

    # evaluations ---------------------------------------------------------------------
    def evaluate(self, x):
        """(loss, objective, objective gradient over ws) at the weights x on ws."""
        w, ws = self.w, self.ws
        w[ws] = x
        self.n_evals += 1
        if self.subset:
            loss, gl = self.model.loss_grad_subset(w, ws)
            gl = np.array(gl, dtype=np.float64)
        else:
            loss, full = self.model.loss_grad(w)
            self.full_grad = full
            gl = full[ws]
        self.last_gl = gl
        g = np.array(gl, dtype=np.float64)          # (OWL-QN's arithmetic: add_smooth_grad in place)
        sv = self.pen.add_smooth_grad(x, g)
        return loss, loss + sv + self.pen.nonsmooth_value(x) + self.offset, g

    def settle(self, loss, F, g):
        """Accept the last evaluation (at ``self.x``)."""
        self.loss, self.F, self.g, self.gl = loss, F, g, self.last_gl
        self.pg = self.pen.pseudo_gradient(self.x, g)

    def reevaluate(self):
        self.settle(*self.evaluate(self.x))

    def loss_gradient(self, index):
        """Loss gradient of the weights ``index`` at the current point (where the last
        evaluation was)."""
        if self.subset:
            return np.array(self.model.candidate_grad(index), dtype=np.float64)
        return self.full_grad[index]

    # the working set -------------------------------------------------------------------
    def add(self, new, gl_new):
        """Append the weights ``new`` (loss gradient ``gl_new``) to the working set
        (Grafting, Grafting-Light); the curvature pairs are kept, the new weights being
        zero in them."""
        self._set(np.concatenate([self.ws, new]), gl_new, True)

    def swap(self, ws, gl):
        """Make ``ws`` the working set (Gauss-Seidel; ``gl``: its loss gradient); the
        curvature pairs are dropped."""
        self._set(np.asarray(ws, dtype=np.int64), gl, False)

    def _set(self, ws, gl_new, grows):
        k0 = len(self.ws)
        if grows:
            self.x = np.concatenate([self.x, self.w[ws[k0:]]])
            self.gl = np.concatenate([self.gl, gl_new])
        else:
            self.x = self.w[ws].copy()
            self.gl = np.asarray(gl_new, dtype=np.float64)
            self.pairs = CurvatureMemory(self.pairs.memory, 0)
        self.in_ws[self.ws] = False
        self.in_ws[ws] = True
        self.ws = ws
        self.pen = self.penalty.subset(ws, self.n)
        self.offset = self.outside_penalty()
        self.pairs.grow(len(ws))
        sg = self.pen.smooth_value_grad(self.x)[1]
        self.last_gl = self.gl
        self.settle(self.loss, self.F, self.gl + sg if sg is not None else self.gl.copy())

    def outside_penalty(self):
        out = np.flatnonzero(~self.in_ws)
        if not len(out) or not np.any(self.w[out]):
            return 0.0
        return self.penalty.subset(out, self.n).value(self.w[out])

    def restore(self):
        """Put the accepted weights back into w (after a failed or interrupted search)."""
        self.w[self.ws] = self.x

    # one OWL-QN step over the working set ------------------------------------------------
    def step(self, first, use_l1, max_linesearch, c1):
        """One orthant-wise quasi-Newton step over ws; returns the step length, or None
        when the line search found no decrease (the weights are then unchanged)."""
        k = len(self.ws)
        d = np.empty(k)
        x_new = np.empty(k)
        pg = self.pg
        self.pairs.direction(pg, d, use_l1)
        step = 1.0 / norm(pg) if not len(self.pairs) and first else 1.0
        result, step, _ = orthant_line_search(self.evaluate, self.x, d, pg, self.F, step, use_l1, x_new,
                                              max_linesearch, c1, self.g, approximate_loss(self.model),
                                              convex_loss(self.model))
        if result is None:
            self.restore()
            return None
        loss, F, g = result
        self.pairs.store(x_new, self.x, g, self.g)
        self.x = x_new
        self.settle(loss, F, g)
        return step


# --------------------------------------------------------------------------- selection
class Selector:
    """Step 2 of the incremental solvers: which weights join the working set."""

    def __init__(self, mode, P, cands, M, gtol):
        self.mode, self.P, self.cands, self.M, self.gtol = mode, P, cands, M, gtol
        self.violation = 0.0                     # pseudo-gradient norm of the candidates
        self.violating = 0
        self.ever = P.in_ws.copy()               # weights that have been in the working set

    def candidates(self):
        """Available weights outside the working set."""
        return np.flatnonzero(self.cands.available & ~self.P.in_ws)

    def __call__(self, converged):
        """Add (Grafting, Grafting-Light) or swap in (Gauss-Seidel) the most violating
        weights; returns how many were selected. When nothing is selected at a point
        where the solver has ``converged`` and feature batches are pending, batches
        arrive until one brings a violating weight."""
        picked = self.pick()
        while not picked and converged and self.cands.pending:
            self.cands.arrive()
            picked = self.pick()
        return picked

    def pick(self):
        return self.pick_swap() if self.mode == "gauss-seidel" else self.pick_add()

    def pick_add(self):
        P, n = self.P, self.P.n
        cand = self.candidates()
        self.violation, self.violating = 0.0, 0
        if not len(cand):
            return 0
        gl = P.loss_gradient(cand)
        v = _zero_violation(P.penalty, cand, n, gl)
        hot = v > 0
        self.violation = float(norm(v[hot])) if hot.any() else 0.0
        self.violating = int(hot.sum())
        M = self.M
        if M == "auto":
            M = auto_unit(len(np.unique(self.cands.group_of[cand])) if self.cands.by_group else len(cand))
        # a violation below the gtol threshold cannot hold up convergence, and a step on
        # it would be lost in the rounding of the objective (a line search down to 1e-12)
        pos = self.cands.top(cand, v, M, self.gtol * max(1.0, float(norm(P.x))))
        if not len(pos):
            return 0
        P.add(cand[pos], gl[pos])
        self.ever[cand[pos]] = True
        # the selected weights no longer count as violating candidates
        rest = np.ones(len(cand), bool)
        rest[pos] = False
        self.violation = float(norm(v[rest & hot])) if np.any(rest & hot) else 0.0
        self.violating = int(np.count_nonzero(rest & hot))
        return len(pos)

    def pick_swap(self):
        P, n, cands = self.P, self.P.n, self.cands
        w = P.w
        gl = np.empty(n)
        gl[P.ws] = P.gl
        others = np.flatnonzero(~P.in_ws)
        if len(others):
            gl[others] = P.loss_gradient(others)
        sg = P.penalty.smooth_value_grad(w)[1]
        pg = P.penalty.pseudo_gradient(w, gl + sg if sg is not None else gl)
        v = np.abs(pg)
        v[~cands.available | cands.fixed] = 0.0
        threshold = self.gtol * max(1.0, float(norm(w)))
        self.violation = float(norm(pg))
        self.violating = int(np.count_nonzero(v > threshold))
        pos = cands.top(np.arange(n), v, self.M, threshold)
        if not len(pos):
            return 0
        chosen = np.zeros(n, bool)
        chosen[pos] = True
        ws = np.flatnonzero(cands.fixed | chosen)
        P.swap(ws, gl[ws])
        self.ever[ws] = True
        return len(pos)


# --------------------------------------------------------------------------- the solvers
def _check_unit(select_unit):
    if select_unit is None or (isinstance(select_unit, str) and select_unit == "auto"):
        return select_unit
    if isinstance(select_unit, bool) or not isinstance(select_unit, (int, np.integer)) or select_unit < 1:
        raise ValueError(f"select_unit must be an integer >= 1, 'auto' or None (every candidate at once), "
                         f"got {select_unit!r}")
    return int(select_unit)


def auto_unit(n_candidates):
    """The ``select_unit="auto"`` of ``n_candidates`` candidates: ceil(sqrt(n)), at least 1.

    >>> auto_unit(1), auto_unit(50), auto_unit(10 ** 5)
    (1, 8, 317)
    """
    return max(1, math.isqrt(max(int(n_candidates) - 1, 0)) + 1)


def _relative_drop(values, k, window, F):
    return (values[k - window] - F) / max(abs(F), 1.0)


@dataclass(frozen=True)
class Stopping:
    """The options the three solvers share with every model solver, as the public
    keywords give them: the stopping rule (``max_iter``, ``tol``, ``gtol``, ``window``;
    see the module documentation) and the history callback ``monitor``."""
    max_iter: int
    tol: float
    gtol: float
    window: int
    monitor: object


def _incremental(name, model, penalty, w0, stopping, select_unit=1, select_by="weight", feature_batches=None,
                 memory=10, max_linesearch=40, c1=1e-4):
    """Grafting-Light, Grafting and Gauss-Seidel with OWL-QN steps (see the module doc)
    until ``stopping`` (:class:`Stopping`) says so."""
    max_iter, tol, gtol, window, monitor = (stopping.max_iter, stopping.tol, stopping.gtol, stopping.window,
                                            stopping.monitor)
    mode = MODES[name]
    require(model, name, "loss_grad")
    require_separable(penalty, name)
    M = _check_unit(select_unit)
    if mode == "gauss-seidel" and not isinstance(M, int):
        raise ValueError("solver 'gauss-seidel' needs select_unit >= 1")
    w = check_start(model, w0)
    n = model.n_params
    cands = Candidates(model, penalty, select_by, feature_batches, name)
    use_l1 = penalty.has_nonsmooth
    P = WorkingSet(model, penalty, w, "grafting" in capabilities(model), memory)
    history = HistoryRecorder(monitor)

    # start: the unpenalised weights, the warm start's support (and with M = None every
    # candidate); evaluated once
    P.ws = np.flatnonzero(cands.fixed | (w != 0) | (cands.available if M is None else False)).astype(np.int64)
    P.in_ws[P.ws] = True
    P.x = w[P.ws].copy()
    P.pen = penalty.subset(P.ws, n)
    P.offset = P.outside_penalty()
    P.pairs.grow(len(P.ws))
    P.reevaluate()
    if not np.isfinite(P.F):
        raise FloatingPointError("the objective is not finite at the initial weights")
    select = Selector(mode, P, cands, M, gtol)
    select(False)

    objectives = [P.F]                         # after every iteration
    outer = [P.F]                              # Gauss-Seidel: after every block
    last_change = 0                            # iteration of the last change of the working set
    stop, it = "max_iter", 0
    try:
        for it in range(1, max_iter + 1):
            if mode == "light":
                pg_norm = norm(P.pg)
                total = pg_norm if select.violation == 0.0 else math.hypot(pg_norm, select.violation)
                if total <= gtol * max(1.0, norm(P.x)):
                    if not select(True):
                        stop, it = "gtol", it - 1
                        break
                    last_change = it - 1
            elif it == 1 and norm(P.pg) <= gtol * max(1.0, norm(P.x)):
                # Grafting, Gauss-Seidel: the working set is optimal before any step (the
                # empty model under a large l1): select, or stop -- a first step from a
                # zero gradient has no length
                if not select(True):
                    stop, it = "gtol", it - 1
                    break
                last_change = it - 1
            step = P.step(it == 1, use_l1, max_linesearch, c1)
            converged = None
            if step is None:
                if mode != "gauss-seidel" and not len(select.candidates()) and not cands.pending:
                    stop, it = "linesearch", it - 1          # nothing left that could change
                    break
                P.reevaluate()       # the model's last evaluation was a rejected trial point
                converged = "linesearch"
            objectives.append(P.F)
            pg_ws = norm(P.pg)
            if converged is None and mode != "light" and pg_ws <= gtol * max(1.0, norm(P.x)):
                converged = "gtol"
            if converged is None and tol > 0 and (mode == "light" or it - last_change >= window) \
                    and it >= window and _relative_drop(objectives, it, window, P.F) < tol:
                converged = "tol"
            selected = 0
            if mode == "light" and converged == "tol" and not cands.pending:
                pass            # the objective settled, selections included: what is left is noise
            elif mode == "light" or converged is not None:
                selected = select(converged is not None)
            if mode == "gauss-seidel" and converged is not None:
                outer.append(P.F)
                k = len(outer) - 1
                if selected and tol > 0 and k >= window and _relative_drop(outer, k, window, P.F) < tol:
                    converged, selected = "tol", 0
                elif not selected:
                    converged = "gtol"
            if selected:
                last_change = it
            done = converged is not None and not selected
            row = {"step": 0.0 if step is None else step,
                   "working_set": int(select.ever.sum()) if mode == "gauss-seidel" else len(P.ws),
                   "selected": int(selected), "violating": select.violating, "violation": select.violation,
                   "pg_norm": math.hypot(pg_ws, select.violation) if mode == "light" else pg_ws,
                   "batches": cands.arrived}
            if history.record(it, P.F, P.loss, P.F - P.loss, w, P.n_evals, **row):
                stop = "callback"
                break
            if done:
                stop = converged
                break
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        P.restore()
        stop = "interrupted"
    return SolverResult(w=w.copy(), objective=P.F, n_iter=it, n_evals=P.n_evals, stop_reason=stop,
                        history=history.rows)


def minimize_grafting_light(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                            monitor=None, **options):
    """Grafting-Light (Zhu, Lao & Xing): one OWL-QN step over the working set, then the
    ``select_unit`` most violating weights join it (see the module documentation)."""
    options.setdefault("select_unit", "auto")
    return _incremental("grafting-light", model, penalty, w0, Stopping(max_iter, tol, gtol, window, monitor),
                        **options)


def minimize_grafting(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                      monitor=None, **options):
    """Grafting (Perkins, Lacker & Theiler): the working set is optimised to convergence
    (OWL-QN) after every selection of the ``select_unit`` most violating weights."""
    options.setdefault("select_unit", "auto")
    return _incremental("grafting", model, penalty, w0, Stopping(max_iter, tol, gtol, window, monitor), **options)


def minimize_gauss_seidel(model, penalty, w0=None, *, max_iter=1000, tol=1e-5, gtol=1e-5, window=10,
                          monitor=None, inner="auto", **options):
    """Gauss-Seidel (Shevade & Keerthi): the ``select_unit`` most violating weights (or
    blocks) are optimised with the others fixed, then the next ones (see the module
    documentation; ``inner`` picks the optimiser of a selection)."""
    if inner not in ("auto", "owlqn", "blocks"):
        raise ValueError(f"inner must be 'auto', 'owlqn' or 'blocks', got {inner!r}")
    if inner == "auto":
        inner = "blocks" if "blocks" in capabilities(model) else "owlqn"
    stopping = Stopping(max_iter, tol, gtol, window, monitor)
    if inner == "owlqn":
        unknown = set(options) & {"max_inner", "max_trials", "max_step"}
        if unknown:
            raise TypeError(f"option(s) {', '.join(sorted(unknown))} belong to inner='blocks'")
        return _incremental("gauss-seidel", model, penalty, w0, stopping, **options)
    return _gauss_seidel_blocks(model, penalty, w0, stopping, **options)


def _block_layout(model):
    """The model's blocks as (ptr, index): one block per attribute / feature where the
    model can say so (``group_blocks=False``), else its natural blocks."""
    try:
        params = inspect.signature(model.block_layout).parameters
    except (TypeError, ValueError):
        params = {}
    ptr, index = model.block_layout(**({"group_blocks": False} if "group_blocks" in params else {}))
    ptr = np.asarray(ptr, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if ptr.ndim != 1 or len(ptr) < 1 or ptr[0] != 0 or ptr[-1] != len(index) or np.any(np.diff(ptr) < 0):
        raise ValueError(f"{type(model).__name__}.block_layout() returned an inconsistent (ptr, index)")
    return ptr, index


def _gauss_seidel_blocks(model, penalty, w0, stopping, select_unit=1, feature_batches=None, max_inner=100,
                         max_trials=12, max_step=2.0, damping_factor=4.0):
    """Gauss-Seidel over the model's blocks: per selection, the loss gradient of every
    weight (one ``loss_grad``) ranks the blocks by their largest violation; the M worst
    (and the blocks of unpenalised weights) are swept with exact block steps --
    ``penalty.block_step`` on the block's gradient and curvature, damped until
    ``block_change`` says the objective decreased -- until their violation is below the
    threshold or a sweep no longer reduces it by a tenth, at most ``max_inner`` sweeps."""
    max_iter, tol, gtol, window, monitor = (stopping.max_iter, stopping.tol, stopping.gtol, stopping.window,
                                            stopping.monitor)
    name = "gauss-seidel"
    require(model, name, "loss_grad", "blocks")
    require_separable(penalty, name)
    M = _check_unit(select_unit)
    if M is None:
        raise ValueError("solver 'gauss-seidel' needs select_unit >= 1")
    if int(max_inner) < 1 or int(max_trials) < 1 or not max_step > 0 or not damping_factor > 1:
        raise ValueError("need max_inner >= 1, max_trials >= 1, max_step > 0 and damping_factor > 1")
    w = check_start(model, w0)
    n = model.n_params
    cands = Candidates(model, penalty, "weight", feature_batches, name)
    ptr, index = _block_layout(model)
    nb = len(ptr) - 1
    if len(index) != n or not np.array_equal(np.sort(index), np.arange(n)):
        raise ValueError(f"gauss-seidel with inner='blocks' needs blocks that cover every weight once; "
                         f"{type(model).__name__}.block_layout() does not")
    block_of = np.empty(n, np.int64)
    block_of[index] = np.repeat(np.arange(nb), np.diff(ptr))
    fixed_blocks = np.unique(block_of[cands.fixed])
    free = np.ones(nb, bool)
    free[fixed_blocks] = False
    blocks = [index[ptr[b]:ptr[b + 1]] for b in range(nb)]
    pens = {}
    damping = np.ones(nb)
    history = HistoryRecorder(monitor)
    ever = np.zeros(n, bool)
    n_evals = block_evals = 0

    def violations():
        nonlocal n_evals
        loss, gl = model.loss_grad(w)
        n_evals += 1
        sg = penalty.smooth_value_grad(w)[1]
        pg = penalty.pseudo_gradient(w, gl + sg if sg is not None else gl)
        v = np.abs(pg)
        v[~cands.available] = 0.0
        bv = np.zeros(nb)
        np.maximum.at(bv, block_of, v)
        return loss + penalty.value(w), loss, float(norm(pg)), bv

    def block_step(b):
        """One damped exact step on block b; returns its violation before the step."""
        nonlocal block_evals
        idx = blocks[b]
        pen = pens.get(b)
        if pen is None:
            pen = pens[b] = penalty.subset(idx, n)
        g, h = model.block_grad_hess(b)
        block_evals += 1
        g, h = np.asarray(g, dtype=np.float64), np.asarray(h, dtype=np.float64)
        old = w[idx].copy()
        viol = pen.optimality_violation(old, g)
        pen_old = pen.value(old)
        alpha = damping[b]
        for _ in range(int(max_trials)):
            new = pen.block_step(old, g, alpha * np.maximum(h, 1e-10), 0, len(idx))
            d = np.clip(new - old, -max_step, max_step)
            if not np.any(d):
                return viol, 0.0
            dobj = model.block_change(b, d) + pen.value(old + d) - pen_old
            if dobj <= 1e-13 * max(1.0, abs(F)):                      # (NaN fails)
                model.block_commit()
                w[idx] = old + d
                damping[b] = max(1.0, alpha / 2.0)
                return viol, dobj
            model.block_discard()
            alpha *= damping_factor
        damping[b] = alpha
        return viol, 0.0

    F, loss, pg_norm, bv = violations()
    if not np.isfinite(F):
        raise FloatingPointError("the objective is not finite at the initial weights")
    model.block_begin(w)
    outer = [F]
    stop, it = "max_iter", 0
    try:
        while it < max_iter:
            threshold = gtol * max(1.0, float(norm(w)))
            chosen = _largest(np.where(free, bv, 0.0), M, threshold)
            while not len(chosen) and cands.arrive():
                F, loss, pg_norm, bv = violations()
                chosen = _largest(np.where(free, bv, 0.0), M, threshold)
            if not len(chosen) and np.all(bv[fixed_blocks] <= threshold):
                stop = "gtol"
                break
            sweep_blocks = np.union1d(chosen, fixed_blocks)
            for b in sweep_blocks:
                ever[blocks[b]] = True
            start = float(np.max(bv[sweep_blocks]))
            worst_prev = math.inf
            stopped = False
            for _ in range(int(max_inner)):
                it += 1
                worst = 0.0
                for b in sweep_blocks:
                    viol, dobj = block_step(int(b))
                    worst = max(worst, viol)
                    F += dobj
                row = {"working_set": int(ever.sum()), "selected": len(chosen), "violation": start,
                       "inner_violation": worst, "block_evals": block_evals, "batches": cands.arrived}
                if history.record(it, F, F - penalty.value(w), penalty.value(w), w, n_evals + block_evals, **row):
                    stop, stopped = "callback", True
                    break
                if worst <= threshold or worst > 0.9 * worst_prev or it >= max_iter:
                    break
                worst_prev = worst
            if stopped:
                break
            F, loss, pg_norm, bv = violations()
            outer.append(F)
            k = len(outer) - 1
            if tol > 0 and k >= window and _relative_drop(outer, k, window, F) < tol and not cands.pending:
                stop = "tol"
                break
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        w[:] = model.block_weights()
        stop = "interrupted"
    return SolverResult(w=w.copy(), objective=float(F), n_iter=it, n_evals=n_evals + block_evals,
                        stop_reason=stop, history=history.rows)
