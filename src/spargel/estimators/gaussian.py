"""Sparse Gaussian MRF estimators (sparse inverse covariance), scikit-learn style.

:class:`SparseGaussianMRF` fits ``min_K -log det K + tr(S K) + sum_ij L_ij
|K_ij|`` (or its block-l1 version) for one ``alpha``;
:class:`SparseGaussianMRFCV` picks ``alpha`` by cross-validated held-out
log-likelihood on a warm-started path.

>>> import numpy as np
>>> from spargel.estimators.gaussian import SparseGaussianMRF
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((500, 5))
>>> X[:, 1] += 0.8 * X[:, 0]                     # one real dependency
>>> model = SparseGaussianMRF(alpha=0.15).fit(X)
>>> model.edges_.tolist()
[[0, 1]]
>>> bool(model.duality_gap_ <= 1e-6 * abs(model.objective_) + 1e-12)
True
"""

from __future__ import annotations

import numpy as np

from .base import ParamsMixin

__all__ = ["SparseGaussianMRF", "SparseGaussianMRFCV"]


def _log_likelihood(S_test, precision):
    """Mean Gaussian log-likelihood per sample given the test scatter
    ``S_test`` (around the training mean) — scikit-learn's convention."""
    from spargel.gaussian.objective import logdet_pd

    n = precision.shape[0]
    ld, ok = logdet_pd(precision)
    if not ok:
        return -np.inf
    return 0.5 * (ld - float(np.vdot(S_test, precision)) - n * np.log(2 * np.pi))


class _FittedMixin:
    def _check_fitted(self):
        if not hasattr(self, "precision_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(X) first")

    def _store(self, res, n_features):
        K = res.precision
        self.precision_ = K
        self.covariance_ = res.covariance
        self.objective_ = float(res.objective)
        self.dual_objective_ = float(res.dual_objective)
        self.duality_gap_ = float(res.duality_gap)
        self.n_iter_ = int(res.n_iter)
        self.converged_ = bool(res.converged)
        self.history_ = list(res.history)
        self.solver_ = res.solver
        self.n_components_ = int(res.n_components)
        self.n_features_in_ = n_features
        iu, ju = np.nonzero(np.triu(K != 0, 1))
        self.edges_ = np.stack([iu, ju], axis=1).astype(np.int64)
        self.edge_weights_ = K[iu, ju].copy()

    def _test_scatter(self, X):
        from spargel.gaussian.objective import empirical_covariance

        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_samples, {self.n_features_in_}), got {X.shape}")
        return empirical_covariance(X - self.location_, assume_centered=True)

    def score(self, X, y=None):
        """Mean log-likelihood of the samples X under N(location_, covariance_)."""
        self._check_fitted()
        return _log_likelihood(self._test_scatter(X), self.precision_)

    def get_precision(self):
        self._check_fitted()
        return self.precision_

    def plot(self, kind="graph", **kwargs):
        """Draw the learned graph (``kind='graph'``) or the sparsity pattern
        (``kind='pattern'``); needs matplotlib. Returns the matplotlib axes."""
        self._check_fitted()
        from spargel.gaussian.plot import plot_graph, plot_pattern

        if kind == "graph":
            return plot_graph(self.precision_, **kwargs)
        if kind == "pattern":
            return plot_pattern(self.precision_, **kwargs)
        raise ValueError(f"kind must be 'graph' or 'pattern', got {kind!r}")


class SparseGaussianMRF(_FittedMixin, ParamsMixin):
    """Sparse Gaussian Markov random field by l1 / block-l1 penalised likelihood.

    Minimises ``-log det K + tr(S K) + sum_ij L_ij |K_ij|`` over positive
    definite K, S the maximum-likelihood covariance (divided by the number of
    samples). The full-matrix sum counts each off-diagonal pair twice, as in
    scikit-learn's ``GraphicalLasso`` (same ``alpha`` gives the same problem).

    Parameters
    ----------
    alpha : float or (n, n) array
        Scalar weight on every off-diagonal entry, or per-entry weights.
    blocks : None, group labels (length n), an (n, n) block-id matrix, or a
        list of blocks of (i, j) pairs; switches to the block-l1 penalty
        ``sum_k 2 lam_k max_{(i,j) in block k} |K_ij|`` with
        ``lam_k = alpha |block k|`` (``block_weight``).
    solver : 'auto' (Newton-CD for l1, Algorithm 3 for blocks), 'newton-cd'
        or 'projected-gradient' (Algorithm 1 / 3 of Duchi et al. 2008).
    tol : stop when the certified duality gap <= tol * max(1, |objective|).
    max_iter : iteration limit (default per solver: 100 / 1000 / 2000).
    assume_centered : if True the data are not centred before computing S.
    penalize_diagonal : also penalise the diagonal with ``alpha`` (default
        False; the diagonal is unpenalised, as in the paper's Lemma 1).
    block_weight : 'size', 'sqrt' or 'one' (block weights, see above).
    step_rule : block-l1 step: 'bb' (Barzilai-Borwein initial step of the
        Armijo search; default) or 'paper' (line 22 of Algorithm 3).
    screen : exact block-diagonal screening (plain l1 only).
    n_jobs : threads for independent screened components.
    warm_start : reuse the previous solution as the starting point.
    random_state : seed of the randomised l1-ball projection pivots (the
        solution does not depend on it).
    verbose : print one line per iteration.

    Attributes
    ----------
    precision_, covariance_, location_ : the estimate K, its inverse, the mean.
    objective_, dual_objective_, duality_gap_ : certified optimality.
    n_iter_, converged_, history_ : iterations, convergence, and one dict
        per iteration (iteration, objective, duality_gap, active_edges, elapsed).
    edges_ : (E, 2) int array of the edges i < j (K_ij != 0);
    edge_weights_ : the corresponding K_ij.
    n_components_ : screened components.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((100, 4))
    >>> m = SparseGaussianMRF(alpha=0.05, solver="projected-gradient").fit(X)
    >>> m.precision_.shape, m.converged_
    ((4, 4), True)
    """

    def __init__(self, alpha=0.01, *, blocks=None, solver="auto", tol=1e-6,
                 max_iter=None, assume_centered=False, penalize_diagonal=False,
                 block_weight="size", step_rule="bb", screen=True, n_jobs=1,
                 warm_start=False, random_state=None, verbose=False):
        self.alpha = alpha
        self.blocks = blocks
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.assume_centered = assume_centered
        self.penalize_diagonal = penalize_diagonal
        self.block_weight = block_weight
        self.step_rule = step_rule
        self.screen = screen
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None):
        """Fit from data X (n_samples, n_features)."""
        from spargel.gaussian.objective import empirical_covariance

        S = empirical_covariance(X, assume_centered=self.assume_centered)
        Xa = np.asarray(X, dtype=np.float64)
        location = np.zeros(Xa.shape[1]) if self.assume_centered else Xa.mean(axis=0)
        self._fit_S(S, Xa.shape[0])
        self.location_ = location
        return self

    def fit_covariance(self, S, n_samples=None):
        """Fit from an empirical covariance S (``n_samples`` is informative)."""
        from spargel.gaussian.objective import validate_covariance

        S = validate_covariance(S)
        self._fit_S(S, n_samples)
        self.location_ = np.zeros(S.shape[0])
        return self

    def _fit_S(self, S, n_samples):
        from spargel.gaussian.solve import solve_gaussian

        rs = self.random_state
        if rs is None:
            seed = 0
        elif isinstance(rs, (int, np.integer)):
            seed = int(rs)
        else:
            seed = int(np.random.default_rng(rs).integers(2**31)) if not hasattr(rs, "randint") \
                else int(rs.randint(2**31))
        warm = None
        if self.warm_start and hasattr(self, "_result") and \
                self._result.precision.shape == S.shape:
            warm = self._result
        res = solve_gaussian(S, self.alpha, blocks=self.blocks, solver=self.solver,
                             tol=self.tol, max_iter=self.max_iter,
                             penalize_diagonal=self.penalize_diagonal,
                             block_weight=self.block_weight, screen=self.screen,
                             step_rule=self.step_rule, warm_start=warm, n_jobs=self.n_jobs, random_state=seed,
                             verbose=self.verbose, validated=True)
        self._result = res
        self._store(res, S.shape[0])
        self.n_samples_ = n_samples
        return self


def _kfold(n_samples, cv, random_state):
    if isinstance(cv, (int, np.integer)):
        k = int(cv)
        if k < 2:
            raise ValueError(f"cv must be >= 2 folds, got {k}")
        if k > n_samples:
            raise ValueError(f"cv={k} folds but only {n_samples} samples")
        idx = np.arange(n_samples)
        if random_state is not None:
            np.random.default_rng(random_state).shuffle(idx)
        folds = np.array_split(idx, k)
        return [(np.setdiff1d(idx, f), f) for f in folds]
    splits = list(cv)
    if not splits:
        raise ValueError("cv gave no splits")
    return [(np.asarray(a), np.asarray(b)) for a, b in splits]


class SparseGaussianMRFCV(_FittedMixin, ParamsMixin):
    """:class:`SparseGaussianMRF` with ``alpha`` chosen by cross-validation.

    For each fold a warm-started path over ``alphas`` (by default a geometric
    grid from ``alpha_max``, where the graph is empty, down to
    ``alpha_min_ratio * alpha_max``) is fitted on the training part and scored
    by the mean held-out log-likelihood; the alpha with the best average is
    refitted on all data.

    Parameters
    ----------
    alphas : int (grid size) or a list of alphas.
    cv : number of folds, or an iterable of (train, test) index pairs.
    Other parameters as in :class:`SparseGaussianMRF`.

    Attributes
    ----------
    alpha_ : the chosen alpha. alphas_ : the grid (decreasing).
    cv_results_ : dict with 'alphas', 'mean_test_score', 'std_test_score',
        'split_test_scores' (n_folds, n_alphas), 'mean_edges'.
    and every attribute of :class:`SparseGaussianMRF` for the refit.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 6)); X[:, 1] += X[:, 0]
    >>> cvm = SparseGaussianMRFCV(alphas=5, cv=3, random_state=0).fit(X)
    >>> cvm.alpha_ in cvm.alphas_
    True
    """

    def __init__(self, alphas=10, *, alpha_min_ratio=0.01, cv=5, blocks=None,
                 solver="auto", tol=1e-6, max_iter=None, assume_centered=False,
                 penalize_diagonal=False, block_weight="size", screen=True,
                 n_jobs=1, random_state=None, verbose=False):
        self.alphas = alphas
        self.alpha_min_ratio = alpha_min_ratio
        self.cv = cv
        self.blocks = blocks
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.assume_centered = assume_centered
        self.penalize_diagonal = penalize_diagonal
        self.block_weight = block_weight
        self.screen = screen
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None):
        from spargel.gaussian.objective import empirical_covariance
        from spargel.gaussian.path import alpha_grid, gaussian_path

        S = empirical_covariance(X, assume_centered=self.assume_centered)
        X = np.asarray(X, dtype=np.float64)
        m, n = X.shape
        if isinstance(self.alphas, (int, np.integer)):
            alphas = alpha_grid(S, int(self.alphas), self.alpha_min_ratio,
                                blocks=self.blocks, block_weight=self.block_weight)
        else:
            alphas = np.sort(np.asarray(self.alphas, dtype=np.float64).ravel())[::-1]
            if alphas.size == 0 or np.any(~np.isfinite(alphas)) or np.any(alphas < 0):
                raise ValueError("alphas must be a non-empty list of finite non-negative numbers")
        kw = dict(blocks=self.blocks, solver=self.solver, tol=self.tol,
                  max_iter=self.max_iter, penalize_diagonal=self.penalize_diagonal,
                  block_weight=self.block_weight, screen=self.screen, n_jobs=self.n_jobs)
        splits = _kfold(m, self.cv, self.random_state)
        scores = np.full((len(splits), alphas.size), -np.inf)
        edges = np.zeros((len(splits), alphas.size))
        for f, (tr, te) in enumerate(splits):
            Xtr, Xte = X[tr], X[te]
            Str = empirical_covariance(Xtr, assume_centered=self.assume_centered)
            loc = np.zeros(n) if self.assume_centered else Xtr.mean(axis=0)
            Ste = empirical_covariance(Xte - loc, assume_centered=True)
            for k, res in enumerate(gaussian_path(Str, alphas, **kw)):
                scores[f, k] = _log_likelihood(Ste, res.precision)
                edges[f, k] = np.count_nonzero(np.triu(res.precision, 1))
            if self.verbose:
                print(f"fold {f}: best alpha {alphas[int(np.argmax(scores[f]))]:.4g}")
        mean = scores.mean(axis=0)
        best = int(np.argmax(mean))
        self.alphas_ = alphas
        self.alpha_ = float(alphas[best])
        self.cv_results_ = {"alphas": alphas, "mean_test_score": mean,
                            "std_test_score": scores.std(axis=0),
                            "split_test_scores": scores, "mean_edges": edges.mean(axis=0)}
        # refit on all data along the path down to the chosen alpha (warm starts)
        path = gaussian_path(S, alphas[:best + 1], **kw)
        self._store(path[-1], n)
        self.location_ = np.zeros(n) if self.assume_centered else X.mean(axis=0)
        self.n_samples_ = m
        return self
