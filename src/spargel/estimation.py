"""What the CRF and the flat log-linear classifier share: vocabularies, fitting a
model x penalty x solver, compaction, warm starts and model files."""

import numpy as np

from .core import model_file as io
from .data.dataset import build_dataset
from .data.vocab import Vocabulary, by_frequency
from .errors import ConvergenceWarning, ParameterError
from .data.feature_space import FEATURE_SPACES, FeatureSpace
from .core.penalties import ElasticNet
from .core.interrupts import note_interrupt
from .core.user_warnings import warn as user_warn
from .core.params import ParamsMixin, check_number


def run_solver(est, model, penalty, w0=None, monitor=None):
    """Minimise ``model + penalty`` with the estimator's solver and stopping settings;
    records ``history_``, ``n_iter_``, ``stop_reason_`` and ``objective_`` on ``est`` and
    warns (:class:`~spargel.errors.ConvergenceWarning`) when the solver stopped on its
    iteration limit. Returns the solver's result."""
    from .core.first_use import announce
    from .core.solver_table import solver as solver_record
    from .solvers import get_solver

    solver = est._effective("solver")
    minimize = get_solver(solver)
    record = solver_record(solver)
    entry = getattr(model, "entry_kernels", None)
    if entry is not None:
        announce(entry(record.needs), quiet=not est.verbose)
    options = dict(est._effective("solver_options") or {})
    if record.stochastic and "random_state" not in options:
        options["random_state"] = est.random_state
    max_it = est._effective("max_iter")
    max_iter = record.max_iter if max_it is None else int(max_it)
    tol, gtol = est._effective("tol"), est._effective("gtol")
    result = minimize(model, penalty, w0, max_iter=max_iter, tol=tol, gtol=gtol, window=est._effective("window"),
                      monitor=monitor, **options)
    est.history_ = result.history
    est.n_iter_ = result.n_iter
    est.stop_reason_ = result.stop_reason
    note_interrupt(est, result.stop_reason)
    est.objective_ = result.objective
    if result.stop_reason == "max_iter" and max_iter > 0 and record.warn_at_max_iter:
        user_warn(f"{type(est).__name__}: solver {solver!r} stopped after max_iter={max_iter} iterations "
                  f"before meeting tol={tol:g} / gtol={gtol:g}; increase max_iter or loosen tol",
                  ConvergenceWarning)
    elif result.stop_reason == "linesearch" and result.n_iter < EARLY_LINESEARCH:
        user_warn(f"{type(est).__name__}: solver {solver!r} found no decrease of the objective after "
                  f"{result.n_iter} iteration(s): the model is probably useless. The problem is badly scaled: "
                  f"check the size of the attribute values (scale them to about [-1, 1])",
                  ConvergenceWarning)
    return result


# a failed line search this early means a badly scaled problem, not convergence
EARLY_LINESEARCH = 5
# attribute values beyond this make the objective badly conditioned for every solver
LARGE_VALUE = 1e6
#: the largest weight magnitude a model file may hold: sums of such weights over a
#: token's attributes and a sequence stay far from overflow, while weights near 1e308
#: overflow the scores and give all-zero or NaN marginals
MAX_ABS_WEIGHT = 1e100


def check_weight_range(weights, path, what="a weight"):
    """Refuse a model file whose weights are not finite or exceed :data:`MAX_ABS_WEIGHT`
    in magnitude (a ``ModelFileError`` naming ``path``): inference on such weights
    overflows and its results mean nothing."""
    w = np.asarray(weights)
    bad = np.flatnonzero(~(np.abs(w) <= MAX_ABS_WEIGHT))
    if bad.size:
        raise io.ModelFileError(f"{path}: invalid model ({what}, {w[bad[0]]:.6g}, is beyond "
                                f"+-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")


def warn_large_values(est, values):
    """Warn when attribute values are so large that the solvers will struggle."""
    from .data.dataset import largest_value

    big = largest_value(values)
    if big > LARGE_VALUE:
        user_warn(f"{type(est).__name__}: attribute values as large as {big:.3g}: the objective is badly "
                  f"conditioned (weights of such attributes must be tiny, the others not); scale the values to "
                  f"about [-1, 1]", UserWarning)


def check_common_params(est):
    """The parameter checks every penalised estimator shares (clear errors, before any
    work)."""
    from .core.solver_table import solver as solver_record
    from .solvers import get_solver
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
    from .core.threads import resolve_n_jobs
    resolve_n_jobs(est.n_jobs)


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
        from .core.factory import make_model
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
    def _builder(self):
        """The :class:`ModelBuilder` of this estimator's settings."""
        return ModelBuilder(self._model_kind(), self._space_class(), self.feature_space,
                            self._has_transitions(), n_jobs=self.n_jobs)

    def _feature_space(self, data):
        """The parameter layout for the training ``data`` built by ``_dataset(grow=True)``."""
        return self._builder().space(data, len(self._label_vocab), len(self._uni_vocab), len(self._big_vocab))

    def _fit_data(self, data, monitor=None):
        warn_large_values(self, data.uni_vals)
        warn_large_values(self, data.big_vals)
        builder = self._builder()
        space = builder.space(data, len(self._label_vocab), len(self._uni_vocab), len(self._big_vocab))
        w0 = self._warm_start_weights(space) if getattr(self, "warm_start", False) else None
        model = builder.model(space, data, sample_weight=getattr(self, "_sample_weight", None))
        self._training_space = space
        try:
            penalty = ElasticNet(self._effective("l1"), self._effective("l2"), model.layout.penalty_scale)
            result = run_solver(self, model, penalty, w0, monitor)
        finally:
            del self._training_space
        self._set_fitted(space, result.w)
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

    def _warm_start_weights(self, space):
        """Weights of the previous fit mapped by name onto the new layout (0 elsewhere)."""
        if not hasattr(self, "_prev") or self._prev.get("space_class") is not type(space):
            return None
        old = self._prev
        w = np.zeros(space.n_params)
        lab = self._label_vocab
        L = space.n_labels
        old_lab = old["labels"]
        lab_map = np.array([lab.id(name) for name in old_lab], dtype=np.int64)
        for kind, vocab, ptr, ids, base in (("uni", self._uni_vocab, space.u_ptr, space.u_lab, 0),
                                            ("big", self._big_vocab, space.b_ptr, space.b_pair, space.b_base)):
            table = old[kind]
            for a, name in enumerate(vocab):
                entries = table.get(name)
                if not entries:
                    continue
                lo, hi = ptr[a], ptr[a + 1]
                where = {int(v): k for k, v in enumerate(ids[lo:hi])}
                for code, value in entries:
                    new_code = self._map_code(kind, code, lab_map, L, len(old_lab))
                    k = where.get(new_code)
                    if k is not None:
                        w[base + lo + k] = value
        for code, value in old["trans"]:
            new_code = self._map_code("trans", code, lab_map, L, len(old_lab))
            pos = np.flatnonzero(space.t_pair == new_code)
            if len(pos):
                w[space.t_base + pos[0]] = value
        return w

    def _remember_for_warm_start(self):
        if not hasattr(self, "weights_"):
            return
        s, w = self.space_, self.weights_
        uni = {}
        for a, name in enumerate(self._uni_vocab):
            uni[name] = [(int(s.u_lab[k]), w[k]) for k in range(s.u_ptr[a], s.u_ptr[a + 1])]
        big = {}
        for a, name in enumerate(self._big_vocab):
            big[name] = [(int(s.b_pair[k]), w[s.b_base + k]) for k in range(s.b_ptr[a], s.b_ptr[a + 1])]
        trans = [(int(p), w[s.t_base + k]) for k, p in enumerate(s.t_pair)]
        self._prev = {"labels": self._label_vocab.names, "uni": uni, "big": big, "trans": trans,
                      "space_class": type(s)}

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
