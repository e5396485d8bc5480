"""Figure 3 of Zhu, Lao & Xing (Grafting-Light): feature selection in a second-order
CRF for NP chunking, by Grafting-Light, Grafting, Gauss-Seidel and Full-Opt-L1 (OWL-QN
on every candidate feature), over the select unit M.

Data and features as ``bench/np_chunking.py`` (part ``np``): CoNLL-2000 reduced to
B-NP / I-NP / O, Sha & Pereira's feature set (``SHA_PEREIRA_TEMPLATE``, second-order
labels: ``--order 2``; ``--order 1`` drops the label triples), the "observed" feature
space (every feature that fires in the training data: 867,660 with the whole training
section at order 2). ``--sentences`` keeps the first N training sentences.

One l1 constant for every method: ``--l1``, or with ``--cv-l1 A B ...`` the value among
those with the best mean chunk F1 of Full-Opt (``CRF(solver="owlqn")`` fitted and
scored as a user would) over a 5-fold cross-validation of the training sentences, as
the paper chose it (``--folds``; each fold builds its own observed feature space).
Reported per method and M: training time (capped by ``--time-limit``; a
run that hits it says so), training objective and negative log-likelihood, test chunk
F1 (conlleval rules), non-zero features, features selected during training (the
largest working set), gradient evaluations.

    python bench/grafting_np_chunking.py [--sentences 8936] [--order 2] [--l1 1.0 | --cv-l1 0.5 1 2 4]
                                         [--units 1000 10000 100000] [--time-limit 1800] [--json OUT]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from np_chunking import load, templates  # noqa: E402

METHODS = ("grafting-light", "grafting", "gauss-seidel")


def cross_validate(train, grid, folds, estimator_params):
    """Mean and spread of Full-Opt's held-out chunk F1 per l1 of ``grid`` over ``folds``
    folds of ``train`` (a fixed random split); prints one line per fold and l1."""
    import spargel
    from spargel.metrics import chunk_f1
    idx = np.random.default_rng(0).permutation(len(train))
    parts = np.array_split(idx, folds)
    scores = {l1: [] for l1 in grid}
    for f, held in enumerate(parts):
        out = set(held.tolist())
        fit_on = [train[i] for i in idx if i not in out]
        score_on = [train[i] for i in held]
        for l1 in grid:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = spargel.CRF(l1=l1, **estimator_params).fit(fit_on, [s.labels for s in fit_on])
            f1 = 100 * chunk_f1([s.labels for s in score_on], est.predict(score_on))
            scores[l1].append(f1)
            print(f"  cv fold {f + 1}/{folds} l1 = {l1:g}: F1 {f1:.2f}, "
                  f"{np.count_nonzero(est.weights_):,} non-zero, {time.perf_counter() - t0:.0f} s", flush=True)
    return {l1: (float(np.mean(v)), float(np.std(v))) for l1, v in scores.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=None)
    ap.add_argument("--order", type=int, choices=(1, 2), default=2)
    ap.add_argument("--l1", type=float, default=1.0)
    ap.add_argument("--cv-l1", type=float, nargs="+", help="choose l1 among these by cross-validated F1")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--cv-only", action="store_true", help="stop after the cross-validation")
    ap.add_argument("--units", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()

    import spargel
    from spargel.metrics import chunk_f1
    from spargel.core.factory import make_model
    from spargel.core.penalties import ElasticNet
    from spargel.solvers import get_solver

    train, test = load("train.txt", True), load("test.txt", True)
    if args.sentences:
        train = train[:args.sentences]
    first, second, pad = templates("np")
    cv = None
    if args.cv_l1:
        params = dict(order=args.order, template=second if args.order == 2 else first, pad=pad, solver="owlqn",
                      tol=args.tol, gtol=1e-6, max_iter=100000, n_jobs=args.threads)
        print(f"{args.folds}-fold cross-validation of Full-Opt over l1 in {args.cv_l1}", flush=True)
        cv = cross_validate(train, args.cv_l1, args.folds, params)
        for l1, (mean, sd) in cv.items():
            print(f"  l1 = {l1:g}: mean F1 {mean:.2f} (sd {sd:.2f})")
        args.l1 = max(cv, key=lambda l1: cv[l1][0])
        print(f"  chosen l1 = {args.l1:g}", flush=True)
        if args.cv_only:
            return
    est = spargel.CRF(order=args.order, template=second if args.order == 2 else first, pad=pad, l1=args.l1,
                      n_jobs=args.threads)
    est._check_params()
    data = est._dataset(train, [s.labels for s in train], grow=True)
    space = est._feature_space(data)
    model = make_model(est._model_kind(), space, data, n_jobs=args.threads)
    pen = ElasticNet(args.l1, 0.0, model.layout.penalty_scale)
    test_data = est._dataset(test)                    # with the training vocabularies
    names = est._label_vocab.names
    if args.order == 2:
        from spargel.chain.crf2 import decode
    else:
        from spargel.chain.crf import decode
    print(f"{len(train)} training sentences, order {args.order}, {model.n_params:,} candidate features, "
          f"l1 = {args.l1:g}", flush=True)

    def run(method, M):
        t0 = time.perf_counter()
        hit = []

        def monitor(row, w):
            if time.perf_counter() - t0 > args.time_limit:
                hit.append(True)
                return True
            return False

        opts = {} if method == "owlqn" else {"select_unit": M}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = get_solver(method)(model, pen, max_iter=100000, tol=args.tol, gtol=1e-6, monitor=monitor, **opts)
        elapsed = time.perf_counter() - t0
        ids, _ = decode(space, test_data, res.w)
        pred = [[names[i] for i in ids[test_data.seq_ptr[s]:test_data.seq_ptr[s + 1]]] for s in range(len(test))]
        rows = res.history
        selected = model.n_params if method == "owlqn" else max((r.get("working_set", 0) for r in rows), default=0)
        return {"method": "full-opt-l1" if method == "owlqn" else method, "M": M, "time_s": elapsed,
                "objective": float(res.objective), "train_nll": float(model.loss(res.w)),
                "f1": 100 * chunk_f1([s.labels for s in test], pred), "nonzero": int(np.count_nonzero(res.w)),
                "selected": int(selected), "grad_evals": int(res.n_evals), "iterations": int(res.n_iter),
                "stop": "time limit" if hit else res.stop_reason}

    rows = [run("owlqn", None)]
    print(json.dumps(rows[-1]), flush=True)
    for M in args.units:
        for m in args.methods:
            rows.append(run(m, M))
            print(json.dumps(rows[-1]), flush=True)

    full = rows[0]
    print("\n| method | M | time (s) | objective / full | train NLL | test F1 | non-zero | selected | grad evals | stop |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['M'] or '—'} | {r['time_s']:.0f} | {r['objective'] / full['objective']:.4f} | "
              f"{r['train_nll']:.0f} | {r['f1']:.2f} | {r['nonzero']:,} | {r['selected']:,} | {r['grad_evals']} | "
              f"{r['stop']} |")
    light = [r for r in rows if r["method"] == "grafting-light"]
    checks = {"light within 0.3 F1 of full-opt": all(abs(r["f1"] - full["f1"]) <= 0.3 for r in light)}
    if "grafting" in args.methods:
        checks["light fewer evals than grafting at every M"] = all(
            r["grad_evals"] < next(o["grad_evals"] for o in rows if o["method"] == "grafting" and o["M"] == r["M"])
            for r in light)
    for k, v in checks.items():
        print(f"{'PASS' if v else 'FAIL'}: {k}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "cv": cv, "rows": rows, "checks": checks},
                                              indent=1))


if __name__ == "__main__":
    main()
