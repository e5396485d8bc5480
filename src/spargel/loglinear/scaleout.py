"""Fitting :class:`spargel.LogLinearClassifier` on a Dask cluster.

* In-memory ``X`` (array, sparse matrix, feature dicts) with ``client=...``: the client
  builds the design matrix as usual and cuts it into ``n_shards`` contiguous row blocks,
  each shipped once inside the task that builds its
  :class:`~spargel.loglinear.model.FlatLogLinear` shard.
* A Dask array (or dataframe) ``X`` with a Dask array (or series) ``y``: one shard per
  row block (``n_shards`` re-chunks), read where the block is computed; the classes, the
  largest value and the "observed" mask are map-reduces over the blocks, so only they
  and the gradient sums reach the client.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from ..scaleout import cluster
from ..core.factory import make_model
from ..core.threads import balanced_chunks
from .labels import class_labels as _class_labels


def _same(x):
    return x


def _flat_shard(X, ids, n_classes, fit_intercept, sample_weight, mask):
    from .model import FlatLogLinear
    return FlatLogLinear(X, ids, n_classes, fit_intercept=fit_intercept, sample_weight=sample_weight, mask=mask)


def sharded_model(plan, M, ids, n_classes, sample_weight, mask):
    """The sharded model of ``LogLinearClassifier.fit`` for an in-memory design matrix,
    under the classifier's :class:`~spargel.estimation.FitPlan` (its checks have run)."""
    from .model import FlatLogLinear

    if hasattr(plan, "fit_plan"):              # an estimator: its plan
        plan = plan.fit_plan()
    client = cluster.resolve(plan.client)
    threads = cluster.workers(client)
    n = M.shape[0]
    bounds = balanced_chunks(np.arange(n + 1, dtype=np.int64), plan.n_shards or len(threads))
    fit_intercept = plan.fit_intercept
    layout = FlatLogLinear(M[:1], ids[:1], n_classes, fit_intercept=fit_intercept).layout

    def send(threads):
        """The shards' futures, built on ``threads``' workers from the rows here (again
        after the cluster lost every worker: ``ShardedModel.rebuild``)."""
        where, _ = cluster.placement(threads, len(bounds) - 1)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge")       # the data travel with their tasks
            mask_f = client.submit(_same, mask, pure=False)
            shards = [client.submit(_flat_shard, M[lo:hi], ids[lo:hi], n_classes, fit_intercept,
                                    None if sample_weight is None else sample_weight[lo:hi], mask_f,
                                    workers=[where[k]], allow_other_workers=True, pure=False)
                      for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
        return shards, mask_f

    shards, mask_f = send(threads)
    model = make_model("sharded", client, shards, layout, n)
    model.keep = mask_f

    def rebuild():
        shards, model.keep = send(cluster.workers(client))
        return shards

    model.rebuild = rebuild
    return model


# -- Dask collections ------------------------------------------------------------------
def _block_matrix(X):
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    import scipy.sparse as sp
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.ascontiguousarray(X, dtype=np.float64)


def _block_labels(y):
    return np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y).ravel()


def _block_facts(X, y):
    """Worker side: (rows, columns, distinct labels, largest |value|, finite?) of a block."""
    M = _block_matrix(X)
    v = M.data if hasattr(M, "indptr") else M.ravel()
    y = _block_labels(y)
    if len(y) != M.shape[0]:
        raise ValueError(f"a block of X has {M.shape[0]} rows but its block of y {len(y)} labels")
    return M.shape[0], M.shape[1], np.unique(y), float(np.max(np.abs(v))) if len(v) else 0.0, \
        bool(np.all(np.isfinite(v)))


def _block_shard(X, y, classes, fit_intercept, mask):
    M = _block_matrix(X)
    ids = np.searchsorted(classes, _block_labels(y)).astype(np.int64)
    return _flat_shard(M, ids, len(classes), fit_intercept, None, mask)


def _block_seen(X, y, classes):
    import scipy.sparse as sp
    M = _block_matrix(X)
    C = (sp.csr_matrix(M) if not sp.issparse(M) else M).tocoo()
    ids = np.searchsorted(classes, _block_labels(y))
    seen = np.zeros((C.shape[1], len(classes)), dtype=bool)
    nz = C.data != 0
    seen[C.col[nz], ids[C.row[nz]]] = True
    return seen


def _or(*parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out |= p
    return out


def _blocks(X, y, n_shards):
    """Per row block: (delayed X block, delayed y block), aligned."""
    if hasattr(X, "chunks"):                                  # dask array
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
        if n_shards:
            X = X.rechunk({0: -(-X.shape[0] // n_shards)})
        X = X.rechunk({1: -1})
        if not hasattr(y, "chunks"):
            raise TypeError("with a Dask array X, give y as a Dask array too")
        y = y.rechunk((X.chunks[0],))
        xs = X.to_delayed().ravel().tolist()
        ys = y.to_delayed().ravel().tolist()
        names = None
    else:                                                     # dask dataframe
        if n_shards and X.npartitions != n_shards:
            raise ValueError(f"n_shards={n_shards} but X has {X.npartitions} partitions: repartition X and y "
                             f"together (or leave n_shards=None)")
        if not hasattr(y, "to_delayed") or y.npartitions != X.npartitions:
            raise ValueError("with a Dask dataframe X, give y as a Dask series with the same partitions")
        xs, ys = X.to_delayed(), y.to_delayed()
        names = [str(c) for c in X.columns]
    return xs, ys, names


@dataclass(frozen=True)
class CollectionFit:
    """What the Dask-collection fit hands back to ``LogLinearClassifier.fit``: the
    number of columns ``n_features``, their ``names`` (a dataframe's, else None), the
    ``classes``, the solver's ``result`` and the shards' ``timings``."""

    n_features: int
    names: object
    classes: object
    result: object
    timings: object


def fit_collection(plan, client, X, y, sample_weight=None):
    """The fit of ``plan`` (a ``LogLinearClassifier``'s
    :class:`~spargel.estimation.FitPlan`) on a Dask array / dataframe ``X`` and labels
    ``y`` on ``client``; returns a :class:`CollectionFit`."""
    import dask

    from ..estimation import solve, warn_large_values
    from .model import FlatLogLinear

    if sample_weight is not None:
        raise ValueError("sample_weight needs in-memory X; with a Dask collection, give none")
    if plan.warm_start:
        raise ValueError("warm_start needs in-memory X")
    cluster.workers(client)                    # a clear error when there are none
    xs, ys, names = _blocks(X, y, plan.n_shards)
    parts = client.compute([dask.delayed(_same)(a) for a in xs])
    labs = client.compute([dask.delayed(_same)(b) for b in ys])
    facts = client.gather([client.submit(_block_facts, a, b, pure=False) for a, b in zip(parts, labs)])
    n = sum(f[0] for f in facts)
    d = facts[0][1]
    if n == 0:
        raise ValueError("X has no samples")
    if not all(f[4] for f in facts):
        raise ValueError("X contains NaN or infinite values")
    classes, _ = _class_labels(np.concatenate([f[2] for f in facts]))
    warn_large_values(plan.estimator, np.array([max(f[3] for f in facts)]))
    K = len(classes)
    fit_intercept = plan.fit_intercept
    mask_f = None
    if plan.feature_space == "observed":
        from ..core.sharded import tree_future
        seen = tree_future(client, [client.submit(_block_seen, a, b, classes, pure=False)
                                    for a, b in zip(parts, labs)], _or)
        mask_f = client.submit(_observed_mask, seen, K, fit_intercept, pure=False)
    shards = [client.submit(_block_shard, a, b, classes, fit_intercept, mask_f, pure=False)
              for a, b, f in zip(parts, labs, facts) if f[0] > 0]
    layout = FlatLogLinear(np.zeros((1, d)), np.zeros(1, np.int64), K, fit_intercept=fit_intercept).layout
    model = make_model("sharded", client, shards, layout, n)
    result = solve(plan, model)
    del mask_f
    return CollectionFit(d, names, classes, result, model.timings)


def _observed_mask(seen, K, fit_intercept):
    mask = seen.ravel().astype(np.float64)
    return np.concatenate([mask, np.ones(K)]) if fit_intercept else mask
