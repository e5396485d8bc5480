"""Reliability campaign, part B: faults and data loss (items B10-B14)."""

import errno
import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from spargel import CRF
from spargel.core import files
from spargel.cli import main
from spargel.core.files import SameFileError, atomic_write, refuse_same_file

from reliability_helpers import corpus, write_corpus

PY = [sys.executable, "-m", "spargel.cli"]


def cli(*argv):
    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    train = write_corpus(d / "train.txt", corpus(60, seed=3))
    model = d / "base.model"
    assert cli("train", "--quiet", "--l1", "0.05", "--max-iter", "20", train, model) == 0
    return {"dir": d, "train": train, "model": model}


def _temporaries(folder):
    return [n for n in os.listdir(folder) if ".spargel-" in n and n.endswith(".tmp")]


def _env(**extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    src = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")
    env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _wait_for(proc, prefix, limit=120):
    """Read the child's stderr until a line starts with ``prefix``; returns the lines."""
    lines = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"no line starting with {prefix!r}:\n{''.join(lines)}")


# ---------------------------------------------------------------------------------------
# B10: CRF.save is atomic
# ---------------------------------------------------------------------------------------

def test_b10_failed_save_keeps_the_old_model(work, tmp_path, monkeypatch):
    path = tmp_path / "m.model"
    old = CRF.load(work["model"])
    old.save(path)
    before = path.read_bytes()
    other = CRF(l1=0.5, max_iter=3).fit([[{"w": "a"}, {"w": "b"}]], [["X", "Y"]])

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OSError) as info:
        other.save(path)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert path.read_bytes() == before and not _temporaries(tmp_path)

    monkeypatch.undo()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)
    with pytest.raises(KeyboardInterrupt):
        other.save(path)
    assert path.read_bytes() == before and not _temporaries(tmp_path)


def test_b10_kill_9_during_save_keeps_the_old_model(work, tmp_path):
    model = tmp_path / "m.model"
    model.write_bytes(work["model"].read_bytes())
    before = model.read_bytes()
    proc = subprocess.Popen(PY + ["train", "--l1", "0.05", "--max-iter", "3", str(work["train"]), str(model)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=_env(SPARGEL_TEST_PAUSE_IN_SAVE="60"))
    try:
        _wait_for(proc, "spargel: test pause in save")
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert model.read_bytes() == before  # the old model, whole
    left = _temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(".m.model.spargel-")  # named so it is found
    # B14: the next save of that model removes what the killed process left
    assert cli("train", "--quiet", "--max-iter", "2", work["train"], model) == 0
    assert not _temporaries(tmp_path)
    CRF.load(model)


# ---------------------------------------------------------------------------------------
# B11: symlinks are written through; non-regular targets are refused
# ---------------------------------------------------------------------------------------

def test_b11_symlink_is_updated_not_replaced(work, tmp_path):
    (tmp_path / "v1.model").write_bytes(b"old")
    link = tmp_path / "current.model"
    link.symlink_to("v1.model")
    assert cli("train", "--quiet", "--max-iter", "2", work["train"], link) == 0
    assert link.is_symlink() and os.readlink(link) == "v1.model"
    assert CRF.load(tmp_path / "v1.model").classes_


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_b11_devices_and_pipes_are_written_through_never_replaced(work, tmp_path, capsys, kind):
    """A character device or a named pipe is written in place (never replaced by a
    regular file); a pipe that no process reads is an error, not a wait."""
    if kind == "fifo":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    else:                                   # a private /dev/null: a regression must not replace the real one
        target = str(tmp_path / "null")
        try:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except OSError:
            pytest.skip("making a device node needs root")
    rc = cli("train", "--quiet", "--max-iter", "2", work["train"], target)
    err = capsys.readouterr().err
    if kind == "fifo":
        assert rc == 1 and err.count("\n") == 1 and "no process reads" in err
        with pytest.raises(OSError, match="no process reads"):
            CRF.load(work["model"]).save(target)
    else:
        assert rc == 0, err
        CRF.load(work["model"]).save(target)
    mode = os.stat(target).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)
    assert not _temporaries(os.path.dirname(os.path.abspath(target))) or kind == "device"


# ---------------------------------------------------------------------------------------
# B12: an output that is an input is refused
# ---------------------------------------------------------------------------------------

def test_b12_same_path_as_input_and_output(work, tmp_path, capsys):
    small = tmp_path / "small.txt"
    small.write_bytes(work["train"].read_bytes())
    data = small.read_bytes()
    model = tmp_path / "m.model"
    model.write_bytes(work["model"].read_bytes())
    cases = [
        ["train", small, small],
        ["train", "--history", small, small, tmp_path / "new.model"],
        ["train", "--dev", small, "--history", small, work["train"], tmp_path / "new.model"],
        ["train", "--history", tmp_path / "x.model", small, tmp_path / "x.model"],
        ["label", "-m", model, small, model],
        ["label", "-m", model, small, small],
        ["label", "-m", model, small, tmp_path / "." / "small.txt"],
    ]
    for argv in cases:
        rc = cli(*argv)
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and ("destroy the input" in err or "same file" in err), (argv, err)
    assert small.read_bytes() == data and CRF.load(model)
    hist = tmp_path / "h.jsonl"
    hist.write_text('{"iteration": 1, "objective": 2.0, "active": 3, "elapsed": 0.1}\n')
    assert cli("plot", hist, "-o", hist) == 2
    assert hist.read_text().startswith("{")
    # the helper for other commands (gmrf --out-precision): links and spellings are caught
    os.link(small, tmp_path / "hard.txt")
    (tmp_path / "soft.txt").symlink_to(small)
    for out in (tmp_path / "hard.txt", tmp_path / "soft.txt", f"{tmp_path}/./small.txt"):
        with pytest.raises(SameFileError):
            refuse_same_file({"--out-precision": out}, {"CSV": small})
    refuse_same_file({"--out-precision": tmp_path / "p.csv"}, {"CSV": small, "other": "-"})


# ---------------------------------------------------------------------------------------
# B13: history failures, Ctrl-C in streaming and during the final save, iteration count
# ---------------------------------------------------------------------------------------

def test_b13_history_failure_keeps_the_model(work, tmp_path, capsys):
    model = tmp_path / "m.model"
    rc = cli("train", "--max-iter", "5", "--history", "/dev/full", work["train"], model)
    err = capsys.readouterr().err
    assert rc == 1 and "/dev/full" in err and "training goes on" in err
    assert err.strip().splitlines()[-1].startswith("spargel: error: /dev/full")
    assert CRF.load(model).n_active_features_ > 0


def test_b13_iteration_count_after_an_interrupt_inside_an_iteration(work, tmp_path, capsys, monkeypatch):
    from spargel.chain import crf as crf_model

    calls = {"n": 0}
    real = crf_model.ChainCRF.loss_grad

    def flaky(self, w):
        calls["n"] += 1
        if calls["n"] == 7:  # the second Ctrl-C lands in the middle of an iteration
            raise KeyboardInterrupt
        return real(self, w)

    monkeypatch.setattr(crf_model.ChainCRF, "loss_grad", flaky)
    model = tmp_path / "m.model"
    rc = cli("train", "--max-iter", "50", "--tol", "0", "--gtol", "0", work["train"], model)
    err = capsys.readouterr().err
    iters = [ln for ln in err.splitlines() if ln.startswith("iter ")]
    summary = next(ln for ln in err.splitlines() if "stopped after" in ln)
    assert rc == 130 and f"stopped after {len(iters)} iterations (interrupted)" in summary, err
    assert CRF.load(model).n_active_features_ >= 0


def test_b13_ctrl_c_during_streaming_writes_the_model(tmp_path):
    train = write_corpus(tmp_path / "big.txt", corpus(3000, seed=4))
    model = tmp_path / "stream.model"
    proc = subprocess.Popen(PY + ["train", "--stream", "50", "--max-iter", "1000", "--l1", "0.1",
                                  str(train), str(model)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env())
    try:
        _wait_for(proc, "pass ")
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130 and "Traceback" not in rest and "interrupted" in rest, rest
    assert CRF.load(model).predict([[["the", "DT"], ["dog", "NN"]]])[0][0]


def test_b13_second_ctrl_c_during_the_final_save(work, tmp_path):
    train = write_corpus(tmp_path / "big.txt", corpus(1500, seed=5))
    model = tmp_path / "m.model"
    proc = subprocess.Popen(PY + ["train", "--l1", "0.01", "--max-iter", "100000", "--tol", "0", "--gtol", "0",
                                  str(train), str(model)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=_env(SPARGEL_TEST_PAUSE_IN_SAVE="1.5"))
    try:
        _wait_for(proc, "iter ")
        proc.send_signal(signal.SIGINT)
        _wait_for(proc, "spargel: test pause in save")
        proc.send_signal(signal.SIGINT)  # the second Ctrl-C, while the model is being written
        rest = proc.stderr.read()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130 and "Traceback" not in rest and "finishing the save" in rest, rest
    assert CRF.load(model).n_active_features_ > 0
    assert not _temporaries(tmp_path)


# ---------------------------------------------------------------------------------------
# B14: OS errors name the file; partial outputs never stay
# ---------------------------------------------------------------------------------------

def test_b14_full_disk_on_stdout_names_it(work, tmp_path):
    data = write_corpus(tmp_path / "in.txt", corpus(200, seed=6))
    with open("/dev/full", "w") as full:
        r = subprocess.run(PY + ["label", "-m", str(work["model"]), str(data)], stdout=full,
                           stderr=subprocess.PIPE, text=True, env=_env())
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("spargel: error: <stdout>: No space left on device")


def test_b14_failed_label_output_leaves_nothing(work, tmp_path, capsys, monkeypatch):
    data = write_corpus(tmp_path / "in.txt", corpus(20, seed=7))
    out = tmp_path / "out.txt"

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    rc = cli("label", "-m", work["model"], data, out)
    err = capsys.readouterr().err
    assert rc == 1 and f"{out}: No space left on device" in err
    assert not out.exists() and not _temporaries(tmp_path)


def test_b14_atomic_write_text_and_permissions(tmp_path):
    path = tmp_path / "f.txt"
    old = os.umask(0o027)
    try:
        with atomic_write(path, "w") as fh:
            fh.write("x")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        os.chmod(path, 0o600)
        with atomic_write(path, "w") as fh:
            fh.write("y")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "y"
    finally:
        os.umask(old)
    with pytest.raises(RuntimeError):
        with atomic_write(path, "w") as fh:
            fh.write("partial")
            raise RuntimeError("boom")
    assert path.read_text() == "y" and not _temporaries(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with atomic_write(tmp_path / "no" / "f", "w"):
            pass
