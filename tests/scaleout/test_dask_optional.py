"""Dask is an optional extra: with it hidden, spargel imports and fits in-memory data as before, never
imports Dask on its own, and asking for a cluster gives a clear error."""

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import sys

class HideDask:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"{name} hidden by the test")
        return None

sys.meta_path.insert(0, HideDask())
import spargel
from spargel import CRF, LogLinearClassifier
from spargel.errors import SpargelError
import numpy as np

X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
y = [["DT", "NN"], ["DT", "NN", "VB"]]
clf = LogLinearClassifier(l1=0.01, max_iter=20).fit(np.eye(4), [0, 1, 0, 1])
assert list(clf.predict(np.eye(4))) == [0, 1, 0, 1]
assert not any(m.split(".")[0] in ("dask", "distributed") for m in sys.modules), "Dask was imported"
try:
    CRF(client="tcp://127.0.0.1:1").fit(X, y)
except SpargelError as exc:
    assert "pip install 'spargel[dask]'" in str(exc), exc
    print("clear error:", exc)
else:
    raise AssertionError("no error without Dask")
"""


def test_spargel_works_and_says_what_to_install_without_dask():
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "clear error: this needs Dask" in out.stdout
