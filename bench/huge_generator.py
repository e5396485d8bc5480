"""spargel's ``make_graph_data`` against R's ``huge.generator``, in the same run.

For each graph R draws ``huge.generator(d = p, graph, g)`` with ``--seeds`` seeds and
writes the adjacency ``theta``, the precision ``omega`` and the covariance ``sigma``.
spargel then

* builds the precision and covariance of R's own ``theta``
  (:func:`spargel.gaussian.generators.graph_model`): they must equal ``omega`` and
  ``sigma`` to rounding, for every graph;
* draws its own graph with the same parameters (:func:`make_graph_data`): for the
  deterministic graphs (band, hub) it must be R's ``theta`` itself; for the random
  ones (cluster, random, scale-free) the mean edge count over the seeds is compared
  with R's and with the expected count.

    python bench/huge_generator.py --p 100 --seeds 10
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
p <- as.integer(args[1]); graph <- args[2]; g <- as.integer(args[3]); seeds <- as.integer(args[4])
suppressMessages(library(huge))
for (s in seq_len(seeds)) {
  set.seed(s)
  L <- if (g > 0) huge.generator(n = 5, d = p, graph = graph, g = g, verbose = FALSE) else
    huge.generator(n = 5, d = p, graph = graph, verbose = FALSE)
  for (what in c("theta", "omega", "sigma"))
    writeBin(as.double(as.matrix(L[[what]])), file.path(args[5], sprintf("%s_%d.bin", what, s)))
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    if shutil.which("Rscript") is None:
        sys.exit("Rscript is not installed: this benchmark compares with R's huge")
    import scipy.sparse as sp

    from spargel.gaussian.generators import _groups, graph_model, make_graph, make_graph_data

    p = args.p
    cases = [("band", 1), ("band", 3), ("hub", 0), ("hub", 7), ("cluster", 0), ("cluster", 4),
             ("random", 0), ("scale-free", 0)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "gen.R"
        script.write_text(_R)
        for graph, g in cases:
            got = subprocess.run(["Rscript", str(script), str(p), graph, str(g), str(args.seeds),
                                  tmp], capture_output=True, text=True, timeout=1800)
            if got.returncode != 0:
                raise RuntimeError(got.stderr.strip()[-400:])
            kw = {"g": g} if g else {}
            omega_diff = sigma_diff = 0.0
            same_graph = True
            r_edges, s_edges = [], []
            for s in range(1, args.seeds + 1):
                read = lambda w: np.fromfile(Path(tmp) / f"{w}_{s}.bin").reshape(p, p).T  # noqa: E731
                theta, omega, sigma = read("theta"), read("omega"), read("sigma")
                K, C = graph_model(sp.csr_matrix(theta))
                omega_diff = max(omega_diff, float(np.max(np.abs(K - omega))))
                sigma_diff = max(sigma_diff, float(np.max(np.abs(C - sigma))))
                d = make_graph_data(5, p, graph, random_state=s, **kw)
                if graph in ("band", "hub"):
                    same_graph &= bool(np.array_equal(d.graph.toarray(), theta))
                r_edges.append(theta.sum() / 2)
                s_edges.append(d.n_edges)
            params = make_graph(p, graph, **kw)[1]
            if graph == "cluster":
                sizes = np.diff(_groups(p, params["g"]))
                expected = float(np.sum(sizes * (sizes - 1) / 2) * params["prob"])
            elif graph == "random":
                expected = p * (p - 1) / 2 * params["prob"]
            elif graph == "band":
                expected = (2 * p - 1 - params["g"]) * params["g"] / 2
            elif graph == "hub":
                expected = p - params["g"]
            else:
                expected = p - 1
            row = dict(graph=graph, g=params["g"], prob=params["prob"], p=p,
                       omega=omega_diff, sigma=sigma_diff,
                       same_graph=same_graph if graph in ("band", "hub") else None,
                       edges_r=float(np.mean(r_edges)), edges_spargel=float(np.mean(s_edges)),
                       expected=expected)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(markdown_table(rows, [("graph", "graph", None), ("g", "g", None),
                                ("prob", "prob", "{:.3g}"),
                                ("omega", "max |K - omega|", "{:.1e}"),
                                ("sigma", "max |Sigma - sigma|", "{:.1e}"),
                                ("same_graph", "same theta", None),
                                ("edges_r", "huge's mean edges", "{:.1f}"),
                                ("edges_spargel", "spargel's mean edges", "{:.1f}"),
                                ("expected", "expected", "{:.1f}")]))


if __name__ == "__main__":
    main()
