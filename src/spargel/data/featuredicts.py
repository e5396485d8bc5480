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
from itertools import accumulate, chain, compress, count, repeat
from numbers import Real

# entries gathered in Python lists before they move to typed arrays (encode_sequences)
FLUSH_ENTRIES = 1 << 16
# tokens encoded at a time by encode_bulk (its temporaries: a few Python lists and arrays
# of some 20 entries a token)
BULK_TOKENS = 1 << 13

_STR = frozenset((str,))
_FLOAT = frozenset((float,))
_DICT = frozenset((dict,))
_LIST = frozenset((list,))
_CONTAINERS = frozenset((list, tuple))


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


def encode_sequences(X, vocab, grow, sep="=", first=0):
    """Sequences of feature dicts (or attribute lists) straight to flat arrays:
    ``(seq_ptr, uni_ptr, uni_ids, uni_vals)`` over ``vocab``'s attribute ids, with the
    conversion rules of :func:`token_attributes`. With ``grow`` new attributes are added
    to ``vocab``; otherwise unknown attributes are skipped (they have no weights), as are
    attributes whose value is 0 (they contribute nothing).

    This is the hot path of tagging from dicts: plain ``str`` / ``float`` / ``int`` /
    ``bool`` values are handled inline, and so are lists of attribute strings (CRFsuite's
    attribute lists), anything else (nested dicts, lists, numpy
    scalars, attribute lists) goes through :func:`token_attributes`; error messages name
    the sequence and token but are only built when something is wrong (``first``: the
    number of the first sequence in them).
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
    for s, seq in enumerate(X, first):
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


def attribute_list_items(seq):
    """The items of ``seq`` as ``{name: 1.0}`` dicts when every token is a list (or
    tuple) of ``str`` attribute names -- what :func:`token_attributes` gives for them (a
    name listed twice in a token kept once), built at C speed; None for any other
    sequence (an empty one too), which takes the general path.

    >>> attribute_list_items([["w=the", "bias"], ["w=cat", "bias", "w=cat"]])
    [{'w=the': 1.0, 'bias': 1.0}, {'w=cat': 1.0, 'bias': 1.0}]
    >>> attribute_list_items([{"w": "the"}]) is None
    True
    """
    if (seq.__class__ is not list and seq.__class__ is not tuple) or not seq:
        return None
    if not set(map(type, seq)) <= _CONTAINERS or not set(map(type, chain.from_iterable(seq))) <= _STR:
        return None
    return list(map(dict.fromkeys, seq, repeat(1.0, len(seq))))


def _plain_sequence_type(t):
    """Whether sequences of type ``t`` are read by :func:`encode_bulk`: a list, or a list
    subclass that iterates as one and has no ``columns``."""
    return t is list or (issubclass(t, list) and t.__iter__ is list.__iter__ and t.__len__ is list.__len__
                         and not hasattr(t, "columns"))


def encode_bulk(X, vocab, grow, sep="="):
    """:func:`encode_sequences` of a list of sequences whose every token is a ``dict`` of
    ``str`` keys and ``float`` values (what :class:`spargel.pycrfsuite.ItemSequence`
    holds), at C speed: one hash lookup an entry, no Python work per attribute. The
    result, the vocabulary's growth included, is the one of :func:`encode_sequences`:
    attributes of value 0 dropped, new attributes numbered in order of first
    occurrence. None when ``X`` is not in this format from its first sequence on
    (anything else -- string, int or bool values, nested dicts, bytes, NaN, empty
    sequences, attribute lists, which :func:`encode_sequences` reads fast already --
    takes the general path, which also names what is wrong); a later part in another
    format is encoded by :func:`encode_sequences` (``sep`` its separator), after the
    vocabulary this function grew.

    >>> from spargel.data.vocab import Vocabulary
    >>> v = Vocabulary()
    >>> seq_ptr, uni_ptr, ids, vals = encode_bulk([[{"b": 1.0, "a": 1.0}, {"c": 0.0}], [{"a": 2.0}]], v, True)
    >>> v.names, ids.tolist(), vals.tolist(), uni_ptr.tolist(), seq_ptr.tolist()
    (['b', 'a'], [0, 1, 1], [1.0, 1.0, 2.0], [0, 2, 2, 3], [0, 2, 3])
    """
    import numpy as np

    from .dataset import unit_values

    if X.__class__ is not list or not X or not all(map(_plain_sequence_type, set(map(type, X)))):
        return None
    parts = []
    lo = 0
    while lo < len(X):
        hi, n_tok = lo, 0
        while hi < len(X) and n_tok < BULK_TOKENS:
            n_tok += len(X[hi])
            hi += 1
        part = _encode_bulk_part(X[lo:hi], vocab, grow)
        if part is None:
            if lo == 0:
                return None
            # (the rest the general way, after the vocabulary grown so far: as if all of X
            # had gone that way)
            parts.append(encode_sequences(X[lo:], vocab, grow, sep, first=lo))
            break
        parts.append(part)
        lo = hi
    if len(parts) == 1:
        return parts[0]
    seq_ptr, uni_ptr, ids, vals = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)], [], []
    for sp, up, i, v in parts:
        seq_ptr.append(sp[1:] + seq_ptr[-1][-1])
        uni_ptr.append(up[1:] + uni_ptr[-1][-1])
        ids.append(i)
        vals.append(v)
    ids = np.concatenate(ids)
    from .dataset import is_unit
    values = unit_values(len(ids)) if all(map(is_unit, vals)) else np.concatenate(vals)
    return np.concatenate(seq_ptr), np.concatenate(uni_ptr), ids, values


def _encode_bulk_part(X, vocab, grow):
    """:func:`encode_bulk` of a part of the sequences (None, having changed nothing, when
    the part is not in its format)."""
    import numpy as np

    from .dataset import unit_values

    seq_len = list(map(len, X))
    if 0 in seq_len:
        return None
    tokens = list(chain.from_iterable(X))
    kinds = set(map(type, tokens))
    if kinds != _DICT:
        return None
    vals = list(chain.from_iterable(map(dict.values, tokens)))
    if not set(map(type, vals)) <= _FLOAT:
        return None
    if vals.count(1.0) == len(vals):        # (floats all 1: binary attributes)
        vals = None
    else:
        vals = np.array(vals, dtype=np.float64)
        if not np.isfinite(vals).all():
            return None
    keys = list(chain.from_iterable(tokens))
    tok_len = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    if vals is not None and not vals.all():
        # value 0: dropped (not even added to the vocabulary)
        keep = vals != 0
        keys = list(compress(keys, keep.tolist()))
        vals = vals[keep]
        tok_len = np.bincount(np.repeat(np.arange(len(tokens)), tok_len)[keep], minlength=len(tokens))
    # one hash lookup an entry: each distinct key's first entry (``seen``, in order of
    # first occurrence), and per entry the first entry of its key
    seen = {}
    try:
        first_of = np.fromiter(map(seen.setdefault, keys, count()), dtype=np.int64, count=len(keys))
    except TypeError:                       # an unhashable item: the general path says which
        return None
    distinct = list(seen)
    if not set(map(type, distinct)) <= _STR:
        return None
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.fromiter(seen.values(), dtype=np.int64, count=len(seen))] = np.arange(len(seen))
    local = rank[first_of]                  # per entry, its key's rank among the distinct ones
    del rank, first_of, seen
    mapping = vocab.mapping
    n0 = len(vocab)
    if grow and not n0:
        vocab.add_new(distinct)
        ids = local
    else:
        table = np.fromiter(map(mapping.get, distinct, repeat(-1, len(distinct))), dtype=np.int64,
                            count=len(distinct))
        unknown = table < 0
        if grow and unknown.any():          # new attributes: in order of first occurrence
            start = vocab.add_new(list(compress(distinct, unknown.tolist())))
            table[unknown] = np.arange(start, len(vocab))
        ids = table[local]
        if not grow and unknown.any():      # unknown attributes: skipped
            known = ids >= 0
            tok_len = np.bincount(np.repeat(np.arange(len(tokens)), tok_len)[known], minlength=len(tokens))
            ids = ids[known]
            if vals is not None:
                vals = vals[known]
    uni_ptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(tok_len, out=uni_ptr[1:])
    seq_ptr = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(seq_len, out=seq_ptr[1:])
    values = unit_values(len(ids)) if vals is None or (vals == 1.0).all() else vals
    return seq_ptr, uni_ptr, ids.astype(np.int32), values


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
                if not set(map(type, new)) <= _STR:
                    return 0
                vocab.add_new(new)
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
    if seq.__class__ is list and seq and set(map(type, seq)) == _LIST:
        # attribute lists (CRFsuite's format): the whole sequence at C speed
        flat = list(chain.from_iterable(seq))
        if set(map(type, flat)) <= _STR:
            return [0, *accumulate(map(len, seq))], list(map(get, flat, repeat(UNKNOWN, len(flat)))), None
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
            # (a known attribute is a key of the vocabulary, a string: only the unknown
            # ones are checked)
            try:
                found = list(map(get, tok))
            except TypeError:                   # an unhashable item: the long way says which
                found = None
            if found is not None and None in found:
                if set(map(type, tok)) <= _STR:
                    found = [UNKNOWN if i is None else i for i in found]
                else:
                    found = None
            fast = found is not None
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
