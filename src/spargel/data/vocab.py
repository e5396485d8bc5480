"""Vocabularies: the only place where strings live; everything else uses ids."""

import numpy as np
from .dataset import id_counts


class Vocabulary:
    """A growable string <-> id map.

    >>> v = Vocabulary(["B-NP", "I-NP"])
    >>> v.add("O"), v.id("I-NP"), v[2], len(v)
    (2, 1, 'O', 3)
    """

    __slots__ = ("_ids", "_names", "_split")

    def __init__(self, names=()):
        self._names = []
        self._ids = {}
        self._split = None
        for name in names:
            self.add(name)

    @classmethod
    def of_distinct(cls, names):
        """A vocabulary of ``names`` in their order, built at once; ``ValueError`` when
        one is listed twice (``Vocabulary(names)`` would keep the first).

        >>> Vocabulary.of_distinct(["B-NP", "I-NP"]).id("I-NP")
        1
        """
        v = cls()
        v._names = list(names)
        v._ids = dict(zip(v._names, range(len(v._names))))
        if len(v._ids) != len(v._names):
            raise ValueError("a name is listed twice")
        return v

    def add(self, name):
        """The id of ``name``, adding it when it is new."""
        i = self._ids.get(name)
        if i is None:
            i = len(self._names)
            self._ids[name] = i
            self._names.append(name)
            if self._split is not None:
                _index_splits(self._split[1], name, i, self._split[0])
        return i

    def add_new(self, names):
        """Add ``names`` (distinct, none of them in the vocabulary: not checked) at the
        end, in their order, at once; returns the id of the first.

        >>> v = Vocabulary(["a"])
        >>> v.add_new(["b", "c"]), v.id("c")
        (1, 2)
        """
        start = len(self._names)
        self._ids.update(zip(names, range(start, start + len(names))))
        self._names.extend(names)
        if self._split is not None:
            sep, index = self._split
            for i in range(start, len(self._names)):
                _index_splits(index, self._names[i], i, sep)
        return start

    def split_index(self, sep="="):
        """``{key: {value: id}}`` for every way of writing each name as ``key + sep +
        value`` (kept up to date by :meth:`add`; one separator at a time): looking up a
        feature-dict entry ``key: value`` this way needs no new string (the tagging hot
        path)."""
        if self._split is None or self._split[0] != sep:
            index = {}
            for i, name in enumerate(self._names):
                _index_splits(index, name, i, sep)
            self._split = (sep, index)
        return self._split[1]

    def id(self, name, default=-1):
        """The id of ``name``, or ``default`` when it is unknown."""
        return self._ids.get(name, default)

    def __contains__(self, name):
        return name in self._ids

    def __getitem__(self, i):
        return self._names[i]

    def __len__(self):
        return len(self._names)

    def __iter__(self):
        return iter(self._names)

    @property
    def names(self):
        return list(self._names)

    @property
    def mapping(self):
        """The underlying ``str -> id`` dict (read it, do not change it)."""
        return self._ids

    def permute(self, order):
        """Renumber in place: the name at old position ``order[i]`` gets id ``i``
        (``order`` must be a permutation; the dict is updated, not copied)."""
        names = [self._names[i] for i in order]
        if len(names) != len(self._names):
            raise ValueError("order must be a permutation of the ids")
        self._ids.update(zip(names, range(len(names))))
        self._names = names
        self._split = None
        return self

    def subset(self, keep):
        """A new vocabulary with the names at positions ``keep`` (in that order)."""
        names = self._names
        out = Vocabulary()
        out._names = [names[i] for i in keep]
        out._ids = dict(zip(out._names, range(len(out._names))))
        if len(out._ids) != len(out._names):        # a position kept twice: the first wins
            return Vocabulary(out._names)
        return out

    # -- compact binary form used by model files ---------------------------------
    def to_arrays(self):
        """(utf-8 bytes as uint8, offsets as int64): no pickles, no fixed-width strings."""
        encoded = [s.encode("utf-8") for s in self._names]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
        return blob, offsets

    @classmethod
    def from_arrays(cls, blob, offsets):
        """Inverse of :meth:`to_arrays`; raises ``ValueError`` on inconsistent arrays."""
        blob = np.asarray(blob)
        offsets = np.asarray(offsets)
        if blob.dtype != np.uint8 or blob.ndim != 1:
            raise ValueError("vocabulary text must be a 1-d uint8 array")
        if offsets.dtype != np.int64 or offsets.ndim != 1 or len(offsets) < 1:
            raise ValueError("vocabulary offsets must be a non-empty 1-d int64 array")
        if offsets[0] != 0 or offsets[-1] != len(blob) or np.any(np.diff(offsets) < 0):
            raise ValueError("vocabulary offsets are inconsistent with its text")
        raw = blob.tobytes()
        try:
            names = [raw[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]
        except UnicodeDecodeError as exc:
            raise ValueError(f"vocabulary text is not valid utf-8 ({exc.reason})") from None
        vocab = cls(names)
        if len(vocab) != len(names):
            raise ValueError("vocabulary has duplicate entries")
        return vocab


def _index_splits(index, name, i, sep="="):
    j = name.find(sep)
    while j >= 0:
        sub = index.get(name[:j])
        if sub is None:
            sub = index[name[:j]] = {}
        sub[name[j + len(sep):]] = i
        j = name.find(sep, j + 1)


#: entries renumbered at a time (in place: no second copy of a large data set's ids)
REMAP_CHUNK = 1 << 22


def by_frequency(vocab, ids):
    """``vocab`` renumbered by decreasing frequency of its ids in ``ids`` (ties: first
    seen first; frequent attributes together is better cache locality), and ``ids``
    renumbered with it, in place (a chunk at a time: no second copy of a large data
    set's ids; a read-only ``ids`` is copied first)."""
    order = np.argsort(-id_counts(ids, len(vocab)), kind="stable")
    inverse = np.empty(len(order), dtype=np.int32)
    inverse[order] = np.arange(len(order), dtype=np.int32)
    if not ids.flags.writeable:
        ids = ids.copy()
    for lo in range(0, len(ids), REMAP_CHUNK):
        part = ids[lo:lo + REMAP_CHUNK]
        np.take(inverse, part, out=part)
    return vocab.permute(order), ids
