"""Reliability campaign, part A: model files from strangers (items A6-A9)."""

import io
import json
import random
import tracemalloc
import zipfile

import numpy as np
import pytest

from spargel import CRF
from spargel.core import model_file as sio
from spargel.cli import main
from spargel.data import safe_regex
from spargel.data.templates import Template
from spargel.errors import DataFormatError, ModelFileError
from spargel.core.limits import check_nbest, distinct_paths

from reliability_helpers import corpus, header_of, members, npy_bytes, with_header, write_corpus, write_members


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    train = write_corpus(d / "train.txt", corpus(60, seed=1))
    path = d / "good.model"
    assert cli(*["train", "--quiet", "--l1", "0.05", "--max-iter", "25", str(train), str(path)]) == 0
    return path


def cli(*argv):
    return main([str(a) for a in argv])


def _same_model(a, b):
    return (a.classes_ == b.classes_ and a.template == b.template
            and np.array_equal(a.weights_, b.weights_)
            and a._uni_vocab.names == b._uni_vocab.names and a._big_vocab.names == b._big_vocab.names
            and all(np.array_equal(x, y) for x, y in zip(a.space_.as_tuple(), b.space_.as_tuple())))


def _usable(model):
    """A loaded model labels a sentence (columns with a template, attributes without)."""
    x = [[["the", "DT"], ["dog", "NN"]]] if model.template is not None else [[["w=the"], ["w=dog"]]]
    try:
        return len(model.predict(x)[0]) == 2
    except Exception:  # noqa: BLE001 - anything but a clean prediction is a failure
        return False


def _load_bounded(path, limit_mb=64):
    """CRF.load under tracemalloc: (model or the exception, peak MB)."""
    tracemalloc.start()
    try:
        try:
            result = CRF.load(path)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result = exc
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()
    return result, peak


# ---------------------------------------------------------------------------------------
# A6: zip bombs are refused from the archive's directory, before decompressing
# ---------------------------------------------------------------------------------------

def test_a6_zip_bomb_refused_before_decompressing(model_file, tmp_path):
    parts = members(model_file)
    bomb = dict(parts)
    bomb["coef.npy"] = parts["coef.npy"][:128] + bytes(64 << 20)  # inflates to 64 MB of zeros
    path = write_members(tmp_path / "bomb.model", bomb)
    assert path.stat().st_size < (1 << 20)
    result, peak = _load_bounded(path)
    assert isinstance(result, ModelFileError), result
    assert "bomb.model" in str(result) and "coef" in str(result) and "declares" in str(result)
    assert peak < 8, f"{peak:.1f} MB allocated before refusing"


def test_a6_declared_sizes_must_fit_in_memory(model_file, tmp_path):
    parts = members(model_file)
    header = header_of(parts)
    header["arrays"]["coef"]["shape"] = [10 ** 12]  # 8 TB of weights
    path = write_members(tmp_path / "huge.model", with_header(parts, header))
    result, peak = _load_bounded(path)
    assert isinstance(result, ModelFileError) and "huge.model" in str(result), result
    assert peak < 8
    # consistent sizes, but more than the memory given: refused before reading
    with pytest.raises(ModelFileError, match="memory available"):
        sio.load_arrays(model_file, "crf", memory_limit=10)


# ---------------------------------------------------------------------------------------
# A7: the stored template cannot hang labelling; offsets bounded; header text checksummed
# ---------------------------------------------------------------------------------------

def _with_template(model_file, path, template, reseal=True):
    parts = members(model_file)
    header = header_of(parts)
    header["meta"]["template"] = template
    return write_members(path, with_header(parts, header, reseal=reseal))


def test_a7_catastrophic_regex_in_a_stored_template(model_file, tmp_path, monkeypatch, capsys):
    text = CRF.load(model_file).template + '\nU99:%t[0,0,"^(a+)+$"]\n'
    path = _with_template(model_file, tmp_path / "evil.model", text)
    data = tmp_path / "in.txt"
    data.write_text("a" * 40 + "! DT\nthe DT\n\n")
    if safe_regex.re2_available():  # the linear-time engine takes over: no hang, right answer
        assert cli(*["label", "-m", path, data, tmp_path / "out.txt"]) == 0
        assert Template.parse('U:%t[0,0,"^(a+)+$"]').extract([["aaa"], ["aa!"]])[0] == [["U:true"], ["U:false"]]
    monkeypatch.setattr(safe_regex, "_RE2", [None])  # as on a machine without RE2
    with pytest.raises(ModelFileError, match=r"evil\.model.*unsafe regular expression"):
        CRF.load(path)
    capsys.readouterr()
    rc = cli(*["label", "-m", path, data])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "evil.model" in err and "spargel[re2]" in err


def test_a7_huge_offsets_refused_at_parse_time(model_file, tmp_path, capsys):
    path = _with_template(model_file, tmp_path / "far.model", "U:%x[99999999999999999999,0]\nB\n")
    with pytest.raises(ModelFileError, match=r"far\.model.*out of range"):
        CRF.load(path)
    # the same offset through --pattern: a one-line error naming the pattern file and line
    pattern = tmp_path / "far.tpl"
    pattern.write_text("U00:%x[0,0]\nU01:%x[99999999999999999999,0]\n")
    train = write_corpus(tmp_path / "t.txt", corpus(5))
    rc = cli(*["train", "--pattern", pattern, train, tmp_path / "m"])
    err = capsys.readouterr().err
    assert rc == 1 and "far.tpl:2" in err and "out of range" in err
    with pytest.raises(DataFormatError, match="out of range"):
        Template.parse("U:%x[0,99999999999]")
    assert Template.parse("U:%x[-1000,0]").extract([["a"]])[0] == [["U:_B-1000"]]


def test_a7_header_text_is_covered_by_the_checksum(model_file, tmp_path):
    good = CRF.load(model_file).template
    path = _with_template(model_file, tmp_path / "edited.model", good.replace("U0+0", "U0+9"), reseal=False)
    with pytest.raises(ModelFileError, match=r"edited\.model.*header fails its checksum"):
        CRF.load(path)


@pytest.mark.parametrize("pattern,safe", [
    ("^[A-Z]", True), ("[0-9]", True), ("^[A-Z][a-z]+$", True), (".?.?.?$", True),
    ("^(Mr|Mrs|Dr)\\.?$", True), ("(ab)+", True), ("^[0-9]+([.,][0-9]+)*$", True),
    ("(-[A-Z][a-z]*)+", True), ("(,\\d+)*", True), ("(a[ab]+)*", False), ("(\\s\\w+)*", False),
    ("^(a+)+$", False), ("(a|a)*b", False), ("(\\w+\\s?)*$", False), ("(a)\\1", False),
])
def test_a7_regex_shape_check(pattern, safe):
    if safe:
        safe_regex.shape_cost(pattern)
    else:
        with pytest.raises(safe_regex.UnsafeRegex):
            safe_regex.shape_cost(pattern)


def test_a7_safe_regexes_give_re_s_answers():
    import re
    rng = random.Random(7)
    for pattern in ("^[A-Z][a-z]+$", ".?.?.?$", "^[0-9]+([.,][0-9]+)*$", "(-[A-Z][a-z]*)+", "[0-9]"):
        rx, plain = safe_regex.compile_regex(pattern), re.compile(pattern)
        for _ in range(300):
            cell = "".join(rng.choice("aZ9,.-x") for _ in range(rng.randrange(12)))
            m, p = rx.search(cell), plain.search(cell)
            assert (m is None) == (p is None) and (m is None or m.group(0) == p.group(0))


def test_a7_long_cells_are_guarded(monkeypatch):
    monkeypatch.setattr(safe_regex, "_RE2", [None])
    rx = safe_regex.compile_regex("a+a+$x", 0, where=("t.tpl", 3))  # cubic backtracking
    assert rx.search("aaa") is None
    with pytest.raises(safe_regex.RegexTooSlow, match=r"t\.tpl:3: .*5000 characters"):
        rx.search("a" * 5000)


# ---------------------------------------------------------------------------------------
# A8: corrupt files always raise ModelFileError naming the file (fuzz)
# ---------------------------------------------------------------------------------------

_BAD_VALUES = [None, 5, -1, 10 ** 12, 1e308, "x", [], {}, True, "a" * 100_000, [[[[1]]]]]


def _paths(obj, prefix=()):
    """Every (key path) of a JSON object, leaves and inner nodes."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            if k not in ("template",):
                yield from _paths(v, prefix + (k,))


def _set(obj, path, value):
    obj = json.loads(json.dumps(obj))
    node = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return obj


def _mutants(model_file, rng):
    raw = model_file.read_bytes()
    parts = members(model_file)
    header = header_of(parts)
    names = list(parts)
    for i in range(100):  # bytes flipped
        b = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        yield f"flip{i}", bytes(b)
    for i in range(30):  # truncated
        yield f"trunc{i}", raw[:rng.randrange(len(raw))]
    for i in range(15):  # two members swapped
        a, c = rng.sample(names, 2)
        swapped = dict(parts)
        swapped[a], swapped[c] = parts[c], parts[a]
        yield f"swap{i}", _zip_bytes(swapped)
    for path in _paths(header):  # header fields of the wrong type / size (checksum resealed)
        picks = range(len(_BAD_VALUES)) if len(path) <= 2 else rng.sample(range(len(_BAD_VALUES)), 2)
        for j in picks:
            yield f"field{'.'.join(map(str, path))}={j}", _zip_bytes(with_header(parts, _set(header, path, _BAD_VALUES[j])))
    deep = dict(parts)
    deep["header.npy"] = npy_bytes(np.frombuffer(b"[" * 100_000 + b"]" * 100_000, dtype=np.uint8))
    yield "deep-json", _zip_bytes(deep)
    deep_meta = _set(header, ("meta", "params", "l1"), 0)
    deep_meta["meta"]["extra"] = json.loads("[" * 500 + "]" * 500)
    yield "deep-meta", _zip_bytes(with_header(parts, deep_meta))
    odd = _set(header, ("arrays", "coef", "dtype"), "|O")
    yield "object-dtype", _zip_bytes(with_header(parts, odd))
    yield "bzip2", _zip_bytes(parts, zipfile.ZIP_BZIP2)
    b = bytearray(raw)  # an unknown compression method in the central directory
    pos = b.find(b"PK\x01\x02")
    b[pos + 10:pos + 12] = (99).to_bytes(2, "little")
    yield "method99", bytes(b)
    extra = dict(parts)
    extra["payload.pkl"] = b"\x80\x04K\x01."
    yield "extra-member", _zip_bytes(extra)


def _zip_bytes(parts, compression=zipfile.ZIP_DEFLATED):
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", compression=compression) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return bio.getvalue()


def test_a8_fuzzed_model_files(model_file, tmp_path):
    reference = CRF.load(model_file)
    rng = random.Random(8)
    tried = clean = loaded = 0
    failures = []
    path = tmp_path / "fuzzed.model"
    for label, data in _mutants(model_file, rng):
        path.write_bytes(data)
        result, peak = _load_bounded(path)
        tried += 1
        refused = (isinstance(result, ModelFileError) and "fuzzed.model" in str(result)
                   and "\n" not in str(result))
        if label.startswith("field"):
            # a forged header (checksum resealed): a load that succeeds must give a model
            # that works, whatever it is
            ok = refused or (isinstance(result, CRF) and _usable(result))
        else:
            ok = refused or (isinstance(result, CRF) and _same_model(result, reference))
        loaded += isinstance(result, CRF)
        if ok and peak < 64:
            clean += 1
        else:
            failures.append(f"{label}: {type(result).__name__}: {str(result)[:200]} (peak {peak:.0f} MB)")
    print(f"A8 fuzz: {tried} tried, {clean} clean ({loaded} loaded identical, "
          f"{clean - loaded} refused with ModelFileError)")
    assert not failures, "\n".join(failures[:20])
    assert tried > 250


# ---------------------------------------------------------------------------------------
# A9: --nbest K bounded by the number of paths and by memory
# ---------------------------------------------------------------------------------------

def test_a9_check_nbest_helper():
    assert check_nbest(10 ** 9, 3, [1]) == 3
    assert check_nbest(7, 2, [2, 3]) == 7 and check_nbest(9, 2, [2, 3]) == 8
    assert check_nbest(5, 45, [40, 2]) == 5
    assert distinct_paths(45, 10 ** 6, 10 ** 9) == 10 ** 9  # no huge power computed
    with pytest.raises(ValueError, match="--nbest 1000000000 needs about .* GB"):
        check_nbest(10 ** 9, 45, [40], memory_limit=16 << 30)
    with pytest.raises(ValueError, match=">= 1"):
        check_nbest(0, 3, [1])


def test_a9_cli_nbest_huge_k(model_file, tmp_path, capsys):
    one = tmp_path / "one.txt"
    one.write_text("dog NN\n\n")
    rc = cli(*["label", "-m", model_file, "--nbest", "1000000000", one])
    out, err = capsys.readouterr()
    n_labels = len(CRF.load(model_file).classes_)
    assert rc == 0 and "note:" in err
    assert len(out.split("\n")[0].split()) == 2 + n_labels  # word, POS, one column per path
    long = tmp_path / "long.txt"
    long.write_text("".join("the DT\n" for _ in range(40)) + "\n")
    rc = cli(*["label", "-m", model_file, "--nbest", "1000000000", long])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "GB" in err and "long.txt" in err


def test_a8_inflated_member_size_is_refused_without_a_large_read(model_file, tmp_path):
    # the archive's directory says the header member is ~2 GB compressed: refused from the
    # directory (or read in small chunks), never one read sized by the forged number
    raw = bytearray(model_file.read_bytes())
    pos = raw.find(b"PK\x01\x02")
    while raw[pos + 46:pos + 46 + len(b"header.npy")] != b"header.npy":
        pos = raw.find(b"PK\x01\x02", pos + 4)
    raw[pos + 23] ^= 0x7F  # high byte of the compressed size
    path = tmp_path / "inflated.model"
    path.write_bytes(bytes(raw))
    result, peak = _load_bounded(path)
    assert isinstance(result, ModelFileError) and "inflated.model" in str(result), result
    assert "compressed" in str(result)
    assert peak < 8, f"{peak:.1f} MB allocated"


def test_a7_deeply_nested_regex_in_a_stored_template(model_file, tmp_path):
    # 5,000 nested groups raised RecursionError from inside re's parser
    regex = "(" * 5000 + "a" + ")" * 5000
    text = CRF.load(model_file).template + f'\nU99:%t[0,0,"{regex}"]\n'
    path = _with_template(model_file, tmp_path / "deep.model", text)
    with pytest.raises(ModelFileError, match=r"deep\.model.*nested more than 100 deep") as info:
        CRF.load(path)
    assert len(str(info.value)) < 400
    assert safe_regex.compile_regex("(" * 100 + "a" + ")" * 100).search("a")
