"""A classic python-crfsuite CoNLL-2000 chunking script, run with python-crfsuite and
with ``spargel.pycrfsuite``: only its import differs.

The script (:func:`classic_script`) is the one of python-crfsuite's example notebook,
on CoNLL-2000 chunking (``../shared/data/conll2000``): per token a list of attribute
strings (``bias``, the word lowered, its last 3 and 2 characters, ``isupper``,
``istitle``, ``isdigit``, the POS tag and its first 2 characters, the same for the
words at -1 and +1, ``BOS`` / ``EOS`` at the edges), ``Trainer(verbose=False)``, one
``append(xseq, yseq)`` per training sentence (8,936), ``set_params({'c1': 1.0, 'c2':
1e-3, 'max_iterations': 50, 'feature.possible_transitions': True})``, ``train(path)``,
then ``Tagger().open(path)`` and one ``tag(xseq)`` call per test sentence (2,012).

Each run is a fresh process (python-crfsuite's in ``--pycrfsuite-python``, the
interpreter that has it; spargel's in this one), the two alternating for ``--rounds``
rounds; the table gives the medians. Timed inside the script, CPU and wall: training
(every ``append`` plus ``train``), and tagging (every ``tag`` call; the ``open`` apart).
spargel's compiled kernels come from numba's cache, whose loading is timed as part of the
first ``train`` / ``tag`` (as a user's script pays it); ``--warm`` also reports a second
pass of the script in the same process (training and tagging again), which leaves the
loading out.

Chunk F1 (conlleval rules) of each tool's tags on the test set, and the models swapped:
spargel's ``Tagger`` opens python-crfsuite's model file and python-crfsuite's opens
spargel's; the tags must be those of the model's own library.

Targets (issue 47): F1 within 0.1 of python-crfsuite's, training <= 0.5x its time,
tagging at least as fast, models interchangeable both ways.

    python bench/pycrfsuite_script.py --pycrfsuite-python PY [--rounds 3] [--warm] [--markdown FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import pycrfsuite_python, sentence_blocks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "conll2000"


# --------------------------------------------------------------------------- the script
def read_sentences(path):
    """[[(word, pos, chunk), ...] per sentence] of a CoNLL-2000 file."""
    with open(path, encoding="utf-8") as fh:
        return sentence_blocks(fh, lambda line: tuple(line.split()))


def word2features(sent, i):
    word, postag = sent[i][0], sent[i][1]
    features = [
        'bias',
        'word.lower=' + word.lower(),
        'word[-3:]=' + word[-3:],
        'word[-2:]=' + word[-2:],
        'word.isupper=%s' % word.isupper(),
        'word.istitle=%s' % word.istitle(),
        'word.isdigit=%s' % word.isdigit(),
        'postag=' + postag,
        'postag[:2]=' + postag[:2],
    ]
    if i > 0:
        word1, postag1 = sent[i - 1][0], sent[i - 1][1]
        features.extend([
            '-1:word.lower=' + word1.lower(),
            '-1:word.istitle=%s' % word1.istitle(),
            '-1:word.isupper=%s' % word1.isupper(),
            '-1:postag=' + postag1,
            '-1:postag[:2]=' + postag1[:2],
        ])
    else:
        features.append('BOS')
    if i < len(sent) - 1:
        word1, postag1 = sent[i + 1][0], sent[i + 1][1]
        features.extend([
            '+1:word.lower=' + word1.lower(),
            '+1:word.istitle=%s' % word1.istitle(),
            '+1:word.isupper=%s' % word1.isupper(),
            '+1:postag=' + postag1,
            '+1:postag[:2]=' + postag1[:2],
        ])
    else:
        features.append('EOS')
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


def classic_script(pycrfsuite, train_sents, test_sents, model_path):
    """The script; ``pycrfsuite`` is the module (the only difference between the runs).
    Returns the test tags and the timings."""
    X_train = [sent2features(s) for s in train_sents]
    y_train = [sent2labels(s) for s in train_sents]
    X_test = [sent2features(s) for s in test_sents]

    t0, c0 = time.perf_counter(), time.process_time()
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X_train, y_train):
        trainer.append(xseq, yseq)
    t1, c1 = time.perf_counter(), time.process_time()
    trainer.set_params({
        'c1': 1.0,   # coefficient for L1 penalty
        'c2': 1e-3,  # coefficient for L2 penalty
        'max_iterations': 50,  # stop earlier
        # include transitions that are possible, but not observed
        'feature.possible_transitions': True
    })
    trainer.train(model_path)
    t2, c2 = time.perf_counter(), time.process_time()

    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    t3, c3 = time.perf_counter(), time.process_time()
    y_pred = [tagger.tag(xseq) for xseq in X_test]
    t4, c4 = time.perf_counter(), time.process_time()
    return y_pred, {"append_s": t1 - t0, "append_cpu": c1 - c0, "train_s": t2 - t0, "train_cpu": c2 - c0,
                    "open_s": t3 - t2, "tag_s": t4 - t3, "tag_cpu": c4 - c3}


# --------------------------------------------------------------------------- workers
def _module(impl):
    if impl == "pycrfsuite":
        import pycrfsuite
        return pycrfsuite
    from spargel import pycrfsuite
    return pycrfsuite


def worker(args):
    """One run of the script (``--impl``), or (``--tag-with``) tagging the test set with
    the model file ``--model``; prints one JSON line."""
    test = read_sentences(args.data / "test.txt")
    if args.tag_with:
        tagger = _module(args.tag_with).Tagger()
        tagger.open(args.model)
        print(json.dumps({"tags": [tagger.tag(sent2features(s)) for s in test]}))
        return
    train = read_sentences(args.data / "train.txt")
    module = _module(args.impl)
    tags, times = classic_script(module, train, test, args.model)
    out = {"tags": tags, **times}
    if args.warm:
        _, again = classic_script(module, train, test, args.model + ".again")
        out["warm"] = again
    print(json.dumps(out))


# --------------------------------------------------------------------------- the run
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pycrfsuite-python", help="an interpreter with python-crfsuite (default: this one, if it has it)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool, alternating")
    ap.add_argument("--warm", action="store_true", help="also time a second pass of the script in each process")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--impl", choices=("pycrfsuite", "spargel"), help=argparse.SUPPRESS)
    ap.add_argument("--tag-with", choices=("pycrfsuite", "spargel"), help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.impl or args.tag_with:
        worker(args)
        return 0
    if not (args.data / "train.txt").exists():
        print(f"skipped: CoNLL-2000 not found at {args.data}")
        return 0
    other = pycrfsuite_python(args.pycrfsuite_python)
    if other is None:
        raise SystemExit("python-crfsuite is needed: give --pycrfsuite-python")
    from spargel.metrics import chunk_f1

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    python = {"pycrfsuite": other, "spargel": sys.executable}

    def run(impl, *extra):
        out = subprocess.run([python[impl], __file__, "--data", str(args.data), *extra],
                             capture_output=True, text=True, env=env)
        if out.returncode:
            sys.stderr.write(out.stderr)
            raise SystemExit(f"{impl} run failed ({out.returncode})")
        return json.loads(out.stdout.strip().splitlines()[-1])

    gold = [sent2labels(s) for s in read_sentences(args.data / "test.txt")]
    runs = {"pycrfsuite": [], "spargel": []}
    with tempfile.TemporaryDirectory() as d:
        models = {impl: str(Path(d) / f"{impl}.crfsuite") for impl in runs}
        for r in range(args.rounds):
            for impl in (("pycrfsuite", "spargel") if r % 2 == 0 else ("spargel", "pycrfsuite")):
                print(f"round {r + 1}: {impl} ...", file=sys.stderr)
                runs[impl].append(run(impl, "--impl", impl, "--model", models[impl], *(["--warm"] if args.warm else [])))
        # the models swapped (the last round's files)
        swapped = {"spargel": run("spargel", "--tag-with", "spargel", "--model", models["pycrfsuite"])["tags"],
                   "pycrfsuite": run("pycrfsuite", "--tag-with", "pycrfsuite", "--model", models["spargel"])["tags"]}

    n_tok = sum(map(len, gold))

    def med(impl, key, warm=False):
        return statistics.median((r["warm"] if warm else r)[key] for r in runs[impl])

    def same(a, b):
        return sum(x == y for pa, pb in zip(a, b) for x, y in zip(pa, pb))

    f1 = {impl: 100 * chunk_f1(gold, runs[impl][-1]["tags"]) for impl in runs}
    rows = [("training (append + train), CPU s", "train_cpu", "{:.2f}"),
            ("training (append + train), wall s", "train_s", "{:.2f}"),
            ("of which append, CPU s", "append_cpu", "{:.2f}"),
            ("tagging (2,012 tag calls), CPU s", "tag_cpu", "{:.3f}"),
            ("tagging (2,012 tag calls), wall s", "tag_s", "{:.3f}"),
            ("Tagger.open, wall s", "open_s", "{:.3f}")]
    lines = [f"CoNLL-2000, python-crfsuite's example script (attribute lists; c1 = 1, c2 = 1e-3, 50 iterations, "
             f"possible transitions), one process per run, {args.rounds} rounds alternating, medians, one thread",
             "", "| | python-crfsuite | spargel.pycrfsuite | spargel / python-crfsuite |", "|---|---|---|---|"]
    for passes in ((False, True) if args.warm else (False,)):
        for title, key, fmt in rows:
            a, b = med("pycrfsuite", key, passes), med("spargel", key, passes)
            title = ("second pass: " if passes else "") + title
            ratio = f"{b / a:.2f}x" if a >= 0.01 else "—"
            lines.append(f"| {title} | {fmt.format(a)} | {fmt.format(b)} | {ratio} |")
    tok_s = {impl: n_tok / med(impl, "tag_s") for impl in runs}
    lines.append(f"| tagging, tokens / s (wall) | {tok_s['pycrfsuite']:,.0f} | {tok_s['spargel']:,.0f} | "
                 f"{tok_s['spargel'] / tok_s['pycrfsuite']:.2f}x |")
    lines.append(f"| chunk F1 (test) | {f1['pycrfsuite']:.2f} | {f1['spargel']:.2f} | "
                 f"{f1['spargel'] - f1['pycrfsuite']:+.2f} |")
    own_p, own_s = runs["pycrfsuite"][-1]["tags"], runs["spargel"][-1]["tags"]
    lines.append(f"| python-crfsuite's model tagged by spargel: tags equal to python-crfsuite's | — | "
                 f"{same(swapped['spargel'], own_p)} / {n_tok} | |")
    lines.append(f"| spargel's model tagged by python-crfsuite: tags equal to spargel's | "
                 f"{same(swapped['pycrfsuite'], own_s)} / {n_tok} | — | |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
