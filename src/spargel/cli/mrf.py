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

``spargel mgm`` (:func:`read_mixed_csv`, :func:`run_mgm`): a mixed graphical model
(:class:`spargel.MixedGraphicalModel`) from a CSV of continuous and categorical columns,
``--types`` giving one letter per column; the same header rules, missing values and
one writer; the edge list ``i,j,weight,sign[,name_i,name_j]``, the model file and its
categorical levels (``MODEL.levels.json``). Ctrl-C writes nothing (exit 130).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .common import (command_parser, UsageError, check_number, check_outputs, csv_text, figure_bytes,
                     input_name, is_number, json_lines, read_table, warn, write_output)
from ..errors import DataFormatError

__all__ = ["add_mgm_parser", "add_parser", "read_mixed_csv", "read_states_csv", "run", "run_mgm"]

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
        codes, labels = _recode([r[c] for r in body])      # numbers: one state per value, in numeric order
        if len(labels) < 2:
            label = names[c] if names else f"column {c + 1}"
            raise DataFormatError(name, None, f"{label} is constant ({labels[0]!r} in every row); drop it")
        X[:, c] = codes
        levels.append(labels)
    return X, names, levels


def add_parser(subparsers):
    """Add the ``mrf`` sub-command."""
    p = command_parser(
        subparsers, "mrf", help="learn a sparse discrete pairwise MRF (graph structure) from a CSV file",
        description=("Learn the structure of a pairwise Markov random field over discrete variables: "
                     "minimise sum_n -log p(x^n) + l1 * (|w_edges|_1 or sum_edges ||w_edge||_2). "
                     "Every pair of columns of DATA.csv is a candidate edge."),
        epilog=("examples:\n"
                "  spargel mrf votes.csv --l1 20\n"
                "  spargel mrf votes.csv --l1 20 --inference pseudo-likelihood --out-edges -\n"
                "  spargel mrf pixels.csv --l1 50 --group --plot graph.png\n"
                "  spargel mrf votes.csv --select ebic --out-path path.csv\n"))
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


def _check_model_outputs(outputs, data):
    """Refuse, before any work, outputs (name -> path) of which more than one goes to
    stdout, a ``--model`` that is stdout, and an output that is the input ``data`` or
    another output."""
    if sum(v == "-" for v in outputs.values()) > 1:
        raise UsageError("only one output can go to stdout")
    if outputs["--model"] == "-":
        raise UsageError("--model must be a file, not standard output")
    check_outputs(outputs, {"the input file": data})


def _edge_table(header, edges, values, names):
    """The edge list as CSV text: ``i,j,*header[,name_i,name_j]``, one row per edge
    ``(i, j)`` of ``edges`` with its ``values`` (one list per edge)."""
    rows = [["i", "j", *header] + (["name_i", "name_j"] if names else [])]
    for (i, j), vals in zip(edges, values):
        rows.append([int(i), int(j), *vals] + ([names[i], names[j]] if names else []))
    return csv_text(rows)


def _save_and_write(model, path, outputs):
    """Save ``model`` to ``path``, then write each ``(path, content)`` of ``outputs`` in
    order, passing over those whose content is None (not asked for). Every output is
    made before the first is written."""
    model.save(path)
    for out, content in outputs:
        if content is not None:
            write_output(out, content)


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
    _check_model_outputs({"--out-edges": out_e, "--model": out_m, "the model's state names": out_m + ".states.json",
                          "--history": args.history, "--plot": args.plot, "--out-path": args.out_path}, args.data)
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
    edges = _edge_table(["strength"], model.edges_, ([f"{float(s):.6g}"] for s in model.edge_strength_), names)
    states = json.dumps({"names": names, "states": levels}, indent=1) + "\n"
    history = json_lines(model.history_) if args.history else None
    path = None
    if args.out_path:
        path = csv_text([["l1", "edges", "score"]] + [[f"{a:.6g}", int(e), f"{c:.10g}"] for a, e, c in zip(
            sel.l1s_, sel.edges_path_, sel.criterion_scores_)])
    picture = None
    if args.plot:
        picture = figure_bytes(model.plot(labels=names), args.plot)
    _save_and_write(model, out_m, [(out_m + ".states.json", states), (out_e, edges), (args.history, history),
                                   (args.out_path, path), (args.plot, picture)])
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


# ---------------------------------------------------------------------------------------
# spargel mgm: mixed graphical models
# ---------------------------------------------------------------------------------------

def read_mixed_csv(path, types, header=None):
    """Read a CSV of continuous and categorical columns (``-``: standard input), one
    letter of ``types`` per column (``g`` continuous, ``c`` categorical; commas and
    spaces between the letters are ignored). Returns (X float (N, p), names or None,
    levels) where a categorical column's values are recoded to ``0..k-1`` in sorted
    order (numbers numerically) and ``levels[j]`` lists its original values (None for a
    continuous column). Any problem is a :class:`~spargel.errors.DataFormatError` naming
    the file and line, or a :class:`UsageError` when ``types`` does not fit the file."""
    import math

    import numpy as np

    letters = [t for t in str(types) if t not in ", "]
    bad = [t for t in letters if t not in ("g", "c")]
    if bad or not letters:
        raise UsageError(f"--types must be letters g (continuous) and c (categorical), got {types!r}")
    table = read_table(path, header=header, numeric=False, row_labels=False)
    name, names, body = table.source, table.names, table.rows
    if len(letters) != table.width:
        raise UsageError(f"--types gives {len(letters)} types for the {table.width} columns of {name}")
    if len(body) < 3:
        raise DataFormatError(name, None, f"need at least 3 samples, found {len(body)}")
    X = np.empty((len(body), table.width))
    levels = []
    for c, t in enumerate(letters):
        label = f"column {c + 1}" + (f" ({names[c]})" if names else "")
        col = [r[c] for r in body]
        for v, line in zip(col, table.lines):
            if v.lower() in MISSING:
                raise DataFormatError(name, line, f"{label}: missing value {v!r} (drop or impute the row)")
        if t == "g":
            for k, (v, line) in enumerate(zip(col, table.lines)):
                try:
                    x = float(v)
                except ValueError:
                    raise DataFormatError(name, line, f"{label} is continuous (type g): {v!r} is not a "
                                          f"number") from None
                if not math.isfinite(x):
                    raise DataFormatError(name, line, f"{label}: {v!r} is not a finite number")
                X[k, c] = x
            if np.all(X[:, c] == X[0, c]):
                raise DataFormatError(name, None, f"{label} (continuous) is constant; drop it")
            levels.append(None)
        else:
            codes, labels = _recode(col)
            if len(labels) < 2:
                raise DataFormatError(name, None, f"{label} (categorical) is constant ({labels[0]!r} in every "
                                      f"row); drop it")
            X[:, c] = codes
            levels.append(labels)
    return X, names, levels


def _recode(col):
    """A column of values as states ``0..k-1`` in sorted order (numbers numerically:
    ``1`` and ``1.0`` are one state); returns (codes, the values in state order)."""
    if all(is_number(v) for v in col):
        keys = [float(v) for v in col]
        first = {}
        for k, v in zip(keys, col):
            first.setdefault(k, v)
        order = sorted(first)
        labels = [first[k] for k in order]
    else:
        keys = col
        order = labels = sorted(set(col))
    code = {v: k for k, v in enumerate(order)}
    return [code[v] for v in keys], labels


def add_mgm_parser(subparsers):
    """Add the ``mgm`` sub-command."""
    p = command_parser(
        subparsers, "mgm", help="learn a mixed graphical model (continuous and categorical variables) from a CSV file",
        description=("Learn the graph of a mixed graphical model (spargel.MixedGraphicalModel): every "
                     "column of DATA.csv regressed on all the others (Gaussian, logistic or multinomial, a "
                     "group lasso per predictor variable), each regression's penalty chosen by --select, an "
                     "edge where both regressions (--rule and) or either (--rule or) select it."),
        epilog=("examples:\n"
                "  spargel mgm survey.csv --types gcggc\n"
                "  spargel mgm survey.csv --types gcggc --select stars --plot graph.png\n"
                "  spargel mgm survey.csv --types gcggc --select cv --out-edges - --quiet\n"
                "output: the edge list as CSV i,j,weight,sign[,name_i,name_j] (weight: the mean absolute\n"
                "parameter of the edge in both regressions; sign: +1 / -1 where the edge is one number,\n"
                "0 where a categorical variable has more than 2 levels), the model file (load it with\n"
                "spargel.MixedGraphicalModel.load) and MODEL.levels.json (each categorical column's\n"
                "values in the order of its levels 0..k-1).\n"))
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV ('-': standard input)")
    p.add_argument("--types", required=True, metavar="TYPES",
                   help="one letter per column: g continuous (Gaussian), c categorical (any values)")
    p.add_argument("--select", choices=["ebic", "stars", "cv"], default="ebic",
                   help="how each regression's penalty is chosen: its EBIC (default), StARS over subsamples "
                        "(one point of the paths for all), or cross-validated log-likelihood")
    p.add_argument("--rule", choices=["and", "or"], default="and", help="an edge needs both regressions (and, "
                   "the default) or either (or)")
    p.add_argument("--gamma", type=float, default=0.25, help="EBIC's gamma (default 0.25)")
    p.add_argument("--n-lambdas", type=int, default=100, help="penalties per regression path (default 100)")
    p.add_argument("--n-subsamples", type=int, default=20, help="StARS's subsamples (default 20)")
    p.add_argument("--stars-threshold", type=float, default=0.1, help="StARS's instability threshold (0.1)")
    p.add_argument("--cv", type=int, default=5, help="folds of --select cv (default 5)")
    p.add_argument("--random-state", type=int, default=0, help="seed of StARS's subsamples and CV's folds")
    p.add_argument("--jobs", type=int, default=1, help="threads (variables, subsamples or folds; -1: one per "
                   "CPU; the same result for any value)")
    p.add_argument("--header", dest="header", action="store_true", default=None, help="first row is names")
    p.add_argument("--no-header", dest="header", action="store_false", help="first row is data")
    p.add_argument("--out-edges", metavar="PATH", default=None,
                   help="edge list CSV (default <DATA>.mgm-edges.csv; '-' = stdout)")
    p.add_argument("--model", metavar="PATH", default=None, help="model file (default <DATA>.mgm)")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="draw the graph (needs matplotlib; with --select stars edges coloured by their "
                        "inclusion frequency)")
    p.add_argument("--verbose", action="store_true", help="progress on stderr")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run_mgm)
    return p


def _run_mgm(args):
    from ..mrf.mixed import MixedGraphicalModel

    check_number("--gamma", args.gamma, low=0)
    check_number("--n-lambdas", args.n_lambdas, low=1, integer=True)
    check_number("--n-subsamples", args.n_subsamples, low=1, integer=True)
    check_number("--stars-threshold", args.stars_threshold, low=0)
    check_number("--cv", args.cv, low=2, integer=True)
    check_number("--jobs", args.jobs, low=-1, integer=True)
    if args.jobs == 0:
        raise UsageError("--jobs must be a positive number of threads or -1, got 0")
    if args.data == "-":
        out_e, out_m = args.out_edges or "mgm-edges.csv", args.model or "stdin.mgm"
    else:
        stem = str(Path(args.data).with_suffix(""))
        model_default = stem + ".mgm" if os.path.abspath(stem + ".mgm") != os.path.abspath(args.data) \
            else args.data + ".mgm"
        out_e, out_m = args.out_edges or stem + ".mgm-edges.csv", args.model or model_default
    _check_model_outputs({"--out-edges": out_e, "--model": out_m, "the model's levels": out_m + ".levels.json",
                          "--plot": args.plot}, args.data)
    X, names, levels = read_mixed_csv(args.data, args.types, args.header)
    types = "".join(t for t in args.types if t not in ", ")
    t0 = time.perf_counter()
    fit = MixedGraphicalModel(types, gamma=args.gamma, rule=args.rule, criterion=args.select,
                              n_lambdas=args.n_lambdas, n_subsamples=args.n_subsamples,
                              stars_threshold=args.stars_threshold, cv=args.cv, random_state=args.random_state,
                              n_jobs=args.jobs, verbose=args.verbose).fit(X)
    elapsed = time.perf_counter() - t0
    edges = _edge_table(["weight", "sign"], fit.edges_,
                        ([f"{float(fit.adjacency_[i, j]):.6g}", int(fit.signs_[i, j])] for i, j in fit.edges_), names)
    meta = json.dumps({"names": names, "types": types, "levels": levels}, indent=1) + "\n"
    picture = None
    if args.plot:
        picture = figure_bytes(fit.plot(labels=names), args.plot)
    _save_and_write(fit, out_m, [(out_m + ".levels.json", meta), (out_e, edges), (args.plot, picture)])
    if not args.quiet:
        n_g = types.count("g")
        print(f"mgm: {X.shape[1]} variables ({n_g} continuous, {X.shape[1] - n_g} categorical), {X.shape[0]} "
              f"samples, penalties chosen by {args.select}, rule {args.rule}: {len(fit.edges_)} edges, "
              f"{elapsed:.2f}s; wrote {out_e} and {out_m} ({input_name(args.data)})", file=sys.stderr)
    return 0


def run_mgm(args):
    """Execute ``spargel mgm``; returns the exit status (errors are raised and turned into
    one line and a status by :func:`spargel.cli.app.main`; Ctrl-C writes nothing)."""
    if not args.quiet:
        from ..core import first_use
        first_use.enable()
    return _run_mgm(args)
