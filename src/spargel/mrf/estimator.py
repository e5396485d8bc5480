"""Pairwise Markov random fields over discrete variables: parameter and structure learning.

:class:`PairwiseMRF` fits ``sum_n -log p(x^n) + penalty(edge weights)`` (or the negative
pseudo-log-likelihood) where every pair of variables (or every pair in
``candidate_edges``) is a candidate edge whose ``k_i x k_j`` table of weights is one
group. With ``penalty="l1"`` each weight is penalised (``l1 * |w|``, OWL-QN); with
``penalty="group"`` each edge's table as a whole (``l1 * ||w_edge||_2``, group lasso) so
edges enter or leave the graph together. Node biases are not penalised. Inference runs
on the active edges only (see :mod:`spargel.mrf.model`).

>>> import numpy as np
>>> from spargel.mrf.estimator import PairwiseMRF
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 2, (500, 4))
>>> X[:, 1] = np.where(rng.random(500) < 0.9, X[:, 0], 1 - X[:, 0])   # 0 -- 1
>>> X[:, 3] = np.where(rng.random(500) < 0.8, X[:, 2], 1 - X[:, 2])   # 2 -- 3
>>> m = PairwiseMRF(l1=20.0, inference="exact").fit(X)
>>> m.edges_.tolist()
[[0, 1], [2, 3]]
>>> bool(m.score(X) > 4 * np.log(0.5)), m.score_method_     # beats independent coins
(True, 'exact')
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np

from ..core.first_use import announces_compiles
from ..errors import (CapabilityError, ConvergenceWarning, DataFormatError, ModelFileError, NotFittedError,
                      ParameterError)
from ..core.params import check_number, keep_arguments, ParamsMixin
from ..core.interrupts import note_interrupt, reraise_interrupt

__all__ = ["PairwiseMRF", "mrf_penalty"]

INFERENCES = ("auto", "loopy-bp", "exact", "pseudo-likelihood")
PENALTIES = ("l1", "group")
#: ``inference="auto"`` trains with the exact likelihood when the joint state space has at
#: most this many states (enumeration gives every candidate edge's gradient exactly) ...
AUTO_ENUMERATE = 1 << 17
#: ... (the conditional model enumerates once per sample: a smaller limit) ...
AUTO_ENUMERATE_CONDITIONAL = 1 << 10
#: ... or when the junction tree of the candidate graph, which bounds that of every
#: active graph, has no clique table above this many entries (checked up to
#: AUTO_PLAN_NODES variables); otherwise with the pseudo-likelihood.
AUTO_TABLE = 1 << 12
AUTO_PLAN_NODES = 300
#: the most loopy BP sweeps a model may ask for (fit and model files): a budget, so that
#: a forged file cannot make ``predict`` run for days
BP_MAX_ITER_LIMIT = 1_000_000
#: a model file's loopy BP may run at most this many edge updates (bp_max_iter x edges)
BP_UPDATE_BUDGET = 1e10
#: the largest node feature ``fit`` accepts (prediction takes any finite feature)
MAX_ABS_FEATURE = 1e100
#: the largest log-potential (node, edge or feature weight) a model file may hold: fitted
#: weights are nowhere near it, and beyond it a sum of potentials overflows or the
#: others are lost against it (marginals NaN or all zero, evidence ignored)
MAX_ABS_POTENTIAL = 1e100


def mrf_penalty(model, kind, l1, l2=0.0, edge_weights=None):
    """The penalty of a :class:`~spargel.mrf.model.PairwiseMRFModel`: ``kind`` 'l1'
    (elastic net on the penalised weights) or 'group' (group lasso, one group per edge);
    ``edge_weights`` (one per candidate edge) scale each edge's penalty (the adaptive
    second stage)."""
    scale = model.layout.penalty_scale
    scale = np.ones(model.n_params) if scale is None else scale
    group_weights = None
    if edge_weights is not None:
        ptr = model.edge_param_ptr
        scale = scale.copy()
        scale[ptr[0]:ptr[-1]] *= np.repeat(edge_weights, np.diff(ptr))
        group_weights = np.ones(model.layout.n_groups)
        n = model.graph.n_nodes
        group_weights[n:n + len(edge_weights)] = edge_weights
    if kind == "l1":
        from ..core.penalties import ElasticNet
        return ElasticNet(l1=l1 * scale, l2=l2 * scale)
    try:
        from ..core.penalties import GroupLasso
    except ImportError:
        raise CapabilityError("penalty='group' needs spargel.core.penalties.GroupLasso (group lasso with a "
                              "proximal solver such as 'fista'), which this version of spargel "
                              "does not have; use penalty='l1'") from None
    return GroupLasso(l1, model.layout, l2=l2, group_weights=group_weights)


class PairwiseMRF(ParamsMixin):
    """Sparse pairwise MRF over discrete variables (structure and parameters).

    Parameters
    ----------
    l1 : float
        Penalty weight on the edge weights (the objective is a sum over samples, as
        everywhere in spargel, so ``l1`` grows with the number of samples).
    l2 : float
        Ridge weight ``l2/2 ||w_edges||^2`` added to the objective.
    penalty : 'l1' or 'group'
        ``l1`` on every edge weight, or group lasso (``l1 * ||table||_2`` per edge).
    inference : 'auto', 'loopy-bp', 'exact' or 'pseudo-likelihood'
        How the likelihood is evaluated during training: loopy BP (Bethe), the junction
        tree (exact; small treewidth of the *active* graph) or Besag's pseudo-likelihood
        (no inference). ``'auto'`` (default) picks ``'exact'`` when the junction tree of
        the candidate graph is small (at most 2^17 joint states, 2^10 for the conditional
        model; candidate edges that form a forest; or min-fill clique tables of at most
        2^12 entries) and ``'pseudo-likelihood'`` otherwise; loopy BP only on request
        (its Bethe gradients favour loop-closing edges, ``docs/mrf.md``).
        :attr:`inference_used_` says which one ran.
    solver : str
        A solver of :mod:`spargel.solvers` (``owlqn`` for ``l1``; ``fista`` for the
        group penalty, ``grafting-light`` when available).
    candidate_edges : None or (E, 2) int array
        Pairs that may become edges (default: every pair). With a fixed graph and
        ``l1=0`` this is plain parameter learning.
    edge_features : 'full' or 'ising'
        A full state-by-state table per edge, or one weight per edge (spins for binary
        pairs, Potts agreement otherwise).
    n_states : None, int or sequence
        States per variable (default: ``max + 1`` of each column of X).
    tie_features : bool
        Conditional model only (``fit(X, node_features=F)``): one (k, d) table of
        feature weights shared by every variable (a grid CRF) instead of one per variable.
    candidate_estimate : None, 'independent' or 'clamp'
        How gradients of inactive edges are estimated (see :mod:`spargel.mrf.model`).
    adaptive : bool or 'auto'
        ``'auto'`` (default): ``True`` when ``l1 > 0``. Two-stage fit, the adaptive lasso (Zou 2006): after the fit at ``l1``, refit on its
        edges only with each edge's penalty scaled by ``median strength / its strength``
        (:func:`~spargel.mrf.model.adaptive_edge_weights`), warm-started. Weak edges,
        among them most spurious ones, are penalised harder than strong ones; the
        structure is usually recovered at a wider range of ``l1`` (``docs/mrf.md``).
        The first stage's edges are kept in :attr:`screening_edges_`.
    bp_schedule, bp_damping, bp_max_iter, bp_tol : loopy BP options.
    max_iter, tol : solver iteration limit and relative-objective tolerance.
    n_jobs : threads for the pseudo-likelihood gradient (numba threads).
    random_state : seed of :meth:`sample` (and of anything random).
    verbose : print one line per iteration on stderr.

    Attributes
    ----------
    edges_ : (E, 2) int array, the learned edges ``i < j``.
    edge_weights_ : list of (k_i, k_j) arrays, each edge's log-potential table.
    node_weights_ : list of (k_i,) arrays, the node log-potentials.
    edge_strength_ : (E,) the Frobenius norm of each double-centred edge table (the part
        of the table that couples the two variables).
    feature_weights_ : conditional model only: a list of (k_i, d) arrays (one (k, d)
        array when ``tie_features``), so that ``theta_i(a) = node_weights_[i][a] +
        feature_weights_[i][a] . features[i]``.
    screening_edges_ : ``adaptive`` only: the edges of the first stage.
    inference_used_ : the inference training ran with ('exact', 'pseudo-likelihood' or
        'loopy-bp'; what ``'auto'`` picked); adaptive_used_ : whether the adaptive second
        stage ran.
    n_states_, n_features_in_, weights_ (flat), history_ (one dict per iteration),
    n_iter_, stop_reason_, converged_, inference_ (the last training inference report),
    bp_failures_ (training gradient evaluations whose BP did not converge).
    """

    _estimator_kind = "density"

    def __init__(self, l1=1.0, *, l2=0.0, penalty="l1", inference="auto", solver="owlqn",
                 candidate_edges=None, edge_features="full", n_states=None, tie_features=False,
                 candidate_estimate=None, adaptive="auto",
                 bp_schedule="sequential", bp_damping=0.0, bp_max_iter=200, bp_tol=1e-6,
                 max_iter=None, tol=1e-6, n_jobs=1, random_state=None, verbose=False):
        keep_arguments(self, locals())

    # -- training -------------------------------------------------------------------------
    def _bp_options(self):
        return {"schedule": self.bp_schedule, "damping": float(self.bp_damping),
                "max_iter": int(self.bp_max_iter), "tol": float(self.bp_tol)}

    def _check_params(self):
        """Every parameter checked before anything is allocated (``ValueError`` /
        ``TypeError`` naming it, never a numpy error from deep inside a solver)."""
        def one_of(name, choices):
            v = getattr(self, name)
            if not isinstance(v, str) or v not in choices:
                raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, got {v!r}")

        one_of("inference", INFERENCES)
        one_of("penalty", PENALTIES)
        one_of("edge_features", ("full", "ising"))
        one_of("bp_schedule", ("sequential", "residual", "parallel"))
        if self.candidate_estimate is not None:
            one_of("candidate_estimate", ("independent", "clamp"))
        if not isinstance(self.solver, str):
            raise ParameterError(f"solver must be a solver's name, got {self.solver!r}")
        if not (self.adaptive == "auto" if isinstance(self.adaptive, str) else isinstance(self.adaptive, (bool, np.bool_))):
            raise ParameterError(f"adaptive must be True, False or 'auto', got {self.adaptive!r}")
        for name in ("tie_features", "verbose"):
            if not isinstance(getattr(self, name), (bool, np.bool_, int)):
                raise ParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_number("l1", self.l1)
        check_number("l2", self.l2)
        check_number("tol", self.tol)
        check_number("bp_tol", self.bp_tol)
        check_number("bp_damping", self.bp_damping)
        if self.bp_damping >= 1:
            raise ParameterError(f"bp_damping must be in [0, 1), got {self.bp_damping!r}")
        check_number("max_iter", self.max_iter, low=1, integer=True, allow_none=True)
        check_number("bp_max_iter", self.bp_max_iter, low=1, integer=True)
        if self.bp_max_iter > BP_MAX_ITER_LIMIT:
            raise ParameterError(f"bp_max_iter must be at most {BP_MAX_ITER_LIMIT}, got {self.bp_max_iter!r}")
        check_number("n_jobs", self.n_jobs, low=-1, integer=True, allow_none=True)
        if self.n_states is not None:
            ns = self.n_states
            if isinstance(ns, (str, bytes)):
                raise ParameterError(f"n_states must be an integer >= 2 or one per variable, got {ns!r}")
            items = list(np.ravel(np.asarray(ns, dtype=object)))
            if not items or not all(isinstance(k, numbers.Integral) and not isinstance(k, (bool, np.bool_))
                                    and k >= 2 for k in items):
                raise ParameterError(f"n_states must be an integer >= 2 or one per variable, got {ns!r}")
        rs = self.random_state
        if not (rs is None or isinstance(rs, (numbers.Integral, np.random.Generator, np.random.RandomState))) \
                or isinstance(rs, (bool, np.bool_)):
            raise ParameterError(f"random_state must be None, an integer or a numpy random generator, got {rs!r}")

    def _choose_inference(self, ns, candidates, conditional):
        """What ``inference="auto"`` trains with (see the class documentation)."""
        if self.inference != "auto":
            return self.inference
        from .exact import elimination_order
        from .graph import Graph, all_pairs, validate_edges
        from .tree import forest_plan_of
        limit = AUTO_ENUMERATE_CONDITIONAL if conditional else AUTO_ENUMERATE
        if float(np.sum(np.log2(ns.astype(float)))) <= np.log2(limit) + 1e-9:
            return "exact"
        n = len(ns)
        edges = all_pairs(n) if candidates is None else validate_edges(candidates, n, "candidate_edges")
        graph = Graph(ns, edges, validated=True)
        if forest_plan_of(graph) is not None:
            return "exact"
        if conditional or n > AUTO_PLAN_NODES or len(edges) > 4 * n:
            return "pseudo-likelihood"
        adjacency = [set() for _ in range(n)]
        for i, j in edges:
            adjacency[i].add(int(j))
            adjacency[j].add(int(i))
        _, cliques = elimination_order(n, adjacency)
        largest = max(float(np.prod(ns[list(c)].astype(float))) for c in cliques)
        return "exact" if largest <= AUTO_TABLE else "pseudo-likelihood"

    def fit_plan(self, X, sample_weight=None, node_features=None, warn=True):
        """Everything a fit needs before the solver runs, checked: a :class:`MRFFitPlan`
        (the data, the inference, the solver, ``make_model(candidates, rows=None)`` --
        ``rows``: a subset of the samples, as the selectors' subsamples and folds use --
        and the settings its ``solve`` and ``penalty`` read). ``fit`` and the selectors'
        warm-started paths (:mod:`spargel.mrf.selection`) receive it."""
        from .model import PairwiseMRFModel, check_discrete_data, check_model_size
        from .graph import validate_edges
        from ..solvers import default_max_iter, get_solver

        self._check_params()
        Xc, ns = check_discrete_data(X, self.n_states)
        check_model_size(ns, None if self.candidate_edges is None else
                         validate_edges(self.candidate_edges, len(ns), "candidate_edges"))
        seen = [np.bincount(Xc[:, i], minlength=ns[i]) for i in range(Xc.shape[1])]
        unseen = [(i, int(np.flatnonzero(c == 0)[0])) for i, c in enumerate(seen) if np.any(c == 0)]
        if unseen and warn:
            i, a = unseen[0]
            warnings.warn(f"state {a} of variable {i} never occurs in X (and {len(unseen) - 1} more); "
                          f"its unpenalised bias has no finite optimum -- recode the states to "
                          f"0..k-1 of those observed", ConvergenceWarning, stacklevel=3)
        if node_features is not None:
            from .model import check_node_features
            node_features = check_node_features(node_features, Xc.shape[0], Xc.shape[1])
            big = float(np.abs(node_features).max())
            if big > MAX_ABS_FEATURE:
                raise DataFormatError("node_features", None, f"a feature of magnitude {big:.3g} is above "
                                      f"{MAX_ABS_FEATURE:.0e}: the gradients' squares overflow double "
                                      f"precision (the solver would stop at its start and call that "
                                      f"converged); rescale the features")
        inference = self._choose_inference(ns, self.candidate_edges, node_features is not None)
        pl = inference == "pseudo-likelihood"

        def make_model(candidates, rows=None):
            sw = sample_weight if rows is None or sample_weight is None else np.asarray(sample_weight)[rows]
            return PairwiseMRFModel(
                Xc if rows is None else np.ascontiguousarray(Xc[rows]), ns, candidates,
                edge_features=self.edge_features, objective="pseudo" if pl else "likelihood",
                inference="exact" if inference == "exact" else "loopy-bp", sample_weight=sw,
                candidate_estimate=self.candidate_estimate, bp=self._bp_options(),
                node_features=node_features if rows is None or node_features is None else node_features[rows],
                tie_features=self.tie_features, validated=True)

        solver_name = self.solver
        if self.penalty == "group" and solver_name == "owlqn":
            solver_name = "fista"
        max_iter = self.max_iter if self.max_iter is not None else default_max_iter(solver_name)
        return MRFFitPlan(Xc, ns, inference, make_model, get_solver(solver_name), int(max_iter),
                          penalty=self.penalty, l2=self.l2, tol=float(self.tol), verbose=self.verbose)

    _prepare = fit_plan

    @announces_compiles
    @reraise_interrupt
    def fit(self, X, y=None, sample_weight=None, node_features=None):
        """Learn the structure and weights from ``X`` (n_samples, n_variables) of states.

        ``node_features``: optional (n_samples, n_variables, d) or (n_samples, d) inputs
        that shift every sample's node potentials (the conditional model, a CRF on a
        general graph); then inference runs once per sample.
        """
        prep = self._prepare(X, sample_weight, node_features)
        adaptive = (float(self.l1) > 0) if isinstance(self.adaptive, str) else bool(self.adaptive)
        t0 = time.perf_counter()
        with numba_threads(self.n_jobs):
            model = prep.make_model(self.candidate_edges)
            stage = prep.solve(model, model.initial_weights(), float(self.l1), adaptive)
        self.keep_stage(prep, stage, adaptive, time.perf_counter() - t0)
        return self

    def keep_stage(self, prep, stage, adaptive, fit_time, warn=True):
        """Keep ``stage`` (a fit of the plan ``prep``: :meth:`MRFFitPlan.solve`) as this
        estimator's fitted attributes, with the warnings about it (``warn``); what
        ``fit`` does after solving, and what the selectors do with the point they
        choose."""
        if stage.screening is not None:
            self.screening_edges_ = stage.screening
        history, reasons, res, model = stage.history, stage.reasons, stage.res, stage.model
        self.fit_time_ = fit_time
        self.history_ = history
        self.n_iter_ = stage.n_iter
        self.stop_reason_ = res.stop_reason
        last = history[-1] if history else {}
        finite = all(np.isfinite(last.get(k, 0.0)) for k in ("objective", "pg_norm"))
        self.converged_ = finite and all(r in ("tol", "gtol", "linesearch") for r in reasons)
        if not finite and warn:
            warnings.warn("PairwiseMRF: the objective or its gradient overflowed; the model is not a "
                          "solution (rescale the inputs)", ConvergenceWarning, stacklevel=3)
        self.objective_ = float(res.objective)
        self.inference_ = dict(model.last_inference)
        self.inference_used_ = prep.inference
        self.adaptive_used_ = adaptive
        self.bp_failures_ = int(model.bp_failures)
        self.n_samples_ = prep.X.shape[0]
        if "max_iter" in reasons and warn:
            where = "" if len(reasons) == 1 else \
                f" (in the {' and '.join(('first', 'adaptive')[k] for k, r in enumerate(reasons) if r == 'max_iter')} stage)"
            warnings.warn(f"PairwiseMRF: the solver stopped after max_iter={prep.max_iter} iterations before "
                          f"reaching tol{where}", ConvergenceWarning, stacklevel=3)
        if model.bp_failures and warn:
            warnings.warn(f"PairwiseMRF: loopy BP did not converge in {model.bp_failures} of "
                          f"{model.n_inference_calls} gradient evaluations (bp_max_iter={self.bp_max_iter}); "
                          f"try bp_damping=0.5 or bp_schedule='residual'", ConvergenceWarning, stacklevel=3)
        self._set_weights(prep.ns, model.graph.edges, model, stage.w)
        note_interrupt(self, "interrupted" if "interrupted" in reasons else res.stop_reason)  # (raised by reraise_interrupt)

    def _set_weights(self, ns, candidates, model, w):
        node_theta, edge_theta = model.potentials(w)
        active = model.active_edges(w)
        g = model.graph
        self.n_states_ = ns
        self.n_features_in_ = len(ns)
        self.weights_ = np.asarray(w, dtype=np.float64).copy()
        self.edges_ = candidates[active].copy()
        self._node_theta = node_theta.copy()
        self._edge_theta = np.concatenate([edge_theta[g.edge_ptr[e]:g.edge_ptr[e + 1]] for e in active]) \
            if len(active) else np.zeros(0)
        self._features = None if model.F is None else np.asarray(w[model.feat_ptr[0]:], dtype=np.float64).copy()
        self._n_input_features = 0 if model.F is None else int(model.F.shape[2])
        self._build()

    def _build(self):
        from .model import coupling_strength
        from .graph import Graph

        self._graph = Graph(self.n_states_, self.edges_, validated=True)
        g = self._graph
        self.node_weights_ = [self._node_theta[g.node_ptr[i]:g.node_ptr[i + 1]].copy() for i in range(g.n_nodes)]
        self.edge_weights_ = [self._edge_theta[g.edge_ptr[e]:g.edge_ptr[e + 1]].reshape(
            self.n_states_[i], self.n_states_[j]).copy() for e, (i, j) in enumerate(g.edges)]
        self.edge_strength_ = np.array([coupling_strength(t) for t in self.edge_weights_])
        self._exact = None
        if getattr(self, "_features", None) is not None:
            d, ns = self._n_input_features, self.n_states_
            if self.tie_features:
                self.feature_weights_ = self._features.reshape(int(ns[0]), d).copy()
            else:
                offs = np.concatenate([[0], np.cumsum(ns * d)])
                self.feature_weights_ = [self._features[offs[i]:offs[i + 1]].reshape(ns[i], d).copy()
                                         for i in range(len(ns))]

    def _row_thetas(self, node_features, n_rows):
        """Per-row node log-potentials (n_rows, K) of the conditional model, or None."""
        from .model import check_node_features, node_theta_rows
        conditional = getattr(self, "_features", None) is not None
        if node_features is None:
            if conditional:
                raise ValueError("this model was fitted with node_features; give node_features for these rows")
            return None
        if not conditional:
            raise ValueError("this model was fitted without node_features")
        F = check_node_features(node_features, n_rows, self.n_features_in_)
        if F.shape[2] != self._n_input_features:
            raise ValueError(f"node_features have {F.shape[2]} features, the model {self._n_input_features}")
        return node_theta_rows(self._node_theta, self.feature_weights_, F, self._graph.node_ptr, self.tie_features)

    # -- inference on the fitted model ----------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "edges_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def _exact_ok(self):
        if self._exact is None:
            from .exact import junction_tree
            try:
                junction_tree(self._graph, self._node_theta, self._edge_theta, max_table=2_000_000)
                self._exact = True
            except CapabilityError:
                self._exact = False
        return self._exact

    def _marginals(self, evidence, node_theta=None):
        node_theta = self._node_theta if node_theta is None else node_theta
        if self._exact_ok():
            from .exact import junction_tree
            return junction_tree(self._graph, node_theta, self._edge_theta, evidence=evidence)
        from .bp import loopy_bp
        nt = node_theta.copy()
        for i, a in (evidence or {}).items():
            lo, hi = self._graph.node_ptr[i], self._graph.node_ptr[i + 1]
            keep = nt[lo + a]
            nt[lo:hi] = -1e300
            nt[lo + a] = keep
        return loopy_bp(self._graph, nt, self._edge_theta, **self._bp_options())

    def log_partition(self, node_theta=None):
        """(log Z, 'exact' or 'bethe') of the fitted model (of one row's node
        log-potentials ``node_theta`` in the conditional model)."""
        self._check_fitted()
        r = self._marginals(None, node_theta)
        return float(r.log_z), ("exact" if self._exact_ok() else "bethe")

    def score_samples(self, X, node_features=None):
        """Log-likelihood of each row of X (exact where the junction tree fits, Bethe
        otherwise; :attr:`score_method_` says which). The conditional model needs the
        rows' ``node_features``."""
        from .model import check_discrete_data
        self._check_fitted()
        Xc, _ = check_discrete_data(X, self.n_states_, min_samples=1)
        rows = self._row_thetas(node_features, len(Xc))
        g = self._graph
        s = self._edge_sum(Xc)
        if rows is None:
            log_z, method = self.log_partition()
            for i in range(g.n_nodes):
                s += self._node_theta[g.node_ptr[i] + Xc[:, i]]
            s -= log_z
        else:
            for r in range(len(Xc)):
                log_z, method = self.log_partition(rows[r])
                s[r] += rows[r, g.node_ptr[:-1] + Xc[r]].sum() - log_z
        self.score_method_ = method
        return s

    def _edge_sum(self, Xc):
        g = self._graph
        s = np.zeros(len(Xc))
        for e, (i, j) in enumerate(g.edges):
            s += self._edge_theta[g.edge_ptr[e] + Xc[:, i] * self.n_states_[j] + Xc[:, j]]
        return s

    def log_potential(self, X):
        """The unnormalised log-probability of each row of X: the sum of its node and
        edge log-potentials (``score_samples`` is this minus ``log Z``)."""
        from .model import check_discrete_data
        self._check_fitted()
        if getattr(self, "_features", None) is not None:
            raise CapabilityError("the conditional model's node potentials depend on node_features")
        Xc, _ = check_discrete_data(X, self.n_states_, min_samples=1)
        g = self._graph
        return self._edge_sum(Xc) + sum(self._node_theta[g.node_ptr[i] + Xc[:, i]] for i in range(g.n_nodes))

    def to_networkx(self, labels=None):
        """The learned graph as a ``networkx.Graph`` (:func:`spargel.mrf.export.to_networkx`;
        imports networkx only now)."""
        from .export import to_networkx
        return to_networkx(self, labels)

    def to_pgmpy(self, labels=None):
        """The model as a ``pgmpy.models.MarkovNetwork`` with its ``DiscreteFactor``s
        (:func:`spargel.mrf.export.to_pgmpy`; imports pgmpy only now)."""
        from .export import to_pgmpy
        return to_pgmpy(self, labels)

    def score(self, X, y=None, node_features=None):
        """Mean log-likelihood per sample (exact or Bethe: see :attr:`score_method_`)."""
        return float(np.mean(self.score_samples(X, node_features)))

    def _partial(self, X_partial):
        from .model import check_discrete_data
        self._check_fitted()
        return check_discrete_data(X_partial, self.n_states_, allow_missing=True, min_samples=1,
                                   source="X_partial")[0]

    def predict_marginals(self, X_partial, node_features=None):
        """Marginals of every variable given the observed ones (``-1`` = unobserved).

        Returns an (n_rows, n_variables, max_states) array; ``[r, i, a]`` is
        ``p(x_i = a | observed of row r)`` (observed variables get their one-hot state;
        entries past a variable's own number of states are 0). Exact where the
        junction tree fits, loopy BP otherwise.
        """
        Xp = self._partial(X_partial)
        rows = self._row_thetas(node_features, len(Xp))
        g = self._graph
        kmax = int(self.n_states_.max())
        out = np.zeros((len(Xp), g.n_nodes, kmax))
        for r, row in enumerate(Xp):
            ev = {int(i): int(row[i]) for i in np.flatnonzero(row >= 0)}
            b = self._marginals(ev, None if rows is None else rows[r]).node_beliefs
            for i in range(g.n_nodes):
                out[r, i, :self.n_states_[i]] = b[g.node_ptr[i]:g.node_ptr[i + 1]]
        return out

    def predict(self, X_partial, node_features=None):
        """Fill the unobserved (``-1``) entries with the most probable joint completion
        (max-product BP: exact on a tree or forest, approximate on a loopy graph)."""
        from .bp import loopy_bp
        Xp = self._partial(X_partial)
        rows = self._row_thetas(node_features, len(Xp))
        g = self._graph
        out = Xp.copy()
        for r, row in enumerate(Xp):
            nt = (self._node_theta if rows is None else rows[r]).copy()
            for i in np.flatnonzero(row >= 0):
                lo, hi = g.node_ptr[i], g.node_ptr[i + 1]
                keep = nt[lo + row[i]]
                nt[lo:hi] = -1e300
                nt[lo + row[i]] = keep
            res = loopy_bp(g, nt, self._edge_theta, max_product=True, warn=False, **self._bp_options())
            out[r] = res.map_state(g)
        return out

    def sample(self, n_samples=1, *, burn_in=200, thin=5, random_state=None, node_features=None):
        """Draw samples (n_samples, n_variables) from the fitted model by Gibbs sampling
        (conditional model: one sample per row of ``node_features``)."""
        from .sampling import gibbs_sample
        self._check_fitted()
        rs = self.random_state if random_state is None else random_state
        seed = 0 if rs is None else (int(rs) if isinstance(rs, (int, np.integer))
                                     else int(np.random.default_rng(rs).integers(2**31)))
        if getattr(self, "_features", None) is None:
            self._row_thetas(node_features, n_samples)          # refuses stray features
            return gibbs_sample(self._graph, self._node_theta, self._edge_theta, n_samples, burn_in=burn_in,
                                thin=thin, seed=seed)
        rows = self._row_thetas(node_features, len(np.asarray(node_features)))
        return np.concatenate([gibbs_sample(self._graph, rows[r], self._edge_theta, 1, burn_in=burn_in, thin=1,
                                            n_chains=1, seed=seed + r) for r in range(len(rows))])

    def plot(self, ax=None, labels=None, positions=None, **kwargs):
        """Draw the learned graph (needs matplotlib): variables on a circle (or at
        ``positions``, an (n, 2) array), edge width by :attr:`edge_strength_`. Returns
        the matplotlib axes."""
        from .plot import plot_mrf_graph
        self._check_fitted()
        return plot_mrf_graph(self.n_features_in_, self.edges_, self.edge_strength_, ax=ax, labels=labels,
                              positions=positions, **kwargs)

    @classmethod
    def from_potentials(cls, n_states, edges, node_theta, edge_theta, **params):
        """A fitted model of the given log-potentials: ``node_theta`` the flat node tables
        (``n_states[i]`` values per variable), ``edge_theta`` the flat ``k_i x k_j`` tables of
        ``edges`` (``i < j``, row-major), with the estimator parameters ``params``.

        >>> m = PairwiseMRF.from_potentials([2, 2], [[0, 1]], [0, 0, 0, 0], [1.0, 0, 0, 1.0])
        >>> m.edges_.tolist(), m.edge_weights_[0].tolist()
        ([[0, 1]], [[1.0, 0.0], [0.0, 1.0]])
        """
        from .graph import Graph, validate_edges
        ns = np.asarray(n_states, dtype=np.int64).ravel()
        if ns.ndim != 1 or len(ns) < 1 or np.any(ns < 2):
            raise ValueError("n_states must hold one integer >= 2 per variable")
        edges = validate_edges(np.asarray(edges, dtype=np.int64).reshape(-1, 2), len(ns), "edges")
        g = Graph(ns, edges, validated=True)
        nt = np.asarray(node_theta, dtype=np.float64).ravel()
        et = np.asarray(edge_theta, dtype=np.float64).ravel()
        if nt.shape != (g.n_node_values,) or et.shape != (g.n_edge_values,):
            raise ValueError(f"node_theta must have {g.n_node_values} values and edge_theta {g.n_edge_values}")
        if not (np.all(np.abs(nt) <= MAX_ABS_POTENTIAL) and np.all(np.abs(et) <= MAX_ABS_POTENTIAL)):
            raise ValueError(f"the log-potentials must be finite and at most {MAX_ABS_POTENTIAL:.0e} in magnitude")
        est = cls(**params)
        est.n_states_, est.n_features_in_, est.edges_ = ns, len(ns), g.edges.copy()
        est._node_theta, est._edge_theta = nt.copy(), et.copy()
        est._features, est._n_input_features = None, 0
        est._build()
        return est

    # -- model files ----------------------------------------------------------------------
    def save(self, path):
        """Write the fitted model to ``path`` (safe format, no pickle)."""
        from ..core import model_file as io
        self._check_fitted()
        meta = {"params": {k: v for k, v in self.get_params().items()
                           if isinstance(v, (int, float, str, bool, type(None)))}}
        arrays = {"n_states": self.n_states_.astype(np.int64), "edges": self.edges_.astype(np.int64),
                  "node_theta": self._node_theta, "edge_theta": self._edge_theta}
        if getattr(self, "_features", None) is not None:
            arrays["feature_weights"] = self._features
            meta["n_input_features"] = self._n_input_features
        io.save_arrays(path, "mrf", meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` (validated before use)."""
        from ..core import model_file as io
        from .model import check_model_size
        from .graph import Graph, validate_edges
        meta, arrays = io.load_arrays(path, "mrf")
        for name in ("n_states", "edges", "node_theta", "edge_theta"):
            io.require(name in arrays, path, f"array {name!r} missing")
        ns, edges = arrays["n_states"], arrays["edges"]
        io.require(ns.dtype.kind == "i" and ns.ndim == 1 and len(ns) >= 1 and np.all(ns >= 2), path,
                   "n_states must be integers >= 2")
        io.require(edges.dtype.kind == "i" and edges.ndim == 2 and edges.shape[1] == 2, path,
                   "edges must be an (E, 2) integer array")
        try:
            edges = validate_edges(edges, len(ns), source=str(path))
            check_model_size(ns, edges, source=str(path))     # before any table is sized by them
        except DataFormatError as exc:
            raise ModelFileError(f"{path}: invalid model ({exc.message})") from None
        # the parameters, each checked as fit checks them, and loopy BP's budget
        io.require(isinstance(meta, dict), path, "the metadata must be a mapping")
        params = meta.get("params", {})
        io.require(isinstance(params, dict), path, f"params must be a mapping, got {type(params).__name__}")
        est = cls(**{k: v for k, v in params.items() if k in cls._param_names()})
        try:
            est._check_params()
        except (ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: invalid model (params: {exc})") from None
        io.require(int(est.bp_max_iter) * max(len(edges), 1) <= BP_UPDATE_BUDGET, path,
                   f"bp_max_iter={est.bp_max_iter} sweeps over {len(edges)} edges exceed the budget of "
                   f"{BP_UPDATE_BUDGET:.0e} edge updates")
        g = Graph(ns, edges, validated=True)
        for name, size in (("node_theta", g.n_node_values), ("edge_theta", g.n_edge_values)):
            a = arrays[name]
            io.require(a.dtype == np.float64 and a.shape == (size,) and np.all(np.isfinite(a)), path,
                       f"{name} must be {size} finite float64 values")
            _require_moderate(a, name, path)
        est._features, est._n_input_features = None, 0
        if "feature_weights" in arrays:
            d = meta.get("n_input_features")
            fw = arrays["feature_weights"]
            size = (int(ns[0]) if est.tie_features else int(ns.sum())) * (d if isinstance(d, int) else 0)
            io.require(fw.ndim == 1, path, "feature_weights must be a flat array")
            d_ok = isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= fw.size
            io.require(d_ok and fw.dtype == np.float64 and fw.shape == (size,)
                       and np.all(np.isfinite(fw)) and (not est.tie_features or np.all(ns == ns[0])), path,
                       "feature_weights do not match n_states and n_input_features")
            _require_moderate(fw, "feature_weights", path)
            est._features, est._n_input_features = fw.copy(), d
        est.n_states_ = ns.astype(np.int64)
        est.n_features_in_ = len(ns)
        est.edges_ = edges
        est._node_theta = arrays["node_theta"].copy()
        est._edge_theta = arrays["edge_theta"].copy()
        est._build()
        return est


def _require_moderate(a, name, path):
    """Refuse a model file's weights beyond :data:`MAX_ABS_POTENTIAL`, naming the file,
    the array and the first offending entry."""
    from ..core import model_file as io
    big = np.flatnonzero(np.abs(a) > MAX_ABS_POTENTIAL)
    io.require(big.size == 0, path, f"{name}[{big[0] if big.size else 0}] = "
               f"{a[big[0]] if big.size else 0.0:.6g} is beyond +-{MAX_ABS_POTENTIAL:.0e}: inference "
               "in double precision cannot use such a log-potential (marginals would be NaN or all "
               "zero); the file was not written by fit")


class _Monitor:
    """Adds the inference report to each history row; prints it when verbose; stops the
    solver (returns True) once ``cancel`` (a ``threading.Event``) is set."""

    def __init__(self, model, verbose, cancel=None):
        self.model, self.verbose, self.cancel = model, verbose, cancel

    def __call__(self, row, w):
        info = self.model.last_inference
        row["active_edges"] = int(len(self.model.active_edges(w)))
        if "sweeps" in info:
            row["bp_sweeps"] = int(info["sweeps"])
            row["bp_converged"] = bool(info["converged"])
        if self.verbose:
            parts = [f"iter {row['iteration']:4d}", f"objective {row['objective']:.6g}",
                     f"edges {row['active_edges']}", f"evals {row['n_evals']}", f"{row['elapsed']:.2f}s"]
            if "bp_sweeps" in row:
                parts.append(f"bp {row['bp_sweeps']} sweeps" + ("" if row["bp_converged"] else " (not converged)"))
            print("  ".join(parts), file=sys.stderr, flush=True)
        return self.cancel is not None and self.cancel.is_set()


class MRFFitPlan:
    """What :meth:`PairwiseMRF.fit_plan` checked and built (``rows``: the samples a
    model of the fit is built on, None for all) and the settings a fit reads
    (``penalty``: its kind, ``l2``, ``tol``, ``verbose``)."""

    def __init__(self, X, ns, inference, make_model, minimize, max_iter, rows=None, *, penalty="l1", l2=0.0,
                 tol=1e-5, verbose=0):
        self.X, self.ns, self.inference = X, ns, inference
        self.make_model, self.minimize, self.max_iter, self.rows = make_model, minimize, max_iter, rows
        self.penalty_kind, self.l2, self.tol, self.verbose = penalty, l2, tol, verbose

    def on_rows(self, rows):
        """The same plan over the samples ``rows`` (a subsample or a fold)."""
        return MRFFitPlan(self.X, self.ns, self.inference, self.make_model, self.minimize, self.max_iter, rows,
                          penalty=self.penalty_kind, l2=self.l2, tol=self.tol, verbose=self.verbose)

    def penalty(self, model, l1, edge_weights=None):
        """The penalty of the plan's kind at ``l1`` over ``model`` (``edge_weights``: the
        adaptive stage's per-edge weights)."""
        return mrf_penalty(model, self.penalty_kind, l1, self.l2, edge_weights)

    def solve(self, model, w0, l1, adaptive, cancel=None):
        """One fit (two stages with ``adaptive``) of ``model`` from the weights ``w0`` at
        ``l1``: the solver's result, the model it ran on last, the history over both
        stages, the stop reasons, the first stage's active edges (ids) and weights.
        ``cancel``: a ``threading.Event`` whose setting stops the solver at its next
        iteration (stop reason ``'callback'``; a selector's threads)."""
        def run(model, penalty, w):
            return self.minimize(model, penalty, w, max_iter=self.max_iter, tol=self.tol, gtol=1e-8,
                                 window=5, monitor=_Monitor(model, self.verbose, cancel))

        res = run(model, self.penalty(model, l1), w0)
        first = _Stage(model, res.w, None, list(res.history), int(res.n_iter), [res.stop_reason])
        out = _Stage(model, res.w, res, first.history, first.n_iter, first.reasons)
        out.first = first
        if adaptive and res.stop_reason not in ("interrupted", "callback"):      # Ctrl-C: no second stage
            from .model import adaptive_edge_weights
            active = model.active_edges(res.w)
            out.screening = model.graph.edges[active].copy()
            if len(active):
                strength = model.edge_strength(res.w)[active]
                w1 = model.subset_weights(res.w, active)
                model2 = self.make_model(out.screening, self.rows)
                res2 = run(model2, self.penalty(model2, l1, adaptive_edge_weights(strength)), w1)
                # one history over both stages, iterations numbered on
                out.history = [dict(r, stage=1) for r in first.history] + [
                    dict(r, stage=2, iteration=int(r["iteration"]) + first.n_iter) for r in res2.history]
                out.model, out.w, out.res = model2, res2.w, res2
                out.n_iter = first.n_iter + int(res2.n_iter)
                out.reasons = first.reasons + [res2.stop_reason]
        return out


_Prepared = MRFFitPlan


class _Stage:
    """One fit's outcome (:meth:`MRFFitPlan.solve`)."""

    def __init__(self, model, w, res, history, n_iter, reasons):
        self.model, self.w, self.res, self.history, self.n_iter, self.reasons = model, w, res, history, n_iter, reasons
        self.screening = None
        self.first = self


class numba_threads:
    """Within the block, numba's parallel kernels run on ``n_jobs`` threads (None, 0 or
    -1: as many as numba has); numba's thread count is per thread, and restored."""

    def __init__(self, n_jobs):
        self.n_jobs = n_jobs

    def __enter__(self):
        import numba
        self.saved = numba.get_num_threads()
        if self.n_jobs and self.n_jobs > 0:
            numba.set_num_threads(min(int(self.n_jobs), numba.config.NUMBA_NUM_THREADS))
        return self

    def __exit__(self, *exc):
        import numba
        numba.set_num_threads(self.saved)
        return False
