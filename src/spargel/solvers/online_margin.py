"""Online max-margin and perceptron trainers (CRFsuite's ``ap``, ``pa`` and ``arow``)
on any model with the ``"map"`` capability (:mod:`spargel.core.protocol`).

Each epoch visits the samples in a fresh random order; for each sample the model
decodes its MAP structure with the current weights and, when it differs from the gold
one in ``d > 0`` parts (tokens), the weights move along the difference
``delta = F(x, y) - F(x, y_map)`` of the two structures' feature counts:

``ap`` -- averaged perceptron (Collins 2002)
    ``w += delta``; the result is the average of the weights over all steps.
``pa`` -- passive-aggressive (Crammer et al. 2006)
    ``w += tau * delta`` with the cost ``s(y_map) - s(y) + sqrt(d)`` (``error_sensitive``)
    or ``+ 1``, and ``tau = cost / ||delta||^2`` (type 0), ``min(c, cost /
    ||delta||^2)`` (type I) or ``cost / (||delta||^2 + 1 / (2 c))`` (type II);
    averaged like the perceptron when ``averaging``.
``arow`` -- adaptive regularisation of weight vectors (Mejer & Crammer 2010)
    a mean ``w`` and a diagonal variance ``sigma`` (``variance`` at first):
    ``w += alpha sigma delta`` with ``alpha = cost / (gamma + sum sigma delta^2)``,
    the cost ``s(y_map) - s(y) + d``, then ``sigma <- 1 / (1 / sigma + delta^2 /
    gamma)``; no averaging.

The averages use the lazy trick (one extra vector, see
:mod:`spargel.core.online_rules`). Stopping follows CRFsuite: after ``max_iter``
epochs (CRFsuite's default 100), or when the epoch's loss divided by the number of
samples falls below ``epsilon`` (default 0, so only ``max_iter`` stops ``ap`` and
``pa``; ``arow`` stops at ``<= epsilon``, i.e. after an epoch without a mistake). The
loss is, per sample with a mistake, ``d / n_parts`` for the perceptron and the cost
for PA and AROW (sample weights multiply it). These trainers take no penalty: the
model's ``l1`` / ``l2`` must be 0. ``tol``, ``gtol`` and ``window`` are not used.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..core import online_rules as R
from ..core.protocol import require
from .base import HistoryRecorder, SolverResult, check_start

DEFAULT_MAX_ITER = 100


def _check_no_penalty(penalty, name):
    if penalty is None:
        return
    if not getattr(penalty, "separable", False):
        raise ValueError(f"solver {name!r} takes no penalty; got {type(penalty).__name__}")
    uni = penalty.uniform()
    if uni is not None:
        nonzero = uni[0] != 0 or uni[1] != 0
    else:
        l1, l2 = penalty.per_weight(len(penalty.scale) if penalty.scale is not None else 1)
        nonzero = bool(np.any(l1 != 0) or np.any(l2 != 0))
    if nonzero:
        raise ValueError(f"solver {name!r} takes no penalty (its regularisation is its own: "
                         f"averaging, the PA aggressiveness c, AROW's gamma); set l1=0 and l2=0")


def _number(name, value, positive=True):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0) or value < 0:
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
    return value


def _stopping_unused(solver, given):
    """Accept the keywords every model solver is given and these trainers do not use
    (``tol``, ``gtol``, ``window``: they stop by ``max_iter`` and ``epsilon``); refuse
    any other as Python refuses an unknown keyword.

    >>> _stopping_unused("minimize_ap", {"tol": 1e-5, "gtol": None, "window": 10})
    >>> _stopping_unused("minimize_ap", {"tolerance": 1e-5})
    Traceback (most recent call last):
    ...
    TypeError: minimize_ap() got an unexpected keyword argument 'tolerance'
    """
    for key in given:
        if key not in ("tol", "gtol", "window"):
            raise TypeError(f"{solver}() got an unexpected keyword argument {key!r}")


def _flag(name, value):
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be True or False (or 1 / 0), got {value!r}")


@dataclass(frozen=True)
class Epochs:
    """The options ``ap``, ``pa`` and ``arow`` share, as their public keywords give them
    (the driver checks them): epochs at most, the history callback, the stopping
    threshold on the loss per sample, the seed and whether each epoch draws a new order."""
    max_iter: int
    monitor: object
    epsilon: float
    random_state: object
    shuffle: bool


@dataclass(frozen=True)
class Update:
    """An online trainer's update rule (``core/online_rules``: ``AP``, ``PA`` or
    ``AROW``) with its checked settings; the PA ones are read by ``pa`` only, the AROW
    ones (``variance``, ``gamma``) by ``arow`` only."""
    rule: int
    averaging: bool
    pa_type: int = 1
    c: float = 1.0
    error_sensitive: bool = True
    variance: float = 1.0
    gamma: float = 1.0

    def parameters(self):
        """The compiled MAP pass's ``prm`` array."""
        return np.array([self.rule, self.pa_type, self.c, 1.0 if self.error_sensitive else 0.0, self.gamma],
                        dtype=np.float64)


def _run(name, model, penalty, w0, epochs, update):
    """One online trainer: ``epochs`` (:class:`Epochs`) passes of ``update``
    (:class:`Update`) over the samples."""
    max_iter, monitor, epsilon, random_state, shuffle = (epochs.max_iter, epochs.monitor, epochs.epsilon,
                                                         epochs.random_state, epochs.shuffle)
    rule, averaging = update.rule, update.averaging
    require(model, name, "map")
    _check_no_penalty(penalty, name)
    max_iter = int(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    epsilon = _number("epsilon", epsilon, positive=False)
    shuffle = _flag("shuffle", shuffle)
    w = check_start(model, w0)
    n = int(model.n_params)
    N = int(model.n_samples)
    ws = np.zeros(n)
    cov = np.full(n, update.variance) if rule == R.AROW else np.zeros(0)
    prm = update.parameters()
    st = np.array([1.0, 0.0, 0.0])
    rng = np.random.default_rng(random_state)
    history = HistoryRecorder(monitor)
    stop = "max_iter"

    def current():
        if averaging:
            return w - ws / st[0]
        return w.copy()

    out = current()
    it = 0
    try:
        for it in range(1, max_iter + 1):
            order = rng.permutation(N) if shuffle else np.arange(N)
            st[1] = 0.0
            st[2] = 0.0
            model.map_pass(order.astype(np.int64), w, ws, cov, st, prm)
            out = current()
            loss = float(st[1])
            ratio = loss / max(N, 1)
            if not np.all(np.isfinite(out)):
                raise FloatingPointError(f"solver {name!r}: the weights are not finite after epoch {it}")
            if history.record(it, loss, loss, 0.0, out, it, loss_per_sample=ratio, updates=int(st[2])):
                stop = "callback"
                break
            if (ratio <= epsilon) if rule == R.AROW else (ratio < epsilon):
                stop = "tol"
                break
    except KeyboardInterrupt:
        stop = "interrupted"
        out = current()
    obj = history.rows[-1]["loss"] if history.rows else math.nan
    return SolverResult(w=out, objective=obj, n_iter=len(history.rows), n_evals=len(history.rows),
                        stop_reason=stop, history=history.rows)


def minimize_ap(model, penalty=None, w0=None, *, max_iter=DEFAULT_MAX_ITER, monitor=None, epsilon=0.0,
                random_state=None, shuffle=True, **unused):
    """Averaged perceptron (CRFsuite's ``ap``); see the module documentation. Options:
    ``epsilon`` (0), ``random_state``, ``shuffle`` (True); ``tol``, ``gtol`` and
    ``window`` are accepted and not used."""
    _stopping_unused("minimize_ap", unused)
    return _run("ap", model, penalty, w0, Epochs(max_iter, monitor, epsilon, random_state, shuffle),
                Update(R.AP, True))


def minimize_pa(model, penalty=None, w0=None, *, max_iter=DEFAULT_MAX_ITER, monitor=None, epsilon=0.0, pa_type=1,
                c=1.0, error_sensitive=True, averaging=True, random_state=None, shuffle=True, **unused):
    """Passive-aggressive (CRFsuite's ``pa``); see the module documentation. Options:
    ``pa_type`` (0, 1 or 2; default 1), ``c`` (1), ``error_sensitive`` (True),
    ``averaging`` (True), ``epsilon`` (0), ``random_state``, ``shuffle`` (True); ``tol``,
    ``gtol`` and ``window`` are accepted and not used."""
    _stopping_unused("minimize_pa", unused)
    if isinstance(pa_type, bool) or pa_type not in (0, 1, 2):
        raise ValueError(f"pa_type must be 0, 1 or 2, got {pa_type!r}")
    c = _number("c", c)
    return _run("pa", model, penalty, w0, Epochs(max_iter, monitor, epsilon, random_state, shuffle),
                Update(R.PA, _flag("averaging", averaging), pa_type=int(pa_type), c=c,
                       error_sensitive=_flag("error_sensitive", error_sensitive)))


def minimize_arow(model, penalty=None, w0=None, *, max_iter=DEFAULT_MAX_ITER, monitor=None, epsilon=0.0,
                  variance=1.0, gamma=1.0, random_state=None, shuffle=True, **unused):
    """AROW (CRFsuite's ``arow``); see the module documentation. Options: ``variance``
    (1, the initial variance of every weight), ``gamma`` (1), ``epsilon`` (0),
    ``random_state``, ``shuffle`` (True); ``tol``, ``gtol`` and ``window`` are accepted
    and not used."""
    _stopping_unused("minimize_arow", unused)
    return _run("arow", model, penalty, w0, Epochs(max_iter, monitor, epsilon, random_state, shuffle),
                Update(R.AROW, False, variance=_number("variance", variance), gamma=_number("gamma", gamma)))


def minimize_mira(model, penalty=None, w0=None, *, max_iter=DEFAULT_MAX_ITER, monitor=None, c=1.0,
                  shrinking_size=20, random_state=None, shuffle=False, **unused):
    """CRF++'s MIRA (``crf_learn -a MIRA``): a single-best, cost-sensitive MIRA without
    averaging, on any model with the ``"map"`` capability.

    Each sample ``i`` in turn is decoded with the current weights; when ``d > 0`` of its
    parts are wrong the weights move by ``mu * delta`` with ``mu = max(0, (d - w . delta)
    / ||delta||^2)`` (the smallest step that makes the gold structure beat the decoded
    one by a margin of ``d``), cut so that the sum of sample ``i``'s steps stays at most
    ``c`` (CRF++'s ``-c``, default 1: the dual variables of the soft-margin problem are
    bounded by C). Shrinking: a sample decoded without a mistake in ``shrinking_size``
    (CRF++'s ``-H``, default 20) consecutive epochs is skipped until the next reset. An
    epoch's KKT violation is the largest ``d - w . delta`` of the samples whose step was
    not cut; an epoch without one resets the shrinking, and two such epochs in a row
    stop (``stop_reason == "tol"``, CRF++'s rule), else ``max_iter`` epochs (CRF++'s
    default 100000 is far more than it ever runs; here 100). The samples are visited in
    their order (CRF++'s) unless ``shuffle``. No penalty: ``c`` is the regularisation.
    History rows: ``loss`` the summed fraction of wrong parts, plus ``active_set`` (the
    samples visited), ``upper_active_set`` (steps cut by ``c``) and ``kkt``. ``tol``,
    ``gtol`` and ``window`` are accepted and not used."""
    _stopping_unused("minimize_mira", unused)
    name = "mira"
    require(model, name, "map")
    _check_no_penalty(penalty, name)
    c = _number("c", c)
    if isinstance(shrinking_size, bool) or not isinstance(shrinking_size, (int, np.integer)) \
            or shrinking_size < 1:
        raise ValueError(f"shrinking_size must be an integer >= 1, got {shrinking_size!r}")
    max_iter = int(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    shuffle = _flag("shuffle", shuffle)
    w = check_start(model, w0)
    N = int(model.n_samples)
    bound = np.zeros(N)                      # the sum of each sample's steps (<= c)
    shrink = np.zeros(N, dtype=np.int64)     # epochs in a row without a mistake
    prm = np.array([R.MIRA, 0, c, 0.0, 0.0], dtype=np.float64)
    ws = np.zeros(0)
    rng = np.random.default_rng(random_state)
    history = HistoryRecorder(monitor)
    stop = "max_iter"
    converge = 0
    try:
        for it in range(1, max_iter + 1):
            base = rng.permutation(N) if shuffle else np.arange(N)
            order = base[shrink[base] < shrinking_size].astype(np.int64)
            m = len(order)
            cov = np.concatenate([bound[order], np.full(m, -1.0)])
            st = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
            if m:
                model.map_pass(order, w, ws, cov, st, prm)
            bound[order] = cov[:m]
            wrong = cov[m:]
            decoded = wrong >= 0
            shrink[order[decoded & (wrong == 0)]] += 1
            shrink[order[wrong > 0]] = 0
            loss, kkt = float(st[1]), float(st[3])
            if not np.all(np.isfinite(w)):
                raise FloatingPointError(f"solver 'mira': the weights are not finite after epoch {it}")
            if history.record(it, loss, loss, 0.0, w, it, loss_per_sample=loss / max(N, 1), updates=int(st[2]),
                              active_set=m, upper_active_set=int(st[4]), kkt=kkt):
                stop = "callback"
                break
            if kkt <= 0.0:
                shrink[:] = 0
                converge += 1
            else:
                converge = 0
            if converge == 2:
                stop = "tol"
                break
    except KeyboardInterrupt:
        stop = "interrupted"
    obj = history.rows[-1]["loss"] if history.rows else math.nan
    return SolverResult(w=w.copy(), objective=obj, n_iter=len(history.rows), n_evals=len(history.rows),
                        stop_reason=stop, history=history.rows)
