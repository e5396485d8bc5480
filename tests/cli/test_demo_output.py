"""``spargel demo`` (what ``make demo`` runs) says what it is doing while kernels compile
and models train, and leaves nothing in the folder it runs in: its picture goes to a
new temporary folder, whose path it prints."""

import io
import os
import re
import time

import pytest

from spargel.cli import main


def test_demo_writes_no_file_in_the_current_folder(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    rc = main(["demo", "--quick", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert list(work.iterdir()) == []                      # nothing lands in the cwd
    written = re.search(r"plot written to (\S+)", out).group(1)
    assert os.path.isfile(written) and os.path.getsize(written) > 0
    assert not os.path.abspath(written).startswith(str(work))
    # progress while it compiles and trains
    assert "compiling the kernels" in out and "training owlqn l1=8" in out


def test_heartbeat_reports_a_long_step():
    from spargel.cli.demo import _heartbeat

    buf = io.StringIO()
    with _heartbeat(buf, "  ... still compiling", every=0.01):
        deadline = time.monotonic() + 5
        while "still compiling" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "  ... still compiling (" in buf.getvalue()
