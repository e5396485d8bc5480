"""Tagging one sentence per call: ``spargel.pycrfsuite.Tagger.tag`` against
python-crfsuite's ``Tagger.tag`` on the same CRFsuite model file.

CoNLL-2000 chunking (``../shared/data/conll2000``) with the sklearn-crfsuite tutorial's
feature dicts. A model is trained once (``--train-with``: spargel's ``pycrfsuite.Trainer``
or python-crfsuite's, c1=1, c2=1e-3, ``--max-iter`` iterations) and every implementation
tags the 2,012 test sentences one call per sentence, in its own process; the table gives
the median tokens per second over ``--repeats`` passes and the share of tags equal to the
first implementation's. ``spargel CRF.predict_single`` is the path the issue measured
(the estimator's general prediction path, one sentence per call).

The script itself needs neither library: each worker imports its own, so python-crfsuite
may live in another interpreter (``--pycrfsuite-python``; python-crfsuite is no
dependency of spargel).

    python bench/pycrfsuite_tagging.py [--pycrfsuite-python PY] [--repeats 5] [--markdown out.md]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import pycrfsuite_python, sentence_blocks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "conll2000"


def read_sentences(path):
    """[(columns per token, label per token)] of a CoNLL column file."""
    with open(path, encoding="utf-8") as fh:
        return [([p[:-1] for p in block], [p[-1] for p in block]) for block in sentence_blocks(fh)]


def word2features(sent, i):
    word, pos = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word[-2:]": word[-2:],
         "word.isupper()": word.isupper(), "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
         "postag": pos, "postag[:2]": pos[:2]}
    for off in (-1, 1):
        j = i + off
        if 0 <= j < len(sent):
            w, p = sent[j][0], sent[j][1]
            f.update({f"{off:+d}:word.lower()": w.lower(), f"{off:+d}:word.istitle()": w.istitle(),
                      f"{off:+d}:word.isupper()": w.isupper(), f"{off:+d}:postag": p, f"{off:+d}:postag[:2]": p[:2]})
        else:
            f["BOS" if off < 0 else "EOS"] = True
    return f


def featurise(sentences):
    return [[word2features(cols, i) for i in range(len(cols))] for cols, _ in sentences]


def _module(impl):
    if impl == "pycrfsuite":
        import pycrfsuite
        return pycrfsuite
    from spargel import pycrfsuite
    return pycrfsuite


def worker(args):
    """Train (``--train``) or time one implementation; prints one JSON line."""
    sentences = read_sentences(args.data / ("train.txt" if args.train else "test.txt"))
    X = featurise(sentences)
    if args.train:
        crfsuite = _module(args.impl)
        trainer = crfsuite.Trainer(verbose=False)
        for x, (_, y) in zip(X, sentences):
            trainer.append(x, y)
        trainer.set_params({"c1": 1.0, "c2": 1e-3, "max_iterations": args.max_iter})
        t0 = time.perf_counter()
        trainer.train(args.model)
        print(json.dumps({"train_seconds": time.perf_counter() - t0}))
        return
    n_tok = sum(len(x) for x in X)
    if args.impl == "spargel-crf":
        from spargel import CRF
        crf = CRF.load(args.model)
        tag = crf.predict_single
    else:
        tagger = _module(args.impl).Tagger()
        tagger.open(args.model)
        tag = tagger.tag
    first = [tag(x) for x in X]                 # warm up (spargel: compiled kernels loaded)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for x in X:
            tag(x)
        times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"seconds": times[len(times) // 2], "tokens": n_tok, "sentences": len(X), "tags": first}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--pycrfsuite-python", help="an interpreter with python-crfsuite (default: this one, if it has it)")
    ap.add_argument("--train-with", choices=("spargel", "pycrfsuite"), default="spargel")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--impl", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.impl:
        worker(args)
        return 0
    if not (args.data / "train.txt").exists():
        print(f"skipped: CoNLL-2000 not found at {args.data}")
        return 0
    other = pycrfsuite_python(args.pycrfsuite_python)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))

    def run(python, impl, *extra):
        out = subprocess.run([python, __file__, "--impl", impl, "--data", str(args.data), "--repeats",
                              str(args.repeats), "--max-iter", str(args.max_iter), *extra],
                             check=True, capture_output=True, text=True, env=env)
        return json.loads(out.stdout.strip().splitlines()[-1])

    impls = [("python-crfsuite Tagger.tag", other, "pycrfsuite")] if other else []
    impls += [("spargel.pycrfsuite Tagger.tag", sys.executable, "spargel"),
              ("spargel CRF.predict_single", sys.executable, "spargel-crf")]
    with tempfile.TemporaryDirectory() as d:
        model = str(Path(d) / "m.crfsuite")
        trainer_python = other if args.train_with == "pycrfsuite" else sys.executable
        if trainer_python is None:
            raise SystemExit("--train-with pycrfsuite needs python-crfsuite (--pycrfsuite-python)")
        trained = run(trainer_python, args.train_with, "--train", "--model", model)
        rows = [(name, run(python, impl, "--model", model)) for name, python, impl in impls]
    ref = rows[0][1]["tags"]
    n_tok = rows[0][1]["tokens"]
    lines = [f"CoNLL-2000 test: {rows[0][1]['sentences']} sentences, {n_tok} tokens, one sentence per call, "
             f"feature dicts in, labels out (median of {args.repeats}); model trained by "
             f"{args.train_with}'s Trainer in {trained['train_seconds']:.1f} s",
             "", f"| path | seconds | tokens/s | tags equal to {rows[0][0]} |", "|---|---|---|---|"]
    for name, r in rows:
        same = sum(a == b for pa, pb in zip(ref, r["tags"]) for a, b in zip(pa, pb)) / n_tok
        lines.append(f"| {name} | {r['seconds']:.3f} | {n_tok / r['seconds']:,.0f} | {same:.4%} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
