"""Coordinate descent (``"cd"``, Algorithm 1) and blockwise coordinate descent
(``"bcd"``, Algorithm 2) for elastic-net linear-chain CRFs (Sokolovska, Lavergne, Cappé
& Yvon 2010). The algorithms, the damping rule and the options are described in
``docs/bcd.md``.

Both minimise ``L(w) + l1 ||w||_1 + l2/2 ||w||^2`` where ``L`` is the model's negative
log-likelihood; they need a model that exposes its parameter layout and data (a
:class:`~spargel.models.crf.ChainCRF`: ``model.space``, ``model.data``).

A block is a group of attributes (unigram and/or bigram) that occur at exactly the same
tokens, so one forward-backward serves all of them — with the usual templates, one
observation's unigram and bigram weights; the global transitions form one more block.
For each block the forward-backward runs only over the sequences that contain it, from
the cached rows of earlier blocks, up to its last and down to its first occurrence;
the gradient and the approximate diagonal Hessian (eq. 16) give the closed-form
elastic-net update (eqs. 13-14) with a damped Hessian ``alpha * h``; the objective change
of the step is computed exactly over the block's spans, and the step is retried with a
larger ``alpha`` until the objective does not increase.

Options (``solver_options`` of the estimators):

``hessian_damping`` (1.0)
    initial damping ``alpha`` of every block (``h -> alpha * h``, ``alpha >= 1``).
``damping_factor`` (4.0) / ``damping_relax`` (2.0)
    a rejected step multiplies the block's ``alpha`` by ``damping_factor``; a step
    accepted at the first try divides it by ``damping_relax`` (not below
    ``min_damping``, 1.0).
``max_trials`` (12)
    damped retries per block before the block is left unchanged for this sweep.
``max_step`` (10.0)
    largest change of one weight in one step (a trust region for coordinates whose
    curvature is tiny).
``skip_zero_blocks`` (True) / ``max_skip`` (16)
    a block whose weights are all zero and whose gradient is strictly inside the l1
    band (``|g| < 0.9 l1``) is skipped for 1, 2, 4, ... sweeps (at most ``max_skip``)
    while it keeps passing that test; before stopping on ``tol``/``gtol`` a full sweep
    without skipping confirms convergence.
``block_order`` ("cyclic")
    "cyclic": transitions first, then attributes by frequency; "random": a new
    permutation every sweep (``random_state``).
``group_blocks`` (True)
    put attributes with identical occurrences in one block (False: one attribute per
    block).
``accept_tol`` (1e-13)
    a step is accepted when its objective change is at most ``accept_tol`` times the
    magnitude of the log-partition terms it touches (rounding noise).
``chunk_blocks`` (4096)
    blocks per compiled call (Ctrl-C is noticed between calls).

Stopping: ``tol`` (relative objective change over ``window`` sweeps), ``gtol`` (largest
optimality violation seen during a full sweep <= ``gtol * max(1, ||w||)``),
``max_iter`` sweeps, ``interrupted`` (Ctrl-C: the weights reached are kept) and
``callback`` (the monitor returned True).
"""

import time

import numpy as np

from ..models import sparse_kernels as S
from . import cd_kernels as C
from .base import HistoryRecorder, SolverResult

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
}


def _require_layout(model, name):
    for attr in ("space", "data"):
        if getattr(model, attr, None) is None:
            raise TypeError(f"solver {name!r} needs a model with .space and .data (the CRF parameter layout and "
                            f"its training data); {type(model).__name__} does not offer them")
    if not hasattr(model.space, "as_tuple") or not hasattr(model.data, "seq_ptr"):
        raise TypeError(f"solver {name!r} works on linear-chain CRF models (FeatureSpace + SequenceData); "
                        f"{type(model).__name__} is not one")
    if model.data.labels is None:
        raise ValueError(f"solver {name!r} needs labelled training data")


class BlockProblem:
    """Inverted index, blocks and training state of a CRF for (block) coordinate descent."""

    def __init__(self, model, group_blocks=True):
        from ..models import crf_kernels as K
        from ..models.crf import data_tuple

        space, data = model.space, model.data
        self.space_t = space.as_tuple()
        self.data_t = data_tuple(data)
        L = space.n_labels
        self.L = L
        n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
        self.n_u, self.n_b = n_u, n_b
        n_tok = data.n_tokens
        emp = getattr(model, "_emp", None)
        if emp is None or len(emp) != space.n_params:
            emp = np.zeros(space.n_params)
            K.empirical_counts(self.space_t, self.data_t, emp)
        self.emp = emp
        # inverted index attribute -> occurrences, linear in the data
        a_ptr, a_tok, a_val = C.occurrence_index(n_tok, self.data_t, n_u, n_b)
        counts = np.diff(a_ptr)
        n_attr = n_u + n_b
        if group_blocks and n_attr:
            hashes = C.occurrence_hashes(a_ptr, a_tok)
            order = np.lexsort((hashes, counts))
            gid = C.group_sorted(order.astype(np.int64), counts, hashes, a_ptr, a_tok)
            # number the groups by their smallest attribute id (the vocabularies are
            # frequency ordered, so frequent observations come first)
            first = np.full(gid.max() + 1, n_attr, np.int64)
            np.minimum.at(first, gid, np.arange(n_attr))
            rank = np.empty_like(first)
            rank[np.argsort(first, kind="stable")] = np.arange(len(first))
            gid = rank[gid]
        else:
            gid = np.arange(n_attr, dtype=np.int64)
        blk_attr = np.argsort(gid, kind="stable").astype(np.int64)
        n_blk = int(gid.max()) + 1 if n_attr else 0
        blk_ptr = np.zeros(n_blk + 1, np.int64)
        np.cumsum(np.bincount(gid, minlength=n_blk), out=blk_ptr[1:])
        tok_seq = np.repeat(np.arange(data.n_sequences, dtype=np.int64), np.diff(data.seq_ptr))
        self.has_trans = len(space.t_pair) > 0
        spans = C.block_spans(blk_ptr, blk_attr, a_ptr, a_tok, tok_seq, data.seq_ptr, self.has_trans)
        bs_ptr = spans[0]
        self.n_blocks = n_blk
        self.blk = (blk_ptr, blk_attr, a_ptr, a_tok, a_val, bs_ptr, tuple(spans[1:]), np.int64(n_u))
        # block sizes (coordinates, occurrences, spans) for the buffers
        sizes_u = np.diff(space.u_ptr)
        sizes_b = np.diff(space.b_ptr)
        attr_size = np.concatenate([sizes_u, sizes_b]).astype(np.int64)
        blk_size = np.add.reduceat(attr_size[blk_attr], blk_ptr[:-1]) if n_blk else np.zeros(0, np.int64)
        max_coord = max([int(blk_size.max()) if n_blk else 0, len(space.t_pair), 1])
        occ = counts[blk_attr[blk_ptr[:-1]]] if n_blk else np.zeros(1, np.int64)
        max_occ = max(int(occ.max()) if n_blk else 0, 1)
        max_span = max(int(np.diff(bs_ptr).max()) if len(bs_ptr) > 1 else 0, 1)
        self.block_sizes = blk_size
        self.bufs = (np.zeros(max_coord), np.zeros(max_coord), np.zeros(max_coord, np.int64),
                     np.zeros(max_coord), np.zeros(max_coord), np.zeros(max_span),
                     np.zeros((max_occ, 2 * L)), np.zeros(max_occ), np.zeros(8))
        LL = L * L
        cap = LL + len(space.t_pair) + 1
        self.scr = (np.zeros(LL), np.zeros(LL, np.uint8), np.zeros(cap, np.int64), np.zeros(cap, np.int64),
                    np.zeros(cap, np.int64), np.zeros(cap), np.zeros(L), np.zeros(L), np.zeros(LL))
        R = C.ROWS
        self.pst = (np.zeros((R, L)), np.zeros((R, L)), np.zeros((R, L)), np.zeros((R, L)), np.zeros((R, L)),
                    np.zeros((L, L)), np.zeros((L, L)), np.zeros((L, L)), np.zeros(LL), np.zeros(LL))
        self.st = (np.zeros((n_tok, L)), np.zeros((n_tok, L)), np.zeros(n_tok), np.zeros((n_tok, L)),
                   np.zeros(n_tok), np.zeros((n_tok, L)), np.zeros(data.n_sequences, np.int64),
                   np.zeros(data.n_sequences, np.int64))

    def start(self, w):
        """Fill the structure and the emissions for weights w; empty the caches."""
        st = self.space_t
        sp = S.sparse_structure(w, st)
        nT = max(1, len(st[6]))
        tnz_pair = np.zeros(nT, np.int64)
        tnz_val = np.zeros(nT)
        tnz_pair[:len(sp[3])] = sp[3]
        tnz_val[:len(sp[4])] = sp[4]
        extra = []
        for arr in (sp[11], sp[12], sp[13]):
            full = np.zeros(nT, arr.dtype)
            full[:len(arr)] = arr
            extra.append(full)
        self.spm = (np.array([1 if sp[0] else 0], np.int64), sp[1], np.array([sp[2]]), tnz_pair, tnz_val,
                    np.array([len(sp[3])], np.int64), sp[5], sp[6], sp[7], sp[8], sp[9], sp[10], *extra)
        C.init_state(w, st, self.data_t, self.st)

    def total_logz(self):
        return float(C.total_logz(self.space_t, self.data_t, self.spm, self.st, self.scr))


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


def _minimize(model, penalty, w0, single, name, max_iter, tol, gtol, window, monitor, options):
    _require_layout(model, name)
    opt = _options(options, name)
    if not (hasattr(penalty, "l1") and hasattr(penalty, "l2")):
        raise TypeError(f"solver {name!r} needs an elastic-net penalty (with l1 and l2)")
    prob = BlockProblem(model, group_blocks=bool(opt["group_blocks"]))
    n = model.space.n_params
    w = np.zeros(n) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    if w.shape != (n,):
        raise ValueError(f"initial weights have shape {w.shape}, the model has {n} parameters")
    if not np.all(np.isfinite(w)):
        raise ValueError("initial weights are not finite")
    l1 = np.ascontiguousarray(np.broadcast_to(np.asarray(penalty.l1, dtype=np.float64), (n,)))
    l2 = np.ascontiguousarray(np.broadcast_to(np.asarray(penalty.l2, dtype=np.float64), (n,)))
    prob.start(w)
    history = HistoryRecorder(monitor)
    rng = np.random.default_rng(opt["random_state"])
    n_all = prob.n_blocks + (1 if prob.has_trans else 0)
    cyclic = np.concatenate([[prob.n_blocks] if prob.has_trans else [], np.arange(prob.n_blocks)]).astype(np.int64)
    damping = np.full(2 * n_all, float(opt["hessian_damping"]))
    skip_until = np.zeros(n_all, np.int64)
    zero_streak = np.zeros(n_all, np.int64)
    opts = np.array([opt["max_trials"], opt["damping_factor"], opt["min_damping"], opt["max_step"],
                     opt["h_floor"], opt["accept_tol"], opt["max_skip"] if opt["skip_zero_blocks"] else 0,
                     opt["damping_relax"]], dtype=np.float64)
    chunk = max(1, int(opt["chunk_blocks"]))

    def objective():
        logz = prob.total_logz()
        if not np.isfinite(logz):
            raise FloatingPointError(f"solver {name!r}: scaled forward-backward failed (weights too large); "
                                     "add an l2 penalty")
        loss = logz - float(np.dot(w, prob.emp))
        return loss, loss + penalty.value(w)

    loss, F = objective()
    objectives = [F]
    stop, it = "max_iter", 0
    confirm = False            # the next sweep must not skip (convergence check)
    n_evals = 1
    try:
        for it in range(1, max_iter + 1):
            allow_skip = bool(opt["skip_zero_blocks"]) and not confirm
            order = rng.permutation(cyclic) if opt["block_order"] == "random" else cyclic
            stats = np.zeros(8)
            t0, c0_cpu = time.perf_counter(), time.process_time()
            for c0 in range(0, len(order), chunk):
                C.run_blocks(w, prob.space_t, prob.data_t, prob.spm, prob.st, prob.scr, prob.pst, prob.blk,
                             order[c0:c0 + chunk], prob.emp, l1, l2, damping, opts, single,
                             bool(opt["split_blocks"]), it, skip_until,
                             zero_streak, allow_skip, prob.bufs, stats)
                if stats[6]:
                    raise FloatingPointError(f"solver {name!r}: scaled forward-backward failed (weights too "
                                             "large); add an l2 penalty")
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
                              max_violation=float(stats[5]), median_damping=float(np.median(damping)),
                              transition_base="ones" if prob.spm[0][0] else "dense"):
                stop = "callback"
                break
            if stop_now is not None:
                if full or not opt["skip_zero_blocks"]:
                    stop = stop_now
                    break
                confirm = True
            else:
                confirm = False
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        stop = "interrupted"
        F = float(model.loss(w) + penalty.value(w)) if hasattr(model, "loss") else F
    return SolverResult(w=w, objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop, history=history.rows)


def minimize_bcd(model, penalty, w0=None, *, max_iter=100, tol=1e-5, gtol=1e-5, window=1, monitor=None,
                 **options):
    """Blockwise coordinate descent (Algorithm 2): one step per block per sweep; one
    history row per sweep. See the module documentation for the options."""
    return _minimize(model, penalty, w0, False, "bcd", max_iter, tol, gtol, window, monitor, options)


def minimize_cd(model, penalty, w0=None, *, max_iter=100, tol=1e-5, gtol=1e-5, window=1, monitor=None,
                **options):
    """Coordinate descent (Algorithm 1): one coordinate at a time, each step from a
    fresh forward-backward over the sequences where its attribute occurs. Meant for
    small problems and tests; one history row per sweep over all coordinates."""
    return _minimize(model, penalty, w0, True, "cd", max_iter, tol, gtol, window, monitor, options)
