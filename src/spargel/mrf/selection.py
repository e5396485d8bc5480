"""Choosing a :class:`~spargel.mrf.estimator.PairwiseMRF`'s ``l1`` from the data:
:class:`PairwiseMRFSelect` (EBIC, StARS or cross-validated pseudo-likelihood), the
shape of :class:`~spargel.gaussian.selection.SparseGaussianMRFSelect`.

The path is ``n_l1s`` values from ``l1_max``, the smallest ``l1`` whose fit is the
empty graph (the largest edge gradient at the empty graph's optimum: its absolute value
with ``penalty="l1"``, its norm per edge with ``"group"``), geometrically down to
``l1_min_ratio * l1_max``; the fits are warm-started from large to small ``l1`` on one
model (the first stage's weights carry on; with ``adaptive`` each point adds its own
second stage).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 2, (400, 4))
>>> X[:, 1] = np.where(rng.random(400) < 0.9, X[:, 0], 1 - X[:, 0])   # 0 -- 1
>>> X[:, 3] = np.where(rng.random(400) < 0.8, X[:, 2], 1 - X[:, 2])   # 2 -- 3
>>> sel = PairwiseMRFSelect("ebic").fit(X)
>>> sel.edges_.tolist(), sel.criterion_likelihood_
([[0, 1], [2, 3]], 'exact')
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ..core.interrupts import all_or_nothing
from ..core.params import ParamsMixin, check_number, keep_arguments
from ..errors import NotFittedError, ParameterError
from .common import Cancelled, ExportsSelectedModel, map_threads, thread_count
from ..core.selection import default_subsample_size, stars_choice, stars_variability
from .plot import plot_edge_stability

__all__ = ["PairwiseMRFSelect", "empty_graph_weights", "l1_max"]

CRITERIA = ("ebic", "stars", "cv")


def empty_graph_weights(model):
    """The weights of the empty graph's optimum: node biases at the log of the observed
    frequencies (a state never seen at ``log(0.5 / N)``), every edge weight 0."""
    w = np.zeros(model.n_params)
    g = model.graph
    for i in range(g.n_nodes):
        c = model.node_counts[g.node_ptr[i]:g.node_ptr[i + 1]]
        c = np.where(c > 0, c, 0.5)
        w[g.node_ptr[i]:g.node_ptr[i + 1]] = np.log(c / c.sum())
    return w


def l1_max(model, penalty="l1"):
    """``(l1_max, w0)``: the smallest ``l1`` at which the empty graph is optimal (the
    largest edge gradient at its optimum ``w0``: in absolute value for ``'l1'``, the
    norm of an edge's gradient for ``'group'``) and ``w0``."""
    w0 = empty_graph_weights(model)
    _, g = model.loss_grad(w0)
    ptr = model.edge_param_ptr
    ge = g[ptr[0]:ptr[-1]]
    if not ge.size:
        return 0.0, w0
    if penalty == "group":
        norms = np.sqrt(np.add.reduceat(ge * ge, ptr[:-1] - ptr[0]))
        return float(norms.max()), w0
    return float(np.abs(ge).max()), w0


def edge_dof(n_states, edges, edge_features):
    """Parameters per edge as the layout counts them: one with ``'ising'`` features, the
    ``(k_i - 1)(k_j - 1)`` free interaction weights of a full ``k_i x k_j`` table (its
    other directions are node shifts) with ``'full'``."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edge_features == "ising":
        return np.ones(len(edges))
    ns = np.asarray(n_states)
    return ((ns[edges[:, 0]] - 1) * (ns[edges[:, 1]] - 1)).astype(np.float64)


class PairwiseMRFSelect(ExportsSelectedModel, ParamsMixin):
    """A :class:`~spargel.mrf.estimator.PairwiseMRF` with ``l1`` chosen on a path by
    EBIC, StARS or cross-validated pseudo-likelihood.

    Parameters
    ----------
    criterion : 'ebic' (default), 'stars' or 'cv'.

        * ``'ebic'`` (Foygel & Drton 2010): ``2 loss + df log N + 4 gamma |E| log p``,
          smallest on the path, where ``loss`` is the fit's unpenalised training loss --
          the exact negative log-likelihood when the fit ran exact inference, the
          negative pseudo-log-likelihood when it ran the pseudo-likelihood, the Bethe
          one with loopy BP (:attr:`criterion_likelihood_` says which) -- ``df`` the
          edges' parameters as the layout counts them (one per edge with
          ``edge_features='ising'``; ``(k_i - 1)(k_j - 1)`` per ``'full'`` table, one for
          two binary variables), ``|E|`` the edges, ``p`` the variables;
        * ``'stars'`` (Liu, Roeder & Wasserman 2010): ``n_subsamples`` subsamples of
          ``subsample_size`` rows (default ``10 sqrt(N)`` when ``N > 144``, else
          ``0.8 N``), each fitted down the path at ``l1 * size / N`` (the objective is a
          sum over samples); descending stops at the first ``l1`` whose instability
          ``4 mean_{i<j} f (1 - f)`` (``f``: the fraction of subsamples with the edge)
          reaches ``stars_threshold``, and the ``l1`` before it is chosen;
        * ``'cv'``: ``cv`` folds; each fold's path (``l1 * n_train / N``) is scored by the
          held-out negative pseudo-log-likelihood per sample, and the ``l1`` of the
          smallest mean is chosen.
    estimator : None or a :class:`PairwiseMRF` whose parameters (all but ``l1``) the
        fits use; default ``PairwiseMRF(adaptive=False)``: the one-stage lasso (its
        ``adaptive`` parameter, ``True`` or ``'auto'`` -- every point has ``l1 > 0`` --
        adds the second stage at every path point).
    refit : EBIC only: score each point by its edges refitted without penalty (default
        True; the lasso's shrinkage otherwise favours the end of the path).
    n_l1s : path length (default 20); l1s : or the path itself (values > 0).
    l1_min_ratio : end of the default path as a fraction of ``l1_max`` (default 0.05).
    gamma : EBIC's gamma (default 0.5).
    stars_threshold : StARS's instability threshold (default 0.1, as R's huge).
    n_subsamples, subsample_size, subsamples : StARS's subsamples (or the row index sets).
    cv : folds of ``'cv'`` (default 5).
    n_jobs : threads over subsamples / folds (same result for any value).
    random_state : seed of the subsamples and folds.
    verbose : one line per path point on stderr.

    Attributes
    ----------
    l1s_ : the path (for StARS, down to the first ``l1`` whose instability reached the
        threshold); l1_max_ : its start; l1_ : the chosen ``l1``.
    edges_path_ : edges per path point (fitted on all data); dof_path_ : their
        parameters (EBIC's df); loss_path_ : the unpenalised training loss per point (EBIC with
        ``refit``: of the point's edges refitted without penalty).
    criterion_scores_ : per point, EBIC, StARS's instability or the mean held-out
        negative pseudo-log-likelihood per sample.
    criterion_likelihood_ : 'exact', 'pseudo-likelihood' or 'bethe': what the loss is.
    edge_frequency_ : StARS only, (p, p) fraction of subsamples with each edge at ``l1_``.
    cv_scores_ : CV only, (folds, points) held-out scores.
    edges_ : the selected model's edges; best_estimator_ : that model, a fitted
        :class:`PairwiseMRF` with ``l1 = l1_`` (its path fit, not a refit).

    Examples
    --------
    See the module documentation; ``docs/mrf.md`` ("Choosing l1").
    """

    _selected_model = "best_estimator_"

    def __init__(self, criterion="ebic", *, estimator=None, n_l1s=20, l1s=None, l1_min_ratio=0.05,
                 gamma=0.5, stars_threshold=0.1, n_subsamples=20, subsample_size=None, subsamples=None,
                 cv=5, refit=True, n_jobs=1, random_state=None, verbose=False):
        keep_arguments(self, locals())

    # -- checks ---------------------------------------------------------------------------
    def _template(self):
        from .estimator import PairwiseMRF
        if self.estimator is None:
            return PairwiseMRF(adaptive=False)
        if not isinstance(self.estimator, PairwiseMRF):
            raise ParameterError(f"estimator must be a PairwiseMRF, got {type(self.estimator).__name__}")
        return self.estimator

    def _check_params(self):
        if not isinstance(self.criterion, str) or self.criterion not in CRITERIA:
            raise ParameterError(f"criterion must be one of {', '.join(map(repr, CRITERIA))}, got {self.criterion!r}")
        check_number("gamma", self.gamma)
        check_number("stars_threshold", self.stars_threshold)
        check_number("n_l1s", self.n_l1s, low=1, integer=True)
        check_number("l1_min_ratio", self.l1_min_ratio)
        if not 0 < self.l1_min_ratio < 1:
            raise ParameterError(f"l1_min_ratio must be in (0, 1), got {self.l1_min_ratio!r}")
        check_number("n_subsamples", self.n_subsamples, low=1, integer=True)
        check_number("subsample_size", self.subsample_size, low=3, integer=True, allow_none=True)
        check_number("cv", self.cv, low=2, integer=True)
        check_number("n_jobs", self.n_jobs, low=-1, integer=True, allow_none=True)
        for name in ("refit", "verbose"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.l1s is not None:
            check_number("l1s", self.l1s, allow_array=True)
            a = np.asarray(self.l1s, dtype=float).ravel()
            if a.size == 0 or np.any(a <= 0):
                raise ParameterError(f"l1s must be a non-empty list of values > 0, got {self.l1s!r}")

    def _workers(self, n_tasks):
        return thread_count(self.n_jobs, n_tasks)

    # -- the path -------------------------------------------------------------------------
    def _walk(self, est, prep, l1s, rows=None, scale=1.0, adaptive=False, on_point=None, cancel=None):
        """Fits down ``l1s`` (times ``scale``) on the rows ``rows`` of the prepared data,
        warm-started; ``on_point(k, stage)`` after each, which may return True to stop.
        Returns the stages; Ctrl-C raises (:func:`_check_stage`)."""
        from .estimator import numba_threads
        p = prep if rows is None else prep.on_rows(rows)
        stages = []
        with numba_threads(1 if rows is not None and self._workers(2) > 1 else est.n_jobs):
            model = p.make_model(est.candidate_edges, rows)
            w = empty_graph_weights(model)
            for k, l1 in enumerate(l1s):
                stage = _check_stage(p.solve(model, w, float(l1) * scale, adaptive, cancel), cancel)
                w = stage.first.w
                stages.append(stage)
                if on_point is not None and on_point(k, stage):
                    break
        return stages

    def _refit_loss(self, est, prep, stage):
        """The unpenalised loss refitted on the stage's edges (warm-started from it)."""
        m = stage.model
        active = m.active_edges(stage.w)
        if len(active) == len(m.graph.edges):
            sub, w = m, stage.w
        else:
            sub = prep.make_model(m.graph.edges[active])
            w = m.subset_weights(stage.w, active)
        res = prep.minimize(sub, prep.penalty(sub, 0.0), w, max_iter=prep.max_iter, tol=float(est.tol),
                            gtol=1e-8, window=5)
        if res.stop_reason == "interrupted":
            raise KeyboardInterrupt
        return float(sub.loss(res.w))

    def _map(self, fn, tasks, cancel):
        return map_threads(fn, tasks, self.n_jobs, cancel)

    @all_or_nothing
    def fit(self, X, y=None, sample_weight=None):
        """Fit the path on X (n_samples, n_variables) of states, choose ``l1`` by the
        criterion and keep that point's model.

        Ctrl-C (``KeyboardInterrupt``) stops the fits -- the running solvers at their next
        iteration, the queued subsamples and folds cancelled -- and propagates; the
        selector keeps nothing of the interrupted fit (an earlier fit's attributes stay)."""
        import threading

        from .estimator import numba_threads

        self._check_params()
        t0 = time.perf_counter()
        est = self._template()
        prep = est.fit_plan(X, sample_weight)
        n, p = prep.X.shape
        adaptive = True if isinstance(est.adaptive, str) else bool(est.adaptive)     # 'auto': l1 > 0 on the path
        with numba_threads(est.n_jobs):
            model = prep.make_model(est.candidate_edges)
            top, _ = l1_max(model, est.penalty)
        if self.l1s is None:
            if top <= 0:
                l1s = np.array([1.0])
            else:
                l1s = top * np.geomspace(1.0, float(self.l1_min_ratio), int(self.n_l1s))
        else:
            l1s = np.sort(np.asarray(self.l1s, dtype=float).ravel())[::-1]
        rng = np.random.default_rng(self.random_state)
        cancel = threading.Event()
        self.l1_max_ = top
        self.criterion_likelihood_ = {"exact": "exact", "pseudo-likelihood": "pseudo-likelihood"}.get(
            prep.inference, "bethe")

        def say(msg):
            if self.verbose:
                print(msg, file=sys.stderr, flush=True)

        if self.criterion == "stars":
            subs = self._subsamples(n, rng, default_subsample_size)
            size_of = [len(s) / n for s in subs]
            n_pairs = len(model.graph.edges)
            counts = np.zeros((len(l1s), n_pairs))
            instab = []
            walkers = [_Walker(self, est, prep, s, f, adaptive, cancel) for s, f in zip(subs, size_of)]
            stop = len(l1s)
            for k, l1 in enumerate(l1s):
                per = self._map(lambda wk: wk.step(float(l1)), walkers, cancel)
                for wk, act in zip(walkers, per):
                    counts[k, act] += 1
                v = float(stars_variability(counts[k], len(subs)))
                instab.append(v)
                say(f"StARS l1 {l1:.6g}: instability {v:.4f}")
                if v >= float(self.stars_threshold):
                    stop = k + 1
                    break
            l1s = l1s[:stop]
            scores = np.array(instab)
            best = stars_choice(scores, float(self.stars_threshold))
            freq = np.zeros((p, p))
            e = model.graph.edges
            freq[e[:, 0], e[:, 1]] = counts[best] / len(subs)
            self.edge_frequency_ = freq + freq.T
            stages = self._walk(est, prep, l1s, adaptive=adaptive, cancel=cancel)
        else:
            stages = self._walk(est, prep, l1s, adaptive=adaptive,
                                on_point=lambda k, s: say(f"l1 {l1s[k]:.6g}: {len(s.model.active_edges(s.w))} "
                                                          f"edges") and False)
        edges = [s.model.graph.edges[s.model.active_edges(s.w)] for s in stages]
        self.l1s_ = l1s
        self.edges_path_ = np.array([len(e) for e in edges])
        self.dof_path_ = np.array([edge_dof(prep.ns, e, est.edge_features).sum() for e in edges])
        with numba_threads(est.n_jobs):
            if self.criterion == "ebic" and self.refit:
                self.loss_path_ = np.array([self._refit_loss(est, prep, s) for s in stages])
            else:
                self.loss_path_ = np.array([float(s.model.loss(s.w)) for s in stages])
        if self.criterion == "ebic":
            # with the pseudo-likelihood every edge's weights enter two conditionals: df
            # counts them twice (the sum of the node-wise BICs, as IsingFit's)
            per = 2.0 if prep.inference == "pseudo-likelihood" else 1.0
            scores = 2.0 * self.loss_path_ + per * self.dof_path_ * np.log(n) + \
                4.0 * float(self.gamma) * self.edges_path_ * np.log(p)
            # the same edges refit to the same loss (up to the solver's tolerance): the
            # largest l1 among the points that tie with the smallest score
            best = int(np.flatnonzero(scores <= scores.min() + 1e-7 * max(1.0, abs(scores.min())))[0])
        elif self.criterion == "cv":
            folds = self._folds(n, rng)
            from .model import PairwiseMRFModel

            def fold_scores(f):
                test = folds[f]
                train = np.setdiff1d(np.arange(n), test)
                st = self._walk(est, prep, l1s, rows=train, scale=len(train) / n, adaptive=adaptive,
                                cancel=cancel)
                out = np.empty(len(l1s))
                Xt = np.ascontiguousarray(prep.X[test])
                for k, s in enumerate(st):
                    held = PairwiseMRFModel(Xt, prep.ns, s.model.graph.edges, edge_features=est.edge_features,
                                            objective="pseudo", validated=True)
                    out[k] = held.loss(s.w) / len(test)
                say(f"CV fold {f + 1} of {len(folds)}")
                return out

            say(f"CV: {len(folds)} folds of {len(l1s)} points on {self._workers(len(folds))} thread(s)")
            self.cv_scores_ = np.array(self._map(fold_scores, list(range(len(folds))), cancel))
            scores = self.cv_scores_.mean(axis=0)
            best = int(np.argmin(scores))
        self.criterion_scores_ = np.asarray(scores, dtype=float)
        self.l1_ = float(l1s[best])
        chosen = stages[best]
        best_est = est.__class__(**dict(est.get_params(), l1=self.l1_))
        best_est.keep_stage(prep, chosen, adaptive, 0.0, warn=False)
        self.best_estimator_ = best_est
        self.edges_ = best_est.edges_.copy()
        self.n_features_in_ = p
        self.n_samples_ = n
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _subsamples(self, n, rng, default_size):
        if self.subsamples is not None:
            subs = [np.asarray(s, dtype=np.int64).ravel() for s in self.subsamples]
            if not subs:
                raise ValueError("subsamples is empty")
            for k, s in enumerate(subs):
                if s.size < 3 or s.min() < 0 or s.max() >= n:
                    raise ValueError(f"subsamples[{k}] must hold at least 3 row indices in [0, {n})")
            return subs
        size = default_size(n) if self.subsample_size is None else int(self.subsample_size)
        if not 3 <= size <= n:
            raise ValueError(f"subsample_size must be in [3, {n}], got {size}")
        return [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(int(self.n_subsamples))]

    def _folds(self, n, rng):
        k = int(self.cv)
        if k > n:
            raise ValueError(f"cv={k} folds need at least {k} samples, got {n}")
        perm = rng.permutation(n)
        return [np.sort(perm[f::k]) for f in range(k)]

    # -- the selected model ---------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "best_estimator_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def score(self, X, y=None):
        """Mean log-likelihood of X under the selected model (see :meth:`PairwiseMRF.score`)."""
        self._check_fitted()
        return self.best_estimator_.score(X)

    def predict_marginals(self, X_partial):
        self._check_fitted()
        return self.best_estimator_.predict_marginals(X_partial)

    def predict(self, X_partial):
        self._check_fitted()
        return self.best_estimator_.predict(X_partial)

    def plot(self, stability=None, **kwargs):
        """Draw the selected graph with each edge's stability (needs matplotlib): width by
        weight, colour and opacity by inclusion frequency (``stability``: an
        :class:`~spargel.mrf.stability.EdgeStability` or a (p, p) matrix; default StARS's
        :attr:`edge_frequency_` when it chose ``l1``; see
        :func:`~spargel.mrf.plot.plot_edge_stability`). Returns the axes."""
        self._check_fitted()
        return plot_edge_stability(self, stability, **kwargs)

class _Walker:
    """One StARS subsample walking down the path, one ``l1`` at a time (warm-started)."""

    def __init__(self, sel, est, prep, rows, scale, adaptive, cancel=None):
        self.est, self.scale, self.adaptive, self.cancel = est, scale, adaptive, cancel
        self.prep = prep.on_rows(rows)
        self.model = None
        self.threads = 1 if sel._workers(2) > 1 else est.n_jobs

    def step(self, l1):
        from .estimator import numba_threads
        with numba_threads(self.threads):
            if self.model is None:
                self.model = self.prep.make_model(self.est.candidate_edges, self.prep.rows)
                self.w = empty_graph_weights(self.model)
            stage = _check_stage(self.prep.solve(self.model, self.w, l1 * self.scale, self.adaptive, self.cancel),
                                 self.cancel)
            self.w = stage.first.w
            active = stage.model.active_edges(stage.w)
            # ids among the first model's candidates (the adaptive stage keeps a subset)
            if stage.model is self.model:
                return active
            e = stage.model.graph.edges[active]
            return _edge_ids(self.model.graph.edges, e)


def _check_stage(stage, cancel):
    """``stage`` (a :meth:`MRFFitPlan.solve` result), unless its solver stopped on
    Ctrl-C (``KeyboardInterrupt``: the solvers catch it to keep their iterate, a
    selector's path must stop) or on ``cancel`` (:class:`~spargel.mrf.common.Cancelled`:
    another thread's task failed or was interrupted)."""
    if "interrupted" in stage.reasons:
        raise KeyboardInterrupt
    if cancel is not None and cancel.is_set():
        raise Cancelled
    return stage


def _edge_ids(candidates, edges):
    """Positions of the rows ``edges`` among the rows ``candidates`` (both i < j)."""
    n = int(max(candidates.max(initial=0), edges.max(initial=0))) + 1
    keys = candidates[:, 0] * n + candidates[:, 1]
    order = np.argsort(keys)
    return order[np.searchsorted(keys[order], edges[:, 0] * n + edges[:, 1])]
