"""``spargel eval`` prints conlleval.pl's report (version 2004-01-26).

The expected reports below were written out from runs of conlleval.pl on the same bytes.
The differential test at the end runs conlleval.pl itself on these cases and on random
tag files; it needs ``perl`` and the script, named by the environment variable
``SPARGEL_CONLLEVAL`` (it is not shipped with spargel), and is skipped otherwise.
"""

import io
import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from spargel.cli import main
from spargel.conlleval import conlleval, perl_split, read_tokens

# name: (options, input bytes, conlleval.pl's output bytes)
CASES = {
    'x_boundaries': ([], b'-X- -X- O O\na NN B-NP B-NP\nb NN I-NP I-NP\n-X- -X- O O\nc NN I-NP I-NP\nd NN I-NP B-NP\n-X- other B-NP I-NP\ne NN I-NP O\n',
        b'processed 5 tokens with 3 phrases; found: 3 phrases; correct: 1.\naccuracy:  60.00%; precision:  33.33%; recall:  33.33%; FB1:  33.33\n               NP: precision:  33.33%; recall:  33.33%; FB1:  33.33  3\n'),
    'docstart': ([], b'-DOCSTART- -X- O O\n\nEU NNP B-ORG B-ORG\nrejects VBZ O O\n\n-DOCSTART- -X- O I-ORG\n\nPeter NNP B-PER B-PER\nBlackburn NNP I-PER I-PER\n',
        b'processed 6 tokens with 2 phrases; found: 3 phrases; correct: 2.\naccuracy:  83.33%; precision:  66.67%; recall: 100.00%; FB1:  80.00\n              ORG: precision:  50.00%; recall: 100.00%; FB1:  66.67  2\n              PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n'),
    'untyped': ([], b'He B B\nreckons O O\nthe B B\ncurrent I I\naccount I B\n\nx I I\ny B I\n',
        b'processed 7 tokens with 4 phrases; found: 4 phrases; correct: 1.\naccuracy:  71.43%; precision:  25.00%; recall:  25.00%; FB1:  25.00\n                 : precision:  25.00%; recall:  25.00%; FB1:  25.00  4\n                 : precision:  25.00%; recall:  25.00%; FB1:  25.00  4\n'),
    'bare_tags': ([], b'the DT DT\n( -LRB- -LRB-\n* -NONE- -NONE-\nx PRP$ PRP\n. . .\n',
        b'processed 5 tokens with 3 phrases; found: 3 phrases; correct: 3.\naccuracy:  80.00%; precision: 100.00%; recall: 100.00%; FB1: 100.00\n                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n             LRB-: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n            NONE-: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n'),
    'bare_tags_raw': (['-r'], b'the DT DT\n( -LRB- -LRB-\n* -NONE- -NONE-\nx PRP$ PRP\n. . .\n',
        b'processed 5 tokens with 5 phrases; found: 5 phrases; correct: 4.\naccuracy:  80.00%; precision:  80.00%; recall:  80.00%; FB1:  80.00\n            -LRB-: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n           -NONE-: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n                .: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n               DT: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n              PRP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n             PRP$: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n'),
    'raw_outside': (['-r', '-o', 'NN'], b'a NN NN\nb VB NN\nc NN VB\nd O O\n',
        b'processed 4 tokens with 1 phrases; found: 1 phrases; correct: 0.\naccuracy:  50.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n               VB: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n'),
    'iobes_quirk': ([], b'a B-X B-X\nb E-X E-X\nc B-X S-X\nd E-X E-X\ne S-X S-X\n',
        b'processed 5 tokens with 1 phrases; found: 1 phrases; correct: 1.\naccuracy:  80.00%; precision: 100.00%; recall: 100.00%; FB1: 100.00\n                X: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n'),
    'hyphen_types_and_zero': ([], b'a B-I-PER B-I-PER\nb I-I-PER I-I-PER\nc B-0 B-0\nd O-PER O\n',
        b'processed 4 tokens with 2 phrases; found: 2 phrases; correct: 2.\naccuracy:  75.00%; precision: 100.00%; recall: 100.00%; FB1: 100.00\n                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n            I-PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n'),
    'crlf': ([], b'a B-NP B-NP\r\nb I-NP I-NP\r\n\nc B-VP O\r\n',
        b'processed 3 tokens with 2 phrases; found: 1 phrases; correct: 0.\naccuracy:   0.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n               NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n              NP\r: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n'),
    'spacing': ([], b'  a B-NP B-NP\n  b I-NP O\n \n  c B-VP B-VP \n',
        b'processed 3 tokens with 2 phrases; found: 2 phrases; correct: 1.\naccuracy:  66.67%; precision:  50.00%; recall:  50.00%; FB1:  50.00\n               NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n               VP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n'),
    'delimiter': (['-d', ','], b'a,B-NP,B-NP\nb,I-NP,B-NP\n',
        b'processed 2 tokens with 1 phrases; found: 2 phrases; correct: 0.\naccuracy:  50.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n               NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  2\n'),
    'latex': (['-l'], b'a B-NP B-NP\nb I-NP O\nc B-VP B-VP\n',
        b'        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline\nNP      &    0.00\\% &   0.00\\% &   0.00 \\\\\nVP      &  100.00\\% & 100.00\\% & 100.00 \\\\\\hline\nOverall &   50.00\\% &  50.00\\% &  50.00 \\\\\\hline\n'),
    'outside_dash': (['-r', '-o', '-'], b'a B-NP B-NP\nb - NP\n',
        b'processed 2 tokens with 1 phrases; found: 2 phrases; correct: 1.\naccuracy:  50.00%; precision:  50.00%; recall: 100.00%; FB1:  66.67\n             B-NP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n               NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n'),
    'delimiter_dash': (['-d', '-'], b'a-B-NP-B-NP\n',
        b'processed 1 tokens with 1 phrases; found: 0 phrases; correct: 0.\naccuracy:   0.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n                 : precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n'),
    'empty': ([], b'',
        b'processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0.\n'),
}


def _eval(argv, path):
    out = io.BytesIO()
    wrapper = io.TextIOWrapper(out, encoding="utf-8")
    old = sys.stdout
    sys.stdout = wrapper
    try:
        rc = main(["eval", *argv, str(path)])
        wrapper.flush()
    finally:
        sys.stdout = old
    return rc, out.getvalue()


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_is_conllevals(case, tmp_path):
    opts, data, expected = CASES[case]
    f = tmp_path / "in.txt"
    f.write_bytes(data)
    rc, out = _eval(opts, f)
    assert rc == 0
    assert out == expected


def test_boundaries_and_docstart_lines():
    # -X- lines end chunks and are not tokens; -DOCSTART- lines are tokens
    r = conlleval(read_tokens(CASES["x_boundaries"][1]))
    assert (r.tokens, r.found_correct, r.found_guessed) == (5, 3, 3)
    r = conlleval(read_tokens(CASES["docstart"][1]))
    assert r.tokens == 6 and r.found_guessed_by_type == {"ORG": 2, "PER": 1}


def test_perl_split():
    sp = re.compile(" ")
    assert perl_split(sp, "") == []
    assert perl_split(sp, "   ") == []
    assert perl_split(sp, " a  b  ") == ["", "a", "", "b"]
    assert perl_split(re.compile("(,)"), "a,b") == ["a", ",", "b"]
    assert perl_split(re.compile(" ?"), "a b") == ["a", "b"]


def test_tab_separated_file_is_read_on_tabs(tmp_path):
    # conlleval refuses such a file (one field per line); spargel splits it on tabs
    f = tmp_path / "tabs.txt"
    f.write_bytes(b"a\tB-NP\tB-NP\nb\tI-NP\tO\n")
    rc, out = _eval([], f)
    assert rc == 0 and out.startswith(b"processed 2 tokens with 1 phrases; found: 1 phrases; correct: 0.")
    assert _eval(["-d", "\\t"], f) == (rc, out)


def test_json_and_type_names(tmp_path, capsys):
    f = tmp_path / "u.txt"
    f.write_bytes("a B-PERSÖN B-PERSÖN\nb I-PERSÖN O\nc B-LOC B-LOC\n".encode())
    assert main(["eval", "--json", str(f)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["tokens"], d["found"], d["guessed"], d["correct"]) == (3, 2, 2, 1)
    assert d["per_type"]["PERSÖN"]["f1"] == 0.0 and d["f1"] == 0.5
    # text reports print the bytes of the types and pad them by bytes, as Perl does
    rc, out = _eval([], f)
    assert "       PERSÖN: ".encode() in out


def test_strict_iobes_and_per_tag(tmp_path, capsys):
    f = tmp_path / "e.txt"
    f.write_bytes(CASES["iobes_quirk"][1])
    # conlleval: E-X B-X is one chunk; strict IOBES: B-X E-X, B-X E-X, S-X are three
    assert main(["eval", "--scheme", "iobes", "--json", str(f)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["found"], d["guessed"], d["correct"]) == (3, 4, 2)
    assert main(["eval", "--per-tag", "--json", str(f)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "tags" and d["per_tag"]["S-X"]["guessed"] == 2


@pytest.mark.parametrize("data, line", [(b"a B-NP B-NP\nb X I-NP I-NP\n", 2),
                                         (b"a\nb\n", 1), (b"a O O\n\n-X- O\n", 3)])
def test_files_conlleval_refuses(data, line, tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_bytes(data)
    assert main(["eval", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"bad.txt:{line}:" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------
# differential: conlleval.pl itself
# ---------------------------------------------------------------------------------------

SCRIPT = os.environ.get("SPARGEL_CONLLEVAL")
needs_conlleval = pytest.mark.skipif(
    not (SCRIPT and os.path.isfile(SCRIPT) and shutil.which("perl")),
    reason="set SPARGEL_CONLLEVAL to the path of conlleval.pl (2004-01-26) and install perl "
           "to compare with the script itself")

TAGS = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "L-VP", "U-VP", "B", "I", "E",
        "S", "NP", "-LRB-", "-NONE-", ".", "[", "]", "O-NP", "B-0", "I-", "B-A-B", "NN", "0"]


def _random_file(rng):
    lines = []
    for _ in range(rng.randint(0, 40)):
        r = rng.random()
        if r < 0.1:
            lines.append("")
        elif r < 0.15:
            lines.append("-X- x O O")
        elif r < 0.18:
            lines.append("-DOCSTART- -X- O O")
        else:
            lines.append(f"w p {rng.choice(TAGS)} {rng.choice(TAGS)}")
    return ("\n".join(lines) + ("\n" if rng.random() < 0.9 else "")).encode()


@needs_conlleval
def test_same_report_as_conlleval_pl(tmp_path):
    rng = random.Random(36)
    runs = [(opts, data) for opts, data, _ in CASES.values()]
    runs += [(rng.choice([[], ["-r"], ["-l"], ["-r", "-o", "NN"]]), _random_file(rng))
             for _ in range(300)]
    f = tmp_path / "in.txt"
    for opts, data in runs:
        f.write_bytes(data)
        ref = subprocess.run(["perl", SCRIPT, *opts], input=data, capture_output=True)
        assert ref.returncode == 0
        rc, out = _eval(opts, f)
        assert (rc, out) == (0, ref.stdout), (opts, data)
