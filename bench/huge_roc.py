"""ROC of a path against the true graph: spargel's ``path_roc`` against R's ``huge.roc``.

For each graph shape (``--graphs``) the data come from
:func:`spargel.gaussian.make_graph_data` (huge.generator's constructions), written once
to a binary file with the true graph. R then runs ``huge(x, method = m, nlambda,
lambda.min.ratio)`` for glasso and mb and ``huge.roc(path, theta)`` on its own path,
and writes the lambdas, the path's edges and huge.roc's AUC, TPR and FPR. In the same
run spargel computes

* ``path_roc(R's path, theta)``: the same path, so the AUC must agree to rounding
  (this checks the definition: trapezoid over the path's points sorted by FPR, no
  (0, 0) or (1, 1) added);
* ``path_roc(spargel's path, theta)`` on the same data and lambdas:
  ``SparseGaussianMRFSelect(alphas=lambdas)`` (huge's glasso: standardised data,
  penalised diagonal) and ``NeighbourhoodSelection(alphas=lambdas)`` (huge's mb, or
  rule); the AUCs should agree within 0.01.

    python bench/huge_roc.py --p 100 --n 200 --graphs hub cluster random band scale-free
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table  # noqa: E402

_R = r"""
args <- commandArgs(TRUE)
n <- as.integer(args[2]); p <- as.integer(args[3])
nlambda <- as.integer(args[5]); ratio <- as.numeric(args[6]); method <- args[7]
suppressMessages({library(huge); library(Matrix)})
x <- matrix(readBin(args[1], "double", n * p), nrow = n, ncol = p, byrow = TRUE)
e <- matrix(readBin(args[4], "integer", 1e8, size = 4), ncol = 2, byrow = TRUE) + 1L
theta <- sparseMatrix(i = c(e[, 1], e[, 2]), j = c(e[, 2], e[, 1]), x = 1, dims = c(p, p))
fit <- huge(x, method = method, nlambda = nlambda, lambda.min.ratio = ratio, verbose = FALSE)
pdf(NULL)
r <- huge.roc(fit$path, theta, verbose = FALSE)
con <- file(args[8], "w")
for (k in seq_along(fit$path)) {
  up <- which(as.matrix(fit$path[[k]]) != 0 & upper.tri(matrix(0, p, p)), arr.ind = TRUE)
  if (nrow(up) > 0) writeLines(sprintf("%d %d %d", k - 1L, up[, 1] - 1L, up[, 2] - 1L), con)
}
close(con)
cat(sprintf('{"lambda": [%s], "auc": %.15g, "tp": [%s], "fp": [%s]}\n',
            paste(sprintf("%.17g", fit$lambda), collapse = ", "), r$AUC,
            paste(sprintf("%.17g", r$tp), collapse = ", "),
            paste(sprintf("%.17g", r$fp), collapse = ", ")))
"""


def run_r(tmp, data, edges, n, p, nlambda, ratio, method):
    script = Path(tmp) / "roc.R"
    script.write_text(_R)
    out = Path(tmp) / f"path_{method}.txt"
    got = subprocess.run(["Rscript", str(script), str(data), str(n), str(p), str(edges),
                          str(nlambda), str(ratio), method, str(out)],
                         capture_output=True, text=True, timeout=1800)
    if got.returncode != 0:
        raise RuntimeError(f"R failed: {got.stderr.strip()[-400:]}")
    res = json.loads(got.stdout.strip().splitlines()[-1])
    import scipy.sparse as sp

    rows = np.loadtxt(out, dtype=np.int64, ndmin=2) if out.stat().st_size else np.zeros((0, 3), int)
    path = []
    for k in range(len(res["lambda"])):
        sel = rows[rows[:, 0] == k]
        A = sp.csr_matrix((np.ones(len(sel), bool), (sel[:, 1], sel[:, 2])), shape=(p, p))
        path.append((A + A.T).tocsr())
    res["path"] = path
    return res


def main():
    import warnings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=100)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--graphs", nargs="+", default=["hub", "cluster", "random", "band",
                                                    "scale-free"])
    ap.add_argument("--methods", nargs="+", default=["glasso", "mb"])
    ap.add_argument("--nlambda", type=int, default=10)
    ap.add_argument("--lambda-min-ratio", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if shutil.which("Rscript") is None:
        sys.exit("Rscript is not installed: this benchmark compares with R's huge")

    import spargel
    from spargel.gaussian.roc import path_roc

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for graph in args.graphs:
            d = spargel.make_graph_data(args.n, args.p, graph, random_state=args.seed)
            data, edges = Path(tmp) / "x.bin", Path(tmp) / "e.bin"
            d.data.tofile(data)
            d.edges.astype(np.int32).tofile(edges)
            for method in args.methods:
                r = run_r(tmp, data, edges, args.n, args.p, args.nlambda,
                          args.lambda_min_ratio, method)
                lam = np.asarray(r["lambda"])
                same = path_roc(r["path"], d)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if method == "glasso":
                        est = spargel.SparseGaussianMRFSelect("ebic", alphas=list(lam)).fit(d.data)
                    else:
                        est = spargel.NeighbourhoodSelection(alphas=list(lam)).fit(d.data)
                ours = path_roc(est, d)
                order = np.argsort(same.fpr, kind="stable")     # huge.roc's order
                edges_r = [int(A.nnz // 2) for A in r["path"]]
                edges_s = [int(e) for e in ours.n_edges]
                row = dict(graph=graph, method=method, p=args.p, n=args.n,
                           true_edges=d.n_edges, auc_huge=r["auc"], auc_same_path=same.auc,
                           diff_same=abs(same.auc - r["auc"]),
                           auc_spargel=ours.auc, diff=abs(ours.auc - r["auc"]),
                           tpr_fpr_equal=bool(np.allclose(same.tpr[order], r["tp"]) and
                                              np.allclose(same.fpr[order], r["fp"])),
                           edges_huge=edges_r, edges_spargel=edges_s)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(markdown_table(rows, [("graph", "graph", None), ("method", "method", None),
                                ("true_edges", "true edges", None),
                                ("auc_huge", "huge.roc AUC", "{:.4f}"),
                                ("auc_same_path", "path_roc, huge's path", "{:.4f}"),
                                ("diff_same", "|difference|", "{:.1e}"),
                                ("auc_spargel", "path_roc, spargel's path", "{:.4f}"),
                                ("diff", "|difference|", "{:.1e}"),
                                ("tpr_fpr_equal", "TPR/FPR equal", None)]))
    worst = max(r["diff"] for r in rows)
    print(f"largest AUC difference, spargel's path against huge.roc: {worst:.4g}")


if __name__ == "__main__":
    main()
