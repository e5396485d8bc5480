"""``spargel train`` as one pipeline (``cli/train.py``): what each way of training reads
is the same (the unknown-label mark, the outputs), what a way does not read is refused
by name, and the pieces it is made of (``data/templates.training_template``,
``data/column_file``'s weight column and label checks, ``chain/wapiti_format``'s
refusal) keep the messages the command gave."""

import os

import pytest

from spargel.chain.estimator import CRF
from spargel.cli import main
from spargel.data.column_file import ColumnFile, check_two_labels, take_weight_column
from spargel.data.templates import default_template, trained_columns, training_template
from spargel.errors import DataFormatError

from test_cli import make_corpus, write_corpus


def _corpus(tmp_path, n=40, seed=0, unknown_every=0):
    """A column file; with ``unknown_every`` every so many tokens' label is the mark '?'."""
    path = tmp_path / "train.txt"
    sents = make_corpus(n, seed)
    if unknown_every:
        k = 0
        marked = []
        for s in sents:
            row = []
            for w, p, t in s:
                k += 1
                row.append((w, p, "?" if k % unknown_every == 0 else t))
            marked.append(row)
        sents = marked
    write_corpus(path, sents)
    return path


def test_stream_reads_the_unknown_label_mark_as_every_way_does(tmp_path):
    """--stream honours --unknown-label (the mark is no label of the model), as the
    in-memory way does; before, the streamed way read the mark as one more label."""
    path = _corpus(tmp_path, unknown_every=7)
    for way, extra in (("stream", ["--stream", "10", "--max-iter", "2"]), ("memory", ["--max-iter", "5"])):
        model = tmp_path / f"{way}.model"
        assert main(["train", "--quiet", "--unknown-label", "?", *extra, str(path), str(model)]) == 0
        labels = set(CRF.load(str(model)).classes_)
        assert "?" not in labels and {"B-NP", "I-NP", "B-VP"} <= labels


@pytest.mark.parametrize("extra, option", [
    (["--stream", "5", "--dev", "{train}"], "--dev"),
    (["--stream", "5", "--weight-column", "1"], "--weight-column"),
    (["--stream", "5", "--constraints", "bio"], "--constraints"),
    (["--shards", "3"], "--shards"),
    (["--init", "{train}"], "--init"),
])
def test_options_a_way_does_not_read_are_refused_before_reading(tmp_path, capsys, extra, option):
    """Usage errors (exit 2), before the training file is read: here it does not
    even exist."""
    missing = str(tmp_path / "no-such-file.txt")
    args = [a.format(train=missing) for a in extra]
    rc = main(["train", "--quiet", *args, missing, str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert option in err and "no such file" not in err
    assert not os.path.exists(tmp_path / "m")


def test_history_is_left_alone_when_training_fails_before_its_first_iteration(tmp_path, capsys):
    """The --history file is opened at the first iteration's row: a file that fails while
    it is streamed into the encoder (a byte that is not UTF-8 in its third sequence)
    leaves an earlier history as it was (before, it was emptied)."""
    path = tmp_path / "bad.txt"
    write_corpus(path, make_corpus(3, 1))
    with open(path, "ab") as fh:
        fh.write(b"\nw\xff P B-NP\n")
    history = tmp_path / "history.jsonl"
    history.write_text("the earlier run\n")
    rc = main(["train", "--quiet", "--history", str(history), str(path), str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "bad.txt:" in err and "utf-8" in err.lower()
    assert history.read_text() == "the earlier run\n"
    assert not os.path.exists(tmp_path / "m")


def test_history_is_written_row_by_row(tmp_path):
    path = _corpus(tmp_path)
    history = tmp_path / "history.jsonl"
    assert main(["train", "--quiet", "--max-iter", "4", "--history", str(history), str(path),
                 str(tmp_path / "m")]) == 0
    rows = history.read_text().splitlines()
    assert 1 <= len(rows) <= 4 and all(r.startswith("{") for r in rows)


def test_wapiti_model_to_standard_output_is_the_file(tmp_path, capfd):
    """``--model-format wapiti`` with MODEL '-' writes the model to standard output (as
    ``wapiti train`` without an output file), byte for byte the file it writes."""
    path = _corpus(tmp_path)
    pattern = tmp_path / "pat.txt"
    pattern.write_text("# format: wapiti\nu:w=%x[0,0]\nu:p=%x[0,1]\nb\n")
    common = ["train", "--quiet", "--l1", "0", "--l2", "1", "--max-iter", "10", "--model-format", "wapiti",
              "-p", str(pattern), str(path)]
    assert main([*common, str(tmp_path / "m.wapiti")]) == 0
    capfd.readouterr()
    assert main([*common, "-"]) == 0
    out = capfd.readouterr().out
    assert out.encode() == (tmp_path / "m.wapiti").read_bytes()
    assert out.startswith("#mdl#2#")


def test_training_template_marks_its_columns_and_checks_the_order(tmp_path):
    text = training_template(None, 3, "train.txt", 1, order=2)
    assert trained_columns(text) == 3
    assert text.split("\n", 1)[1] == default_template(3, order=2)
    assert trained_columns("U:%x[0,0]\nB") is None
    pattern = tmp_path / "p.txt"
    pattern.write_text("U0:%x[0,0]\nB\n")
    with pytest.raises(DataFormatError, match="label triples"):
        training_template(str(pattern), 1, "train.txt", 1, order=2)
    pattern.write_text("U0:%x[0,4]\nB\n")
    with pytest.raises(DataFormatError, match=r"train\.txt:7: the template uses column 4"):
        training_template(str(pattern), 2, "train.txt", 7)


def test_weight_column_and_label_checks_name_the_file_and_line(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("a 2 X\nb 2 Y\n\nc 0.5 X\n\nd 1 X\ne 3 Y\n")
    sents = ColumnFile(str(path)).read()
    with pytest.raises(DataFormatError, match=r"w\.txt:6: the weight column holds different values"):
        take_weight_column(sents, 1, "w.txt")
    sents = ColumnFile(str(path)).read()[:2]
    assert take_weight_column(sents, 1, "w.txt") == [2.0, 0.5]
    assert sents[0].columns == [["a"], ["b"]]
    with pytest.raises(DataFormatError, match="only one distinct label"):
        check_two_labels({"X"}, "w.txt")
    with pytest.raises(DataFormatError, match="every label is the unknown mark '_'"):
        check_two_labels(set(), "w.txt", "_")
    check_two_labels({"X", "Y"}, "w.txt")


def test_stream_writes_a_history_row_per_chunk(tmp_path):
    """--history with --stream: one row per chunk (before, the option was not used)."""
    path = _corpus(tmp_path, n=30)
    history = tmp_path / "history.jsonl"
    assert main(["train", "--quiet", "--stream", "10", "--max-iter", "2", "--seed", "0", "--history", str(history),
                 str(path), str(tmp_path / "m")]) == 0
    import json

    rows = [json.loads(line) for line in history.read_text().splitlines()]
    assert [(r["pass"], r["chunk"], r["chunk_sequences"]) for r in rows] == [
        (1, 1, 10), (1, 2, 10), (1, 3, 10), (2, 4, 10), (2, 5, 10), (2, 6, 10)]
    assert rows[-1]["active"] == CRF.load(str(tmp_path / "m")).n_active_features_
