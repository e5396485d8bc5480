"""Blockwise coordinate descent (``"bcd"``, Algorithm 2 of Sokolovska, Lavergne, Cappé &
Yvon 2010) and coordinate descent (``"cd"``, Algorithm 1) for any model with the
"blocks" capability (:mod:`spargel.core.protocol`). The algorithms, the damping rule
and the options are described in ``docs/bcd.md``.

Both minimise ``L(w) + R(w)``: ``L`` the model's loss, ``R`` a penalty object
(:mod:`spargel.core.penalties`). Per sweep, for every block ``b`` of the model's
``block_layout()``:

1. ``g, h = model.block_grad_hess(b)``: the loss gradient and a diagonal curvature
   estimate of the block's weights (for a CRF, eq. 16 of the paper);
2. the new weights ``penalty.block_step(w, g, alpha_b * max(h, h_floor), ...)`` (for the
   elastic net the closed form of eqs. 13-14; a group lasso needs blocks made of whole
   groups), each change clipped to ``max_step``;
3. ``model.block_change(b, dw)``: the exact change of the loss; with the change of the
   penalty, the step is accepted when the objective does not increase (up to rounding,
   ``accept_tol`` times ``model.block_rounding()`` when the model says how large the
   terms behind the change were) and otherwise retried with a larger ``alpha_b``;
4. blocks whose weights are zero and whose gradient is strictly inside the shrunk
   penalty band (the step from zero with ``g / 0.9`` is zero) are skipped for 1, 2, 4,
   ... sweeps.

When the model also offers ``block_sweep`` (the CRF: a compiled loop over many blocks)
and the penalty is an :class:`~spargel.core.penalties.ElasticNet`, the solver hands it whole
chunks of blocks with the same rule (option ``fused``; a test proves both give the
same iterates). ``"cd"`` is the same machinery with one weight per block
(``block_layout(single=True)``); it needs a separable penalty.

Options (``solver_options`` of the estimators):

``hessian_damping`` (1.0)
    initial damping ``alpha_b`` of every block (``h -> alpha_b * h``, ``alpha_b >= 1``).
``damping_factor`` (4.0) / ``damping_relax`` (2.0) / ``min_damping`` (1.0)
    a rejected step multiplies ``alpha_b`` by ``damping_factor``; a step accepted at the
    first try divides it by ``damping_relax`` (not below ``min_damping``).
``max_trials`` (12)
    damped retries per block before the block is left unchanged for this sweep.
``max_step`` (2.0)
    largest change of one weight in one step (for a non-separable penalty the block's
    step is scaled down instead, keeping its direction).
``h_floor`` (1e-10)
    lower bound of the curvature estimate.
``skip_zero_blocks`` (True) / ``max_skip`` (16)
    skip blocks that stay at zero (above); before stopping on ``tol``/``gtol`` a sweep
    without skipping confirms convergence.
``block_order`` ("cyclic")
    "cyclic": the model's order (the CRF: transitions, then attributes by frequency);
    "random": a new permutation every sweep (``random_state``).
``group_blocks`` (True) / ``split_blocks`` (True)
    passed to the model's ``block_layout`` (the CRF: put attributes with identical
    occurrences in one block; update a block's unigram part, then its bigram part).
``accept_tol`` (1e-13)
    rounding allowance of the acceptance test.
``chunk_blocks`` (4096)
    blocks per ``block_sweep`` call (Ctrl-C is noticed between calls).
``fused`` (True)
    use the model's ``block_sweep`` when it has one and the penalty is an elastic net.

Stopping: ``tol`` (relative objective change over ``window`` sweeps), ``gtol`` (largest
optimality violation seen during a full sweep <= ``gtol * max(1, ||w||)``),
``max_iter`` sweeps, ``interrupted`` (Ctrl-C: the weights reached are kept) and
``callback`` (the monitor returned True).

>>> res = minimize_bcd(model, ElasticNet(l1=1.0), max_iter=50)     # doctest: +SKIP
"""

import inspect
import time
from typing import NamedTuple

import numpy as np

from ..core.protocol import require
from ..core.penalties import ElasticNet
from .base import HistoryRecorder, SolverResult, check_start, require_separable
from ..errors import CapabilityError

DEFAULTS = {
    "hessian_damping": 1.0,
    "damping_factor": 4.0,
    "damping_relax": 2.0,
    "min_damping": 1.0,
    "max_trials": 12,
    "max_step": 2.0,
    "h_floor": 1e-10,
    "skip_zero_blocks": True,
    "max_skip": 16,
    "block_order": "cyclic",
    "group_blocks": True,
    "split_blocks": True,
    "accept_tol": 1e-13,
    "chunk_blocks": 4096,
    "random_state": None,
    "fused": True,
}
LAYOUT_OPTIONS = ("group_blocks", "split_blocks")
BAND = 0.9               # a zero block is skippable when its step from g / BAND stays at zero
N_STATS = 7              # sum of objective changes, rejected, moved, visited, skipped, violation, failure


class SweepOptions(NamedTuple):
    """The options of a model's compiled sweep (``block_sweep``), every field a float (one
    numba type): the options of the same names (``max_skip`` 0 when zero blocks are not
    skipped), the sweep's number and whether it may skip blocks (1.0 or 0.0)."""
    max_trials: float
    damping_factor: float
    min_damping: float
    max_step: float
    h_floor: float
    accept_tol: float
    max_skip: float
    damping_relax: float
    sweep: float = 0.0
    allow_skip: float = 0.0


def _options(options, name):
    unknown = set(options) - set(DEFAULTS) - {"n_jobs"}
    if unknown:
        raise TypeError(f"unknown option(s) for solver {name!r}: {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(DEFAULTS))}")
    opt = dict(DEFAULTS)
    opt.update({k: v for k, v in options.items() if k != "n_jobs"})
    if opt["block_order"] not in ("cyclic", "random"):
        raise ValueError(f"block_order must be 'cyclic' or 'random', got {opt['block_order']!r}")
    if not opt["hessian_damping"] >= 1.0 or not opt["damping_factor"] > 1.0 or not opt["damping_relax"] >= 1.0:
        raise ValueError("need hessian_damping >= 1, damping_factor > 1 and damping_relax >= 1")
    if int(opt["max_trials"]) < 1 or not opt["max_step"] > 0:
        raise ValueError("need max_trials >= 1 and max_step > 0")
    return opt


def _layout(model, opt, single, name):
    """The model's blocks ``(ptr, index)``, passing the layout options it understands."""
    want = {k: bool(opt[k]) for k in LAYOUT_OPTIONS}
    if single:
        want["single"] = True
    try:
        params = inspect.signature(model.block_layout).parameters
    except (TypeError, ValueError):
        params = {}
    kwargs = {k: v for k, v in want.items() if k in params}
    refused = [k for k, v in want.items() if k not in params and (k == "single" or v != DEFAULTS.get(k))]
    if refused:
        raise CapabilityError(f"solver {name!r} needs {type(model).__name__}.block_layout() to accept "
                              f"{', '.join(refused)}")
    ptr, index = model.block_layout(**kwargs)
    ptr = np.asarray(ptr, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if ptr.ndim != 1 or len(ptr) < 1 or ptr[0] != 0 or ptr[-1] != len(index) or np.any(np.diff(ptr) < 0):
        raise ValueError(f"{type(model).__name__}.block_layout() returned an inconsistent (ptr, index)")
    return ptr, index


def _runs(ptr, index):
    """Contiguous runs of every block's weights: run r covers weights
    ``lo[r]:lo[r] + (end[r] - pos[r])`` at block positions ``pos[r]:end[r]``; block b owns
    runs ``rptr[b]:rptr[b+1]``. (Penalties step contiguous ranges.)"""
    n = len(index)
    start = np.ones(n, bool)
    if n:
        start[1:] = np.diff(index) != 1
        start[ptr[:-1][ptr[:-1] < n]] = True
    pos = np.flatnonzero(start).astype(np.int64)
    end = np.append(pos[1:], n).astype(np.int64)
    blk = np.searchsorted(ptr, pos, side="right") - 1
    rptr = np.zeros(len(ptr), np.int64)
    np.cumsum(np.bincount(blk, minlength=len(ptr) - 1), out=rptr[1:])
    return rptr, pos - ptr[blk], end - ptr[blk], index[pos] if n else pos


class _Generic:
    """The block step written with the protocol's primitives and the penalty's
    ``block_step`` / ``block_value`` / ``block_violation`` (any model, any penalty)."""

    def __init__(self, model, penalty, ptr, index, opt):
        self.model, self.penalty, self.ptr, self.index = model, penalty, ptr, index
        self.rptr, self.rpos, self.rend, self.rlo = _runs(ptr, index)
        self.opt = opt
        self.separable = bool(getattr(penalty, "separable", False))
        self.rounding = getattr(model, "block_rounding", None)

    def runs(self, b):
        for r in range(self.rptr[b], self.rptr[b + 1]):
            a, z, lo = int(self.rpos[r]), int(self.rend[r]), int(self.rlo[r])
            yield a, z, lo, lo + (z - a)

    def block(self, b, w, damping, stats):
        """One block step; returns True when the block is skippable (see the module doc)."""
        model, pen, opt = self.model, self.penalty, self.opt
        idx = self.index[self.ptr[b]:self.ptr[b + 1]]
        runs = list(self.runs(b))
        g, h = model.block_grad_hess(b)
        old = w[idx].copy()
        viol = max([pen.block_violation(w, g[a:z], lo, hi) for a, z, lo, hi in runs], default=0.0)
        stats[5] = max(stats[5], viol)
        inside = not np.any(old) and not any(np.any(pen.block_step(w, g[a:z] / BAND, h[a:z], lo, hi))
                                             for a, z, lo, hi in runs)
        pen_old = sum(pen.block_value(w, lo, hi) for a, z, lo, hi in runs)
        alpha = damping[b]
        ms = opt["max_step"]
        for trial in range(int(opt["max_trials"])):
            heff = alpha * np.maximum(h, opt["h_floor"])
            new = np.empty(len(idx))
            for a, z, lo, hi in runs:
                new[a:z] = pen.block_step(w, g[a:z], heff[a:z], lo, hi)
            d = new - old
            if self.separable:
                d = np.clip(d, -ms, ms)
            elif len(d) and np.max(np.abs(d)) > ms:
                d = d * (ms / np.max(np.abs(d)))
            if not np.any(d):
                damping[b] = max(opt["min_damping"], alpha)
                return inside
            dl = model.block_change(b, d)
            w[idx] = old + d
            pen_new = sum(pen.block_value(w, lo, hi) for a, z, lo, hi in runs)
            dobj = dl + (pen_new - pen_old)
            scale = self.rounding() if self.rounding is not None else 0.0
            if dobj <= opt["accept_tol"] * (1.0 + scale):          # (NaN fails)
                model.block_commit()
                stats[0] += dobj
                stats[1] += trial
                stats[2] += 1
                damping[b] = max(opt["min_damping"], alpha / opt["damping_relax"]) if trial == 0 else alpha
                return inside
            w[idx] = old
            model.block_discard()
            alpha *= opt["damping_factor"]
        stats[1] += int(opt["max_trials"])
        damping[b] = alpha
        return inside

    def sweep(self, order, w, damping, skip_until, zero_streak, sweep, allow_skip, max_skip, stats):
        for b in order:
            if allow_skip and skip_until[b] > sweep:
                stats[4] += 1
                continue
            stats[3] += 1
            if self.block(b, w, damping, stats) and max_skip > 0:
                zero_streak[b] += 1
                skip_until[b] = sweep + 1 + min(2 ** (min(int(zero_streak[b]), 20) - 1), max_skip)
            else:
                zero_streak[b] = 0


def _loss(model, w):
    f = getattr(model, "block_loss", None)
    return float(f()) if callable(f) else float(model.loss(w))


def _minimize(model, penalty, w0, single, name, max_iter, tol, gtol, window, monitor, options):
    require(model, name, "blocks")
    opt = _options(options, name)
    if single:
        require_separable(penalty, name)
    w = check_start(model, w0)
    ptr, index = _layout(model, opt, single, name)
    n_blocks = len(ptr) - 1
    fused = bool(opt["fused"]) and callable(getattr(model, "block_sweep", None)) and isinstance(penalty, ElasticNet)
    generic = None if fused else _Generic(model, penalty, ptr, index, opt)
    max_skip = int(opt["max_skip"]) if opt["skip_zero_blocks"] else 0
    if fused:
        l1, l2 = penalty.per_weight(len(w))
        opts = SweepOptions(*(float(opt[k]) for k in ("max_trials", "damping_factor", "min_damping", "max_step",
                                                       "h_floor", "accept_tol")), float(max_skip),
                            float(opt["damping_relax"]))
    model.block_begin(w)
    history = HistoryRecorder(monitor)
    rng = np.random.default_rng(opt["random_state"])
    damping = np.full(n_blocks, float(opt["hessian_damping"]))
    skip_until = np.zeros(n_blocks, np.int64)
    zero_streak = np.zeros(n_blocks, np.int64)
    chunk = max(1, int(opt["chunk_blocks"]))
    cyclic = np.arange(n_blocks, dtype=np.int64)

    def objective():
        loss = _loss(model, w)
        return loss, loss + penalty.value(w)

    loss, F = objective()
    objectives = [F]
    stop, it = "max_iter", 0
    confirm = False            # the next sweep must not skip (convergence check)
    n_evals = 1
    try:
        for it in range(1, max_iter + 1):
            allow_skip = max_skip > 0 and not confirm
            order = rng.permutation(n_blocks).astype(np.int64) if opt["block_order"] == "random" else cyclic
            stats = np.zeros(N_STATS)
            t0, c0_cpu = time.perf_counter(), time.process_time()
            model.block_begin(w)
            if fused:
                opts = opts._replace(sweep=float(it), allow_skip=float(allow_skip))
                for c0 in range(0, n_blocks, chunk):
                    model.block_sweep(order[c0:c0 + chunk], l1, l2, damping, skip_until, zero_streak, opts, stats)
                w = model.block_weights()
            else:
                generic.sweep(order, w, damping, skip_until, zero_streak, it, allow_skip, max_skip, stats)
            sweep_s = time.perf_counter() - t0
            sweep_cpu = time.process_time() - c0_cpu
            loss, F = objective()
            n_evals += 1
            objectives.append(F)
            full = not allow_skip
            stop_now = None
            if it >= window and (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
                stop_now = "tol"
            elif full and stats[5] <= gtol * max(1.0, float(np.linalg.norm(w))):
                stop_now = "gtol"
            if history.record(it, F, loss, F - loss, w, n_evals, sweep_time=sweep_s, sweep_cpu=sweep_cpu,
                              blocks_visited=int(stats[3]), blocks_skipped=int(stats[4]),
                              blocks_moved=int(stats[2]), rejected_steps=int(stats[1]),
                              max_violation=float(stats[5]),
                              median_damping=float(np.median(damping)) if n_blocks else 1.0):
                stop = "callback"
                break
            if stop_now is not None:
                if full or max_skip == 0:
                    stop = stop_now
                    break
                confirm = True
            else:
                confirm = False
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        stop = "interrupted"
        model.block_discard()
        w = model.block_weights()
        F = float(model.loss(w) + penalty.value(w))
    return SolverResult(w=model.block_weights(), objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop,
                        history=history.rows)


def minimize_bcd(model, penalty, w0=None, *, max_iter=100, tol=1e-5, gtol=1e-5, window=1, monitor=None,
                 **options):
    """Blockwise coordinate descent (Algorithm 2): one step per block per sweep; one
    history row per sweep. See the module documentation for the options."""
    return _minimize(model, penalty, w0, False, "bcd", max_iter, tol, gtol, window, monitor, options)


def minimize_cd(model, penalty, w0=None, *, max_iter=100, tol=1e-5, gtol=1e-5, window=1, monitor=None,
                **options):
    """Coordinate descent (Algorithm 1): one weight at a time, each step from fresh
    statistics over the sequences where it acts. Meant for small problems and tests;
    one history row per sweep over all weights."""
    return _minimize(model, penalty, w0, True, "cd", max_iter, tol, gtol, window, monitor, options)
