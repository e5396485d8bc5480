"""``spargel gmrf``: learn a sparse Gaussian MRF from a CSV file.

Input: a CSV of samples (rows) by variables (columns). A first row with any
non-numeric field is taken as the variable names; a first column whose
entries are not numbers is taken as row labels and dropped. With
``--covariance`` the CSV is a symmetric covariance matrix instead.

Output:

* the precision matrix as CSV (``--out-precision``; default
  ``<input>.precision.csv`` next to the input; ``-`` for stdout), with the
  variable names as header when the input had them;
* the edge list as CSV with columns ``i,j,weight`` (0-based indices and
  K_ij; plus ``name_i,name_j`` when names are known) for every i < j with
  K_ij != 0 (``--out-edges``; default ``<input>.edges.csv``; ``-`` for stdout);
* a one-line summary on stderr (unless ``--quiet``), optional per-iteration
  history as JSON lines (``--history``) and a picture (``--plot``).

Errors are reported as one line on stderr with exit status 2 (bad input) or
1 (anything else), never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

__all__ = ["add_parser", "run", "main", "read_csv_matrix"]


class CLIError(Exception):
    """Bad input; the message is printed as one line."""


def _is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def read_csv_matrix(path):
    """Read a numeric CSV; returns (values (m, n) float array, names or None).

    Raises CLIError naming the file and line for anything malformed.
    """
    import numpy as np

    p = Path(path)
    try:
        fh = open(p, newline="", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    with fh:
        try:
            rows = [(k + 1, r) for k, r in enumerate(csv.reader(fh)) if r and any(c.strip() for c in r)]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CLIError(f"{path}: not a readable CSV file ({exc})") from None
    if not rows:
        raise CLIError(f"{path}: the file is empty")
    names = None
    first = [c.strip() for c in rows[0][1]]
    if not all(_is_number(c) for c in first):
        names = first
        rows = rows[1:]
    if not rows:
        raise CLIError(f"{path}: no data rows after the header")
    label_col = not _is_number(rows[0][1][0].strip())
    data = []
    width = None
    for line, r in rows:
        r = [c.strip() for c in r]
        if label_col:
            r = r[1:]
        if width is None:
            width = len(r)
        elif len(r) != width:
            raise CLIError(f"{path} line {line}: expected {width} values, found {len(r)}")
        vals = []
        for col, c in enumerate(r):
            try:
                v = float(c)
            except ValueError:
                raise CLIError(f"{path} line {line}: non-numeric value {c!r} in column "
                               f"{col + 1 + int(label_col)}") from None
            if not math.isfinite(v):
                raise CLIError(f"{path} line {line}: non-finite value {c!r} in column "
                               f"{col + 1 + int(label_col)}")
            vals.append(v)
        data.append(vals)
    if width == 0:
        raise CLIError(f"{path}: no numeric columns")
    if names is not None:
        if label_col and len(names) == width + 1:
            names = names[1:]
        if len(names) != width:
            raise CLIError(f"{path} line {rows[0][0] - 1 if rows else 1}: header has {len(names)} "
                           f"names but rows have {width} values")
    return np.asarray(data, dtype=np.float64), names


def add_parser(subparsers):
    """Add the ``gmrf`` sub-command to an argparse sub-parsers object."""
    p = subparsers.add_parser(
        "gmrf",
        help="learn a sparse Gaussian MRF (sparse inverse covariance) from a CSV file",
        description=(
            "Learn a sparse Gaussian Markov random field: minimise "
            "-log det K + tr(S K) + alpha * sum_{i!=j} |K_ij| over positive definite K, "
            "S the empirical covariance of DATA.csv (samples in rows, variables in columns; "
            "an optional header row of names and an optional first column of row labels "
            "are detected). Writes the precision matrix and the edge list as CSV."),
        epilog=(
            "examples:\n"
            "  spargel gmrf expr.csv --alpha 0.2\n"
            "  spargel gmrf expr.csv --cv 5 --standardize --out-edges -\n"
            "  spargel gmrf expr.csv --alpha 0.05 --blocks groups.csv --plot graph.png\n"
            "exit status: 0 success, 1 solver did not reach --tol, 2 bad input"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV (or a covariance "
                   "matrix with --covariance)")
    p.add_argument("--alpha", type=float, default=None,
                   help="l1 weight on every off-diagonal entry (required unless --cv)")
    p.add_argument("--cv", type=int, default=None, metavar="K",
                   help="choose alpha by K-fold cross-validated log-likelihood on a "
                   "warm-started path (--n-alphas values from alpha_max)")
    p.add_argument("--n-alphas", type=int, default=10, help="grid size for --cv (default 10)")
    p.add_argument("--solver", default="auto", choices=["auto", "newton-cd", "projected-gradient"],
                   help="auto (default): newton-cd for l1, projected-gradient (Algorithm 3) with "
                   "--blocks")
    p.add_argument("--tol", type=float, default=1e-6,
                   help="relative duality-gap tolerance (default 1e-6)")
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
    p.add_argument("--out-precision", metavar="PATH", default=None,
                   help="precision matrix CSV (default <DATA>.precision.csv; '-' = stdout)")
    p.add_argument("--out-edges", metavar="PATH", default=None,
                   help="edge list CSV i,j,weight (default <DATA>.edges.csv; '-' = stdout)")
    p.add_argument("--history", metavar="PATH", default=None,
                   help="write the per-iteration history as JSON lines")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="draw the learned graph (needs matplotlib)")
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
    import numpy as np

    from spargel.estimators.gaussian import SparseGaussianMRF, SparseGaussianMRFCV

    if args.alpha is None and args.cv is None:
        raise CLIError("give --alpha X or --cv K")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise CLIError(f"--alpha must be a finite number >= 0, got {args.alpha}")
    if args.cv is not None and args.covariance:
        raise CLIError("--cv needs samples, not --covariance")
    if not (math.isfinite(args.tol) and args.tol >= 0):
        raise CLIError(f"--tol must be >= 0, got {args.tol}")
    if args.max_iter is not None and args.max_iter < 1:
        raise CLIError(f"--max-iter must be >= 1, got {args.max_iter}")
    data, names = read_csv_matrix(args.data)
    n = data.shape[1]
    blocks = None
    if args.blocks is not None:
        try:
            text = Path(args.blocks).read_text(encoding="utf-8")
        except OSError as exc:
            raise CLIError(f"cannot read {args.blocks}: {exc.strerror or exc}") from None
        labels = [t.strip() for line in text.splitlines() for t in line.split(",") if t.strip()]
        if names is not None and len(labels) == n + 1 and labels[0] in ("group", "label", "block"):
            labels = labels[1:]
        if len(labels) != n:
            raise CLIError(f"{args.blocks}: expected {n} group labels, found {len(labels)}")
        blocks = labels
    if args.standardize and not args.covariance:
        sd = data.std(axis=0)
        if np.any(sd == 0):
            j = int(np.flatnonzero(sd == 0)[0])
            raise CLIError(f"{args.data}: column {j + 1} is constant; cannot standardize")
        data = (data - data.mean(axis=0)) / sd
    common = dict(blocks=blocks, solver=args.solver, tol=args.tol, max_iter=args.max_iter,
                  penalize_diagonal=args.penalize_diagonal)
    t0 = time.perf_counter()
    if args.cv is not None:
        model = SparseGaussianMRFCV(alphas=args.n_alphas, cv=args.cv, random_state=0, **common)
        model.fit(data)
        alpha = model.alpha_
    else:
        model = SparseGaussianMRF(alpha=args.alpha, **common)
        if args.covariance:
            model.fit_covariance(data, args.n_samples)
        else:
            if data.shape[0] < 2:
                raise CLIError(f"{args.data}: need at least 2 samples, found {data.shape[0]}")
            model.fit(data)
        alpha = args.alpha
    elapsed = time.perf_counter() - t0
    stem = Path(args.data)
    out_p = args.out_precision or str(stem.with_suffix("")) + ".precision.csv"
    out_e = args.out_edges or str(stem.with_suffix("")) + ".edges.csv"
    K = model.precision_
    fh, close = _open_out(out_p)
    try:
        w = csv.writer(fh, lineterminator="\n")
        if names is not None:
            w.writerow(names)
        for row in K:
            w.writerow([repr(float(v)) for v in row])
    finally:
        if close:
            fh.close()
    fh, close = _open_out(out_e)
    try:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["i", "j", "weight"] + (["name_i", "name_j"] if names is not None else []))
        for (i, j), wt in zip(model.edges_, model.edge_weights_):
            extra = [names[i], names[j]] if names is not None else []
            w.writerow([int(i), int(j), repr(float(wt))] + extra)
    finally:
        if close:
            fh.close()
    if args.history:
        fh, close = _open_out(args.history)
        try:
            for row in model.history_:
                fh.write(json.dumps({k: (None if isinstance(v, float) and not math.isfinite(v)
                                         else (float(v) if hasattr(v, "dtype") else v))
                                     for k, v in row.items()}) + "\n")
        finally:
            if close:
                fh.close()
    if args.plot:
        from spargel.gaussian.plot import plot_graph

        ax = plot_graph(K, labels=names)
        try:
            ax.figure.savefig(args.plot, dpi=150, bbox_inches="tight")
        except (OSError, ValueError) as exc:
            raise CLIError(f"cannot write {args.plot}: {exc}") from None
    if not args.quiet:
        print(f"gmrf: {n} variables, alpha={alpha:.6g}, {len(model.edges_)} edges, "
              f"objective={model.objective_:.10g}, duality gap={model.duality_gap_:.3g}, "
              f"{model.n_iter_} iterations ({model.solver_}), {elapsed:.3f}s; "
              f"wrote {out_p} and {out_e}", file=sys.stderr)
    return 0 if model.converged_ else 1


def run(args):
    """Execute ``spargel gmrf`` with parsed arguments; returns the exit status."""
    try:
        return _run(args)
    except CLIError as exc:
        print(f"spargel gmrf: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"spargel gmrf: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"spargel gmrf: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("spargel gmrf: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # last resort: one line, no traceback
        print(f"spargel gmrf: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def main(argv=None):
    """Stand-alone entry (``python -m spargel.gaussian.cli gmrf ...``)."""
    parser = argparse.ArgumentParser(prog="spargel")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
