"""Feature templates: the CRF++ / Wapiti pattern language.

A template file holds one *pattern* per line. Each pattern expands, at every
token of a sequence, to one feature string (an *observation*); the model then
pairs the observation with the current label (unigram) or with the pair
(previous label, current label) (bigram).

Syntax
------
``U02:%x[0,0]``
    The first character is the kind: ``U`` unigram, ``B`` bigram, ``*``
    both (lower-case ``u``/``b`` are accepted too). The text up to the first
    ``:`` is the pattern's name, by convention a unique identifier. The
    *whole* expanded line -- kind, name and literal text included -- is the
    feature string, so two patterns never produce the same string.
``B``
    A line holding only ``B`` (or only ``*``) switches on the plain label
    transitions (``Template.transitions``); it produces no observation. A
    bare ``*`` also produces the constant unigram observation ``"*"`` (a
    per-label bias), since ``*`` means "``U`` and ``B``".
``T``
    Second-order models only (``CRF(order=2)``, ``spargel train --order 2``):
    a line holding only ``T`` switches on the label *triples* ``(y[t-2],
    y[t-1], y[t])``, the second-order transitions (``Template.triples``). It
    produces no observation and takes none: a ``T`` line with anything else
    on it is an error.

Label context. Which labels an observation is paired with is said by the
kind letter: ``U`` the current label, ``B`` the label pair (previous label,
current label), ``*`` both; a bare ``B`` gives the plain weights of the pairs,
a bare ``T`` those of the triples. At order 1, the pairs are the transitions
(and ``B`` observations are not used on the first token). At order 2 the model
is a chain over label pairs: ``B`` observations and the bare ``B`` line weigh
the pair on every token -- the first one's pair is ``(__BOS__, y[0])``, a begin
marker -- and the bare ``T`` line weighs the triples from the second token on.
Order-1 templates mean exactly what they always meant; at order 2 the same
template needs a ``T`` line.
``#``
    Starts a comment when it opens the line or follows a blank outside any
    command; ``%t[0,0,"#x"]`` or ``U:a#b`` keep their ``#``. Empty lines and
    comment lines are ignored.

Commands (``row`` is a token offset, ``col`` a 0-based observation column):

``%x[row,col]``
    The cell ``col`` of the token at offset ``row`` from the current one.
``%x[@row,col]``
    Absolute position: ``@0`` is the first token, ``@1`` the second, ``@-1``
    the last, ``@-2`` the one before.
``%t[row,col,"regex"]``
    ``true`` or ``false``: whether the regular expression (Python ``re``
    syntax) matches anywhere in the cell (a search, not a full match).
``%m[row,col,"regex"]``
    The first substring of the cell that the regex matches (empty when none).
``%X``, ``%T``, ``%M``
    The same on the lower-cased cell (and, for ``%T``/``%M``, a
    case-insensitive regex).
``%%``
    A literal ``%``.

Inside the quoted regex, ``\\"`` stands for a quote; any other backslash
reaches the regex unchanged. Blanks around ``row`` and ``col`` are allowed.

Limits (a template may come from a stranger, inside a model file): a ``row``
offset is at most :data:`MAX_OFFSET` tokens away and a column at most
:data:`MAX_COLUMN`; a regex whose backtracking time could explode (``(a+)+``,
``(a|ab)*``, backreferences) runs on the linear-time RE2 engine when it is
installed and is refused otherwise -- see :mod:`spargel.data.safe_regex`.

Padding
-------
A position before the first token expands to ``_B-1`` (one before), ``_B-2``
(two before), ...; after the last token to ``_B+1``, ``_B+2``, ... -- the
CRF++ convention. The marker is used as is for every command: no case
folding and no regex is applied to it, so ``%t[-1,0,"^[A-Z]"]`` on the first
token gives ``_B-1``, not ``false``. :meth:`Template.extract` with
``pad=False`` instead drops every feature that needs a position outside the
sequence (what CRFsuite's example feature extractors do).

Example
-------
>>> t = Template.parse("U01:%x[-1,0]/%x[0,0]\\nB\\n")
>>> uni, bi = t.extract([["He"], ["reckons"]])
>>> uni
[['U01:_B-1/He'], ['U01:He/reckons']]
>>> t.transitions, bi
(True, [[], []])
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .errors import DataFormatError
from .safe_regex import UnsafeRegex, compile_regex
from .wapiti_regex import WapitiRegex, WapitiRegexError, parse_wapiti_line, split_wapiti_pattern
from ..errors import SpargelWarning

__all__ = [
    "FORMATS",
    "CRFSUITE_CHUNKING_TEMPLATE",
    "SHA_PEREIRA_TEMPLATE",
    "Template",
    "crfsuite_chunking_template",
    "default_template",
    "trained_columns",
    "training_template",
]

_INT = re.compile(r"[+-]?[0-9]+\Z")
#: the farthest a pattern may look from the current token (%x[row,...], |row|), and the
#: highest column it may name: beyond any real template, and small enough that padding
#: and column checks stay cheap
MAX_OFFSET = 1000
MAX_COLUMN = 10000
_KINDS = {"U": "U", "u": "U", "B": "B", "b": "B", "*": "*", "T": "T", "t": "T"}
_MEMO_LIMIT = 1 << 20  # regex results remembered per command before starting afresh
#: the pattern languages: "crfpp" (CRF++'s templates, with spargel's Python-regex %t / %m)
#: and "wapiti" (Wapiti 1.5's pattern files, its own regexes, padding and offsets)
FORMATS = ("crfpp", "wapiti")
_WAPITI_ONLY = re.compile(r"%[tmTM]\[[^\n]*\\[lLuUpP]")  # a Wapiti class in a regex
_FORMAT_MARK = re.compile(r"#\s*format\s*:\s*(crfpp|crf\+\+|wapiti)\s*\Z", re.IGNORECASE)


class _Memo(dict):
    """A dict that computes (and remembers) a missing value with ``fn``."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, key):
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        value = self[key] = self.fn(key)
        return value


class _Command:
    """One ``%c[row,col(,"regex")]`` of a pattern, compiled."""

    __slots__ = ("op", "fold", "row", "col", "absolute", "regex", "key")

    def __init__(self, op, fold, row, col, absolute, regex):
        self.op = op  # "x", "t" or "m"
        self.fold = fold  # upper-case command: work on the lower-cased cell
        self.row = row
        self.col = col
        self.absolute = absolute
        self.regex = regex  # compiled, for "t" and "m"
        # commands with the same key turn a cell into the same value
        self.key = (op, fold, regex.pattern if regex is not None else None)

    def cell_function(self):
        """The function cell -> value, or None for a plain ``%x``."""
        op, rx = self.op, self.regex
        if op == "x":
            return str.lower if self.fold else None
        search = rx.search
        if op == "t":
            if self.fold:
                return lambda s: "true" if search(s.lower()) else "false"
            return lambda s: "true" if search(s) else "false"

        def first_match(s, search=search, fold=self.fold):
            found = search(s.lower() if fold else s)
            return found.group(0) if found else ""

        return first_match


def _distinct(key, bound):
    """(the distinct values of the int64 array ``key``, whose values lie in
    ``[0, bound)``, in increasing order; each entry's rank among them; for each, the
    index of one entry holding it): ``np.unique``'s answer, by marking a table of
    ``bound`` entries when that is small (no sort), else by ``np.unique``."""
    import numpy as np

    n = len(key)
    if bound <= 4 * n + 4096:
        seen = np.zeros(bound, bool)
        seen[key] = True
        used = np.flatnonzero(seen)
        rank = np.cumsum(seen, dtype=np.int64) - 1
        holder = np.empty(bound, np.int64)
        holder[key] = np.arange(n, dtype=np.int64)
        return used, rank[key], holder[used]
    used, at, inverse = np.unique(key, return_index=True, return_inverse=True)
    return used, inverse.reshape(-1), at


def _ascii_lower(s: str) -> str:
    """C's tolower over the bytes of ``s``: only A-Z change."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def _shown(text, limit=80):
    """``repr(text)``, cut to about ``limit`` characters (a forged regex can be huge)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


class _WapitiCommand(_Command):
    """A command of a Wapiti pattern file: Wapiti's regexes on a token's UTF-8 bytes,
    upper-case commands lower-case their result (ASCII only, as C's tolower)."""

    __slots__ = ()

    def __init__(self, op, caps, row, col, absolute, regex):
        super().__init__(op, caps, row, col, absolute, regex)
        self.key = ("wapiti", op, caps, regex.pattern if regex is not None else None)

    def cell_function(self):
        op, rx, caps = self.op, self.regex, self.fold
        if op == "x":
            return _ascii_lower if caps else None
        if op == "t":
            return lambda s: "true" if rx.test(s.encode("utf-8", "surrogateescape")) else "false"

        def first_match(s, match=rx.match, caps=caps):
            b = s.encode("utf-8", "surrogateescape")
            found = match(b)
            if found is None:
                return ""
            start, length = found
            out = b[start:start + length]
            if start + length > len(b):  # Wapiti copies the string's end: the observation stops
                out += b"\0"
            out = out.decode("utf-8", "surrogateescape")
            return _ascii_lower(out) if caps else out

        return first_match


class _Pattern:
    """One template line, compiled: literal pieces around its commands."""

    __slots__ = ("kind", "name", "text", "line", "literals", "commands", "fmt",
                 "rel_min", "rel_max", "absolutes")

    def __init__(self, kind, name, text, line, literals, commands):
        self.kind = kind
        self.name = name
        self.text = text
        self.line = line
        self.literals = literals  # len(commands) + 1 strings
        self.commands = commands
        self.fmt = "{}".join(s.replace("{", "{{").replace("}", "}}") for s in literals)
        rel = [c.row for c in commands if not c.absolute]
        self.rel_min = min(rel, default=0)
        self.rel_max = max(rel, default=0)
        self.absolutes = [c.row for c in commands if c.absolute]

    def __repr__(self):
        return f"<pattern {self.text!r} (line {self.line})>"


class _Parser:
    """Turns one template line into a :class:`_Pattern` (or None)."""

    def __init__(self, source):
        self.source = source

    def fail(self, lineno, message):
        raise DataFormatError(self.source, lineno, message)

    def parse_line(self, raw, lineno):
        s = raw.strip()
        if not s or s[0] == "#":
            return None
        kind = _KINDS.get(s[0])
        if kind is None:
            self.fail(lineno, f"unknown pattern kind {s[0]!r} (expected U, B, * or T): {s!r}")
        literals, commands, piece = [], [], [s[0]]
        i, n = 1, len(s)
        while i < n:
            c = s[i]
            if c == "#" and s[i - 1] in " \t":
                break  # a comment up to the end of the line
            if c != "%":
                piece.append(c)
                i += 1
                continue
            if i + 1 < n and s[i + 1] == "%":
                piece.append("%")
                i += 2
                continue
            command, i = self.parse_command(s, i, lineno)
            literals.append("".join(piece))
            commands.append(command)
            piece = []
        literals.append("".join(piece).rstrip())
        text = s[:i].rstrip()
        head = literals[0]
        name = head[1:head.index(":")] if ":" in head else head[1:]
        return _Pattern(kind, name, text, lineno, literals, commands)

    def parse_command(self, s, i, lineno):
        """Parse the command starting at ``s[i] == '%'``; return it and the next index."""
        n = len(s)
        letter = s[i + 1] if i + 1 < n else ""
        op = letter.lower()
        if op not in ("x", "t", "m") or not letter:
            shown = repr(letter) if letter else "nothing"
            self.fail(lineno, f"unknown command '%{letter}' at column {i + 1}: '%' must be "
                              f"followed by x, t, m (or X, T, M, or % for a literal %), "
                              f"found {shown}")
        name = "%" + letter
        if i + 2 >= n or s[i + 2] != "[":
            self.fail(lineno, f"expected '[' after {name} at column {i + 1}")
        j = i + 3
        plain, quoted = [], []
        while True:
            while j < n and s[j] in " \t":
                j += 1
            if j < n and s[j] == '"':
                text, j = self.parse_quoted(s, j, lineno)
                quoted.append(text)
            else:
                start = j
                while j < n and s[j] not in ',]"':
                    j += 1
                if quoted:
                    self.fail(lineno, f"unexpected {s[start:j].strip()!r} after the regex "
                                      f"of {name} at column {i + 1}")
                plain.append(s[start:j].strip())
            while j < n and s[j] in " \t":
                j += 1
            if j >= n:
                self.fail(lineno, f"missing ']' to close {name}[ opened at column {i + 1}")
            if s[j] == "]":
                j += 1
                break
            if s[j] != ",":
                self.fail(lineno, f"unexpected {s[j]!r} in {name} at column {j + 1}")
            j += 1

        if op == "x":
            if quoted or len(plain) != 2:
                self.fail(lineno, f"{name} takes [row,col], found {s[i:j]!r}")
            regex_text = None
        else:
            if len(quoted) != 1 or len(plain) != 2:
                self.fail(lineno, f'{name} takes [row,col,"regex"], found {s[i:j]!r}')
            regex_text = quoted[0]
        row_text, col_text = plain
        absolute = row_text.startswith("@")
        if absolute:
            row_text = row_text[1:].strip()
        if not _INT.match(row_text):
            self.fail(lineno, f"row offset {plain[0]!r} of {name} is not an integer")
        if not _INT.match(col_text):
            self.fail(lineno, f"column {col_text!r} of {name} is not an integer")
        row = int(row_text) if len(row_text) <= 8 else MAX_OFFSET + 1
        if abs(row) > MAX_OFFSET:
            self.fail(lineno, f"row offset {plain[0]!r} of {name} is out of range (at most "
                              f"{MAX_OFFSET} tokens away)")
        col = int(col_text) if len(col_text) <= 8 else MAX_COLUMN + 1
        if col < 0:
            self.fail(lineno, f"column {col} of {name} is negative")
        if col > MAX_COLUMN:
            self.fail(lineno, f"column {col_text!r} of {name} is out of range (at most {MAX_COLUMN})")
        regex = None
        if regex_text is not None:
            flags = re.IGNORECASE if letter.isupper() else 0
            try:
                regex = compile_regex(regex_text, flags, where=(self.source, lineno))
            except re.error as exc:
                self.fail(lineno, f"bad regular expression {_shown(regex_text)} in {name}: {exc}")
            except UnsafeRegex as exc:
                self.fail(lineno, f"unsafe regular expression {_shown(regex_text)} in {name}: {exc}")
        command = _Command(op, letter.isupper(), row, col, absolute, regex)
        return command, j

    def parse_quoted(self, s, j, lineno):
        """Parse ``"..."`` starting at ``s[j] == '"'``; ``\\"`` is a quote."""
        out = []
        k = j + 1
        n = len(s)
        while k < n:
            c = s[k]
            if c == "\\" and k + 1 < n and s[k + 1] == '"':
                out.append('"')
                k += 2
                continue
            if c == '"':
                return "".join(out), k + 1
            out.append(c)
            k += 1
        self.fail(lineno, f"unterminated quote (opened at column {j + 1})")


class Template:
    """A compiled set of CRF++/Wapiti patterns (see the module docstring).

    Build one with :meth:`parse` or :meth:`from_file`, then call
    :meth:`extract` on the observation columns of each sequence.

    Attributes
    ----------
    text : str
        The source text it was parsed from (what a model file stores).
    source : str
        Where the text came from (a file name or ``"<string>"``).
    transitions : bool
        True when a bare ``B`` (or bare ``*``) line asks for plain label
        transitions.
    triples : bool
        True when a bare ``T`` line asks for label triples (second-order
        transitions; second-order models only).
    n_columns_required : int
        Highest observation column used, plus one; the data needs at least
        that many observation columns.

    Examples
    --------
    >>> t = Template.parse('''
    ... # words around the current one
    ... U00:%x[-1,0]
    ... U01:%x[0,0]/%x[0,1]
    ... *02:%t[0,0,"^[A-Z]"]
    ... B
    ... ''')
    >>> t.n_columns_required, t.transitions, len(t)
    (2, True, 3)
    >>> uni, bi = t.extract([["The", "DT"], ["cat", "NN"]])
    >>> uni[1]
    ['U00:The', 'U01:cat/NN', '*02:false']
    >>> bi[0]
    ['*02:true']
    """

    def __init__(self, patterns, transitions, text="", source="<string>", triples=False,
                 format="crfpp"):
        self.text = text
        self.source = source
        self.format = format
        self.transitions = bool(transitions)
        self.triples = bool(triples)
        self._patterns = list(patterns)
        self._unigram = [p for p in self._patterns if p.kind in ("U", "*")]
        self._bigram = [p for p in self._patterns if p.kind in ("B", "*")]
        self.n_columns_required = 1 + max(
            (c.col for p in self._patterns for c in p.commands), default=-1
        )
        width = max((max(-p.rel_min, p.rel_max) for p in self._patterns), default=0)
        self._pad = width
        if format == "wapiti":
            self._before = [f"_x-{k if k <= 4 else '#'}" for k in range(width, 0, -1)]
            self._after = [f"_x+{k if k <= 4 else '#'}" for k in range(1, width + 1)]
        else:
            self._before = [f"_B-{k}" for k in range(width, 0, -1)]
            self._after = [f"_B+{k}" for k in range(1, width + 1)]
        # one value function per distinct command kind, shared by all patterns
        self._functions = {}
        for p in self._patterns:
            for c in p.commands:
                if c.key not in self._functions:
                    fn = c.cell_function()
                    if fn is not None and c.op != "x":
                        fn = _Memo(fn).__getitem__
                    self._functions[c.key] = fn

    # ------------------------------------------------------------------ build
    @classmethod
    def parse(cls, text: str, source: str = "<string>", format: str | None = None) -> "Template":
        """Compile the patterns in ``text``.

        ``format`` is the pattern language, ``"crfpp"`` or ``"wapiti"`` (see
        :data:`FORMATS`); None reads a comment line ``# format: wapiti`` (or ``crfpp``)
        before the first pattern, and otherwise takes ``"crfpp"`` -- unless the text
        fails to parse so but parses as a Wapiti pattern file and uses one of Wapiti's
        classes ``\\l \\L \\u \\U \\p \\P`` (which Python's regexes do not have): then it is
        read as Wapiti's, with a :class:`~spargel.errors.SpargelWarning`. A template read as Wapiti's
        keeps a ``# format: wapiti`` line first in its ``text``, so that a model file
        stores which language it is.

        Raises :class:`DataFormatError` naming ``source`` and the line on a
        malformed pattern, or when the text has no pattern at all.

        >>> Template.parse("U00:%x[0,0]").extract([["a"], ["b"]])[0]
        [['U00:a'], ['U00:b']]
        >>> Template.parse("U00:%X[-1,0]", format="wapiti").extract([["A"], ["B"]])[0]
        [['u00:_x-1'], ['u00:a']]
        """
        if format is None:
            format = _marked_format(text)
            if format is None:
                try:
                    return cls._parse(text, source, "crfpp")
                except DataFormatError as exc:
                    if not _WAPITI_ONLY.search(text):
                        raise
                    try:
                        tpl = cls._parse(text, source, "wapiti")
                    except DataFormatError:
                        raise exc from None
                    import warnings

                    warnings.warn(f"{source}: read as a Wapiti pattern file ({exc.message}); "
                                  "say so with a '# format: wapiti' line or --pattern-format wapiti",
                                  SpargelWarning, stacklevel=2)
                    return tpl
        if format not in FORMATS:
            raise ValueError(f"unknown pattern format {format!r}; expected one of {FORMATS}")
        return cls._parse(text, source, format)

    @classmethod
    def _parse(cls, text: str, source: str, format: str) -> "Template":
        if format == "wapiti":
            return cls._parse_wapiti(text, source)
        parser = _Parser(source)
        patterns = []
        transitions = triples = False
        for lineno, raw in enumerate(text.splitlines(), start=1):
            pattern = parser.parse_line(raw, lineno)
            if pattern is None:
                continue
            if pattern.kind == "T":
                if pattern.commands or pattern.text not in ("T", "t"):
                    parser.fail(lineno, f"a T line stands alone (label triples take no observation): "
                                        f"{pattern.text!r}")
                triples = True
                continue
            if not pattern.commands and pattern.text in ("B", "b", "*"):
                transitions = True
                if pattern.kind == "*":  # the unigram half: a constant observation
                    patterns.append(_Pattern("U", "", "*", lineno, ["*"], []))
                continue
            patterns.append(pattern)
        if not patterns and not transitions and not triples:
            raise DataFormatError(source, None, "the template has no patterns")
        return cls(patterns, transitions, text, source, triples)

    @classmethod
    def _parse_wapiti(cls, text: str, source: str) -> "Template":
        """Wapiti's reading: see :mod:`spargel.data.wapiti_regex`."""
        patterns = []
        transitions = False
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = parse_wapiti_line(raw)
            if line is None:
                continue
            try:
                literals, specs = split_wapiti_pattern(line)
                commands = []
                for op, caps, absolute, offset, column, regex_text in specs:
                    if abs(offset) > MAX_OFFSET:
                        raise WapitiRegexError(f"offset {offset} is out of range (at most "
                                               f"{MAX_OFFSET} tokens away)")
                    if column > MAX_COLUMN:
                        raise WapitiRegexError(f"column {column} is out of range (at most {MAX_COLUMN})")
                    regex = (WapitiRegex(regex_text, where=(source, lineno))
                             if regex_text is not None else None)
                    commands.append(_WapitiCommand(op, caps, offset, column, absolute, regex))
            except WapitiRegexError as exc:
                raise DataFormatError(source, lineno, f"{exc}: {line!r}") from None
            kind = {"u": "U", "b": "B", "*": "*"}[line[0]]
            if not commands and line in ("b", "*"):
                transitions = True  # label-pair weights: Wapiti's bigram observation 'b' / '*'
                if kind == "*":
                    patterns.append(_Pattern("U", "", "*", lineno, ["*"], []))
                continue
            head = literals[0]
            name = head[1:head.index(":")] if ":" in head else head[1:]
            patterns.append(_Pattern(kind, name, line, lineno, literals, commands))
        if not patterns and not transitions:
            raise DataFormatError(source, None, "the template has no patterns")
        if _marked_format(text) is None:
            text = "# format: wapiti\n" + text
        return cls(patterns, transitions, text, source, False, format="wapiti")

    @classmethod
    def from_file(cls, path: str | os.PathLike, encoding: str = "utf-8",
                  format: str | None = None) -> "Template":
        """Read and compile a template file (``format``: as in :meth:`parse`).

        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = os.path.join(d, "t.txt")
        ...     with open(f, "w") as fh:
        ...         _ = fh.write("U00:%x[0,0]\\nB\\n")
        ...     Template.from_file(f).transitions
        True
        """
        name = os.fsdecode(path)
        with open(path, "rb") as fh:
            data = fh.read()
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise DataFormatError(name, line, f"invalid {encoding} text: {exc.reason}") from None
        if text.startswith("\ufeff"):
            text = text[1:]
        return cls.parse(text, source=name, format=format)

    # ------------------------------------------------------------- describe
    def __len__(self) -> int:
        """Number of observation-producing patterns (bare ``B`` lines excluded)."""
        return len(self._patterns)

    @property
    def patterns(self) -> list[str]:
        """The observation-producing pattern lines, comments removed.

        >>> Template.parse("U0:%x[0,0]  # word\\nB").patterns
        ['U0:%x[0,0]']
        """
        return [p.text for p in self._patterns]

    @property
    def n_unigram(self) -> int:
        """Number of patterns whose features are paired with the current label."""
        return len(self._unigram)

    @property
    def bigram_patterns(self):
        """The bigram patterns (``B`` and Wapiti's ``b`` / ``*`` lines), in file order."""
        return tuple(self._bigram)

    @property
    def n_bigram(self) -> int:
        """Number of patterns whose features are paired with label pairs."""
        return len(self._bigram)

    unigram_only = False

    def without_label_pairs(self) -> "Template":
        """This template without what weighs label pairs (its bigram patterns, the
        ``B`` part of Wapiti's ``*`` patterns and the transitions): Wapiti's maxent
        models, where every token is labelled on its own."""
        if self.triples:
            raise ValueError(f"a template with label triples ('T', {self.source}) has no maxent form")
        t = Template(self._patterns, False, self.text, self.source, False, format=self.format)
        t._bigram = []
        t.unigram_only = True
        return t

    def __reduce__(self):
        # compiled pieces hold closures: rebuild from the text instead (pickle, copy)
        return (_rebuild, (self.text, self.source, self.format, self.unigram_only))

    def __eq__(self, other):
        if not isinstance(other, Template):
            return NotImplemented
        return self.text == other.text and self.unigram_only == other.unigram_only

    def __hash__(self):
        return hash((self.text, self.unigram_only))

    def __repr__(self) -> str:
        triples = ", triples=True" if self.triples else ""
        return (f"Template({self.n_unigram} unigram, {self.n_bigram} bigram patterns, "
                f"transitions={self.transitions}{triples}, from {self.source})")

    def check_columns(self, n_columns: int, source: str | None = None,
                      line: int | None = None) -> None:
        """Raise :class:`DataFormatError` when data with ``n_columns``
        observation columns is too narrow for this template.

        >>> try:
        ...     Template.parse("U:%x[0,2]").check_columns(2, "train.txt", 1)
        ... except DataFormatError as err:
        ...     print(err.line, err.message[:31])
        1 the template uses column 2 (pat
        """
        if n_columns >= self.n_columns_required:
            return
        col = self.n_columns_required - 1
        where = next(p for p in self._patterns if any(c.col == col for c in p.commands))
        last = f"0 to {n_columns - 1}" if n_columns else "none"
        raise DataFormatError(
            source if source is not None else "<data>", line,
            f"the template uses column {col} (pattern {where.text!r} on line {where.line} "
            f"of {self.source}) but the data has only {n_columns} observation columns ({last})",
        )

    # -------------------------------------------------------------- extract
    def extract(
        self,
        columns: Sequence[Sequence[str]],
        pad: bool = True,
        *,
        source: str | None = None,
        line: int | None = None,
    ) -> tuple[list[list[str]], list[list[str]]]:
        """Expand every pattern at every token of one sequence.

        Parameters
        ----------
        columns : sequence of sequences of str
            Per token, its observation columns (``Sentence.columns``).
        pad : bool
            True (default, as CRF++ and Wapiti): positions outside the
            sequence expand to ``_B-1``, ``_B+1``, ... . False (as CRFsuite's
            example extractors): a feature that needs such a position is left
            out.
        source, line : optional
            Name and first line of the sequence, used only in the error raised
            when a token has too few columns.

        Returns
        -------
        (unigrams, bigrams) : two lists with one list of feature strings per
        token, in pattern order; a ``*`` pattern appears in both.

        Examples
        --------
        >>> t = Template.parse("U00:%x[-1,0]|%x[0,0]")
        >>> t.extract([["a"], ["b"], ["c"]])[0]
        [['U00:_B-1|a'], ['U00:a|b'], ['U00:b|c']]
        >>> t.extract([["a"], ["b"], ["c"]], pad=False)[0]
        [[], ['U00:a|b'], ['U00:b|c']]
        """
        T = len(columns)
        if T == 0:
            return [], []
        need = self.n_columns_required
        cols = []
        if need:
            if min(map(len, columns)) < need:
                i = next(i for i, row in enumerate(columns) if len(row) < need)
                self.check_columns(len(columns[i]), source, None if line is None else line + i)
            cols = list(zip(*columns))
        cache = {}
        unigrams = self._expand(self._unigram, cols, T, pad, cache)
        bigrams = self._expand(self._bigram, cols, T, pad, cache)
        return unigrams, bigrams

    def extract_flat(self, cells, seq_ptr, pad=True):
        """Expand every pattern at every token of many sequences at once, without a
        Python object per token: each distinct feature string is built once.

        ``cells``: per observation column, the cells of every token of every
        sequence, end to end (a list of lists of str, each ``seq_ptr[-1]`` long);
        ``seq_ptr``: the sequences' token offsets (n_sequences + 1, int). Returns
        ``(unigrams, bigrams)``: per pattern (in the order of :meth:`extract`), a pair
        ``(strings, codes)``: the distinct feature strings of that pattern and, per
        token, the index of its string in ``strings`` (an int64 array; -1 where
        ``pad=False`` drops the feature). Token t's features are those of
        ``extract`` on its sequence, in the same order.

        >>> t = Template.parse("U00:%x[-1,0]|%x[0,0]")
        >>> (strings, codes), = t.extract_flat([["a", "b", "c"]], [0, 2, 3])[0]
        >>> [strings[c] for c in codes]
        ['U00:_B-1|a', 'U00:a|b', 'U00:_B-1|c']
        """
        import numpy as np

        seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        N = int(seq_ptr[-1])
        lengths = np.diff(seq_ptr)
        if len(cells) < self.n_columns_required:
            raise ValueError(f"the template reads {self.n_columns_required} columns, "
                             f"{len(cells)} given")
        seq = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        start = seq_ptr[:-1][seq]
        T = lengths[seq]
        t = np.arange(N, dtype=np.int64) - start
        state = {"t": t, "T": T, "start": start, "N": N, "cells": cells, "cols": {}, "vals": {}, "cmd": {}}
        return (self._expand_flat(self._unigram, state, pad),
                self._expand_flat(self._bigram, state, pad))

    def _column_codes(self, col, state):
        """(distinct cells of a column, each token's index among them)."""
        import numpy as np

        got = state["cols"].get(col)
        if got is None:
            cells = state["cells"][col]
            uniq = list(dict.fromkeys(cells))             # in order of first occurrence
            index = dict(zip(uniq, range(len(uniq))))
            codes = np.fromiter(map(index.__getitem__, cells), dtype=np.int64, count=state["N"])
            got = state["cols"][col] = (uniq, codes)
        return got

    def _command_codes(self, c, state):
        """(values of one command, each token's index among them)."""
        import numpy as np

        ckey = (c.key, c.col, c.row, c.absolute)
        got = state["cmd"].get(ckey)
        if got is not None:
            return got
        uniq, codes = self._column_codes(c.col, state)
        vkey = (c.key, c.col)
        values = state["vals"].get(vkey)
        fn = self._functions[c.key]
        if values is None:
            values = state["vals"][vkey] = uniq if fn is None else list(map(fn, uniq))
        t, T, start = state["t"], state["T"], state["start"]
        wapiti = self.format == "wapiti"
        if c.absolute:
            pos = (T + c.row if c.row < 0 else np.full_like(T, c.row - 1)) if wapiti else \
                (T + c.row if c.row < 0 else np.full_like(T, c.row))
        elif c.row == 0:
            got = state["cmd"][ckey] = (values, codes)
            return got
        else:
            pos = t + c.row
        inside = (pos >= 0) & (pos < T)
        out = np.empty(len(t), dtype=np.int64)
        out[inside] = codes[(start + pos)[inside]]
        if not inside.all():
            dist = np.where(pos < 0, pos, pos - T + 1)[~inside]
            marks, inv, _ = _distinct(dist - dist.min(), int(dist.max() - dist.min()) + 1)
            marks = marks + dist.min()
            out[~inside] = len(values) + inv
            if wapiti:
                names = [f"_x{'-' if d < 0 else '+'}{abs(d) if abs(d) <= 4 else '#'}" for d in marks.tolist()]
                if fn is not None:
                    names = list(map(fn, names))
            else:
                names = [f"_B{d}" if d < 0 else f"_B+{d}" for d in marks.tolist()]
            values = values + names
        got = state["cmd"][ckey] = (values, out)
        return got

    def _expand_flat(self, patterns, state, pad):
        import numpy as np

        N = state["N"]
        result = []
        for p in patterns:
            if not p.commands:
                codes = np.zeros(N, dtype=np.int64)
                strings = [p.literals[0]]
            else:
                parts = [self._command_codes(c, state) for c in p.commands]
                if len(parts) == 1:
                    values, codes = parts[0]
                    used, codes, _ = _distinct(codes, len(values))
                    pre, post = p.literals
                    strings = [pre + v + post for v in map(values.__getitem__, used.tolist())]
                else:
                    key, bound = parts[0][1], len(parts[0][0])
                    for values, codes in parts[1:]:
                        key = key * len(values) + codes
                        bound *= len(values)
                        if len(parts) > 2:
                            used, key, _ = _distinct(key, bound)
                            bound = len(used)
                    _, codes, at = _distinct(key, bound)
                    # each distinct string built once, from one token that has it
                    strings = list(map(p.fmt.format, *[map(values.__getitem__, c[at].tolist())
                                                       for values, c in parts]))
                if self.format == "wapiti" and any(c.op == "m" for c in p.commands):
                    strings = [o.split("\0", 1)[0] for o in strings]  # a C string ends at its NUL
            if not pad:
                ok = self._flat_valid(p, state)
                if not ok.all():
                    codes = np.where(ok, codes, -1)
            result.append((strings, codes))
        return result

    def _flat_valid(self, p, state):
        """Per token, whether every position pattern ``p`` reads is inside its sequence."""
        t, T = state["t"], state["T"]
        ok = (t + min(p.rel_min, 0) >= 0) & (t + max(p.rel_max, 0) < T)
        for row in p.absolutes:
            if self.format == "wapiti":
                pos = row - 1 if row >= 0 else T + row
            else:
                pos = row if row >= 0 else T + row
            ok &= (pos >= 0) & (pos < T)
        return ok

    def _values(self, command, cols, T, cache):
        """The value of one command at every token (a list of length T)."""
        key = (command.key, command.col, command.row, command.absolute)
        values = cache.get(key)
        if values is not None:
            return values
        ckey = (command.key, command.col)
        cell_values = cache.get(ckey)
        if cell_values is None:
            fn = self._functions[command.key]
            column = cols[command.col]
            cell_values = column if fn is None else list(map(fn, column))
            cache[ckey] = cell_values
        row = command.row
        if self.format == "wapiti":
            return self._wapiti_values(command, cell_values, T, cache, key, ckey)
        if command.absolute:
            pos = row if row >= 0 else T + row
            value = cell_values[pos] if 0 <= pos < T else _marker(pos, T)
            values = [value] * T
        elif row == 0:
            values = cell_values
        else:
            pkey = ("padded", ckey)
            padded = cache.get(pkey)
            if padded is None:
                padded = cache[pkey] = [*self._before, *cell_values, *self._after]
            start = self._pad + row
            values = padded[start:start + T]
        cache[key] = values
        return values

    def _wapiti_values(self, command, cell_values, T, cache, key, ckey):
        """Wapiti: padding tokens ``_x-1`` ... ``_x-4``, ``_x-#`` (and ``_x+..``) go
        through the command like any token; ``@k`` is token k (1-based), ``@-k`` the k-th
        from the end, ``@0`` the padding before the first."""
        fn = self._functions[command.key]

        def outside(pos):
            k = -pos if pos < 0 else pos - T + 1  # distance from the sequence
            marker = f"_x{'-' if pos < 0 else '+'}{k if k <= 4 else '#'}"
            return marker if fn is None else fn(marker)

        row = command.row
        if command.absolute:
            pos = T + row if row < 0 else row - 1
            values = [cell_values[pos] if 0 <= pos < T else outside(pos)] * T
        elif row == 0:
            values = cell_values
        else:
            values = [cell_values[t + row] if 0 <= t + row < T else outside(t + row)
                      for t in range(T)]
        cache[key] = values
        return values

    def _expand(self, patterns, cols, T, pad, cache):
        if not patterns:
            return [[] for _ in range(T)]
        outputs = []
        for p in patterns:
            if not p.commands:
                outputs.append([p.literals[0]] * T)
            else:
                args = [self._values(c, cols, T, cache) for c in p.commands]
                out = list(map(p.fmt.format, *args))
                if self.format == "wapiti" and any(c.op == "m" for c in p.commands):
                    out = [o.split("\0", 1)[0] for o in out]  # a C string ends at its NUL
                outputs.append(out)
        per_token = list(map(list, zip(*outputs)))
        if pad:
            return per_token
        # drop the features that needed a position outside the sequence
        bounds = [_valid_range(p, T, self.format) for p in patterns]
        lo = max(b[0] for b in bounds)
        hi = min(b[1] for b in bounds)
        if lo == 0 and hi == T:
            return per_token
        edge = set(range(0, min(lo, T))) | set(range(max(hi, 0), T))
        for i in edge:
            per_token[i] = [out[i] for out, (a, b) in zip(outputs, bounds) if a <= i < b]
        return per_token


def _marked_format(text: str) -> str | None:
    """The format a ``# format: ...`` comment line before the first pattern names."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            return None
        m = _FORMAT_MARK.match(line)
        if m:
            fmt = m.group(1).lower()
            return "crfpp" if fmt == "crf++" else fmt
    return None


def _marker(pos: int, T: int) -> str:
    """The padding marker of an out-of-sequence position."""
    return f"_B{pos}" if pos < 0 else f"_B+{pos - T + 1}"


def _valid_range(p: _Pattern, T: int, format: str = "crfpp") -> tuple[int, int]:
    """Tokens [lo, hi) where every position ``p`` reads is inside the sequence."""
    for row in p.absolutes:
        if format == "wapiti":
            pos = row - 1 if row >= 0 else T + row
        else:
            pos = row if row >= 0 else T + row
        if not 0 <= pos < T:
            return (0, 0)
    return (max(0, -p.rel_min), T - max(0, p.rel_max))


CRFSUITE_CHUNKING_TEMPLATE = """\
# The classic CoNLL-2000 chunking features of CRFsuite's example chunking.py,
# as patterns: column 0 is the word, column 1 its part-of-speech tag.
# Extract with pad=False to reproduce CRFsuite (no feature that reaches
# outside the sentence); CRFsuite's __BOS__/__EOS__ attributes are not here.
U00:w[-2]=%x[-2,0]
U01:w[-1]=%x[-1,0]
U02:w[0]=%x[0,0]
U03:w[1]=%x[1,0]
U04:w[2]=%x[2,0]
U05:w[-1]|w[0]=%x[-1,0]|%x[0,0]
U06:w[0]|w[1]=%x[0,0]|%x[1,0]
U10:pos[-2]=%x[-2,1]
U11:pos[-1]=%x[-1,1]
U12:pos[0]=%x[0,1]
U13:pos[1]=%x[1,1]
U14:pos[2]=%x[2,1]
U15:pos[-2]|pos[-1]=%x[-2,1]|%x[-1,1]
U16:pos[-1]|pos[0]=%x[-1,1]|%x[0,1]
U17:pos[0]|pos[1]=%x[0,1]|%x[1,1]
U18:pos[1]|pos[2]=%x[1,1]|%x[2,1]
U19:pos[-2]|pos[-1]|pos[0]=%x[-2,1]|%x[-1,1]|%x[0,1]
U20:pos[-1]|pos[0]|pos[1]=%x[-1,1]|%x[0,1]|%x[1,1]
U21:pos[0]|pos[1]|pos[2]=%x[0,1]|%x[1,1]|%x[2,1]

# label transitions
B
"""


SHA_PEREIRA_TEMPLATE = """\
# Sha & Pereira's (2003) NP-chunking features (their Table 1) for a second-order
# CRF: every predicate -- words in a +-2 window, the word bigrams around the
# current word, POS tags in a +-2 window, POS bigrams and trigrams -- conjoined
# with the current label and with the label pair (kind '*'); a bare '*' adds
# the constant predicate on both; 'T' the label triples. Train with order=2.
*00:w[-2]=%x[-2,0]
*01:w[-1]=%x[-1,0]
*02:w[0]=%x[0,0]
*03:w[1]=%x[1,0]
*04:w[2]=%x[2,0]
*05:w[-1]|w[0]=%x[-1,0]|%x[0,0]
*06:w[0]|w[1]=%x[0,0]|%x[1,0]
*10:pos[-2]=%x[-2,1]
*11:pos[-1]=%x[-1,1]
*12:pos[0]=%x[0,1]
*13:pos[1]=%x[1,1]
*14:pos[2]=%x[2,1]
*15:pos[-2]|pos[-1]=%x[-2,1]|%x[-1,1]
*16:pos[-1]|pos[0]=%x[-1,1]|%x[0,1]
*17:pos[0]|pos[1]=%x[0,1]|%x[1,1]
*18:pos[1]|pos[2]=%x[1,1]|%x[2,1]
*19:pos[-2]|pos[-1]|pos[0]=%x[-2,1]|%x[-1,1]|%x[0,1]
*20:pos[-1]|pos[0]|pos[1]=%x[-1,1]|%x[0,1]|%x[1,1]
*21:pos[0]|pos[1]|pos[2]=%x[0,1]|%x[1,1]|%x[2,1]
*
T
"""


def crfsuite_chunking_template() -> Template:
    """The pattern version of CRFsuite's CoNLL-2000 chunking feature set.

    19 unigram patterns over words (column 0) and POS tags (column 1) plus
    label transitions; see :data:`CRFSUITE_CHUNKING_TEMPLATE`. Use
    ``extract(columns, pad=False)`` to get exactly CRFsuite's features
    (without its ``__BOS__``/``__EOS__`` attributes).

    >>> t = crfsuite_chunking_template()
    >>> t.n_unigram, t.n_bigram, t.transitions, t.n_columns_required
    (19, 0, True, 2)
    >>> t.extract([["He", "PRP"], ["runs", "VBZ"]], pad=False)[0][0][:3]
    ['U02:w[0]=He', 'U03:w[1]=runs', 'U06:w[0]|w[1]=He|runs']
    """
    return Template.parse(CRFSUITE_CHUNKING_TEMPLATE, source="<crfsuite-chunking>")


# ------------------------------------------------------------------ ``spargel train``'s templates
#: the first line of the template of a model trained by ``spargel train``: ``spargel
#: label`` reads from it how many observation columns the input has
_COLUMNS_MARK = "# spargel train: {n} observation column(s) before the label"
_COLUMNS_RE = re.compile(r"^# spargel train: (\d+) observation column")


def default_template(n_columns: int, order: int = 1) -> str:
    """The template of ``spargel train`` without ``--pattern``: for every observation
    column the current, previous and next token, plus transitions (and, at order 2,
    the label triples).

    >>> print(default_template(1))
    U0-1:%x[-1,0]
    U0+0:%x[0,0]
    U0+1:%x[1,0]
    B
    >>> default_template(1, order=2).splitlines()[-1]
    'T'
    """
    lines = []
    for c in range(n_columns):
        lines += [f"U{c}-1:%x[-1,{c}]", f"U{c}+0:%x[0,{c}]", f"U{c}+1:%x[1,{c}]"]
    lines.append("B")
    if order == 2:
        lines.append("T")
    return "\n".join(lines)


def training_template(pattern, n_columns: int, source: str, line: int, *, order: int = 1,
                      encoding: str = "utf-8", format: str | None = None) -> str:
    """The template text of a model trained on data with ``n_columns`` observation
    columns (``source``, its first sequence at ``line``): the pattern file ``pattern``
    (``format``: as in :meth:`Template.parse`) checked against the columns and against
    ``order`` (label triples at order 2, none at order 1), or :func:`default_template`
    when ``pattern`` is None; headed by a line that records ``n_columns``
    (:func:`trained_columns`). Raises :class:`DataFormatError`; the template's own
    warnings are Python warnings.

    >>> text = training_template(None, 2, "train.txt", 1)
    >>> trained_columns(text), text.splitlines()[-1]
    (2, 'B')
    """
    if pattern:
        template = Template.from_file(pattern, encoding=encoding, format=format)
        template.check_columns(n_columns, source, line)
        name = os.fsdecode(pattern)
        if order == 2 and not template.triples:
            raise DataFormatError(name, None, "order 2 (--order 2) needs the label triples: add a line 'T' to "
                                              "the pattern file")
        if order == 1 and template.triples:
            raise DataFormatError(name, None, "the pattern file has a 'T' line (label triples): train with "
                                              "order 2 (--order 2)")
        text = template.text
    else:
        text = default_template(n_columns, order)
    return _COLUMNS_MARK.format(n=n_columns) + "\n" + text


def trained_columns(template_text: str) -> int | None:
    """How many observation columns a model trained by ``spargel train`` reads (from
    the first line of its template), or None for another template.

    >>> trained_columns("# spargel train: 3 observation column(s) before the label\\nB"), trained_columns("B")
    (3, None)
    """
    m = _COLUMNS_RE.match(template_text)
    return int(m.group(1)) if m else None


def _rebuild(text, source, format, unigram_only):
    t = Template.parse(text, source, format)
    return t.without_label_pairs() if unigram_only else t
