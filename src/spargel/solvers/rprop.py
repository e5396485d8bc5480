"""Resilient propagation (Rprop, Riedmiller & Braun 1993) with Wapiti's l1 handling, on
any model with the ``"loss_grad"`` capability (:mod:`spargel.core.protocol`).

Wapiti's trainers ``rprop`` / ``rprop+`` (with weight backtracking) and ``rprop-``
(without). Every weight has its own step ``stp`` (``step0`` = 0.1 at first); one
iteration takes the batch gradient ``g`` of the loss plus the l2 term and moves each
weight by its step against the sign of ``g``. The step grows (``* stpinc``, at most
``stpmax``) while the gradient keeps its sign from one iteration to the next and
shrinks (``* stpdec``, at least ``stpmin``) when it flips; with backtracking a flip also
takes the weight back to where it was before the last move and forgets the gradient
(the next iteration neither grows nor shrinks the step, and moves the weight by its
step against the sign of the pseudo-gradient).

The l1 term ``l1 ||w||_1`` (per weight when the penalty has a scale) is handled as in
Wapiti, in one of two ways:

projection (default)
    the sign tests use the orthant-wise pseudo-gradient ``pg`` (OWL-QN's minimum-norm
    sub-gradient) instead of ``g``, a weight moves by its step against the sign of
    ``pg`` and stops at 0 when the move would cross it (the orthant projection of
    OWL-QN; a weight at 0 takes the orthant opposite to ``pg``); after a backtrack the
    weight does not move. The sign tests compare the pseudo-gradient with the previous
    pseudo-gradient. (Wapiti compares it with the previous gradient ``g``, takes the
    move's sign from ``g`` and drops a move that does not go against ``pg``: a weight
    whose gradient lies inside the l1 band, ``|g| < l1``, away from 0 then never moves
    again, or backtracks for ever; here it shrinks to 0.)
``cutoff=True`` (Wapiti's ``--cutoff``)
    a weight whose gradient lies within the l1 band (``|g + l1 sign(w)| < l1``) is set
    to 0 when it is 0 already or when both its gradient and its value changed sign
    since the last iteration; the others move by the plain rule on ``g``.

Stopping: after ``max_iter`` iterations, or when the objective improved by less than
``tol`` (relative) over the last ``window`` iterations (Wapiti stops its trainers when
the error rate stays within ``--stopeps`` over ``--stopwin`` iterations instead; ``spargel
train`` takes those spellings for ``--tol`` / ``--window`` of this rule). Rprop's
objective is not monotone; the weights returned are those of the last gradient (so
``max_iter`` iterations take ``max_iter`` gradients and ``max_iter - 1`` moves), and the
history rows carry the objective at the weights where each gradient was taken.
"""

import math

import numpy as np

from ..core.jit import inner, kernel
from ..core.protocol import require
from .base import HistoryRecorder, SolverResult, check_start, require_separable

EPS = np.finfo(np.float64).eps * 64.0   # Wapiti's sign threshold


@inner()
def _sgn(v):
    if v < -EPS:
        return -1.0
    if v > EPS:
        return 1.0
    return 0.0


@kernel()
def rprop_step(x, xp, stp, g, gp, l1, uniform_l1, prm):
    """One Rprop move of every weight, in place (see the module documentation).
    ``x`` weights, ``xp`` their values before the last move, ``stp`` the steps, ``g``
    the gradient at ``x`` (zeroed where a backtrack forgets it), ``gp`` the previous
    gradient; ``l1`` per-weight l1 strengths (empty: ``uniform_l1`` for all);
    ``prm = [stpmin, stpmax, stpinc, stpdec, backtrack, mode]`` with mode 0 (no l1),
    1 (projection) or 2 (cutoff). Returns the number of weights set to 0 by the cutoff."""
    stpmin, stpmax, stpinc, stpdec = prm[0], prm[1], prm[2], prm[3]
    wbt = prm[4] != 0.0
    mode = int(prm[5])
    per = len(l1) > 0
    cut = 0
    for f in range(len(x)):
        r = l1[f] if per else uniform_l1
        gf = g[f]
        pg = gf
        if mode == 1 and r > 0.0:
            if x[f] < -EPS:
                pg = gf - r
            elif x[f] > EPS:
                pg = gf + r
            elif gf < -r:
                pg = gf + r
            elif gf > r:
                pg = gf - r
            else:
                pg = 0.0
        elif mode == 2 and r > 0.0:
            band = gf + r * _sgn(x[f])
            if band * band < r * r:
                if x[f] == 0.0 or (gp[f] * gf < 0.0 and xp[f] * x[f] < 0.0):
                    if wbt:
                        xp[f] = x[f]
                    x[f] = 0.0
                    gp[f] = gf
                    cut += 1
                    continue
        project = mode == 1 and r > 0.0
        if project:
            gf = pg     # the sign tests compare pseudo-gradients with pseudo-gradients
        sgp = _sgn(gp[f])
        spg = _sgn(pg)
        turn = sgp * spg
        if turn > 0.0:
            stp[f] = min(stp[f] * stpinc, stpmax)
        elif turn < 0.0:
            stp[f] = max(stp[f] * stpdec, stpmin)
        if not wbt or turn > 0.0:
            if project:
                # against the pseudo-gradient, clipped at 0 (the orthant projection)
                old = x[f]
                xi = _sgn(old) if old != 0.0 else -spg
                nx = old - stp[f] * spg
                if nx * xi <= 0.0:
                    nx = 0.0
            else:
                nx = x[f] - stp[f] * _sgn(gf)
            if wbt:
                xp[f] = x[f]
            x[f] = nx
        elif turn < 0.0:
            x[f] = xp[f]
            gf = 0.0
        else:
            xp[f] = x[f]
            if not project:
                x[f] -= stp[f] * spg
        gp[f] = gf
    return cut


@kernel()
def add_penalty(x, g, l1, u1, l2, u2):
    """``g += l2 * x`` (the l2 term's gradient) in place; returns the penalty ``sum l1 |x|
    + l2 / 2 x^2`` at ``x``, or nan when ``g`` holds a non-finite value. ``l1`` / ``l2``
    per-weight strengths, or empty for the uniform ``u1`` / ``u2``."""
    per1 = len(l1) > 0
    per2 = len(l2) > 0
    pen = 0.0
    bad = False
    for f in range(len(x)):
        a = l1[f] if per1 else u1
        b = l2[f] if per2 else u2
        v = x[f]
        gf = g[f] + b * v
        if not math.isfinite(gf):
            bad = True
        g[f] = gf
        pen += a * abs(v) + 0.5 * b * v * v
    return math.nan if bad else pen


VARIANTS = ("rprop", "rprop+", "rprop-")


def _positive(name, value, above=0.0):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > above):
        raise ValueError(f"{name} must be a finite number > {above:g}, got {value!r}")
    return value


def _rprop(name, model, penalty, w0, max_iter, tol, window, monitor, stpmin, stpmax, stpinc, stpdec, step0,
           cutoff):
    require(model, name, "loss_grad")
    require_separable(penalty, name)
    stpmin = _positive("stpmin", stpmin)
    stpmax = _positive("stpmax", stpmax)
    if stpmax < stpmin:
        raise ValueError(f"stpmax ({stpmax:g}) must be >= stpmin ({stpmin:g})")
    stpinc = _positive("stpinc", stpinc, above=1.0)
    stpdec = _positive("stpdec", stpdec)
    if stpdec >= 1.0:
        raise ValueError(f"stpdec must be a finite number in (0, 1), got {stpdec!r}")
    step0 = _positive("step0", step0)
    if not isinstance(cutoff, (bool, np.bool_)) and cutoff not in (0, 1):
        raise ValueError(f"cutoff must be True or False, got {cutoff!r}")
    if isinstance(window, bool) or int(window) != window or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    window = int(window)
    max_iter = int(max_iter)
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    tol = 0.0 if tol is None else float(tol)
    x = check_start(model, w0)
    n = x.shape[0]
    uni = penalty.uniform()
    if uni is not None:
        l1, u1, l2, u2 = np.zeros(0), uni[0], np.zeros(0), uni[1]
    else:
        l1, l2 = (np.ascontiguousarray(a) for a in penalty.per_weight(n))
        u1 = u2 = 0.0
    mode = 0 if not penalty.has_nonsmooth else (2 if cutoff else 1)
    prm = np.array([stpmin, stpmax, stpinc, stpdec, 0.0 if name == "rprop-" else 1.0, mode])
    xp = np.zeros(n)
    stp = np.full(n, step0)
    gp = np.zeros(n)
    history = HistoryRecorder(monitor)
    past = []
    stop = "max_iter"
    try:
        for it in range(1, max_iter + 1):
            loss, g = model.loss_grad(x)
            g = np.require(g, dtype=np.float64, requirements=["C", "W"])   # the model's new array
            pen = add_penalty(x, g, l1, u1, l2, u2)
            F = float(loss) + pen
            if not math.isfinite(F):
                raise FloatingPointError(f"solver {name!r}: the objective or its gradient is not finite at "
                                         f"iteration {it}; lower stpmax or step0")
            past.append(F)
            if history.record(it, F, loss, pen, x, it):
                stop = "callback"
                break
            if len(past) > window and (past[-1 - window] - F) <= tol * max(abs(F), 1e-300):
                stop = "tol"
                break
            if it == max_iter:   # the weights returned are those whose objective is known
                break
            rprop_step(x, xp, stp, g, gp, l1, u1, prm)
    except KeyboardInterrupt:
        stop = "interrupted"
    return SolverResult(w=x, objective=past[-1] if past else math.nan, n_iter=len(history.rows),
                        n_evals=len(history.rows), stop_reason=stop, history=history.rows)


def minimize_rprop(model, penalty, w0=None, *, max_iter=500, tol=1e-5, gtol=None, window=10, monitor=None,
                   stpmin=1e-8, stpmax=50.0, stpinc=1.2, stpdec=0.5, step0=0.1, cutoff=False):
    """Wapiti's ``rprop`` / ``rprop+``: Rprop with weight backtracking (see the module
    documentation). Options (Wapiti's defaults): ``stpmin`` (1e-8), ``stpmax`` (50),
    ``stpinc`` (1.2), ``stpdec`` (0.5), ``step0`` (0.1, every weight's first step),
    ``cutoff`` (False: the l1 term by projection)."""
    return _rprop("rprop", model, penalty, w0, max_iter, tol, window, monitor, stpmin, stpmax, stpinc, stpdec,
                  step0, cutoff)


def minimize_rprop_minus(model, penalty, w0=None, *, max_iter=500, tol=1e-5, gtol=None, window=10, monitor=None,
                         stpmin=1e-8, stpmax=50.0, stpinc=1.2, stpdec=0.5, step0=0.1, cutoff=False):
    """Wapiti's ``rprop-``: Rprop without weight backtracking; options as
    :func:`minimize_rprop`."""
    return _rprop("rprop-", model, penalty, w0, max_iter, tol, window, monitor, stpmin, stpmax, stpinc, stpdec,
                  step0, cutoff)
