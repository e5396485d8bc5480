"""Loopy BP on a 100x100 grid: time per sweep of spargel against pgmax (JAX, CPU).

Same graph (4-neighbour grid, 10,000 variables, 19,800 edges), same random
log-potentials (unary N(0, 1), pairwise N(0, s^2) per table entry), 2 and 8 states.
Both run the parallel (flooding) schedule with damping 0.5 for a fixed number of sweeps
(per-sweep time = median over repeats / sweeps; wall clock, and CPU time of the process
in parentheses -- pgmax (XLA) uses every core, spargel's BP one); spargel's sequential
schedule is timed too. Ratios are wall-clock spargel / pgmax. Then both run to convergence and their marginals are compared (max abs difference,
goal <= 1e-6).

pgmpy's belief propagation is exact inference on a junction tree (cluster graph of the
triangulated model); on a 100x100 grid its cliques have ~100 variables, so it does not
apply here and is not run.

    python bench/loopy_bp.py [--sweeps 50] [--repeats 5] [--states 2 8] [--json OUT]
"""

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spargel.mrf.bp import loopy_bp  # noqa: E402
from spargel.mrf.graph import Graph, grid_edges  # noqa: E402


def problem(side, k, scale, seed=0):
    rng = np.random.default_rng(seed)
    g = Graph(np.full(side * side, k), grid_edges(side, side))
    return g, rng.normal(size=g.n_node_values), scale * rng.normal(size=g.n_edge_values)


def spargel_marginals(g, nt, et, k):
    r = loopy_bp(g, nt, et, schedule="parallel", damping=0.5, tol=1e-10, max_iter=5000)
    return r.node_beliefs.reshape(-1, k), r


def time_spargel(g, nt, et, sweeps, repeats, schedule):
    loopy_bp(g, nt, et, schedule=schedule, damping=0.5, tol=0.0, max_iter=2, warn=False)   # compile
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        loopy_bp(g, nt, et, schedule=schedule, damping=0.5, tol=0.0, max_iter=sweeps, warn=False)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times) / sweeps, statistics.median(cpu) / sweeps


def pgmax_setup(g, nt, et, side, k):
    from pgmax import fgraph, fgroup, infer, vgroup

    variables = vgroup.NDVarArray(num_states=k, shape=(side, side))
    fg = fgraph.FactorGraph(variable_groups=variables)
    pairs = [[variables[int(i) // side, int(i) % side], variables[int(j) // side, int(j) % side]]
             for i, j in g.edges]
    fg.add_factors(fgroup.PairwiseFactorGroup(variables_for_factors=pairs,
                                              log_potential_matrix=et.reshape(-1, k, k)))
    bp = infer.build_inferer(fg.bp_state, backend="bp")
    arrays = bp.init(evidence_updates={variables: nt.reshape(side, side, k)})
    return bp, arrays, variables, infer


def time_pgmax(bp, arrays, sweeps, repeats):
    import jax

    out = bp.run(arrays, num_iters=sweeps, damping=0.5, temperature=1.0)           # compile
    jax.block_until_ready(out.ftov_msgs)
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = bp.run(arrays, num_iters=sweeps, damping=0.5, temperature=1.0)
        jax.block_until_ready(out.ftov_msgs)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times) / sweeps, statistics.median(cpu) / sweeps


def pgmax_marginals(bp, arrays, variables, infer, k, iters):
    out = bp.run(arrays, num_iters=iters, damping=0.5, temperature=1.0)
    marg = infer.get_marginals(bp.get_beliefs(out))[variables]
    return np.asarray(marg).reshape(-1, k)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=100)
    ap.add_argument("--states", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--sweeps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for k in args.states:
        scale = 0.5 if k == 2 else 0.3
        g, nt, et = problem(args.side, k, scale)
        row = {"states": k, "variables": g.n_nodes, "edges": g.n_edges}
        wall, cpu = time_spargel(g, nt, et, args.sweeps, args.repeats, "parallel")
        row["spargel_parallel_ms"], row["spargel_parallel_cpu_ms"] = 1e3 * wall, 1e3 * cpu
        wall, cpu = time_spargel(g, nt, et, args.sweeps, args.repeats, "sequential")
        row["spargel_sequential_ms"], row["spargel_sequential_cpu_ms"] = 1e3 * wall, 1e3 * cpu
        ours, res = spargel_marginals(g, nt, et, k)
        row["spargel_sweeps_to_1e-10"] = res.n_iter
        try:
            bp, arrays, variables, infer = pgmax_setup(g, nt, et, args.side, k)
        except ImportError:
            print("pgmax not installed (pip install pgmax): peer skipped", file=sys.stderr)
        else:
            wall, cpu = time_pgmax(bp, arrays, args.sweeps, args.repeats)
            row["pgmax_ms"], row["pgmax_cpu_ms"] = 1e3 * wall, 1e3 * cpu
            theirs = pgmax_marginals(bp, arrays, variables, infer, k, max(2 * res.n_iter, 200))
            row["max_abs_marginal_diff"] = float(np.abs(theirs - ours).max())
            row["ratio_parallel"] = row["spargel_parallel_ms"] / row["pgmax_ms"]
            row["ratio_sequential"] = row["spargel_sequential_ms"] / row["pgmax_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    nan = float("nan")
    print("| states | spargel parallel ms/sweep (CPU ms) | spargel sequential ms/sweep (CPU ms) | "
          "pgmax ms/sweep (CPU ms) | ratio parallel | ratio sequential | max marginal diff |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['states']} | {r['spargel_parallel_ms']:.2f} ({r['spargel_parallel_cpu_ms']:.2f}) | "
              f"{r['spargel_sequential_ms']:.2f} ({r['spargel_sequential_cpu_ms']:.2f}) | "
              f"{r.get('pgmax_ms', nan):.2f} ({r.get('pgmax_cpu_ms', nan):.2f}) | "
              f"{r.get('ratio_parallel', nan):.2f} | {r.get('ratio_sequential', nan):.2f} | "
              f"{r.get('max_abs_marginal_diff', nan):.1e} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        main()
