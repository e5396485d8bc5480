"""The command line's core (spargel.cli.common) as every command uses it: the exit-status
table, the one writer (never over an input; through links, devices and pipes; permissions
kept; live writers' temporaries left alone) and the one table reader (byte-order marks,
standard input, headers and row labels that never eat a sample, numbers recoded as
numbers). Each case was a defect of the `mrf` / `gmrf` / `train` commands."""

import io
import os
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from spargel.cli import main
from spargel.errors import DataFormatError


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def chain_samples(n=300, seed=0):
    """Binary samples of a chain x0 - x1 - x2 (each copies its left neighbour 90% of the time)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3), dtype=int)
    X[:, 0] = rng.integers(0, 2, n)
    for j in (1, 2):
        flip = rng.random(n) < 0.1
        X[:, j] = np.where(flip, 1 - X[:, j - 1], X[:, j - 1])
    return X


def write_states(path, X, header=True, bom=False):
    text = ("a,b,c\n" if header else "") + "".join(",".join(map(str, r)) + "\n" for r in X)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


def gaussian_samples(m=40, n=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.8 * X[:, 0]
    return X


MRF = ["--l1", "5", "--inference", "exact", "--quiet"]


# -- the exit-status table ------------------------------------------------------------------

def test_help_prints_the_exit_status_table(capsys):
    from spargel.cli.common import EXIT_STATUSES

    rc, out, _ = run(["--help"], capsys)
    assert rc == 0
    for code, text in EXIT_STATUSES:
        assert f"  {code:<4} {text.split()[0]}" in out
    for command in ("mrf", "gmrf"):
        rc, out, _ = run([command, "--help"], capsys)
        assert rc == 0 and "exit status:" in out and "130" in out


def test_mrf_not_converging_exits_0_with_a_warning(tmp_path, capsys):
    data = write_states(tmp_path / "d.csv", chain_samples())
    rc, out, err = run(["mrf", data, "--l1", "5", "--inference", "exact", "--max-iter", "1", "--quiet"], capsys)
    assert rc == 0 and "warning" in err
    assert (tmp_path / "d.mrf").exists()


# -- outputs never overwrite inputs ---------------------------------------------------------------

@pytest.mark.parametrize("option", ["--out-edges", "--model", "--history", "--plot"])
def test_mrf_refuses_an_output_that_is_the_input(tmp_path, capsys, option):
    data = write_states(tmp_path / "in.csv", chain_samples())
    before = data.read_bytes()
    rc, out, err = run(["mrf", data, *MRF, option, data], capsys)
    assert rc == 2 and "input file" in err and err.count("\n") == 1
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_mrf_refuses_an_output_that_is_the_input_through_a_link(tmp_path, capsys):
    data = write_states(tmp_path / "in.csv", chain_samples())
    (tmp_path / "link.csv").symlink_to("in.csv")
    before = data.read_bytes()
    rc, _, err = run(["mrf", data, *MRF, "--out-edges", tmp_path / "link.csv"], capsys)
    assert rc == 2 and data.read_bytes() == before


def test_mrf_default_model_path_is_never_the_input(tmp_path, capsys):
    data = write_states(tmp_path / "data.mrf", chain_samples())       # a CSV named like a model
    before = data.read_bytes()
    rc, _, err = run(["mrf", data, *MRF], capsys)
    assert rc == 0, err
    assert data.read_bytes() == before
    assert (tmp_path / "data.mrf.mrf").exists() and (tmp_path / "data.mrf-edges.csv").exists()


def test_gmrf_refuses_an_output_that_is_the_blocks_file(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    groups = tmp_path / "g.csv"
    groups.write_text("a,a,b,b\n")
    rc, _, err = run(["gmrf", data, "--alpha", "0.1", "--blocks", groups, "--out-edges", groups], capsys)
    assert rc == 2 and groups.read_text() == "a,a,b,b\n"


# -- the writer: devices, pipes, permissions, links, atomicity -------------------------------------

def null_device(tmp_path):
    """A private character device like /dev/null (a regression must not replace the real one)."""
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("making a device node needs root")
    return path


def test_outputs_are_written_through_a_device(tmp_path, capsys):
    null = null_device(tmp_path)
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    rc, out, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", null, "--out-precision", null], capsys)
    assert rc == 2 and "same file" in err                     # two outputs, one file: refused
    rc, out, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", null, "--quiet"], capsys)
    assert rc == 0, err
    assert stat.S_ISCHR(os.stat(null).st_mode)
    rc, _, err = run(["mrf", write_states(tmp_path / "s.csv", chain_samples()), *MRF,
                      "--out-edges", null, "--history", tmp_path / "h.jsonl"], capsys)
    assert rc == 0, err
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_outputs_are_written_through_a_fifo_that_is_read(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    fifo = tmp_path / "edges.fifo"
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    for _ in range(200):                      # until the reader has the pipe open
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            break
        except OSError:
            time.sleep(0.01)
    # (that probe opened and closed the pipe once: the reader saw an empty write end and
    # is still waiting for the data only if it reopened; so read the whole stream instead)
    t.join(5)
    got.clear()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    time.sleep(0.2)
    rc, _, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", fifo, "--quiet"], capsys)
    t.join(10)
    assert rc == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].startswith(b"i,j,weight")


def test_a_fifo_nobody_reads_is_an_error_not_a_wait(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    fifo = tmp_path / "edges.fifo"
    os.mkfifo(fifo)
    rc, _, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", fifo, "--quiet"], capsys)
    assert rc == 1 and "no process reads" in err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_existing_mode_is_kept_and_umask_honoured(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    kept = tmp_path / "kept.csv"
    kept.write_text("old\n")
    os.chmod(kept, 0o640)
    old = os.umask(0o027)
    try:
        rc, _, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", kept,
                          "--out-precision", tmp_path / "new.csv", "--quiet"], capsys)
    finally:
        os.umask(old)
    assert rc == 0, err
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "new.csv").st_mode) == 0o640      # 0666 & ~027


def test_a_link_is_written_through(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    (tmp_path / "v1.csv").write_text("old\n")
    (tmp_path / "current.csv").symlink_to("v1.csv")
    rc, _, err = run(["gmrf", data, "--alpha", "0.1", "--out-edges", tmp_path / "current.csv", "--quiet"], capsys)
    assert rc == 0, err
    assert os.readlink(tmp_path / "current.csv") == "v1.csv"
    assert (tmp_path / "v1.csv").read_text().startswith("i,j,weight")


def test_mrf_edge_list_is_written_atomically(tmp_path, capsys, monkeypatch):
    from spargel.core import files

    data = write_states(tmp_path / "d.csv", chain_samples())
    edges = tmp_path / "edges.csv"
    edges.write_text("good old edges\n")
    real_fsync = os.fsync

    def full_disk(fd):
        if os.fstat(fd).st_size > 0 and os.readlink(f"/proc/self/fd/{fd}").find("edges.csv") >= 0:
            raise OSError(28, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", full_disk)
    rc, _, err = run(["mrf", data, *MRF, "--out-edges", edges], capsys)
    assert rc == 1 and "No space left on device" in err
    assert edges.read_text() == "good old edges\n"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_live_writers_temporary_is_never_removed(tmp_path):
    """A temporary whose writer holds its lock stays, whatever its process id says (a
    writer in another PID namespace has an id that means nothing here); one whose lock is
    free and that is old is removed."""
    from spargel.core import files

    target = tmp_path / "model.bin"
    live = tmp_path / f".model.bin.spargel-{2 ** 22 - 3}-abc.tmp"        # no such process here
    dead = tmp_path / f".model.bin.spargel-{2 ** 22 - 5}-def.tmp"
    for p in (live, dead):
        p.write_bytes(b"partial")
        os.utime(p, (time.time() - 3600,) * 2)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys, time\n"
                               f"fh = open({str(live)!r}, 'rb'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
                               "print('locked', flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with files.atomic_write(target, "wb") as fh:
            fh.write(b"complete")
        assert live.exists() and not dead.exists()
        assert target.read_bytes() == b"complete"
    finally:
        holder.kill()
        holder.wait()


# -- the table reader -------------------------------------------------------------------------------

def test_byte_order_mark_is_not_part_of_a_name_or_a_state(tmp_path):
    from spargel.cli.mrf import read_states_csv

    X = chain_samples(50)
    _, names, levels = read_states_csv(str(write_states(tmp_path / "h.csv", X, header=True, bom=True)))
    assert names == ["a", "b", "c"]
    Xr, names, levels = read_states_csv(str(write_states(tmp_path / "n.csv", X, header=False, bom=True)))
    assert names is None and len(Xr) == 50 and levels[0] == ["0", "1"]


def test_numbers_are_recoded_as_numbers():
    from spargel.cli.common import read_table_text

    t = read_table_text("1,a\n1.0,b\n2,a\n1e0,b\n", "<s>", header=False, numeric=False)
    assert t.rows[1] == ["1.0", "b"]
    from spargel.cli.mrf import read_states_csv
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
        fh.write("x,y\n1,a\n1.0,b\n2,a\n1e0,b\n10,a\n")
    try:
        X, names, levels = read_states_csv(fh.name)
    finally:
        os.unlink(fh.name)
    assert levels[0] == ["1", "2", "10"] and X[:, 0].tolist() == [0, 0, 1, 0, 2]


def test_rows_with_labels_and_no_header_keep_every_sample():
    from spargel.cli.common import read_table_text

    text = "s1,1.5,2.0\ns2,0.5,1.0\ns3,2.5,0.0\n"
    t = read_table_text(text, "<s>", header=None, numeric=True)
    assert t.names is None and t.row_names == ["s1", "s2", "s3"] and len(t.rows) == 3
    t = read_table_text("id,u,v\n" + text, "<s>", header=None, numeric=True)
    assert t.names == ["u", "v"] and len(t.rows) == 3
    t = read_table_text("u,v\n" + text, "<s>", header=None, numeric=True)       # header over row labels
    assert t.names == ["u", "v"] and t.row_names == ["s1", "s2", "s3"]


def test_gmrf_header_less_file_with_row_labels_loses_no_sample(tmp_path, capsys):
    X = gaussian_samples(m=30)
    data = tmp_path / "d.csv"
    data.write_text("".join(f"s{k}," + ",".join(repr(float(v)) for v in r) + "\n" for k, r in enumerate(X)))
    rc, out, err = run(["gmrf", data, "--alpha", "0.05", "--out-precision", "-", "--out-edges",
                        tmp_path / "e.csv", "--quiet"], capsys)
    assert rc == 0, err
    from spargel.gaussian.estimator import SparseGaussianMRF
    K = np.loadtxt(io.StringIO(out), delimiter=",")
    np.testing.assert_allclose(K, SparseGaussianMRF(alpha=0.05).fit(X).precision_, rtol=1e-10)


def test_ambiguous_header_is_an_error_with_a_choice(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("color,size\nred,big\nblue,small\nred,small\ngreen,big\n")    # could be either
    rc, _, err = run(["mrf", data, *MRF], capsys)
    assert rc == 1 and "--header or --no-header" in err
    rc, _, err = run(["mrf", data, *MRF, "--no-header"], capsys)
    assert rc == 0, err
    from spargel.cli.common import read_table_text
    with pytest.raises(DataFormatError, match="--header or --no-header"):
        read_table_text("x,y\np,q\nr,s\n", "<s>", header=None, numeric=False)


def test_standard_input(tmp_path, capsys, monkeypatch):
    X = chain_samples(200)
    text = "a,b,c\n" + "".join(",".join(map(str, r)) + "\n" for r in X)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    rc, out, err = run(["mrf", "-", *MRF, "--out-edges", "-", "--model", tmp_path / "m.mrf"], capsys)
    assert rc == 0, err
    assert out.startswith("i,j,strength,name_i,name_j")
    G = gaussian_samples()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        "".join(",".join(repr(float(v)) for v in r) + "\n" for r in G).encode())))
    rc, out, err = run(["gmrf", "-", "--alpha", "0.1", "--quiet"], capsys)
    assert rc == 0 and out.startswith("i,j,weight"), err


# -- option values ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["--alpha", "0.1", "--cv", "3"], "either --alpha or --cv"),
    (["--cv", "3", "--seed", "-1"], "--seed"),
    (["--cv", "3", "--n-alphas", "100000000"], "--n-alphas"),
    (["--alpha", "nan"], "--alpha"),
])
def test_gmrf_bad_option_values_name_the_option(tmp_path, capsys, argv, option):
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in gaussian_samples()))
    rc, out, err = run(["gmrf", data, *argv], capsys)
    assert rc == 2 and option in err and err.count("\n") == 1 and "Traceback" not in err


def test_train_with_every_label_unknown_says_so(tmp_path, capsys):
    data = tmp_path / "t.txt"
    data.write_text("the DT ?\ndog NN ?\n\na DT ?\n")
    rc, _, err = run(["train", "--unknown-label", "?", data, tmp_path / "m.model"], capsys)
    assert rc == 1 and "unknown mark" in err and "StopIteration" not in err and err.count("\n") == 1
