"""The history plots: a real PNG of the expected size with non-blank content."""

import json
import struct
import sys
import zlib

import pytest

from spargel.cli import main
from spargel.core.plot import MissingMatplotlibError, import_pyplot, load_history, plot_histories

pytest.importorskip("matplotlib")


def _history(n, rate, active0, dev=False):
    rows = []
    for i in range(1, n + 1):
        row = {"iteration": i, "objective": 100.0 + 1000.0 * rate ** i, "loss": 90.0, "penalty": 10.0,
               "active": int(active0 / (1 + 0.3 * i)), "n_evals": i + 1, "elapsed": 0.05 * i}
        if dev:
            row["dev_accuracy"] = 0.9 - 0.5 * rate ** i
            row["dev_f1"] = 0.85 - 0.5 * rate ** i
        rows.append(row)
    return rows


def _png_info(path):
    """(width, height, colour type) from a PNG's IHDR chunk, after checking every chunk's CRC."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in chunk {kind!r}"
        chunks.append(kind)
        pos += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _check_image(path, width, height):
    import numpy as np
    from matplotlib.image import imread

    assert _png_info(path) == (width, height)
    img = imread(str(path))
    assert img.shape[:2] == (height, width)
    rgb = img[..., :3]
    not_white = np.any(rgb < 0.95, axis=-1)
    assert 0.01 < not_white.mean() < 0.6, "image blank or filled"
    colours = {tuple(c) for c in np.round(rgb.reshape(-1, 3) * 8).astype(int)[::37]}
    assert len(colours) >= 4, "expected lines in several colours"
    # content spread over the whole figure, not one corner
    h3, w3 = height // 3, width // 3
    for i in range(3):
        assert not_white[:, i * w3:(i + 1) * w3].any()
    assert not_white[h3:2 * h3].any()


def test_plot_histories_png(tmp_path):
    out = tmp_path / "runs.png"
    runs = [("owlqn", _history(40, 0.8, 5000, dev=True)), ("lbfgs", _history(25, 0.6, 8000))]
    fig = plot_histories(runs, out, figsize=(9, 3), dpi=80)
    assert len(fig.axes) == 3  # objective, active features, dev F1
    _check_image(out, 720, 240)


def test_plot_without_dev_has_two_panels(tmp_path):
    out = tmp_path / "one.png"
    fig = plot_histories({"a": _history(10, 0.7, 100)}, out, x="iteration", figsize=(6, 3), dpi=50)
    assert len(fig.axes) == 2
    _check_image(out, 300, 150)


def test_plot_command(tmp_path, capsys):
    h1, h2 = tmp_path / "owlqn.jsonl", tmp_path / "lbfgs.jsonl"
    h1.write_text("\n".join(json.dumps(r) for r in _history(30, 0.8, 3000, dev=True)) + "\n")
    h2.write_text("\n".join(json.dumps(r) for r in _history(30, 0.7, 6000, dev=True)) + "\n\n")
    out = tmp_path / "cmp.png"
    rc = main(["plot", str(h1), str(h2), "--out", str(out), "--dpi", "50", "--label", "A", "--label", "B"])
    assert rc == 0
    _check_image(out, 600, 180)  # default: 4 x 3.6 inches per panel, 3 panels
    rc = main(["plot", str(h1)])
    assert rc == 0 and (tmp_path / "owlqn.png").exists()
    capsys.readouterr()


def test_history_written_by_train_is_plottable(tmp_path, capsys):
    train = tmp_path / "t.txt"
    train.write_text("a X\nb Y\n\nb Y\na X\n\na X\n\n")
    hist = tmp_path / "h.jsonl"
    assert main(["train", "-q", "--l1", "0.01", "--max-iter", "5", "--history", str(hist), str(train),
                 str(tmp_path / "m")]) == 0
    rows = load_history(hist)
    assert rows and "objective" in rows[0]
    assert main(["plot", str(hist), "-o", str(tmp_path / "h.png"), "--dpi", "40"]) == 0
    _check_image(tmp_path / "h.png", 320, 144)


@pytest.mark.parametrize("content, where", [
    ("not json\n", ":1:"),
    ('{"objective": 1}\n[1, 2]\n', ":2:"),
    ('{"iteration": 1}\n', ":1:"),
    ("", "empty"),
])
def test_bad_history_is_a_one_line_error(tmp_path, capsys, content, where):
    h = tmp_path / "bad.jsonl"
    h.write_text(content)
    rc = main(["plot", str(h), "--out", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and where in err and "Traceback" not in err
    assert not (tmp_path / "x.png").exists()


def test_missing_matplotlib_message(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingMatplotlibError, match=r"pip install 'spargel\[plot\]'"):
        import_pyplot()
    assert issubclass(MissingMatplotlibError, ImportError)
    h = tmp_path / "h.jsonl"
    h.write_text(json.dumps(_history(3, 0.5, 10)[0]) + "\n")
    rc = main(["plot", str(h)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "spargel[plot]" in err
