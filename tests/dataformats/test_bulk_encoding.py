"""The bulk encoding of ``ItemSequence``-style dicts (``featuredicts.encode_bulk``)
against the per-item encoding (``encode_sequences``): the same arrays, the same
vocabulary in the same order, the same errors for bad input; the per-sequence path of
attribute lists numbering new attributes as before; ``attribute_list_items`` against
``token_attributes``; ``encode_known``'s whole-sequence path against its per-token
path."""

import math
import random

import numpy as np
import pytest

from spargel.data import featuredicts as F
from spargel.data.dataset import is_unit
from spargel.data.vocab import Vocabulary


def _names(rng, n):
    pool = [f"w={rng.choice('abcdefgh')}{rng.choice('xyz')}" for _ in range(12)]
    pool += ["bias", "-1:pos=NN", "+1:pos=DT", "word.istitle=True", "ç=é"]
    return [rng.choice(pool) for _ in range(n)]


def _lists(rng, n_seq, dup=True):
    out = []
    for _ in range(n_seq):
        seq = []
        for _ in range(rng.randint(1, 6)):
            tok = _names(rng, rng.randint(0, 7))
            if not dup:
                tok = list(dict.fromkeys(tok))
            seq.append(tok)
        out.append(seq)
    return out


def _dicts(rng, n_seq, values=(1.0,)):
    return [[{k: rng.choice(values) for k in tok} for tok in seq] for seq in _lists(rng, n_seq)]


def _same(a, b):
    (sa, ua, ia, va), (sb, ub, ib, vb) = a, b
    assert np.array_equal(sa, sb) and np.array_equal(ua, ub) and np.array_equal(ia, ib)
    assert ia.dtype == ib.dtype == np.int32 and sa.dtype == ua.dtype == np.int64
    assert is_unit(va) == is_unit(vb)
    assert np.array_equal(np.asarray(va), np.asarray(vb))


def _both(X, grow=True, start=(), sep="="):
    """(bulk result, bulk vocab), (per-item result, per-item vocab) from a vocabulary
    holding ``start``."""
    v1, v2 = Vocabulary(start), Vocabulary(start)
    bulk = F.encode_bulk(X, v1, grow, sep)
    assert bulk is not None
    return (bulk, v1), (F.encode_sequences(X, v2, grow, sep), v2)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["dicts", "weighted"])
@pytest.mark.parametrize("part_tokens", [1 << 13, 3])
def test_bulk_equals_the_per_item_encoding(seed, kind, part_tokens, monkeypatch):
    monkeypatch.setattr(F, "BULK_TOKENS", part_tokens)     # 3: many parts, each after the last
    rng = random.Random(seed)
    X = _dicts(rng, 40, (1.0,) if kind == "dicts" else (1.0, 0.0, 2.5, -1.0))
    for start in ((), ["bias", "zz"]):
        (bulk, v1), (ref, v2) = _both(X, True, start)
        _same(bulk, ref)
        assert v1.names == v2.names
        # prediction: over the grown vocabulary, and over a smaller one (unknowns skipped)
        for vocab in (v1, Vocabulary(v1.names[::3])):
            _same(F.encode_bulk(X, vocab, False), F.encode_sequences(X, vocab, False))


def test_dicts_are_numbered_by_first_occurrence_attribute_lists_sorted_per_sequence():
    v = Vocabulary()
    F.encode_bulk([[{"b": 1.0, "a": 1.0}, {"c": 1.0}], [{"e": 1.0, "d": 0.0}]], v, True)
    assert v.names == ["b", "a", "c", "e"]           # (a value 0 adds nothing)
    v = Vocabulary(["z"])
    _, uni_ptr, ids, _ = F.encode_sequences([[["b", "a"], ["c", "a", "z", "a"]], [["e", "d", "b"]]], v, True)
    assert v.names == ["z", "a", "b", "c", "d", "e"]
    assert ids.tolist() == [2, 1, 3, 1, 0, 1, 5, 4, 2] and uni_ptr.tolist() == [0, 2, 6, 9]


@pytest.mark.parametrize("X", [
    [[{"w": "the"}]],                           # a string value: the split path
    [[{"w": {"pos": "DT"}}]],                   # nested
    [[{b"w": 1.0}]],                            # a bytes key
    [[{"n": 2}]],                               # an int value
    [[{"b": True}]],                            # a bool value
    [[("a", "b")]],                             # a tuple token
    [[["a", "b"]], [["c"]]],                    # attribute lists (read fast per sequence)
    [[["a", ("b", 2.0)]]],                      # a (name, value) pair
    [[["a", b"b"]]],                            # bytes
    [[["a"]], [{"a": 1.0}]],                    # two formats
    [[["a"]], []],                              # an empty sequence
    [[{"a": 1.0}], [{"b": 1.0}, ["c"]]],        # mixed tokens
    "abc", [], ([["a"]],),
])
def test_other_formats_take_the_general_path(X):
    v = Vocabulary()
    assert F.encode_bulk(X, v, True) is None
    assert len(v) == 0                          # nothing changed


@pytest.mark.parametrize("bad, error", [
    ([[{"a": 1.0}], [{"b": math.nan}]], ValueError),
    ([[{"a": math.nan}]], ValueError),
    ([[{"a": math.inf}]], ValueError),
    ([[["a", ["b"]]]], TypeError),              # unhashable
    ([[["a", 3]]], TypeError),
    ([[["a"]], []], ValueError),                # empty
])
def test_bad_input_gets_the_per_item_errors_naming_the_place(bad, error):
    from spargel import CRF
    with pytest.raises(error) as bulk_err:
        CRF(max_iterations=1).fit(bad, [["X"] * len(s) for s in bad])
    with pytest.raises(error) as ref_err:
        F.encode_sequences(bad, Vocabulary(), True)
    assert str(bulk_err.value) == str(ref_err.value)


def test_a_bad_sequence_in_a_later_part_is_named_by_its_own_number(monkeypatch):
    monkeypatch.setattr(F, "BULK_TOKENS", 2)
    X = [[{"a": 1.0}, {"b": 1.0}], [{"c": 1.0}], [{"d": 1.0}, {"e": 1.0, "f": math.nan}]]
    v = Vocabulary()
    with pytest.raises(ValueError, match="sequence 2, token 1"):
        F.encode_bulk(X, v, True)
    good = [[{"a": 1.0}, {"b": 1.0}], [{"c": 2.0}], [{"d": 1.0}, {"e": 1.0}], [{"w": "x"}]]   # the last part the general way
    (bulk, v1), (ref, v2) = _both(good)
    _same(bulk, ref)
    assert v1.names == v2.names


def test_add_new_keeps_the_split_index_right():
    v = Vocabulary(["k=a"])
    v.split_index("=")
    assert v.add_new(["k=b", "j=c"]) == 1
    assert v.names == ["k=a", "k=b", "j=c"] and v.id("j=c") == 2
    assert v.split_index("=") == {"k": {"a": 0, "b": 1}, "j": {"c": 2}}


def test_subset_and_permute_keep_names_and_ids_together():
    v = Vocabulary(["a", "b", "c", "d"])
    w = v.subset([3, 1])
    assert w.names == ["d", "b"] and w.id("b") == 1 and w.id("a") == -1
    assert v.subset([1, 1]).names == ["b"]
    v.permute([2, 0, 3, 1])
    assert v.names == ["c", "a", "d", "b"] and [v.id(n) for n in "abcd"] == [1, 3, 0, 2]


@pytest.mark.parametrize("seed", range(4))
def test_attribute_list_items_equal_token_attributes(seed):
    rng = random.Random(seed)
    for seq in _lists(rng, 20):
        for form in (seq, tuple(seq), [tuple(t) for t in seq]):
            want = [dict(F.token_attributes(t)) for t in form]
            got = F.attribute_list_items(form)
            assert got == want
            assert [list(d) for d in got] == [list(d) for d in want]      # the order too
    for other in ([], [{"a": "b"}], [["a", b"b"]], [["a", ("b", 1.0)]], "ab", [["a"], "b"], iter([["a"]])):
        assert F.attribute_list_items(other) is None


@pytest.mark.parametrize("seed", range(4))
def test_encode_known_reads_a_list_sequence_as_token_by_token(seed):
    rng = random.Random(seed)
    vocab = Vocabulary(_names(rng, 30))
    for seq in _lists(rng, 30):
        fast = F.encode_known(seq, vocab)
        slow = F.encode_known(seq + [{"bias": 1.0}], vocab)     # a dict token: token by token
        assert fast[0] == slow[0][:-1] and fast[1] == slow[1][:len(fast[1])] and fast[2] is None
    with pytest.raises(TypeError, match="token 1"):
        F.encode_known([["a"], ["b", 3]], vocab)
