"""``spargel mrf``: learn the structure of a discrete pairwise MRF from a CSV file.

Input: a CSV of samples (rows) by discrete variables (columns), with an optional header
row of names (by default the first row is a header when it has a non-numeric field and
none of its fields recurs in its column below; ``--header`` / ``--no-header`` decide it
explicitly). Each column's distinct values are
recoded to states ``0..k-1`` in sorted order (numbers numerically); the mapping is
written next to the edges. Missing values (empty, ``?``, ``NA``, ``nan``) are an error
naming the file and line.

Output: the edge list as CSV ``i,j,strength[,name_i,name_j]`` (``--out-edges``,
default ``<DATA>.mrf-edges.csv``, ``-`` for stdout), the model file (``--model``,
default ``<DATA>.mrf``), a one-line summary on stderr, optionally the history as JSON
lines (``--history``) and a picture of the graph (``--plot``).

Exit status: 0 success, 1 the solver stopped before ``--tol`` (the model is still
written) or a runtime problem, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

__all__ = ["add_parser", "run", "read_states_csv"]

MISSING = {"", "?", "na", "nan", "null", "none"}


class CLIError(Exception):
    """Bad input; printed as one line."""


def _num(s):
    try:
        return float(s)
    except ValueError:
        return None


def read_states_csv(path, header=None):
    """Read a CSV of discrete values; returns (X int64 (N, n), names or None, levels)
    where ``levels[j]`` lists column ``j``'s original values in state order."""
    import numpy as np

    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    with fh:
        try:
            rows = [(k + 1, [c.strip() for c in r]) for k, r in enumerate(csv.reader(fh))
                    if r and any(c.strip() for c in r)]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CLIError(f"{path}: not a readable CSV file ({exc})") from None
    if not rows:
        raise CLIError(f"{path}: the file is empty")
    if header is None:              # names: a non-number, and no name recurs in its column
        first = rows[0][1]
        seen = [set() for _ in first]
        for _, r in rows[1:]:
            for c, v in enumerate(r[:len(first)]):
                seen[c].add(v)
        header = any(_num(c) is None for c in first) and not any(v in s for v, s in zip(first, seen))
    names = rows[0][1] if header else None
    body = rows[1:] if header else rows
    if not body:
        raise CLIError(f"{path}: no data rows")
    width = len(body[0][1])
    if names is not None and len(names) != width:
        raise CLIError(f"{path}:{rows[0][0]}: header has {len(names)} names but rows have {width} values")
    for line, r in body:
        if len(r) != width:
            raise CLIError(f"{path}:{line}: expected {width} values, found {len(r)}")
        for c, v in enumerate(r):
            if v.lower() in MISSING:
                raise CLIError(f"{path}:{line}: column {c + 1}: missing value {v!r} (drop or impute the row)")
    if len(body) < 2:
        raise CLIError(f"{path}: need at least 2 samples, found {len(body)}")
    X = np.empty((len(body), width), dtype=np.int64)
    levels = []
    for c in range(width):
        col = [r[c] for _, r in body]
        distinct = set(col)
        if all(_num(v) is not None for v in distinct):
            order = sorted(distinct, key=lambda v: (_num(v), v))
        else:
            order = sorted(distinct)
        if len(order) < 2:
            label = names[c] if names else f"column {c + 1}"
            raise CLIError(f"{path}: {label} is constant ({order[0]!r} in every row); drop it")
        code = {v: k for k, v in enumerate(order)}
        X[:, c] = [code[v] for v in col]
        levels.append(order)
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
                "exit status: 0 success, 1 solver stopped before --tol, 2 bad input"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV of discrete values")
    p.add_argument("--l1", type=float, required=True, help="penalty weight on the edge weights")
    p.add_argument("--l2", type=float, default=0.0, help="ridge weight on the edge weights (default 0)")
    p.add_argument("--group", action="store_true", help="group lasso: one l2 norm per edge table")
    p.add_argument("--inference", default="loopy-bp", choices=["loopy-bp", "exact", "pseudo-likelihood"],
                   help="how the likelihood is evaluated during training (default loopy-bp)")
    p.add_argument("--solver", default="owlqn", help="solver name (default owlqn)")
    p.add_argument("--ising", action="store_true", help="one weight per edge instead of a full table")
    p.add_argument("--adaptive", action="store_true",
                   help="adaptive lasso: refit the selected edges, each penalised by 1 / its strength")
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


def _open_out(path):
    if path == "-":
        return sys.stdout, False
    try:
        return open(path, "w", newline="", encoding="utf-8"), True
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None


def _run(args):
    import warnings

    from .mrf import PairwiseMRF

    if not (math.isfinite(args.l1) and args.l1 >= 0):
        raise CLIError(f"--l1 must be a finite number >= 0, got {args.l1}")
    if args.max_iter is not None and args.max_iter < 1:
        raise CLIError(f"--max-iter must be >= 1, got {args.max_iter}")
    X, names, levels = read_states_csv(args.data, args.header)
    model = PairwiseMRF(l1=args.l1, l2=args.l2, penalty="group" if args.group else "l1",
                        inference=args.inference, solver=args.solver, adaptive=args.adaptive,
                        edge_features="ising" if args.ising else "full", bp_schedule=args.bp_schedule,
                        bp_damping=args.bp_damping, max_iter=args.max_iter, tol=args.tol,
                        verbose=args.verbose)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X)
        except KeyboardInterrupt:
            if getattr(model, "stop_reason_", None) != "interrupted":
                raise                   # (the state so far is kept: written below as before)
    for w in caught:
        print(f"spargel mrf: warning: {w.message}", file=sys.stderr)
    elapsed = time.perf_counter() - t0
    stem = str(Path(args.data).with_suffix(""))
    out_e = args.out_edges or stem + ".mrf-edges.csv"
    out_m = args.model or stem + ".mrf"
    fh, close = _open_out(out_e)
    try:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["i", "j", "strength"] + (["name_i", "name_j"] if names else []))
        for (i, j), s in zip(model.edges_, model.edge_strength_):
            w.writerow([int(i), int(j), f"{float(s):.6g}"] + ([names[i], names[j]] if names else []))
    finally:
        if close:
            fh.close()
    try:
        model.save(out_m)
        Path(out_m + ".states.json").write_text(json.dumps(
            {"names": names, "states": levels}, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot write {out_m}: {exc.strerror or exc}") from None
    if args.history:
        fh, close = _open_out(args.history)
        try:
            for row in model.history_:
                fh.write(json.dumps({k: (float(v) if hasattr(v, "dtype") else v) for k, v in row.items()}) + "\n")
        finally:
            if close:
                fh.close()
    if args.plot:
        ax = model.plot(labels=names)
        try:
            ax.figure.savefig(args.plot, dpi=150, bbox_inches="tight")
        except (OSError, ValueError) as exc:
            raise CLIError(f"cannot write {args.plot}: {exc}") from None
    if not args.quiet:
        print(f"mrf: {X.shape[1]} variables, {X.shape[0]} samples, l1={args.l1:g} "
              f"({'group' if args.group else 'l1'}, {args.inference}), {len(model.edges_)} edges, "
              f"objective={model.objective_:.10g}, {model.n_iter_} iterations ({model.stop_reason_}), "
              f"{elapsed:.2f}s; wrote {out_e} and {out_m}", file=sys.stderr)
    return 0 if model.converged_ else 1


def run(args):
    """Execute ``spargel mrf``; returns the exit status (errors are one line)."""
    try:
        return _run(args)
    except (CLIError, ValueError) as exc:
        print(f"spargel mrf: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"spargel mrf: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("spargel mrf: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # last resort: one line, no traceback
        print(f"spargel mrf: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
