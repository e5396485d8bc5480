"""The pieces of ``spargel label``'s fast path, each against the general code it stands
in for: patterns expanded over many sequences at once (``Template.extract_flat``) against
``Template.extract``; the column encoding against ``SequenceFeaturizer.encode``; the
numpy Viterbi against the compiled decoder and against every labelling of short
sequences; the CRF++ trie looked up key by key against the trie's full enumeration;
Wapiti's ``%t`` on Python's ``re`` against the matcher's own answer; the Wapiti reader's
bulk paths against its line-by-line reader."""

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from spargel import CRF
from spargel.chain import crfpp_format, plain_viterbi, wapiti_format
from spargel.chain.featurizer import SequenceFeaturizer
from spargel.cli import main
from spargel.data.feature_space import FeatureSpace
from spargel.data.templates import Template
from spargel.data.wapiti_regex import WapitiRegex, WapitiRegexError

DATA = Path(__file__).resolve().parents[1] / "data"


def read_columns(path):
    blocks = Path(path).read_text(encoding="utf-8").strip("\n").split("\n\n")
    return [[line.split() for line in b.split("\n")] for b in blocks]


def random_sentences(rng, n, width=2):
    words = ["the", "Dog", "runs", "3.5", "A-1", "", "x", "éte", "NN", "%", "{}", "#"]
    out = []
    for _ in range(n):
        out.append([[rng.choice(words[:5] + words[6:]) for _ in range(width)] for _ in range(rng.randint(1, 7))])
    return out


def flat(sents, width):
    cells = [[row[c] for s in sents for row in s] for c in range(width)]
    ptr = np.cumsum([0] + [len(s) for s in sents])
    return cells, ptr


TEMPLATES = [
    "U00:%x[-1,0]/%x[0,0]\nU01:%x[2,1]\nB01:%x[0,1]\nB",
    "U00:%x[@0,0]/%x[@-1,1]/%x[-3,0]\nU01:%t[1,0,\"^[A-Z]\"]\n*:%m[-7,1,\"N.\"]\nU:%X[2,0]\nU{x}:{}%x[0,0]\nB",
    "# format: wapiti\nu:%x[@1,0]/%x[@-2,1]\nu:%t[-6,0,\"^\\u\"]\nu:%M[3,0,\"..?$\"]\n*:%x[-1,1]\nb\nu:const",
    "# format: wapiti\n*:%m[0,0,\"\\d*.\"]/%x[5,0]\nu:%x[-2,1]%x[-1,1]%x[0,1]\nb:%X[@-1,0]",
]


@pytest.mark.parametrize("text", TEMPLATES)
@pytest.mark.parametrize("pad", [True, False])
def test_extract_flat_gives_extract_features(text, pad):
    rng = random.Random(len(text) + pad)
    tpl = Template.parse(text)
    sents = random_sentences(rng, 60)
    cells, ptr = flat(sents, 2)
    uni, big = tpl.extract_flat(cells, ptr, pad)
    for k, s in enumerate(sents):
        u, b = tpl.extract(s, pad)
        for t in range(len(s)):
            i = ptr[k] + t
            assert [st[c[i]] for st, c in uni if c[i] >= 0] == u[t]
            assert [st[c[i]] for st, c in big if c[i] >= 0] == b[t]


@pytest.mark.parametrize("bound", [1, 7, 5000, 10 ** 9])
def test_distinct_is_np_unique(bound):
    """Both ways of ``_distinct`` (a table of ``bound`` marks, or a sort when ``bound`` is
    large) give ``np.unique``'s values and inverse, and an entry holding each value."""
    from spargel.data.templates import _distinct
    rng = np.random.default_rng(bound)
    for n in (1, 3, 100, 3000):
        key = rng.integers(0, bound, n) if bound < 10 ** 9 else rng.integers(0, 50, n) * (bound // 50)
        used, rank, at = _distinct(key, bound)
        u, inv = np.unique(key, return_inverse=True)
        np.testing.assert_array_equal(used, u)
        np.testing.assert_array_equal(rank, inv.reshape(-1))
        np.testing.assert_array_equal(key[at], used)


def test_extract_flat_needs_the_columns():
    with pytest.raises(ValueError, match="reads 2 columns"):
        Template.parse("U:%x[0,1]").extract_flat([["a"]], [0, 1])


@pytest.mark.parametrize("text", TEMPLATES)
def test_encode_columns_is_encode(text):
    rng = random.Random(7)
    train = random_sentences(rng, 80)
    y = [[rng.choice("ABC") for _ in s] for s in train]
    f = SequenceFeaturizer(Template.parse(text))
    f.encode(train, y, grow=True)
    test = random_sentences(rng, 50)
    a = f.encode(test)
    b = f.encode_columns(*flat(test, 2))
    for name in ("seq_ptr", "uni_ptr", "uni_ids", "uni_vals", "big_ptr", "big_ids", "big_vals"):
        x, z = getattr(a, name), getattr(b, name)
        assert x.dtype == z.dtype and np.array_equal(x, z), name


def random_model(rng, L, n_uni, n_big, transitions=True, zeros=False):
    """A FeatureSpace with random sparse blocks and its weights (quantised when
    ``zeros``: many exact ties)."""
    u_ptr, u_lab, b_ptr, b_pair = [0], [], [0], []
    for _ in range(n_uni):
        labs = sorted(rng.sample(range(L), rng.randint(1, L)))
        u_lab += labs
        u_ptr.append(len(u_lab))
    for _ in range(n_big):
        pairs = sorted(rng.sample(range(L * L), rng.randint(1, L * L)))
        b_pair += pairs
        b_ptr.append(len(b_pair))
    t_pair = sorted(rng.sample(range(L * L), rng.randint(1, L * L))) if transitions else []
    space = FeatureSpace(L, np.array(u_ptr, np.int64), np.array(u_lab, np.int32), np.array(b_ptr, np.int64),
                         np.array(b_pair, np.int32), np.array(t_pair, np.int32))
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    w = nrng.normal(size=space.n_params)
    if zeros:
        w = np.round(w) * 0.5
    return space, w


def random_data(rng, n_seq, n_uni, n_big, max_len=9, max_attrs=4):
    from spargel.data.dataset import SequenceData, unit_values

    lengths = [rng.randint(1, max_len) for _ in range(n_seq)]
    n = sum(lengths)

    def csr(n_attr, most):
        counts = [rng.randint(0, most) for _ in range(n)] if n_attr else [0] * n
        ids = [rng.randrange(n_attr) for _ in range(sum(counts))]
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), np.array(ids, np.int32)
    up, ui = csr(n_uni, max_attrs)
    bp, bi = csr(n_big, 2)
    return SequenceData(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), up, ui, unit_values(len(ui)),
                        bp, bi, unit_values(len(bi)))


def scores(space, w, data, s):
    """State scores (n, L) and pair scores (n, L, L: [previous, current]) of sequence s."""
    L = space.n_labels
    T = np.zeros(L * L)
    T[space.t_pair] = w[space.t_base:]
    lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
    E = np.zeros((hi - lo, L))
    P = np.stack([T.reshape(L, L)] * (hi - lo))
    for t in range(lo, hi):
        for a in data.uni_ids[data.uni_ptr[t]:data.uni_ptr[t + 1]]:
            for k in range(space.u_ptr[a], space.u_ptr[a + 1]):
                E[t - lo, space.u_lab[k]] += w[k]
        for a in data.big_ids[data.big_ptr[t]:data.big_ptr[t + 1]]:
            for k in range(space.b_ptr[a], space.b_ptr[a + 1]):
                P[t - lo].flat[space.b_pair[k]] += w[space.b_base + k]
    return E, P


def path_score(E, P, ys):
    return E[0, ys[0]] + sum(P[t][ys[t - 1], ys[t]] + E[t, ys[t]] for t in range(1, len(ys)))


def test_plain_viterbi_finds_the_best_labelling():
    rng = random.Random(11)
    for trial in range(12):
        L = rng.randint(2, 4)
        space, w = random_model(rng, L, 6, 3, transitions=trial % 3 != 0)
        data = random_data(rng, 15, 6, 3, max_len=5)
        assert plain_viterbi.supported(space, data)
        ids = plain_viterbi.decode(space, data, w)
        for s in range(data.n_sequences):
            E, P = scores(space, w, data, s)
            best = max(path_score(E, P, ys) for ys in itertools.product(range(L), repeat=len(E)))
            got = ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]
            assert path_score(E, P, got) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("zeros", [False, True])
def test_plain_viterbi_is_the_compiled_decoder(zeros):
    from spargel.chain import crf

    rng = random.Random(5 + zeros)
    for trial in range(6):
        L = rng.randint(2, 9)
        space, w = random_model(rng, L, 40, 8, transitions=trial != 2, zeros=zeros)
        data = random_data(rng, 300, 40, 8, max_len=30, max_attrs=6)
        ref, _ = crf.decode(space, data, w)
        np.testing.assert_array_equal(plain_viterbi.decode(space, data, w), ref)


def test_plain_viterbi_refuses_what_it_does_not_do():
    from spargel.data.dataset import SequenceData

    rng = random.Random(2)
    space, _ = random_model(rng, 3, 4, 1)
    data = random_data(rng, 3, 4, 1)
    assert not plain_viterbi.supported(space, data, constraints=object())
    valued = SequenceData(data.seq_ptr, data.uni_ptr, data.uni_ids, np.full(len(data.uni_ids), 2.0),
                          data.big_ptr, data.big_ids, data.big_vals)
    assert not plain_viterbi.supported(space, valued)


# --------------------------------------------------------------------------- CRF++
def test_trie_lookup_finds_every_key_and_nothing_else():
    head = crfpp_format.BinaryModelHead(DATA / "tiny_chunks.crfpp.model")
    keys, ids = crfpp_format._trie_keys(head.head.trie, lambda off, msg: pytest.fail(msg))
    extra = [b"", b"U", b"U99:nothing", keys[0] + b"x", keys[-1][:-1]]
    got = crfpp_format.trie_lookup(head.head.trie, keys + extra, None)
    assert got[:len(keys)].tolist() == ids
    assert all(g == -1 or (k in keys) for g, k in zip(got[len(keys):].tolist(), extra))


def test_trie_lookup_on_random_bytes_stays_inside():
    rng = random.Random(9)
    head = crfpp_format.BinaryModelHead(DATA / "tiny_chunks.crfpp.model")
    keys, _ = crfpp_format._trie_keys(head.head.trie, lambda off, msg: pytest.fail(msg))
    for _ in range(50):
        b = bytearray(head.head.trie)
        for _ in range(rng.randrange(1, 40)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        got = crfpp_format.trie_lookup(bytes(b), keys, None)     # no IndexError, whatever the bytes
        assert got.shape == (len(keys),) and got.min() >= -1


def test_crfpp_model_for_the_input_labels_as_the_whole_model():
    test = read_columns(DATA / "tiny_chunks_test.txt")
    X = [[r[:2] for r in s] for s in test]
    whole = CRF.load(DATA / "tiny_chunks.crfpp.model")
    head = crfpp_format.BinaryModelHead(DATA / "tiny_chunks.crfpp.model")
    cells, ptr = flat(X, 2)
    uni, big = head.template.extract_flat(cells, ptr)
    part = head.model_for(CRF, {x for st, _ in uni + big for x in st})
    assert part.predict(X) == whole.predict(X)
    assert len(part._uni_vocab.names) <= len(whole._uni_vocab.names)
    state = whole.state_features_
    assert all(state[k] == v for k, v in part.state_features_.items())
    assert part.transition_features_ == whole.transition_features_


def test_cli_plain_path_writes_what_the_general_path_writes(tmp_path):
    """The fast path (no option) writes each line as the input's fields and the label the
    estimator's ``predict`` (the general path) gives, for each kind of model file."""
    for model in ("tiny_chunks.crfpp.model", "tiny_chunks.wapiti", "tiny_chunks.crfpp.model.txt"):
        out = tmp_path / f"{model}.out"
        assert main(["label", "-m", str(DATA / model), str(DATA / "tiny_chunks_test.txt"), str(out)]) == 0
        test = read_columns(DATA / "tiny_chunks_test.txt")
        pred = CRF.load(DATA / model).predict([[r[:2] for r in s] for s in test])
        lines = ["".join(f"{' '.join(row)} {lab}\n" for row, lab in zip(s, p)) + "\n" for s, p in zip(test, pred)]
        assert out.read_text() == "".join(lines)


# --------------------------------------------------------------------------- Wapiti
def test_wapiti_test_on_python_re_answers_as_the_matcher():
    rng = random.Random(1)
    atoms = [".", "a", "b", "\\d", "\\D", "\\u", "\\l", "\\p", "\\s", "\\w", "\\A", "\\.", "\\*", "x", "1",
             "\\S", "\\W", "\\P", "\\U", "\\L", "\\a"]
    alpha = "aAbB1 .,-xX*\u00e9"
    n = 0
    for _ in range(3000):
        r = ("^" if rng.random() < 0.3 else "") + "".join(
            rng.choice(atoms) + rng.choice(["", "", "*", "?"]) for _ in range(rng.randint(0, 5))) + \
            ("$" if rng.random() < 0.3 else "")
        try:
            rx = WapitiRegex(r)
        except WapitiRegexError:
            continue
        for _ in range(10):
            s = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 8))).encode()
            assert rx.test(s) == (rx.match(s) is not None), (r, s)
            n += 1
    assert n > 10000
    assert WapitiRegex("a*a*a*b").test(b"a" * 300) is False     # several quantifiers: the matcher


def test_wapiti_bulk_reading_is_the_line_reader(monkeypatch):
    data = (DATA / "tiny_chunks.wapiti").read_bytes()
    fast = wapiti_format.read_bytes(data)
    monkeypatch.setattr(wapiti_format, "_netstring_lines", lambda c, n: None)
    monkeypatch.setattr(wapiti_format, "_weight_lines", lambda c, n, f: None)
    slow = wapiti_format.read_bytes(data)
    assert fast.patterns == slow.patterns and fast.labels == slow.labels
    assert fast.observations == slow.observations
    np.testing.assert_array_equal(fast.index, slow.index)
    np.testing.assert_array_equal(fast.weights, slow.weights)


@pytest.mark.parametrize("damage", [b"5:abc,\n", b"3:ab\0,\n", b"x:abc,\n", b"3:abc\n", b"03:abc,\n"])
def test_wapiti_bulk_reading_leaves_bad_lists_to_the_line_reader(damage):
    text = (DATA / "tiny_chunks.wapiti").read_bytes()
    lines = text.split(b"\n")
    i = next(k for k, line in enumerate(lines) if line.startswith(b"#qrk#")) + 2     # the second label
    lines[i] = damage[:-1]
    blob = b"\n".join(lines)
    if damage == b"03:abc,\n":                        # a leading zero is still a length
        wapiti_format.read_bytes(blob)
        return
    with pytest.raises(Exception) as info:
        wapiti_format.read_bytes(blob)
    assert "invalid Wapiti model" in str(info.value)


@pytest.mark.parametrize("damage", [b"x", b"=", b"e", b"inf", b"\n"])
def test_wapiti_bulk_weights_leave_bad_lines_to_the_line_reader(damage):
    text = (DATA / "tiny_chunks.wapiti").read_bytes()
    lines = text.rstrip(b"\n").split(b"\n")
    lines[-2] = lines[-2] + damage                     # a weight line, one before the last
    with pytest.raises(Exception) as info:
        wapiti_format.read_bytes(b"\n".join(lines) + b"\n")
    assert "invalid Wapiti model" in str(info.value)
    lines[-2] = b"99999999999999999999=0x1p+0"           # past int64 and past the features: refused
    with pytest.raises(Exception, match="invalid Wapiti model"):
        wapiti_format.read_bytes(b"\n".join(lines) + b"\n")


def test_wapiti_weight_index_given_twice_is_refused():
    text = (DATA / "tiny_chunks.wapiti").read_bytes()
    lines = text.rstrip(b"\n").split(b"\n")
    index = lines[-1].split(b"=")[0]
    lines[-2] = index + b"=0x1p+0"                      # the last weight's index on the line before it
    with pytest.raises(Exception, match="a weight index is given twice"):
        wapiti_format.read_bytes(b"\n".join(lines) + b"\n")


def test_feature_space_refuses_repeated_transitions():
    space = FeatureSpace(3, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64),
                         np.zeros(0, np.int32), np.array([0, 4, 8], np.int32))
    space.validate(0, 0)
    space.t_pair = np.array([0, 4, 0], np.int32)
    with pytest.raises(ValueError, match="repeated"):
        space.validate(0, 0)


def test_label_gives_the_collector_back(tmp_path):
    """``spargel label`` pauses the cyclic garbage collector while it works and turns it
    back on after, when it succeeds and when it fails (and leaves it off if it was)."""
    import gc
    out = tmp_path / "out.txt"
    argv = ["label", "-m", str(DATA / "tiny_chunks.wapiti"), str(DATA / "tiny_chunks_test.txt"), str(out)]
    assert gc.isenabled()
    assert main(argv) == 0 and gc.isenabled()
    assert main(["label", "-m", str(tmp_path / "missing.model"), str(DATA / "tiny_chunks_test.txt")]) != 0
    assert gc.isenabled()
    gc.disable()
    try:
        assert main(argv) == 0 and not gc.isenabled()
    finally:
        gc.enable()


# --------------------------------------------------------------------------- CRF++ in plain Python
def _crfpp_copy(tmp_path, step=None, weight=None, cost=None):
    """The tiny CRF++ binary model, its weights rounded to multiples of ``step`` (many
    ties) or its first weight set to ``weight``; its cost factor ``cost``."""
    from spargel.chain import crfpp_binary
    src = DATA / "tiny_chunks.crfpp.model"
    data = bytearray(src.read_bytes())
    w_at = crfpp_binary.BinaryHead(src).head.w_at
    w = np.frombuffer(bytes(data[w_at:]), "<f4").copy()
    if step is not None:
        w = np.round(w / step) * step
    if weight is not None and weight != "snan":
        w[0] = weight
    data[w_at:] = w.astype("<f4").tobytes()
    if weight == "snan":                                # a signalling NaN, bit for bit
        data[w_at:w_at + 4] = np.array([0x7FA00000], "<u4").tobytes()
    if cost is not None:
        data[8:16] = np.array([cost], "<f8").tobytes()
    out = tmp_path / "copy.model"
    out.write_bytes(bytes(data))
    return out


def _mixed_sentences(rng, n):
    """The tiny test set's sentences and ``n`` more of its rows shuffled (unseen pairs
    of words and tags, unseen bigrams), with and without the gold column."""
    test = read_columns(DATA / "tiny_chunks_test.txt")
    rows = [r for s in test for r in s]
    more = [[list(rng.choice(rows)[:rng.choice([2, 3])]) for _ in range(rng.randint(1, 9))] for _ in range(n)]
    for s in more:
        w = len(s[0])
        for r in s:
            del r[w:]
            r.extend(["x"] * (w - len(r)))
    return test + more


@pytest.mark.parametrize("step", [None, 0.5, 4.0])
def test_label_few_is_the_numpy_path(step, tmp_path):
    """Plain Python's labels (:func:`crfpp_binary.label_few`) are those of the numpy
    Viterbi on the model restricted to the input's strings, also with weights rounded so
    that many labellings tie."""
    from spargel.chain import crfpp_binary
    path = DATA / "tiny_chunks.crfpp.model" if step is None else _crfpp_copy(tmp_path, step=step)
    sents = _mixed_sentences(random.Random(5), 150)
    head = crfpp_binary.BinaryHead(path)
    few = crfpp_binary.label_few(head, sents)
    X = [[r[:2] for r in s] for s in sents]
    cells, ptr = flat(X, 2)
    uni, big = head.template.extract_flat(cells, ptr)
    model = crfpp_format.model_for(head, CRF, {x for st, _ in uni + big for x in st})
    data = model.fitted_model_.featurizer().encode_columns(cells, ptr)
    ids = plain_viterbi.decode(model.space_, data, model.weights_)
    names = [model.classes_[i] for i in ids.tolist()]
    assert few == [names[ptr[k]:ptr[k + 1]] for k in range(len(sents))]
    if step is not None:                              # (the ties are there)
        assert len(set(map(tuple, few))) < len(few)


def test_cli_labels_a_few_tokens_as_many(tmp_path, monkeypatch):
    """``spargel label`` with a CRF++ binary model writes the same file through plain
    Python (a few tokens) and through numpy, and loads no numpy for the former."""
    import subprocess
    import sys
    from spargel.cli import crf as crf_cli
    inp = tmp_path / "in.txt"
    inp.write_text("".join("".join(" ".join(r) + "\n" for r in s) + "\n"
                           for s in _mixed_sentences(random.Random(2), 0)))
    model = str(DATA / "tiny_chunks.crfpp.model")
    assert main(["label", "-m", model, str(inp), str(tmp_path / "few.txt")]) == 0
    monkeypatch.setattr(crf_cli, "FEW_TOKENS", 0)
    assert main(["label", "-m", model, str(inp), str(tmp_path / "many.txt")]) == 0
    assert (tmp_path / "few.txt").read_text() == (tmp_path / "many.txt").read_text()
    code = ("import sys\nfrom spargel.cli import main\n"
            f"main(['label', '-m', {model!r}, {str(inp)!r}, {str(tmp_path / 'again.txt')!r}])\n"
            "print('numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]
    assert (tmp_path / "again.txt").read_text() == (tmp_path / "few.txt").read_text()


@pytest.mark.parametrize("weight, cost, message", [(float("nan"), None, "weight 0 is nan"),
                                                   ("snan", None, "weight 0 is nan"),
                                                   (float("inf"), None, "weight 0 is inf"),
                                                   (3e38, 1e70, "beyond")])
def test_label_few_refuses_what_the_numpy_path_refuses(weight, cost, message, tmp_path):
    from spargel.chain import crfpp_binary
    path = _crfpp_copy(tmp_path, weight=weight, cost=cost)
    head = crfpp_binary.BinaryHead(path)
    sents = read_columns(DATA / "tiny_chunks_test.txt")
    X = [[r[:2] for r in s] for s in sents]
    cells, ptr = flat(X, 2)
    uni, big = head.template.extract_flat(cells, ptr)
    strings = {x for st, _ in uni + big for x in st}
    assert crfpp_binary.trie_find(*crfpp_binary._trie_units(head.head.trie), b"B") >= 0
    errors = []
    for run in (lambda: crfpp_binary.label_few(head, sents), lambda: crfpp_format.model_for(head, CRF, strings)):
        with pytest.raises(Exception, match="invalid CRF.. binary model") as info:
            run()
        errors.append(str(info.value))
    assert errors[0] == errors[1] and message in errors[0]


def test_trie_find_is_trie_lookup():
    from spargel.chain import crfpp_binary
    head = crfpp_binary.BinaryHead(DATA / "tiny_chunks.crfpp.model")
    trie = head.head.trie
    keys, _ = crfpp_format._trie_keys(trie, None)
    rng = random.Random(0)
    probes = keys + [k[:-1] for k in keys] + [k + b"x" for k in keys[:50]] + [b"", b"U", bytes([255] * 3)]
    probes += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 6))) for _ in range(200)]
    expected = crfpp_format.trie_lookup(trie, probes, None).tolist()
    units = crfpp_binary._trie_units(trie)
    assert [crfpp_binary.trie_find(*units, k) for k in probes] == expected
    assert {k for k, e in zip(probes, expected) if e >= 0} == set(keys)
