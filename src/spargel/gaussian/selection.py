"""Choosing a Gaussian MRF's alpha as R's huge does (:class:`SparseGaussianMRFSelect`:
EBIC, StARS, RIC) and the nonparanormal transforms of non-Gaussian data
(:class:`Nonparanormal`), scikit-learn style."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core.params import ParamsMixin
from ..errors import DataFormatError, NotFittedError, ParameterError
from .objective import gram, validate_covariance
from .estimator import (_check_alphas, _FittedMixin, _from_data_choice, check_n_features,
                        need_samples)

__all__ = ["SparseGaussianMRFSelect", "Nonparanormal"]


_CRITERIA = ("ebic", "stars", "ric")
#: relative duality-gap tolerance of the path's fits (and StARS's subsample paths) when
#: ``tol`` is None and the solver is a Newton method: the criteria read edges and
#: log-likelihoods, which agree with the default tolerance's to far more digits than
#: they decide, and R huge's glasso path stops further from the optimum than this
#: (docs/benchmarks.md); the polish steps are skipped there too, and the chosen fit is
#: then finished at the solver's default tolerance (a warm start: a few Newton steps)
PATH_TOL = 1e-9


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
    """:class:`SparseGaussianMRF` with ``alpha`` chosen by EBIC, StARS or RIC, as R's
    ``huge`` + ``huge.select`` choose it.

    The data are standardised (columns centred and divided by their sample
    standard deviation), so the penalised problem is posed on the correlation
    matrix R, with the diagonal penalised by default as in ``huge``'s glasso:
    ``min -log det K + tr(R K) + alpha sum_ij |K_ij|``. The path is ``alphas``
    values from ``alpha_max = max_{i != j} |R_ij|`` down geometrically to
    ``alpha_min_ratio * alpha_max`` (``huge``'s default path for 10 and 0.1),
    or a given list. Criteria (definitions in :mod:`spargel.gaussian.select`):

    * ``'ebic'``: ``-n (log det K - tr(R K)) + |E| (log n + 4 gamma log p)``,
      smallest on the path;
    * ``'stars'``: edge stability over ``n_subsamples`` random subsamples
      (``10 sqrt(n)`` samples when n > 144, else 0.8 n; ``subsample_size``
      to set it; ``subsamples`` to give the index sets themselves): the smallest
      alpha whose larger alphas all have variability below
      ``stars_threshold``;
    * ``'ric'``: the rotation information criterion, an alpha computed from the
      data (not from the path), min over ``n_rotations`` random row shifts (or
      the given ``rotations``) of the largest cross-product of a shifted column
      with another column, over n; the model is then fitted at that alpha. As
      ``huge.select`` computes it, from the data as given (``ric_data='raw'``:
      neither centred nor scaled, so the alpha depends on the data's units, while
      the fit is on the correlation scale), or from the standardised columns
      (``ric_data='standardized'``: a correlation-scale alpha, invariant to units).

    Parameters
    ----------
    criterion : 'ebic' (default), 'stars' or 'ric'.
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
    covariance : None / 'dense' (default), 'from_data' or 'auto' (from-data when
        n < p and p >= 2,000): with 'from_data' the correlation matrix is never
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

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 5)); X[:, 1] += X[:, 0]
    >>> sel = SparseGaussianMRFSelect(criterion="ebic").fit(X)
    >>> [0, 1] in sel.edges_.tolist(), sel.alpha_ in sel.alphas_
    (True, True)
    """

    def __init__(self, criterion="ebic", *, alphas=10, alpha_min_ratio=0.1, gamma=0.5,
                 stars_threshold=0.1, n_subsamples=20, subsample_size=None, subsamples=None,
                 n_rotations=20, rotations=None, ric_data="raw", stars_full_path=False,
                 penalize_diagonal=True,
                 solver="auto", tol=None, max_iter=None, screen=True, n_jobs=1,
                 random_state=None, verbose=False, covariance=None, max_component=None):
        self.criterion = criterion
        self.ric_data = ric_data
        self.stars_full_path = stars_full_path
        self.covariance = covariance
        self.max_component = max_component
        self.alphas = alphas
        self.alpha_min_ratio = alpha_min_ratio
        self.gamma = gamma
        self.stars_threshold = stars_threshold
        self.n_subsamples = n_subsamples
        self.subsample_size = subsample_size
        self.subsamples = subsamples
        self.n_rotations = n_rotations
        self.rotations = rotations
        self.penalize_diagonal = penalize_diagonal
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.screen = screen
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _loose_path(self):
        """Whether the path is fitted at :data:`PATH_TOL`: tol None, and a solver whose
        own default is tighter (the Newton solvers)."""
        from spargel.core.solver_table import solver as solver_record
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

    def _stars_early_stop(self, X, subs, alphas, iu):
        """StARS alpha by alpha: every subsample's fit of one alpha (warm-started from
        its previous one, kept as a sparse precision), the variability of that alpha,
        and a stop once it reaches the threshold (``stars_choice`` reads nothing
        after it). Returns the variability (NaN where not fitted) and the counts."""
        import types

        import scipy.sparse as sp

        from spargel.gaussian.select import stars_variability, standardize

        counts = np.zeros((alphas.size, iu[0].size))
        var = np.full(alphas.size, np.nan)
        prev = [None] * len(subs)
        parallel = self.n_jobs is not None and self.n_jobs != 1 and len(subs) > 1

        def fit_one(b, a):
            idx = subs[b]
            Zb = standardize(X[idx])
            Rb = gram(Zb) / (len(idx) - 1)
            Rb = 0.5 * (Rb + Rb.T)
            np.fill_diagonal(Rb, 1.0)
            warm = None if prev[b] is None else types.SimpleNamespace(
                precision=prev[b].toarray(), covariance=None, solver="")
            res = self._path(Rb, [a], n_jobs=1 if parallel else None, warm_start=warm)[0]
            prev[b] = sp.csr_matrix(res.precision)
            return res.precision[iu] != 0

        ex = None
        if parallel:
            from concurrent.futures import ThreadPoolExecutor

            ex = ThreadPoolExecutor(max_workers=None if self.n_jobs == -1 else int(self.n_jobs))
        try:
            for k, a in enumerate(alphas):
                fits = list(ex.map(lambda b: fit_one(b, a), range(len(subs)))) if ex else \
                    [fit_one(b, a) for b in range(len(subs))]
                for e in fits:                 # in subsample order: the same sums
                    counts[k] += e
                var[k] = stars_variability(counts[k:k + 1], len(subs))[0]
                if self.verbose:
                    import sys
                    print(f"StARS alpha {k + 1} of {alphas.size}: variability {var[k]:.4g}",
                          file=sys.stderr, flush=True)
                if var[k] >= self.stars_threshold:
                    break
        finally:
            if ex is not None:
                ex.shutdown()
        return var, counts

    def _finish(self, R, alpha, fit):
        """The chosen fit at the solver's default tolerance, from the path's ``fit``."""
        if not self._loose_path():
            return fit
        return self._path(R, [alpha], warm_start=fit, final=True)[0]

    def fit(self, X, y=None):
        """Standardise X, fit the path, choose alpha by the criterion, keep that fit."""
        import numbers
        import sys

        from spargel.gaussian.path import alpha_grid
        from spargel.gaussian.select import (default_subsample_size, ebic_scores,
                                             log_likelihood_terms, ric_alpha, standardize,
                                             stars_choice, stars_variability)

        if self.criterion not in _CRITERIA:
            raise ParameterError(f"criterion must be one of {', '.join(map(repr, _CRITERIA))}, "
                                 f"got {self.criterion!r}")
        for name in ("gamma", "stars_threshold"):
            v = getattr(self, name)
            if isinstance(v, (bool, str)) or not isinstance(v, numbers.Real) or \
                    not np.isfinite(v) or v < 0:
                raise ParameterError(f"{name} must be a finite number >= 0, got {v!r}")
        self._check_params()
        X = self._data(X, reset=True, least=3, purpose="standardise and fit")
        n, p = X.shape
        sd = X.std(axis=0, ddof=1)
        if np.any(sd == 0):
            raise DataFormatError("X", None, f"column {int(np.flatnonzero(sd == 0)[0])} is "
                                  "constant (zero variance): it cannot be standardised")
        if _from_data_choice(self, X.shape, 0):
            return self._fit_from_data(X, sd)
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
        self.alphas_ = alphas
        self.edges_path_ = edges
        self.loglik_path_ = loglik
        self.path_ = [_adjacency(r.precision) for r in path]
        self.__dict__.pop("edge_frequency_path_", None)          # StARS's, of an earlier fit
        self.criterion_scores_ = None
        self.selected_index_ = None
        if self.criterion == "ebic":
            scores = ebic_scores(loglik, edges, n=n, p=p, gamma=self.gamma)
            best = int(np.argmin(scores))
            self.criterion_scores_ = scores
            chosen, alpha = self._finish(R, alphas[best], path[best]), float(alphas[best])
        elif self.criterion == "stars" and not self.stars_full_path:
            subs = self._subsamples(n, rng, default_subsample_size)
            var, counts = self._stars_early_stop(X, subs, alphas, iu)
            best = stars_choice(var[np.isfinite(var)], self.stars_threshold)
            self.criterion_scores_ = var
            freq = np.zeros((p, p))
            freq[iu] = counts[best] / len(subs)
            self.edge_frequency_ = freq + freq.T
            self.edge_frequency_path_ = [_frequency(iu, c / len(subs), p) if np.isfinite(v)
                                         else None for c, v in zip(counts, var)]
            chosen, alpha = self._finish(R, alphas[best], path[best]), float(alphas[best])
        elif self.criterion == "stars":
            subs = self._subsamples(n, rng, default_subsample_size)
            parallel = self.n_jobs is not None and self.n_jobs != 1 and len(subs) > 1

            def edges_of(b):
                idx = subs[b]
                Zb = standardize(X[idx])
                Rb = gram(Zb) / (len(idx) - 1)
                Rb = 0.5 * (Rb + Rb.T)
                np.fill_diagonal(Rb, 1.0)
                path_b = self._path(Rb, alphas, n_jobs=1 if parallel else None)
                out = np.array([r.precision[iu] != 0 for r in path_b])
                if self.verbose:
                    print(f"StARS subsample {b + 1} of {len(subs)}", file=sys.stderr, flush=True)
                return out

            # the subsamples' paths on n_jobs threads (the solvers release the GIL);
            # counts are added in subsample order, so the result does not depend on it
            if parallel:
                from concurrent.futures import ThreadPoolExecutor

                workers = None if self.n_jobs == -1 else int(self.n_jobs)
                with ThreadPoolExecutor(max_workers=workers) as ex:
                    per_sub = list(ex.map(edges_of, range(len(subs))))
            else:
                per_sub = [edges_of(b) for b in range(len(subs))]
            counts = np.zeros((alphas.size, iu[0].size))
            for e in per_sub:
                counts += e
            var = stars_variability(counts, len(subs))
            best = stars_choice(var, self.stars_threshold)
            self.criterion_scores_ = var
            freq = np.zeros((p, p))
            freq[iu] = counts[best] / len(subs)
            self.edge_frequency_ = freq + freq.T
            self.edge_frequency_path_ = [_frequency(iu, c / len(subs), p) for c in counts]
            chosen, alpha = self._finish(R, alphas[best], path[best]), float(alphas[best])
        else:
            best = None
            rot = self._rotations(n, rng)
            alpha = ric_alpha(X if self.ric_data == "raw" else Z, rot)
            self.rotations_ = np.asarray(rot)
            # warm-started from the path's fit of the nearest larger alpha, if any
            above = np.flatnonzero(alphas >= alpha)
            start = path[int(above[-1])] if above.size else None
            chosen = self._path(R, [alpha], warm_start=start, final=True)[0]
        self.alpha_ = alpha
        self.selected_index_ = best
        self._result = chosen
        ss = np.outer(sd, sd)
        mapped = dataclasses.replace(chosen, precision=chosen.precision / ss,
                                     covariance=chosen.covariance * ss)
        self._store(mapped, p)
        self.location_ = X.mean(axis=0)
        self.n_samples_ = n
        return self

    def _fit_from_data(self, X, sd):
        """:meth:`fit` without a p x p matrix (``covariance='from_data'``): every alpha a
        from-data fit on the standardised columns, the criteria from the data and the
        sparse precisions (:mod:`.from_data_select`); the same choice as the dense path."""
        import numbers
        import sys
        from concurrent.futures import ThreadPoolExecutor

        from spargel.gaussian.from_data_select import (SelectPath, ric_alpha_by_slabs,
                                                       scale_sparse, stars_from_patterns)
        from spargel.gaussian.path import grid_below
        from spargel.gaussian.select import (default_subsample_size, ebic_scores,
                                             standardize, stars_choice)

        n, p = X.shape
        rng = np.random.default_rng(self.random_state)
        parallel = self.criterion == "stars" and self.n_jobs is not None and self.n_jobs != 1
        kw = dict(solver=self.solver, tol=self.tol, max_iter=self.max_iter,
                  max_component=self.max_component, n_jobs=1 if parallel else self.n_jobs)
        Z = standardize(X)
        data = SelectPath(Z, kw, self.penalize_diagonal)
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            alphas = grid_below(data.alpha_max(), int(self.alphas), self.alpha_min_ratio)
        else:
            alphas = np.sort(_check_alphas(self.alphas))[::-1]
        self.criterion_scores_ = None
        path = list(data.path(alphas))
        self.alphas_ = alphas
        self.edges_path_ = np.array([data.edges(r.precision) for r in path])
        self.loglik_path_ = np.array([data.loglik(r.precision) for r in path])
        self.path_ = [_adjacency(r.precision) for r in path]
        self.__dict__.pop("edge_frequency_path_", None)
        if self.criterion == "ebic":
            scores = ebic_scores(self.loglik_path_, self.edges_path_, n=n, p=p, gamma=self.gamma)
            best = int(np.argmin(scores))
            self.criterion_scores_ = scores
            chosen, alpha = path[best], float(alphas[best])
        elif self.criterion == "stars":
            subs = self._subsamples(n, rng, default_subsample_size)

            def patterns_of(b):
                sub = SelectPath(standardize(X[subs[b]]), kw, self.penalize_diagonal)
                out = [sub.edge_pattern(r.precision) for r in sub.path(alphas)]
                if self.verbose:
                    print(f"StARS subsample {b + 1} of {len(subs)}", file=sys.stderr, flush=True)
                return out

            if parallel and len(subs) > 1:
                workers = None if self.n_jobs == -1 else int(self.n_jobs)
                with ThreadPoolExecutor(max_workers=workers) as ex:
                    patterns = list(ex.map(patterns_of, range(len(subs))))
            else:
                patterns = [patterns_of(b) for b in range(len(subs))]
            var, counts = stars_from_patterns(patterns, len(subs), p)
            best = stars_choice(var, self.stars_threshold)
            self.criterion_scores_ = var
            freq = counts[best] / len(subs)
            self.edge_frequency_ = (freq + freq.T).tocsr()
            self.edge_frequency_path_ = [((c + c.T) / len(subs)).tocsr() for c in counts]
            chosen, alpha = path[best], float(alphas[best])
        else:
            best = None
            rot = self._rotations(n, rng)
            alpha = ric_alpha_by_slabs(X if self.ric_data == "raw" else Z, rot)
            self.rotations_ = np.asarray(rot)
            chosen = data.fit(alpha)
        self.alpha_ = alpha
        self.selected_index_ = best
        self._result = chosen
        mapped = dataclasses.replace(chosen, precision=scale_sparse(chosen.precision, sd, True),
                                     covariance=scale_sparse(chosen.covariance, sd, False))
        self._store(mapped, p)
        self.location_ = X.mean(axis=0)
        self.n_samples_ = n
        return self

    def _check_params(self):
        """The grid size, threads, subsampling and rotation parameters, checked at fit
        before anything is sized by them (:class:`ParameterError` naming each)."""
        import numbers

        from ..core.params import check_n_jobs
        from .path import check_n_alphas

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
        self.method = method
        self.truncation = truncation

    def _check(self):
        if self.method not in _NPN_METHODS:
            raise ParameterError(f"method must be one of {', '.join(map(repr, _NPN_METHODS))}, "
                                 f"got {self.method!r}")

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def _fit(self, X):
        """The fit; returns the transformed training data (None for 'skeptic')."""
        from spargel.gaussian.npn import (npn_shrinkage, npn_truncation, skeptic_correlation,
                                          truncation_level)
        from spargel.gaussian.objective import as_matrix

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

        from spargel.gaussian.npn import skeptic_correlation
        from spargel.gaussian.objective import as_matrix

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
