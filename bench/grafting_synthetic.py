"""Figure 2 of Zhu, Lao & Xing (Grafting-Light): feature selection in a linear-chain CRF
on data drawn from a random CRF, by Grafting-Light, Grafting, Gauss-Seidel and
Full-Opt-L1 (OWL-QN on every feature), over the select unit M.

Data (:func:`spargel.datasets.make_crf_gibbs_data`): every token has ``--inputs``
standard-Gaussian inputs, ``--relevant`` of them with weight in the true CRF; 8 binary
labels per sequence drawn by Gibbs sampling; real-valued state features (inputs x
labels) and 2 x 2 transitions. The first ``--train`` sequences train, the rest test.
The paper's sizes are ``--sequences 5000 --train 3000 --inputs 1000 --relevant 100``.

Criteria (one row per method and M): training time, training negative log-likelihood
(the loss, summed over the training sequences), token error rate on the test
sequences (Viterbi), non-zero features (and inputs with a non-zero weight: with two
labels the weights of an input are identified only up to a common shift, so the l1
optimum is a face and its number of non-zero *features* depends on the path a solver
takes -- the inputs in use do not), features selected during training (the largest
working set; for Gauss-Seidel the features ever optimised; Full-Opt: all), and gradient
evaluations (loss-and-gradient calls; Gauss-Seidel with block steps counts each block
gradient as one). The same l1 constant for every method (``--l1``; the paper: 64, the
best Full-Opt value on its data). ``--l2`` adds a ridge term (elastic net): any l2 > 0
makes the optimum a single point (both weights of an input in use are then non-zero,
split evenly), so every method that converges has the same support.

    python bench/grafting_synthetic.py [--sequences 5000 --train 3000] [--units 1 10 20 ...]
                                       [--json OUT] [--figure docs/figures/grafting_synthetic.png]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.datasets import dense_sequence_data, make_crf_gibbs_data  # noqa: E402
from spargel.chain.crf import ChainCRF, decode  # noqa: E402
from spargel.data.feature_space import FeatureSpace  # noqa: E402
from spargel.core.penalties import ElasticNet  # noqa: E402
from spargel.solvers import get_solver  # noqa: E402

METHODS = ("grafting-light", "grafting", "gauss-seidel")


def run(model, pen, space, test, y_test, method, M, max_iter, tol):
    t = time.perf_counter()
    opts = {} if method == "owlqn" else {"select_unit": M}
    res = get_solver(method)(model, pen, max_iter=max_iter, tol=tol, gtol=1e-6, **opts)
    elapsed = time.perf_counter() - t
    pred, _ = decode(space, test, res.w)
    rows = res.history
    selected = model.n_params if method == "owlqn" else max(r["working_set"] for r in rows)
    return {"method": "full-opt-l1" if method == "owlqn" else method, "M": M, "time_s": elapsed,
            "train_nll": float(model.loss(res.w)), "objective": float(res.objective),
            "test_error": float(np.mean(pred != y_test)), "nonzero": int(np.count_nonzero(res.w)),
            "nonzero_inputs": int(np.count_nonzero(np.any(res.w[:space.t_base].reshape(-1, 2) != 0, axis=1))),
            "selected": int(selected), "grad_evals": int(res.n_evals), "iterations": int(res.n_iter),
            "stop": res.stop_reason}


def figure(rows, units, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [("time_s", "training time (s)"), ("train_nll", "training NLL"), ("test_error", "test error rate"),
            ("nonzero", "non-zero features"), ("selected", "features selected in training"),
            ("grad_evals", "gradient evaluations")]
    full = next(r for r in rows if r["method"] == "full-opt-l1")
    fig, axes = plt.subplots(1, 6, figsize=(20, 3.2))
    for ax, (k, title) in zip(axes, keys):
        for m, style in zip(METHODS, ("o-", "s--", "^:")):
            ys = [next(r[k] for r in rows if r["method"] == m and r["M"] == M) for M in units]
            ax.plot(units, ys, style, label=m, ms=4)
        ax.axhline(full[k], color="k", lw=0.8, label="full-opt-l1")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("select unit M", fontsize=8)
        if k in ("time_s", "grad_evals"):
            ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=1500)
    ap.add_argument("--train", type=int, default=900)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--relevant", type=int, default=100)
    ap.add_argument("--l1", type=float, default=None, help="l1 constant (default: 64 x sqrt(train / 3000): the paper's value, scaled as "
                    "the noise in an irrelevant feature's gradient)")
    ap.add_argument("--l2", type=float, default=0.0, help="l2 constant (default 0: pure l1, as the paper)")
    ap.add_argument("--units", type=int, nargs="+", default=[1, 10, 20, 50, 80, 110])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--figure")
    args = ap.parse_args()
    lam = args.l1 if args.l1 is not None else 64.0 * (args.train / 3000) ** 0.5

    t = time.perf_counter()
    X, y, U, T = make_crf_gibbs_data(n_sequences=args.sequences, n_inputs=args.inputs, n_relevant=args.relevant,
                                     random_state=args.seed)
    train = dense_sequence_data(X[:args.train], y[:args.train])
    test = dense_sequence_data(X[args.train:], y[args.train:])
    y_test = y[args.train:].reshape(-1)
    space = FeatureSpace.full(2, args.inputs, 0, True)
    model = ChainCRF(space, train)
    pen = ElasticNet(lam, args.l2)
    print(f"data: {args.train} train / {args.sequences - args.train} test sequences, {model.n_params} features, "
          f"l1 = {lam:g}, l2 = {args.l2:g} ({time.perf_counter() - t:.1f} s to draw)", flush=True)

    rows = [run(model, pen, space, test, y_test, "owlqn", None, args.max_iter, args.tol)]
    print(json.dumps(rows[-1]), flush=True)
    for M in args.units:
        for m in args.methods:
            rows.append(run(model, pen, space, test, y_test, m, M, args.max_iter, args.tol))
            print(json.dumps(rows[-1]), flush=True)

    full = rows[0]
    print(f"\n| method | M | time (s) | train NLL | objective / full | test error | non-zero | inputs | selected | grad evals "
          f"| stop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['M'] or '—'} | {r['time_s']:.1f} | {r['train_nll']:.1f} | "
              f"{r['objective'] / full['objective']:.4f} | {r['test_error']:.4f} | {r['nonzero']} | {r['nonzero_inputs']} | {r['selected']} | "
              f"{r['grad_evals']} | {r['stop']} |")
    light = [r for r in rows if r["method"] == "grafting-light"]
    others = [o for o in rows if o["method"] in ("grafting", "gauss-seidel")]
    checks = {
        "light evals < grafting and gauss-seidel at every M": all(
            r["grad_evals"] < min((o["grad_evals"] for o in others if o["M"] == r["M"]), default=float("inf"))
            for r in light) if light and others else None,
        "light objective within 1% of full-opt": all(abs(r["objective"] / full["objective"] - 1) <= 0.01 for r in light),
        "light non-zeros within 10% of full-opt": all(abs(r["nonzero"] - full["nonzero"]) <= 0.1 * full["nonzero"]
                                                      for r in light),
        "light non-zero inputs within 10% of full-opt": all(
            abs(r["nonzero_inputs"] - full["nonzero_inputs"]) <= 0.1 * full["nonzero_inputs"] for r in light),
    }
    for k, v in checks.items():
        print(f"{'n/a (method not run)' if v is None else 'PASS' if v else 'FAIL'}: {k}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "l1": lam, "rows": rows, "checks": checks}, indent=1))
    if args.figure and all(m in args.methods for m in METHODS):
        figure(rows, args.units, args.figure)


if __name__ == "__main__":
    main()
