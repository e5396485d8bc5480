"""Parameter layout of a linear-chain CRF: which weights exist and where they live.

Weights form one flat float64 vector ``[unigram | bigram | transitions]``:

* unigram attribute ``a`` owns a contiguous block ``u_ptr[a]:u_ptr[a+1]``, one weight per
  label in ``u_lab`` (all |Y| labels in the ``"full"`` space; only the labels seen with
  ``a`` in training in the ``"observed"`` space);
* bigram attribute ``a`` owns ``b_base + (b_ptr[a]:b_ptr[a+1])``, one weight per label
  pair ``prev * |Y| + cur`` in ``b_pair``;
* the global transition block holds one weight per pair in ``t_pair`` (all pairs, or the
  pairs seen in training; none when the model has no transitions).
"""

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

FEATURE_SPACES = ("full", "observed")

#: the layout as the compiled kernels read it (:meth:`FeatureSpace.as_tuple`): the number
#: of labels ``L``, the unigram blocks (``u_ptr``, ``u_lab``), the bigram / pair blocks
#: (``b_ptr``, ``b_pair``, at ``b_base`` in the weights), the transition codes
#: ``t_pair`` (weights at ``t_base``) and ``t_index``, a transition code's weight index
#: (-1: none)
Space = namedtuple("Space", "L u_ptr u_lab b_ptr b_pair b_base t_pair t_base t_index")
# tokens whose (attribute, label) pairs are gathered at a time (FeatureSpace.observed)
SEEN_CHUNK = 1 << 18


@dataclass
class FeatureSpace:
    n_labels: int
    u_ptr: np.ndarray
    u_lab: np.ndarray
    b_ptr: np.ndarray
    b_pair: np.ndarray
    t_pair: np.ndarray

    @property
    def n_unigram(self):
        return len(self.u_lab)

    @property
    def n_bigram(self):
        return len(self.b_pair)

    @property
    def b_base(self):
        return len(self.u_lab)

    @property
    def t_base(self):
        return len(self.u_lab) + len(self.b_pair)

    @property
    def n_params(self):
        return self.t_base + len(self.t_pair)

    #: the chain's order (1: a weight per label pair at most; see ``chain.crf2_space``)
    order = 1
    #: most labels a layout of this order may have (None: no limit)
    max_labels = None
    #: what the validation messages call the bigram block and the transitions
    pair_name, transition_name = "bigram", "transition pairs"

    @classmethod
    def codes(cls, L):
        """(pair codes, transition codes) of a layout over L labels: label pairs both."""
        return L * L, L * L

    @classmethod
    def contexts(cls, data, L):
        """Per token of the labelled ``data``, its pair code and its transition code
        (both ``prev * L + cur`` here; -1 on a sequence's first token and where a label
        is unknown, -1 in a partially labelled sequence)."""
        y = data.labels.astype(np.int64)
        first = np.zeros(data.n_tokens, dtype=bool)
        first[data.seq_ptr[:-1]] = True
        pair = np.full(data.n_tokens, -1, dtype=np.int64)      # -1: no previous label
        pair[1:] = y[:-1] * L + y[1:]
        pair[first] = -1
        pair[1:][(y[:-1] < 0) | (y[1:] < 0)] = -1                # a label unknown (partial labels)
        return pair, pair

    def n_transition_codes(self):
        """How many codes a transition weight can have (label pairs at order 1)."""
        return self.codes(self.n_labels)[1]

    def as_tuple(self):
        """The :class:`Space` tuple the compiled kernels take (``t_index``: a transition
        code's weight, -1 for none)."""
        L = self.n_labels
        t_index = np.full(self.n_transition_codes(), -1, dtype=np.int64)
        t_index[self.t_pair] = np.arange(len(self.t_pair))
        return Space(L, self.u_ptr, self.u_lab, self.b_ptr, self.b_pair, np.int64(self.b_base),
                     self.t_pair, np.int64(self.t_base), t_index)

    # -- construction ---------------------------------------------------------------
    @classmethod
    def full(cls, n_labels, n_uni_attrs, n_big_attrs, transitions=True):
        """Every attribute with every label (pair), as Wapiti and the papers; every
        transition when ``transitions``."""
        L = n_labels
        P, T = cls.codes(L)
        return cls(
            L,
            np.arange(n_uni_attrs + 1, dtype=np.int64) * L,
            np.tile(np.arange(L, dtype=np.int32), n_uni_attrs),
            np.arange(n_big_attrs + 1, dtype=np.int64) * P,
            np.tile(np.arange(P, dtype=np.int32), n_big_attrs),
            np.arange(T, dtype=np.int32) if transitions else np.zeros(0, np.int32),
        )

    @classmethod
    def observed(cls, data, n_labels, n_uni_attrs, n_big_attrs, transitions=True, all_states=False,
                 all_transitions=False):
        """Only the (attribute, label) and (attribute, label pair) combinations and the
        transitions seen in the labelled ``data`` (unknown labels, -1, are skipped), as
        CRFsuite; ``all_states`` gives every unigram attribute every label,
        ``all_transitions`` every transition code a weight (CRFsuite's
        ``feature.possible_states`` / ``possible_transitions``)."""
        L = n_labels
        P, T = cls.codes(L)
        y = data.labels.astype(np.int64)
        pair, trans = cls.contexts(data, L)
        if all_states:
            u_ptr = np.arange(n_uni_attrs + 1, dtype=np.int64) * L
            u_lab = np.tile(np.arange(L, dtype=np.int32), n_uni_attrs)
        else:
            u_ptr, u_lab = _seen_csr(data.uni_ptr, data.uni_ids, y, n_uni_attrs, L)
        b_ptr, b_pair = _seen_csr(data.big_ptr, data.big_ids, pair, n_big_attrs, P)
        if not transitions:
            t_pair = np.zeros(0, np.int32)
        elif all_transitions:
            t_pair = np.arange(T, dtype=np.int32)
        else:
            t_pair = np.unique(trans[trans >= 0]).astype(np.int32)
        return cls(L, u_ptr, u_lab, b_ptr, b_pair, t_pair)

    # -- growing (partial_fit) ------------------------------------------------------------
    def weight_keys(self, L):
        """Sorted keys of this layout's weights in a label space of ``L`` labels (at least
        its own; new labels are appended): unigram ``attr * L + label``, bigram ``attr *
        P + pair`` (``P``: the pair codes of :meth:`codes` at ``L``), transitions their
        code at ``L``.

        >>> s = FeatureSpace.full(2, 1, 0)
        >>> [k.tolist() for k in s.weight_keys(3)]
        [[0, 1], [], [0, 1, 3, 4]]
        """
        L0 = self.n_labels
        u_attr = np.repeat(np.arange(len(self.u_ptr) - 1, dtype=np.int64), np.diff(self.u_ptr))
        b_attr = np.repeat(np.arange(len(self.b_ptr) - 1, dtype=np.int64), np.diff(self.b_ptr))
        b_pair = self.b_pair.astype(np.int64)
        t_pair = self.t_pair.astype(np.int64)
        b_new = (b_pair // L0) * L + b_pair % L0
        t_new = (t_pair // L0) * L + t_pair % L0
        return u_attr * L + self.u_lab, b_attr * (L * L) + b_new, t_new

    @classmethod
    def from_keys(cls, L, n_u, n_b, uk, bk, tk):
        """The layout over ``L`` labels, ``n_u`` unigram and ``n_b`` bigram attributes whose
        weights have the sorted keys ``uk``, ``bk``, ``tk`` (:meth:`weight_keys`)."""
        P = cls.codes(L)[0]
        u_ptr = np.zeros(n_u + 1, dtype=np.int64)
        np.cumsum(np.bincount(uk // L, minlength=n_u), out=u_ptr[1:])
        b_ptr = np.zeros(n_b + 1, dtype=np.int64)
        np.cumsum(np.bincount(bk // P, minlength=n_b), out=b_ptr[1:])
        return cls(L, u_ptr, (uk % L).astype(np.int32), b_ptr, (bk % P).astype(np.int32), tk.astype(np.int32))

    @classmethod
    def grown(cls, old, L, n_u, n_b, chunk, kind, transitions):
        """The layout after a chunk of ``partial_fit``: ``old`` (or None) extended to ``L``
        labels and ``n_u`` / ``n_b`` attributes plus what the encoded ``chunk`` needs
        (``kind``: ``"full"`` or ``"observed"``). Returns (the layout, the positions of
        the old weights in it).

        >>> old = FeatureSpace.full(2, 1, 0)
        >>> new, pos = FeatureSpace.grown(old, 3, 2, 0, None, "full", True)
        >>> new.n_params, pos.tolist()
        (15, [0, 1, 6, 7, 9, 10])
        """
        if kind == "full":
            new = cls.full(L, n_u, n_b, transitions)
        else:
            new = cls.observed(chunk, L, n_u, n_b, transitions)
        if old is None:
            return new, np.zeros(0, dtype=np.int64)
        uk, bk, tk = new.weight_keys(L)
        ok, obk, otk = old.weight_keys(L)
        uk, bk, tk = np.union1d(uk, ok), np.union1d(bk, obk), np.union1d(tk, otk)
        space = cls.from_keys(L, n_u, n_b, uk, bk, tk)
        pos = np.concatenate([np.searchsorted(uk, ok), space.b_base + np.searchsorted(bk, obk),
                              space.t_base + np.searchsorted(tk, otk)]).astype(np.int64)
        return space, pos

    def compact(self, w):
        """Drop zero weights: returns (new space, new weights, kept unigram attribute ids,
        kept bigram attribute ids). Attributes left with no weight disappear."""
        u_keep_w = w[: self.b_base] != 0
        b_keep_w = w[self.b_base: self.t_base] != 0
        t_keep_w = w[self.t_base:] != 0
        u_ptr, u_lab, u_attrs = _compact_csr(self.u_ptr, self.u_lab, u_keep_w)
        b_ptr, b_pair, b_attrs = _compact_csr(self.b_ptr, self.b_pair, b_keep_w)
        space = type(self)(self.n_labels, u_ptr, u_lab, b_ptr, b_pair, self.t_pair[t_keep_w])
        new_w = np.concatenate([w[: self.b_base][u_keep_w], w[self.b_base: self.t_base][b_keep_w],
                                w[self.t_base:][t_keep_w]])
        return space, new_w, u_attrs, b_attrs

    def validate(self, n_uni_attrs, n_big_attrs):
        """Raise ``ValueError`` when the arrays do not describe a consistent layout."""
        L = self.n_labels
        if not isinstance(L, (int, np.integer)) or L < 1:
            raise ValueError("number of labels must be a positive integer")
        if self.max_labels is not None and L > self.max_labels:
            raise ValueError(f"a model of order {self.order} over {L} labels is too large "
                             f"(at most {self.max_labels})")
        P, T = self.codes(L)
        for name, ptr, vals, n_attr, upper in (("unigram", self.u_ptr, self.u_lab, n_uni_attrs, L),
                                               (self.pair_name, self.b_ptr, self.b_pair, n_big_attrs, P)):
            if ptr.ndim != 1 or len(ptr) != n_attr + 1 or ptr[0] != 0 or ptr[-1] != len(vals):
                raise ValueError(f"{name} block offsets do not match the attribute list")
            if np.any(np.diff(ptr) < 0):
                raise ValueError(f"{name} block offsets are not increasing")
            if len(vals) and (vals.min() < 0 or vals.max() >= upper):
                raise ValueError(f"{name} label ids out of range")
        # (repeats by a sort: np.unique without its options imports numpy.ma, 10 ms of a short run)
        if len(self.t_pair) and (self.t_pair.min() < 0 or self.t_pair.max() >= T
                                 or np.any(np.diff(np.sort(self.t_pair)) == 0)):
            raise ValueError(f"{self.transition_name} out of range or repeated")


def _seen_csr(ptr, ids, token_col, n_rows, n_cols):
    """CSR (ptr, sorted columns per row) of the distinct (attribute, column) pairs, where
    a token's attributes meet the token's column (skipped where the column is -1).
    Uses a bitmap when it is small, a sort otherwise; never per-entry Python work."""
    bitmap = n_rows * n_cols <= 1 << 27
    seen = np.zeros((n_rows, n_cols), dtype=np.bool_) if bitmap else None
    keys = []
    n_tok = len(ptr) - 1
    # a chunk of tokens at a time: the per-entry temporaries stay small on large data
    for t0 in range(0, n_tok, SEEN_CHUNK):
        t1 = min(n_tok, t0 + SEEN_CHUNK)
        c = np.repeat(token_col[t0:t1], np.diff(ptr[t0:t1 + 1]))
        keep = c >= 0
        rows, c = ids[ptr[t0]:ptr[t1]][keep], c[keep]
        if bitmap:
            seen[rows, c] = True
        else:
            keys.append(np.unique(rows.astype(np.int64) * n_cols + c))
    if bitmap:
        counts = seen.sum(axis=1, dtype=np.int64)
        cols = np.nonzero(seen)[1].astype(np.int32)
    else:
        key = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        counts = np.bincount(key // n_cols, minlength=n_rows)
        cols = (key % n_cols).astype(np.int32)
    out = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out, cols


def _compact_csr(ptr, vals, keep):
    # kept entries per row, from prefix sums (rows may be empty, also at the end)
    csum = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=csum[1:])
    counts = csum[ptr[1:]] - csum[ptr[:-1]]
    attrs = np.flatnonzero(counts > 0)
    new_ptr = np.zeros(len(attrs) + 1, dtype=np.int64)
    np.cumsum(counts[attrs], out=new_ptr[1:])
    return new_ptr, vals[keep].copy(), attrs
