"""Tests for spargel.metrics; every expected number is worked out by hand."""

import doctest
import json

import numpy as np
import pytest

from spargel import metrics
from spargel.metrics import (
    accuracy,
    chunk_f1,
    chunk_scores,
    chunks,
    sequence_accuracy,
)


# --------------------------------------------------------------------------
# chunks(): boundary rules
# --------------------------------------------------------------------------


def test_iob2_simple():
    tags = ["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP"]
    assert chunks(tags, "iob2") == [("NP", 0, 2), ("VP", 3, 4), ("NP", 4, 6)]
    assert chunks(tags) == chunks(tags, "iob2")


def test_iob1_i_starts_chunks_and_b_separates_same_type():
    tags = ["I-NP", "I-NP", "B-NP", "I-NP", "O", "I-VP", "I-PP"]
    expected = [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6), ("PP", 6, 7)]
    assert chunks(tags, "iob1") == expected
    assert chunks(tags, "auto") == expected


def test_iobes_and_bilou():
    tags = ["B-PER", "I-PER", "E-PER", "S-LOC", "S-LOC", "O", "B-ORG", "E-ORG"]
    expected = [("PER", 0, 3), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 6, 8)]
    assert chunks(tags, "iobes") == expected
    assert chunks(tags) == expected
    bilou = ["B-PER", "I-PER", "L-PER", "U-LOC", "U-LOC", "O", "B-ORG", "L-ORG"]
    assert chunks(bilou, "bilou") == expected
    assert chunks(bilou, "BILOU") == expected


def test_iobes_tags_after_end_or_single_start_new_chunks():
    tags = ["E-X", "I-X", "S-X", "E-X", "B-X", "E-X", "B-X"]
    assert chunks(tags, "iobes") == [
        ("X", 0, 1), ("X", 1, 2), ("X", 2, 3), ("X", 3, 4), ("X", 4, 6), ("X", 6, 7)
    ]


def test_i_after_o_starts_a_chunk():
    assert chunks(["O", "I-NP", "I-NP", "O"]) == [("NP", 1, 3)]


def test_type_change_ends_and_starts():
    assert chunks(["B-NP", "I-VP"]) == [("NP", 0, 1), ("VP", 1, 2)]
    assert chunks(["B-NP", "I-NP", "I-VP", "I-VP"]) == [("NP", 0, 2), ("VP", 2, 4)]


def test_chunk_at_end_of_sentence():
    assert chunks(["O", "B-NP", "I-NP"]) == [("NP", 1, 3)]
    assert chunks(["B-NP"]) == [("NP", 0, 1)]
    assert chunks([]) == []


def test_hyphenated_types_split_at_first_hyphen():
    assert chunks(["B-ADJP-X", "I-ADJP-X"]) == [("ADJP-X", 0, 2)]


def test_bare_tags_are_one_token_chunks():
    # conlleval -r reads a tag without prefix as B-TAG.
    assert chunks(["NP", "NP", "O", "VP"]) == [("NP", 0, 1), ("NP", 1, 2), ("VP", 3, 4)]


def test_scheme_restricts_prefixes():
    with pytest.raises(ValueError, match=r"'E-NP' at position 1.*'iob2'"):
        chunks(["B-NP", "E-NP"], "iob2")
    with pytest.raises(ValueError, match="prefix 'X'"):
        chunks(["X-NP"])
    with pytest.raises(ValueError, match="unknown tagging scheme"):
        chunks(["B-NP"], "bio3")
    with pytest.raises(TypeError):
        chunks("B-NP")


# --------------------------------------------------------------------------
# chunk_scores()
# --------------------------------------------------------------------------


def test_chunks_never_cross_sentence_boundaries():
    gold = [["B-NP", "I-NP"], ["I-NP", "I-NP"]]
    # Flattened, the four tags are a single NP chunk.
    flat = [t for s in gold for t in s]
    assert chunk_scores(flat, flat).found == 1
    # As two sentences, the sentence-initial I-NP starts a second chunk.
    report = chunk_scores(gold, [["B-NP", "I-NP"], ["B-NP", "I-NP"]])
    assert (report.found, report.guessed, report.correct) == (2, 2, 2)
    assert report.accuracy == 0.75  # 3 of 4 tags equal as strings
    # A chunk ending one sentence and one starting the next stay apart.
    report = chunk_scores([["O", "B-NP"], ["I-NP", "O"]],
                          [["O", "B-NP"], ["I-NP", "O"]])
    assert report.found == 2 and report.correct == 2


def test_per_type_counts():
    gold = [["B-NP", "I-NP", "B-VP", "O", "B-NP"]]
    pred = [["B-NP", "B-NP", "B-VP", "B-PP", "B-NP"]]
    # gold: NP(0,2) VP(2,3) NP(4,5); pred: NP(0,1) NP(1,2) VP(2,3) PP(3,4) NP(4,5)
    r = chunk_scores(gold, pred)
    assert (r.found, r.guessed, r.correct) == (3, 5, 2)
    assert set(r.per_type) == {"NP", "PP", "VP"}
    np_, pp, vp = r.per_type["NP"], r.per_type["PP"], r.per_type["VP"]
    assert (np_.found, np_.guessed, np_.correct) == (2, 3, 1)
    assert (pp.found, pp.guessed, pp.correct) == (0, 1, 0)
    assert (vp.found, vp.guessed, vp.correct) == (1, 1, 1)
    assert np_.precision == pytest.approx(1 / 3)
    assert np_.recall == 0.5
    assert np_.f1 == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    assert pp.precision == pp.recall == pp.f1 == 0.0
    assert r.precision == 0.4 and r.recall == pytest.approx(2 / 3)
    assert r.f1 == pytest.approx(0.5)
    assert r.n_tokens == 5 and r.n_correct_tags == 3


def test_perfect_prediction():
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP"]]
    r = chunk_scores(gold, gold)
    assert r.precision == r.recall == r.f1 == r.accuracy == 1.0
    assert chunk_f1(gold, gold) == 1.0  # fractions everywhere


def test_empty_prediction_scores_zero():
    gold = [["B-NP", "I-NP", "O", "B-VP"]]
    pred = [["O", "O", "O", "O"]]
    r = chunk_scores(gold, pred)
    assert (r.found, r.guessed, r.correct) == (2, 0, 0)
    assert r.precision == 0.0 and r.recall == 0.0 and r.f1 == 0.0
    assert r.accuracy == 0.25
    assert chunk_f1(gold, pred) == 0.0


def test_empty_corpus():
    r = chunk_scores([], [])
    assert r.n_tokens == 0 and r.f1 == 0.0 and r.accuracy == 0.0
    assert r.as_text() == "processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0."


def test_mismatched_lengths():
    with pytest.raises(ValueError, match="sequence 1: gold has 3 tags but pred has 2"):
        chunk_scores([["O"], ["O", "O", "O"]], [["O"], ["O", "O"]])
    with pytest.raises(ValueError, match="gold has 2 sequences but pred has 1"):
        chunk_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sequence 0: gold has 2 tags but pred has 1"):
        accuracy(["A", "B"], ["A"])
    with pytest.raises(ValueError, match="sequence 2: gold has 1 tags but pred has 0"):
        sequence_accuracy([[1], [2], [3]], [[1], [2], []])


def test_mixed_flat_and_nested_input_rejected():
    with pytest.raises(TypeError):
        accuracy([["O"], "O"], [["O"], ["O"]])


# Two sentences; chunks worked out by hand:
#   gold s0: NP(0,2) VP(2,3) PP(3,4) NP(4,5)   s1: NP(0,1) ADJP(2,3)   -> 6 phrases
#   pred s0: NP(0,2) VP(2,3) NP(3,5)           s1: NP(0,1) ADVP(2,3)   -> 5 phrases
#   correct: NP(0,2) VP(2,3) and s1 NP(0,1)                             -> 3
#   equal tags: 3 in s0, 2 in s1 -> 5 of 8 = 62.50%
#   precision 3/5 = 60.00%, recall 3/6 = 50.00%, FB1 2*60*50/110 = 54.545 -> 54.55
#   NP: found 3, guessed 3, correct 2 -> 66.67 / 66.67 / 66.67
#   VP: 1, 1, 1 -> 100 / 100 / 100;  ADJP, PP: found 1, guessed 0;  ADVP: guessed 1
LAYOUT_GOLD = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP"], ["B-NP", "O", "B-ADJP"]]
LAYOUT_PRED = [["B-NP", "I-NP", "B-VP", "B-NP", "I-NP"], ["B-NP", "O", "B-ADVP"]]
LAYOUT_TEXT = (
    "processed 8 tokens with 6 phrases; found: 5 phrases; correct: 3.\n"
    "accuracy:  62.50%; precision:  60.00%; recall:  50.00%; FB1:  54.55\n"
    "             ADJP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n"
    "             ADVP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n"
    "               NP: precision:  66.67%; recall:  66.67%; FB1:  66.67  3\n"
    "               PP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n"
    "               VP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1"
)


def test_text_layout():
    r = chunk_scores(LAYOUT_GOLD, LAYOUT_PRED)
    assert r.as_text() == LAYOUT_TEXT
    assert str(r) == LAYOUT_TEXT


def test_as_dict_is_json_ready_and_uses_fractions():
    d = chunk_scores(LAYOUT_GOLD, LAYOUT_PRED).as_dict()
    assert json.loads(json.dumps(d)) == d
    assert (d["tokens"], d["correct_tags"], d["accuracy"]) == (8, 5, 0.625)
    assert (d["found"], d["guessed"], d["correct"]) == (6, 5, 3)
    assert d["precision"] == 0.6 and d["recall"] == 0.5
    assert d["f1"] == pytest.approx(6 / 11)
    assert list(d["per_type"]) == ["ADJP", "ADVP", "NP", "PP", "VP"]
    assert d["per_type"]["VP"] == {
        "found": 1, "guessed": 1, "correct": 1,
        "precision": 1.0, "recall": 1.0, "f1": 1.0,
    }


def test_chunk_f1_matches_report_and_accepts_labels():
    f = chunk_f1(LAYOUT_GOLD, LAYOUT_PRED)
    assert f == pytest.approx(6 / 11)
    assert f == pytest.approx(chunk_scores(LAYOUT_GOLD, LAYOUT_PRED).f1)
    labels = sorted({t for s in LAYOUT_GOLD + LAYOUT_PRED for t in s})
    index = {t: k for k, t in enumerate(labels)}
    gold_ids = [np.array([index[t] for t in s]) for s in LAYOUT_GOLD]
    pred_ids = [np.array([index[t] for t in s]) for s in LAYOUT_PRED]
    assert chunk_f1(gold_ids, pred_ids, labels=labels) == f
    r = chunk_scores(gold_ids, pred_ids, labels=labels)
    assert r.as_text() == LAYOUT_TEXT


# --------------------------------------------------------------------------
# token and sequence accuracy
# --------------------------------------------------------------------------


def test_accuracy_nested_flat_and_arrays():
    assert accuracy([["A", "B"], ["C"]], [["A", "X"], ["C"]]) == pytest.approx(2 / 3)
    assert accuracy(["A", "B", "C", "D"], ["A", "B", "C", "X"]) == 0.75
    assert accuracy(np.array([1, 2, 3, 4]), np.array([1, 0, 3, 4])) == 0.75
    assert accuracy([np.array([1, 2]), np.array([3])], [[1, 2], [0]]) == pytest.approx(2 / 3)
    assert accuracy([], []) == 0.0


def test_sequence_accuracy():
    gold = [["A", "B"], ["C"], ["D", "E"]]
    assert sequence_accuracy(gold, [["A", "B"], ["X"], ("D", "E")]) == pytest.approx(2 / 3)
    assert sequence_accuracy(["A", "B"], ["A", "B"]) == 1.0
    assert sequence_accuracy(["A", "B"], ["A", "C"]) == 0.0
    assert sequence_accuracy([], []) == 0.0


def test_docstring_examples():
    result = doctest.testmod(metrics)
    assert result.attempted > 0 and result.failed == 0
