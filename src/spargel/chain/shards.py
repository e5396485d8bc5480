"""Worker-side steps of sharded training (plain functions: Dask runs them as tasks).

Building the shards of a CRF from data that lives on the workers is a map-reduce:

1. :func:`encode_part` (map): a part of the sequences (read on the worker from a file
   range or a Dask partition) becomes flat arrays over *local* vocabularies, in the
   order the names first appear;
2. :func:`part_stats` / :func:`merge_stats` (reduce, associative, in part order): the
   names with their counts; the merged order of first appearance is that of the whole
   corpus, so :func:`finish_vocab` numbers the attributes exactly as a single process
   would (most frequent first, ties in order of first appearance);
3. :func:`id_maps` / :func:`remap` (map): each part's local ids become global ids;
4. :func:`observed_space` / :func:`union_spaces` (map-reduce): the (attribute, label)
   pairs and transitions seen, merged into the global feature space;
5. :func:`crf_shard`: the shard's :class:`~spargel.chain.crf.ChainCRF` over the global
   space.

No process ever holds the whole corpus; the client receives only sizes, label names
and the feature space (the parameter layout the solver needs).
"""

from dataclasses import dataclass

import numpy as np

from ..data.dataset import SequenceData, is_unit, largest_value
from ..data.vocab import Vocabulary
from ..data.feature_space import FeatureSpace
from ..errors import DataFormatError


@dataclass
class Part:
    """A part of the training sequences over local vocabularies (first-seen order)."""

    data: SequenceData
    uni: list
    big: list
    labels: list
    n_columns: int = 0
    where: tuple | None = None      # (file, line) of its first sequence, for messages


@dataclass
class Stats:
    """Names and counts of a part (or of several, merged in order)."""

    uni: tuple
    big: tuple
    labels: list
    n_sequences: int
    n_tokens: int
    max_abs: float
    columns: list          # (n_columns, where) of the parts that read column files


def encode_part(featurizer, X, y, where=None):
    """Encode sequences ``X`` with labels ``y`` as ``featurizer`` does in a fit, but over
    fresh vocabularies kept in first-seen order (no renumbering)."""
    data, uni, big, lab = featurizer.encode_part(X, y)
    first = X[0] if len(X) else None
    n_cols = len(first.columns[0]) if hasattr(first, "columns") else 0
    where = (getattr(first, "source", "<input>"), getattr(first, "line", None))
    return Part(data, uni.names, big.names, lab.names, n_cols, where)


def read_encode(featurizer, path, start, end, encoding, unknown_label=None):
    """Read the sequences starting in bytes ``[start, end)`` of the column file ``path``
    (on the worker) and encode them (:func:`encode_part`)."""
    from ..data.column_file import ColumnFile

    try:
        sents = ColumnFile(path, encoding, unknown_label).read_range(start, end)
    except OSError as exc:
        from ..core.sharded import _worker_name
        raise DataFormatError(path, None, f"cannot be read on the Dask worker {_worker_name()} "
                                          f"({exc.strerror or exc})") from None
    return encode_part(featurizer, sents, [s.labels for s in sents]) if sents else _empty_part()


def encode_partition(featurizer, items):
    """Encode a Dask bag partition: items are :class:`Sentence` objects or
    ``(sequence, labels)`` pairs."""
    items = list(items)
    if not items:
        return _empty_part()
    X, y = [], []
    for i, item in enumerate(items):
        if hasattr(item, "columns") and hasattr(item, "labels"):
            X.append(item)
            y.append(item.labels)
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            X.append(item[0])
            y.append(list(item[1]))
        else:
            raise TypeError(f"a bag of training sequences holds Sentence objects or (sequence, labels) pairs; "
                            f"item {i} of a partition is {type(item).__name__}")
    return encode_part(featurizer, X, y)


def _empty_part():
    z = np.zeros(1, np.int64)
    data = SequenceData(z, z.copy(), np.zeros(0, np.int32), np.zeros(0), z.copy(), np.zeros(0, np.int32),
                        np.zeros(0), np.zeros(0, np.int32))
    return Part(data, [], [], [])


def part_stats(part):
    d = part.data
    cols = [(part.n_columns, part.where)] if part.n_columns else []
    return Stats((part.uni, np.bincount(d.uni_ids, minlength=len(part.uni)).astype(np.int64)),
                 (part.big, np.bincount(d.big_ids, minlength=len(part.big)).astype(np.int64)),
                 list(part.labels), d.n_sequences, d.n_tokens,
                 max(largest_value(d.uni_vals), largest_value(d.big_vals)), cols)


def _merge_counts(pairs):
    index, names, counts = {}, [], []
    for part_names, part_counts in pairs:
        for name, c in zip(part_names, part_counts.tolist()):
            i = index.get(name)
            if i is None:
                index[name] = len(names)
                names.append(name)
                counts.append(c)
            else:
                counts[i] += c
    return names, np.asarray(counts, dtype=np.int64)


def merge_stats(*stats):
    """Stats of consecutive parts merged in order (associative: usable in a tree)."""
    labels = Vocabulary()
    for s in stats:
        for name in s.labels:
            labels.add(name)
    return Stats(_merge_counts([s.uni for s in stats]), _merge_counts([s.big for s in stats]), labels.names,
                 sum(s.n_sequences for s in stats), sum(s.n_tokens for s in stats),
                 max(s.max_abs for s in stats), [c for s in stats for c in s.columns])


@dataclass
class GlobalVocab:
    uni: Vocabulary
    big: Vocabulary
    labels: Vocabulary


def _by_frequency(names, counts):
    order = np.argsort(-counts, kind="stable")
    return Vocabulary(names[i] for i in order)


def finish_vocab(stats):
    """The global vocabularies: attributes most frequent first (ties in order of first
    appearance), labels in order of first appearance -- the numbering of one process."""
    return GlobalVocab(_by_frequency(*stats.uni), _by_frequency(*stats.big), Vocabulary(stats.labels))


def summary(stats):
    """What the client needs to know of the merged stats (no vocabularies)."""
    return {"n_uni": len(stats.uni[0]), "n_big": len(stats.big[0]), "labels": list(stats.labels),
            "n_sequences": stats.n_sequences, "n_tokens": stats.n_tokens, "max_abs": stats.max_abs,
            "columns": stats.columns}


def id_maps(vocab, stats):
    """Local -> global ids of one part's attribute and label names."""
    out = []
    for v, names in ((vocab.uni, stats.uni[0]), (vocab.big, stats.big[0]), (vocab.labels, stats.labels)):
        m = v.mapping
        out.append(np.fromiter((m[n] for n in names), dtype=np.int32, count=len(names)))
    return out


def remap(part, maps):
    """The part's data with global ids."""
    uni, big, lab = maps
    d = part.data
    labels = None
    if d.labels is not None:
        labels = np.append(lab, np.int32(-1))[d.labels]          # -1 (unknown) stays -1
    return SequenceData(d.seq_ptr, d.uni_ptr, uni[d.uni_ids] if len(d.uni_ids) else d.uni_ids, d.uni_vals,
                        d.big_ptr, big[d.big_ids] if len(d.big_ids) else d.big_ids, d.big_vals, labels)


def slice_sequences(data, lo, hi):
    """Sequences ``lo .. hi-1`` of ``data`` as a dataset of their own (contiguous: no
    per-sequence work)."""
    t0, t1 = int(data.seq_ptr[lo]), int(data.seq_ptr[hi])
    u0, u1 = int(data.uni_ptr[t0]), int(data.uni_ptr[t1])
    b0, b1 = int(data.big_ptr[t0]), int(data.big_ptr[t1])
    return SequenceData(data.seq_ptr[lo:hi + 1] - t0, data.uni_ptr[t0:t1 + 1] - u0, data.uni_ids[u0:u1].copy(),
                        _values(data.uni_vals[u0:u1]), data.big_ptr[t0:t1 + 1] - b0, data.big_ids[b0:b1].copy(),
                        data.big_vals[b0:b1].copy(), None if data.labels is None else data.labels[t0:t1].copy())


def _values(vals):
    """A copy of a slice of attribute values (none of values that are all 1)."""
    return vals if is_unit(vals) else vals.copy()


# -- the feature space ---------------------------------------------------------------
def observed_space(data, n_labels, n_uni, n_big, transitions, all_states, all_transitions):
    return FeatureSpace.observed(data, n_labels, n_uni, n_big, transitions, all_states=all_states,
                                 all_transitions=all_transitions)


def _csr_keys(ptr, cols, width):
    rows = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
    return rows * width + cols


def _keys_csr(keys, n_rows, width):
    counts = np.bincount(keys // width, minlength=n_rows)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, (keys % width).astype(np.int32)


def union_spaces(*spaces):
    """The feature space holding every weight of any of ``spaces`` (same sizes)."""
    from functools import reduce

    first = spaces[0]
    L = first.n_labels
    n_u, n_b = len(first.u_ptr) - 1, len(first.b_ptr) - 1
    u = reduce(np.union1d, [_csr_keys(s.u_ptr, s.u_lab, L) for s in spaces])
    b = reduce(np.union1d, [_csr_keys(s.b_ptr, s.b_pair, L * L) for s in spaces])
    t = reduce(np.union1d, [s.t_pair.astype(np.int64) for s in spaces])
    return FeatureSpace(L, *_keys_csr(u.astype(np.int64), n_u, L), *_keys_csr(b.astype(np.int64), n_b, L * L),
                        t.astype(np.int32))


def crf_shard(data, space, n_jobs, sample_weight=None):
    """The shard model: a ChainCRF over the global ``space``."""
    from .crf import ChainCRF
    return ChainCRF(space, data, n_jobs=n_jobs, sample_weight=sample_weight)


def subset_names(vocab, kind, keep):
    """Names of the attributes ``keep`` of the global vocabulary ``kind`` ("uni"/"big")."""
    v = getattr(vocab, kind)
    return [v[int(i)] for i in keep]


def encode_dev(featurizer, vocab, X):
    """A development set encoded over the global vocabularies (for dev scores)."""
    return featurizer.with_vocabularies(vocab.uni, vocab.big, vocab.labels).encode(X)
