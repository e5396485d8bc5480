"""Held-out log-likelihood experiments of Duchi, Gould & Koller (2008).

1. ``synthetic`` (Sec. 5.2, Fig. 2a): n = 60, a random precision matrix with
   50% of its off-diagonal entries non-zero (values +-U(0.5, 1), diagonal
   shifted so the smallest eigenvalue is 0.5), 30 training and 30 test
   samples, 20 replicates. l1 path (Algorithm 1 / Newton-CD, diagonal
   unpenalised) with lambda from max|S_ij| down to 1e-3, against the
   best-case Tikhonov estimate ``Sigma = S + gamma I`` (gamma chosen on the
   test set, i.e. an optimistic baseline).

2. ``gene`` (in the spirit of Sec. 5.4): the BDgraph gene-expression data (60
   individuals x 100 transcripts), standardised per fold with the training
   statistics, 5-fold cross-validation. Blocks come from a clustering of the
   training fold: average-linkage hierarchical clustering of the variables with
   distance ``1 - |corr|`` cut into ``--clusters`` groups. Block-l1 uses one
   block per pair of clusters (weight lambda * block size, the paper's choice)
   and plain l1 inside clusters; compared with plain l1 and best-case Tikhonov.

Reported: mean test log-likelihood per sample (natural log, with the
``-n/2 log 2 pi`` constant), mean over replicates / folds.

Usage::

    python bench/gmrf_loglik.py synthetic
    python bench/gmrf_loglik.py gene --clusters 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.gaussian.path import gaussian_path  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def loglik(Xte, mu, K):
    """Mean per-sample Gaussian log-likelihood of the rows of Xte."""
    n = K.shape[0]
    sign, ld = np.linalg.slogdet(K)
    if sign <= 0:
        return -np.inf
    D = Xte - mu
    quad = np.einsum("ij,jk,ik->i", D, K, D)
    return float(np.mean(0.5 * (ld - quad - n * np.log(2 * np.pi))))


def tikhonov_best(S, Xte, mu, gammas):
    best = -np.inf
    for g in gammas:
        K = np.linalg.inv(S + g * np.eye(S.shape[0]))
        best = max(best, loglik(Xte, mu, K))
    return best


def random_precision(n, density, rng):
    A = np.triu(rng.random((n, n)) < density, 1)
    V = rng.uniform(0.5, 1.0, (n, n)) * rng.choice([-1.0, 1.0], (n, n))
    K = np.where(A, V, 0.0)
    K = K + K.T
    K += np.eye(n) * (0.5 - min(0.0, np.linalg.eigvalsh(K)[0]))
    return K


def synthetic(args):
    n, m_tr, m_te = 60, 30, 30
    gammas = np.geomspace(1e-4, 1e2, 61)
    rows = []   # (replicate, lambda index, lambda, % nonzeros, test LL)
    ridge = []
    t0 = time.perf_counter()
    for rep in range(args.replicates):
        rng = np.random.default_rng(1000 + rep)
        K = random_precision(n, 0.5, rng)
        C = np.linalg.inv(K)
        X = rng.multivariate_normal(np.zeros(n), C, size=m_tr + m_te)
        Xtr, Xte = X[:m_tr], X[m_tr:]
        mu = Xtr.mean(axis=0)
        S = np.cov(Xtr.T, bias=True)
        A = np.abs(S)
        np.fill_diagonal(A, 0)
        lmax = A.max()
        lams = np.geomspace(lmax, 1e-3, args.n_lambdas)
        path = gaussian_path(S, lams, tol=args.tol, solver=args.solver)
        for k, res in enumerate(path):
            nz = 100.0 * np.count_nonzero(np.triu(res.precision, 1)) / (n * (n - 1) / 2)
            rows.append((rep, k, lams[k], nz, loglik(Xte, mu, res.precision)))
        ridge.append(tikhonov_best(S, Xte, mu, gammas))
    rows = np.array(rows)
    print(f"# synthetic (Fig. 2a): n={n}, 50% sparse truth, {m_tr} train / {m_te} test, "
          f"{args.replicates} replicates, solver={args.solver}, tol={args.tol}; "
          f"{time.perf_counter() - t0:.1f}s")
    print("| lambda index | lambda (mean over replicates) | % non-zeros (mean) | test log-lik (mean +- sd) |")
    print("|---|---|---|---|")
    ll_by_k = []
    for k in range(args.n_lambdas):
        sel = rows[rows[:, 1] == k]
        ll_by_k.append(sel[:, 4].mean())
        print(f"| {k} | {sel[:, 2].mean():.3g} | {sel[:, 3].mean():.1f} | "
              f"{sel[:, 4].mean():.2f} +- {sel[:, 4].std():.2f} |")
    kbest = int(np.argmax(ll_by_k))
    per_rep_best = [rows[rows[:, 0] == r][:, 4].max() for r in range(args.replicates)]
    print(f"\nbest l1 (same lambda index {kbest} for all replicates): {ll_by_k[kbest]:.2f}; "
          f"best l1 per replicate (oracle): {np.mean(per_rep_best):.2f}; "
          f"best-case Tikhonov (oracle gamma per replicate): {np.mean(ridge):.2f} +- {np.std(ridge):.2f}")


def read_gene():
    path = DATA / "gene_expression_bdgraph" / "geneExpression.csv"
    if not path.exists():
        raise SystemExit(f"data not found: {path} (the shared data folder sits beside the repository)")
    X = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    return X


def cluster_labels(X, k):
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    R = np.corrcoef(X.T)
    D = 1.0 - np.abs(R)
    np.fill_diagonal(D, 0.0)
    Z = linkage(squareform(D, checks=False), method="average")
    return fcluster(Z, t=k, criterion="maxclust") - 1


def gene(args):
    X = read_gene()
    m, n = X.shape
    rng = np.random.default_rng(0)
    idx = rng.permutation(m)
    folds = np.array_split(idx, args.folds)
    alphas = np.geomspace(args.alpha_max, args.alpha_max * args.alpha_ratio, args.n_lambdas)
    gammas = np.geomspace(1e-3, 1e2, 51)
    ll_l1 = np.zeros((args.folds, alphas.size))
    ll_blk = np.zeros((args.folds, alphas.size))
    nz_l1 = np.zeros_like(ll_l1)
    nz_blk = np.zeros_like(ll_l1)
    ridge = []
    t0 = time.perf_counter()
    for f, te in enumerate(folds):
        tr = np.setdiff1d(idx, te)
        mu, sd = X[tr].mean(0), X[tr].std(0)
        Xtr, Xte = (X[tr] - mu) / sd, (X[te] - mu) / sd
        S = np.cov(Xtr.T, bias=True)
        lab = cluster_labels(Xtr, args.clusters)
        pl1 = gaussian_path(S, alphas, tol=args.tol)
        pbl = gaussian_path(S, alphas, tol=args.tol, blocks=lab, max_iter=5000)
        for k in range(alphas.size):
            ll_l1[f, k] = loglik(Xte, 0.0, pl1[k].precision)
            ll_blk[f, k] = loglik(Xte, 0.0, pbl[k].precision)
            nz_l1[f, k] = 100 * np.count_nonzero(np.triu(pl1[k].precision, 1)) / (n * (n - 1) / 2)
            nz_blk[f, k] = 100 * np.count_nonzero(np.triu(pbl[k].precision, 1)) / (n * (n - 1) / 2)
        ridge.append(tikhonov_best(S, Xte, 0.0, gammas))
    print(f"# gene expression (BDgraph, {m} x {n}), {args.folds}-fold CV, {args.clusters} clusters "
          f"(average linkage on 1-|corr| of the training fold), tol={args.tol}; "
          f"{time.perf_counter() - t0:.1f}s")
    print("| alpha | l1: % non-zeros | l1: test log-lik | block-l1: % non-zeros | block-l1: test log-lik |")
    print("|---|---|---|---|---|")
    for k, a in enumerate(alphas):
        print(f"| {a:.4g} | {nz_l1[:, k].mean():.1f} | {ll_l1[:, k].mean():.2f} | "
              f"{nz_blk[:, k].mean():.1f} | {ll_blk[:, k].mean():.2f} |")
    k1, k2 = int(np.argmax(ll_l1.mean(0))), int(np.argmax(ll_blk.mean(0)))
    print(f"\nbest l1: {ll_l1.mean(0)[k1]:.2f} (alpha {alphas[k1]:.4g}, {nz_l1[:, k1].mean():.1f}% non-zeros); "
          f"best block-l1: {ll_blk.mean(0)[k2]:.2f} (alpha {alphas[k2]:.4g}, {nz_blk[:, k2].mean():.1f}% non-zeros); "
          f"best-case Tikhonov (oracle gamma per fold): {np.mean(ridge):.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="experiment", required=True)
    s = sub.add_parser("synthetic")
    s.add_argument("--replicates", type=int, default=20)
    s.add_argument("--n-lambdas", type=int, default=15)
    s.add_argument("--solver", default="projected-gradient", choices=["newton-cd", "projected-gradient"])
    s.add_argument("--tol", type=float, default=1e-6)
    g = sub.add_parser("gene")
    g.add_argument("--clusters", type=int, default=8)
    g.add_argument("--folds", type=int, default=5)
    g.add_argument("--n-lambdas", type=int, default=12)
    g.add_argument("--alpha-max", type=float, default=0.8)
    g.add_argument("--alpha-ratio", type=float, default=0.02)
    g.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args(argv)
    if args.experiment == "synthetic":
        synthetic(args)
    else:
        gene(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
