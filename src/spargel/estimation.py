"""What the CRF and the flat log-linear classifier share: vocabularies, fitting a
model x penalty x solver, compaction, warm starts and model files."""

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from .core import model_file as io
from .data.dataset import build_dataset, largest_value
from .data.vocab import Vocabulary, by_frequency
from .errors import ConvergenceWarning, ParameterError
from .data.feature_space import FEATURE_SPACES, FeatureSpace
from .core.interrupts import note_interrupt
from .core.limits import MAX_ABS_WEIGHT
from .core.user_warnings import warn as user_warn
from .core.params import ParamsMixin, check_number
from .core.factory import make_model
from .core.first_use import announce
from .core.solver_table import solver as solver_record
from .core.threads import resolve_n_jobs
from .solvers import get_solver


def run_solver(plan, model, penalty, w0=None, monitor=None):
    """Minimise ``model + penalty`` with the solver and stopping rule of ``plan`` (a
    :class:`FitPlan`) and return the solver's result; warns
    (:class:`~spargel.errors.ConvergenceWarning`) when the solver stopped on its
    iteration limit, or found no decrease at once. The estimator records the result
    (``history_``, ``n_iter_``, ``stop_reason_``, ``objective_``)."""
    record = plan.solver
    solver = record.name
    minimize = get_solver(solver)
    entry = getattr(model, "entry_kernels", None)
    if entry is not None:
        announce(entry(record.needs), quiet=not plan.verbose)
    options = dict(plan.solver_options)
    if record.stochastic and "random_state" not in options:
        options["random_state"] = plan.random_state
    max_iter, tol, gtol = plan.max_iter, plan.tol, plan.gtol
    result = minimize(model, penalty, w0, max_iter=max_iter, tol=tol, gtol=gtol, window=plan.window,
                      monitor=monitor, **options)
    if result.stop_reason == "max_iter" and max_iter > 0 and record.warn_at_max_iter:
        user_warn(f"{plan.estimator}: solver {solver!r} stopped after max_iter={max_iter} iterations "
                  f"before meeting tol={tol:g} / gtol={gtol:g}; increase max_iter or loosen tol",
                  ConvergenceWarning)
    elif result.stop_reason == "linesearch" and result.n_iter < EARLY_LINESEARCH:
        user_warn(f"{plan.estimator}: solver {solver!r} found no decrease of the objective after "
                  f"{result.n_iter} iteration(s): the model is probably useless. The problem is badly scaled: "
                  f"check the size of the attribute values (scale them to about [-1, 1])",
                  ConvergenceWarning)
    return result


# a failed line search this early means a badly scaled problem, not convergence
EARLY_LINESEARCH = 5
# attribute values beyond this make the objective badly conditioned for every solver
LARGE_VALUE = 1e6


def check_weight_range(weights, path, what="a weight"):
    """Refuse a model file whose weights are not finite or exceed :data:`MAX_ABS_WEIGHT`
    in magnitude (a ``ModelFileError`` naming ``path``): inference on such weights
    overflows and its results mean nothing."""
    w = np.asarray(weights)
    bad = np.flatnonzero(~(np.abs(w) <= MAX_ABS_WEIGHT))
    if bad.size:
        raise io.ModelFileError(f"{path}: invalid model ({what}, {w[bad[0]]:.6g}, is beyond "
                                f"+-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")


def warn_large_values(who, values):
    """Warn when attribute values are so large that the solvers will struggle (``who``:
    the estimator's name, or the estimator)."""
    big = largest_value(values)
    if big > LARGE_VALUE:
        name = who if isinstance(who, str) else type(who).__name__
        user_warn(f"{name}: attribute values as large as {big:.3g}: the objective is badly "
                  f"conditioned (weights of such attributes must be tiny, the others not); scale the values to "
                  f"about [-1, 1]", UserWarning)


def check_common_params(est):
    """The parameter checks every penalised estimator shares (clear errors, before any
    work)."""
    solver = est._effective("solver")
    get_solver(solver)                          # raises a clear error for unknown names
    check_number("l1", est._effective("l1"), allow_array=True)
    check_number("l2", est.l2, allow_array=True)
    check_number("tol", est._effective("tol"))
    check_number("gtol", est._effective("gtol"))
    check_number("window", est._effective("window"), low=1, integer=True)
    check_number("max_iter", est.max_iter, integer=True, allow_none=True)
    check_number("n_shards", getattr(est, "n_shards", None), low=1, integer=True, allow_none=True)
    refuses_l1 = solver_record(solver).refuses_l1
    if refuses_l1 and np.any(np.asarray(est._effective("l1")) > 0):
        raise ParameterError(f"solver={solver!r} {refuses_l1}")
    if solver in est._refused_solvers:
        raise ParameterError(f"{type(est).__name__} does not offer solver={solver!r}: "
                             f"{est._refused_solvers[solver]}")
    if est.solver_options is not None and not isinstance(est.solver_options, dict):
        raise ParameterError(f"solver_options must be a dict or None, got {est.solver_options!r}")
    resolve_n_jobs(est.n_jobs)


@dataclass(frozen=True)
class FitPlan:
    """Everything a fit needs to know about an estimator's settings, resolved and
    checked once: one immutable value that every fit route (in memory, streaming, the
    l1 path, the Dask fits, the command line through ``fit``) receives instead of
    reading the estimator.

    ``estimator``: its class name (for messages); ``solver``: the solver's record
    (:class:`~spargel.core.solver_table.Solver`); ``l1``, ``l2``: the penalty's
    strengths (:meth:`penalty`); ``max_iter`` (the solver's default applied), ``tol``,
    ``gtol``, ``window``: the stopping rule; ``solver_options``: the solver's own options
    (read-only); ``random_state``, ``verbose``, ``n_jobs``; ``feature_space``;
    ``warm_start`` (the parameter) and ``previous``: the :class:`WarmStart` to start from
    (the previous fit's weights by name) or None;
    ``client``, ``n_shards``: the Dask settings. The chain CRF adds ``featurizer`` (a
    :class:`~spargel.chain.featurizer.SequenceFeaturizer` over empty vocabularies: a
    prototype, see :meth:`new_featurizer`), ``builder`` (its
    :class:`ModelBuilder`), ``order``, ``constraints`` (a
    :class:`~spargel.chain.constraints.TransitionConstraints` or None) and
    ``constrain_training``; the flat classifier ``fit_intercept``.

    >>> from spargel import CRF
    >>> plan = CRF(c1=0.5, max_iterations=40).fit_plan()
    >>> plan.solver.name, plan.l1, plan.max_iter, plan.solver_options["memory"]
    ('owlqn', 0.5, 40, 6)
    >>> plan.penalty_strengths()
    (0.5, 0.0)
    """

    estimator: str
    solver: object
    l1: object
    l2: object
    max_iter: int
    tol: float
    gtol: float
    window: int
    solver_options: object = field(default_factory=lambda: MappingProxyType({}))
    random_state: object = None
    verbose: int = 0
    n_jobs: object = None
    feature_space: str = "observed"
    warm_start: bool = False
    previous: object = None
    client: object = None
    n_shards: object = None
    featurizer: object = None
    builder: object = None
    order: int = 1
    constraints: object = None
    constrain_training: bool = False
    fit_intercept: bool = True

    def penalty_strengths(self):
        """``(l1, l2)``."""
        return self.l1, self.l2

    def penalty(self, layout):
        """The elastic-net penalty of this plan over a model's ``layout`` (its per-weight
        penalty scale: an intercept is not penalised)."""
        from .core.penalties import ElasticNet      # (numba: not imported to label)
        return ElasticNet(self.l1, self.l2, layout.penalty_scale)

    def new_featurizer(self, uni=None, big=None, labels=None):
        """A featurizer of this plan's settings over the given vocabularies (fresh ones
        by default): each route encodes with its own."""
        return self.featurizer.with_vocabularies(uni, big, labels)

    def label_constraints(self, labels):
        """The transition constraints over the label names ``labels`` (a
        :class:`~spargel.chain.constraints.LabelConstraints`), or None."""
        if self.constraints is None:
            return None
        return self.constraints.resolve(labels)


@dataclass(frozen=True)
class WarmStart:
    """The non-zero weights of a previous fit by name, to start the next fit from
    (``warm_start=True``): ``labels`` (the label names), ``uni`` / ``big`` (attribute
    name -> [(label code, weight)]), ``trans`` ([(pair code, weight)]), ``space_class``
    (the layout class: a fit of another order starts cold) and ``map_code`` (a weight's
    label code after the labels were renumbered: ``map_code(table, code, lab_map, L,
    old_L)``)."""

    labels: tuple
    uni: object
    big: object
    trans: tuple
    space_class: type
    map_code: object

    @classmethod
    def of(cls, space, weights, uni_vocab, big_vocab, label_vocab, map_code):
        s, w = space, weights
        uni = {}
        for a, name in enumerate(uni_vocab):
            uni[name] = [(int(s.u_lab[k]), w[k]) for k in range(s.u_ptr[a], s.u_ptr[a + 1])]
        big = {}
        for a, name in enumerate(big_vocab):
            big[name] = [(int(s.b_pair[k]), w[s.b_base + k]) for k in range(s.b_ptr[a], s.b_ptr[a + 1])]
        trans = tuple((int(p), w[s.t_base + k]) for k, p in enumerate(s.t_pair))
        return cls(tuple(label_vocab.names), MappingProxyType(uni), MappingProxyType(big), trans, type(s), map_code)

    def weights(self, space, uni_vocab, big_vocab, label_vocab):
        """The remembered weights mapped by name onto ``space`` over the new
        vocabularies (0 elsewhere), or None when the layout class changed."""
        if self.space_class is not type(space):
            return None
        w = np.zeros(space.n_params)
        L = space.n_labels
        old_lab = self.labels
        lab_map = np.array([label_vocab.id(name) for name in old_lab], dtype=np.int64)
        for kind, vocab, ptr, ids, base in (("uni", uni_vocab, space.u_ptr, space.u_lab, 0),
                                            ("big", big_vocab, space.b_ptr, space.b_pair, space.b_base)):
            table = self.uni if kind == "uni" else self.big
            for a, name in enumerate(vocab):
                entries = table.get(name)
                if not entries:
                    continue
                lo, hi = ptr[a], ptr[a + 1]
                where = {int(v): k for k, v in enumerate(ids[lo:hi])}
                for code, value in entries:
                    new_code = self.map_code(kind, code, lab_map, L, len(old_lab))
                    k = where.get(new_code)
                    if k is not None:
                        w[base + lo + k] = value
        for code, value in self.trans:
            new_code = self.map_code("trans", code, lab_map, L, len(old_lab))
            pos = np.flatnonzero(space.t_pair == new_code)
            if len(pos):
                w[space.t_base + pos[0]] = value
        return w


@dataclass(frozen=True)
class FitOutcome:
    """What a fit route hands back to the estimator: the training vocabularies
    (``uni``, ``big``, ``labels``), the training layout ``space`` (uncompacted) and its
    weights ``w``, the solver's ``result`` (None for a streaming pass) and the Dask fit's
    ``timings`` (and, for a streaming pass, ``record``: ``history``, ``n_iter``,
    ``stop_reason``, ``objective``). The estimator compacts and keeps it; the route
    never touches the estimator."""

    uni: object
    big: object
    labels: object
    space: object
    w: object
    result: object = None
    timings: object = None
    record: object = None


def solve(plan, model, w0=None, monitor=None):
    """``run_solver`` of ``model`` under the plan's penalty."""
    return run_solver(plan, model, plan.penalty(model.layout), w0, monitor)


class ModelBuilder:
    """From encoded data to a model: which (attribute, label) weights exist (the feature
    space) and the model of an estimator's kind over them.

    An estimator hands one out (``_builder()``) beside its featurizer; fitting, the
    regularisation path, streaming and the Dask fit build their models through it, so
    none of them reads an estimator's settings to build a model.

    ``kind``: the :func:`~spargel.core.factory.make_model` kind; ``space_class``: the
    layout class (:class:`~spargel.data.feature_space.FeatureSpace` or a subclass);
    ``feature_space``: ``"observed"`` (the (attribute, label) pairs seen in training)
    or ``"full"`` (every pair); ``transitions``: whether the model has label-transition
    weights; ``n_jobs``: the model's threads.

    >>> from spargel.data.dataset import build_dataset
    >>> from spargel.data.vocab import Vocabulary
    >>> uni, big, labels = Vocabulary(), Vocabulary(), Vocabulary()
    >>> data = build_dataset([([["w=a", "w=b"], ["w=a"]], None)], uni, big, labels, [["X", "Y"]], grow=True)
    >>> builder = ModelBuilder("crf", FeatureSpace, "observed", True)
    >>> space = builder.space(data, len(labels), len(uni), 0)
    >>> space.n_params      # w=a with X and with Y, w=b with X, the transition X -> Y
    4
    >>> builder.model(space, data).n_params
    4
    """

    def __init__(self, kind, space_class, feature_space="observed", transitions=True, *, n_jobs=None):
        self.kind = kind
        self.space_class = space_class
        self.feature_space = feature_space
        self.transitions = transitions
        self.n_jobs = n_jobs

    def space(self, data, n_labels, n_uni, n_big):
        """The feature space of the training ``data`` (``n_labels`` labels, ``n_uni`` /
        ``n_big`` attributes in its vocabularies)."""
        if self.feature_space == "full":
            return self.space_class.full(n_labels, n_uni, n_big, self.transitions)
        return self.space_class.observed(data, n_labels, n_uni, n_big, self.transitions)

    def build(self, data, vocabularies, **options):
        """The model of the training ``data`` encoded with ``vocabularies`` (anything with
        ``labels``, ``uni`` and ``big`` vocabularies, e.g. a featurizer after encoding)."""
        space = self.space(data, len(vocabularies.labels), len(vocabularies.uni), len(vocabularies.big))
        return self.model(space, data, **options)

    def model(self, space, data, **options):
        """The model of this builder's kind over ``space`` and ``data`` (``options``: the
        model's own, e.g. ``sample_weight``)."""
        return make_model(self.kind, space, data, n_jobs=self.n_jobs, **options)


class LogLinearCore(ParamsMixin):
    """Base of the estimators; subclasses turn their X into (uni, big) feature rows."""

    _kind = None

    # -- hooks -----------------------------------------------------------------------
    def _effective(self, name):
        """The value of parameter ``name`` that training uses (subclasses map aliases)."""
        return getattr(self, name)

    def _rows(self, X):
        """Yield (uni, big) per sequence."""
        raise NotImplementedError

    def _has_transitions(self):
        return True

    def _unpenalised(self, uni_vocab):
        """Unigram attribute ids whose weights are not penalised (e.g. a bias)."""
        return ()

    def _model_kind(self):
        """The :func:`~spargel.core.factory.make_model` kind this estimator trains."""
        return "crf"

    def _space_class(self):
        """The parameter layout class (:class:`FeatureSpace` or a subclass)."""
        return FeatureSpace

    def _map_code(self, table, code, lab_map, L, old_L):
        """A weight's label code after the labels were renumbered (``lab_map[old id]``
        is the new id, -1 when gone): ``table`` is ``"uni"`` (a label), ``"big"`` or
        ``"trans"`` (a label pair)."""
        return _map_code(code, lab_map, L, old_L, table != "uni")

    # -- data --------------------------------------------------------------------------
    def _dataset(self, X, y=None, grow=False):
        if grow:
            self._uni_vocab, self._big_vocab, self._label_vocab = Vocabulary(), Vocabulary(), Vocabulary()
        data = build_dataset(self._rows(X), self._uni_vocab, self._big_vocab,
                             self._label_vocab, y, grow=grow)
        if grow:
            self._uni_vocab, data.uni_ids = by_frequency(self._uni_vocab, data.uni_ids)
            self._big_vocab, data.big_ids = by_frequency(self._big_vocab, data.big_ids)
            if len(self._label_vocab) < 2:
                raise ValueError(f"training data has {len(self._label_vocab)} distinct label(s); need at least 2")
        return data

    #: solvers this estimator refuses, with the reason (shown to the user)
    _refused_solvers = {}

    def _check_params(self):
        if self.feature_space not in FEATURE_SPACES:
            raise ParameterError(f"feature_space must be one of {FEATURE_SPACES}, got {self.feature_space!r}")
        check_common_params(self)

    # -- fitting -----------------------------------------------------------------------
    def fit_plan(self):
        """The :class:`FitPlan` of this estimator's current settings: the parameters are
        checked, CRFsuite's spellings and the solver's defaults applied. Every fit route
        receives it (``fit`` builds one per call)."""
        self._check_params()
        record = solver_record(self._effective("solver"))
        max_it = self._effective("max_iter")
        return FitPlan(
            estimator=type(self).__name__, solver=record, l1=self._effective("l1"), l2=self._effective("l2"),
            max_iter=record.max_iter if max_it is None else int(max_it), tol=self._effective("tol"),
            gtol=self._effective("gtol"), window=self._effective("window"),
            solver_options=MappingProxyType(dict(self._effective("solver_options") or {})),
            random_state=self.random_state, verbose=self.verbose, n_jobs=self.n_jobs,
            feature_space=self.feature_space, warm_start=bool(self.warm_start),
            previous=self._warm_start_value() if self.warm_start else None,
            client=getattr(self, "client", None), n_shards=getattr(self, "n_shards", None), **self._plan_extras())

    def _plan_extras(self):
        """The family's own fields of the :class:`FitPlan`."""
        return {}

    def _builder(self):
        """The :class:`ModelBuilder` of this estimator's settings."""
        return ModelBuilder(self._model_kind(), self._space_class(), self.feature_space,
                            self._has_transitions(), n_jobs=self.n_jobs)

    def _feature_space(self, data):
        """The parameter layout for the training ``data`` built by ``_dataset(grow=True)``."""
        return self._builder().space(data, len(self._label_vocab), len(self._uni_vocab), len(self._big_vocab))

    def _record(self, result):
        """Keep what the solver reports: ``history_``, ``n_iter_``, ``stop_reason_``,
        ``objective_`` (and a Ctrl-C, re-raised by ``fit``'s wrapper)."""
        self.history_ = result.history
        self.n_iter_ = result.n_iter
        self.stop_reason_ = result.stop_reason
        note_interrupt(self, result.stop_reason)
        self.objective_ = result.objective

    def _take(self, outcome):
        """Keep a route's :class:`FitOutcome`: the vocabularies, the solver's report and
        the compacted weights."""
        self._uni_vocab, self._big_vocab, self._label_vocab = outcome.uni, outcome.big, outcome.labels
        if outcome.result is not None:
            self._record(outcome.result)
        elif outcome.record is not None:        # a streaming pass
            r = outcome.record
            self.history_, self.n_iter_, self.stop_reason_, self.objective_ = (
                r["history"], r["n_iter"], r["stop_reason"], r["objective"])
        if outcome.timings is not None:
            self.timings_ = outcome.timings
        self._set_fitted(outcome.space, outcome.w)
        return self

    def _set_fitted(self, space, w):
        """Keep only the non-zero weights (and the attributes that own them)."""
        space_c, w_c, u_keep, b_keep = space.compact(w)
        self._uni_vocab = self._uni_vocab.subset(u_keep)
        self._big_vocab = self._big_vocab.subset(b_keep)
        self.space_ = space_c
        self.weights_ = w_c
        self.classes_ = self._label_vocab.names
        self.n_active_features_ = int(np.count_nonzero(w_c))

    def _warm_start_value(self):
        """The :class:`WarmStart` of the fitted model (or of the last one remembered)."""
        if not hasattr(self, "weights_"):
            return self.__dict__.get("_prev")
        return WarmStart.of(self.space_, self.weights_, self._uni_vocab, self._big_vocab, self._label_vocab,
                            self._map_code)

    def _warm_start_weights(self, space):
        """Weights of the previous fit mapped by name onto the new layout (0 elsewhere)."""
        prev = self.__dict__.get("_prev")
        if prev is None:
            return None
        return prev.weights(space, self._uni_vocab, self._big_vocab, self._label_vocab)

    def _remember_for_warm_start(self):
        if hasattr(self, "weights_"):
            self._prev = self._warm_start_value()

    # -- model files -------------------------------------------------------------------
    def _meta(self):
        return {"params": {k: v for k, v in self.get_params().items() if _jsonable(v)},
                "n_labels": int(self.space_.n_labels)}

    def save(self, path):
        """Write the fitted model to ``path`` (safe format, no pickle; zero weights dropped)."""
        self._check_fitted()
        s = self.space_
        arrays = {"coef": self.weights_, "u_ptr": s.u_ptr, "u_lab": s.u_lab, "b_ptr": s.b_ptr,
                  "b_pair": s.b_pair, "t_pair": s.t_pair}
        for name, vocab in (("uni", self._uni_vocab), ("big", self._big_vocab), ("labels", self._label_vocab)):
            arrays[f"{name}_text"], arrays[f"{name}_offsets"] = vocab.to_arrays()
        io.save_arrays(path, self._kind, self._meta(), arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`; raises ``ModelFileError`` on any problem."""
        meta, a = io.load_arrays(path, cls._kind)
        try:
            est = cls(**{k: v for k, v in meta["params"].items() if k in cls._param_names()})
            vocabs = [Vocabulary.from_arrays(a[f"{n}_text"], a[f"{n}_offsets"]) for n in ("uni", "big", "labels")]
            est._uni_vocab, est._big_vocab, est._label_vocab = vocabs
            space = est._space_class()(int(meta["n_labels"]), a["u_ptr"], a["u_lab"], a["b_ptr"], a["b_pair"],
                                       a["t_pair"])
            space.validate(len(vocabs[0]), len(vocabs[1]))
            io.require(space.n_labels == len(vocabs[2]), path, "label count does not match the label list")
            coef = a["coef"]
            io.require(coef.dtype == np.float64 and coef.shape == (space.n_params,), path, "weights have the wrong shape")
            io.require(bool(np.all(np.isfinite(coef))), path, "weights are not finite")
            check_weight_range(coef, path)
            est._restore(meta, path)
        except io.ModelFileError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            raise io.ModelFileError(f"{path}: invalid model ({exc})") from None
        est.space_, est.weights_ = space, coef
        est.classes_ = est._classes_from_names(vocabs[2].names, meta, path)
        est.n_active_features_ = int(np.count_nonzero(coef))
        return est

    def _restore(self, meta, path):
        """Subclasses rebuild what they need from the header's meta."""

    def _classes_from_names(self, names, meta, path):
        """``classes_`` from the stored label names (subclasses may restore a dtype)."""
        return names


def _map_code(code, lab_map, L, old_L, is_pair):
    if not is_pair:
        return int(lab_map[code])
    p, c = lab_map[code // old_L], lab_map[code % old_L]
    return -1 if p < 0 or c < 0 else int(p * L + c)


def _jsonable(v):
    return v is None or isinstance(v, (bool, int, float, str))
