"""The command line's core, shared by every ``spargel`` command: one table from errors to
exit statuses, one way to read an input (a file or ``-`` for standard input, a byte-order
mark dropped, tables with their header and row labels told apart), and one way to write
an output (atomically, never over an input, through links, devices and pipes).

>>> exit_status(UsageError("--l1 must be >= 0"))
2
>>> table = read_table_text("a,b\\n1,2\\n3,4\\n", "<string>", header=None)
>>> table.names, table.rows
(['a', 'b'], [['1', '2'], ['3', '4']])
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys

from ..errors import DataFormatError, ModelFileError, SpargelError

PROG = "spargel"

#: exit status -> what it means; printed by ``spargel --help``
EXIT_STATUSES = (
    (0, "success (also when training stopped at its iteration limit before its tolerance: a "
        "warning says so and the model is written)"),
    (1, "a runtime problem: a missing, unreadable or malformed input, a foreign or corrupt model "
        "file, an output that cannot be written, not enough memory"),
    (2, "wrong usage: an unknown option, a bad option value, an output that is also an input"),
    (130, "interrupted by Ctrl-C (training still writes the model reached so far)"),
    (141, "the reader of standard output went away (e.g. '| head')"),
)


def exit_status_help():
    """The exit-status table as the epilog of ``--help``."""
    lines = ["exit status:"]
    lines += [f"  {code:<4} {text}" for code, text in EXIT_STATUSES]
    lines.append(f"errors are one line '{PROG}: error: ...' on stderr (SPARGEL_DEBUG=1 shows a traceback)")
    return "\n".join(lines)


def command_parser(subparsers, name, *, help, description, epilog):
    """A sub-command's parser in ``subparsers``: its one-line ``help``, its
    ``description``, then ``epilog`` (the examples, laid out as written) and the exit
    statuses."""
    return subparsers.add_parser(name, help=help, description=description, epilog=epilog + exit_status_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)


class UsageError(SpargelError, ValueError):
    """Wrong usage of a command: an unknown option, a bad value, an output that is an
    input (exit status 2)."""


class CommandError(SpargelError):
    """A runtime problem with a one-line explanation (exit status 1)."""


def exit_status(exc):
    """The exit status for an exception raised by a command."""
    from ..core.files import SameFileError

    if isinstance(exc, (UsageError, SameFileError)):
        return 2
    if isinstance(exc, KeyboardInterrupt):
        return 130
    if isinstance(exc, BrokenPipeError):
        return 141
    return 1


def describe(exc):
    """One line for an exception, without a traceback."""
    if isinstance(exc, (SpargelError, DataFormatError, ModelFileError)):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename}: no such file" if exc.filename else str(exc)
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename}: is a directory"
    if isinstance(exc, PermissionError):
        return f"{exc.filename}: permission denied"
    if isinstance(exc, OSError):
        name = f"{exc.filename}: " if exc.filename else ""
        return f"{name}{exc.strerror or exc}"
    if isinstance(exc, (ValueError, ImportError)):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc}"


def error(message):
    """Print ``spargel: error: MESSAGE`` (always one line) on stderr."""
    message = " ".join(str(message).split())
    print(f"{PROG}: error: {message}", file=sys.stderr)


def warn(command, message):
    """Print ``spargel COMMAND: warning: MESSAGE`` on stderr."""
    message = " ".join(str(message).split())
    print(f"{PROG} {command}: warning: {message}" if command else f"{PROG}: warning: {message}",
          file=sys.stderr)


# ---------------------------------------------------------------------------------------
# option values: a bad one is a usage error that names the option
# ---------------------------------------------------------------------------------------

def check_number(option, value, *, low=None, high=None, integer=False, low_open=False, high_open=False):
    """``value`` if it is a finite number in range, else a :class:`UsageError` naming
    ``option`` (``low_open`` / ``high_open``: the bound itself is out of range)."""
    bad = (isinstance(value, bool) or value is None
           or (integer and not float(value).is_integer())
           or not math.isfinite(float(value)))
    if not bad and low is not None:
        bad = value <= low if low_open else value < low
    if not bad and high is not None:
        bad = value >= high if high_open else value > high
    if bad:
        what = "an integer" if integer else "a finite number"
        rng = ""
        if low is not None:
            rng = f" {'>' if low_open else '>='} {_number_text(low)}"
        if high is not None:
            rng += f"{' and' if rng else ''} {'<' if high_open else '<='} {_number_text(high)}"
        raise UsageError(f"{option} must be {what}{rng}, got {value!r}")
    return value


def _number_text(v):
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e16 else f"{v:g}"


# ---------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------

def input_name(path):
    return "<stdin>" if path in (None, "-") else os.fsdecode(path)


def read_text(path, encoding="utf-8", what="a text file"):
    """The whole text of a file, or of standard input for ``-`` / None, and the name to
    use in messages. A byte-order mark is dropped; bytes that are not ``encoding`` are an
    error naming the line."""
    if path in (None, "-"):
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    else:
        if os.path.isdir(path):
            raise CommandError(f"{path}: is a directory, not {what}")
        with open(path, "rb") as fh:
            data = fh.read()
    name = input_name(path)
    if isinstance(data, bytes):
        if b"\x00" in data[:4096] and "16" not in encoding and "32" not in encoding:
            raise CommandError(f"{name}: a binary file, not {what}")
        try:
            data = data.decode(encoding)
        except UnicodeDecodeError as exc:
            from ..data.conll import not_text      # the message of every reader of text

            line = data.count(b"\n", 0, exc.start) + 1
            hint = (" (give its encoding with --encoding, e.g. latin-1)"
                    if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else "")
            raise CommandError(str(not_text(name, line, encoding, exc.start + 1, data[exc.start:], hint))) from None
        except LookupError:
            raise UsageError(f"unknown --encoding {encoding!r}") from None
    if data.startswith("\ufeff"):
        data = data[1:]
    return data, name


def is_number(text):
    """Whether ``text`` reads as a finite number (``1``, ``-2.5e3``)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


class Table:
    """A table read from a delimited text file: ``rows`` of fields (strings), their
    1-based ``lines`` in the file, the column ``names`` (None without a header row) and
    the ``row_names`` (None without a column of row labels). (A plain class: importing
    ``dataclasses``, with the ``inspect`` and ``ast`` it loads, takes 6 ms of CPU time,
    a seventh of a short ``spargel label`` with a CRF++ model.)"""

    __slots__ = ("source", "rows", "lines", "names", "row_names", "header_line", "notes")

    def __init__(self, source, rows, lines, names=None, row_names=None, header_line=None, notes=None):
        self.source, self.rows, self.lines = source, rows, lines
        self.names, self.row_names, self.header_line = names, row_names, header_line
        self.notes = [] if notes is None else notes

    def __repr__(self):
        return "Table(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None

    @property
    def width(self):
        return len(self.rows[-1]) if self.rows else 0        # (a header may have one field less)


def read_table(path, *, header=None, row_labels=None, numeric=True, delimiter=None):
    """Read a delimited table (CSV; tab-separated when the first line has tabs and no
    commas) from ``path`` or standard input (``-``).

    ``header``: True / False, or None to decide from the file; ``row_labels`` likewise
    for a first column of sample names. ``numeric``: the body must be numbers (a Gaussian
    MRF's samples) or may be any values (a discrete MRF's states). A first row is taken as
    a header only when the file says so unambiguously; a file where it could be either is
    an error that asks for ``--header`` or ``--no-header``: a sample is never dropped
    silently."""
    text, name = read_text(path, what="a table (CSV)")
    return read_table_text(text, name, header=header, row_labels=row_labels, numeric=numeric,
                           delimiter=delimiter)


def read_table_text(text, name, *, header=None, row_labels=None, numeric=True, delimiter=None):
    """:func:`read_table` on text already read."""
    if delimiter is None:
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        delimiter = "\t" if ("\t" in first and "," not in first) else ","
    try:
        raw = list(csv.reader(text.splitlines(), delimiter=delimiter))
    except csv.Error as exc:
        raise DataFormatError(name, None, f"not a readable CSV file ({exc})") from None
    rows, lines = [], []
    for k, r in enumerate(raw):
        cells = [c.strip() for c in r]
        if any(cells):
            rows.append(cells)
            lines.append(k + 1)
    if not rows:
        raise DataFormatError(name, None, "the file is empty")
    width = len(rows[1]) if len(rows) > 1 else len(rows[0])
    other = _other_separator(text, delimiter)
    for cells, line in zip(rows, lines):
        if len(cells) != width and not (cells is rows[0] and len(cells) in (width - 1, width)):
            raise DataFormatError(name, line, f"expected {width} values, found {len(cells)}"
                                  + (f"; {other}" if other else ""))
    if other and max(len(r) for r in rows) == 1 and (numeric or "space" not in other):
        raise DataFormatError(name, lines[0], f"one value per line: {other}")
    table = Table(name, rows, lines)
    _decide_row_labels(table, row_labels, numeric)
    _decide_header(table, header, numeric)
    if not table.rows:
        raise DataFormatError(name, None, "no data rows after the header")
    return table


def _other_separator(text, delimiter, sample=20):
    """When ``delimiter`` is a comma and the first ``sample`` non-empty lines all hold
    another separator instead (a semicolon or a tab in every line; or runs of spaces
    and no comma anywhere), a sentence that says so and how to convert; else None."""
    if delimiter != ",":
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:sample]
    if not lines:
        return None
    found = next((what for sep, what in ((";", "semicolon"), ("\t", "tab"))
                  if all(sep in ln for ln in lines)), None)
    if found is None and not any("," in ln for ln in lines) and all(len(ln.split()) > 1 for ln in lines):
        found = "space"
    if found is None:
        return None
    convert = {"semicolon": "tr ';' ','", "tab": "tr '\\t' ','", "space": "tr -s ' ' ','"}[found]
    return (f"the file looks {found}-separated, not comma-separated (spargel reads CSV: values "
            f"separated by commas, a dot for decimals); convert it, e.g. {convert}")


def _decide_row_labels(table, row_labels, numeric):
    """Row labels: a first column whose body entries are not numbers while the others
    are (only numeric tables can tell)."""
    if row_labels is None:
        if not numeric or table.width < 2:
            row_labels = False
        else:
            body = table.rows[1:] if len(table.rows) > 1 else table.rows
            row_labels = (all(not is_number(r[0]) for r in body)
                          and all(is_number(c) for r in body for c in r[1:]))
    if not row_labels:
        return
    first = table.rows[0]
    if len(first) == table.width - 1:            # a header without a name for the label column
        table.row_names = [r[0] for r in table.rows[1:]]
        table.names = first
        table.header_line = table.lines[0]
        table.rows = [r[1:] for r in table.rows[1:]]
        table.lines = table.lines[1:]
        table.notes.append("header")
        return
    table.row_names = [r[0] for r in table.rows]
    table.rows = [r[1:] for r in table.rows]


def _decide_header(table, header, numeric):
    if "header" in table.notes:                  # settled with the row labels
        if header is False:
            raise UsageError(f"{table.source}: --no-header, but the first row has one field less "
                             f"than the rows below (a header over row labels)")
        return
    if len(table.rows[0]) != table.width:
        raise DataFormatError(table.source, table.lines[0],
                              f"expected {table.width} values, found {len(table.rows[0])}")
    if header is None:
        header = _looks_like_header(table, numeric)
    if header:
        table.names = table.rows[0]
        table.header_line = table.lines[0]
        table.rows = table.rows[1:]
        table.lines = table.lines[1:]
        if table.row_names is not None:
            table.row_names = table.row_names[1:]


def _looks_like_header(table, numeric):
    first, body = table.rows[0], table.rows[1:]
    if not body:
        return False
    if numeric:
        # a numeric table: a first row with a field that is not a number is a header
        return any(not is_number(c) for c in first)
    # a discrete table: a column says "data" when its first field recurs below (or is a
    # number over numbers), "header" when it is a name over numbers; a name that occurs
    # nowhere below, over values that each occur at least twice, says "header" as well (a
    # sample whose every value is unique in its column, among values that all recur, would
    # be an outlier in every column at once)
    from collections import Counter

    says_header = says_data = False
    neutral_recurring = True
    for c, name in enumerate(first):
        counts = Counter(r[c] for r in body)
        if name in counts or (is_number(name) and all(is_number(v) for v in counts)):
            says_data = True
        elif not is_number(name) and all(is_number(v) for v in counts):
            says_header = True
        elif min(counts.values()) < 2:
            neutral_recurring = False
    if says_data and not says_header:
        return False
    if says_header and not says_data:
        return True
    if not says_data and not says_header and neutral_recurring and len(set(first)) == len(first):
        return True
    raise DataFormatError(table.source, table.lines[0],
                          "cannot tell whether the first row is a header (names) or a sample; "
                          "give --header or --no-header")


# ---------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------

def check_outputs(outputs, inputs):
    """Before any work: refuse an output that is an input or another output (through
    links and other spellings of a path; a usage error), and one that cannot be written
    (its folder missing or read-only, or a folder in its place). ``outputs`` and
    ``inputs`` map an option name to a path (None and ``-`` are skipped)."""
    from ..core.files import SameFileError, check_output_path, refuse_same_file

    try:
        refuse_same_file(outputs, inputs)
    except SameFileError as exc:
        raise UsageError(str(exc)) from None
    for option, path in outputs.items():
        if path in (None, "-"):
            continue
        if os.path.isdir(path):
            raise CommandError(f"{path}: is a directory; give a file name ({option})")
        try:
            target = check_output_path(path)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from None
        folder = os.path.dirname(target) or "."
        if os.path.exists(target) and not os.path.isfile(target):
            continue                               # a device or a pipe: written through
        if not os.access(folder, os.W_OK):
            raise CommandError(f"{path}: the folder {folder} is not writable")


def write_output(path, data, encoding="utf-8"):
    """Write ``data`` (text or bytes) to ``path`` atomically, or to standard output for
    ``-`` / None. Errors name the file (``<stdout>`` for standard output)."""
    from ..core.files import write_bytes

    if isinstance(data, str):
        try:
            data = data.encode(encoding)
        except UnicodeEncodeError as exc:
            raise CommandError(f"{path if path not in (None, '-') else '<stdout>'}: "
                               f"{exc.object[exc.start:exc.end]!r} cannot be written in {encoding}") from None
    write_bytes(path, data, encoding)


def refuse_line_breaks(names, what, source):
    """Output written one name to a line cannot hold a name with a line break (a forged
    or foreign model's label): a ``CommandError`` naming ``source`` and the name, rather
    than lines that read as something else."""
    for name in names:
        if isinstance(name, str) and ("\n" in name or "\r" in name):
            raise CommandError(f"{source}: the {what} {name[:60]!r} contains a line break and cannot be "
                               f"written one per line")


def csv_text(rows):
    """Rows of values as CSV text (``\\n`` line ends)."""
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerows(rows)
    return buf.getvalue()


def json_line(row):
    """One history row as a JSON object (numpy scalars as numbers, non-finite values as null)."""
    import json

    def clean(v):
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    return json.dumps({k: clean(v) for k, v in row.items()})


def json_lines(rows):
    """History rows as JSON lines (:func:`json_line`)."""
    return "".join(json_line(row) + "\n" for row in rows)


def figure_bytes(drawn, path):
    """The picture of ``drawn`` (matplotlib axes, a list of them, or a figure) encoded in
    the format that the suffix of ``path`` names (PNG without one), ready for
    :func:`write_output`."""
    import io

    first = drawn[0] if isinstance(drawn, (list, tuple)) else drawn
    fig = getattr(first, "figure", first)
    buf = io.BytesIO()
    fig.savefig(buf, dpi=150, bbox_inches="tight", format=os.path.splitext(str(path))[1].lstrip(".") or "png")
    return buf.getvalue()
