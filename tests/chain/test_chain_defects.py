"""Defects of the chain family's file readers, the CLI and the estimator found by a
bad-input campaign (issue 48), each with the check that it stays mended."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
SRC = Path(__file__).resolve().parents[2] / "src"


def run_python(code, *, prefix=(), timeout=120, **kw):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([*prefix, sys.executable, "-c", code], env=env, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, **kw)


# --------------------------------------------------------------------------- 1: bounded reading
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_foreign_models_load_and_tag_under_a_memory_limit():
    # reading used to reserve the size bound (2^34 bytes for Wapiti / CRF++, 2^32 for
    # CRFsuite) up front: MemoryError for a 3.5 KB model under a 1.5 GB address limit
    code = f"""
from pathlib import Path
from spargel.chain import crfpp_format, crfsuite_format, wapiti_format
from spargel import CRF
d = Path({str(DATA)!r})
for reader, name in ((crfsuite_format.read, "crfsuite_small.crfsuite"),
                     (wapiti_format.read, "tiny_chunks.wapiti"),
                     (crfpp_format.read, "tiny_chunks.crfpp.model.txt")):
    reader(d / name)
X = [[["A", "DT"], ["quiet", "JJ"], ["cat", "NN"]]]
for name in ("tiny_chunks.wapiti", "tiny_chunks.crfpp.model.txt"):
    print(CRF.load(d / name).predict(X))
print(len(CRF.load(d / "crfsuite_small.crfsuite").classes_))
print("ok")
"""
    r = run_python(code, prefix=("prlimit", "--as=1500000000"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith("ok")


# --------------------------------------------------------------------------- 2: Wapiti regex cost
def test_wapiti_regex_on_a_long_token_is_refused_quickly():
    from spargel.data.safe_regex import RegexTooSlow
    from spargel.data.templates import Template
    from spargel.errors import DataFormatError

    # a long regex (as a forged 20 KB model holds) on one 50,000-byte token took minutes
    tpl = Template.parse('u:m=%m[0,0,"' + "a*" * 200 + 'b"]\n', source="forged.wapiti",
                         format="wapiti")
    with pytest.raises(RegexTooSlow, match=r"forged\.wapiti:1: .*50000 bytes"):
        tpl.extract([["a" * 50000]])
    # ordinary tokens are matched as before
    assert tpl.extract([["aab"]])[0] == [["u:m=aab"]]
    # and a regex longer than any Wapiti pattern has is refused when it is read
    with pytest.raises(DataFormatError, match=r"forged\.wapiti:1: .*more than 256 items"):
        Template.parse('u:m=%m[0,0,"' + "a*" * 2000 + 'b"]\n', source="forged.wapiti", format="wapiti")


# --------------------------------------------------------------------------- 3: CRFsuite counts
def test_forged_crfsuite_count_is_refused_before_allocating():
    import struct
    import tracemalloc

    from spargel.chain import crfsuite_format as cf
    from spargel.errors import ModelFileError

    data = bytearray((DATA / "crfsuite_small.crfsuite").read_bytes())
    count = 1 << 25
    off_a = struct.unpack_from("<I", data, 12 + 4 * 6)[0]
    struct.pack_into("<I", data, 12 + 4 * 3, count)              # the header's attribute count
    struct.pack_into("<I", data, off_a + 16, count)               # the table's id links
    refs = off_a + cf.CQDB_HEADER
    for t in range(cf.CQDB_TABLES):                               # its hash tables' sizes
        struct.pack_into("<I", data, refs + 8 * t + 4, 2 * count if t == 0 else 0)
    cf.read_bytes((DATA / "crfsuite_small.crfsuite").read_bytes())   # lazy imports done before
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError) as info:
            cf.read_bytes(bytes(data), "forged.crfsuite")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak    # was a list of 2^25 entries (256 MiB)
    assert re.search(r"forged\.crfsuite: .*cannot hold 33554432 names", str(info.value))


# --------------------------------------------------------------------------- 4: short writes
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
@pytest.mark.parametrize("command", [
    ["dump", str(DATA / "tiny_chunks.wapiti")],
    ["eval", str(DATA / "tiny_chunks.crfpp.out")],
    ["label", "-m", str(DATA / "tiny_chunks.wapiti"), str(DATA / "tiny_chunks_test.txt")],
])
def test_output_cut_by_a_file_size_limit_is_an_error(command, tmp_path, capsys):
    # the write to stdout took only part and the rest was dropped, with exit status 0
    from spargel.cli import main

    assert main(command) == 0  # compiled kernels on disk: the limit is for the output only
    capsys.readouterr()
    out = tmp_path / "out.txt"
    with open(out, "wb") as fh:
        r = run_python(f"import sys; from spargel.cli import main; sys.exit(main({command!r}))",
                       prefix=("prlimit", "--fsize=60"), stdout=fh)
    assert r.returncode == 1, r.stderr
    assert "<stdout>" in r.stderr and "Traceback" not in r.stderr
    assert out.stat().st_size <= 60


# --------------------------------------------------------------------------- 6: SIGTERM in a save
@pytest.mark.skipif(not hasattr(os, "kill") or os.name != "posix", reason="POSIX signals")
def test_sigterm_during_a_save_removes_the_temporary_file(tmp_path):
    import signal

    target = tmp_path / "m.model"
    target.write_bytes(b"old model")
    code = f"""
from spargel.core.files import atomic_write
with atomic_write({str(target)!r}, "wb") as fh:
    fh.write(b"new model")
"""
    env = dict(os.environ, SPARGEL_TEST_PAUSE_IN_SAVE="60", PYTHONUNBUFFERED="1",
               PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()          # printed once the data is written
        assert "test pause in save" in line, line + proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == -signal.SIGTERM               # ended by the signal, as before
    assert target.read_bytes() == b"old model"
    assert sorted(os.listdir(tmp_path)) == ["m.model"]   # no hidden temporary left


# --------------------------------------------------------------------------- 8: absurd weights
def _crfsuite_with_weight(value):
    import struct

    from spargel.chain import crfsuite_format as cf

    data = bytearray((DATA / "crfsuite_small.crfsuite").read_bytes())
    off_f = struct.unpack_from("<I", data, 12 + 4 * 4)[0]
    struct.pack_into("<d", data, off_f + cf.CHUNK_SIZE + 12, value)   # the first feature's weight
    return bytes(data)


@pytest.mark.parametrize("kind", ["crfpp", "wapiti", "crfsuite", "spargel"])
def test_model_files_with_absurd_weights_are_refused(kind, tmp_path):
    # finite weights near 1e308 overflow the scores: all-zero or NaN marginals, silently
    from spargel import CRF
    from spargel.errors import ModelFileError

    def make(value):
        path = tmp_path / f"{kind}-{value:g}.model"
        if kind == "crfpp":
            text = (DATA / "tiny_chunks.crfpp.model.txt").read_text()
            path.write_text(text.replace("cost-factor: 1\n", f"cost-factor: {value:g}\n"))
        elif kind == "wapiti":
            text = (DATA / "tiny_chunks.wapiti").read_text().rstrip("\n")
            head, _, _ = text.rpartition("=")
            path.write_text(f"{head}={value!r}\n")
        elif kind == "crfsuite":
            path.write_bytes(_crfsuite_with_weight(value))
        else:
            model = CRF.load(DATA / "tiny_chunks.wapiti")
            model.weights_ = model.weights_.copy()
            model.weights_[np.flatnonzero(model.weights_)[0]] = value
            model.save(path)
        return path

    import numpy as np

    bad = make(1e308)
    with pytest.raises(ModelFileError, match=re.escape(str(bad)) + r".*beyond \+-1e\+100"):
        CRF.load(bad)
    good = CRF.load(make(1e99))                 # large but usable
    X = [[["A", "DT"], ["quiet", "JJ"], ["cat", "NN"]]] if kind != "crfsuite" else None
    if X is not None:
        marg = good.predict_marginals(X)[0]
        # (these once came out NaN when the second-order kernels had been compiled into
        # the same disk cache first: tests/test_first_use.py has that defect's own test)
        assert all(abs(sum(m.values()) - 1) < 1e-9 for m in marg)


# --------------------------------------------------------------------------- 9: many labels
def _wapiti_with_labels(n):
    out = [f"#mdl#2#1\n#rdr#2/1/0\n11:u:w=%x[0,0],\n1:b,\n#qrk#{n}\n"]
    out += [f"{len(f'L{i}')}:L{i},\n" for i in range(n)]
    out.append("#qrk#2\n5:u:w=a,\n1:b,\n0=0x1p+0\n")
    return "".join(out)


def _crfpp_with_labels(n):
    text = (DATA / "tiny_chunks.crfpp.model.txt").read_text()
    head, _, rest = text.partition("\n\n")          # the header, then the labels' block
    _, _, rest = rest.partition("\n\n")
    return head + "\n\n" + "".join(f"L{i}\n" for i in range(n)) + "\n" + rest


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_many_labels_are_refused_before_their_label_pair_tables(tmp_path):
    # 40,000 labels (the readers' own limit) asked for 128 GB of label x label tables:
    # MemoryError from numpy deep inside the reader
    (tmp_path / "many.wapiti").write_text(_wapiti_with_labels(40000))
    (tmp_path / "many.crfpp.txt").write_text(_crfpp_with_labels(40000))
    code = f"""
from spargel import CRF
from spargel.errors import ModelFileError
for name in ("many.wapiti", "many.crfpp.txt"):
    try:
        CRF.load({str(tmp_path)!r} + "/" + name)
    except ModelFileError as exc:
        print(exc)
"""
    r = run_python(code, prefix=("prlimit", "--as=3000000000"))
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2, r.stdout
    for line, name in zip(lines, ("many.wapiti", "many.crfpp.txt")):
        assert name in line and "40000 labels need" in line and "GiB" in line, line


def test_label_pair_check_allows_ordinary_label_sets():
    from spargel.core.limits import check_label_pairs
    from spargel.errors import ModelFileError

    check_label_pairs(1000, "m.model", memory_limit=1 << 30)
    with pytest.raises(ModelFileError, match=r"m\.model: 40000 labels need 119\.2 GiB"):
        check_label_pairs(40000, "m.model", memory_limit=16 << 30)


# --------------------------------------------------------------------------- 10: cut CRF++ model
def test_crfpp_text_model_cut_inside_its_last_weight_is_refused(tmp_path):
    from spargel import CRF
    from spargel.errors import ModelFileError

    data = (DATA / "tiny_chunks.crfpp.model.txt").read_bytes()
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert len(last) > 6
    cut = tmp_path / "cut.txt"
    cut.write_bytes(data.rstrip(b"\n")[:-4])          # the last weight loses its last digits
    with pytest.raises(ModelFileError, match=r"cut\.txt:\d+: .*truncated"):
        CRF.load(cut)
    (tmp_path / "whole.txt").write_bytes(data)
    CRF.load(tmp_path / "whole.txt")


# --------------------------------------------------------------------------- 11: line breaks
@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
def test_labels_with_line_breaks_are_not_printed_raw(tmp_path, capsys):
    # a CRFsuite file may hold any bytes in a label: "B\nEVIL" printed raw forged a line
    from spargel import CRF
    from spargel.cli import main

    X = [[{"w=a": 1.0}, {"w=b": 1.0}], [{"w=b": 1.0}, {"w=a": 1.0}]]
    y = [["A", "B\nEVIL"], ["B\nEVIL", "A"]]
    model = CRF(l1=0.01, max_iter=20).fit(X, y)
    path = tmp_path / "m.crfsuite"
    model.save(path, format="crfsuite")
    items = tmp_path / "items.txt"
    items.write_text("A\tw=a\nA\tw=b\n\n")
    for argv in (["label", "-m", str(path), str(items)], ["dump", str(path)]):
        capsys.readouterr()
        assert main(argv) == 1
        out, err = capsys.readouterr()
        assert "EVIL" not in out
        assert "m.crfsuite" in err and "line break" in err and err.count("\n") == 1


# --------------------------------------------------------------------------- 12, 13: train options
@pytest.mark.parametrize("options, named", [
    (["--init", "old.model"], "--init"),
    (["--shards", "3"], "--shards"),
    (["--seed", "-1"], "--seed"),
])
def test_train_options_that_would_be_ignored_or_are_invalid(options, named, tmp_path, capsys):
    # --init without --stream and --shards without --scheduler were ignored with status 0;
    # --seed -1 failed after reading the data without naming the option
    from spargel.cli import main

    missing = tmp_path / "missing.txt"             # never read: the options are checked first
    assert main(["train", *options, str(missing), str(tmp_path / "m.model")]) == 2
    err = capsys.readouterr().err
    assert named in err and "missing.txt" not in err and err.count("\n") == 1, err


# --------------------------------------------------------------------------- 14: eval -d
@pytest.mark.parametrize("re2", [True, False])
def test_eval_delimiter_cannot_backtrack_for_ever(re2, tmp_path, capsys, monkeypatch):
    # '(a+)+$' on a 40-character line took 2^40 steps in re
    from spargel.cli import main
    from spargel.data import safe_regex

    if re2 and not safe_regex.re2_available():
        pytest.skip("RE2 (google-re2) is not installed")
    if not re2:
        monkeypatch.setattr(safe_regex, "_RE2", [None])     # as on a machine without RE2
    data = tmp_path / "tags.txt"
    data.write_text("a" * 40 + "! B-NP B-NP\n")
    rc = main(["eval", "-d", "(a+)+$", str(data)])
    err = capsys.readouterr().err
    if re2:        # the linear-time engine splits the line: no match, so one field
        assert rc == 1 and "one field" in err
    else:          # refused up front, naming the option's value
        assert rc == 2 and "(a+)+$" in err and "spargel[re2]" in err
    # ordinary delimiters still split as conlleval does
    data.write_text("w\tB-NP\tB-NP\n")
    assert main(["eval", "-d", "\t", "--json", str(data)]) == 0
    capsys.readouterr()


def test_eval_delimiter_long_line_over_its_bound(tmp_path, capsys, monkeypatch):
    from spargel.cli import main
    from spargel.data import safe_regex

    monkeypatch.setattr(safe_regex, "_RE2", [None])
    data = tmp_path / "tags.txt"
    data.write_text("x B-NP B-NP\n" + "y" * 20000 + " B-NP B-NP\n")
    assert main(["eval", "-d", " +", str(data)]) == 1   # ' +' is polynomial: bounded per line
    err = capsys.readouterr().err
    assert "tags.txt:2:" in err and "20010 characters" in err


# --------------------------------------------------------------------------- 16: binary CRF++
def test_binary_crfpp_model_is_read_and_checked(tmp_path):
    import struct

    from spargel import CRF
    from spargel.errors import ModelFileError

    # crf_learn's binary layout: version 100, type 0, cost factor, maxid, xsize, ...;
    # read now (tests/chain/test_wapiti_crfpp_models.py), so a broken one is refused as such
    path = tmp_path / "model"
    path.write_bytes(struct.pack("<IidQII", 100, 0, 1.0, 780, 2, 4096) + bytes(200))
    with pytest.raises(ModelFileError, match=r"model: invalid CRF\+\+ binary model"):
        CRF.load(path)
    (tmp_path / "other").write_bytes(b"\x00" * 64)        # anything else: as before
    with pytest.raises(ModelFileError, match="not a spargel model file"):
        CRF.load(tmp_path / "other")


# --------------------------------------------------------------------------- 17: argparse errors
def test_argparse_errors_name_the_command_once(capsys):
    from spargel.cli import main

    assert main(["train", "a.txt", "m.model", "--bogus"]) == 2
    assert capsys.readouterr().err == ("spargel: error: train: unrecognized arguments: --bogus "
                                       "(see 'spargel train --help')\n")
    assert main(["train", "a.txt", "m.model", "--l1", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spargel: error: train: argument --l1") and "spargel: error: spargel" not in err
    assert err.rstrip().endswith("(see 'spargel train --help')")
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("spargel: error: the following arguments are required: COMMAND")


# --------------------------------------------------------------------------- 18: Ctrl-C in encoding
@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
def test_ctrl_c_while_fit_encodes_leaves_a_consistent_state():
    # the documented catch-and-continue pattern read stop_reason_: AttributeError
    from spargel import CRF

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]] * 3
    y = [["A", "B"], ["B", "A"]] * 3

    def interrupted(n):
        for i, x in enumerate(X):
            if i == n:
                raise KeyboardInterrupt      # Ctrl-C while the sequences are being read
            yield x

    crf = CRF(max_iter=5)
    with pytest.raises(KeyboardInterrupt):
        crf.fit(interrupted(3), iter(y))
    assert crf.stop_reason_ == "interrupted" and crf.n_iter_ == 0 and crf.history_ == []
    with pytest.raises(Exception, match="not fitted|fit"):
        crf.predict(X[:1])
    # a model fitted before stays usable when a later fit is interrupted that early
    crf.fit(X, y)
    weights = crf.weights_.copy()
    with pytest.raises(KeyboardInterrupt):
        crf.fit(interrupted(2), iter(y))
    assert crf.stop_reason_ == "interrupted" and crf.n_iter_ == 0
    assert np.array_equal(crf.weights_, weights) and crf.predict(X[:1]) == [["A", "B"]]


# --------------------------------------------------------------------------- 19: warning's line
def test_convergence_warning_points_at_the_users_line():
    # it pointed at spargel's own estimator.py, whatever line of the user's called fit
    import warnings

    from spargel import CRF
    from spargel.errors import ConvergenceWarning

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]]
    y = [["A", "B"], ["B", "A"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        CRF(max_iter=1, l1=0.0, l2=0.1).fit(X, y)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert conv, [str(w.message) for w in caught]
    assert all(w.filename == __file__ and w.lineno == line for w in conv), \
        [(w.filename, w.lineno) for w in conv]
