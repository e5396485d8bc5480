"""sklearn-crfsuite style token features -> ``(attribute, value)`` lists.

A token is described by one of

* a dict: ``{"word.lower()": "the", "is_title": True, "len": 3.0, "prev": {"pos": "DT"}}``.
  A string value becomes the attribute ``key=value`` with value 1 (``key:value`` with
  ``sep=":"``, python-crfsuite's naming, which :class:`spargel.CRF` uses); a ``bytes``
  key or value is read as UTF-8 text; ``True``/``False`` become ``key`` with value 1/0;
  an int or float is the value of ``key``; a nested dict prefixes its keys with
  ``key:``; a list, tuple or set of strings gives one ``key=item`` (``key:item``)
  attribute per item;
* a list of attribute strings (each with value 1), or of ``(attribute, value)`` pairs.

Non-finite values raise ``ValueError`` naming the sequence, the token and the key.

>>> token_attributes({"w": "the", "title": False, "len": 3, "prev": {"pos": "DT"}})
[('w=the', 1.0), ('title', 0.0), ('len', 3.0), ('prev:pos=DT', 1.0)]
"""

import math
from array import array
from itertools import accumulate, chain
from numbers import Real

# entries gathered in Python lists before they move to typed arrays (encode_sequences)
FLUSH_ENTRIES = 1 << 16


def token_attributes(token, where="", sep="="):
    """The ``(attribute, value)`` list of one token (see the module docstring)."""
    if isinstance(token, dict):
        out = []
        _flatten(token, "", out, where, sep)
        return out
    if isinstance(token, str):
        raise TypeError(f"{where}a token must be a dict or a list of attributes, not a string")
    out = []
    for item in token:
        if isinstance(item, bytes):
            item = _text(item, where)
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


def _text(b, where):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}{b!r} is not UTF-8 text") from None


def _flatten(d, prefix, out, where, sep="="):
    for key, v in d.items():
        if isinstance(key, bytes):
            key = _text(key, where)
        name = f"{prefix}{key}"
        if isinstance(v, bytes):
            v = _text(v, where)
        if isinstance(v, str):
            out.append((f"{name}{sep}{v}", 1.0))
        elif isinstance(v, dict):
            _flatten(v, name + ":", out, where, sep)
        elif isinstance(v, (list, tuple, set, frozenset)):
            for item in v:
                if isinstance(item, bytes):
                    item = _text(item, where)
                if not isinstance(item, str):
                    raise TypeError(f"{where}list value of {name!r} must hold strings, got {item!r}")
                out.append((f"{name}{sep}{item}", 1.0))
        else:
            out.append((name, _value(v, name, where)))


def sequence_attributes(seq, index=None, sep="="):
    """``token_attributes`` for every token of one sequence."""
    out = []
    for t, token in enumerate(seq):
        where = f"sequence {index}, token {t}: " if index is not None else f"token {t}: "
        out.append(token_attributes(token, where, sep))
    return out


def encode_sequences(X, vocab, grow, sep="="):
    """Sequences of feature dicts (or attribute lists) straight to flat arrays:
    ``(seq_ptr, uni_ptr, uni_ids, uni_vals)`` over ``vocab``'s attribute ids, with the
    conversion rules of :func:`token_attributes`. With ``grow`` new attributes are added
    to ``vocab``; otherwise unknown attributes are skipped (they have no weights), as are
    attributes whose value is 0 (they contribute nothing).

    This is the hot path of tagging from dicts: plain ``str`` / ``float`` / ``int`` /
    ``bool`` values are handled inline, and so are lists of attribute strings (CRFsuite's
    attribute lists), anything else (nested dicts, lists, numpy
    scalars, attribute lists) goes through :func:`token_attributes`; error messages name
    the sequence and token but are only built when something is wrong.
    """
    import numpy as np

    from .dataset import unit_values

    mapping = vocab.mapping
    get = mapping.get
    split = None                # the key -> value -> id index, built at the first dict token
    # the hot loop appends to small Python lists, moved into compact typed arrays (4 + 8
    # bytes an entry instead of two list slots and the int / float objects) every
    # FLUSH_ENTRIES entries: the memory of a large training set stays that of its arrays
    # (the values only once one differs from 1: binary attributes need none)
    ids, vals = [], []
    all_ids, all_vals = array("i"), None
    uni_ptr, seq_ptr = array("q", [0]), array("q", [0])
    base = 0                                    # entries already moved to the arrays
    n_tok = 0
    for s, seq in enumerate(X):
        if len(ids) >= FLUSH_ENTRIES:
            base += len(ids)
            all_vals = _flush_values(all_vals, vals, len(all_ids))
            all_ids.extend(ids)
            ids.clear()
            vals.clear()
        if isinstance(seq, (str, bytes, dict)):
            raise TypeError(f"sequence {s} must be a list of tokens, not a {type(seq).__name__}")
        if type(seq) is list:
            n = _plain_list_sequence(seq, mapping, get, grow, vocab, ids, vals, uni_ptr, base)
            if n > 0:
                n_tok += n
                seq_ptr.append(n_tok)
                continue
        n = 0
        for tok in seq:
            tt = type(tok)
            if tt is dict:
                if split is None:
                    split = vocab.split_index(sep)
                plain = _plain_dict(tok, get, split, grow, vocab, ids, vals, sep)
            else:
                plain = tt is list and _plain_list(tok, get, grow, vocab, ids, vals)
            if plain:
                pass
            else:
                for name, v in token_attributes(tok, f"sequence {s}, token {n}: ", sep):
                    if v == 0.0:
                        continue
                    i = get(name)
                    if i is None:
                        if not grow:
                            continue
                        i = vocab.add(name)
                    ids.append(i)
                    vals.append(v)
            uni_ptr.append(base + len(ids))
            n += 1
        if n == 0:
            raise ValueError(f"sequence {s} is empty")
        n_tok += n
        seq_ptr.append(n_tok)
    all_vals = _flush_values(all_vals, vals, len(all_ids))
    all_ids.extend(ids)
    del ids, vals
    values = unit_values(len(all_ids)) if all_vals is None else np.frombuffer(all_vals, dtype=np.float64)
    return (np.frombuffer(seq_ptr, dtype=np.int64), np.frombuffer(uni_ptr, dtype=np.int64),
            np.frombuffer(all_ids, dtype=np.int32), values)


def _flush_values(stored, vals, n_stored):
    """Move ``vals`` to the stored values (an ``array('d')`` of ``n_stored`` entries, or
    None while every value so far is 1)."""
    if stored is None:
        if vals.count(1.0) == len(vals):
            return None
        stored = array("d", [1.0]) * n_stored
    stored.extend(vals)
    return stored


def _plain_list_sequence(seq, mapping, get, grow, vocab, ids, vals, uni_ptr, flushed=0):
    """Append a whole sequence whose tokens are all lists of attribute strings (each
    with value 1), the attribute lookups at C speed; returns its number of tokens, or 0
    (having appended nothing) when it is not such a sequence (or is empty). A known
    attribute is a key of the vocabulary, hence a string: only the new ones are checked,
    and added in sorted order (per sequence). ``flushed``: the entries already moved
    out of ``ids`` (the token offsets in ``uni_ptr`` count them)."""
    for tok in seq:
        if type(tok) is not list:
            return 0
    if not seq:
        return 0
    try:
        if grow:
            missing = set(chain.from_iterable(seq)).difference(mapping)
            if missing:
                new = sorted(missing)       # (a deterministic order; TypeError for mixed types)
                for k in new:
                    if type(k) is not str:
                        return 0
                for k in new:
                    vocab.add(k)
        found = list(map(get, chain.from_iterable(seq)))
    except TypeError:                       # an unhashable item: the slow path says which
        return 0
    lens = list(map(len, seq))
    if None in found:
        if grow:
            return 0                        # (not reached: every attribute was added)
        for tok in seq:
            for item in tok:
                if type(item) is not str:
                    return 0
        start = len(ids)
        for tok in seq:
            for i in map(get, tok):
                if i is not None:
                    ids.append(i)
            uni_ptr.append(flushed + len(ids))
        vals.extend([1.0] * (len(ids) - start))
        return len(seq)
    base = flushed + len(ids)
    ids.extend(found)
    vals.extend([1.0] * len(found))
    ends = accumulate(lens, initial=base)
    next(ends)                              # (base is uni_ptr's last entry already)
    uni_ptr.extend(ends)
    return len(seq)


def _plain_list(tok, get, grow, vocab, ids, vals):
    """Append the attributes of a list of attribute strings (each with value 1);
    returns False (having appended nothing) when some item is not a ``str``. A known
    attribute is a key of the vocabulary, hence a string: only the unknown ones are
    checked."""
    try:
        found = list(map(get, tok))
    except TypeError:                       # an unhashable item: the slow path says which
        return False
    if None in found:
        known = []
        for item, i in zip(tok, found):
            if i is None:
                if type(item) is not str:
                    return False
                if not grow:
                    continue
                i = vocab.add(item)
            known.append(i)
        found = known
    ids.extend(found)
    vals.extend([1.0] * len(found))
    return True


def _plain_dict(tok, get, split, grow, vocab, ids, vals, sep="="):
    """Append the attributes of a dict whose values are all str / float / int / bool;
    returns False (having appended nothing) when some value is anything else. A string
    value is looked up as ``split[key][value]`` (no ``key=value`` string is built unless
    the attribute is new)."""
    start = len(ids)
    add_id, add_val = ids.append, vals.append
    split_get = split.get
    for key, v in tok.items():
        tv = type(v)
        if tv is str:
            sub = split_get(key)
            if sub is not None:
                i = sub.get(v)
                if i is not None:
                    add_id(i)
                    add_val(1.0)
                    continue
            if not grow:                      # the split index knows every key=value name
                if type(key) is str:
                    continue
                del ids[start:], vals[start:]   # a bytes key: the slow path decodes it
                return False
            name = f"{key}{sep}{v}"
            x = 1.0
        elif tv is float or tv is int or tv is bool:
            if not v:
                continue
            x = float(v)
            if x - x != 0.0:                  # NaN or inf: let the slow path say where
                del ids[start:], vals[start:]
                return False
            i = get(key)
            if i is not None:
                add_id(i)
                add_val(x)
                continue
            if not grow:
                if type(key) is str:
                    continue
                del ids[start:], vals[start:]
                return False
            name = key
        else:
            del ids[start:], vals[start:]
            return False
        if type(key) is not str:
            del ids[start:], vals[start:]
            return False
        i = get(name)
        if i is None:
            i = vocab.add(name)
        add_id(i)
        add_val(x)
    return True


#: in :func:`encode_known`: an attribute the vocabulary does not know, an attribute of
#: value 0 (both negative: the kernels skip them), and an entry the one-pass lookup
#: cannot take (the token goes the long way)
UNKNOWN, DROPPED, LONG_WAY = -2, -3, -1


class _UnknownKey:
    """What the split index gives for a key it does not have: every lookup goes the long
    way (a ``bytes`` key is UTF-8 text only :func:`token_attributes` decodes; a key never
    seen in training is rare)."""
    __slots__ = ()

    @staticmethod
    def get(value, default=None):
        return LONG_WAY


_UNKNOWN_KEY = _UnknownKey()


def encode_known(seq, vocab, sep=":"):
    """One sequence over a fixed vocabulary, for a tagger's per-call path:
    ``(token offsets, attribute ids, values or None)`` as Python lists, unknown
    attributes and attributes of value 0 as negative ids (the kernels skip them), values
    None when every value is 1. The same conversion as :func:`encode_sequences` without
    growth, made for one short sequence: a dict token is looked up in one list
    comprehension (a string value through ``vocab.split_index(sep)``, a value 1 / True
    by its key, a value 0 / False dropped), an attribute list by ``map``; a token with
    anything else (other numbers, nested dicts, lists, bytes, pairs, bad values) goes
    through :func:`token_attributes`, which also names what is wrong."""
    get = vocab.mapping.get
    split_get = vocab.split_index(sep).get
    unknown_key = _UNKNOWN_KEY
    ids, vals = [], None
    ptr = [0]
    for t, tok in enumerate(seq):
        cls = tok.__class__
        if cls is dict:
            found = [split_get(k, unknown_key).get(v, UNKNOWN) if v.__class__ is str else
                     (get(k, LONG_WAY) if v == 1 else (DROPPED if v == 0 else LONG_WAY))
                     for k, v in tok.items()]
            fast = LONG_WAY not in found
        elif cls is list:
            found = list(map(get, tok)) if all(a.__class__ is str for a in tok) else None
            fast = found is not None
            if fast and None in found:
                found = [UNKNOWN if i is None else i for i in found]
        else:
            fast = False
        if fast:
            ids += found
            if vals is not None:
                vals += [1.0] * len(found)
        else:
            if isinstance(tok, (str, bytes)):
                raise TypeError(f"token {t}: a token must be a dict or a list of attributes, not a string")
            pairs = token_attributes(tok, f"token {t}: ", sep)
            if vals is None and any(v != 1.0 for _, v in pairs):
                vals = [1.0] * len(ids)
            for name, v in pairs:
                if v == 0.0:                    # (contributes nothing)
                    continue
                ids.append(get(name, UNKNOWN))
                if vals is not None:
                    vals.append(v)
        ptr.append(len(ids))
    return ptr, ids, vals
