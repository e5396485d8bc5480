"""Structure learning of Ising models with a known graph: spargel against pyGMs.

Ground truth: a 10x10 grid (180 edges) and a random graph on 100 nodes with average
degree 3 (150 edges); couplings J_ij = +-U(0.3, 0.6) (spin parametrisation, random
signs), fields h_i ~ N(0, 0.1^2). Data: n = 500, 2000, 10000 samples drawn by spargel's
Gibbs sampler (8 chains, 500 burn-in sweeps, every 10th sweep kept).

Methods, each on a regularisation path, reporting edge precision / recall / F1 of the
best point of its path (the "oracle" choice, the same rule for every method) and the
time to fit that point and the whole path:

* ``spargel-l1-bp``: l1 on full 2x2 edge tables, likelihood by loopy BP (Bethe),
  OWL-QN, warm-started down the path;
* ``spargel-l1-pl``: the same with the pseudo-likelihood objective;
* ``spargel-l1-pl-adaptive`` / ``spargel-group-pl-adaptive``: ``PairwiseMRF(adaptive=True)``
  at each point (the adaptive lasso: the point's edges refitted, each penalised by
  median strength / its strength);
* ``spargel-group-bp`` / ``spargel-group-pl``: group lasso (one l2 norm per edge table)
  -- run only when ``spargel.core.penalties.GroupLasso`` and the ``fista`` solver exist;
* ``pygms``: pyGMs' neighbourhood selection ``pygms.ising.fit_logregL1`` (l1 logistic
  regression per node, scikit-learn liblinear; the OR rule), over a grid of C.

``--rank`` instead measures how well the two estimates of inactive-edge gradients
(``independent``: product of beliefs; ``clamp``: p(x_i) p(x_j | x_i) by clamped BP) rank
candidate edges against the exact gradients (junction tree) on small loopy graphs.

    python bench/mrf_structure.py [--sizes 500 2000 10000] [--graphs grid random] [--json OUT]
    python bench/mrf_structure.py --rank
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.mrf.model import PairwiseMRFModel  # noqa: E402
from spargel.mrf.graph import Graph, grid_edges  # noqa: E402
from spargel.mrf.sampling import gibbs_sample  # noqa: E402

SPIN = np.array([1.0, -1.0, -1.0, 1.0])


def true_model(kind, seed=0):
    rng = np.random.default_rng(seed)
    n = 100
    if kind == "grid":
        edges = grid_edges(10, 10)
    else:
        target = 150                                   # average degree 3
        pairs = set()
        while len(pairs) < target:
            i, j = sorted(rng.choice(n, 2, replace=False).tolist())
            pairs.add((i, j))
        edges = np.array(sorted(pairs), dtype=np.int64)
    J = rng.uniform(0.3, 0.6, len(edges)) * rng.choice([-1.0, 1.0], len(edges))
    h = rng.normal(0, 0.1, n)
    g = Graph(np.full(n, 2), edges)
    node_theta = np.stack([-h, h], axis=1).ravel()
    edge_theta = (J[:, None] * SPIN[None, :]).ravel()
    return g, node_theta, edge_theta


def f1(found, truth):
    found = {tuple(map(int, e)) for e in found}
    truth = {tuple(map(int, e)) for e in truth}
    tp = len(found & truth)
    p = tp / len(found) if found else 0.0
    r = tp / len(truth) if truth else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def lambda_max(X):
    """The smallest l1 at which the empty graph is optimal (largest edge-gradient entry)."""
    n = X.shape[1]
    P = X.mean(0)
    C = (X.T @ X) / len(X)                        # P(x_i = 1, x_j = 1)
    dev = np.abs(C - np.outer(P, P))[np.triu_indices(n, 1)]
    return len(X) * dev.max()                     # every 2x2 entry deviates by the same amount


def spargel_path(X, objective, penalty, ratios, adaptive=False):
    """The regularisation path, warm-started. ``adaptive``: at each point, also the
    second stage of ``PairwiseMRF(adaptive=True)`` (the point's edges refitted with
    per-edge weights median strength / strength, at the same l1); the point's time
    includes both stages."""
    from spargel.mrf.estimator import mrf_penalty
    from spargel.mrf.model import adaptive_edge_weights
    from spargel.solvers import get_solver

    bp = {"schedule": "sequential", "damping": 0.0, "max_iter": 300, "tol": 1e-6}
    model = PairwiseMRFModel(X, objective=objective, inference="loopy-bp", bp=bp)
    lmax = lambda_max(X)
    if penalty == "l1":
        solver = get_solver("owlqn")
    else:
        solver = get_solver("fista")
        lmax *= 2.0                                            # ||2x2 table||_2 = 2 |entry|

    def fit(m, pen, w):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solver(m, pen, w, max_iter=500, tol=1e-6, gtol=1e-8, window=5)

    w = model.initial_weights()
    out = []
    for r in ratios:
        lam = r * lmax
        t0 = time.perf_counter()
        res = fit(model, mrf_penalty(model, penalty, lam), w)
        w = res.w
        active = model.active_edges(w)
        edges, iters = model.graph.edges[active], res.n_iter
        if adaptive and len(active):
            sub = PairwiseMRFModel(X, candidate_edges=edges, objective=objective, inference="loopy-bp", bp=bp)
            weights = adaptive_edge_weights(model.edge_strength(w)[active])
            res2 = fit(sub, mrf_penalty(sub, penalty, lam, edge_weights=weights), model.subset_weights(w, active))
            edges, iters = sub.graph.edges[sub.active_edges(res2.w)], iters + res2.n_iter
        out.append({"lambda": lam, "edges": edges, "time": time.perf_counter() - t0, "iters": iters,
                    "bp_failures": model.bp_failures})
    return out


def pygms_path(X, Cs):
    from pygms.ising import fit_logregL1

    out = []
    for C in Cs:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit_logregL1(X, C=C)
        el = time.perf_counter() - t0
        L = model.L.tocoo()
        found = {(min(i, j), max(i, j)) for i, j, v in zip(L.row, L.col, L.data) if i != j and v != 0}
        out.append({"lambda": C, "edges": np.array(sorted(found)).reshape(-1, 2), "time": el})
    return out


def best_of(path, truth):
    scored = []
    for p in path:
        prec, rec, f = f1(p["edges"], truth)
        scored.append({**{k: v for k, v in p.items() if k != "edges"}, "precision": prec, "recall": rec,
                       "f1": f, "n_edges": len(p["edges"])})
    best = max(scored, key=lambda s: s["f1"])
    best["path_time"] = sum(s["time"] for s in scored)
    return best


def structure(args):
    # the same number of points (12) on both paths, each spanning a factor of ~20-250
    ratios = np.geomspace(0.6, 0.03, 12).tolist()
    Cs = np.geomspace(0.001, 0.25, 12).tolist()
    try:
        from spargel.core.penalties import GroupLasso  # noqa: F401
        from spargel.solvers import get_solver
        get_solver("fista")
        have_group = True
    except (ImportError, ValueError):
        have_group = False
        print("group lasso / fista not available in this spargel: group rows skipped", file=sys.stderr)
    rows = []
    for kind in args.graphs:
        g, nt, et = true_model(kind)
        for n in args.sizes:
            X = gibbs_sample(g, nt, et, n, burn_in=500, thin=10, n_chains=8, seed=n)
            methods = [("spargel-l1-bp", lambda: spargel_path(X, "likelihood", "l1", ratios)),
                       ("spargel-l1-pl", lambda: spargel_path(X, "pseudo", "l1", ratios))]
            if have_group:
                methods += [("spargel-group-bp", lambda: spargel_path(X, "likelihood", "group", ratios)),
                            ("spargel-group-pl", lambda: spargel_path(X, "pseudo", "group", ratios))]
            methods += [("spargel-l1-pl-adaptive", lambda: spargel_path(X, "pseudo", "l1", ratios, adaptive=True))]
            if have_group:
                methods += [("spargel-group-pl-adaptive",
                             lambda: spargel_path(X, "pseudo", "group", ratios, adaptive=True))]
            methods.append(("pygms", lambda: pygms_path(X, Cs)))
            for name, run in methods:
                if name in args.skip:
                    continue
                best = best_of(run(), g.edges)
                row = {"graph": kind, "n": n, "method": name, **best}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| graph | n | method | best F1 | precision | recall | edges | reg. at best | time at best (s) | path time (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['n']} | {r['method']} | {r['f1']:.3f} | {r['precision']:.3f} | "
              f"{r['recall']:.3f} | {r['n_edges']} | {r['lambda']:.4g} | {r['time']:.2f} | {r['path_time']:.2f} |")
    return rows


def rank(args):
    """Candidate-edge gradient estimates against exact ones on small loopy graphs."""
    from scipy.stats import spearmanr

    from spargel.mrf.exact import junction_tree, pair_marginals_by_clamping

    rows = []
    for seed in range(args.rank_trials):
        rng = np.random.default_rng(100 + seed)
        side = 4
        g_true = Graph(np.full(side * side, 2), grid_edges(side, side))
        J = rng.uniform(0.3, 0.8, g_true.n_edges) * rng.choice([-1.0, 1.0], g_true.n_edges)
        X = gibbs_sample(g_true, np.zeros(2 * side * side), (J[:, None] * SPIN).ravel(), 2000, seed=seed)
        # the current model: half of the true edges active (with a loop: the 4 edges of the
        # first square always on), weights at the truth
        res = {}
        for est in ("independent", "clamp"):
            m = PairwiseMRFModel(X, candidate_estimate=est, bp={"tol": 1e-10, "max_iter": 500})
            w = m.initial_weights()
            if est == "independent":
                square = [0, side - 1, (side - 1) * side, (side - 1) * side + 1]   # (0,1) (4,5) (0,4) (1,5)
                rest = np.setdiff1d(rng.permutation(g_true.n_edges), square)
                on = np.concatenate([square, rest[: g_true.n_edges // 2 - 4]])
            cand = {tuple(e): k for k, e in enumerate(m.graph.edges.tolist())}
            for t in on:
                k = cand[tuple(g_true.edges[t].tolist())]
                w[m.edge_param_ptr[k]:m.edge_param_ptr[k + 1]] = J[t] * SPIN
            _, grad = m.loss_grad(w)
            inactive = np.setdiff1d(np.arange(m.graph.n_edges), m.active_edges(w))
            res[est] = np.array([np.abs(grad[m.edge_param_ptr[e]:m.edge_param_ptr[e + 1]]).max() for e in inactive])
        # exact gradients of the inactive edges
        nt, etheta = m.potentials(w)
        ga = m.graph.with_active(m.active_edges(w))
        jt = junction_tree(ga, nt, etheta)
        pairs = m.graph.edges[inactive]
        exact_pairs = pair_marginals_by_clamping(
            ga, lambda ev: junction_tree(ga, nt, etheta, evidence=ev).node_beliefs, pairs, jt.node_beliefs)
        counts = m.edge_counts
        exact = np.array([np.abs(len(X) * exact_pairs[4 * q:4 * q + 4]
                                 - counts[m.graph.edge_ptr[e]:m.graph.edge_ptr[e + 1]]).max()
                          for q, e in enumerate(inactive)])
        truth_inactive = np.array([tuple(e) in {tuple(t) for t in g_true.edges.tolist()} for e in pairs.tolist()])
        top = max(1, int(truth_inactive.sum()))
        best_exact = set(np.argsort(-exact)[:top])
        for est, v in res.items():
            row = {"trial": seed, "estimate": est, "spearman_vs_exact": float(spearmanr(v, exact)[0]),
                   "top_overlap_with_exact": len(set(np.argsort(-v)[:top]) & best_exact) / top,
                   "true_edges_in_top": float(truth_inactive[np.argsort(-v)[:top]].mean())}
            rows.append(row)
            print(json.dumps(row), flush=True)
        rows.append({"trial": seed, "estimate": "exact", "spearman_vs_exact": 1.0, "top_overlap_with_exact": 1.0,
                     "true_edges_in_top": float(truth_inactive[np.argsort(-exact)[:top]].mean()),
                     "active_graph_is_forest": bool(ga.is_forest())})
        print(json.dumps(rows[-1]), flush=True)
    print()
    print("| estimate | Spearman vs exact | top-k overlap with exact | true edges among top k |")
    print("|---|---|---|---|")
    for est in ("independent", "clamp", "exact"):
        sub = [r for r in rows if r["estimate"] == est]
        print(f"| {est} | {np.mean([r['spearman_vs_exact'] for r in sub]):.3f} | "
              f"{np.mean([r['top_overlap_with_exact'] for r in sub]):.3f} | "
              f"{np.mean([r['true_edges_in_top'] for r in sub]):.3f} |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 10000])
    ap.add_argument("--graphs", nargs="+", default=["grid", "random"], choices=["grid", "random"])
    ap.add_argument("--skip", nargs="*", default=[], help="method names to leave out")
    ap.add_argument("--rank", action="store_true", help="measure candidate-edge gradient estimates")
    ap.add_argument("--rank-trials", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = rank(args) if args.rank else structure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
