"""The CRF's commands: ``spargel train``, ``label``, ``eval`` and ``dump`` (their
options are built in :mod:`spargel.cli.app`; reading, writing and exit statuses go
through :mod:`spargel.cli.common`)."""

from __future__ import annotations

import codecs
import contextlib
import gc
import os
import re
import signal
import sys
import time

from .common import (PROG, CommandError, UsageError, check_number, check_outputs, json_line, read_text,
                     refuse_line_breaks, write_output)
from ..errors import ConvergenceWarning, DataFormatError, ParameterError

#: Stored as the first line of the template of a model trained by ``spargel train``,
#: so that ``spargel label`` knows how many observation columns the input has.
_COLUMNS_MARK = "# spargel train: {n} observation column(s) before the label"
_COLUMNS_RE = re.compile(r"^# spargel train: (\d+) observation column")

#: Strings that stand for "no label given" in the label column of ``label --force``.
_BLANKS = ("", "_")



# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

#: appended to the error of a file that is not UTF-8 text
_ENCODING_HINT = " (give its encoding with --encoding, e.g. latin-1)"


def _column_file(path, args, unknown_label=None):
    """The column file ``path`` (or stdin, ``-``) that ``spargel train`` reads, in
    ``--encoding``: a :class:`~spargel.data.column_file.ColumnFile` (the one data source
    of training: streamed, in memory, or by byte ranges on Dask workers)."""
    from ..data.column_file import ColumnFile

    utf8 = args.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    try:
        return ColumnFile(path, args.encoding, unknown_label, hint=_ENCODING_HINT if utf8 else "")
    except LookupError:
        raise UsageError(f"unknown --encoding {args.encoding!r}") from None


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
            self.fh.write(json_line(row) + "\n")
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

    # the command prints the stop reason itself ("stopped after N iterations: max_iter")
    warnings.simplefilter("ignore", ConvergenceWarning)
    from ..solvers import SOLVERS
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
    # options that only one way of training reads: refused, not silently ignored
    if args.init is not None and args.stream is None:
        raise UsageError("train: --init continues a model only with --stream N (a plain train starts "
                         "from zero)")
    if args.shards is not None and args.scheduler is None:
        raise UsageError("train: --shards applies only with --scheduler")
    if args.seed is not None:
        check_number("--seed", args.seed, low=0, integer=True)
    if args.constrain_training and args.constraints is None:
        raise UsageError("train: --constrain-training needs --constraints SCHEME")
    if args.constraints is not None and (args.stream is not None or args.scheduler is not None):
        raise UsageError("train: --constraints is not available with --stream or --scheduler")
    if args.constraints is not None and args.model_format == "wapiti":
        raise UsageError("train: a Wapiti model file cannot hold --constraints (use --model-format spargel, "
                         "or give --constraints to 'spargel label')")
    # --init may be MODEL itself (continue a model in place): it is read before the save
    check_outputs({"MODEL": args.model, "--history": args.history},
                  {"TRAIN": args.train, "--dev": args.dev, "--pattern": args.pattern})
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
    source = _column_file(args.train, args, args.unknown_label)
    name = source.name
    if args.weight_column is None and args.train != "-":
        # streamed: read, extract and encode one sequence at a time (no list of sentences)
        reader = _TrainStream(source, None if args.quiet else PROG)
        sents = name
        first = reader.first
        weights = None
    else:
        reader = None
        sents = source.read()
        weights = _take_weight_column(sents, args.weight_column, name) if args.weight_column is not None else None
        first = sents[0]
        _check_known({lab for s in sents for lab in s.labels if lab is not None}, name, args)
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, name, first.line)
    _check_model_format(args, text)
    dev_x = dev_y = None
    if args.dev:
        dev_file = _column_file(args.dev, args)
        dev, dev_name = dev_file.read(), dev_file.name
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

    crf = _make_crf(args, text, "memory")
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
            reader.close()                  # also when the fit stopped before reading


#: ``spargel train``'s ways of training: the whole file in memory (or streamed into the
#: encoder), on a Dask cluster, or by chunks through ``partial_fit`` (--stream)
WAYS = ("memory", "cluster", "stream")


def _crf_params(args, way):
    """The parameters of ``spargel train``'s estimator for one of its :data:`WAYS` (the
    options each way reads: --stream trains with SGD-L1 by chunks, a cluster has no
    --threads or --constraints)."""
    params = dict(l1=args.l1, l2=args.l2, feature_space=args.feature_space, pad=args.pad,
                  random_state=args.seed, order=args.order, model_type=getattr(args, "model_type", "crf"))
    if way == "stream":
        return params
    params.update(solver=args.solver, max_iter=args.max_iter, tol=args.tol, gtol=args.gtol, window=args.window,
                  solver_options=_solver_options(args))
    if way == "memory":
        params.update(n_jobs=args.threads, constraints=args.constraints, constrain_training=args.constrain_training)
    return params


def _make_crf(args, text, way, **extra):
    """``spargel train``'s estimator, built here for all its :data:`WAYS`: the template
    ``text`` and :func:`_crf_params` (``extra``: a cluster's client and shards)."""
    from ..chain.estimator import CRF

    params = _crf_params(args, way)
    if way == "stream":
        params["solver"] = "sgd-l1"
    return CRF(template=text, **params, **extra)


def _solver_options(args):
    """The solver's own options from the command line (the solver table's ``cli_options``:
    Wapiti's rprop steps, CRF++'s MIRA C and -H), or None."""
    from ..solvers import SOLVERS

    opts = {}
    for arg, option in SOLVERS[args.solver].cli_options:
        value = getattr(args, arg, None)
        if value is not None and value is not False:      # given (--cutoff: a flag)
            opts[option] = value
    return opts or None


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
    """The training file read one sequence at a time (``source``: a
    :class:`~spargel.data.column_file.ColumnFile`), for a fit that extracts and encodes
    each sequence as it comes (its memory is the encoded data, not the text or the
    sentences). The first sequence is read at once (the template needs its number of
    columns); :meth:`sequences` and :meth:`labels` are consumed in step by the fit (the
    sentence of the labels is the one last yielded). A progress line (``prog``: the
    program name, None for none) reports sequences, tokens and bytes read. When the file
    ends, ``after(known labels, sequences, tokens)`` is called: its errors stop the fit
    before any training."""

    def __init__(self, source, prog):
        from ..data.progress import ReadProgress

        self.source = source
        self.name = source.name
        total = source.size()
        self.progress = (lambda: ReadProgress(f"{prog} train: reading {self.name}", total)) if prog else None
        self.after = None
        self.current = None
        self.it = source.sentences()
        self.first = next(self.it)
        self.known = set(self.first.labels)

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
                    self.progress.update(n_seq, n_tok, self.source.bytes_read)
                yield s
                s = next(self.it, None)
                if s is not None:
                    self.known.update(s.labels)
        finally:
            self.close()
            self.current = None
        self.known.discard(None)
        if self.progress is not None and self.progress.lines:
            self.progress.write(n_seq, n_tok, self.source.bytes_read)
        self.after(self.known, n_seq, n_tok)

    def labels(self):
        while self.current is not None:
            yield self.current.labels

    def close(self):
        self.it.close()


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

            try:
                fit(callback)
            except KeyboardInterrupt:
                # the estimator kept the state reached (stop reason "interrupted") and
                # re-raised: the command line writes that model and says so
                if getattr(crf, "stop_reason_", None) != "interrupted" or not hasattr(crf, "weights_"):
                    raise
            stopper.saving = True
            interrupted = stopper.requested or crf.stop_reason_ == "interrupted"
            _save_model(crf, args)
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


def _check_model_format(args, template_text):
    """Refuse, before training, a --model-format that cannot hold the model."""
    if getattr(args, "model_format", "spargel") != "wapiti":
        return
    from ..data.templates import Template
    why = None
    if args.order != 1:
        why = "Wapiti's models are first-order"
    elif not args.pad:
        why = "Wapiti always pads (drop --no-pad)"
    elif not args.pattern:
        why = "a Wapiti model holds the patterns of a Wapiti pattern file: give one with --pattern"
    elif Template.parse(template_text, source=args.pattern).format != "wapiti":
        why = (f"{args.pattern} is read as a CRF++ template; Wapiti reads its own pattern language: add "
               f"--pattern-format wapiti (or a first line '# format: wapiti')")
    if why is not None:
        raise UsageError(f"train: --model-format wapiti: {why}")


def _wapiti_bytes(model, name, encoding="utf-8"):
    """A model as a Wapiti model file's bytes, or a CommandError with the reason."""
    from ..chain import wapiti_format
    try:
        return wapiti_format.to_bytes(wapiti_format.to_wapiti_model(model), encoding)
    except ValueError as exc:
        raise CommandError(f"{name}: {exc}") from None


def _save_model(model, args):
    """Write the trained model to MODEL in --model-format."""
    if getattr(args, "model_format", "spargel") != "wapiti":
        return model.save(args.model)
    write_output(args.model, _wapiti_bytes(model, args.model, args.encoding))


def _train_on_cluster(args, say):
    """``spargel train --scheduler ADDRESS``: the workers read TRAIN (byte ranges of it),
    build the vocabularies and the shards; the solver runs here (docs/distributed.md)."""
    import os

    from ..scaleout.cluster import connect, disconnect, workers

    if args.train == "-":
        raise UsageError("train: --scheduler needs TRAIN as a file the workers can read, not stdin")
    if args.weight_column is not None:
        raise UsageError("train: --weight-column is not supported with --scheduler")
    t0 = time.perf_counter()
    first = _column_file(args.train, args).first()
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, args.train, first.line)
    _check_model_format(args, text)
    dev_x = dev_y = None
    if args.dev:
        dev = _column_file(args.dev, args).read()
        dev_x, dev_y = dev, [s.labels for s in dev]
    client = connect(args.scheduler)
    try:
        found = workers(client)
        say(f"{PROG} train: {args.train} on the Dask cluster at {client.scheduler.address} "
            f"({len(found)} workers, {sum(found.values())} threads); solver {args.solver}, "
            f"l1={args.l1:g}, l2={args.l2:g}")
        crf = _make_crf(args, text, "cluster", client=client, n_shards=args.shards)
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

    from ..chain.streaming import chunks as in_chunks

    if args.train == "-":
        raise UsageError("train: --stream reads TRAIN several times; give a file, not stdin")
    if args.stream < 1:
        raise UsageError("train: --stream needs a chunk size >= 1")
    if args.solver not in ("owlqn", "sgd-l1"):
        say(f"{PROG} train: note: --stream always trains with sgd-l1")
    t0 = time.perf_counter()
    source = _column_file(args.train, args)
    first = source.first()
    n_cols = len(first.columns[0])
    text = _template_text(args, n_cols, args.train, first.line)
    _check_model_format(args, text)
    if args.init:
        model = _load_crf(args.init, args.encoding).set_params(**_crf_params(args, "stream"))
    else:
        model = _make_crf(args, text, "stream")
    passes = 1 if args.max_iter is None else args.max_iter
    say(f"{PROG} train: streaming {args.train} in chunks of {args.stream} sequences, {passes} pass(es), "
        f"sgd-l1, l1={args.l1:g}, l2={args.l2:g}")
    n = source.count()
    options = dict(model.solver_options or {}) if model.solver == "sgd-l1" else {}
    options.setdefault("n_samples", n)  # the objective sums over the whole file
    model.solver, model.solver_options = "sgd-l1", options

    done = None  # the model after the last completed chunk (a shallow copy: cheap)
    chunks = 0
    with _StopOnSignal() as stopper:
        try:
            for p in range(1, int(passes) + 1):
                for chunk in in_chunks(source.sentences(), args.stream):
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
        _save_model(done, args)
        interrupted = interrupted or stopper.requested
    say(f"{PROG} train: {chunks} chunk(s){' (interrupted)' if interrupted else ''}; "
        f"{done.n_active_features_} active features; {time.perf_counter() - t0:.1f}s; "
        f"model written to {args.model}")
    return 130 if interrupted else 0


# ---------------------------------------------------------------------------------------
# label
# ---------------------------------------------------------------------------------------

def _load_crf(path, encoding="utf-8"):
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
    m = _COLUMNS_RE.match(model.template)
    return int(m.group(1)) if m else None


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
        return _load_crf(args.model, args.encoding), None
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
        model = _load_crf(args.model, args.encoding)
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

