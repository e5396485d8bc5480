"""Choosing a pairwise MRF's graph from data: PairwiseMRFSelect (EBIC, StARS, CV),
IsingFit's procedure, the bootstrap, and the checks against R and pgmpy.

Ground truth: 20 binary variables, 20 edges drawn at random (seeded), couplings
J = +-U(0.4, 0.8) in the spin parametrisation, fields U(-0.3, 0.3); samples by spargel's
Gibbs sampler (8 chains, 500 sweeps of burn-in, every 10th sweep kept).

    python bench/mrf_select.py select      # F1 of EBIC (plain and adaptive), StARS, CV, IsingFit
    python bench/mrf_select.py bootstrap   # time of 100 bootstraps (IsingFit and EBIC selection)
    python bench/mrf_select.py wide        # IsingFit on 2,939 binary variables x 444 samples
    python bench/mrf_select.py r           # IsingFit vs bench/isingfit_rule.R (needs R + glmnet)
    python bench/mrf_select.py r-wide      # the same on 100 of the wide data's regressions
    python bench/mrf_select.py pgmpy       # pgmpy's exact marginals vs spargel's (needs pgmpy)
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import spargel  # noqa: E402
from spargel.mrf.graph import Graph  # noqa: E402
from spargel.mrf.sampling import gibbs_sample  # noqa: E402

HERE = Path(__file__).resolve().parent


def ising(p=20, n_edges=20, seed=0, lo=0.4, hi=0.8, edges=None):
    rng = np.random.default_rng(seed)
    if edges is None:
        pairs = [(i, j) for i in range(p) for j in range(i + 1, p)]
        edges = np.array(sorted(pairs[k] for k in rng.choice(len(pairs), n_edges, replace=False)))
    w = rng.uniform(lo, hi, len(edges)) * rng.choice([-1, 1], len(edges))
    h = rng.uniform(-0.3, 0.3, p)
    return edges, w, h


def sample(edges, w, h, n, seed=0, burn_in=500, thin=10, chains=8):
    g = Graph(np.full(len(h), 2), edges)
    return gibbs_sample(g, np.column_stack([-h, h]).ravel(), np.concatenate([[x, -x, -x, x] for x in w]), n,
                        burn_in=burn_in, thin=thin, n_chains=chains, seed=seed)


def scores(truth, found):
    t, f = set(map(tuple, np.asarray(truth).tolist())), set(map(tuple, np.asarray(found).tolist()))
    tp = len(t & f)
    return tp / max(len(f), 1), tp / len(t), 2 * tp / (len(t) + len(f))


def select(args):
    print("| n | graph | EBIC | EBIC, adaptive | StARS | CV | IsingFit (AND) |")
    print("|---|---|---|---|---|---|---|")
    for n in args.samples:
        for seed in args.seeds:
            edges, w, h = ising(seed=seed)
            X = sample(edges, w, h, n, seed=seed)
            row = []
            for make in (lambda: spargel.PairwiseMRFSelect("ebic"),
                         lambda: spargel.PairwiseMRFSelect("ebic", estimator=spargel.PairwiseMRF(adaptive=True)),
                         lambda: spargel.PairwiseMRFSelect("stars", random_state=0, n_jobs=args.jobs),
                         lambda: spargel.PairwiseMRFSelect("cv", random_state=0, n_jobs=args.jobs),
                         lambda: spargel.IsingFit()):
                t = time.perf_counter()
                est = make().fit(X)
                row.append(f"{scores(edges, est.edges_)[2]:.3f} ({time.perf_counter() - t:.1f} s)")
            print(f"| {n} | {seed} | " + " | ".join(row) + " |", flush=True)


def bootstrap(args):
    edges, w, h = ising(seed=0)
    X = sample(edges, w, h, 1000, seed=0)
    for name, est in (("IsingFit", spargel.IsingFit()),
                      ("PairwiseMRFSelect('ebic')", spargel.PairwiseMRFSelect("ebic"))):
        est.fit(X)                                           # compiled before the clock starts
        t = time.perf_counter()
        st = spargel.edge_stability(est, X, n_boot=args.n_boot, random_state=0, n_jobs=args.jobs)
        el = time.perf_counter() - t
        on = st.frequency[edges[:, 0], edges[:, 1]]
        print(f"{name}: {args.n_boot} bootstraps on {args.jobs} thread(s) {el:.1f} s; true edges' inclusion "
              f"frequency min {on.min():.2f} median {np.median(on):.2f}", flush=True)


def wide_data():
    p, n = 2939, 444
    rng = np.random.default_rng(7)
    E = set()
    while len(E) < p:                                       # average degree 2
        i, j = sorted(rng.integers(0, p, 2))
        if i != j:
            E.add((int(i), int(j)))
    edges = np.array(sorted(E))
    edges, w, h = ising(p=p, seed=7, lo=0.6, hi=1.0, edges=edges)
    X = sample(edges, w, h, n, seed=7, burn_in=1000, thin=20, chains=4)
    return edges, X


def wide(args):
    edges, X = wide_data()
    n, p = X.shape
    t = time.perf_counter()
    fit = spargel.IsingFit(n_jobs=args.jobs).fit(X)
    el = time.perf_counter() - t
    P, R, F = scores(edges, fit.edges_)
    print(f"IsingFit on {p} variables x {n} samples, {args.jobs} thread(s): {el:.1f} s, {len(fit.edges_)} edges "
          f"(true {len(edges)}), precision {P:.3f} recall {R:.3f} F1 {F:.3f}")


def against_r(args):
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.samples:
            for seed in args.seeds:
                edges, w, h = ising(seed=seed)
                X = sample(edges, w, h, n, seed=seed)
                data, out = os.path.join(tmp, "x.csv"), os.path.join(tmp, "edges.csv")
                np.savetxt(data, X, fmt="%d", delimiter=",")
                subprocess.run(["Rscript", str(HERE / "isingfit_rule.R"), data, out], check=True,
                               capture_output=True)
                R = np.genfromtxt(out, delimiter=",", skip_header=1, ndmin=2)
                thr = np.genfromtxt(out + ".thr.csv", delimiter=",", skip_header=1)
                fit = spargel.IsingFit().fit(X)
                r_set = {(int(a), int(b)) for a, b in R[:, :2]}
                s_set = set(map(tuple, fit.edges_.tolist()))
                common = sorted(r_set & s_set)
                dw = max((abs(fit.weights_[a, b] - v) for (a, b), v in
                          zip(map(tuple, R[:, :2].astype(int)), R[:, 2]) if (a, b) in s_set), default=np.nan)
                print(f"n={n} graph {seed}: R {len(r_set)} edges, spargel {len(s_set)}, common {len(common)}; "
                      f"max |weight difference| {dw:.2g}, max |threshold difference| "
                      f"{np.abs(fit.thresholds_ - thr).max():.2g}", flush=True)


def against_r_wide(args):
    """100 of the wide data's regressions (every 29th variable) in R and in spargel."""
    from spargel.mrf.nodewise import nodewise_logistic
    edges, X = wide_data()
    nodes = list(range(0, X.shape[1], 29))[:100]
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "x.csv"), os.path.join(tmp, "coef.csv")
        np.savetxt(data, X, fmt="%d", delimiter=",")
        t = time.perf_counter()
        r = subprocess.run(["Rscript", str(HERE / "isingfit_rule.R"), data, out, "0.25", ",".join(map(str, nodes))],
                           check=True, capture_output=True, text=True).stdout.strip()
        r_time = time.perf_counter() - t
        R = np.genfromtxt(out, delimiter=",", skip_header=1, ndmin=2)
    t = time.perf_counter()
    B = nodewise_logistic(X, nodes=nodes)[0]
    s_time = time.perf_counter() - t
    same, worst = 0, 0.0
    for i in nodes:
        rows = R[R[:, 0] == i] if R.size else np.zeros((0, 3))
        if set(rows[:, 1].astype(int).tolist()) == set(np.flatnonzero(B[i]).tolist()):
            same += 1
            if len(rows):
                worst = max(worst, float(np.abs(B[i, rows[:, 1].astype(int)] - rows[:, 2]).max()))
    print(f"{same} of {len(nodes)} regressions select the same predictors in R and spargel; their coefficients "
          f"agree to {worst:.2g}. R {r_time:.1f} s ({r}), spargel {s_time:.1f} s (one thread)")


def against_pgmpy(args):
    from pgmpy.inference import VariableElimination
    edges, w, h = ising(seed=0)
    X = sample(edges, w, h, 2000, seed=0)
    rng = np.random.default_rng(3)
    X3 = rng.integers(0, 3, (1500, 8))
    for a, b in [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7), (3, 4)]:
        X3[:, b] = np.where(rng.random(1500) < 0.6, X3[:, a], X3[:, b])
    for name, m in (("20 binary variables, EBIC-selected", spargel.PairwiseMRFSelect("ebic").fit(X).best_estimator_),
                    ("20 binary variables, IsingFit", spargel.IsingFit().fit(X).model_),
                    ("8 three-state variables, l1 = 15", spargel.PairwiseMRF(l1=15.0).fit(X3))):
        p = m.n_features_in_
        ve = VariableElimination(m.to_pgmpy())
        worst = 0.0
        for evidence in ({}, {"x0": 1}):
            row = np.full((1, p), -1)
            for v, s in evidence.items():
                row[0, int(v[1:])] = s
            ours = m.predict_marginals(row)[0]
            for i in range(p):
                if f"x{i}" in evidence:
                    continue
                q = ve.query([f"x{i}"], evidence=evidence, show_progress=False)
                v = q.values / q.values.sum()            # pgmpy 1.x returns them unnormalised
                worst = max(worst, float(np.abs(v - ours[i, :len(v)]).max()))
        print(f"{name}: {len(m.edges_)} edges; max |pgmpy - spargel| over the node marginals "
              f"(nothing observed, and x0 = 1): {worst:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["select", "bootstrap", "wide", "r", "r-wide", "pgmpy"])
    ap.add_argument("--samples", type=int, nargs="+", default=[1000, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    {"select": select, "bootstrap": bootstrap, "wide": wide, "r": against_r, "r-wide": against_r_wide,
     "pgmpy": against_pgmpy}[args.what](args)


if __name__ == "__main__":
    main()
