"""BCD: the CRF's fused compiled sweep (``block_sweep``) against the solver's generic
loop over the protocol's block methods, on the first N CoNLL-2000 sentences with
CRFsuite's chunking attributes (same iterates; the objective after the sweeps is printed
to show it). Prints one JSON line: median seconds per sweep and the final objective.

    python bench/bcd_fused.py [--sentences 1500] [--sweeps 3]
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=1500)
    ap.add_argument("--sweeps", type=int, default=3)
    args = ap.parse_args()
    import conll2000 as bench
    import spargel

    class Data:
        dataset = "conll2000"

    train = bench.load(Data(), "train")[:args.sentences]
    out = {}
    for fused in (True, False):
        crf = spargel.CRF(solver="bcd", template=bench.template(Data()), pad=False, max_iter=args.sweeps,
                          solver_options={"fused": fused})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # stops on max_iter, on purpose
            crf.fit(train, [s.labels for s in train])
        elapsed = [row["elapsed"] for row in crf.history_]
        out[f"fused={fused}"] = {"seconds_per_sweep": float(np.median(np.diff(elapsed))),
                                 "objective": float(crf.history_[-1]["objective"])}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
