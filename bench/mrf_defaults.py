"""Which inference should ``PairwiseMRF`` use by default? Edge recovery on a small
Ising model, every method against neighbourhood selection in the same run.

Ground truth: 12 binary variables, 16 edges drawn at random (seeded), couplings
J = +-U(0.4, 0.8) in the spin parametrisation, fields h ~ N(0, 0.1^2). 3000 samples
drawn *exactly* (the 4096 joint states enumerated). For each method, the best edge F1
over a grid of 24 values of l1 (geometric, 0.5% .. 100% of l1_max, the smallest l1 at
which the empty graph is optimal):

* ``default``: ``PairwiseMRF(l1=...)`` with every default (the method under test);
* ``loopy-bp``, ``exact``, ``pseudo-likelihood``: ``inference=`` that, plain and
  ``adaptive=True``;
* ``neighbourhood``: scikit-learn's l1 logistic regression of each variable on the
  others (liblinear), an edge where either regression keeps it (OR rule) or both (AND
  rule), over a grid of C (24 values, geometric);

and the guide's quick example (a chain x0 - x1 - x2 and an independent x3, l1 = 20):
the edges each method learns.

    python bench/mrf_defaults.py [--seeds 0 1 2] [--samples 3000]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spargel.mrf.estimator import PairwiseMRF  # noqa: E402
from mrf_structure import f1 as edge_scores  # noqa: E402

SPIN = np.array([1.0, -1.0, -1.0, 1.0])


def ising(seed, n=12, n_edges=16):
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < n_edges:
        i, j = sorted(rng.choice(n, 2, replace=False).tolist())
        pairs.add((i, j))
    edges = np.array(sorted(pairs))
    J = rng.uniform(0.4, 0.8, n_edges) * rng.choice([-1.0, 1.0], n_edges)
    h = rng.normal(0, 0.1, n)
    return edges, J, h


def exact_samples(edges, J, h, N, seed):
    n = len(h)
    states = ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1).astype(np.int64)
    s = 2 * states - 1
    logp = s @ h + (s[:, edges[:, 0]] * s[:, edges[:, 1]]) @ J
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return states[np.random.default_rng(seed + 1000).choice(len(p), N, p=p)]


def f1(found, truth):
    """Edge F1 of ``found`` against ``truth`` (``bench/mrf_structure.py``'s scores)."""
    return edge_scores(found, truth)[2]


def l1_max(X):
    N, n = X.shape
    best = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            for a in range(2):
                for b in range(2):
                    pij = np.mean((X[:, i] == a) & (X[:, j] == b))
                    best = max(best, abs(pij - np.mean(X[:, i] == a) * np.mean(X[:, j] == b)))
    return N * best


def spargel_best(X, truth, grid, **params):
    best, n_best, t0 = 0.0, None, time.perf_counter()
    for l1 in grid:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = PairwiseMRF(l1=float(l1), **params).fit(X)
        score = f1(m.edges_, truth)
        if score > best:
            best, n_best = score, len(m.edges_)
    return best, n_best, time.perf_counter() - t0


def neighbourhood_best(X, truth, Cs):
    from sklearn.linear_model import LogisticRegression
    n = X.shape[1]
    best = {"or": 0.0, "and": 0.0}
    t0 = time.perf_counter()
    for C in Cs:
        keep = np.zeros((n, n), bool)
        for i in range(n):
            others = np.delete(np.arange(n), i)
            with warnings.catch_warnings():             # scikit-learn 1.8 renames 'penalty'
                warnings.simplefilter("ignore")
                clf = LogisticRegression(penalty="l1", C=C, solver="liblinear").fit(2 * X[:, others] - 1, X[:, i])
            keep[i, others] = np.abs(clf.coef_[0]) > 1e-10
        for rule, mat in (("or", keep | keep.T), ("and", keep & keep.T)):
            found = [(i, j) for i in range(n) for j in range(i + 1, n) if mat[i, j]]
            best[rule] = max(best[rule], f1(found, truth))
    return best, time.perf_counter() - t0


def quick_example():
    rng = np.random.default_rng(0)
    x0 = rng.integers(0, 2, 500)
    x1 = np.where(rng.random(500) < 0.9, x0, 1 - x0)
    x2 = np.where(rng.random(500) < 0.8, x1, 1 - x1)
    x3 = rng.integers(0, 2, 500)
    return np.column_stack([x0, x1, x2, x3])


METHODS = {
    "default": {},
    "loopy-bp": {"inference": "loopy-bp"},
    "exact": {"inference": "exact"},
    "pseudo-likelihood": {"inference": "pseudo-likelihood"},
    "loopy-bp adaptive": {"inference": "loopy-bp", "adaptive": True},
    "exact adaptive": {"inference": "exact", "adaptive": True},
    "pseudo-likelihood adaptive": {"inference": "pseudo-likelihood", "adaptive": True},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    a = ap.parse_args()
    m = PairwiseMRF()
    print(f"defaults: inference={m.inference!r} adaptive={m.adaptive!r}")
    Xq = quick_example()
    for name in a.methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = PairwiseMRF(l1=20.0, **METHODS[name]).fit(Xq).edges_.tolist()
        print(f"quick example  {name:28s} edges {e}")
    for seed in a.seeds:
        edges, J, h = ising(seed)
        X = exact_samples(edges, J, h, a.samples, seed)
        lmax = l1_max(X)
        grid = lmax * np.geomspace(0.005, 1.0, 24)
        print(f"seed {seed}: {len(edges)} true edges, {a.samples} samples, l1_max {lmax:.1f}")
        for name in a.methods:
            best, n_best, t = spargel_best(X, edges, grid, **METHODS[name])
            print(f"  {name:28s} best F1 {best:.3f} ({n_best} edges)  {t:6.1f} s", flush=True)
        nb, t = neighbourhood_best(X, edges, np.geomspace(1e-3, 10, 24))
        print(f"  {'neighbourhood (OR)':28s} best F1 {nb['or']:.3f}  {t:6.1f} s")
        print(f"  {'neighbourhood (AND)':28s} best F1 {nb['and']:.3f}", flush=True)


if __name__ == "__main__":
    main()
