"""sklearn-crfsuite style token features -> ``(attribute, value)`` lists.

A token is described by one of

* a dict: ``{"word.lower()": "the", "is_title": True, "len": 3.0, "prev": {"pos": "DT"}}``.
  A string value becomes the attribute ``key=value`` with value 1; ``True``/``False``
  become ``key`` with value 1/0; an int or float is the value of ``key``; a nested dict
  prefixes its keys with ``key:``; a list, tuple or set of strings gives one ``key=item``
  attribute per item;
* a list of attribute strings (each with value 1), or of ``(attribute, value)`` pairs.

Non-finite values raise ``ValueError`` naming the sequence, the token and the key.

>>> token_attributes({"w": "the", "title": False, "len": 3, "prev": {"pos": "DT"}})
[('w=the', 1.0), ('title', 0.0), ('len', 3.0), ('prev:pos=DT', 1.0)]
"""

import math
from numbers import Real


def token_attributes(token, where=""):
    """The ``(attribute, value)`` list of one token (see the module docstring)."""
    if isinstance(token, dict):
        out = []
        _flatten(token, "", out, where)
        return out
    if isinstance(token, str):
        raise TypeError(f"{where}a token must be a dict or a list of attributes, not a string")
    out = []
    for item in token:
        if isinstance(item, str):
            out.append((item, 1.0))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            out.append((item[0], _value(item[1], item[0], where)))
        else:
            raise TypeError(f"{where}attribute {item!r} is neither a string nor a (string, number) pair")
    return out


def _value(v, key, where):
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if not isinstance(v, Real):
        raise TypeError(f"{where}value of {key!r} must be a number, got {type(v).__name__}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{where}value of {key!r} is {v} (NaN and infinite values are not allowed)")
    return v


def _flatten(d, prefix, out, where):
    for key, v in d.items():
        name = f"{prefix}{key}"
        if isinstance(v, str):
            out.append((f"{name}={v}", 1.0))
        elif isinstance(v, dict):
            _flatten(v, name + ":", out, where)
        elif isinstance(v, (list, tuple, set, frozenset)):
            for item in v:
                if not isinstance(item, str):
                    raise TypeError(f"{where}list value of {name!r} must hold strings, got {item!r}")
                out.append((f"{name}={item}", 1.0))
        else:
            out.append((name, _value(v, name, where)))


def sequence_attributes(seq, index=None):
    """``token_attributes`` for every token of one sequence."""
    out = []
    for t, token in enumerate(seq):
        where = f"sequence {index}, token {t}: " if index is not None else f"token {t}: "
        out.append(token_attributes(token, where))
    return out
