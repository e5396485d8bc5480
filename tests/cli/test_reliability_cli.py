"""Reliability campaign, part C: command line and evaluation (items C5-C7), plus the
metrics API promises (importable as ``spargel.metrics``, numpy object arrays, one unit)."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spargel
from spargel.cli import main
from spargel.metrics import chunk_f1, chunk_scores, sequence_scores, tag_scores

from reliability_helpers import corpus, write_corpus

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PY = [sys.executable, "-m", "spargel.cli"]


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("clirel")
    train = write_corpus(d / "train.txt", corpus(80, seed=11))
    test = write_corpus(d / "test.txt", corpus(30, seed=12))
    model = d / "m.model"
    assert main(["train", "--quiet", "--l1", "0.05", "--max-iter", "30", str(train), str(model)]) == 0
    return {"dir": d, "train": train, "test": test, "model": model}


# ---------------------------------------------------------------------------------------
# C5: eval scores any tag set
# ---------------------------------------------------------------------------------------

PTB = "( -LRB- -LRB-\nthe DT DT\n*T* -NONE- NN\ndog NN NN\n) -RRB- -RRB-\n\n"
NETTALK = "a - -\nb b b\nl l -\ne - -\n\n"


def test_c5_eval_plain_tag_sets(tmp_path, capsys):
    for name, text, acc in (("ptb.txt", PTB, 0.8), ("nettalk.txt", NETTALK, 0.75)):
        f = tmp_path / name
        f.write_text(text)
        rc, out, err = run(capsys, "eval", "--per-tag", "--json", f)
        assert rc == 0, err
        report = json.loads(out)
        assert report["kind"] == "tags" and report["accuracy"] == pytest.approx(acc)
        rc, out, _ = run(capsys, "eval", "--per-tag", f)
        assert rc == 0 and "accuracy:" in out and "distinct tags" in out
        # per-tag scores are asked for: by default the report is conlleval's, and a
        # strict chunk scheme refuses tags without one of its prefixes, naming the line
        rc, out, _ = run(capsys, "eval", "--json", f)
        assert rc == 0 and json.loads(out)["kind"] == "chunks"
        for scheme in ("auto", "iob1", "iob2", "iobes", "bilou"):
            rc, _, err = run(capsys, "eval", "--scheme", scheme, f)
            assert rc == 1 and f"{name}:1:" in err
    per = json.loads(run(capsys, "eval", "--per-tag", "--json", tmp_path / "ptb.txt")[1])["per_tag"]
    assert per["-NONE-"] == {"found": 1, "guessed": 0, "correct": 0, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert per["NN"]["precision"] == 0.5 and per["NN"]["recall"] == 1.0


def test_c5_chunk_tags_still_scored_as_chunks(work, tmp_path, capsys):
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(work["model"]), str(work["test"]), str(out)]) == 0
    rc, text, _ = run(capsys, "eval", "--json", out)
    report = json.loads(text)
    rows = [ln.split() for ln in out.read_text().splitlines() if ln.strip()]
    gold, pred = [[r[2] for r in rows]], [[r[3] for r in rows]]
    assert report["kind"] == "chunks" and report["f1"] == pytest.approx(chunk_scores(gold, pred).f1)


def test_c5_sequence_scores_api():
    gold = [["-LRB-", "NN"], ["-NONE-"]]
    pred = [["-LRB-", "VB"], ["-NONE-"]]
    r = sequence_scores(gold, pred)
    assert r.kind == "tags" and r.chunk_f1 is None and r.accuracy == pytest.approx(2 / 3)
    assert r.per_tag["NN"].recall == 0.0 and r.per_tag["VB"].precision == 0.0
    c = sequence_scores([["B-NP", "I-NP", "O"]], [["B-NP", "I-NP", "O"]])
    assert c.kind == "chunks" and c.chunk_f1 == 1.0 and c.accuracy == 1.0
    # brute force: per-tag counts against a direct count
    rng = np.random.default_rng(0)
    tags = np.array(["-", "a", "-LRB-", "NN"])
    g = [list(tags[rng.integers(0, 4, size=n)]) for n in (5, 7, 1)]
    p = [list(tags[rng.integers(0, 4, size=len(s))]) for s in g]
    t = tag_scores(g, p)
    flat = list(zip(sum(g, []), sum(p, [])))
    for tag in tags:
        c = t.per_tag[tag]
        assert (c.found, c.guessed, c.correct) == (sum(a == tag for a, _ in flat), sum(b == tag for _, b in flat),
                                                   sum(a == b == tag for a, b in flat))


_MIXED_TRAIN = "a X B-NP\nb Y I-NP\nc Z -NONE-\n\n" * 20


def test_c5_train_dev_with_a_tag_set_that_is_not_chunks(tmp_path, capsys):
    f = tmp_path / "mixed.txt"
    f.write_text(_MIXED_TRAIN)
    hist = tmp_path / "h.jsonl"
    rc, _, err = run(capsys, "train", "--max-iter", "3", "--dev", f, "--history", hist, f, tmp_path / "m")
    assert rc == 0, err
    rows = [json.loads(x) for x in hist.read_text().splitlines()]
    assert all("dev_accuracy" in r and r.get("dev_f1") is None for r in rows)


def test_c5_history_dev_f1_is_the_eval_fraction(work, tmp_path, capsys):
    hist = tmp_path / "h.jsonl"
    model = tmp_path / "m.model"
    rc, _, err = run(capsys, "train", "--max-iter", "8", "--dev", work["test"], "--history", hist,
                     work["train"], model)
    assert rc == 0, err
    last = json.loads(hist.read_text().splitlines()[-1])
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(model), str(work["test"]), str(out)]) == 0
    report = json.loads(run(capsys, "eval", "--json", out)[1])
    assert last["dev_f1"] == pytest.approx(report["f1"])


@pytest.mark.slow
def test_c5_eval_on_ud_english_pos_tags(tmp_path, capsys):
    dev = SHARED / "ud_english_ewt" / "en_ewt-ud-dev.pos.txt"
    if not dev.exists():
        pytest.skip(f"shared data not found: {dev}")
    f = tmp_path / "pos.txt"
    f.write_text("".join(ln.rstrip("\n") + (" " + ln.split()[1] if ln.strip() else "") + "\n"
                         for ln in dev.read_text(encoding="utf-8").splitlines()))
    rc, out, err = run(capsys, "eval", "--per-tag", "--json", f)
    assert rc == 0, err
    report = json.loads(out)
    assert report["kind"] == "tags" and report["accuracy"] == 1.0 and "-LRB-" in report["per_tag"]


# ---------------------------------------------------------------------------------------
# C6: --nbest K then eval --pred -K scores the best path against the gold column
# ---------------------------------------------------------------------------------------

def test_c6_nbest_then_eval_pred_minus_k(work, tmp_path, capsys):
    one, three = tmp_path / "one.txt", tmp_path / "three.txt"
    assert main(["label", "-m", str(work["model"]), str(work["test"]), str(one)]) == 0
    assert main(["label", "-m", str(work["model"]), "--nbest", "3", str(work["test"]), str(three)]) == 0
    best = json.loads(run(capsys, "eval", "--json", one)[1])
    via_nbest = json.loads(run(capsys, "eval", "--json", "--pred", "-3", three)[1])
    assert via_nbest == best
    marg = tmp_path / "marg.txt"
    assert main(["label", "-m", str(work["model"]), "--nbest", "2", "--marginals", str(work["test"]), str(marg)]) == 0
    assert json.loads(run(capsys, "eval", "--json", "--pred", "-4", marg)[1]) == best
    rc, _, err = run(capsys, "eval", "--pred", "1", one)
    assert rc == 2 and "give --gold" in err


# ---------------------------------------------------------------------------------------
# C7: --encoding, permissions, closed pipes, solver help
# ---------------------------------------------------------------------------------------

def test_c7_latin1_column_files(tmp_path, capsys):
    sents = [[("El", "DA", "O"), ("señor", "NC", "B-PER"), ("Núñez", "NP", "I-PER")],
             [("en", "SP", "O"), ("España", "NP", "B-LOC")]] * 10
    train = write_corpus(tmp_path / "esp.train", sents, encoding="latin-1")
    model = tmp_path / "esp.model"
    rc, _, err = run(capsys, "train", "--quiet", "--max-iter", "10", "--l1", "0.01", train, model)
    assert rc == 1 and "esp.train:2: not utf-8 text" in err and "--encoding" in err
    rc, _, err = run(capsys, "train", "--quiet", "--encoding", "latin-1", "--max-iter", "10", "--l1", "0.01",
                     train, model)
    assert rc == 0, err
    out = tmp_path / "esp.out"
    assert run(capsys, "label", "-m", model, "--encoding", "latin-1", train, out)[0] == 0
    assert "señor".encode("latin-1") in out.read_bytes()
    rc, text, _ = run(capsys, "eval", "--encoding", "latin-1", "--json", out)
    assert rc == 0 and json.loads(text)["kind"] == "chunks" and json.loads(text)["f1"] == 1.0
    rc, _, err = run(capsys, "eval", "--encoding", "klingon", out)
    assert rc == 2 and "unknown --encoding" in err


@pytest.mark.slow
def test_c7_conll2002_is_latin1(tmp_path, capsys):
    testb = SHARED / "conll2002_spanish" / "esp.testb"
    if not testb.exists():
        pytest.skip(f"shared data not found: {testb}")
    # word POS NE: gold = POS column, pred = NE; eval reads the bytes as conlleval does,
    # whatever the encoding (the text report prints the tags' bytes unchanged)
    rc, out, err = run(capsys, "eval", testb)
    assert rc == 0 and out.startswith("processed 51533 tokens"), err
    rc, out, err = run(capsys, "eval", "--encoding", "latin-1", "--gold", "-1", "--json", testb)
    assert rc == 0 and json.loads(out)["f1"] == 1.0


def test_c7_model_files_follow_the_umask(work, tmp_path):
    old = os.umask(0o022)
    try:
        model = tmp_path / "m.model"
        assert main(["train", "--quiet", "--max-iter", "2", str(work["train"]), str(model)]) == 0
        assert stat.S_IMODE(model.stat().st_mode) == 0o644
        out = tmp_path / "out.txt"
        assert main(["label", "-m", str(model), str(work["test"]), str(out)]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_c7_full_disk_for_eval_and_dump_names_stdout(work, tmp_path):
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(work["model"]), str(work["test"]), str(out)]) == 0
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    for argv in (["eval", str(out)], ["dump", str(work["model"])]):
        with open("/dev/full", "w") as full:
            r = subprocess.run(PY + argv, stdout=full, stderr=subprocess.PIPE, text=True, env=env)
        assert r.returncode == 1 and r.stderr == "spargel: error: <stdout>: No space left on device\n", r.stderr


def test_c7_closed_pipe_ends_quietly(work, tmp_path):
    big = write_corpus(tmp_path / "big.txt", corpus(1500, seed=13))  # > 64 KB of output
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = " ".join(PY) + f" label -m {work['model']} {big} | head -1; " + " ".join(PY) + f" dump {work['model']} | head -1"
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert len(r.stdout.splitlines()) == 2


def test_c7_train_help_explains_every_solver(capsys):
    from spargel.solvers import SOLVERS

    rc, out, _ = run(capsys, "train", "--help")
    text = " ".join(out.split())
    assert rc == 0
    for name, record in SOLVERS.items():
        assert f"{name}:" in text or f"{name} (default):" in text
        assert " ".join(record.doc.split()) in text


# ---------------------------------------------------------------------------------------
# metrics: importable, numpy object arrays, one unit (fractions)
# ---------------------------------------------------------------------------------------

def test_metrics_is_a_package_attribute():
    code = "import spargel, sys; m = spargel.metrics; print(m.__name__, 'sklearn' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(Path(spargel.__file__).parents[1])))
    assert r.stdout.split() == ["spargel.metrics", "False"], r.stderr
    from spargel import metrics
    assert metrics is spargel.metrics


def test_metrics_accept_object_arrays():
    gold = [["B-NP", "I-NP", "O"], ["B-VP"]]
    pred = [["B-NP", "B-NP", "O"], ["B-VP"]]
    g_obj = np.empty(2, dtype=object)
    p_obj = np.empty(2, dtype=object)
    g_obj[:] = gold
    p_obj[:] = pred
    assert chunk_scores(g_obj, p_obj) == chunk_scores(gold, pred)
    assert sequence_scores(g_obj, p_obj).accuracy == 0.75
    g2 = np.empty(2, dtype=object)
    g2[0], g2[1] = np.array(["-LRB-", "NN"]), np.array(["DT"])
    assert tag_scores(g2, g2).accuracy == 1.0


def test_f1_is_a_fraction_everywhere(work, tmp_path, capsys):
    out = tmp_path / "out.txt"
    assert main(["label", "-m", str(work["model"]), str(work["test"]), str(out)]) == 0
    rows = [ln.split() for ln in out.read_text().splitlines() if ln.strip()]
    gold, pred = [[r[2] for r in rows]], [[r[3] for r in rows]]
    f = chunk_f1(gold, pred)
    report = chunk_scores(gold, pred)
    js = json.loads(run(capsys, "eval", "--json", out)[1])
    text = run(capsys, "eval", out)[1]
    assert 0 <= f <= 1 and f == pytest.approx(report.f1) == pytest.approx(js["f1"])
    assert f"FB1: {100 * f:6.2f}" in text
