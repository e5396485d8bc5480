"""``conlleval``, the CoNLL shared tasks' evaluation script, as it reads and scores files.

:func:`conlleval` reads a column file the way ``conlleval.pl`` (version 2004-01-26, run
by a current Perl) does and returns its counts; :meth:`ConllevalResult.as_text` and
:meth:`ConllevalResult.as_latex` print its report byte for byte.  ``spargel eval`` uses
this by default.

How the script reads a file
---------------------------
* Lines end at ``\\n`` only; a ``\\r`` before it stays in the last field.
* Each line is split with the *regular expression* ``delimiter`` (default one space:
  two spaces make an empty field, a tab is not a separator). Empty fields at the end of
  a line are dropped, empty fields at its start are kept (Perl's ``split``).
* A line with no field (empty, or only delimiters) or whose first field is ``-X-`` is
  a sentence boundary: it is read as a token ``-X- O O`` that is not counted, so it
  ends the open chunks.  Every other line is a token, ``-DOCSTART-`` lines included.
* Every line with a field must have as many fields as the first one (``-X-`` lines
  too); the last two fields are the gold and the guessed tag.
* A tag is cut at its first hyphen into a prefix and a type (``B-NP`` -> ``B``,
  ``NP``; ``-LRB-`` -> the empty prefix and type ``LRB-``); a tag without hyphen has
  an empty type; a type ``0`` reads as empty (Perl truthiness).
* Chunks start and end by the script's table of prefixes ``B I E O [ ] .``
  (:func:`_start_of_chunk`, :func:`_end_of_chunk`), and whenever the type changes
  (except for the prefixes ``O`` and ``.``).  A guessed chunk is correct when it
  starts and ends with a gold chunk of the same type.
* ``raw``: the outside tag ``outside`` becomes ``O`` and every other tag gets a
  ``B-`` prefix (one-token chunks).  ``outside`` has no effect without ``raw``.

The report lists the types in byte order; the empty type, when both the gold and the
guessed tags have it, is listed twice, as the script does.

All text is handled as bytes (decoded as Latin-1, one character per byte), as Perl
does, so type names of any encoding print back unchanged and pad by bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .errors import DataFormatError

__all__ = ["ConllevalResult", "conlleval", "evaluate", "perl_split", "read_tokens"]

BOUNDARY = "-X-"


def perl_split(pattern: re.Pattern, line: str) -> list[str]:
    """Perl's ``split(/pattern/, line)``: empty trailing fields dropped, a leading empty
    field kept only when the delimiter matched a non-empty string at the start, the
    groups of the pattern included.

    >>> perl_split(re.compile(" "), " a  b ")
    ['', 'a', '', 'b']
    >>> perl_split(re.compile(""), "abc")
    ['a', 'b', 'c']
    """
    out: list[str] = []
    pos = 0
    n = len(line)
    for m in pattern.finditer(line):
        s, e = m.span()
        if s == e and (s == pos or s >= n):
            continue  # an empty match at the start, the end or right after a match splits nothing
        out.append(line[pos:s])
        out.extend("" if g is None else g for g in m.groups())
        pos = e
    out.append(line[pos:])
    while out and out[-1] == "":
        out.pop()
    return out


@dataclass
class ConllevalResult:
    """conlleval's counters after reading a file.

    ``tokens`` and ``correct_tags`` count token lines (boundaries excluded) and those
    whose two tags are equal; ``found_correct`` / ``found_guessed`` / ``correct_chunk``
    count gold chunks, guessed chunks and correct guessed chunks overall, and the
    ``*_by_type`` dictionaries per type.
    """

    tokens: int = 0
    correct_tags: int = 0
    found_correct: int = 0
    found_guessed: int = 0
    correct_chunk: int = 0
    found_correct_by_type: dict = field(default_factory=dict)
    found_guessed_by_type: dict = field(default_factory=dict)
    correct_chunk_by_type: dict = field(default_factory=dict)

    def sorted_types(self) -> list[str]:
        """The types in report order, the empty type twice when both sides have it."""
        out: list[str] = []
        last = None
        for t in sorted(list(self.found_correct_by_type) + list(self.found_guessed_by_type)):
            if last is None or not _perl_true(last) or last != t:
                out.append(t)
            last = t
        return out

    def _type_scores(self, t: str) -> tuple[float, float, float]:
        ok = self.correct_chunk_by_type.get(t, 0)
        guessed = self.found_guessed_by_type.get(t, 0)
        found = self.found_correct_by_type.get(t, 0)
        precision = 100 * ok / guessed if guessed else 0.0
        recall = 100 * ok / found if found else 0.0
        fb1 = 0.0 if precision + recall == 0.0 else 2 * precision * recall / (precision + recall)
        return precision, recall, fb1

    def _overall(self) -> tuple[float, float, float]:
        precision = 100 * self.correct_chunk / self.found_guessed if self.found_guessed > 0 else 0.0
        recall = 100 * self.correct_chunk / self.found_correct if self.found_correct > 0 else 0.0
        fb1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        return precision, recall, fb1

    def as_text(self) -> str:
        """The report, as conlleval prints it (every line ends with a newline)."""
        lines = [f"processed {self.tokens} tokens with {self.found_correct} phrases; "
                 f"found: {self.found_guessed} phrases; correct: {self.correct_chunk}.\n"]
        if self.tokens > 0:
            p, r, f = self._overall()
            lines.append("accuracy: %6.2f%%; precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f\n"
                         % (100 * self.correct_tags / self.tokens, p, r, f))
        for t in self.sorted_types():
            p, r, f = self._type_scores(t)
            lines.append("%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d\n"
                         % (t, p, r, f, self.found_guessed_by_type.get(t, 0)))
        return "".join(lines)

    def as_latex(self) -> str:
        """The report as conlleval ``-l`` prints it: the rows of a LaTeX table."""
        out = ["        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline"]
        for t in self.sorted_types():
            p, r, f = self._type_scores(t)
            out.append("\n%-7s &  %6.2f\\%% & %6.2f\\%% & %6.2f \\\\" % (t, p, r, f))
        out.append("\\hline\n")
        p, r, f = self._overall()
        out.append("Overall &  %6.2f\\%% & %6.2f\\%% & %6.2f \\\\\\hline\n" % (p, r, f))
        return "".join(out)

    def as_dict(self, encoding: str = "utf-8") -> dict:
        """JSON-ready scores (fractions), the type names decoded with ``encoding``."""
        def name(t):
            return t.encode("latin-1").decode(encoding, errors="replace")

        def scores(found, guessed, ok):
            precision = ok / guessed if guessed else 0.0
            recall = ok / found if found else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            return {"found": found, "guessed": guessed, "correct": ok,
                    "precision": precision, "recall": recall, "f1": f1}

        out = {"kind": "chunks", "tokens": self.tokens, "correct_tags": self.correct_tags,
               "accuracy": self.correct_tags / self.tokens if self.tokens else 0.0}
        out.update(scores(self.found_correct, self.found_guessed, self.correct_chunk))
        types = sorted(set(self.found_correct_by_type) | set(self.found_guessed_by_type))
        out["per_type"] = {name(t): scores(self.found_correct_by_type.get(t, 0),
                                           self.found_guessed_by_type.get(t, 0),
                                           self.correct_chunk_by_type.get(t, 0)) for t in types}
        return out


def _perl_true(s: str) -> bool:
    return s not in ("", "0")


def _split_tag(tag: str) -> tuple[str, str]:
    prefix, hyphen, ctype = tag.partition("-")
    if not hyphen:
        return tag, ""
    return prefix, ctype if _perl_true(ctype) else ""


def _end_of_chunk(prev_tag: str, tag: str, prev_type: str, ctype: str) -> bool:
    end = (
        (prev_tag == "B" and tag in ("B", "O"))
        or (prev_tag == "I" and tag in ("B", "O"))
        or (prev_tag == "E" and tag in ("E", "I", "O"))
    )
    if prev_tag != "O" and prev_tag != "." and prev_type != ctype:
        end = True
    if prev_tag in ("]", "["):
        end = True
    return end


def _start_of_chunk(prev_tag: str, tag: str, prev_type: str, ctype: str) -> bool:
    start = (
        (tag == "B" and prev_tag in ("B", "I", "O"))
        or (tag == "I" and prev_tag == "O")
        or (tag == "E" and prev_tag in ("E", "O"))
        or (tag == "I" and prev_tag == "E")
    )
    if tag != "O" and tag != "." and prev_type != ctype:
        start = True
    if tag in ("[", "]"):
        start = True
    return start


class _Delimiter:
    """The delimiter regex, split with as it can be without hanging: Python's ``re`` on
    lines up to the length its backtracking bound allows (:mod:`spargel.data.safe_regex`),
    RE2 beyond it and for shapes that can backtrack exponentially (``(a+)+$``). Without
    RE2 such a shape is a ``ValueError`` at once and a line over the bound an error where
    it is met -- never a hang."""

    def __init__(self, delimiter: str):
        from .data import safe_regex

        self.delimiter = delimiter
        text = delimiter.encode().decode("latin-1")
        try:
            safe_regex.check_nesting(text)
            self.pattern = re.compile(text, re.ASCII)
            c, d = safe_regex.shape_cost(text, re.ASCII)
            self.limit, why = safe_regex.max_safe_length(c, d), "it has too many optional parts"
        except re.error as exc:
            raise ValueError(f"bad delimiter {delimiter!r}: {exc}") from None
        except safe_regex.UnsafeRegex as exc:
            self.limit, why = -1, str(exc)
        self.linear = None
        if self.limit < 10 ** 7 and safe_regex.re2_available():
            try:
                self.linear = safe_regex.compile_re2(text)
            except safe_regex.UnsafeRegex as exc:
                raise ValueError(f"bad delimiter {delimiter!r}: {exc}") from None
        elif self.limit < 0:
            raise ValueError(f"the delimiter {delimiter!r} could backtrack for a very long time ({why}); "
                             f"install the linear-time engine (pip install 'spargel[re2]') or simplify it")

    def split(self, line: str, name: str, lineno: int) -> list[str]:
        if len(line) <= self.limit:
            return perl_split(self.pattern, line)
        if self.linear is not None:
            return perl_split(self.linear, line)
        raise DataFormatError(name, lineno, f"a line of {len(line)} characters: the delimiter "
                                            f"{self.delimiter!r} could backtrack for a very long time on it "
                                            f"(its limit is {self.limit}); install the linear-time engine "
                                            f"(pip install 'spargel[re2]') or simplify the delimiter")


def read_tokens(data: bytes, name: str = "<stdin>", delimiter: str | None = None,
                raw: bool = False, outside: str = "O", gold: int | None = None,
                pred: int | None = None):
    """Yield ``(line, first field, gold tag, guessed tag)`` per line as conlleval reads it
    (a boundary is ``(line, "-X-", "O", "O")``); strings are Latin-1 decoded bytes.

    ``delimiter`` is a regular expression (conlleval's ``-d``); ``None`` is conlleval's
    default, one space, except that a file whose first line with a field is one field
    holding a tab (a file conlleval refuses) is split on tabs.  ``gold`` / ``pred`` pick
    0-based columns (negative from the end) instead of the last two.
    """
    text = data.decode("latin-1")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if delimiter is None:
        delimiter = " "
        for line in lines:
            fields = perl_split(re.compile(" "), line)
            if fields:
                if len(fields) == 1 and fields[0] != BOUNDARY and "\t" in fields[0]:
                    delimiter = "\t"
                break
    splitter = _Delimiter(delimiter)
    width = -1
    width_line = 0
    for lineno, line in enumerate(lines, 1):
        fields = splitter.split(line, name, lineno)
        if width < 0:
            width, width_line = len(fields) - 1, lineno
        elif width != len(fields) - 1 and fields:
            raise DataFormatError(name, lineno, f"{len(fields)} fields, but line {width_line} has "
                                                f"{width + 1} (conlleval: unexpected number of features)")
        if not fields or fields[0] == BOUNDARY:
            yield lineno, BOUNDARY, "O", "O"
            continue
        if len(fields) < 2:
            raise DataFormatError(name, lineno, "one field; a gold and a guessed tag are needed "
                                                f"(conlleval: unexpected number of features in line {line!r})")
        if gold is not None or pred is not None:
            gi = -2 if gold is None else gold
            pi = -1 if pred is None else pred
            if not (-len(fields) <= gi < len(fields) and -len(fields) <= pi < len(fields)):
                raise ValueError(f"the gold or predicted column is outside the {len(fields)} "
                                 f"fields of {name}:{lineno}")
            g, p = fields[gi], fields[pi]
        else:
            g, p = fields[-2], fields[-1]
        if raw:
            if p == outside:
                p = "O"
            if g == outside:
                g = "O"
            if p != "O":
                p = "B-" + p
            if g != "O":
                g = "B-" + g
        yield lineno, fields[0], g, p


def conlleval(tokens) -> ConllevalResult:
    """Run conlleval's counting over ``(line, first, gold, guessed)`` tuples (as
    :func:`read_tokens` yields them).

    >>> r = conlleval([(1, "a", "B-NP", "B-NP"), (2, "b", "I-NP", "O"), (3, "-X-", "O", "O")])
    >>> r.found_correct, r.found_guessed, r.correct_chunk, r.tokens, r.correct_tags
    (1, 1, 0, 2, 1)
    """
    res = ConllevalResult()
    fc, fg, cc = res.found_correct_by_type, res.found_guessed_by_type, res.correct_chunk_by_type
    in_correct = False
    last_correct, last_guessed = "O", "O"
    last_correct_type, last_guessed_type = "", ""
    for _, first, gold_tag, guessed_tag in tokens:
        guessed, guessed_type = _split_tag(guessed_tag)
        correct, correct_type = _split_tag(gold_tag)
        if first == BOUNDARY:
            guessed = "O"
        if in_correct:
            end_c = _end_of_chunk(last_correct, correct, last_correct_type, correct_type)
            end_g = _end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
            if end_c and end_g and last_guessed_type == last_correct_type:
                in_correct = False
                res.correct_chunk += 1
                cc[last_correct_type] = cc.get(last_correct_type, 0) + 1
            elif end_c != end_g or guessed_type != correct_type:
                in_correct = False
        start_c = _start_of_chunk(last_correct, correct, last_correct_type, correct_type)
        start_g = _start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        if start_c and start_g and guessed_type == correct_type:
            in_correct = True
        if start_c:
            res.found_correct += 1
            fc[correct_type] = fc.get(correct_type, 0) + 1
        if start_g:
            res.found_guessed += 1
            fg[guessed_type] = fg.get(guessed_type, 0) + 1
        if first != BOUNDARY:
            if correct == guessed and guessed_type == correct_type:
                res.correct_tags += 1
            res.tokens += 1
        last_guessed, last_correct = guessed, correct
        last_guessed_type, last_correct_type = guessed_type, correct_type
    if in_correct:
        res.correct_chunk += 1
        cc[last_correct_type] = cc.get(last_correct_type, 0) + 1
    return res


def evaluate(data: bytes, name: str = "<stdin>", *, scheme: str = "conlleval",
             per_tag: bool = False, delimiter: str | None = None, raw: bool = False,
             outside: str = "O", gold: int | None = None, pred: int | None = None,
             latex: bool = False, as_json: bool = False, encoding: str = "utf-8") -> str:
    """The text ``spargel eval`` prints for the bytes of a file, as a Latin-1 string (one
    character per byte: encode it with Latin-1 to get the bytes to write).

    ``scheme="conlleval"``: conlleval's report (or LaTeX rows, or JSON); another scheme
    (``iob1``, ``iob2``, ``iobes``, ``bilou``, ``auto``) reads the same tokens' chunks
    strictly with :func:`spargel.metrics.chunk_scores`; ``per_tag`` scores each tag with
    :func:`spargel.metrics.tag_scores`. ``gold`` / ``pred`` are 0-based columns (negative
    from the end). Raises :class:`~spargel.errors.DataFormatError` (file and line) on a
    file conlleval refuses or a tag the strict scheme lacks, ValueError on bad options.

    >>> print(evaluate(b"a B-NP B-NP\\nb I-NP O\\n"), end="")
    processed 2 tokens with 1 phrases; found: 1 phrases; correct: 0.
    accuracy:  50.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00
                   NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1
    """
    tokens = list(read_tokens(data, name, delimiter=delimiter, raw=raw,
                              outside=outside.encode(encoding).decode("latin-1"),
                              gold=gold, pred=pred))
    if scheme == "conlleval" and not per_tag:
        result = conlleval(tokens)
        if as_json:
            return json.dumps(result.as_dict(encoding)) + "\n"
        return result.as_latex() if latex else result.as_text()

    from .metrics import chunk_scores, chunks, tag_scores

    def decoded(t):
        return t.encode("latin-1").decode(encoding, "replace")

    sentences, current = [], []
    for _, first, g, p in tokens:
        if first == BOUNDARY:
            if current:
                sentences.append(current)
            current = []
        else:
            current.append((g, p))
    if current:
        sentences.append(current)
    gold_tags = [[g for g, _ in s] for s in sentences]
    pred_tags = [[p for _, p in s] for s in sentences]
    if not per_tag:  # name the line of the first tag the scheme refuses
        seen = set()
        for lineno, first, g, p in tokens:
            for tag in (g, p):
                if first != BOUNDARY and tag not in seen:
                    seen.add(tag)
                    try:
                        chunks([tag], scheme)
                    except ValueError as exc:
                        raise DataFormatError(name, lineno, decoded(f"{exc} (the default reading, "
                                                                    "conlleval's, takes any tag)"))
        report = chunk_scores(gold_tags, pred_tags, scheme=scheme)
    else:
        report = tag_scores(gold_tags, pred_tags)
    if as_json:
        d = report.as_dict()
        key = "per_tag" if per_tag else "per_type"
        d[key] = {decoded(t): v for t, v in d[key].items()}
        return json.dumps(d) + "\n"
    return report.as_text() + "\n"
