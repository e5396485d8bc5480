"""Constrained decoding: which label may follow which, and which may start and end a
sequence.

A :class:`TransitionConstraints` names the allowed label pairs ``(previous, label)`` and
the allowed first and last labels by the labels' names; :meth:`~TransitionConstraints.resolve`
turns it into boolean tables over a model's label ids (:class:`LabelConstraints`), which
the chain's transition structure takes (:func:`spargel.chain.inference.make_transitions`:
a forbidden pair scores -inf, a forbidden start or end -inf on the first or last token's
state row). Viterbi, n-best and the forward-backward then see only the allowed paths: the
best allowed path, the k best allowed paths, and marginals and probabilities under the
partition function over the allowed paths.

Presets derive the rules from the label names (a tag, ``-``, a type: ``B-NP``; ``O``
outside every chunk):

``"bio"`` / ``"iob2"``
    ``I-X`` only after ``B-X`` or ``I-X``; a sequence starts with ``O`` or ``B-X``.
``"iob1"``
    ``I-X`` opens or continues a chunk; ``B-X`` only after ``I-X`` or ``B-X`` (it
    separates two adjacent chunks of one type), so never first.
``"bioes"`` / ``"iobes"`` / ``"bilou"``
    ``I-X`` and ``E-X`` (``L-X``) only after ``B-X`` or ``I-X``; ``O``, ``B-X`` and
    ``S-X`` (``U-X``) only after ``O``, ``E-X``, ``S-X`` or first; a sequence ends with
    ``O``, ``E-X`` or ``S-X``.

Every other pair, start and end is allowed.
"""

from collections import namedtuple

import numpy as np

from ..errors import ParameterError

#: boolean tables over a model's label ids: ``allowed[i, j]`` (label j may follow label
#: i), ``start[j]`` / ``end[j]`` (label j may be first / last)
LabelConstraints = namedtuple("LabelConstraints", "allowed start end")

PRESETS = {"bio": "bio", "iob2": "bio", "iob1": "iob1", "bioes": "bioes", "iobes": "bioes", "bilou": "bioes"}
_TAGS = {"bio": "BI", "iob1": "BI", "bioes": "BIESLU"}


def split_tag(label, scheme):
    """``(tag, type)`` of a chunk label under a preset: ``("O", None)`` for ``O``,
    ``("B", "NP")`` for ``B-NP`` (``E``/``S`` for BIOES also spelt ``L``/``U``, returned as
    ``E``/``S``); a label the scheme has no place for is refused."""
    name = str(label)
    if name == "O":
        return "O", None
    tag, sep, typ = name.partition("-")
    if not sep or len(tag) != 1 or tag not in _TAGS[scheme] or not typ:
        allowed = {"bio": "B-X, I-X", "iob1": "B-X, I-X", "bioes": "B-X, I-X, E-X, S-X (or L-X, U-X)"}[scheme]
        raise ParameterError(f"label {name!r} does not fit the {scheme.upper()} scheme of constraints: its labels are "
                             f"O and {allowed}")
    return {"L": "E", "U": "S"}.get(tag, tag), typ


def _preset_rule(scheme):
    """``(follows(prev, cur), may_start(cur), may_end(cur))`` over ``(tag, type)``."""
    if scheme == "bio":
        return (lambda p, c: c[0] != "I" or (p[0] in "BI" and p[1] == c[1]),
                lambda c: c[0] != "I", lambda c: True)
    if scheme == "iob1":
        return (lambda p, c: c[0] != "B" or (p[0] in "BI" and p[1] == c[1]),
                lambda c: c[0] != "B", lambda c: True)
    inside = lambda p, c: p[0] in "BI" and p[1] == c[1]          # noqa: E731
    closed = lambda p: p[0] in "OES"                              # noqa: E731
    return (lambda p, c: inside(p, c) if c[0] in "IE" else closed(p),
            lambda c: c[0] in "OBS", lambda c: c[0] in "OES")


class TransitionConstraints:
    """Allowed label transitions, starts and ends, by label name.

    ``TransitionConstraints("bio")`` (or ``"iob1"``, ``"bioes"``, ...): a preset, whose
    rules come from the label names (see the module). ``TransitionConstraints(allowed=...,
    start=..., end=...)``: ``allowed`` an iterable of ``(previous, label)`` name pairs, or
    a square boolean matrix with ``labels`` naming its rows and columns; ``start`` /
    ``end`` the labels that may begin / end a sequence (None: every label). A label that
    appears in no allowed pair can only make up a sequence of one token.
    """

    def __init__(self, preset=None, *, allowed=None, start=None, end=None, labels=None):
        if preset is not None:
            key = str(preset).lower()
            if key not in PRESETS:
                raise ParameterError(f"unknown constraints preset {preset!r}: use one of "
                                     f"{', '.join(sorted(PRESETS))}, or give the allowed pairs")
            if allowed is not None or start is not None or end is not None or labels is not None:
                raise ParameterError("constraints: give a preset or allowed pairs (with start / end), not both")
            self.preset = PRESETS[key]
            self.pairs = self.start = self.end = None
            return
        if allowed is None:
            raise ParameterError("constraints need a preset ('bio', 'iob1', 'bioes') or the allowed pairs")
        self.preset = None
        self.pairs = _pairs(allowed, labels)
        self.start = None if start is None else _names(start, "start")
        self.end = None if end is None else _names(end, "end")

    @classmethod
    def coerce(cls, spec):
        """A :class:`TransitionConstraints` from what users give: None, an instance, a
        preset name, or a dict with ``allowed`` (and ``start``, ``end``, ``labels``) or
        ``preset``."""
        if spec is None or isinstance(spec, cls):
            return spec
        if isinstance(spec, str):
            return cls(spec)
        if isinstance(spec, dict):
            unknown = set(spec) - {"preset", "allowed", "start", "end", "labels"}
            if unknown:
                raise ParameterError(f"constraints: unknown keys {sorted(unknown)} (use preset, or allowed, "
                                     f"start, end, labels)")
            return cls(spec.get("preset"), allowed=spec.get("allowed"), start=spec.get("start"),
                       end=spec.get("end"), labels=spec.get("labels"))
        raise ParameterError(f"constraints must be a preset name ('bio', 'iob1', 'bioes'), a dict or a "
                             f"TransitionConstraints, got {type(spec).__name__}")

    def to_dict(self):
        """A JSON-able dict that :meth:`coerce` reads back (the model file keeps it)."""
        if self.preset is not None:
            return {"preset": self.preset}
        return {"allowed": [list(p) for p in sorted(self.pairs)],
                "start": None if self.start is None else sorted(self.start),
                "end": None if self.end is None else sorted(self.end)}

    def __repr__(self):
        if self.preset is not None:
            return f"TransitionConstraints({self.preset!r})"
        return f"TransitionConstraints(allowed={len(self.pairs)} pairs, start={self.start}, end={self.end})"

    def __eq__(self, other):
        return isinstance(other, TransitionConstraints) and self.to_dict() == other.to_dict()

    def resolve(self, labels):
        """:class:`LabelConstraints` over ``labels`` (the model's label names, in id
        order)."""
        names = [str(x) for x in labels]
        L = len(names)
        if self.preset is not None:
            parts = [split_tag(x, self.preset) for x in names]
            follows, may_start, may_end = _preset_rule(self.preset)
            allowed = np.array([[follows(p, c) for c in parts] for p in parts], dtype=bool).reshape(L, L)
            start = np.array([may_start(c) for c in parts], dtype=bool)
            end = np.array([may_end(c) for c in parts], dtype=bool)
            return LabelConstraints(allowed, start, end)
        ids = {x: i for i, x in enumerate(names)}
        mentioned = {x for p in self.pairs for x in p} | set(self.start or ()) | set(self.end or ())
        unknown = sorted(mentioned - set(ids))
        if unknown:
            raise ParameterError(f"constraints name labels the model does not have: {unknown} "
                                 f"(its labels: {names})")
        allowed = np.zeros((L, L), dtype=bool)
        for a, b in self.pairs:
            allowed[ids[a], ids[b]] = True
        start, end = (np.ones(L, bool) if sel is None else np.isin(np.arange(L), [ids[x] for x in sel])
                      for sel in (self.start, self.end))
        if L and not start.any():
            raise ParameterError("constraints allow no label to start a sequence")
        if L and not end.any():
            raise ParameterError("constraints allow no label to end a sequence")
        return LabelConstraints(allowed, start, end)


def _names(values, what):
    if isinstance(values, (str, bytes)):
        raise ParameterError(f"constraints: {what} must be a list of labels, got the string {values!r}")
    return frozenset(str(v) for v in values)


def _pairs(allowed, labels):
    """The allowed (previous, label) name pairs of a pair list, a dict ``{pair: bool}`` or
    a boolean matrix over ``labels``."""
    if labels is not None:
        names = [str(x) for x in labels]
        m = np.asarray(allowed)
        if m.shape != (len(names), len(names)):
            raise ParameterError(f"constraints: the allowed matrix must be {len(names)} x {len(names)} "
                                 f"(one row and column per label), got shape {m.shape}")
        if m.dtype != bool and not np.isin(m, (0, 1)).all():
            raise ParameterError("constraints: the allowed matrix must hold booleans (or 0 / 1)")
        return frozenset((names[i], names[j]) for i, j in zip(*np.nonzero(m.astype(bool))))
    if isinstance(allowed, np.ndarray):
        raise ParameterError("constraints: an allowed matrix needs labels=[...] naming its rows and columns")
    if isinstance(allowed, dict):
        allowed = [p for p, ok in allowed.items() if ok]
    out = set()
    for p in allowed:
        if isinstance(p, (str, bytes)) or not hasattr(p, "__len__") or len(p) != 2:
            raise ParameterError(f"constraints: each allowed entry must be a (previous, label) pair, got {p!r}")
        out.add((str(p[0]), str(p[1])))
    return frozenset(out)


def violations(lc, labels, seq_ptr):
    """The first place where label ids ``labels`` (flat, -1: unknown) break the
    :class:`LabelConstraints` ``lc``, as ``(sequence, token, why)``, or None."""
    labels = np.asarray(labels)
    for s in range(len(seq_ptr) - 1):
        lo, hi = int(seq_ptr[s]), int(seq_ptr[s + 1])
        if hi == lo:
            continue
        y = labels[lo:hi]
        if y[0] >= 0 and not lc.start[y[0]]:
            return s, 0, "may not start a sequence"
        if y[-1] >= 0 and not lc.end[y[-1]]:
            return s, hi - lo - 1, "may not end a sequence"
        known = (y[:-1] >= 0) & (y[1:] >= 0)
        bad = np.flatnonzero(known & ~lc.allowed[np.maximum(y[:-1], 0), np.maximum(y[1:], 0)])
        if len(bad):
            return s, int(bad[0]) + 1, "may not follow the label before it"
    return None


def invalid_sequences(sequences, spec):
    """How many of the label sequences (lists of label names) break the constraints
    ``spec`` (a preset name, dict or :class:`TransitionConstraints`), labels resolved
    over the names that occur."""
    cons = TransitionConstraints.coerce(spec)
    names = sorted({str(x) for seq in sequences for x in seq})
    lc = cons.resolve(names)
    ids = {x: i for i, x in enumerate(names)}
    flat = np.array([ids[str(x)] for seq in sequences for x in seq], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum([len(seq) for seq in sequences])])
    count = 0
    for s in range(len(sequences)):
        if violations(lc, flat[ptr[s]:ptr[s + 1]], np.array([0, ptr[s + 1] - ptr[s]])) is not None:
            count += 1
    return count
