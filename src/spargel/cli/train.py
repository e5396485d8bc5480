"""``spargel train``: one pipeline for its three ways of training.

The ways (:data:`WAYS`): ``memory``, the whole file encoded at once (streamed into the
encoder sequence by sequence, or read as a list for ``--weight-column`` and standard
input); ``stream``, SGD-L1 by chunks of sequences through ``CRF.partial_fit``
(``--stream N``); ``cluster``, on a Dask cluster whose workers read byte ranges of the
file (``--scheduler``). Every way takes the same steps, in this order:

1. every option checked before a byte is read (:func:`_checked_params`): the solver,
   the options a way does not read refused by name, the outputs;
2. the training file opened once (:class:`~spargel.data.column_file.ColumnFile`), its
   first sequence read (the template needs its number of columns), the template
   (:func:`~spargel.data.templates.training_template`), the development data;
3. the estimator built once, from :func:`_checked_params` (``--init``: the model to
   continue, its parameters set);
4. the fit, under Ctrl-C handling (:class:`_StopOnSignal`) and ``--history``;
5. the model written in ``--model-format`` and the closing line.
"""

from __future__ import annotations

import codecs
import copy
import os
import signal
import sys
import time
import warnings

from .common import PROG, CommandError, UsageError, check_number, check_outputs, json_line
from .crf import load_crf
from .tool_options import ToolOptionError, tool_habits
from ..chain.estimator import CRF
from ..chain.stream_file import train_streaming
from ..chain.wapiti_format import training_refusal
from ..core import first_use
from ..data.column_file import ColumnFile, check_two_labels, take_weight_column
from ..data.templates import training_template
from ..errors import ConvergenceWarning
from ..solvers import SOLVERS

__all__ = ["WAYS", "cmd_train"]

#: ``spargel train``'s ways of training: the whole file (in memory, or streamed into the
#: encoder), by chunks through ``partial_fit`` (--stream), on a Dask cluster (--scheduler)
WAYS = ("memory", "stream", "cluster")

#: appended to the error of a file that is not UTF-8 text
_ENCODING_HINT = " (give its encoding with --encoding, e.g. latin-1)"


def cmd_train(args):
    """``spargel train``: fit a CRF on a column file and write the model."""
    # the command prints the stop reason itself ("stopped after N iterations: max_iter")
    warnings.simplefilter("ignore", ConvergenceWarning)
    say = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    way = "stream" if args.stream is not None else "cluster" if args.scheduler is not None else "memory"
    params = _checked_params(args, way, say)
    history = _HistoryLog(args.history, say) if args.history else None
    # --init may be MODEL itself (continue a model in place): it is read before the save
    check_outputs({"MODEL": args.model, "--history": args.history},
                  {"TRAIN": args.train, "--dev": args.dev, "--pattern": args.pattern})
    if not args.quiet:
        first_use.enable()
    t0 = time.perf_counter()
    utf8 = args.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    hint = _ENCODING_HINT if utf8 else ""
    with _StopOnSignal() as stopper:
        # 2. the data: one source, its first sequence, the template, the development data
        source = ColumnFile(args.train, args.encoding, args.unknown_label, hint=hint)
        name = source.name
        reader = sents = weights = known = None
        if way == "memory" and args.weight_column is None and args.train != "-":
            # streamed into the encoder: one sequence at a time, no list of sentences
            reader = source.stream(None if args.quiet else f"{PROG} train: reading {name}")
            first = reader.first
        elif way == "memory":
            sents = source.read()
            if args.weight_column is not None:
                weights = take_weight_column(sents, args.weight_column, name)
            first = sents[0]
            known = {lab for s in sents for lab in s.labels if lab is not None}
            check_two_labels(known, name, args.unknown_label)
        else:
            first = source.first()
        n_cols = len(first.columns[0])
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            text = training_template(args.pattern, n_cols, name, first.line, order=args.order,
                                     encoding=args.encoding,
                                     format=None if args.pattern_format == "auto" else args.pattern_format)
        for note in notes:
            print(f"{PROG}: note: {note.message}", file=sys.stderr)
        dev_x = dev_y = dev_name = None
        if args.dev:
            dev_file = ColumnFile(args.dev, args.encoding, hint=hint)
            dev_x = dev_file.read()
            dev_y, dev_name = [s.labels for s in dev_x], dev_file.name
            if len(dev_x[0].columns[0]) != n_cols:
                raise CommandError(f"{dev_name}:{dev_x[0].line}: the development data has "
                                   f"{len(dev_x[0].columns[0]) + 1} columns, the training data {n_cols + 1}")
        client = None
        if way == "cluster":
            from ..scaleout.cluster import connect, disconnect, workers

            client = connect(args.scheduler)
        try:
            # 3. the estimator, built once
            crf = _estimator(args, params, text, client)

            def after_reading(labels, n_seq, n_tok):
                check_two_labels(labels, name, args.unknown_label)
                if dev_x is not None:
                    unseen = sorted({lab for s in dev_x for lab in s.labels} - labels)
                    if unseen:
                        say(f"{PROG} train: note: {dev_name} has labels that the training data lacks "
                            f"({', '.join(unseen[:5])}{', ...' if len(unseen) > 5 else ''}); they count as errors")
                say(f"{PROG} train: {n_seq} sequences, {n_tok} tokens, {n_cols} observation column(s) "
                    f"from {name}; solver {args.solver}, l1={args.l1:g}, l2={args.l2:g}")

            def callback(row):
                stopper.started = True
                if history is not None:
                    history.write(row)
                say(_iteration_line(row))
                return stopper.requested

            # --stream: SGD-L1 by chunks of N sequences (never the whole file), one
            # partial_fit each, --max-iter passes; Ctrl-C stops after the current chunk
            # (a second one at once, keeping the model of the last completed chunk)
            passes = 1 if args.max_iter is None else int(args.max_iter)
            done, n_chunks = None, 0

            def after_chunk(model, p, chunk, size):
                nonlocal done, n_chunks
                done, n_chunks = copy.copy(model), chunk      # a shallow copy: cheap
                stopper.started = True
                if history is not None:
                    history.write({"pass": p, "chunk": chunk, "chunk_sequences": size, **model.history_[-1]})
                say(f"pass {p:3d}  chunk {chunk:5d}  {size} sequences  active "
                    f"{model.n_active_features_}  {time.perf_counter() - t0:.1f}s")
                return stopper.requested

            # 4. the fit, the way chosen
            try:
                if way == "stream":
                    say(f"{PROG} train: streaming {args.train} in chunks of {args.stream} sequences, {passes} "
                        f"pass(es), sgd-l1, l1={args.l1:g}, l2={args.l2:g}")
                    train_streaming(source, None, args.stream, passes, model=crf, callback=after_chunk)
                elif way == "cluster":
                    found = workers(client)
                    say(f"{PROG} train: {args.train} on the Dask cluster at {client.scheduler.address} "
                        f"({len(found)} workers, {sum(found.values())} threads); solver {args.solver}, "
                        f"l1={args.l1:g}, l2={args.l2:g}")
                    from ..chain.scaleout import fit_crf

                    fit_crf(crf, [os.path.abspath(args.train)], None, dev_x, dev_y, callback, encoding=args.encoding,
                            unknown_label=args.unknown_label)
                elif reader is not None:
                    reader.after = after_reading
                    crf.fit(reader.sequences(), reader.labels(), X_dev=dev_x, y_dev=dev_y, callback=callback)
                else:
                    after_reading(known, len(sents), sum(len(s) for s in sents))
                    crf.fit(sents, [s.labels for s in sents], X_dev=dev_x, y_dev=dev_y, callback=callback,
                            sample_weight=weights)
            except KeyboardInterrupt:
                # the estimator kept the state reached (stop reason "interrupted") and
                # re-raised: the command writes that model and says so
                if way == "stream" and done is not None:
                    stopper.requested = True
                elif getattr(crf, "stop_reason_", None) != "interrupted" or not hasattr(crf, "weights_"):
                    raise
            # 5. the model written, whole even if Ctrl-C comes now
            stopper.saving = True
            if way == "stream":
                interrupted = stopper.requested
                if done is None:            # no pass at all (--max-iter 0): the initial model
                    if not hasattr(crf, "weights_"):
                        raise CommandError(f"{args.train}: --max-iter 0 with --stream and no --init trains nothing")
                    done = crf
                crf = done
            else:
                interrupted = stopper.requested or crf.stop_reason_ == "interrupted"
            try:
                crf.save(args.model, format=args.model_format, encoding=args.encoding)
            except ValueError as exc:
                raise CommandError(f"{args.model}: {exc}") from None
            interrupted = interrupted or stopper.requested
        finally:
            if reader is not None:
                reader.close()                  # also when the fit stopped before reading
            if history is not None:
                history.close()
            if client is not None:
                disconnect(client)
    elapsed = time.perf_counter() - t0
    if way == "stream":
        say(f"{PROG} train: {n_chunks} chunk(s){' (interrupted)' if interrupted else ''}; "
            f"{crf.n_active_features_} active features; {elapsed:.1f}s; model written to {args.model}")
    else:
        # after Ctrl-C in the middle of an iteration: the last one the history recorded
        n_iter = int(crf.n_iter_)
        if interrupted:
            rows = getattr(crf, "history_", None) or []
            n_iter = min(n_iter, int(rows[-1].get("iteration", n_iter))) if rows else 0
        reason = "interrupted" if interrupted else crf.stop_reason_
        say(f"{PROG} train: stopped after {n_iter} iterations ({reason}); objective {crf.objective_:.8g}; "
            f"{crf.n_active_features_} active features; {elapsed:.1f}s; model written to {args.model}")
    if history is not None and history.error is not None:
        raise CommandError(f"{args.history}: {history.error}; the history is incomplete (the model "
                           f"was written to {args.model})")
    return 130 if interrupted else 0


def _checked_params(args, way, say):
    """Step 1: every option checked (a :class:`UsageError` before any file is read);
    returns the estimator's parameters for ``way`` (what each way reads: --stream
    trains with SGD-L1 by chunks, a cluster has no --threads or --constraints)."""
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
    if args.init is not None and way != "stream":
        raise UsageError("train: --init continues a model only with --stream N (a plain train starts "
                         "from zero)")
    if args.shards is not None and way != "cluster":
        raise UsageError("train: --shards applies only with --scheduler")
    if args.seed is not None:
        check_number("--seed", args.seed, low=0, integer=True)
    if args.constrain_training and args.constraints is None:
        raise UsageError("train: --constrain-training needs --constraints SCHEME")
    if args.constraints is not None and way != "memory":
        raise UsageError("train: --constraints is not available with --stream or --scheduler")
    if args.constraints is not None and args.model_format == "wapiti":
        raise UsageError("train: a Wapiti model file cannot hold --constraints (use --model-format spargel, "
                         "or give --constraints to 'spargel label')")
    if way != "memory" and args.train == "-":
        raise UsageError(f"train: {'--stream' if way == 'stream' else '--scheduler'} reads TRAIN "
                         f"{'several times' if way == 'stream' else 'on the workers'}; give a file, not stdin")
    if way != "memory" and args.weight_column is not None:
        raise UsageError(f"train: --weight-column is not supported with {'--stream' if way == 'stream' else '--scheduler'}")
    if way == "stream":
        if args.stream < 1:
            raise UsageError("train: --stream needs a chunk size >= 1")
        if args.dev:
            raise UsageError("train: --dev is not available with --stream (each chunk is one SGD pass; "
                             "evaluate the model with 'spargel eval')")
        if args.solver not in ("owlqn", "sgd-l1"):
            say(f"{PROG} train: note: --stream always trains with sgd-l1")
    try:
        codecs.lookup(args.encoding)
    except LookupError:
        raise UsageError(f"unknown --encoding {args.encoding!r}") from None
    params = dict(l1=args.l1, l2=args.l2, feature_space=args.feature_space, pad=args.pad, random_state=args.seed,
                  order=args.order, model_type=args.model_type)
    if way == "stream":
        return params
    options = {}
    for arg, option in SOLVERS[args.solver].cli_options:   # Wapiti's rprop steps, CRF++'s MIRA C, ...
        value = getattr(args, arg, None)
        if value is not None and value is not False:      # given (--cutoff: a flag)
            options[option] = value
    params.update(solver=args.solver, max_iter=args.max_iter, tol=args.tol, gtol=args.gtol, window=args.window,
                  solver_options=options or None)
    if way == "memory":
        params.update(n_jobs=args.threads, constraints=args.constraints, constrain_training=args.constrain_training)
    return params


def _estimator(args, params, template, client):
    """Step 3: ``spargel train``'s estimator, built once for all its :data:`WAYS`:
    ``params`` (:func:`_checked_params`) and the ``template`` text (a cluster's
    ``client`` and shards), or the ``--init`` model with ``params`` set; a
    ``--model-format`` that cannot hold the model is refused here, before training."""
    if args.init:
        crf = load_crf(args.init, args.encoding).set_params(**params)
    elif client is not None:
        crf = CRF(template=template, client=client, n_shards=args.shards, **params)
    else:
        crf = CRF(template=template, **params)
    if args.model_format == "wapiti":
        why = training_refusal(args.order, args.pad, args.pattern, template)
        if why is not None:
            raise UsageError(f"train: --model-format wapiti: {why}")
    return crf


def _iteration_line(row):
    """One line of the live log: iteration, objective, active features, ..."""
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
        self.fh = None
        self.opened = False

    def write(self, row):
        try:
            if not self.opened:           # opened at the first row: a run that fails before keeps the old file
                self.opened = True
                self.fh = open(self.path, "w", encoding="utf-8")
            if self.fh is None:
                return
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
