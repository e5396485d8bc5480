"""Wapiti and CRF++ model files against the tools themselves, on CoNLL-2000.

Given a built Wapiti 1.5 (``make`` in a checkout of Jekub/Wapiti) and a built CRF++
0.58 (``./configure && make`` in a checkout of taku910/crfpp):

1. spargel -> Wapiti: a CRF trained by spargel with a Wapiti pattern file (written
   here) is saved with ``save(format="wapiti")``; ``wapiti label -m`` must label the
   CoNLL-2000 test set as spargel does;
2. Wapiti -> spargel: ``wapiti train`` with the same pattern file; ``CRF.load`` of its
   model must label the test set as ``wapiti label`` does; the same for Wapiti's own
   pattern files and data (``dat/`` of the Wapiti folder);
3. CRF++ -> spargel: ``crf_learn -t`` with a chunking template (written here);
   ``CRF.load`` of its binary model and of its text model must each label the test set
   as ``crf_test`` does; the same for CRF++'s four examples (``example/`` of the CRF++ folder: seg, JapaneseNE in
   EUC-JP, chunking, basenp);
4. untrusted input: truncations (at every line end and at random bytes) and random
   corruptions of the four small model files (the first two runs' models on the first
   sentences, and the test suite's files), counted as refused (``ModelFileError``) or
   read (and then labelling without error).

    python bench/model_files_compare.py --wapiti path/to/Wapiti --crfpp path/to/crfpp [--iter 50]

Prints the counts of identical tokens and sentences; exits 1 on any difference, and
skips (exit 0, a message) when a tool or the data set is missing.
"""

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from _common import data_dir, sentence_blocks  # noqa: E402

from spargel import CRF  # noqa: E402
from spargel.data.conll import read_conll  # noqa: E402
from spargel.errors import ModelFileError  # noqa: E402

PATTERN = """# format: wapiti
# chunking: words, tags and a few shapes (Wapiti's pattern language)
u:w-2=%x[-2,0]
u:w-1=%x[-1,0]
u:w=%x[0,0]
u:w+1=%x[1,0]
u:w+2=%x[2,0]
u:ww=%x[-1,0]/%x[0,0]
u:p-2=%x[-2,1]
u:p-1=%x[-1,1]
u:p=%x[0,1]
u:p+1=%x[1,1]
u:p+2=%x[2,1]
u:pp=%x[-1,1]/%x[0,1]
u:pp+=%x[0,1]/%x[1,1]
u:cap=%t[0,0,"^\\u"]
u:num=%t[0,0,"\\d"]
u:suf=%m[0,0,"..?$"]
u:low=%X[0,0]
*:bp=%x[0,1]
b
"""

TEMPLATE = """U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-1,1]/%x[0,1]
U16:%x[0,1]/%x[1,1]
B01:%x[0,1]
B
"""


def tool_labels(path, encoding="utf-8"):
    """Per sentence, the last field of each line of a tool's output."""
    lines = Path(path).read_text(encoding=encoding).split("\n")
    return [[row[-1] for row in block]
            for block in sentence_blocks(lines, lambda line: re.split(r"[ \t]+", line.strip()))]


def compare(name, ours, theirs):
    if len(ours) != len(theirs) or any(len(a) != len(b) for a, b in zip(ours, theirs)):
        print(f"{name}: the outputs have different shapes")
        return False
    tok = sum(len(a) for a in ours)
    same_tok = sum(x == y for a, b in zip(ours, theirs) for x, y in zip(a, b))
    same_seq = sum(a == b for a, b in zip(ours, theirs))
    print(f"{name}: {same_tok}/{tok} tokens and {same_seq}/{len(ours)} sentences identical")
    return same_tok == tok


def run(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run([str(c) for c in cmd], check=True, stdout=kw.pop("stdout", subprocess.DEVNULL),
                   stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def outcome(path, X):
    try:
        crf = CRF.load(path)
    except ModelFileError:
        return "refused"
    crf.predict(X)
    return "read"


def fuzz(path, X, rng, n_mut=300):
    data = Path(path).read_bytes()
    counts = {"refused": 0, "read": 0}
    cuts = sorted({i + 1 for i, c in enumerate(data[:-1]) if c == 10} | {rng.randrange(len(data)) for _ in range(200)})
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d) / Path(path).name
        for cut in cuts:
            tmp.write_bytes(data[:cut])
            counts[outcome(tmp, X)] += 1
        trunc = dict(counts)
        for _ in range(n_mut):
            b = bytearray(data)
            i = rng.randrange(len(b))
            op = rng.randrange(4)
            if op == 0:
                b[i] = rng.randrange(256)
            elif op == 1:
                del b[i:i + rng.randrange(1, 20)]
            elif op == 2:
                b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
            else:
                pos = [j for j, c in enumerate(b) if 48 <= c <= 57]
                b[rng.choice(pos)] = rng.randrange(48, 58)
            tmp.write_bytes(bytes(b))
            counts[outcome(tmp, X)] += 1
    mut = {k: counts[k] - trunc[k] for k in counts}
    print(f"  {Path(path).name}: truncations {len(cuts)}: {trunc['refused']} refused, {trunc['read']} read; "
          f"corruptions {n_mut}: {mut['refused']} refused, {mut['read']} read")
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wapiti", type=Path, required=True, help="built Wapiti folder (holds the 'wapiti' binary)")
    ap.add_argument("--crfpp", type=Path, required=True, help="built CRF++ folder (crf_learn, crf_test)")
    ap.add_argument("--iter", type=int, default=50, help="training iterations of each tool and of spargel")
    ap.add_argument("--work", type=Path, default=None, help="keep the models and outputs here")
    args = ap.parse_args(argv)
    wapiti = args.wapiti / "wapiti"
    learn, test_bin = args.crfpp / "crf_learn", args.crfpp / "crf_test"
    missing = [p for p in (wapiti, learn, test_bin) if not p.exists()]
    if missing:
        print(f"skipped: missing {', '.join(map(str, missing))}")
        return 0
    data = data_dir("conll2000")
    train, test = Path(data) / "train.txt", Path(data) / "test.txt"
    work = args.work or Path(tempfile.mkdtemp(prefix="model-files-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "pattern.txt").write_text(PATTERN)
    (work / "template.txt").write_text(TEMPLATE)
    tr = list(read_conll(str(train)))
    te = list(read_conll(str(test)))
    X, y = [[r[:2] for r in s.columns] for s in tr], [s.labels for s in tr]
    Xt = [[r[:2] for r in s.columns] for s in te]
    ok = True

    # 1. spargel -> Wapiti
    t0 = time.perf_counter()
    crf = CRF(template=PATTERN, l1=1.0, max_iter=args.iter, feature_space="full").fit(X, y)
    print(f"spargel train: {time.perf_counter() - t0:.1f}s, {crf.n_active_features_} active weights")
    crf.save(work / "spargel.wapiti", format="wapiti")
    secs = run([wapiti, "label", "-m", work / "spargel.wapiti", test, work / "spargel.wapiti.out"])
    ok &= compare(f"spargel model labelled by 'wapiti label' ({secs:.1f}s) vs spargel",
                  crf.predict(Xt), tool_labels(work / "spargel.wapiti.out"))

    # 2. Wapiti -> spargel
    secs = run([wapiti, "train", "-p", work / "pattern.txt", "-i", args.iter, "-t", "1", train,
                work / "wapiti.model"])
    print(f"wapiti train: {secs:.1f}s")
    secs = run([wapiti, "label", "-m", work / "wapiti.model", test, work / "wapiti.out"])
    t0 = time.perf_counter()
    theirs = CRF.load(work / "wapiti.model")
    ok &= compare(f"Wapiti model read by spargel ({time.perf_counter() - t0:.1f}s to read) vs 'wapiti label'",
                  theirs.predict(Xt), tool_labels(work / "wapiti.out"))

    # 2b. Wapiti's own pattern files and data (dat/: its regexes, classes, '*' lines)
    for pat, tr_name, te_name in (("chpattern.txt", "chtrain.txt", "chtest.txt"),
                                  ("nppattern.txt", "nptrain.txt", "nptest.txt"),
                                  ("pattern.txt", "train.txt", "test.txt")):
        d = args.wapiti / "dat"
        if not (d / pat).exists():
            print(f"Wapiti's dat/{pat}: not found, skipped")
            continue
        model = work / f"dat_{pat}.model"
        run([wapiti, "train", "-p", d / pat, "-i", 5, "-t", 1, d / tr_name, model])
        run([wapiti, "label", "-m", model, d / te_name, work / f"dat_{pat}.out"])
        theirs = CRF.load(model)
        # the whole line is observations to 'wapiti label' (no -c): give spargel every column
        sents = [s.columns for s in read_conll(str(d / te_name), has_labels=False)]
        ok &= compare(f"Wapiti's dat/{pat} model (wapiti train -i 5) read by spargel vs 'wapiti label'",
                      theirs.predict(sents), tool_labels(work / f"dat_{pat}.out"))

    # 3. CRF++ -> spargel
    secs = run([learn, "-t", "-m", args.iter, "-p", "1", "-f", "1", work / "template.txt", train,
                work / "crfpp.model"])
    print(f"crf_learn: {secs:.1f}s")
    with open(work / "crfpp.out", "w") as fh:
        run([test_bin, "-m", work / "crfpp.model", test], stdout=fh)
    t0 = time.perf_counter()
    theirs = CRF.load(work / "crfpp.model.txt")
    ok &= compare(f"CRF++ text model read by spargel ({time.perf_counter() - t0:.1f}s to read) vs crf_test",
                  theirs.predict(Xt), tool_labels(work / "crfpp.out"))
    t0 = time.perf_counter()
    theirs = CRF.load(work / "crfpp.model")
    ok &= compare(f"CRF++ binary model read by spargel ({time.perf_counter() - t0:.1f}s to read) vs crf_test",
                  theirs.predict(Xt), tool_labels(work / "crfpp.out"))

    # 3b. CRF++'s own examples (seg, JapaneseNE in EUC-JP, chunking, basenp)
    for ex, enc in (("seg", "utf-8"), ("JapaneseNE", "euc-jp"), ("chunking", "utf-8"), ("basenp", "utf-8")):
        d = args.crfpp / "example" / ex
        if not (d / "template").exists():
            print(f"CRF++ example {ex}: not found, skipped")
            continue
        run([learn, "-t", "-m", 100, "-p", 1, d / "template", d / "train.data", work / f"{ex}.model"])
        with open(work / f"{ex}.out", "w") as fh:
            run([test_bin, "-m", work / f"{ex}.model", d / "test.data"], stdout=fh)
        sents = [s.columns for s in read_conll(str(d / "test.data"), has_labels=False, encoding=enc)]
        for kind, model in (("text", f"{ex}.model.txt"), ("binary", f"{ex}.model")):
            theirs = CRF.load(work / model, encoding=enc)
            ok &= compare(f"CRF++ example {ex} ({enc}): {kind} model read by spargel vs crf_test",
                          theirs.predict([[r[:-1] for r in s] for s in sents]),
                          tool_labels(work / f"{ex}.out", enc))

    # 4. fuzzing small model files
    print("fuzzed model files (refused: ModelFileError; read: loaded and labelled without error):")
    rng = random.Random(0)
    small = CRF(template=PATTERN, l1=1.0, max_iter=20).fit(X[:30], y[:30])
    small.save(work / "small_spargel.wapiti", format="wapiti")
    files = [work / "small_spargel.wapiti"] + [REPO / "tests" / "data" / n for n in
                                               ("tiny_chunks.wapiti", "tiny_chunks.crfpp.model.txt",
                                                "tiny_chunks.crfpp.model")]
    for f in files:
        fuzz(f, Xt[:5], rng)
    print(f"files in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
