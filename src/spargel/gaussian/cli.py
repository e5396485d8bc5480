"""``spargel gmrf``: learn a sparse Gaussian MRF from a CSV file.

Input: a CSV of samples (rows) by variables (columns). A first row with any
non-numeric field is taken as the variable names; a first column whose
entries are not numbers is taken as row labels and dropped. With
``--covariance`` the CSV is a symmetric positive semidefinite covariance
matrix instead.

Output, where asked and nowhere else:

* the edge list as CSV with columns ``i,j,weight`` (0-based indices and
  K_ij; plus ``name_i,name_j`` when names are known) for every i < j with
  K_ij != 0: to ``--out-edges PATH``, by default to standard output;
* the precision matrix as CSV (``--out-precision PATH``), with the
  variable names as header when the input had them;
* optional per-iteration history as JSON lines (``--history``) and a
  picture (``--plot``); a one-line summary on stderr (unless ``--quiet``),
  per-iteration lines on stderr with ``--verbose``.

Files are written atomically (a temporary file in the same folder, flushed
to disk, then renamed; nothing is left behind on failure), and an output
path equal to the input path (or to another output) is refused.

Exit status, as every ``spargel`` command: 0 success (a solver that stopped
before ``--tol`` only prints a warning), 1 bad input or a runtime error, 2
wrong usage, 130 interrupted. Errors are one line on stderr, never a
traceback.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

__all__ = ["add_parser", "run", "main", "read_csv_matrix"]


class CLIError(Exception):
    """A problem with a one-line explanation; ``status`` 1 (input or
    runtime) or 2 (usage)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def _is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def read_csv_matrix(path):
    """Read a numeric CSV; returns (values (m, n) float array, names or None).

    Raises :class:`~spargel.errors.DataFormatError` naming the file and line
    for anything malformed.
    """
    import numpy as np

    from spargel.errors import DataFormatError

    p = Path(path)
    try:
        fh = open(p, newline="", encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    with fh:
        try:
            rows = [(k + 1, r) for k, r in enumerate(csv.reader(fh)) if r and any(c.strip() for c in r)]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataFormatError(path, None, f"not a readable CSV file ({exc})") from None
    if not rows:
        raise DataFormatError(path, None, "the file is empty")
    names = None
    first = [c.strip() for c in rows[0][1]]
    header_line = rows[0][0]
    if not all(_is_number(c) for c in first):
        names = first
        rows = rows[1:]
    if not rows:
        raise DataFormatError(path, None, "no data rows after the header")
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
            raise DataFormatError(path, line, f"expected {width} values, found {len(r)}")
        vals = []
        for col, c in enumerate(r):
            try:
                v = float(c)
            except ValueError:
                raise DataFormatError(path, line, f"non-numeric value {c!r} in column "
                                      f"{col + 1 + int(label_col)}") from None
            if not math.isfinite(v):
                raise DataFormatError(path, line, f"non-finite value {c!r} in column "
                                      f"{col + 1 + int(label_col)}")
            vals.append(v)
        data.append(vals)
    if width == 0:
        raise DataFormatError(path, None, "no numeric columns")
    if names is not None:
        if label_col and len(names) == width + 1:
            names = names[1:]
        if len(names) != width:
            raise DataFormatError(path, header_line, f"header has {len(names)} names but rows "
                                  f"have {width} values")
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
            "are detected). Writes the edge list (to stdout unless --out-edges) and, when "
            "asked, the precision matrix."),
        epilog=(
            "examples:\n"
            "  spargel gmrf expr.csv --alpha 0.2 > edges.csv\n"
            "  spargel gmrf expr.csv --cv 5 --standardize --out-precision K.csv\n"
            "  spargel gmrf expr.csv --alpha 0.05 --blocks groups.csv --plot graph.png\n"
            "cross-validation folds are contiguous blocks of rows (as scikit-learn's KFold\n"
            "and SparseGaussianMRFCV by default); --seed N shuffles them.\n"
            "exit status: 0 ok (a solver stopping before --tol prints a warning),\n"
            "1 bad input or runtime error, 2 usage error, 130 interrupted"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", metavar="DATA.csv", help="samples x variables CSV (or a covariance "
                   "matrix with --covariance)")
    p.add_argument("--alpha", type=float, default=None,
                   help="l1 weight on every off-diagonal entry (required unless --cv)")
    p.add_argument("--cv", type=int, default=None, metavar="K",
                   help="choose alpha by K-fold cross-validated log-likelihood on a "
                   "warm-started path (--n-alphas values from alpha_max)")
    p.add_argument("--n-alphas", type=int, default=10, help="grid size for --cv (default 10)")
    p.add_argument("--seed", type=int, default=None,
                   help="shuffle the --cv folds with this seed (default: contiguous folds)")
    p.add_argument("--solver", default="auto",
                   choices=["auto", "newton-cg", "newton-cd", "projected-gradient"],
                   help="auto (default): newton-cg for l1, projected-gradient (Algorithm 3) with "
                   "--blocks")
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
    p.add_argument("--out-edges", metavar="PATH", default="-",
                   help="edge list CSV i,j,weight (default '-': stdout)")
    p.add_argument("--out-precision", metavar="PATH", default=None,
                   help="precision matrix CSV ('-' = stdout; default: not written)")
    p.add_argument("--history", metavar="PATH", default=None,
                   help="write the per-iteration history as JSON lines")
    p.add_argument("--save-model", metavar="PATH", default=None,
                   help="write the fitted model (spargel's model format; load it with "
                   "SparseGaussianMRF.load or SparseGaussianMRFCV.load with --cv)")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="draw the learned graph, with the clustered heat map of the partial "
                   "correlations beside it above 30 variables (needs matplotlib)")
    p.add_argument("--verbose", action="store_true",
                   help="one line per solver iteration on stderr")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)
    return p


# -- outputs -----------------------------------------------------------------------------

def _same_path(a, b):
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _check_outputs(args):
    """Usage errors for outputs that would overwrite the input or each other."""
    outs = [(opt, path) for opt, path in (("--out-edges", args.out_edges),
                                          ("--out-precision", args.out_precision),
                                          ("--history", args.history), ("--plot", args.plot),
                                          ("--save-model", args.save_model))
            if path is not None and path != "-"]
    for opt, path in outs:
        if _same_path(path, args.data):
            raise CLIError(f"{opt} {path} is the input file; refusing to overwrite it", 2)
        if args.blocks is not None and _same_path(path, args.blocks):
            raise CLIError(f"{opt} {path} is the --blocks file; refusing to overwrite it", 2)
    for k, (opt, path) in enumerate(outs):
        for opt2, path2 in outs[k + 1:]:
            if _same_path(path, path2):
                raise CLIError(f"{opt} and {opt2} name the same file {path}", 2)
    stdout = [opt for opt, path in (("--out-edges", args.out_edges),
                                    ("--out-precision", args.out_precision),
                                    ("--history", args.history)) if path == "-"]
    if len(stdout) > 1:
        raise CLIError(f"only one output can go to stdout, got {' and '.join(stdout)}", 2)
    for opt, path in outs:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise CLIError(f"{opt} {path}: the folder {folder} does not exist")
        if os.path.isdir(path):
            raise CLIError(f"{opt} {path} is a folder")


def _write_atomically(path, write, binary=False):
    """``write(fh)`` into a temporary file beside ``path``, flushed to disk,
    then renamed over ``path``; the temporary file is removed on failure."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".spargel-", suffix=".tmp")
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with (os.fdopen(fd, "wb") if binary else
              os.fdopen(fd, "w", newline="", encoding="utf-8")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def _emit(path, write):
    if path == "-":
        buf = io.StringIO()
        write(buf)
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    else:
        _write_atomically(path, write)


def _precision_writer(K, names):
    def write(fh):
        w = csv.writer(fh, lineterminator="\n")
        if names is not None:
            w.writerow(names)
        for row in K:
            w.writerow([repr(float(v)) for v in row])
    return write


def _edges_writer(model, names):
    def write(fh):
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["i", "j", "weight"] + (["name_i", "name_j"] if names is not None else []))
        for (i, j), wt in zip(model.edges_, model.edge_weights_):
            extra = [names[i], names[j]] if names is not None else []
            w.writerow([int(i), int(j), repr(float(wt))] + extra)
    return write


def _history_writer(history):
    def clean(v):
        if hasattr(v, "dtype"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    def write(fh):
        for row in history:
            fh.write(json.dumps({k: clean(v) for k, v in row.items()}) + "\n")
    return write


# -- the command -------------------------------------------------------------------------

def _check_usage(args):
    if args.alpha is None and args.cv is None:
        raise CLIError("give --alpha X or --cv K", 2)
    if args.alpha is not None and args.cv is not None:
        raise CLIError("give either --alpha or --cv, not both", 2)
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise CLIError(f"--alpha must be a finite number >= 0, got {args.alpha}", 2)
    if args.cv is not None and args.cv < 2:
        raise CLIError(f"--cv must be >= 2 folds, got {args.cv}", 2)
    if args.cv is not None and args.covariance:
        raise CLIError("--cv needs samples, not --covariance", 2)
    if args.n_alphas < 1:
        raise CLIError(f"--n-alphas must be >= 1, got {args.n_alphas}", 2)
    if args.tol is not None and not (math.isfinite(args.tol) and args.tol >= 0):
        raise CLIError(f"--tol must be a finite number >= 0, got {args.tol}", 2)
    if args.max_iter is not None and args.max_iter < 1:
        raise CLIError(f"--max-iter must be >= 1, got {args.max_iter}", 2)
    if args.standardize and args.covariance:
        raise CLIError("--standardize works on samples, not with --covariance", 2)
    _check_outputs(args)


def _read_blocks(path, n, names):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a text file ({exc})") from None
    labels = [t.strip() for line in text.splitlines() for t in line.split(",") if t.strip()]
    if names is not None and len(labels) == n + 1 and labels[0] in ("group", "label", "block"):
        labels = labels[1:]
    if len(labels) != n:
        raise CLIError(f"{path}: expected {n} group labels, found {len(labels)}")
    return labels


def _run(args):
    import numpy as np

    from spargel.errors import ConvergenceWarning, DataFormatError
    from spargel.estimators.gaussian import SparseGaussianMRF, SparseGaussianMRFCV

    _check_usage(args)
    data, names = read_csv_matrix(args.data)
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            if args.cv is not None:
                model = SparseGaussianMRFCV(alphas=args.n_alphas, cv=args.cv,
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
                raise DataFormatError(args.data, None, exc.message) from None
            raise
    elapsed = time.perf_counter() - t0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning) and not args.quiet:
            print(f"spargel gmrf: warning: {w.message}", file=sys.stderr)
    _emit(args.out_edges, _edges_writer(model, names))
    written = [args.out_edges if args.out_edges != "-" else "stdout (edges)"]
    if args.out_precision is not None:
        _emit(args.out_precision, _precision_writer(model.precision_, names))
        written.append(args.out_precision if args.out_precision != "-" else "stdout (precision)")
    if args.history:
        _emit(args.history, _history_writer(model.history_))
        written.append(args.history)
    if args.save_model:
        if names is not None:                   # the CSV header names the model's variables
            model.feature_names_in_ = np.asarray(names, dtype=object)
        model.save(args.save_model)
        written.append(args.save_model)
    if args.plot:
        from spargel.gaussian.plot import plot_overview

        ax = plot_overview(model.precision_, labels=names)
        suffix = Path(args.plot).suffix.lstrip(".") or "png"
        _write_atomically(args.plot, lambda fb: ax.figure.savefig(
            fb, dpi=150, bbox_inches="tight", format=suffix), binary=True)
        written.append(args.plot)
    if not args.quiet:
        print(f"gmrf: {n} variables, alpha={alpha:.6g}, {len(model.edges_)} edges, "
              f"objective={model.objective_:.10g}, duality gap={model.duality_gap_:.3g}, "
              f"{model.n_iter_} iterations ({model.solver_}), {elapsed:.3f}s; "
              f"wrote {', '.join(written)}", file=sys.stderr)
    return 0


def run(args):
    """Execute ``spargel gmrf`` with parsed arguments; returns the exit status."""
    from spargel.errors import SpargelError

    try:
        return _run(args)
    except CLIError as exc:
        status, message = exc.status, str(exc)
    except KeyboardInterrupt:
        print("spargel gmrf: interrupted", file=sys.stderr)
        return 130
    except (SpargelError, ValueError, ImportError, OSError, MemoryError) as exc:
        status, message = 1, str(exc) or type(exc).__name__
    except Exception as exc:  # last resort: one line, no traceback
        if os.environ.get("SPARGEL_DEBUG"):
            raise
        status, message = 1, f"{type(exc).__name__}: {exc}"
    message = " ".join(message.split())
    print(f"spargel gmrf: error: {message}", file=sys.stderr)
    return status


def main(argv=None):
    """Stand-alone entry (``python -m spargel.gaussian.cli gmrf ...``)."""
    parser = argparse.ArgumentParser(prog="spargel")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
