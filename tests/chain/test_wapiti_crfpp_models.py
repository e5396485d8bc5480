"""Wapiti model files both ways and CRF++ text and binary models read
(spargel.chain.wapiti_format, spargel.chain.crfpp_format).

Ground truth: the files under tests/data/tiny_chunks.* were made by Wapiti 1.5 and
CRF++ 0.58 themselves from the tiny corpus of tests/data/make_tiny_chunks.py (commands
in that file); ``*.out`` is what ``wapiti label`` / ``crf_test`` printed. Files written
by spargel are checked against an independent Viterbi over the file's own weights, read
by a parser written here from the format's description.
"""

import random
import re
from pathlib import Path

import numpy as np
import pytest

from spargel import CRF
from spargel.cli import main
from spargel.chain import crfpp_format, wapiti_format
from spargel.errors import ModelFileError

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")

WAPITI_PATTERN = """# format: wapiti
u:w=%x[0,0]
U:w-1=%x[-1,0]    # upper-case kind, comment
u:p=%x[0,1]
*:pp=%x[-1,1]/%x[0,1]
u:cap=%t[0,0,"^\\u"]
u:suf=%m[0,0,".?.?$"]
b:p=%x[0,1]
b
"""


def read_columns(path):
    sents, cur = [], []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            cur.append(line.split())
        elif cur:
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


@pytest.fixture(scope="module")
def tiny():
    train = read_columns(DATA / "tiny_chunks_train.txt")
    test = read_columns(DATA / "tiny_chunks_test.txt")
    return ([[r[:2] for r in s] for s in train], [[r[2] for r in s] for s in train],
            [[r[:2] for r in s] for s in test])


@pytest.fixture(scope="module")
def wapiti_crf(tiny):
    X, y, _ = tiny
    return CRF(template=WAPITI_PATTERN, l1=0.05, max_iter=60, feature_space="full").fit(X, y)


# --------------------------------------------------------------------------- an independent reference
def parse_wapiti_text(text):
    """(labels, {observation: (unigram (Y,), bigram (Y, Y))}) from a Wapiti model file's
    text, following the format's description (not spargel's reader)."""
    lines = text.split("\n")
    assert lines[0].startswith("#mdl#2#")
    npat = int(re.match(r"#rdr#(\d+)/", lines[1]).group(1))
    i = 2 + npat

    def strings(i):
        n = int(lines[i][5:])
        return [s.split(":", 1)[1][:-1] for s in lines[i + 1:i + 1 + n]], i + 1 + n

    labels, i = strings(i)
    obs, i = strings(i)
    Y = len(labels)
    theta = {}
    for line in lines[i:]:
        if line:
            k, v = line.split("=")
            theta[int(k)] = float.fromhex(v)
    table, f = {}, 0
    for o in obs:
        uni, big = np.zeros(Y), np.zeros((Y, Y))
        if o[0] in "u*":
            uni = np.array([theta.get(f + y, 0.0) for y in range(Y)])
            f += Y
        if o[0] in "b*":
            big = np.array([theta.get(f + d, 0.0) for d in range(Y * Y)]).reshape(Y, Y)
            f += Y * Y
        table[o] = (uni, big)
    return labels, table


def wapiti_viterbi(labels, table, uni_obs, big_obs):
    """Wapiti's decoding: unigram weights of the token's observations, bigram weights
    (previous, current) of its bigram observations from the second token on."""
    Y, T = len(labels), len(uni_obs)
    zero = (np.zeros(Y), np.zeros((Y, Y)))
    u = np.array([sum((table.get(o, zero)[0] for o in uni_obs[t]), np.zeros(Y)) for t in range(T)])
    score = u[0].copy()
    back = []
    for t in range(1, T):
        b = sum((table.get(o, zero)[1] for o in big_obs[t]), np.zeros((Y, Y)))
        cand = score[:, None] + b + u[t][None, :]
        back.append(cand.argmax(0))
        score = cand.max(0)
    path = [int(score.argmax())]
    for bp in reversed(back):
        path.append(int(bp[path[-1]]))
    return [labels[k] for k in reversed(path)], float(score.max())


def path_score(labels, table, uni_obs, big_obs, path):
    zero = (np.zeros(len(labels)), np.zeros((len(labels), len(labels))))
    ids = [labels.index(p) for p in path]
    s = 0.0
    for t, k in enumerate(ids):
        s += sum(table.get(o, zero)[0][k] for o in uni_obs[t])
        if t:
            s += sum(table.get(o, zero)[1][ids[t - 1], k] for o in big_obs[t])
    return s


# --------------------------------------------------------------------------- writing
def test_written_wapiti_file_decodes_as_wapiti_would(wapiti_crf, tiny, tmp_path):
    _, _, Xt = tiny
    path = tmp_path / "m.wapiti"
    wapiti_crf.save(path, format="wapiti")
    text = path.read_text()
    labels, table = parse_wapiti_text(text)
    assert sorted(labels) == sorted(wapiti_crf.classes_)
    assert "b" in table                       # the transitions ride on the bare 'b' line
    tpl = wapiti_crf._template()
    pred = wapiti_crf.predict(Xt)
    for x, p in zip(Xt, pred):
        uni, big = tpl.extract(x)
        ref, best = wapiti_viterbi(labels, table, uni, big)
        # the same best score (a tie may pick another path of the same score)
        assert path_score(labels, table, uni, big, p) == pytest.approx(best, abs=1e-9)
        assert p == ref or path_score(labels, table, uni, big, ref) == pytest.approx(best, abs=1e-9)


def test_transitions_on_a_bare_star_line(tiny, tmp_path):
    """A bare '*' line: a per-label bias and the transitions share Wapiti's observation '*'."""
    X, y, Xt = tiny
    crf = CRF(template=WAPITI_PATTERN.replace("\nb\n", "\n*\n"), solver="lbfgs", l1=0, l2=1.0,
              max_iter=40).fit(X, y)
    path = tmp_path / "star.wapiti"
    crf.save(path, format="wapiti")
    labels, table = parse_wapiti_text(path.read_text())
    assert "b" not in table and np.any(table["*"][0]) and np.any(table["*"][1])
    tpl = crf._template()
    for x, p in zip(Xt, crf.predict(Xt)):
        uni, big = tpl.extract(x)
        assert path_score(labels, table, uni, big, p) == pytest.approx(
            wapiti_viterbi(labels, table, uni, big)[1], abs=1e-9)
    back = CRF.load(path)
    assert back.transition_features_ == crf.transition_features_
    assert back.state_features_ == crf.state_features_
    assert back.predict(Xt) == crf.predict(Xt)


def test_written_wapiti_file_round_trips_exactly(wapiti_crf, tiny, tmp_path):
    _, _, Xt = tiny
    path = tmp_path / "m.wapiti"
    wapiti_crf.save(path, format="wapiti")
    back = CRF.load(path)
    assert back.state_features_ == wapiti_crf.state_features_
    assert back.bigram_features_ == wapiti_crf.bigram_features_
    assert back.transition_features_ == wapiti_crf.transition_features_
    assert back.predict(Xt) == wapiti_crf.predict(Xt)
    m0, m1 = wapiti_crf.predict_marginals(Xt), back.predict_marginals(Xt)
    for a, b in zip(m0, m1):
        for da, db in zip(a, b):
            assert da == pytest.approx(db, abs=1e-12)
    # and written again, the same bytes
    back.save(tmp_path / "again.wapiti", format="wapiti")
    assert (tmp_path / "again.wapiti").read_bytes() == path.read_bytes()


def test_header_and_weight_lines(wapiti_crf):
    m = wapiti_format.to_wapiti_model(wapiti_crf)
    text = wapiti_format.to_text(m)
    head = text.split("\n", 2)
    assert head[0] == f"#mdl#2#{len(m.weights)}"
    assert head[1] == "#rdr#8/1/0"                 # 8 patterns, highest column 1
    assert "14:u:w-1=%x[-1,0]," in text              # Wapiti's cleaning: kind lower-cased, comment gone
    for line in text.rstrip("\n").split("\n")[-len(m.weights):]:
        k, v = line.split("=")
        assert re.fullmatch(r"-?0x1(\.[0-9a-f]*[1-9a-f])?p[-+]\d+", v), v
    assert np.count_nonzero(wapiti_crf.weights_) == len(m.weights)


def test_refusals(tiny, wapiti_crf):
    X, y, _ = tiny
    two = CRF(template="U00:%x[0,0]\nB\nT\n", order=2, l1=0.1, max_iter=5).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="second-order"):
        two.save("unused.wapiti", format="wapiti")
    dicts = CRF(l1=0.1, max_iter=5).fit([[{"w": r[0]} for r in s] for s in X[:10]], y[:10])
    with pytest.raises(ValueError, match="without a pattern file"):
        dicts.save("unused.wapiti", format="wapiti")
    crfpp = CRF(template="U00:%x[0,0]\nB\n", l1=0.1, max_iter=5).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="CRF\\+\\+ pattern file"):
        crfpp.save("unused.wapiti", format="wapiti")
    nopad = CRF(template=WAPITI_PATTERN, pad=False, l1=0.1, max_iter=5).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="pad"):
        nopad.save("unused.wapiti", format="wapiti")


def test_bytes_and_encodings(tiny, tmp_path):
    """Wapiti's strings are bytes: a regex match may end inside a UTF-8 character, and a
    model trained on latin-1 data holds latin-1 bytes."""
    X, y, Xt = tiny
    accent = lambda seqs: [[[("caf\u00e9" if r[0] == "cat" else r[0]), r[1]] for r in s] for s in seqs]  # noqa: E731
    X, Xt = accent(X), accent(Xt)
    pat = "# format: wapiti\nu:w=%x[0,0]\nu:p=%x[0,1]\nu:last=%m[0,0,\".$\"]\nb\n"
    crf = CRF(template=pat, solver="lbfgs", l1=0, l2=1.0, max_iter=30).fit(X, y)
    path = tmp_path / "m.wapiti"
    crf.save(path, format="wapiti")
    data = path.read_bytes()
    assert b"8:u:last=\xa9,\n" in data and "9:u:w=caf\u00e9,\n".encode() in data   # the lone byte, as Wapiti
    back = CRF.load(path)
    assert back.state_features_ == crf.state_features_ and back.predict(Xt) == crf.predict(Xt)
    crf.save(path, format="wapiti", encoding="latin-1")
    data = path.read_bytes()
    assert b"8:u:w=caf\xe9,\n" in data and b"8:u:last=\xa9,\n" in data
    back = CRF.load(path, encoding="latin-1")
    # (a latin-1 reading of the lone byte is a character; spargel's patterns match UTF-8 bytes)
    words = lambda feats: {k: v for k, v in feats.items() if not k[0].startswith("u:last=")}  # noqa: E731
    assert words(back.state_features_) == words(crf.state_features_)
    assert ("u:w=caf\u00e9", "I-NP") in back.state_features_
    with pytest.raises(ValueError, match="cannot be written in ascii"):
        crf.save(path, format="wapiti", encoding="ascii")


# --------------------------------------------------------------------------- reading the tools' files
def tool_labels(path):
    return [[r[-1] for r in s] for s in read_columns(path)]


def test_wapiti_trained_model_labels_as_wapiti(tiny):
    _, _, Xt = tiny
    crf = CRF.load(DATA / "tiny_chunks.wapiti")
    assert crf.predict(Xt) == tool_labels(DATA / "tiny_chunks.wapiti.out")
    # the file's own weights, decoded independently, agree too
    labels, table = parse_wapiti_text((DATA / "tiny_chunks.wapiti").read_text())
    tpl = crf._template()
    for x, p in zip(Xt, crf.predict(Xt)):
        assert p == wapiti_viterbi(labels, table, *tpl.extract(x))[0]


def test_crfpp_text_model_labels_as_crf_test(tiny):
    _, _, Xt = tiny
    crf = CRF.load(DATA / "tiny_chunks.crfpp.model.txt")
    assert crf.predict(Xt) == tool_labels(DATA / "tiny_chunks.crfpp.out")
    m = crfpp_format.read(DATA / "tiny_chunks.crfpp.model.txt")
    assert m.xsize == 2 and len(m.labels) == len(crf.classes_)
    # every non-zero weight of the file is in the model, rounded to float32 as crf_test's
    Y = len(m.labels)
    ref = {}
    for string, f in m.features:
        if string[0] == "U":
            for k in range(Y):
                if m.weights[f + k]:
                    ref[(string, m.labels[k])] = float(np.float32(m.weights[f + k]))
    assert crf.state_features_ == ref


def test_crfpp_binary_model_labels_as_crf_test(tiny):
    # tests/data/tiny_chunks.crfpp.model is crf_learn's binary output of the same run
    # that wrote tiny_chunks.crfpp.model.txt
    _, _, Xt = tiny
    crf = CRF.load(DATA / "tiny_chunks.crfpp.model")
    assert crf.predict(Xt) == tool_labels(DATA / "tiny_chunks.crfpp.out")
    b = crfpp_format.read_binary(DATA / "tiny_chunks.crfpp.model")
    t = crfpp_format.read(DATA / "tiny_chunks.crfpp.model.txt")
    assert (b.version, b.cost_factor, b.maxid, b.xsize) == (t.version, t.cost_factor, t.maxid, t.xsize)
    assert b.labels == t.labels and b.templates == t.templates and b.features == t.features
    np.testing.assert_array_equal(b.weights, t.weights.astype(np.float32))
    text = CRF.load(DATA / "tiny_chunks.crfpp.model.txt")
    np.testing.assert_array_equal(crf.weights_, text.weights_)
    assert crf.state_features_ == text.state_features_
    assert crf.transition_features_ == text.transition_features_


def test_crfpp_binary_trie_is_walked_as_darts_does():
    # a trie built here by hand: from the root (base 1), "U" (code ord("U") + 1) and then
    # the string's end (code 0) at the child's base
    import struct

    def unit(base, check):
        return struct.pack("<iI", base, check)
    units = [unit(0, 0)] * 200
    units[0] = unit(1, 0)
    u = 1 + ord("U") + 1                              # the child "U" of the root
    units[u] = unit(150, 1)
    units[150] = unit(-5 - 1, 150)                    # "U" -> ID 5
    keys, ids = crfpp_format._trie_keys(b"".join(units), lambda off, msg: pytest.fail(msg))
    assert keys == [b"U"] and ids == [5]
    units[150] = unit(3, 150)                         # an end without an ID
    with pytest.raises(ModelFileError, match="unit 150 has base 3"):
        crfpp_format._trie_keys(b"".join(units), lambda off, msg: (_ for _ in ()).throw(ModelFileError(msg)))


def test_cost_factor_scales_the_weights(tmp_path):
    text = (DATA / "tiny_chunks.crfpp.model.txt").read_text().replace("cost-factor: 1\n", "cost-factor: 2.5\n")
    (tmp_path / "m.txt").write_text(text)
    a = CRF.load(DATA / "tiny_chunks.crfpp.model.txt")
    b = CRF.load(tmp_path / "m.txt")
    np.testing.assert_allclose(b.weights_, 2.5 * a.weights_, rtol=1e-15)


# --------------------------------------------------------------------------- untrusted input
def _outcome(path, X):
    try:
        crf = CRF.load(path)
    except ModelFileError as exc:
        assert str(path) in str(exc)
        return "refused"
    crf.predict(X)                                 # a file that is read must label
    return "read"


def _mutations(data, rng, n):
    out = []
    digits = b"0123456789"
    for _ in range(n):
        b = bytearray(data)
        op = rng.randrange(5)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            del b[i:i + rng.randrange(1, 20)]
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 3:                                # a digit changed: counts, lengths, indices
            pos = [j for j, c in enumerate(b) if c in digits]
            j = rng.choice(pos)
            b[j] = rng.choice(digits)
        else:                                        # a huge count or length
            m = re.search(rb"\d+", bytes(b[i:])) or re.search(rb"\d+", bytes(b))
            start = (i if re.search(rb"\d+", bytes(b[i:])) else 0) + m.start()
            b[start:start + len(m.group())] = b"99999999999"
        out.append(bytes(b))
    return out


@pytest.mark.filterwarnings("error::RuntimeWarning")          # no overflow on the way either
@pytest.mark.parametrize("name", ["tiny_chunks.wapiti", "tiny_chunks.crfpp.model.txt"])
def test_fuzz_truncated_and_corrupted_files_are_refused_cleanly(name, tiny, tmp_path):
    _, _, Xt = tiny
    data = (DATA / name).read_bytes()
    path = tmp_path / name
    counts = {"refused": 0, "read": 0}
    # every truncation at a line end and at 200 random bytes
    rng = random.Random(1)
    cuts = sorted({i + 1 for i, c in enumerate(data[:-1]) if c == 10} | {rng.randrange(len(data)) for _ in range(200)})
    for cut in cuts:
        path.write_bytes(data[:cut])
        got = _outcome(path, Xt[:3])
        counts[got] += 1
        if name.endswith(".wapiti") or data[:cut].count(b"\n") < data.count(b"\n") - 1:
            assert got == "refused", cut                  # a missing line is always noticed
    for blob in _mutations(data, rng, 300):
        path.write_bytes(blob)
        counts[_outcome(path, Xt[:3])] += 1
    assert counts["refused"] > len(cuts)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_fuzz_binary_crfpp_model(tiny, tmp_path):
    import tracemalloc

    _, _, Xt = tiny
    data = (DATA / "tiny_chunks.crfpp.model").read_bytes()
    path = tmp_path / "model"
    rng = random.Random(3)
    tracemalloc.start()
    try:
        # every truncation in the header, labels and template, then every 37th byte:
        # the binary layout has no slack, so each is refused
        for cut in sorted(set(range(0, 200)) | set(range(200, len(data), 37))):
            path.write_bytes(data[:cut])
            assert _outcome(path, Xt[:3]) == "refused", cut
        counts = {"refused": 0, "read": 0}
        for _ in range(150):                          # random bytes flipped
            b = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            path.write_bytes(bytes(b))
            counts[_outcome(path, Xt[:3])] += 1
        for off in range(0, 36, 4):                   # each header field made huge or odd
            for value in (0xFFFFFFFF, 0x7FFFFFFF, 1 << 30, 3):
                b = bytearray(data)
                b[off:off + 4] = value.to_bytes(4, "little")
                path.write_bytes(bytes(b))
                counts[_outcome(path, Xt[:3])] += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert counts["refused"] > 50
    assert peak < 64 << 20                            # nothing sized by a corrupt count


@pytest.mark.filterwarnings("error::RuntimeWarning")          # a signalling NaN read quietly
def test_binary_crfpp_bounds_name_the_byte(tmp_path):
    import struct

    path = tmp_path / "model"
    head = struct.pack("<IidIII", 100, 0, 1.0, 4000000000, 1, 8)
    path.write_bytes(head + struct.pack("<I", 4000000000) + b"A\0")
    with pytest.raises(ModelFileError, match=r"model: invalid CRF\+\+ binary model \(the labels take "
                                             r"4000000000 bytes, only 2 are left: truncated\?, at byte 32\)"):
        CRF.load(path)
    body = struct.pack("<I", 4) + b"A\0B\0" + struct.pack("<I", 4) + b"U0\0\0" + bytes(8)
    path.write_bytes(head + body)
    with pytest.raises(ModelFileError, match=r"bytes after the trie for maxid 4000000000 .*truncated"):
        CRF.load(path)
    path.write_bytes(struct.pack("<IidIII", 100, 0, float("nan"), 4, 1, 8) + body)
    with pytest.raises(ModelFileError, match=r"cost-factor nan .*at byte 8"):
        CRF.load(path)
    data = bytearray((DATA / "tiny_chunks.crfpp.model").read_bytes())
    data[-4:] = bytes.fromhex("0100807f")                 # a signalling NaN for the last weight
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=f"weight 779 is nan, at byte {len(data) - 4}"):
        CRF.load(path)


def test_bounds_before_allocation(tmp_path):
    path = tmp_path / "m.wapiti"
    path.write_bytes(b"#mdl#2#999999999999\n#rdr#0/0/0\n#qrk#0\n#qrk#0\n")
    with pytest.raises(ModelFileError, match=r":1: .*999999999999 weights announced"):
        CRF.load(path)
    path.write_bytes(b"#mdl#2#0\n#rdr#0/0/0\n#qrk#4000000000\n1:A,\n")
    with pytest.raises(ModelFileError, match=r":3: .*4000000000 labels announced"):
        CRF.load(path)
    path.write_bytes(b"#mdl#1#0\n")      # maxent (type 0) files are read; MEMMs are not
    with pytest.raises(ModelFileError, match="MEMM"):
        CRF.load(path)
    txt = tmp_path / "m.txt"
    txt.write_text("version: 100\ncost-factor: 1\nmaxid: 100000000000\nxsize: 1\n\nA\nB\n\nU00:%x[0,0]\n\n")
    with pytest.raises(ModelFileError, match=r":3: .*maxid"):
        CRF.load(txt)
    txt.write_text("version: 100\ncost-factor: 1\nmaxid: 4\nxsize: 1\n\nA\nB\n\nU00:%x[0,0]\n\n3 U00:a\n\n"
                   "1\n2\n3\n4\n")
    with pytest.raises(ModelFileError, match=r":11: .*past maxid"):
        CRF.load(txt)
    txt.write_text("version: 100\ncost-factor: 1\nmaxid: 2\nxsize: 1\n\nA\nB\n\nU00:%x[0,0]\n\n0 U00:a\n\n"
                   "1\n1e39\n")
    with pytest.raises(ModelFileError, match=r":14: .*32-bit float"):
        CRF.load(txt)


# --------------------------------------------------------------------------- command line
def test_cli_train_label_dump(tmp_path, capsys):
    pat = tmp_path / "pat.txt"
    pat.write_text(WAPITI_PATTERN)
    train, test = DATA / "tiny_chunks_train.txt", DATA / "tiny_chunks_test.txt"
    model = tmp_path / "m.wapiti"
    assert main(["train", "-q", "-i", "20", "--l1", "0.1", "-p", str(pat), "--model-format", "wapiti",
                 str(train), str(model)]) == 0
    assert model.read_bytes().startswith(b"#mdl#2#")
    spargel_model = tmp_path / "m.spargel"
    assert main(["train", "-q", "-i", "20", "--l1", "0.1", "-p", str(pat), str(train), str(spargel_model)]) == 0
    capsys.readouterr()
    assert main(["dump", "--format", "wapiti", str(spargel_model)]) == 0
    assert capsys.readouterr().out.encode() == model.read_bytes()
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(model), str(test), str(out)]) == 0
    labelled = read_columns(out)
    assert [[r[:3] for r in s] for s in labelled] == read_columns(test)
    assert [[r[3] for r in s] for s in labelled] == CRF.load(model).predict(
        [[r[:2] for r in s] for s in read_columns(test)])
    # a CRF++ pattern file cannot make a Wapiti model: refused before training
    tpl = tmp_path / "tpl.txt"
    tpl.write_text("U00:%x[0,0]\nB\n")
    assert main(["train", "-q", "-p", str(tpl), "--model-format", "wapiti", str(train), str(tmp_path / "x")]) == 2
    assert "--pattern-format wapiti" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_labels_crfpp_text_model(tmp_path):
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(DATA / "tiny_chunks.crfpp.model.txt"), str(DATA / "tiny_chunks_test.txt"),
                 str(out)]) == 0
    assert tool_labels(out) == tool_labels(DATA / "tiny_chunks.crfpp.out")


def test_cli_labels_crfpp_binary_model(tmp_path, capsys):
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(DATA / "tiny_chunks.crfpp.model"), str(DATA / "tiny_chunks_test.txt"),
                 str(out)]) == 0
    assert tool_labels(out) == tool_labels(DATA / "tiny_chunks.crfpp.out")
    cut = tmp_path / "cut.model"                      # a truncated one: refused, naming the file
    cut.write_bytes((DATA / "tiny_chunks.crfpp.model").read_bytes()[:5000])
    capsys.readouterr()
    assert main(["label", "-m", str(cut), str(DATA / "tiny_chunks_test.txt"), str(tmp_path / "o2")]) == 1
    err = capsys.readouterr().err
    assert f"{cut}: invalid CRF++ binary model" in err and "truncated?" in err
    assert not (tmp_path / "o2").exists()


def test_cli_labels_crfsuite_items(tmp_path, capsys):
    """The CRFsuite branch of `spargel label` (beside the Wapiti / CRF++ ones) runs."""
    items = tmp_path / "items.txt"
    items.write_text("D\tw\\:the\tlen:3\nN\tw\\:dog\n\n")
    model = DATA / "crfsuite_small.crfsuite"
    capsys.readouterr()
    assert main(["label", "-m", str(model), str(items)]) == 0
    expected = CRF.load(model).predict_single([{"w": "the", "len": 3}, {"w": "dog"}])
    assert capsys.readouterr().out.split() == expected
