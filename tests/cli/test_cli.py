"""Tests of the ``spargel`` command-line tool (fast; in-process unless a real process is
needed for exit codes or signals)."""

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from spargel.cli import app as cli
from spargel.cli import main

# ---------------------------------------------------------------------------------------
# a small synthetic chunking corpus: word, POS, chunk tag
# ---------------------------------------------------------------------------------------

_LEX = {
    "DT": ["the", "a", "this", "every"],
    "JJ": ["big", "small", "red", "old", "quick"],
    "NN": ["dog", "cat", "house", "car", "tree", "man"],
    "VB": ["sees", "likes", "buys", "finds"],
    "IN": ["in", "on", "near", "with"],
    "RB": ["today", "quickly", "now"],
}


def _np(rng):
    toks = [("DT", "B-NP")]
    for _ in range(rng.randint(0, 2)):
        toks.append(("JJ", "I-NP"))
    toks.append(("NN", "I-NP"))
    return toks


def make_corpus(n, seed=0):
    """``n`` sentences of (word, POS, chunk) triples from a toy grammar."""
    rng = random.Random(seed)
    sents = []
    for _ in range(n):
        toks = _np(rng) + [("VB", "B-VP")] + _np(rng)
        if rng.random() < 0.5:
            toks += [("IN", "B-PP")] + _np(rng)
        if rng.random() < 0.3:
            toks.append(("RB", "O"))
        sents.append([(rng.choice(_LEX[pos]), pos, tag) for pos, tag in toks])
    return sents


def write_corpus(path, sents, columns=3):
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            for tok in s:
                fh.write(" ".join(tok[:columns]) + "\n")
            fh.write("\n")
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    train = write_corpus(d / "train.txt", make_corpus(120, seed=1))
    test = write_corpus(d / "test.txt", make_corpus(40, seed=2))
    model = d / "model.spargel"
    rc = main(["train", "--quiet", "--l1", "0.1", "--max-iter", "60", str(train), str(model)])
    assert rc == 0
    return {"dir": d, "train": train, "test": test, "model": model}


def run(argv, capsys):
    """Run main in-process; returns (rc, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, code):
    assert rc == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("spargel: error: ")
    assert "Traceback" not in err


def read_rows(text):
    return [ln.split() for ln in text.splitlines() if ln.strip()]


# ---------------------------------------------------------------------------------------
# help and version
# ---------------------------------------------------------------------------------------

def _subparsers():
    parser = cli.build_parser()
    import argparse
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, action.choices


def test_top_level_help_lists_every_command(capsys):
    rc, out, _ = run(["--help"], capsys)
    assert rc == 0
    for name in ("train", "label", "eval", "dump", "plot", "demo"):
        assert name in out


@pytest.mark.parametrize("command", ["train", "label", "eval", "dump", "plot", "demo"])
def test_every_option_is_documented(command, capsys):
    _, choices = _subparsers()
    sub = choices[command]
    rc, out, _ = run([command, "--help"], capsys)
    assert rc == 0
    assert out.startswith(f"usage: spargel {command}")
    for action in sub._actions:
        for opt in action.option_strings:
            assert opt in out, f"{command} --help does not show {opt}"
        assert action.help, f"{command}: {action.dest} has no help text"
        if not action.option_strings:
            assert action.metavar in out


def test_one_command_parser_is_that_of_the_whole_parser():
    """A run of one command builds only its parser: the same options, help and parse."""
    import argparse
    _, choices = _subparsers()
    assert list(choices) == list(cli._COMMANDS)
    for command in cli._COMMANDS:
        parser = cli.build_parser(command)
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert list(action.choices) == [command]
        assert action.choices[command].format_help() == choices[command].format_help()
    argv = ["label", "-m", "m.bin", "--nbest", "3", "in.txt"]
    assert vars(cli.build_parser("label").parse_args(argv)) == vars(cli.build_parser().parse_args(argv))


def test_train_help_documents_the_conversions(capsys):
    _, out, _ = run(["train", "--help"], capsys)
    for word in ("Wapiti", "CRFsuite", "c1", "c2", "rho1", "rho2", "l2 = 2*c2", "130"):
        assert word in out


def test_version(capsys):
    import spargel
    rc, out, _ = run(["--version"], capsys)
    assert rc == 0 and out.strip() == f"spargel {spargel.__version__}"


# ---------------------------------------------------------------------------------------
# train / label / eval
# ---------------------------------------------------------------------------------------

def test_train_label_eval_round_trip(work, tmp_path, capsys):
    out = tmp_path / "out.txt"
    rc, _, err = run(["label", "--model", work["model"], work["test"], out], capsys)
    assert rc == 0, err
    rows = read_rows(out.read_text())
    assert all(len(r) == 4 for r in rows)  # word POS gold predicted
    rc, report, _ = run(["eval", out], capsys)
    assert rc == 0
    assert report.startswith("processed ")
    acc = float(report.splitlines()[1].split("accuracy:")[1].split("%")[0])
    assert acc > 95.0
    rc, js, _ = run(["eval", "--json", out], capsys)
    d = json.loads(js)
    assert d["f1"] > 0.9 and set(d["per_type"]) == {"NP", "VP", "PP"}


def test_train_progress_history_and_summary(work, tmp_path, capsys):
    model, hist = tmp_path / "m", tmp_path / "h.jsonl"
    rc, out, err = run(["train", "--l1", "0.5", "--max-iter", "8", "--tol", "0", "--dev", work["test"],
                        "--history", hist, work["train"], model], capsys)
    assert rc == 0, err
    assert out == ""
    iter_lines = [ln for ln in err.splitlines() if ln.startswith("iter ")]
    assert len(iter_lines) == 8
    assert "objective" in iter_lines[0] and "active" in iter_lines[0] and "dev F1" in iter_lines[0]
    assert "max_iter" in err.splitlines()[-1] and str(model) in err.splitlines()[-1]
    rows = [json.loads(ln) for ln in hist.read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 9))
    for key in ("objective", "loss", "penalty", "active", "elapsed", "dev_accuracy", "dev_f1"):
        assert key in rows[0]
    assert model.exists()


def test_quiet_training_prints_nothing(work, tmp_path, capsys):
    rc, out, err = run(["train", "-q", "--max-iter", "3", work["train"], tmp_path / "m"], capsys)
    assert rc == 0 and out == "" and err == ""


def test_pattern_file_and_full_feature_space(work, tmp_path, capsys):
    pattern = tmp_path / "p.tpl"
    pattern.write_text("# words and tags\nU00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,1]/%x[0,1]\nB\n")
    model = tmp_path / "m"
    rc, _, err = run(["train", "-q", "--pattern", pattern, "--feature-space", "full", "--no-pad",
                      "--l1", "0.1", "--l2", "0.01", "--max-iter", "40", work["train"], model], capsys)
    assert rc == 0, err
    from spargel import CRF
    crf = CRF.load(model)
    assert crf.feature_space == "full" and crf.pad is False
    assert "U02:%x[-1,1]/%x[0,1]" in crf.template
    rc, out, _ = run(["dump", model], capsys)
    assert all(ln.split("\t")[0].startswith(("U00:", "U01:", "U02:", "B")) for ln in out.splitlines())


def test_lbfgs_smooth_training(work, tmp_path, capsys):
    rc, _, err = run(["train", "-q", "--solver", "lbfgs", "--l1", "0", "--l2", "1", "--max-iter", "20",
                      work["train"], tmp_path / "m"], capsys)
    assert rc == 0, err


def test_label_without_gold_column_and_stdin_stdout(work, tmp_path, capsys, monkeypatch):
    raw = "the DT\nbig JJ\ndog NN\nsees VB\na DT\ncat NN\n\nthe DT\nman NN\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw.encode())))
    rc, out, err = run(["label", "-m", work["model"]], capsys)
    assert rc == 0, err
    rows = read_rows(out)
    assert [r[2] for r in rows] == ["B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "I-NP", "B-NP", "I-NP"]
    assert out.count("\n\n") == 2  # a blank line after each sequence


def test_label_nbest_columns_and_blocks(work, capsys):
    rc, out, _ = run(["label", "-m", work["model"], "--nbest", "3", work["test"]], capsys)
    assert rc == 0
    rows = read_rows(out)
    assert all(len(r) == 6 for r in rows)
    rc1, single, _ = run(["label", "-m", work["model"], work["test"]], capsys)
    assert [r[3] for r in read_rows(single)] == [r[3] for r in rows]  # best path first
    rc, out, _ = run(["label", "-m", work["model"], "--nbest", "2", "--blocks", work["test"]], capsys)
    assert rc == 0
    heads = [ln for ln in out.splitlines() if ln.startswith("# rank")]
    assert len(heads) == 2 * 40
    probs = [float(h.split()[-1]) for h in heads]
    assert all(0 <= p <= 1 for p in probs)
    assert all(probs[i] >= probs[i + 1] for i in range(0, len(probs), 2))


def test_label_marginals(work, capsys):
    rc, out, _ = run(["label", "-m", work["model"], "--marginals", work["test"]], capsys)
    assert rc == 0
    rows = read_rows(out)
    probs = np.array([float(r[4]) for r in rows])
    assert all(len(r) == 5 for r in rows)
    assert np.all((probs > 0) & (probs <= 1)) and probs.mean() > 0.8


def test_label_force_constrains_decoding(work, tmp_path, capsys):
    # impose an unlikely label on one token; blanks ('_') are predicted
    text = "the DT _\nbig JJ O\ndog NN _\nsees VB _\n\n"
    f = tmp_path / "force.txt"
    f.write_text(text)
    rc, out, err = run(["label", "-m", work["model"], "--force", f], capsys)
    assert rc == 0, err
    rows = read_rows(out)
    assert [r[3] for r in rows][1] == "O"
    assert [r[3] for r in rows][0] == "B-NP" and rows[3][3] == "B-VP"
    # tab-separated input may leave the field empty
    f.write_text("the\tDT\t\nbig\tJJ\tB-VP\ndog\tNN\t\n\n")
    rc, out, err = run(["label", "-m", work["model"], "--force", f], capsys)
    assert rc == 0, err
    lines = [ln.split("\t") for ln in out.splitlines() if ln]
    assert lines[1][3] == "B-VP" and len(lines[0]) == 4
    # a label the model does not know is an error naming the line
    f.write_text("the DT _\nbig JJ B-XX\n\n")
    rc, _, err = run(["label", "-m", work["model"], "--force", f], capsys)
    assert_one_line_error(rc, err, 1)
    assert ":2:" in err and "B-XX" in err


def test_dump_sorted_by_magnitude(work, capsys):
    rc, out, _ = run(["dump", work["model"]], capsys)
    assert rc == 0
    rows = [ln.split("\t") for ln in out.splitlines()]
    assert all(len(r) == 4 for r in rows)
    weights = [float(r[3]) for r in rows]
    assert all(w != 0 for w in weights)
    assert [abs(w) for w in weights] == sorted((abs(w) for w in weights), reverse=True)
    assert any(r[0] == "B" and r[1] != "-" for r in rows)  # transitions
    assert any(r[1] == "-" for r in rows)  # state features
    from spargel import CRF
    crf = CRF.load(work["model"])
    assert len(rows) == crf.n_active_features_
    rc, out, _ = run(["dump", "--top", "5", "--kind", "state", work["model"]], capsys)
    rows5 = [ln.split("\t") for ln in out.splitlines()]
    assert len(rows5) == 5 and all(r[1] == "-" for r in rows5)
    rc, out, _ = run(["dump", "--sort", "weight", work["model"]], capsys)
    w = [float(ln.split("\t")[3]) for ln in out.splitlines()]
    assert w == sorted(w, reverse=True)


def test_demo_quick(capsys, tmp_path):
    rc, out, err = run(["demo", "--quick", "--no-plot", "--threads", "1"], capsys)
    assert rc == 0, err
    assert "relevant" in out and "owlqn l1=8" in out and "lbfgs" in out
    assert "--all-solvers" in out and "bcd" not in out.split("More solvers")[0]
    from spargel.cli.demo import DEMO_CONFIGS, SolverConfig, run_demo
    assert DEMO_CONFIGS
    res = run_demo(out=None, n_jobs=1, quick=True, file=io.StringIO(),
                   configs=[SolverConfig("l1", {"solver": "owlqn", "l1": 8.0}), SolverConfig("lbfgs", {"solver": "lbfgs", "l1": 0, "l2": 1}),
                            SolverConfig("future", {"solver": "no-such-solver"})])
    assert len(res) == 2
    sparse, dense = res
    assert sparse.relevant_found == sparse.n_relevant
    assert sparse.irrelevant_kept < dense.irrelevant_kept
    assert sparse.active < dense.active


def test_demo_all_solvers_adds_the_other_solvers(capsys, monkeypatch):
    import spargel.cli.demo as demo

    seen = {}
    monkeypatch.setattr(demo, "run_demo", lambda **kw: seen.update(kw))
    rc, _, err = run(["demo", "--all-solvers", "--no-plot"], capsys)
    assert rc == 0, err
    assert seen["all_solvers"] is True
    assert {c.solver for c in demo.MORE_CONFIGS} == {"bcd", "sgd-l1"}
    assert not {c.solver for c in demo.MORE_CONFIGS} & {c.solver for c in demo.DEMO_CONFIGS}


# ---------------------------------------------------------------------------------------
# eval: hand-computed cases
# ---------------------------------------------------------------------------------------

def _eval_file(tmp_path, sentences):
    f = tmp_path / "pairs.txt"
    with open(f, "w") as fh:
        for s in sentences:
            for i, (g, p) in enumerate(s):
                fh.write(f"w{i} X {g} {p}\n")
            fh.write("\n")
    return f


def _overall(text):
    first, second = text.splitlines()[:2]
    nums = [float(x.strip(" %;")) for x in second.replace("accuracy:", "").replace("precision:", "")
            .replace("recall:", "").replace("FB1:", "").split(";")]
    counts = [int(x) for x in first.replace(".", " ").split() if x.isdigit()]
    return counts, nums


EVAL_CASES = {
    # gold/pred pairs; expected (tokens, gold chunks, guessed, correct), (acc, P, R, F1)
    "iob2": ([[("B-NP", "B-NP"), ("I-NP", "I-NP"), ("O", "O"), ("B-VP", "B-VP"), ("B-PP", "B-NP"),
               ("B-NP", "B-NP")]], (6, 4, 4, 3), (83.33, 75.0, 75.0, 75.0)),
    # IOB1: I- after O starts a chunk; B- only separates adjacent chunks of one type
    "iob1_I_after_O": ([[("I-NP", "I-NP"), ("I-NP", "I-NP"), ("O", "O"), ("I-NP", "I-NP"),
                         ("B-NP", "I-NP")]], (5, 3, 2, 1), (80.0, 50.0, 33.33, 40.0)),
    # a type change in I- tags starts a new chunk
    "type_change": ([[("B-NP", "B-NP"), ("I-NP", "I-NP"), ("I-VP", "I-NP"), ("I-VP", "I-VP"),
                      ("O", "O")]], (5, 2, 2, 0), (80.0, 0.0, 0.0, 0.0)),
    "iobes": ([[("S-PER", "S-PER"), ("O", "O"), ("B-LOC", "B-LOC"), ("E-LOC", "E-LOC"),
                ("B-ORG", "B-ORG"), ("I-ORG", "E-ORG"), ("E-ORG", "O")]], (7, 3, 3, 2),
              (71.43, 66.67, 66.67, 66.67)),
    # chunks never cross a sentence boundary
    "sentence_boundary": ([[("B-NP", "B-NP"), ("I-NP", "I-NP")], [("I-NP", "I-NP")]], (3, 2, 2, 2),
                          (100.0, 100.0, 100.0, 100.0)),
}


@pytest.mark.parametrize("case", sorted(EVAL_CASES))
def test_eval_hand_computed(case, tmp_path, capsys):
    sentences, counts, nums = EVAL_CASES[case]
    f = _eval_file(tmp_path, sentences)
    rc, out, _ = run(["eval", f], capsys)
    assert rc == 0
    got_counts, got_nums = _overall(out)
    assert tuple(got_counts) == counts
    assert got_nums == pytest.approx(nums, abs=0.006)
    rc, js, _ = run(["eval", "--json", f], capsys)
    d = json.loads(js)
    assert (d["tokens"], d["found"], d["guessed"], d["correct"]) == counts
    assert 100 * d["f1"] == pytest.approx(nums[3], abs=0.006)


def test_eval_per_type_lines(tmp_path, capsys):
    f = _eval_file(tmp_path, EVAL_CASES["iob2"][0])
    _, out, _ = run(["eval", f], capsys)
    lines = {ln.split(":")[0].strip(): ln for ln in out.splitlines()[2:]}
    assert set(lines) == {"NP", "PP", "VP"}
    assert "precision:  66.67%; recall: 100.00%; FB1:  80.00  3" in lines["NP"]
    assert "precision:   0.00%; recall:   0.00%; FB1:   0.00  0" in lines["PP"]
    assert "precision: 100.00%; recall: 100.00%; FB1: 100.00  1" in lines["VP"]


def test_eval_column_choice_and_scheme(tmp_path, capsys):
    f = tmp_path / "cols.txt"
    f.write_text("a B-NP B-VP B-NP\nb I-NP O I-NP\n\n")
    rc, out, _ = run(["eval", "--gold", "2", "--pred", "-1", "--json", f], capsys)
    assert rc == 0 and json.loads(out)["f1"] == 1.0
    rc, out, _ = run(["eval", "--gold", "2", "--pred", "3", "--json", f], capsys)
    assert json.loads(out)["correct"] == 0
    f.write_text("a S-NP S-NP\n\n")
    # S- is not an iob2 prefix: a strict reading refuses it, naming the line; per-tag
    # scores are asked for explicitly
    rc, out, err = run(["eval", "--scheme", "iob2", "--json", f], capsys)
    assert_one_line_error(rc, err, 1)
    assert "cols.txt:1:" in err and "'S'" in err
    rc, out, err = run(["eval", "--per-tag", "--json", f], capsys)
    assert rc == 0 and json.loads(out)["kind"] == "tags" and json.loads(out)["accuracy"] == 1.0
    rc, _, err = run(["eval", "--gold", "7", f], capsys)
    assert_one_line_error(rc, err, 2)


# ---------------------------------------------------------------------------------------
# errors: one line, non-zero, never a traceback
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    [],
    ["frobnicate"],
    ["train"],
    ["train", "only-one-arg"],
    ["train", "--l1", "abc", "a", "b"],
    ["train", "--l1", "-1", "a", "b"],
    ["train", "--max-iter", "x", "a", "b"],
    ["train", "--feature-space", "dense", "a", "b"],
    ["train", "--solver", "nope", "TRAIN", "MODEL"],
    ["train", "--solver", "lbfgs", "TRAIN", "MODEL"],
    ["train", "--threads", "0", "TRAIN", "MODEL"],
    ["train", "--bogus", "a", "b"],
    ["label", "x.txt"],
    ["label", "-m", "m", "--nbest", "0"],
    ["label", "-m", "m", "--blocks"],
    ["eval", "--scheme", "xyz"],
    ["dump"],
    ["dump", "--top", "-3", "m"],
    ["plot"],
])
def test_usage_errors(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(argv, capsys)
    assert_one_line_error(rc, err, 2)


@pytest.mark.parametrize("argv, option, message", [
    (["train", "--l1", "abc", "a", "b"], "--l1", "not a number: 'abc'"),
    (["train", "--tol", "inf", "a", "b"], "--tol", "must be a finite number >= 0, got 'inf'"),
    (["train", "--max-iter", "x", "a", "b"], "--max-iter", "not an integer: 'x'"),
    (["train", "--max-iter", "-2", "a", "b"], "--max-iter", "must be >= 0, got '-2'"),
    (["label", "-m", "m", "--nbest", "0"], "--nbest", "must be >= 1, got '0'"),
    (["eval", "--gold", "two"], "--gold", "not a column number: 'two'"),
    (["eval", "--pred", "0"], "--pred", "columns are numbered from 1 (or from -1 at the end)"),
])
def test_bad_numbers_say_what_was_expected(argv, option, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(argv, capsys)
    assert_one_line_error(rc, err, 2)
    assert "argument " in err and option in err and f": {message} (see " in err, err


def test_missing_files(work, tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    cases = [
        ["train", missing, tmp_path / "m"],
        ["train", "--pattern", missing, work["train"], tmp_path / "m"],
        ["train", "--dev", missing, work["train"], tmp_path / "m"],
        ["train", work["train"], tmp_path / "no-such-dir" / "m"],
        ["label", "-m", missing, work["test"]],
        ["label", "-m", work["model"], missing],
        ["label", "-m", work["model"], work["test"], tmp_path / "no-such-dir" / "out"],
        ["eval", missing],
        ["dump", missing],
        ["plot", missing],
        ["eval", tmp_path],
    ]
    for argv in cases:
        rc, _, err = run(argv, capsys)
        assert_one_line_error(rc, err, 1)
    assert not (tmp_path / "m").exists()


def _foreign_models(d):
    (d / "text.model").write_text("this is a CRF++ text model\nversion: 100\n")
    (d / "random.model").write_bytes(bytes(range(256)) * 8)
    with zipfile.ZipFile(d / "other.zip", "w") as z:
        z.writestr("weights.txt", "1 2 3")
    np.savez(d / "plain.npz", w=np.zeros(3))
    (d / "empty.model").write_bytes(b"")
    return [d / "text.model", d / "random.model", d / "other.zip", d / "plain.npz", d / "empty.model"]


def test_model_from_another_program(work, tmp_path, capsys):
    for path in _foreign_models(tmp_path):
        for argv in (["label", "-m", path, work["test"]], ["dump", path]):
            rc, _, err = run(argv, capsys)
            assert_one_line_error(rc, err, 1)
            assert str(path) in err


def test_model_of_another_kind(work, tmp_path, capsys):
    from spargel.core.model_file import save_arrays
    path = tmp_path / "gauss.model"
    save_arrays(path, "gaussian-mrf", {}, {"precision": np.eye(2)})
    rc, _, err = run(["dump", path], capsys)
    assert_one_line_error(rc, err, 1)


def test_model_trained_on_feature_dicts(tmp_path, capsys, work):
    from spargel import CRF
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    crf = CRF(l1=0.01, max_iter=5).fit(X, [["A", "B"], ["B"]])
    crf.save(tmp_path / "dict.model")
    rc, _, err = run(["label", "-m", tmp_path / "dict.model", work["test"]], capsys)
    assert_one_line_error(rc, err, 1)
    rc, out, _ = run(["dump", tmp_path / "dict.model"], capsys)
    assert rc == 0 and "w" in out


@pytest.mark.parametrize("content", [
    b"",                                     # empty
    b"\n\n\n",                               # no tokens
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # binary
    b"a b c\nd e\n",                         # ragged columns
    b"word\n",                               # one column: no label
    b"caf\xe9 NN B-NP\n",                    # not UTF-8
    b'{"objective": 1.0}\n',                 # JSON, one column
])
def test_non_conll_training_input(content, tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_bytes(content)
    rc, _, err = run(["train", f, tmp_path / "m"], capsys)
    assert_one_line_error(rc, err, 1)
    assert "bad.txt" in err
    assert not (tmp_path / "m").exists()


def test_non_conll_label_and_eval_input(work, tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_bytes(b"a b c\nd e\n")
    for argv in (["label", "-m", work["model"], f], ["eval", f]):
        rc, _, err = run(argv, capsys)
        assert_one_line_error(rc, err, 1)
        assert "bad.txt:2" in err
    f.write_bytes(b"a\nb\n")
    rc, _, err = run(["label", "-m", work["model"], f], capsys)
    assert_one_line_error(rc, err, 1)
    rc, _, err = run(["eval", f], capsys)
    assert_one_line_error(rc, err, 1)


def test_bad_pattern_and_narrow_data(work, tmp_path, capsys):
    p = tmp_path / "bad.tpl"
    p.write_text("U00:%x[0,0\n")
    rc, _, err = run(["train", "--pattern", p, work["train"], tmp_path / "m"], capsys)
    assert_one_line_error(rc, err, 1)
    assert "bad.tpl" in err
    p.write_text("U00:%x[0,5]\n")
    rc, _, err = run(["train", "--pattern", p, work["train"], tmp_path / "m"], capsys)
    assert_one_line_error(rc, err, 1)
    assert "column 5" in err


def test_dev_with_unknown_label(work, tmp_path, capsys):
    # a development label never seen in training counts as an error (CoNLL-2000's test set
    # has I-LST, which its training set lacks); it does not stop the run
    dev = tmp_path / "dev.txt"
    dev.write_text("the DT B-NP\ndog NN B-XYZ\n\n")
    hist = tmp_path / "h.jsonl"
    rc, _, err = run(["train", "--dev", dev, "--max-iter", "5", "--history", hist, work["train"],
                      tmp_path / "m"], capsys)
    assert rc == 0, err
    assert "note:" in err and "B-XYZ" in err
    rows = [json.loads(ln) for ln in hist.read_text().splitlines()]
    assert all(r["dev_accuracy"] <= 0.5 for r in rows)


def test_real_process_exit_codes(work, tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    cmd = [sys.executable, "-m", "spargel.cli"]
    r = subprocess.run(cmd + ["train", "--l1", "x", "a", "b"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("spargel: error:")
    r = subprocess.run(cmd + ["dump", str(tmp_path / "missing")], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = subprocess.run(cmd + ["eval", str(work["test"])], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("processed")


# ---------------------------------------------------------------------------------------
# Ctrl-C
# ---------------------------------------------------------------------------------------

def test_sigint_leaves_a_loadable_model(tmp_path):
    train = write_corpus(tmp_path / "big.txt", make_corpus(3000, seed=5))
    model = tmp_path / "interrupted.model"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "spargel.cli", "train", "--l1", "0.001", "--max-iter", "100000",
         "--tol", "0", "--gtol", "0", str(train), str(model)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("iter "):
                break
        assert any(ln.startswith("iter ") for ln in lines), "".join(lines)
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, rest
    assert "Traceback" not in rest and "interrupted" in rest
    from spargel import CRF
    crf = CRF.load(model)
    pred = crf.predict([[["the", "DT"], ["dog", "NN"]]])
    assert len(pred[0]) == 2
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_gmrf_command_is_wired_in(capsys):
    rc, out, _ = run(["--help"], capsys)
    assert "gmrf" in out
    rc, out, _ = run(["gmrf", "--help"], capsys)
    assert rc == 0 and out.startswith("usage: spargel gmrf")


def test_train_streaming_in_chunks_and_warm_start(tmp_path):
    """`train --stream N` reads the file in chunks (SGD-L1); `--init` continues a model."""
    from spargel import CRF
    from spargel.cli import main
    from spargel.datasets import make_chain_data

    X, y, _ = make_chain_data(n_sequences=60, n_irrelevant=20, random_state=2)
    path = tmp_path / "train.txt"
    path.write_text("".join("".join(f"{'|'.join(tok) or '-'} {lab}\n" for tok, lab in zip(xs, ys)) + "\n"
                            for xs, ys in zip(X, y)))
    model = tmp_path / "m.model"
    assert main(["train", "--quiet", "--stream", "7", "--max-iter", "2", "--l1", "0.5", str(path), str(model)]) == 0
    first = CRF.load(model)
    assert first.n_active_features_ > 0
    again = tmp_path / "m2.model"
    assert main(["train", "--quiet", "--stream", "25", "--init", str(model), str(path), str(again)]) == 0
    assert CRF.load(again).predict([[["r0"]]])[0][0] in first.classes_


# ---------------------------------------------------------------------------------------
# partial labels and weights from column files
# ---------------------------------------------------------------------------------------

def test_train_with_unknown_labels_and_a_weight_column(tmp_path, capsys):
    rng = random.Random(3)
    sents = make_corpus(80, seed=4)
    lines = []
    for k, s in enumerate(sents):
        w = 1 + k % 3
        for word, pos, tag in s:
            lines.append(f"{word} {pos} {w} {'?' if rng.random() < 0.3 else tag}")
        lines.append("")
    f = tmp_path / "partial.txt"
    f.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.model"
    rc, _, err = run(["train", "--quiet", "--unknown-label", "?", "--weight-column", "2", "--max-iter", "40",
                      f, model], capsys)
    assert rc == 0, err
    from spargel import CRF
    crf = CRF.load(model)
    assert "?" not in crf.classes_
    test = make_corpus(30, seed=5)
    assert crf.score([[list(t[:2]) for t in s] for s in test], [[t[2] for t in s] for s in test]) > 0.9
    lines[0] = lines[0].replace(" 1 ", " 2 ")          # two weights in one sequence
    f.write_text("\n".join(lines) + "\n")
    rc, _, err = run(["train", "--quiet", "--weight-column", "2", f, model], capsys)
    assert_one_line_error(rc, err, 1)
    assert "different values" in err


# ---------------------------------------------------------------------------------------
# Wapiti's and CRF++'s short options
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    (["-1", "0.5", "-2", "0.01", "-t", "-1", "-e", "0.001", "-w", "5", "-i", "3"],
     {"solver": "owlqn", "l1": 0.5, "l2": 0.01, "threads": -1, "tol": 0.001, "window": 5, "max_iter": 3}),
    (["-a", "l-bfgs", "-1", "0", "-2", "1"], {"solver": "lbfgs", "l1": 0.0, "l2": 1.0}),
    (["-a", "l-bfgs"], {"solver": "owlqn", "l1": 1.0, "histsz": 5}),           # Wapiti's --histsz 5
    (["-a", "l-bfgs", "--histsz", "8"], {"solver": "owlqn", "histsz": 8}),
    (["--solver", "owlqn"], {"solver": "owlqn", "histsz": None}),               # CRFsuite's 6 (the CRF's)
    (["--solver", "lbfgs", "--l1", "0", "--memory", "3"], {"solver": "lbfgs", "histsz": 3}),
    (["-a", "CRF-L1", "-c", "4"], {"solver": "owlqn", "l1": 0.25, "l2": 0.0}),
    (["-a", "CRF-L2"], {"solver": "lbfgs", "l1": 0.0, "l2": 1.0}),
    (["-c", "2"], {"solver": "lbfgs", "l1": 0.0, "l2": 0.5}),
    (["-a", "rprop", "--stpmin", "1e-6", "--cutoff"], {"solver": "rprop", "stpmin": 1e-6, "cutoff": True}),
    (["--algo", "rprop-", "-T", "maxent"], {"solver": "rprop-", "model_type": "maxent"}),
    (["-a", "MIRA", "-c", "4", "-H", "5"], {"solver": "mira", "mira_c": 4.0, "shrinking_size": 5, "l1": 0.0,
                                          "crfpp_cost": None}),
    (["-a", "MIRA"], {"solver": "mira", "mira_c": 1.0, "l1": 0.0, "l2": 0.0}),
])
def test_wapiti_and_crfpp_train_options(argv, expected, monkeypatch, capsys):
    from spargel.cli.tool_options import tool_habits
    from spargel.solvers import SOLVERS

    seen = {}

    def fake_train(args):
        tool_habits(args, SOLVERS)
        seen.update({k: getattr(args, k) for k in expected})
        return 0

    monkeypatch.setattr(cli, "cmd_train", fake_train)
    rc, _, err = run(["train", *argv, "train.txt", "model"], capsys)
    assert rc == 0, err
    assert seen == expected


def test_wapiti_lbfgs_keeps_wapitis_history_size(work, tmp_path, capsys, monkeypatch):
    """``-a l-bfgs`` trains with Wapiti's 5 curvature pairs (``--histsz``), spargel's own
    ``--solver owlqn`` with the CRF's default; the pairs reach the solver."""
    from spargel.solvers import owlqn

    seen = []
    real = owlqn.minimize_owlqn

    def spy(*args, **kw):
        seen.append(kw.get("memory"))
        return real(*args, **kw)

    monkeypatch.setattr(owlqn, "minimize_owlqn", spy)
    for argv, memory in ((["-a", "l-bfgs"], 5), (["-a", "l-bfgs", "--histsz", "7"], 7), (["--solver", "owlqn"], 6)):
        seen.clear()
        rc, _, err = run(["train", "--quiet", *argv, "-i", "2", work["train"],
                          str(tmp_path / "m")], capsys)
        assert rc == 0, err
        assert seen == [memory]


@pytest.mark.parametrize("argv, words", [
    (["--me"], ["--me", "-T maxent"]),
    (["-T", "memm"], ["memm"]),
    (["--stpmax", "3"], ["--stpmax", "rprop"]),
    (["-a", "owlqn", "--cutoff"], ["--cutoff", "rprop"]),
    (["-H", "3"], ["-H", "MIRA"]),
    (["-a", "rprop", "--histsz", "3"], ["--histsz", "lbfgs / owlqn"]),
    (["--histsz", "0"], ["--histsz"]),
    (["-a", "MIRA", "-c", "0"], ["C > 0"]),
    (["-c"], ["--compact"]),
    (["-m", "50"], ["--max-iter", "--init"]),
    (["-f", "3"], ["frequency"]),
    (["-p", "4"], ["-t N"]),
])
def test_tool_options_without_equivalent_are_refused_by_name(argv, words, tmp_path, capsys):
    rc, _, err = run(["train", *argv, str(tmp_path / "t.txt"), str(tmp_path / "m")], capsys)
    assert_one_line_error(rc, err, 2)
    for w in words:
        assert w in err


def test_train_with_a_wapiti_pattern_file(work, tmp_path, capsys):
    # a file only Wapiti reads is read as Wapiti's (with a note); the model stores the
    # language, so dump shows Wapiti's observations (_x-1 padding, lower-cased kind)
    pat = tmp_path / "pat.txt"
    pat.write_text('U:w=%x[-1,0]  # previous word\n*:caps=%t[0,0,"^\\l\\l\\l$"]\nb\n')
    model = tmp_path / "w.model"
    rc, _, err = run(["train", "-q", "-a", "l-bfgs", "-1", "0", "-2", "0.1", "-i", "5", "-p", pat,
                      work["train"], model], capsys)
    assert rc == 0 and "read as a Wapiti pattern file" in err
    rc, out, _ = run(["dump", model], capsys)
    attrs = {line.split("\t")[0] for line in out.splitlines()}
    assert "u:w=_x-1" in attrs and attrs >= {"*:caps=true", "*:caps=false"}
    rc, out, _ = run(["label", "-m", model, work["test"]], capsys)
    assert rc == 0 and out.strip()
    # --pattern-format crfpp refuses the same file (Wapiti's \l is no Python regex)
    rc, _, err = run(["train", "-q", "--pattern-format", "crfpp", "-p", pat, work["train"], model], capsys)
    assert_one_line_error(rc, err, 1)
    assert "pat.txt:2" in err


def test_label_loads_numpy_with_one_blas_thread():
    """A 'spargel label' process loads numpy with one OpenBLAS thread (it does no linear
    algebra; the threads' start-up costs CPU time), unless OPENBLAS_NUM_THREADS says
    otherwise, and leaves the environment as it was."""
    pytest.importorskip("threadpoolctl")
    code = ("import os, threadpoolctl\n"
            "from spargel.cli.app import _one_blas_thread\n"
            "with _one_blas_thread():\n"
            "    import numpy\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'),"
            " [i['num_threads'] for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    if out.split(None, 1)[1].strip() == "[]":
        pytest.skip("numpy is not linked to OpenBLAS here")
    assert out.split() == ["None", "[1]"]
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["2", "[2]"]
