"""The incremental solvers' defaults on a CRF: ``CRF(solver=...)`` with nothing but ``l1``
and ``max_iter`` set, on the first N CoNLL-2000 training sentences. Prints, per solver,
the final objective (and its distance to OWL-QN's), gradient evaluations, iterations,
stop reason, non-zero weights and time.

    python bench/grafting_defaults.py [--sentences 2000] [--l1 1] [--max-iter 2000]
                                      [--template window|rich] [--solvers owlqn grafting-light grafting]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir  # noqa: E402

TEMPLATES = {
    # words and POS tags in a window of three, word/POS pair, transitions
    "window": ["U00:%x[-1,0]", "U01:%x[0,0]", "U02:%x[1,0]", "U03:%x[0,1]", "U04:%x[-1,1]", "U05:%x[1,1]",
               "U06:%x[0,0]/%x[0,1]", "B"],
    # CRFsuite's chunking attributes: words and POS tags in a window of five, their bigrams
    # and POS trigrams
    "rich": ["U00:%x[-2,0]", "U01:%x[-1,0]", "U02:%x[0,0]", "U03:%x[1,0]", "U04:%x[2,0]",
             "U05:%x[-1,0]/%x[0,0]", "U06:%x[0,0]/%x[1,0]", "U10:%x[-2,1]", "U11:%x[-1,1]", "U12:%x[0,1]",
             "U13:%x[1,1]", "U14:%x[2,1]", "U15:%x[-2,1]/%x[-1,1]", "U16:%x[-1,1]/%x[0,1]",
             "U17:%x[0,1]/%x[1,1]", "U18:%x[1,1]/%x[2,1]", "U20:%x[-2,1]/%x[-1,1]/%x[0,1]",
             "U21:%x[-1,1]/%x[0,1]/%x[1,1]", "U22:%x[0,1]/%x[1,1]/%x[2,1]", "B"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--l1", type=float, default=1.0)
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--template", choices=sorted(TEMPLATES), default="window")
    ap.add_argument("--solvers", nargs="+", default=["owlqn", "grafting-light", "grafting"])
    args = ap.parse_args()

    from spargel import CRF, read_conll
    sents = list(read_conll(str(data_dir("conll2000") / "train.txt")))[:args.sentences]
    y = [s.labels for s in sents]
    template = "\n".join(TEMPLATES[args.template]) + "\n"
    rows = []
    for solver in args.solvers:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = CRF(template=template, solver=solver, l1=args.l1, max_iter=args.max_iter, n_jobs=1).fit(sents, y)
        rows.append((solver, est.objective_, est.history_[-1]["n_evals"], est.n_iter_, est.stop_reason_,
                     est.n_active_features_, time.perf_counter() - t0))
    ref = dict((r[0], r[1]) for r in rows).get("owlqn")
    print("| solver | objective | vs OWL-QN | evaluations | iterations | stop | non-zero | time (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for solver, obj, evals, its, stop, nz, sec in rows:
        rel = "" if ref is None else f"{100 * (obj - ref) / abs(ref):+.4f}%"
        print(f"| {solver} | {obj:.4f} | {rel} | {evals} | {its} | {stop} | {nz} | {sec:.1f} |")


if __name__ == "__main__":
    main()
