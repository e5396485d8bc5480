"""CRF++'s four examples (``example/`` of taku910/crfpp) with spargel.

For each of ``seg``, ``JapaneseNE`` (EUC-JP), ``chunking`` and ``basenp``:

1. features: ``crf_learn -t -m 1`` writes its feature strings into ``model.txt``; the set
   spargel's template (CRF++ language) extracts from the same ``train.data`` must equal
   it (count of differences);
2. with ``--train``: ``spargel train -p template`` and ``spargel label`` on ``test.data``
   run, and ``spargel eval`` scores the output.

    python bench/crfpp_compare.py --crfpp path/to/crfpp [--train]

``path/to/crfpp`` is a built CRF++ checkout (``crf_learn`` and ``example/`` in it). Skips
(exit 0, a message) without it; exits 1 on any difference.
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from spargel.cli import main as spargel_main  # noqa: E402
from spargel.data.conll import read_conll  # noqa: E402
from spargel.data.templates import Template  # noqa: E402

EXAMPLES = {"seg": "utf-8", "JapaneseNE": "euc-jp", "chunking": "utf-8", "basenp": "utf-8"}


def crfpp_features(text_model, encoding):
    """The feature strings of a CRF++ text model (the 'id string' block)."""
    blocks = Path(text_model).read_bytes().split(b"\n\n")
    # header, labels, templates, features, weights
    return {line.split(b" ", 1)[1].decode(encoding) for line in blocks[3].split(b"\n") if line}


def spargel_features(template, data, encoding):
    out = set()
    for s in read_conll(data, encoding=encoding):
        uni, bi = template.extract(s.columns)
        for row in uni + bi:
            out.update(row)
    if template.transitions:
        out.add("B")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crfpp", required=True, help="a built CRF++ checkout")
    ap.add_argument("--train", action="store_true", help="also train, label and eval with spargel")
    args = ap.parse_args()
    root = Path(args.crfpp)
    learn = root / "crf_learn"  # libtool's wrapper finds the library in .libs/
    if not learn.is_file() or not (root / "example").is_dir():
        print(f"skipped: no built CRF++ (crf_learn and example/) in {root}")
        return 0
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, enc in EXAMPLES.items():
            d = root / "example" / name
            model = tmp / f"{name}.model"
            subprocess.run([str(learn), "-t", "-m", "1", str(d / "template"), str(d / "train.data"), str(model)],
                           check=True, capture_output=True)
            theirs = crfpp_features(f"{model}.txt", enc)
            tpl = Template.from_file(d / "template", encoding=enc, format="crfpp")
            mine = spargel_features(tpl, d / "train.data", enc)
            diff = len(theirs ^ mine)
            total += diff
            print(f"{name}: crf_learn {len(theirs)} feature strings, spargel {len(mine)}, differences {diff}")
            if args.train:
                out = tmp / f"{name}.out"
                rc = spargel_main(["train", "-q", "-i", "30", "--encoding", enc, "-p", str(d / "template"),
                                   str(d / "train.data"), str(tmp / f"{name}.spargel")])
                rc = rc or spargel_main(["label", "--encoding", enc, "-m", str(tmp / f"{name}.spargel"),
                                         str(d / "test.data"), str(out)])
                rc = rc or spargel_main(["eval", str(out)])
                total += rc != 0
    print(f"total differences: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
