"""SGD-L1: stochastic gradient descent with the cumulative l1 penalty
(Tsuruoka, Tsujii & Ananiadou 2009), plus the two baselines of the paper.

Minimises ``sum_i loss_i(w) + l1 * ||w||_1 + l2 / 2 * ||w||^2`` over the N samples of
any model with the ``"sgd"`` capability (:mod:`spargel.core.protocol`): the model
runs a compiled pass over a list of samples (``model.sgd_pass``), built from the shared
bookkeeping of :mod:`spargel.core.lazy_l1`, and sums per-sample losses
(``model.sample_loss``). Each step visits ``batch_size`` samples and takes

    w <- (1 - eta * B * l2 / N) * w - eta * sum_{i in batch} grad loss_i(w)

followed by the l1 penalty of the step, ``eta * B * l1 / N`` per weight, applied as
chosen by ``penalty_update``:

``"cumulative"`` (default; the paper's Figure 2)
    the penalty u that every weight could have received so far is accumulated, and
    each weight q_i that it actually received; a touched weight is pulled towards zero
    by ``u + q_i`` (positive) or ``u - q_i`` (negative), never across zero.
``"clipping"``
    Carpenter's lazy update: a touched weight receives the penalty accrued since it was
    last touched, clipped at zero.
``"naive"``
    the sub-gradient ``eta * l1 / N * sign(w_i)`` on every weight at every step (cost
    proportional to the model size per step, as the paper describes).

The lazy variants only touch the weights of the current samples. Before a sample's
gradient is computed, its weights are brought up to date with the penalty they accrued
while untouched, so the lazy runs give the same weights as applying the penalty to every
weight at every step (the eager formulation), and afterwards the step's gradient and
penalty are applied; see ``docs/sgd.md``. The l2 part is an O(1) scale factor.

Learning rate at sample counter k (samples processed so far, across passes):

* ``"exponential"`` (default): ``eta0 * alpha ** (k / N)`` (paper eq. 6, written with
  alpha < 1). The default ``alpha=None`` spreads the decay over the run:
  ``alpha = 0.85 ** (30 / max_iter)``, which is the paper's 0.85 for its 30 passes and
  ends every run at the same fraction of eta0 (0.85^30 = 0.0076), so a longer run keeps
  a useful rate until its end and gets closer to the optimum (with a fixed alpha the
  rate fades geometrically and after some hundred passes the weights freeze wherever
  they are; the history says so: ``rate_frozen``). ``partial_fit`` uses 0.85;
* ``"inverse"``:     ``eta0 / (1 + k / N)`` (paper eq. 5);
* ``"constant"``:    ``eta0``.

``eta0=None`` calibrates it (see :func:`calibrate_eta0`).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..core import lazy_l1 as K
from ..core.protocol import require
from .base import HistoryRecorder, SolverResult, check_start, require_separable

PENALTY_UPDATES = {"naive": K.NAIVE, "clipping": K.CLIPPING, "cumulative": K.CUMULATIVE}
SCHEDULES = {"exponential": K.EXPONENTIAL, "inverse": K.INVERSE, "constant": K.CONSTANT}
PAPER_ALPHA, PAPER_PASSES = 0.85, 30
FROZEN_RATE = 1e-12            # a rate below this times eta0 no longer moves the weights
CALIBRATION_CANDIDATES = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)


# --------------------------------------------------------------------------- options
@dataclass
class SGDOptions:
    penalty_update: str = "cumulative"
    schedule: str = "exponential"
    eta0: float | None = None
    alpha: float | None = None
    batch_size: int = 1
    shuffle: bool = True
    compute_objective: bool = False
    calibration_samples: int = 1000
    calibration_candidates: tuple = CALIBRATION_CANDIDATES
    n_samples: int | None = None
    random_state: object = None

    def __post_init__(self):
        if self.penalty_update not in PENALTY_UPDATES:
            raise ValueError(f"penalty_update must be one of {', '.join(PENALTY_UPDATES)}, "
                             f"got {self.penalty_update!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.eta0 is not None and not (np.isfinite(self.eta0) and self.eta0 > 0):
            raise ValueError(f"eta0 must be a positive number or None, got {self.eta0!r}")
        if self.alpha is not None and not (0 < float(self.alpha) <= 1):
            raise ValueError(f"alpha must be in (0, 1] or None, got {self.alpha!r}")
        if int(self.batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size!r}")
        if int(self.calibration_samples) < 1:
            raise ValueError("calibration_samples must be >= 1")
        cands = tuple(float(c) for c in self.calibration_candidates)
        if not cands or any(not (np.isfinite(c) and c > 0) for c in cands):
            raise ValueError("calibration_candidates must be positive numbers")
        self.calibration_candidates = cands
        if self.n_samples is not None and int(self.n_samples) < 1:
            raise ValueError("n_samples must be a positive integer or None")


def parse_options(options):
    unknown = set(options) - set(SGDOptions.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown option(s) for solver 'sgd-l1': {', '.join(sorted(unknown))}; "
                        f"valid: {', '.join(SGDOptions.__dataclass_fields__)}")
    return SGDOptions(**options)


# --------------------------------------------------------------------------- state
@dataclass
class SGDState:
    """Everything a run needs to continue exactly where it stopped (``partial_fit``).

    ``v`` are the weights (settled, so ``v`` is ``w`` between passes), ``aux`` the
    per-weight penalty bookkeeping (q_i of the cumulative rule, the accumulator value at
    the last settlement for clipping), ``st`` the pass's counters (:mod:`spargel.core.lazy_l1`:
    samples, shrink factor, accumulated penalties, online loss, log-space fallbacks).
    """
    v: np.ndarray
    aux: np.ndarray
    penalty_update: str
    st: np.ndarray = field(default_factory=K.new_state)
    eta0: float | None = None
    rng: np.random.Generator | None = None
    passes: int = 0
    n_seen: int = 0

    @classmethod
    def fresh(cls, w0, penalty_update, random_state=None, copy=True):
        """A new state from the weights w0 (taken over as they are with ``copy=False``)."""
        v = np.array(w0, dtype=np.float64, copy=True) if copy else np.asarray(w0, dtype=np.float64)
        return cls(v, np.zeros(len(w0)), penalty_update,
                   rng=_rng(random_state))

    @property
    def samples(self):
        return int(self.st[K.SAMPLES])

    def grow(self, n_new, new_index):
        """Move to a larger parameter layout: old weight i goes to ``new_index[i]``; new
        weights start at zero with no penalty history (as untouched weights do)."""
        v, aux = np.zeros(n_new), np.zeros(n_new)
        v[new_index] = self.v
        aux[new_index] = self.aux      # (a new weight is zero: its clipping mark does not matter)
        self.v, self.aux = v, aux


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2 ** 31))
    return np.random.default_rng(random_state)


def _penalty_arrays(penalty, n):
    """(l1 per weight or empty, uniform l1, l2 mask or empty, l2 value). The l2 part must
    be one value on the l2-penalised weights (it is applied as one global scale factor)."""
    require_separable(penalty, "sgd-l1")
    uni = penalty.uniform()
    if uni is not None:
        return np.zeros(0), uni[0], np.zeros(0), uni[1]
    l1, l2 = penalty.per_weight(n)
    l1w, l1s = (np.zeros(0), float(l1[0])) if np.all(l1 == l1[0]) else (l1, 0.0)
    levels = np.unique(l2[l2 > 0])
    if len(levels) == 0:
        return l1w, l1s, np.zeros(0), 0.0
    if len(levels) > 1:
        raise ValueError("solver 'sgd-l1' needs one l2 value for all l2-penalised weights (it applies l2 as a "
                         "single lazy scale factor); per-weight l2 with several values is not supported")
    mask = np.array(l2 > 0, dtype=np.float64)
    if mask.all():
        return l1w, l1s, np.zeros(0), float(levels[0])
    return l1w, l1s, mask, float(levels[0])


def _prm(opts, eta0, N, l2, l1):
    return K.sgd_params(eta0, opts.alpha, SCHEDULES[opts.schedule], PENALTY_UPDATES[opts.penalty_update], N, l2,
                        int(opts.batch_size), l1)


def _check_l2(eta0, opts, N, l2):
    if l2 > 0 and eta0 * int(opts.batch_size) * l2 / N >= 1.0:
        raise ValueError(f"eta0 * batch_size * l2 / N = {eta0 * int(opts.batch_size) * l2 / N:.3g} >= 1: the l2 "
                         f"shrink factor would not be positive; lower eta0 or l2")


# --------------------------------------------------------------------------- calibration
def calibrate_eta0(model, N, penalty, l1w, l1, m, l2, w0, opts, rng):
    """Choose eta0 on a random sample of ``calibration_samples`` sequences.

    Each candidate rate (``calibration_candidates``, default 1, 0.5, 0.2, 0.1, ..., 0.001)
    runs one pass of the configured variant and schedule over the sample from the
    initial weights; the sample objective ``sum_{i in sample} loss_i + (n / N) * R(w)``
    is then evaluated, and the candidate with the lowest value that improves on the
    initial one wins. When none improves, ten times smaller rates are tried (up to five
    times). Returns ``(eta0, table)`` with the (rate, objective) pairs tried.
    """
    n_seq = model.n_samples
    size = min(n_seq, int(opts.calibration_samples))
    sample = np.sort(rng.choice(n_seq, size=size, replace=False)) if size < n_seq else np.arange(n_seq)
    sample = rng.permutation(sample).astype(np.int64)
    ratio = size / N

    def sample_objective(w):
        return model.sample_loss(sample, w) + ratio * penalty.value(w)

    f0 = sample_objective(w0)
    table = []
    best, best_f = None, f0
    candidates = list(opts.calibration_candidates)
    v, aux = np.empty(len(w0)), np.empty(len(w0))      # one pair of buffers for every trial
    for extra in range(6):
        for eta in candidates:
            if l2 > 0 and eta * int(opts.batch_size) * l2 / N >= 1.0:
                continue
            st = K.new_state()
            np.copyto(v, w0)
            aux.fill(0.0)
            status = model.sgd_pass(sample, v, aux, l1w, m, st, _prm(opts, eta, N, l2, l1))
            K.settle_all(v, aux, l1w, l1, m, st, PENALTY_UPDATES[opts.penalty_update])
            f = sample_objective(v) if status == 0 else np.inf
            table.append((eta, f))
            if np.isfinite(f) and f < best_f:
                best, best_f = eta, f
        if best is not None:
            return best, table
        candidates = [c / 10.0 for c in candidates[-3:]]
    raise FloatingPointError("sgd-l1: no learning rate improved the objective on the calibration sample; "
                             "give eta0 explicitly")


# --------------------------------------------------------------------------- passes
class _Run:
    """The compiled-kernel view of one model + penalty + options."""

    def __init__(self, model, penalty, opts, N):
        require(model, "sgd-l1", "sgd")
        self.model = model
        self.n_params = int(model.n_params)
        self.N = float(N)
        self.opts = opts
        self.penalty = penalty
        self.l1w, self.l1, self.m, self.l2 = _penalty_arrays(penalty, self.n_params)
        self.variant = PENALTY_UPDATES[opts.penalty_update]
        self.n_seq = int(model.n_samples)

    def ensure_eta0(self, state):
        if state.eta0 is None:
            if self.opts.eta0 is not None:
                state.eta0 = float(self.opts.eta0)
            else:
                # (the state's weights are not moved by the calibration: no copy of them)
                state.eta0, self.calibration = calibrate_eta0(
                    self.model, self.N, self.penalty, self.l1w, self.l1, self.m, self.l2, state.v,
                    self.opts, state.rng)
        _check_l2(state.eta0, self.opts, self.N, self.l2)

    def one_pass(self, state):
        """One pass over all samples (shuffled unless shuffle=False); settles all weights
        at the end. Returns the sum of the per-sample losses seen during the pass."""
        order = state.rng.permutation(self.n_seq) if self.opts.shuffle else np.arange(self.n_seq)
        order = order.astype(np.int64)
        state.st[K.ONLINE_LOSS] = 0.0
        status = self.model.sgd_pass(order, state.v, state.aux, self.l1w, self.m, state.st,
                                     _prm(self.opts, state.eta0, self.N, self.l2, self.l1))
        K.settle_all(state.v, state.aux, self.l1w, self.l1, self.m, state.st, self.variant)
        if status != 0:
            raise FloatingPointError(f"sgd-l1 diverged (non-finite loss) with eta0={state.eta0:g}; lower eta0")
        state.passes += 1
        return float(state.st[K.ONLINE_LOSS])

    def loss(self, w):
        """sum_i loss_i(w) over all samples (one thread, no gradient)."""
        return float(self.model.sample_loss(np.arange(self.n_seq, dtype=np.int64), w))

    def rate(self, state):
        return float(K.learning_rate(state.eta0, float(self.opts.alpha), SCHEDULES[self.opts.schedule],
                                     state.st[K.SAMPLES], self.N))


def minimize_sgd_l1(model, penalty, w0=None, *, max_iter=30, tol=1e-5, gtol=None, window=10, monitor=None,
                    **options):
    """Minimise ``sum_i loss_i(w) + penalty(w)`` by SGD-L1; one iteration is one pass.

    Options (``solver_options`` of the estimators): ``penalty_update`` ("cumulative",
    "clipping", "naive"), ``schedule`` ("exponential", "inverse", "constant"), ``eta0``
    (None: calibrated), ``alpha`` (0.85), ``batch_size`` (1), ``shuffle`` (True),
    ``compute_objective`` (False), ``calibration_samples`` (1000),
    ``calibration_candidates``, ``random_state``. ``n_samples`` is ignored here (the
    objective sums over the model's samples).

    Stopping: ``max_iter`` passes; ``tol``: the relative decrease of the objective over
    the last ``window`` passes fell below ``tol`` (the full objective when
    ``compute_objective``, else the pass's online objective: the sum of the per-sample
    losses met during the pass plus the penalty at its end) -- not with the default
    decay (``alpha=None``), which is planned over ``max_iter`` passes: before its end a
    flat objective is the noise floor of the current rate, and stopping there leaves the
    weights far from the optimum; Ctrl-C (``interrupted``,
    after the current pass); the monitor (``callback``). ``gtol`` is ignored (SGD has no
    exact gradient). History rows: one per pass; ``objective`` and ``loss`` are NaN when
    ``compute_objective`` is off (``penalty``, ``active`` are always exact), plus ``eta``
    (rate of the last step), ``eta0``, ``online_loss`` and ``samples``.
    """
    opts = parse_options(options)
    # the default decay is planned over max_iter passes: a plateau of the objective
    # before its end is the noise floor of the current rate, not convergence
    planned = opts.alpha is None and opts.schedule == "exponential"
    if opts.alpha is None:
        opts.alpha = PAPER_ALPHA ** (PAPER_PASSES / max(int(max_iter), 1))
    require(model, "sgd-l1", "sgd")
    run = _Run(model, penalty, opts, model.n_samples)
    # weight-sized vectors: the weights v and their penalty records aux (the state), the
    # calibration's trial pair, and the model's pass buffers (none when its padded rows
    # are the weights' own rows, crf.full_rows)
    state = SGDState.fresh(check_start(model, w0), opts.penalty_update, opts.random_state, copy=False)
    run.ensure_eta0(state)
    history = HistoryRecorder(monitor)
    objectives = []
    stop = "max_iter"
    try:
        for it in range(1, int(max_iter) + 1):
            online = run.one_pass(state)
            w = state.v
            pen = penalty.value(w)
            if opts.compute_objective:
                loss = run.loss(w)
                F = loss + pen
                tracked = F
            else:
                loss = F = math.nan
                tracked = online + pen
            objectives.append(tracked)
            rate = run.rate(state)
            if history.record(it, F, loss, pen, w, state.passes, eta=rate, eta0=state.eta0,
                              online_loss=online, samples=state.samples,
                              rate_frozen=bool(rate < FROZEN_RATE * state.eta0)):
                stop = "callback"
                break
            if (tol > 0 and not planned and it > window
                    and (objectives[-1 - window] - tracked) / max(abs(tracked), 1.0) < tol):
                stop = "tol"
                break
    except KeyboardInterrupt:
        stop = "interrupted"
        K.settle_all(state.v, state.aux, run.l1w, run.l1, run.m, state.st, run.variant)
    w = state.v                 # (the state is this solver's own: no copy of it)
    state.aux = None
    F = run.loss(w) + penalty.value(w)
    return SolverResult(w=w, objective=F, n_iter=state.passes, n_evals=state.passes, stop_reason=stop,
                        history=history.rows)


def sgd_partial_pass(model, penalty, state, n_samples, **options):
    """One pass over ``model``'s samples continuing ``state`` (schedule counter, penalty
    accumulators, q_i, random generator): the engine of ``partial_fit``. ``n_samples``
    is the N of the objective (the per-sample penalty is l1 / N). Returns the history
    row (a dict) of the pass; the weights are ``state.v``."""
    opts = parse_options(options)
    if opts.alpha is None:
        opts.alpha = PAPER_ALPHA
    if state.penalty_update != opts.penalty_update:
        raise ValueError(f"penalty_update changed from {state.penalty_update!r} to {opts.penalty_update!r} "
                         f"between partial_fit calls")
    if len(state.v) != model.n_params:
        raise ValueError("the SGD state does not match the model's parameter layout")
    run = _Run(model, penalty, opts, n_samples)
    run.ensure_eta0(state)
    online = run.one_pass(state)
    w = state.v
    pen = penalty.value(w)
    rate = run.rate(state)
    return {"iteration": state.passes, "objective": math.nan, "loss": math.nan, "penalty": float(pen),
            "active": int(np.count_nonzero(w)), "n_evals": state.passes, "eta": rate,
            "eta0": state.eta0, "online_loss": online, "samples": state.samples,
            "chunk_sequences": run.n_seq, "rate_frozen": bool(rate < FROZEN_RATE * state.eta0)}
