"""A model whose data is split into shards that live on the workers of a Dask cluster.

:class:`ShardedModel` is one more model of the protocol (:mod:`spargel.core.protocol`):
it offers ``loss_grad`` (and ``loss``), so OWL-QN, L-BFGS, FISTA and every other solver
that needs only the batch loss and gradient runs on it unchanged. Each shard is an
ordinary model (a :class:`~spargel.chain.crf.ChainCRF` over a subset of the sequences,
a :class:`~spargel.loglinear.model.FlatLogLinear` over a subset of the rows) built *on
its worker* and sharing the global parameter layout; the loss is a sum over samples, so
the sharded loss and gradient are the sums of the shards'.

One evaluation:

1. ``w`` is scattered once; each worker fetches it once (peer to peer);
2. every shard's ``loss_grad(w)`` runs where the shard lives (the worker's threads run
   the shards it holds, and each shard model may use several threads itself);
3. the parts are added in shard order: on the client when there are at most ``fanin``
   of them, otherwise by a fixed tree of tasks on the workers (groups of ``fanin``
   consecutive parts, level by level), so only one gradient reaches the client.

The order of the additions depends only on the number of shards and ``fanin``, never on
which worker finishes first, so the same data and shards give the same bits on every
run -- also when a worker is lost and Dask recomputes its shards elsewhere from their
source (the tasks that build a shard are part of the task graph; nothing is scattered
but ``w``).

When *every* worker is lost at once (mid-round or between rounds), Dask cannot be left
to recompute the shards: a task placed on a worker that no longer exists stays
unrunnable once new workers join. The model then waits for workers to come back (at
most :data:`WORKER_RESTART_WAIT` seconds, then a clear error), sends its shards again
through its ``rebuild`` function (the builders give one: the data again from the client,
or the files read again, placed on the new workers) and runs the round again, at most
:data:`RETRIES` times per evaluation.

This module imports nothing from Dask: it only calls the ``client`` it is given
(``submit``, ``scatter``, ``gather``).

>>> model = ShardedModel(client, shard_futures, layout, n_samples)    # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                                    # doctest: +SKIP
>>> model.timings[-1]                                                  # doctest: +SKIP
{'wall': 0.41, 'compute': 0.38, 'overhead': 0.03, ...}
"""

import time
from concurrent.futures import CancelledError

import numpy as np
from ..errors import SpargelError

#: at most this many parts are added on the client; more go through a tree of tasks
FANIN = 4
#: an evaluation interrupted by a lost worker is run again at most this many times
RETRIES = 3
#: how long an evaluation that lost every worker waits for one to come back (seconds)
WORKER_RESTART_WAIT = 120.0
#: a sharded bound whose shards have exact dense curvatures is summed into one dense
#: matrix up to this many weights (beyond, its products run on the workers)
DENSE_LIMIT = 2000


def evaluate_shard(shard, w, want_grad):
    """Worker side: ``(loss, gradient or None, [(worker, start, end)])`` of one shard.
    The span (wall-clock seconds on the worker) feeds the timings of the evaluation."""
    start = time.time()
    if want_grad:
        loss, g = shard.loss_grad(w)
    else:
        loss, g = shard.loss(w), None
    return float(loss), g, [(_worker_name(), start, time.time())]


def bound_shard(shard, w, options):
    """Worker side: the shard's :class:`~spargel.core.bound.QuadraticBound` at ``w``
    (it stays on the worker: its curvature is applied there)."""
    return shard.bound(w, **options)


def bound_part(B):
    """Worker side: ``(loss, gradient, spans)`` of a shard's bound."""
    return B.loss, B.grad, [(_worker_name(), time.time(), time.time())]


def curvature_part(B, what, v):
    """Worker side: ``(0, Sigma_s v | diag | dense Sigma_s, spans)`` of a shard's bound."""
    start = time.time()
    c = B.curvature
    out = c.matvec(v) if what == "matvec" else c.diagonal() if what == "diagonal" else c.dense()
    out = getattr(out, "M", out)                    # (a dense() may come as a DenseCurvature)
    return 0.0, np.asarray(out, dtype=np.float64), [(_worker_name(), start, time.time())]


def curvature_exact(B):
    return bool(getattr(B.curvature, "exact_solve", False)) and callable(getattr(B.curvature, "dense", None))


def add_parts(*parts):
    """The sum of ``(loss, gradient, spans)`` parts, added in the order given."""
    loss, g, spans = parts[0]
    g = None if g is None else g.copy()
    spans = list(spans)
    for l_, g_, s_ in parts[1:]:
        loss += l_
        if g is not None:
            g += g_
        spans.extend(s_)
    return loss, g, spans


def _reduce_levels(client, parts, combine, fanin, stop):
    level = list(parts)
    while len(level) > stop:
        level = [client.submit(combine, *level[i:i + fanin], pure=False) if len(level[i:i + fanin]) > 1
                 else level[i] for i in range(0, len(level), fanin)]
    return level


def tree_sum(client, parts, combine, fanin=FANIN):
    """Reduce the futures ``parts`` with ``combine`` in a fixed tree: each level combines
    groups of ``fanin`` consecutive items, until at most ``fanin`` are left; those are
    combined on the client. Returns the combined value."""
    return combine(*client.gather(_reduce_levels(client, parts, combine, fanin, fanin)))


def tree_future(client, parts, combine, fanin=FANIN):
    """Like :func:`tree_sum`, but the last combination too runs on a worker: returns a
    future (the result stays on the cluster)."""
    return _reduce_levels(client, parts, combine, fanin, 1)[0]


def wait_for_a_worker(client, timeout=None):
    """Wait until the scheduler knows at least one worker (asked of the scheduler itself:
    a local cluster's own bookkeeping can miss workers that its nannies restarted after
    every worker was lost at once)."""
    timeout = WORKER_RESTART_WAIT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        try:
            if client.nthreads():
                return
        except (OSError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise SpargelError(f"the Dask cluster lost every worker and none came back within {timeout:g}s")
        time.sleep(0.2)


def _worker_name():
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "local"


class ShardedModel:
    """Sum of the losses of shard models that live on Dask workers.

    Parameters
    ----------
    client : dask.distributed.Client
    shards : list of futures, each resolving (on its worker) to a model with
        ``loss_grad`` / ``loss`` over the global layout
    layout : ParameterLayout of the global parameter vector
    n_samples : total number of samples over all shards
    fanin : parts added per reduction task (see the module doc)

    Attributes
    ----------
    n_evals : number of loss / gradient evaluations
    retries : evaluations run again because a worker was lost during them
    resent : how many times the shards were sent again because every worker was lost
    rebuild : None, or a function of no arguments that sends the shards again and
        returns their new futures (set by the builders; see the module doc)
    timings : one dict per evaluation: ``wall`` (seconds on the client), ``compute``
        (the longest time one worker spent on its shards), ``overhead`` (``wall -
        compute``: sending w, scheduling, moving and adding gradients), ``busy`` (the
        summed shard times) and ``workers`` (how many workers took part)
    """

    def __init__(self, client, shards, layout, n_samples, fanin=FANIN):
        if not shards:
            raise ValueError("a sharded model needs at least one shard")
        self.client = client
        self.shards = list(shards)
        self.layout = layout
        self.n_samples = int(n_samples)
        self.fanin = max(2, int(fanin))
        self.n_evals = 0
        self.retries = 0
        self.resent = 0
        self.rebuild = None
        self.keep = None                # futures the shards read (kept as long as the model)
        self.timings = []
        self._workers = None            # the workers known at the last round

    @property
    def n_params(self):
        return self.layout.n_params

    @property
    def n_shards(self):
        return len(self.shards)

    def entry_kernels(self, needs):
        """Kernels compile on the workers, not here: nothing to announce."""
        return []

    def _evaluate(self, w, want_grad):
        t0 = time.perf_counter()
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_params,):
            raise ValueError(f"weights have shape {w.shape}, the model {self.n_params} parameters")
        self._check_workers()
        for attempt in range(RETRIES + 1):
            try:
                loss, g, spans = self._evaluate_once(w, want_grad)
                break
            except (OSError, TimeoutError, CancelledError) as exc:
                # a worker was lost while w was sent or parts came back: Dask rebuilds
                # its shards elsewhere from their source; run the evaluation again. When
                # every worker was lost at once, the scattered w went with them and the
                # round's tasks come back cancelled: once workers are back, the shards
                # are sent again and the round runs again
                if attempt == RETRIES:
                    if isinstance(exc, CancelledError):
                        raise SpargelError(f"the Dask cluster lost its workers {RETRIES + 1} times during one "
                                           f"evaluation, or the shards' data went with them (data scattered "
                                           f"from this process cannot be rebuilt): {type(exc).__name__}: "
                                           f"{exc}") from None
                    raise
                self.retries += 1
                self._check_workers()
        wall = time.perf_counter() - t0
        per_worker = {}
        for name, start, end in spans:
            lo, hi = per_worker.get(name, (start, end))
            per_worker[name] = (min(lo, start), max(hi, end))
        compute = max(hi - lo for lo, hi in per_worker.values())
        self.timings.append({"wall": wall, "compute": compute, "overhead": max(0.0, wall - compute),
                             "busy": sum(end - start for _, start, end in spans), "workers": len(per_worker)})
        return loss, g

    def _check_workers(self):
        """Before a round: wait for a worker when there is none (a clear error after
        :data:`WORKER_RESTART_WAIT` seconds), and send the shards again when none of the
        workers of the last round is left (their tasks could not run anywhere)."""
        try:
            now = set(self.client.nthreads())
        except (OSError, TimeoutError):
            now = set()
        if not now:
            wait_for_a_worker(self.client)
            now = set(self.client.nthreads())
        if self._workers and not (now & self._workers) and self.rebuild is not None:
            self.shards = list(self.rebuild())
            self.resent += 1
            now = set(self.client.nthreads())
        self._workers = now

    def _evaluate_once(self, w, want_grad):
        client = self.client
        # to one worker, through the scheduler (it knows which workers are alive); the
        # others fetch w from there (peer to peer) as their shard tasks start
        wf = client.scatter(w, hash=False, direct=False)
        try:
            parts = [client.submit(evaluate_shard, s, wf, want_grad, pure=False) for s in self.shards]
            return tree_sum(client, parts, add_parts, self.fanin)
        finally:
            wf.release()

    def loss_grad(self, w):
        """(loss, gradient) at w: the sums over the shards."""
        self.n_evals += 1
        return self._evaluate(w, True)

    def loss(self, w):
        return self._evaluate(w, False)[0]

    # -- the "bound" capability ----------------------------------------------------------
    def bound(self, w, **options):
        """The sum of the shards' quadratic bounds at ``w`` (each shard model's own
        ``bound``): loss and gradient added like :meth:`loss_grad`; the curvature stays
        on the workers and is applied there (:class:`ShardedCurvature`), or, for small
        models whose shards have exact dense curvatures, is added into one dense matrix
        (exact inner solves as in one process)."""
        from .bound import DenseCurvature, QuadraticBound
        w = np.ascontiguousarray(w, dtype=np.float64)
        self.n_evals += 1
        self._check_workers()
        client = self.client
        wf = client.scatter(w, hash=False, direct=False)
        try:
            bounds = [client.submit(bound_shard, s, wf, dict(options), pure=False) for s in self.shards]
            loss, grad, _ = tree_sum(client, [client.submit(bound_part, b, pure=False) for b in bounds], add_parts,
                                     self.fanin)
        finally:
            wf.release()
        curv = ShardedCurvature(self, bounds)
        if self.n_params <= DENSE_LIMIT and all(client.gather([client.submit(curvature_exact, b) for b in bounds])):
            curv = DenseCurvature(curv.reduce("dense", None))
        return QuadraticBound(w, loss, grad, curv, {"curvature": f"sharded {type(curv).__name__}",
                                                    "shards": self.n_shards})


class ShardedCurvature:
    """The curvature of a :meth:`ShardedModel.bound`: ``Sigma = sum_s Sigma_s``, each
    ``Sigma_s`` kept where its shard lives; a product sends ``v`` once and adds the
    shards' products in the fixed order of the loss (:func:`tree_sum`). No exact solve
    and no coordinate access: the bound solver runs conjugate gradients (l2) or OWL-QN
    on the quadratic model (l1) over these products."""

    exact_solve = False

    def __init__(self, model, bounds):
        self.model, self.bounds = model, bounds
        self._diag = None

    def reduce(self, what, v):
        client = self.model.client
        vf = None if v is None else client.scatter(np.ascontiguousarray(v, dtype=np.float64), hash=False,
                                                   direct=False)
        try:
            parts = [client.submit(curvature_part, b, what, vf, pure=False) for b in self.bounds]
            return tree_sum(client, parts, add_parts, self.model.fanin)[1]
        finally:
            if vf is not None:
                vf.release()

    def matvec(self, v):
        return self.reduce("matvec", v)

    def diagonal(self):
        if self._diag is None:
            self._diag = self.reduce("diagonal", None)
        return self._diag
