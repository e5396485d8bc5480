"""Pairwise Markov random field over discrete variables: the model of the protocol.

``p(x) = exp(sum_i theta_i(x_i) + sum_(i,j) in E theta_ij(x_i, x_j)) / Z(theta)``.

Parameters (one flat vector ``w``; :attr:`PairwiseMRFModel.layout` has one group per
variable, then one group per *candidate* edge):

* node biases: ``theta_i(a) = w[node_ptr[i] + a]``, one weight per state (unpenalised:
  ``penalty_scale`` 0, unless ``penalize_nodes``);
* edge weights, ``edge_features="full"``: the whole ``k_i x k_j`` table of the edge (the
  paper's features; group lasso on it selects or drops the edge as a whole);
  ``edge_features="ising"``: one weight per edge times a fixed table -- ``s_i s_j`` with
  spins ``s = 2x - 1`` for two binary variables, the Potts agreement ``[x_i == x_j]``
  otherwise.

The loss (summed over samples, with optional sample weights) is

* ``objective="likelihood"``: ``sum_n -log p(x^n) = N log Z - theta . counts``; its
  gradient is ``N * marginals - counts``. ``inference="exact"`` uses the junction tree
  (:mod:`.exact`), ``"loopy-bp"`` loopy BP (:mod:`.bp`) with the Bethe log Z and
  beliefs, warm-started from the previous call's messages.
* ``objective="pseudo"``: ``sum_n sum_i -log p(x_i^n | x_rest^n)`` (Besag's
  pseudo-likelihood: consistent, no inference; :mod:`.mrf_pl_kernels`).

**Only active edges enter inference.** An edge whose weights are all zero has a constant
potential; inference runs on the graph of the other edges. The gradient of an inactive
edge ``(i, j)`` needs the pairwise marginal ``p(x_i, x_j)``, which that graph does not
carry. It is estimated (``candidate_estimate``):

* ``"independent"``: ``b_i(x_i) b_j(x_j)``, the product of the two node beliefs (free).
  With loopy BP it is *exactly* the gradient of the Bethe log Z with the edge added at
  weight zero (a zero-weight edge sends uniform messages, so its BP pair belief is the
  product of the end beliefs): the gradient stays the gradient of the loss being
  minimised. As an estimate of the true ``p(x_i, x_j)`` it misses every dependence
  carried by paths through the active graph (exact only across components);
* ``"clamp"``: ``p(x_i) p(x_j | x_i)``, with ``p(x_j | x_i)`` from inference rerun with
  ``x_i`` clamped to each of its states (``k_i`` extra runs per distinct ``i``; exact
  with ``inference="exact"``, so exact gradients everywhere).

With ``inference="exact"`` and at most 2^17 joint states, the model is enumerated
instead: one pass gives log Z and *every* pairwise marginal exactly (no estimate).

The default is ``"clamp"`` with exact inference and ``"independent"`` with loopy BP;
``bench/mrf_structure.py --rank`` measures how well each ranks candidate edges against
exact marginals. Pseudo-likelihood needs no estimate: its gradient is exact for every
candidate edge.

>>> import numpy as np
>>> X = np.array([[0, 0, 1], [1, 1, 0], [1, 1, 1], [0, 0, 0], [0, 1, 0]])
>>> m = PairwiseMRFModel(X, inference="exact")
>>> m.n_params, m.layout.n_groups            # 3 nodes x 2 + 3 candidate edges x 4
(18, 6)
>>> loss, g = m.loss_grad(np.zeros(m.n_params))
>>> bool(np.isclose(loss, 5 * 3 * np.log(2)))
True
"""

from __future__ import annotations

import numpy as np

from ..errors import DataFormatError
from .graph import Graph, all_pairs, one_hot_states, validate_edges
from ..core.protocol import ParameterLayout
from .bp import loopy_bp

__all__ = ["PairwiseMRFModel", "adaptive_edge_weights", "check_discrete_data", "check_model_size",
           "coupling_strength", "edge_feature_tables"]

INFERENCE = ("loopy-bp", "exact")
OBJECTIVES = ("likelihood", "pseudo")
#: the most node and edge-table values a model may have (its weights, counts, beliefs and
#: gradients are each an array of this size): checked before anything is allocated
MAX_TABLE_VALUES = 1 << 24


def check_model_size(n_states, candidate_edges=None, source="X"):
    """Refuse (``DataFormatError``) a model whose node and edge tables would exceed
    :data:`MAX_TABLE_VALUES` values, before allocating them: ``sum_i k_i + sum over the
    candidate edges of k_i k_j`` (every pair when ``candidate_edges`` is None)."""
    ns = np.asarray(n_states, dtype=np.float64)
    if candidate_edges is None:
        total = ns.sum() + (ns.sum() ** 2 - (ns ** 2).sum()) / 2
    else:
        e = np.asarray(candidate_edges, dtype=np.int64).reshape(-1, 2)
        total = ns.sum() + float(np.sum(ns[e[:, 0]] * ns[e[:, 1]]))
    if total > MAX_TABLE_VALUES:
        big = int(np.argmax(ns))
        raise DataFormatError(source, None, f"the model would have {total:.4g} node and edge-table values "
                                            f"(variable {big} has {int(ns[big])} states), above the limit of "
                                            f"{MAX_TABLE_VALUES}; recode each variable's states to 0..k-1 of "
                                            f"those that occur, or give fewer candidate_edges")


def check_discrete_data(X, n_states=None, *, source="X", allow_missing=False, min_samples=2):
    """Validate a discrete data matrix; returns (X as int64 (N, n), n_states int64).

    Values must be integers ``0 .. n_states[j] - 1`` (``-1`` = unobserved, only with
    ``allow_missing``). Rejected with a :class:`DataFormatError` naming the first bad row
    (1-based) and column: non-integers, NaN, states out of range, fewer than
    ``min_samples`` rows, and (when ``n_states`` is inferred) a column with a single value.
    """
    try:
        A = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise DataFormatError(source, None, f"not a 2-d array of integers ({exc})") from None
    if A.ndim != 2:
        raise DataFormatError(source, None, f"expected a 2-d array (n_samples, n_variables), got {A.ndim}-d")
    if A.dtype == object or A.dtype.kind not in "iufb":
        raise DataFormatError(source, None, f"expected integer states, got dtype {A.dtype}")
    if A.shape[1] < 1:
        raise DataFormatError(source, None, "no variables (0 columns)")
    if A.dtype.kind == "f":
        bad = ~np.isfinite(A)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DataFormatError(source, int(r) + 1, f"column {int(c)}: {A[r, c]} is not a state "
                                                      f"(missing values are not allowed)"
                                  if not allow_missing else f"column {int(c)}: {A[r, c]}; mark "
                                                            f"unobserved values with -1")
        frac = A != np.round(A)
        if frac.any():
            r, c = np.argwhere(frac)[0]
            raise DataFormatError(source, int(r) + 1, f"column {int(c)}: {A[r, c]} is not an integer state")
    A = A.astype(np.int64)
    lowest = -1 if allow_missing else 0
    neg = A < lowest
    if neg.any():
        r, c = np.argwhere(neg)[0]
        what = "a negative state" if not allow_missing else "below -1 (-1 marks unobserved)"
        raise DataFormatError(source, int(r) + 1, f"column {int(c)}: {A[r, c]} is {what}"
                              + ("" if allow_missing or A[r, c] != -1 else "; missing values are not allowed"))
    if A.shape[0] < min_samples:
        raise DataFormatError(source, None, f"need at least {min_samples} samples, got {A.shape[0]}")
    if n_states is None:
        ns = A.max(axis=0) + 1
        over = np.flatnonzero(ns > max(A.shape[0], 2))
        if len(over):                      # before anything of that size is allocated
            c = int(over[0])
            r = int(np.argmax(A[:, c]))
            raise DataFormatError(source, r + 1, f"column {c}: state {A[r, c]} implies {ns[c]} states, more than "
                                                 f"the {A.shape[0]} samples (most could never occur); recode "
                                                 f"the states to 0..k-1 of those observed, or give n_states")
        low = A.min(axis=0)
        const = np.flatnonzero(ns - np.maximum(low, 0) <= 1) if A.shape[0] else []
        if len(const):
            c = int(const[0])
            raise DataFormatError(source, None, f"column {c} is constant (every sample has state "
                                                f"{int(A[0, c])}); give n_states or drop the column")
        ns = np.maximum(ns, 2)
    else:
        ns = np.asarray(n_states, dtype=np.int64).ravel()
        if ns.size == 1:
            ns = np.full(A.shape[1], int(ns[0]), dtype=np.int64)
        if ns.shape != (A.shape[1],):
            raise DataFormatError(source, None, f"n_states has {ns.size} entries, the data {A.shape[1]} columns")
        if np.any(ns < 2):
            raise DataFormatError(source, None, f"variable {int(np.flatnonzero(ns < 2)[0])} has fewer than 2 states")
        over = A >= ns[None, :]
        if over.any():
            r, c = np.argwhere(over)[0]
            raise DataFormatError(source, int(r) + 1, f"column {int(c)}: state {A[r, c]} is out of "
                                                      f"range 0..{ns[c] - 1}")
    return np.ascontiguousarray(A), ns.astype(np.int64)


def coupling_strength(table):
    """The Frobenius norm of the double-centred edge table ``t_ab - t_a. - t_.b + t_..``:
    the part of a log-potential table that couples its two variables (row and column
    shifts belong to the node biases)."""
    t = np.asarray(table, dtype=np.float64)
    return float(np.linalg.norm(t - t.mean(0, keepdims=True) - t.mean(1, keepdims=True) + t.mean()))


def adaptive_edge_weights(strength):
    """Per-edge penalty weights of the adaptive lasso (Zou 2006, gamma = 1): inversely
    proportional to each edge's strength in a first fit, normalised so that an edge of
    median strength keeps weight 1. Strong edges are penalised less, weak ones (the
    spurious edges a lasso admits along with the true ones) more."""
    s = np.asarray(strength, dtype=np.float64)
    if not np.all(s > 0):
        raise ValueError("adaptive weights need the strengths of active edges (all > 0)")
    return np.median(s) / s


def edge_feature_tables(n_states, edges, edge_ptr, kind):
    """The flat fixed tables of ``edge_features="ising"`` (spins for binary pairs, Potts
    agreement otherwise); ``None`` for ``"full"``."""
    if kind == "full":
        return None
    if kind != "ising":
        raise ValueError(f"edge_features must be 'full' or 'ising', got {kind!r}")
    out = np.zeros(int(edge_ptr[-1]))
    for e, (i, j) in enumerate(edges):
        ki, kj = int(n_states[i]), int(n_states[j])
        if ki == 2 and kj == 2:
            t = np.array([1.0, -1.0, -1.0, 1.0])
        else:
            t = (np.arange(ki)[:, None] == np.arange(kj)[None, :]).astype(float).ravel()
        out[edge_ptr[e]:edge_ptr[e + 1]] = t
    return out


class PairwiseMRFModel:
    """The loss of a pairwise MRF on fixed data (see the module docstring).

    Parameters: ``X`` (N, n) int states; ``n_states`` (inferred from X when None);
    ``candidate_edges`` (all pairs when None); ``edge_features``; ``objective``;
    ``inference``; ``sample_weight``; ``candidate_estimate`` (None: by inference);
    ``bp`` (dict of :func:`~spargel.mrf.bp.loopy_bp` options: schedule, damping,
    max_iter, tol); ``penalize_nodes``; ``max_table`` (exact inference limit).

    After each ``loss_grad`` call, :attr:`last_inference` holds what inference reported
    (sweeps, message change, convergence, active edges) and :attr:`bp_failures` counts
    the calls whose loopy BP did not converge.
    """

    def __init__(self, X, n_states=None, candidate_edges=None, *, edge_features="full",
                 objective="likelihood", inference="loopy-bp", sample_weight=None,
                 candidate_estimate=None, bp=None, penalize_nodes=False, max_table=2_000_000,
                 node_features=None, tie_features=False, validated=False):
        if not validated:
            X, n_states = check_discrete_data(X, n_states)
        check_model_size(n_states, candidate_edges)
        self.X = X
        self.n_states = np.asarray(n_states, dtype=np.int64)
        n = len(self.n_states)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        if inference not in INFERENCE:
            raise ValueError(f"inference must be one of {INFERENCE}, got {inference!r}")
        self.objective = objective
        self.inference = inference
        # the Bethe loss of warm-started loopy BP is not a function of w alone (protocol)
        self.approximate_loss = objective == "likelihood" and inference == "loopy-bp"
        edges = all_pairs(n) if candidate_edges is None else validate_edges(candidate_edges, n, "candidate_edges")
        self.graph = Graph(self.n_states, edges, validated=True)
        g = self.graph
        self.edge_features = edge_features
        self.feature_table = edge_feature_tables(self.n_states, g.edges, g.edge_ptr, edge_features)
        if candidate_estimate is None:
            candidate_estimate = "clamp" if inference == "exact" else "independent"
        if candidate_estimate not in ("independent", "clamp"):
            raise ValueError(f"candidate_estimate must be 'independent' or 'clamp', got {candidate_estimate!r}")
        self.candidate_estimate = candidate_estimate
        self.bp = {"schedule": "sequential", "damping": 0.0, "max_iter": 200, "tol": 1e-6}
        self.bp.update(bp or {})
        self.max_table = int(max_table)
        # exact inference on a small joint state space: enumeration gives every pair at once
        self._small = inference == "exact" and np.prod(self.n_states.astype(float)) <= (1 << 17)
        # exact inference with candidate edges that form a forest: one junction-tree pass
        # over every candidate (zero-weight edges included) is exact and cheaper than
        # clamping for each inactive edge
        self._whole_forest = inference == "exact" and not self._small and self.graph.is_forest()
        N = X.shape[0]
        if sample_weight is None:
            sw = np.ones(N)
        else:
            sw = np.asarray(sample_weight, dtype=np.float64).ravel()
            if sw.shape != (N,) or not np.all(np.isfinite(sw)) or np.any(sw < 0):
                raise ValueError(f"sample_weight must be {N} finite values >= 0")
            if sw.sum() <= 0:
                raise ValueError("sample_weight sums to zero")
        self.sample_weight = sw
        self.n_samples = N
        self.total_weight = float(sw.sum())
        # parameter layout: node groups, one group per candidate edge, then (conditional
        # model) the node-feature weights: one group per variable, or one tied group
        self.n_node_params = g.n_node_values
        edge_sizes = np.ones(g.n_edges, np.int64) if self.feature_table is not None else np.diff(g.edge_ptr)
        self.edge_param_ptr = self.n_node_params + np.concatenate([[0], np.cumsum(edge_sizes)]).astype(np.int64)
        self.F = None if node_features is None else check_node_features(node_features, N, n)
        self.tie_features = bool(tie_features)
        d = 0 if self.F is None else self.F.shape[2]
        if self.F is not None and self.tie_features and np.any(self.n_states != self.n_states[0]):
            raise ValueError("tie_features needs the same number of states for every variable")
        feat_sizes = ([] if self.F is None else
                      [int(self.n_states[0]) * d] if self.tie_features else list(self.n_states * d))
        self.feat_ptr = int(self.edge_param_ptr[-1]) + np.concatenate([[0], np.cumsum(feat_sizes)]).astype(np.int64)
        self.n_params = int(self.feat_ptr[-1])
        scale = np.ones(self.n_params)
        if not penalize_nodes:
            scale[:self.n_node_params] = 0.0
        ptr = np.concatenate([g.node_ptr, self.edge_param_ptr[1:], self.feat_ptr[1:]])
        names = [f"node {i}" for i in range(n)] + [f"edge {i}-{j}" for i, j in g.edges] + \
            (["features"] if self.tie_features else [f"features {i}" for i in range(len(feat_sizes))])
        self.layout = ParameterLayout(self.n_params, ptr, scale, names[:len(ptr) - 1])
        # sufficient statistics
        from .pl_kernels import pair_counts
        self.node_counts = np.zeros(g.n_node_values)
        for i in range(n):
            self.node_counts[g.node_ptr[i]:g.node_ptr[i + 1]] = np.bincount(X[:, i], sw, self.n_states[i])
        self.edge_counts = np.empty(g.n_edge_values)
        if objective == "likelihood":
            pair_counts(X, sw, g.edges, g.edge_ptr, self.n_states, self.edge_counts)
        self._messages = None
        self._sample_messages = {}        # conditional model: warm-start messages per sample
        self._onehot = None
        self._dense = False              # pseudo-likelihood BLAS arrays, built on first use
        self._active_key = None
        self._active_graph = None
        self.last_inference = {}
        self.bp_failures = 0
        self.n_inference_calls = 0

    # -- weights <-> log-potentials -------------------------------------------------------
    def potentials(self, w):
        """(node_theta, edge_theta) flat log-potentials of the weights ``w``."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.n_params,):
            raise ValueError(f"weights have shape {w.shape}, the model has {self.n_params} parameters")
        node = w[:self.n_node_params]
        ew = w[self.n_node_params:self.edge_param_ptr[-1]]
        if self.feature_table is None:
            return node, ew
        return node, np.repeat(ew, np.diff(self.graph.edge_ptr)) * self.feature_table

    def _edge_grad(self, g_table):
        """Map a gradient over the flat edge tables to the edge weights."""
        if self.feature_table is None:
            return g_table
        return np.add.reduceat(g_table * self.feature_table, self.graph.edge_ptr[:-1]) \
            if self.graph.n_edges else np.zeros(0)

    def weights_from_potentials(self, node_theta, edge_theta):
        """Inverse of :meth:`potentials` for ``edge_features="full"``."""
        if self.feature_table is not None:
            raise ValueError("only full edge tables map back from potentials")
        return np.concatenate([node_theta, edge_theta])

    def active_edges(self, w):
        """Ids of the candidate edges with a non-zero weight."""
        ew = np.asarray(w)[self.n_node_params:self.edge_param_ptr[-1]]
        if not len(ew):
            return np.zeros(0, np.int64)
        nz = np.add.reduceat(np.abs(ew), self.edge_param_ptr[:-1] - self.n_node_params) > 0
        return np.flatnonzero(nz).astype(np.int64)

    def edge_strength(self, w):
        """Per candidate edge, the coupling strength of its table at ``w``
        (:func:`coupling_strength`; 0 for an inactive edge)."""
        _, et = self.potentials(w)
        g, ns = self.graph, self.n_states
        return np.array([coupling_strength(et[g.edge_ptr[e]:g.edge_ptr[e + 1]].reshape(ns[i], ns[j]))
                         for e, (i, j) in enumerate(g.edges)])

    def subset_weights(self, w, edges):
        """The weights ``w`` restricted to the candidate edges ``edges`` (ids, sorted): the
        weight vector of the same model built with only those candidates."""
        w = np.asarray(w, dtype=np.float64)
        ptr = self.edge_param_ptr
        parts = [w[:self.n_node_params]] + [w[ptr[e]:ptr[e + 1]] for e in edges] + [w[self.feat_ptr[0]:]]
        return np.concatenate(parts)

    def active_graph(self, active):
        key = active.tobytes()
        if key != self._active_key:
            self._active_graph = self.graph.with_active(active)
            self._active_key = key
        return self._active_graph

    # -- the conditional model: node potentials from per-sample features ------------------
    def feature_weights(self, w):
        """The node-feature weights: a list of (k_i, d) arrays, or one (k, d) array when tied."""
        d = self.F.shape[2]
        fw = np.asarray(w)[self.feat_ptr[0]:]
        if self.tie_features:
            return fw.reshape(int(self.n_states[0]), d)
        return [fw[self.feat_ptr[i] - self.feat_ptr[0]:self.feat_ptr[i + 1] - self.feat_ptr[0]].reshape(k, d)
                for i, k in enumerate(self.n_states)]

    def sample_node_theta(self, w, F=None):
        """(N, K) node log-potentials of every sample: biases + features x weights."""
        F = self.F if F is None else F
        return node_theta_rows(np.asarray(w)[:self.n_node_params], self.feature_weights(w), F,
                               self.graph.node_ptr, self.tie_features)

    def _feature_grad(self, G):
        """Gradient of the feature weights from per-sample node-potential gradients G (N, K)."""
        g = self.graph
        if self.tie_features:
            N, n, k = G.shape[0], g.n_nodes, int(self.n_states[0])
            return np.einsum("rik,rid->kd", G.reshape(N, n, k), self.F).ravel()
        return np.concatenate([(G[:, g.node_ptr[i]:g.node_ptr[i + 1]].T @ self.F[:, i, :]).ravel()
                               for i in range(g.n_nodes)])

    def _onehot_rows(self):
        if self._onehot is None:
            self._onehot = one_hot_states(self.X, self.graph.node_ptr)
        return self._onehot

    def _conditional_loss_grad(self, w, need_grad):
        """Sum over samples of -log p(x^n | features^n): one inference per sample."""
        _, edge_theta = self.potentials(w)
        NT = self.sample_node_theta(w)
        O = self._onehot_rows()
        sw = self.sample_weight
        G = np.zeros_like(NT)
        edge_acc = np.zeros(self.graph.n_edge_values)
        total_log_z = 0.0
        pairs_for = None if need_grad else np.zeros(0, np.int64)
        for r in range(len(NT)):
            if sw[r] == 0.0:
                continue
            log_z, node_b, edge_b = self.infer(w, pairs_for=pairs_for, node_theta=NT[r], slot=r)
            total_log_z += sw[r] * log_z
            G[r] = sw[r] * node_b
            edge_acc += sw[r] * edge_b
        loss = total_log_z - float(np.sum(sw * np.einsum("rk,rk->r", NT, O))) - float(edge_theta @ self.edge_counts)
        if not need_grad:
            return loss, None
        G -= sw[:, None] * O
        grad = np.concatenate([G.sum(axis=0), self._edge_grad(edge_acc - self.edge_counts), self._feature_grad(G)])
        return loss, grad

    # -- inference ------------------------------------------------------------------------
    def infer(self, w, *, pairs_for=None, evidence=None, warm=True, node_theta=None, slot=None):
        """Inference on the active graph at ``w``: returns (log_z, node_beliefs,
        edge_beliefs) with edge beliefs for active edges and, estimated, for the edges in
        ``pairs_for`` (None: every inactive candidate). ``node_theta`` overrides the node
        log-potentials (one sample of the conditional model; ``slot`` names the sample
        whose messages warm-start loopy BP)."""
        node_bias, edge_theta = self.potentials(w)
        node_theta = node_bias if node_theta is None else node_theta
        active = np.arange(self.graph.n_edges) if self._whole_forest else self.active_edges(w)
        graph = self.active_graph(active)
        if pairs_for is None:
            mask = np.ones(self.graph.n_edges, bool)
            mask[active] = False
            pairs_for = np.flatnonzero(mask)
        self.n_inference_calls += 1
        if self.inference == "exact" and self._small:
            from .exact import enumerate_moments
            log_z, node_b, M = enumerate_moments(graph, node_theta, edge_theta)
            rows, cols = self._edge_index()
            self.last_inference = {"method": "exact", "treewidth": None, "active_edges": len(active)}
            return log_z, node_b, M[rows, cols]
        if self.inference == "exact":
            from .exact import junction_tree
            res = junction_tree(graph, node_theta, edge_theta, max_table=self.max_table, evidence=evidence)
            log_z, node_b, edge_b = res.log_z, res.node_beliefs, res.edge_beliefs
            self.last_inference = {"method": "exact", "treewidth": res.treewidth, "active_edges": len(active)}
            marg = (lambda ev: junction_tree(graph, node_theta, edge_theta, max_table=self.max_table,
                                             evidence=ev).node_beliefs)
        else:
            res = self._bp(graph, node_theta, edge_theta, evidence, warm, slot=slot)
            log_z, node_b, edge_b = res.log_z, res.node_beliefs, res.edge_beliefs

            def marg(ev):                 # warm-started from the unclamped messages
                return self._bp(graph, node_theta, edge_theta, ev, True, record=False, slot=slot).node_beliefs
        if len(pairs_for):
            pairs = self.graph.edges[pairs_for]
            sizes = np.diff(self.graph.edge_ptr)[pairs_for]
            if self.candidate_estimate == "clamp" and self.inference == "exact" and res.treewidth <= 1:
                from .tree import forest_pairs       # a forest: p(x_j | x_i) along the path
                vals = forest_pairs(graph, node_b, edge_b, pairs)
            elif self.candidate_estimate == "clamp":
                from .exact import pair_marginals_by_clamping
                vals = pair_marginals_by_clamping(graph, marg, pairs, node_b)
            else:
                vals = _outer_products(node_b, graph.node_ptr, self.n_states, pairs)
            starts = self.graph.edge_ptr[pairs_for]
            idx = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(sizes.sum())
            edge_b[idx] = vals
        return log_z, node_b, edge_b

    def _bp(self, graph, node_theta, edge_theta, evidence, warm, record=True, slot=None):
        if evidence:
            node_theta = node_theta.copy()
            for i, a in evidence.items():
                lo, hi = graph.node_ptr[i], graph.node_ptr[i + 1]
                keep = node_theta[lo + a]
                node_theta[lo:hi] = -1e300
                node_theta[lo + a] = keep
        start = self._messages if slot is None else self._sample_messages.get(slot)
        res = loopy_bp(graph, node_theta, edge_theta, messages=start if warm else None, warn=False, **self.bp)
        if record:
            if slot is None:
                self._messages = res.messages
            else:
                self._sample_messages[slot] = res.messages
            self.last_inference = {"method": "loopy-bp", "sweeps": res.n_iter, "max_change": res.max_change,
                                   "converged": res.converged, "active_edges": len(graph.active)}
            if not res.converged:
                self.bp_failures += 1
        return res

    # -- the protocol ---------------------------------------------------------------------
    def loss(self, w):
        return self.loss_grad(w, need_grad=False)[0]

    def loss_grad(self, w, need_grad=True):
        """(loss, gradient) at ``w``; the gradient covers every candidate edge (inactive
        ones by the ``candidate_estimate``)."""
        node_theta, edge_theta = self.potentials(w)
        if self.objective == "pseudo":
            return self._pl_loss_grad(w, node_theta, edge_theta)
        if self.F is not None:
            return self._conditional_loss_grad(w, need_grad)
        pairs_for = None if need_grad else np.zeros(0, np.int64)
        log_z, node_b, edge_b = self.infer(w, pairs_for=pairs_for)
        Nw = self.total_weight
        loss = Nw * log_z - float(node_theta @ self.node_counts) - float(edge_theta @ self.edge_counts)
        if not need_grad:
            return loss, None
        g = np.empty(self.n_params)
        g[:self.n_node_params] = Nw * node_b - self.node_counts
        g[self.n_node_params:] = self._edge_grad(Nw * edge_b - self.edge_counts)
        return loss, g

    def _pl_dense_setup(self):
        """Arrays of the dense pseudo-likelihood (BLAS) path, or None when it does not pay.

        The data enter as one-hot columns *without* each variable's state 0 (that column is
        one minus the others): ``O1`` (N x (K - n)), its columns' state ids ``nz`` (in
        0..K-1) and the state-0 id of their variable ``ref``; plus, for every flat
        edge-table entry, its row and column in the symmetric K x K matrix of edge
        log-potentials. Dropping the reference columns halves the products for binary data.
        """
        g = self.graph
        K = g.n_node_values
        N = self.X.shape[0]
        dense_enough = g.n_edges >= 0.25 * g.n_nodes * (g.n_nodes - 1) / 2
        if not dense_enough or K > 4096 or N * K > 60_000_000:
            return None
        ref_of = np.repeat(g.node_ptr[:-1], self.n_states)            # state id -> its variable's state 0
        nz = np.flatnonzero(np.arange(K) != ref_of)
        O = self._onehot_rows()
        return (np.ascontiguousarray(O[:, nz]), nz, ref_of[nz], O, *self._edge_index())

    def _edge_index(self):
        """For every flat edge-table entry ``(e, a, b)``: its row ``(i, a)`` and column
        ``(j, b)`` in a K x K matrix over all variables' states."""
        g = self.graph
        sizes = np.diff(g.edge_ptr)
        local = np.arange(g.n_edge_values) - np.repeat(g.edge_ptr[:-1], sizes)
        kj = np.repeat(self.n_states[g.edges[:, 1]], sizes)
        rows = np.repeat(g.node_ptr[g.edges[:, 0]], sizes) + local // kj
        cols = np.repeat(g.node_ptr[g.edges[:, 1]], sizes) + local % kj
        return rows, cols

    def _pl_dense(self, node_theta, edge_theta):
        """Pseudo-likelihood by two matrix products: logits = O Theta + theta_nodes, and
        the edge gradient from R^T O, R the weighted residuals (softmax - one-hot); both
        with the reference-free one-hot ``O1`` (see :meth:`_pl_dense_setup`)."""
        O1, nz, ref, O, rows, cols = self._dense
        g = self.graph
        K = g.n_node_values
        T = np.zeros((K, K))
        T[rows, cols] = edge_theta
        T[cols, rows] = edge_theta
        # O T = sum_j T[(j, 0)] + O1 (T[(j, b)] - T[(j, 0)])
        Z = O1 @ (T[nz] - T[ref])
        Z += T[g.node_ptr[:-1]].sum(axis=0) + node_theta
        starts = g.node_ptr[:-1]
        ns = self.n_states
        m = np.maximum.reduceat(Z, starts, axis=1)
        Z -= np.repeat(m, ns, axis=1)
        obs = np.add.reduceat(Z * O, starts, axis=1)        # observed state's shifted logit
        np.exp(Z, out=Z)
        s = np.add.reduceat(Z, starts, axis=1)
        sw = self.sample_weight
        loss = -float(sw @ (obs - np.log(s)).sum(axis=1))
        Z /= np.repeat(s, ns, axis=1)
        Z -= O
        Z *= sw[:, None]
        g_node = Z.sum(axis=0)
        # R^T O: the state-0 column of variable j is sum(R) minus its other columns
        GE = np.empty((K, K))
        part = Z.T @ O1
        GE[:, nz] = part
        GE[:, starts] = g_node[:, None]
        np.subtract.at(GE.T, ref, part.T)
        g_edge = GE[rows, cols] + GE[cols, rows]
        return loss, g_node, g_edge, Z

    def _pl_loss_grad(self, w, node_theta, edge_theta):
        from numba import get_num_threads

        from .pl_kernels import pl_loss_grad

        if self.F is not None:
            node_theta = self.sample_node_theta(w)
        if self._dense is False:
            self._dense = self._pl_dense_setup()
        if self._dense is not None:
            loss, g_node, g_edge, R = self._pl_dense(node_theta, edge_theta)
        else:
            live = np.zeros(self.graph.n_edges, np.bool_)
            live[self.active_edges(w)] = True
            g_node = np.empty(self.graph.n_node_values)
            g_edge = np.empty(self.graph.n_edge_values)
            R = np.zeros((self.X.shape[0] if self.F is not None else 0, self.graph.n_node_values))
            loss = pl_loss_grad(self.X, self.sample_weight, self.graph.arrays(), live,
                                np.ascontiguousarray(np.atleast_2d(node_theta)), np.ascontiguousarray(edge_theta),
                                g_node, g_edge, R, get_num_threads())
        parts = [g_node, self._edge_grad(g_edge)]
        if self.F is not None:
            parts.append(self._feature_grad(R))
        return float(loss), np.concatenate(parts)

    def initial_weights(self):
        """Node biases at the log of the (smoothed) marginal frequencies, edges at zero:
        the optimum of the empty graph, a good start for structure learning."""
        w = np.zeros(self.n_params)
        g = self.graph
        for i in range(g.n_nodes):
            c = self.node_counts[g.node_ptr[i]:g.node_ptr[i + 1]] + 0.5
            w[g.node_ptr[i]:g.node_ptr[i + 1]] = np.log(c / c.sum())
        return w

    # -- the "grafting" capability --------------------------------------------------------
    def _param_edges(self, index):
        """The candidate edge of every edge weight in ``index`` (-1 for other weights)."""
        index = np.asarray(index, dtype=np.int64)
        e = np.searchsorted(self.edge_param_ptr, index, side="right") - 1
        e[(index < self.n_node_params) | (index >= self.edge_param_ptr[-1])] = -1
        return e

    def _edges_of(self, index):
        """The candidate edges that own weights in ``index``, sorted, each once."""
        e = self._param_edges(index)
        mark = np.zeros(self.graph.n_edges, bool)
        mark[e[e >= 0]] = True
        return np.flatnonzero(mark)

    def _subset_grad(self, index, node_b, edge_b, have_pair):
        """Loss gradient of the node and edge weights ``index`` from beliefs: an edge's
        pair marginals are ``edge_b``'s where ``have_pair`` marks it, the product of its
        node beliefs elsewhere."""
        from .grad_kernels import subset_gradient
        index = np.ascontiguousarray(index, dtype=np.int64)
        g = np.empty(len(index))
        table = self.feature_table if self.feature_table is not None else np.zeros(0)
        subset_gradient(index, self.graph.arrays(), self.n_node_params, self.edge_param_ptr, node_b, edge_b,
                        have_pair, float(self.total_weight), self.node_counts, self.edge_counts, table, g)
        return g

    def _estimates_pairs(self):
        """True when inactive edges' pair marginals are the product of node beliefs
        (computed by :meth:`_subset_grad` itself)."""
        return self.candidate_estimate == "independent" and not (self.inference == "exact" and self._small)

    def loss_grad_subset(self, w, index):
        """Loss at ``w`` and the gradient of the weights ``index`` only: inference on the
        active graph, pair marginals estimated (``candidate_estimate``) only for the
        inactive edges among ``index``. The node beliefs stay for :meth:`candidate_grad`.
        (The pseudo-likelihood and the conditional model compute every gradient.)

        >>> X = np.array([[0, 0, 1], [1, 1, 0], [1, 1, 1], [0, 0, 0], [0, 1, 0]])
        >>> m = PairwiseMRFModel(X, inference="exact")
        >>> w = m.initial_weights()
        >>> loss, g = m.loss_grad_subset(w, np.array([1, 6, 9]))
        >>> bool(np.allclose(g, m.loss_grad(w)[1][[1, 6, 9]]))
        True
        """
        index = np.asarray(index, dtype=np.int64)
        if self.objective == "pseudo" or self.F is not None:
            loss, g = self.loss_grad(w)
            self._grafting = ("all", g)
            return loss, g[index]
        w = np.asarray(w, dtype=np.float64)
        node_theta, edge_theta = self.potentials(w)
        live = np.zeros(self.graph.n_edges, bool)
        live[self.active_edges(w)] = True
        if self._estimates_pairs():
            todo, have = np.zeros(0, np.int64), live
        else:
            edges = self._edges_of(index)
            todo, have = edges[~live[edges]], np.ones(self.graph.n_edges, bool)
        log_z, node_b, edge_b = self.infer(w, pairs_for=todo)
        loss = self.total_weight * log_z - float(node_theta @ self.node_counts) - float(edge_theta @ self.edge_counts)
        self._grafting = ("beliefs", w.copy(), node_b, edge_b, live)
        return float(loss), self._subset_grad(index, node_b, edge_b, have)

    def candidate_grad(self, index):
        """Loss gradient of the weights ``index`` at the point of the last
        :meth:`loss_grad_subset` call. The inactive edges' pair marginals are estimated
        from its node beliefs (``"independent"``) or by inference clamped on the active
        graph (``"clamp"``, which reruns it); enumeration had them all."""
        index = np.asarray(index, dtype=np.int64)
        if self._grafting[0] == "all":
            return self._grafting[1][index]
        _, w, node_b, edge_b, live = self._grafting
        if self._estimates_pairs():
            return self._subset_grad(index, node_b, edge_b, live)
        # "clamp" (enumeration, the other case left, had every pair already)
        edges = self._edges_of(index)
        todo = edges[~live[edges]]
        if len(todo) and not (self.inference == "exact" and self._small):
            g = self.graph
            sizes = np.diff(g.edge_ptr)[todo]
            t = np.repeat(g.edge_ptr[todo], sizes) + (np.arange(sizes.sum())
                                                      - np.repeat(np.cumsum(sizes) - sizes, sizes))
            edge_b = edge_b.copy()
            edge_b[t] = self.infer(w, pairs_for=todo)[2][t]
        return self._subset_grad(index, node_b, edge_b, np.ones(self.graph.n_edges, bool))

    # -- the "bound" capability (Jebara & Choromanska; see spargel.mrf.bound) -------
    def bound(self, w, **options):
        """Quadratic upper bound on the likelihood loss around ``w`` when the candidate
        edges form a forest (the junction-tree bound, dense curvature); otherwise a
        :class:`~spargel.errors.CapabilityError` saying why."""
        from .bound import tree_bound
        if options.get("curvature", "auto") not in ("auto", "tree"):
            raise ValueError(f"a pairwise MRF's bound has one curvature ('tree'), got {options['curvature']!r}")
        return tree_bound(self, w)


def check_node_features(F, n_samples, n_nodes, source="node_features"):
    """Validate per-sample node features: (N, n, d) floats, or (N, d) shared by every
    variable; returns a float64 (N, n, d) array."""
    try:
        A = np.asarray(F, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(source, None, f"not a numeric array ({exc})") from None
    if A.ndim == 2:
        A = np.repeat(A[:, None, :], n_nodes, axis=1)
    if A.ndim != 3 or A.shape[:2] != (n_samples, n_nodes) or A.shape[2] < 1:
        raise DataFormatError(source, None, f"expected shape ({n_samples}, {n_nodes}, d) or ({n_samples}, d), "
                                            f"got {np.shape(F)}")
    bad = ~np.isfinite(A)
    if bad.any():
        r, i, f = np.argwhere(bad)[0]
        raise DataFormatError(source, int(r) + 1, f"variable {int(i)}, feature {int(f)}: {A[r, i, f]} is not finite")
    return np.ascontiguousarray(A)


def node_theta_rows(bias, feature_weights, F, node_ptr, tied):
    """(N, K) node log-potentials ``bias + features x weights`` of every row of F."""
    N, n, _ = F.shape
    if tied:
        k = feature_weights.shape[0]
        return bias[None, :] + np.einsum("rid,kd->rik", F, feature_weights).reshape(N, n * k)
    out = np.repeat(bias[None, :], N, axis=0)
    for i in range(n):
        out[:, node_ptr[i]:node_ptr[i + 1]] += F[:, i, :] @ feature_weights[i].T
    return out


def _outer_products(node_b, node_ptr, n_states, pairs):
    """Flat row-major tables ``b_i (x) b_j`` of every pair (vectorised)."""
    ki = n_states[pairs[:, 0]]
    kj = n_states[pairs[:, 1]]
    sizes = ki * kj
    local = np.arange(int(sizes.sum())) - np.repeat(np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    kj_r = np.repeat(kj, sizes)
    a = np.repeat(node_ptr[pairs[:, 0]], sizes) + local // kj_r
    b = np.repeat(node_ptr[pairs[:, 1]], sizes) + local % kj_r
    return node_b[a] * node_b[b]
