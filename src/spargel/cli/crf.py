"""The CRF's commands ``spargel label``, ``eval`` and ``dump`` (``train`` is
:mod:`spargel.cli.train`; their
options are built in :mod:`spargel.cli.app`; reading, writing and exit statuses go
through :mod:`spargel.cli.common`)."""

from __future__ import annotations

import codecs
import contextlib
import gc
import os
import sys

from .common import (PROG, CommandError, UsageError, check_outputs, read_text,
                     refuse_line_breaks, write_output)
from ..errors import DataFormatError, ParameterError

#: Strings that stand for "no label given" in the label column of ``label --force``.
_BLANKS = ("", "_")



# ---------------------------------------------------------------------------------------
# label
# ---------------------------------------------------------------------------------------

def load_crf(path, encoding="utf-8"):
    """The CRF in the model file ``path`` (any format ``CRF.load`` reads) for ``label``,
    ``dump`` and ``train --init``; a clear error for a folder, a missing file and a model
    trained from Python on feature dicts."""
    from ..chain.estimator import CRF
    from ..core.model_file import ModelFileError

    if path != "-" and os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not a model file")
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such model file")
    model = CRF.load(path, encoding=encoding)
    if not isinstance(model.template, str) or not model.template.strip():
        raise ModelFileError(f"{path}: this model was trained on feature dicts (Python API), "
                             "not on columns with a template; use it from Python")
    return model


def _model_columns(model):
    from ..data.templates import trained_columns

    return trained_columns(model.template)


def _crfpp_model(head, sents, args):
    """(model, expansion) for ``spargel label`` with a CRF++ binary model: the model
    restricted to the feature strings of ``sents`` (:func:`~spargel.chain.crfpp_format.model_for`),
    and those strings as :func:`_plain_labels` takes them; the whole model and None when
    the sentences lack a column the template reads (the general path says so)."""
    import numpy as np

    from ..chain.crfpp_format import model_for
    from ..chain.estimator import CRF

    tpl = head.template
    need = tpl.n_columns_required
    if len(sents[0].columns[0]) < need:
        return load_crf(args.model, args.encoding), None
    seq_ptr = np.zeros(len(sents) + 1, np.int64)
    np.cumsum([len(s.columns) for s in sents], out=seq_ptr[1:])
    cells = [[row[c] for s in sents for row in s.columns] for c in range(need)]
    uni, big = tpl.extract_flat(cells, seq_ptr)
    strings = set()
    for part, _ in uni + big:
        strings.update(part)
    model = model_for(head, CRF, strings)
    return model, (tpl.text, seq_ptr, cells, (uni, big))


#: the most tokens ``spargel label`` labels in plain Python with a CRF++ binary model
#: (:func:`spargel.chain.crfpp_binary.label_few`) rather than through numpy, whose
#: import alone costs as much CPU time as about this many tokens take in plain Python
FEW_TOKENS = 1000


def _few_for_plain_python(head, sents):
    """Whether ``spargel label`` labels ``sents`` with the CRF++ binary model ``head`` in
    plain Python: at most :data:`FEW_TOKENS` tokens, every one with the columns the
    template reads (else the general path says which lacks them), and a label set small
    enough (:func:`~spargel.chain.crfpp_binary.fits_few`)."""
    from ..chain.crfpp_binary import fits_few

    n_tokens = sum(len(s.columns) for s in sents)
    need = head.template.n_columns_required
    return (n_tokens <= FEW_TOKENS and fits_few(head, n_tokens)
            and all(len(row) >= need for s in sents for row in s.columns))


def _plain_labels(model, sents, n_cols, expanded=None):
    """The Viterbi labels of every sentence by :mod:`spargel.chain.plain_viterbi` (no
    compiled kernels to load: what a one-shot ``spargel label`` spends most of its time
    on otherwise), or None when that module does not handle this model (second order,
    label constraints) or the sentences lack a column the patterns read (the general
    path then says which)."""
    import numpy as np

    from ..chain import plain_viterbi

    fitted = model.fitted_model_
    featurizer = fitted.featurizer()
    tpl = featurizer.template
    if tpl is None or tpl.n_columns_required > n_cols or getattr(model.space_, "order", 1) != 1:
        return None
    if any(len(row) < tpl.n_columns_required for s in sents for row in s.columns[:1]):
        return None
    constraints = fitted.label_constraints()
    if constraints is not None:
        return None
    if expanded is not None and expanded[0] == tpl.text and not tpl.unigram_only:
        _, seq_ptr, cells, strings = expanded        # (the same patterns, already expanded)
    else:
        strings = None
        seq_ptr = np.zeros(len(sents) + 1, np.int64)
        np.cumsum([len(s.columns) for s in sents], out=seq_ptr[1:])
        cells = [[row[c] for s in sents for row in s.columns] for c in range(tpl.n_columns_required)]
    data = featurizer.encode_columns(cells, seq_ptr, strings)
    if not plain_viterbi.supported(model.space_, data, constraints):
        return None
    ids = plain_viterbi.decode(model.space_, data, model.weights_)
    names = np.array(model.classes_, dtype=object)[ids].tolist()
    return [names[seq_ptr[i]:seq_ptr[i + 1]] for i in range(len(sents))]


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for the block (and back on after it, if it
    was). Labelling a file builds hundreds of thousands of small lists and strings that
    form no cycles and live until the output is written; the collector's full passes
    over them took a tenth of ``spargel label``'s time on CoNLL-2000's test set."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cmd_label(args):
    """``spargel label``: decode a column file and append the predicted labels."""
    with _collector_paused():
        return _label(args)


def _label(args):
    """:func:`cmd_label`'s work."""
    from ..core.limits import check_nbest

    if args.blocks and args.nbest < 2:
        raise UsageError("label: --blocks needs --nbest K with K >= 2")
    check_outputs({"OUTPUT": args.output}, {"INPUT": args.input, "--model": args.model})
    from ..chain.foreign_files import is_crfsuite_file
    if args.model != "-" and is_crfsuite_file(args.model):      # CRFsuite's data and output formats
        from . import crfsuite as crfsuite_cli
        from ..chain.estimator import CRF
        if args.nbest > 1 or args.force or args.constraints not in (None, "none"):
            raise UsageError("label: --nbest, --force and --constraints are not available with a CRFsuite "
                             "model file")
        model = CRF.load(args.model)
        refuse_line_breaks(model.classes_, "label", args.model)
        text, name = read_text(args.input, args.encoding)
        write_output(args.output, crfsuite_cli.label(args, model, text, name), args.encoding)
        return 0
    crfpp = None
    if (args.nbest == 1 and not args.marginals and not args.force and args.constraints is None
            and args.model != "-" and os.path.isfile(args.model)):
        from ..chain.crfpp_binary import BinaryHead, is_crfpp_binary_file
        if is_crfpp_binary_file(args.model):
            # crf_test's way: only the features of the input are looked up in the trie
            crfpp = BinaryHead(args.model, args.encoding)
            refuse_line_breaks(crfpp.labels, "label", args.model)
    if crfpp is None:
        model = load_crf(args.model, args.encoding)
        refuse_line_breaks(model.classes_, "label", args.model)
    if args.constraints is not None:
        model.constraints = None if args.constraints == "none" else args.constraints
        try:
            model.fitted_model_.label_constraints()
        except ParameterError as exc:       # a label that does not fit the scheme
            raise CommandError(f"{args.model}: {exc}") from None
    text, name = read_text(args.input, args.encoding)
    tabbed = any("\t" in line for line in text.split("\n", 50)[:50])
    separator = "\t" if (args.force and tabbed) else None
    from ..data.conll import parse_text

    sents = parse_text(text, name, has_labels=False, separator=separator)
    expanded = None
    few = crfpp is not None and _few_for_plain_python(crfpp, sents)
    if crfpp is not None and not few:
        model, expanded = _crfpp_model(crfpp, sents, args)
    width = len(sents[0].columns[0])
    n_cols = None if few else _model_columns(model)
    tpl = crfpp.template if few else model.fitted_model_.template
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
    plain = None
    if few:
        from ..chain.crfpp_binary import label_few
        plain = label_few(crfpp, [s.columns for s in sents])
    elif k == 1 and not args.marginals and constraints is None:
        plain = _plain_labels(model, sents, n_cols, expanded)
    X = None if plain is not None else [[row[:n_cols] for row in s.columns] for s in sents]
    if plain is not None:
        paths = [[(p, None)] for p in plain]
    elif k == 1:
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
        if k == 1 and marg is None:         # (the common case, in one pass)
            labels = paths[s_idx][0][0]
            out.extend([f"{out_sep.join(row)}{out_sep}{lab}\n" for row, lab in zip(rows, labels)])
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


def _wapiti_bytes(model, name, encoding="utf-8"):
    """A model as a Wapiti model file's bytes, or a CommandError with the reason."""
    from ..chain import wapiti_format
    try:
        return wapiti_format.to_bytes(wapiti_format.to_wapiti_model(model), encoding)
    except ValueError as exc:
        raise CommandError(f"{name}: {exc}") from None


def cmd_dump(args):
    """``spargel dump``: the non-zero weights as tab-separated text."""
    from ..chain.estimator import CRF

    if os.path.isdir(args.model):
        raise CommandError(f"{args.model}: is a directory, not a model file")
    if not os.path.exists(args.model):
        raise CommandError(f"{args.model}: no such model file")
    model = CRF.load(args.model)
    if args.dump_format == "wapiti":
        write_output("-", _wapiti_bytes(model, args.model))
        return 0
    rows = model_weights(model, args.kind)
    if args.sort == "abs":
        rows.sort(key=lambda r: (-abs(r[3]), r[0], r[1], r[2]))
    elif args.sort == "weight":
        rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
    elif args.sort == "name":
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
    if args.top is not None:
        rows = rows[:args.top]
    for attr, prev, lab, _ in rows:
        refuse_line_breaks((attr, prev, lab), "name", args.model)
    write_output("-", "".join(f"{attr}\t{prev}\t{lab}\t{w:.6g}\n" for attr, prev, lab, w in rows))
    return 0

