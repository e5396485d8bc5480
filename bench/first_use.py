"""First use: how long a new user waits for compiled kernels.

Every measurement runs in a fresh Python process with an empty numba cache directory
(``NUMBA_CACHE_DIR`` set to a new temporary folder), so each number includes compiling
every kernel the step needs. Measured:

* the first ``CRF(solver=S).fit`` of a small CRF (the demo's synthetic data, 60
  sequences, 5 iterations) for each solver alone, wall and CPU seconds;
* all solvers one after the other in one process (what a user trying them all waits);
* ``predict`` after the OWL-QN fit;
* optionally (``--demo``) ``make demo`` on a fresh clone of the repository (venv
  creation and install included), which needs network or a package cache.

    python bench/first_use.py [--solvers owlqn sgd-l1 bcd lbfgs] [--demo] [--markdown out.md]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0, c0 = time.perf_counter(), time.process_time()
import spargel
from spargel.datasets import make_chain_data
X, y, _ = make_chain_data(n_sequences=60, random_state=0)
out = {"import": time.perf_counter() - t0}
for solver in sys.argv[1].split(","):
    t, c = time.perf_counter(), time.process_time()
    crf = spargel.CRF(solver=solver, l1=0.0 if solver == "lbfgs" else 1.0, max_iter=5).fit(X, y)
    out[solver] = (time.perf_counter() - t, time.process_time() - c)
t, c = time.perf_counter(), time.process_time()
crf.predict(X[:3])
out["predict"] = (time.perf_counter() - t, time.process_time() - c)
out["total"] = (time.perf_counter() - t0, time.process_time() - c0)
print(json.dumps(out))
"""


def run_child(solvers):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT / "src"))
        r = subprocess.run([sys.executable, "-c", CHILD, ",".join(solvers)], capture_output=True, text=True,
                           env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def fresh_demo():
    with tempfile.TemporaryDirectory() as d:
        clone = Path(d) / "spargel"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        t = time.perf_counter()
        r = subprocess.run(["make", "demo"], cwd=clone, capture_output=True, text=True)
        return time.perf_counter() - t, r.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solvers", nargs="+", default=["owlqn", "sgd-l1", "bcd", "lbfgs"])
    ap.add_argument("--demo", action="store_true", help="also time `make demo` on a fresh clone")
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for s in args.solvers:
        r = run_child([s])
        rows.append((f"first fit, {s} alone", *r[s]))
        if s == args.solvers[0]:
            rows.append(("predict after it", *r["predict"]))
    r = run_child(args.solvers)
    rows.append((f"all solvers in one process ({', '.join(args.solvers)})",
                 sum(r[s][0] for s in args.solvers), sum(r[s][1] for s in args.solvers)))
    rows.append(("import spargel (cold)", r["import"], float("nan")))
    if args.demo:
        wall, rc = fresh_demo()
        rows.append((f"make demo on a fresh clone (exit {rc})", wall, float("nan")))
    lines = ["| step | wall (s) | CPU (s) |", "|---|---|---|"]
    lines += [f"| {name} | {w:.1f} | {c:.1f} |" for name, w, c in rows]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
