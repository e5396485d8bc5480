"""``spargel eval`` against ``conlleval.pl`` (2004-01-26): every report must be identical.

For every file and option set (none, ``-r``, ``-l``, ``-r -l``, plus ``-d`` / ``-o`` where a
file needs them) it runs ``perl conlleval.pl OPTIONS < FILE`` and ``spargel eval OPTIONS
FILE`` and compares standard output byte for byte; where conlleval refuses a file, spargel
must refuse it too (non-zero exit). The files are

* edge cases written here (boundaries, ``-X-`` and ``-DOCSTART-`` lines, untyped and bare
  tags, hyphenated tags, IOBES / BILOU quirks, odd spacing, CRLF, non-ASCII types, ...);
* real tagger outputs given with ``--outputs`` (column files whose last two columns are
  gold and predicted tags), or made with ``--train``: quick spargel models on the shared
  CoNLL-2000, CoNLL-2002 (Spanish) and UD English EWT (POS) data label their test sets;
* variants of every real output: CoNLL-2003 style (``-DOCSTART-`` documents, ``-X-``
  separators), IOBES and BILOU re-encodings, untyped B/I/O (base NP) tags, bare tags,
  tab-separated (``-d '\\t'``) and CRLF copies.

    python bench/conlleval_compare.py --conlleval path/to/conlleval.pl --train
    python bench/conlleval_compare.py --conlleval conlleval.pl --outputs a.out b.out

Prints one line per difference and a summary; the exit status is 1 when any report differs.
"""

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from spargel.cli import main as spargel_main  # noqa: E402
from _common import sentence_blocks  # noqa: E402

OPTION_SETS = [[], ["-r"], ["-l"], ["-r", "-l"]]

EDGE_CASES = {
    "iob2": b"He PRP B-NP B-NP\nruns VBZ B-VP B-VP\nfast RB B-ADVP O\n. . O O\n\n"
            b"The DT B-NP B-NP\nold JJ I-NP I-NP\nman NN I-NP B-NP\n",
    "iob1": b"a I-NP I-NP\nb I-NP I-NP\nc B-NP I-NP\nd O O\ne I-VP I-NP\nf I-VP I-VP\n",
    "type_change": b"a B-NP B-NP\nb I-VP I-NP\nc I-VP I-VP\nd I-PP O\n",
    "across_blank_line": b"a B-NP B-NP\nb I-NP I-NP\n\nc I-NP I-NP\nd I-NP B-NP\n",
    "iobes": b"a S-PER S-PER\nb B-LOC B-LOC\nc E-LOC E-LOC\nd B-LOC S-LOC\ne I-LOC B-LOC\n"
             b"f E-LOC E-LOC\ng O O\nh E-ORG B-ORG\ni B-ORG E-ORG\nj S-ORG S-ORG\nk S-ORG O\n",
    "iobes_E_then_B": b"a B-X B-X\nb E-X E-X\nc B-X B-X\nd E-X E-X\ne E-X S-X\nf E-X E-X\n",
    "bilou": b"a U-PER U-PER\nb B-LOC B-LOC\nc L-LOC L-LOC\nd B-LOC U-LOC\ne I-LOC B-LOC\n"
             b"f L-LOC L-LOC\ng O O\n",
    "x_boundaries": b"-X- -X- O O\na NN B-NP B-NP\nb NN I-NP I-NP\n-X- -X- O O\nc NN I-NP I-NP\n"
                    b"d NN I-NP B-NP\n-X- whatever B-NP I-NP\ne NN I-NP O\n",
    "docstart": b"-DOCSTART- -X- -X- O O\n\nEU NNP B-NP B-ORG B-ORG\nrejects VBZ B-VP O O\n"
                b"German JJ B-NP B-MISC B-MISC\n\n-DOCSTART- -X- -X- O I-ORG\n\n"
                b"Peter NNP B-NP B-PER B-PER\nBlackburn NNP I-NP I-PER I-PER\n",
    "docstart_no_blank": b"-DOCSTART- -X- O O\nA NNP B-PER B-PER\n-DOCSTART- -X- O O\nB NNP I-PER I-PER\n",
    "untyped": b"He PRP B B\nreckons VBZ O O\nthe DT B B\ncurrent JJ I I\naccount NN I B\n"
               b"deficit NN I I\nwill MD O O\n\nx NN I I\ny NN B I\nz NN O B\n",
    "bare_tags": b"the DT DT\nman NN NN\nran VBD VBN\n( -LRB- -LRB-\n) -RRB- -RRB-\n"
                 b"* -NONE- -NONE-\nx PRP$ PRP\n. . .\n, , :\n",
    "hyphenated_types": b"a B-I-PER B-I-PER\nb I-I-PER I-I-PER\nc B-X-Y B-X-Z\nd -LRB- -LRB-\n"
                        b"e --- ---\nf B- B-\ng I- B-\n",
    "brackets_and_dot": b"a [ [\nb ] ]\nc . .\nd B-NP [\ne I-NP ]\nf . B-NP\ng [-NP [-NP\nh ]-NP .\n",
    "type_zero_and_empty": b"a B-0 B-0\nb I-0 I-0\nc B-NP B-0\nd O-PER O-PER\ne O O-PER\n"
                           b"f B B-\ng 0 0\n",
    "sort_order": b"a B-b B-b\nb B-B B-B\nc B-a B-Z\nd B-10 B-9\ne B-_x B-_x\nf B-a_very_long_type_name "
                  b"B-a_very_long_type_name\n",
    "crlf": b"a B-NP B-NP\r\nb I-NP I-NP\r\n\r\nc B-VP B-VP\r\n",
    "crlf_blank_lines_only_lf": b"a B-NP B-NP\r\nb I-NP I-NP\r\n\nc B-VP B-VP\r\n",
    "spaces": b"  a B-NP B-NP\n  b I-NP O\n \n  c B-VP B-VP \n",
    "double_space": b"a  B-NP B-NP\nb  I-NP I-NP\n",
    "whitespace_only_lines": b"a B-NP B-NP\n   \nb I-NP I-NP\n\t\n",
    "no_final_newline": b"a B-NP B-NP\nb I-NP B-NP",
    "empty": b"",
    "only_boundaries": b"\n\n-X-\n\n",
    "non_ascii_utf8": "a B-PERSÖN B-PERSÖN\nb I-PERSÖN O\nc B-ÉTÉ B-ÉTÉ\nd B-名前 B-名前\n".encode(),
    "non_ascii_latin1": "a B-PERSÖN B-PERSÖN\nb I-PERSÖN O\nc B-ÉTÉ B-ÉTÉ\n".encode("latin-1"),
    "vertical_tab_ff": b"a\x0bb B-NP B-NP\nc\x0cd I-NP I-NP\n",
    "tab_inside_field": b"a\tb B-NP B-NP\nc I-NP I-NP\n",
    "all_wrong": b"a B-NP I-VP\nb I-NP B-VP\nc O B-PP\n",
    "all_outside": b"a O O\nb O O\n",
    "guessed_only": b"a O B-NP\nb O I-NP\n",
    "gold_only": b"a B-NP O\nb I-NP O\n",
    "chunk_at_file_end": b"a O B-NP\nb B-NP I-NP\nc I-NP I-NP\n",
    # conlleval refuses these: spargel must refuse them too
    "refused_width": b"a B-NP B-NP\nb X I-NP I-NP\n",
    "refused_one_field": b"a\nb\n",
    "refused_x_width": b"a B-NP B-NP\n-X- O\n",
}

# files that also run with these extra option sets
EXTRA_OPTIONS = {
    "bare_tags": [["-r", "-o", "NN"], ["-r", "-o", "-LRB-"]],
    "hyphenated_types": [["-r", "-o", "---"], ["-d", "-"]],
    "untyped": [["-r", "-o", "O"]],
    "double_space": [["-d", " +"]],
    "spaces": [["-d", "\\s+"]],
}


def _spargel_eval(args, path):
    out, err = io.BytesIO(), io.StringIO()
    wrapper = io.TextIOWrapper(out, encoding="utf-8")
    old = sys.stdout
    sys.stdout = wrapper
    try:
        with contextlib.redirect_stderr(err):
            rc = spargel_main(["eval", *args, str(path)])
        wrapper.flush()
    finally:
        sys.stdout = old
    return rc, out.getvalue(), err.getvalue()


def _conlleval(script, args, path):
    with open(path, "rb") as fh:
        r = subprocess.run(["perl", str(script), *args], stdin=fh, capture_output=True)
    return r.returncode, r.stdout, r.stderr


# ---------------------------------------------------------------------------------------
# variants of real outputs
# ---------------------------------------------------------------------------------------

def _sentences(data):
    return sentence_blocks(data.decode("latin-1").split("\n"), lambda line: line.split(" "))


def _write(sents, sep=" ", eol="\n"):
    return "".join(sep.join(tok) + eol for s in sents for tok in s + [[]]).encode("latin-1")


def _retag(tags, scheme):
    """IOB (1 or 2) tags to IOBES / BILOU, reading chunks strictly."""
    from spargel.metrics import chunks

    out = ["O"] * len(tags)
    single, last = ("S", "E") if scheme == "iobes" else ("U", "L")
    for ctype, start, end in chunks(tags, "iob2"):
        if end - start == 1:
            out[start] = f"{single}-{ctype}"
        else:
            out[start] = f"B-{ctype}"
            for i in range(start + 1, end - 1):
                out[i] = f"I-{ctype}"
            out[end - 1] = f"{last}-{ctype}"
    return out


def variants(name, data):
    sents = _sentences(data)
    out = {name: data}
    width = len(sents[0][0])
    # CoNLL-2003 style: documents of 20 sentences, -DOCSTART- lines, some -X- separators
    doc = []
    for i, s in enumerate(sents):
        if i % 20 == 0:
            doc.append([["-DOCSTART-"] + ["-X-"] * (width - 3) + ["O", "O"]])
        if i % 7 == 3:
            s = s + [["-X-"] * (width - 2) + ["O", "O"]] + s[:2]
        doc.append(s)
    out[name + ".conll2003"] = _write(doc)
    if all(len(t) >= 3 for s in sents for t in s):
        tags = [t[-2:] for s in sents for t in s]
        if any("-" in g[1:] for g, _ in tags) and all(not g.startswith("-") for g, _ in tags):
            for scheme in ("iobes", "bilou"):
                new = []
                for s in sents:
                    g = _retag([t[-2] for t in s], scheme)
                    p = _retag([t[-1] for t in s], scheme)
                    new.append([t[:-2] + [a, b] for t, a, b in zip(s, g, p)])
                out[f"{name}.{scheme}"] = _write(new)
            untyped = [[t[:-2] + [x[0] if x.endswith("-NP") else "O" for x in t[-2:]] for t in s]
                       for s in sents]
            out[name + ".untyped_np"] = _write(untyped)
            bare = [[t[:-2] + [x.partition("-")[2] or x for x in t[-2:]] for t in s] for s in sents]
            out[name + ".bare"] = _write(bare)
    out[name + ".crlf"] = _write(sents, eol="\r\n")
    out[name + ".tab"] = _write(sents, sep="\t")
    return out


def train_outputs(workdir):
    """Quick spargel models on the shared data label the test sets; returns their paths."""
    from _common import data_dir

    jobs = [
        ("conll2000", "train.txt", ["test.txt"], "utf-8"),
        ("conll2002_spanish", "esp.train", ["esp.testa", "esp.testb"], "latin-1"),
        ("ud_english_ewt", "en_ewt-ud-train.pos.txt", ["en_ewt-ud-test.pos.txt"], "utf-8"),
    ]
    outputs = []
    for name, train, tests, enc in jobs:
        d = data_dir(name)
        small = workdir / f"{name}.train"
        lines, n = [], 0
        for line in (d / train).read_bytes().split(b"\n"):
            lines.append(line)
            n += not line.strip()
            if n >= 1500:
                break
        small.write_bytes(b"\n".join(lines) + b"\n")
        model = workdir / f"{name}.model"
        assert spargel_main(["train", "-q", "-i", "40", "-t", "1", "--encoding", enc,
                             str(small), str(model)]) == 0
        for test in tests:
            out = workdir / f"{name}.{test}.out"
            assert spargel_main(["label", "--encoding", enc, "-m", str(model),
                                 str(d / test), str(out)]) == 0
            outputs.append(out)
    return outputs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conlleval", required=True, help="path of conlleval.pl")
    ap.add_argument("--outputs", nargs="*", default=[], help="labelled column files")
    ap.add_argument("--train", action="store_true",
                    help="label the shared data's test sets with quick spargel models first")
    ap.add_argument("--keep", metavar="DIR", help="write every compared file into DIR")
    args = ap.parse_args()
    if shutil.which("perl") is None:
        sys.exit("skipped: perl is not installed")
    script = Path(args.conlleval)
    if not script.is_file():
        sys.exit(f"skipped: {script} not found")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = dict(EDGE_CASES)
        outputs = [Path(p) for p in args.outputs]
        if args.train:
            outputs += train_outputs(tmp)
        for p in outputs:
            files.update(variants(p.name, p.read_bytes()))
        folder = Path(args.keep) if args.keep else tmp / "files"
        folder.mkdir(parents=True, exist_ok=True)
        n_runs = n_diff_runs = n_diff_lines = n_refused = n_lines = 0
        for name, data in files.items():
            path = folder / name
            path.write_bytes(data)
            option_sets = OPTION_SETS + EXTRA_OPTIONS.get(name, [])
            if name.endswith(".tab"):
                option_sets = option_sets + [o + ["-d", "\\t"] for o in OPTION_SETS]
            for opts in option_sets:
                n_runs += 1
                rc_p, out_p, _ = _conlleval(script, opts, path)
                rc_s, out_s, err_s = _spargel_eval(opts, path)
                if rc_p != 0:
                    n_refused += 1
                    tab_ok = name.endswith(".tab") and "-d" not in opts and rc_s == 0
                    if rc_s == 0 and not tab_ok:
                        n_diff_runs += 1
                        print(f"DIFF {name} {' '.join(opts)}: conlleval refuses it, spargel reads it")
                    continue
                a, b = out_p.split(b"\n"), out_s.split(b"\n")
                n_lines += len(a) - 1
                bad = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
                if rc_s != 0 or bad:
                    n_diff_runs += 1
                    n_diff_lines += bad
                    print(f"DIFF {name} {' '.join(opts)}: {bad} lines differ (spargel rc {rc_s}) "
                          f"{err_s.strip()[:200]}")
        print(f"{len(files)} files ({len(outputs)} tagger outputs), {n_runs} runs, {n_lines} report "
              f"lines compared, {n_refused} runs refused by conlleval; runs that differ: "
              f"{n_diff_runs}, differing lines: {n_diff_lines}")
    return 1 if n_diff_runs else 0


if __name__ == "__main__":
    sys.exit(main())
