"""``spargel.CRF``: a sparse linear-chain CRF with a scikit-learn style API."""

import os
import sys

import numpy as np

from ..data.templates import Template
from ..errors import DataFormatError, ModelFileError, ParameterError
from ..core.interrupts import reraise_interrupt
from ..core.limits import check_label_pairs, check_nbest, check_weight_range
from ..core.params import keep_arguments
from ..core.solver_table import solver as solver_record, solvers_for
from ..estimation import FitPlan, LogLinearCore
from .featurizer import SequenceFeaturizer
from .labels import label_lists
from ..core.params import check_number
from ..data.feature_space import FEATURE_SPACES


#: the solvers that train with constraints (``constrain_training=True``): those that
#: work through the batch likelihood alone, whose transition structure carries them
CONSTRAINED_SOLVERS = tuple(solvers_for({"loss_grad"}, nothing_else=True))


class CRF(LogLinearCore):
    """Linear-chain conditional random field trained by penalised maximum likelihood.

    Minimises ``sum_i -log p(y_i | x_i) + l1 * ||w||_1 + l2 / 2 * ||w||^2``.

    The constructor takes sklearn-crfsuite's parameters first, in its order, with
    CRFsuite's names and meanings (``docs/migration.md``; a setting given under both
    spellings with different values is refused), then spargel's own, keyword-only.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}
        CRFsuite's trainer. "lbfgs" (default): the ``solver`` parameter decides
        (OWL-QN by default, which is CRFsuite's "lbfgs" with ``c1 > 0``); "l2sgd":
        CRFsuite's SGD with an l2 penalty and its calibrated step size (solver
        "l2sgd"; ``c2`` defaults to 1, ``delta`` to 1e-6, 1000 epochs at most); "ap",
        "pa", "arow": the averaged perceptron, passive-aggressive and AROW trainers
        (:mod:`spargel.solvers.online_margin`; no penalty, 100 epochs, CRFsuite's
        defaults: ``epsilon=0``, ``pa_type=1``, ``c=1``, ``error_sensitive=True``,
        ``averaging=True``, ``variance=1``, ``gamma=1``).
    min_freq, all_possible_states, all_possible_transitions, c1, c2, max_iterations,
    num_memories, epsilon, period, delta, linesearch, max_linesearch, calibration_eta,
    calibration_rate, calibration_samples, calibration_candidates, calibration_max_trials,
    pa_type, c, error_sensitive, averaging, variance, gamma
        CRFsuite's training parameters (None: not given). ``c1 -> l1``, ``c2 -> l2 = 2 *
        c2``, ``max_iterations -> max_iter``, ``epsilon -> gtol``, ``delta -> tol``,
        ``period -> window``, ``num_memories`` / ``max_linesearch`` -> ``solver_options``
        (and for "ap" / "pa" / "arow" ``epsilon``, ``pa_type``, ``c``, ``error_sensitive``,
        ``averaging``, ``variance``, ``gamma``, for "l2sgd" the ``calibration_*``
        settings: options of those solvers);
        ``min_freq`` drops features seen less often; each is accepted only by the
        trainers CRFsuite accepts it for.
    model_filename : str or None
        ``fit`` writes the model there (CRFsuite's format when it can hold the model);
        an unfitted estimator reads it on first use.
    keep_tempfiles, trainer_cls
        sklearn-crfsuite's; spargel makes no temporary files and has no trainer class
        (``trainer_cls`` must stay None).
    value_sep : {":", "="}
        How a string feature value joins its key: ``{"w": "the"}`` is the attribute
        ``w:the`` (python-crfsuite's naming, default) or ``w=the``.
    solver : {"owlqn", "lbfgs", "bcd", "cd", ...}
        OWL-QN handles ``l1 > 0`` (and elastic net); L-BFGS the smooth case ``l1 = 0``;
        "bcd" is blockwise coordinate descent (elastic net, fast on sparse models; "cd"
        its one-coordinate-at-a-time version for small problems), see ``docs/bcd.md``.
    l1, l2 : float
        Penalty weights (CRFsuite: ``l1 = c1``, ``l2 = 2 * c2``; Wapiti: ``l1 = rho1``,
        ``l2 = rho2``). ``l1=None`` (default): 1, or 0 with ``algorithm="l2sgd"``.
    max_iter : int or None
        Iteration limit (passes over the data for SGD); None: the solver's default
        (500 for OWL-QN / L-BFGS, 30 passes for SGD, 200 sweeps for BCD / CD).
    tol : float or None
        Stop when the objective improved by less than a relative ``tol`` over the last
        ``window`` iterations: ``(F[k - window] - F[k]) / max(|F[k]|, 1) < tol``
        (CRFsuite's ``delta`` over ``period``; 0 switches the rule off). None (default):
        the solver's, 2e-4 for OWL-QN / L-BFGS -- the objective moved by less than 0.02%
        in the last 10 iterations, when test scores have long stopped changing --, 1e-6
        for ``algorithm="l2sgd"`` (CRFsuite's), 1e-5 for the others. Give
        ``tol=1e-5`` (or ``delta=1e-5``) for CRFsuite's rule. The rule that stopped
        training is ``stop_reason_`` and the ``stop`` key of the last ``history_`` row.
    gtol : float
        Stop when ``||pseudo-gradient|| <= gtol * max(1, ||w||)``.
    window : int
        Iterations over which ``tol`` is measured.
    feature_space : {"observed", "full"}
        ``"observed"``: only (attribute, label) pairs and transitions seen in training
        (CRFsuite); ``"full"``: every attribute with every label (Wapiti, the papers),
        which lets the model learn negative evidence at the price of more weights.
    template : Template, str or None
        A CRF++/Wapiti pattern file's text (or a :class:`~spargel.data.templates.Template`).
        With a template, each sequence in ``X`` is a list of tokens, each token a list of
        column strings. Without one, each token is a feature dict (sklearn-crfsuite
        style) or a list of attribute strings.
    pad : bool
        With a template: emit CRF++ padding markers for positions outside the sequence
        (True) or drop such features (False, CRFsuite's habit).
    n_jobs : int or None
        Threads for the batch gradient (None: 1, -1: all cores).
    random_state : int or None
        Seed for randomised solvers (the deterministic solvers ignore it).
    warm_start : bool
        Start the next ``fit`` from the current weights (matched by feature name).
    verbose : int
        0: silent; 1: one line per iteration on stderr.
    solver_options : dict or None
        Extra keyword arguments for the solver (e.g. ``{"memory": 10}`` for OWL-QN's
        history length: 6 curvature pairs by default for a CRF, CRFsuite's
        ``num_memories``); see the solver's documentation.
    order : {1, 2}
        Markov order of the labels. 2: a second-order CRF, a chain over label pairs
        (:mod:`spargel.chain.crf2`): ``B`` observations (and a bare ``B``) weigh the
        label pair on every token, the first token's pair being ``("__BOS__", y0)``,
        and a bare ``T`` template line the label triples; without a template, the
        observations weigh the current label and the model has pair and triple
        weights. Every solver that works through ``loss_grad`` or ``sgd`` works at
        order 2 (the blocks of BCD / CD are first-order only so far).
    model_type : {"crf", "maxent"}
        ``"crf"`` (default): a linear chain. ``"maxent"``: Wapiti's maximum-entropy
        models (``wapiti train -T maxent``): every token is labelled on its own -- the
        template's unigram patterns only (its ``B`` lines, the label-pair part of
        Wapiti's ``*`` patterns and the transitions are left out), so the likelihood is
        a product of per-token softmaxes and decoding an arg max per token. Order 1.
    client : dask.distributed.Client, address string or None
        With a client, ``fit`` runs sharded on the cluster's workers (see
        ``docs/distributed.md``); ``X`` may then also be a list of column files read by
        the workers or a Dask bag. Needs ``spargel[dask]``.
    n_shards : int or None
        With a client: how many shards the data is split into (None: one per worker).
    constraints : str, dict, TransitionConstraints or None
        Constrained decoding (both orders): which label may follow which and which may
        start and end a sequence. A preset derived from the label names, ``"bio"``
        (``"iob2"``), ``"iob1"`` or ``"bioes"`` (``"iobes"``, ``"bilou"``), or the allowed
        pairs, ``{"allowed": [(prev, label), ...], "start": [...], "end": [...]}`` (or a
        :class:`~spargel.chain.constraints.TransitionConstraints`). ``predict``,
        ``predict_marginals``, ``predict_nbest`` and ``score`` then see only the allowed
        label sequences (marginals and probabilities under the partition function over
        them); the model file keeps the constraints. (Not to be confused with the
        ``constraints`` argument of ``predict``: fixed labels of given tokens.)
    constrain_training : bool
        Train with the constraints too (the partition function over the allowed paths
        only; solvers owlqn, lbfgs and fista; every training label sequence must be
        allowed). False (default): the constraints apply to prediction only.

    Examples
    --------
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["DT", "NN"], ["DT", "NN", "VB"]]
    >>> crf = CRF(l1=0.01, max_iter=50).fit(X, y)
    >>> crf.predict([[{"w": "the"}, {"w": "cat"}]])
    [['DT', 'NN']]
    """

    _kind = "crf"
    _estimator_kind = "sequence_labeler"

    def __init__(self, algorithm="lbfgs", min_freq=None, all_possible_states=None, all_possible_transitions=None,
                 c1=None, c2=None, max_iterations=None, num_memories=None, epsilon=None, period=None, delta=None,
                 linesearch=None, max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None, calibration_max_trials=None, pa_type=None,
                 c=None, error_sensitive=None, averaging=None, variance=None, gamma=None, verbose=0,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None, *, solver="owlqn", l1=None, l2=0.0,
                 max_iter=None, tol=None, gtol=1e-5, window=10, feature_space="observed", template=None, pad=True,
                 n_jobs=None, random_state=None, warm_start=False, solver_options=None, order=1, client=None,
                 n_shards=None, value_sep=":", constraints=None, constrain_training=False, model_type="crf"):
        keep_arguments(self, locals())

    # -- sklearn-crfsuite names ----------------------------------------------------------
    def _effective(self, name):
        """The value training uses, with CRFsuite's spellings applied: ``c1`` -> ``l1``,
        ``c2`` -> ``l2 = 2 * c2`` (CRFsuite's l2 term is ``c2 ||w||^2``),
        ``max_iterations`` -> ``max_iter``, ``epsilon`` -> ``gtol``, ``delta`` -> ``tol``,
        ``period`` -> ``window``, ``algorithm`` -> ``solver``, ``num_memories`` /
        ``max_linesearch`` / the l2sgd calibration settings -> ``solver_options`` (see
        :mod:`spargel.chain.crfsuite_compat`). (``all_possible_transitions`` /
        ``all_possible_states`` give every label pair a transition weight / every
        attribute a weight for every label: the "full" space, part by part.)"""
        from .crfsuite_compat import effective
        return effective(self, name)

    def _check_params(self):
        from .crfsuite_compat import check_params
        check_number("l1", self.l1, allow_array=True, allow_none=True)
        check_params(self)
        if self.value_sep not in ("=", ":"):
            raise ParameterError(f"value_sep must be ':' (python-crfsuite's naming) or '=', got {self.value_sep!r}")
        super()._check_params()
        self._check_order()
        self._check_model_type()
        self._check_constraints()

    # -- constraints -------------------------------------------------------------------
    def _check_constraints(self):
        from .constraints import TransitionConstraints
        spec = TransitionConstraints.coerce(self.constraints)
        if not isinstance(self.constrain_training, (bool, np.bool_)):
            raise ParameterError(f"constrain_training must be True or False, got {self.constrain_training!r}")
        if spec is None:
            if self.constrain_training:
                raise ParameterError("constrain_training=True needs constraints (e.g. constraints='bio')")
            return
        solver = self._effective("solver")
        if self.constrain_training and solver not in CONSTRAINED_SOLVERS:
            raise ParameterError(f"constrain_training=True trains through the batch likelihood: solver "
                                 f"{solver!r} cannot, use one of {', '.join(CONSTRAINED_SOLVERS)}")

    def _refuse_constrained_training(self, what):
        if self.constrain_training:
            raise ParameterError(f"{what} does not train under constraints; set constrain_training=False (the "
                                 f"constraints still apply to prediction)")

    def _label_constraints(self, labels=None):
        """The constraints over the model's label ids (a
        :class:`~spargel.chain.constraints.LabelConstraints`; None without constraints)."""
        from .constraints import TransitionConstraints
        spec = TransitionConstraints.coerce(self.constraints)
        if spec is None:
            return None
        return spec.resolve(self.classes_ if labels is None else labels)

    def _check_model_type(self):
        if not isinstance(self.model_type, str) or self.model_type not in ("crf", "maxent"):
            raise ParameterError(f"model_type must be 'crf' (a linear chain) or 'maxent' (every token on its "
                                 f"own, Wapiti's maxent models), got {self.model_type!r}")
        if self.model_type == "maxent" and self.order != 1:
            raise ParameterError("model_type='maxent' has no label pairs: it needs order=1")

    # -- features ----------------------------------------------------------------------
    def _template(self):
        tpl = self.template
        if tpl is None or isinstance(tpl, Template):
            return tpl
        cached = getattr(self, "_template_cache", None)
        if cached is None or cached.text != tpl:
            cached = Template.parse(tpl, source="<template>")
            self._template_cache = cached
        return cached

    def _has_transitions(self):
        return self._featurizer().has_transitions()

    def _builder(self):
        """The :class:`~spargel.chain.builder.ChainModelBuilder` of this estimator's
        settings (its order, feature space, CRFsuite's all-possible and min_freq
        options)."""
        from .builder import ChainModelBuilder
        return ChainModelBuilder(self.order, self.feature_space, self._has_transitions(),
                                 all_states=self.all_possible_states, all_transitions=self.all_possible_transitions,
                                 min_freq=self.min_freq, n_jobs=self.n_jobs)

    def _plan_extras(self):
        """The chain's fields of the :class:`~spargel.estimation.FitPlan`: the featurizer
        (the ``value_sep`` parameter, over empty vocabularies), the model builder, the
        order and the constraints."""
        from .constraints import TransitionConstraints
        featurizer = SequenceFeaturizer(self._template(), self.pad, self.order, self.value_sep,
                                        maxent=self.model_type == "maxent")
        return {"featurizer": featurizer, "builder": self._builder(), "order": self.order,
                "constraints": TransitionConstraints.coerce(self.constraints),
                "constrain_training": bool(self.constrain_training)}

    def _featurizer(self):
        """The featurizer of this estimator's settings over its vocabularies (fresh ones
        before the first fit)."""
        return SequenceFeaturizer(self._template(), self.pad, self.order, self._value_sep(),
                                  getattr(self, "_uni_vocab", None), getattr(self, "_big_vocab", None),
                                  getattr(self, "_label_vocab", None), maxent=self.model_type == "maxent")

    def _dataset(self, X, y=None, grow=False):
        if grow and self.verbose and not isinstance(X, (str, bytes)) and hasattr(X, "__iter__"):
            # a progress line while the training data is read and encoded
            from ..data.progress import ReadProgress, counted
            X = counted(X, ReadProgress("reading"))
        featurizer = self._featurizer()
        data = featurizer.encode(X, y, grow)
        if grow:
            self._uni_vocab, self._big_vocab, self._label_vocab = featurizer.uni, featurizer.big, featurizer.labels
        return data

    # -- order ---------------------------------------------------------------------------
    def _check_order(self):
        if isinstance(self.order, bool) or self.order not in (1, 2):
            raise ParameterError(f"order must be 1 or 2, got {self.order!r}")
        tpl = self._template()
        if tpl is None:
            return
        if self.order == 1 and tpl.triples:
            raise ParameterError(f"the template has a 'T' line (label triples, {tpl.source}): that needs a "
                                 f"second-order model, order=2")
        if self.order == 2 and not tpl.triples:
            raise ParameterError(f"order=2 needs the label triples: add a line 'T' to the template ({tpl.source}); "
                                 f"without them the model is a first-order one")

    def _space_class(self):
        from .builder import space_class
        return space_class(self.order)

    def _map_code(self, table, code, lab_map, L, old_L):
        if self.order != 2:
            return super()._map_code(table, code, lab_map, L, old_L)
        from .crf2_space import remap_codes
        kind = {"uni": "label", "big": "pair", "trans": "triple"}[table]
        return int(remap_codes(kind, [code], lab_map, old_L, L)[0])

    def _inference(self):
        """The prediction functions of the fitted model's order."""
        if getattr(self.space_, "order", 1) == 2:
            from . import crf2
            return crf2
        from . import crf
        return crf

    # -- fitting -----------------------------------------------------------------------
    @reraise_interrupt
    def fit(self, X, y=None, X_dev=None, y_dev=None, callback=None, sample_weight=None):
        """Train on sequences ``X`` with label sequences ``y``.

        A label ``None`` means "unknown at this position": training sums over the
        labels there (partially labelled sequences; solvers owlqn, lbfgs, fista and
        sgd-l1). ``sample_weight``: one weight per sequence (integer weights give the
        model trained on duplicated sequences). ``X_dev``/``y_dev`` are decoded after
        every iteration and their accuracy (and chunk F1 when the tags form a chunk
        scheme) is added to ``history_``. ``callback(row)`` is called with each history
        row (a dict) as soon as it is complete; returning True stops training. Ctrl-C
        stops after the current iteration, keeps the weights reached (the fitted
        attributes are usable, ``stop_reason_ == "interrupted"``) and then raises
        ``KeyboardInterrupt``.

        With ``client`` set, or when ``X`` is a list of column files (labels in their
        last column; ``y=None``) or a Dask bag, training goes through
        :mod:`spargel.chain.scaleout` (``docs/distributed.md``)."""
        from ..scaleout import cluster
        from .scaleout import is_file_list
        if (X_dev is None) != (y_dev is None):
            raise ValueError("give both X_dev and y_dev (the held-out data and its labels), or neither")
        self._forget_fit()
        if self.client is not None or is_file_list(X) or cluster.is_dask_collection(X):
            self._refuse_constrained_training("the Dask fit (a client, column files, a bag)")
            from . import scaleout
            client = cluster.resolve(self.client)
            if client is not None:
                outcome = scaleout.fit_sharded(self.fit_plan(), client, X, y, X_dev, y_dev, callback, sample_weight)
                self._fitted_sep = self.value_sep
                self._take(outcome)
                return self._after_fit()
            # no cluster: read the files / compute the collection here and fit as usual
            X, y = scaleout.gather(X, y)
        plan = self.fit_plan()
        self._fitted_sep = self.value_sep
        if plan.previous is not None:
            self._prev = plan.previous
        from .fitting import fit_sequences
        self._take(fit_sequences(plan, X, y, X_dev, y_dev, callback, sample_weight))
        if self.verbose:
            print(f"stopped after {self.n_iter_} iterations: {self.stop_reason_}; "
                  f"{self.n_active_features_} active features", file=sys.stderr)
        return self._after_fit()

    def _forget_fit(self):
        """Drop what a previous fit or model file left (the tagger, cached sizes)."""
        for name in ("_tagger", "_crfsuite_size"):
            self.__dict__.pop(name, None)

    def _after_fit(self):
        """sklearn-crfsuite's ``model_filename``: the fitted model is written there (in
        CRFsuite's format when it can hold the model, else in spargel's)."""
        _register_with_eli5()
        if self.model_filename is not None and hasattr(self, "weights_"):
            from .crfsuite_compat import representable
            self.save(self.model_filename, format="crfsuite" if representable(self) is None else "spargel")
        return self

    def _value_sep(self):
        """How string feature values join their key: the fitted model's way, else the
        parameter's."""
        return self.__dict__.get("_fitted_sep", self.value_sep)

    def partial_fit(self, X, y):
        """One pass of SGD-L1 over the chunk ``(X, y)``, continuing the previous calls:
        for data that arrives in pieces or does not fit in memory.

        Always trains with the ``"sgd-l1"`` solver (``solver_options`` apply when
        ``solver="sgd-l1"``). Vocabularies and the parameter layout grow with every
        chunk; the learning-rate schedule, the cumulative penalty (u, q) and the random
        generator carry on. Give the total number of training sequences as
        ``solver_options={"n_samples": N}`` (the objective's per-sample penalty is
        ``l1 / N``; without it, the number of sequences received so far is used). A
        fitted or loaded model (``CRF.load``) continues from its weights with a fresh
        schedule. See :mod:`spargel.streaming`."""
        self._refuse_constrained_training("partial_fit")
        from .streaming import partial_pass, start_state
        plan = self.partial_fit_plan()
        state = self.__dict__.get("_stream_state")
        if state is None or state.fitted is not self.__dict__.get("weights_"):
            state = start_state(plan, self.fitted_model_ if "weights_" in self.__dict__ else None)
        outcome = partial_pass(plan, state, X, y)
        self._take(outcome)
        state.fitted = self.weights_
        self._stream_state = state
        if self.verbose:
            row = outcome.record["history"][-1]
            print(f"chunk {row['iteration']:4d}  {row['chunk_sequences']} sequences  online loss "
                  f"{row['online_loss']:.6g}  active {row['active']}  eta {row['eta']:.3g}", file=sys.stderr)
        return self

    def partial_fit_plan(self):
        """The :class:`~spargel.estimation.FitPlan` of ``partial_fit``: this estimator's
        settings with the solver ``"sgd-l1"`` (its ``solver_options`` only when the
        ``solver`` parameter is ``"sgd-l1"``). Only the feature settings and the
        penalty are checked here, as ``partial_fit`` always did."""
        from .constraints import TransitionConstraints
        if self.feature_space not in FEATURE_SPACES:
            raise ValueError(f"feature_space must be one of {FEATURE_SPACES}, got {self.feature_space!r}")
        self._check_order()
        from types import MappingProxyType
        options = dict(self.solver_options or {}) if self.solver == "sgd-l1" else {}
        featurizer = SequenceFeaturizer(self._template(), self.pad, self.order, self._value_sep(),
                                        maxent=self.model_type == "maxent")
        record = solver_record("sgd-l1")
        return FitPlan(estimator=type(self).__name__, solver=record, l1=self._effective("l1"),
                       l2=self._effective("l2"), max_iter=1, tol=0.0, gtol=0.0, window=1,
                       solver_options=MappingProxyType(options), random_state=self.random_state,
                       verbose=self.verbose, n_jobs=self.n_jobs, feature_space=self.feature_space,
                       featurizer=featurizer, builder=self._builder(), order=self.order,
                       constraints=TransitionConstraints.coerce(self.constraints))

    def _restore(self, meta, path):
        template = meta.get("template")
        if template is not None:
            try:
                Template.parse(template, source=f"{path} (stored template)")
            except DataFormatError as exc:
                raise ModelFileError(f"{path}: invalid model (stored template: {exc.message}"
                                     f"{'' if exc.line is None else f' on its line {exc.line}'})") from None
        self.template = template
        # models saved before value_sep existed joined string values with "="
        self._fitted_sep = meta["params"].get("value_sep", "=")
        # models saved before constraints existed have none
        stored = meta.get("constraints")
        if stored is not None:
            from .constraints import TransitionConstraints
            try:
                self.constraints = TransitionConstraints.coerce(stored)
            except (ParameterError, TypeError) as exc:
                raise ModelFileError(f"{path}: invalid model (stored constraints: {exc})") from None

    def _meta(self):
        meta = super()._meta()
        tpl = self._template()
        meta["template"] = tpl.text if tpl is not None else None
        meta["params"].pop("template", None)
        meta["params"].pop("constraints", None)
        from .constraints import TransitionConstraints
        spec = TransitionConstraints.coerce(self.constraints)
        if spec is not None:
            meta["constraints"] = spec.to_dict()
        return meta

    # -- prediction ----------------------------------------------------------------------
    def _data(self, X, y=None):
        self._check_fitted()
        return self._dataset(X, y)

    def _fixed(self, constraints, data):
        fixed = np.full(data.n_tokens, -1, dtype=np.int32)
        if constraints is None:
            return fixed
        if len(constraints) != data.n_sequences:
            raise ValueError(f"constraints has {len(constraints)} sequences, X has {data.n_sequences}")
        for s, seq in enumerate(constraints):
            lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
            if seq is None:
                continue
            if len(seq) != hi - lo:
                raise ValueError(f"constraints for sequence {s} have {len(seq)} entries, the sequence {hi - lo} tokens")
            for t, lab in enumerate(seq):
                if lab is None or lab == "":
                    continue
                i = self._label_vocab.id(lab)
                if i < 0:
                    raise ValueError(f"sequence {s}, token {t}: unknown label {lab!r} in constraints")
                fixed[lo + t] = i
        return fixed

    def predict_single(self, xseq, constraints=None):
        """The labels of one sequence (sklearn-crfsuite's ``predict_single``). Without
        constraints, a model that a CRFsuite file can hold is decoded by its tagger's
        one-call path (``tagger_.decode``), which spares the batch path's set-up."""
        if constraints is None and isinstance(xseq, list) and xseq and self._fitted() and self.constraints is None:
            return self.tagger_.decode(xseq)
        return self.predict([xseq], None if constraints is None else [constraints])[0]

    def predict_marginals_single(self, xseq):
        """Per token of one sequence, a dict label -> probability."""
        return self.predict_marginals([xseq])[0]

    def predict(self, X, constraints=None):
        """Most probable label sequence for every sequence (Viterbi). ``constraints``:
        per sequence, a list with a label (fixed) or None (free) per token."""
        data = self._data(X)
        ids, _ = self._inference().decode(self.space_, data, self.weights_, self._fixed(constraints, data),
                                          **self._constrained())
        return self._split_labels(ids, data)

    def _constrained(self):
        """The prediction functions' ``constraints`` argument."""
        return {"constraints": self._label_constraints()}

    def predict_marginals(self, X):
        """Per sequence, per token, a dict label -> probability."""
        data = self._data(X)
        marg, _ = self._inference().marginals(self.space_, data, self.weights_, **self._constrained())
        names = self.classes_
        return [[dict(zip(names, row.tolist())) for row in marg[data.seq_ptr[s]:data.seq_ptr[s + 1]]]
                for s in range(data.n_sequences)]

    def predict_nbest(self, X, k=5, constraints=None):
        """Per sequence, up to ``k`` (labels, probability) pairs, most probable first."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        data = self._data(X)
        k = check_nbest(int(k), self.space_.n_labels, np.diff(data.seq_ptr))
        inference = self._inference()
        if getattr(self.space_, "order", 1) == 2:          # tables over the pair states
            check_nbest(k, self.space_.n_states, np.diff(data.seq_ptr))
        lc = self._constrained()
        _, logz = inference.marginals(self.space_, data, self.weights_, **lc)
        lists = inference.nbest(self.space_, data, self.weights_, int(k), self._fixed(constraints, data), **lc)
        names = self.classes_
        return [[([names[i] for i in path], float(np.exp(score - logz[s]))) for path, score in lst]
                for s, lst in enumerate(lists)]

    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y``: a gold label the model does not
        know counts as an error (as in sklearn-crfsuite; ``cross_val_score`` folds may
        hold labels the training folds lacked); ``None`` labels are not counted."""
        y = label_lists(y, "y")
        data = self._data(X)
        ids, _ = self._inference().decode(self.space_, data, self.weights_, **self._constrained())
        lengths = np.diff(data.seq_ptr)
        if len(y) != data.n_sequences or any(len(g) != n for g, n in zip(y, lengths)):
            raise ValueError("y must have one label per token of X")
        lookup = self._label_vocab.mapping.get
        gold = np.fromiter((-2 if lab is None else lookup(lab, -1) for seq in y for lab in seq), dtype=np.int64,
                           count=int(data.n_tokens))
        known = gold != -2
        return float(np.mean((ids == gold)[known])) if known.any() else float("nan")

    def path(self, X, y, l1_values=None, n_l1=10, l1_min_ratio=1e-3, X_dev=None, y_dev=None):
        """Pseudo regularisation path: fits of this estimator's settings for decreasing
        ``l1`` values with warm starts (default: ``n_l1`` values from the exact
        ``l1_max`` down); returns one dict row per value (see :func:`spargel.path.path`).
        This estimator itself is left unchanged."""
        self._refuse_constrained_training("path")
        from .path import path
        return path(self, X, y, l1_values=l1_values, n_l1=n_l1, l1_min_ratio=l1_min_ratio,
                    X_dev=X_dev, y_dev=y_dev)

    def _split_labels(self, ids, data):
        names = self.classes_
        return [[names[i] for i in ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]] for s in range(data.n_sequences)]

    # -- sklearn-crfsuite's fitted surface ---------------------------------------------
    # (None before fit, as in sklearn-crfsuite; with ``model_filename`` naming an existing
    # file, the model is read from it on first use)
    def _check_fitted(self):
        self._load_model_file()
        super()._check_fitted()

    def _load_model_file(self):
        if "weights_" in self.__dict__ or self.model_filename is None:
            return
        import os
        if not os.path.exists(self.model_filename):
            return
        other = type(self).load(self.model_filename)
        for name in ("_uni_vocab", "_big_vocab", "_label_vocab", "space_", "weights_", "_classes",
                     "n_active_features_", "_fitted_sep", "_crfsuite_size"):
            if name in other.__dict__:
                self.__dict__[name] = other.__dict__[name]
        if other.template is not None:
            self.template = other.template

    def _fitted(self):
        self._load_model_file()
        return "weights_" in self.__dict__

    @property
    def classes_(self):
        """The labels (None before fit)."""
        self._load_model_file()
        return self.__dict__.get("_classes")

    @classes_.setter
    def classes_(self, value):
        self.__dict__["_classes"] = value

    @property
    def tagger_(self):
        """A python-crfsuite style ``Tagger`` of the fitted model (None before fit):
        ``tag``, ``set``, ``probability``, ``marginal``, ``labels``, ``info``, ``dump``."""
        if not self._fitted():
            return None
        tagger = self.__dict__.get("_tagger")
        if tagger is None:
            from .crfsuite_compat import Tagger
            tagger = self.__dict__["_tagger"] = Tagger(self)
        return tagger

    @property
    def fitted_model_(self):
        """The fitted model as one plain value, a
        :class:`~spargel.chain.fitted.FittedChain` (layout, weights, vocabularies, labels,
        template, constraints: what the model-file writers receive; None before fit)."""
        if not self._fitted():
            return None
        from .fitted import FittedChain
        return FittedChain(self.space_, self.weights_, self._uni_vocab, self._big_vocab, self._label_vocab,
                           self._template(), self.pad, self._value_sep(), self.model_type, self.constraints)

    @classmethod
    def from_fitted_model(cls, fitted):
        """A fitted estimator holding ``fitted`` (a :class:`~spargel.chain.fitted.FittedChain`,
        e.g. what a model-file reader returns), with its template, padding, model type and
        value separator as parameters."""
        est = cls(**fitted.params())
        est._uni_vocab, est._big_vocab, est._label_vocab = fitted.uni, fitted.big, fitted.labels
        est.space_ = fitted.space
        est.weights_ = fitted.weights
        est.classes_ = fitted.labels.names
        est.n_active_features_ = int(np.count_nonzero(fitted.weights))
        if fitted.file_size is not None:
            est._crfsuite_size = fitted.file_size
        est._fitted_sep = fitted.value_sep
        if fitted.constraints is not None:
            est.constraints = fitted.constraints
        return est

    @property
    def size_(self):
        """Size of the model in bytes: of its CRFsuite file (sklearn-crfsuite's
        meaning), or of its arrays when that format cannot hold it (None before fit)."""
        if not self._fitted():
            return None
        size = self.__dict__.get("_crfsuite_size")
        if size is None:
            from .crfsuite_compat import representable, to_crfsuite_model
            if representable(self) is None:
                from .crfsuite_format import to_bytes
                size = len(to_bytes(to_crfsuite_model(self)))
            else:
                s = self.space_
                size = int(self.weights_.nbytes + sum(a.nbytes for a in (s.u_ptr, s.u_lab, s.b_ptr, s.b_pair,
                                                                          s.t_pair)))
            self.__dict__["_crfsuite_size"] = size
        return size

    @property
    def num_attributes_(self):
        """Number of attributes in the model (None before fit)."""
        return len(self._uni_vocab) if self._fitted() else None

    @property
    def attributes_(self):
        """Names of the attributes that kept a non-zero weight (None before fit)."""
        return list(self._uni_vocab) if self._fitted() else None

    @property
    def training_log_(self):
        """The per-iteration history rows (``history_``; None before fit)."""
        return self.__dict__.get("history_")

    @property
    def state_features_(self):
        """{(attribute, label): weight} for the non-zero unigram weights (None before fit)."""
        if not self._fitted():
            return None
        s, w, names = self.space_, self.weights_, self.classes_
        out = {}
        for a, attr in enumerate(self._uni_vocab):
            for k in range(s.u_ptr[a], s.u_ptr[a + 1]):
                if w[k] != 0:
                    out[(attr, names[s.u_lab[k]])] = float(w[k])
        return out

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_tagger", None)
        return state

    # -- model files -------------------------------------------------------------------
    def save(self, path, format="spargel", encoding="utf-8"):
        """Write the fitted model to ``path``: ``format="spargel"`` (default: spargel's
        own safe format, any model) or ``"crfsuite"`` (CRFsuite's model file, read by
        python-crfsuite's ``Tagger``, ``crfsuite tag`` and ``CRF.load``; first-order
        models without bigram attributes or templates only, refused with the reason
        otherwise) or ``"wapiti"`` (Wapiti 1.5's model file, read by ``wapiti label -m``
        and ``CRF.load``; first-order models trained with a Wapiti pattern file only,
        refused with the reason otherwise; its strings are written in ``encoding``, that of
        the data Wapiti will label)."""
        if format == "spargel":
            return super().save(path)
        if format not in ("crfsuite", "wapiti"):
            raise ValueError(f"format must be 'spargel', 'crfsuite' or 'wapiti', got {format!r}")
        self._check_fitted()
        if format == "wapiti":
            if self.constraints is not None:
                raise ValueError("cannot write this model in Wapiti's format: it decodes under transition "
                                 "constraints, which a Wapiti file cannot hold (set constraints=None to write "
                                 "the weights alone)")
            from . import wapiti_format
            return wapiti_format.write(path, wapiti_format.to_wapiti_model(self), encoding)
        from .crfsuite_format import write
        from .crfsuite_compat import to_crfsuite_model
        write(path, to_crfsuite_model(self))

    @classmethod
    def load(cls, path, encoding="utf-8"):
        """Read a model file: spargel's own format (:meth:`save`), a CRFsuite model
        file (its string feature values join their key with ":", as python-crfsuite's),
        a Wapiti model file (``wapiti train``) or a CRF++ model (``crf_learn``'s binary
        model or ``crf_learn -t``'s ``.txt``), each recognised by its first bytes; a
        Wapiti or CRF++ model keeps its patterns and labels columns as that tool does (``encoding``: that of the data it
        was trained on; the tools store bytes). Raises ``ModelFileError`` on any problem."""
        from .foreign_files import is_crfsuite_file
        from .wapiti_format import is_wapiti_file
        from .crfpp_format import is_crfpp_binary_file, is_crfpp_text_file
        if is_crfsuite_file(path):
            from .crfsuite_compat import from_crfsuite_file
            est = from_crfsuite_file(cls, path)
        elif is_wapiti_file(path):
            from .wapiti_format import from_wapiti_file
            est = from_wapiti_file(cls, path, encoding)
        elif is_crfpp_text_file(path) or is_crfpp_binary_file(path):
            from .crfpp_format import from_crfpp_file
            est = from_crfpp_file(cls, path, encoding)
        else:
            est = super().load(path)  # checks its weights itself
            check_label_pairs(len(est.classes_), os.fspath(path))
            if est.constraints is not None:
                try:
                    est._label_constraints()
                except ParameterError as exc:
                    raise ModelFileError(f"{os.fspath(path)}: invalid model (stored constraints: {exc})") from None
            _register_with_eli5()
            return est
        check_weight_range(est.weights_, os.fspath(path))
        _register_with_eli5()
        return est

    @property
    def bigram_features_(self):
        """{(attribute, previous label, label): weight} for the non-zero bigram weights
        (order 2: the pair weights, previous label ``"__BOS__"`` on the first token; the
        plain pair weights are those of the attribute ``"B"``)."""
        self._check_fitted()
        s, w, names = self.space_, self.weights_, list(self.classes_)
        names_of = _pair_namer(s, names)
        out = {}
        for a, attr in enumerate(self._big_vocab):
            for k in range(s.b_ptr[a], s.b_ptr[a + 1]):
                v = w[s.b_base + k]
                if v != 0:
                    out[(attr, *names_of(s.b_pair[k]))] = float(v)
        return out

    @property
    def transition_features_(self):
        """{(previous label, label): weight} for the non-zero transition weights (order 2:
        {(label two back, previous label, label): weight} of the label triples; None
        before fit)."""
        if not self._fitted():
            return None
        s, w, names = self.space_, self.weights_, list(self.classes_)
        if getattr(s, "order", 1) == 2:
            from .crf2_space import triple_names
            names_of = lambda p: triple_names(p, names)          # noqa: E731
        else:
            names_of = _pair_namer(s, names)
        return {names_of(p): float(w[s.t_base + k]) for k, p in enumerate(s.t_pair) if w[s.t_base + k] != 0}


def _pair_namer(space, names):
    """code -> (previous label name, label name) for the layout's pair codes."""
    if getattr(space, "order", 1) == 2:
        from .crf2_space import pair_names
        return lambda p: pair_names(p, names)
    L = len(names)
    return lambda p: (names[p // L], names[p % L])


def _register_with_eli5():
    """Register ``CRF`` with eli5's ``explain_weights`` / ``explain_prediction``
    (``spargel.eli5_support``) when eli5 has been imported; eli5 is never imported here."""
    if "eli5" in sys.modules and CRF not in _ELI5_REGISTERED:
        try:
            from .. import eli5_support
        except ImportError:             # an eli5 without the functions it needs: left alone
            return
        eli5_support.register(CRF)
        _ELI5_REGISTERED.add(CRF)


_ELI5_REGISTERED = set()


_register_with_eli5()
