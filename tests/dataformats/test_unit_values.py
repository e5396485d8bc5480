"""Binary attributes store no values: the builders keep ``uni_vals`` as a zero-memory
view of ones until a value differs from 1 (then the ones before it are filled in), the
kernels read 1 for an empty value array, and every trainer gives the same weights on
such data as on the same data with its ones stored."""

import random
import tracemalloc

import numpy as np
import pytest

from spargel.chain import crf as crf_mod
from spargel.chain.estimator import CRF
from spargel.chain.kernel_data import data_tuple
from spargel.data import dataset as dataset_mod
from spargel.data import featuredicts
from spargel.data.dataset import build_dataset, compact_values, is_unit, unit_values
from spargel.data.vocab import Vocabulary


def corpus(n, seed=0, n_labels=3):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(12)]
    X, y = [], []
    for _ in range(n):
        m = rng.randint(2, 6)
        ws = [rng.choice(words) for _ in range(m)]
        X.append([{"w": w, "prev=" + (ws[i - 1] if i else "<s>"): 1, "first": i == 0, "one": 1.0}
                  for i, w in enumerate(ws)])
        y.append([f"L{(int(w[1:]) + i) % n_labels}" for i, w in enumerate(ws)])
    return X, y


def test_unit_values_read_as_ones_and_take_no_memory():
    v = unit_values(5)
    assert is_unit(v) and v.tolist() == [1.0] * 5 and v.flags.writeable is False
    assert v[1:4].tolist() == [1.0] * 3 and is_unit(v[1:4])
    assert not is_unit(np.ones(5)) and not is_unit(np.full(5, 2.0)[::1])
    assert is_unit(compact_values(np.ones(3_000_000)))          # chunked check, all ones
    x = np.ones(3_000_000)
    x[-1] = 0.5
    assert compact_values(x) is x
    tracemalloc.start()
    unit_values(50_000_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100_000


@pytest.mark.parametrize("first_real", [None, 0, 37, 999])
def test_template_builder_backfills_ones_before_the_first_real_value(first_real):
    rng = np.random.default_rng(3)
    seqs, expect = [], []
    k = 0
    for _ in range(40):
        toks = []
        for _ in range(int(rng.integers(1, 5))):
            feats = []
            for a in rng.choice(20, size=int(rng.integers(1, 4)), replace=False):
                v = 1.0 if first_real is None or k < first_real else float(rng.choice([1.0, 0.5, -2.0]))
                feats.append((f"a{a}", v))
                expect.append(v)
                k += 1
            toks.append(feats)
        seqs.append((toks, None))
    data = build_dataset(seqs, Vocabulary(), Vocabulary(), grow=True)
    assert data.uni_vals.tolist() == expect
    assert is_unit(data.uni_vals) == (first_real is None or first_real >= k or set(expect) == {1.0})
    # plain attribute strings are ones too
    plain = build_dataset([([["a", "b"], ["c"]], None)], Vocabulary(), Vocabulary(), grow=True)
    assert is_unit(plain.uni_vals) and len(plain.uni_vals) == 3


@pytest.mark.parametrize("flush", [1, 7, 1 << 16])
@pytest.mark.parametrize("real_at", [None, 0, 5, 60])
def test_feature_dicts_keep_no_values_until_one_differs(monkeypatch, flush, real_at):
    monkeypatch.setattr(featuredicts, "FLUSH_ENTRIES", flush)
    X, _ = corpus(30, seed=1)
    if real_at is not None:
        s = real_at % len(X)
        X[s][0]["one"] = 0.25
    vocab = Vocabulary()
    seq_ptr, uni_ptr, ids, vals = featuredicts.encode_sequences(X, vocab, True)
    expect = []
    for seq in X:
        for tok in seq:
            for key, v in tok.items():
                if v is False or v == 0:
                    continue
                expect.append(1.0 if isinstance(v, str) else float(v))     # str: a name=value attribute
    assert vals.tolist() == expect
    assert is_unit(vals) == (real_at is None)


def data_pair(X, y, **kw):
    """The training set of ``CRF(**kw)`` on ``X, y`` as built (ones not stored) and the
    same set with its ones stored."""
    est = CRF(**kw)
    data = est._dataset(X, y, grow=True)
    assert is_unit(data.uni_vals)
    stored = dataset_mod.SequenceData(data.seq_ptr, data.uni_ptr, data.uni_ids, np.ones(len(data.uni_ids)),
                                      data.big_ptr, data.big_ids, data.big_vals, data.labels)
    return est, data, stored


def test_kernels_read_ones_for_an_empty_value_array():
    X, y = corpus(25, seed=2)
    est, data, stored = data_pair(X, y)
    assert len(data_tuple(data).uni_vals) == 0 and len(data_tuple(stored).uni_vals) == len(data.uni_ids)
    space = est._feature_space(data)
    w = np.random.default_rng(0).normal(size=space.n_params)
    a = crf_mod.ChainCRF(space, data).loss_grad(w)
    b = crf_mod.ChainCRF(space, stored).loss_grad(w)
    assert a[0] == b[0] and np.array_equal(a[1], b[1])


SOLVERS = [dict(algorithm="lbfgs", c2=0.1, max_iterations=8),
           dict(algorithm="l2sgd", c2=0.1, max_iterations=3, random_state=0),
           dict(algorithm="ap", max_iterations=3, random_state=0),
           dict(algorithm="pa", max_iterations=3, random_state=0),
           dict(solver="sgd-l1", l1=0.05, max_iter=3, random_state=0),
           dict(solver="bcd", l1=0.05, max_iter=3),
           dict(algorithm="lbfgs", c2=0.1, max_iterations=6, order=2),
           dict(solver="sgd-l1", l1=0.05, max_iter=3, random_state=0, order=2)]


@pytest.mark.parametrize("kw", SOLVERS, ids=lambda kw: f"{kw.get('algorithm', kw.get('solver'))}-{kw.get('order', 1)}")
def test_every_trainer_gives_the_same_weights_with_ones_stored_or_not(monkeypatch, kw):
    import warnings

    X, y = corpus(30, seed=4)
    monkeypatch.setattr(warnings, "filters", list(warnings.filters))   # restored after the test
    warnings.simplefilter("ignore")                     # few iterations: convergence warnings
    a = CRF(**kw).fit(X, y)
    # the same training with every builder storing its ones
    monkeypatch.setattr(dataset_mod, "unit_values", lambda n: np.ones(int(n)))
    b = CRF(**kw).fit(X, y)
    assert np.array_equal(a.weights_, b.weights_)
    assert a.predict(X[:5]) == b.predict(X[:5])


def test_many_labels_use_wide_label_lists():
    """Up to 256 labels the padded view keeps one byte per label entry; more labels take
    int32 entries, with the same losses and gradients (finite differences)."""
    assert crf_mod.label_dtype(256) == np.uint8 and crf_mod.label_dtype(257) == np.int32
    X, y = corpus(120, seed=5)
    tokens = iter(range(10 ** 6))
    y = [[f"L{next(tokens) % 300}" for _ in s] for s in y]
    est = CRF()
    data = est._dataset(X, y, grow=True)
    space = est._feature_space(data)
    model = crf_mod.ChainCRF(space, data)
    assert space.n_labels > 256 and model.view.aux.el.dtype == np.int32
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.3, size=space.n_params)
    _, g = model.loss_grad(w)
    for k in rng.choice(space.n_params, size=6, replace=False):
        e = np.zeros_like(w)
        e[k] = 1e-6
        fd = (model.loss_grad(w + e)[0] - model.loss_grad(w - e)[0]) / 2e-6
        assert abs(fd - g[k]) < 1e-5 * max(1.0, abs(g[k]))


def test_pickled_datasets_keep_their_ones_unstored():
    import pickle

    X, y = corpus(10, seed=6)
    _, data, stored = data_pair(X, y)
    back = pickle.loads(pickle.dumps(data))
    assert is_unit(back.uni_vals) and len(back.uni_vals) == len(data.uni_ids)
    for f in ("seq_ptr", "uni_ptr", "uni_ids", "big_ptr", "big_ids", "big_vals", "labels"):
        assert np.array_equal(getattr(back, f), getattr(data, f))
    assert len(pickle.dumps(data)) < len(pickle.dumps(stored)) - 7 * len(data.uni_ids)
    assert np.array_equal(pickle.loads(pickle.dumps(stored)).uni_vals, stored.uni_vals)


@pytest.mark.parametrize("first_big", [None, 0, 9])
def test_token_offsets_are_kept_once_a_token_has_an_attribute(first_big):
    rng = np.random.default_rng(7)
    seqs, counts, t = [], [], 0
    for _ in range(6):
        uni, big = [], []
        for _ in range(int(rng.integers(1, 4))):
            uni.append(["u"])
            m = 0 if first_big is None or t < first_big else int(rng.integers(0, 3))
            big.append([f"b{j}" for j in range(m)])
            counts.append(m)
            t += 1
        seqs.append((uni, big))
    data = build_dataset(seqs, Vocabulary(), Vocabulary(), grow=True)
    assert data.big_ptr.dtype == np.int64 and data.big_ptr.tolist() == np.cumsum([0] + counts).tolist()
    assert data.uni_ptr.tolist() == list(range(t + 1))
