"""CRF++'s binary model without numpy: its header, labels and template, checked
(:class:`BinaryHead`), and :func:`label_few`, which labels a few sentences with it in
plain Python, as ``crf_test`` does: each of their feature strings looked up in the
model's trie, only those weights read.

A short ``spargel label`` spends most of its time loading numpy (0.06 s of CPU time,
against 0.01 s for the interpreter itself); a few hundred tokens take less than that in
plain Python. The layout of the file and the checks are those of
:mod:`spargel.chain.crfpp_format` (which imports them from here); :func:`label_few`
gives the labels :mod:`spargel.chain.plain_viterbi` gives on the model that
:func:`spargel.chain.crfpp_format.model_for` builds: the same sums, in the same order,
and the same ties.
"""

from __future__ import annotations

import math
import os
import struct
import sys
from operator import add

from ..core.limits import MAX_ABS_WEIGHT, check_label_pairs
from ..errors import DataFormatError, ModelFileError
from .foreign_files import read_limited, starts_with

#: the largest file read
MAX_FILE_SIZE = 1 << 34
#: the most labels a model may have (a pair code is a 32-bit integer)
MAX_LABELS = 40000
#: the longest feature string read from a binary model's trie (in bytes)
MAX_KEY_BYTES = 1 << 16
#: the most label-pair entries (tokens x labels^2) :func:`label_few` steps through (about
#: a tenth of a second in plain Python)
MAX_FEW_PAIR_ENTRIES = 2 * 10 ** 6
_BIN_HEAD = struct.Struct("<IidIIII")          # version, type, cost, maxid, xsize, dsize, label bytes


def is_crfpp_binary_file(path):
    """True when ``path`` starts like CRF++'s binary model (``crf_learn``'s default
    output): the version 100 as a 32-bit integer, then the model type 0 (the rest is
    checked on reading, so that a damaged model is refused as one)."""
    return starts_with(path, struct.pack("<Ii", 100, 0))


class _BinaryHead:
    """The parts of a CRF++ binary model before its feature trie, checked; the trie and
    the weights as offsets into ``data``."""

    def __init__(self, **parts):
        self.__dict__.update(parts)


def _binary_head(data, name, encoding):
    """Check and split CRF++'s binary model ``data`` (see
    :func:`spargel.chain.crfpp_format.read_binary_bytes`); the weights are not read."""
    size = len(data)

    def fail(offset, message):
        raise ModelFileError(f"{name}: invalid CRF++ binary model ({message}, at byte {offset})")

    if size < _BIN_HEAD.size:
        fail(0, f"{size} bytes; the header alone takes {_BIN_HEAD.size}: truncated?")
    version, mtype, cost, maxid, xsize, dsize, ysize = _BIN_HEAD.unpack_from(data, 0)
    if version // 100 != 1:
        fail(0, f"version {version}; CRF++ 0.58 writes version 100")
    if mtype != 0:
        fail(4, f"model type {mtype}; CRF++ writes 0")
    if not (0 < cost < math.inf):
        fail(8, f"cost-factor {cost!r} is not a positive number")
    if maxid < 1 or xsize < 1:
        fail(16, f"maxid {maxid} and xsize {xsize} must be positive")
    pos = _BIN_HEAD.size

    def take(n, what):
        nonlocal pos
        if n > size - pos:
            fail(pos, f"the {what} take {n} bytes, only {size - pos} are left: truncated?")
        out = data[pos:pos + n]
        pos += n
        return out

    def strings(raw, start, what):
        if raw and not raw.endswith(b"\0"):
            fail(start + len(raw), f"the {what} do not end with a NUL")
        out = []
        at = start
        for piece in raw.split(b"\0")[:-1]:
            try:
                out.append(piece.decode(encoding))
            except UnicodeDecodeError:
                fail(at, f"{piece[:40]!r} in the {what} is not {encoding} text")
            at += len(piece) + 1
        return out

    y_at = pos
    labels = strings(take(ysize, "labels"), y_at, "labels")
    if not labels or "" in labels:
        fail(y_at, "the model has no labels" if not labels else "an empty label")
    if len(labels) > MAX_LABELS:
        fail(y_at, f"{len(labels)} labels; at most {MAX_LABELS} are supported")
    if len(set(labels)) != len(labels):
        fail(y_at, "a label is listed twice")
    check_label_pairs(len(labels), name)
    Y = len(labels)
    t_at = pos
    (tsize,) = struct.unpack("<I", take(4, "template's size"))
    templates = [t for t in strings(take(tsize, "template"), t_at + 4, "template") if t]
    for t in templates:
        if t[0] not in "UB":
            fail(t_at, f"template line {t[:40]!r} is neither a U nor a B line")
    d_at = pos
    if dsize % 8:
        fail(20, f"the trie's size {dsize} is not a whole number of 8-byte units")
    if dsize > size - pos:
        fail(pos, f"the feature trie take {dsize} bytes, only {size - pos} are left: truncated?")
    trie = memoryview(data)[pos:pos + dsize]           # (no copy: a mapped model stays mapped)
    pos += dsize
    w_at = pos
    if size - pos != 4 * maxid:
        fail(pos, f"{size - pos} bytes after the trie for maxid {maxid} weights of 4 bytes "
                  f"({'truncated?' if size - pos < 4 * maxid else 'trailing bytes'})")
    return _BinaryHead(data=data, name=name, fail=fail, version=version, cost=cost, maxid=maxid, xsize=xsize,
                       labels=labels, templates=templates, Y=Y, trie=trie, d_at=d_at, w_at=w_at)


def _template(name, kind, templates, xsize):
    """(text, Template) of a CRF++ model's template lines."""
    from ..data.templates import Template

    # the template (xsize is not the data's number of columns: crf_learn lowers it to the
    # highest column the template uses, plus one)
    text = "# format: crfpp\n" + "\n".join(templates) + "\n"
    try:
        tpl = Template.parse(text, source=f"{name} (its template)", format="crfpp")
    except DataFormatError as exc:
        raise ModelFileError(f"{name}: invalid CRF++ {kind} model (template line "
                             f"{exc.line - 1 if exc.line else '?'}: {exc.message})") from None
    if tpl.n_columns_required > xsize:
        raise ModelFileError(f"{name}: invalid CRF++ {kind} model (the template uses column "
                             f"{tpl.n_columns_required - 1}, xsize is {xsize})")
    return text, tpl


def _mapped(name):
    """The file mapped read-only into memory (as ``crf_test`` maps its model: only the
    pages read are loaded), or None when it cannot be mapped (an empty file, a pipe);
    larger than any model read here: a ``ModelFileError``."""
    import mmap

    try:
        with open(name, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_FILE_SIZE:
                raise ModelFileError(f"{name}: {size} bytes; larger than any CRF++ model read here "
                                     f"({MAX_FILE_SIZE})")
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    except (OSError, ValueError):
        return None


class BinaryHead:
    """A CRF++ binary model's header, labels and template, checked; the file mapped
    (its trie and weights are read where a lookup goes).

    ``name``, ``encoding`` (that of the data it was trained on), ``head`` (the parts of
    the file), ``labels``, ``text`` and ``template`` (its template's text and
    :class:`~spargel.data.templates.Template`)."""

    def __init__(self, path, encoding="utf-8"):
        self.name = os.fspath(path)
        data = _mapped(self.name)
        if data is None:
            _, data = read_limited(path, "CRF++", MAX_FILE_SIZE)
        self.encoding = encoding
        self.head = _binary_head(data, self.name, encoding)
        self.labels = self.head.labels
        self.text, self.template = _template(self.name, "binary", self.head.templates, self.head.xsize)


# --------------------------------------------------------------------------- a few sentences
def _trie_units(trie):
    """(base, check) of the Darts trie ``trie`` as indexable sequences of ints (views of
    the mapped bytes where the machine is little-endian, as the file)."""
    if sys.byteorder == "little":
        return trie.cast("i")[0::2], trie.cast("I")[1::2]
    n = len(trie) // 8
    pairs = struct.unpack(f"<{2 * n}i", trie)
    return pairs[0::2], [c & 0xFFFFFFFF for c in pairs[1::2]]


def trie_find(base, check, key):
    """The id of the byte string ``key`` in the Darts trie (``base``, ``check``: see
    :func:`_trie_units`), or -1: :func:`spargel.chain.crfpp_format.trie_lookup` for one
    key, every unit read bounds-checked."""
    n = len(base)
    if n == 0 or len(key) > MAX_KEY_BYTES:
        return -1
    b = base[0]
    for c in key:
        p = b + c + 1
        if p < 0 or p >= n or check[p] != b:
            return -1
        b = base[p]
    if b < 0 or b >= n or check[b] != b:
        return -1
    value = base[b]
    return -value - 1 if value < 0 else -1


def fits_few(head, n_tokens):
    """Whether :func:`label_few` labels ``n_tokens`` tokens quickly with this model (at
    most :data:`MAX_FEW_PAIR_ENTRIES` label pairs over all of them)."""
    return n_tokens * head.head.Y ** 2 <= MAX_FEW_PAIR_ENTRIES


def label_few(head, sentences):
    """The Viterbi labels (names) of each sentence, a list of token rows (each the
    token's columns, at least as many as the template reads), under the CRF++ binary
    model of ``head`` (a :class:`BinaryHead`).

    What ``spargel label`` writes through :mod:`spargel.chain.plain_viterbi` with the
    model restricted to these sentences' strings: a token's label scores are the
    weights of its unigram strings summed in pattern order, a position's pair scores the
    transitions plus its bigram strings' weights added one by one, a step's score the
    previous score plus the pair score (the best previous label, the lowest on a tie),
    plus the token's label scores; the lowest best last label. Every weight is crf_test's
    (a 32-bit float times the cost factor); a damaged file is refused with the errors of
    :func:`spargel.chain.crfpp_format.model_for`."""
    h = head.head
    tpl = head.template
    Y = h.Y
    expanded = [tpl.extract(rows) for rows in sentences]
    # every distinct string, looked up once
    strings = {"B"}
    for uni, big in expanded:
        for feats in uni:
            strings.update(feats)
        for feats in big:
            strings.update(feats)
    base, check = _trie_units(h.trie)
    found = {}
    for x in strings:
        try:
            key = x.encode(head.encoding)
        except UnicodeEncodeError:                # a string the model's encoding cannot hold: in no trie
            continue
        f = trie_find(base, check, key)
        if f >= 0:
            found[x] = f
    width = {x: (Y if x[0] == "U" else Y * Y) for x in found}
    for x, f in found.items():
        if f + width[x] > h.maxid:
            h.fail(h.d_at, f"feature {x[:40]!r} takes weights {f} to {f + width[x] - 1}, past maxid {h.maxid}")
    weights = {}
    for x, f in found.items():
        w = struct.unpack_from(f"<{width[x]}f", h.data, h.w_at + 4 * f)
        bad = next((i for i, v in enumerate(w) if not math.isfinite(v)), None)
        if bad is not None:
            h.fail(h.w_at + 4 * (f + bad), f"weight {f + bad} is {w[bad]}")
        weights[x] = w
    cost = h.cost
    for x, w in weights.items():
        w = weights[x] = [v * cost for v in w]
        if not all(abs(v) <= MAX_ABS_WEIGHT for v in w):
            raise ModelFileError(f"{head.name}: invalid CRF++ binary model (a weight times the cost factor "
                                 f"{cost:g} is beyond +-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")
    zeros = [0.0] * (Y * Y)
    trans = weights.get("B", zeros) if tpl.transitions else zeros
    if tpl.transitions:
        weights.pop("B", None)
    tables = {}

    def pair_table(attrs):
        """Per current label, the pair scores of every previous label: the transitions
        plus the bigram weights of ``attrs``, added in order."""
        got = tables.get(attrs)
        if got is None:
            flat = trans
            for a in attrs:
                flat = list(map(add, flat, weights[a]))
            got = tables[attrs] = [flat[c::Y] for c in range(Y)]     # [current][previous]
        return got

    labels = head.labels
    out = []
    for (uni, big), rows in zip(expanded, sentences):
        scores = []
        for feats in uni:
            e = None
            for x in feats:
                w = weights.get(x)
                if w is not None:
                    e = list(w) if e is None else list(map(add, e, w))
            scores.append(e if e is not None else [0.0] * Y)
        delta = scores[0]
        back = []
        for t in range(1, len(rows)):
            table = pair_table(tuple(x for x in big[t] if x in weights and x[0] == "B"))
            e = scores[t]
            new, arg = [], []
            for c in range(Y):
                cand = list(map(add, delta, table[c]))
                best = max(cand)
                arg.append(cand.index(best))                  # the lowest previous label on ties
                new.append(best + e[c])
            delta = new
            back.append(arg)
        y = delta.index(max(delta))                           # the lowest last label on ties
        path = [y]
        for arg in reversed(back):
            y = arg[y]
            path.append(y)
        out.append([labels[i] for i in reversed(path)])
    return out
