"""numba decides whether a cached kernel is valid from its own source file only; spargel
drops its cached kernels when any kernel source changes (``core/kernel_cache.py``). That
must find the folders numba really uses, with ``NUMBA_CACHE_DIR`` set and without."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spargel

PACKAGE = Path(spargel.__file__).resolve().parent

COMPILE = ("import numpy as np\n"
           "from spargel.core.penalty_kernels import pseudo_gradient\n"
           "w = np.array([0.0, 1.0, -2.0]); g = np.array([0.5, -0.1, 3.0]); out = np.zeros(3)\n"
           "pseudo_gradient(w, g, np.array([1.0]), out)\n"
           "print('OUT', out.tolist())\n")


def _cached(root, module):
    return sorted(p.name for p in Path(root).rglob(f"{module}.*.nb[ic]"))


@pytest.mark.parametrize("user_cache", [True, False])
def test_a_changed_kernel_source_drops_the_cached_kernels_of_every_module(tmp_path, user_cache):
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "spargel", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(copy))
    env.pop("NUMBA_CACHE_DIR", None)
    cache_root = tmp_path / "cache" if user_cache else copy
    if user_cache:
        env["NUMBA_CACHE_DIR"] = str(cache_root)

    def run(code):
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stdout

    assert "OUT" in run(COMPILE)
    assert _cached(cache_root, "penalty_kernels"), "numba wrote no cache files where the test looks"
    run(COMPILE)                                    # unchanged sources: the cache stays
    assert _cached(cache_root, "penalty_kernels")
    # another kernel module changes (a callee's code would live in this module's cache)
    vec = copy / "spargel" / "core" / "vec.py"
    vec.write_text(vec.read_text() + "\n# changed\n")
    run("import spargel.core.jit")
    assert not _cached(cache_root, "penalty_kernels")
    assert "OUT" in run(COMPILE)                     # and they compile again


MARGINALS = ("import hashlib, json, sys\n"
             "import numpy as np\n"
             "from spargel import CRF\n"
             "data = sys.argv[1]\n"
             "X = json.load(open(data + '/order1_release.json'))['X']\n"
             "crf = CRF.load(data + '/order1_release.spargel')\n"
             "m = np.array([[d[c] for c in crf.classes_] for s in crf.predict_marginals(X) for d in s])\n"
             "print('HASH', hashlib.sha1(m.tobytes()).hexdigest())\n")


@pytest.mark.skipif(os.environ.get("SPARGEL_PLAIN_NJIT", "") not in ("", "0"),
                    reason="plain njit keeps no kernels on disk")
def test_results_do_not_depend_on_which_kernels_the_cache_holds(tmp_path):
    """An entry kernel compiled in a process that loads its inner kernels from the disk
    cache gives the bits of one compiled with them. Before, a cached inner kernel went to
    the JIT engine as a module of its own (compiled there without the optimisation
    pipeline and transformed in place): the marginals of a CRF whose ``marginals_all``
    was compiled after a cache load of the forward-backward kernels differed in the last
    bits from those of a fresh compile (or of a fully cached run)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    data = str(Path(__file__).resolve().parents[1] / "data")

    def marginals():
        out = subprocess.run([sys.executable, "-c", MARGINALS, data], env=env, capture_output=True, text=True,
                             check=True).stdout
        return out.split("HASH ")[1].strip()

    fresh = marginals()                             # everything compiled in this process
    entry = list((tmp_path / "cache").rglob("batch_kernels.marginals_all-*.nb[ic]"))
    inner = list((tmp_path / "cache").rglob("inference.forward-*.nb[ic]"))
    assert entry and inner, "numba wrote no cache files where the test looks"
    for path in entry:                              # the entry kernel alone compiles again,
        path.unlink()                               # its callees come from the cache
    assert marginals() == fresh
    assert marginals() == fresh                     # and everything from the cache
