"""Wapiti's model files (``wapiti train``, ``wapiti label -m``), read and written
without Wapiti.

The format, as Wapiti 1.5 writes it: a text file of lines, every string in it a
*netstring* -- its length in bytes, a colon, the bytes, a comma -- on a line of its own.

* ``#mdl#TYPE#N``: the model type (0 maxent, 1 MEMM, 2 CRF) and the number N of
  weight lines at the end;
* ``#rdr#P/C/A``: the reader: the number P of patterns, the highest column C they
  use and a flag A (Wapiti's ``autouni``); then the P patterns, each as the pattern
  file's line after Wapiti's cleaning (comment and trailing blanks removed, the kind
  letter lower-cased);
* ``#qrk#Y`` and Y labels, in their id order;
* ``#qrk#O`` and O observations, in their id order: the strings the patterns produce,
  whose first character is the kind (``u`` unigram, ``b`` bigram, ``*`` both);
* N lines ``INDEX=WEIGHT``, the weight in C's hexadecimal floating point (``%la``),
  for the non-zero weights only.

Weight indices follow from the observations: walking them in id order, a ``u`` or
``*`` observation takes the next Y indices (one per label) and a ``b`` or ``*`` one the
next Y * Y (one per label pair ``previous * Y + current``; ``*`` the unigram block
first). A tagger scores a label at a token by the sum of the unigram weights of the
token's observations and a label pair, from the second token on, by the sum of the
bigram weights: exactly spargel's first-order CRF, where the observation ``b`` (or
``*``) of a bare ``b`` (or ``*``) pattern line, present at every token, holds the
transitions.

Strings are bytes to Wapiti (its regexes work on bytes: ``%m[0,0,".$"]`` on a UTF-8
"caf\u00e9" gives the last byte of the "\u00e9"); they are read and written in the encoding
of the data (UTF-8 by default) with Python's ``surrogateescape``, so that such a byte
is the same lone byte on both sides, as spargel's Wapiti patterns produce it.

Reading trusts nothing: every count is bounded by the bytes left before anything is
allocated, strings must be valid UTF-8 netstrings with the exact framing, labels and
observations unique, observation kinds known, weight indices in range and given once,
weights finite, and the patterns must compile as Wapiti's. Anything else raises
:class:`~spargel.errors.ModelFileError` naming the file and the line.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataFormatError, ModelFileError
from ..core.files import write_bytes
from ..core.limits import check_label_pairs
from .foreign_files import read_limited, starts_with
from ..data.feature_space import FeatureSpace
from ..data.vocab import Vocabulary
from .fitted import FittedChain

CRF_TYPE = 2
MAXENT_TYPE = 0
TYPE_NAMES = {0: "maxent", 1: "MEMM", 2: "CRF"}
#: the largest file read (a model of this size is far beyond any real one)
MAX_FILE_SIZE = 1 << 34
#: the most labels a model may have (a pair code is a 32-bit integer)
MAX_LABELS = 40000
_HEAD = re.compile(rb"#mdl#(\d{1,9})#(\d{1,19})\n")
_RDR = re.compile(rb"#rdr#(\d{1,10})/(\d{1,10})/(-?\d{1,10})\n")
#: the string of each line ``LENGTH:STRING,`` of a decoded list (whose lines are checked)
_NETSTRING_BODY = re.compile(r"^[0-9]+:(.*),$", re.M)
_QRK = re.compile(rb"#qrk#(\d{1,19})\n")
_NETLEN = re.compile(rb"(\d{1,10}):")
_WEIGHT = re.compile(rb"(\d{1,19})=([-+]?(?:0[xX][0-9a-fA-F.]+(?:[pP][-+]?\d+)?|[0-9.]+(?:[eE][-+]?\d+)?))\n")


@dataclass
class WapitiModel:
    """The content of a Wapiti model file."""

    type: int = CRF_TYPE
    patterns: list = field(default_factory=list)
    n_columns: int = 0
    autouni: int = 0
    labels: list = field(default_factory=list)
    observations: list = field(default_factory=list)
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # weight indices
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))


def is_wapiti_file(path):
    """True when ``path`` starts like a Wapiti model file."""
    return starts_with(path, b"#mdl#")


# --------------------------------------------------------------------------- reading
class _Cursor:
    def __init__(self, data, name, encoding="utf-8"):
        self.data, self.name, self.pos, self.encoding = data, name, 0, encoding
        self.newline_offsets = None     # every new line's offset, once needed (_newlines)

    def line(self):
        return self.data.count(b"\n", 0, self.pos) + 1

    def fail(self, message):
        raise ModelFileError(f"{self.name}:{self.line()}: invalid Wapiti model ({message})")

    def left(self):
        return len(self.data) - self.pos

    def match(self, regex, what):
        m = regex.match(self.data, self.pos)
        if m is None:
            end = self.data.find(b"\n", self.pos)
            got = self.data[self.pos:end if end >= 0 else len(self.data)][:40]
            self.fail(f"expected {what}, got {got!r}" if got else f"expected {what}, got the end of the file")
        self.pos = m.end()
        return m

    def netstring(self, what):
        m = self.match(_NETLEN, f"{what} (a netstring 'LENGTH:...,')")
        n = int(m.group(1))
        end = self.pos + n
        if end + 2 > len(self.data):
            self.fail(f"{what} of {n} bytes runs past the end of the file")
        raw = self.data[self.pos:end]
        if self.data[end:end + 2] != b",\n":
            self.fail(f"{what} of {n} bytes does not end with ',' and a new line")
        if b"\0" in raw or b"\n" in raw:
            self.fail(f"{what} {raw[:40]!r} holds a NUL or a new line")
        try:
            text = raw.decode(self.encoding, "surrogateescape")
        except UnicodeDecodeError:
            self.fail(f"{what} {raw[:40]!r} is not {self.encoding} text")
        self.pos = end + 2
        return text

    def count(self, m, group, what, unit=4):
        """A count from the file, bounded by what the rest of the file can hold
        (``unit``: the fewest bytes one item takes)."""
        n = int(m.group(group))
        if n * unit > self.left():
            left, self.pos = self.left(), m.start()
            self.fail(f"{n} {what} announced, but only {left} bytes follow")
        return n


def read(path, encoding="utf-8"):
    """Read the Wapiti model file ``path`` (see the module documentation); its strings are
    bytes in ``encoding``, the encoding of the data it was trained on."""
    name, data = read_limited(path, "Wapiti", MAX_FILE_SIZE)
    return read_bytes(data, name, encoding)


def read_bytes(data, name="<bytes>", encoding="utf-8"):
    """Parse the bytes of a Wapiti model file."""
    c = _Cursor(bytes(data), name, encoding)
    m = c.match(_HEAD, "the header '#mdl#TYPE#COUNT'")
    kind = int(m.group(1))
    if kind not in (CRF_TYPE, MAXENT_TYPE):
        c.pos = 0
        c.fail(f"a {TYPE_NAMES.get(kind, f'type {kind}')} model; spargel reads Wapiti's CRF and maxent models "
               f"(types 2 and 0)")
    n_weights = c.count(m, 2, "weights", unit=4)
    m = c.match(_RDR, "the reader line '#rdr#PATTERNS/COLUMNS/AUTOUNI'")
    n_pat = c.count(m, 1, "patterns")
    n_columns, autouni = int(m.group(2)), int(m.group(3))
    if autouni:
        c.pos = m.start()
        c.fail("the reader is in 'autouni' mode (maxent features given in the data); spargel reads CRF "
               "models whose observations come from patterns")
    patterns = []
    for _ in range(n_pat):
        start = c.line()
        p = c.netstring("pattern")
        from ..data.wapiti_regex import parse_wapiti_line
        if parse_wapiti_line(p) != p or p[0] not in "ub*":
            c.pos -= 1
            c.fail(f"pattern {p[:40]!r} on line {start} is not one Wapiti writes (a lower-case kind "
                   f"'u', 'b' or '*' first, no '#', no trailing blank)")
        patterns.append(p)
    labels = _strings(c, "label")
    if not labels:
        c.fail("the model has no labels")
    if len(labels) > MAX_LABELS:
        c.fail(f"{len(labels)} labels; at most {MAX_LABELS} are supported")
    check_label_pairs(len(labels), c.name)
    observations = _strings(c, "observation")
    Y = len(labels)
    heads = "".join([o[0] for o in observations])
    n_u, n_b, n_s = heads.count("u"), heads.count("b"), heads.count("*")
    if n_u + n_b + n_s != len(heads):
        o = next(o for o in observations if o[0] not in "ub*")
        c.fail(f"observation {o[:40]!r} has the unknown kind {o[0]!r} (expected 'u', 'b' or '*')")
    n_features = (n_u + n_s) * Y + (n_b + n_s) * Y * Y
    fast = _weight_lines(c, n_weights, n_features)
    if fast is not None:
        index, weights = fast
    else:
        index = np.empty(n_weights, np.int64)
        weights = np.empty(n_weights)
    for i in range(0 if fast is not None else n_weights):
        m = c.match(_WEIGHT, "a weight line 'INDEX=VALUE'")
        f = int(m.group(1))
        if f >= n_features:
            c.fail(f"weight index {f} is out of range (the model has {n_features} weights)")
        text = m.group(2).decode("ascii")
        try:
            v = float.fromhex(text) if "x" in text.lower() else float(text)
        except (ValueError, OverflowError):
            v = math.nan
        if not math.isfinite(v):
            c.fail(f"weight {text!r} is not a finite number")
        index[i], weights[i] = f, v
    if c.left():
        c.fail("unexpected data after the last weight")
    if np.any(np.diff(np.sort(index)) == 0):       # (np.unique would import numpy.ma: 10 ms)
        c.fail("a weight index is given twice")
    return WapitiModel(kind, patterns, n_columns, autouni, labels, observations, index, weights)


def _strings(c, what):
    m = c.match(_QRK, f"the list of {what}s '#qrk#COUNT'")
    n = c.count(m, 1, f"{what}s")
    out = _netstring_lines(c, n)
    if out is None:                 # not n well-formed lines: the item reader says where
        out = [c.netstring(what) for _ in range(n)]
    distinct = set(out)
    if len(distinct) != n:
        seen = set()
        dup = next(s for s in out if s in seen or seen.add(s))
        c.fail(f"the {what} {dup[:40]!r} is listed twice")
    if "" in distinct:
        c.fail(f"an empty {what}")
    return out


def _decimals(arr, starts, digits):
    """The unsigned decimal numbers of ``digits[k]`` digits (at least 1, at most 18: an
    int64 holds them) that start at the bytes ``arr[starts[k]]``, read digit by digit
    for all of them at once; None when one of those bytes is not a digit."""
    value = np.zeros(len(starts), np.int64)
    for k in range(int(digits.max()) if len(digits) else 0):
        has = np.flatnonzero(digits > k)
        d = arr[starts[has] + k].astype(np.int64) - 48
        if np.any((d < 0) | (d > 9)):
            return None
        value[has] = value[has] * 10 + d
    return value


def _netstring_lines(c, n):
    """The ``n`` netstrings at the cursor read at once (numpy over the bytes instead of
    a call per string), when they are ``n`` well-formed lines ``LENGTH:STRING,`` (no
    new line or NUL inside); None otherwise (the cursor then stays where it was)."""
    if n == 0:
        return []
    data, pos = c.data, c.pos
    arr = np.frombuffer(data, np.uint8)
    ends = _newlines(c, arr)                          # every new line of the file, cached
    first = np.searchsorted(ends, pos)
    if first + n > len(ends):
        return None
    ends = ends[first:first + n]                       # line k: [starts[k], ends[k])
    starts = np.empty(n, np.int64)
    starts[0] = pos
    starts[1:] = ends[:-1] + 1
    stop = int(ends[-1]) + 1
    block = arr[pos:stop]
    if not block.all():                                # a NUL
        return None
    colons = np.flatnonzero(block == 58) + pos
    colon = colons[np.minimum(np.searchsorted(colons, starts), max(len(colons) - 1, 0))] if len(colons) else None
    if colon is None or np.any(colon < starts) or np.any(colon >= ends):
        return None
    digits = colon - starts
    if np.any(digits < 1) or np.any(digits > 10) or np.any(arr[ends - 1] != 44) or np.any(ends - 1 <= colon):
        return None
    value = _decimals(arr, starts, digits)             # the lengths
    if value is None or np.any(value != ends - 1 - (colon + 1)):
        return None
    encoding = c.encoding
    try:
        if _one_decode(encoding):       # decoded once, split at the new lines
            out = _NETSTRING_BODY.findall(data[pos:stop - 1].decode(encoding, "surrogateescape"))
            if len(out) != n:
                return None
        else:
            out = [data[a + 1:b - 1].decode(encoding, "surrogateescape")
                   for a, b in zip(colon.tolist(), ends.tolist())]
    except UnicodeDecodeError:
        return None
    c.pos = stop
    return out


def _newlines(c, arr):
    """Offsets of every new line of the cursor's file (computed once)."""
    if c.newline_offsets is None:
        c.newline_offsets = np.flatnonzero(arr == 10)
    return c.newline_offsets


def _one_decode(encoding):
    """Whether strings in ``encoding`` joined by new lines decode as the new-line-joined
    decoded strings (stateless encodings where a new line byte is always one)."""
    import codecs

    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return name in ("utf-8", "ascii", "iso8859-1", "latin-1", "cp1252")


def _weight_lines(c, n_weights, n_features):
    """(index, weights) of the ``n_weights`` weight lines ``INDEX=VALUE`` that end the
    file, read at once (numpy over the bytes for the indices); None when they are not
    exactly such lines with in-range indices and finite values (the line-by-line reader
    then says where)."""
    data, pos = c.data, c.pos
    if n_weights == 0:
        return (np.zeros(0, np.int64), np.zeros(0)) if pos == len(data) else None
    arr = np.frombuffer(data, np.uint8)
    ends = _newlines(c, arr)
    first = np.searchsorted(ends, pos)
    if len(ends) - first != n_weights or ends[-1] != len(data) - 1:
        return None                                    # not n lines, or text after the last
    ends = ends[first:]
    starts = np.empty(n_weights, np.int64)
    starts[0] = pos
    starts[1:] = ends[:-1] + 1
    block = arr[pos:]
    eq = np.flatnonzero(block == 61) + pos             # '='
    if len(eq) != n_weights:
        return None
    digits = eq - starts
    if np.any(eq >= ends) or np.any(digits < 1) or np.any(digits > 18):
        return None
    index = _decimals(arr, starts, digits)
    if index is None or index.max() >= n_features:
        return None
    # the values: only the characters of decimal and hexadecimal numbers, then Python's parsers
    allowed = np.zeros(256, bool)
    allowed[np.frombuffer(b"0123456789abcdefABCDEFxXpP.+-\n=", np.uint8)] = True
    if not allowed[block].all():
        return None
    text = data[pos:len(data) - 1].decode("ascii")
    try:
        values = [v[k + 1:] for v, k in zip(text.split("\n"), digits.tolist())]
        weights = np.array([float.fromhex(v) if "x" in v or "X" in v else float(v) for v in values], np.float64)
    except (ValueError, OverflowError):
        return None
    if not np.all(np.isfinite(weights)):
        return None
    c.pos = len(data)
    return index, weights


# --------------------------------------------------------------------------- writing
def to_bytes(model, encoding="utf-8"):
    """The file's bytes, its strings in ``encoding`` (see the module documentation)."""
    try:
        return to_text(model, encoding).encode(encoding, "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ValueError(f"cannot write a Wapiti model: {exc.object[exc.start:exc.end]!r} cannot be "
                         f"written in {encoding}") from None


def to_text(model, encoding="utf-8"):
    """The file's text (see the module documentation); netstring lengths count the bytes
    of each string in ``encoding``."""
    out = [f"#mdl#{model.type}#{len(model.weights)}\n",
           f"#rdr#{len(model.patterns)}/{model.n_columns}/{model.autouni}\n"]
    out.extend(_netstring(p, encoding) for p in model.patterns)
    for strings in (model.labels, model.observations):
        out.append(f"#qrk#{len(strings)}\n")
        out.extend(_netstring(s, encoding) for s in strings)
    out.extend(f"{int(i)}={_hex(float(v))}\n" for i, v in zip(model.index, model.weights))
    return "".join(out)


def _netstring(s, encoding="utf-8"):
    return f"{len(s.encode(encoding, 'surrogateescape'))}:{s},\n"


def _hex(v):
    """C's ``%la``: ``0x1.8p+1``, trailing zeros of the fraction dropped."""
    h = v.hex()                                   # '-0x1.8000000000000p+1'
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


def write(path, model, encoding="utf-8"):
    """Write ``model`` (a :class:`WapitiModel`) to ``path`` atomically, or to standard
    output for ``"-"`` (as ``wapiti train`` does without an output file)."""
    write_bytes(path, to_bytes(model, encoding), encoding)


# --------------------------------------------------------------------------- spargel <-> Wapiti
def representable(model):
    """None when the fitted CRF ``model`` (a ``CRF`` or a
    :class:`~spargel.chain.fitted.FittedChain`) can be written as a Wapiti model, else
    the reason."""
    from .crfsuite_compat import fitted_of
    m = fitted_of(model)
    if m.order != 1:
        return "Wapiti's models are first-order; this one is second-order"
    tpl = m.template
    if tpl is None:
        return ("the model was trained on feature dicts or attribute lists without a pattern file; a Wapiti "
                "model holds patterns that generate its observations from columns")
    if tpl.format != "wapiti":
        return ("the model was trained with a CRF++ pattern file; Wapiti reads patterns in its own language "
                "(padding '_x-1', its regexes, '@' offsets): train with --pattern-format wapiti (or a "
                "'# format: wapiti' first line)")
    if not m.pad:
        return "the model was trained with pad=False (--no-pad); Wapiti always pads"
    if not tpl.transitions and m.space.t_pair.size:
        return "the model has transitions without a bare 'b' or '*' pattern to hold them"
    for what, names in (("label", m.classes), ("observation", list(m.uni)), ("observation", list(m.big))):
        for s in names:
            s = str(s)
            if not s or "\0" in s or "\n" in s:
                return f"the {what} {s[:40]!r} is empty or holds a NUL or a new line"
    return None


def training_refusal(order, pad, pattern, template_text):
    """Before training: None when a model trained at ``order``, with ``pad``, on the
    template ``template_text`` read from the pattern file ``pattern`` (None: the
    default template) can be written as a Wapiti model, else the reason."""
    from ..data.templates import Template

    if order != 1:
        return "Wapiti's models are first-order"
    if not pad:
        return "Wapiti always pads (drop --no-pad)"
    if not pattern:
        return "a Wapiti model holds the patterns of a Wapiti pattern file: give one with --pattern"
    if Template.parse(template_text, source=pattern).format != "wapiti":
        return (f"{pattern} is read as a CRF++ template; Wapiti reads its own pattern language: add "
                f"--pattern-format wapiti (or a first line '# format: wapiti')")
    return None


def _pattern_lines(tpl):
    from ..data.wapiti_regex import parse_wapiti_line
    return [p for p in map(parse_wapiti_line, tpl.text.splitlines()) if p is not None]


def to_wapiti_model(model):
    """The :class:`WapitiModel` of a fitted first-order CRF (a ``CRF`` or a
    :class:`~spargel.chain.fitted.FittedChain`) trained with a Wapiti pattern file;
    raises ``ValueError`` with the reason when the format cannot hold it."""
    from .crfsuite_compat import fitted_of
    m = fitted_of(model)
    reason = representable(m)
    if reason is not None:
        raise ValueError(f"cannot write a Wapiti model: {reason}")
    tpl = m.template
    s, w = m.space, np.asarray(m.weights, dtype=np.float64)
    Y = s.n_labels
    patterns = _pattern_lines(tpl)
    # the observation that carries the transitions: a bare 'b' (else a bare '*') line's
    trans_obs = "b" if "b" in patterns else ("*" if "*" in patterns else None)
    blocks = {}                                     # observation -> [unigram (Y,), bigram (Y*Y,)]
    for a, name in enumerate(m.uni):
        lo, hi = s.u_ptr[a], s.u_ptr[a + 1]
        nz = w[lo:hi] != 0
        if nz.any():
            if name[0] not in "u*":
                raise ValueError(f"cannot write a Wapiti model: unigram observation {name[:40]!r} does not "
                                 f"start with 'u' or '*'")
            vec = np.zeros(Y)
            vec[s.u_lab[lo:hi][nz]] = w[lo:hi][nz]
            blocks.setdefault(name, [None, None])[0] = vec
    for a, name in enumerate(m.big):
        lo, hi = s.b_ptr[a], s.b_ptr[a + 1]
        vals = w[s.b_base + lo:s.b_base + hi]
        nz = vals != 0
        if nz.any():
            if name[0] not in "b*":
                raise ValueError(f"cannot write a Wapiti model: bigram observation {name[:40]!r} does not "
                                 f"start with 'b' or '*'")
            vec = np.zeros(Y * Y)
            vec[s.b_pair[lo:hi][nz]] = vals[nz]
            blocks.setdefault(name, [None, None])[1] = vec
    tw = w[s.t_base:s.t_base + len(s.t_pair)]
    if np.any(tw != 0):
        entry = blocks.setdefault(trans_obs, [None, None])
        if entry[1] is None:
            entry[1] = np.zeros(Y * Y)
        entry[1][s.t_pair] += tw                    # (an %m pattern may also produce 'b' itself)
    observations, index, weights = [], [], []
    f = 0
    for name, (uni, big) in blocks.items():
        observations.append(name)
        for vec, applies, width in ((uni, name[0] in "u*", Y), (big, name[0] in "b*", Y * Y)):
            if not applies:
                continue
            if vec is not None:
                nz = np.flatnonzero(vec)
                index.append(f + nz)
                weights.append(vec[nz])
            f += width
    if not observations:
        raise ValueError("cannot write a Wapiti model: every weight is zero (Wapiti refuses a model "
                         "without observations)")
    kind = MAXENT_TYPE if m.model_type == "maxent" else CRF_TYPE
    return WapitiModel(kind, patterns, max(tpl.n_columns_required - 1, 0), 0, [str(c) for c in m.classes],
                       observations, np.concatenate(index).astype(np.int64), np.concatenate(weights))


def from_wapiti_file(cls, path, encoding="utf-8"):
    """A fitted ``cls`` (``spargel.CRF``) holding the Wapiti model in ``path``."""
    return cls.from_fitted_model(read_fitted(path, encoding))


def read_fitted(path, encoding="utf-8"):
    """The :class:`~spargel.chain.fitted.FittedChain` of the Wapiti model in ``path``."""
    from ..data.templates import Template

    name = os.fspath(path)
    m = read(name, encoding)
    if not m.patterns:
        raise ModelFileError(f"{name}: invalid Wapiti model (no patterns: spargel labels columns through "
                             f"the model's patterns)")
    try:
        tpl = Template.parse("# format: wapiti\n" + "\n".join(m.patterns), source=f"{name} (its patterns)",
                             format="wapiti")
    except DataFormatError as exc:
        raise ModelFileError(f"{name}: invalid Wapiti model (pattern {exc.line - 1 if exc.line else '?'}: "
                             f"{exc.message})") from None
    Y = len(m.labels)
    obs = m.observations
    # observation o's unigram / bigram blocks, in file order: (start, kind, observation)
    heads = np.frombuffer("".join([o[0] for o in obs]).encode("ascii"), np.uint8)
    is_u = (heads == ord("u")) | (heads == ord("*"))
    is_b = (heads == ord("b")) | (heads == ord("*"))
    size = is_u * Y + is_b * (Y * Y)
    first = np.cumsum(size) - size
    blocks = np.stack([np.where(is_u, first, -1), np.where(is_b, first + is_u * Y, -1)], axis=1).ravel()
    has = blocks >= 0
    starts = blocks[has].astype(np.int64)
    bigram_block = np.tile(np.array([False, True]), len(obs))[has]
    obs_of = np.repeat(np.arange(len(obs), dtype=np.int64), 2)[has]
    order = np.argsort(m.index, kind="stable")
    index, weights = m.index[order], m.weights[order]
    owner = np.searchsorted(starts, index, side="right") - 1      # the block each weight is in
    rel = index - starts[owner]
    generates_bare = any(c.op == "m" for p in tpl.bigram_patterns for c in p.commands)
    maxent = m.type == MAXENT_TYPE
    # unigram blocks, in block order
    uni = ~bigram_block[owner]
    u_owner = owner[uni]
    u_blocks, u_counts = np.unique(u_owner, return_counts=True)
    uni_names = [obs[i] for i in obs_of[u_blocks].tolist()]
    u_ptr = np.zeros(len(u_blocks) + 1, np.int64)
    np.cumsum(u_counts, out=u_ptr[1:])
    u_lab = rel[uni].astype(np.int32)
    u_w = weights[uni]
    # bigram blocks: the bare 'b' / '*' give the transitions, the others bigram attributes
    big = {}                                        # observation -> (pairs, weights)
    trans = np.zeros(Y * Y)
    has_trans = np.zeros(Y * Y, bool)
    if not maxent:                                  # a maxent model uses no label-pair weight
        sel = ~uni
        b_owner, b_rel, b_w = owner[sel], rel[sel], weights[sel]
        b_blocks, b_first = np.unique(b_owner, return_index=True)
        bounds = np.append(b_first, len(b_owner))
        for r, blk in enumerate(b_blocks.tolist()):
            lo, hi = bounds[r], bounds[r + 1]
            o = obs[obs_of[blk]]
            if o in ("b", "*") and tpl.transitions:
                trans[b_rel[lo:hi]] += b_w[lo:hi]
                has_trans[b_rel[lo:hi]] = True
                if generates_bare:                  # an %m pattern may also produce 'b' / '*'
                    big[o] = (b_rel[lo:hi].astype(np.int32), b_w[lo:hi])
            else:
                big[o] = (b_rel[lo:hi].astype(np.int32), b_w[lo:hi])
    try:
        uni_vocab = Vocabulary.of_distinct(uni_names)
        big_vocab = Vocabulary.of_distinct(list(big))
        label_vocab = Vocabulary(m.labels)
        b_ptr = np.concatenate([[0], np.cumsum([len(p) for p, _ in big.values()])]).astype(np.int64)
        b_pair = (np.concatenate([p for p, _ in big.values()]) if big else np.zeros(0)).astype(np.int32)
        t_pair = np.flatnonzero(has_trans).astype(np.int32)
        space = FeatureSpace(Y, u_ptr, u_lab, b_ptr, b_pair, t_pair)
        space.validate(len(uni_names), len(big))
    except ValueError as exc:
        raise ModelFileError(f"{name}: invalid Wapiti model ({exc})") from None
    parts = [u_w]
    parts += [v for _, v in big.values()]
    parts.append(trans[t_pair])
    return FittedChain(space, np.concatenate(parts).astype(np.float64), uni_vocab, big_vocab, label_vocab,
                       template=tpl, pad=True, value_sep=":", model_type="maxent" if maxent else "crf")
