"""Memory and time to the first iteration at scale: CoNLL-2000 x N (default 10).

The training file of CoNLL-2000 is repeated N times (x10: 2.2 M tokens, 28 MB) in a
temporary folder; then, in one run, each learner trains on it in its own process for a
few iterations (``--max-iter``, default 5), with the classic CoNLL-2000 chunking
attributes (CRFsuite's ``chunking.py``: words and POS in a +-2 window, word bigrams, POS
bigrams and trigrams, nothing past the sentence edges), L-BFGS with an L2 penalty:

* ``spargel train`` (the command line, ``CRFSUITE_CHUNKING_TEMPLATE``, ``--no-pad``);
* spargel's Python API from feature dicts (sklearn-crfsuite style: one dict per token,
  ``{"w[0]": "the", "pos[-1]|pos[0]": "IN|DT", ...}``), the sequences and the labels
  streamed from generators that read the file;
* python-crfsuite (``pycrfsuite.Trainer``: ``append`` per sequence, the same feature
  dicts, then ``train``), in the Python given by ``--peer-python``;
* the ``crfsuite learn`` command (``--crfsuite``) on the same attributes written in
  CRFsuite's attribute format (the file is written before the clock starts).

For each: peak resident memory of the process (``/usr/bin/time -v``), seconds to the
first line of output, and seconds to the line that reports the first iteration
(each learner reports an iteration when it ends). Prints a table and one JSON line.

    python bench/memory_scale.py [--repeat 10] [--max-iter 5] \\
        [--peer-python PYTHON_WITH_PYCRFSUITE] [--crfsuite PATH_TO_crfsuite]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, data_dir, markdown_table  # noqa: E402

ITER_LINE = {
    "spargel-cli": re.compile(r"^iter\s+\d"),
    "spargel-dicts": re.compile(r"^iter\s+\d"),
    "python-crfsuite": re.compile(r"\*+ Iteration #\d"),
    "crfsuite": re.compile(r"\*+ Iteration #\d"),
}


# -- the data -------------------------------------------------------------------------
def sentences(path):
    """(words, tags, labels) per sentence of a CoNLL-2000 file, streamed."""
    words, tags, labels = [], [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            if not fields:
                if words:
                    yield words, tags, labels
                    words, tags, labels = [], [], []
                continue
            words.append(fields[0])
            tags.append(fields[1])
            labels.append(fields[-1])
    if words:
        yield words, tags, labels


def features(words, tags):
    """CRFsuite's classic chunking attributes as one dict per token."""
    n = len(words)
    out = []
    for t in range(n):
        f = {}
        for d in (-2, -1, 0, 1, 2):
            if 0 <= t + d < n:
                f[f"w[{d}]"] = words[t + d]
        if t >= 1:
            f["w[-1]|w[0]"] = f"{words[t - 1]}|{words[t]}"
        if t + 1 < n:
            f["w[0]|w[1]"] = f"{words[t]}|{words[t + 1]}"
        for d in (-2, -1, 0, 1, 2):
            if 0 <= t + d < n:
                f[f"pos[{d}]"] = tags[t + d]
        for d in (-2, -1, 0, 1):
            if 0 <= t + d and t + d + 1 < n:
                f[f"pos[{d}]|pos[{d + 1}]"] = f"{tags[t + d]}|{tags[t + d + 1]}"
        for d in (-2, -1, 0):
            if 0 <= t + d and t + d + 2 < n:
                f[f"pos[{d}]|pos[{d + 1}]|pos[{d + 2}]"] = f"{tags[t + d]}|{tags[t + d + 1]}|{tags[t + d + 2]}"
        out.append(f)
    return out


def _crfsuite_escape(s):
    return s.replace("\\", "\\\\").replace(":", "\\:")


def make_data(tmp, repeat):
    src = data_dir("conll2000") / "train.txt"
    text = src.read_bytes()
    if not text.endswith(b"\n\n"):
        text = text.rstrip(b"\n") + b"\n\n"
    train = tmp / f"train_x{repeat}.txt"
    with open(train, "wb") as fh:
        for _ in range(repeat):
            fh.write(text)
    tpl = tmp / "chunking.tpl"
    sys.path.insert(0, str(REPO / "src"))
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE
    tpl.write_text(CRFSUITE_CHUNKING_TEMPLATE)
    return train, tpl


def write_crfsuite_attributes(train, out):
    """The same attributes in CRFsuite's format: ``label TAB name=value TAB ...``
    (``:`` and ``\\`` escaped), a blank line after each sequence."""
    with open(out, "w", encoding="utf-8") as fh:
        for words, tags, labels in sentences(train):
            for lab, f in zip(labels, features(words, tags)):
                fh.write(lab)
                for k, v in f.items():
                    fh.write("\t" + _crfsuite_escape(f"{k}={v}"))
                fh.write("\n")
            fh.write("\n")


# -- the workers (run in their own process) -----------------------------------------
def worker_pycrfsuite(args):
    import pycrfsuite

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=True)
    for words, tags, labels in sentences(args.train):
        trainer.append(features(words, tags), labels)
    trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": args.max_iter})
    trainer.train(str(Path(args.out) / "pycrfsuite.model"))


def worker_spargel_dicts(args):
    sys.path.insert(0, str(REPO / "src"))
    import warnings

    import spargel

    warnings.simplefilter("ignore")
    # both streamed: the dicts are encoded as they come, the labels read afterwards
    X = (features(words, tags) for words, tags, _ in sentences(args.train))
    y = (labels for _, _, labels in sentences(args.train))
    crf = spargel.CRF(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=args.max_iter, n_jobs=args.threads,
                      verbose=True)
    crf.fit(X, y)
    crf.save(str(Path(args.out) / "spargel_dicts.model"))


# -- measuring ------------------------------------------------------------------------
def measure(name, cmd, tmp, env=None):
    """Run ``cmd`` under ``/usr/bin/time -v``; returns peak RSS (MiB) and the times of
    the first output line and of the first iteration line."""
    rss_file = tmp / f"{name}.time"
    full = ["/usr/bin/time", "-v", "-o", str(rss_file), *cmd]
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, bufsize=1,
                            text=True, errors="replace")
    first = first_iter = None
    tail = []
    for line in proc.stdout:
        now = time.perf_counter() - t0
        if first is None and line.strip():
            first = now
        if first_iter is None and ITER_LINE[name].search(line):
            first_iter = now
        tail = (tail + [line.rstrip()])[-15:]
    rc = proc.wait()
    total = time.perf_counter() - t0
    if rc != 0:
        print(f"{name} failed (exit status {rc}):\n" + "\n".join(tail), file=sys.stderr)
        return {"learner": name, "error": rc}
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", rss_file.read_text())
    return {"learner": name, "peak_mb": int(m.group(1)) / 1024 if m else None, "first_line_s": first,
            "first_iteration_s": first_iter, "total_s": total}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="spargel's threads (CRFsuite has one)")
    ap.add_argument("--peer-python", help="a Python with python-crfsuite (default: this one, if it has it)")
    ap.add_argument("--crfsuite", help="the crfsuite command (default: 'crfsuite' on the PATH)")
    ap.add_argument("--only", help="comma-separated learners to run (spargel-cli, spargel-dicts, "
                                   "python-crfsuite, crfsuite)")
    ap.add_argument("--worker", choices=["pycrfsuite", "spargel-dicts"], help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "pycrfsuite":
        return worker_pycrfsuite(args)
    if args.worker == "spargel-dicts":
        return worker_spargel_dicts(args)
    if not Path("/usr/bin/time").exists():
        sys.exit("skipped: /usr/bin/time (GNU time) is needed to read the peak memory")

    only = set(args.only.split(",")) if args.only else None
    peer = args.peer_python
    if peer is None and subprocess.run([sys.executable, "-c", "import pycrfsuite"],
                                       capture_output=True).returncode == 0:
        peer = sys.executable
    crfsuite = args.crfsuite or shutil.which("crfsuite")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONUNBUFFERED="1")
    script = str(Path(__file__).resolve())
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        train, tpl = make_data(tmp, args.repeat)
        n_tok = sum(len(w) for w, _, _ in sentences(train))
        print(f"CoNLL-2000 train x{args.repeat}: {n_tok} tokens, {train.stat().st_size / 1e6:.1f} MB",
              file=sys.stderr)
        runs = [
            ("spargel-cli", [sys.executable, "-m", "spargel.cli", "train", str(train), str(tmp / "cli.model"),
                             "--pattern", str(tpl), "--no-pad", "--solver", "lbfgs", "--l1", "0", "--l2", "1",
                             "--max-iter", str(args.max_iter), "--threads", str(args.threads)]),
            ("spargel-dicts", [sys.executable, script, "--worker", "spargel-dicts", "--train", str(train),
                               "--out", str(tmp), "--max-iter", str(args.max_iter), "--threads",
                               str(args.threads)]),
        ]
        if peer:
            runs.append(("python-crfsuite", [peer, script, "--worker", "pycrfsuite", "--train", str(train),
                                             "--out", str(tmp), "--max-iter", str(args.max_iter)]))
        else:
            print("python-crfsuite skipped (no --peer-python with pycrfsuite)", file=sys.stderr)
        if crfsuite and (only is None or "crfsuite" in only):
            attrs = tmp / "train.crfsuite.txt"
            write_crfsuite_attributes(train, attrs)
            stdbuf = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
            runs.append(("crfsuite", [*stdbuf, crfsuite, "learn", "-a", "lbfgs", "-p", "c1=0", "-p", "c2=1",
                                      "-p", f"max_iterations={args.max_iter}", "-m", str(tmp / "crfsuite.model"),
                                      str(attrs)]))
        elif not crfsuite:
            print("crfsuite skipped (no --crfsuite and none on the PATH)", file=sys.stderr)
        for name, cmd in runs:
            if only is not None and name not in only:
                continue
            row = measure(name, cmd, tmp, env)
            print(json.dumps(row), file=sys.stderr)
            rows.append(row)
    print(markdown_table(rows, [("learner", "learner", None), ("peak_mb", "peak RSS (MiB)", "{:.0f}"),
                                ("first_line_s", "first output (s)", "{:.1f}"),
                                ("first_iteration_s", "first iteration (s)", "{:.1f}"),
                                ("total_s", f"total, {args.max_iter} iterations (s)", "{:.1f}")]))
    print(json.dumps({"repeat": args.repeat, "tokens": n_tok, "max_iter": args.max_iter, "rows": rows}))


if __name__ == "__main__":
    main()
