"""The flat log-linear classifier against scikit-learn's LogisticRegression on digits
(1,797 samples, 64 features, 10 classes), same objective, same run.

* l2 only: scikit-learn ``LogisticRegression(C=C, solver="lbfgs")`` minimises
  ``C * sum_i loss_i + ||W||^2 / 2`` -- the same minimiser as spargel's
  ``sum_i loss_i + l2 / 2 ||W||^2`` with ``l2 = 1 / C`` (objectives are compared in
  spargel's scale). Reported: scikit-learn's time and objective at its default
  tolerance and at tol=1e-8, and the time spargel (``solver="lbfgs"``) needs to reach
  each of those objectives to 1e-6 relative (read off its history), median of repeats.
* l1: scikit-learn ``solver="saga", l1_ratio=1`` against spargel OWL-QN, on the
  pixels scaled to [0, 1] (saga's step size depends on the scale: on the raw 0..16
  pixels it does not converge in minutes): final objectives, non-zero weights, times.

BLAS runs on one thread for both (the comparison is of the algorithms and kernels).

    python bench/loglinear_digits.py [--C 1.0] [--repeats 5] [--markdown out.md]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def objective(model, w, l1, l2):
    from spargel.core.penalties import ElasticNet
    return model.loss(w) + ElasticNet(l1, l2, model.layout.penalty_scale).value(w)


def flat(sk):
    return np.concatenate([sk.coef_.T.ravel(), sk.intercept_])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--C-l1", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    import threadpoolctl
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from spargel import LogLinearClassifier
    from spargel.loglinear.model import FlatLogLinear

    warnings.simplefilter("ignore", ConvergenceWarning)
    threadpoolctl.threadpool_limits(1)
    X, y = load_digits(return_X_y=True)
    model = FlatLogLinear(X, y, 10)
    lines = [f"digits: {X.shape[0]} samples, {X.shape[1]} features, 10 classes; one BLAS thread; "
             f"median of {args.repeats} runs", ""]

    # -- l2 ----------------------------------------------------------------------------
    l2 = 1.0 / args.C
    LogLinearClassifier(solver="lbfgs", l1=0.0, l2=l2, max_iter=20).fit(X, y)        # compile
    rows = []
    for tol in (1e-4, 1e-8):
        times, objs = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            sk = LogisticRegression(C=args.C, solver="lbfgs", tol=tol, max_iter=100000).fit(X, y)
            times.append(time.perf_counter() - t0)
            objs.append(objective(model, flat(sk), 0.0, l2))
        target = float(np.median(objs))
        ours = []
        for _ in range(args.repeats):
            clf = LogLinearClassifier(solver="lbfgs", l1=0.0, l2=l2, tol=1e-12, gtol=1e-10, max_iter=100000)
            clf.fit(X, y)
            reached = next((r["elapsed"] for r in clf.history_ if r["objective"] <= target * (1 + 1e-6)), None)
            ours.append(reached if reached is not None else float("inf"))
        rows.append((tol, float(np.median(times)), sk.n_iter_[0], target, float(np.median(ours))))
    lines += [f"l2 = 1/C = {l2:g}", "",
              "| scikit-learn tol | scikit-learn time (s) | its iterations | its objective | spargel time to that objective (s) | ratio |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {tol:g} | {t:.3f} | {it} | {obj:.6f} | {ours:.3f} | {ours / t:.2f}x |" for tol, t, it, obj, ours in rows]

    # -- l1 ----------------------------------------------------------------------------
    l1 = 1.0 / args.C_l1
    Xs = X / 16.0
    model = FlatLogLinear(Xs, y, 10)
    t0 = time.perf_counter()
    saga = LogisticRegression(C=args.C_l1, solver="saga", l1_ratio=1.0, tol=1e-8, max_iter=100000).fit(Xs, y)
    t_saga = time.perf_counter() - t0
    f_saga = objective(model, flat(saga), l1, 0.0)
    t0 = time.perf_counter()
    ours = LogLinearClassifier(l1=l1, tol=1e-12, gtol=1e-9, max_iter=100000).fit(Xs, y)
    t_ours = time.perf_counter() - t0
    w_ours = np.concatenate([ours.coef_.T.ravel(), ours.intercept_])
    f_ours = objective(model, w_ours, l1, 0.0)
    lines += ["", f"l1 = 1/C = {l1:g}, pixels / 16", "",
              "| learner | time (s) | objective | non-zero weights |", "|---|---|---|---|",
              f"| scikit-learn saga | {t_saga:.2f} | {f_saga:.6f} | {int(np.count_nonzero(saga.coef_))} |",
              f"| spargel OWL-QN | {t_ours:.2f} | {f_ours:.6f} | {int(np.count_nonzero(ours.coef_))} |",
              "", f"relative objective difference (spargel - saga) / saga: {(f_ours - f_saga) / f_saga:+.2e}"]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
