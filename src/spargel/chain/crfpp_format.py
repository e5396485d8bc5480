"""CRF++'s text models (``crf_learn -t`` writes ``MODEL.txt`` beside the binary
``MODEL``), read without CRF++.

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
"""

from __future__ import annotations

import math
import os
import re
import struct

import numpy as np

from ..core.limits import check_label_pairs
from ..errors import ModelFileError
from .foreign_files import read_limited, starts_with

#: the largest file read
MAX_FILE_SIZE = 1 << 34
#: the most labels a model may have (a pair code is a 32-bit integer)
MAX_LABELS = 40000
_HEADER_KEYS = ("version", "cost-factor", "maxid", "xsize")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z")


def is_crfpp_text_file(path):
    """True when ``path`` starts like a CRF++ text model."""
    return starts_with(path, b"version: ")


def is_crfpp_binary_file(path):
    """True when ``path`` starts like CRF++'s binary model (``crf_learn``'s default
    output, which spargel does not read): the version 100 as a 32-bit integer, the model
    type 0, then a positive finite cost factor (a little-endian double)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    if len(head) < 16 or head[:8] != struct.pack("<Ii", 100, 0):
        return False
    (cost,) = struct.unpack("<d", head[8:16])
    return 0 < cost < math.inf


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


def from_crfpp_file(cls, path, encoding="utf-8"):
    """A fitted ``cls`` (``spargel.CRF``) holding the CRF++ text model in ``path``."""
    from ..data.feature_space import FeatureSpace
    from ..data.templates import Template
    from ..data.vocab import Vocabulary
    from ..errors import DataFormatError

    name = os.fspath(path)
    m = read(name, encoding)
    # the template (xsize is not the data's number of columns: crf_learn lowers it to the
    # highest column the template uses, plus one)
    text = "# format: crfpp\n" + "\n".join(m.templates) + "\n"
    try:
        tpl = Template.parse(text, source=f"{name} (its template)", format="crfpp")
    except DataFormatError as exc:
        raise ModelFileError(f"{name}: invalid CRF++ text model (template line "
                             f"{exc.line - 1 if exc.line else '?'}: {exc.message})") from None
    if tpl.n_columns_required > m.xsize:
        raise ModelFileError(f"{name}: invalid CRF++ text model (the template uses column "
                             f"{tpl.n_columns_required - 1}, xsize is {m.xsize})")
    Y = len(m.labels)
    from ..estimation import MAX_ABS_WEIGHT

    # crf_test's weights: 32-bit floats, times the cost factor
    w = m.weights.astype(np.float32).astype(np.float64) * m.cost_factor
    if not np.all(np.abs(w) <= MAX_ABS_WEIGHT):
        raise ModelFileError(f"{name}: invalid CRF++ text model (a weight times the cost factor "
                             f"{m.cost_factor:g} is beyond +-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")
    uni_names, u_ptr, u_lab, u_w = [], [0], [], []
    big_names, b_ptr, b_pair, b_w = [], [0], [], []
    t_pair = np.zeros(0, np.int32)
    t_w = np.zeros(0)
    for string, f in m.features:
        if string[0] == "U":
            vals = w[f:f + Y]
            nz = np.flatnonzero(vals)
            if len(nz):
                uni_names.append(string)
                u_lab.append(nz.astype(np.int32))
                u_w.append(vals[nz])
                u_ptr.append(u_ptr[-1] + len(nz))
            continue
        vals = w[f:f + Y * Y]
        nz = np.flatnonzero(vals)
        if string == "B" and tpl.transitions:
            t_pair, t_w = nz.astype(np.int32), vals[nz]
        elif len(nz):
            big_names.append(string)
            b_pair.append(nz.astype(np.int32))
            b_w.append(vals[nz])
            b_ptr.append(b_ptr[-1] + len(nz))
    est = cls(template=text, pad=True)
    try:
        est._uni_vocab = Vocabulary(uni_names)
        est._big_vocab = Vocabulary(big_names)
        est._label_vocab = Vocabulary(m.labels)
        space = FeatureSpace(Y, np.asarray(u_ptr, np.int64),
                             np.concatenate(u_lab) if u_lab else np.zeros(0, np.int32),
                             np.asarray(b_ptr, np.int64),
                             np.concatenate(b_pair) if b_pair else np.zeros(0, np.int32), t_pair)
        space.validate(len(uni_names), len(big_names))
    except ValueError as exc:
        raise ModelFileError(f"{name}: invalid CRF++ text model ({exc})") from None
    est.space_ = space
    est.weights_ = np.concatenate([np.concatenate(u_w) if u_w else np.zeros(0),
                                   np.concatenate(b_w) if b_w else np.zeros(0), t_w]).astype(np.float64)
    est.classes_ = est._label_vocab.names
    est.n_active_features_ = int(np.count_nonzero(est.weights_))
    est._fitted_sep = ":"
    return est
