"""Sparse vs dense forward-backward (with gradient) and Viterbi on a 53-label CRF.

A NETtalk-like synthetic problem: 53 labels, 26 observations, one observation per
position carrying a unigram block (53 weights) and a bigram block (53 x 53 weights),
6,000 sequences of 3-12 positions. Unigram weights are N(0, 1); a fraction ``density``
of the bigram weights is N(0, 1), the rest zero (as l1 training leaves them). Two
settings: no global transitions (the paper's NETtalk model) and dense transitions.

For each density: the time of one ``ChainCRF.loss_grad`` (loss + full gradient) with
``inference="dense"``, ``"sparse"`` and ``"auto"`` (the automatic choice), and of
Viterbi decoding of all sequences, one thread, CPU seconds (median of ``--repeat``
runs; CPU time because the benchmark machine is shared). Results of the two kernels
are checked to agree.

    python bench/sparse_forward_backward.py [--repeat 5] [--markdown FILE]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table  # noqa: E402

DENSITIES = (0.01, 0.05, 0.2, 0.5, 1.0)


def make_problem(n_labels=53, n_obs=26, n_seq=6000, seed=0, transitions=False):
    from spargel.data.dataset import SequenceData
    from spargel.data.feature_space import FeatureSpace

    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 13, size=n_seq)
    n_tok = int(lengths.sum())
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    obs = rng.integers(n_obs, size=n_tok).astype(np.int32)
    ptr = np.arange(n_tok + 1, dtype=np.int64)
    data = SequenceData(seq_ptr, ptr, obs, np.ones(n_tok), ptr.copy(), obs.copy(), np.ones(n_tok),
                        rng.integers(n_labels, size=n_tok).astype(np.int32))
    space = FeatureSpace.full(n_labels, n_obs, n_obs, transitions)
    return space, data


def weights(space, density, seed=1):
    rng = np.random.default_rng(seed)
    w = np.zeros(space.n_params)
    w[:space.b_base] = rng.normal(size=space.b_base)
    nb = space.t_base - space.b_base
    on = rng.random(nb) < density
    w[space.b_base:space.t_base][on] = rng.normal(size=int(on.sum()))
    w[space.t_base:] = rng.normal(scale=0.5, size=space.n_params - space.t_base)
    return w


def cpu_median(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return float(np.median(times)), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()

    from spargel.chain.crf import ChainCRF, decode

    texts = []
    all_rows = []
    for transitions in (False, True):
        space, data = make_problem(transitions=transitions)
        models = {m: ChainCRF(space, data, n_jobs=1, inference=m) for m in ("dense", "sparse", "auto")}
        w0 = weights(space, 0.05)
        for m in models.values():                      # compile outside the timings
            m.loss_grad(w0)
        decode(space, data, w0, inference="dense")
        decode(space, data, w0, inference="sparse")
        rows = []
        for density in DENSITIES:
            w = weights(space, density)
            r = {"setting": "dense transitions" if transitions else "no transitions", "density": density,
                 "nnz_pos": np.count_nonzero(w[space.b_base:space.t_base]) / (space.t_base - space.b_base)
                 * space.n_labels ** 2}
            res = {}
            for mode, model in models.items():
                r[f"fb_{mode}"], res[mode] = cpu_median(lambda: model.loss_grad(w), args.repeat)
            for mode in ("dense", "sparse", "auto"):
                r[f"vit_{mode}"], res[f"vit_{mode}"] = cpu_median(
                    lambda: decode(space, data, w, inference=mode), max(1, args.repeat // 2))
            ld, gd = res["dense"]
            ls, gs = res["sparse"]
            assert abs(ls - ld) <= 1e-9 * abs(ld), (ls, ld)
            assert np.allclose(gs, gd, rtol=1e-8, atol=1e-8)
            assert np.array_equal(res["vit_sparse"][0], res["vit_dense"][0])
            r["auto_choice"] = "dense" if models["auto"].view.dense else "sparse"
            r["fb_speedup"] = r["fb_dense"] / r["fb_sparse"]
            r["fb_auto_ratio"] = r["fb_auto"] / r["fb_dense"]
            r["vit_speedup"] = r["vit_dense"] / r["vit_sparse"]
            r["vit_auto_ratio"] = r["vit_auto"] / r["vit_dense"]
            rows.append(r)
            print(r, file=sys.stderr, flush=True)
        all_rows += rows
    cols = [("setting", "setting", None), ("density", "non-zero bigram fraction", "{:.0%}"),
            ("nnz_pos", "non-zero pairs / position", "{:.0f}"),
            ("fb_dense", "FB+grad dense (s)", "{:.3f}"), ("fb_sparse", "FB+grad sparse (s)", "{:.3f}"),
            ("fb_speedup", "sparse speed-up", "{:.2f}x"), ("auto_choice", "auto picks", None),
            ("fb_auto_ratio", "auto / dense time", "{:.2f}"),
            ("vit_dense", "Viterbi dense (s)", "{:.3f}"), ("vit_sparse", "Viterbi sparse (s)", "{:.3f}"),
            ("vit_speedup", "Viterbi speed-up", "{:.2f}x"), ("vit_auto_ratio", "Viterbi auto / dense", "{:.2f}")]
    table = markdown_table(all_rows, cols)
    sparse5 = [r for r in all_rows if r["density"] <= 0.05]
    worst_auto = max(max(r["fb_auto_ratio"], r["vit_auto_ratio"]) for r in all_rows)
    checks = "\n".join([
        "| target | measured | met |", "|---|---|---|",
        f"| sparse FB >= 3x faster at <= 5% non-zero bigram weights | min {min(r['fb_speedup'] for r in sparse5):.2f}x "
        f"| {'yes' if min(r['fb_speedup'] for r in sparse5) >= 3 else 'NO'} |",
        f"| automatic choice never > 1.2x slower than dense | worst {worst_auto:.2f}x | "
        f"{'yes' if worst_auto <= 1.2 else 'NO'} |",
    ])
    texts.append(f"{table}\n\n{checks}\n")
    text = "\n".join(texts)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
