"""``spargel label --model M`` when M is a CRFsuite model file: the input is then in
CRFsuite's data format, as ``crfsuite tag`` reads it, and the output is ``crfsuite
tag``'s.

Input: one item (token) a line, fields separated by tabs; the first field is the
label (it may be empty; it is the reference, not used for tagging), each further field
an attribute ``name`` (value 1) or ``name:value``, where ``\\:`` and ``\\\\`` in a name
stand for ``:`` and ``\\``; an empty line ends a sequence.

Output: the predicted label of every item, one a line, an empty line after each
sequence; with ``--marginals`` each label is followed by ``:`` and its marginal
probability (``crfsuite tag -i``).
"""

import io
import math

from ..errors import DataFormatError


def _unescape_field(field, name, lineno):
    """``(attribute, value)`` of one field, with CRFsuite's escapes."""
    out = []
    i, n = 0, len(field)
    while i < n:
        c = field[i]
        if c == "\\" and i + 1 < n and field[i + 1] in ":\\":
            out.append(field[i + 1])
            i += 2
            continue
        if c == ":":
            text = field[i + 1:]
            try:
                value = float(text)
            except ValueError:
                raise DataFormatError(name, lineno, f"attribute {''.join(out)!r}: value {text!r} is not a "
                                                    f"number") from None
            if not math.isfinite(value):
                raise DataFormatError(name, lineno, f"attribute {''.join(out)!r}: value {text!r} is not finite")
            return "".join(out), value
        out.append(c)
        i += 1
    return "".join(out), 1.0


def read_items(text, name):
    """Sequences of CRFsuite items: ``(X, refs, lines)`` with ``X`` per sequence a list
    of per-item ``(attribute, value)`` lists."""
    X, refs, lines = [], [], []
    cur, cur_ref, cur_line = [], [], None
    for lineno, line in enumerate(io.StringIO(text), start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            if cur:
                X.append(cur)
                refs.append(cur_ref)
                lines.append(cur_line)
                cur, cur_ref, cur_line = [], [], None
            continue
        fields = line.split("\t")
        if cur_line is None:
            cur_line = lineno
        cur_ref.append(fields[0])
        cur.append([_unescape_field(f, name, lineno) for f in fields[1:] if f])
    if cur:
        X.append(cur)
        refs.append(cur_ref)
        lines.append(cur_line)
    if not X:
        raise DataFormatError(name, None, "no items to tag")
    return X, refs, lines


def label(args, model, text, name):
    """The text ``crfsuite tag`` would print for the items in ``text``."""
    X, _, _ = read_items(text, name)
    pred = model.predict(X)
    marg = model.predict_marginals(X) if args.marginals else None
    out = []
    for s, labels in enumerate(pred):
        for t, lab in enumerate(labels):
            out.append(f"{lab}:{marg[s][t][lab]:.6f}\n" if marg is not None else f"{lab}\n")
        out.append("\n")
    return "".join(out)
