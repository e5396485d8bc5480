"""The training file's one data source: streamed, in memory and by byte ranges, the same
sentences with the same line numbers; one line decoder for all three."""

import io
import sys

import pytest

from spargel.data.column_file import ColumnFile
from spargel.data.conll import read_conll
from spargel.errors import DataFormatError

TEXT = ("-DOCSTART- -X- O\n\nHe PRP B-NP\nruns VBZ _\n\n\nWell UH O\nthen RB _\nso RB O\n\n"
        "Ok UH B-NP\n")


def _write(tmp_path, data, name="t.txt"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def _view(sents):
    return [(s.line, s.columns, s.labels, s.source) for s in sents]


def test_three_ways_read_the_same_sentences(tmp_path):
    path = _write(tmp_path, TEXT)
    f = ColumnFile(path, unknown_label="_")
    streamed, in_memory = list(f.sentences()), f.read()
    assert _view(streamed) == _view(in_memory)
    for n in (1, 2, 3, 7, 40):
        ranged = [s for a, b in f.ranges(n) for s in f.read_range(a, b)]
        assert _view(ranged) == _view(in_memory)
    # what read_conll reads, the unknown mark read as None
    plain = list(read_conll(path))
    assert [s.line for s in plain] == [s.line for s in in_memory] == [3, 7, 11]
    assert in_memory[0].labels == ["B-NP", None] and plain[0].labels == ["B-NP", "_"]
    assert f.count() == 3 and f.first().line == 3


def test_bytes_read_counts_the_file(tmp_path):
    path = _write(tmp_path, TEXT)
    f = ColumnFile(path)
    assert f.read() and f.bytes_read == len(TEXT.encode()) == f.size()


def test_decoding_errors_name_file_line_and_byte_in_every_way(tmp_path):
    data = b"a X B\n\nb Y I\nc\xff Z O\n"
    path = _write(tmp_path, data)
    f = ColumnFile(path, hint=" (try latin-1)")
    byte = data.index(b"\xff") + 1
    want = f"{path}:4: not utf-8 text (byte {byte}: "
    for read in (f.read, lambda: list(f.sentences()),
                 lambda: [s for a, b in f.ranges(3) for s in f.read_range(a, b)]):
        with pytest.raises(DataFormatError) as exc:
            read()
        assert str(exc.value).startswith(want) and str(exc.value).endswith("(try latin-1)")
    assert ColumnFile(path, encoding="latin-1").read()[1].columns[1] == ["c\u00ff", "Z"]


def test_byte_order_mark_dropped_only_at_the_start(tmp_path):
    path = _write(tmp_path, "\ufeffa X B\n\n\ufeffb Y I\n")
    sents = ColumnFile(path).read()
    assert sents[0].columns == [["a", "X"]] and sents[1].columns == [["\ufeffb", "Y"]]
    ranged = [s for a, b in ColumnFile(path).ranges(2) for s in ColumnFile(path).read_range(a, b)]
    assert _view(ranged) == _view(sents)


def test_refused_before_reading(tmp_path):
    with pytest.raises(DataFormatError, match="a binary file"):
        ColumnFile(_write(tmp_path, b"a\x00b X\n"))
    with pytest.raises(DataFormatError, match="is a directory"):
        ColumnFile(tmp_path)
    with pytest.raises(LookupError):
        ColumnFile(_write(tmp_path, TEXT), encoding="klingon")
    with pytest.raises(DataFormatError, match="no sequences"):
        ColumnFile(_write(tmp_path, "\n\n", "empty.txt")).read()


def test_utf16_is_read(tmp_path):
    path = _write(tmp_path, "a X B\nb Y I\n".encode("utf-16"))
    (s,) = ColumnFile(path, encoding="utf-16").read()
    assert s.labels == ["B", "I"]


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEXT.encode())))
    f = ColumnFile("-", unknown_label="_")
    assert f.name == "<stdin>" and [s.line for s in f.read()] == [3, 7, 11]
    assert [s.line for s in f.sentences()] == [3, 7, 11]      # read again: the bytes were kept
    with pytest.raises(ValueError, match="no byte ranges"):
        f.read_range(0, 10)
