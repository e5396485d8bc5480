"""CRFsuite's ``l2sgd``: stochastic gradient descent on the l2-penalised likelihood
with the Pegasos step size and CRFsuite's calibration of it, on any model with the
``"sgd"`` capability (:mod:`spargel.core.protocol`).

Objective ``sum_i loss_i(w) + l2 / 2 ||w||^2`` (CRFsuite: ``l2 = 2 c2``), i.e. per
sample ``loss_i + lambda / 2 ||w||^2`` with ``lambda = l2 / N``. Step ``t`` (samples
processed so far, across epochs) has the rate ``eta_t = 1 / (lambda (t0 + t))``; it
shrinks the weights by ``1 - eta_t lambda`` (one lazy scale factor) and moves them by
``-eta_t`` times the sample's gradient. There is no l1 part (CRFsuite has none): a
penalty with one is refused (:mod:`spargel.solvers.sgd` handles l1).

Calibration of ``t0`` (CRFsuite's, after Bottou's sgd): the samples are shuffled once
and the first ``calibration_samples`` form the calibration set; from ``eta =
calibration_eta`` each trial runs one epoch over the set from zero weights with ``t0 =
1 / (lambda eta)`` and compares its loss (the per-sample losses met during the epoch
plus the penalty of the final weights, ``lambda / 2 ||w||^2`` per sample) with the loss
of zero weights. While trials succeed ``eta`` is multiplied by ``calibration_rate``;
after the first failure (or ``calibration_candidates`` successes) it restarts from
``calibration_eta / rate`` and divides by the rate until ``calibration_candidates``
further trials succeed; at most ``calibration_max_trials`` trials in all. The eta of
the lowest loss wins.

Stopping (CRFsuite): after ``max_iter`` epochs (default 1000), or when the relative
improvement of the epoch's loss over the one ``window`` (CRFsuite's ``period``, 10)
epochs earlier falls below ``tol`` (CRFsuite's ``delta``). The weights of the epoch
with the lowest loss are returned. One difference in rounding: the sample's gradient
is taken at the weights before the step's shrink (CRFsuite takes it after).
"""

import math

import numpy as np

from ..core import lazy_l1 as K
from ..core.protocol import require
from .base import HistoryRecorder, SolverResult, check_start
from .sgd import _penalty_arrays, _rng


def _prm(t0, lam, N, l2, l1):
    return K.sgd_params(1.0 / (lam * t0), t0, K.PEGASOS, K.CUMULATIVE, N, l2, 1, l1)


class _Epochs:
    def __init__(self, model, penalty):
        self.model = model
        self.penalty = penalty
        self.n = int(model.n_params)
        self.N = int(model.n_samples)
        self.l1w, self.l1, self.m, self.l2 = _penalty_arrays(penalty, self.n)
        if not self.l2 > 0:
            raise ValueError("solver 'l2sgd' needs an l2 penalty > 0 (CRFsuite's c2 > 0): its step size is "
                             "1 / (lambda (t0 + t)) with lambda = l2 / N")
        self.lam = self.l2 / self.N
        if self.l1 > 0 or np.any(self.l1w > 0):
            raise ValueError("solver 'l2sgd' has no l1 term (CRFsuite's l2sgd is l2 only): use solver 'sgd-l1' "
                             "for l1 / elastic-net penalties")

    def fresh(self, w0):
        return w0.copy(), np.zeros(self.n), K.new_state()

    def epoch(self, order, v, aux, st, t0):
        """One epoch over ``order``; returns the online loss + the penalty at its end (inf
        when it diverged); v holds the settled weights."""
        st[K.ONLINE_LOSS] = 0.0
        status = self.model.sgd_pass(order, v, aux, self.l1w, self.m, st, _prm(t0, self.lam, self.N, self.l2,
                                                                               self.l1))
        K.settle_all(v, aux, self.l1w, self.l1, self.m, st, K.CUMULATIVE)
        online = float(st[K.ONLINE_LOSS])
        if status != 0 or not math.isfinite(online):
            return math.inf, online
        return online + self.penalty.value(v) * len(order) / self.N, online


def calibrate_t0(run, w0, rng, eta0=0.1, rate=2.0, samples=1000, candidates=10, max_trials=20):
    """CRFsuite's calibration (see the module documentation). Returns ``(t0, trials)``
    with the (eta, loss) pairs tried."""
    order = rng.permutation(run.N).astype(np.int64)[:min(run.N, int(samples))]
    init = run.model.sample_loss(order, w0) + run.penalty.value(w0) * len(order) / run.N
    num, dec, trials = int(candidates), False, 1
    eta, best_eta, best = eta0, eta0, math.inf
    table = []
    while num > 0 or not dec:
        t0 = _t0_of(run.lam, eta)
        if t0 is None:   # eta overflowed or underflowed (a huge calibration_rate): a failed trial
            loss = math.inf
        else:
            v, aux, st = run.fresh(w0)
            loss, _ = run.epoch(order, v, aux, st, t0)
        table.append((eta, loss))
        ok = math.isfinite(loss) and loss < init
        if ok:
            num -= 1
        if math.isfinite(loss) and loss < best:
            best, best_eta = loss, eta
        if not dec:
            if ok and num > 0:
                eta *= rate
            else:
                dec, num, eta = True, int(candidates), eta0 / rate
        else:
            eta /= rate
        trials += 1
        if trials >= max_trials:
            break
    t0 = _t0_of(run.lam, best_eta)
    if t0 is None:
        raise ValueError(f"calibration_eta={eta0!r} gives no usable step size with lambda={run.lam:g}; "
                         f"choose another calibration_eta (CRFsuite's default is 0.1)")
    return t0, table


def _t0_of(lam, eta):
    """``t0 = 1 / (lambda eta)``, or None when it or the first rate ``1 / (lambda t0)``
    is not a finite positive number (an eta of 0 or inf after many calibration steps)."""
    if not (0.0 < lam * eta < math.inf):
        return None
    t0 = 1.0 / (lam * eta)
    return t0 if _usable_t0(lam, t0) else None


def _usable_t0(lam, t0):
    return 0.0 < t0 < math.inf and 0.0 < lam * t0 and 1.0 / (lam * t0) < math.inf


def _positive(name, value, integer=False, above=0.0):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if integer and int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not (math.isfinite(float(value)) and value > above):
        raise ValueError(f"{name} must be a finite number > {above:g}, got {value!r}")
    return int(value) if integer else float(value)


def minimize_l2sgd(model, penalty, w0=None, *, max_iter=1000, tol=1e-6, gtol=None, window=10, monitor=None,
                   calibration_eta=0.1, calibration_rate=2.0, calibration_samples=1000, calibration_candidates=10,
                   calibration_max_trials=20, t0=None, random_state=None, shuffle=True):
    """CRFsuite's l2sgd (see the module documentation); one iteration is one epoch.
    Options: the ``calibration_*`` settings (CRFsuite's defaults), ``t0`` (skips the
    calibration), ``random_state``, ``shuffle`` (True). History rows: ``objective`` is the
    epoch's online objective (the per-sample losses met during the epoch plus the
    penalty at its end), plus ``eta`` (the rate of the epoch's last step) and ``t0``."""
    require(model, "l2sgd", "sgd")
    eta0 = _positive("calibration_eta", calibration_eta)
    rate = _positive("calibration_rate", calibration_rate, above=1.0)
    samples = _positive("calibration_samples", calibration_samples, integer=True)
    cands = _positive("calibration_candidates", calibration_candidates, integer=True)
    trials = _positive("calibration_max_trials", calibration_max_trials, integer=True)
    period = _positive("window", window, integer=True)
    max_iter = int(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    w = check_start(model, w0)
    run = _Epochs(model, penalty)
    rng = _rng(random_state)
    history = HistoryRecorder(monitor)
    if t0 is None:
        t0, _ = calibrate_t0(run, w, rng, eta0, rate, samples, cands, trials)
    else:
        t0 = _positive("t0", t0)
        if not _usable_t0(run.lam, t0):
            raise ValueError(f"t0={t0!r} gives no usable step size with lambda={run.lam:g} "
                             f"(the first rate 1 / (lambda t0) overflows)")
    v, aux, st = run.fresh(w)
    best, best_w = math.inf, v.copy()
    # every epoch's loss: the tol test looks `period` epochs back (a ring of `period`
    # entries would be an allocation sized by an option before any epoch ran)
    past = []
    stop = "max_iter"
    tol = 0.0 if tol is None else float(tol)
    try:
        for epoch in range(1, max_iter + 1):
            order = rng.permutation(run.N) if shuffle else np.arange(run.N)
            F, online = run.epoch(order.astype(np.int64), v, aux, st, t0)
            if not math.isfinite(F):
                raise FloatingPointError(f"l2sgd diverged (non-finite loss) in epoch {epoch} with t0={t0:g}; "
                                         f"lower calibration_eta or give t0")
            if F < best:
                best, best_w = F, v.copy()
            improvement = (past[epoch - 1 - period] - F) / F if epoch > period else tol
            past.append(F)
            eta = 1.0 / (run.lam * (t0 + st[K.SAMPLES] - 1))
            if history.record(epoch, F, online, F - online, v, epoch, eta=eta, t0=t0):
                stop = "callback"
                break
            if improvement < tol:
                stop = "tol"
                break
    except KeyboardInterrupt:
        stop = "interrupted"
        K.settle_all(v, aux, run.l1w, run.l1, run.m, st, K.CUMULATIVE)
        if math.isinf(best):
            best_w = v.copy()
    if math.isinf(best):
        best_w = v.copy()
    return SolverResult(w=best_w, objective=best, n_iter=len(history.rows), n_evals=len(history.rows),
                        stop_reason=stop, history=history.rows)
