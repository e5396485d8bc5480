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
    spargel mgm DATA.csv --types gc..           mixed graphical models (continuous and categorical)

Conventions: an input of ``-`` (or none) is standard input, an output of ``-``
(or none) standard output. Every error is one line ``spargel: error: ...`` on
standard error, never a traceback (set ``SPARGEL_DEBUG=1`` to see one). Every
command reads, writes and exits through :mod:`spargel.cli.common`: one table of exit
statuses (:data:`~spargel.cli.common.EXIT_STATUSES`, printed by ``spargel --help``),
one reader of inputs and one writer of outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys

from .common import PROG, CommandError, UsageError, check_outputs, describe, error, exit_status, exit_status_help
from .crf import cmd_dump, cmd_eval, cmd_label
from .. import __version__


def _solver_help(default):
    """One line per solver of the solver table (``core/solver_table.py``), so a new solver
    appears here. (The table is loaded by the commands that train, not by 'spargel label'.)"""
    from ..solvers import SOLVERS

    return "; ".join(f"{name}{' (default)' if name == default else ''}: {record.doc}"
                     for name, record in SOLVERS.items())


def _solver_defaults(field):
    """The solvers' defaults of ``field`` ("max_iter" or "tol") from the solver table:
    "500 for lbfgs/owlqn, 30 for sgd-l1, ...", the most common value last, "for the others"."""
    from ..solvers import SOLVERS

    names = {}
    for name, record in SOLVERS.items():
        names.setdefault(getattr(record, field), []).append(name)
    *rare, common = sorted(names, key=lambda value: len(names[value]))
    parts = [f"{_short_number(value)} for {'/'.join(names[value])}" for value in rare]
    return ", ".join(parts + [f"{_short_number(common)} for the others"])


def _short_number(value):
    """500 as 500, 0.0002 as 2e-4."""
    return str(value) if isinstance(value, int) else f"{value:.0e}".replace("e-0", "e-")


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line and is raised instead of exiting. The line
    names the command (``spargel: error: train: ...``: ``cli/app.main`` puts the program's
    name in front) and points to that command's ``--help``."""

    def error(self, message):
        raise _usage(self.prog, message)

    def parse_args(self, args=None, namespace=None):
        # argparse reports arguments that no parser took from the top-level parser, so the
        # error would name `spargel` and its help even when they follow a command
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(ns, "command", None)
            raise _usage(f"{self.prog} {command}" if command else self.prog,
                         f"unrecognized arguments: {' '.join(extras)}")
        return ns


def _usage(prog, message):
    """The ``UsageError`` of the parser ``prog`` ("spargel" or "spargel COMMAND")."""
    command = prog[len(PROG):].strip() if prog.startswith(PROG) else prog
    return UsageError(f"{command + ': ' if command else ''}{message} (see '{prog} --help')")


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
  --solver rprop       -a rprop / rprop+ / rprop- (--stpmin, --stpmax, --stpinc,
                       --stpdec, --cutoff)
  --type maxent        -T maxent
  --histsz M           --histsz M (5)         -p num_memories=M (6)
  --solver mira                                                   -a MIRA -c C -H N
  spargel train also takes their short options where it has their meaning:
  Wapiti's -1 X, -2 X, -e X, -w N, -i N, -t N, -p FILE, -T TYPE and -a l-bfgs /
  sgd-l1 / bcd / rprop / rprop+ / rprop-; CRF++'s -a CRF-L2 / CRF-L1 with -c C
  (the penalty 1/C; -c C alone is CRF-L2) and -a MIRA with -c C (MIRA's bound
  C, no penalty) and -H N. Wapiti's -c (--compact), -m MODEL, --me, -T memm and
  CRF++'s -f N, -m N, -p N are refused with spargel's equivalent, if any.

Ctrl-C stops after the current iteration (or --stream chunk) and writes the
model reached so far (exit status 130); press it twice to stop at once (the last
completed iteration is written). The model is written atomically (a temporary
file beside MODEL, renamed at the end), through a symbolic link to its target;
a MODEL that is not a regular file, or that is also an input, is refused.

examples:
  spargel train --pattern chunking.tpl --dev test.txt train.txt chunk.model
  spargel train --l1 0.5 --l2 1e-3 --history run.jsonl train.txt model
  spargel train --order 2 --pattern np.tpl train.txt np.model
  spargel train --pattern-format wapiti -p pat.txt --model-format wapiti train.txt m.wapiti
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

  MODEL may also be a Wapiti model file ('wapiti train') or a CRF++ model
  (crf_learn's binary MODEL, or the MODEL.txt of 'crf_learn -t'): its patterns generate the observations from
  INPUT's columns, as 'wapiti label' and 'crf_test' do.

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
  --format wapiti writes instead the model as a Wapiti model file (refused with
  the reason when the format cannot hold it: see docs/migration.md).
"""

_PLOT_EPILOG = """\
Each HISTORY.jsonl is one run (as written by 'spargel train --history'); all runs
share one figure: objective and active features against time (or iterations),
and the development F1 (or accuracy) when the runs have one. Needs matplotlib:
pip install 'spargel[plot]'.
"""


_CONSTRAINT_CHOICES = ("bio", "iob2", "iob1", "bioes", "iobes", "bilou", "none")


def build_parser(command=None):
    """The argparse parser of the ``spargel`` command, with every sub-command's parser, or
    with only ``command``'s (what a run of that command needs: building the parsers of
    every sub-command takes longer than a short ``spargel label`` labels a file)."""
    parser = _Parser(
        prog=PROG, formatter_class=_Formatter,
        description="Sparse learning of log-linear and graphical models: l1 / elastic-net CRFs for "
                    "sequence labelling (train, label, eval, dump) with Wapiti / CRFsuite / CRF++ style "
                    "commands, pairwise MRF structure learning (mrf), mixed graphical models (mgm) and sparse "
                    "Gaussian MRFs (gmrf).",
        epilog="Run 'spargel COMMAND --help' for the options of a command.\n\n" + exit_status_help())
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    for name, add in _COMMANDS.items():
        if command is None or name == command:
            add(sub)
    return parser


def _add_train(sub):
    """``spargel train``'s parser, in the sub-parsers ``sub``."""
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
    default_solver = "owlqn"
    p.add_argument("-a", "--solver", "--algo", default=default_solver,
                   help=f"how to minimise the objective -- {_solver_help(default_solver)}. lbfgs needs --l1 0")
    p.add_argument("-T", "--type", dest="model_type", choices=("crf", "maxent", "memm"), default="crf",
                   help="the model (Wapiti's -T): crf, a linear chain; maxent, every token on its own "
                        "(the pattern file's unigram patterns only, no label pairs); memm is refused")
    p.add_argument("--me", dest="maxent_flag", action="store_true",
                   help="refused: Wapiti's --me reads one sample per line (spargel reads column files); "
                        "-T maxent trains a maxent model on them")
    rp = p.add_argument_group("rprop (Wapiti's options, with -a rprop / rprop+ / rprop-)")
    rp.add_argument("--stpmin", type=_pos_float, default=None, metavar="X", help="smallest step (1e-8)")
    rp.add_argument("--stpmax", type=_pos_float, default=None, metavar="X", help="largest step (50)")
    rp.add_argument("--stpinc", type=_pos_float, default=None, metavar="X",
                    help="step growth factor, > 1 (1.2)")
    rp.add_argument("--stpdec", type=_pos_float, default=None, metavar="X",
                    help="step shrink factor, in (0, 1) (0.5)")
    rp.add_argument("--cutoff", action="store_true",
                    help="Wapiti's alternative l1 handling: a weight inside the l1 band is cut to 0 when it "
                         "and its gradient change sign (default: the orthant projection)")
    p.add_argument("--histsz", "--memory", dest="histsz", type=_pos_int, default=None, metavar="M",
                   help="with --solver lbfgs / owlqn: the number of curvature pairs kept (Wapiti's "
                        "--histsz; default 5 with Wapiti's -a l-bfgs, as Wapiti; else 6, CRFsuite's); 2M + 7 "
                        "weight-sized vectors in memory")
    p.add_argument("-H", "--shrinking-size", dest="shrinking_size", type=_pos_int, default=None, metavar="N",
                   help="with -a MIRA (CRF++'s -H): skip a sequence decoded without a mistake in N epochs "
                        "in a row (20)")
    p.add_argument("--l1", "--rho1", type=_nonneg_float, default=1.0, metavar="X",
                   help="l1 penalty weight (Wapiti rho1, CRFsuite c1)")
    p.add_argument("--l2", "--rho2", type=_nonneg_float, default=0.0, metavar="X",
                   help="l2 penalty weight: l2/2*|w|^2 (Wapiti rho2; CRFsuite: 2*c2)")
    p.add_argument("-i", "--max-iter", "--maxiter", dest="max_iter", type=_nonneg_int, default=None,
                   metavar="N", help=f"iteration limit (passes for sgd-l1, sweeps for bcd/cd, epochs for the "
                                     f"online trainers); default: the solver's ({_solver_defaults('max_iter')})")
    p.add_argument("--stream", type=_nonneg_int, default=None, metavar="N",
                   help="train with sgd-l1 reading TRAIN in chunks of N sequences, for data that "
                        "does not fit in memory (--max-iter passes, default 1; --history gets a row "
                        "per chunk; --dev, --weight-column and --constraints are refused, --threads "
                        "is not used)")
    p.add_argument("--init", metavar="MODEL", default=None,
                   help="with --stream: continue from the weights of this saved model (warm start)")
    p.add_argument("-e", "--tol", "--stopeps", type=_nonneg_float, default=None, metavar="X",
                   help="stop when the objective improves by less than a relative X over "
                        f"--window iterations (0 disables; default: the solver's, {_solver_defaults('tol')}; "
                        "CRFsuite's is 1e-5)")
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
    p.add_argument("--model-format", choices=("spargel", "wapiti"), default="spargel",
                   help="the model file's format: spargel (any model) or wapiti (Wapiti 1.5's, read by "
                        "'wapiti label -m' and by spargel; first-order models trained with a Wapiti "
                        "pattern file only)")
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
    p.add_argument("--constraints", choices=_CONSTRAINT_CHOICES[:-1], default=None, metavar="SCHEME",
                   help="store tag-sequence constraints in the model, derived from the label names: "
                        "bio (iob2), iob1 or bioes (iobes, bilou); 'spargel label' then never writes a "
                        "sequence they forbid")
    p.add_argument("--constrain-training", action="store_true",
                   help="with --constraints: train under them too (the likelihood over the allowed "
                        "sequences only; solvers owlqn, lbfgs, fista, rprop)")
    p.set_defaults(func=cmd_train)


def _add_label(sub):
    """``spargel label``'s parser."""
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
    p.add_argument("--constraints", choices=_CONSTRAINT_CHOICES, default=None, metavar="SCHEME",
                   help="decode only tag sequences valid in a scheme, derived from the label names: "
                        "bio (iob2), iob1 or bioes (iobes, bilou) -- for Viterbi, --nbest and --marginals; "
                        "none: without the constraints the model stores (default: the model's own)")
    p.add_argument("--encoding", default="utf-8", metavar="NAME",
                   help="text encoding of INPUT, also used to write OUTPUT")
    p.set_defaults(func=cmd_label)


def _add_eval(sub):
    """``spargel eval``'s parser."""
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


def _add_dump(sub):
    """``spargel dump``'s parser."""
    p = sub.add_parser("dump", help="list the non-zero weights of a model",
                       description="Print the non-zero weights of a model as text.",
                       epilog=_DUMP_EPILOG, formatter_class=_Formatter)
    p.add_argument("model", metavar="MODEL", help="model file")
    p.add_argument("--top", type=_pos_int, default=None, metavar="N",
                   help="only the N first lines (after sorting)")
    p.add_argument("--sort", choices=("abs", "weight", "name", "none"), default="abs",
                   help="abs: decreasing |weight|; weight: decreasing weight; name: by "
                        "observation; none: model order")
    p.add_argument("--format", dest="dump_format", choices=("table", "wapiti"), default="table",
                   help="table: the non-zero weights, tab-separated; wapiti: the model as a Wapiti "
                        "model file (for 'wapiti label -m'; first-order models trained with a Wapiti "
                        "pattern file)")
    p.add_argument("--kind", choices=("all", "state", "bigram", "transition"), default="all",
                   help="which weights to list")
    p.set_defaults(func=cmd_dump)


def _add_plot(sub):
    """``spargel plot``'s parser."""
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


def _add_demo(sub):
    """``spargel demo``'s parser."""
    p = sub.add_parser("demo", help="train the solvers on a synthetic task and compare them",
                       description="Generate a synthetic sequence-labelling task (a label chain "
                                   "with a few relevant and many irrelevant features), train "
                                   "each solver configuration on it and print a comparison "
                                   "table and a plot.", formatter_class=_Formatter)
    p.add_argument("-o", "--out", metavar="FILE.png", default=None,
                   help="where to write the comparison plot (default: spargel-demo.png in a new "
                        "temporary folder, printed; never the current folder)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    p.add_argument("--threads", type=int, default=2, metavar="N", help="threads per training run")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    p.add_argument("--quick", action="store_true",
                   help="a smaller data set (for tests)")
    p.add_argument("--all-solvers", action="store_true",
                   help="also train block coordinate descent and SGD-L1 (their kernels compile "
                        "on first use: about 20 seconds more)")
    p.set_defaults(func=cmd_demo)


def _add_mrf(sub):
    """``spargel mrf``'s parser."""
    from . import mrf
    mrf.add_parser(sub)


def _add_mgm(sub):
    """``spargel mgm``'s parser."""
    from . import mrf
    mrf.add_mgm_parser(sub)


def _add_gmrf(sub):
    """``spargel gmrf``'s parser."""
    from . import gmrf
    gmrf.add_parser(sub)


#: every sub-command, in the order of ``spargel --help``, and the function adding its parser
_COMMANDS = {"train": _add_train, "label": _add_label, "eval": _add_eval, "dump": _add_dump,
             "plot": _add_plot, "demo": _add_demo, "mrf": _add_mrf, "mgm": _add_mgm, "gmrf": _add_gmrf}


# argument types: a bad value is a usage error (exit 2) --------------------------------

def _parse(text, kind, what):
    """``kind(text)``; text it cannot read is "not ``what``"."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def _nonneg_float(text):
    v = _parse(text, float, "a number")
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def _pos_float(text):
    v = _nonneg_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def _nonneg_int(text):
    v = _parse(text, int, "an integer")
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return v


def _pos_int(text):
    v = _nonneg_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return v


def _column(text):
    v = _parse(text, int, "a column number")
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
        # a command named first needs only its own parser (the top-level help lists them all)
        parser = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None)
        from .tool_options import rewrite_argv

        argv = rewrite_argv(parser, argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else 0
        with _one_blas_thread(args.command == "label" or (args.command == "train" and args.threads == 1)):
            status = int(args.func(args) or 0)
        _flush_stdout()  # text still buffered: a failure to write it is an error too
        return status
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


@contextlib.contextmanager
def _one_blas_thread(wanted=True):
    """While the block runs, ``OPENBLAS_NUM_THREADS=1`` when ``wanted``, numpy is not
    loaded yet and the user has not chosen a number; the environment is as it was after.

    ``spargel label`` does no linear algebra, and OpenBLAS starts one thread per core
    when it loads (with numpy, which reads the variable then), threads that wait for work
    by spinning: on 2 cores that doubled the CPU time of ``import numpy`` (0.10 s instead
    of 0.06 s), a third of a short ``spargel label``. ``spargel train`` on one thread
    (``--threads 1``, the default) does its vector work in its own compiled loops
    (``core/vec.py``), not in BLAS: the spinning threads cost it 0.13-0.30 s of CPU time
    in a 3-second fit (maxent, CoNLL-2000's first 2,000 sentences)."""
    if not wanted or "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def _flush_stdout():
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None


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
    check_outputs({"--out": out}, {f"HISTORY {i + 1}": h for i, h in enumerate(args.histories)})
    try:
        plot_histories(runs, out, x=args.x, dpi=args.dpi)
    except MissingMatplotlibError as exc:
        raise CommandError(str(exc)) from None
    print(f"{PROG} plot: wrote {out}", file=sys.stderr)
    return 0


def cmd_train(args):
    """``spargel train`` (:func:`spargel.cli.train.cmd_train`, loaded when it runs: it
    brings the estimator and the solvers, which the other commands do without)."""
    from .train import cmd_train as train

    return train(args)


def cmd_demo(args):
    """``spargel demo``: the synthetic comparison of solvers."""
    from .demo import run_demo

    out = None
    if not args.no_plot:
        if args.out is None:            # a folder of its own: nothing lands where it runs
            import tempfile

            out = os.path.join(tempfile.mkdtemp(prefix="spargel-demo-"), "spargel-demo.png")
        else:
            out = args.out
    run_demo(out=out, n_jobs=args.threads, seed=args.seed, quick=args.quick,
             all_solvers=args.all_solvers)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
