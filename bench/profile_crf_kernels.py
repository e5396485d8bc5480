"""Time per batch loss + gradient evaluation (``ChainCRF.loss_grad``) on CoNLL-2000
chunking with CRFsuite's chunking attributes in the "observed" feature space.

Prints the median (and minimum) wall time per evaluation at w = 0 and at a random sparse
w (10% non-zero, as after some OWL-QN iterations), with 1 and 2 threads, and the CPU
time of the one-thread runs. Run it alone on the machine: other processes on the cores
distort the numbers.

    python bench/profile_crf_kernels.py [--data DIR] [--repeats 7] [--threads 1 2]

Skips (exit 0 with a message) when the CoNLL-2000 data is not found
(default: ../shared/data/conll2000 relative to the repository root).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "conll2000"


def build(train_file):
    from spargel.data.conll import read_conll
    from spargel.data.dataset import build_dataset
    from spargel.data.templates import crfsuite_chunking_template
    from spargel.data.vocab import Vocabulary
    from spargel.data.feature_space import FeatureSpace

    tpl = crfsuite_chunking_template()
    sents = list(read_conll(str(train_file)))
    feats = [tpl.extract(s.columns, pad=False) for s in sents]
    uv, bv, lv = Vocabulary(), Vocabulary(), Vocabulary()
    data = build_dataset(((u, None) for u, b in feats), uv, bv, lv, [s.labels for s in sents], grow=True)
    space = FeatureSpace.observed(data, len(lv), len(uv), len(bv), True)
    return space, data


def time_evals(model, w, repeats):
    model.loss_grad(w)                       # compile / warm up
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        model.loss_grad(w)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return np.median(wall), min(wall), np.median(cpu)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with train.txt")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--density", type=float, default=0.1, help="non-zero share of the sparse w")
    args = ap.parse_args(argv)
    train = args.data / "train.txt"
    if not train.exists():
        print(f"skipped: CoNLL-2000 training data not found at {train}")
        return 0

    from spargel.chain.crf import ChainCRF

    t0 = time.perf_counter()
    space, data = build(train)
    print(f"data: {data.n_sequences} sequences, {data.n_tokens} tokens, {len(data.uni_ids)} attribute "
          f"occurrences, {space.n_labels} labels, {space.n_params} weights "
          f"({time.perf_counter() - t0:.1f} s to build)")
    entries = int((np.diff(space.u_ptr)[data.uni_ids]).sum())
    print(f"(occurrence, label) weight entries per pass: {entries}")
    rng = np.random.default_rng(0)
    weights = {
        "w = 0": np.zeros(space.n_params),
        f"sparse w ({args.density:.0%} non-zero)": np.where(rng.random(space.n_params) < args.density,
                                                            rng.normal(scale=0.5, size=space.n_params), 0.0),
    }
    ref = {}
    for n_jobs in args.threads:
        t0 = time.perf_counter()
        model = ChainCRF(space, data, n_jobs=n_jobs)
        setup = time.perf_counter() - t0
        print(f"\nn_jobs={n_jobs}  (model setup {setup:.2f} s)")
        for name, w in weights.items():
            med, best, cpu = time_evals(model, w, args.repeats)
            loss, g = model.loss_grad(w)
            if name in ref:
                l1, g1 = ref[name]
                check = f"  |loss - 1 thread|/loss = {abs(loss - l1) / abs(l1):.1e}, max|g - g_1| = {np.abs(g - g1).max():.1e}"
            else:
                ref[name] = (loss, g)
                check = ""
            print(f"  {name:28s} median {med:.4f} s  min {best:.4f} s  cpu {cpu:.4f} s  loss {loss:.6f}{check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
