"""CRFsuite model files: read, written, refused.

The reference is CRFsuite itself: ``data/crfsuite_small.crfsuite`` was written by
python-crfsuite's ``Trainer`` (0.9.x, CRFsuite 0.12) and ``data/crfsuite_small.json``
holds the feature dicts it was given and what python-crfsuite's ``Tagger`` answered for
them (labels, marginals, probability of the labels)."""

import json
import os

import numpy as np
import pytest

from spargel import CRF
from spargel.chain.crfsuite_format import hashlittle, read, read_bytes, to_bytes
from spargel.errors import ModelFileError

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
MODEL = os.path.join(DATA, "crfsuite_small.crfsuite")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(DATA, "crfsuite_small.json"), encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def model_bytes():
    with open(MODEL, "rb") as fh:
        return fh.read()


def test_lookup3_hash_matches_its_published_values():
    # the self-test values of Bob Jenkins' lookup3.c (hashlittle, seed 0)
    assert hashlittle(b"") == 0xDEADBEEF
    assert hashlittle(b"Four score and seven years ago") == 0x17770551


def _lookup3_one(key):
    """lookup3's hashlittle (seed 0) of one key, step by step on Python integers."""
    M = 0xFFFFFFFF

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & M

    n = len(key)
    a = b = c = (0xDEADBEEF + n) & M
    p = 0
    while n > 12:
        a = (a + int.from_bytes(key[p:p + 4], "little")) & M
        b = (b + int.from_bytes(key[p + 4:p + 8], "little")) & M
        c = (c + int.from_bytes(key[p + 8:p + 12], "little")) & M
        a = ((a - c) & M) ^ rot(c, 4); c = (c + b) & M
        b = ((b - a) & M) ^ rot(a, 6); a = (a + c) & M
        c = ((c - b) & M) ^ rot(b, 8); b = (b + a) & M
        a = ((a - c) & M) ^ rot(c, 16); c = (c + b) & M
        b = ((b - a) & M) ^ rot(a, 19); a = (a + c) & M
        c = ((c - b) & M) ^ rot(b, 4); b = (b + a) & M
        n -= 12
        p += 12
    if n == 0:
        return c
    tail = key[p:p + n] + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & M
    b = (b + int.from_bytes(tail[4:8], "little")) & M
    c = (c + int.from_bytes(tail[8:12], "little")) & M
    for x, y, k in (("c", "b", 14), ("a", "c", 11), ("b", "a", 25), ("c", "b", 16), ("a", "c", 4),
                    ("b", "a", 14), ("c", "b", 24)):
        v = {"a": a, "b": b, "c": c}
        r = ((v[x] ^ v[y]) - rot(v[y], k)) & M
        a, b, c = (r if x == "a" else a), (r if x == "b" else b), (r if x == "c" else c)
    return c


def test_lookup3_hashes_of_many_keys_at_once_equal_one_at_a_time():
    """The reader hashes every name of a table at once (uint32 arrays): equal to the
    hash computed key by key, for every length around the 12-byte blocks."""
    from spargel.chain.crfsuite_format import _hashes

    rng = np.random.default_rng(11)
    keys = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in list(range(0, 50)) * 4 + [300, 1025]]
    assert _hashes(keys).tolist() == [_lookup3_one(k) for k in keys]
    assert _lookup3_one(b"Four score and seven years ago") == 0x17770551


def test_opening_a_crfsuite_model_compiles_nothing():
    """python-crfsuite's ``Tagger.open`` reads (and checks) a model without loading numba."""
    import subprocess
    import sys

    code = ("import sys\nfrom spargel import pycrfsuite\n"
            f"t = pycrfsuite.Tagger(); t.open({MODEL!r})\n"
            "print(len(t.labels()), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False", out


def test_reads_a_crfsuite_file_and_tags_as_crfsuite(reference):
    crf = CRF.load(MODEL)
    assert list(crf.classes_) == reference["labels"]
    assert sorted(crf.attributes_) == reference["attributes"]
    X = reference["X"]
    for x, ref in zip(X, reference["reference"]):
        assert crf.predict_single(x) == ref["tags"]
        for got, want in zip(crf.predict_marginals_single(x), ref["marginals"]):
            assert set(got) == set(want)
            for label in want:
                assert abs(got[label] - want[label]) <= 1e-9
        tagger = crf.tagger_
        tagger.set(x)
        assert tagger.probability(ref["tags"]) == pytest.approx(ref["probability_of_tags"], rel=1e-9)


def test_written_bytes_equal_crfsuite_own(model_bytes):
    # reading CRFsuite's file and writing it again gives CRFsuite's bytes exactly
    assert to_bytes(read(MODEL)) == model_bytes


def _tiny_data():
    X = [[{"w": "the", "n": 0.5}, {"w": "dog"}, {"w": "barks", "end": True}],
         [{"w": "a"}, {"w": "cat", "n": 2.0}],
         [{"w": "the"}, {"w": "cat"}, {"w": "sleeps", "end": True}]]
    y = [["D", "N", "V"], ["D", "N"], ["D", "N", "V"]]
    return X, y


def _enumerated_marginals(m, x_attrs):
    """Point marginals of one sequence by enumerating every label sequence, from the
    model's weights alone (no inference code)."""
    import itertools
    L = len(m.labels)
    aid = {a: i for i, a in enumerate(m.attributes)}
    state = np.zeros((len(x_attrs), L))
    for t, attrs in enumerate(x_attrs):
        for name, value in attrs:
            a = aid.get(name)
            if a is None:
                continue
            for k in range(m.u_ptr[a], m.u_ptr[a + 1]):
                state[t, m.u_lab[k]] += value * m.u_w[k]
    trans = np.zeros((L, L))
    trans.flat[m.t_pair] = m.t_w
    marg = np.zeros((len(x_attrs), L))
    total = 0.0
    for path in itertools.product(range(L), repeat=len(x_attrs)):
        s = sum(state[t, y] for t, y in enumerate(path)) + sum(trans[a, b] for a, b in zip(path, path[1:]))
        p = np.exp(s)
        total += p
        for t, y in enumerate(path):
            marg[t, y] += p
    return marg / total


def test_spargel_model_written_as_crfsuite_reads_back_identically(tmp_path):
    X, y = _tiny_data()
    crf = CRF(c1=0.01, c2=0.1, max_iterations=50).fit(X, y)
    path = str(tmp_path / "m.crfsuite")
    crf.save(path, format="crfsuite")
    with open(path, "rb") as fh:
        assert fh.read(4) == b"lCRF"
    m = read(path)
    assert m.labels == list(crf.classes_)
    back = CRF.load(path)
    assert back.state_features_ == crf.state_features_
    assert back.transition_features_ == crf.transition_features_
    assert back.predict(X) == crf.predict(X)
    assert crf.size_ == os.path.getsize(path)
    # marginals of the file's model, by enumeration, match spargel's
    from spargel.data.featuredicts import token_attributes
    for x in X:
        want = _enumerated_marginals(m, [token_attributes(tok, sep=":") for tok in x])
        got = back.predict_marginals_single(x)
        for t in range(len(x)):
            for j, label in enumerate(m.labels):
                assert abs(got[t][label] - want[t, j]) <= 1e-12


def test_the_format_refuses_what_it_cannot_hold(tmp_path):
    X, y = _tiny_data()
    two = CRF(order=2, max_iterations=5).fit(X, y)
    with pytest.raises(ValueError, match="second-order"):
        two.save(str(tmp_path / "a"), format="crfsuite")
    cols = [[["the", "DT"], ["dog", "NN"]], [["a", "DT"], ["cat", "NN"]]]
    tpl = CRF(template="U00:%x[0,0]\nB\nB01:%x[0,1]\n", max_iterations=5).fit(cols, [["D", "N"], ["D", "N"]])
    with pytest.raises(ValueError, match="template"):
        tpl.save(str(tmp_path / "b"), format="crfsuite")
    with pytest.raises(ValueError, match="format must be"):
        CRF(max_iterations=5).fit(X, y).save(str(tmp_path / "c"), format="pickle")
    nul = CRF(c1=0.0, c2=0.1, max_iterations=5).fit([[{"a\0b": 1.0}, {"c": 1.0}]], [["x", "y"]])
    with pytest.raises(ValueError, match="NUL"):
        nul.save(str(tmp_path / "d"), format="crfsuite")
    assert not os.path.exists(str(tmp_path / "d"))


def test_model_filename_is_a_crfsuite_file_and_reads_back(tmp_path):
    X, y = _tiny_data()
    path = str(tmp_path / "sk.crfsuite")
    crf = CRF(model_filename=path, c2=0.1, c1=0.0, max_iterations=50).fit(X, y)
    assert read(path).labels == list(crf.classes_)
    other = CRF(model_filename=path)
    assert other.classes_ == list(crf.classes_)
    assert other.predict(X) == crf.predict(X)


def _check_consistent(m):
    """A file that reads must describe a model that works: consistent arrays, and
    tagging that gives labels and normalised marginals."""
    L, A = len(m.labels), len(m.attributes)
    assert len(set(m.labels)) == L and len(set(m.attributes)) == A
    assert len(m.u_ptr) == A + 1 and m.u_ptr[-1] == len(m.u_lab) == len(m.u_w)
    assert np.all(np.isfinite(m.u_w)) and np.all(np.isfinite(m.t_w))
    again = read_bytes(to_bytes(m))
    assert again.labels == m.labels and again.attributes == m.attributes
    assert np.array_equal(again.u_w, m.u_w) and np.array_equal(again.t_pair, m.t_pair)


def test_fuzz_truncated_and_corrupted_files(model_bytes, reference, tmp_path):
    n = len(model_bytes)
    refused = read_ok = 0
    # every truncation
    for k in range(n):
        with pytest.raises(ModelFileError):
            read_bytes(model_bytes[:k], "truncated")
        refused += 1
    # random corruptions: one to eight bytes replaced at random places
    rng = np.random.default_rng(20261125)
    path = str(tmp_path / "fuzz.crfsuite")
    for trial in range(1500):
        data = bytearray(model_bytes)
        for _ in range(int(rng.integers(1, 9))):
            data[int(rng.integers(0, n))] = int(rng.integers(0, 256))
        try:
            m = read_bytes(bytes(data), "corrupted")
        except ModelFileError:
            refused += 1
            continue
        read_ok += 1
        _check_consistent(m)
        if trial % 10 == 0:                    # tag with some of the readable ones
            with open(path, "wb") as fh:
                fh.write(bytes(data))
            crf = CRF.load(path)
            for x in reference["X"]:
                marg = crf.predict_marginals_single(x)
                assert len(crf.predict_single(x)) == len(x)
                assert all(abs(sum(row.values()) - 1.0) < 1e-9 for row in marg)
    assert refused > n and read_ok > 0        # both outcomes happen


def test_unreadable_paths_are_model_file_errors(tmp_path):
    with pytest.raises(ModelFileError):
        read(str(tmp_path / "missing.crfsuite"))
    bad = tmp_path / "bad.crfsuite"
    bad.write_bytes(b"lCRF" + b"\xff" * 60)
    with pytest.raises(ModelFileError, match="bad.crfsuite"):
        CRF.load(str(bad))


def _escape(name):
    return name.replace("\\", "\\\\").replace(":", "\\:")


def test_cli_labels_crfsuite_data_with_a_crfsuite_model(reference, tmp_path, capsys):
    from spargel.cli import main
    from spargel.data.featuredicts import token_attributes
    lines = []
    for x in reference["X"]:
        for tok in x:
            fields = [_escape(a) if v == 1.0 else f"{_escape(a)}:{v!r}" for a, v in token_attributes(tok, sep=":")]
            lines.append("\t".join(["?"] + fields))
        lines.append("")
    items = tmp_path / "items.txt"
    items.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["label", "--model", MODEL, "--marginals", str(items)]) == 0
    out = capsys.readouterr().out.split("\n\n")
    for block, ref in zip(out, reference["reference"]):
        rows = [r.rsplit(":", 1) for r in block.strip("\n").split("\n")]
        assert [r[0] for r in rows] == ref["tags"]
        assert all(abs(float(p) - m[lab]) < 1e-6 for (lab, p), m in zip(rows, ref["marginals"]))
    bad = tmp_path / "bad.txt"
    bad.write_text("A\tw:x\n", encoding="utf-8")
    assert main(["label", "--model", MODEL, str(bad)]) != 0
    assert "bad.txt:1" in capsys.readouterr().err


def test_a_standalone_tagger_opens_files_and_bytes(reference, model_bytes, tmp_path):
    from spargel.chain.crfsuite_compat import Tagger
    x, ref = reference["X"][1], reference["reference"][1]
    assert Tagger().open(MODEL).tag(x) == ref["tags"]
    tagger = Tagger()
    tagger.open_inmemory(model_bytes)
    tagger.set(x)
    assert tagger.tag() == ref["tags"] and tagger.labels() == reference["labels"]
    assert abs(tagger.marginal(ref["tags"][0], 0) - ref["marginals"][0][ref["tags"][0]]) <= 1e-9
    listing = tmp_path / "dump.txt"
    tagger.dump(str(listing))
    text = listing.read_text(encoding="utf-8")
    assert "TRANSITIONS" in text and all(lab in text for lab in reference["labels"])
    tagger.close()
    with pytest.raises(ValueError, match="open"):
        tagger.tag(x)
    with pytest.raises(ModelFileError):
        Tagger().open_inmemory(model_bytes[:100])


def test_dump_command_reads_a_crfsuite_file(capsys):
    from spargel.cli import main
    assert main(["dump", MODEL]) == 0
    out = capsys.readouterr().out
    assert "w:the" in out


def _first_hash_table(data):
    """(file offset of the label table's first non-empty hash table, its size)."""
    import struct
    off_labels = struct.unpack_from("<I", data, 32)[0]
    for t in range(256):
        t_off, n = struct.unpack_from("<II", data, off_labels + 24 + 8 * t)
        if n:
            return off_labels + t_off, n
    raise AssertionError("no hash table")


def test_hash_tables_a_tagger_could_not_use_are_refused(model_bytes):
    import struct
    start, n = _first_hash_table(model_bytes)
    slots = [struct.unpack_from("<II", model_bytes, start + 8 * k) for k in range(n)]
    used = [k for k, (_, o) in enumerate(slots) if o]
    # a stored hash that is not the name's: the tagger would not find the name
    bad = bytearray(model_bytes)
    h, o = slots[used[0]]
    struct.pack_into("<II", bad, start + 8 * used[0], h ^ 0x100, o)
    with pytest.raises(ModelFileError, match="wrong hash"):
        read_bytes(bytes(bad))
    # a table without an empty slot: a tagger looking for an unknown name never stops
    full = bytearray(model_bytes)
    for k, (_, o) in enumerate(slots):
        if not o:
            struct.pack_into("<II", full, start + 8 * k, *slots[used[0]])
    with pytest.raises(ModelFileError, match="no empty slot"):
        read_bytes(bytes(full))
