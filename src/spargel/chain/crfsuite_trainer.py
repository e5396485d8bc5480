"""python-crfsuite's ``Trainer`` and ``ItemSequence`` over spargel's CRF.

A :class:`Trainer` keeps the appended sequences and CRFsuite's parameters of the
selected trainer (names, types, defaults and errors as CRFsuite's), and ``train(path)``
fits a :class:`spargel.CRF` with the same settings (:data:`PARAMETERS` maps each name
onto the estimator's CRFsuite-spelled parameter), writes a CRFsuite model file
(atomically), and sends CRFsuite's training log through ``message`` message by message,
as CRFsuite does, to the callbacks of python-crfsuite (``on_start``, ``on_iteration``,
...; see :mod:`spargel.chain.crfsuite_log`).
"""

import math
import time
import warnings
from numbers import Integral, Real

import numpy as np

from ..errors import ConvergenceWarning, ItemFormatError
from . import crfsuite_log as log

# --------------------------------------------------------------------------- parameters
#: CRFsuite's parameters of the feature generation (every trainer has them):
#: (name, type, default, description)
FEATURE_PARAMETERS = [
    ("feature.minfreq", "float", 0.0,
     "The least frequency a feature needs to be kept (a state feature's frequency sums its attribute's values)."),
    ("feature.possible_states", "bool", False,
     "Give every attribute a weight for every label, seen together in training or not."),
    ("feature.possible_transitions", "bool", False,
     "Give every pair of labels a transition weight, seen in training or not."),
]

#: each trainer's own parameters, in CRFsuite's order
ALGORITHM_PARAMETERS = {
    "lbfgs": [
        ("c1", "float", 0.0, "Coefficient of the L1 penalty c1 * |w|_1 (OWL-QN when it is positive)."),
        ("c2", "float", 1.0, "Coefficient of the L2 penalty c2 * |w|^2."),
        ("max_iterations", "int", 2147483647, "The most iterations of L-BFGS."),
        ("num_memories", "int", 6, "The number of curvature pairs L-BFGS keeps to approximate the inverse Hessian."),
        ("epsilon", "float", 1e-5, "Convergence: stop when |gradient| <= epsilon * max(1, |w|)."),
        ("period", "int", 10, "The number of iterations over which delta is measured."),
        ("delta", "float", 1e-5,
         "Stop when the objective improved by less than this fraction over the last ${period} iterations."),
        ("linesearch", "str", "MoreThuente",
         "The line search: 'MoreThuente', 'Backtracking' or 'StrongBacktracking' (spargel has one line search "
         "and accepts the three names)."),
        ("max_linesearch", "int", 20, "The most trials of one line search."),
    ],
    "l2sgd": [
        ("c2", "float", 1.0, "Coefficient of the L2 penalty c2 * |w|^2."),
        ("max_iterations", "int", 1000, "The most epochs (passes over the data) of SGD."),
        ("period", "int", 10, "The number of epochs over which delta is measured."),
        ("delta", "float", 1e-6,
         "Stop when the objective improved by less than this fraction over the last ${period} epochs."),
        ("calibration.eta", "float", 0.1, "The first learning rate (eta) tried by the calibration."),
        ("calibration.rate", "float", 2.0, "The factor by which the calibration raises or lowers eta."),
        ("calibration.samples", "float", 1000.0, "The number of sequences the calibration trains on."),
        ("calibration.candidates", "int", 10, "The number of learning rates the calibration compares."),
        ("calibration.max_trials", "int", 20, "The most learning rates the calibration tries."),
    ],
    "averaged-perceptron": [
        ("max_iterations", "int", 100, "The most epochs."),
        ("epsilon", "float", 0.0, "Stop when the fraction of wrongly predicted labels is at most this."),
    ],
    "passive-aggressive": [
        ("type", "int", 1, "The update: 0 -- without slack variables, 1 -- PA-I, 2 -- PA-II."),
        ("c", "float", 1.0, "The aggressiveness (the slack penalty of PA-I and PA-II)."),
        ("error_sensitive", "bool", True, "Count the number of wrong labels in the cost of an update."),
        ("averaging", "bool", True, "Average the weights over the updates (as the averaged perceptron)."),
        ("max_iterations", "int", 100, "The most epochs."),
        ("epsilon", "float", 0.0, "Stop when the mean loss is at most this."),
    ],
    "arow": [
        ("variance", "float", 1.0, "The initial variance of every weight."),
        ("gamma", "float", 1.0, "The trade-off between the loss and the change of the weights."),
        ("max_iterations", "int", 100, "The most epochs."),
        ("epsilon", "float", 0.0, "Stop when the mean loss is at most this."),
    ],
}

#: python-crfsuite's short names
ALIASES = {"ap": "averaged-perceptron", "pa": "passive-aggressive"}
#: CRFsuite's trainer name -> spargel.CRF's ``algorithm``
CRF_ALGORITHM = {"lbfgs": "lbfgs", "l2sgd": "l2sgd", "averaged-perceptron": "ap", "passive-aggressive": "pa",
                 "arow": "arow"}
#: CRFsuite's parameter -> spargel.CRF's parameter
CRF_PARAMETER = {"feature.minfreq": "min_freq", "feature.possible_states": "all_possible_states",
                 "feature.possible_transitions": "all_possible_transitions", "type": "pa_type",
                 "calibration.eta": "calibration_eta", "calibration.rate": "calibration_rate",
                 "calibration.samples": "calibration_samples", "calibration.candidates": "calibration_candidates",
                 "calibration.max_trials": "calibration_max_trials"}
LINESEARCHES = ("MoreThuente", "Backtracking", "StrongBacktracking")
#: CRFsuite's version whose trainers, parameters and files these are
CRFSUITE_VERSION = "0.12.2"


def parameters(algorithm):
    """``{name: (type, default, description)}`` of a trainer, in CRFsuite's order."""
    return {name: (kind, default, text) for name, kind, default, text in
            FEATURE_PARAMETERS + ALGORITHM_PARAMETERS[algorithm]}


def _convert(name, kind, value):
    """A parameter value as CRFsuite stores it (refused with a clear error where CRFsuite
    would read a number out of anything)."""
    if kind == "str":
        if not isinstance(value, str) or value not in LINESEARCHES:
            raise ValueError(f"{name} must be one of {', '.join(LINESEARCHES)}, got {value!r}")
        return value
    if isinstance(value, (bytes, str)):
        text = value.decode() if isinstance(value, bytes) else value
        try:
            value = int(text) if kind in ("int", "bool") and text.strip().lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {text!r}") from None
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if kind == "float":
        return float(value)
    if not isinstance(value, Integral) and value != int(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return bool(int(value)) if kind == "bool" else int(value)


# --------------------------------------------------------------------------- sequences
class ItemSequence(list):
    """The items of a sequence as CRFsuite receives them: a list with, per item, a dict
    ``{attribute: value}`` (``items()`` returns copies). Built from python-crfsuite's
    item formats: a dict (a string value ``{"w": "the"}`` is the attribute ``w:the`` with
    value 1, a bool 1 or 0, a number the attribute's value, a nested dict or a list / set
    of strings prefixes its keys with ``key:``; ``bytes`` are UTF-8 text) or an iterable of
    attribute names (each with value 1). An ``ItemSequence`` given to a ``Trainer`` or a
    ``Tagger`` is not converted again."""

    def __init__(self, pyseq=()):
        if isinstance(pyseq, ItemSequence):
            super().__init__(dict(d) for d in pyseq)
            return
        from ..data.featuredicts import attribute_list_items, token_attributes
        items = attribute_list_items(pyseq)
        if items is not None:               # lists of attribute strings: at C speed
            super().__init__(items)
            return
        if isinstance(pyseq, (str, bytes, dict)) or not hasattr(pyseq, "__iter__"):
            raise ItemFormatError(f"an item sequence is a list of items, not {type(pyseq).__name__}")
        try:
            super().__init__(dict(token_attributes(x, f"item {t}: ", ":")) for t, x in enumerate(pyseq))
        except TypeError as exc:
            raise ItemFormatError(str(exc)) from None

    def items(self):
        """The items: a list of ``{attribute: value}`` dicts."""
        return [dict(d) for d in self]

    def __repr__(self):
        return f"<ItemSequence of size {len(self)}>"


# --------------------------------------------------------------------------- errors
class CRFSuiteError(Exception):
    """A training that failed as a CRFsuite status code would say (``code``: CRFsuite's
    ``CRFSUITEERR_*`` value)."""

    UNKNOWN, OUTOFMEMORY, NOTSUPPORTED, INCOMPATIBLE, INTERNAL_LOGIC, OVERFLOW, NOTIMPLEMENTED = (
        -2147483648 + k for k in range(7))
    _messages = {UNKNOWN: "Unknown error occurred", OUTOFMEMORY: "Insufficient memory",
                 NOTSUPPORTED: "Unsupported operation", INCOMPATIBLE: "Incompatible data",
                 INTERNAL_LOGIC: "Internal error", OVERFLOW: "Overflow", NOTIMPLEMENTED: "Not implemented"}

    def __init__(self, code, detail=None):
        self.code = code
        text = self._messages.get(code, "Unexpected error")
        super().__init__(text if detail is None else f"{text}: {detail}")


# --------------------------------------------------------------------------- the trainer
_STR = frozenset((str,))


class BaseTrainer:
    """python-crfsuite's ``BaseTrainer``: messages are printed when ``verbose``.

    ``Trainer(algorithm=None, params=None, verbose=True)``; ``append(xseq, yseq,
    group=0)``, ``select(algorithm, type='crf1d')``, ``set_params``, ``get_params``,
    ``params``, ``set``, ``get``, ``help``, ``clear``, ``train(model, holdout=-1)``.
    Training goes through :class:`spargel.CRF` (CRFsuite's "lbfgs": OWL-QN / L-BFGS;
    "l2sgd", "ap", "pa", "arow": spargel's versions of CRFsuite's trainers) and writes
    a CRFsuite model file, read by python-crfsuite's and spargel's taggers alike."""

    def __new__(cls, *args, **kwargs):
        # the state exists even when a subclass's __init__ does not call this class's
        # (python-crfsuite's trainer is set up before __init__)
        self = super().__new__(cls)
        self.verbose = False
        self._data = []
        self._select("lbfgs")
        return self

    def __init__(self, algorithm=None, params=None, verbose=True):
        if algorithm is not None:
            self.select(algorithm)
        if params is not None:
            self.set_params(params)
        self.verbose = verbose

    # -- messages -----------------------------------------------------------------------
    def message(self, message):
        """Receives CRFsuite's training log, one message at a time; prints it when
        ``verbose``. Override it to capture the log."""
        if self.verbose:
            print(message, end="")

    # -- data ---------------------------------------------------------------------------
    def append(self, xseq, yseq, group=0):
        """Add a sequence: ``xseq`` its items (see :class:`ItemSequence`), ``yseq`` its
        labels (strings), ``group`` its group number (``train(holdout=g)`` evaluates on
        group ``g`` instead of training on it)."""
        if isinstance(group, bool) or not isinstance(group, Integral):
            raise TypeError(f"group must be an integer, got {group!r}")
        items = xseq if isinstance(xseq, ItemSequence) else ItemSequence(xseq)
        if isinstance(yseq, (str, bytes)):
            raise TypeError("yseq must be a sequence of label strings, not a string")
        labels = list(yseq)
        if set(map(type, labels)) - _STR:   # (the usual case, all str, checked at C speed)
            labels = [y.decode("utf-8") if isinstance(y, bytes) else y for y in labels]
            for y in labels:
                if not isinstance(y, str):
                    raise TypeError(f"a label must be a string, got {type(y).__name__} {y!r}")
        if len(items) != len(labels):
            raise ValueError(f"The numbers of items and labels differ: |x| = {len(items)}, |y| = {len(labels)}")
        self._data.append((items, labels, int(group)))

    def clear(self):
        """Remove every appended sequence."""
        self._data = []

    # -- the trainer and its parameters -------------------------------------------------
    def select(self, algorithm, type="crf1d"):
        """Choose the trainer: 'lbfgs', 'l2sgd', 'ap' ('averaged-perceptron'), 'pa'
        ('passive-aggressive') or 'arow'; ``type`` is the model, 'crf1d'. The
        parameters go back to the trainer's defaults."""
        name = algorithm.lower() if isinstance(algorithm, str) else algorithm
        name = ALIASES.get(name, name)
        if name not in ALGORITHM_PARAMETERS or type != "crf1d":
            raise ValueError(f"Bad arguments: algorithm={name!r}, type={type!r}")
        self._select(name)

    def _select(self, name):
        self._algorithm = name
        self._spec = parameters(name)
        self._values = {n: spec[1] for n, spec in self._spec.items()}

    def params(self):
        """The names of the selected trainer's parameters."""
        return list(self._spec)

    def set(self, name, value):
        """Set a parameter (CRFsuite's name; a value of its type, or a string of it)."""
        spec = self._spec.get(name)
        if spec is None:
            shown = int(value) if isinstance(value, bool) else value
            raise ValueError(f"Parameter not found: {name} = {shown}")
        self._values[name] = _convert(name, spec[0], value)

    def get(self, name):
        """A parameter's value (an int, float, bool or string, by its type)."""
        if name not in self._spec:
            raise ValueError(f"Parameter not found: {name} = ")
        return self._values[name]

    def set_params(self, params):
        """Set the parameters of a dict ``{name: value}``."""
        for name, value in params.items():
            self.set(name, value)

    def get_params(self):
        """``{name: value}`` of every parameter of the selected trainer."""
        return dict(self._values)

    def help(self, name):
        """The description of a parameter."""
        if name not in self._spec:
            raise ValueError(f"Parameter not found: {name}")
        return self._spec[name][2]

    # -- training -----------------------------------------------------------------------
    def train(self, model, holdout=-1):
        """Train on the appended sequences (those of group ``holdout`` evaluated after
        every iteration instead, when it is >= 0) and write the model to the file
        ``model`` (atomically; an empty name writes none). The log goes to
        ``message``."""
        if isinstance(holdout, bool) or not isinstance(holdout, Integral):
            raise TypeError(f"holdout must be an integer, got {holdout!r}")
        if not isinstance(model, (str, bytes)) and not hasattr(model, "__fspath__"):
            raise TypeError(f"model must be a file name, got {type(model).__name__}")
        self._before_train()
        _Training(self, model, int(holdout)).run()

    def _before_train(self):
        pass

    def _crf(self):
        """The :class:`spargel.CRF` of the selected trainer and parameters."""
        from .estimator import CRF
        kwargs = {}
        for name, value in self._values.items():
            key = CRF_PARAMETER.get(name, name)
            if name == "feature.minfreq":
                value = value if value > 0 else None
            elif name.startswith("feature.possible"):
                value = True if value else None
            elif name == "calibration.samples":
                value = max(1, int(round(value)))
            kwargs[key] = value
        return CRF(algorithm=CRF_ALGORITHM[self._algorithm], random_state=0, **kwargs)


class Trainer(BaseTrainer):
    """python-crfsuite's ``Trainer``: the log is read by ``logparser`` (a
    :class:`~spargel.chain.crfsuite_log.TrainLogParser`, new for every ``train``) and
    handed, event by event, to ``on_start(log)``, ``on_featgen_progress(log, percent)``,
    ``on_featgen_end(log)``, ``on_prepared(log)``, ``on_prepare_error(log)``,
    ``on_iteration(log, info)`` (``info``: the iteration's numbers, also
    ``logparser.last_iteration``), ``on_optimization_end(log)`` and ``on_end(log)`` when
    ``verbose``; each prints the log by default."""

    logparser = None

    def _before_train(self):
        self.logparser = log.TrainLogParser()

    def message(self, message):
        parser = self.logparser
        if parser is None:
            parser = self.logparser = log.TrainLogParser()
        event = parser.feed(message)
        if not self.verbose or event is None:
            return
        text = parser.last_log
        if event == "featgen_progress":
            self.on_featgen_progress(text, parser.featgen_percent)
        elif event == "iteration":
            self.on_iteration(text, parser.last_iteration)
        else:
            getattr(self, "on_" + event)(text)

    def on_start(self, log):
        print(log, end="")

    def on_featgen_progress(self, log, percent):
        print(log, end="")

    def on_featgen_end(self, log):
        print(log, end="")

    def on_prepared(self, log):
        print(log, end="")

    def on_prepare_error(self, log):
        print(log, end="")

    def on_iteration(self, log, info):
        print(log, end="")

    def on_optimization_end(self, log):
        print(log, end="")

    def on_end(self, log):
        print(log, end="")


# --------------------------------------------------------------------------- one training
class _Training:
    """One ``Trainer.train``: the fit, and CRFsuite's log of it sent as it happens."""

    with_weights = True                 # FitMonitor calls it with the weights and the
    with_training = True                # training layout and featurizer (chain/monitor.py)

    def __init__(self, trainer, model, holdout):
        self.trainer, self.model, self.holdout = trainer, model, holdout
        self.alg = trainer._algorithm
        self.values = dict(trainer._values)
        # (an empty sequence contributes nothing, in CRFsuite too)
        self.train_set = [(x, y) for x, y, g in trainer._data if g != holdout and y]
        self.holdout_set = [(x, y) for x, y, g in trainer._data if g == holdout and y] if holdout >= 0 else []
        self.t0 = time.perf_counter()
        self.started = False
        self.prev = (0, 0.0)            # (n_evals, elapsed) of the last iteration
        self.crf = None
        self.ho_data = None
        # the messages of the feature generation sent before the features are known
        self._sent = 3 if holdout >= 0 else 1

    def say(self, lines):
        for line in lines:
            self.trainer.message(line)

    def run(self):
        v = self.values
        # "Feature generation" (after the holdout group) at once; the rest of the feature
        # generation's lines when the features are known (the fit's first iteration)
        self.say(log.featgen_lines(v["feature.minfreq"], v["feature.possible_states"],
                                   v["feature.possible_transitions"], 0, 0.0, self.holdout)[:self._sent])
        labels = {y for _, ys in self.train_set for y in ys}
        if len(labels) < 2:
            return self._degenerate(sorted(labels))
        crf = self.crf = self.trainer._crf()
        X = [x for x, _ in self.train_set]
        y = [ys for _, ys in self.train_set]
        t_fit = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                crf.fit(X, y, callback=self)
        except MemoryError as exc:
            raise CRFSuiteError(CRFSuiteError.OUTOFMEMORY, str(exc)) from exc
        except FloatingPointError as exc:
            raise CRFSuiteError(CRFSuiteError.OVERFLOW, str(exc)) from exc
        if not self.started:                    # no iteration: the head now
            self._start(len(crf.weights_), len(crf.attributes_), time.perf_counter() - t_fit)
        self.say(self._end_lines(crf.stop_reason_, crf.objective_))
        self._store(crf.n_active_features_, self.n_features, len(crf.attributes_), self.n_attrs, crf.classes_,
                    lambda path: crf.save(path, format="crfsuite"))

    # -- the parts of the log ---------------------------------------------------------
    def _start(self, n_features, n_attrs, seconds):
        self.started = True
        self.n_features, self.n_attrs = n_features, n_attrs
        v = self.values
        lines = log.featgen_lines(v["feature.minfreq"], v["feature.possible_states"],
                                  v["feature.possible_transitions"], n_features, seconds, self.holdout)
        self.say(lines[self._sent:])
        self.say(self._algorithm_lines())

    def _algorithm_lines(self):
        v = self.values
        if self.alg == "lbfgs":
            return ["L-BFGS optimization\n", f"c1: {v['c1']:f}\n", f"c2: {v['c2']:f}\n",
                    f"num_memories: {v['num_memories']}\n", f"max_iterations: {v['max_iterations']}\n",
                    f"epsilon: {v['epsilon']:f}\n", f"stop: {v['period']}\n", f"delta: {v['delta']:f}\n",
                    f"linesearch: {v['linesearch']}\n", f"linesearch.max_iterations: {v['max_linesearch']}\n", "\n"]
        if self.alg == "l2sgd":
            return ["Stochastic Gradient Descent (SGD)\n", f"c2: {v['c2']:f}\n",
                    f"max_iterations: {v['max_iterations']}\n", f"period: {v['period']}\n",
                    f"delta: {v['delta']:f}\n", "\n", "Calibrating the learning rate (eta)\n",
                    f"calibration.eta: {v['calibration.eta']:f}\n", f"calibration.rate: {v['calibration.rate']:f}\n",
                    f"calibration.samples: {int(v['calibration.samples'])}\n",
                    f"calibration.candidates: {v['calibration.candidates']}\n",
                    f"calibration.max_trials: {v['calibration.max_trials']}\n", "\n"]
        if self.alg == "averaged-perceptron":
            head = ["Averaged perceptron\n"]
        elif self.alg == "passive-aggressive":
            head = ["Passive Aggressive\n", f"type: {v['type']}\n", f"c: {v['c']:f}\n",
                    f"error_sensitive: {int(v['error_sensitive'])}\n", f"averaging: {int(v['averaging'])}\n"]
        else:
            head = ["Adaptive Regularization of Weights (AROW)\n", f"variance: {v['variance']:f}\n",
                    f"gamma: {v['gamma']:f}\n"]
        return head + [f"max_iterations: {v['max_iterations']}\n", f"epsilon: {v['epsilon']:f}\n", "\n"]

    def __call__(self, row, w, training):
        """The fit's monitor: one iteration's block of the log (``training``: the fit's
        :class:`~spargel.chain.monitor.Training`)."""
        if not self.started:
            self._start(len(w), len(training.featurizer.uni), time.perf_counter() - self.t0 - row["elapsed"])
        k = row["iteration"]
        n_evals, elapsed = row.get("n_evals", k), row["elapsed"]
        seconds = elapsed - self.prev[1]
        norm = float(np.sqrt(np.dot(w, w)))
        if self.alg == "lbfgs":
            lines = [f"***** Iteration #{k} *****\n", f"Loss: {row['objective']:f}\n", f"Feature norm: {norm:f}\n",
                     f"Error norm: {row.get('pg_norm', 0.0):f}\n", f"Active features: {row['active']}\n",
                     f"Line search trials: {n_evals - self.prev[0]}\n", f"Line search step: {row.get('step', 1.0):f}\n",
                     f"Seconds required for this iteration: {seconds:.3f}\n"]
        elif self.alg == "l2sgd":
            lines = [f"***** Epoch #{k} *****\n", f"Loss: {row['objective']:f}\n", f"Feature L2-norm: {norm:f}\n",
                     f"Learning rate (eta): {row.get('eta', 0.0):f}\n",
                     f"Total number of feature updates: {k * len(self.train_set)}\n",
                     f"Seconds required for this iteration: {seconds:.3f}\n"]
        else:
            lines = [f"***** Iteration #{k} *****\n", f"Loss: {row['loss']:f}\n", f"Feature norm: {norm:f}\n",
                     f"Seconds required for this iteration: {seconds:.3f}\n"]
        if self.holdout_set:
            lines += self._holdout_lines(w, training)
        self.prev = (n_evals, elapsed)
        self.say(lines + ["\n"])
        return False

    def _holdout_lines(self, w, training):
        from .crf import decode
        if self.ho_data is None:            # encoded with the training vocabularies
            self.ho_data = training.featurizer.encode([x for x, _ in self.holdout_set])
        data = self.ho_data
        ids, _ = decode(training.space, data, w)
        names = training.labels
        pred = [[names[i] for i in ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]] for s in range(data.n_sequences)]
        return log.holdout_lines(list(names), [ys for _, ys in self.holdout_set], pred)

    def _end_lines(self, stop, objective):
        total = [f"Total seconds required for training: {time.perf_counter() - self.t0:.3f}\n", "\n"]
        if self.alg == "lbfgs":
            text = {"gtol": "L-BFGS resulted in convergence\n", "tol": "L-BFGS terminated with the stopping criteria\n",
                    "max_iter": "L-BFGS terminated with the maximum number of iterations\n"}
            return [text.get(stop, "L-BFGS terminated with error code (-1001)\n")] + total
        if self.alg == "l2sgd":
            text = {"tol": "SGD terminated with the stopping criteria\n"}
            return [text.get(stop, "SGD terminated with the maximum number of iterations\n"),
                    f"Loss: {objective:f}\n"] + total
        return (["Terminated with the stopping criterion\n", "\n"] if stop == "tol" else []) + total

    def _store(self, n_active, n_features, n_attrs, n_all_attrs, labels, write):
        if self.model in ("", b""):
            return
        t = time.perf_counter()
        write(self.model)
        self.say(log.storing_lines(n_active, n_features, n_attrs, n_all_attrs, len(labels), time.perf_counter() - t))

    def _degenerate(self, labels):
        """Fewer than two labels (no sequences, or one label): nothing to learn, as in
        CRFsuite -- the log of an empty optimisation and a model with the labels and no
        weights."""
        from .crfsuite_format import CRFsuiteModel, write
        attrs = {a for x, _ in self.train_set for item in x for a in item}
        n_features = len(attrs) + (1 if labels else 0)
        self.n_features = n_features
        v = self.values
        lines = log.featgen_lines(v["feature.minfreq"], v["feature.possible_states"],
                                  v["feature.possible_transitions"], n_features, 0.0, self.holdout)
        self.say(lines[self._sent:])
        self.say(self._algorithm_lines())
        if self.alg == "lbfgs":
            first = ("L-BFGS terminated with error code (-1020)\n" if not n_features
                     else "L-BFGS resulted in convergence\n")
            self.say([first, f"Total seconds required for training: {time.perf_counter() - self.t0:.3f}\n", "\n"])
        else:
            self.say(self._end_lines("max_iter", 0.0))
        empty = CRFsuiteModel(list(labels), [], np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0),
                              np.zeros(0, np.int32), np.zeros(0))
        self._store(0, n_features, 0, len(attrs), labels, lambda path: write(path, empty))
