"""Choosing a Gaussian MRF's alpha as R's huge does (:class:`SparseGaussianMRFSelect`:
EBIC, StARS, RIC) and the nonparanormal transforms of non-Gaussian data
(:class:`Nonparanormal`), scikit-learn style."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core.params import check_n_jobs, keep_arguments, ParamsMixin
from ..errors import DataFormatError, NotFittedError, ParameterError
from .objective import as_matrix, gram, validate_covariance
from .estimator import (_check_alphas, _feature_names, _FittedMixin, _from_data_choice,
                        check_n_features, need_samples)
from .path import check_n_alphas, PATH_TOL
from .stars import METHODS
from .path import alpha_grid, grid_below
from .stars import PathSpec, stars_counts, start_path
from ..core.solver_table import solver as solver_record
from .npn import npn_shrinkage, npn_truncation, skeptic_correlation, truncation_level
from .select import (
    default_subsample_size, ebic_scores, log_likelihood_terms, ric_alpha, standardize, stars_choice,
)

__all__ = ["SparseGaussianMRFSelect", "Nonparanormal"]


_CRITERIA = ("ebic", "stars", "ric")
#: huge.select's criterion when none is given (huge has no CONCORD: StARS, ours)
_DEFAULT_CRITERION = {"glasso": "ebic", "mb": "ric", "concord": "stars"}


def _adjacency(K):
    """The graph of a precision (dense or sparse): a symmetric boolean CSR adjacency
    with an empty diagonal (huge's ``path`` entries)."""
    import scipy.sparse as sp

    A = sp.csr_matrix(K)
    A = (sp.triu(A, 1) + sp.tril(A, -1)).tocsr()
    A.eliminate_zeros()
    return A.astype(bool)


def _frequency(iu, theta, p):
    """(p, p) symmetric CSR matrix of the per-pair fractions ``theta`` (pairs ``iu``)."""
    import scipy.sparse as sp

    keep = theta > 0
    F = sp.coo_matrix((theta[keep], (iu[0][keep], iu[1][keep])), shape=(p, p)).tocsr()
    return (F + F.T).tocsr()


class SparseGaussianMRFSelect(_FittedMixin, ParamsMixin):
    """The penalty of a Gaussian graph estimator chosen by EBIC, StARS or RIC, as R's
    ``huge`` + ``huge.select`` choose it: of the graphical lasso (``method='glasso'``,
    :class:`SparseGaussianMRF`, dense or from the data), of neighbourhood selection
    (``'mb'``, :class:`NeighbourhoodSelection`) or of CONCORD (``'concord'``,
    :class:`Concord`).

    The data are standardised (columns centred and divided by their sample
    standard deviation), so the penalised problem is posed on the correlation
    matrix R, with the diagonal penalised by default as in ``huge``'s glasso:
    ``min -log det K + tr(R K) + alpha sum_ij |K_ij|``. The path is ``alphas``
    values from ``alpha_max = max_{i != j} |R_ij|`` down geometrically to
    ``alpha_min_ratio * alpha_max`` (``huge``'s default path for 10 and 0.1),
    or a given list. MB's lasso per node, ``1/(2n) ||z_j - Z beta||^2 + alpha
    ||beta||_1``, has the same ``alpha_max`` and grid (huge's ``lambda``); CONCORD
    penalises each pair once and its gradient at the empty graph is ``2 R_ij``, so its
    grid (and RIC's alpha for it) is twice the likelihood's. Criteria (definitions in
    :mod:`spargel.gaussian.select`):
    Parameters
    ----------
    criterion : None (default: huge.select's default for the method: 'ebic' for
        glasso, 'ric' for mb; 'stars' for concord), 'ebic', 'stars' or 'ric'. EBIC needs
        a likelihood: glasso only (as huge.select).
    method : 'glasso' (default), 'mb' (neighbourhood selection, huge's ``method =
        "mb"``) or 'concord'. StARS refits the method on every subsample, alpha by alpha
        (:mod:`spargel.gaussian.stars`); RIC fits it at RIC's alpha.
    rule : with 'mb', 'or' (default, as huge) or 'and'.
    client : a ``dask.distributed.Client`` or scheduler address (or None): StARS's
        subsample paths run on its workers, each subsample's state staying where it was
        made; the same choice as on threads from the same ``random_state``.
    alphas : int (path length, default 10) or a list of alphas > 0.
    alpha_min_ratio : end of the default path (default 0.1).
    gamma : EBIC's gamma (default 0.5).
    stars_threshold : StARS threshold on the variability (default 0.1).
    n_subsamples, subsample_size, subsamples : StARS subsampling (above).
    n_rotations, rotations : RIC's random shifts (default 20; all n shifts
        when n <= 20), or the shifts themselves (integers).
    ric_data : 'raw' (default, as huge.select) or 'standardized' (above).
    stars_full_path : False (default): StARS fits the subsamples alpha by alpha and
        stops once the variability reaches ``stars_threshold`` (the choice is the
        alpha before: the same as from the whole path, without its densest, costliest
        fits); ``criterion_scores_`` and ``edge_frequency_path_`` are then NaN / None
        past that alpha. True: every subsample's whole path, as huge.select.
    penalize_diagonal : default True (as huge); False leaves it unpenalised.
    random_state : seed of the subsamples / rotations.
    n_jobs : threads: StARS fits its subsamples' paths concurrently (same result);
        otherwise used for screened components as in :class:`SparseGaussianMRF`.
    solver, tol, max_iter, screen, verbose : as in :class:`SparseGaussianMRF`.
    covariance : None / 'dense' (default; from the data when the p x p arrays would not
        fit, or with ``solver='sparse-newton-cg'``), 'from_data' or 'auto' (from-data when
        n < p and p >= 2,000; for 'mb' and 'concord' their own 'auto': a p x p matrix up
        to 2,000 variables): with 'from_data' the correlation matrix is never
        formed; every alpha is a from-data fit of the standardised columns and
        EBIC, StARS (sparse edge counts; ``edge_frequency_`` is then a
        ``scipy.sparse`` matrix) and RIC (by slabs of columns) are computed from
        the data and the sparse precisions, with the same choice as the dense
        path; ``precision_`` / ``covariance_`` are ``scipy.sparse``.
    max_component : with 'from_data', as in :class:`SparseGaussianMRF`.

    Attributes
    ----------
    alpha_ : the chosen alpha (on the correlation scale); alphas_ : the path.
    criterion_scores_ : per alpha of the path: the EBIC score, or StARS's
        variability (None for RIC). edges_path_ : edges per alpha of the path
        (fitted on all data). loglik_path_ : ``log det K - tr(R K)`` per alpha.
    edge_frequency_ : StARS only, (p, p) fraction of subsamples with each edge
        at the chosen alpha.
    path_ : the graphs of the path (huge's ``path``): one symmetric boolean
        ``scipy.sparse`` CSR adjacency per alpha of ``alphas_`` (fitted on all data).
    selected_index_ : the index of ``alpha_`` in ``alphas_`` (huge's ``opt.index``,
        0-based); None for RIC, whose alpha is not on the path.
    edge_frequency_path_ : StARS only, per alpha the sparse (p, p) fractions of
        subsamples with each edge (huge's ``merge``).
    precision_, covariance_ : the estimate at ``alpha_``, mapped back to the
        units of X (``K_ij / (sd_i sd_j)``; same graph); location_ : the mean;
    and the other attributes of :class:`SparseGaussianMRF` (objective_ and the
    gap are those of the standardised problem).
    With 'mb' / 'concord': ``estimator_``, the fitted :class:`NeighbourhoodSelection` /
    :class:`Concord` at ``alpha_`` (the path's fit, not a second one), and its
    ``edges_``, ``adjacency_`` (and ``coef_`` for mb; ``precision_``, ``edge_weights_``,
    ``partial_correlations_`` for concord); ``edge_frequency_`` is sparse and
    ``loglik_path_`` None; after a bounded StARS the path on all data is fitted only as
    far as the subsamples went (``path_`` None and ``edges_path_`` NaN past it); ``score`` / ``save`` / ``plot`` need the glasso's Gaussian
    model. criterion_, method_ : what was used.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 5)); X[:, 1] += X[:, 0]
    >>> sel = SparseGaussianMRFSelect(criterion="ebic").fit(X)
    >>> [0, 1] in sel.edges_.tolist(), sel.alpha_ in sel.alphas_
    (True, True)
    >>> mb = SparseGaussianMRFSelect("stars", method="mb", n_subsamples=5, random_state=0).fit(X)
    >>> mb.edges_.tolist()[0], type(mb.estimator_).__name__
    ([0, 1], 'NeighbourhoodSelection')
    """

    def __init__(self, criterion=None, *, method="glasso", rule="or", client=None, alphas=10, alpha_min_ratio=0.1, gamma=0.5,
                 stars_threshold=0.1, n_subsamples=20, subsample_size=None, subsamples=None,
                 n_rotations=20, rotations=None, ric_data="raw", stars_full_path=False,
                 penalize_diagonal=True,
                 solver="auto", tol=None, max_iter=None, screen=True, n_jobs=1,
                 random_state=None, verbose=False, covariance=None, max_component=None):
        keep_arguments(self, locals())

    def _loose_path(self):
        """Whether the path is fitted at :data:`PATH_TOL`: tol None, and a solver whose
        own default is tighter (the Newton solvers)."""
        from spargel.gaussian.solve import resolve_solver

        kind = resolve_solver(self.solver, None)
        return self.tol is None and solver_record(kind, "covariance").tol < PATH_TOL

    def _path(self, R, alphas, n_jobs=None, warm_start=None, final=False):
        """The fits of ``alphas`` (decreasing), warm-started along the path (the first
        from ``warm_start``); ``final``: at the solver's default tolerance."""
        from spargel.gaussian.solve import solve_gaussian

        loose = self._loose_path() and not final
        R = validate_covariance(R)
        kw = dict(validated=True, solver=self.solver, tol=PATH_TOL if loose else self.tol,
                  max_iter=self.max_iter, penalize_diagonal=self.penalize_diagonal,
                  screen=self.screen, n_jobs=self.n_jobs if n_jobs is None else n_jobs,
                  polish=0 if loose else None)
        out, prev = [], warm_start
        for a in alphas:
            prev = solve_gaussian(R, float(a), warm_start=prev, **kw)
            out.append(prev)
        return out

    def _finish(self, R, alpha, fit):
        """The chosen fit at the solver's default tolerance, from the path's ``fit``."""
        if not self._loose_path():
            return fit
        return self._path(R, [alpha], warm_start=fit, final=True)[0]

    def _sparse_solver(self):
        """Whether ``solver`` solves from the data only (``'sparse-newton-cg'``, the sparse
        path for p too large for dense arrays): the from-data path then, unless
        ``covariance='dense'`` asks otherwise (the solver's own error)."""
        return (self.covariance is None and self.solver != "auto" and
                solver_record(self.solver, "covariance").from_data_only)

    def _criterion(self):
        """The criterion (None: huge.select's default for the method) and the method,
        checked: EBIC needs a likelihood, which only the graphical lasso has."""
        if self.method not in METHODS:
            raise ParameterError(f"method must be one of {', '.join(map(repr, METHODS))}, "
                                 f"got {self.method!r}")
        crit = self.criterion if self.criterion is not None else _DEFAULT_CRITERION[self.method]
        if crit not in _CRITERIA:
            raise ParameterError(f"criterion must be one of {', '.join(map(repr, _CRITERIA))} "
                                 f"or None, got {self.criterion!r}")
        if crit == "ebic" and self.method != "glasso":
            raise ParameterError(f"criterion='ebic' needs a likelihood; method={self.method!r} "
                                 "has none (huge.select offers EBIC for glasso only): use "
                                 "'stars' or 'ric'")
        if self.rule not in ("or", "and"):
            raise ParameterError(f"rule must be 'or' or 'and', got {self.rule!r}")
        return crit

    def _stars(self, X, n, rng, alphas, spec):
        """StARS's subsamples alpha by alpha (:func:`.stars.stars_counts`): the choice, the
        variabilities (NaN past the alpha that stopped it) and the sparse counts."""
        subs = self._subsamples(n, rng, default_subsample_size)
        var, counts, stop = stars_counts(X, subs, spec, alphas, float(self.stars_threshold),
                                         full_path=bool(self.stars_full_path),
                                         n_jobs=self.n_jobs, client=self.client,
                                         verbose=self.verbose)
        best = stars_choice(var[:stop + 1], self.stars_threshold)
        k = len(subs)
        freq_path = [None if c is None else ((c + c.T) / k).tocsr() for c in counts]
        return best, var, freq_path

    def fit(self, X, y=None):
        """Standardise X, fit the path, choose alpha by the criterion, keep that fit.

        Nothing is changed on the estimator until the fit is complete: a Ctrl-C (or an
        error) leaves the previous fit, if any, as it was."""
        import numbers

        crit = self._criterion()
        for name in ("gamma", "stars_threshold"):
            v = getattr(self, name)
            if isinstance(v, (bool, str)) or not isinstance(v, numbers.Real) or \
                    not np.isfinite(v) or v < 0:
                raise ParameterError(f"{name} must be a finite number >= 0, got {v!r}")
        self._check_params()
        names = _feature_names(X)
        X = self._validate(X)
        n, p = X.shape
        sd = X.std(axis=0, ddof=1)
        if np.any(sd == 0):
            raise DataFormatError("X", None, f"column {int(np.flatnonzero(sd == 0)[0])} is "
                                  "constant (zero variance): it cannot be standardised")
        if self.method != "glasso":
            out = self._fit_graph(X, crit)
        elif _from_data_choice(self, X.shape, 0) or self._sparse_solver():
            out = self._fit_from_data(X, sd, crit)
        else:
            out = {}
            Z = standardize(X)
            R = gram(Z) / (n - 1)
            R = 0.5 * (R + R.T)
            np.fill_diagonal(R, 1.0)
            if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
                alphas = alpha_grid(R, int(self.alphas), self.alpha_min_ratio)
            else:
                alphas = np.sort(_check_alphas(self.alphas))[::-1]
            rng = np.random.default_rng(self.random_state)
            iu = np.triu_indices(p, 1)
            path = self._path(R, alphas)
            edges = np.array([np.count_nonzero(r.precision[iu]) for r in path])
            loglik = np.array([log_likelihood_terms(r.precision, R) for r in path])
            out.update(alphas_=alphas, edges_path_=edges, loglik_path_=loglik,
                       path_=[_adjacency(r.precision) for r in path], criterion_scores_=None,
                       edge_frequency_path_=None)
            if crit == "ebic":
                scores = ebic_scores(loglik, edges, n=n, p=p, gamma=self.gamma)
                best = int(np.argmin(scores))
                out["criterion_scores_"] = scores
                chosen, alpha = self._finish(R, alphas[best], path[best]), float(alphas[best])
            elif crit == "stars":
                spec = PathSpec("glasso", solver=self.solver, tol=self.tol,
                                max_iter=self.max_iter, penalize_diagonal=self.penalize_diagonal,
                                screen=self.screen, loose=self._loose_path())
                best, var, freq_path = self._stars(X, n, rng, alphas, spec)
                out.update(criterion_scores_=var, edge_frequency_=freq_path[best].toarray(),
                           edge_frequency_path_=freq_path)
                chosen, alpha = self._finish(R, alphas[best], path[best]), float(alphas[best])
            else:
                best = None
                rot = self._rotations(n, rng)
                alpha = ric_alpha(X if self.ric_data == "raw" else Z, rot)
                out["rotations_"] = np.asarray(rot)
                # warm-started from the path's fit of the nearest larger alpha, if any
                above = np.flatnonzero(alphas >= alpha)
                start = path[int(above[-1])] if above.size else None
                chosen = self._path(R, [alpha], warm_start=start, final=True)[0]
            ss = np.outer(sd, sd)
            out.update(alpha_=alpha, selected_index_=best, _result=chosen,
                       _mapped=dataclasses.replace(chosen, precision=chosen.precision / ss,
                                                   covariance=chosen.covariance * ss))
        self._commit(out, X, names, crit)
        return self

    def _validate(self, X):
        """X checked (at least 3 samples), without changing the estimator."""
        X = as_matrix(X, "X")
        need_samples(X, 3, "standardise and fit")
        return X

    #: fitted attributes of one method that another's fit removes
    _FITTED = ("precision_", "covariance_", "objective_", "dual_objective_", "duality_gap_",
               "n_iter_", "converged_", "stop_reason_", "history_", "costs_", "solver_",
               "n_components_", "edges_", "edge_weights_", "adjacency_", "estimator_",
               "partial_correlations_", "coef_", "edge_frequency_", "edge_frequency_path_",
               "rotations_", "criterion_scores_", "loglik_path_", "_result")

    def _commit(self, out, X, names, crit):
        """Every fitted attribute at once, from the finished fit ``out``."""
        for name in self._FITTED:
            self.__dict__.pop(name, None)
        if names is not None:
            self.feature_names_in_ = names
        else:
            self.__dict__.pop("feature_names_in_", None)
        mapped = out.pop("_mapped", None)
        self.__dict__.update(out)
        if mapped is not None:
            self._store(mapped, X.shape[1])
        self.n_features_in_ = X.shape[1]
        self.criterion_ = crit
        self.method_ = self.method
        self.location_ = X.mean(axis=0)
        self.n_samples_ = X.shape[0]

    def _fit_graph(self, X, crit):
        """``method='mb'`` or ``'concord'``: the path on all data, the criterion (StARS
        on the subsamples' paths, or RIC's alpha and a fit there) and the fitted
        estimator at the choice (``estimator_``)."""
        import numbers
        import sys
        import time

        from spargel.gaussian.from_data_select import ric_alpha_by_slabs
        from spargel.gaussian.neighbourhood import standardize_unit

        n, p = X.shape
        rng = np.random.default_rng(self.random_state)
        # CONCORD penalises each pair once and its gradient at the empty graph is
        # 2 R_ij: its alphas are twice the likelihood's (the same graphs' scale)
        scale = 2.0 if self.method == "concord" else 1.0
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            from spargel.gaussian.from_data import _Columns
            from spargel.gaussian.from_data_select import alpha_max_from_data

            cols = _Columns(standardize_unit(X).T, True)
            alphas = grid_below(scale * alpha_max_from_data(cols), int(self.alphas),
                                self.alpha_min_ratio)
            del cols
        else:
            alphas = np.sort(_check_alphas(self.alphas))[::-1]
        tol = self.tol
        cov = "auto" if self.covariance in (None, "auto") else self.covariance
        if cov == "from_data" and self.method == "mb":
            cov = "data"
        spec = PathSpec(self.method, lowest=float(alphas[-1]), rule=self.rule,
                        mode=cov if self.method == "mb" else "auto",
                        covariance=cov if self.method == "concord" else "auto",
                        tol=tol, max_iter=self.max_iter)
        out = {"criterion_scores_": None, "edge_frequency_path_": None}
        best = None
        if crit == "ric":
            rot = self._rotations(n, rng)
            Z = X if self.ric_data == "raw" else standardize(X)
            ric = ric_alpha_by_slabs(Z, rot)
            alpha = scale * ric
            out["rotations_"] = np.asarray(rot)
            spec = dataclasses.replace(spec, lowest=min(float(alphas[-1]), alpha))
        if crit == "stars":
            best, var, freq_path = self._stars(X, n, rng, alphas, spec)
            out.update(criterion_scores_=var, edge_frequency_=freq_path[best],
                       edge_frequency_path_=freq_path)
            alpha = float(alphas[best])
        # the path on all data (the graphs of path_), the chosen fit kept; after a bounded
        # StARS only as far as its subsamples went (its densest alphas decide nothing)
        last = int(np.flatnonzero(np.isfinite(var))[-1]) if crit == "stars" else alphas.size - 1
        t0 = time.perf_counter()
        state = start_path(X, None, spec)
        fits, adjs = [], []
        for k, a in enumerate(alphas[:last + 1]):
            state, pattern, fit = state.advance(float(a), n_jobs=self.n_jobs)
            fits.append((state, fit))
            adjs.append(pattern)
            if self.verbose:
                print(f"path ({self.method}, all {n} samples): alpha {k + 1} of {alphas.size} "
                      f"({a:.4g}), {pattern.nnz} edges, {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr, flush=True)
        edges = np.full(alphas.size, np.nan)
        edges[:last + 1] = [P.nnz for P in adjs]
        out.update(alphas_=alphas, edges_path_=edges if last < alphas.size - 1 else
                   edges.astype(np.int64), loglik_path_=None,
                   path_=[((P + P.T) > 0).tocsr() for P in adjs] + [None] * (alphas.size - 1 - last))
        if crit == "stars":
            fit = fits[best][1]
        else:
            above = np.flatnonzero(alphas >= alpha)
            start = fits[int(above[-1])][0] if above.size else start_path(X, None, spec)
            _, _, fit = start.advance(float(alpha), n_jobs=self.n_jobs)
        out.update(alpha_=float(alpha), selected_index_=best,
                   estimator_=self._graph_estimator(X, alpha, fit))
        est = out["estimator_"]
        for name in ("edges_", "adjacency_", "coef_", "precision_", "edge_weights_",
                     "partial_correlations_"):
            if hasattr(est, name):
                out[name] = getattr(est, name)
        return out

    def _graph_estimator(self, X, alpha, fit):
        """The fitted :class:`NeighbourhoodSelection` / :class:`Concord` at ``alpha`` from
        the path's ``fit`` (no second fit)."""
        from spargel.gaussian.neighbourhood import NeighbourhoodSelection, adjacency_from_coef

        n, p = X.shape
        kw = {} if self.tol is None else {"tol": self.tol}
        if self.max_iter is not None:
            kw["max_iter"] = self.max_iter
        if self.method == "mb":
            C, n_iter, _ = fit
            mode = {None: "auto", "auto": "auto", "dense": "gram"}.get(self.covariance, "data")
            est = NeighbourhoodSelection(alpha=float(alpha), rule=self.rule, mode=mode,
                                         n_jobs=self.n_jobs, **kw)
            est.location_ = X.mean(axis=0)
            est.scale_ = X.std(axis=0)
            adj, edges = adjacency_from_coef(C, self.rule)
            est.n_features_in_ = p
            est.alphas_ = np.array([float(alpha)])
            est.alpha_ = float(alpha)
            est.coef_path_, est.adjacency_path_, est.edges_path_ = [C], [adj], [edges]
            est.coef_, est.adjacency_, est.edges_ = C, adj, edges
            est.n_iter_ = n_iter
            est.mode_ = "gram" if p <= 2000 and mode == "auto" or mode == "gram" else "data"
            est.screened_pairs_ = None
            return est
        from spargel.gaussian.concord import Concord

        cov = "auto" if self.covariance in (None, "auto") else self.covariance
        est = Concord.from_path_point(p, fit, X.std(axis=0), X.mean(axis=0), float(alpha), covariance=cov, **kw)
        est.solver_ = "concord"
        return est

    def __sklearn_is_fitted__(self):
        return hasattr(self, "alpha_") and hasattr(self, "edges_")

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")

    def _need_likelihood(self, what):
        """A clear error for what only the graphical lasso's Gaussian model has."""
        self._check_fitted()
        method = getattr(self, "method_", "glasso")
        if method != "glasso":
            raise ParameterError(f"{what} needs the graphical lasso's Gaussian model; this "
                                 f"selection used method={method!r} (its fitted estimator "
                                 "is estimator_)")

    def score(self, X, y=None):
        self._need_likelihood("score()")
        return super().score(X, y)

    def save(self, path):
        self._need_likelihood("save()")
        return super().save(path)

    def plot(self, kind="graph", **kwargs):
        self._need_likelihood("plot()")
        return super().plot(kind, **kwargs)

    def get_precision(self):
        self._check_fitted()
        if not hasattr(self, "precision_"):
            raise ParameterError("neighbourhood selection (method='mb') estimates a graph, "
                                 "not a precision matrix: see edges_ / adjacency_")
        return self.precision_

    def _fit_from_data(self, X, sd, crit):
        """:meth:`fit` without a p x p matrix (``covariance='from_data'``): every alpha a
        from-data fit on the standardised columns, the criteria from the data and the
        sparse precisions (:mod:`.from_data_select`); the same choice as the dense path."""
        import numbers

        from spargel.gaussian.from_data_select import (SelectPath, ric_alpha_by_slabs,
                                                       scale_sparse)

        n, p = X.shape
        rng = np.random.default_rng(self.random_state)
        kw = dict(solver=self.solver, tol=self.tol, max_iter=self.max_iter,
                  max_component=self.max_component, n_jobs=self.n_jobs)
        Z = standardize(X)
        data = SelectPath(Z, kw, self.penalize_diagonal)
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            alphas = grid_below(data.alpha_max(), int(self.alphas), self.alpha_min_ratio)
        else:
            alphas = np.sort(_check_alphas(self.alphas))[::-1]
        path = list(data.path(alphas))
        out = {"criterion_scores_": None, "edge_frequency_path_": None, "alphas_": alphas,
               "edges_path_": np.array([data.edges(r.precision) for r in path]),
               "loglik_path_": np.array([data.loglik(r.precision) for r in path]),
               "path_": [_adjacency(r.precision) for r in path]}
        if crit == "ebic":
            scores = ebic_scores(out["loglik_path_"], out["edges_path_"], n=n, p=p,
                                 gamma=self.gamma)
            best = int(np.argmin(scores))
            out["criterion_scores_"] = scores
            chosen, alpha = path[best], float(alphas[best])
        elif crit == "stars":
            spec = PathSpec("glasso", lowest=float(alphas[-1]), solver=self.solver,
                            tol=self.tol, max_iter=self.max_iter,
                            penalize_diagonal=self.penalize_diagonal, columns=True,
                            max_component=self.max_component)
            best, var, freq_path = self._stars(X, n, rng, alphas, spec)
            out.update(criterion_scores_=var, edge_frequency_=freq_path[best],
                       edge_frequency_path_=freq_path)
            chosen, alpha = path[best], float(alphas[best])
        else:
            best = None
            rot = self._rotations(n, rng)
            alpha = ric_alpha_by_slabs(X if self.ric_data == "raw" else Z, rot)
            out["rotations_"] = np.asarray(rot)
            chosen = data.fit(alpha)
        mapped = dataclasses.replace(chosen, precision=scale_sparse(chosen.precision, sd, True),
                                     covariance=scale_sparse(chosen.covariance, sd, False))
        out.update(alpha_=alpha, selected_index_=best, _result=chosen, _mapped=mapped)
        return out

    def _check_params(self):
        """The grid size, threads, subsampling and rotation parameters, checked at fit
        before anything is sized by them (:class:`ParameterError` naming each)."""
        import numbers

        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            check_n_alphas(self.alphas, "alphas")
        check_n_jobs(self.n_jobs)
        if not isinstance(self.stars_full_path, (bool, np.bool_)):
            raise ParameterError(f"stars_full_path must be True or False, got "
                                 f"{self.stars_full_path!r}")
        if self.ric_data not in ("raw", "standardized"):
            raise ParameterError(f"ric_data must be 'raw' (as huge.select) or 'standardized', "
                                 f"got {self.ric_data!r}")
        for name in ("n_subsamples", "n_rotations"):
            v = getattr(self, name)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 1:
                raise ParameterError(f"{name} must be an integer >= 1, got {v!r}")
        v = self.subsample_size
        if v is not None and (isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)):
            raise ParameterError(f"subsample_size must be None or an integer >= 3, got {v!r}")
        if self.rotations is not None:
            rot = np.asarray(self.rotations)
            if rot.dtype.kind not in "iu" and not (rot.dtype.kind == "O" and all(
                    isinstance(r, numbers.Integral) and not isinstance(r, bool) for r in rot.ravel())):
                raise ParameterError(f"rotations must be integer row shifts, got {self.rotations!r}")

    def _subsamples(self, n, rng, default_size):
        if self.subsamples is not None:
            subs = [np.asarray(s, dtype=np.int64).ravel() for s in self.subsamples]
            for k, s in enumerate(subs):
                if s.size < 3 or s.min() < 0 or s.max() >= n:
                    raise ValueError(f"subsamples[{k}] must hold at least 3 row indices in "
                                     f"[0, {n})")
            if not subs:
                raise ValueError("subsamples is empty")
            return subs
        if self.subsample_size is None:
            size = default_size(n)
            if size < 3:
                raise ValueError(f"StARS needs subsamples of at least 3 rows (to standardise them), "
                                 f"and {n} samples give a default subsample size of {size} "
                                 f"(0.8 n, as huge): give subsample_size (3 to {n}), more samples, "
                                 f"or criterion='ebic' or 'ric'")
        else:
            size = int(self.subsample_size)
        if not 3 <= size <= n:
            raise ValueError(f"subsample_size must be in [3, {n}], got {size}")
        k = int(self.n_subsamples)
        if k < 1:
            raise ParameterError(f"n_subsamples must be >= 1, got {self.n_subsamples!r}")
        return [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(k)]

    def _rotations(self, n, rng):
        if self.rotations is not None:
            rot = [int(r) for r in np.asarray(self.rotations).ravel()]
            if not rot:
                raise ValueError("rotations is empty")
            return rot
        k = int(self.n_rotations)
        if k < 1:
            raise ParameterError(f"n_rotations must be >= 1, got {self.n_rotations!r}")
        if n <= k:
            return list(range(1, n + 1))
        return [int(r) + 1 for r in rng.choice(n, size=k, replace=False)]


_NPN_METHODS = ("shrinkage", "truncation", "skeptic")


class Nonparanormal(ParamsMixin):
    """The nonparanormal transform of R's ``huge.npn`` as a scikit-learn transformer.

    ``method='shrinkage'`` (default): each column becomes
    ``Phi^-1(rank / (n + 1))`` (ties at their average rank), all divided by the
    standard deviation of the first transformed column; ``'truncation'``:
    ``Phi^-1`` of ``rank / n`` clipped to ``[delta, 1 - delta]`` (``delta``:
    ``truncation``, default ``1 / (4 n^(1/4) sqrt(pi log n))``), scaled the same
    way. ``fit_transform(X)`` equals ``huge.npn(X)``; ``transform`` of new
    rows ranks each value among the training column (a value between training
    values gets the rank halfway), so a training row maps to itself.

    ``method='skeptic'`` returns no data but the SKEPTIC correlation matrix
    ``2 sin(pi / 6 * rho)`` (rho: Spearman), ``huge.npn(X, "skeptic")``:
    ``transform(X)`` is that (p, p) matrix of X, to be passed on as a
    covariance (``covariance_`` holds the one of the training data).

    >>> import numpy as np
    >>> X = np.exp(np.random.default_rng(0).standard_normal((50, 3)))
    >>> Z = Nonparanormal().fit_transform(X)
    >>> bool(np.allclose(Nonparanormal().fit(X).transform(X), Z))
    True
    """

    def __init__(self, method="shrinkage", *, truncation=None):
        keep_arguments(self, locals())

    def _check(self):
        if self.method not in _NPN_METHODS:
            raise ParameterError(f"method must be one of {', '.join(map(repr, _NPN_METHODS))}, "
                                 f"got {self.method!r}")

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def _fit(self, X):
        """The fit; returns the transformed training data (None for 'skeptic')."""
        self._check()
        X = as_matrix(X, "X")
        need_samples(X, 2, "rank")
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        self.n_samples_ = n
        if self.method == "skeptic":
            self.covariance_ = skeptic_correlation(X)
            return None
        self.sorted_ = np.sort(X, axis=0)
        if self.method == "shrinkage":
            Z, self.scale_ = npn_shrinkage(X, return_scale=True)
        else:
            self.delta_ = truncation_level(n) if self.truncation is None else float(self.truncation)
            if not 0 < self.delta_ < 0.5:
                raise ValueError(f"truncation must be in (0, 0.5), got {self.truncation!r}")
            Z, self.scale_ = npn_truncation(X, self.delta_, return_scale=True)
        return Z

    def transform(self, X):
        from scipy.special import ndtri

        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")
        if not hasattr(X, "nnz") and np.asarray(X).ndim == 1:
            raise DataFormatError("X", None, "expected a 2-D array, got a 1-D array; Reshape "
                                  "your data with X.reshape(-1, 1) for one variable or "
                                  "X.reshape(1, -1) for one sample")
        X = as_matrix(X, "X")
        check_n_features(self, X)
        if self.method == "skeptic":
            return skeptic_correlation(X)
        n = self.n_samples_
        ranks = np.empty_like(X)
        for j in range(X.shape[1]):
            col = self.sorted_[:, j]
            lo = np.searchsorted(col, X[:, j], side="left")
            hi = np.searchsorted(col, X[:, j], side="right")
            ranks[:, j] = lo + (hi - lo + 1) / 2.0        # average rank; halfway when absent
        if self.method == "shrinkage":
            Z = ndtri(ranks / (n + 1))
        else:
            Z = ndtri(np.clip(ranks / n, self.delta_, 1.0 - self.delta_))
        return Z / self.scale_

    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``: the transform the fit computed (a training row's
        rank among its own column is its average rank), without ranking X again."""
        Z = self._fit(X)
        return self.transform(X) if Z is None else Z

    def _more_sklearn_tags(self, tags):
        from sklearn.utils import TransformerTags

        tags.transformer_tags = TransformerTags()
        tags.input_tags.allow_nan = False
