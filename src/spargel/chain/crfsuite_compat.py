"""What makes :class:`spargel.CRF` a drop-in for sklearn-crfsuite / python-crfsuite: the
CRFsuite training parameters and how they map onto spargel's, the ``tagger_`` object,
and the conversion between a fitted CRF and a CRFsuite model file."""

import math
import threading
from array import array

import numpy as np

from ..errors import ItemFormatError, ModelFileError, ParameterError, TaggerClosedError

#: CRFsuite's trainers: (description, spargel solver or None: the ``solver`` parameter decides)
ALGORITHMS = {
    "lbfgs": ("L-BFGS / OWL-QN on the penalised likelihood", None),
    "l2sgd": ("stochastic gradient descent with an L2 penalty", "l2sgd"),
    "ap": ("averaged perceptron", "ap"),
    "pa": ("passive-aggressive", "pa"),
    "arow": ("adaptive regularisation of weight vectors (AROW)", "arow"),
}

#: the CRFsuite parameters each trainer takes (CRFsuite refuses the others)
TRAINER_PARAMS = {
    "lbfgs": {"c1", "c2", "max_iterations", "num_memories", "epsilon", "period", "delta", "linesearch",
              "max_linesearch"},
    "l2sgd": {"c2", "max_iterations", "period", "delta", "calibration_eta", "calibration_rate",
              "calibration_samples", "calibration_candidates", "calibration_max_trials"},
    "ap": {"max_iterations", "epsilon"},
    "pa": {"max_iterations", "epsilon", "pa_type", "c", "error_sensitive", "averaging"},
    "arow": {"max_iterations", "epsilon", "variance", "gamma"},
}
ALL_TRAINER_PARAMS = sorted(set().union(*TRAINER_PARAMS.values()))
LINESEARCHES = ("MoreThuente", "Backtracking", "StrongBacktracking")

#: the trainers without a penalty (their l1 and l2 default to 0)
ONLINE = ("ap", "pa", "arow")
#: CRFsuite's defaults of l2sgd where they differ from spargel's: c2 = 1, delta = 1e-6
L2SGD_C2, L2SGD_DELTA = 1.0, 1e-6
#: curvature pairs OWL-QN / L-BFGS keep for a CRF unless told (``num_memories`` or
#: ``solver_options["memory"]``): CRFsuite's ``num_memories`` default. On CoNLL-2000 it
#: takes fewer evaluations per iteration than 10 pairs and reaches CRFsuite's objective
#: sooner (docs/algorithms.md)
CRF_MEMORY = 6

# spargel's defaults of the parameters that have a CRFsuite spelling (a value equal to
# the default counts as "not given" when the CRFsuite spelling is given; tol None: the
# solver's default, solvers.default_tol)
_DEFAULTS = {"l2": 0.0, "tol": None, "gtol": 1e-5, "window": 10}


def algorithm_name(est):
    alg = "lbfgs" if est.algorithm is None else est.algorithm
    if alg not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(repr(a) for a in ALGORITHMS)}, got {alg!r}")
    return alg


def effective_solver(est):
    """The spargel solver that trains ``est``: the ``solver`` parameter for CRFsuite's
    'lbfgs' (OWL-QN by default, which is what CRFsuite's 'lbfgs' does with c1 > 0),
    the mapped solver for the others."""
    alg = algorithm_name(est)
    desc, solver = ALGORITHMS[alg]
    if solver is None:
        return est.solver
    if est.solver not in ("owlqn", solver):
        raise ValueError(f"algorithm={alg!r} and solver={est.solver!r} name two different trainers; give one")
    from ..solvers import SOLVERS
    if solver not in SOLVERS:
        raise ValueError(f"algorithm={alg!r} ({desc}) is not implemented in this version of spargel; use "
                         f"algorithm='lbfgs' (solver 'owlqn' or 'lbfgs') or 'l2sgd' (spargel's SGD)")
    return solver


def _given(est, name):
    return getattr(est, name) is not None


def _same_value(a, b):
    try:
        return bool(np.all(np.asarray(a, dtype=float) == np.asarray(b, dtype=float)))
    except (TypeError, ValueError):
        return a == b


def check_params(est):
    """Validate the CRFsuite parameters of ``est``: each belongs to the chosen trainer,
    and no setting is given twice under two spellings with different values."""
    from ..core.params import check_number
    alg = algorithm_name(est)
    effective_solver(est)
    for name in ALL_TRAINER_PARAMS:
        if _given(est, name) and name not in TRAINER_PARAMS[alg]:
            users = [a for a, ps in TRAINER_PARAMS.items() if name in ps]
            raise ParameterError(f"{name}={getattr(est, name)!r} is a parameter of CRFsuite's "
                                 f"{', '.join(repr(u) for u in users)} trainer(s), not of algorithm={alg!r}")
    for name in ("c1", "c2", "epsilon", "delta", "calibration_eta", "c", "variance", "gamma"):
        check_number(name, getattr(est, name), allow_none=True)
    for name in ("max_iterations", "num_memories", "period", "max_linesearch", "calibration_samples",
                 "calibration_candidates", "calibration_max_trials"):
        check_number(name, getattr(est, name), integer=True, allow_none=True)
    check_number("min_freq", est.min_freq, allow_none=True)
    if _given(est, "period") and est.period < 1:
        raise ParameterError(f"period must be >= 1, got {est.period!r}")
    if _given(est, "calibration_rate"):
        check_number("calibration_rate", est.calibration_rate)
        if est.calibration_rate <= 1:
            raise ParameterError(f"calibration_rate must be > 1, got {est.calibration_rate!r}")
    if _given(est, "linesearch") and est.linesearch not in LINESEARCHES:
        raise ParameterError(f"linesearch must be one of {LINESEARCHES}, got {est.linesearch!r}")
    if _given(est, "pa_type") and (isinstance(est.pa_type, bool) or est.pa_type not in (0, 1, 2)):
        raise ParameterError(f"pa_type must be 0, 1 or 2, got {est.pa_type!r}")
    if est.trainer_cls is not None:
        raise ParameterError("trainer_cls (a python-crfsuite Trainer class) has no meaning in spargel: training "
                             "does not go through python-crfsuite")
    # one setting, two spellings
    pairs = [("c1", "l1", est.c1, est.l1, est.l1 is not None),
             ("c2", "l2", None if est.c2 is None else 2.0 * est.c2, est.l2, not _same_value(est.l2, 0.0)),
             ("max_iterations", "max_iter", est.max_iterations, est.max_iter, est.max_iter is not None),
             ("epsilon", "gtol", est.epsilon, est.gtol, not _same_value(est.gtol, _DEFAULTS["gtol"])),
             ("delta", "tol", est.delta, est.tol, est.tol is not None),
             ("period", "window", est.period, est.window, not _same_value(est.window, _DEFAULTS["window"]))]
    for crfsuite, ours, theirs_value, our_value, ours_given in pairs:
        if theirs_value is not None and ours_given and not _same_value(theirs_value, our_value):
            shown = f"{crfsuite}={getattr(est, crfsuite)!r}"
            if crfsuite == "c2":
                shown += f" (l2 = 2 * c2 = {theirs_value!r})"
            raise ParameterError(f"{shown} and {ours}={our_value!r} set the same thing to different values; give one")
    opts = est.solver_options or {}
    if isinstance(opts, dict):
        for crfsuite, ours in (("num_memories", "memory"), ("max_linesearch", "max_linesearch"),
                               ("calibration_samples", "calibration_samples")):
            if _given(est, crfsuite) and ours in opts and opts[ours] != getattr(est, crfsuite):
                raise ParameterError(f"{crfsuite}={getattr(est, crfsuite)!r} and solver_options[{ours!r}]="
                                     f"{opts[ours]!r} set the same thing to different values; give one")
    if est.c1 is not None and est.c1 > 0 and effective_solver(est) == "lbfgs":
        raise ParameterError("c1 > 0 needs solver='owlqn' (CRFsuite's 'lbfgs' with c1 > 0 is OWL-QN)")


def effective(est, name):
    """The value of spargel parameter ``name`` that training uses, with the CRFsuite
    spellings applied."""
    alg = algorithm_name(est)
    if name == "solver":
        return effective_solver(est)
    if name == "l1":
        if est.c1 is not None:
            return est.c1
        if est.l1 is not None:
            return est.l1
        if alg == "l2sgd" or alg in ONLINE or effective_solver(est) == "mira":
            return 0.0          # l2sgd is CRFsuite's L2-only SGD; the online trainers take no penalty
        return 1.0
    if name == "l2":
        if est.c2 is not None:
            return 2.0 * est.c2
        if alg == "l2sgd" and _same_value(est.l2, _DEFAULTS["l2"]):
            return 2.0 * L2SGD_C2
        return est.l2
    if name == "max_iter":
        return est.max_iterations if est.max_iterations is not None else est.max_iter
    if name == "gtol":
        return est.epsilon if est.epsilon is not None else est.gtol
    if name == "tol":
        if est.delta is not None:
            return est.delta
        if est.tol is not None:
            return est.tol
        if alg == "l2sgd":
            return L2SGD_DELTA
        from ..solvers import default_tol
        return default_tol(effective_solver(est))
    if name == "window":
        return est.period if est.period is not None else est.window
    if name == "solver_options":
        opts = dict(est.solver_options or {})
        if est.num_memories is not None:
            opts["memory"] = int(est.num_memories)
        if effective_solver(est) in ("owlqn", "lbfgs"):
            opts.setdefault("memory", CRF_MEMORY)
        if est.max_linesearch is not None:
            opts["max_linesearch"] = int(est.max_linesearch)
        if alg == "l2sgd":
            for n in ("calibration_eta", "calibration_rate", "calibration_samples", "calibration_candidates",
                      "calibration_max_trials"):
                if getattr(est, n) is not None:
                    opts[n] = getattr(est, n)
        if alg in ONLINE:
            if est.epsilon is not None:
                opts["epsilon"] = float(est.epsilon)
            names = {"pa": ("pa_type", "c", "error_sensitive", "averaging"), "arow": ("variance", "gamma")}
            for n in names.get(alg, ()):
                if getattr(est, n) is not None:
                    opts[n] = getattr(est, n)
        return opts or None
    return getattr(est, name)


# --------------------------------------------------------------------------- min_freq
def apply_min_freq(space, data, min_freq):
    """Drop the (attribute, label) weights and the transitions seen less than
    ``min_freq`` times in the labelled ``data`` (CRFsuite's ``feature.minfreq``: a state
    feature's frequency sums the attribute's values at the tokens with that label, a
    transition's counts its occurrences; features never seen, added by
    ``all_possible_states`` / ``_transitions``, have frequency 0)."""
    from ..core.ranges import owners
    from ..data.dataset import is_unit
    L = space.n_labels
    lab = np.asarray(data.labels, dtype=np.int64)
    y = lab[owners(data.uni_ptr)]
    m = y >= 0
    key = np.asarray(data.uni_ids, dtype=np.int64)[m] * L + y[m]
    ukey, inv = np.unique(key, return_inverse=True)
    weights = None if is_unit(data.uni_vals) else np.asarray(data.uni_vals, dtype=np.float64)[m]
    freq = np.bincount(inv, weights=weights, minlength=len(ukey))
    ukey = np.append(ukey, np.iinfo(np.int64).max)          # a sentinel: searchsorted stays in range
    freq = np.append(freq, 0.0)
    space_key = owners(space.u_ptr).astype(np.int64) * L + space.u_lab
    pos = np.searchsorted(ukey, space_key)
    keep_u = np.where(ukey[pos] == space_key, freq[pos], 0.0) >= min_freq
    csum = np.zeros(len(keep_u) + 1, dtype=np.int64)
    np.cumsum(keep_u, out=csum[1:])
    # transitions: consecutive labelled tokens of one sequence
    inner = np.ones(max(len(lab) - 1, 0), dtype=bool)
    starts = np.asarray(data.seq_ptr, dtype=np.int64)[1:-1]
    inner[starts - 1] = False
    a, b = lab[:-1][inner], lab[1:][inner]
    ok = (a >= 0) & (b >= 0)
    tcount = np.bincount(a[ok] * L + b[ok], minlength=L * L)
    keep_t = tcount[space.t_pair] >= min_freq
    return type(space)(space.n_labels, csum[space.u_ptr], space.u_lab[keep_u].copy(), space.b_ptr,
                       space.b_pair, space.t_pair[keep_t].copy())


# --------------------------------------------------------------------------- model files
def fitted_of(model):
    """The :class:`~spargel.chain.fitted.FittedChain` of ``model`` (a fitted ``CRF``, or
    the value itself)."""
    from .fitted import FittedChain
    return model if isinstance(model, FittedChain) else model.fitted_model_


def representable(model):
    """None when a CRFsuite file can hold the fitted ``model`` (a ``CRF`` or a
    :class:`~spargel.chain.fitted.FittedChain`), else the reason why not."""
    m = fitted_of(model)
    s = m.space
    if getattr(s, "order", 1) != 1:
        return "it is a second-order CRF; CRFsuite files hold first-order CRFs only"
    if m.template is not None:
        return ("its features come from a template, which a CRFsuite file cannot hold (a CRFsuite tagger is "
                "given the attributes themselves)")
    if len(s.b_pair):
        return ("it has observation-conditioned bigram (label pair) weights, which CRFsuite's first-order "
                "model does not have")
    if m.constraints is not None:
        return ("it decodes under transition constraints, which a CRFsuite file cannot hold (set "
                "constraints=None to write the weights alone)")
    return None


def to_crfsuite_model(model):
    """The :class:`~spargel.chain.crfsuite_format.CRFsuiteModel` of the fitted ``model``
    (a ``CRF`` or a :class:`~spargel.chain.fitted.FittedChain`)."""
    from .crfsuite_format import CRFsuiteModel
    m = fitted_of(model)
    reason = representable(m)
    if reason is not None:
        raise ValueError(f"cannot write this model in CRFsuite's format: {reason}")
    s, w = m.space, m.weights
    return CRFsuiteModel([str(c) for c in m.classes], list(m.uni), s.u_ptr, s.u_lab, w[:s.b_base], s.t_pair,
                         w[s.t_base:])


def from_crfsuite_file(cls, path):
    """A fitted ``cls`` holding the CRFsuite model in ``path``."""
    from . import crfsuite_format
    return from_crfsuite_model(cls, crfsuite_format.read(path), path)


def from_crfsuite_model(cls, m, name):
    """A fitted ``cls`` holding the :class:`~spargel.chain.crfsuite_format.CRFsuiteModel`
    ``m`` (read from ``name``, for errors)."""
    return cls.from_fitted_model(fitted_crfsuite_model(m, name))


def fitted_crfsuite_model(m, name):
    """The :class:`~spargel.chain.fitted.FittedChain` of the
    :class:`~spargel.chain.crfsuite_format.CRFsuiteModel` ``m`` (read from ``name``, for
    errors)."""
    from ..data.vocab import Vocabulary
    from ..data.feature_space import FeatureSpace
    from .fitted import FittedChain
    try:
        uni, big, labels = Vocabulary(m.attributes), Vocabulary(), Vocabulary(m.labels)
        space = FeatureSpace(len(m.labels), m.u_ptr, m.u_lab, np.zeros(1, np.int64),
                             np.zeros(0, np.int32), m.t_pair)
        space.validate(len(m.attributes), 0)
    except ValueError as exc:
        raise ModelFileError(f"{name}: invalid CRFsuite model ({exc})") from None
    return FittedChain(space, np.concatenate([m.u_w, m.t_w]), uni, big, labels, value_sep=":", file_size=m.size)


# --------------------------------------------------------------------------- the tagger
class ParsedDump:
    """What python-crfsuite's ``Tagger.info()`` returns: ``header`` (the file header's
    fields, as strings), ``labels`` and ``attributes`` (name -> id, as strings),
    ``transitions`` {(from, to): weight} and ``state_features`` {(attribute, label):
    weight} (the weights exact, not rounded to the listing's six decimals)."""

    def __init__(self, header=None, labels=None, attributes=None, transitions=None, state_features=None):
        self.header = {} if header is None else header
        self.labels = {} if labels is None else labels
        self.attributes = {} if attributes is None else attributes
        self.transitions = {} if transitions is None else transitions
        self.state_features = {} if state_features is None else state_features


#: labels, tokens and attributes per tagged sequence a decoder's buffers start with
_START_LENGTH = 64


class _Decoder:
    """The per-call path of a :class:`Tagger` for a first-order CRF without bigram
    attributes or a template (what a CRFsuite file holds), built once per model: the
    attribute vocabulary (its ``{key: {value: id}}`` index included, so a feature dict
    is looked up without building strings), the unigram weights in the layout's lists,
    the dense transition structure and matrix, and per thread the buffers of the batch
    kernels, grown to the longest sequence seen. A call encodes one sequence
    (:func:`~spargel.data.featuredicts.encode_known`) and makes one compiled call
    (:mod:`spargel.chain.tagger_kernels`)."""

    def __init__(self, fitted):
        from . import inference as C
        s, w = fitted.space, np.ascontiguousarray(fitted.weights, dtype=np.float64)
        L = s.n_labels
        self.vocab, self.sep, self.classes = fitted.uni, fitted.value_sep, list(fitted.classes)
        self.vocab.split_index(self.sep)
        self.u_ptr = np.ascontiguousarray(s.u_ptr, dtype=np.int64)
        self.u_lab = np.ascontiguousarray(s.u_lab, dtype=np.int32)
        self.u_w = np.ascontiguousarray(w[:s.b_base])
        t_pair = np.asarray(s.t_pair, dtype=np.int64)
        self.trans = C.make_transitions(L, t_pair // L, t_pair % L, w[s.t_base:], kind=C.DENSE)
        self.T = np.zeros((L, L))               # transition weights, for a path's score
        self.T[t_pair // L, t_pair % L] = w[s.t_base:]
        self.T_rows = self.T.tolist()
        self.L, self.Lp = L, C.padded(L)
        self._local = threading.local()         # the buffers, one set per thread

    @staticmethod
    def usable(fitted):
        s = fitted.space
        return getattr(s, "order", 1) == 1 and len(s.b_pair) == 0 and fitted.template is None

    def _buffers(self, n):
        """This thread's buffers ``(work, log work, labels, marginals, tcount)`` for
        sequences of at least ``n`` tokens (a ``CRF`` and its ``tagger_`` may be used from
        several threads at once)."""
        from . import crf_kernels as K
        b = getattr(self._local, "b", None)
        if b is None or len(b[2]) < n:
            n = max(n, _START_LENGTH, 2 * (0 if b is None else len(b[2])))
            L, Lp = self.L, self.Lp
            b = self._local.b = (K.work_buffers(L, Lp, n, 0, False), K.log_buffers(L, Lp, n), np.zeros(n, np.int32),
                                 np.zeros((n, L)), np.zeros(len(self.trans.fv)))
        return b

    def encode(self, xseq):
        """(token offsets, attribute ids (unknown ones negative), values or an empty
        array: all 1) of one sequence, as arrays."""
        from ..data.featuredicts import encode_known
        ptr, ids, vals = encode_known(xseq, self.vocab, self.sep)
        return (np.frombuffer(array("q", ptr), np.int64), np.frombuffer(array("i", ids), np.int32),
                _EMPTY if vals is None else np.frombuffer(array("d", vals), np.float64))

    def tag(self, enc):
        """The best labels of an encoded sequence (:meth:`encode`)."""
        from .tagger_kernels import viterbi_attributes
        tok_ptr, ids, vals = enc
        n = len(tok_ptr) - 1
        buf, lbuf, out, _, _ = self._buffers(n)
        viterbi_attributes(tok_ptr, ids, vals, self.u_ptr, self.u_lab, self.u_w, self.trans, buf.corr, buf.E,
                           buf.alpha, lbuf.back, lbuf.fv_t, out)
        classes = self.classes
        return [classes[i] for i in out[:n].tolist()]

    def posterior(self, enc):
        """``(marginals n x L, log Z, state scores n x L)`` of an encoded sequence, or
        None when the scaled recursion cannot be trusted (the batch path then goes to
        log space)."""
        from .tagger_kernels import marginals_attributes
        tok_ptr, ids, vals = enc
        n = len(tok_ptr) - 1
        buf, _, _, marg, tcount = self._buffers(n)
        z = marginals_attributes(tok_ptr, ids, vals, self.u_ptr, self.u_lab, self.u_w, self.trans, buf, tcount, marg)
        if np.isnan(z):
            return None
        return marg[:n].copy(), float(z), buf.E[:n, :self.L].copy()

    def path_score(self, E, y):
        """The score of the label ids ``y`` (a list) given the state scores ``E``."""
        T = self.T_rows
        return sum(row[i] for row, i in zip(E.tolist(), y)) + sum(T[a][b] for a, b in zip(y, y[1:]))


_EMPTY = np.zeros(0)


def _constraints_of(fitted):
    """The ``constraints`` argument of the prediction functions for ``fitted``."""
    return {"constraints": fitted.label_constraints()}


class Tagger:
    """python-crfsuite's ``Tagger`` over a spargel CRF: ``open(path)`` /
    ``open_inmemory(bytes)`` (each returns the tagger, a context manager that closes it:
    ``with tagger.open(path): ...``), ``tag(xseq)``, ``set(xseq)``,
    ``probability(yseq)``, ``marginal(y, t)``, ``labels()``, ``info()``, ``dump(path)``,
    ``close()``. ``crf.tagger_`` is one bound to a fitted CRF; ``spargel.pycrfsuite.Tagger``
    is this class."""

    def __init__(self, crf=None):
        self._set_model(crf)

    def _set_model(self, crf):
        self._crf = crf
        self._xseq = None
        self._enc = None
        self._marg = None
        self._decoder = None
        self._fitted = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- opening --------------------------------------------------------------------
    def open(self, name):
        """Load a model file (CRFsuite's format or spargel's) with the class of the model
        this tagger holds, or else with the public ``spargel.CRF`` (as a user would: this
        module is below the estimator and does not import it). A missing file raises
        ``FileNotFoundError``, an unusable one ``ModelFileError`` (a ``ValueError``)."""
        import errno
        import os
        cls = type(self._crf) if self._crf is not None else _public_crf()
        if not os.path.exists(name):
            raise FileNotFoundError(errno.ENOENT, "no such model file", os.fsdecode(name))
        self._set_model(cls.load(name))
        return self

    def open_inmemory(self, value):
        """Load a CRFsuite model from its bytes (what ``Trainer.train`` wrote)."""
        from .crfsuite_format import read_bytes
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"open_inmemory takes the bytes of a CRFsuite model, not {type(value).__name__}")
        cls = type(self._crf) if self._crf is not None else _public_crf()
        self._set_model(from_crfsuite_model(cls, read_bytes(value, "<bytes>"), "<bytes>"))
        return self

    def close(self):
        """Forget the model (``labels``, ``tag``, ... then raise until the next ``open``)."""
        self._set_model(None)

    def _model(self):
        if self._crf is None:
            raise ValueError("the tagger is not opened: call open() first")
        return self._crf

    def _fitted_model(self):
        """The model's :class:`~spargel.chain.fitted.FittedChain` (taken once per model)."""
        fitted = self._fitted
        if fitted is None:
            fitted = self._fitted = self._model().fitted_model_
        return fitted

    # -- tagging --------------------------------------------------------------------
    def labels(self):
        return [str(c) for c in self._model().classes_]

    def set(self, xseq):
        """Set the sequence that ``tag()``, ``probability`` and ``marginal`` work on."""
        self._model()
        if isinstance(xseq, (str, bytes, dict)) or not hasattr(xseq, "__iter__"):
            raise ItemFormatError(f"xseq must be a sequence of items, not {type(xseq).__name__}")
        self._xseq = xseq if isinstance(xseq, list) else list(xseq)
        self._enc = None
        self._marg = None

    def tag(self, xseq=None):
        """The most probable labels of ``xseq`` (or of the sequence given to ``set`` or to
        the previous ``tag``; none: ``[]``)."""
        self._model()
        if xseq is not None:
            self.set(xseq)
        x = self._xseq
        if not x:
            return []
        decoder = self._fast()
        if decoder is None:
            return [str(y) for y in self.decode(x)]
        return [str(y) for y in decoder.tag(self._encoded())]

    def _encoded(self):
        """The current sequence encoded for the decoder, once per ``set``."""
        enc = self._enc
        if enc is None:
            try:
                enc = self._enc = self._decoder.encode(self._xseq)
            except TypeError as exc:        # an item in no accepted format
                raise ItemFormatError(str(exc)) from None
        return enc

    def decode(self, xseq):
        """The most probable labels of the non-empty sequence ``xseq``, leaving the
        current sequence as it is (``CRF.predict_single`` goes through here): one
        compiled call for a model a CRFsuite file can hold (:class:`_Decoder`), the
        estimator's ``predict`` for the others."""
        crf = self._model()
        decoder = self._fast()
        try:
            if decoder is None:
                return crf.predict([xseq])[0]
            return decoder.tag(decoder.encode(xseq))
        except TypeError as exc:            # an item in no accepted format
            raise ItemFormatError(str(exc)) from None

    def _fast(self):
        """The model's :class:`_Decoder`, or None where the estimator's paths serve (also
        for a model with transition constraints, which those paths honour)."""
        decoder = self._decoder
        if decoder is None:
            fitted = self._fitted_model()
            decoder = self._decoder = _Decoder(fitted) if _Decoder.usable(fitted) else False
        if decoder and getattr(self._model(), "constraints", None) is not None:
            return None
        return decoder or None

    def _current(self):
        if self._xseq is None:
            raise ValueError("no sequence: call set(xseq) first")
        return self._xseq

    def _posterior(self):
        """``(marginals, log Z, state scores or None)`` of the current sequence, kept
        until the next ``set``."""
        if self._marg is None:
            crf, x = self._model(), self._current()
            decoder = self._fast()
            try:
                post = None if decoder is None else decoder.posterior(self._encoded())
                if post is None:
                    m = crf.fitted_model_            # (its constraints as they are now)
                    marg, logz = m.inference().marginals(m.space, m.encode([x]), m.weights, **_constraints_of(m))
                    post = (marg, float(logz[0]), None)
            except TypeError as exc:
                raise ItemFormatError(str(exc)) from None
            self._marg = post
        return self._marg

    def probability(self, yseq):
        """p(yseq | x) of the current sequence (0 for an empty one, as CRFsuite)."""
        crf = self._model()
        x = self._current()
        yseq = list(yseq)
        if len(yseq) != len(x):
            raise ValueError(f"The numbers of items and labels differ: |x| = {len(x)}, |y| = {len(yseq)}")
        if not x:
            return 0.0
        m = self._fitted_model()
        ids = [m.labels.id(y) for y in yseq]
        if min(ids) < 0:
            raise ValueError(f"Failed to convert into label identifier: {yseq[ids.index(min(ids))]}")
        _, logz, E = self._posterior()
        if E is not None:
            return math.exp(self._decoder.path_score(E, ids) - logz)
        m = crf.fitted_model_
        data = m.encode([x], [yseq])
        loss = m.inference().sequence_loss(m.space, data, m.weights, **_constraints_of(m))
        return float(np.exp(-loss[0]))

    def marginal(self, y, pos):
        """p(label ``y`` at position ``pos`` | x) of the current sequence."""
        crf = self._model()
        marg = self._posterior()[0]
        if (pos.__class__ is not int and (isinstance(pos, bool) or not isinstance(pos, np.integer))) or \
                not 0 <= pos < len(marg):
            raise ValueError(f"The position, {pos!r}, is out of range of {len(marg)}")
        i = self._fitted_model().labels.mapping.get(y)
        if i is None:
            raise ValueError(f"Failed to convert into label identifier: {y}")
        return float(marg[pos, i])

    # -- inspection -----------------------------------------------------------------
    def _open_model(self):
        if self._crf is None:
            raise TaggerClosedError("Tagger is closed")
        return self._crf

    def info(self):
        """The model's content as python-crfsuite's ``ParsedDump``."""
        crf = self._open_model()
        labels = self.labels()
        attrs = list(self._fitted_model().uni)
        return ParsedDump(_header(crf, labels, attrs), {n: str(i) for i, n in enumerate(labels)},
                          {n: str(i) for i, n in enumerate(attrs)}, crf.transition_features_,
                          crf.state_features_)

    def dump(self, filename=None):
        """Write CRFsuite's listing of the model (``crfsuite dump``: header, labels,
        attributes, transitions, state features) to ``filename`` (atomically) or to
        standard output (None)."""
        import sys
        info = self.info()
        lines = ["FILEHEADER = {"] + [f"  {k}: {v}" for k, v in info.header.items()] + ["}", ""]
        for title, table in (("LABELS", info.labels), ("ATTRIBUTES", info.attributes)):
            lines += [f"{title} = {{"] + [f"  {int(i):5d}: {n}" for n, i in table.items()] + ["}", ""]
        lines += ["TRANSITIONS = {"] + [f"  (1) {a} --> {b}: {v:f}" for (a, b), v in info.transitions.items()]
        lines += ["}", "", "STATE_FEATURES = {"]
        lines += [f"  (0) {a} --> {b}: {v:f}" for (a, b), v in info.state_features.items()] + ["}", ""]
        text = "\n".join(lines) + "\n"
        if filename is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            from ..core.files import atomic_write
            with atomic_write(filename, "w", encoding="utf-8") as fh:
                fh.write(text)


def _header(crf, labels, attrs):
    """The fields of the CRFsuite file header of ``crf``'s model, as CRFsuite's listing
    shows them (the offsets in hexadecimal); sizes only when CRFsuite's format can hold
    the model."""
    import struct
    from .crfsuite_format import HEADER_SIZE, to_bytes
    if representable(crf) is not None:
        return {"magic": "lCRF", "type": "FOMC", "version": "100", "num_features": "0",
                "num_labels": str(len(labels)), "num_attrs": str(len(attrs)), "size": str(crf.size_)}
    head = to_bytes(to_crfsuite_model(crf))[:HEADER_SIZE]
    size, = struct.unpack_from("<I", head, 4)
    version, n_feat, n_lab, n_attr, *offsets = struct.unpack_from("<9I", head, 12)
    out = {"magic": head[:4].decode("ascii"), "size": str(size), "type": head[8:12].decode("ascii"),
           "version": str(version), "num_features": str(n_feat), "num_labels": str(n_lab), "num_attrs": str(n_attr)}
    for name, off in zip(("off_features", "off_labels", "off_attrs", "off_labelrefs", "off_attrrefs"), offsets):
        out[name] = f"0x{off:X}"
    return out


def _public_crf():
    import spargel
    return spargel.CRF
