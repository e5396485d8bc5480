"""``build_dataset`` adds a sequence's attributes at once where it can: the same arrays
and vocabulary ids as token by token, on random sequences that mix every case (names,
(name, value) pairs, tokens without attributes, None rows, unknown names with and
without growing the vocabulary)."""

import random

import numpy as np
import pytest

from spargel.data import dataset
from spargel.data.vocab import Vocabulary

NAMES = [f"f{i}" for i in range(40)]


def _token(rng):
    k = rng.choice([0, 0, 1, 2, 3])
    if rng.random() < 0.1:
        return [(rng.choice(NAMES), rng.choice([1.0, 2.5])) for _ in range(k)]
    return [rng.choice(NAMES) for _ in range(k)] if k or rng.random() < 0.5 else None


def _sequences(rng):
    out = []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(1, 5)
        out.append(([_token(rng) for _ in range(n)], None if rng.random() < 0.5 else [_token(rng) for _ in range(n)]))
    return out


def _build(seqs, grow, known, by_token):
    uni, big = dataset._CSRBuilder(), dataset._CSRBuilder()
    uv, bv = Vocabulary(known), Vocabulary(known[:5])
    for u, b in seqs:
        if by_token:
            for t in range(len(u)):
                uni.add_token(u[t], uv, grow)
                big.add_token(b[t] if b is not None else None, bv, grow)
        else:
            uni.add_sequence(u, len(u), uv, grow)
            big.add_sequence(b, len(u), bv, grow)
    return uni.arrays() + big.arrays(), list(uv.names), list(bv.names)


@pytest.mark.parametrize("seed", range(4))
def test_a_sequence_at_once_equals_token_by_token(seed):
    rng = random.Random(seed)
    for _ in range(100):
        seqs = _sequences(rng)
        grow = rng.random() < 0.7
        known = rng.sample(NAMES, 10)
        arrays, uni, big = _build(seqs, grow, known, by_token=True)
        arrays2, uni2, big2 = _build(seqs, grow, known, by_token=False)
        assert uni == uni2 and big == big2
        for a, b in zip(arrays, arrays2):
            np.testing.assert_array_equal(a, b)


def test_new_names_take_ids_in_order_of_first_occurrence():
    data = dataset.build_dataset([([["b", "a"], ["c", "b"]], None)], Vocabulary(["x"]), Vocabulary(), grow=True)
    np.testing.assert_array_equal(data.uni_ids, [1, 2, 3, 1])
    np.testing.assert_array_equal(data.uni_ptr, [0, 2, 4])
