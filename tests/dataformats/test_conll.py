"""Tests for the CoNLL column reader and writer (spargel.data.conll)."""

import io
import random

import pytest

from spargel.data.conll import Sentence, parse_text, read_conll, write_conll
from spargel.data.errors import DataFormatError


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------- errors class
def test_error_str_with_and_without_line():
    err = DataFormatError("a.txt", 3, "bad")
    assert (err.source, err.line, err.message) == ("a.txt", 3, "bad")
    assert str(err) == "a.txt:3: bad"
    assert str(DataFormatError("<stdin>", None, "no sequences")) == "<stdin>: no sequences"
    assert isinstance(err, ValueError)


# --------------------------------------------------------------------- reading
def test_whitespace_columns_labels_and_lines(tmp_path):
    path = write(tmp_path, "He PRP B-NP\nreckons  VBZ\tB-VP\n\nOK UH O\n\n")
    sents = list(read_conll(path))
    assert len(sents) == 2
    a, b = sents
    assert a.columns == [["He", "PRP"], ["reckons", "VBZ"]]
    assert a.labels == ["B-NP", "B-VP"]
    assert (a.line, a.source) == (1, str(path))
    assert [a.line_of(0), a.line_of(1), a.line_of(-1)] == [1, 2, 2]
    assert b.columns == [["OK", "UH"]] and b.labels == ["O"] and b.line == 4
    assert len(a) == 2
    with pytest.raises(IndexError):
        a.line_of(2)


def test_without_labels_all_columns_are_observations(tmp_path):
    path = write(tmp_path, "He PRP\nruns VBZ\n")
    (s,) = read_conll(path, has_labels=False)
    assert s.columns == [["He", "PRP"], ["runs", "VBZ"]]
    assert s.labels is None
    (s,) = read_conll(write(tmp_path, "a\nb\n", "one.txt"), has_labels=False)
    assert s.columns == [["a"], ["b"]]


def test_tab_separator_keeps_spaces_inside_fields(tmp_path):
    path = write(tmp_path, "New York\tNNP NNP\tB-LOC\nis\tVBZ\tO\n")
    (s,) = read_conll(path, separator="\t")
    assert s.columns == [["New York", "NNP NNP"], ["is", "VBZ"]]
    assert s.labels == ["B-LOC", "O"]
    # the same file split on any whitespace is ragged: 5 fields, then 3
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(path))
    assert exc.value.line == 2


def test_crlf_line_endings(tmp_path):
    path = write(tmp_path, "a\tX\tO\r\nb\tY\tB\r\n\r\n")
    (s,) = read_conll(path, separator="\t")
    assert s.columns == [["a", "X"], ["b", "Y"]] and s.labels == ["O", "B"]
    (s,) = read_conll(path)
    assert s.labels == ["O", "B"]


def test_docstart_blank_runs_and_missing_final_blank(tmp_path):
    text = (
        "-DOCSTART- -X- O\n"   # 1
        "\n"                   # 2
        "a X B\n"              # 3
        "b Y I\n"              # 4
        "\n"                   # 5
        "   \n"                # 6 whitespace only: blank
        "\t\n"                 # 7
        "c Z O\n"              # 8
        "-DOCSTART- -X- O\n"   # 9 separator without a blank line
        "d Z O\n"              # 10
        "e Z O"                # 11 no final newline
    )
    sents = list(read_conll(write(tmp_path, text)))
    assert [s.labels for s in sents] == [["B", "I"], ["O"], ["O", "O"]]
    assert [s.line for s in sents] == [3, 8, 10]
    assert sents[2].columns == [["d", "Z"], ["e", "Z"]]


def test_ragged_row_names_file_line_and_counts(tmp_path):
    path = write(tmp_path, "a X B\nb Y I\n\nc Z\n")
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(path))
    err = exc.value
    assert err.source == str(path) and err.line == 4
    assert "expected 3 columns" in err.message and "found 2" in err.message
    assert str(err).startswith(f"{path}:4: ")


def test_ragged_inside_a_sentence(tmp_path):
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(write(tmp_path, "a X B\nb Y Z I\n")))
    assert exc.value.line == 2 and "found 4" in exc.value.message


def test_label_without_observation_column(tmp_path):
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(write(tmp_path, "\nB-NP\nI-NP\n")))
    assert exc.value.line == 2


@pytest.mark.parametrize("text", ["", "\n\n  \n", "-DOCSTART- -X- O\n\n"])
def test_no_sequences(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(path))
    assert exc.value.line is None and "no sequences" in exc.value.message
    assert exc.value.source == str(path)


def test_bad_encoding_names_the_line(tmp_path):
    path = write(tmp_path, b"a X B\n\nb Y I\nc\xff Z O\n")
    it = read_conll(path)
    assert next(it).labels == ["B"]  # streaming: the good part comes first
    with pytest.raises(DataFormatError) as exc:
        list(it)
    assert exc.value.line == 4 and "utf-8" in exc.value.message
    # another encoding reads it
    sents = list(read_conll(path, encoding="latin-1"))
    assert sents[1].columns[1] == ["c\u00ff", "Z"]


def test_utf8_bom_is_dropped(tmp_path):
    (s,) = read_conll(write(tmp_path, "\ufeffa X B\n"))
    assert s.columns == [["a", "X"]]


def test_file_objects(tmp_path):
    (s,) = read_conll(io.StringIO("a X B\nb Y I\n"))
    assert s.source == "<stream>" and s.labels == ["B", "I"]
    path = write(tmp_path, "a X B\n")
    with open(path, encoding="utf-8") as fh:
        (s,) = read_conll(fh)
    assert s.source == str(path)
    with open(path, "rb") as fh:  # binary streams are decoded line by line
        (s,) = read_conll(fh)
    assert s.columns == [["a", "X"]]
    with pytest.raises(DataFormatError) as exc:
        list(read_conll(io.BytesIO(b"a X B\nb\xff Y I\n")))
    assert exc.value.line == 2


# --------------------------------------------------------------------- writing
def test_write_conll_roundtrip(tmp_path):
    sents = list(read_conll(write(tmp_path, "a X B\nb Y I\n\nc Z O\n")))
    out = tmp_path / "out.txt"
    n = write_conll(out, [s.columns for s in sents], [s.labels for s in sents])
    assert n == 2
    assert out.read_text() == "a\tX\tB\nb\tY\tI\n\nc\tZ\tO\n\n"
    again = list(read_conll(out, separator="\t"))
    assert [s.columns for s in again] == [s.columns for s in sents]
    assert [s.labels for s in again] == [s.labels for s in sents]


def test_write_conll_several_extras_and_space_separator():
    buf = io.StringIO()
    write_conll(buf, [[["a", "X"]]], [[("B", "I")]], separator=" ")
    assert buf.getvalue() == "a X B I\n\n"
    buf = io.StringIO()
    write_conll(buf, [[["a"], ["b"]]])
    assert buf.getvalue() == "a\nb\n\n"


def test_write_conll_length_mismatch():
    with pytest.raises(ValueError):
        write_conll(io.StringIO(), [[["a"], ["b"]]], [["B"]])
    with pytest.raises(ValueError):
        write_conll(io.StringIO(), [[["a"]]], [["B"], ["C"]])


def test_sentence_repr():
    s = Sentence([["a"]], ["B"], 3, "f.txt")
    assert "f.txt:3" in repr(s)


def test_columns_split_on_ascii_space_and_tab_only(tmp_path):
    # CRF++ and Wapiti split on ' ' and '\t': an ideographic space (CRF++'s seg example),
    # a no-break space or any other space character is part of the token
    text = "\u3000\tk\tB\na\u00a0b  c\tI\n \t\nx\u2003y c O\r\n"
    sents = list(read_conll(io.StringIO(text)))
    assert [s.columns for s in sents] == [[["\u3000", "k"], ["a\u00a0b", "c"]], [["x\u2003y", "c"]]]
    assert [s.labels for s in sents] == [["B", "I"], ["O"]]


def test_encoding_of_crfpp_japanese_ne_data(tmp_path):
    # CRF++'s JapaneseNE example is EUC-JP, with U+3000 inside tokens
    f = tmp_path / "ne.txt"
    f.write_bytes("\u3000 記号 O\n東京 名詞 B-LOCATION\n".encode("euc-jp"))
    (s,) = read_conll(f, encoding="euc-jp")
    assert s.columns == [["\u3000", "記号"], ["東京", "名詞"]] and s.labels == ["O", "B-LOCATION"]


def test_byte_ranges_agree_with_read_conll_on_unicode_spaces(tmp_path):
    # the distributed reader cuts files at sequence boundaries: the same rule as read_conll
    from spargel.chain.conll_ranges import read_range, split_ranges

    text = "".join(f"\u3000 k{i} B\na\u00a0b c I\n\n\u3000\u3000 k O\n\n" for i in range(30))
    f = write(tmp_path, text)
    whole = [s.columns for s in read_conll(f)]
    size = f.stat().st_size
    for n in (2, 3, 7):
        parts = [s.columns for a, b in split_ranges(size, n) for s in read_range(f, a, b)]
        assert parts == whole


def _read_all(text, has_labels, separator=None):
    """read_conll's sentences of ``text`` as plain values, or its error's text."""
    stream = io.StringIO(text)
    stream.name = "t.txt"
    try:
        return [(s.columns, s.labels, s.line, s.source)
                for s in read_conll(stream, has_labels=has_labels, separator=separator)]
    except DataFormatError as exc:
        return str(exc)


def _parse_all(text, has_labels, separator=None):
    try:
        return [(s.columns, s.labels, s.line, s.source)
                for s in parse_text(text, "t.txt", has_labels=has_labels, separator=separator)]
    except DataFormatError as exc:
        return str(exc)


@pytest.mark.parametrize("has_labels", [True, False])
def test_parse_text_is_read_conll(has_labels):
    """The whole-text parser against the line reader on random files: blank lines of
    spaces and tabs, CRLF, other space characters, document markers, ragged lines, a text
    without a final new line, an empty one."""
    rng = random.Random(3 + has_labels)
    pieces = ["a", "B", "x1", "-DOCSTART-", "\u3000", "\x0c", "\u00e9", ""]
    seps = [" ", "  ", "\t", " \t "]
    fast = 0
    for trial in range(1500):
        width = rng.randint(1, 3)
        lines = []
        for _ in range(rng.randint(0, 12)):
            r = rng.random()
            if r < 0.2:
                lines.append(rng.choice(["", " ", "\t", " \t"]))
                continue
            w = width if rng.random() < 0.97 else width + 1
            words = [rng.choice(pieces[:3]) if rng.random() < 0.98 else rng.choice(pieces[3:]) for _ in range(w)]
            words = [x or "y" for x in words]
            lines.append(rng.choice(["", " "]) + rng.choice(seps).join(words) + rng.choice(["", " ", "\r"]))
        text = "\n".join(lines) + rng.choice(["", "\n", "\n\n"])
        expected = _read_all(text, has_labels)
        assert _parse_all(text, has_labels) == expected, text
        assert _parse_all(text, has_labels, "\t") == _read_all(text, has_labels, "\t"), text
        fast += isinstance(expected, list) and text.isascii() and not any(c in text for c in "\r\x0c-")
    assert fast > 120     # (texts the whole-text path reads)
