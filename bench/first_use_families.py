"""First use of each model family in a fresh process, with a warm kernel cache.

Issue 48: a user's first ``fit`` of a family in a new Python process should take at
most 1.5 s once the kernels are compiled and cached (scikit-learn's GraphicalLasso:
0.6 s). Each measurement runs in a fresh process with ``NUMBA_CACHE_DIR`` pointing to a
cache warmed by one earlier run of the same family (``--cache``; a temporary folder by
default). Measured per family: ``import spargel`` plus the estimator's module, and the
first ``fit`` (small synthetic data, so the time is loading kernels, not computing);
wall and CPU (user+sys) seconds, medians of ``--repeat`` processes.

With ``--breakdown``, also where the CPU goes (extra processes that import numba before
spargel and time numba's cache loads and its one-off target set-up).

    python bench/first_use_families.py [--families crf loglinear ...] [--repeat 5] [--breakdown]
        [--src SRC] [--cache DIR] [--markdown out.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np
family = sys.argv[1]
rng = np.random.default_rng(0)
Xg = rng.standard_normal((200, 20))
Xd = (rng.standard_normal((300, 10)) > 0).astype(np.int64)
def ct():
    t = os.times(); return t.user + t.system
acc = {"numba": 0.0, "load": 0.0, "refresh": 0.0, "signatures": 0}
if len(sys.argv) > 2:                  # --breakdown: numba's import, cache loads, target set-up
    c = ct(); import numba; acc["numba"] = ct() - c
    from numba.core import base, caching
    def timed(cls, name, key, count=False):
        orig = getattr(cls, name)
        def wrapper(*a, **k):
            c = ct(); r = orig(*a, **k); acc[key] += ct() - c; acc["signatures"] += count; return r
        setattr(cls, name, wrapper)
    timed(caching.Cache, "load_overload", "load", True)
    timed(base.BaseContext, "refresh", "refresh")
t0, c0 = time.perf_counter(), ct()
import spargel
if family == "crf":
    from spargel.datasets import make_chain_data
    X, y, _ = make_chain_data(n_sequences=60, random_state=0)
    make = lambda: spargel.CRF(max_iter=5).fit(X, y)
elif family == "loglinear":
    Xl = [{f"f{j}": 1.0 for j in rng.choice(30, 5)} for _ in range(200)]
    yl = list(rng.integers(0, 3, 200))
    make = lambda: spargel.LogLinearClassifier(max_iter=5).fit(Xl, yl)
elif family == "gaussian":
    make = lambda: spargel.SparseGaussianMRF(alpha=0.1).fit(Xg)
elif family == "neighbourhood":
    make = lambda: spargel.NeighbourhoodSelection(alpha=0.1).fit(Xg)
elif family == "concord":
    make = lambda: spargel.Concord(alpha=0.1).fit(Xg)
elif family == "pairwise":
    make = lambda: spargel.PairwiseMRF(l1=1.0, max_iter=5).fit(Xd)
elif family == "isingfit":
    make = lambda: spargel.IsingFit().fit(Xd)
t1, c1 = time.perf_counter(), ct()
make()
t2, c2 = time.perf_counter(), ct()
print(json.dumps({"import": [t1 - t0, c1 - c0], "fit": [t2 - t1, c2 - c1], "total": [t2 - t0, c2 - c0],
                  "numba": "numba" in sys.modules, "breakdown": acc}))
"""

FAMILIES = ["crf", "loglinear", "gaussian", "neighbourhood", "concord", "pairwise", "isingfit"]


def run_child(family, cache, src, breakdown=False):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(src))
    r = subprocess.run([sys.executable, "-c", CHILD, family] + (["breakdown"] if breakdown else []),
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=FAMILIES, choices=FAMILIES)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the spargel sources to time")
    ap.add_argument("--cache", help="numba cache folder (warmed first); a temporary one by default")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--breakdown", action="store_true",
                    help="also the CPU seconds of importing numba (then outside the fit), of numba's cache loads "
                         "and of its target set-up (numba's Cache.load_overload and BaseContext.refresh)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or tmp
        rows, breakdown = [], []
        for fam in args.families:
            run_child(fam, cache, args.src)                         # warm the cache
            runs = [run_child(fam, cache, args.src) for _ in range(args.repeat)]
            med = {k: [statistics.median(r[k][i] for r in runs) for i in (0, 1)] for k in ("import", "fit", "total")}
            rows.append((fam, med, runs[-1]["numba"]))
            print(fam, json.dumps(med), file=sys.stderr, flush=True)
            if args.breakdown:
                b = [run_child(fam, cache, args.src, True)["breakdown"] for _ in range(args.repeat)]
                breakdown.append((fam, {k: statistics.median(x[k] for x in b) for k in b[0]}))
    lines = ["| family | import wall / CPU (s) | first fit wall / CPU (s) | total wall / CPU (s) | numba imported |",
             "|---|---|---|---|---|"]
    lines += [f"| {f} | {m['import'][0]:.2f} / {m['import'][1]:.2f} | {m['fit'][0]:.2f} / {m['fit'][1]:.2f} "
              f"| {m['total'][0]:.2f} / {m['total'][1]:.2f} | {'yes' if nb else 'no'} |" for f, m, nb in rows]
    if breakdown:
        lines += ["", "| family | import numba CPU (s) | cache loads CPU (s) | numba target set-up CPU (s), mostly within the loads | signatures loaded |",
                  "|---|---|---|---|---|"]
        lines += [f"| {f} | {b['numba']:.2f} | {b['load']:.2f} | {b['refresh']:.2f} | {b['signatures']:.0f} |"
                  for f, b in breakdown]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
