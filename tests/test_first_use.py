"""The first fit in a fresh environment says once, on stderr, that kernels are being
compiled (and nothing when they are cached, or when asked to be quiet)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("import spargel, warnings; warnings.simplefilter('ignore');"
        "from spargel.datasets import make_chain_data;"
        "X, y, _ = make_chain_data(n_sequences=5, random_state=0);"
        "spargel.LogLinearClassifier(max_iter=2, verbose={v}).fit([x[0] for x in X], [s[0] for s in y])")


def _run(cache, verbose):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", CODE.format(v=verbose)], capture_output=True, text=True,
                          env=env, check=True).stderr


def test_first_use_is_announced_once(tmp_path):
    first = _run(tmp_path, 1)
    assert first.count("compiling the numeric kernels for first use") == 1
    again = _run(tmp_path, 1)                       # cached now: nothing to say
    assert "compiling" not in again


def test_quiet_by_request(tmp_path):
    assert "compiling" not in _run(tmp_path, 0)
