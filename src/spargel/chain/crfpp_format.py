"""CRF++'s models, binary (``crf_learn``'s default output) and text (``crf_learn -t``
writes ``MODEL.txt`` beside the binary ``MODEL``), read without CRF++.

The format, as CRF++ 0.58 writes it: four blocks of lines, each ended by an empty line,
then the weights.

* the header: ``version: V``, ``cost-factor: F``, ``maxid: N`` (the number of
  weights), ``xsize: K`` (the number of observation columns the template reads: the
  training data's, lowered to the highest column the template uses plus one);
* the labels, one a line, in their id order;
* the template's lines, the ``U`` lines first, then the ``B`` lines;
* the features, one a line: ``ID STRING``, the string a template line expands to and
  the index of its first weight; a ``U`` feature owns Y weights (one per label, from
  ``ID``), a ``B`` feature Y * Y (one per label pair, ``ID + previous * Y + current``);
  the feature ``B`` of a bare ``B`` line holds the label transitions;
* N weights, one a line, in decimal with 16 digits after the point.

``crf_test`` reads the binary model, where ``crf_learn`` stores every weight as a 32-bit
float, and multiplies each token's and each transition's sum by the cost factor. The
reader therefore rounds every weight to a 32-bit float and multiplies it by the cost
factor, so that spargel labels as ``crf_test`` does (its Viterbi takes the first label
on a tie, as spargel's; sums of the same weights in a different order may still differ
in their last bits, which decides a label only at an exact tie of two labellings).

Reading trusts nothing: the counts are bounded by the lines the file has before
anything is allocated, every feature's weights must lie inside ``maxid`` without
overlapping another's, the weights must be finite numbers, and the template must parse
as CRF++'s. Anything else raises :class:`~spargel.errors.ModelFileError` naming the file
and the line.

CRF++'s binary model (``crf_learn``'s default output, what ``crf_test -m`` reads) holds
the same content, little-endian, with no line structure:

* ``version`` (unsigned 32-bit, 100), the model type (signed 32-bit, 0), ``cost-factor``
  (a double), ``maxid`` and ``xsize`` (unsigned 32-bit), the size in bytes of the
  feature trie (unsigned 32-bit);
* the labels' size in bytes (unsigned 32-bit), then the labels, each ended by a NUL;
* the template's size in bytes (unsigned 32-bit), then its lines, each ended by a NUL
  (the ``U`` lines, then the ``B`` lines), padded with NULs so that the labels and the
  template together take a multiple of 4 bytes;
* the feature strings as a double-array trie (Darts): units of a signed 32-bit ``base``
  and an unsigned 32-bit ``check``; from the node whose ``base`` is ``b``, the byte
  ``c`` leads to the unit ``b + c + 1`` when its ``check`` is ``b``, and the string's end
  to the unit ``b``, whose ``base`` is ``-ID - 1`` (the root is the unit 0);
* ``maxid`` weights, 32-bit floats; the file ends there.

The binary reader checks every size and count against the bytes left before it slices
or allocates anything, walks the trie breadth-first marking each unit it reaches (a unit
reached twice, a child outside the trie or a leaf without an ID is a corrupt file), and
then applies the text model's checks; its errors name the file and the byte offset.
"""

from __future__ import annotations

import math
import os
import re
from itertools import compress
from operator import itemgetter

import numpy as np

from ..core.limits import MAX_ABS_WEIGHT, check_label_pairs
from ..errors import ModelFileError
from .crfpp_binary import (MAX_FILE_SIZE, MAX_KEY_BYTES, MAX_LABELS, BinaryHead, _binary_head, _template,
                           is_crfpp_binary_file)
from .foreign_files import read_limited, starts_with
from ..data.feature_space import FeatureSpace
from ..data.vocab import Vocabulary
from .fitted import FittedChain

_HEADER_KEYS = ("version", "cost-factor", "maxid", "xsize")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z")


def is_crfpp_text_file(path):
    """True when ``path`` starts like a CRF++ text model."""
    return starts_with(path, b"version: ")


class CrfppModel:
    """The content of a CRF++ text model."""

    def __init__(self, version, cost_factor, maxid, xsize, labels, templates, features, weights):
        self.version, self.cost_factor, self.maxid, self.xsize = version, cost_factor, maxid, xsize
        self.labels, self.templates = labels, templates
        self.features = features                    # [(string, first weight index)], in file order
        self.weights = weights                      # (maxid,) float64, as written


def read(path, encoding="utf-8"):
    """Read the CRF++ text model ``path`` (see the module documentation); its strings are
    bytes in ``encoding``, the encoding of the data it was trained on."""
    name, data = read_limited(path, "CRF++", MAX_FILE_SIZE)
    return read_bytes(data, name, encoding)


def read_bytes(data, name="<bytes>", encoding="utf-8"):
    """Parse the bytes of a CRF++ text model."""
    def fail(lineno, message):
        raise ModelFileError(f"{name}:{lineno}: invalid CRF++ text model ({message})")

    try:
        text = bytes(data).decode(encoding)
    except UnicodeDecodeError as exc:
        fail(bytes(data).count(b"\n", 0, exc.start) + 1, f"not {encoding} text")
    if "\0" in text or "\r" in text:
        fail(text.count("\n", 0, text.find("\0" if "\0" in text else "\r")) + 1, "a NUL or a carriage return")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif text:
        # crf_learn ends every line, the last weight's too: a file cut inside a line
        # would otherwise load with that line's number shortened
        fail(len(lines), f"the file ends inside a line ({lines[-1][:40]!r}, no line end): truncated?")
    pos = 0

    def block(what):
        nonlocal pos
        start = pos
        while pos < len(lines) and lines[pos] != "":
            pos += 1
        if pos >= len(lines):
            fail(pos + 1, f"the file ends inside the {what} (each block ends with an empty line)")
        out = lines[start:pos]
        pos += 1
        return start + 1, out

    first, header = block("header")
    values = {}
    for i, line in enumerate(header):
        key, sep, value = line.partition(": ")
        if not sep or key not in _HEADER_KEYS or key in values:
            fail(first + i, f"expected one of {', '.join(k + ':' for k in _HEADER_KEYS)} once each, got "
                            f"{line[:40]!r}")
        values[key] = value
    missing = [k for k in _HEADER_KEYS if k not in values]
    if missing:
        fail(first, f"the header lacks {', '.join(missing)}")
    ints = {}
    for key in ("version", "maxid", "xsize"):
        v = values[key]
        if not v.isdigit() or len(v) > 12:
            fail(first + header.index(f"{key}: {v}"), f"{key} {v[:20]!r} is not a non-negative integer")
        ints[key] = int(v)
    cf = values["cost-factor"]
    cost = float(cf) if _NUMBER.match(cf) else math.nan
    if not (0 < cost < math.inf):
        fail(first + header.index(f"cost-factor: {cf}"), f"cost-factor {cf[:20]!r} is not a positive number")
    maxid, xsize = ints["maxid"], ints["xsize"]
    if maxid < 1 or xsize < 1:
        fail(first, f"maxid {maxid} and xsize {xsize} must be positive")
    if maxid > len(lines) - pos:
        fail(first + header.index(f"maxid: {values['maxid']}"),
             f"maxid {maxid} weights announced, but only {len(lines) - pos} lines follow")
    lab_line, labels = block("labels")
    if not labels:
        fail(lab_line, "the model has no labels")
    if len(labels) > MAX_LABELS:
        fail(lab_line, f"{len(labels)} labels; at most {MAX_LABELS} are supported")
    if len(set(labels)) != len(labels):
        seen = set()
        at = next(i for i, lab in enumerate(labels) if lab in seen or seen.add(lab))
        fail(lab_line + at, f"the label {labels[at][:40]!r} is listed twice")
    check_label_pairs(len(labels), name)
    Y = len(labels)
    tpl_line, templates = block("template")
    for i, t in enumerate(templates):
        if t[0] not in "UB":
            fail(tpl_line + i, f"template line {t[:40]!r} is neither a U nor a B line")
    feat_line, rows = block("features")
    features = []
    spans = np.empty((len(rows), 2), np.int64)
    for i, row in enumerate(rows):
        ident, sep, string = row.partition(" ")
        if not sep or not ident.isdigit() or len(ident) > 12 or not string:
            fail(feat_line + i, f"expected 'ID FEATURE', got {row[:40]!r}")
        if string[0] not in "UB":
            fail(feat_line + i, f"feature {string[:40]!r} is neither a U nor a B feature")
        f = int(ident)
        width = Y if string[0] == "U" else Y * Y
        if f + width > maxid:
            fail(feat_line + i, f"feature {string[:40]!r} takes weights {f} to {f + width - 1}, past maxid {maxid}")
        spans[i] = f, f + width
        features.append((string, f))
    if len({s for s, _ in features}) != len(features):
        seen = set()
        i = next(i for i, (s, _) in enumerate(features) if s in seen or seen.add(s))
        fail(feat_line + i, f"the feature {features[i][0][:40]!r} is listed twice")
    order = np.argsort(spans[:, 0], kind="stable")
    if len(order) > 1 and np.any(spans[order[1:], 0] < spans[order[:-1], 1]):
        k = int(np.flatnonzero(spans[order[1:], 0] < spans[order[:-1], 1])[0]) + 1
        fail(feat_line + int(order[k]), f"feature {features[order[k]][0][:40]!r} overlaps the weights of "
                                        f"{features[order[k - 1]][0][:40]!r}")
    w_line = pos + 1
    if len(lines) - pos != maxid:
        fail(len(lines), f"{len(lines) - pos} weight lines for maxid {maxid}")
    weights = np.empty(maxid)
    for i in range(maxid):
        v = lines[pos + i]
        if not _NUMBER.match(v):
            fail(w_line + i, f"weight {v[:40]!r} is not a number")
        weights[i] = float(v)
        if not abs(weights[i]) <= _FLOAT32_MAX:
            fail(w_line + i, f"weight {v[:40]!r} is beyond a 32-bit float (crf_test's weights)")
    return CrfppModel(ints["version"], cost, maxid, xsize, labels, templates, features, weights)


def read_binary(path, encoding="utf-8"):
    """Read CRF++'s binary model ``path`` (see the module documentation)."""
    name, data = read_limited(path, "CRF++", MAX_FILE_SIZE)
    return read_binary_bytes(data, name, encoding)


def _binary_weights(head, lo=0, hi=None):
    """Weights ``lo:hi`` of a binary model as written (32-bit floats, as float64),
    refused unless finite."""
    hi = head.maxid if hi is None else hi
    with np.errstate(invalid="ignore"):            # a signalling NaN is refused just below
        weights = np.frombuffer(head.data, "<f4", hi - lo, head.w_at + 4 * lo).astype(np.float64)
    if not np.all(np.isfinite(weights)):
        i = int(np.flatnonzero(~np.isfinite(weights))[0])
        head.fail(head.w_at + 4 * (lo + i), f"weight {lo + i} is {weights[i]}")
    return weights


def read_binary_bytes(data, name="<bytes>", encoding="utf-8"):
    """Parse the bytes of CRF++'s binary model (the layout of CRF++ 0.58)."""
    h = _binary_head(bytes(data), name, encoding)
    fail, trie, d_at, maxid, Y = h.fail, h.trie, h.d_at, h.maxid, h.Y
    weights = _binary_weights(h)
    keys, ids = _trie_keys(trie, lambda off, msg: fail(d_at + off, msg))
    features = []
    spans = np.empty((len(keys), 2), np.int64)
    for i, (key, f) in enumerate(zip(keys, ids)):
        try:
            string = key.decode(encoding)
        except UnicodeDecodeError:
            fail(d_at, f"feature {key[:40]!r} is not {encoding} text")
        if string[0] not in "UB":
            fail(d_at, f"feature {string[:40]!r} is neither a U nor a B feature")
        width = Y if string[0] == "U" else Y * Y
        if f + width > maxid:
            fail(d_at, f"feature {string[:40]!r} takes weights {f} to {f + width - 1}, past maxid {maxid}")
        spans[i] = f, f + width
        features.append((string, f))
    if not features:
        fail(d_at, "the trie holds no features")
    order = np.argsort(spans[:, 0], kind="stable")
    if len(order) > 1 and np.any(spans[order[1:], 0] < spans[order[:-1], 1]):
        k = int(np.flatnonzero(spans[order[1:], 0] < spans[order[:-1], 1])[0]) + 1
        fail(d_at, f"feature {features[order[k]][0][:40]!r} overlaps the weights of "
                   f"{features[order[k - 1]][0][:40]!r}")
    return CrfppModel(h.version, h.cost, maxid, h.xsize, h.labels, h.templates, features, weights)


def _trie_keys(trie, fail):
    """``(keys, ids)`` of the Darts double-array ``trie`` (bytes), keys sorted bytewise;
    ``fail(offset, message)`` raises on anything that is not a trie."""
    units = np.frombuffer(trie, np.dtype([("base", "<i4"), ("check", "<u4")]))
    n = len(units)
    if n == 0:
        return [], []
    base = units["base"].astype(np.int64)
    check = units["check"].astype(np.int64)
    if base[0] < 1:
        fail(0, f"the trie's root has base {base[0]}")
    used = np.flatnonzero(check > 0)
    by_check = used[np.argsort(check[used], kind="stable")]
    sorted_check = check[by_check]
    seen = np.zeros(n, bool)
    seen[0] = True
    parent = np.full(n, -1, np.int64)
    code = np.zeros(n, np.int64)
    leaves, leaf_depth = [], []
    frontier = np.zeros(1, np.int64)
    depth = 0
    while len(frontier):
        if depth > MAX_KEY_BYTES:
            fail(0, f"a feature string longer than {MAX_KEY_BYTES} bytes (a cycle in the trie?)")
        b = base[frontier]
        lo = np.searchsorted(sorted_check, b, "left")
        hi = np.searchsorted(sorted_check, b, "right")
        counts = hi - lo
        if np.any(counts == 0):
            u = int(frontier[np.flatnonzero(counts == 0)[0]])
            fail(8 * u, f"the trie's unit {u} leads nowhere")
        total = int(counts.sum())
        starts = np.cumsum(counts) - counts
        rank = np.arange(total) - np.repeat(starts, counts) + np.repeat(lo, counts)
        child = by_check[rank]
        par = np.repeat(frontier, counts)
        c = child - base[par]
        bad = (c < 0) | (c > 256)
        if np.any(bad):
            u = int(child[np.flatnonzero(bad)[0]])
            fail(8 * u, f"the trie's unit {u} is no child of the unit its check names")
        if np.any(seen[child]) or len(np.unique(child)) != len(child):
            u = int(child[np.flatnonzero(seen[child])[0]]) if np.any(seen[child]) else int(child[0])
            fail(8 * u, f"the trie's unit {u} is reached twice")
        seen[child] = True
        parent[child] = par
        code[child] = c
        end = c == 0
        if np.any(end & (base[child] >= 0)) or np.any(~end & (base[child] < 1)):
            u = int(child[np.flatnonzero((end & (base[child] >= 0)) | (~end & (base[child] < 1)))[0]])
            fail(8 * u, f"the trie's unit {u} has base {base[u]}")
        if np.any(c == 1):
            u = int(child[np.flatnonzero(c == 1)[0]])
            fail(8 * u, "a NUL byte inside a feature string")
        if depth == 0 and np.any(end):
            fail(0, "an empty feature string")
        leaves.append(child[end])
        leaf_depth.append(np.full(int(end.sum()), depth, np.int64))
        frontier = child[~end]
        depth += 1
    leaves = np.concatenate(leaves)
    leaf_depth = np.concatenate(leaf_depth)
    ids = -base[leaves] - 1
    keys = []
    step = max(1, (1 << 22) // max(depth, 1))
    for s in range(0, len(leaves), step):
        cur = parent[leaves[s:s + step]]
        dep = leaf_depth[s:s + step]
        buf = np.zeros((len(cur), max(int(dep.max()), 1)), np.uint8)
        rows = np.arange(len(cur))
        for k in range(int(dep.max())):
            m = dep > k
            buf[rows[m], dep[m] - 1 - k] = code[cur[m]] - 1
            cur[m] = parent[cur[m]]
        keys.extend(buf[i, :dep[i]].tobytes() for i in range(len(cur)))
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [keys[i] for i in order], [int(ids[i]) for i in order]


def read_any(path, encoding="utf-8"):
    """The CRF++ model in ``path``, text or binary (by its first bytes)."""
    if is_crfpp_binary_file(path):
        return read_binary(path, encoding), "binary"
    return read(path, encoding), "text"


def from_crfpp_file(cls, path, encoding="utf-8"):
    """A fitted ``cls`` (``spargel.CRF``) holding the CRF++ model in ``path``, text or
    binary."""
    name = os.fspath(path)
    m, kind = read_any(name, encoding)
    text, tpl = _template(name, kind, m.templates, m.xsize)
    # crf_test's weights: 32-bit floats, times the cost factor
    w = m.weights.astype(np.float32).astype(np.float64) * m.cost_factor
    return _estimator(cls, name, kind, text, tpl, m.labels, m.features, w, m.cost_factor)


def _estimator(cls, name, kind, text, tpl, labels, features, w, cost_factor):
    """A fitted ``cls`` of the ``features`` ((string, first weight index) pairs) with the
    weights ``w`` (crf_test's: times the cost factor)."""
    if not np.all(np.abs(w) <= MAX_ABS_WEIGHT):
        raise ModelFileError(f"{name}: invalid CRF++ {kind} model (a weight times the cost factor "
                             f"{cost_factor:g} is beyond +-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")
    Y = len(labels)
    strings = list(map(itemgetter(0), features))
    firsts = np.fromiter(map(itemgetter(1), features), np.int64, len(features))
    is_u = np.fromiter(map("U".__eq__, map(itemgetter(0), strings)), bool, len(strings))
    uni_names, u_ptr, u_lab, u_w = _blocks(list(compress(strings, is_u.tolist())), firsts[is_u], w, Y)
    b_strings = list(compress(strings, (~is_u).tolist()))
    b_firsts = firsts[~is_u]
    t_pair = np.zeros(0, np.int32)
    t_w = np.zeros(0)
    if tpl.transitions and "B" in b_strings:
        i = b_strings.index("B")
        vals = w[b_firsts[i]:b_firsts[i] + Y * Y]
        nz = np.flatnonzero(vals)
        t_pair, t_w = nz.astype(np.int32), vals[nz]
        b_strings = b_strings[:i] + b_strings[i + 1:]
        b_firsts = np.delete(b_firsts, i)
    big_names, b_ptr, b_pair, b_w = _blocks(b_strings, b_firsts, w, Y * Y)
    try:
        uni_vocab = Vocabulary.of_distinct(uni_names)
        big_vocab = Vocabulary.of_distinct(big_names)
        label_vocab = Vocabulary(labels)
        space = FeatureSpace(Y, u_ptr, u_lab, b_ptr, b_pair, t_pair)
        space.validate(len(uni_names), len(big_names))
    except ValueError as exc:
        raise ModelFileError(f"{name}: invalid CRF++ {kind} model ({exc})") from None
    return cls.from_fitted_model(FittedChain(space, np.concatenate([u_w, b_w, t_w]).astype(np.float64), uni_vocab,
                                             big_vocab, label_vocab, template=tpl if tpl.text == text else text_template(text), pad=True,
                                             value_sep=":"))


def text_template(text):
    """The :class:`~spargel.data.templates.Template` of a model's stored template text."""
    from ..data.templates import Template
    return Template.parse(text, source="<template>")


def _blocks(names, firsts, w, width, chunk_entries=1 << 22):
    """(names kept, ptr, positions, weights) of the blocks ``w[f:f + width]`` (f in
    ``firsts``): each block's non-zero weights and their positions in it; blocks without
    any are left out. A chunk of blocks at a time (no temporary beyond
    ``chunk_entries`` weights)."""
    kept, counts, pos, vals = [], [], [], []
    step = max(1, chunk_entries // max(width, 1))
    offsets = np.arange(width, dtype=np.int64)
    for lo in range(0, len(firsts), step):
        W = w[firsts[lo:lo + step, None] + offsets]
        nz = W != 0
        c = nz.sum(axis=1)
        rows, cols = np.nonzero(nz)
        pos.append(cols.astype(np.int32))
        vals.append(W[rows, cols])
        counts.append(c[c > 0])
        kept.extend(compress(names[lo:lo + step], (c > 0).tolist()))
    ptr = np.zeros(len(kept) + 1, np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=ptr[1:])
    return (kept, ptr, np.concatenate(pos) if pos else np.zeros(0, np.int32),
            np.concatenate(vals) if vals else np.zeros(0))


# --------------------------------------------------------------------------- labelling
class BinaryModelHead(BinaryHead):
    """A CRF++ binary model's header, labels and template, checked
    (:class:`~spargel.chain.crfpp_binary.BinaryHead`), for :meth:`model_for`."""

    def model_for(self, cls, strings):
        """:func:`model_for` of this model."""
        return model_for(self, cls, strings)


def model_for(head, cls, strings):
    """A fitted ``cls`` holding the features among ``strings`` (and the transitions) of
    the CRF++ binary model ``head`` (a :class:`~spargel.chain.crfpp_binary.BinaryHead`):
    it labels any input whose feature strings are among them as the whole model does.
    What ``crf_test`` does: it looks each string up in the trie (reading every feature
    of a large model costs seconds)."""
    h = head.head
    keys = list(set(strings) | {"B"})     # (a template's strings start with U or B)
    try:
        raw = [x.encode(head.encoding) for x in keys]
    except UnicodeEncodeError:         # a string the model's encoding cannot hold: in no trie
        pairs = [(x, x.encode(head.encoding, "ignore")) for x in keys]
        keys = [x for x, b in pairs if b.decode(head.encoding, "ignore") == x]
        raw = [x.encode(head.encoding) for x in keys]
    ids = trie_lookup(h.trie, raw, lambda off, msg: h.fail(h.d_at + off, msg))
    Y = h.Y
    found = np.flatnonzero(ids >= 0)
    keys = [keys[i] for i in found.tolist()]
    f = ids[found]
    width = np.where(np.fromiter(map("U".__eq__, map(itemgetter(0), keys)), bool, len(keys)), Y, Y * Y)
    past = np.flatnonzero(f + width > h.maxid)
    if len(past):
        i = int(past[0])
        h.fail(h.d_at, f"feature {keys[i][:40]!r} takes weights {f[i]} to {f[i] + width[i] - 1}, "
                       f"past maxid {h.maxid}")
    at = np.cumsum(width) - width
    features = list(zip(keys, at.tolist()))
    index = np.repeat(f - at, width) + np.arange(int(width.sum()), dtype=np.int64)
    w = np.frombuffer(h.data, "<f4", h.maxid, h.w_at)[index]       # (crf_test's 32-bit weights)
    with np.errstate(invalid="ignore"):            # a signalling NaN is refused just below
        finite = np.isfinite(w)
    if not finite.all():
        i = int(index[np.flatnonzero(~finite)[0]])
        h.fail(h.w_at + 4 * i, f"weight {i} is {float(w[np.flatnonzero(index == i)[0]])}")
    w = w.astype(np.float64)
    w *= h.cost
    return _estimator(cls, head.name, "binary", head.text, head.template, head.labels, features, w, h.cost)


def trie_lookup(trie, keys, fail):
    """The ids of the byte strings ``keys`` in the Darts double-array ``trie`` (-1 for a
    key it does not hold), all keys walked at once a byte position at a time. Every unit
    read is bounds-checked: a damaged trie gives "not found" or a ``fail(offset,
    message)``, never a read outside it."""
    units = np.frombuffer(trie, np.dtype([("base", "<i4"), ("check", "<u4")]))
    n_units = len(units)
    n = len(keys)
    ids = np.full(n, -1, np.int64)
    if n_units == 0 or n == 0:
        return ids
    base, check = units["base"], units["check"]        # (read where the walk goes, not copied)
    lengths = np.fromiter(map(len, keys), np.int64, n)
    width = int(lengths.max())
    if width > MAX_KEY_BYTES:
        width = MAX_KEY_BYTES
    flat = np.frombuffer(b"".join(keys), np.uint8)
    starts = np.cumsum(lengths) - lengths
    b = np.full(n, base[0], np.int64)
    alive = lengths <= MAX_KEY_BYTES
    for k in range(width):
        live = np.flatnonzero(alive & (lengths > k))
        if not len(live):
            break
        p = b[live] + flat[starts[live] + k].astype(np.int64) + 1
        ok = (p >= 0) & (p < n_units)
        ok[ok] &= check[p[ok]].astype(np.int64) == b[live][ok]
        alive[live[~ok]] = False
        b[live[ok]] = base[p[ok]]
    live = np.flatnonzero(alive)
    p = b[live]
    ok = (p >= 0) & (p < n_units)
    ok[ok] &= check[p[ok]].astype(np.int64) == p[ok]
    leaf = live[ok]
    value = base[p[ok]].astype(np.int64)
    found = value < 0
    ids[leaf[found]] = -value[found] - 1
    return ids
