"""Evaluation metrics for sequence labelling: chunk scores and token accuracy.

The chunk scores follow ``conlleval``, the evaluation script of the CoNLL
shared tasks on chunking and named-entity recognition: a predicted chunk
counts as correct only when its type, first token and last token all match a
gold chunk; precision, recall and F1 are computed over chunks, and the token
accuracy over all tokens (``O`` included).

``spargel eval`` reproduces ``conlleval.pl`` itself -- its reading of a file (``-X-``
boundaries, ``-DOCSTART-`` tokens, untyped and bare tags) and its report byte for
byte -- with :mod:`spargel.conlleval`; the functions here score tag sequences in Python
with the rules below (``spargel eval --scheme ...`` uses them for a strict reading).

Reading tags
------------
A tag ``P-TYPE`` is split at its *first* hyphen into a prefix ``P`` and a
type ``TYPE`` (the type may itself contain hyphens: ``B-I-PER`` has type
``I-PER``).  Prefix ``O`` means outside a chunk, whatever follows it.  The
prefixes a scheme accepts are

==========  =====================================================
``iob1``    ``B``, ``I``
``iob2``    ``B``, ``I``
``iobes``   ``B``, ``I``, ``E``, ``S`` and their BILOU spellings
``bilou``   alias of ``iobes`` (``L`` reads as ``E``, ``U`` as ``S``)
``auto``    all of the above
==========  =====================================================

and any other prefix raises :class:`ValueError`.  A tag with no hyphen other
than ``O`` (say ``NP``) is read as ``B-NP``, a chunk of one token: this is
what ``conlleval -r`` does with such "raw" tags.  (Without ``-r`` the script
would read ``NP`` as a prefix with an empty type, which is rarely meaningful;
that reading is not reproduced.)  The bracket tags ``[``, ``]`` and ``.`` of
the script's older chunk representations get no special treatment: they are
bare tags like any other.

Chunk boundaries
----------------
The same rules decode every scheme; for well-formed input they give each
scheme's intended chunks, and they read ill-formed input the way ``conlleval``
does.  Walking a sentence left to right:

1. ``O`` ends the open chunk, if any.
2. An ``I-`` or ``E-`` tag whose type equals the open chunk's type extends
   that chunk.  (A chunk is only open after ``B-`` or ``I-``.)
3. Any other tag that is not ``O`` ends the open chunk and starts a new one:
   ``B-`` and ``S-`` always do; ``I-``/``E-`` do after ``O``, at the start
   of a sentence, after ``E-``/``S-``, and when the type differs from the
   previous tag's (``B-NP I-VP`` is two chunks).
4. ``E-`` and ``S-`` end their chunk after the current token.
5. The end of a sentence ends the open chunk: chunks never cross sentences.

On ``B``/``I``/``O`` tags these rules are exactly the script's, so IOB1 (a
chunk may start with ``I-``; ``B-`` only separates adjacent chunks of one
type) and IOB2 (every chunk starts with ``B-``) are both read correctly and
decode identically; ``iob1``/``iob2`` differ only in documenting intent.  For
``E-``/``S-`` the original script is incomplete (it knows no ``S-`` and does
not split ``E-NP B-NP``); rules 3-4 are the usual completion of it.

Tag sets that are not a chunk scheme
------------------------------------
Part-of-speech tags (``NN``, ``-LRB-``, ``-NONE-``), phonemes (NETtalk's ``-``)
and other plain tag sets are not chunks. :func:`sequence_scores` decides from
the tags themselves: when every tag is ``O``, a bare tag, or a prefix the scheme
accepts followed by a non-empty type, and at least one tag has such a prefix,
the tags form a chunk scheme and it returns :func:`chunk_scores`' report;
otherwise it returns :func:`tag_scores`' report: token accuracy and precision,
recall and F1 per tag. :func:`chunk_scores` itself keeps refusing a tag that is
not a chunk tag of its scheme.

Units
-----
Every score that spargel returns or stores is a **fraction in [0, 1]**:
:class:`ChunkReport` and :class:`TagReport` attributes and ``as_dict()``,
:func:`chunk_f1`, :func:`accuracy`, the ``dev_accuracy`` / ``dev_f1`` of
training histories and ``spargel eval --json``. Percentages appear only in text
meant for people, always with a ``%`` sign or in conlleval's own report layout
(``as_text()``, ``spargel eval`` without ``--json``, the training progress
lines).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import eq
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "ChunkCounts",
    "ChunkReport",
    "TagReport",
    "accuracy",
    "chunk_f1",
    "chunk_scores",
    "chunks",
    "is_chunk_tagset",
    "sequence_accuracy",
    "sequence_scores",
    "tag_scores",
]

# Tag kinds after parsing; E and S close their chunk, so they compare >= _E.
_O, _B, _I, _E, _S = range(5)

_KIND = {"B": _B, "I": _I, "E": _E, "S": _S, "L": _E, "U": _S}
_SCHEMES = {
    "auto": frozenset("BIESLU"),
    "iob1": frozenset("BI"),
    "iob2": frozenset("BI"),
    "iobes": frozenset("BIESLU"),
    "bilou": frozenset("BIESLU"),
}


def _allowed_prefixes(scheme: str) -> frozenset:
    try:
        return _SCHEMES[scheme.lower()]
    except (KeyError, AttributeError):
        raise ValueError(
            f"unknown tagging scheme {scheme!r}; expected one of {sorted(_SCHEMES)}"
        ) from None


def _parse_tag(tag: Any, allowed: frozenset) -> tuple[int, str]:
    """Return ``(kind, type)`` for one tag; raise on a prefix ``allowed`` lacks."""
    if not isinstance(tag, str):
        raise TypeError(
            f"tags must be strings, got {type(tag).__name__} {tag!r}; "
            "pass labels= to decode integer label sequences"
        )
    prefix, hyphen, ctype = tag.partition("-")
    if prefix == "O":
        return _O, ""
    if not hyphen:
        return _B, tag
    if prefix not in allowed:
        raise ValueError(f"prefix {prefix!r} is not allowed")
    return _KIND[prefix], ctype


# ---------------------------------------------------------------------------
# Input handling
# ---------------------------------------------------------------------------


def _is_sequence(x: Any) -> bool:
    return isinstance(x, (list, tuple, np.ndarray))


def _as_sentences(seqs: Any, name: str) -> list:
    """One list entry per sentence; a flat sequence of labels is one sentence.

    numpy arrays: a 2-d array is one sentence per row; a 1-d array of objects
    whose items are sequences (``np.array([["B-NP"], ["O", "O"]], dtype=object)``)
    is one sentence per item; any other 1-d array is one sentence.
    """
    if isinstance(seqs, np.ndarray):
        if seqs.ndim == 0:
            raise TypeError(f"{name} must be a sequence of tags, not a scalar array")
        if seqs.ndim == 1 and not (seqs.dtype == object and len(seqs) and _is_sequence(seqs[0])):
            return [seqs]
        seqs = list(seqs)
    if isinstance(seqs, str):
        raise TypeError(f"{name} must be a sequence of tags, not a string")
    seqs = list(seqs)
    if not seqs:
        return []
    if not _is_sequence(seqs[0]):
        return [seqs]
    for i, s in enumerate(seqs):
        if not _is_sequence(s):
            raise TypeError(
                f"{name}[{i}] is {type(s).__name__}, but {name}[0] is a sequence: "
                "pass either one flat sequence or a list of sequences"
            )
    return seqs


def _paired(gold: Any, pred: Any) -> tuple[list, list]:
    """Split both inputs into sentences and check that their shapes agree."""
    g = _as_sentences(gold, "gold")
    p = _as_sentences(pred, "pred")
    if len(g) != len(p):
        raise ValueError(f"gold has {len(g)} sequences but pred has {len(p)}")
    for i, (gs, ps) in enumerate(zip(g, p)):
        if len(gs) != len(ps):
            raise ValueError(
                f"sequence {i}: gold has {len(gs)} tags but pred has {len(ps)}"
            )
    return g, p


def _n_equal(g: Any, p: Any) -> int:
    if isinstance(g, np.ndarray) or isinstance(p, np.ndarray):
        return int(np.count_nonzero(np.asarray(g) == np.asarray(p)))
    return sum(map(eq, g, p))


# ---------------------------------------------------------------------------
# Chunk extraction
# ---------------------------------------------------------------------------


class _Decoder:
    """Parses tags (once per distinct tag) and cuts sentences into chunks."""

    def __init__(self, scheme: str, labels: Sequence[str] | None = None):
        self.scheme = scheme
        self.allowed = _allowed_prefixes(scheme)
        self.cache: dict = {}
        self.table = None
        if labels is not None:
            self.table = [self._parse(t, None, None) for t in labels]

    def _parse(self, tag: Any, sent: int | None, pos: int | None) -> tuple[int, str]:
        try:
            return _parse_tag(tag, self.allowed)
        except ValueError as err:
            where = "" if pos is None else f" at position {pos}"
            if sent is not None:
                where += f" of sequence {sent}"
            raise ValueError(
                f"tag {tag!r}{where}: {err} in scheme {self.scheme!r}"
            ) from None

    def parsed(self, seq: Any, sent: int | None = None) -> list:
        if isinstance(seq, np.ndarray):
            seq = seq.tolist()
        if self.table is not None:
            table = self.table
            return [table[k] for k in seq]
        cache = self.cache
        try:
            return [cache[t] for t in seq]
        except (KeyError, TypeError):
            pass
        out = []
        for pos, t in enumerate(seq):
            try:
                item = cache[t]
            except KeyError:
                item = cache[t] = self._parse(t, sent, pos)
            except TypeError:  # unhashable tag
                item = self._parse(t, sent, pos)
            out.append(item)
        return out

    def decode(self, seq: Any, offset: int, out: list, sent: int | None = None) -> None:
        """Append ``(type, start, end)`` chunks of ``seq`` to ``out``.

        Positions are shifted by ``offset`` so that chunks of different
        sentences of a corpus never coincide.
        """
        open_type = None
        start = 0
        i = offset
        for kind, ctype in self.parsed(seq, sent):
            if kind == _O:
                if open_type is not None:
                    out.append((open_type, start, i))
                    open_type = None
            else:
                if open_type is None or ctype != open_type or kind == _B or kind == _S:
                    if open_type is not None:
                        out.append((open_type, start, i))
                    open_type = ctype
                    start = i
                if kind >= _E:
                    out.append((ctype, start, i + 1))
                    open_type = None
            i += 1
        if open_type is not None:
            out.append((open_type, start, i))


def chunks(tags: Sequence[str], scheme: str = "auto") -> list[tuple[str, int, int]]:
    """Chunks of one tag sequence as ``(type, start, end)``, ``end`` exclusive.

    See the module documentation for how tags are read and where chunks
    start and end.

    >>> chunks(["B-NP", "I-NP", "O", "I-VP", "B-VP"])     # IOB1 or IOB2
    [('NP', 0, 2), ('VP', 3, 4), ('VP', 4, 5)]
    >>> chunks(["B-NP", "I-VP", "I-VP"])                  # a type change
    [('NP', 0, 1), ('VP', 1, 3)]
    >>> chunks(["S-PER", "B-LOC", "E-LOC", "I-LOC"], scheme="iobes")
    [('PER', 0, 1), ('LOC', 1, 3), ('LOC', 3, 4)]
    >>> chunks(["NP", "NP", "O"])                         # bare tags: B-NP
    [('NP', 0, 1), ('NP', 1, 2)]
    """
    if isinstance(tags, str):
        raise TypeError("tags must be a sequence of tags, not a string")
    out: list = []
    _Decoder(scheme).decode(tags, 0, out)
    return out


def _corpus_chunks(dec: _Decoder, sentences: list) -> list:
    out: list = []
    offset = 0
    for k, s in enumerate(sentences):
        dec.decode(s, offset, out, k)
        offset += len(s)
    return out


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------


def _percentages(found: int, guessed: int, correct: int) -> tuple[float, float, float]:
    """Precision, recall and F1 in percent, computed in conlleval's order."""
    precision = 100.0 * correct / guessed if guessed > 0 else 0.0
    recall = 100.0 * correct / found if found > 0 else 0.0
    total = precision + recall
    f1 = 2.0 * precision * recall / total if total > 0 else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class ChunkCounts:
    """Chunk counts of one chunk type, or of all types together.

    ``found`` counts gold chunks, ``guessed`` predicted chunks and
    ``correct`` predicted chunks that match a gold chunk exactly (the names
    of conlleval's counters).  Scores are fractions; one with a zero
    denominator is 0.

    >>> c = ChunkCounts(found=4, guessed=2, correct=2)
    >>> c.precision, c.recall, round(c.f1, 4)
    (1.0, 0.5, 0.6667)
    """

    found: int
    guessed: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.guessed if self.guessed else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.found if self.found else 0.0

    @property
    def f1(self) -> float:
        return _percentages(self.found, self.guessed, self.correct)[2] / 100.0

    def as_dict(self) -> dict:
        return {
            "found": self.found,
            "guessed": self.guessed,
            "correct": self.correct,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


@dataclass(frozen=True)
class ChunkReport(ChunkCounts):
    """The result of :func:`chunk_scores`: overall and per-type chunk scores.

    The inherited ``found``/``guessed``/``correct`` and
    ``precision``/``recall``/``f1`` are over all chunk types; ``per_type``
    maps each type seen in gold or predictions to its :class:`ChunkCounts`;
    ``n_tokens`` counts all tokens and ``n_correct_tags`` those whose
    predicted tag equals the gold tag.
    """

    n_tokens: int = 0
    n_correct_tags: int = 0
    per_type: Mapping[str, ChunkCounts] = field(default_factory=dict)

    kind = "chunks"

    @property
    def accuracy(self) -> float:
        """Token accuracy as a fraction (0 when there are no tokens)."""
        return self.n_correct_tags / self.n_tokens if self.n_tokens else 0.0

    @property
    def chunk_f1(self) -> float:
        """The overall chunk F1 (a fraction); :class:`TagReport` has None here."""
        return self.f1

    def as_dict(self) -> dict:
        """JSON-ready dictionary; scores are fractions."""
        out = {"kind": self.kind, "tokens": self.n_tokens, "correct_tags": self.n_correct_tags,
               "accuracy": self.accuracy}
        out.update(super().as_dict())
        out["per_type"] = {t: c.as_dict() for t, c in sorted(self.per_type.items())}
        return out

    def as_text(self) -> str:
        """The report as ``conlleval`` prints it (percentages, 2 decimals).

        The lines are joined by newlines, without a trailing one.  The
        per-type lines end with the number of predicted chunks of that type.
        The accuracy line is left out when there are no tokens, as the
        script does.
        """
        lines = [
            f"processed {self.n_tokens} tokens with {self.found} phrases; "
            f"found: {self.guessed} phrases; correct: {self.correct}."
        ]
        if self.n_tokens > 0:
            p, r, f = _percentages(self.found, self.guessed, self.correct)
            acc = 100.0 * self.n_correct_tags / self.n_tokens
            lines.append(
                "accuracy: %6.2f%%; precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f"
                % (acc, p, r, f)
            )
        for ctype in sorted(self.per_type):
            c = self.per_type[ctype]
            p, r, f = _percentages(c.found, c.guessed, c.correct)
            lines.append(
                "%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d"
                % (ctype, p, r, f, c.guessed)
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


# ---------------------------------------------------------------------------
# Public scores
# ---------------------------------------------------------------------------


def chunk_scores(
    gold: Any,
    pred: Any,
    scheme: str = "auto",
    labels: Sequence[str] | None = None,
) -> ChunkReport:
    """Chunk precision, recall and F1, per type and overall, plus token accuracy.

    ``gold`` and ``pred`` are either lists of tag sequences, one per sentence
    (chunks never cross sentences), or two flat tag sequences read as one
    sentence.  With ``labels``, sequences hold integer indices into
    ``labels`` instead of tag strings.  Token accuracy compares whole tags
    and counts every token.

    >>> gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP"]]
    >>> pred = [["B-NP", "I-NP", "O", "B-NP"], ["B-NP"]]
    >>> report = chunk_scores(gold, pred)
    >>> report.found, report.guessed, report.correct
    (3, 3, 2)
    >>> round(report.f1, 4), report.accuracy
    (0.6667, 0.8)
    >>> print(report.as_text())
    processed 5 tokens with 3 phrases; found: 3 phrases; correct: 2.
    accuracy:  80.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67
                   NP: precision:  66.67%; recall: 100.00%; FB1:  80.00  3
                   VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0
    """
    g, p = _paired(gold, pred)
    dec = _Decoder(scheme, labels)
    gold_chunks = _corpus_chunks(dec, g)
    pred_chunks = _corpus_chunks(dec, p)
    hits = set(gold_chunks).intersection(pred_chunks)

    n_found = Counter(c[0] for c in gold_chunks)
    n_guessed = Counter(c[0] for c in pred_chunks)
    n_correct = Counter(c[0] for c in hits)
    per_type = {
        t: ChunkCounts(n_found[t], n_guessed[t], n_correct[t])
        for t in sorted(n_found.keys() | n_guessed.keys())
    }
    return ChunkReport(
        found=len(gold_chunks),
        guessed=len(pred_chunks),
        correct=len(hits),
        n_tokens=sum(len(s) for s in g),
        n_correct_tags=sum(_n_equal(gs, ps) for gs, ps in zip(g, p)),
        per_type=per_type,
    )


def chunk_f1(
    gold: Any,
    pred: Any,
    scheme: str = "auto",
    labels: Sequence[str] | None = None,
) -> float:
    """Overall chunk F1 as a fraction in [0, 1] (conlleval's FB1 / 100), with no
    per-type detail.

    It accepts the same inputs as :func:`chunk_scores`, including integer label
    arrays with ``labels``, and skips the report.

    >>> chunk_f1([["B-NP", "I-NP", "B-VP"]], [["B-NP", "B-NP", "B-VP"]])
    0.4
    >>> chunk_f1([[0, 1, 2]], [[0, 0, 2]], labels=["B-NP", "I-NP", "B-VP"])
    0.4
    """
    g, p = _paired(gold, pred)
    dec = _Decoder(scheme, labels)
    gold_chunks = _corpus_chunks(dec, g)
    pred_chunks = _corpus_chunks(dec, p)
    correct = len(set(gold_chunks).intersection(pred_chunks))
    return _percentages(len(gold_chunks), len(pred_chunks), correct)[2] / 100.0


def accuracy(gold: Any, pred: Any) -> float:
    """Token accuracy: the fraction of positions where the labels are equal.

    Works on nested or flat sequences of any labels (tag strings, integer
    arrays).  Returns 0.0 when there are no tokens; raises ValueError when
    the shapes differ.

    >>> accuracy([["B-NP", "I-NP"], ["O"]], [["B-NP", "B-NP"], ["O"]])
    0.6666666666666666
    >>> accuracy(["A", "B"], ["A"])
    Traceback (most recent call last):
    ...
    ValueError: sequence 0: gold has 2 tags but pred has 1
    """
    g, p = _paired(gold, pred)
    n = sum(len(s) for s in g)
    if n == 0:
        return 0.0
    return sum(_n_equal(gs, ps) for gs, ps in zip(g, p)) / n


def sequence_accuracy(gold: Any, pred: Any) -> float:
    """Fraction of sequences labelled entirely right (0.0 for no sequences).

    >>> sequence_accuracy([["A", "B"], ["C"]], [["A", "B"], ["D"]])
    0.5
    """
    g, p = _paired(gold, pred)
    if not g:
        return 0.0
    return sum(_n_equal(gs, ps) == len(gs) for gs, ps in zip(g, p)) / len(g)


# ---------------------------------------------------------------------------
# Plain tags and the automatic choice
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TagReport:
    """The result of :func:`tag_scores`: token accuracy and per-tag scores.

    ``per_tag`` maps every tag seen in gold or predictions to a
    :class:`ChunkCounts` over tokens: ``found`` tokens with that gold tag,
    ``guessed`` tokens predicted with it, ``correct`` tokens with both.
    ``macro_f1`` averages the per-tag F1 over the tags (fractions throughout).
    """

    n_tokens: int
    n_correct_tags: int
    per_tag: Mapping[str, ChunkCounts]

    kind = "tags"
    chunk_f1 = None  # no chunks in plain tags

    @property
    def accuracy(self) -> float:
        """Token accuracy as a fraction (0 when there are no tokens)."""
        return self.n_correct_tags / self.n_tokens if self.n_tokens else 0.0

    @property
    def macro_f1(self) -> float:
        """The unweighted mean of the per-tag F1 (0 when there are no tags)."""
        if not self.per_tag:
            return 0.0
        return sum(c.f1 for c in self.per_tag.values()) / len(self.per_tag)

    def as_dict(self) -> dict:
        """JSON-ready dictionary; scores are fractions."""
        return {"kind": self.kind, "tokens": self.n_tokens, "correct_tags": self.n_correct_tags,
                "accuracy": self.accuracy, "macro_f1": self.macro_f1,
                "per_tag": {t: c.as_dict() for t, c in sorted(self.per_tag.items())}}

    def as_text(self) -> str:
        """A conlleval-like report: accuracy, then one line per tag (percentages)
        ending with the number of tokens predicted with that tag.

        >>> print(tag_scores([["NN", "-LRB-"]], [["NN", "NN"]]).as_text())
        processed 2 tokens with 2 distinct tags (not chunks: scores per tag).
        accuracy:  50.00%; macro-averaged FB1:  33.33
                    -LRB-: precision:   0.00%; recall:   0.00%; FB1:   0.00  0
                       NN: precision:  50.00%; recall: 100.00%; FB1:  66.67  2
        """
        lines = [f"processed {self.n_tokens} tokens with {len(self.per_tag)} distinct tags "
                 f"(not chunks: scores per tag)."]
        if self.n_tokens > 0:
            lines.append("accuracy: %6.2f%%; macro-averaged FB1: %6.2f"
                         % (100.0 * self.accuracy, 100.0 * self.macro_f1))
        for tag in sorted(self.per_tag):
            c = self.per_tag[tag]
            p, r, f = _percentages(c.found, c.guessed, c.correct)
            lines.append("%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d"
                         % (tag, p, r, f, c.guessed))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


def tag_scores(gold: Any, pred: Any) -> TagReport:
    """Token accuracy and precision / recall / F1 of every tag, each token on its own
    (for tag sets that are not chunks: POS tags, phonemes, ...).

    >>> r = tag_scores([["DT", "NN"], ["-LRB-"]], [["DT", "VB"], ["-LRB-"]])
    >>> round(r.accuracy, 4), r.per_tag["NN"].recall, r.per_tag["VB"].precision
    (0.6667, 0.0, 0.0)
    """
    g, p = _paired(gold, pred)
    found: Counter = Counter()
    guessed: Counter = Counter()
    correct: Counter = Counter()
    n = n_ok = 0
    for gs, ps in zip(g, p):
        gl = gs.tolist() if isinstance(gs, np.ndarray) else gs
        pl = ps.tolist() if isinstance(ps, np.ndarray) else ps
        found.update(gl)
        guessed.update(pl)
        correct.update(a for a, b in zip(gl, pl) if a == b)
        n += len(gl)
    n_ok = sum(correct.values())
    per_tag = {t: ChunkCounts(found[t], guessed[t], correct[t]) for t in sorted(found.keys() | guessed.keys(), key=str)}
    return TagReport(n_tokens=n, n_correct_tags=n_ok, per_tag=per_tag)


def is_chunk_tagset(tags: Any, scheme: str = "auto") -> bool:
    """Whether ``tags`` (an iterable of tag strings) form a chunk scheme: each is
    ``O``, a bare tag without hyphen, or ``P-TYPE`` with a prefix ``P`` that
    ``scheme`` accepts and a non-empty ``TYPE`` -- and at least one is the last kind.

    >>> is_chunk_tagset(["B-NP", "I-NP", "O"]), is_chunk_tagset(["NN", "-LRB-"])
    (True, False)
    >>> is_chunk_tagset(["B-NP", "E-NP"], "iob2"), is_chunk_tagset(["NN", "VB"])
    (False, False)
    """
    allowed = _allowed_prefixes(scheme)
    prefixed = False
    for tag in tags:
        if not isinstance(tag, str):
            return False
        prefix, hyphen, ctype = tag.partition("-")
        if prefix == "O" or not hyphen:
            continue
        if prefix not in allowed or not ctype:
            return False
        prefixed = True
    return prefixed


def _distinct_tags(seqs: list) -> set:
    out: set = set()
    for s in seqs:
        out.update(s.tolist() if isinstance(s, np.ndarray) else s)
    return out


def sequence_scores(gold: Any, pred: Any, scheme: str = "auto") -> ChunkReport | TagReport:
    """The right scores for any tag set: a :class:`ChunkReport` (chunk precision /
    recall / F1 and token accuracy) when the gold and predicted tags together form a
    chunk scheme (:func:`is_chunk_tagset`), else a :class:`TagReport` (token accuracy
    and per-tag scores). Both have ``accuracy``, ``chunk_f1`` (None for plain tags),
    ``kind`` (``"chunks"`` / ``"tags"``), ``as_dict()`` and ``as_text()``.

    >>> sequence_scores([["B-NP", "I-NP"]], [["B-NP", "B-NP"]]).chunk_f1
    0.0
    >>> r = sequence_scores([["-LRB-", "NN", "-NONE-"]], [["-LRB-", "NN", "NN"]])
    >>> r.kind, round(r.accuracy, 4), r.chunk_f1
    ('tags', 0.6667, None)
    """
    g, p = _paired(gold, pred)
    if is_chunk_tagset(_distinct_tags(g) | _distinct_tags(p), scheme):
        return chunk_scores(g, p, scheme=scheme)
    return tag_scores(g, p)


# sklearn-crfsuite's flat and sequence metrics (spargel.flat_metrics), under their names
from .flat_metrics import (flat_accuracy_score, flat_classification_report, flat_f1_score,  # noqa: E402,F401
                           flat_fbeta_score, flat_precision_score, flat_recall_score, sequence_accuracy_score)
