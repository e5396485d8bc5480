"""Reading and writing CoNLL-style column files.

A column file has one token per line, its fields (columns) separated by
ASCII spaces or tabs (as CRF++ and Wapiti read them: an ideographic space U+3000 or
any other space character is part of a field), and a blank line between two
sequences (sentences)::

    Confidence NN B-NP
    in IN B-PP
    the DT B-NP

    He PRP B-NP
    ...

With labels, the last column is the label and the others are the
observation columns that feature templates refer to (column 0, 1, ...).
Lines whose first field is ``-DOCSTART-`` are document markers: they are
skipped and end the current sequence, like a blank line.

:func:`read_conll` streams a file one line at a time and yields one
:class:`Sentence` per sequence (:func:`parse_text`: the same list of a whole text at once); :func:`write_conll` writes sequences back with
extra columns (predicted labels, say) appended.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Sequence  # (no typing: a short spargel label loads none)

from .errors import DataFormatError

__all__ = ["Sentence", "decode_lines", "parse_lines", "parse_text", "read_conll", "write_conll"]

DOCSTART = "-DOCSTART-"
_BLANKS = " \t\r\n"  # a line of these only is blank


class Sentence:
    """One sequence read from a column file.

    Attributes
    ----------
    columns : list of list of str
        Per token, its observation columns (the label column excluded).
    labels : list of str or None
        Per token, its label; ``None`` when the file was read without labels.
    line : int
        1-based line number of the first token.
    source : str
        Name of the file the sequence comes from.

    The tokens of a sequence are consecutive lines (only blank lines and
    ``-DOCSTART-`` lines separate sequences), so token ``i`` is on line
    ``line + i``; :meth:`line_of` says so.

    Examples
    --------
    >>> s = Sentence([["He", "PRP"], ["runs", "VBZ"]], ["B-NP", "B-VP"], 7, "a.txt")
    >>> len(s), s.labels[1], s.line_of(1)
    (2, 'B-VP', 8)
    """

    __slots__ = ("columns", "labels", "line", "source")

    def __init__(
        self,
        columns: list[list[str]],
        labels: list[str] | None,
        line: int,
        source: str,
    ):
        self.columns = columns
        self.labels = labels
        self.line = line
        self.source = source

    def __len__(self) -> int:
        return len(self.columns)

    def line_of(self, i: int) -> int:
        """1-based line number of token ``i`` (negative ``i`` counts from the end).

        >>> Sentence([["a"], ["b"], ["c"]], None, 10, "x").line_of(-1)
        12
        """
        n = len(self.columns)
        if not -n <= i < n:
            raise IndexError(f"token index {i} out of range for a sequence of {n}")
        return self.line + (i % n)

    def __repr__(self) -> str:
        words = " ".join(row[0] if row else "" for row in self.columns[:8])
        more = " ..." if len(self.columns) > 8 else ""
        return (
            f"Sentence({len(self.columns)} tokens, {self.source}:{self.line}: "
            f"{words}{more})"
        )


def _source_name(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fsdecode(source)
    name = getattr(source, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(name, bytes):
        return os.fsdecode(name)
    return "<stream>"


def _lines(source: object, name: str, encoding: str) -> Iterator[tuple[int, str]]:
    """Yield (line number, decoded line) one line at a time.

    A path or a binary stream is read as bytes and every line decoded on its own
    (:func:`decode_lines`), so a decoding error names its exact line and byte. An open
    text stream decodes ahead in chunks, so there the error can only say "at or after" a
    line.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            yield from decode_lines(fh, name, encoding)
        return
    lineno = 0
    it = iter(source)
    while True:
        try:
            raw = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise DataFormatError(
                name, None, f"cannot decode the text at or after line {lineno + 1}: {exc}"
            ) from None
        lineno += 1
        if isinstance(raw, bytes):
            yield from decode_lines(_chain_first(raw, it), name, encoding, first_line=lineno, offset=None)
            return
        if lineno == 1 and raw.startswith("\ufeff"):
            raw = raw[1:]
        yield lineno, raw


def _chain_first(first, rest):
    yield first
    yield from rest


def not_text(name: str, line: int, encoding: str, byte: int, raw: bytes = b"", hint: str = "",
             of_line: bool = False) -> DataFormatError:
    """The error of bytes that are not ``encoding`` text: ``byte`` (1-based) of the
    file, or of the line with ``of_line``; ``raw`` the bytes from there (the first four
    are quoted) and ``hint`` what to do (appended).

    >>> str(not_text("a.txt", 3, "utf-8", 17, b"\\xff b"))
    "a.txt:3: not utf-8 text (byte 17: b'\\\\xff b')"
    """
    where = f"byte {byte} of the line" if of_line else f"byte {byte}"
    shown = f": {raw[:4]!r}" if raw else ""
    return DataFormatError(name, line, f"not {encoding} text ({where}{shown}){hint}")


def decode_lines(raw_lines: Iterable[bytes], name: str, encoding: str, *, first_line: int = 1,
                 offset: int | None = 0, hint: str = "") -> Iterator[tuple[int, str]]:
    """(line number, text) of lines of bytes, each decoded on its own: the one line
    decoder of every reader of column files (:func:`read_conll`, the training file of
    :class:`~spargel.data.column_file.ColumnFile` and its byte ranges). A byte-order mark
    at the start of the file (``offset`` 0, or line 1 when ``offset`` is None) is
    dropped; bytes that are not ``encoding`` text raise :func:`not_text`, naming the line
    and the byte (of the file when ``offset``, the byte offset of the first line, is
    known; else of the line).

    >>> list(decode_lines([b"\\xef\\xbb\\xbfa B\\n", b"b C\\n"], "t.txt", "utf-8"))
    [(1, 'a B\\n'), (2, 'b C\\n')]
    """
    lineno = first_line - 1
    pos = offset
    for raw in raw_lines:
        lineno += 1
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            byte = exc.start + 1 if pos is None else pos + exc.start + 1
            raise not_text(name, lineno, encoding, byte, raw[exc.start:], hint, of_line=pos is None) from None
        at_start = lineno == 1 if pos is None else pos == 0
        if pos is not None:
            pos += len(raw)
        if at_start and text.startswith("\ufeff"):
            text = text[1:]
        yield lineno, text


def read_conll(
    source: str | os.PathLike | io.IOBase,
    *,
    has_labels: bool = True,
    separator: str | None = None,
    encoding: str = "utf-8",
) -> Iterator[Sentence]:
    """Stream the sequences of a CoNLL-style column file.

    Parameters
    ----------
    source : path or open file
        A file name, or an open text (or binary) file object; its ``name``
        attribute, when it has one, names it in error messages.
    has_labels : bool
        When true (the default) the last column of every token line is its
        label and every line needs at least one observation column before it.
    separator : str or None
        ``None`` splits on any run of ASCII spaces and tabs; ``"\\t"`` splits on single
        tabs only, so that fields may contain spaces (any other string is used
        the same way).
    encoding : str
        Text encoding of a file given by name (default UTF-8; a leading
        byte-order mark is dropped).

    Yields
    ------
    Sentence
        One per sequence, in file order.

    Raises
    ------
    DataFormatError
        On a token line whose number of columns differs from the first token
        line of the file, a line with a label but no observation column, text
        that cannot be decoded, or a file without any token. The error names
        the file and the line.

    Examples
    --------
    >>> import io
    >>> text = "-DOCSTART- -X- O\\n\\nHe PRP B-NP\\nruns VBZ B-VP\\n\\n\\nWell UH O\\n"
    >>> sents = list(read_conll(io.StringIO(text)))
    >>> [len(s) for s in sents], sents[0].columns[1], sents[0].labels
    ([2, 1], ['runs', 'VBZ'], ['B-NP', 'B-VP'])
    >>> sents[1].line
    7
    """
    name = _source_name(source)
    if separator == "":
        raise ValueError("separator must be None or a non-empty string")
    return parse_lines(_lines(source, name, encoding), name, has_labels=has_labels, separator=separator)


def parse_lines(lines: Iterable[tuple[int, str]], name: str, *, has_labels: bool = True,
                separator: str | None = None) -> Iterator[Sentence]:
    """The sequences of decoded lines ``(line number, text)`` (:func:`decode_lines`) of
    the column file ``name``: the parser of :func:`read_conll` (see there), which every
    reader of column files shares.

    >>> [s.labels for s in parse_lines([(1, "a X B"), (2, ""), (3, "b Y I")], "t.txt")]
    [['B'], ['I']]
    """
    if separator == "":
        raise ValueError("separator must be None or a non-empty string")
    expected = 0  # number of fields per token line, set by the first one
    expected_line = 0
    rows: list[list[str]] = []
    labels: list[str] = []
    first = 0
    n_sequences = 0

    for lineno, text in lines:
        if not text.strip(_BLANKS):
            fields = None
        else:
            if separator is None:
                # as CRF++ and Wapiti: ASCII spaces and tabs only (U+3000 and other
                # spaces belong to the token)
                fields = text.rstrip("\r\n").replace("\t", " ").split(" ")
                if "" in fields:
                    fields = [f for f in fields if f]
            else:
                fields = text.rstrip("\r\n").split(separator)
            if fields[0] == DOCSTART:
                fields = None
        if fields is None:  # blank line or document marker: end of a sequence
            if rows:
                n_sequences += 1
                yield Sentence(rows, labels if has_labels else None, first, name)
                rows, labels = [], []
            continue

        n = len(fields)
        if n != expected:
            if expected == 0:
                if has_labels and n < 2:
                    raise DataFormatError(
                        name, lineno,
                        f"found 1 column but a label and at least one observation "
                        f"column are needed: {text.strip()!r}",
                    )
                expected, expected_line = n, lineno
            else:
                raise DataFormatError(
                    name, lineno,
                    f"expected {expected} columns (as on line {expected_line}), "
                    f"found {n}: {text.rstrip()!r}",
                )
        if not rows:
            first = lineno
        if has_labels:
            labels.append(fields.pop())
        rows.append(fields)

    if rows:
        n_sequences += 1
        yield Sentence(rows, labels if has_labels else None, first, name)
    if n_sequences == 0:
        raise DataFormatError(name, None, "no sequences (the input has no token lines)")


#: characters that ``str.split()`` takes for spaces but a column file does not (``\r`` only
#: ends a line there); with none of them in an ASCII text, ``line.split()`` gives the fields
_OTHER_SPACES = "\r\x0b\x0c\x1c\x1d\x1e\x1f"


def parse_text(text: str, name: str, *, has_labels: bool = True, separator: str | None = None) -> list[Sentence]:
    """The list of :class:`Sentence` of a whole decoded column file ``text`` (without a
    byte-order mark): what ``list(read_conll(io.StringIO(text)))`` gives, errors included,
    built without a generator step per line when the text allows (ASCII, fields separated
    by spaces and tabs only, no ``-DOCSTART-``, the same number of fields on every line);
    else by :func:`read_conll` itself.

    >>> [(s.columns, s.line) for s in parse_text("a X\\n  \\nb\\tY\\n", "t.txt", has_labels=False)]
    [([['a', 'X']], 1), ([['b', 'Y']], 3)]
    """
    if (separator is None and text.isascii() and DOCSTART not in text
            and not any(c in text for c in _OTHER_SPACES)):
        rows = [line.split() for line in text.split("\n")]
        widths = set(map(len, rows))
        widths.discard(0)
        if len(widths) == 1 and not (has_labels and widths == {1}):
            out = []
            start = -1
            rows.append([])                     # (the end of the text ends the last sequence)
            for i, row in enumerate(rows):
                if not row:
                    if start >= 0:
                        block = rows[start:i]
                        out.append(Sentence(block, [r.pop() for r in block] if has_labels else None,
                                            start + 1, name))
                        start = -1
                elif start < 0:
                    start = i
            return out
    stream = io.StringIO(text)
    stream.name = name
    return list(read_conll(stream, has_labels=has_labels, separator=separator))


def write_conll(
    file: str | os.PathLike | io.IOBase,
    sentences_columns: Iterable[Sequence[Sequence[str]]],
    extra_columns: Iterable[Sequence[object]] | None = None,
    *,
    separator: str = "\t",
    encoding: str = "utf-8",
) -> int:
    """Write sequences as a column file, with extra columns appended.

    Parameters
    ----------
    file : path or open text file
        Where to write; a path is created (or overwritten).
    sentences_columns : iterable of sequences
        Per sequence, per token, its columns (e.g. ``Sentence.columns``).
    extra_columns : iterable of sequences, optional
        Parallel to ``sentences_columns``: per sequence, per token, one extra
        value (a ``str``) or several (a sequence of ``str``), written after the
        token's columns -- gold and predicted labels, for instance.
    separator : str
        Field separator (a tab by default; ``" "`` gives the CoNLL-2000 look).

    Returns
    -------
    int
        The number of sequences written. A blank line follows every sequence.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> write_conll(out, [[["He", "PRP"], ["runs", "VBZ"]]], [["B-NP", "B-VP"]], separator=" ")
    1
    >>> out.getvalue()
    'He PRP B-NP\\nruns VBZ B-VP\\n\\n'
    """
    if isinstance(file, (str, os.PathLike)):
        with open(file, "w", encoding=encoding, newline="\n") as fh:
            return write_conll(fh, sentences_columns, extra_columns, separator=separator)

    extras_iter = iter(extra_columns) if extra_columns is not None else None
    count = 0
    for columns in sentences_columns:
        extras = None
        if extras_iter is not None:
            extras = next(extras_iter, None)
            if extras is None or len(extras) != len(columns):
                got = "no entry" if extras is None else f"{len(extras)} values"
                raise ValueError(
                    f"extra_columns for sequence {count}: {got} for {len(columns)} tokens"
                )
        lines = []
        for i, row in enumerate(columns):
            fields = list(row)
            if extras is not None:
                extra = extras[i]
                if isinstance(extra, str):
                    fields.append(extra)
                else:
                    fields.extend(extra)
            lines.append(separator.join(fields))
        lines.append("\n")
        file.write("\n".join(lines))
        count += 1
    if extras_iter is not None and next(extras_iter, None) is not None:
        raise ValueError("extra_columns has more sequences than sentences_columns")
    return count
