"""Figures 4 and 5 of Zhu, Lao & Xing (Grafting-Light): structure learning of pairwise
MRFs over the pixels of OCR letters, by Grafting-Light, Grafting and Full-Opt-L1 (OWL-QN
on every candidate edge), with loopy BP.

Data: ``../shared/data/ocr_letters`` (Taskar et al.'s 16x8 binary letters). Each image
of a character is placed in the centre of a 20x20 black field (400 binary pixels,
79,800 candidate edges, one Ising weight per edge); a random half of the character's
images learns, the other half is held out.

Per character and method: training time (capped by ``--time-limit``; a run that hits
it stops where it stands and says so), negative per-pixel log-likelihood of the
held-out half, gradient evaluations, non-zero edges, and the time each incremental
method took to reach the training objective at which Full-Opt stopped (Full-Opt stops
where its line search fails on the noisy Bethe objective, often well above the
objective the others reach: then its time alone says little). The held-out likelihood uses the
Bethe approximation of log Z by loopy BP on the learned graph:
``NLL = (log Z_Bethe - mean_x theta . phi(x)) / 400``. The average images are the
pixel marginals (loopy BP beliefs of "on") of each learned model, next to the mean of
the held-out images (``--figure``).

``--seeds`` repeats everything on other random halves and judges the checks on every
split and on the medians / means over them (one half decides the closer letters).

``--units`` instead runs Figure 5: one character over the select unit M.

    python bench/grafting_ocr.py [--chars a c m s i g] [--l1-per-sample 0.2] [--unit 10]
                                 [--time-limit 1800] [--bp-tol 1e-6] [--bp-max-iter 200]
                                 [--seeds 0 1 2] [--json OUT] [--figure docs/figures/grafting_ocr.png]
    python bench/grafting_ocr.py --chars c --units 1 10 20 30 50
"""

import argparse
import gzip
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir  # noqa: E402
from spargel.mrf.model import PairwiseMRFModel  # noqa: E402
from spargel.core.penalties import ElasticNet  # noqa: E402
from spargel.solvers import get_solver  # noqa: E402

METHODS = {"grafting-light": "grafting-light", "grafting": "grafting", "full-opt-l1": "owlqn"}


def load_letters(chars):
    """{char: (n, 400) int8 images in a 20x20 field}."""
    path = data_dir("ocr_letters") / "letter_reconstructed.data.gz"
    out = {c: [] for c in chars}
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[1] in out:
                out[parts[1]].append(np.array(parts[6:134], dtype=np.int8))
    images = {}
    for c, rows in out.items():
        small = np.array(rows).reshape(-1, 16, 8)
        field = np.zeros((len(small), 20, 20), np.int8)
        field[:, 2:18, 6:14] = small
        images[c] = field.reshape(len(small), 400)
    return images


def halves(images, chars, seed, max_images=None):
    """{char: (learning half, held-out half)}: one random permutation per character,
    drawn in the order of ``chars`` from one generator seeded with ``seed``."""
    rng = np.random.default_rng(seed)
    out = {}
    for c in chars:
        X = images[c][rng.permutation(len(images[c]))][:max_images]
        out[c] = X[:len(X) // 2], X[len(X) // 2:]
    return out


def build(X, bp):
    return PairwiseMRFModel(X, n_states=[2] * X.shape[1], edge_features="ising", inference="loopy-bp", bp=bp)


def fit(X_train, X_test, method, l1_per_sample, unit, time_limit, tol, max_iter, bp):
    model = build(X_train, bp)
    pen = ElasticNet(l1_per_sample * len(X_train), 0.0, model.layout.penalty_scale)
    w0 = model.initial_weights()
    t0 = time.perf_counter()
    hit = []

    def monitor(row, w):
        if time.perf_counter() - t0 > time_limit:
            hit.append(True)
            return True
        return False

    opts = {} if method == "full-opt-l1" else {"select_unit": unit}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = get_solver(METHODS[method])(model, pen, w0, max_iter=max_iter, tol=tol, gtol=1e-6, window=5,
                                          monitor=monitor, **opts)
    elapsed = time.perf_counter() - t0
    test = build(X_test, bp)
    test._messages = None
    nll = test.loss(res.w) / (len(X_test) * X_test.shape[1])
    _, node_b, _ = model.infer(res.w, pairs_for=np.zeros(0, np.int64))
    image = node_b[model.graph.node_ptr[:-1] + 1]
    rows = res.history
    return {"method": method, "M": None if method == "full-opt-l1" else unit, "time_s": elapsed,
            "heldout_nll_per_pixel": float(nll), "grad_evals": int(res.n_evals),
            "nonzero_edges": int(len(model.active_edges(res.w))),
            "selected": (model.graph.n_edges if method == "full-opt-l1" else
                         int(max((r["working_set"] for r in rows), default=model.n_node_params) - model.n_node_params)),
            "iterations": int(res.n_iter), "objective": float(res.objective),
            "stop": "time limit" if hit else res.stop_reason, "bp_failures": int(model.bp_failures),
            "trace": [(r["elapsed"], r["objective"]) for r in rows], "image": image.tolist()}


def time_to(run, objective):
    """Seconds ``run`` took to reach a training objective <= ``objective`` (None: never)."""
    return next((t for t, f in run["trace"] if f <= objective), None)


def full_opt(rows, seed):
    return next((r for r in rows if r["method"] == "full-opt-l1" and r["seed"] == seed), None)


def fmt_time(t):
    return "never" if t is None or not np.isfinite(t) else f"{t:.1f}"


def checks(results, seeds):
    """The issue's checks, per split and on the medians (times) / means (NLL) over the
    splits; prints a summary table first when there are several splits."""
    def get(c, m, seed):
        return next(r for r in results[c] if r["method"] == m and r["seed"] == seed)

    def light_vs(c, seed):
        light, graft, full = (get(c, m, seed) for m in METHODS)
        return {"faster": light["time_s"] < min(graft["time_s"], full["time_s"]),
                "to_full": (time_to(light, full["objective"]) or np.inf) <= full["time_s"],
                "nll": light["heldout_nll_per_pixel"] <= full["heldout_nll_per_pixel"]}

    if len(seeds) > 1:
        print(f"\nOver {len(seeds)} random halves (seeds {', '.join(map(str, seeds))}): median time, median time "
              "to the same split's Full-Opt objective, mean (sd) held-out NLL / pixel, median evaluations")
        print("\n| char | method | time (s) | to full-opt's objective (s) | held-out NLL / pixel | grad evals |")
        print("|---|---|---|---|---|---|")
        for c in results:
            for m in METHODS:
                rows = [get(c, m, s) for s in seeds]
                nll = np.array([r["heldout_nll_per_pixel"] for r in rows])
                reach = "—" if m == "full-opt-l1" else fmt_time(np.median(
                    [time_to(r, get(c, "full-opt-l1", r["seed"])["objective"]) or np.inf for r in rows]))
                print(f"| {c} | {m} | {np.median([r['time_s'] for r in rows]):.1f} | {reach} | "
                      f"{nll.mean():.4f} ({nll.std(ddof=1):.4f}) | {np.median([r['grad_evals'] for r in rows]):.0f} |")
    names = {"faster": "light faster than grafting and full-opt",
             "to_full": "light reaches full-opt's final objective no later than full-opt stops",
             "nll": "light held-out NLL <= full-opt's"}
    per = {c: [light_vs(c, s) for s in seeds] for c in results}
    print()
    for k, name in names.items():
        splits = [sum(v[k] for v in per[c]) for c in results]
        ok = all(n == len(seeds) for n in splits)
        tally = ", ".join(f"{c} {n}/{len(seeds)}" for c, n in zip(results, splits))
        print(f"{'PASS' if ok else 'FAIL'}: {name} on every character and split ({tally})")
    if len(seeds) > 1:
        def med(c, m, key):
            return np.median([get(c, m, s)[key] for s in seeds])
        summary = {
            "light's median time below grafting's and full-opt's": all(
                med(c, "grafting-light", "time_s") < min(med(c, "grafting", "time_s"), med(c, "full-opt-l1", "time_s"))
                for c in results),
            "light's mean held-out NLL <= full-opt's": all(
                np.mean([get(c, "grafting-light", s)["heldout_nll_per_pixel"] for s in seeds])
                <= np.mean([get(c, "full-opt-l1", s)["heldout_nll_per_pixel"] for s in seeds]) for c in results),
        }
        for name, ok in summary.items():
            print(f"{'PASS' if ok else 'FAIL'}: {name}, on every character")


def figure(results, images, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chars = list(results)
    cols = ["held-out mean", *METHODS]
    fig, axes = plt.subplots(len(chars), len(cols), figsize=(1.6 * len(cols), 1.7 * len(chars)), squeeze=False)
    for r, c in enumerate(chars):
        pics = [images[c].mean(axis=0)] + [np.array(next(x["image"] for x in results[c] if x["method"] == m))
                                           for m in METHODS]
        for k, (ax, pic) in enumerate(zip(axes[r], pics)):
            ax.imshow(np.reshape(pic, (20, 20)), cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(cols[k], fontsize=8)
        axes[r][0].set_ylabel(c)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", nargs="+", default=list("acmsig"))
    ap.add_argument("--l1-per-sample", type=float, default=0.2, help="l1 = this x training images")
    ap.add_argument("--unit", type=int, default=10)
    ap.add_argument("--units", type=int, nargs="+", help="Figure 5: these select units on the first character")
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--time-limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--max-images", type=int, default=None, help="use at most this many images per character")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-iter", type=int, default=5000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0],
                    help="random halves to learn from, one run of every method each (0: the documented split)")
    ap.add_argument("--bp-tol", type=float, default=1e-6, help="loopy BP: largest message change at convergence")
    ap.add_argument("--bp-max-iter", type=int, default=200, help="loopy BP: most sweeps per inference")
    ap.add_argument("--json")
    ap.add_argument("--figure")
    args = ap.parse_args()

    images = load_letters(args.chars)
    bp = {"tol": args.bp_tol, "max_iter": args.bp_max_iter}
    # compile the kernels before any run is timed (a few images, a few iterations)
    first = images[args.chars[0]][:40]
    for m in args.methods:
        fit(first[:20], first[20:], m, args.l1_per_sample, args.unit, args.time_limit, args.tol, 3, bp)
    results, held = {}, {}                   # {char: rows of every split}, {char: first held-out half}
    units = args.units or [args.unit]
    chars = args.chars[:1] if args.units else args.chars
    for seed in args.seeds:
        for c, (X_train, X_test) in halves(images, chars, seed, args.max_images).items():
            held.setdefault(c, X_test)
            print(f"{c} (seed {seed}): {len(X_train)} learn / {len(X_test)} held out, "
                  f"l1 = {args.l1_per_sample * len(X_train):g}", flush=True)
            for M in units:
                for m in args.methods:
                    if m == "full-opt-l1" and M != units[0]:
                        continue
                    r = fit(X_train, X_test, m, args.l1_per_sample, M, args.time_limit, args.tol, args.max_iter, bp)
                    r["seed"] = seed
                    results.setdefault(c, []).append(r)
                    print(json.dumps({k: v for k, v in r.items() if k not in ("image", "trace")}), flush=True)

    print("\n| char | seed | method | M | time (s) | to full-opt's objective (s) | held-out NLL / pixel "
          "| grad evals | non-zero edges | selected | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c, rows in results.items():
        for r in rows:
            full = full_opt(rows, r["seed"])
            reach = "—" if full is None or r is full else fmt_time(time_to(r, full["objective"]))
            print(f"| {c} | {r['seed']} | {r['method']} | {r['M'] or '—'} | {r['time_s']:.1f} | {reach} | "
                  f"{r['heldout_nll_per_pixel']:.4f} | "
                  f"{r['grad_evals']} | {r['nonzero_edges']} | {r['selected']} | {r['stop']} |")
    if not args.units and set(METHODS) <= set(args.methods):
        checks(results, args.seeds)
        if args.figure:
            figure({c: [r for r in rows if r["seed"] == args.seeds[0]] for c, rows in results.items()}, held,
                   args.figure)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))


if __name__ == "__main__":
    main()
