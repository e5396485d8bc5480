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


def _run_beside(tmp_path, code, *args):
    """stdout of ``python -c code args`` in a fresh process that imports modules written
    to tmp_path, with its own numba cache there."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(tmp_path)]),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          check=True).stdout


def test_first_use_is_announced_once(tmp_path):
    first = _run(tmp_path, 1)
    assert first.count("compiling the numeric kernels for first use") == 1
    again = _run(tmp_path, 1)                       # cached now: nothing to say
    assert "compiling" not in again


def test_quiet_by_request(tmp_path):
    assert "compiling" not in _run(tmp_path, 0)


def test_library_paths_call_no_inner_kernel_from_python():
    """Inner kernels have no CPython wrapper (a shorter first compile); a Python call
    compiles an uncached stand-in, which a library path must never need. Every solver
    and prediction path of both chain orders (and of a constrained chain), in a fresh
    process."""
    code = """
import warnings; warnings.simplefilter("ignore")
import spargel
from spargel.core import jit as _jit
from spargel.datasets import make_chain_data
X, y, _ = make_chain_data(n_sequences=30, random_state=0)
for order in (1, 2):
    for solver in ("owlqn", "lbfgs", "sgd-l1", "bcd", "bound"):
        if order == 2 and solver in ("bcd", "bound"):
            continue
        crf = spargel.CRF(solver=solver, order=order, l1=0.0 if solver in ("lbfgs", "bound") else 0.5,
                          l2=1.0 if solver == "bound" else 0.0, max_iter=3).fit(X, y)
    for algorithm in ("ap", "pa", "arow", "l2sgd"):
        crf = spargel.CRF(algorithm, order=order, max_iterations=2).fit(X, y)
    crf.predict(X[:3]); crf.predict_marginals(X[:3]); crf.predict_nbest(X[:2], k=2); crf.score(X[:3], y[:3])
crf = spargel.CRF(template="U00:%x[0,0]\\nB01:%x[0,0]\\nB\\n", max_iter=3).fit([[[t[0]] for t in s] for s in X], y)
crf.predict([[[t[0]] for t in s] for s in X[:3]])
labels = sorted({t for s in y for t in s})
every = {"allowed": [(a, b) for a in labels for b in labels]}
for order in (1, 2):
    crf = spargel.CRF(max_iter=3, order=order, constraints=every, constrain_training=True).fit(X, y)
    crf.constraints = {"allowed": [(a, b) for a in labels for b in labels if a <= b]}
    crf.predict(X[:3]); crf.predict_marginals(X[:3]); crf.predict_nbest(X[:2], k=2)
print("CALLS", _jit.PYTHON_CALLS)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "CALLS []" in out, out


def test_lean_pipeline_rejects_a_closure_loudly(tmp_path):
    """Kernels that allocate nothing compile without numba's closure-inlining pass
    (``_jit.LeanCompiler``): a kernel with a closure must fail to compile with numba's
    typing error, never compile into something else."""
    src = tmp_path / "closure_kernel.py"
    src.write_text(
        "from spargel.core.jit import kernel\n"
        "@kernel()\n"
        "def f(x, k):\n"
        "    def g(i):\n"
        "        return x[i] * k\n"
        "    s = 0.0\n"
        "    for i in range(len(x)):\n"
        "        s += g(i)\n"
        "    return s\n")
    code = ("import numpy as np, numba, closure_kernel\n"
            "try:\n"
            "    closure_kernel.f(np.arange(4.0), 2.0)\n"
            "except numba.core.errors.TypingError as e:\n"
            "    print('REJECTED', 'capture' in str(e))\n")
    out = _run_beside(tmp_path, code)
    assert "REJECTED True" in out, out


def test_every_kernel_compiles_with_the_package_options():
    """Every compiled function of the package is an entry or inner kernel of ``_jit``
    (one error model, no stray options: each further set of compile options makes
    numba's typing slower); a bare ``njit`` is only for helpers inlined into their
    callers, whose own options numba never compiles."""
    import re
    stray = []
    for path in sorted((ROOT / "src" / "spargel").rglob("*.py")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*@(numba\.)?(njit|jit)\b", line) and 'inline="always"' not in line:
                stray.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not stray, "\n".join(stray)


def test_inner_kernels_link_from_memory_and_from_the_disk_cache(tmp_path):
    """An inner kernel's library is link-only (no machine code of its own, cached as
    bitcode): an entry kernel that calls it computes the right thing when the inner
    kernel was compiled in the same process, and in a later process where it comes from
    the disk cache and only a new caller is compiled."""
    src = tmp_path / "linked_kernels.py"
    src.write_text(
        "import numpy as np\n"
        "from spargel.core.jit import inner, kernel\n"
        "@inner()\n"
        "def scaled_sum(x, a):\n"
        "    s = 0.0\n"
        "    for i in range(len(x)):\n"
        "        s += a * x[i]\n"
        "    return s\n"
        "@inner()\n"
        "def twice(x, a):\n"
        "    return 2.0 * scaled_sum(x, a)\n"
        "@kernel()\n"
        "def first(x):\n"
        "    return twice(x, 1.5)\n"
        "@kernel()\n"
        "def second(x, out):\n"
        "    out[0] = scaled_sum(x, -1.0) + twice(x, 0.25)\n")
    code = ("import sys, numpy as np, linked_kernels as m\n"
            "from spargel.core.jit import LinkOnlyLibrary\n"
            "x = np.arange(5.0)\n"
            "out = np.zeros(1)\n"
            "if sys.argv[1] == 'first':\n"
            "    print('FIRST', m.first(x))\n"
            "    lib = next(iter(m.twice.overloads.values())).library\n"
            "    print('LINK_ONLY', isinstance(lib, LinkOnlyLibrary))\n"
            "else:\n"
            "    m.second(x, out)\n"
            "    print('SECOND', out[0], sum(m.twice.stats.cache_hits.values()),\n"
            "          sum(m.second.stats.cache_misses.values()))\n")
    out = _run_beside(tmp_path, code, "first")
    assert "FIRST 30.0" in out and "LINK_ONLY True" in out, out
    out = _run_beside(tmp_path, code, "second")     # twice / scaled_sum from the cache, second compiled
    assert "SECOND -5.0 1 1" in out, out


def test_a_kernel_keeps_its_own_fastmath_whoever_compiles_it_first(tmp_path):
    """numba lets a kernel that leaves ``fastmath`` unset inherit its first caller's flags,
    and the disk cache (keyed by signature only) then serves that code to every later
    process: first-order marginals once depended on whether second-order kernels had been
    compiled first (NaN with weights near 1e99). A kernel without fastmath compiled from a
    fastmath caller, in memory and again from the disk cache in a new process, has none."""
    src = tmp_path / "flag_kernels.py"
    src.write_text(
        "from spargel.core.jit import inner, kernel\n"
        "@inner()\n"
        "def strict_sum(x):\n"
        "    s = 0.0\n"
        "    for i in range(len(x)):\n"
        "        s += x[i]\n"
        "    return s\n"
        "@kernel(fastmath={'reassoc', 'contract', 'nsz', 'arcp'})\n"
        "def fast_caller(x):\n"
        "    return strict_sum(x) * 0.5\n"
        "@kernel()\n"
        "def strict_caller(x):\n"
        "    return strict_sum(x)\n")
    code = ("import sys, numpy as np, flag_kernels as m\n"
            "x = np.arange(9.0)\n"
            "if sys.argv[1] == 'fast-first':\n"
            "    print('FAST', m.fast_caller(x))\n"
            "else:\n"
            "    print('STRICT', m.strict_caller(x), sum(m.strict_sum.stats.cache_hits.values()))\n"
            "for cres in m.strict_sum.overloads.values():\n"
            "    print('INNER', 'reassoc' in cres.library.get_llvm_str())\n")
    out = _run_beside(tmp_path, code, "fast-first")
    assert "FAST 18.0" in out and "INNER False" in out and "INNER True" not in out, out
    out = _run_beside(tmp_path, code, "strict")     # strict_sum from the disk cache
    assert "STRICT 36.0 1" in out and "INNER False" in out and "INNER True" not in out, out


def test_kernel_flags_hash_by_names_and_compare_by_values():
    """Kernels compile with ``_jit.KernelFlags`` (numba's options, cheaper to hash): equal
    exactly when the same options are set to the same values, equal ones hash alike."""
    from numba.core.compiler import Flags

    from spargel.core.jit import KernelFlags

    def flags(**set_):
        f = Flags()
        for k, v in set_.items():
            setattr(f, k, v)
        return KernelFlags(f)

    a, b = flags(nrt=False, error_model="numpy"), flags(nrt=False, error_model="numpy")
    assert a == b and hash(a) == hash(b) and a.copy() == a and type(a.copy()) is KernelFlags
    assert a != flags(nrt=True, error_model="numpy")
    assert a != flags(nrt=False, error_model="python")
    assert a != flags(nrt=False)
    assert {a: 1}.get(b) == 1 and {a: 1}.get(flags(nrt=True, error_model="numpy")) is None


PLAIN_FIT = """
import sys, warnings
{prelude}
import numpy as np
import spargel
from spargel.core import jit
from spargel.datasets import make_chain_data
X, y, _ = make_chain_data(n_sequences=20, random_state=0)
m = spargel.LogLinearClassifier(max_iter=30, l1=0.1).fit([x[0] for x in X], [s[0] for s in y])
print("SPEEDUPS", jit.SPEEDUPS)
print("OBJ", repr(float(m.objective_)))
print("PRED", ",".join(map(str, m.predict([x[0] for x in X]))))
"""


def _plain_fit(tmp_path, prelude):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"))
    env.pop("SPARGEL_PLAIN_NJIT", None)
    done = subprocess.run([sys.executable, "-c", PLAIN_FIT.format(prelude=prelude)], capture_output=True,
                          text=True, env=env, check=True)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return lines["SPEEDUPS"], (float(lines["OBJ"]), lines["PRED"]), done.stderr


def test_a_numba_without_the_internals_falls_back_to_plain_njit(tmp_path):
    """When numba's private API is not what the compile-time speed-ups expect (simulated:
    the code library class they subclass has none of its methods), spargel warns once and
    compiles with plain njit, with the same results."""
    fast, w_fast, err_fast = _plain_fit(tmp_path, "")
    prelude = "import numba.core.codegen as codegen\ncodegen.JITCodeLibrary = type('Renamed', (), {})"
    plain, w_plain, err_plain = _plain_fit(tmp_path, prelude)
    assert fast == "True" and plain == "False"
    assert "plain njit" not in err_fast
    assert err_plain.count("plain njit") == 1 and "JITCodeLibrary" in err_plain
    assert w_plain[1] == w_fast[1]                                  # the same predictions
    assert abs(w_plain[0] - w_fast[0]) <= 1e-6 * abs(w_fast[0])     # the same objective


GAUSSIAN = ("import numpy as np, spargel, warnings; warnings.simplefilter('ignore');"
            "from spargel.core import first_use; first_use.DELAY = 0.0;"
            "X = np.random.default_rng(0).standard_normal((60, 6));"
            "spargel.SparseGaussianMRF(alpha=0.1, verbose={v}).fit(X)")


def _run_gaussian(cache, verbose):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", GAUSSIAN.format(v=verbose)], capture_output=True, text=True,
                          env=env, check=True).stderr


def test_families_without_entry_kernel_lists_announce_long_compiles(tmp_path):
    """A Gaussian fit lists no entry kernels up front: a compilation of kernels missing
    from the cache that runs past ``first_use.DELAY`` (0 here) writes the line once; a
    quiet fit writes nothing, and neither does a fit whose kernels are cached."""
    assert "compiling" not in _run_gaussian(tmp_path, 0)
    (tmp_path / "again").mkdir()
    first = _run_gaussian(tmp_path / "again", 1)
    assert first.count("compiling the numeric kernels for first use") == 1, first
    assert "compiling" not in _run_gaussian(tmp_path / "again", 1)


def test_every_family_announces_its_first_compile():
    """Each estimator either lists its entry kernels (``entry_kernels`` of its model, the
    chain and flat log-linear families) or its fit announces long compilations."""
    from spargel.core.first_use import announces_compiles  # noqa: F401
    from spargel.gaussian.concord import Concord
    from spargel.gaussian.estimator import SparseGaussianMRF
    from spargel.gaussian.neighbourhood import NeighbourhoodSelection
    from spargel.mrf.estimator import PairwiseMRF
    from spargel.mrf.mixed import MixedGraphicalModel
    from spargel.mrf.nodewise import IsingFit

    for cls in (SparseGaussianMRF, NeighbourhoodSelection, Concord, PairwiseMRF, IsingFit, MixedGraphicalModel):
        assert getattr(cls.fit, "announces_compiles", False), cls.__name__
    assert SparseGaussianMRF.fit_covariance.announces_compiles
