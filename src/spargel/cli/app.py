"""The ``spargel`` command-line tool.

Sub-commands (``spargel COMMAND --help`` documents each one)::

    spargel train [options] TRAIN MODEL        learn a CRF from a column file
    spargel label --model MODEL [INPUT [OUTPUT]]  append predicted labels
    spargel eval [FILE]                         conlleval's chunk scores report
    spargel dump MODEL                          list the non-zero weights
    spargel plot HISTORY.jsonl ...              draw training histories
    spargel demo                                a synthetic end-to-end example
    spargel gmrf DATA.csv --alpha X             sparse Gaussian MRFs (inverse covariance)
    spargel mrf DATA.csv --l1 X                 discrete pairwise MRF structure learning

Conventions: an input of ``-`` (or none) is standard input, an output of ``-``
(or none) standard output. Every error is one line ``spargel: error: ...`` on
standard error, never a traceback (set ``SPARGEL_DEBUG=1`` to see one). Every
command reads, writes and exits through :mod:`spargel.cli.common`: one table of exit
statuses (:data:`~spargel.cli.common.EXIT_STATUSES`, printed by ``spargel --help``),
one reader of inputs and one writer of outputs.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import math
import os
import re
import signal
import sys
import time

from .common import (PROG, CommandError, UsageError, check_outputs, describe, error, exit_status,
                     exit_status_help, read_text, write_output)

#: Stored as the first line of the template of a model trained by ``spargel train``,
#: so that ``spargel label`` knows how many observation columns the input has.
_COLUMNS_MARK = "# spargel train: {n} observation column(s) before the label"
_COLUMNS_RE = re.compile(r"^# spargel train: (\d+) observation column")

#: Strings that stand for "no label given" in the label column of ``label --force``.
_BLANKS = ("", "_")



def _solver_help():
    """One line per solver of ``spargel.solvers.SOLVERS`` (so new solvers appear here)."""
    from ..solvers import SOLVERS

    lines = []
    for name, entry in SOLVERS.items():
        if isinstance(entry, dict):
            text = entry.get("description", "")
        elif isinstance(entry, (tuple, list)):
            text = next((x for x in reversed(entry) if isinstance(x, str)), "")
        else:
            text = getattr(entry, "description", "") or ""
        lines.append(f"{name}{' (default)' if name == 'owlqn' else ''}: {text}")
    return "; ".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line and is raised instead of exiting."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keep the hand-made line breaks of descriptions and epilogs; show defaults; never
    break a line inside a hyphenated name (OWL-QN, sgd-l1)."""

    def _split_lines(self, text, width):
        import textwrap
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("%(default)" not in text and action.option_strings and default is not None
                and default is not argparse.SUPPRESS and not isinstance(default, bool)):
            text += " (default: %(default)s)"
        return text


# ---------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------

_TRAIN_EPILOG = """\
data format:
  One token per line, whitespace-separated columns, a blank line between
  sequences; the last column is the label, the others are observations that the
  patterns refer to as %x[row,col] (col 0 is the first column). -DOCSTART- lines
  are skipped.

default features (without --pattern), for every observation column c:
  U<c>-1:%x[-1,c]   U<c>+0:%x[0,c]   U<c>+1:%x[1,c]   and label transitions (B;
  with --order 2 also the label triples, T).

second order (--order 2):
  A chain over label pairs: B patterns (and a bare B) weigh the pair (previous
  label, label) on every token, the first token's pair being (__BOS__, label);
  a bare T line weighs the label triples. The pattern file needs a T line.

objective:
  sum over sequences of -log p(y|x)  +  l1 * |w|_1  +  l2/2 * |w|_2^2

equivalents in other tools:
  spargel              Wapiti                 CRFsuite                    CRF++
  --pattern FILE       -p/--pattern FILE      (attribute files)           template file
  --solver owlqn       -a l-bfgs (rho1>0)     -a lbfgs -p c1=...          -a CRF-L1
  --solver lbfgs       -a l-bfgs (rho1=0)     -a lbfgs -p c1=0            -a CRF-L2
  --l1 X               -1/--rho1 X            -p c1=X                     -a CRF-L1 -c 1/X
  --l2 X               -2/--rho2 X            -p c2=X/2  (l2 = 2*c2)      -a CRF-L2 -c 1/X
  --max-iter N         -i/--maxiter N         -p max_iterations=N         -m N
  --tol X, --window N  -e/--stopeps, -w       -p delta=X, -p period=N     -e X
  --gtol X             (gradient test)        -p epsilon=X
  --threads N          -t/--nthread N         (single-threaded)           -p N
  --dev FILE           -d/--devel FILE        -e M (holdout group)
  --feature-space      full (Wapiti)          observed (CRFsuite default) full
  (Wapiti's rho1/rho2 equal l1/l2; CRFsuite's c2 multiplies |w|^2 without the 1/2,
  so l2 = 2*c2.)
  spargel train also takes their short options where it has their meaning:
  Wapiti's -1 X, -2 X, -e X, -w N, -i N, -t N, -p FILE and -a l-bfgs / sgd-l1 /
  bcd; CRF++'s -a CRF-L2 / CRF-L1 with -c C (the penalty 1/C; -c C alone is
  CRF-L2). Wapiti's -c (--compact), -a rprop, -m MODEL and CRF++'s -f N, -m N,
  -p N, -a MIRA are refused with spargel's equivalent, if any.

Ctrl-C stops after the current iteration (or --stream chunk) and writes the
model reached so far (exit status 130); press it twice to stop at once (the last
completed iteration is written). The model is written atomically (a temporary
file beside MODEL, renamed at the end), through a symbolic link to its target;
a MODEL that is not a regular file, or that is also an input, is refused.

examples:
  spargel train --pattern chunking.tpl --dev test.txt train.txt chunk.model
  spargel train --l1 0.5 --l2 1e-3 --history run.jsonl train.txt model
  spargel train --order 2 --pattern np.tpl train.txt np.model
"""

_LABEL_EPILOG = """\
input:
  A column file like the training data, with or without the gold label column
  (spargel knows how many observation columns the model was trained on; extra
  columns are kept in the output). The predicted label is appended as a new last
  column, so the output of a labelled input can go straight into 'spargel eval'.

  --nbest K          K label columns, best path first (a path that does not
                     exist, for very short sequences, is shown as '_'; K is
                     lowered to the number of label sequences that exist, and a
                     K that cannot fit in memory is refused);
  --nbest K --blocks each sequence K times, each copy preceded by a line
                     '# rank R probability P';
  --marginals        after every label column, the probability of that label at
                     that token (from the unconstrained model);
  --force            the input's last column is a label column: a label there is
                     imposed on decoding, '_' (or an empty tab-separated field)
                     is predicted.

  With a CRFsuite model file (from 'crfsuite learn' or python-crfsuite), INPUT is
  in CRFsuite's data format (label, then tab-separated attributes 'name' or
  'name:value') and the output is 'crfsuite tag''s: one predicted label a line
  (with --marginals: 'label:probability', as 'crfsuite tag -i').

output:
  OUTPUT is written completely or not at all (a temporary file renamed at the
  end); it may not be INPUT or MODEL. Text is written in --encoding.

examples:
  spargel label -m chunk.model test.txt > test.out && spargel eval test.out
  spargel label -m chunk.model --nbest 3 test.txt | spargel eval --pred -3
  cat raw.txt | spargel label -m chunk.model --marginals
"""

_EVAL_EPILOG = """\
input:
  A column file whose last two fields are the gold and the predicted tags (as
  written by 'spargel label'), or use --gold/--pred to pick columns (1-based,
  negative counts from the end; --gold defaults to the column just before
  --pred, so after 'label --nbest K' use '--pred -K').

conlleval (default):
  The file is read and scored exactly as conlleval.pl (2004-01-26) does, and its
  report printed byte for byte: fields split on single spaces (-d: a regular
  expression; a file conlleval refuses because its first line is tab-separated
  is split on tabs), empty lines and lines starting with -X- are sentence
  boundaries, -DOCSTART- lines are tokens, a tag is cut at its first hyphen,
  chunks by conlleval's B/I/E/O table (IOBES: E-X B-X is one chunk to it).
  -r, -o, -l as in conlleval.

other readings:
  --scheme iob1/iob2/iobes/bilou/auto: the same file reading, chunks read
  strictly in that scheme (S-/U- one-token chunks, E-X B-X two chunks); tags
  with another prefix are refused. --per-tag: token accuracy and precision /
  recall / F1 per tag, for tag sets that are not chunks (POS tags, phonemes).

output:
  conlleval's report (token accuracy, overall precision / recall / FB1, then one
  line per chunk type ending with the number of predicted chunks), or its LaTeX
  rows with -l. --json prints one JSON object whose scores are fractions in
  [0, 1] (as every score spargel stores, e.g. the history's dev_f1).
"""

_DUMP_EPILOG = """\
output:
  One line per non-zero weight, tab-separated:
      observation   previous-label   label   weight
  previous-label is '-' for a state (unigram) feature; plain label transitions
  have the observation 'B'. In a second-order model the first token's previous
  label is __BOS__, and the label triples have the observation 'T' and the two
  previous labels, space-separated. Sorted by decreasing |weight| unless --sort
  says otherwise; pipe into 'sort -t$'\\t' -k4,4g' for other orders.
"""

_PLOT_EPILOG = """\
Each HISTORY.jsonl is one run (as written by 'spargel train --history'); all runs
share one figure: objective and active features against time (or iterations),
and the development F1 (or accuracy) when the runs have one. Needs matplotlib:
pip install 'spargel[plot]'.
"""


def build_parser():
    """The argparse parser of the ``spargel`` command (sub-commands included)."""
    from .. import __version__

    parser = _Parser(
        prog=PROG, formatter_class=_Formatter,
        description="Sparse learning of log-linear and graphical models: l1 / elastic-net CRFs for "
                    "sequence labelling (train, label, eval, dump) with Wapiti / CRFsuite / CRF++ style "
                    "commands, pairwise MRF structure learning (mrf) and sparse Gaussian MRFs (gmrf).",
        epilog="Run 'spargel COMMAND --help' for the options of a command.\n\n" + exit_status_help())
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    # -- train ---------------------------------------------------------------------------
    p = sub.add_parser("train", help="train a CRF on a CoNLL-style column file",
                       description="Train a sparse linear-chain CRF on a column file and write "
                                   "the model.", epilog=_TRAIN_EPILOG, formatter_class=_Formatter)
    p.add_argument("train", metavar="TRAIN", help="training data (column file; '-' for stdin)")
    p.add_argument("model", metavar="MODEL", help="where to write the model")
    p.add_argument("-p", "--pattern", metavar="FILE",
                   help="feature template (CRF++ / Wapiti pattern file); default: the current, "
                        "previous and next token of every observation column, plus transitions")
    p.add_argument("--pattern-format", choices=("auto", "crfpp", "wapiti"), default="auto",
                   help="language of --pattern: crfpp (CRF++ templates; %%t/%%m take Python "
                        "regexes), wapiti (Wapiti pattern files: its regexes, padding, @ offsets, "
                        "# comments); auto: a '# format: wapiti' line says wapiti, else crfpp "
                        "unless only Wapiti's language reads the file")
    p.add_argument("-c", "--cost", dest="crfpp_cost", nargs="?", const="", default=None, metavar="C",
                   help="CRF++'s -c C: the penalty is 1/C (--l2 1/C, or --l1 1/C with -a CRF-L1); "
                        "without C (Wapiti's --compact) it is refused")
    p.add_argument("-f", "--freq", dest="crfpp_freq", default=None, metavar="N",
                   help="CRF++'s feature frequency cutoff: refused (spargel has none; --l1 removes "
                        "the features the data does not support)")
    p.add_argument("-m", dest="train_m", default=None, metavar="N|MODEL",
                   help="refused: CRF++'s -m N is --max-iter N, Wapiti's -m MODEL is --init MODEL")
    p.add_argument("-a", "--solver", default="owlqn",
                   help=f"how to minimise the objective -- {_solver_help()}. lbfgs needs --l1 0")
    p.add_argument("--l1", "--rho1", type=_nonneg_float, default=1.0, metavar="X",
                   help="l1 penalty weight (Wapiti rho1, CRFsuite c1)")
    p.add_argument("--l2", "--rho2", type=_nonneg_float, default=0.0, metavar="X",
                   help="l2 penalty weight: l2/2*|w|^2 (Wapiti rho2; CRFsuite: 2*c2)")
    p.add_argument("-i", "--max-iter", "--maxiter", dest="max_iter", type=_nonneg_int, default=None,
                   metavar="N", help="iteration limit (passes for sgd-l1); default: the solver's "
                                     "(500 for owlqn/lbfgs, 30 passes for sgd-l1, 200 sweeps for bcd/cd)")
    p.add_argument("--stream", type=_nonneg_int, default=None, metavar="N",
                   help="train with sgd-l1 reading TRAIN in chunks of N sequences, for data that "
                        "does not fit in memory (--max-iter passes, default 1; --dev, --history "
                        "and --threads are not used)")
    p.add_argument("--init", metavar="MODEL", default=None,
                   help="with --stream: continue from the weights of this saved model (warm start)")
    p.add_argument("-e", "--tol", "--stopeps", type=_nonneg_float, default=1e-5, metavar="X",
                   help="stop when the objective improves by less than a relative X over "
                        "--window iterations (0 disables)")
    p.add_argument("--gtol", type=_nonneg_float, default=1e-5, metavar="X",
                   help="stop when |pseudo-gradient| <= X * max(1, |w|) (0 disables)")
    p.add_argument("-w", "--window", "--period", "--stopwin", type=_pos_int, default=10, metavar="N",
                   help="iterations over which --tol is measured")
    p.add_argument("-t", "--threads", "--nthread", dest="threads", type=int, default=1, metavar="N",
                   help="threads for the gradient (-1: all cores)")
    p.add_argument("-d", "--dev", "--devel", dest="dev", metavar="FILE",
                   help="development data, scored after every iteration (accuracy, and chunk F1 "
                        "for B-/I-/E-/S- tags)")
    p.add_argument("--history", metavar="FILE.jsonl",
                   help="write one JSON object per iteration (the history rows) to this file")
    p.add_argument("--feature-space", choices=("observed", "full"), default="observed",
                   help="observed: only (observation, label) pairs seen in training (CRFsuite); "
                        "full: every observation with every label (Wapiti)")
    p.add_argument("--order", type=int, choices=(1, 2), default=1,
                   help="Markov order of the labels: 2 trains a second-order CRF (label pairs and "
                        "triples; the pattern file needs a line 'T')")
    p.add_argument("--no-pad", dest="pad", action="store_false",
                   help="drop features that look outside the sequence instead of using the "
                        "CRF++ markers _B-1, _B+1, ... (CRFsuite's habit)")
    p.add_argument("--seed", type=int, default=None, help="random seed for randomised solvers")
    p.add_argument("--unknown-label", metavar="MARK",
                   help="a label equal to MARK means 'unknown here' (partially labelled training data: "
                        "training sums over the labels at such positions)")
    p.add_argument("--weight-column", type=int, metavar="N",
                   help="observation column N (counting from 0, as %%x[row,N]) holds the weight of its "
                        "sequence (the same number on every token); it is removed from the observations "
                        "before the pattern applies")
    p.add_argument("--encoding", default="utf-8", metavar="NAME",
                   help="text encoding of TRAIN, --dev and --pattern (CoNLL-2002 is latin-1)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines, only errors")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="train on a Dask cluster (needs spargel[dask]): the scheduler's address "
                        "(tcp://host:8786), or local:N for N local worker processes. The workers read TRAIN "
                        "themselves (it must be at the same path there); see docs/distributed.md")
    p.add_argument("--shards", type=_pos_int, default=None, metavar="N",
                   help="with --scheduler: split TRAIN into N shards (default: one per worker)")
    p.set_defaults(func=cmd_train)

    # -- label ---------------------------------------------------------------------------
    p = sub.add_parser("label", help="append predicted labels to a column file",
                       description="Label sequences with a trained model: append the predicted "
                                   "label column.", epilog=_LABEL_EPILOG, formatter_class=_Formatter)
    p.add_argument("-m", "--model", required=True, metavar="MODEL", help="model file from 'spargel train'")
    p.add_argument("input", metavar="INPUT", nargs="?", default="-",
                   help="column file to label (default or '-': stdin)")
    p.add_argument("output", metavar="OUTPUT", nargs="?", default="-",
                   help="where to write (default or '-': stdout)")
    p.add_argument("-n", "--nbest", type=_pos_int, default=1, metavar="K",
                   help="output the K most probable label sequences")
    p.add_argument("--blocks", action="store_true",
                   help="with --nbest: K copies of each sequence with their probabilities "
                        "instead of K columns")
    p.add_argument("-s", "--marginals", action="store_true",
                   help="append the probability of each predicted label")
    p.add_argument("--force", action="store_true",
                   help="decode under the labels given in the input's last column")
    p.add_argument("--encoding", default="utf-8", metavar="NAME",
                   help="text encoding of INPUT, also used to write OUTPUT")
    p.set_defaults(func=cmd_label)

    # -- eval ----------------------------------------------------------------------------
    p = sub.add_parser("eval", help="conlleval's chunk precision / recall / F1 report",
                       description="Score predicted tags against gold tags: by default exactly as "
                                   "conlleval.pl (2004-01-26) does, report included.",
                       epilog=_EVAL_EPILOG, formatter_class=_Formatter)
    p.add_argument("file", metavar="FILE", nargs="?", default="-",
                   help="column file with gold and predicted tags (default or '-': stdin)")
    p.add_argument("--scheme", choices=("conlleval", "auto", "iob1", "iob2", "iobes", "bilou"),
                   default="conlleval",
                   help="how chunks are read: conlleval (default): as conlleval.pl; iob1 / iob2 / "
                        "iobes / bilou / auto: a strict reading of that scheme (S-/U- single "
                        "chunks, E-X B-X two chunks), refusing other prefixes")
    p.add_argument("--per-tag", action="store_true",
                   help="score every tag on its own (POS tags and other tag sets that are not "
                        "chunks): token accuracy and precision / recall / F1 per tag")
    p.add_argument("-d", "--delimiter", default=None, metavar="REGEX",
                   help="field delimiter, a regular expression (conlleval -d); default one space "
                        "(a file whose first line is tab-separated without spaces: a tab)")
    p.add_argument("-o", "--outside", default="O", metavar="TAG",
                   help="with -r: the outside tag (conlleval -o)")
    p.add_argument("-r", "--raw", action="store_true",
                   help="tags without B-/I- prefixes: every tag but the outside tag is a "
                        "one-token chunk (conlleval -r)")
    p.add_argument("-l", "--latex", action="store_true",
                   help="print the scores as rows of a LaTeX table (conlleval -l)")
    p.add_argument("--gold", type=_column, default=None, metavar="COL",
                   help="column of the gold tags (1-based; negative from the end); default: the "
                        "column just before --pred")
    p.add_argument("--pred", type=_column, default=None, metavar="COL",
                   help="column of the predicted tags (1-based; negative from the end); default: "
                        "the last")
    p.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    p.add_argument("--encoding", default="utf-8", metavar="NAME",
                   help="text encoding of FILE, for the tag names of --json (text reports "
                        "print the tags' bytes as they are)")
    p.set_defaults(func=cmd_eval)

    # -- dump ----------------------------------------------------------------------------
    p = sub.add_parser("dump", help="list the non-zero weights of a model",
                       description="Print the non-zero weights of a model as text.",
                       epilog=_DUMP_EPILOG, formatter_class=_Formatter)
    p.add_argument("model", metavar="MODEL", help="model file")
    p.add_argument("--top", type=_pos_int, default=None, metavar="N",
                   help="only the N first lines (after sorting)")
    p.add_argument("--sort", choices=("abs", "weight", "name", "none"), default="abs",
                   help="abs: decreasing |weight|; weight: decreasing weight; name: by "
                        "observation; none: model order")
    p.add_argument("--kind", choices=("all", "state", "bigram", "transition"), default="all",
                   help="which weights to list")
    p.set_defaults(func=cmd_dump)

    # -- plot ----------------------------------------------------------------------------
    p = sub.add_parser("plot", help="plot training histories (objective, active features, dev F1)",
                       description="Draw one or more training histories on one figure.",
                       epilog=_PLOT_EPILOG, formatter_class=_Formatter)
    p.add_argument("histories", metavar="HISTORY.jsonl", nargs="+", help="history files")
    p.add_argument("-o", "--out", metavar="FILE.png", default=None,
                   help="image to write (default: the first history's name with .png)")
    p.add_argument("--label", action="append", default=None, metavar="NAME",
                   help="legend name of a run, once per history (default: the file names)")
    p.add_argument("--x", choices=("time", "iteration"), default="time",
                   help="horizontal axis")
    p.add_argument("--dpi", type=_pos_int, default=100, help="resolution of the image")
    p.set_defaults(func=cmd_plot)

    # -- demo ----------------------------------------------------------------------------
    p = sub.add_parser("demo", help="train the solvers on a synthetic task and compare them",
                       description="Generate a synthetic sequence-labelling task (a label chain "
                                   "with a few relevant and many irrelevant features), train "
                                   "each solver configuration on it and print a comparison "
                                   "table and a plot.", formatter_class=_Formatter)
    p.add_argument("-o", "--out", metavar="FILE.png", default="spargel-demo.png",
                   help="where to write the comparison plot")
    p.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    p.add_argument("--threads", type=int, default=2, metavar="N", help="threads per training run")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    p.add_argument("--quick", action="store_true",
                   help="a smaller data set (for tests)")
    p.add_argument("--all-solvers", action="store_true",
                   help="also train block coordinate descent and SGD-L1 (their kernels compile "
                        "on first use: about 20 seconds more)")
    p.set_defaults(func=cmd_demo)

    # -- mrf and gmrf ----------------------------------------------------------------------
    from . import gmrf, mrf
    mrf.add_parser(sub)
    gmrf.add_parser(sub)
    return parser


# argument types: a bad value is a usage error (exit 2) --------------------------------

def _nonneg_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def _nonneg_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return v


def _pos_int(text):
    v = _nonneg_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return v


def _column(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a column number: {text!r}") from None
    if v == 0:
        raise argparse.ArgumentTypeError("columns are numbered from 1 (or from -1 at the end)")
    return v


# ---------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------

def main(argv=None):
    """Run the ``spargel`` command with ``argv`` (default ``sys.argv[1:]``); returns
    the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = bool(os.environ.get("SPARGEL_DEBUG"))
    try:
        parser = build_parser()
        from .tool_options import rewrite_argv

        argv = rewrite_argv(parser, argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else 0
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. '| head'): quietly stop writing
        _silence_stdout()
        return 141
    except Exception as exc:
        if debug:
            raise
        error(describe(exc))
        _silence_stdout(only_if_broken=True)
        return exit_status(exc)


def _silence_stdout(only_if_broken=False):
    """Point standard output at /dev/null, so that the interpreter's final flush of a
    closed pipe or a full disk prints nothing more (the error was already reported)."""
    if only_if_broken:
        try:
            sys.stdout.flush()
            return
        except (OSError, ValueError):
            pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

def _read_sentences(path, has_labels=True, separator=None, encoding="utf-8"):
    """Sentences of a column file (or stdin); returns (sentences, name, text)."""
    from ..data.conll import read_conll

    text, name = read_text(path, encoding)
    stream = io.StringIO(text)
    stream.name = name
    return list(read_conll(stream, has_labels=has_labels, separator=separator)), name, text


def _check_writable(path):
    """Fail early (before a long training) when ``path`` cannot be written."""
    check_outputs({"the output": path}, {})


def _refuse_same(outputs, inputs):
    check_outputs(outputs, inputs)


def default_template(n_columns, order=1):
    """The template used by ``spargel train`` without ``--pattern``: for every
    observation column the current, previous and next token, plus transitions (and, at
    order 2, the label triples).

    >>> print(default_template(1))
    U0-1:%x[-1,0]
    U0+0:%x[0,0]
    U0+1:%x[1,0]
    B
    >>> default_template(1, order=2).splitlines()[-1]
    'T'
    """
    lines = []
    for c in range(n_columns):
        lines += [f"U{c}-1:%x[-1,{c}]", f"U{c}+0:%x[0,{c}]", f"U{c}+1:%x[1,{c}]"]
    lines.append("B")
    if order == 2:
        lines.append("T")
    return "\n".join(lines)


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalar
        return _json_value(v.item())
    return v


def _json_row(row):
    return json.dumps({k: _json_value(v) for k, v in row.items()})


def _fmt_row(row):
    parts = [f"iter {row['iteration']:4d}", f"objective {row['objective']:.8g}",
             f"active {row['active']}"]
    if row.get("dev_accuracy") is not None:
        parts.append(f"dev acc {100 * row['dev_accuracy']:.2f}%")
    if row.get("dev_f1") is not None:
        parts.append(f"dev F1 {100 * row['dev_f1']:.2f}%")
    parts.append(f"{row['elapsed']:.1f}s")
    return "  ".join(parts)


class _StopOnSignal:
    """SIGINT handling for training. Before the first iteration (or chunk) Ctrl-C
    aborts at once; afterwards the first Ctrl-C asks to stop after the current iteration
    (via the callback) and a second one stops at once, keeping the weights of the last
    completed iteration. Once ``saving`` is set, Ctrl-C is only noted: the model being
    written is always written completely."""

    def __init__(self):
        self.requested = False
        self.started = False
        self.saving = False
        self.previous = None

    def __enter__(self):
        try:
            self.previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not in the main thread: leave the default behaviour
            self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False

    def _handle(self, signum, frame):
        if self.saving:
            self.requested = True
            print(f"{PROG}: finishing the save first", file=sys.stderr, flush=True)
            return
        if not self.started or self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(f"{PROG}: stopping after this iteration (Ctrl-C again to stop now)",
              file=sys.stderr, flush=True)


class _HistoryLog:
    """The ``--history`` file, written row by row as training goes. A failure to write
    it (full disk, ...) stops the log, not the training: the model is still written and
    the error is reported at the end."""

    def __init__(self, path, say):
        self.path, self.say = path, say
        self.error = None
        self.fh = open(path, "w", encoding="utf-8")

    def write(self, row):
        if self.fh is None:
            return
        try:
            self.fh.write(_json_row(row) + "\n")
            self.fh.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc):
        self.error = exc.strerror or str(exc)
        print(f"{PROG} train: error writing {self.path}: {self.error}; the history stops here, "
              f"training goes on", file=sys.stderr, flush=True)
        self.close()

    def close(self):
        fh, self.fh = self.fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError as exc:
                if self.error is None:
                    self.error = exc.strerror or str(exc)


def _completed_iterations(model, interrupted):
    """Iterations whose weights the model holds: after Ctrl-C in the middle of an
    iteration, the last one recorded in the history, not the one that was cut short."""
    n = int(model.n_iter_)
    if interrupted:
        rows = getattr(model, "history_", None) or []
        n = min(n, int(rows[-1].get("iteration", n))) if rows else 0
    return n


# ---------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------

def _template_text(args, n_cols, source, line):
    from ..data.templates import Template

    order = getattr(args, "order", 1)
    if args.pattern:
        import warnings

        fmt = getattr(args, "pattern_format", "auto")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            template = Template.from_file(args.pattern, encoding=args.encoding,
                                          format=None if fmt == "auto" else fmt)
        for w in caught:
            print(f"{PROG}: note: {w.message}", file=sys.stderr)
        template.check_columns(n_cols, source, line)
        if order == 2 and not template.triples:
            raise CommandError(f"{args.pattern}: --order 2 needs the label triples: add a line 'T' to the "
                               f"pattern file")
        if order == 1 and template.triples:
            raise CommandError(f"{args.pattern}: the pattern file has a 'T' line (label triples): train with "
                               f"--order 2")
        text = template.text
    else:
        text = default_template(n_cols, order)
    return _COLUMNS_MARK.format(n=n_cols) + "\n" + text


def _take_weight_column(sents, col, name):
    """Remove observation column ``col`` from every sentence and return the per-sentence
    weights it holds (the same number on every token)."""
    weights = []
    for s in sents:
        n_cols = len(s.columns[0])
        if not 0 <= col < n_cols:
            raise CommandError(f"{name}:{s.line}: --weight-column {col} but the tokens have {n_cols} observation "
                               f"column(s) (counting from 0)")
        values = {tok[col] for tok in s.columns}
        if len(values) != 1:
            raise CommandError(f"{name}:{s.line}: the weight column holds different values in one sequence "
                               f"({', '.join(sorted(values)[:3])})")
        text = values.pop()
        try:
            w = float(text)
        except ValueError:
            raise CommandError(f"{name}:{s.line}: weight {text!r} is not a number") from None
        if not (w >= 0 and w < float("inf")):
            raise CommandError(f"{name}:{s.line}: weight {text!r} must be a finite number >= 0")
        weights.append(w)
        s.columns = [tok[:col] + tok[col + 1:] for tok in s.columns]
    return weights


def cmd_train(args):
    """``spargel train``: fit a CRF on a column file and write the model."""
    import warnings

    from ..errors import ConvergenceWarning
    from ..solvers import SOLVERS

    # the command prints the stop reason itself ("stopped after N iterations: max_iter")
    warnings.simplefilter("ignore", ConvergenceWarning)
    from .tool_options import ToolOptionError, tool_habits

    try:
        tool_habits(args, SOLVERS)
    except ToolOptionError as exc:
        raise UsageError(f"train: {exc}") from None
    if args.solver not in SOLVERS:
        raise UsageError(f"train: unknown solver {args.solver!r}; choose one of {', '.join(SOLVERS)}")
    if args.solver == "lbfgs" and args.l1 > 0:
        raise UsageError("train: --solver lbfgs handles smooth objectives only; add --l1 0 "
                         "(and an --l2 > 0), or use --solver owlqn")
    if args.threads == 0 or args.threads < -1:
        raise UsageError("train: --threads must be >= 1, or -1 for all cores")
    if args.train == "-" and args.dev == "-":
        raise UsageError("train: TRAIN and --dev cannot both be stdin")
    # --init may be MODEL itself (continue a model in place): it is read before the save
    _refuse_same({"MODEL": args.model, "--history": args.history},
                 {"TRAIN": args.train, "--dev": args.dev, "--pattern": args.pattern})
    _check_writable(args.model)
    if args.history:
        _check_log(args.history)

    say = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    if not args.quiet:
        from ..core import first_use as _first_use
        _first_use.enable()
    if args.stream is not None:
        return _train_streaming(args, say)
    if args.scheduler is not None:
        return _train_on_cluster(args, say)
    t0 = time.perf_counter()
    if args.weight_column is None and args.train != "-":
        # streamed: read, extract and encode one sequence at a time (no list of sentences)
        reader = _TrainStream(args.train, args.encoding, args.unknown_label, None if args.quiet else PROG)
        sents = name = reader.name
        first = reader.first
        weights = None
    else:
        reader = None
        sents, name, _ = _read_sentences(args.train, encoding=args.encoding)
        weights = _take_weight_column(sents, args.weight_column, name) if args.weight_column is not None else None
        if args.unknown_label is not None:
            for s in sents:
                s.labels = [None if lab == args.unknown_label else lab for lab in s.labels]
        first = sents[0]
        _check_known({lab for s in sents for lab in s.labels if lab is not None}, name, args)
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, name, first.line)
    dev_x = dev_y = None
    if args.dev:
        dev, dev_name, _ = _read_sentences(args.dev, encoding=args.encoding)
        if len(dev[0].columns[0]) != n_cols:
            raise CommandError(f"{dev_name}:{dev[0].line}: the development data has "
                               f"{len(dev[0].columns[0]) + 1} columns, the training data {n_cols + 1}")
        dev_x, dev_y = dev, [s.labels for s in dev]

    def after_reading(known, n_seq, n_tok):
        _check_known(known, name, args)
        if dev_x is not None:
            unseen = sorted({lab for s in dev_x for lab in s.labels} - known)
            if unseen:
                say(f"{PROG} train: note: {dev_name} has labels that the training data lacks "
                    f"({', '.join(unseen[:5])}{', ...' if len(unseen) > 5 else ''}); they count as errors")
        say(f"{PROG} train: {n_seq} sequences, {n_tok} tokens, {n_cols} observation column(s) "
            f"from {name}; solver {args.solver}, l1={args.l1:g}, l2={args.l2:g}")

    from ..chain.estimator import CRF

    crf = CRF(solver=args.solver, l1=args.l1, l2=args.l2, max_iter=args.max_iter, tol=args.tol,
              gtol=args.gtol, window=args.window, feature_space=args.feature_space, template=text,
              pad=args.pad, n_jobs=args.threads, random_state=args.seed, order=args.order)
    if reader is not None:
        reader.after = after_reading
        X, y = reader.sequences(), reader.labels()
    else:
        after_reading({lab for s in sents for lab in s.labels if lab is not None}, len(sents),
                      sum(len(s) for s in sents))
        X, y = sents, [s.labels for s in sents]
    try:
        return _fit_and_save(crf, args, say, t0, lambda callback: crf.fit(
            X, y, X_dev=dev_x, y_dev=dev_y, callback=callback, sample_weight=weights))
    finally:
        if reader is not None:
            reader.fh.close()               # also when the fit stopped before reading


def _check_known(known, name, args):
    """Training needs at least two distinct (known) labels."""
    if len(known) < 2:
        if not known:
            raise CommandError(f"{name}: every label is the unknown mark {args.unknown_label!r}; training "
                               f"needs labelled tokens with at least 2 distinct labels")
        raise CommandError(f"{name}: the last column holds only one distinct label "
                           f"({next(iter(known))!r}); training needs at least 2 -- is this a "
                           f"column file with the label last?")


class _TrainStream:
    """The training file read one sequence at a time, for a fit that extracts and
    encodes each sequence as it comes (its memory is the encoded data, not the text or
    the sentences). The first sequence is read at once (the template needs its number
    of columns); :meth:`sequences` and :meth:`labels` are consumed in step by the fit
    (the sentence of the labels is the one last yielded). A progress line (``prog``:
    the program name, None for none) reports sequences, tokens and bytes read. When the
    file ends, ``after(known labels, sequences, tokens)`` is called: its errors stop the
    fit before any training."""

    def __init__(self, path, encoding, unknown_label, prog):
        from ..data.conll import read_conll
        from ..data.progress import ReadProgress
        from .common import input_name

        if os.path.isdir(path):
            raise CommandError(f"{path}: is a directory, not a text file")
        try:
            import codecs
            self.decoder = codecs.getincrementaldecoder(encoding)
        except LookupError:
            raise UsageError(f"unknown --encoding {encoding!r}") from None
        self.path, self.encoding, self.unknown = path, encoding, unknown_label
        self.name = input_name(path)
        self.fh = open(path, "rb")
        self.total = os.fstat(self.fh.fileno()).st_size
        if b"\x00" in self.fh.peek(4096)[:4096] and "16" not in encoding and "32" not in encoding:
            self.fh.close()
            raise CommandError(f"{self.name}: a binary file, not a text file")
        self.n_bytes = 0
        self.progress = (lambda: ReadProgress(f"{prog} train: reading {self.name}", self.total)) if prog else None
        self.after = None
        self.known = set()
        self.current = None
        self.it = read_conll(_Lines(self), has_labels=True)
        self.first = next(self.it)
        self._label(self.first)

    def _label(self, s):
        if self.unknown is not None:
            s.labels = [None if lab == self.unknown else lab for lab in s.labels]
        self.known.update(s.labels)

    def sequences(self):
        n_seq = n_tok = 0
        s = self.first
        self.first = None
        if self.progress is not None:
            self.progress = self.progress()     # the clock starts with the extraction
        try:
            while s is not None:
                n_seq += 1
                n_tok += len(s)
                self.current = s
                if self.progress is not None:
                    self.progress.update(n_seq, n_tok, self.n_bytes)
                yield s
                s = next(self.it, None)
                if s is not None:
                    self._label(s)
        finally:
            self.fh.close()
            self.current = None
        self.known.discard(None)
        if self.progress is not None and self.progress.lines:
            self.progress.write(n_seq, n_tok, self.n_bytes)
        self.after(self.known, n_seq, n_tok)

    def labels(self):
        while self.current is not None:
            yield self.current.labels


class _Lines:
    """The decoded lines of a training file, counting the bytes read; text that is not
    in the encoding is an error naming the line (as :func:`read_text`)."""

    def __init__(self, stream):
        self.stream = stream
        self.name = stream.name

    def __iter__(self):
        st = self.stream
        enc = st.encoding
        lineno = 0
        for raw in st.fh:
            lineno += 1
            try:
                text = raw.decode(enc)
            except UnicodeDecodeError as exc:
                hint = (" (give its encoding with --encoding, e.g. latin-1)"
                        if enc.lower().replace("_", "-") in ("utf-8", "utf8") else "")
                raise CommandError(f"{self.name}:{lineno}: not {enc} text (byte {st.n_bytes + exc.start + 1})"
                                   f"{hint}") from None
            st.n_bytes += len(raw)
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield text


def _fit_and_save(crf, args, say, t0, fit):
    """Run ``fit(callback)`` with live lines, ``--history`` and Ctrl-C handling, then
    write the model and the closing line; returns the exit status."""
    history = _HistoryLog(args.history, say) if args.history else None
    try:
        with _StopOnSignal() as stopper:
            def callback(row):
                stopper.started = True
                if history is not None:
                    history.write(row)
                say(_fmt_row(row))
                return stopper.requested

            fit(callback)
            stopper.saving = True
            interrupted = stopper.requested or crf.stop_reason_ == "interrupted"
            crf.save(args.model)
            interrupted = interrupted or stopper.requested
    finally:
        if history is not None:
            history.close()
    reason = "interrupted" if interrupted else crf.stop_reason_
    say(f"{PROG} train: stopped after {_completed_iterations(crf, interrupted)} iterations ({reason}); "
        f"objective {crf.objective_:.8g}; {crf.n_active_features_} active features; "
        f"{time.perf_counter() - t0:.1f}s; model written to {args.model}")
    if history is not None and history.error is not None:
        raise CommandError(f"{args.history}: {history.error}; the history is incomplete (the model "
                           f"was written to {args.model})")
    return 130 if interrupted else 0


def _train_on_cluster(args, say):
    """``spargel train --scheduler ADDRESS``: the workers read TRAIN (byte ranges of it),
    build the vocabularies and the shards; the solver runs here (docs/distributed.md)."""
    import os

    from ..data.conll import read_conll
    from ..scaleout.cluster import connect, disconnect, workers
    from ..chain.estimator import CRF

    if args.train == "-":
        raise UsageError("train: --scheduler needs TRAIN as a file the workers can read, not stdin")
    if args.weight_column is not None:
        raise UsageError("train: --weight-column is not supported with --scheduler")
    t0 = time.perf_counter()
    first = next(read_conll(args.train, encoding=args.encoding))
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, args.train, first.line)
    dev_x = dev_y = None
    if args.dev:
        dev, _, _ = _read_sentences(args.dev, encoding=args.encoding)
        dev_x, dev_y = dev, [s.labels for s in dev]
    client = connect(args.scheduler)
    try:
        found = workers(client)
        say(f"{PROG} train: {args.train} on the Dask cluster at {client.scheduler.address} "
            f"({len(found)} workers, {sum(found.values())} threads); solver {args.solver}, "
            f"l1={args.l1:g}, l2={args.l2:g}")
        crf = CRF(solver=args.solver, l1=args.l1, l2=args.l2, max_iter=args.max_iter, tol=args.tol,
                  gtol=args.gtol, window=args.window, feature_space=args.feature_space, template=text,
                  pad=args.pad, random_state=args.seed, order=args.order, client=client,
                  n_shards=args.shards)
        from ..chain.scaleout import fit_crf

        def fit(callback):
            fit_crf(crf, [os.path.abspath(args.train)], None, dev_x, dev_y, callback, encoding=args.encoding,
                    unknown_label=args.unknown_label)

        return _fit_and_save(crf, args, say, t0, fit)
    finally:
        disconnect(client)


def _check_log(path):
    """A log (``--history``) is written in place, so a pipe or /dev/stderr will do;
    only its folder must exist and be writable."""
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory; give a file name")
    folder = os.path.dirname(os.path.realpath(path)) or "."
    if not os.path.isdir(folder):
        raise CommandError(f"{path}: the folder {folder} does not exist")
    if not os.path.exists(path) and not os.access(folder, os.W_OK):
        raise CommandError(f"{path}: the folder {folder} is not writable")


def _train_streaming(args, say):
    """``spargel train --stream N``: SGD-L1 over chunks of N sequences (never the whole
    file), one ``CRF.partial_fit`` per chunk. Ctrl-C stops after the current chunk (a
    second one at once, keeping the model of the last completed chunk), and the model
    reached is written."""
    import copy

    from ..data.conll import read_conll
    from ..chain.estimator import CRF
    from ..chain.streaming import chunks as in_chunks

    if args.train == "-":
        raise UsageError("train: --stream reads TRAIN several times; give a file, not stdin")
    if args.stream < 1:
        raise UsageError("train: --stream needs a chunk size >= 1")
    if args.solver not in ("owlqn", "sgd-l1"):
        say(f"{PROG} train: note: --stream always trains with sgd-l1")
    t0 = time.perf_counter()
    first = next(read_conll(args.train, encoding=args.encoding))
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, args.train, first.line)
    params = dict(l1=args.l1, l2=args.l2, feature_space=args.feature_space, pad=args.pad,
                  random_state=args.seed, order=args.order)
    if args.init:
        model = _load_crf(args.init).set_params(**params)
    else:
        model = CRF(template=text, solver="sgd-l1", **params)
    passes = 1 if args.max_iter is None else args.max_iter
    say(f"{PROG} train: streaming {args.train} in chunks of {args.stream} sequences, {passes} pass(es), "
        f"sgd-l1, l1={args.l1:g}, l2={args.l2:g}")
    n = sum(1 for _ in read_conll(args.train, encoding=args.encoding))
    options = dict(model.solver_options or {}) if model.solver == "sgd-l1" else {}
    options.setdefault("n_samples", n)  # the objective sums over the whole file
    model.solver, model.solver_options = "sgd-l1", options

    done = None  # the model after the last completed chunk (a shallow copy: cheap)
    chunks = 0
    with _StopOnSignal() as stopper:
        try:
            for p in range(1, int(passes) + 1):
                for chunk in in_chunks(read_conll(args.train, encoding=args.encoding), args.stream):
                    model.partial_fit(chunk, [s.labels for s in chunk])
                    done, chunks = copy.copy(model), chunks + 1
                    stopper.started = True
                    say(f"pass {p:3d}  chunk {chunks:5d}  {len(chunk)} sequences  active "
                        f"{model.n_active_features_}  {time.perf_counter() - t0:.1f}s")
                    if stopper.requested:
                        break
                if stopper.requested:
                    break
        except KeyboardInterrupt:
            if done is None:
                raise
            stopper.requested = True
        stopper.saving = True
        interrupted = stopper.requested
        if done is None:  # no pass at all (--max-iter 0): the initial model
            if not hasattr(model, "weights_"):
                raise CommandError(f"{args.train}: --max-iter 0 with --stream and no --init "
                                   "trains nothing")
            done = model
        done.save(args.model)
        interrupted = interrupted or stopper.requested
    say(f"{PROG} train: {chunks} chunk(s){' (interrupted)' if interrupted else ''}; "
        f"{done.n_active_features_} active features; {time.perf_counter() - t0:.1f}s; "
        f"model written to {args.model}")
    return 130 if interrupted else 0


# ---------------------------------------------------------------------------------------
# label
# ---------------------------------------------------------------------------------------

def _load_crf(path):
    from ..chain.estimator import CRF
    from ..core.model_file import ModelFileError

    if path != "-" and os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not a model file")
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such model file")
    model = CRF.load(path)
    if not isinstance(model.template, str) or not model.template.strip():
        raise ModelFileError(f"{path}: this model was trained on feature dicts (Python API), "
                             "not on columns with a template; use it from Python")
    return model


def _model_columns(model):
    m = _COLUMNS_RE.match(model.template)
    return int(m.group(1)) if m else None


def cmd_label(args):
    """``spargel label``: decode a column file and append the predicted labels."""
    from ..core.limits import check_nbest

    if args.blocks and args.nbest < 2:
        raise UsageError("label: --blocks needs --nbest K with K >= 2")
    _refuse_same({"OUTPUT": args.output}, {"INPUT": args.input, "--model": args.model})
    if args.output not in (None, "-"):
        _check_writable(args.output)
    from ..chain.crfsuite_format import is_crfsuite_file
    if args.model != "-" and is_crfsuite_file(args.model):      # CRFsuite's data and output formats
        from . import crfsuite as crfsuite_cli
        from ..chain.estimator import CRF
        if args.nbest > 1 or args.force:
            raise UsageError("label: --nbest and --force are not available with a CRFsuite model file")
        model = CRF.load(args.model)
        text, name = _read_text(args.input, args.encoding)
        write_output(args.output, crfsuite_cli.label(args, model, text, name), args.encoding)
        return 0
    model = _load_crf(args.model)
    text, name = read_text(args.input, args.encoding)
    tabbed = any("\t" in line for line in text.split("\n", 50)[:50])
    separator = "\t" if (args.force and tabbed) else None
    from ..data.conll import read_conll

    stream = io.StringIO(text)
    stream.name = name
    sents = list(read_conll(stream, has_labels=False, separator=separator))
    width = len(sents[0].columns[0])
    n_cols = _model_columns(model)
    tpl = model._template()
    if n_cols is None:  # a model from the Python API: guess from the template
        n_cols = max(tpl.n_columns_required, width - 1 if width > tpl.n_columns_required else width)
    has_gold = width == n_cols + 1
    if width not in (n_cols, n_cols + 1):
        raise CommandError(f"{name}:{sents[0].line}: {width} columns, but the model was trained on "
                           f"{n_cols} observation columns (give {n_cols}, or {n_cols + 1} with the "
                           f"label last)")
    if args.force and not has_gold:
        raise CommandError(f"{name}:{sents[0].line}: --force needs a label column after the "
                           f"{n_cols} observation columns")
    X = [[row[:n_cols] for row in s.columns] for s in sents]
    constraints = None
    if args.force:
        known = set(model.classes_)
        constraints = []
        for s in sents:
            seq = []
            for i, row in enumerate(s.columns):
                lab = row[-1]
                if lab in known:
                    seq.append(lab)
                elif lab in _BLANKS:
                    seq.append(None)
                else:
                    raise CommandError(f"{name}:{s.line_of(i)}: forced label {lab!r} is not one of "
                                       f"the model's labels (use '_' to leave a token free)")
            constraints.append(seq)

    k = args.nbest
    if k == 1:
        paths = [[(p, None)] for p in model.predict(X, constraints=constraints)]
    else:
        try:
            k = check_nbest(k, len(model.classes_), [len(s) for s in sents])
        except ValueError as exc:
            raise CommandError(f"{name}: {exc}") from None
        if k < args.nbest:
            print(f"{PROG} label: note: these sequences have at most {k} distinct labellings; "
                  f"writing {k} instead of {args.nbest}", file=sys.stderr)
        paths = model.predict_nbest(X, k=k, constraints=constraints)
    marg = model.predict_marginals(X) if args.marginals else None

    out_sep = "\t" if tabbed else " "
    out = []
    for s_idx, s in enumerate(sents):
        rows = s.columns
        if args.blocks:
            for rank, (labels, prob) in enumerate(paths[s_idx], start=1):
                out.append(f"# rank {rank} probability {prob:.6g}\n")
                for t, row in enumerate(rows):
                    fields = list(row) + [labels[t]]
                    if marg is not None:
                        fields.append(f"{marg[s_idx][t][labels[t]]:.4f}")
                    out.append(out_sep.join(fields) + "\n")
                out.append("\n")
            continue
        for t, row in enumerate(rows):
            fields = list(row)
            for r in range(k):
                if r < len(paths[s_idx]):
                    lab = paths[s_idx][r][0][t]
                    fields.append(lab)
                    if marg is not None:
                        fields.append(f"{marg[s_idx][t][lab]:.4f}")
                else:
                    fields.append("_")
                    if marg is not None:
                        fields.append("_")
            out.append(out_sep.join(fields) + "\n")
        out.append("\n")
    write_output(args.output, "".join(out), args.encoding)
    return 0


# ---------------------------------------------------------------------------------------
# eval
# ---------------------------------------------------------------------------------------

def cmd_eval(args):
    """``spargel eval``: conlleval's report by default (see spargel.conlleval); a strict
    reading of a scheme with --scheme, per-tag scores with --per-tag."""
    from ..conlleval import evaluate
    from ..errors import DataFormatError

    if args.file not in (None, "-") and os.path.isdir(args.file):
        raise CommandError(f"{args.file}: is a directory, not a data file")
    if args.latex and (args.json or args.per_tag or args.scheme != "conlleval"):
        raise UsageError("eval: --latex prints conlleval's table; it goes without --json, "
                         "--per-tag and --scheme")
    if args.per_tag and args.scheme != "conlleval":
        raise UsageError("eval: --per-tag scores tags, not chunks; it goes without --scheme")
    try:
        codecs.lookup(args.encoding)
    except LookupError:
        raise UsageError(f"unknown --encoding {args.encoding!r}") from None
    if args.file in (None, "-"):
        data, name = (sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer")
                      else sys.stdin.read().encode(args.encoding)), "<stdin>"
    else:
        with open(args.file, "rb") as fh:
            data = fh.read()
        name = args.file
    pred = None if args.pred is None else (args.pred - 1 if args.pred > 0 else args.pred)
    gold = None
    if args.gold is not None:
        gold = args.gold - 1 if args.gold > 0 else args.gold
    elif pred is not None:  # the column just before the predicted one
        if pred == 0:
            raise UsageError("eval: --pred 1 leaves no column before it for the gold tags; give --gold")
        gold = pred - 1
    try:
        text = evaluate(data, name, scheme=args.scheme, per_tag=args.per_tag,
                        delimiter=args.delimiter, raw=args.raw, outside=args.outside, gold=gold,
                        pred=pred, latex=args.latex, as_json=args.json, encoding=args.encoding)
    except DataFormatError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(f"eval: {exc}") from None
    write_output("-", text, "latin-1")  # the input's bytes, as conlleval prints them
    return 0


# ---------------------------------------------------------------------------------------
# dump
# ---------------------------------------------------------------------------------------

def model_weights(model, kind="all"):
    """(observation, previous label or '-', label, weight) for every non-zero weight."""
    rows = []
    if kind in ("all", "state"):
        rows += [(attr, "-", lab, w) for (attr, lab), w in model.state_features_.items()]
    if kind in ("all", "bigram"):
        rows += [(attr, prev, lab, w) for (attr, prev, lab), w in model.bigram_features_.items()]
    if kind in ("all", "transition"):
        for key, w in model.transition_features_.items():
            if len(key) == 3:            # second order: (label two back, previous, label)
                rows.append(("T", f"{key[0]} {key[1]}", key[2], w))
            else:
                rows.append(("B", key[0], key[1], w))
    return rows


def cmd_dump(args):
    """``spargel dump``: the non-zero weights as tab-separated text."""
    from ..chain.estimator import CRF

    if os.path.isdir(args.model):
        raise CommandError(f"{args.model}: is a directory, not a model file")
    if not os.path.exists(args.model):
        raise CommandError(f"{args.model}: no such model file")
    rows = model_weights(CRF.load(args.model), args.kind)
    if args.sort == "abs":
        rows.sort(key=lambda r: (-abs(r[3]), r[0], r[1], r[2]))
    elif args.sort == "weight":
        rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
    elif args.sort == "name":
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
    if args.top is not None:
        rows = rows[:args.top]
    write_output("-", "".join(f"{attr}\t{prev}\t{lab}\t{w:.6g}\n" for attr, prev, lab, w in rows))
    return 0


# ---------------------------------------------------------------------------------------
# plot and demo
# ---------------------------------------------------------------------------------------

def cmd_plot(args):
    """``spargel plot``: draw the histories on one figure."""
    from ..core.plot import MissingMatplotlibError, load_history, plot_histories

    if args.label is not None and len(args.label) != len(args.histories):
        raise UsageError(f"plot: {len(args.label)} --label for {len(args.histories)} histories")
    runs = []
    for i, path in enumerate(args.histories):
        rows = load_history(path)
        name = args.label[i] if args.label else os.path.splitext(os.path.basename(path))[0]
        runs.append((name, rows))
    out = args.out or os.path.splitext(args.histories[0])[0] + ".png"
    _refuse_same({"--out": out}, {f"HISTORY {i + 1}": h for i, h in enumerate(args.histories)})
    try:
        plot_histories(runs, out, x=args.x, dpi=args.dpi)
    except MissingMatplotlibError as exc:
        raise CommandError(str(exc)) from None
    print(f"{PROG} plot: wrote {out}", file=sys.stderr)
    return 0


def cmd_demo(args):
    """``spargel demo``: the synthetic comparison of solvers."""
    from .demo import run_demo

    run_demo(out=None if args.no_plot else args.out, n_jobs=args.threads, seed=args.seed,
             quick=args.quick, all_solvers=args.all_solvers)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
