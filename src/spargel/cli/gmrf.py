"""``spargel gmrf``: learn a sparse Gaussian MRF from a CSV file.

Input: a CSV of samples (rows) by variables (columns), or ``-`` for standard
input. A first row with a field that is not a number is taken as the variable
names (``--header`` / ``--no-header`` decide it explicitly); a first column
whose entries below the first row are not numbers is taken as row labels and
dropped -- a first row that is such a label followed by numbers is a sample,
never a header. With ``--covariance`` the CSV is a symmetric positive
semidefinite covariance matrix instead. Read by the command line's one table
reader (:func:`spargel.cli.common.read_table`).

Output, where asked and nowhere else:

* the edge list as CSV with columns ``i,j,weight`` (0-based indices and
  K_ij; plus ``name_i,name_j`` when names are known) for every i < j with
  K_ij != 0: to ``--out-edges PATH``, by default to standard output;
* the precision matrix as CSV (``--out-precision PATH``), with the
  variable names as header when the input had them;
* optional per-iteration history as JSON lines (``--history``) and a
  picture (``--plot``); a one-line summary on stderr (unless ``--quiet``),
  per-iteration lines on stderr with ``--verbose``.

With ``--select ebic|stars|ric`` alpha is chosen as R's ``huge.select`` chooses it
(:class:`spargel.SparseGaussianMRFSelect`; ``--plot-path`` draws the path and the
criterion).

With ``--method mb`` the graph is estimated by neighbourhood selection instead
(:class:`spargel.NeighbourhoodSelection`: a lasso per variable on the standardised
columns, R huge's ``lambda`` as ``--alpha``, ``--rule or|and``; ``--from-data`` never
forms the variables x variables matrix): the edge list has the same columns, its
weight the mean of the two regression coefficients; there is no precision matrix.
With ``--method concord`` by CONCORD (:class:`spargel.Concord`: the l1-penalised
symmetric pseudo-likelihood on the standardised columns; ``--from-data`` never forms
the variables x variables matrix): the edge list's weight is the partial correlation,
and ``--out-precision`` writes the precision's non-zeros as ``i,j,value`` rows.
Both take ``--select stars|ric`` instead of ``--alpha`` (huge.select's rules; EBIC needs
the glasso's likelihood).

Files are written by the command line's one writer
(:func:`spargel.cli.common.write_output`): atomically, through links, devices
and pipes, keeping an existing file's permissions; an output path equal to an
input (or to another output) is refused.

Exit status: the table of every ``spargel`` command (``spargel --help``).
"""

from __future__ import annotations

import math
import sys
import time
import warnings

from ..core.solver_table import solver as solver_record, solver_names
from .common import (command_parser, CommandError, UsageError, check_number, check_outputs, csv_text,
                     figure_bytes, json_lines, read_table, read_text, warn, write_output)
from ..errors import ConvergenceWarning, DataFormatError

__all__ = ["add_parser", "run", "read_csv_matrix"]



def read_csv_matrix(path, header=None):
    """Read a numeric CSV (``-``: standard input); returns (values (m, n) float array,
    names or None). Raises :class:`~spargel.errors.DataFormatError` naming the file and
    line for anything malformed."""
    import numpy as np

    table = read_table(path, header=header, numeric=True)
    offset = 1 if table.row_names is not None else 0
    data = np.empty((len(table.rows), table.width))
    for k, (row, line) in enumerate(zip(table.rows, table.lines)):
        for col, c in enumerate(row):
            try:
                v = float(c)
            except ValueError:
                raise DataFormatError(table.source, line, f"non-numeric value {c!r} in column "
                                      f"{col + 1 + offset}" + _separator_hint(c)) from None
            if not math.isfinite(v):
                raise DataFormatError(table.source, line, f"non-finite value {c!r} in column {col + 1 + offset}")
            data[k, col] = v
    if table.width == 0:
        raise DataFormatError(table.source, None, "no numeric columns")
    names = table.names
    if names is not None and len(names) != table.width:
        raise DataFormatError(table.source, table.header_line, f"header has {len(names)} names but rows "
                              f"have {table.width} values")
    return data, names


def _separator_hint(value):
    """A hint when a field that is not a number holds another separator (the file is
    then likely not comma-separated, or has decimal commas)."""
    for sep, what in ((";", "semicolon"), ("\t", "tab"), (" ", "space")):
        if sep in value:
            return (f"; it holds a {what}: the file looks {what}-separated or has decimal "
                    "commas, not comma-separated (spargel reads CSV: values separated by "
                    "commas, a dot for decimals)")
    return ""


def add_parser(subparsers):
    """Add the ``gmrf`` sub-command to an argparse sub-parsers object."""
    p = command_parser(
        subparsers, "gmrf",
        help="learn a sparse Gaussian MRF (sparse inverse covariance) from a CSV file",
        description=(
            "Learn a sparse Gaussian Markov random field: minimise "
            "-log det K + tr(S K) + alpha * sum_{i!=j} |K_ij| over positive definite K, "
            "S the empirical covariance of DATA.csv (samples in rows, variables in columns; "
            "an optional header row of names and an optional first column of row labels "
            "are detected). Writes the edge list (to stdout unless --out-edges) and, when "
            "asked, the precision matrix."),
        epilog=(
            "examples:\n"
            "  spargel gmrf expr.csv --alpha 0.2 > edges.csv\n"
            "  spargel gmrf expr.csv --cv 5 --standardize --out-precision K.csv\n"
            "  spargel gmrf expr.csv --alpha 0.05 --blocks groups.csv --plot graph.png\n"
            "  spargel gmrf wide.csv --from-data --cv 5 --save-model wide.model\n"
            "  spargel gmrf wide.csv --method mb --alpha 0.2 --from-data > edges.csv\n"
            "  spargel gmrf expr.csv --select stars --seed 1 --plot-path path.png\n"
            "  spargel gmrf wide.csv --select stars --method mb --seed 1 > edges.csv\n"
            "cross-validation folds are contiguous blocks of rows (as scikit-learn's KFold\n"
            "and SparseGaussianMRFCV by default); --seed N shuffles them.\n"))
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV (or a covariance "
                   "matrix with --covariance); '-': standard input")
    p.add_argument("--header", dest="header", action="store_true", default=None,
                   help="the first row is the variable names (default: decided from the file)")
    p.add_argument("--no-header", dest="header", action="store_false", help="the first row is a sample")
    p.add_argument("--method", choices=["glasso", "mb", "concord"], default="glasso",
                   help="glasso (default): the penalised likelihood's sparse precision; mb: "
                   "neighbourhood selection (Meinshausen & Buhlmann, R huge's scaling: a lasso "
                   "per variable on the standardised columns), edges only; concord: CONCORD's "
                   "penalised symmetric pseudo-likelihood (edges weighted by partial correlation, "
                   "--out-precision)")
    p.add_argument("--rule", choices=["or", "and"], default=None,
                   help="with --method mb: an edge when either variable selects the other "
                   "(or, the default) or when both do (and)")
    p.add_argument("--alpha", type=float, default=None,
                   help="l1 weight on every off-diagonal entry (required unless --cv)")
    p.add_argument("--cv", type=int, default=None, metavar="K",
                   help="choose alpha by K-fold cross-validated log-likelihood on a "
                   "warm-started path (--n-alphas values from alpha_max)")
    p.add_argument("--select", choices=["ebic", "stars", "ric"], default=None,
                   help="choose alpha as R's huge.select does (SparseGaussianMRFSelect: "
                   "standardised data, penalised diagonal, a path of --n-alphas values "
                   "down to --alpha-min-ratio, default 0.1): EBIC, StARS or RIC")
    p.add_argument("--gamma", type=float, default=None,
                   help="with --select ebic: EBIC's gamma (default 0.5)")
    p.add_argument("--stars-threshold", type=float, default=None,
                   help="with --select stars: the variability threshold (default 0.1)")
    p.add_argument("--n-subsamples", type=int, default=None,
                   help="with --select stars: number of subsamples (default 20)")
    p.add_argument("--n-alphas", type=int, default=10,
                   help="grid size for --cv and --select (default 10)")
    p.add_argument("--alpha-min-ratio", type=float, default=None, metavar="R",
                   help="the --cv / --select grid ends at R * alpha_max (default 0.01 for "
                   "--cv, 0.1 for --select as huge; with --from-data a larger R keeps the "
                   "screened components small)")
    p.add_argument("--plot-path", metavar="PNG", default=None,
                   help="with --select: draw the path (edges and the criterion against "
                   "alpha, the choice marked; needs matplotlib)")
    p.add_argument("--seed", type=int, default=None,
                   help="shuffle the --cv folds with this seed (default: contiguous folds); "
                   "with --select stars / ric: the seed of the subsamples / rotations")
    covariance_solvers = [solver_record(name, "covariance") for name in solver_names("covariance")]
    p.add_argument("--solver", default="auto", choices=["auto", *(s.name for s in covariance_solvers)],
                   help="auto (default): newton-cg for l1, projected-gradient (Algorithm 3) with "
                   "--blocks; " + "; ".join(f"{s.name}: {s.doc}" for s in covariance_solvers))
    p.add_argument("--tol", type=float, default=None,
                   help="relative duality-gap tolerance (default: 1e-10 for the Newton "
                   "solvers, 1e-6 for projected-gradient)")
    p.add_argument("--max-iter", type=int, default=None, help="iteration limit")
    p.add_argument("--blocks", metavar="GROUPS.csv", default=None,
                   help="block-l1: a CSV/text file with one group label per variable "
                   "(one block per pair of groups, weight alpha * block size)")
    p.add_argument("--penalize-diagonal", action="store_true",
                   help="also penalise the diagonal (default: unpenalised)")
    p.add_argument("--standardize", action="store_true",
                   help="scale every variable to unit variance first")
    p.add_argument("--covariance", action="store_true",
                   help="DATA.csv is a covariance matrix, not samples")
    p.add_argument("--n-samples", type=int, default=None,
                   help="number of samples behind --covariance (informative)")
    p.add_argument("--from-data", action="store_true",
                   help="never form the variables x variables covariance (for many more "
                   "variables than samples): screening and each screened component's block "
                   "are computed from the samples; with --cv every fold's path is fitted "
                   "and scored the same way; no p x p matrix: --out-precision writes the "
                   "precision's non-zeros as i,j,value rows")
    p.add_argument("--max-component", type=int, default=None, metavar="N",
                   help="with --from-data: refuse a screened component of more than N "
                   "variables, naming the alpha that splits it (default: what fits in memory)")
    p.add_argument("--out-edges", metavar="PATH", default="-",
                   help="edge list CSV i,j,weight (default '-': stdout)")
    p.add_argument("--out-precision", metavar="PATH", default=None,
                   help="precision matrix CSV ('-' = stdout; default: not written); with "
                   "--from-data its non-zeros as rows i,j,value (upper triangle)")
    p.add_argument("--history", metavar="PATH", default=None,
                   help="write the per-iteration history as JSON lines")
    p.add_argument("--save-model", metavar="PATH", default=None,
                   help="write the fitted model (spargel's model format; load it with "
                   "SparseGaussianMRF.load, SparseGaussianMRFCV.load with --cv, "
                   "SparseGaussianMRFSelect.load with --select)")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="draw the learned graph, with the clustered heat map of the partial "
                   "correlations beside it above 30 variables (needs matplotlib)")
    p.add_argument("--verbose", action="store_true",
                   help="one line per solver iteration on stderr")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)
    return p


# -- outputs -----------------------------------------------------------------------------

def _precision_text(K, names):
    return csv_text(([names] if names is not None else []) + [[repr(float(v)) for v in row] for row in K])


def _precision_entries_text(K, names):
    """The non-zeros of a sparse precision's upper triangle (the diagonal included) as
    CSV rows ``i,j,value`` (plus ``name_i,name_j``), row by row: what ``--from-data``
    writes instead of a p x p matrix."""
    import scipy.sparse as sp

    U = sp.triu(K, format="csr")
    U.sort_indices()
    rows = [["i", "j", "value"] + (["name_i", "name_j"] if names is not None else [])]
    for i in range(U.shape[0]):
        for k in range(U.indptr[i], U.indptr[i + 1]):
            j = int(U.indices[k])
            rows.append([i, j, repr(float(U.data[k]))] + ([names[i], names[j]] if names is not None else []))
    return csv_text(rows)


#: the most variables ``--plot`` draws from a ``--from-data`` fit (with edges; the
#: isolated ones are counted in the title above this many variables)
PLOT_MAX_VARIABLES = 2000


def _plot_matrix(model, names, path):
    """The dense precision ``--plot`` draws, its labels and title: all of it on the
    dense path; from a sparse (``--from-data``) precision all of it up to
    :data:`PLOT_MAX_VARIABLES` variables, else the variables with an edge."""
    import numpy as np
    import scipy.sparse as sp

    K = model.precision_
    if not sp.issparse(K):
        return K, names, None
    p = K.shape[0]
    if p <= PLOT_MAX_VARIABLES:
        return K.toarray(), names, None
    keep = np.unique(np.asarray(model.edges_, dtype=np.int64).ravel())
    if keep.size > PLOT_MAX_VARIABLES:
        raise CommandError(f"{path}: the graph has {keep.size} variables with an edge; --plot "
                           f"draws at most {PLOT_MAX_VARIABLES} (a larger --alpha, or plot a part "
                           "of the --out-edges list)")
    sub = K.tocsr()[keep][:, keep].toarray()
    labels = [names[i] for i in keep] if names is not None else [str(int(i)) for i in keep]
    return sub, labels, f"{keep.size} of {p} variables (the {p - keep.size} without an edge not drawn)"


def _edges_text(model, names):
    rows = [["i", "j", "weight"] + (["name_i", "name_j"] if names is not None else [])]
    for (i, j), wt in zip(model.edges_, model.edge_weights_):
        rows.append([int(i), int(j), repr(float(wt))] + ([names[i], names[j]] if names is not None else []))
    return csv_text(rows)


# -- the command -------------------------------------------------------------------------

def _check_usage(args):
    if args.method != "glasso":
        m = args.method
        if args.alpha is None and args.select is None:
            raise UsageError(f"--method {m} needs --alpha X or --select stars|ric")
        if args.alpha is not None and args.alpha <= 0:
            raise UsageError(f"--alpha must be > 0 with --method {m}, got {args.alpha}")
        if args.select == "ebic":
            raise UsageError(f"--select ebic needs a likelihood; --method {m} has none (huge.select "
                             "offers EBIC for glasso only): use --select stars or ric")
        for opt, given in (("--cv", args.cv is not None), ("--covariance", args.covariance),
                           ("--blocks", args.blocks is not None),
                           ("--solver", args.solver != "auto"),
                           ("--penalize-diagonal", args.penalize_diagonal),
                           ("--standardize", args.standardize),
                           ("--max-component", args.max_component is not None),
                           ("--out-precision", args.out_precision is not None and m == "mb"),
                           ("--rule", args.rule is not None and m != "mb"),
                           ("--history", args.history is not None),
                           ("--save-model", args.save_model is not None),
                           ("--plot", args.plot is not None)):
            if given:
                what = "edges, not a precision matrix" if m == "mb" else "a precision by pseudo-likelihood"
                raise UsageError(f"--method {m} does not take {opt} (it standardises the "
                                 f"variables itself and estimates {what})")
    elif args.rule is not None:
        raise UsageError("--rule goes with --method mb")
    _check_select(args)
    if args.alpha is None and args.cv is None and args.select is None:
        raise UsageError("give --alpha X, --cv K or --select ebic|stars|ric")
    chosen = [o for o, g in (("--alpha", args.alpha is not None), ("--cv", args.cv is not None),
                             ("--select", args.select is not None)) if g]
    if len(chosen) > 1:
        raise UsageError(f"give either {' or '.join(chosen)}, not both" if len(chosen) == 2 else
                         "give only one of --alpha, --cv and --select")
    if args.alpha is not None:
        check_number("--alpha", args.alpha, low=0)
    if args.cv is not None:
        check_number("--cv", args.cv, low=2, integer=True)
        if args.covariance:
            raise UsageError("--cv needs samples, not --covariance")
    from ..gaussian.path import MAX_ALPHAS      # the estimators' cap on a grid (numpy: imported here)

    check_number("--n-alphas", args.n_alphas, low=1, high=MAX_ALPHAS, integer=True)
    if args.alpha_min_ratio is None:
        args.alpha_min_ratio = 0.1 if args.select is not None else 0.01
    if not 0 < args.alpha_min_ratio < 1:
        raise UsageError(f"--alpha-min-ratio must be in (0, 1), got {args.alpha_min_ratio}")
    if args.seed is not None and args.cv is None and args.select not in ("stars", "ric"):
        raise UsageError("--seed shuffles the --cv folds or seeds the subsamples / rotations "
                         "of --select stars / ric; it goes with --cv or those")
    if args.n_samples is not None and not args.covariance:
        raise UsageError("--n-samples goes with --covariance (with samples it is their count)")
    plain_l1_only = args.solver != "auto" and solver_record(args.solver, "covariance").with_blocks is None
    if args.blocks is not None and plain_l1_only:
        raise UsageError(f"--solver {args.solver} handles plain l1 weights only; --blocks needs "
                         "--solver projected-gradient or auto")
    if args.seed is not None:
        check_number("--seed", args.seed, low=0, high=2 ** 32 - 1, integer=True)
    if args.tol is not None:
        check_number("--tol", args.tol, low=0)
    if args.max_iter is not None:
        check_number("--max-iter", args.max_iter, low=1, integer=True)
    if args.n_samples is not None:
        check_number("--n-samples", args.n_samples, low=1, integer=True)
    if args.standardize and args.covariance:
        raise UsageError("--standardize works on samples, not with --covariance")
    if args.max_component is not None:
        check_number("--max-component", args.max_component, low=2, integer=True)
        if not args.from_data:
            raise UsageError("--max-component goes with --from-data")
    if args.from_data:
        for opt, given in (("--covariance", args.covariance),
                           ("--blocks", args.blocks is not None)):
            if given:
                raise UsageError(f"--from-data fits from samples; it does not take {opt}")
    to_stdout = [opt for opt, path in (("--out-edges", args.out_edges), ("--out-precision", args.out_precision),
                                       ("--history", args.history)) if path == "-"]
    if len(to_stdout) > 1:
        raise UsageError(f"only one output can go to stdout, got {' and '.join(to_stdout)}")
    if args.data == "-" and args.blocks == "-":
        raise UsageError("DATA.csv and --blocks cannot both be standard input")
    check_outputs({"--out-edges": args.out_edges, "--out-precision": args.out_precision,
                   "--history": args.history, "--plot": args.plot, "--save-model": args.save_model,
                   "--plot-path": args.plot_path},
                  {"the input file": args.data, "the --blocks file": args.blocks})


def _check_select(args):
    """The options of ``--select`` and those that only go with it."""
    only = (("--gamma", args.gamma is not None, "ebic"),
            ("--stars-threshold", args.stars_threshold is not None, "stars"),
            ("--n-subsamples", args.n_subsamples is not None, "stars"),
            ("--plot-path", args.plot_path is not None, None))
    for opt, given, crit in only:
        if given and (args.select is None or crit is not None and args.select != crit):
            raise UsageError(f"{opt} goes with --select {crit or 'ebic|stars|ric'}")
    if args.select is None:
        return
    for opt, given in (("--covariance", args.covariance), ("--blocks", args.blocks is not None),
                       ("--standardize", args.standardize),
                       ("--penalize-diagonal", args.penalize_diagonal)):
        if given:
            raise UsageError(f"--select does not take {opt} (it standardises the variables "
                             "and penalises the diagonal itself, as huge does)")
    if args.gamma is not None:
        check_number("--gamma", args.gamma, low=0)
    if args.stars_threshold is not None:
        check_number("--stars-threshold", args.stars_threshold, low=0)
    if args.n_subsamples is not None:
        check_number("--n-subsamples", args.n_subsamples, low=1, high=10_000, integer=True)


def _read_blocks(path, n, names):
    text, name = read_text(path, what="a list of group labels")
    labels = [t.strip() for line in text.splitlines() for t in line.split(",") if t.strip()]
    if names is not None and len(labels) == n + 1 and labels[0] in ("group", "label", "block"):
        labels = labels[1:]
    if len(labels) != n:
        raise CommandError(f"{name}: expected {n} group labels, found {len(labels)}")
    return labels


def _run(args):
    import numpy as np

    from ..gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV

    _check_usage(args)
    data, names = read_csv_matrix(args.data, args.header)
    if args.method != "glasso":
        return _run_edges_only(args, data, names)
    n = data.shape[1]
    blocks = None if args.blocks is None else _read_blocks(args.blocks, n, names)
    if args.standardize:
        sd = data.std(axis=0)
        if np.any(sd == 0):
            j = int(np.flatnonzero(sd == 0)[0])
            raise DataFormatError(args.data, None, f"column {j + 1} is constant; cannot "
                                  "standardize")
        data = (data - data.mean(axis=0)) / sd
    common = dict(blocks=blocks, solver=args.solver, tol=args.tol, max_iter=args.max_iter,
                  penalize_diagonal=args.penalize_diagonal, verbose=args.verbose)
    t0 = time.perf_counter()
    interrupted, model = False, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            if args.from_data:
                common.update(covariance="from_data", max_component=args.max_component)
            if args.select is not None:
                from ..gaussian.selection import SparseGaussianMRFSelect

                extra = {k: v for k, v in (("gamma", args.gamma),
                                           ("stars_threshold", args.stars_threshold),
                                           ("n_subsamples", args.n_subsamples)) if v is not None}
                del common["blocks"], common["penalize_diagonal"]
                model = SparseGaussianMRFSelect(args.select, alphas=args.n_alphas,
                                                alpha_min_ratio=args.alpha_min_ratio,
                                                random_state=args.seed, **extra, **common)
                model.fit(data)
                alpha = model.alpha_
            elif args.cv is not None:
                model = SparseGaussianMRFCV(alphas=args.n_alphas, cv=args.cv,
                                            alpha_min_ratio=args.alpha_min_ratio,
                                            random_state=args.seed, **common)
                model.fit(data)
                alpha = model.alpha_
            else:
                model = SparseGaussianMRF(alpha=args.alpha, **common)
                if args.covariance:
                    model.fit_covariance(data, args.n_samples)
                else:
                    model.fit(data)
                alpha = args.alpha
        except DataFormatError as exc:
            if exc.source in ("X", "S") and exc.line is None:   # name the file instead
                message = exc.message
                reason = getattr(exc, "singular", None)
                if reason is not None:                          # and the variables as the file has them
                    from ..gaussian.solve import singular_text

                    message = message.replace(singular_text(reason), singular_text(
                        reason, lambda j: f"column {names[j]!r}" if names is not None else
                        f"value column {j + 1}"))
                raise DataFormatError("<stdin>" if args.data == "-" else args.data, None, message) from None
            raise
        except KeyboardInterrupt:
            # Ctrl-C: the plain fit keeps the iterate reached (written below, exit 130);
            # cross-validation has no model to write before its refit
            if args.cv is not None or not hasattr(model, "precision_"):
                print("spargel gmrf: interrupted before a model was reached "
                      f"({'during cross-validation' if args.cv is not None else 'before the solver ran'}); "
                      "nothing is written", file=sys.stderr)
                raise
            interrupted, alpha = True, args.alpha
    elapsed = time.perf_counter() - t0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning) and not args.quiet:
            warn("gmrf", w.message)
    write_output(args.out_edges, _edges_text(model, names))
    written = [args.out_edges if args.out_edges != "-" else "stdout (edges)"]
    if args.out_precision is not None:
        sparse = hasattr(model.precision_, "tocsr")      # the from-data path's
        write_output(args.out_precision, (_precision_entries_text if sparse else _precision_text)(
            model.precision_, names))
        written.append(args.out_precision if args.out_precision != "-" else "stdout (precision)")
    if args.history:
        write_output(args.history, json_lines(model.history_))
        written.append(args.history)
    if args.save_model:
        if names is not None:                   # the CSV header names the model's variables
            model.feature_names_in_ = np.asarray(names, dtype=object)
        model.save(args.save_model)
        written.append(args.save_model)
    if args.plot:
        from ..gaussian.plot import plot_overview

        K, labels, title = _plot_matrix(model, names, args.plot)
        how = (f"chosen by {args.cv}-fold cross-validation among {len(model.alphas_)} alphas"
               if args.cv is not None else "given")
        caption = f"alpha = {alpha:.4g} ({how})" + (", interrupted" if interrupted else "")
        if title is not None:
            title = f"{caption}\n{title}"
        ax = plot_overview(K, labels=labels, title=title, caption=caption)
        write_output(args.plot, figure_bytes(ax, args.plot))
        written.append(args.plot)
    if args.plot_path:
        from ..gaussian.plot import plot_path

        write_output(args.plot_path, figure_bytes(plot_path(model), args.plot_path))
        written.append(args.plot_path)
    if not args.quiet:
        how = ""
        if args.select is not None:
            k = model.selected_index_
            how = f" ({args.select.upper()}" + ("" if k is None else
                                                 f", index {k} of {len(model.alphas_)}") + ")"
        certificate = f"duality gap={model.duality_gap_:.3g}"
        # the sparse path has no dual point: its measure, the largest subgradient entry
        # (the last of each component solved so)
        last_kkt = {row.get("component", 0): row["kkt"]
                    for row in getattr(model, "history_", []) if "kkt" in row}
        if math.isnan(model.duality_gap_) and last_kkt:
            certificate = f"largest subgradient entry={max(last_kkt.values()):.3g}"
        print(f"gmrf: {n} variables, alpha={alpha:.6g}{how}, {len(model.edges_)} edges, "
              f"objective={model.objective_:.10g}, {certificate}, "
              f"{model.n_iter_} iterations ({model.solver_}), {elapsed:.3f}s; "
              f"wrote {', '.join(written)}", file=sys.stderr)
    if interrupted:
        print("spargel gmrf: interrupted; the model reached so far is written", file=sys.stderr)
        return 130
    return 0


def _mb_edges_text(model, names):
    """The edge list of a neighbourhood selection: ``i,j,weight`` (plus names), the weight
    the mean of the two regression coefficients ``beta_ij`` and ``beta_ji`` (standardised
    scale; 0 for a side that did not select the other)."""
    B = model.coef_
    rows = [["i", "j", "weight"] + (["name_i", "name_j"] if names is not None else [])]
    for i, j in model.edges_:
        i, j = int(i), int(j)
        wt = 0.5 * (float(B[i, j]) + float(B[j, i]))
        rows.append([i, j, repr(wt)] + ([names[i], names[j]] if names is not None else []))
    return csv_text(rows)


def _concord_edges_text(model, names):
    """CONCORD's edge list: ``i,j,weight`` (plus names), the weight the partial correlation."""
    R = model.partial_correlations_
    rows = [["i", "j", "weight"] + (["name_i", "name_j"] if names is not None else [])]
    for i, j in model.edges_:
        i, j = int(i), int(j)
        rows.append([i, j, repr(float(R[i, j]))] + ([names[i], names[j]] if names is not None else []))
    return csv_text(rows)


def _run_edges_only(args, data, names):
    """``--method mb`` (:class:`~spargel.gaussian.neighbourhood.NeighbourhoodSelection`)
    and ``--method concord`` (:class:`~spargel.gaussian.concord.Concord`); ``--from-data``:
    their modes that never form a variables x variables matrix."""
    kw = {}
    if args.tol is not None:
        kw["tol"] = args.tol
    if args.max_iter is not None:
        kw["max_iter"] = args.max_iter
    if args.select is not None:
        from ..gaussian.selection import SparseGaussianMRFSelect

        extra = {k: v for k, v in (("stars_threshold", args.stars_threshold),
                                   ("n_subsamples", args.n_subsamples)) if v is not None}
        model = SparseGaussianMRFSelect(args.select, method=args.method, rule=args.rule or "or",
                                        alphas=args.n_alphas, alpha_min_ratio=args.alpha_min_ratio,
                                        random_state=args.seed, verbose=args.verbose,
                                        covariance="from_data" if args.from_data else None,
                                        tol=args.tol, max_iter=args.max_iter, **extra)
    elif args.method == "mb":
        from ..gaussian.neighbourhood import NeighbourhoodSelection
        model = NeighbourhoodSelection(alpha=args.alpha, rule=args.rule or "or",
                                       mode="data" if args.from_data else "auto",
                                       verbose=args.verbose, **kw)
    else:
        from ..gaussian.concord import Concord
        model = Concord(alpha=args.alpha, covariance="from_data" if args.from_data else "auto",
                        verbose=args.verbose, **kw)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            model.fit(data)
        except DataFormatError as exc:
            if exc.source == "X" and exc.line is None:      # name the file instead
                raise DataFormatError("<stdin>" if args.data == "-" else args.data, None, exc.message) from None
            raise
    elapsed = time.perf_counter() - t0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning) and not args.quiet:
            warn("gmrf", w.message)
    edges_text = _mb_edges_text if args.method == "mb" else _concord_edges_text
    write_output(args.out_edges, edges_text(model, names))
    written = [args.out_edges if args.out_edges != "-" else "stdout (edges)"]
    if args.out_precision is not None:
        write_output(args.out_precision, _precision_entries_text(model.precision_, names))
        written.append(args.out_precision if args.out_precision != "-" else "stdout (precision)")
    if args.plot_path:
        from ..gaussian.plot import plot_path

        write_output(args.plot_path, figure_bytes(plot_path(model), args.plot_path))
        written.append(args.plot_path)
    if not args.quiet:
        fitted = model.estimator_ if args.select is not None else model
        how = (f"neighbourhood selection, {fitted.rule} rule, {fitted.mode_} mode), "
               f"{int(fitted.n_iter_.sum())} sweeps" if args.method == "mb" else
               f"CONCORD), {fitted.n_iter_} sweeps, {fitted.n_kkt_passes_} KKT passes")
        alpha = model.alpha_ if args.select is not None else args.alpha
        chosen = ""
        if args.select is not None:
            k = model.selected_index_
            chosen = f" ({args.select.upper()}" + ("" if k is None else
                                                   f", index {k} of {len(model.alphas_)}") + ")"
        print(f"gmrf: {data.shape[1]} variables, alpha={alpha:.6g}{chosen}, {len(model.edges_)} "
              f"edges ({how}, {elapsed:.3f}s; wrote {', '.join(written)}", file=sys.stderr)
    return 0


def run(args):
    """Execute ``spargel gmrf`` with parsed arguments; returns the exit status (errors
    are raised and turned into one line and a status by :func:`spargel.cli.app.main`)."""
    if not args.quiet:                  # a long first compilation says so on stderr
        from ..core import first_use
        first_use.enable()
    return _run(args)
