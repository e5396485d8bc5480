"""The command-line habits of Wapiti, CRF++ and conlleval users, for ``spargel train`` and
``spargel eval``: their short options where spargel has their meaning, a refusal naming
spargel's equivalent where it has not."""

from __future__ import annotations

import argparse
import os

__all__ = ["ToolOptionError", "rewrite_argv", "tool_habits"]


class ToolOptionError(ValueError):
    """An option of another tool that spargel does not take (the message says why)."""


#: Wapiti's default number of curvature pairs of its l-bfgs (``--histsz``); spargel's own
#: default is 10
WAPITI_HISTSZ = 5

# Wapiti's and CRF++'s names for the solvers: spargel solver, or None to refuse
_TOOL_SOLVERS = {"l-bfgs": "owlqn", "sgd-l1": "sgd-l1", "bcd": "bcd", "rprop": "rprop", "rprop+": "rprop+",
                 "rprop-": "rprop-", "crf": "lbfgs", "crf-l2": "lbfgs", "crf-l1": "owlqn", "mira": "mira"}


def tool_habits(args, solvers):
    """Wapiti's and CRF++'s train options where spargel has their meaning (-a names, CRF++'s
    -c C, with -a MIRA its bound C; Wapiti's rprop options and -T); a clear refusal naming
    spargel's equivalent for the others. ``solvers``: name -> solver table record
    (``spargel.solvers.SOLVERS``)."""
    if args.train_m is not None:
        raise ToolOptionError(f"-m {args.train_m}: CRF++'s -m N is --max-iter N; Wapiti's "
                              "-m MODEL (start from a model) is --init MODEL (with --stream)")
    if args.crfpp_freq is not None:
        raise ToolOptionError("-f (CRF++'s feature frequency cutoff) has no spargel equivalent; "
                              "--l1 removes the features the data does not support")
    if getattr(args, "maxent_flag", False):
        raise ToolOptionError("--me (Wapiti's reader of one sample per line) has no spargel equivalent; "
                              "-T maxent trains a maxent model on a column file")
    if getattr(args, "model_type", "crf") == "memm":
        raise ToolOptionError("-T memm (Wapiti's maximum-entropy Markov models) has no spargel equivalent; "
                              "spargel trains -T crf and -T maxent")
    name = args.solver.lower()
    if name == "mira":   # CRF++: -c C is MIRA's bound on the steps, and there is no penalty
        args.solver = "mira"
        cost = _crfpp_cost(args)
        if not 0 < cost < float("inf"):
            raise ToolOptionError("-c C needs a finite C > 0")
        args.mira_c, args.crfpp_cost, args.l1, args.l2 = cost, None, 0.0, 0.0
    if args.solver not in solvers and name in _TOOL_SOLVERS:
        if _TOOL_SOLVERS[name] is None:
            raise ToolOptionError(f"-a {args.solver} has no spargel equivalent; spargel's solvers: "
                                  f"{', '.join(solvers)} (Wapiti's l-bfgs is owlqn, CRF++'s CRF-L2 lbfgs)")
        if name == "l-bfgs":  # Wapiti: OWL-QN when rho1 > 0, else plain L-BFGS
            args.solver = "owlqn" if args.l1 > 0 else "lbfgs"
            if getattr(args, "histsz", None) is None:
                args.histsz = WAPITI_HISTSZ
        elif name.startswith("crf"):  # CRF++: its objective, its default C = 1
            args.solver = _TOOL_SOLVERS[name]
            cost = _crfpp_cost(args)
            if not cost > 0:
                raise ToolOptionError("-c C needs C > 0")
            args.l1, args.l2 = (1.0 / cost, 0.0) if name == "crf-l1" else (0.0, 1.0 / cost)
            args.crfpp_cost = None
        else:
            args.solver = _TOOL_SOLVERS[name]
    if args.crfpp_cost == "":
        raise ToolOptionError("-c without a value is Wapiti's --compact, which spargel has no "
                              "option for; CRF++'s -c C is the inverse penalty (-a CRF-L2 -c C: "
                              "--l2 1/C)")
    if args.crfpp_cost is not None:  # CRF++'s default algorithm is CRF-L2
        try:
            cost = float(args.crfpp_cost)
        except ValueError:
            raise ToolOptionError(f"-c {args.crfpp_cost!r} is not a number (CRF++'s -c C; "
                                  "Wapiti's -c, --compact, has no spargel option)") from None
        if not cost > 0:
            raise ToolOptionError("-c C needs C > 0")
        args.solver, args.l1, args.l2 = "lbfgs", 0.0, 1.0 / cost
    _refuse_other_solvers_options(args, solvers)
    if args.pattern and args.pattern.isdigit() and not os.path.exists(args.pattern):
        raise ToolOptionError(f"-p {args.pattern}: -p is the pattern file (Wapiti's -p); CRF++'s "
                              "-p N (threads) is -t N")


def _crfpp_cost(args):
    """CRF++'s ``-c C`` as a number (its default 1 when not given); a word that is not a
    number is a :class:`ToolOptionError`. Its range is the solver's to check."""
    if args.crfpp_cost in (None, ""):
        return 1.0
    try:
        return float(args.crfpp_cost)
    except ValueError:
        raise ToolOptionError(f"-c {args.crfpp_cost!r} is not a number (CRF++'s -c C)") from None


def _refuse_other_solvers_options(args, solvers):
    """Refuse the options of other solvers than -a's (the solver table's ``cli_options``:
    Wapiti's rprop options, CRF++'s -H), naming the solvers that take them."""
    taken = dict(getattr(solvers.get(args.solver), "cli_options", ()))
    refused = {}      # an option given that -a's solver does not take -> the solvers that take it
    for name, record in solvers.items():
        for arg, _ in record.cli_options:
            value = getattr(args, arg, None)
            if arg not in taken and value is not None and value is not False:    # (--cutoff: a flag)
                refused.setdefault(arg, []).append(name)
    crfpp_h = refused.pop("shrinking_size", None)            # named in CRF++'s words below
    if refused:
        takers = next(iter(refused.values()))
        flags = [f"--{arg.replace('_', '-')}" for arg, t in refused.items() if t == takers]
        raise ToolOptionError(f"{', '.join(flags)} apply to -a {' / '.join(takers)} only")
    if crfpp_h:
        raise ToolOptionError("-H N (CRF++'s shrinking size) applies to -a MIRA only")


def _is_number(tokens):
    try:
        float(tokens[0])
        return True
    except (IndexError, ValueError):
        return False


def rewrite_argv(parser, argv):
    """``spargel train -1 X -2 Y`` (Wapiti's --rho1 / --rho2): argparse cannot have options
    named like negative numbers (``-t -1`` must stay a value), so ``-1`` / ``-2`` in an
    option's place become ``--l1`` / ``--l2`` before parsing; a ``-c`` not followed by a
    number is Wapiti's flag, not CRF++'s ``-c C``."""
    if argv and argv[0] == "eval":  # conlleval's -d / -o take any value, '-' included
        out = [argv[0]]
        it = iter(argv[1:])
        for tok in it:
            if tok in ("-d", "-o", "--delimiter", "--outside"):
                value = next(it, None)
                if value is not None:
                    tok = f"{'--delimiter' if tok in ('-d', '--delimiter') else '--outside'}={value}"
            out.append(tok)
        return out
    if not argv or argv[0] != "train" or not ({"-1", "-2", "-c"} & set(argv)):
        return argv
    sub = next(a for a in _actions(parser) if isinstance(a, argparse._SubParsersAction))
    takes_value = {opt for a in _actions(sub.choices["train"]) if a.nargs != 0
                   for opt in a.option_strings}
    out, prev = [argv[0]], None
    for i, tok in enumerate(argv[1:], start=1):
        if tok == "--":
            out.extend(argv[i:])
            break
        if tok in ("-1", "-2") and prev not in takes_value:
            tok = "--l1" if tok == "-1" else "--l2"
        elif tok == "-c" and prev not in takes_value and not _is_number(argv[i + 1:i + 2]):
            tok = "--cost="  # Wapiti's flag -c (--compact), not CRF++'s -c C: refused later
        out.append(tok)
        prev = tok
    return out


def _actions(parser):
    """The actions of an argparse ``parser`` (argparse lists them in no public attribute)."""
    return parser._actions
