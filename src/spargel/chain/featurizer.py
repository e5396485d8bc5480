"""The featurizer of the CRF family: raw sequences in, encoded data out.

A :class:`SequenceFeaturizer` owns everything between the user's sequences and the
compiled kernels' flat arrays: the pattern file (or none, for feature dicts), its
padding, the Markov order (a second-order model gets the plain pair attribute ``B``),
how a string feature value is named, and the vocabularies of attributes and labels.
The estimator, streaming, the regularisation path and the Dask shards each use one;
none of them builds or reaches into an estimator to get at data.

>>> f = SequenceFeaturizer()
>>> data = f.encode([[{"w": "the"}, {"w": "dog"}]], [["DT", "NN"]], grow=True)
>>> data.n_tokens, f.labels.names
(2, ['DT', 'NN'])
"""

from itertools import repeat

import numpy as np

from ..data.dataset import SequenceData, build_dataset, label_ids, unit_values
from ..data.featuredicts import encode_bulk, encode_sequences, sequence_attributes
from ..data.templates import Template
from ..data.vocab import Vocabulary, by_frequency


class SequenceFeaturizer:
    """Turns sequences (lists of tokens: feature dicts, attribute lists, or column lists
    read by a ``template``) and their label sequences into :class:`SequenceData`.

    ``uni``, ``big``, ``labels``: the vocabularies of unigram attributes, bigram
    attributes and labels (fresh ones when None); :meth:`encode` with ``grow=True``
    replaces them by those of the data it encodes."""

    def __init__(self, template=None, pad=True, order=1, value_sep=":", uni=None, big=None, labels=None,
                 maxent=False):
        if template is not None and not isinstance(template, Template):
            template = Template.parse(template, source="<template>")
        if maxent and template is not None and not template.unigram_only:
            template = template.without_label_pairs()
        self.maxent = bool(maxent)
        self.template = template
        self.pad = pad
        self.order = order
        self.value_sep = value_sep
        self.uni = Vocabulary() if uni is None else uni
        self.big = Vocabulary() if big is None else big
        self.labels = Vocabulary() if labels is None else labels

    def with_vocabularies(self, uni, big, labels):
        """The same featurizer over other vocabularies."""
        return SequenceFeaturizer(self.template, self.pad, self.order, self.value_sep, uni, big, labels,
                                  self.maxent)

    # -- what the model needs to know ---------------------------------------------------
    def has_transitions(self):
        """Whether the model has label-transition weights (order 2: the label triples)."""
        tpl = self.template
        if self.maxent:     # Wapiti's maxent models: every token on its own
            return False
        if self.order == 2:
            return True if tpl is None else tpl.triples
        return True if tpl is None else tpl.transitions

    # -- encoding ------------------------------------------------------------------------
    def rows(self, X):
        """(unigram attributes, bigram attributes or None) of every sequence of ``X``."""
        _check_sequences(X)
        tpl = self.template
        for i, seq in enumerate(X):
            columns = getattr(seq, "columns", seq)
            if tpl is not None:
                if len(columns) == 0:
                    raise ValueError(f"sequence {i} is empty")
                uni, big = tpl.extract(columns, pad=self.pad, source=getattr(seq, "source", None),
                                       line=getattr(seq, "line", None))
                yield uni, (big if tpl.n_bigram else None)
            else:
                yield sequence_attributes(columns, i, self.value_sep), None

    def encode(self, X, y=None, grow=False):
        """``X`` (and label sequences ``y``) as flat arrays over the vocabularies. With
        ``grow``, the vocabularies are those of this data, attributes in order of
        decreasing frequency (the training encoding); without, unknown attributes and
        labels are left out / refused (the prediction encoding)."""
        if grow:
            self.uni, self.big, self.labels = Vocabulary(), Vocabulary(), Vocabulary()
        data = self._encode(X, y, self.uni, self.big, self.labels, grow)
        if grow:
            self.uni, data.uni_ids = by_frequency(self.uni, data.uni_ids)
            self.big, data.big_ids = by_frequency(self.big, data.big_ids)
            if len(self.labels) < 2:
                raise ValueError(f"training data has {len(self.labels)} distinct label(s); need at least 2")
        return self._with_pair_bias(data, self.big, grow)

    def encode_columns(self, cells, seq_ptr, expanded=None):
        """The prediction encoding (:meth:`encode` without ``grow``, no labels) of
        sequences given as columns: ``cells[c]`` holds column c of every token of every
        sequence end to end, ``seq_ptr`` the sequences' token offsets. The same data as
        :meth:`encode` of those sequences, built without a Python object per token
        (:meth:`Template.extract_flat`: each distinct feature string once, looked up
        once); needs a template."""
        tpl = self.template
        if tpl is None:
            raise ValueError("encode_columns needs a template")
        seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        if len(seq_ptr) < 2 or np.any(np.diff(seq_ptr) <= 0):
            raise ValueError("every sequence needs at least one token")
        uni, big = tpl.extract_flat(cells, seq_ptr, pad=self.pad) if expanded is None else expanded
        n = int(seq_ptr[-1])
        uni_ptr, uni_ids = _lookup_rows(uni, self.uni, n)
        if tpl.n_bigram and big:
            big_ptr, big_ids = _lookup_rows(big, self.big, n)
        else:
            big_ptr, big_ids = np.zeros(n + 1, np.int64), np.zeros(0, np.int32)
        if len(big_ids) == 0:
            big_ptr = np.zeros(n + 1, np.int64)
        data = SequenceData(seq_ptr, uni_ptr, uni_ids, unit_values(len(uni_ids)), big_ptr, big_ids,
                            unit_values(len(big_ids)))
        return self._with_pair_bias(data, self.big, False)

    def encode_part(self, X, y):
        """A part of a training set over fresh vocabularies kept in first-seen order (no
        renumbering: the Dask shards merge the parts' vocabularies); returns ``(data, uni,
        big, labels)``."""
        uni, big, labels = Vocabulary(), Vocabulary(), Vocabulary()
        return self._encode(X, y, uni, big, labels, True), uni, big, labels

    def extend(self, X, y):
        """Encode ``X``, adding unseen attributes and labels at the end of the
        vocabularies (no renumbering: streaming keeps the ids, and so the weights, of
        what it has seen)."""
        data = self._encode(X, y, self.uni, self.big, self.labels, True)
        return self._with_pair_bias(data, self.big, True)

    def _encode(self, X, y, uni, big, labels, grow):
        if self.template is not None:
            rows = self.rows(X)
            return build_dataset(rows, uni, big, labels, y, grow=grow)
        # feature dicts / attribute lists: straight to flat arrays (the tagging hot path)
        _check_sequences(X)
        # (tokens all {str: float} dicts, as ItemSequence holds them: in bulk)
        encoded = encode_bulk(X, uni, grow, self.value_sep) if isinstance(X, list) else None
        if encoded is None:
            encoded = encode_sequences((getattr(x, "columns", x) for x in X), uni, grow, self.value_sep)
        seq_ptr, uni_ptr, ids, vals = encoded
        n = len(uni_ptr) - 1
        data = SequenceData(seq_ptr, uni_ptr, ids, vals, np.zeros(n + 1, np.int64), np.zeros(0, np.int32),
                            np.zeros(0))
        if y is not None:
            data.labels = label_ids(y, seq_ptr, labels, grow)
        return data

    def _with_pair_bias(self, data, big, grow):
        """At order 2, the plain pair weights (a bare ``B``, or no template): those of an
        attribute ``B`` that fires on every token."""
        if self.order == 2 and (self.template is None or self.template.transitions):
            from .crf2_space import add_pair_bias
            data = add_pair_bias(data, big, grow)
        return data


def _lookup_rows(expanded, vocab, n):
    """CSR (ptr, ids) of the attribute ids of ``n`` tokens: per pattern, ``(strings,
    codes)`` as :meth:`Template.extract_flat` gives them; strings unknown to ``vocab``
    (and codes -1) are left out, each token's attributes stay in pattern order."""
    get = vocab.mapping.get
    cols = []
    for strings, codes in expanded:
        ids = np.fromiter(map(get, strings, repeat(-1)), dtype=np.int64, count=len(strings))
        cols.append(np.append(ids, -1)[codes])          # code -1: the appended -1
    table = np.stack(cols, axis=1) if cols else np.zeros((n, 0), np.int64)
    keep = table >= 0
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=ptr[1:])
    return ptr, table[keep].astype(np.int32)


def _check_sequences(X):
    if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
        raise TypeError("X must be a list of sequences")
