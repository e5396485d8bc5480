"""Loopy BP over the complete candidate graph against BP over the non-zero edges only.

spargel's pairwise MRF runs inference on the edges with a non-zero weight: a zero-weight
edge has a constant potential and sends uniform messages, so leaving it out is exact.
This script checks that, and prices what it saves, at the weights Full-Opt-L1 (OWL-QN on
every candidate edge) ends with on the OCR letters of ``bench/grafting_ocr.py`` (same
halves, same l1): one ``loss_grad`` from uniform messages with the zero-weight edges left
out, and one with every one of the 79,800 edges in the BP graph (their weights set to
1e-300, which makes them "active" without changing any potential). It prints the
difference of the losses and gradients, the seconds of each, and what Full-Opt's
evaluations would have cost with the complete graph.

    python bench/mrf_complete_graph_bp.py [--chars a c m s i g] [--l1-per-sample 0.25] [--seed 0]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grafting_ocr import build, halves, load_letters  # noqa: E402
from spargel.core.penalties import ElasticNet  # noqa: E402
from spargel.solvers import get_solver  # noqa: E402


def timed_loss_grad(model, w, repeat):
    """(loss, gradient, median seconds, sweeps) of loss_grad from uniform messages."""
    times = []
    for _ in range(repeat):
        model._messages = None
        t0 = time.perf_counter()
        loss, g = model.loss_grad(w)
        times.append(time.perf_counter() - t0)
    return loss, g, float(np.median(times)), model.last_inference


def full_opt(X, l1_per_sample, max_iter):
    """(model, result, seconds of the fit) of OWL-QN on every candidate edge, as Full-Opt
    in grafting_ocr.py."""
    model = build(X, {"tol": 1e-6, "max_iter": 200})
    pen = ElasticNet(l1_per_sample * len(X), 0.0, model.layout.penalty_scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = get_solver("owlqn")(model, pen, model.initial_weights(), max_iter=max_iter, tol=1e-4, gtol=1e-6,
                                  window=5)
    return model, res, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", nargs="+", default=list("acmsig"))
    ap.add_argument("--l1-per-sample", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0, help="the random halves (as grafting_ocr.py --seeds)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    # the halves of grafting_ocr.py are drawn for a, c, m, s, i, g in this order
    order = list(dict.fromkeys([*"acmsig", *args.chars]))
    split = halves(load_letters(order), order, args.seed)
    print("| char | Full-Opt (s) | evals | non-zero edges | BP sweeps | s / eval, non-zero edges "
          "| s / eval, complete graph | ratio | rel. loss difference | max gradient difference "
          "| Full-Opt with the complete graph (s, est.) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    full_opt(split[args.chars[0]][0][:20], args.l1_per_sample, 3)      # compiles the kernels, untimed
    for c in args.chars:
        X = split[c][0]
        model, res, t_fit = full_opt(X, args.l1_per_sample, 5000)
        w = res.w
        w_all = w.copy()
        edges = np.arange(model.n_node_params, model.n_params)
        w_all[edges[w[edges] == 0]] = 1e-300
        la, ga, ta, ia = timed_loss_grad(model, w, args.repeat)
        lc, gc, tc, ic = timed_loss_grad(model, w_all, args.repeat)
        assert ic["active_edges"] == model.graph.n_edges
        print(f"| {c} | {t_fit:.1f} | {res.n_evals} | {ia['active_edges']} | {ia['sweeps']} / {ic['sweeps']} | "
              f"{ta:.3f} | {tc:.3f} | {tc / ta:.0f}x | {abs(la - lc) / abs(la):.0e} | "
              f"{np.max(np.abs(ga - gc)):.0e} | {res.n_evals * tc:.0f} |", flush=True)


if __name__ == "__main__":
    main()
