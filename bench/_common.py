"""Helpers shared by the benchmark scripts: data location, timing, memory, tables."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def data_dir(name):
    """The shared data set folder, or exit with a clear message when it is absent."""
    d = SHARED_DATA / name
    if not d.is_dir():
        sys.exit(f"skipped: data set {name!r} not found at {d} (the shared data folder sits beside the checkout)")
    return d


def sentence_blocks(lines, fields=str.split):
    """The blank-line-separated blocks of ``lines`` (sentences of a CoNLL-style file): per
    block, ``fields(line)`` of each of its lines."""
    blocks, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(fields(line))
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def pycrfsuite_python(given=None):
    """The interpreter that runs python-crfsuite: ``given`` (a ``--pycrfsuite-python``
    option), else this one when it has python-crfsuite, else None."""
    if given is not None:
        return given
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def peak_rss_mb():
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_worker(script, args, env=None):
    """Run ``script --worker ...`` in a fresh process; it prints one JSON line last."""
    full_env = dict(os.environ, **(env or {}))
    out = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=full_env)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise RuntimeError(f"worker {args} failed with exit code {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown_table(rows, columns):
    """rows: list of dicts; columns: list of (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = []
    for r in rows:
        cells = []
        for key, _, fmt in columns:
            v = r.get(key)
            cells.append("—" if v is None else (fmt.format(v) if fmt else str(v)))
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *body])
