"""Sparse Gaussian MRF estimators (sparse inverse covariance), scikit-learn style.

:class:`SparseGaussianMRF` fits ``min_K -log det K + tr(S K) + sum_ij L_ij
|K_ij|`` (or its block-l1 version) for one ``alpha``;
:class:`SparseGaussianMRFCV` picks ``alpha`` by cross-validated held-out
log-likelihood on a warm-started path. Both pass scikit-learn's
``check_estimator`` (see ``tests/gaussian/test_sklearn_checks.py``) without
importing scikit-learn themselves.

>>> import numpy as np
>>> from spargel.gaussian.estimator import SparseGaussianMRF
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((500, 5))
>>> X[:, 1] += 0.8 * X[:, 0]                     # one real dependency
>>> model = SparseGaussianMRF(alpha=0.15).fit(X)
>>> model.edges_.tolist()
[[0, 1]]
>>> bool(model.duality_gap_ <= 1e-6 * abs(model.objective_))
True
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import DataFormatError, NotFittedError
from ..core.params import ParamsMixin

__all__ = ["SparseGaussianMRF", "SparseGaussianMRFCV"]


def _log_likelihood(S_test, precision):
    """Mean Gaussian log-likelihood per sample given the test scatter
    ``S_test`` (around the mean the model uses)."""
    from .objective import logdet_pd

    n = precision.shape[0]
    ld, ok = logdet_pd(precision)
    if not ok:
        return -np.inf
    return 0.5 * (ld - float(np.vdot(S_test, precision)) - n * np.log(2 * np.pi))


def _feature_names(X):
    """Column names of a data frame (duck-typed: anything with ``.columns``)
    when they are all strings, else None. pandas is never imported."""
    cols = getattr(X, "columns", None)
    if cols is None or not hasattr(X, "shape") or isinstance(X, np.ndarray):
        return None
    names = list(cols)
    if names and all(isinstance(c, str) for c in names):
        return np.asarray(names, dtype=object)
    return None


def _check_no_constant_columns(S, penalize_diagonal, name="X"):
    if penalize_diagonal:
        return
    zero = np.flatnonzero(np.diag(S) == 0)
    if zero.size:
        raise DataFormatError(name, None, f"column {int(zero[0])} is constant (zero variance): its "
                              "precision is unbounded; remove constant columns or set "
                              "penalize_diagonal=True")


class _FittedMixin:
    """What both estimators do once fitted: scoring, names, plots."""

    def _check_fitted(self):
        if not hasattr(self, "precision_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")

    def __sklearn_is_fitted__(self):
        return hasattr(self, "precision_")

    def _data(self, X, *, reset):
        """Validate X (data, not a covariance); on ``reset`` remember the
        number and names of its columns, else check them."""
        from .objective import as_matrix

        names = _feature_names(X)
        if reset:
            if names is not None:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and names is None:
                warnings.warn(f"X does not have valid feature names, but {type(self).__name__} "
                              "was fitted with feature names", UserWarning, stacklevel=3)
            elif fitted is None and names is not None:
                warnings.warn(f"X has feature names, but {type(self).__name__} was fitted "
                              "without feature names", UserWarning, stacklevel=3)
            elif fitted is not None and (len(fitted) != len(names) or np.any(fitted != names)):
                raise ValueError("The feature names should match those that were passed "
                                 "during fit (same names, same order).")
        X = as_matrix(X, "X")
        if reset:
            self.n_features_in_ = X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X

    def _store(self, res, n_features):
        K = res.precision
        self.precision_ = K
        self.covariance_ = res.covariance
        self.objective_ = float(res.objective)
        self.dual_objective_ = float(res.dual_objective)
        self.duality_gap_ = float(res.duality_gap)
        self.n_iter_ = int(res.n_iter)
        self.converged_ = bool(res.converged)
        self.stop_reason_ = res.stop_reason
        self.history_ = list(res.history)
        self.costs_ = [(float(h["objective"]), float(h.get("duality_gap", np.nan)))
                       for h in res.history]
        self.solver_ = res.solver
        self.n_components_ = int(res.n_components)
        self.n_features_in_ = n_features
        iu, ju = np.nonzero(np.triu(K != 0, 1))
        self.edges_ = np.stack([iu, ju], axis=1).astype(np.int64)
        self.edge_weights_ = K[iu, ju].copy()

    def _test_scatter(self, X):
        from .objective import empirical_covariance

        X = self._data(X, reset=False)
        return empirical_covariance(X - self.location_, assume_centered=True)

    def score(self, X, y=None):
        """Mean log-likelihood of the samples X under N(location_, covariance_)
        (natural log, with the ``-n/2 log(2 pi)`` constant, as scikit-learn's
        ``GraphicalLasso.score``)."""
        self._check_fitted()
        return _log_likelihood(self._test_scatter(X), self.precision_)

    def get_precision(self):
        """The estimated precision matrix (scikit-learn's accessor)."""
        self._check_fitted()
        return self.precision_

    def plot(self, kind="graph", **kwargs):
        """Draw the learned graph (``kind='graph'``) or the sparsity pattern
        (``kind='pattern'``); needs matplotlib. Returns the matplotlib axes."""
        self._check_fitted()
        from .plot import plot_graph, plot_pattern

        if kind == "graph":
            return plot_graph(self.precision_, **kwargs)
        if kind == "pattern":
            return plot_pattern(self.precision_, **kwargs)
        raise ValueError(f"kind must be 'graph' or 'pattern', got {kind!r}")

    _estimator_kind = "density"

    def _more_sklearn_tags(self, tags):
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.target_tags.required = False


def _seed(rs):
    if rs is None:
        return 0
    if isinstance(rs, (int, np.integer)):
        return int(rs)
    if hasattr(rs, "integers"):
        return int(rs.integers(2**31))
    return int(rs.randint(2**31))


class SparseGaussianMRF(_FittedMixin, ParamsMixin):
    """Sparse Gaussian Markov random field by l1 / block-l1 penalised likelihood.

    Minimises ``-log det K + tr(S K) + sum_ij L_ij |K_ij|`` over positive
    definite K, S the maximum-likelihood covariance (divided by the number of
    samples). The full-matrix sum counts each off-diagonal pair twice, as in
    scikit-learn's ``GraphicalLasso`` and R's ``glasso`` (same ``alpha`` gives
    the same problem; R's ``glasso`` penalises the diagonal unless
    ``penalize.diagonal = FALSE``).

    Parameters
    ----------
    alpha : float or (n, n) array
        Scalar weight on every off-diagonal entry, or per-entry weights.
    covariance : None or 'precomputed'
        With 'precomputed', ``fit(S)`` takes an empirical covariance matrix
        instead of data (as scikit-learn's ``GraphicalLasso``); it is checked
        to be symmetric and positive semidefinite.
    blocks : None, group labels (length n), an (n, n) block-id matrix, or a
        list of blocks of (i, j) pairs; switches to the block-l1 penalty
        ``sum_k 2 lam_k max_{(i,j) in block k} |K_ij|`` with
        ``lam_k = alpha |block k|`` (``block_weight``).
    solver : 'auto' (Newton-CG for l1, Algorithm 3 for blocks), 'newton-cg',
        'newton-cd' or 'projected-gradient' (Algorithm 1 / 3 of Duchi et al. 2008).
    tol : stop when the certified duality gap <= tol * max(1, |objective|) of
        the standardised problem (invariant to the units of the variables).
    max_iter : iteration limit (default per solver: 100 / 100 / 1000 / 2000).
    assume_centered : if True the data are not centred before computing S.
    penalize_diagonal : also penalise the diagonal with ``alpha`` (default
        False; the diagonal is unpenalised, as in the paper's Lemma 1).
    block_weight : 'size', 'sqrt' or 'one' (block weights, see above).
    step_rule : block-l1 step: 'bb' (Barzilai-Borwein initial step of the
        Armijo search; default) or 'paper' (line 22 of Algorithm 3).
    screen : exact block-diagonal screening (plain l1 only).
    n_jobs : threads for independent screened components.
    client : a ``dask.distributed.Client`` (or None): the screened components are
        solved as tasks on its workers, with the same result (``docs/distributed.md``).
    warm_start : reuse the previous solution as the starting point.
    random_state : seed of the randomised l1-ball projection pivots (the
        solution does not depend on it).
    verbose : one line per iteration on stderr.

    Attributes
    ----------
    precision_, covariance_, location_ : the estimate K, its inverse, the mean.
    objective_, dual_objective_, duality_gap_ : certified optimality.
    n_iter_, converged_, stop_reason_ : iterations, convergence and why the
        solver stopped ('tol', 'max_iter', 'linesearch', ...).
    history_ : one dict per iteration (iteration, objective, duality_gap,
        active_edges, elapsed, ...); costs_ : ``(objective, duality_gap)`` per
        iteration (scikit-learn's name; NaN where the gap was not computed).
    edges_ : (E, 2) int array of the edges i < j (K_ij != 0);
    edge_weights_ : the corresponding K_ij.
    n_components_ : screened components. n_features_in_, feature_names_in_
        (when fitted on a data frame with string column names).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((100, 4))
    >>> m = SparseGaussianMRF(alpha=0.05, solver="projected-gradient").fit(X)
    >>> m.precision_.shape, m.converged_
    ((4, 4), True)
    >>> S = np.cov(X.T, bias=True)
    >>> p = SparseGaussianMRF(alpha=0.05, covariance="precomputed").fit(S)
    >>> bool(np.allclose(p.precision_, m.precision_, atol=1e-4))
    True
    """

    def __init__(self, alpha=0.01, *, covariance=None, blocks=None, solver="auto", tol=1e-6,
                 max_iter=None, assume_centered=False, penalize_diagonal=False,
                 block_weight="size", step_rule="bb", screen=True, n_jobs=1,
                 warm_start=False, random_state=None, verbose=False, client=None):
        self.alpha = alpha
        self.covariance = covariance
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
        self.client = client
        self.verbose = verbose

    def fit(self, X, y=None):
        """Fit from data X (n_samples, n_features), or from a covariance
        matrix when ``covariance='precomputed'``."""
        if self.covariance not in (None, "precomputed"):
            raise ValueError(f"covariance must be None or 'precomputed', got {self.covariance!r}")
        if self.covariance == "precomputed":
            return self.fit_covariance(X)
        from .objective import empirical_covariance

        X = self._data(X, reset=True)
        if X.shape[0] < 2:
            raise DataFormatError("X", None, f"need at least 2 samples to estimate a covariance, "
                                  f"got {X.shape[0]} sample")
        S = empirical_covariance(X, assume_centered=self.assume_centered)
        _check_no_constant_columns(S, self.penalize_diagonal)
        location = np.zeros(X.shape[1]) if self.assume_centered else X.mean(axis=0)
        self._fit_S(S, X.shape[0])
        self.location_ = location
        return self

    def fit_covariance(self, S, n_samples=None):
        """Fit from an empirical covariance S (``n_samples`` is informative),
        the same as ``covariance='precomputed'``."""
        from .objective import validate_covariance

        names = _feature_names(S)
        S = validate_covariance(S, check_psd=True)
        _check_no_constant_columns(S, self.penalize_diagonal, "S")
        self._fit_S(S, n_samples)
        self.location_ = np.zeros(S.shape[0])
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    def _fit_S(self, S, n_samples):
        from .solve import solve_gaussian

        warm = None
        if self.warm_start and hasattr(self, "_result") and \
                self._result.precision.shape == S.shape:
            warm = self._result
        res = solve_gaussian(S, self.alpha, blocks=self.blocks, solver=self.solver,
                             tol=self.tol, max_iter=self.max_iter,
                             penalize_diagonal=self.penalize_diagonal,
                             block_weight=self.block_weight, screen=self.screen,
                             step_rule=self.step_rule, warm_start=warm, n_jobs=self.n_jobs,
                             random_state=_seed(self.random_state), verbose=self.verbose,
                             validated=True, client=self.client)
        self._result = res
        self._store(res, S.shape[0])
        self.n_samples_ = n_samples
        return self


def _kfold(X, n_samples, cv, random_state):
    """(train, test) index pairs: ``cv`` folds (contiguous, as scikit-learn's
    ``KFold``; shuffled when ``random_state`` is given), a splitter object
    with ``split(X)``, or an iterable of pairs."""
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        k = int(cv)
        if k < 2:
            raise ValueError(f"cv must be >= 2 folds, got {k}")
        if k > n_samples:
            raise ValueError(f"cv={k} folds but only {n_samples} samples")
        idx = np.arange(n_samples)
        if random_state is not None:
            np.random.default_rng(_seed(random_state)).shuffle(idx)
        folds = np.array_split(idx, k)
        return [(np.sort(np.setdiff1d(idx, f)), f) for f in folds]
    splits = list(cv.split(X)) if hasattr(cv, "split") else list(cv)
    if not splits:
        raise ValueError("cv gave no splits")
    return [(np.asarray(a), np.asarray(b)) for a, b in splits]


def _cv_fold(X, tr, te, f, alphas, kw, assume_centered, center_test, penalize_diagonal):
    """Held-out scores and edge counts along the path of one fold (a plain function:
    with a Dask client it runs on a worker)."""
    from .objective import empirical_covariance
    from .path import gaussian_path

    n = X.shape[1]
    Xtr, Xte = X[tr], X[te]
    if Xtr.shape[0] < 2 or Xte.shape[0] < 1:
        raise ValueError(f"fold {f} has {Xtr.shape[0]} training and {Xte.shape[0]} test "
                         "samples; need at least 2 and 1")
    Str = empirical_covariance(Xtr, assume_centered=assume_centered)
    _check_no_constant_columns(Str, penalize_diagonal, f"X (training part of fold {f})")
    if assume_centered:
        loc = np.zeros(n)
    elif center_test == "test":
        loc = Xte.mean(axis=0)
    else:
        loc = Xtr.mean(axis=0)
    Ste = empirical_covariance(Xte - loc, assume_centered=True)
    scores = np.full(alphas.size, -np.inf)
    edges = np.zeros(alphas.size)
    for k, res in enumerate(gaussian_path(Str, alphas, **kw)):
        scores[k] = _log_likelihood(Ste, res.precision)
        edges[k] = np.count_nonzero(np.triu(res.precision, 1))
    return scores, edges


class SparseGaussianMRFCV(_FittedMixin, ParamsMixin):
    """:class:`SparseGaussianMRF` with ``alpha`` chosen by cross-validation.

    For each fold a warm-started path over ``alphas`` (by default a geometric
    grid from ``alpha_max``, where the graph is empty, down to
    ``alpha_min_ratio * alpha_max``) is fitted on the training part and scored
    by the mean held-out log-likelihood; the alpha with the best average is
    refitted on all data.

    The held-out score is the log-likelihood of the test fold under the
    fitted model ``N(mean of the training part, K^-1)`` (``center_test=
    'train'``, what :meth:`score` computes for new data). scikit-learn's
    ``GraphicalLassoCV`` instead centres each test fold on its *own* mean;
    ``center_test='test'`` reproduces that (and its choice of alpha).

    Parameters
    ----------
    alphas : int (grid size) or a list of alphas.
    cv : number of folds (contiguous folds as scikit-learn's ``KFold``;
        shuffled with ``random_state``), a splitter with ``split(X)``, or an
        iterable of (train, test) index pairs.
    center_test : 'train' (default) or 'test', see above.
    client : a ``dask.distributed.Client`` (or None): the folds' paths run on its
        workers (``X`` is sent once), and so do the screened components of the refit,
        with the same result (``docs/distributed.md``).
    Other parameters as in :class:`SparseGaussianMRF`.

    Attributes
    ----------
    alpha_ : the chosen alpha. alphas_ : the grid (decreasing).
    cv_results_ : dict with scikit-learn's keys 'alphas', 'split{k}_test_score',
        'mean_test_score', 'std_test_score', plus 'mean_edges'.
    and every attribute of :class:`SparseGaussianMRF` for the refit.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 6)); X[:, 1] += X[:, 0]
    >>> cvm = SparseGaussianMRFCV(alphas=5, cv=3).fit(X)
    >>> cvm.alpha_ in cvm.alphas_, sorted(cvm.cv_results_)[:2]
    (True, ['alphas', 'mean_edges'])
    """

    def __init__(self, alphas=10, *, alpha_min_ratio=0.01, cv=5, center_test="train",
                 blocks=None, solver="auto", tol=1e-6, max_iter=None, assume_centered=False,
                 penalize_diagonal=False, block_weight="size", screen=True, n_jobs=1,
                 random_state=None, verbose=False, client=None):
        self.alphas = alphas
        self.alpha_min_ratio = alpha_min_ratio
        self.cv = cv
        self.center_test = center_test
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
        self.client = client

    def fit(self, X, y=None):
        import sys

        from .objective import empirical_covariance
        from .path import alpha_grid, gaussian_path

        if self.center_test not in ("train", "test"):
            raise ValueError(f"center_test must be 'train' or 'test', got {self.center_test!r}")
        X = self._data(X, reset=True)
        m, n = X.shape
        if m < 2:
            raise DataFormatError("X", None, f"need at least 2 samples to estimate a covariance, "
                                  f"got {m} sample")
        S = empirical_covariance(X, assume_centered=self.assume_centered)
        _check_no_constant_columns(S, self.penalize_diagonal)
        if isinstance(self.alphas, (int, np.integer)) and not isinstance(self.alphas, bool):
            alphas = alpha_grid(S, int(self.alphas), self.alpha_min_ratio,
                                blocks=self.blocks, block_weight=self.block_weight)
        else:
            try:
                alphas = np.sort(np.asarray(self.alphas, dtype=np.float64).ravel())[::-1]
            except (TypeError, ValueError):
                alphas = np.zeros(0)
            if alphas.size == 0 or np.any(~np.isfinite(alphas)) or np.any(alphas < 0):
                raise ValueError("alphas must be a grid size or a non-empty list of finite "
                                 f"non-negative numbers, got {self.alphas!r}")
        kw = dict(blocks=self.blocks, solver=self.solver, tol=self.tol,
                  max_iter=self.max_iter, penalize_diagonal=self.penalize_diagonal,
                  block_weight=self.block_weight, screen=self.screen, n_jobs=self.n_jobs)
        splits = _kfold(X, m, self.cv, self.random_state)
        scores = np.full((len(splits), alphas.size), -np.inf)
        edges = np.zeros((len(splits), alphas.size))
        args = (alphas, kw, self.assume_centered, self.center_test, self.penalize_diagonal)
        if self.client is None:
            rows = [_cv_fold(X, tr, te, f, *args) for f, (tr, te) in enumerate(splits)]
        else:
            from .scaleout import map_folds
            rows = map_folds(self.client, _cv_fold, X, splits, args)
        for f, (sc, ed) in enumerate(rows):
            scores[f], edges[f] = sc, ed
            if self.verbose:
                print(f"fold {f}: best alpha {alphas[int(np.argmax(scores[f]))]:.4g}",
                      file=sys.stderr, flush=True)
        mean = scores.mean(axis=0)
        best = int(np.argmax(mean))
        self.alphas_ = alphas
        self.alpha_ = float(alphas[best])
        results = {"alphas": alphas}
        for f in range(len(splits)):
            results[f"split{f}_test_score"] = scores[f]
        results["mean_test_score"] = mean
        results["std_test_score"] = scores.std(axis=0)
        results["mean_edges"] = edges.mean(axis=0)
        self.cv_results_ = results
        # refit on all data along the path down to the chosen alpha (warm starts)
        path = gaussian_path(S, alphas[:best + 1], client=self.client, **kw)
        self._store(path[-1], n)
        self._result = path[-1]
        self.location_ = np.zeros(n) if self.assume_centered else X.mean(axis=0)
        self.n_samples_ = m
        return self
