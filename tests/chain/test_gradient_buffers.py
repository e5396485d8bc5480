"""The chain CRF hands out its gradient as an array of the caller's, and takes one back
for a later gradient only once the caller has let go of it: a gradient still held keeps
its values, and a reused one holds the same values as a fresh model's gradient."""

import numpy as np
import pytest

from spargel.chain.crf import ChainCRF

from crf_reference import random_data, random_space


@pytest.mark.parametrize("kind, n_labels", [("full", 3), ("full", 8), ("observed", 4)])
def test_gradients_are_reused_only_after_the_caller_drops_them(kind, n_labels):
    rng = np.random.default_rng(n_labels)
    data = random_data(rng, n_seq=12, max_len=6, n_labels=n_labels, n_uni=9, n_big=3)
    space = random_space(rng, data, kind, n_labels, 9, 3, True)
    model = ChainCRF(space, data)
    w1, w2 = rng.normal(size=(2, model.n_params))
    _, g1 = model.loss_grad(w1)
    kept = g1.copy()
    _, g2 = model.loss_grad(w2)
    assert g2 is not g1 and np.array_equal(g1, kept)          # g1 is held: untouched
    first = id(g1)
    del g1
    _, g3 = model.loss_grad(w1)
    assert id(g3) == first                                      # dropped: taken back
    assert np.array_equal(g3, kept)
    _, fresh = ChainCRF(space, data).loss_grad(w2)
    assert np.array_equal(g2, fresh)
    view = g3[:5]                                               # a view holds it too
    del g3
    _, g4 = model.loss_grad(w2)
    assert id(g4) != first and np.array_equal(g4, fresh)
    assert np.array_equal(view, kept[:5])
