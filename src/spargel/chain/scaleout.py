"""Fitting :class:`spargel.CRF` on a Dask cluster (``CRF(client=...)``).

Three kinds of input, all ending in the same shard models:

* in-memory sequences: encoded on the client as usual (the client holds them already),
  cut into ``n_shards`` contiguous runs of sequences, each shipped once as flat arrays
  inside the task that builds its shard (so a lost shard can be rebuilt);
* a list of column files (or one file): cut into byte ranges that the workers read
  themselves (:mod:`~spargel.data.conll_ranges`); vocabularies and the feature
  space are a map-reduce over the parts (:mod:`~spargel.chain.shards`);
* a Dask bag of :class:`~spargel.data.conll.Sentence` objects or ``(sequence, labels)``
  pairs: one part per partition, then as for files.

The solver runs on the client against a :class:`~spargel.core.sharded.ShardedModel`.
"""

import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..scaleout import cluster
from . import shards as S
from ..data.vocab import Vocabulary
from ..errors import CapabilityError, DataFormatError, ParameterError, SpargelError
from ..core.factory import make_model
from ..core.params import check_sample_weight
from ..core.protocol import ParameterLayout
from ..core.threads import balanced_chunks
from ..data.feature_space import FeatureSpace
from ..solvers import get_solver
from .fitting import encode_training
from .labels import label_lists
from .monitor import monitor_for

@dataclass(frozen=True)
class ColumnFiles:
    """Training data as column files with their reading options: ``paths`` (one path or
    a list), ``encoding`` and ``unknown_label`` (the label that marks a token's label as
    unknown, read as None). ``CRF.fit(ColumnFiles(...))`` reads them as a list of paths
    is read (on the workers with a client); ``spargel train --scheduler`` passes one."""

    paths: object
    encoding: str = "utf-8"
    unknown_label: object = None


def is_file_list(X):
    """True for a path, a non-empty list of paths or :class:`ColumnFiles`."""
    if isinstance(X, ColumnFiles):
        return True
    if isinstance(X, (str, os.PathLike)):
        return True
    return isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(x, (str, os.PathLike)) for x in X)


def file_list(X):
    if isinstance(X, ColumnFiles):
        X = X.paths
    return [os.fspath(X)] if isinstance(X, (str, os.PathLike)) else [os.fspath(x) for x in X]


def _reading(X):
    """(encoding, unknown label) of column files ``X``."""
    return (X.encoding, X.unknown_label) if isinstance(X, ColumnFiles) else ("utf-8", None)


def worker_featurizer(plan):
    """The featurizer the workers encode their parts with: the plan's settings over
    fresh vocabularies."""
    return plan.new_featurizer()


def read_files(paths, encoding="utf-8", unknown_label=None):
    """Read column files in this process: (sentences, label lists)."""
    from ..data.column_file import ColumnFile
    sents = [s for p in paths for s in ColumnFile(p, encoding, unknown_label).read()]
    return sents, [s.labels for s in sents]


def _file_size(path):
    """Worker side: the size of a file the worker can read, or a clear error."""
    try:
        with open(path, "rb"):
            return os.path.getsize(path)
    except OSError as exc:
        from ..core.sharded import _worker_name
        raise DataFormatError(path, None, f"cannot be read on the Dask worker {_worker_name()} "
                                          f"({exc.strerror or exc}); the workers need the training files "
                                          f"at the same path (a shared file system)") from None


def _split_files(sizes, n_shards):
    """(file index, start, end) ranges: about n_shards in all, in proportion to size."""
    total = sum(sizes) or 1
    out = []
    for i, size in enumerate(sizes):
        k = max(1, round(n_shards * size / total))
        from ..data.conll_ranges import split_ranges
        out.extend((i, a, b) for a, b in split_ranges(size, k))
    return out


def _n_sequences(stats):
    return stats.n_sequences


def _same(x):
    return x


class _RemoteVocab:
    """Stands for a vocabulary that stays on the cluster: ``subset(keep)`` fetches the
    names of the attributes ``keep`` only (what the fitted model keeps)."""

    def __init__(self, client, vocab_f, kind):
        self.client, self.vocab_f, self.kind = client, vocab_f, kind

    def subset(self, keep):
        names = self.client.submit(S.subset_names, self.vocab_f, self.kind, np.asarray(keep), pure=False).result()
        return Vocabulary(names)


def gather(X, y):
    """Without a cluster: the column files read here, or the Dask collection computed
    here, as in-memory ``(X, y)``."""
    if is_file_list(X):
        if y is not None:
            raise ValueError("with a list of files, the labels come from the files' last column: give y=None")
        return read_files(file_list(X), *_reading(X))
    X = X.compute()
    if y is None:
        y = [getattr(s, "labels", None) if hasattr(s, "labels") else s[1] for s in X]
        X = [s if hasattr(s, "columns") else s[0] for s in X]
    return X, y


def fit_crf(est, X, y, X_dev=None, y_dev=None, callback=None, sample_weight=None, encoding="utf-8",
            unknown_label=None):
    """``est.fit`` of column files ``X`` read in ``encoding`` (labels ``unknown_label``
    read as None), or of a Dask bag, with ``est``'s client (see the module doc)."""
    if is_file_list(X) and not isinstance(X, ColumnFiles):
        X = ColumnFiles(X, encoding, unknown_label)
    return est.fit(X, y, X_dev=X_dev, y_dev=y_dev, callback=callback, sample_weight=sample_weight)


def fit_sharded(plan, client, X, y, X_dev=None, y_dev=None, callback=None, sample_weight=None):
    """The Dask fit of ``plan`` (a CRF's :class:`~spargel.estimation.FitPlan`) on
    ``client``: in-memory sequences ``X`` with labels ``y``, column files (a list of
    paths or :class:`ColumnFiles`) or a Dask bag. Returns the
    :class:`~spargel.estimation.FitOutcome` (the attribute vocabularies stay on the
    cluster for files and bags: the fitted model fetches the names it keeps)."""
    from ..estimation import FitOutcome

    files = is_file_list(X)
    if plan.order != 1:
        raise CapabilityError("sharded training on Dask supports first-order CRFs only (order=1), "
                              f"got order={plan.order}")
    _refuse_unsupported_solver(plan)
    if plan.warm_start and (files or cluster.is_dask_collection(X)):
        raise ValueError("warm_start needs in-memory sequences (the vocabularies stay on the cluster)")
    built = build(plan, X, y, client, sample_weight)
    dev = None
    if X_dev is not None:
        y_dev = label_lists(y_dev, "y_dev")
        if built.vocab is None:
            dev = (built.featurizer.encode(X_dev), y_dev)
        else:
            dev = (client.submit(S.encode_dev, worker_featurizer(plan), built.vocab, X_dev, pure=False).result(),
                   y_dev)
    result = _solve(plan, built, dev, callback)
    uni, big = built.featurizer.uni, built.featurizer.big
    if built.vocab is not None:
        uni, big = _RemoteVocab(client, built.vocab, "uni"), _RemoteVocab(client, built.vocab, "big")
    return FitOutcome(uni, big, built.labels, built.space, result.w, result, timings=built.model.timings)


class Built:
    """A sharded CRF ready for a solver: ``model`` (a ShardedModel), ``space`` (its
    feature space), ``vocab`` (the future of the global vocabularies when they stay on
    the cluster, else None), ``w0`` (warm start), ``keep`` (futures a lost shard is
    rebuilt from: hold them as long as the model), ``labels`` (the label vocabulary)
    and ``featurizer`` (the training featurizer, with its vocabularies for in-memory
    data; fresh ones otherwise)."""

    def __init__(self, model, space, vocab, w0, keep, labels=None, featurizer=None):
        self.model, self.space, self.vocab, self.w0, self.keep = model, space, vocab, w0, keep
        self.labels, self.featurizer = labels, featurizer


def build(plan, X, y=None, client=None, sample_weight=None):
    """The sharded model of ``plan`` (a CRF's :class:`~spargel.estimation.FitPlan`) for
    training data ``X`` (in-memory sequences with labels ``y``, column files: a list of
    paths or :class:`ColumnFiles`, or a Dask bag) on ``client`` (default:
    ``plan.client``), with the label vocabulary (and, for in-memory data, the training
    featurizer) as ``fit`` has them before solving."""
    from .crf import crf_layout

    if hasattr(plan, "fit_plan"):              # an estimator: its plan
        plan = plan.fit_plan()
    client = cluster.resolve(client if client is not None else plan.client)
    if client is None:
        raise ValueError("a sharded model needs a Dask client")
    threads = cluster.workers(client)
    n_shards = plan.n_shards or len(threads)
    if is_file_list(X) or cluster.is_dask_collection(X):
        if y is not None:
            raise ValueError("with files or a Dask bag the labels come with the data: give y=None")
        if sample_weight is not None:
            raise ValueError("sample_weight needs in-memory sequences; with files or a Dask bag, give none")
        if is_file_list(X):
            def from_source(threads):
                return _build_from_files(plan, client, threads, file_list(X), n_shards, *_reading(X))
        else:
            def from_source(threads):
                return _build_from_bag(plan, client, threads, X, n_shards)
        built = from_source(threads)
        resend = None
    else:
        built = _build_in_memory(plan, client, threads, X, label_lists(y, "y"), n_shards, sample_weight,
                                 lambda sw, n: check_sample_weight(sw, n, "sequence"))
        held, resend = built[-2]
        built = built[:-2] + (held, built[-1])
    space, models, n_samples, vocab_f, w0, keep, (labels, featurizer) = built
    model = make_model("sharded", client, models, crf_layout(space), n_samples)
    out = Built(model, space, vocab_f, w0, keep, labels, featurizer)

    def rebuild():
        # every worker was lost: the shards again, placed on the workers there are now
        # (in-memory data sent again from here; files and bags read and encoded again,
        # which gives the same vocabularies and feature space)
        threads = cluster.workers(client)
        if resend is not None:
            return resend(threads)
        space2, models2, _, vocab2, _, keep2, _ = from_source(threads)
        if space2.n_params != space.n_params:
            raise SpargelError("the training data read again after the Dask cluster lost every worker "
                               "differ from the first reading (the files changed?)")
        out.vocab, out.keep = vocab2, keep2
        return models2

    model.rebuild = rebuild
    return out


def _refuse_unsupported_solver(plan):
    """Run the solver's own capability check against a stand-in with the capabilities of
    a sharded model, before any data is read (a clear CapabilityError, early)."""
    from ..core.penalties import ElasticNet

    class Reached(Exception):
        pass

    class Probe:
        n_params, n_samples = 1, 1
        layout = ParameterLayout.ungrouped(1)

        def loss_grad(self, w):
            raise Reached

        def bound(self, w, **options):
            raise Reached

        loss = loss_grad

    try:
        get_solver(plan.solver.name)(Probe(), ElasticNet(0.0, 0.0), None, max_iter=1, tol=plan.tol, gtol=plan.gtol,
                                     window=plan.window, monitor=None, **dict(plan.solver_options))
    except Reached:
        pass
    except Exception as exc:
        if isinstance(exc, CapabilityError):
            raise CapabilityError(f"{exc} (with a Dask client the model is sharded: solvers that need only the "
                                  f"loss and gradient, such as 'owlqn' and 'lbfgs', run on it)") from None


def _build_in_memory(plan, client, threads, X, y, n_shards, sample_weight, check_weights):
    from ..estimation import warn_large_values

    featurizer = plan.new_featurizer()
    data = encode_training(plan, featurizer, X, y)
    sw = check_weights(sample_weight, data.n_sequences)
    warn_large_values(plan.estimator, data.uni_vals)
    warn_large_values(plan.estimator, data.big_vals)
    uni, big, labels = featurizer.uni, featurizer.big, featurizer.labels
    space = plan.builder.space(data, len(labels), len(uni), len(big))
    w0 = None if plan.previous is None else plan.previous.weights(space, uni, big, labels)
    bounds = balanced_chunks(data.seq_ptr, n_shards)
    where, n_jobs = cluster.placement(threads, len(bounds) - 1)
    held = []

    def send(threads):
        """The shard models' futures, built on ``threads``' workers from the data here."""
        where, n_jobs = cluster.placement(threads, len(bounds) - 1)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge")       # the data travel with their tasks
            space_f = client.submit(_same, space, pure=False)
            held[:] = [space_f]
            return [client.submit(S.crf_shard, S.slice_sequences(data, lo, hi), space_f, n_jobs[k],
                                  None if sw is None else sw[lo:hi], workers=[where[k]], allow_other_workers=True,
                                  pure=False)
                    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]

    models = send(threads)
    return space, models, data.n_sequences, None, w0, (held, send), (labels, featurizer)


def _refuse_min_freq(plan):
    if plan.builder.min_freq:
        raise ParameterError("min_freq needs the whole training set's counts in one place: with a Dask client "
                             "it applies to in-memory data (X, y), not to files or bags")


def _build_from_files(plan, client, threads, paths, n_shards, encoding, unknown_label):
    _refuse_min_freq(plan)
    paths = [os.path.abspath(p) for p in paths]
    sizes = client.gather([client.submit(_file_size, p, pure=False) for p in paths])
    ranges = _split_files(sizes, n_shards)
    where, _ = cluster.placement(threads, len(ranges))
    featurizer = worker_featurizer(plan)
    parts = [client.submit(S.read_encode, featurizer, paths[i], a, b, encoding, unknown_label, workers=[where[k]],
                           allow_other_workers=True, pure=False) for k, (i, a, b) in enumerate(ranges)]
    return _build_from_parts(plan, client, threads, parts, " + ".join(paths))


def _build_from_bag(plan, client, threads, bag, n_shards):
    _refuse_min_freq(plan)
    import dask

    if not hasattr(bag, "map_partitions") or hasattr(bag, "columns") or hasattr(bag, "chunks"):
        raise TypeError("CRF.fit takes a Dask bag of Sentence objects or (sequence, labels) pairs; "
                        f"got {type(bag).__name__}")
    if n_shards and bag.npartitions != n_shards:
        bag = bag.repartition(npartitions=n_shards)
    featurizer = worker_featurizer(plan)
    parts = client.compute([dask.delayed(S.encode_partition)(featurizer, d) for d in bag.to_delayed()])
    return _build_from_parts(plan, client, threads, parts, "the Dask bag")


def _build_from_parts(plan, client, threads, parts, source):
    """Map-reduce from encoded parts to shard models (see :mod:`.shards`)."""
    from ..estimation import warn_large_values
    from ..core.sharded import tree_future

    stats = [client.submit(S.part_stats, p, pure=False) for p in parts]
    counts = client.gather([client.submit(_n_sequences, s, pure=False) for s in stats])
    keep = [k for k, c in enumerate(counts) if c > 0]
    if not keep:
        raise DataFormatError(source, None, "no sequences (the input has no token lines)")
    parts = [parts[k] for k in keep]
    stats = [stats[k] for k in keep]
    merged = tree_future(client, stats, S.merge_stats)
    info = client.submit(S.summary, merged, pure=False).result()
    cols = info["columns"]
    for n_cols, (path, line) in cols[1:]:
        if n_cols != cols[0][0]:
            raise DataFormatError(path, line, f"{n_cols + 1} columns, but {cols[0][1][0]}:{cols[0][1][1]} has "
                                              f"{cols[0][0] + 1}")
    labels = info["labels"]
    if len(labels) < 2:
        raise ValueError(f"training data has {len(labels)} distinct label(s); need at least 2")
    warn_large_values(plan.estimator, np.array([info["max_abs"]]))
    label_vocab = Vocabulary(labels)
    vocab_f = client.submit(S.finish_vocab, merged, pure=False)
    # each shard stays where its part was read: its remapped data and its model are
    # built there (left to itself the scheduler may put several shard models on the
    # worker that holds the feature space, which then holds their memory and does their
    # work while the others idle)
    held = client.who_has(parts)
    where = [next(iter(held.get(p.key, ())), None) for p in parts]
    homes = [None if a is None else [a] for a in where]
    maps = [client.submit(S.id_maps, vocab_f, s, pure=False) for s in stats]
    datas = [client.submit(S.remap, p, m, workers=h, allow_other_workers=True, pure=False)
             for p, m, h in zip(parts, maps, homes)]
    L, n_u, n_b = len(labels), info["n_uni"], info["n_big"]
    builder = plan.builder
    trans = builder.transitions
    if builder.feature_space == "full":
        space_f = client.submit(FeatureSpace.full, L, n_u, n_b, trans, pure=False)
    else:
        flags = (builder.all_states, builder.all_transitions)
        space_f = tree_future(client, [client.submit(S.observed_space, d, L, n_u, n_b, trans, *flags, pure=False)
                                       for d in datas], S.union_spaces)
    n_jobs = cluster.thread_shares(threads, where)
    models = [client.submit(S.crf_shard, d, space_f, n_jobs[k], workers=homes[k], allow_other_workers=True,
                            pure=False) for k, d in enumerate(datas)]
    space = space_f.result()
    # keep the small pieces a lost shard is rebuilt from (maps, space, vocabularies) on
    # two workers; the parts themselves are re-read from their source when needed
    if len(threads) > 1:
        client.replicate([vocab_f, space_f] + maps, n=2)
    return space, models, info["n_sequences"], vocab_f, None, (maps, space_f), (label_vocab, worker_featurizer(plan))


def _solve(plan, built, dev, callback):
    from ..estimation import solve

    names = built.labels.names
    lc = plan.label_constraints(names) if dev is not None else None
    monitor = monitor_for(plan, built.space, names, lc, dev, callback, built.featurizer)
    return solve(plan, built.model, built.w0, monitor)
