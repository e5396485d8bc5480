"""The memory-lean data path: streamed reading and encoding give the same ids, data and
models as the in-memory path, the chunked builders match plain reference
computations, and the reading progress line appears when (and only when) asked for."""

import io
import itertools
import random
import sys

import numpy as np
import pytest

from spargel.chain import crf as crf_mod
from spargel.chain.estimator import CRF
from spargel.cli import main
from spargel.data import feature_space as fs_mod
from spargel.data import dataset as dataset_mod
from spargel.data import progress
from spargel.data import featuredicts
from spargel.data.conll import read_conll
from spargel.data.templates import Template
from spargel.data import vocab as vocab_mod

TEMPLATE = """\
U00:w[-1]=%x[-1,0]
U01:w[0]=%x[0,0]
U02:w[1]=%x[1,0]
U03:p[0]=%x[0,1]
U04:p[-1]|p[0]=%x[-1,1]|%x[0,1]
B
"""

_WORDS = {"D": ["the", "a", "this"], "J": ["big", "red", "old"], "N": ["dog", "cat", "car", "man"],
          "V": ["sees", "likes"], "P": ["in", "on"]}


def corpus(n, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        toks = [("D", "B-NP")] + [("J", "I-NP")] * rng.randint(0, 2) + [("N", "I-NP"), ("V", "B-VP")]
        if rng.random() < 0.5:
            toks += [("P", "B-PP"), ("D", "B-NP"), ("N", "I-NP")]
        out.append([(rng.choice(_WORDS[p]), p, t) for p, t in toks])
    return out


def write(path, sents):
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            fh.write("".join(" ".join(t) + "\n" for t in s) + "\n")
    return path


def dicts(sent):
    return [{"w": w, "p": p, "prev": sent[i - 1][0] if i else "<s>", "len": float(len(w)), "cap": i == 0}
            for i, (w, p, _) in enumerate(sent)]


# ---------------------------------------------------------------------------------------
# ids: the same as a plain reference, whatever the chunk sizes
# ---------------------------------------------------------------------------------------

def _reference_ids(rows):
    """Attribute ids as the estimator promises them: most frequent first, ties in
    order of first appearance."""
    first, counts = {}, {}
    for toks in rows:
        for feats in toks:
            for name in feats:
                first.setdefault(name, len(first))
                counts[name] = counts.get(name, 0) + 1
    names = sorted(first, key=lambda a: (-counts[a], first[a]))
    index = {a: i for i, a in enumerate(names)}
    return names, [index[a] for toks in rows for feats in toks for a in feats]


def test_template_ids_match_reference(monkeypatch):
    sents = corpus(60, seed=1)
    cols = [[[w, p] for w, p, _ in s] for s in sents]
    tpl = Template.parse(TEMPLATE)
    rows = [tpl.extract(c, pad=False)[0] for c in cols]
    names, ids = _reference_ids(rows)
    for chunk in (7, 1 << 22):
        monkeypatch.setattr(vocab_mod, "REMAP_CHUNK", chunk)
        monkeypatch.setattr(dataset_mod, "COUNT_CHUNK", chunk)
        est = CRF(template=TEMPLATE, pad=False)
        data = est._dataset(cols, [[t for _, _, t in s] for s in sents], grow=True)
        assert est._uni_vocab.names == names
        assert data.uni_ids.tolist() == ids
        assert data.uni_ptr.tolist() == np.cumsum([0] + [len(f) for r in rows for f in r]).tolist()


def test_feature_dict_ids_match_reference(monkeypatch):
    sents = corpus(50, seed=2)
    X = [dicts(s) for s in sents]
    rows = [[[n for n, v in featuredicts.token_attributes(t, sep=":") if v != 0] for t in x] for x in X]
    names, ids = _reference_ids(rows)
    vals = [v for x in X for t in x for _, v in featuredicts.token_attributes(t, sep=":") if v != 0]
    for flush in (3, 1 << 16):
        monkeypatch.setattr(featuredicts, "FLUSH_ENTRIES", flush)
        est = CRF()
        data = est._dataset(X, [[t for _, _, t in s] for s in sents], grow=True)
        assert est._uni_vocab.names == names
        assert data.uni_ids.tolist() == ids
        assert data.uni_vals.tolist() == vals
        assert data.seq_ptr.tolist() == np.cumsum([0] + [len(s) for s in sents]).tolist()


def test_seen_pairs_match_brute_force(monkeypatch):
    rng = np.random.default_rng(0)
    n_tok, n_rows = 300, 40
    ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 5, n_tok))]).astype(np.int64)
    ids = rng.integers(0, n_rows, ptr[-1]).astype(np.int32)
    for n_cols in (7, 1 << 27):                 # the bitmap and the sorting branch
        col = rng.integers(-1, min(n_cols, 9), n_tok)
        expect = [sorted({int(col[t]) for t in range(n_tok) for j in range(ptr[t], ptr[t + 1])
                          if ids[j] == r and col[t] >= 0}) for r in range(n_rows)]
        for chunk in (11, 1 << 18):
            monkeypatch.setattr(fs_mod, "SEEN_CHUNK", chunk)
            out_ptr, cols = fs_mod._seen_csr(ptr, ids, col, n_rows, n_cols)
            assert [cols[out_ptr[r]:out_ptr[r + 1]].tolist() for r in range(n_rows)] == expect


@pytest.mark.parametrize("binary", [True, False])
def test_token_lists_match_reference(monkeypatch, binary):
    sents = corpus(40, seed=3)
    cols = [[[w, p] for w, p, _ in s] for s in sents]
    est = CRF(template=TEMPLATE, pad=False)
    data = est._dataset(cols, [[t for _, _, t in s] for s in sents], grow=True)
    if not binary:
        data.uni_vals = np.random.default_rng(1).random(len(data.uni_vals))
    space = est._feature_space(data)
    sizes = np.diff(space.u_ptr)
    drow = np.full(len(sizes), -1, np.int32)
    dense = np.flatnonzero(sizes >= 2)
    drow[dense] = np.arange(len(dense))
    # reference: per token, loop over its attributes
    dr, dv, ek, ev, dcount, ecount = [], [], [], [], [], []
    for t in range(data.n_tokens):
        nd = ne = 0
        for j in range(data.uni_ptr[t], data.uni_ptr[t + 1]):
            a, x = data.uni_ids[j], data.uni_vals[j]
            if drow[a] >= 0:
                dr.append(drow[a]), dv.append(x)
                nd += 1
            else:
                ks = list(range(space.u_ptr[a], space.u_ptr[a + 1]))
                ek += ks
                ev += [x] * len(ks)
                ne += len(ks)
        dcount.append(nd), ecount.append(ne)
    for chunk in (5, 1 << 16):
        monkeypatch.setattr(crf_mod, "TOKEN_CHUNK", chunk)
        dptr, drows, dval, eptr, k, evals, el = crf_mod.token_lists(space, data, drow, binary)
        assert dptr.tolist() == np.cumsum([0] + dcount).tolist()
        assert eptr.tolist() == np.cumsum([0] + ecount).tolist()
        assert drows.tolist() == dr and k.tolist() == ek
        assert el.tolist() == space.u_lab[ek].tolist()
        if binary:
            assert len(dval) == 0 and len(evals) == 0
        else:
            assert dval.tolist() == dv and evals.tolist() == ev


# ---------------------------------------------------------------------------------------
# streaming: the same data and the same model as the in-memory path
# ---------------------------------------------------------------------------------------

def test_streamed_dataset_equals_list(tmp_path):
    path = write(tmp_path / "train.txt", corpus(80, seed=4))
    sents = list(read_conll(path))
    a, b = CRF(template=TEMPLATE, pad=False), CRF(template=TEMPLATE, pad=False)
    d1 = a._dataset(sents, [s.labels for s in sents], grow=True)
    xs, ys = itertools.tee(read_conll(path))
    d2 = b._dataset(xs, (s.labels for s in ys), grow=True)
    for field in ("seq_ptr", "uni_ptr", "uni_ids", "uni_vals", "big_ptr", "big_ids", "labels"):
        assert np.array_equal(getattr(d1, field), getattr(d2, field)), field
    assert a._uni_vocab.names == b._uni_vocab.names and a._label_vocab.names == b._label_vocab.names


def test_fit_on_iterators_equals_fit_on_lists():
    sents = corpus(70, seed=5)
    X = [dicts(s) for s in sents]
    y = [[t for _, _, t in s] for s in sents]
    kw = dict(algorithm="lbfgs", c1=0.0, c2=0.5, max_iterations=15)
    a = CRF(**kw).fit(X, y)
    b = CRF(**kw).fit((dicts(s) for s in sents), iter(y))
    assert a.attributes_ == b.attributes_ and a.classes_ == b.classes_
    assert np.array_equal(a.weights_, b.weights_)
    with pytest.raises(ValueError, match="label"):
        CRF(**kw).fit((dicts(s) for s in sents), iter(y[:-1]))


def test_streamed_cli_model_equals_in_memory(tmp_path, monkeypatch, capsys):
    """``spargel train FILE`` (streamed) and ``spargel train -`` (standard input, read
    whole) write the same model."""
    from spargel.chain.estimator import CRF as Est

    train = write(tmp_path / "train.txt", corpus(90, seed=6))
    argv = ["train", "--quiet", "--l1", "0.1", "--max-iter", "25", "--unknown-label", "?"]
    assert main([*argv, str(train), str(tmp_path / "a.model")]) == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(train.read_bytes()), encoding="utf-8"))
    assert main([*argv, "-", str(tmp_path / "b.model")]) == 0
    a, b = Est.load(tmp_path / "a.model"), Est.load(tmp_path / "b.model")
    assert a.attributes_ == b.attributes_ and a.classes_ == b.classes_
    assert np.array_equal(a.weights_, b.weights_)


def test_streamed_cli_checks_labels_before_training(tmp_path, capsys):
    train = tmp_path / "one.txt"
    train.write_text("a X L\nb Y L\n\nc X L\n")
    rc = main(["train", str(train), str(tmp_path / "m.model")])
    err = capsys.readouterr().err
    assert rc != 0 and "only one distinct label" in err and "iter" not in err
    assert not (tmp_path / "m.model").exists()


# ---------------------------------------------------------------------------------------
# the progress line
# ---------------------------------------------------------------------------------------

def test_progress_is_throttled():
    out = io.StringIO()
    p = progress.ReadProgress("reading", stream=out, interval=3600)
    for i in range(1, 1000):
        p.update(i, 10 * i)
    assert out.getvalue() == ""
    p = progress.ReadProgress("reading", total_bytes=2_000_000, stream=out, interval=0)
    p.update(3, 30, 1_000_000)
    line = out.getvalue().strip()
    assert line.startswith("reading: 3 sequences, 30 tokens, 1.0 MB of 2.0 MB (50%), ") and "MB/s" in line


def test_cli_progress_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    train = write(tmp_path / "train.txt", corpus(30, seed=7))
    size = train.stat().st_size
    assert main(["train", "--max-iter", "3", str(train), str(tmp_path / "m.model")]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith(f"spargel train: reading {train}: ")]
    assert len(lines) >= 2
    assert lines[-1].split(": ", 2)[2].startswith(f"30 sequences, {sum(len(s) for s in corpus(30, seed=7))} tokens, "
                                                   f"{size / 1e6:.1f} MB of {size / 1e6:.1f} MB (100%)")
    # before the first iteration
    assert err.index(lines[-1]) < err.index("iter    1")
    assert main(["train", "--quiet", "--max-iter", "3", str(train), str(tmp_path / "m2.model")]) == 0
    assert capsys.readouterr().err == ""


def test_api_progress_only_when_verbose(monkeypatch, capsys):
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    sents = corpus(20, seed=8)
    X, y = [dicts(s) for s in sents], [[t for _, _, t in s] for s in sents]
    CRF(max_iterations=2).fit(X, y)
    assert capsys.readouterr().err == ""
    CRF(max_iterations=2, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("reading: ")]
    assert lines and lines[-1].startswith(f"reading: 20 sequences, {sum(map(len, sents))} tokens, ")
    CRF(template=TEMPLATE, max_iterations=2, verbose=True).fit([[[w, p] for w, p, _ in s] for s in sents], y)
    assert "reading: 20 sequences" in capsys.readouterr().err
