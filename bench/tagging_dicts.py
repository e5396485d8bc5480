"""Tagging speed from sklearn-crfsuite style feature dicts: spargel against
python-crfsuite, dicts in, labels out, in the same run.

CoNLL-2000 chunking (``../shared/data/conll2000``): a model is trained once with each
library on the same feature dicts (the usual sklearn-crfsuite tutorial features: word
identity, suffixes, shape flags and POS of the token and its neighbours), then the
2,012 test sentences are tagged several times; the table gives the median tokens per
second of the whole path a user runs:

* spargel: ``CRF.predict(X)`` and ``CRF.predict_marginals(X)`` on the list of sentences;
* python-crfsuite: ``Tagger.tag(xseq)`` per sentence (and ``Tagger.marginal`` for every
  label of every token after ``Tagger.set(xseq)`` for the marginals).

    python bench/tagging_dicts.py [--data DIR] [--repeats 5] [--markdown out.md]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "conll2000"


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
    return [[word2features(s.columns, i) for i in range(len(s))] for s in sentences]


def crfsuite_items(xseq):
    """python-crfsuite's own dict convention (key:value for strings) -- it converts
    internally; passing the dicts as they are is what its users do."""
    return xseq


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    if not (args.data / "train.txt").exists():
        print(f"skipped: CoNLL-2000 not found at {args.data}")
        return 0
    import pycrfsuite

    from spargel import CRF
    from spargel.data.conll import read_conll

    train = list(read_conll(str(args.data / "train.txt")))
    test = list(read_conll(str(args.data / "test.txt")))
    X_train, y_train = featurise(train), [s.labels for s in train]
    X_test = featurise(test)
    n_tok = sum(len(x) for x in X_test)

    crf = CRF(l1=1.0, max_iter=args.max_iter, n_jobs=1).fit(X_train, y_train)
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "m.crfsuite")
        trainer = pycrfsuite.Trainer(verbose=False)
        for x, y in zip(X_train, y_train):
            trainer.append(x, y)
        trainer.set_params({"c1": 1.0, "c2": 0.0, "max_iterations": args.max_iter})
        trainer.train(path)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        labels = tagger.labels()

        def cs_tag():
            return [tagger.tag(x) for x in X_test]

        def cs_marg():
            out = []
            for x in X_test:
                tagger.set(x)
                out.append([{lab: tagger.marginal(lab, t) for lab in labels} for t in range(len(x))])
            return out

        def sp_tag():
            return crf.predict(X_test)

        def sp_marg():
            return crf.predict_marginals(X_test)

        sp_tag(), sp_marg()                       # compile / warm up
        rows = []
        for name, fn in (("python-crfsuite Tagger.tag", cs_tag), ("spargel CRF.predict", sp_tag),
                         ("python-crfsuite marginals", cs_marg), ("spargel CRF.predict_marginals", sp_marg)):
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = fn()
                times.append(time.perf_counter() - t0)
            rows.append((name, float(np.median(times)), out))
    base_tag, base_marg = rows[0][1], rows[2][1]
    agree = np.mean([a == b for pa, pb in zip(rows[0][2], rows[1][2]) for a, b in zip(pa, pb)])
    lines = [f"CoNLL-2000 test: {len(X_test)} sentences, {n_tok} tokens, feature dicts in, labels out "
             f"(median of {args.repeats}); the two models agree on {agree:.2%} of the tags",
             "", "| path | seconds | tokens/s | vs python-crfsuite |", "|---|---|---|---|"]
    for name, t, _ in rows:
        base = base_marg if "marginal" in name else base_tag
        lines.append(f"| {name} | {t:.3f} | {n_tok / t:,.0f} | {base / t:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
