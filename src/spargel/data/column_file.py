"""A training file of columns: one source, three ways of reading it.

Every way a CRF's training data is read from a column file goes through
:class:`ColumnFile` (``spargel train`` in all its forms, the Dask workers,
:func:`spargel.streaming.train_streaming`):

* **streamed** (:meth:`ColumnFile.sentences`): one sequence at a time, the file never
  held in memory (its bytes read so far in :attr:`ColumnFile.bytes_read`, for a progress
  line);
* **in memory** (:meth:`ColumnFile.read`): the list of sequences (standard input too);
* **byte ranges** (:meth:`ColumnFile.ranges`, :meth:`ColumnFile.read_range`): the
  sequences that start in a part of the file, for workers that each read their own
  part (:mod:`spargel.data.conll_ranges`).

All three decode lines with :func:`spargel.data.conll.decode_lines` (a byte-order mark
dropped; text that is not in the encoding is an error naming the file, the line and
the byte) and parse them with :func:`spargel.data.conll.parse_lines` (the parser of
:func:`~spargel.data.conll.read_conll`), so they yield the
same sentences with the same line numbers, and map the ``unknown_label`` mark to None
(a token whose label is unknown: partial labels).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
>>> _ = open(path, "wb").write(b"a X B\\nb Y _\\n\\nc X O\\n")
>>> f = ColumnFile(path, unknown_label="_")
>>> [s.labels for s in f.sentences()], f.count(), f.first().line
([['B', None], ['O']], 2, 1)
>>> [[s.line for s in f.read_range(a, b)] for a, b in f.ranges(2)]
[[1], [4]]
"""

from __future__ import annotations

import codecs
import io
import os
import sys

from .conll import decode_lines, parse_lines, read_conll
from .conll_ranges import read_range, split_ranges
from .errors import DataFormatError

__all__ = ["ColumnFile", "STDIN", "SequenceStream", "check_two_labels", "take_weight_column"]

#: the name that stands for standard input
STDIN = "-"


def _stdin_bytes(encoding):
    stream = sys.stdin
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    return data.encode(encoding) if isinstance(data, str) else data     # (a text stdin: tests)


class ColumnFile:
    """A column file (``path``, or ``"-"`` for standard input) of labelled sequences.

    ``encoding``: its text encoding (an unknown one raises ``LookupError``);
    ``unknown_label``: the label that stands for "unknown" (read as None), or None;
    ``separator``: as :func:`~spargel.data.conll.read_conll`'s; ``hint``: appended to a
    decoding error (what to do about it); ``name``: the name in messages (default: the
    path, ``<stdin>`` for standard input). A directory or a binary file (a NUL byte in
    its first 4096 bytes, unless the encoding is UTF-16 or UTF-32) is a
    :class:`~spargel.errors.DataFormatError` here, before anything is read.
    """

    def __init__(self, path, encoding="utf-8", unknown_label=None, separator=None, hint="", name=None):
        codecs.lookup(encoding)                  # LookupError: unknown encoding
        self.path = path if path == STDIN else os.fspath(path)
        self.encoding, self.unknown_label, self.separator, self.hint = encoding, unknown_label, separator, hint
        self.name = name or ("<stdin>" if self.path == STDIN else self.path)
        self.bytes_read = 0
        self._stdin = None
        self._open = []
        if self.path == STDIN:
            self._stdin = _stdin_bytes(encoding)
            head = self._stdin[:4096]
        else:
            if os.path.isdir(self.path):
                raise DataFormatError(self.name, None, "is a directory, not a text file")
            with open(self.path, "rb") as fh:
                head = fh.read(4096)
        if b"\x00" in head and "16" not in encoding and "32" not in encoding:
            raise DataFormatError(self.name, None, "a binary file, not a text file")

    # -- the raw lines, decoded once, in one place -----------------------------------------
    def _handle(self):
        fh = io.BytesIO(self._stdin) if self._stdin is not None else open(self.path, "rb")
        self._open.append(fh)
        return fh

    def _parse(self, fh):
        if "16" in self.encoding or "32" in self.encoding:
            # a newline is more than one byte: decoded in chunks (errors say "at or after")
            stream = _Named(io.TextIOWrapper(fh, encoding=self.encoding, newline=""), self.name)
            return read_conll(stream, separator=self.separator)
        lines = decode_lines(self._counted(fh), self.name, self.encoding, hint=self.hint)
        return parse_lines(lines, self.name, separator=self.separator)

    def _counted(self, fh):
        for raw in fh:
            self.bytes_read += len(raw)
            yield raw

    def _label(self, s):
        if self.unknown_label is not None:
            s.labels = [None if lab == self.unknown_label else lab for lab in s.labels]
        return s

    # -- streamed ------------------------------------------------------------------------------
    def sentences(self):
        """The file's sequences one at a time (:class:`~spargel.data.conll.Sentence`); the
        file is closed when the iteration ends or is closed."""
        self.bytes_read = 0
        fh = self._handle()
        try:
            for s in self._parse(fh):
                yield self._label(s)
        finally:
            fh.close()
            if fh in self._open:
                self._open.remove(fh)

    def stream(self, progress=None):
        """The file read one sequence at a time for a fit that encodes each one as it
        comes (:class:`SequenceStream`; ``progress``: the text of a progress line, None
        for none)."""
        return SequenceStream(self, progress)

    def first(self):
        """The first sequence (the file is read only up to its end)."""
        it = self.sentences()
        try:
            return next(it)
        finally:
            it.close()

    def count(self):
        """How many sequences the file holds (one streamed pass)."""
        return sum(1 for _ in self.sentences())

    # -- in memory -----------------------------------------------------------------------------
    def read(self):
        """Every sequence, as a list."""
        return list(self.sentences())

    # -- byte ranges (the Dask workers) ----------------------------------------------------------
    def size(self):
        """The file's size in bytes."""
        return len(self._stdin) if self._stdin is not None else os.path.getsize(self.path)

    def ranges(self, n):
        """``n`` byte ranges of about equal length covering the file."""
        return split_ranges(self.size(), n)

    def read_range(self, start, end):
        """The sequences that start in the bytes ``[start, end)``, with the file's line
        numbers (:func:`spargel.data.conll_ranges.read_range`)."""
        if self._stdin is not None:
            raise ValueError("standard input has no byte ranges: give a file")
        return [self._label(s) for s in read_range(self.path, start, end, self.encoding, self.separator,
                                                   hint=self.hint)]

    def close(self):
        """Close what a streamed read left open (a read stopped half-way)."""
        for fh in list(self._open):
            fh.close()
        self._open.clear()


class SequenceStream:
    """A :class:`ColumnFile` read one sequence at a time for a fit that extracts and
    encodes each sequence as it comes (its memory is the encoded data, not the text or
    the sentences).

    The first sequence is read at once (:attr:`first`: a template needs its number of
    columns); :meth:`sequences` and :meth:`labels` are consumed in step by the fit (the
    labels are those of the sequence last yielded). With ``progress`` (the text of the
    line, e.g. ``"spargel train: reading train.txt"``) a progress line reports
    sequences, tokens and bytes read. When the file ends, ``after(known labels,
    sequences, tokens)`` is called if set: its errors stop the fit before any training.
    """

    def __init__(self, source, progress=None):
        from .progress import ReadProgress

        self.source = source
        total = source.size()
        self.progress = (lambda: ReadProgress(progress, total)) if progress else None
        self.after = None
        self.current = None
        self.it = source.sentences()
        self.first = next(self.it)          # (a file without sequences: the parser's error)
        self.known = set(self.first.labels)

    def sequences(self):
        n_seq = n_tok = 0
        s = self.first
        self.first = None
        if self.progress is not None:
            self.progress = self.progress()     # the clock starts with the extraction
        try:
            while s is not None:
                n_seq += 1
                n_tok += len(s)
                self.current = s
                if self.progress is not None:
                    self.progress.update(n_seq, n_tok, self.source.bytes_read)
                yield s
                s = next(self.it, None)
                if s is not None:
                    self.known.update(s.labels)
        finally:
            self.close()
            self.current = None
        self.known.discard(None)
        if self.progress is not None and self.progress.lines:
            self.progress.write(n_seq, n_tok, self.source.bytes_read)
        if self.after is not None:
            self.after(self.known, n_seq, n_tok)

    def labels(self):
        while self.current is not None:
            yield self.current.labels

    def close(self):
        self.it.close()


def take_weight_column(sentences, col, name):
    """Remove observation column ``col`` from every sentence (file ``name``) and return
    the per-sentence weights it holds (the same finite number >= 0 on every token of a
    sentence); a :class:`~spargel.errors.DataFormatError` names the line otherwise.

    >>> from spargel.data.conll import read_conll
    >>> import io
    >>> sents = read_conll(io.StringIO("a 2 X\\nb 2 Y\\n\\nc 0.5 X\\n"))
    >>> take_weight_column(sents, 1, "t.txt"), sents[0].columns
    ([2.0, 0.5], [['a'], ['b']])
    """
    weights = []
    for s in sentences:
        n_cols = len(s.columns[0])
        if not 0 <= col < n_cols:
            raise DataFormatError(name, s.line, f"--weight-column {col} but the tokens have {n_cols} observation "
                                                f"column(s) (counting from 0)")
        values = {tok[col] for tok in s.columns}
        if len(values) != 1:
            raise DataFormatError(name, s.line, f"the weight column holds different values in one sequence "
                                                f"({', '.join(sorted(values)[:3])})")
        text = values.pop()
        try:
            w = float(text)
        except ValueError:
            raise DataFormatError(name, s.line, f"weight {text!r} is not a number") from None
        if not (w >= 0 and w < float("inf")):
            raise DataFormatError(name, s.line, f"weight {text!r} must be a finite number >= 0")
        weights.append(w)
        s.columns = [tok[:col] + tok[col + 1:] for tok in s.columns]
    return weights


def check_two_labels(known, name, unknown_label=None):
    """Training needs at least two distinct known labels: a
    :class:`~spargel.errors.DataFormatError` on file ``name`` otherwise (``known``: the
    set of labels, ``unknown_label``: the mark read as None, for the message)."""
    if not known:
        raise DataFormatError(name, None, f"every label is the unknown mark {unknown_label!r}; training needs "
                                          f"labelled tokens with at least 2 distinct labels")
    if len(known) < 2:
        raise DataFormatError(name, None, f"the last column holds only one distinct label ({next(iter(known))!r}); "
                                          f"training needs at least 2 -- is this a column file with the label last?")


class _Named:
    """Decoded lines with a ``name`` (what :func:`read_conll` reports)."""

    def __init__(self, lines, name):
        self.lines, self.name = lines, name

    def __iter__(self):
        return iter(self.lines)
