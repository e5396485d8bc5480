"""What the graph learners of :mod:`spargel.mrf` share, below all of them: the check of
a mixed data matrix and of its variable types, the variables' names, the edge weights
read from any fitted learner (:func:`edge_weight_matrix`), and the threads over
subsamples, folds or resamples that Ctrl-C stops (:func:`map_threads`).

This module imports nothing else from :mod:`spargel.mrf`, so every other module may
import it (the imports within the package run one way: a test keeps them free of
cycles).

>>> import numpy as np
>>> check_types("gc", 2).tolist()
['g', 'c']
>>> check_mixed_data(np.array([[0.5, 1], [1.5, 0], [2.0, 1]])).shape
(3, 2)
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import DataFormatError, ParameterError

__all__ = ["TYPES", "Cancelled", "check_mixed_data", "check_types", "edge_weight_matrix", "map_threads",
           "thread_count", "variable_names", "wait_for"]

_POOLS = itertools.count()          # a name per thread pool

#: a mixed model's variable types: ``"g"`` continuous (Gaussian), ``"c"`` categorical
TYPES = ("g", "c")


def check_types(types, p):
    """``types`` (a string or a sequence of ``'g'`` / ``'c'``, one per variable) as an
    array, or a :class:`~spargel.errors.ParameterError` saying what is wrong."""
    if isinstance(types, str):
        types = list(types)
    try:
        types = [str(t) for t in types]
    except TypeError:
        raise ParameterError(f"types must be a sequence of 'g' (continuous) and 'c' (categorical), got {types!r}") \
            from None
    if len(types) != p:
        raise ParameterError(f"types has {len(types)} entries for {p} variables")
    bad = [t for t in types if t not in TYPES]
    if bad:
        raise ParameterError(f"types must be 'g' (continuous) or 'c' (categorical), got {bad[0]!r}")
    return np.array(types)


def check_mixed_data(X):
    """``X`` as a float (n, p) array of at least 3 rows and 2 columns, every value
    finite, or a :class:`~spargel.errors.DataFormatError` naming the row."""
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError("X", None, f"not a 2-d numeric array ({exc})") from None
    if A.ndim != 2:
        raise DataFormatError("X", None, f"expected a 2-d array (n_samples, n_variables), got {A.ndim}-d")
    if A.shape[1] < 2:
        raise DataFormatError("X", None, "a graphical model needs at least 2 variables")
    if A.shape[0] < 3:
        raise DataFormatError("X", None, f"at least 3 samples are needed, got {A.shape[0]}")
    bad = ~np.isfinite(A)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataFormatError("X", int(r) + 1, f"column {int(c)}: {A[r, c]} (missing values are not allowed)")
    return A


def variable_names(est, labels):
    """The fitted estimator's variable names: ``labels`` checked (one distinct name per
    variable), or 0..p-1."""
    p = int(est.n_features_in_)
    if labels is None:
        return list(range(p))
    labels = list(labels)
    if len(labels) != p or len(set(labels)) != p:
        raise ValueError(f"labels must be {p} distinct names, one per variable")
    return labels


def edge_weight_matrix(estimator):
    """(p, p) symmetric matrix of a fitted estimator's edge weights (0: no edge): an
    :class:`~spargel.mrf.nodewise.IsingFit`'s ``weights_``; a
    :class:`~spargel.mrf.mixed.MixedGraphicalModel`'s ``adjacency_``, negative where
    ``signs_`` is; for a :class:`~spargel.mrf.estimator.PairwiseMRF` the interaction of a
    binary pair in 0/1 coding, ``t_00 - t_01 - t_10 + t_11`` of its table, and the
    coupling strength of a pair with more states. A selector gives its selected model's."""
    if hasattr(estimator, "best_estimator_"):
        estimator = estimator.best_estimator_
    W = getattr(estimator, "weights_", None)
    if isinstance(W, np.ndarray) and W.ndim == 2:
        return np.array(W, dtype=np.float64)
    A = getattr(estimator, "adjacency_", None)
    if isinstance(A, np.ndarray) and A.ndim == 2:          # a mixed graphical model: signed where it has a sign
        return A * np.where(estimator.signs_ < 0, -1.0, 1.0)
    if not hasattr(estimator, "edge_weights_"):
        raise ParameterError(f"{type(estimator).__name__} has no edge weights to read "
                             f"(expected a fitted PairwiseMRF, a selector, IsingFit or MixedGraphicalModel)")
    p = int(estimator.n_features_in_)
    W = np.zeros((p, p))
    for (i, j), t, s in zip(estimator.edges_, estimator.edge_weights_, estimator.edge_strength_):
        v = float(t[0, 0] - t[0, 1] - t[1, 0] + t[1, 1]) if t.shape == (2, 2) else float(s)
        W[i, j] = W[j, i] = v
    return W


class ExportsSelectedModel:
    """``to_networkx`` / ``to_pgmpy`` of an estimator whose graph is a fitted
    :class:`~spargel.mrf.estimator.PairwiseMRF` that it holds: the attribute that the
    class's ``_selected_model`` names (IsingFit's ``model_``, the selector's
    ``best_estimator_``)."""

    _selected_model = None

    def to_networkx(self, labels=None):
        """The selected graph as a ``networkx.Graph`` (:func:`spargel.mrf.export.to_networkx`)."""
        self._check_fitted()
        return getattr(self, self._selected_model).to_networkx(labels)

    def to_pgmpy(self, labels=None):
        """The selected model as a ``pgmpy.models.MarkovNetwork`` (:func:`spargel.mrf.export.to_pgmpy`)."""
        self._check_fitted()
        return getattr(self, self._selected_model).to_pgmpy(labels)


class Cancelled(Exception):
    """Raised inside a worker of :func:`map_threads` that saw its ``cancel`` event set
    (another task failed or Ctrl-C was pressed): the worker stops, nobody reads it."""


def thread_count(n_jobs, n_tasks):
    """Threads for ``n_tasks`` tasks: ``n_jobs`` (None or 1: one, -1: one per CPU), at
    most one per task."""
    if n_jobs is None or n_jobs == 1 or n_tasks <= 1:
        return 1
    import os
    workers = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    return max(1, min(workers, n_tasks))


def map_threads(fn, tasks, n_jobs=1, cancel=None):
    """``[fn(t) for t in tasks]`` on ``n_jobs`` threads (:func:`thread_count`), in the
    order of ``tasks`` whatever the threads' timing. On any exception -- Ctrl-C's
    ``KeyboardInterrupt`` in the waiting main thread included -- ``cancel`` (a
    ``threading.Event``, if given) is set so that running tasks that watch it stop early,
    the queued tasks are cancelled, the running ones are waited for, and the exception
    propagates: no thread of the call outlives it.

    >>> map_threads(lambda t: t * t, range(5), n_jobs=2)
    [0, 1, 4, 9, 16]
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    tasks = list(tasks)
    workers = thread_count(n_jobs, len(tasks))
    if workers == 1:
        return [fn(t) for t in tasks]
    prefix = f"spargel-mrf-{next(_POOLS)}"
    cancel = threading.Event() if cancel is None else cancel

    def run(t):
        if cancel.is_set():             # queued when another task failed or Ctrl-C came
            raise Cancelled
        try:
            return fn(t)
        except BaseException:
            cancel.set()                # a failed task stops the others at once
            raise

    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix)
    futures = []
    try:
        for t in tasks:
            futures.append(ex.submit(run, t))
        out = [wait_for(f) for f in futures]
    except BaseException as caught:
        cancel.set()
        for f in futures:
            f.cancel()
        ex.shutdown(wait=True)
        # a Ctrl-C that landed while the executor started a thread (after its start,
        # before the executor registered it) leaves a thread shutdown() does not know
        for th in threading.enumerate():
            if th.name.startswith(prefix + "_"):
                for _ in range(100):
                    try:
                        th.join()
                        break
                    except RuntimeError:        # not started yet
                        threading.Event().wait(0.01)
        if isinstance(caught, Cancelled):       # a task stopped by another's failure: raise that one
            for f in futures:
                if f.done() and not f.cancelled() and not isinstance(f.exception(), (Cancelled, type(None))):
                    raise f.exception() from None
        raise
    ex.shutdown(wait=True)
    return out


def wait_for(future, poll=0.1):
    """``future.result()``, waited for in steps of ``poll`` seconds: Ctrl-C reaches the
    waiting main thread within a step even when the operating system delivered SIGINT to
    another thread (a compiled kernel's), where an untimed wait would sleep on until
    the task ends."""
    while True:
        try:
            return future.result(timeout=poll)
        except TimeoutError:
            continue
