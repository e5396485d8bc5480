"""Table 2 of Jebara & Choromanska (2012), on the data we have: test latent conditional
log-likelihood of a mixture of m Gaussian-gated logistic regressions per class
(spargel.LatentLogLinearClassifier) at convergence, for the bound majoriser and the
baselines, from the same random starts; plus the paper's toy (2 components per class
fitted to data made of 8 Gaussians).

Data: UCI ionosphere, bupa (the 'selector' field as the class), hepatitis (missing
values -> the training rows' column means, plus a 0/1 'was missing' column for each
feature that has missing values), wine (scikit-learn's copy), SRBCT (its own train /
test split); the others split 80 / 20 (stratified, seed 0). Features standardised with
the training rows' statistics. m in {1, 2, 3, 4} chosen per data set by 3-fold
cross-validation of the held-out log-likelihood on the training rows (with L-BFGS, a
neutral peer). A small l2 (``--l2``, default 0.1; the paper's lambda = 0 leaves SRBCT,
with more weights than samples, without a finite optimum) for every solver except EM,
which fits the generative mixture (no penalty).

Per seed, every solver starts from the same weights (N(0, 0.1^2)); the table reports
the mean and spread (standard deviation) over the seeds of the summed test
log-likelihood, and the training objective reached.

    python bench/latent_table2.py                 # all sets, 5 seeds
    python bench/latent_table2.py --only wine,bupa --seeds 3
"""

import argparse
import json
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import markdown_table  # noqa: E402
from bound_table1 import impute, load_bupa, load_hepatitis, load_ionosphere, load_srbct, standardise  # noqa: E402

SOLVERS = ["bound", "em", "lbfgs", "newton", "cg", "sd"]
TIE = 1e-3        # "tied": within 0.1% of the best other solver's mean test log-likelihood
NAMES = {"bound": "Bound", "em": "EM (generative)", "lbfgs": "L-BFGS", "newton": "Newton (trust-region CG)",
         "cg": "CG", "sd": "SD"}


def split(X, y, seed=0, test=0.2):
    rng = np.random.default_rng(seed)
    te = np.zeros(len(y), bool)
    for k in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == k))
        te[idx[:max(1, int(round(test * len(idx))))]] = True
    return X[~te], y[~te], X[te], y[te]


def load(name):
    if name == "srbct":
        return load_srbct()
    if name == "wine":
        from sklearn.datasets import load_wine
        X, y = load_wine(return_X_y=True)
    elif name == "ionosphere":
        X, y = load_ionosphere()
    elif name == "bupa":
        X, y = load_bupa()
    elif name == "hepatitis":
        X, y = load_hepatitis()
    Xtr, ytr, Xte, yte = split(X, y)
    if name == "hepatitis":
        Xtr, Xte = impute(Xtr, Xtr), impute(Xte, Xtr)
    return standardise(Xtr), ytr, standardise(Xte, Xtr), yte


def fit(solver, m, X, y, seed, l2, max_iter=None):
    """One fit from the seed's start, to tight tolerances (objective change 1e-14, scaled
    gradient 1e-9): the table compares solutions at convergence, and looser stops leave
    solvers at different points of flat optima (on SRBCT the test log-likelihood of the
    same objective value to 8 digits spread from -4.03 to -4.07). The bound runs with
    adaptive over-relaxation (the same majoriser, monotone, with longer steps): the plain
    bound needs more than 20,000 iterations to converge on ionosphere."""
    from spargel import LatentLogLinearClassifier
    clf = LatentLogLinearClassifier(n_components=m, solver=solver, l2=0.0 if solver == "em" else l2, n_init=1,
                                    random_state=seed, init_scale=0.1, max_iter=max_iter, tol=1e-14, gtol=1e-9,
                                    solver_options={"overrelax": True} if solver == "bound" else None)
    t = time.perf_counter()
    clf.fit(X, y)
    return clf, time.perf_counter() - t


def choose_m(X, y, l2, folds=3, seeds=(0, 1)):
    rng = np.random.default_rng(1)
    fold = np.empty(len(y), dtype=int)
    for k in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == k))
        fold[idx] = np.arange(len(idx)) % folds
    scores = {}
    for m in (1, 2, 3, 4):
        total = 0.0
        for f in range(folds):
            best = None
            for s in seeds:
                clf, _ = fit("lbfgs", m, X[fold != f], y[fold != f], s, l2, max_iter=2000)
                if best is None or clf.objective_ < best.objective_:
                    best = clf
            total += best.log_likelihood(X[fold == f], y[fold == f])
        scores[m] = total / len(y)
    return max(scores, key=scores.get), scores


def toy(seed=0):
    """Two classes of four Gaussian blobs each (8 in all, sd 0.4). Class 0: a large blob
    at (-4, 0), a small one at (-2, 0) and two large ones at (2, +-6); class 1 the mirror
    image. Two components per class cannot model each class's four blobs, and the
    generative fit spends them on the large blobs' density instead of the boundary."""
    rng = np.random.default_rng(seed)
    blobs = [((-4, 0), 0, 100), ((-2, 0), 0, 15), ((2, 6), 0, 100), ((2, -6), 0, 100),
             ((4, 0), 1, 100), ((2, 0), 1, 15), ((-2, 6), 1, 100), ((-2, -6), 1, 100)]
    X, y = [], []
    for (cx, cy), k, n in blobs:
        X.append(rng.normal(size=(n, 2)) * 0.4 + (cx, cy))
        y += [k] * n
    return np.vstack(X), np.array(y)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="ionosphere,bupa,hepatitis,wine,srbct")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--l2", type=float, default=0.1)
    ap.add_argument("--max-iter", type=int, default=30000, help="iteration cap of every solver (EM included)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows, info = [], {}
    for name in args.only.split(","):
        Xtr, ytr, Xte, yte = load(name)
        m, cv = choose_m(Xtr, ytr, args.l2)
        info[name] = {"train": len(ytr), "test": len(yte), "features": Xtr.shape[1], "m": m,
                      "cv": {k: round(v, 4) for k, v in cv.items()}}
        print(f"[{name}] {info[name]}", file=sys.stderr)
        for solver in SOLVERS:
            lls, objs, times, iters, capped = [], [], [], [], 0
            for seed in range(args.seeds):
                clf, t = fit(solver, m, Xtr, ytr, seed, args.l2, args.max_iter)
                lls.append(clf.log_likelihood(Xte, yte))
                objs.append(clf.objective_)
                times.append(t)
                iters.append(clf.n_iter_)
                capped += clf.n_iter_ >= args.max_iter
            rows.append({"data": name, "m": m, "solver": NAMES[solver], "test_ll": float(np.mean(lls)),
                         "spread": float(np.std(lls)), "per_sample": float(np.mean(lls)) / len(yte),
                         "train_obj": float(np.mean(objs)), "iters": float(np.mean(iters)),
                         "seconds": float(np.mean(times)), "capped": capped, "all": lls})
            r = rows[-1]
            print(f"[{name}] {solver}: test ll {r['test_ll']:.3f} +- {r['spread']:.3f}, train objective "
                  f"{r['train_obj']:.4f}, {r['iters']:.0f} it, {r['seconds']:.2f} s", file=sys.stderr)
    # the toy: generative EM against the bound, m = 2
    X, y = toy(0)
    Xt, yt = toy(1)
    for solver in ("em", "bound"):
        lls, accs = [], []
        for seed in range(args.seeds):
            clf, _ = fit(solver, 2, X, y, seed, 0.0 if solver == "em" else args.l2, args.max_iter)
            lls.append(clf.log_likelihood(Xt, yt))
            accs.append(clf.score(Xt, yt))
        rows.append({"data": "toy (8 Gaussians)", "m": 2, "solver": NAMES[solver], "test_ll": float(np.mean(lls)),
                     "spread": float(np.std(lls)), "per_sample": float(np.mean(lls)) / len(yt),
                     "accuracy": float(np.mean(accs)), "all": lls})
        print(f"[toy] {solver}: test ll {np.mean(lls):.3f}, accuracy {np.mean(accs):.3f}", file=sys.stderr)
    cols = [("data", "data", None), ("m", "m", "{}"), ("solver", "solver", None),
            ("test_ll", "test log-likelihood (mean)", "{:.3f}"), ("spread", "std over seeds", "{:.3f}"),
            ("train_obj", "train objective", "{:.4f}"), ("iters", "iterations", "{:.0f}"),
            ("seconds", "seconds", "{:.2f}"), ("capped", "runs stopped by the cap", "{}"), ("accuracy", "test accuracy", "{:.3f}")]
    print(markdown_table(rows, cols))
    print()
    wins = {}
    for name in info:
        r = [x for x in rows if x["data"] == name]
        bound = next(x["test_ll"] for x in r if x["solver"] == "Bound")
        others = max(x["test_ll"] for x in r if x["solver"] != "Bound")
        wins[name] = bound >= others - TIE * max(1.0, abs(others))
        print(f"- {name}: m={info[name]['m']} (CV {info[name]['cv']}); bound >= every other solver (or tied): "
              f"{wins[name]}")
    print(f"- bound best or tied (within {TIE:g} relative) on {sum(wins.values())} of {len(wins)} sets")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "info": info}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
