"""Parameter layout of a second-order linear-chain CRF: a chain over label pairs.

A second-order CRF scores a label sequence ``y_0 .. y_{n-1}`` with features of the current
label ``y_t``, of the label pair ``(y_{t-1}, y_t)`` and of the label triple ``(y_{t-2},
y_{t-1}, y_t)``. Its chain (:mod:`spargel.chain.inference`) runs over *pair states*
``(previous label, label)``; a transition ``(a, b) -> (b, c)`` is a label triple.

The first token has no previous label: its previous label is the **begin marker**
``BOS``, label id ``L`` (one past the real labels), so the first state is ``(BOS, y_0)``
and the first transition the triple ``(BOS, y_0, y_1)``. The marker is a context, never a
label: no token gets it and no state ``(a, BOS)`` exists. Chosen over the alternatives
(a start that repeats the first label, ``(y_0, y_0)``, or no pair features on the first
token) because pair and triple features at the start of a sequence then mean exactly
what they say ("a sentence starts with B-NP", "... with B-NP I-NP") and never collide
with the same labels inside a sequence, while the chain stays the uniform pair chain.

Codes (``L`` labels, ``A = L + 1`` previous contexts):

* label ``c`` in ``0 .. L-1``;
* pair ``p = a * L + c`` with ``a`` in ``0 .. L`` (``L`` = BOS): also the chain's state
  id, ``S = (L + 1) * L`` states;
* triple ``q = (a * L + b) * L + c`` = (source state) ``* L + c``: ``(L + 1) * L^2`` codes.

The weight vector is ``[unigram | pair | triple]`` exactly like the first-order layout
(:class:`~spargel.data.feature_space.FeatureSpace`, whose arrays it reuses): unigram
attribute blocks with label ids, pair ("bigram") attribute blocks with pair codes,
and one global block of triple weights (``t_pair`` holds triple codes). The plain
label-pair weights (a bare ``B`` template line) are the pair block of an attribute that
fires at every token, named ``B``.
"""

import numpy as np

from ..data.feature_space import FeatureSpace
from ..data.dataset import SequenceData

#: display name of the begin marker (``bigram_features_``, ``transition_features_``,
#: ``spargel dump``); a training label with this name is refused
BOS_NAME = "__BOS__"
#: name of the attribute that carries the plain label-pair weights at order 2
PAIR_BIAS = "B"


def n_states(L):
    """Number of pair states of a second-order chain over L labels."""
    return (L + 1) * L


def token_contexts(data, L):
    """Per token, its pair code ``(y_{t-1}, y_t)`` (BOS before the first token) and its
    triple code ``(y_{t-2}, y_{t-1}, y_t)`` (-1 on the first token, and wherever a label
    involved is unknown, -1 in a partially labelled sequence)."""
    y = data.labels.astype(np.int64)
    n = len(y)
    first = np.zeros(n, dtype=bool)
    first[data.seq_ptr[:-1]] = True
    prev = np.full(n, L, dtype=np.int64)
    prev[1:] = y[:-1]
    prev[first] = L
    pair = np.where((prev < 0) | (y < 0), -1, prev * L + y)
    before = np.full(n, -1, dtype=np.int64)
    before[1:] = pair[:-1]
    before[first] = -1
    triple = np.where((before >= 0) & (pair >= 0), before * L + y, -1)
    return pair, triple


class FeatureSpace2(FeatureSpace):
    """The layout of a second-order CRF (see the module documentation): the arrays of
    :class:`~spargel.data.feature_space.FeatureSpace` with pair codes in ``b_pair``
    and triple codes in ``t_pair``."""

    order = 2
    max_labels = 1000
    pair_name, transition_name = "pair", "label triples"

    @property
    def n_states(self):
        return n_states(self.n_labels)

    @classmethod
    def codes(cls, L):
        """(pair codes, transition codes): pair states and label triples, the first label
        possibly the begin marker."""
        return n_states(L), n_states(L) * L

    @classmethod
    def contexts(cls, data, L):
        """Per token, its pair code and its triple code (:func:`token_contexts`)."""
        return token_contexts(data, L)

    def weight_keys(self, L):
        """Sorted keys of the weights of this layout in a label space of L labels (at
        least its own; new labels are appended, the begin marker moves to L): unigram
        ``attr * L + label``, pair ``attr * (L + 1) L + pair``, triple codes."""
        L0 = self.n_labels
        same = np.arange(L0)
        u_attr = np.repeat(np.arange(len(self.u_ptr) - 1, dtype=np.int64), np.diff(self.u_ptr))
        b_attr = np.repeat(np.arange(len(self.b_ptr) - 1, dtype=np.int64), np.diff(self.b_ptr))
        return (u_attr * L + self.u_lab, b_attr * n_states(L) + remap_codes("pair", self.b_pair, same, L0, L),
                remap_codes("triple", self.t_pair, same, L0, L))


def is_order2(space):
    """Whether ``space`` is the layout of a second-order model."""
    return getattr(space, "order", 1) == 2


# --------------------------------------------------------------------------- names
def pair_names(code, names):
    """(previous label, label) names of a pair code (``BOS_NAME`` for the marker)."""
    L = len(names)
    a, c = divmod(int(code), L)
    return (BOS_NAME if a == L else names[a]), names[c]


def triple_names(code, names):
    """(label two back, previous label, label) names of a triple code."""
    L = len(names)
    src, c = divmod(int(code), L)
    a, b = divmod(src, L)
    return (BOS_NAME if a == L else names[a]), names[b], names[c]


def remap_codes(kind, codes, lab_map, old_L, new_L):
    """Codes of another label numbering: ``lab_map[old id]`` is the new id (-1: gone).
    ``kind`` is ``"label"``, ``"pair"`` or ``"triple"``; the begin marker maps to itself.
    Returns an int64 array with -1 where a label is gone."""
    codes = np.asarray(codes, dtype=np.int64)
    full_map = np.concatenate([np.asarray(lab_map, dtype=np.int64), [new_L]])     # BOS -> BOS
    if kind == "label":
        return full_map[codes]
    if kind == "pair":
        a, c = codes // old_L, codes % old_L
        na, nc = full_map[a], full_map[c]
        return np.where((na < 0) | (nc < 0), -1, na * new_L + nc)
    src, c = codes // old_L, codes % old_L
    a, b = src // old_L, src % old_L
    na, nb, nc = full_map[a], full_map[b], full_map[c]
    return np.where((na < 0) | (nb < 0) | (nc < 0), -1, (na * new_L + nb) * new_L + nc)


def add_pair_bias(data, vocab, grow):
    """``data`` with the attribute :data:`PAIR_BIAS` (value 1) appended to every token's
    pair attributes: the plain label-pair weights of a second-order model. Its id comes
    from ``vocab`` (added when ``grow``; a vocabulary without it -- a compacted model
    whose pair weights all went to zero -- leaves ``data`` as it is)."""
    i = vocab.id(PAIR_BIAS)
    if i < 0:
        if not grow:
            return data
        i = vocab.add(PAIR_BIAS)
    n = data.n_tokens
    ptr = data.big_ptr + np.arange(n + 1, dtype=np.int64)
    last = ptr[1:] - 1
    ids = np.empty(ptr[-1], dtype=data.big_ids.dtype)
    vals = np.empty(ptr[-1])
    keep = np.ones(ptr[-1], dtype=bool)
    keep[last] = False
    ids[keep], ids[last] = data.big_ids, i
    vals[keep], vals[last] = data.big_vals, 1.0
    return SequenceData(data.seq_ptr, data.uni_ptr, data.uni_ids, data.uni_vals, ptr, ids, vals, data.labels)
