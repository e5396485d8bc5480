"""NETtalk letter-to-phoneme: blockwise coordinate descent for several l1 values
(the shape of Table 2 and Figure 5 of Sokolovska, Lavergne, Cappé & Yvon 2010).

Data: ``nettalk.data`` of the shared NETtalk folder (20,007 aligned words, 26 letters,
51 phonemes including the silent ``-``). Split by distinct word, seeded: 9% of the
words are the test set (the paper: 16,452 training and 1,628 test words). Features
as the paper's first setting (§6.2): one observation per position, the current letter,
with unigram features (letter, phoneme) and bigram features (letter, previous phoneme,
phoneme) — the template ``*00:%x[0,0]`` in the ``"full"`` feature space — and no
other transition or bias feature.

Rows: BCD (``solver="bcd"``, ``l2 = 0.001`` as the paper) for each ``--l1`` value with
``--sweeps`` sweeps; OWL-QN with the same features and objective (``--owlqn-l1``,
``--owlqn-iter`` iterations); L-BFGS with ``l2 = 0.02`` only (``--lbfgs-iter``). Each
reports iterations, CPU and wall time, median CPU seconds per iteration (sweeps 3 and
later for BCD, when the model has settled), train / test phoneme error, active unigram
and bigram features. The figure plots the CPU time of every BCD sweep against the
number of active features at its end (log scale), with the time of one dense
forward-backward + gradient over the training set for reference.

    python bench/nettalk.py [--sweeps 15] [--l1 0 0.1 0.2 0.5 1 10] [--markdown FILE] [--figure FILE]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table  # noqa: E402

TEMPLATE = "*00:%x[0,0]\n"
TEST_FRACTION = 0.09
SEED = 0


def load_split():
    words = []
    with open(data_dir("nettalk") / "nettalk.data", encoding="ascii") as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if len(f) >= 2 and f[0].strip():
                words.append((f[0].strip(), f[1].strip()))
    distinct = sorted({w for w, _ in words})
    rng = np.random.default_rng(SEED)
    test_words = set(rng.choice(distinct, size=int(round(TEST_FRACTION * len(distinct))), replace=False))

    def xy(pairs):
        return [[[c] for c in w] for w, _ in pairs], [list(p) for _, p in pairs]

    train = xy([p for p in words if p[0] not in test_words])
    test = xy([p for p in words if p[0] in test_words])
    return train, test


def error(est, X, y):
    return 100.0 * (1.0 - est.score(X, y))


def fit_row(name, est, train, test, per_iter_from=0):
    import spargel  # noqa: F401

    X, y = train
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    est.fit(X, y)
    wall, cpu = time.perf_counter() - t_wall, time.process_time() - t_cpu
    hist = est.history_
    if "sweep_cpu" in hist[0]:
        per = [r["sweep_cpu"] for r in hist[per_iter_from:]] or [r["sweep_cpu"] for r in hist]
        per_iter = float(np.median(per))
    else:
        per_iter = cpu / max(1, est.n_iter_)
    row = {"method": name, "iterations": est.n_iter_, "cpu_s": cpu, "wall_s": wall, "per_iter": per_iter,
           "train_err": error(est, X, y), "test_err": error(est, *test),
           "k_mu": len(est.state_features_), "k_lambda": len(est.bigram_features_),
           "objective": est.objective_, "history": hist}
    print(f"{name}: {row['iterations']} it, {cpu:.0f} s CPU ({wall:.0f} s wall), {per_iter:.2f} s/it, "
          f"train {row['train_err']:.2f}%, test {row['test_err']:.2f}%, K_mu {row['k_mu']}, "
          f"K_lambda {row['k_lambda']}", file=sys.stderr, flush=True)
    return row


def dense_fb_time(train, repeat=3):
    """CPU seconds of one dense forward-backward + gradient over the training set."""
    import spargel
    from spargel.chain.crf import ChainCRF
    from spargel.data.feature_space import FeatureSpace

    est = spargel.CRF(template=TEMPLATE, feature_space="full")
    data = est._dataset(*train, grow=True)
    space = FeatureSpace.full(len(est._label_vocab), len(est._uni_vocab), len(est._big_vocab), False)
    model = ChainCRF(space, data, inference="dense")
    w = np.random.default_rng(0).normal(scale=0.1, size=space.n_params)
    model.loss_grad(w)
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        model.loss_grad(w)
        times.append(time.process_time() - t0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweeps", type=int, default=15)
    ap.add_argument("--l1", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.5, 1.0, 10.0])
    ap.add_argument("--l2", type=float, default=0.001)
    ap.add_argument("--owlqn-l1", type=float, default=0.2)
    ap.add_argument("--owlqn-iter", type=int, default=50)
    ap.add_argument("--lbfgs-l2", type=float, default=0.02)
    ap.add_argument("--lbfgs-iter", type=int, default=60)
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--figure", help="write the time-per-sweep vs active features plot (PNG) here")
    args = ap.parse_args()

    import spargel

    train, test = load_split()
    print(f"{len(train[0])} training words, {len(test[0])} test words", file=sys.stderr)
    common = dict(template=TEMPLATE, feature_space="full", n_jobs=1)
    rows = []
    for l1 in args.l1:
        est = spargel.CRF(solver="bcd", l1=l1, l2=args.l2, max_iter=args.sweeps, tol=0.0, gtol=0.0, window=1,
                          **common)
        rows.append(fit_row(f"BCD, l1 = {l1:g}", est, train, test, per_iter_from=2))
        rows[-1]["l1"] = l1
    est = spargel.CRF(solver="owlqn", l1=args.owlqn_l1, l2=args.l2, max_iter=args.owlqn_iter, tol=0.0, gtol=0.0,
                      **common)
    rows.append(fit_row(f"OWL-QN, l1 = {args.owlqn_l1:g}", est, train, test))
    est = spargel.CRF(solver="lbfgs", l1=0.0, l2=args.lbfgs_l2, max_iter=args.lbfgs_iter, tol=0.0, gtol=0.0,
                      **common)
    rows.append(fit_row(f"L-BFGS, l2 = {args.lbfgs_l2:g}", est, train, test))
    dense_fb = dense_fb_time(train)

    cols = [("method", "method", None), ("iterations", "iter.", None), ("cpu_s", "CPU (s)", "{:.0f}"),
            ("wall_s", "wall (s)", "{:.0f}"), ("per_iter", "CPU s / iter.", "{:.2f}"),
            ("train_err", "train err. (%)", "{:.2f}"), ("test_err", "test err. (%)", "{:.2f}"),
            ("k_mu", "K_mu", None), ("k_lambda", "K_lambda", None)]
    table = markdown_table(rows, cols)
    bcd = [r for r in rows if r["method"].startswith("BCD")]
    ref = next((r for r in bcd if r.get("l1") == 0.0), None)
    lines = ["| check | measured | met |", "|---|---|---|"]
    if ref is not None:
        ok = [r for r in bcd if r is not ref and r["k_lambda"] <= 0.10 * ref["k_lambda"]
              and r["test_err"] <= ref["test_err"] + 0.5]
        best = min(ok, key=lambda r: r["test_err"]) if ok else None
        lines.append(f"| some l1: test error within 0.5 points of l1 = 0 ({ref['test_err']:.2f}%) with <= 10% of its "
                     f"{ref['k_lambda']} bigram features | "
                     + (f"{best['method']}: {best['test_err']:.2f}%, {best['k_lambda']} "
                        f"({100 * best['k_lambda'] / ref['k_lambda']:.1f}%)" if best else "none")
                     + f" | {'yes' if best else 'NO'} |")
    pts = sorted((r["k_mu"] + r["k_lambda"], r["per_iter"]) for r in bcd)
    falling = all(b[1] >= a[1] * 0.9 for a, b in zip(pts, pts[1:]))
    lines.append(f"| BCD time per iteration falls with sparsity | "
                 + ", ".join(f"{k} active: {t:.2f} s" for k, t in pts) + f" | {'yes' if falling else 'NO'} |")
    lines.append(f"| (reference) one dense forward-backward + gradient over the training set | {dense_fb:.2f} s CPU | |")
    text = f"{len(train[0])} training words, {len(test[0])} test words\n\n{table}\n\n" + "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.figure:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for r in bcd:
            h = r["history"][2:] or r["history"]
            ax.scatter([x["active"] for x in h], [x["sweep_cpu"] for x in h], s=12, label=r["method"])
        ax.axhline(dense_fb, color="tab:blue", ls="--", lw=1, label="dense forward-backward + gradient")
        ax.set_xscale("log")
        ax.set_xlabel("active features")
        ax.set_ylabel("CPU seconds per BCD sweep")
        ax.set_title("NETtalk: BCD time per sweep vs sparsity")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.figure, dpi=120)


if __name__ == "__main__":
    main()
