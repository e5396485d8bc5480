"""``spargel mrf``: learn the structure of a discrete pairwise MRF from a CSV file.

Input: a CSV of samples (rows) by discrete variables (columns), or ``-`` for standard
input, with an optional header row of names: the first row is a header when it plainly
is one (a name over a column of numbers) and a sample when it plainly is one (a value
that recurs in its column, or numbers over numbers); a file where it could be either is
an error that asks for ``--header`` or ``--no-header``, so no sample is dropped
silently. Each column's distinct values are recoded to states ``0..k-1`` in sorted
order; a column of numbers is sorted and recoded numerically (``1`` and ``1.0`` are one
state). The mapping is written next to the model. Missing values (empty, ``?``, ``NA``,
``nan``) are an error naming the file and line.

Output: the edge list as CSV ``i,j,strength[,name_i,name_j]`` (``--out-edges``,
default ``<DATA>.mrf-edges.csv``, ``-`` for stdout), the model file (``--model``,
default ``<DATA>.mrf``, or ``<DATA file>.mrf`` when that would be the input itself) and
its state names (``MODEL.states.json``), a one-line summary on stderr, optionally the
history as JSON lines (``--history``) and a picture of the graph (``--plot``). Every
output goes through the command line's one writer (atomic; an output that is an input
or another output is refused).

Exit status: the table of every ``spargel`` command (``spargel --help``); a solver that
stopped before ``--tol`` prints a warning and exits 0.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

from .common import (UsageError, check_number, check_outputs, csv_text, exit_status_help, input_name,
                     is_number, json_lines, read_table, warn, write_output)

__all__ = ["add_parser", "run", "read_states_csv"]

MISSING = {"", "?", "na", "nan", "null", "none"}

#: the solvers a pairwise MRF can run (it offers loss_grad, grafting and the bound; the
#: others need samples passes, MAP decoding or blocks), and those for the group lasso
MRF_SOLVERS = ("owlqn", "lbfgs", "fista", "bound", "grafting-light", "grafting", "gauss-seidel")
GROUP_SOLVERS = ("owlqn", "fista")


def read_states_csv(path, header=None):
    """Read a CSV of discrete values (``-``: standard input); returns (X int64 (N, n),
    names or None, levels) where ``levels[j]`` lists column ``j``'s original values in
    state order."""
    import numpy as np

    from ..errors import DataFormatError

    table = read_table(path, header=header, numeric=False, row_labels=False)
    name, names, body = table.source, table.names, table.rows
    for row, line in zip(body, table.lines):
        for c, v in enumerate(row):
            if v.lower() in MISSING:
                raise DataFormatError(name, line, f"column {c + 1}: missing value {v!r} (drop or impute the row)")
    if len(body) < 2:
        raise DataFormatError(name, None, f"need at least 2 samples, found {len(body)}")
    X = np.empty((len(body), table.width), dtype=np.int64)
    levels = []
    for c in range(table.width):
        col = [r[c] for r in body]
        if all(is_number(v) for v in col):       # numbers: one state per value, in numeric order
            keys = [float(v) for v in col]
            first = {}
            for k, v in zip(keys, col):
                first.setdefault(k, v)
            order = sorted(first)
            labels = [first[k] for k in order]
        else:
            keys = col
            order = labels = sorted(set(col))
        if len(order) < 2:
            label = names[c] if names else f"column {c + 1}"
            raise DataFormatError(name, None, f"{label} is constant ({labels[0]!r} in every row); drop it")
        code = {v: k for k, v in enumerate(order)}
        X[:, c] = [code[v] for v in keys]
        levels.append(labels)
    return X, names, levels


def add_parser(subparsers):
    """Add the ``mrf`` sub-command."""
    p = subparsers.add_parser(
        "mrf", help="learn a sparse discrete pairwise MRF (graph structure) from a CSV file",
        description=("Learn the structure of a pairwise Markov random field over discrete variables: "
                     "minimise sum_n -log p(x^n) + l1 * (|w_edges|_1 or sum_edges ||w_edge||_2). "
                     "Every pair of columns of DATA.csv is a candidate edge."),
        epilog=("examples:\n"
                "  spargel mrf votes.csv --l1 20\n"
                "  spargel mrf votes.csv --l1 20 --inference pseudo-likelihood --out-edges -\n"
                "  spargel mrf pixels.csv --l1 50 --group --plot graph.png\n"
                "  spargel mrf votes.csv --select ebic --out-path path.csv\n"
                + exit_status_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV of discrete values ('-': standard input)")
    p.add_argument("--l1", type=float, default=None, help="penalty weight on the edge weights (or --select)")
    p.add_argument("--select", choices=["ebic", "stars", "cv"], default=None,
                   help="choose l1 on a path from the data instead of --l1: EBIC, StARS or cross-validated "
                        "pseudo-likelihood (spargel.PairwiseMRFSelect; one-stage lasso unless --adaptive)")
    p.add_argument("--gamma", type=float, default=0.5, help="EBIC's gamma with --select ebic (default 0.5)")
    p.add_argument("--n-l1s", type=int, default=20, help="path length with --select (default 20)")
    p.add_argument("--stars-threshold", type=float, default=0.1,
                   help="StARS's instability threshold with --select stars (default 0.1)")
    p.add_argument("--random-state", type=int, default=0, help="seed of StARS's subsamples and CV's folds")
    p.add_argument("--out-path", metavar="PATH", default=None,
                   help="with --select: the path as CSV l1,edges,score ('-' = stdout)")
    p.add_argument("--l2", type=float, default=0.0, help="ridge weight on the edge weights (default 0)")
    p.add_argument("--group", action="store_true", help="group lasso: one l2 norm per edge table")
    p.add_argument("--inference", default="auto", choices=["auto", "loopy-bp", "exact", "pseudo-likelihood"],
                   help="how the likelihood is evaluated during training (default auto: exact when the "
                        "junction tree is small, pseudo-likelihood otherwise)")
    p.add_argument("--solver", default="owlqn", metavar="NAME",
                   help=f"one of {', '.join(MRF_SOLVERS)} (default owlqn; with --group: "
                        f"{' or '.join(GROUP_SOLVERS)})")
    p.add_argument("--ising", action="store_true", help="one weight per edge instead of a full table")
    p.add_argument("--adaptive", dest="adaptive", action="store_true", default="auto",
                   help="adaptive lasso: refit the selected edges, each penalised by 1 / its strength "
                        "(default: when --l1 > 0)")
    p.add_argument("--no-adaptive", dest="adaptive", action="store_false", help="one stage only")
    p.add_argument("--max-iter", type=int, default=None, help="solver iteration limit")
    p.add_argument("--tol", type=float, default=1e-6, help="relative objective tolerance (default 1e-6)")
    p.add_argument("--bp-damping", type=float, default=0.0, help="loopy BP damping in [0, 1)")
    p.add_argument("--bp-schedule", default="sequential", choices=["sequential", "residual", "parallel"])
    p.add_argument("--header", dest="header", action="store_true", default=None, help="first row is names")
    p.add_argument("--no-header", dest="header", action="store_false", help="first row is data")
    p.add_argument("--out-edges", metavar="PATH", default=None,
                   help="edge list CSV (default <DATA>.mrf-edges.csv; '-' = stdout)")
    p.add_argument("--model", metavar="PATH", default=None, help="model file (default <DATA>.mrf)")
    p.add_argument("--history", metavar="PATH", default=None, help="per-iteration history as JSON lines")
    p.add_argument("--plot", metavar="PNG", default=None, help="draw the learned graph (needs matplotlib)")
    p.add_argument("--verbose", action="store_true", help="one line per iteration on stderr")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)
    return p


def default_outputs(data):
    """The default edge list and model paths for the input ``data``: ``<stem>.mrf-edges.csv``
    and ``<stem>.mrf`` beside it (``<data>.mrf`` when ``<stem>.mrf`` is the input itself)."""
    if data == "-":
        return "mrf-edges.csv", "stdin.mrf"
    stem = str(Path(data).with_suffix(""))
    model = stem + ".mrf"
    if os.path.abspath(model) == os.path.abspath(data):
        model = data + ".mrf"
    return stem + ".mrf-edges.csv", model


def _run(args):
    import warnings

    from ..mrf.estimator import PairwiseMRF

    if (args.l1 is None) == (args.select is None):
        raise UsageError("give either --l1 or --select")
    if args.l1 is not None:
        check_number("--l1", args.l1, low=0)
    if args.out_path is not None and args.select is None:
        raise UsageError("--out-path needs --select")
    check_number("--gamma", args.gamma, low=0)
    check_number("--n-l1s", args.n_l1s, low=1, integer=True)
    check_number("--stars-threshold", args.stars_threshold, low=0)
    check_number("--l2", args.l2, low=0)
    check_number("--tol", args.tol, low=0)
    if args.max_iter is not None:
        check_number("--max-iter", args.max_iter, low=1, integer=True)
    check_number("--bp-damping", args.bp_damping, low=0, high=1, high_open=True)
    solvers = GROUP_SOLVERS if args.group else MRF_SOLVERS
    if args.solver not in solvers:
        raise UsageError(f"--solver {args.solver!r} cannot fit "
                         f"{'a group-lasso' if args.group else 'a pairwise'} MRF; choose one of {', '.join(solvers)}")
    default_edges, default_model = default_outputs(args.data)
    out_e = args.out_edges or default_edges
    out_m = args.model or default_model
    outputs = {"--out-edges": out_e, "--model": out_m, "the model's state names": out_m + ".states.json",
               "--history": args.history, "--plot": args.plot, "--out-path": args.out_path}
    if sum(v == "-" for v in outputs.values()) > 1:
        raise UsageError("only one output can go to stdout")
    if out_m == "-":
        raise UsageError("--model must be a file, not standard output")
    check_outputs(outputs, {"the input file": args.data})
    X, names, levels = read_states_csv(args.data, args.header)
    adaptive = (False if args.adaptive == "auto" else args.adaptive) if args.select else args.adaptive
    model = PairwiseMRF(l1=args.l1 if args.l1 is not None else 1.0, l2=args.l2, penalty="group" if args.group else "l1",
                        inference=args.inference, solver=args.solver, adaptive=adaptive,
                        edge_features="ising" if args.ising else "full", bp_schedule=args.bp_schedule,
                        bp_damping=args.bp_damping, max_iter=args.max_iter, tol=args.tol,
                        verbose=args.verbose)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if args.select:
                from ..mrf.selection import PairwiseMRFSelect
                sel = PairwiseMRFSelect(args.select, estimator=model, n_l1s=args.n_l1s, gamma=args.gamma,
                                        stars_threshold=args.stars_threshold, random_state=args.random_state,
                                        verbose=args.verbose).fit(X)
                model = sel.best_estimator_
            else:
                model.fit(X)
        except KeyboardInterrupt:
            if getattr(model, "stop_reason_", None) != "interrupted":
                raise                   # (the state so far is kept: written below as before)
    for w in caught:
        warn("mrf", w.message)
    elapsed = time.perf_counter() - t0
    # every output is made before the first is written
    rows = [["i", "j", "strength"] + (["name_i", "name_j"] if names else [])]
    for (i, j), s in zip(model.edges_, model.edge_strength_):
        rows.append([int(i), int(j), f"{float(s):.6g}"] + ([names[i], names[j]] if names else []))
    edges = csv_text(rows)
    states = json.dumps({"names": names, "states": levels}, indent=1) + "\n"
    history = json_lines(model.history_) if args.history else None
    path = None
    if args.out_path:
        path = csv_text([["l1", "edges", "score"]] + [[f"{a:.6g}", int(e), f"{c:.10g}"] for a, e, c in zip(
            sel.l1s_, sel.edges_path_, sel.criterion_scores_)])
    picture = None
    if args.plot:
        ax = model.plot(labels=names)
        buf = io.BytesIO()
        ax.figure.savefig(buf, dpi=150, bbox_inches="tight", format=Path(args.plot).suffix.lstrip(".") or "png")
        picture = buf.getvalue()
    model.save(out_m)
    write_output(out_m + ".states.json", states)
    write_output(out_e, edges)
    if history is not None:
        write_output(args.history, history)
    if path is not None:
        write_output(args.out_path, path)
    if picture is not None:
        write_output(args.plot, picture)
    if not args.quiet:
        chosen = f"l1={model.l1:g}" + (f" chosen by {args.select}" if args.select else "")
        print(f"mrf: {X.shape[1]} variables, {X.shape[0]} samples, {chosen} "
              f"({'group' if args.group else 'l1'}, {model.inference_used_}), {len(model.edges_)} edges, "
              f"objective={model.objective_:.10g}, {model.n_iter_} iterations ({model.stop_reason_}), "
              f"{elapsed:.2f}s; wrote {out_e} and {out_m} ({input_name(args.data)})", file=sys.stderr)
    if model.stop_reason_ == "interrupted":
        print("spargel mrf: interrupted; the model reached so far is written", file=sys.stderr)
        return 130
    return 0


def run(args):
    """Execute ``spargel mrf``; returns the exit status (errors are raised and turned into
    one line and a status by :func:`spargel.cli.app.main`)."""
    if not args.quiet:                  # a long first compilation says so on stderr
        from ..core import first_use
        first_use.enable()
    return _run(args)
