"""Reading a part of a column file: the sequences that *start* in a byte range (the
Dask workers' way of reading a training file: :meth:`~spargel.data.column_file.ColumnFile.read_range`).

A large training file is split into byte ranges ``[start, end)`` without reading it:
each worker opens the file, seeks to its range and reads the sequences whose first
token line begins inside it (the last one may run past ``end``; a sequence that began
before ``start`` belongs to the range before). The ranges of one file together yield
exactly the sequences of :func:`spargel.data.conll.read_conll`, in the same order, and
no process reads more than its own part (plus one line before it).

Line numbers in error messages are those of the whole file: they are counted (a fast
scan of the bytes before the range) only when an error is raised.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
>>> _ = open(path, "w").write("a X\\nb Y\\n\\nc X\\n\\nd Y\\ne X\\n")
>>> size = os.path.getsize(path)
>>> [[len(s) for s in read_range(path, a, b)] for a, b in split_ranges(size, 3)]
[[2], [1], [2]]
"""

import os

from .conll import DOCSTART, decode_lines, parse_lines
from ..errors import DataFormatError

#: bytes read at a time when looking back for the line before a range
_LOOKBACK = 1 << 16


def split_ranges(size, n):
    """``n`` byte ranges of about equal length covering ``0 .. size``."""
    n = max(1, int(n))
    bounds = [size * k // n for k in range(n + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(n)]


def _is_separator(raw, encoding, separator):
    text = raw.decode(encoding, errors="replace")
    if not text.strip(" \t\r\n"):  # as read_conll: ASCII blanks only
        return True
    if separator is None:
        fields = [f for f in text.rstrip("\r\n").replace("\t", " ").split(" ") if f]
    else:
        fields = text.rstrip("\r\n").split(separator)
    return fields[0] == DOCSTART


def _previous_line(fh, line_start):
    """The raw line that ends just before offset ``line_start`` (b"" at the file start)."""
    if line_start == 0:
        return None
    back = _LOOKBACK
    while True:
        lo = max(0, line_start - back)
        fh.seek(lo)
        chunk = fh.read(line_start - lo)
        cut = chunk.rfind(b"\n", 0, len(chunk) - 1)
        if cut >= 0 or lo == 0:
            return chunk[cut + 1:]
        back *= 4


def _owned_lines(path, start, end, encoding, separator):
    """The raw lines of the sequences starting in ``[start, end)`` (with the separator
    lines between them), and the byte offset of the first returned line."""
    lines = []
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            fh.readline()                   # the line holding byte start-1 belongs to the range before
        pos = fh.tell()
        prev = _previous_line(fh, pos)
        fh.seek(pos)
        # inside a sequence (the line before is a token line): skip to its end
        in_seq = prev is not None and not _is_separator(prev, encoding, separator)
        first = None
        while True:
            raw = fh.readline()
            if not raw:
                break
            sep = _is_separator(raw, encoding, separator)
            if in_seq:
                if sep:
                    in_seq = False
                pos += len(raw)
                continue
            if not sep and (not lines or _is_separator(lines[-1], encoding, separator)):
                if pos >= end:                  # a sequence starting after the range
                    break
            if first is None:
                first = pos
            lines.append(raw)
            pos += len(raw)
    # drop trailing separators (and a range holding separators only)
    while lines and _is_separator(lines[-1], encoding, separator):
        lines.pop()
    return lines, first


def line_number(path, offset):
    """1-based number of the line starting at byte ``offset`` (counts the newlines before)."""
    n = 0
    with open(path, "rb") as fh:
        left = offset
        while left > 0:
            chunk = fh.read(min(left, 1 << 24))
            if not chunk:
                break
            n += chunk.count(b"\n")
            left -= len(chunk)
    return n + 1


def read_range(path, start, end, encoding="utf-8", separator=None, has_labels=True, hint=""):
    """The sentences (:class:`~spargel.data.conll.Sentence`) starting in ``[start, end)``
    of the column file ``path``, with the file's own line numbers. An empty list when no
    sequence starts there. The lines are decoded by :func:`~spargel.data.conll.decode_lines`
    (a decoding error names the file's byte; ``hint`` is appended to it)."""
    path = os.fspath(path)
    lines, first = _owned_lines(path, start, end, encoding, separator)
    if not lines:
        return []
    base = None

    def shift():
        nonlocal base
        if base is None:
            base = line_number(path, first) - 1
        return base

    try:
        sents = list(parse_lines(decode_lines(lines, path, encoding, offset=first, hint=hint), path,
                                 has_labels=has_labels, separator=separator))
    except DataFormatError as exc:
        line = None if exc.line is None else exc.line + shift()
        raise DataFormatError(exc.source, line, exc.message) from None
    if first > 0:
        b = shift()
        for s in sents:
            s.line += b
    return sents

