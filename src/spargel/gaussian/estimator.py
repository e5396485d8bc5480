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
>>> bool(model.duality_gap_ <= 1e-10 * abs(model.objective_))
True
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.first_use import announces_compiles
from ..errors import DataFormatError, ModelFileError, NotFittedError, ParameterError
from ..core.interrupts import ctrl_c_stops, note_interrupt, reraise_interrupt
from ..core.params import check_n_jobs, keep_arguments, ParamsMixin

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


def _issparse(A):
    return hasattr(A, "tocoo") and hasattr(A, "nnz")


def _sparse_triu(K):
    """The strict upper triangle of a sparse K as COO (explicit zeros dropped)."""
    from scipy.sparse import triu

    upper = triu(K, 1).tocoo()
    keep = upper.data != 0
    upper.data, upper.row, upper.col = upper.data[keep], upper.row[keep], upper.col[keep]
    return upper


def _sparse_log_likelihood(Xc, K):
    """Mean Gaussian log-likelihood of the centred samples ``Xc`` under a sparse
    precision K (no p x p array: ``log det K`` from a Cholesky factorisation per
    connected component of K, the quadratic forms from ``K Xc^T``)."""
    from .from_data_select import held_out_loglik

    return held_out_loglik(Xc, K)


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
    """A zero variance (S's diagonal, or the vector of variances) is refused unless the
    diagonal is penalised."""
    if penalize_diagonal:
        return
    zero = np.flatnonzero((np.diag(S) if np.ndim(S) == 2 else S) == 0)
    if zero.size:
        raise DataFormatError(name, None, f"column {int(zero[0])} is constant (zero variance): its "
                              "precision is unbounded; remove constant columns or set "
                              "penalize_diagonal=True")


_MODES = ("cd", "lars")
_COVARIANCE = (None, "dense", "precomputed", "from_data", "auto")
#: covariance='auto' takes the from-data path from this many variables on (with fewer
#: samples than variables)
AUTO_FROM_DATA_P = 2000


def _from_data_choice(est, shape, alpha_ndim, dense_only=("precomputed",)):
    """Whether ``est.covariance`` takes the from-data path for data of ``shape``:
    'from_data' always (then ``blocks`` must be None), 'auto' with n < p,
    p >= ``AUTO_FROM_DATA_P``, a scalar alpha and no blocks. A value in
    ``dense_only`` (fit from a covariance) is refused: these estimators need samples."""
    cov = est.covariance
    if cov not in _COVARIANCE or cov in dense_only:
        allowed = [repr(c) for c in _COVARIANCE if c not in dense_only]
        raise ParameterError(f"covariance must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                             f"got {cov!r}")
    blocks = getattr(est, "blocks", None)
    if cov == "from_data" and blocks is not None:
        raise ParameterError("covariance='from_data' solves the plain l1 problem; block "
                             "penalties need the dense path (covariance=None)")
    if blocks is not None or alpha_ndim != 0:
        return cov == "from_data"
    if cov is None:
        # the default is dense, unless its p x p arrays would not fit in memory
        from .from_data import default_max_component

        return shape[1] > default_max_component()
    return cov == "from_data" or (cov == "auto" and shape[0] < shape[1] and
                                  shape[1] >= AUTO_FROM_DATA_P)


def _check_compat(est):
    """scikit-learn's ``mode``, ``enet_tol`` and ``eps``: accepted and checked, and
    without effect (see the class docstring)."""
    if est.mode not in _MODES:
        raise ParameterError(f"mode must be 'cd' or 'lars', got {est.mode!r}")
    check_n_jobs(est.n_jobs)
    for name in ("enet_tol", "eps"):
        v = getattr(est, name)
        if isinstance(v, (bool, str)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ParameterError(f"{name} must be a number, got {v!r}")
        if not (np.isfinite(v) and v > 0):
            raise ParameterError(f"{name} must be a finite number > 0, got {v!r}")


def check_n_features(est, X):
    """scikit-learn's error when X's number of columns is not the fitted one."""
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input.")


def need_samples(X, least, purpose):
    """A clear error when X has fewer than ``least`` samples (``purpose``: what for)."""
    m = X.shape[0]
    if m < least:
        raise DataFormatError("X", None, f"need at least {least} samples to {purpose}, got "
                              f"{m} sample{'s' if m != 1 else ''}")


class PrecisionFitted:
    """Fitted once ``precision_`` exists (every Gaussian estimator)."""

    def _check_fitted(self):
        if not hasattr(self, "precision_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")

    def __sklearn_is_fitted__(self):
        return hasattr(self, "precision_")


class _FittedMixin(PrecisionFitted):
    """What both estimators do once fitted: scoring, names, plots."""

    def _data(self, X, *, reset, least=1, purpose=""):
        """Validate X (data, not a covariance); on ``reset`` remember the
        number and names of its columns, else check them. At least ``least``
        samples are required (``purpose`` says what for)."""
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
        else:
            check_n_features(self, X)
        need_samples(X, least, purpose)
        return X

    def _store(self, res, n_features):
        K = res.precision
        self.precision_ = K                  # scipy.sparse on the from-data path
        self.covariance_ = res.covariance
        self.objective_ = float(res.objective)
        self.dual_objective_ = float(res.dual_objective)
        self.duality_gap_ = float(res.duality_gap)
        self.n_iter_ = int(res.n_iter)
        self.converged_ = bool(res.converged)
        self.stop_reason_ = res.stop_reason
        self.history_ = list(res.history)
        self.costs_ = [(float(f), float(g)) for f, g in res.costs]
        self.solver_ = res.solver
        self.n_components_ = int(res.n_components)
        self.n_features_in_ = n_features
        self._set_edges(K)

    def _set_edges(self, K):
        """``edges_`` (i < j, K_ij != 0, row-major order) and ``edge_weights_`` of K."""
        if _issparse(K):
            upper = _sparse_triu(K)
            order = np.lexsort((upper.col, upper.row))
            iu, ju = upper.row[order].astype(np.int64), upper.col[order].astype(np.int64)
            self.edges_ = np.stack([iu, ju], axis=1).reshape(-1, 2)
            self.edge_weights_ = upper.data[order].copy()
        else:
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
        if _issparse(self.precision_):
            X = self._data(X, reset=False) - self.location_
            return _sparse_log_likelihood(X, self.precision_)
        return _log_likelihood(self._test_scatter(X), self.precision_)

    def get_precision(self):
        """The estimated precision matrix (scikit-learn's accessor)."""
        self._check_fitted()
        return self.precision_

    def plot(self, kind="graph", **kwargs):
        """Draw the learned graph (``kind='graph'``: legend for edge sign and
        strength, hubs labelled on large graphs), the clustered heat map of the
        partial correlations (``'heatmap'``), both side by side (``'overview'``)
        or the sparsity pattern (``'pattern'``); needs matplotlib. Variable names
        default to ``feature_names_in_``. Returns the matplotlib axes."""
        self._check_fitted()
        from .plot import plot_graph, plot_heatmap, plot_overview, plot_pattern

        names = getattr(self, "feature_names_in_", None)
        if names is not None and kind != "pattern":
            kwargs.setdefault("labels", list(names))
        draw = {"graph": plot_graph, "heatmap": plot_heatmap, "overview": plot_overview,
                "pattern": plot_pattern}.get(kind)
        if draw is None:
            raise ValueError(f"kind must be 'graph', 'heatmap', 'overview' or 'pattern', got "
                             f"{kind!r}")
        K = self.precision_.toarray() if _issparse(self.precision_) else self.precision_
        return draw(K, **kwargs)

    _estimator_kind = "density"

    def _more_sklearn_tags(self, tags):
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.target_tags.required = False

    # -- model files ----------------------------------------------------------------------
    #: fitted scalars kept in a model file (the per-iteration history_ is not kept)
    _SCALARS = ("objective_", "dual_objective_", "duality_gap_", "n_iter_", "converged_",
                "stop_reason_", "solver_", "n_components_", "n_samples_", "alpha_", "criterion_",
                "selected_index_")
    #: fitted arrays kept (when present), with the dtype they must have
    _ARRAYS = (("alphas_", "f"), ("criterion_scores_", "f"), ("edges_path_", "i"),
               ("loglik_path_", "f"), ("edge_frequency_", "f"), ("rotations_", "i"))

    def save(self, path):
        """Write the fitted model to ``path`` in spargel's safe model format (numeric
        arrays and a checksummed JSON header; never a pickle). Kept: the parameters
        that are plain values (an ``alpha`` matrix as an array; ``blocks`` and
        ``client`` are not kept), precision, covariance, location, costs, the
        certificate and, for the CV and selection estimators, the alphas tried
        with their scores. Not kept: ``history_``. A model fitted on the
        from-data path keeps its sparse matrices sparse (their CSR arrays; no
        p x p array is formed)."""
        from ..core import model_file as io
        from .sparse_file import csr_arrays

        self._check_fitted()
        params = {k: v for k, v in self.get_params().items()
                  if k not in ("client", "blocks", "subsamples", "rotations")
                  and isinstance(v, (bool, int, float, str, type(None)))}
        meta = {"estimator": type(self).__name__, "params": params, "fitted": {}}
        for name in self._SCALARS:
            v = getattr(self, name, None)
            if isinstance(v, (np.integer, np.floating, np.bool_)):
                v = v.item()
            if isinstance(v, (bool, int, float, str)):
                meta["fitted"][name] = v
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            meta["feature_names"] = [str(v) for v in names]
        arrays, sparse = {}, []                       # sparse: names kept as CSR arrays
        fitted = [("precision", self.precision_, "f"), ("covariance", self.covariance_, "f"),
                  ("location", self.location_, "f"),
                  ("costs", np.asarray(self.costs_, dtype=np.float64).reshape(-1, 2), "f")]
        if isinstance(self.get_params().get("alpha"), (np.ndarray, list, tuple)):
            fitted.append(("alpha", self.alpha, "f"))
        fitted += [(name, getattr(self, name, None), kind) for name, kind in self._ARRAYS]
        for name, v, kind in fitted:
            if _issparse(v):
                arrays.update(csr_arrays(name, v))
                sparse.append(name)
            elif v is not None:
                arrays[name] = np.asarray(v, dtype=np.float64 if kind == "f" else np.int64)
        if sparse:
            meta["sparse"] = sparse
        cvr = getattr(self, "cv_results_", None)
        if cvr is not None:
            meta["cv_keys"] = list(cvr)
            arrays["cv_results"] = np.vstack([np.asarray(cvr[k], dtype=np.float64) for k in cvr])
        io.save_arrays(path, "gaussian-mrf", meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` of this class; everything is checked
        (shapes, finiteness, a symmetric positive definite precision) before use."""
        from ..core import model_file as io
        from .objective import lapack_threads

        meta, a = io.load_arrays(path, "gaussian-mrf")
        req = io.require
        req(isinstance(meta, dict) and isinstance(meta.get("params"), dict) and
            isinstance(meta.get("fitted"), dict), path, "its header lacks params / fitted values")
        what = meta.get("estimator")
        if what != cls.__name__:
            raise ModelFileError(f"{path}: holds a {what!r} model; load it with "
                                 f"{what}.load, not {cls.__name__}.load")
        sparse = meta.get("sparse", [])
        req(sparse == [] or (isinstance(sparse, list) and all(isinstance(v, str) for v in sparse)
                             and {"precision", "covariance"} <= set(sparse) <=
                             {"precision", "covariance", "edge_frequency_"}),
            path, "its list of sparse matrices is not valid")
        for name in ("location", "costs") + (() if sparse else ("precision", "covariance")):
            req(name in a and a[name].dtype == np.float64, path, f"array {name!r} missing or "
                "not float64")
        loc = a["location"]
        if sparse:                                    # the from-data path: CSR arrays
            from .sparse_file import check_precision, read_csr

            req(loc.ndim == 1 and loc.shape[0] >= 1, path, "location is not a vector")
            p = loc.shape[0]
            for name in sparse:
                a[name] = read_csr(a, name, p, path)
            K, C = a["precision"], a["covariance"]
            check_precision(K, C, K.nnz + C.nnz + p, path)
        else:
            K, C = a["precision"], a["covariance"]
            req(K.ndim == 2 and K.shape[0] == K.shape[1] >= 1, path, "precision is not square")
            p = K.shape[0]
            req(C.shape == (p, p) and loc.shape == (p,), path,
                "covariance / location do not match the precision's size")
            req(np.all(np.isfinite(K)) and np.all(np.isfinite(C)), path, "non-finite values")
            req(np.array_equal(K, K.T), path, "precision is not symmetric")
            try:
                with lapack_threads(p):
                    np.linalg.cholesky(K)
            except np.linalg.LinAlgError:
                raise ModelFileError(f"{path}: invalid model (precision is not positive "
                                     "definite)") from None
        req(np.all(np.isfinite(loc)), path, "non-finite values")
        req(a["costs"].ndim == 2 and a["costs"].shape[1] == 2, path, "costs is not (k, 2)")
        params = {k: v for k, v in meta["params"].items() if k in cls._param_names()}
        if "alpha" in a:
            req(a["alpha"].shape == (p, p) and np.all(np.isfinite(a["alpha"])) and
                np.all(a["alpha"] >= 0), path, "the alpha matrix does not match")
            params["alpha"] = a["alpha"]
        est = cls(**params)
        for name, v in meta["fitted"].items():
            if name in cls._SCALARS:
                req(isinstance(v, (bool, int, float, str)), path, f"{name} is not a plain value")
                setattr(est, name, v)
        for name, _ in cls._ARRAYS:
            if name in sparse:
                setattr(est, name, a[name])
            elif name in a:
                # (StARS stopped early: NaN past its last fitted alpha)
                ok = np.isfinite(a[name]) | (np.isnan(a[name]) if name == "criterion_scores_"
                                             else False)
                req(a[name].ndim >= 1 and np.all(ok), path, f"{name} has non-finite values")
                setattr(est, name, a[name])
        if "cv_results" in a:
            keys = meta.get("cv_keys")
            req(isinstance(keys, list) and all(isinstance(k, str) for k in keys) and
                a["cv_results"].ndim == 2 and a["cv_results"].shape[0] == len(keys), path,
                "cv_results do not match their keys")
            est.cv_results_ = {k: a["cv_results"][i].copy() for i, k in enumerate(keys)}
        names = meta.get("feature_names")
        if names is not None:
            req(isinstance(names, list) and len(names) == p and
                all(isinstance(v, str) for v in names), path, "feature names do not match")
            est.feature_names_in_ = np.asarray(names, dtype=object)
        est.precision_, est.covariance_, est.location_ = K.copy(), C.copy(), loc.copy()
        est.costs_ = [(float(f), float(g)) for f, g in a["costs"]]
        est.history_ = []
        est.n_features_in_ = p
        est._set_edges(est.precision_)
        if "alphas_" in a and hasattr(cls, "_subsamples"):        # a selection: its choice
            k = meta["fitted"].get("selected_index_")
            req(k is None or (type(k) is int and 0 <= k < a["alphas_"].size), path,
                "selected_index_ is not an index of alphas_")
            est.selected_index_ = k
        return est


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
    covariance : None, 'dense', 'precomputed', 'from_data' or 'auto'
        None (default): ``fit(X)`` forms the empirical covariance (p x p), unless
        its dense solve would not fit in the available memory (then, with a scalar
        ``alpha`` and no ``blocks``, 'from_data'); 'dense': always so. With 'precomputed', ``fit(S)`` takes an empirical covariance
        matrix instead of data (as scikit-learn's ``GraphicalLasso``); it is
        checked to be symmetric and positive semidefinite. With 'from_data'
        the p x p covariance is never formed (for n << p): screening
        ``|S_ij| > alpha`` is computed from the data by blocks of columns,
        each connected component is solved on its own covariance block (a
        large component with a sparse screened graph on its sparse pattern,
        never forming a dense matrix: solver 'sparse-newton-cg', see
        :mod:`spargel.gaussian.sparse_newton`), and ``precision_`` /
        ``covariance_`` are ``scipy.sparse.csr_matrix`` (block diagonal on the
        components; a component solved on its pattern has ``covariance_`` only
        on the precision's non-zeros, as the whole inverse is dense); it takes
        a scalar ``alpha`` and no ``blocks``, and ignores ``warm_start``. 'auto': 'from_data' when the
        data have fewer samples than variables and at least
        ``AUTO_FROM_DATA_P`` (2,000) variables, a scalar ``alpha`` and no
        ``blocks``; else dense.
    max_component : from-data path only: the most variables a screened
        component may have (None: no limit; a component too large for a dense
        solve in the available memory, or large with a sparse screened graph, is
        solved on its sparse pattern); a larger one raises
        ``ComponentTooLargeError`` naming the ``alpha`` that would split it.
    blocks : None, group labels (length n), an (n, n) block-id matrix, or a
        list of blocks of (i, j) pairs; switches to the block-l1 penalty
        ``sum_k 2 lam_k max_{(i,j) in block k} |K_ij|`` with
        ``lam_k = alpha |block k|`` (``block_weight``).
    solver : 'auto' (Newton-CG for l1, Algorithm 3 for blocks; on the from-data
        path large sparse components on their pattern), 'newton-cg',
        'newton-cd', 'projected-gradient' (Algorithm 1 / 3 of Duchi et al. 2008)
        or, from data only, 'sparse-newton-cg' (every component on its sparse
        pattern; ``tol`` then bounds the largest entry of the minimum-norm
        subgradient on the standardised scale, default 1e-7).
    tol : stop when the certified duality gap <= tol * max(1, |objective|) of
        the standardised problem (invariant to the units of the variables);
        None (default): 1e-10 for the Newton solvers, where the precision
        matrix agrees with other exact solvers (R's glasso, QUIC) to about 1e-7
        relative, and 1e-6 for the projected gradients.
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
    mode, enet_tol, eps : scikit-learn's ``GraphicalLasso`` parameters, accepted
        (and checked: ``mode`` 'cd' or 'lars', the others positive numbers) so
        that code written for it runs unchanged; they choose and stop
        scikit-learn's inner lasso solver, which spargel's Newton methods do not
        have, so they change nothing here. ``tol`` is spargel's (above).

    Attributes
    ----------
    precision_, covariance_, location_ : the estimate K, its inverse, the mean
        (K and its inverse are (p, p) numpy arrays, ``scipy.sparse.csr_matrix``
        on the from-data path).
    objective_, dual_objective_, duality_gap_ : certified optimality.
    n_iter_, converged_, stop_reason_ : iterations, convergence and why the
        solver stopped ('tol', 'max_iter', 'linesearch', ...); a problem
        solved in closed form (no entry penalised: ``K = S^-1``) has
        ``n_iter_ == 0``.
    history_ : one dict per iteration (iteration, objective, duality_gap,
        active_edges, elapsed, ...; a ``component`` key for screened
        components); costs_ : ``(objective, duality_gap)`` of the whole problem
        after each iteration (scikit-learn's name; components that have stopped
        count with their final values, so the objectives never increase with
        the Newton solvers; NaN gap where it was not computed; one row when the
        problem splits into single variables or is solved in closed form).
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

    def __init__(self, alpha=0.01, *, covariance=None, blocks=None, solver="auto", tol=None,
                 max_iter=None, assume_centered=False, penalize_diagonal=False,
                 block_weight="size", step_rule="bb", screen=True, n_jobs=1,
                 warm_start=False, random_state=None, verbose=False, client=None, mode="cd",
                 enet_tol=1e-4, eps=float(np.finfo(np.float64).eps), max_component=None):
        keep_arguments(self, locals())

    @announces_compiles
    @reraise_interrupt
    def fit(self, X, y=None):
        """Fit from data X (n_samples, n_features), or from a covariance
        matrix when ``covariance='precomputed'``. Ctrl-C stops the solver: the iterate
        reached is kept (``stop_reason_ == 'interrupted'``), then ``KeyboardInterrupt``
        is raised."""
        _check_compat(self)
        if self.covariance not in _COVARIANCE:
            raise ParameterError(f"covariance must be None, 'dense', 'precomputed', 'from_data' or "
                                 f"'auto', got {self.covariance!r}")
        if self.covariance == "precomputed":
            return self.fit_covariance(X)
        from .objective import empirical_covariance

        X = self._data(X, reset=True, least=2, purpose="estimate a covariance")
        if self._from_data(X.shape):
            return self._fit_from_data(X)
        location = np.zeros(X.shape[1]) if self.assume_centered else X.mean(axis=0)
        n_samples = X.shape[0]
        # X is our validated copy: S is computed in its memory, and it is gone before the solve
        S = empirical_covariance(X, assume_centered=self.assume_centered, overwrite_X=True)
        del X
        _check_no_constant_columns(S, self.penalize_diagonal)
        self._fit_S(S, n_samples)
        self.location_ = location
        return self

    def _from_data(self, shape):
        return _from_data_choice(self, shape, np.ndim(self.alpha), dense_only=())

    def _fit_from_data(self, X):
        from .from_data import solve_from_data

        with ctrl_c_stops() as ctrl_c:
            res = solve_from_data(X, self.alpha, assume_centered=self.assume_centered,
                                  penalize_diagonal=self.penalize_diagonal,
                                  max_component=self.max_component, solver=self.solver,
                                  tol=self.tol, max_iter=self.max_iter, verbose=self.verbose,
                                  random_state=_seed(self.random_state), n_jobs=self.n_jobs,
                                  callback=ctrl_c.callback)
        _interrupted(self, res, ctrl_c)
        self._result = res
        self._store(res, X.shape[1])
        self.n_samples_ = X.shape[0]
        self.location_ = np.zeros(X.shape[1]) if self.assume_centered else X.mean(axis=0)
        return self

    @announces_compiles
    @reraise_interrupt
    def fit_covariance(self, S, n_samples=None):
        """Fit from an empirical covariance S (``n_samples`` is informative),
        the same as ``covariance='precomputed'``."""
        from .objective import validate_covariance

        _check_compat(self)
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
        with ctrl_c_stops() as ctrl_c:
            res = solve_gaussian(S, self.alpha, blocks=self.blocks, solver=self.solver,
                                 tol=self.tol, max_iter=self.max_iter,
                                 penalize_diagonal=self.penalize_diagonal,
                                 block_weight=self.block_weight, screen=self.screen,
                                 step_rule=self.step_rule, warm_start=warm, n_jobs=self.n_jobs,
                                 random_state=_seed(self.random_state), verbose=self.verbose,
                                 validated=True, client=self.client, overwrite_S=True,
                                 callback=ctrl_c.callback)
        _interrupted(self, res, ctrl_c)
        self._result = res
        self._store(res, S.shape[0])
        self.n_samples_ = n_samples
        return self


def _interrupted(est, res, ctrl_c):
    """After a solve under :func:`ctrl_c_stops`: a solver stopped by Ctrl-C has the stop
    reason 'interrupted' (its iterate is kept; ``fit`` raises ``KeyboardInterrupt`` once
    it is stored)."""
    if ctrl_c.requested:
        if not res.converged:
            res.stop_reason = "interrupted"
        note_interrupt(est, "interrupted")


def _kfold(X, n_samples, cv, random_state, y=None, split_params=None):
    """(train, test) index pairs: ``cv`` folds (contiguous, as scikit-learn's
    ``KFold``; shuffled when ``random_state`` is given), a splitter object
    with ``split(X, y, **split_params)`` (``groups`` for a group splitter), or
    an iterable of pairs."""
    split_params = split_params or {}
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if split_params:
            raise ValueError(f"{', '.join(sorted(split_params))} given, but cv={int(cv)} folds "
                             "take no such parameter; pass a splitter that does (for groups: "
                             "a GroupKFold)")
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
    if hasattr(cv, "split"):
        if split_params:
            splits = list(cv.split(X, y, **split_params))
        elif y is not None:
            splits = list(cv.split(X, y))
        else:
            splits = list(cv.split(X))
    else:
        if split_params:
            raise ValueError(f"{', '.join(sorted(split_params))} given, but cv is a list of "
                             "splits, which takes no parameters")
        splits = list(cv)
    if not splits:
        raise ValueError("cv gave no splits")
    return [(_fold_indices(a, n_samples, k, "train"), _fold_indices(b, n_samples, k, "test"))
            for k, (a, b) in enumerate(splits)]


def _fold_indices(idx, n_samples, k, part):
    """A split's row indices as an int array, each in [0, n_samples) (a boolean mask
    of n_samples rows is taken as its positions); a ValueError naming the split
    otherwise, never an IndexError or a negative index wrapping around."""
    a = np.asarray(idx)
    if a.dtype == bool and a.ndim == 1 and a.size == n_samples:
        return np.flatnonzero(a)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ValueError(f"cv split {k}: the {part} indices must be a 1-D array of integer row "
                         f"indices, got an array of dtype {a.dtype} and shape {a.shape}")
    a = a.astype(np.int64, copy=False)
    bad = np.flatnonzero((a < 0) | (a >= n_samples))
    if bad.size:
        raise ValueError(f"cv split {k}: {part} index {int(a[bad[0]])} is out of range for "
                         f"{n_samples} samples (row indices are 0 to {n_samples - 1})")
    return a


def _cv_fold(X, tr, te, f, alphas, kw, assume_centered, center_test, penalize_diagonal):
    """Held-out scores and edge counts along the path of one fold (a plain function:
    with a Dask client it runs on a worker)."""
    from .objective import empirical_covariance, fold_location
    from .path import gaussian_path

    Xtr, Xte = X[tr], X[te]
    if Xtr.shape[0] < 2 or Xte.shape[0] < 1:
        raise ValueError(f"fold {f} has {Xtr.shape[0]} training and {Xte.shape[0]} test "
                         "samples; need at least 2 and 1")
    Str = empirical_covariance(Xtr, assume_centered=assume_centered)
    _check_no_constant_columns(Str, penalize_diagonal, f"X (training part of fold {f})")
    loc = fold_location(Xtr, Xte, assume_centered, center_test)
    Ste = empirical_covariance(Xte - loc, assume_centered=True)
    scores = np.full(alphas.size, -np.inf)
    edges = np.zeros(alphas.size)
    for k, res in enumerate(gaussian_path(Str, alphas, **kw)):
        scores[k] = _log_likelihood(Ste, res.precision)
        edges[k] = np.count_nonzero(np.triu(res.precision, 1))
    return scores, edges


def _unpenalised_fold(X, tr, te, assume_centered):
    """Held-out score of the unpenalised estimate ``N(mean_train, inv(S_train))``
    (scikit-learn's alpha = 0 row of ``cv_results_``, the test fold centred on the
    training mean whatever ``center_test`` says, as there): -inf where ``S_train`` is
    singular."""
    from spargel.gaussian.objective import empirical_covariance

    n = X.shape[1]
    Xtr, Xte = X[tr], X[te]
    Str = empirical_covariance(Xtr, assume_centered=assume_centered)
    try:
        c = np.diag(np.linalg.cholesky(Str))
        K = np.linalg.inv(Str)
    except np.linalg.LinAlgError:
        return -np.inf
    if not np.min(c * c) > 10 * n * np.finfo(float).eps * np.max(np.diag(Str)):
        return -np.inf                  # singular up to rounding
    loc = np.zeros(n) if assume_centered else Xtr.mean(axis=0)
    Ste = empirical_covariance(Xte - loc, assume_centered=True)
    return _log_likelihood(Ste, K)


def _check_alphas(alphas):
    """A list of alphas: each a real number > 0 (scikit-learn's messages and types)."""
    import numbers

    if isinstance(alphas, np.ndarray):
        values = list(alphas.ravel())
    else:
        try:
            values = list(alphas)
        except TypeError:
            raise ParameterError(f"alphas must be a grid size (int) or a list of alphas, got "
                                 f"{alphas!r}") from None
    if not values:
        raise ParameterError("alphas is an empty list; give at least one alpha > 0")
    for k, a in enumerate(values):
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Real):
            raise ParameterError(f"alphas[{k}] must be an instance of float, not "
                                 f"{type(a).__qualname__}")
        if not a > 0:
            raise ParameterError(f"alphas[{k}] == {a}, must be > 0")
    return np.asarray(values, dtype=np.float64)


def _best_on_path(mean_scores):
    """scikit-learn's choice on a path sorted by decreasing alpha: the last index with
    the best mean score (so the smallest alpha on ties), scores beyond 0.1 / eps
    counted as NaN (never chosen); also the last index with a finite score."""
    best, best_score, last_finite = 0, -np.inf, 0
    for k, sc in enumerate(mean_scores):
        if sc >= 0.1 / np.finfo(np.float64).eps:
            sc = np.nan
        if np.isfinite(sc):
            last_finite = k
        if sc >= best_score:
            best_score, best = sc, k
    return best, last_finite


def _refined_grid(path_alphas, best, last_finite, n_alphas):
    """The next grid of a refinement (scikit-learn's rule): ``n_alphas`` points strictly
    inside the bracket around the best alpha of the path (sorted decreasingly)."""
    last = len(path_alphas) - 1
    if best == 0:
        hi, lo = path_alphas[0], path_alphas[min(1, last)]
    elif best == last_finite and best != last:
        hi, lo = path_alphas[best], path_alphas[best + 1]
    elif best == last:
        hi, lo = path_alphas[best], 0.01 * path_alphas[best]
    else:
        hi, lo = path_alphas[best - 1], path_alphas[best + 1]
    if hi == lo:
        return np.zeros(0)
    return np.geomspace(hi, lo, n_alphas + 2)[1:-1]


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

    Grid and refinements are scikit-learn's: with ``alphas`` an int, the first
    grid has ``alphas`` values from ``alpha_max`` down geometrically to
    ``alpha_min_ratio * alpha_max``; each further refinement (``n_refinements``
    grids in all) puts ``alphas`` new values strictly between the neighbours of
    the best alpha so far (below the smallest, down to a hundredth of it, when
    that one is the best). The chosen alpha is the one with the best mean score
    over every alpha tried, the smallest on ties. A list of alphas is one grid,
    not refined; each must be a number > 0.

    Parameters
    ----------
    alphas : int (grid size) or a list of alphas.
    n_refinements : number of grids (int >= 1; default 1, a single grid;
        scikit-learn's ``GraphicalLassoCV`` defaults to ``alphas=4,
        n_refinements=4``).
    cv : number of folds (contiguous folds as scikit-learn's ``KFold``;
        shuffled with ``random_state``), a splitter with ``split(X, y,
        groups)``, or an iterable of (train, test) index pairs. ``fit(X, y,
        groups=...)`` passes ``groups`` (and any other keyword) on to the
        splitter's ``split``, as scikit-learn's metadata routing does.
    center_test : 'train' (default) or 'test', see above.
    covariance : None / 'dense' (default), 'from_data' or 'auto', as in
        :class:`SparseGaussianMRF`: with 'from_data' no p x p matrix is formed
        (for n << p): every alpha of every fold is a from-data fit of the
        training rows, scored from the test rows and the sparse precision
        (``log det`` per component, ``tr(S_test K)`` over K's nonzeros), and
        the refit is one from-data fit; the same choice as the dense path.
        The grid should stay where the screened components are small (a
        larger ``alpha_min_ratio``); ``max_component`` as there. With a
        ``client`` the folds run on its workers and the refit here.
    client : a ``dask.distributed.Client`` (or None): the folds' paths run on its
        workers (``X`` is sent once), and so do the screened components of the refit,
        with the same result (``docs/distributed.md``).
    Other parameters as in :class:`SparseGaussianMRF`.

    Attributes
    ----------
    alpha_ : the chosen alpha. alphas_ : every alpha tried (decreasing).
    cv_results_ : dict with scikit-learn's keys 'alphas', 'split{k}_test_score',
        'mean_test_score', 'std_test_score', plus 'mean_edges'; one row per
        alpha of ``alphas_`` and, last, scikit-learn's row for alpha = 0 (the
        unpenalised estimate ``inv(S_train)`` scored on the test fold centred on
        the training mean, as scikit-learn does; -inf where ``S_train`` is
        singular; never chosen).
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
                 blocks=None, solver="auto", tol=None, max_iter=None, assume_centered=False,
                 penalize_diagonal=False, block_weight="size", screen=True, n_jobs=1,
                 random_state=None, verbose=False, client=None, n_refinements=1, mode="cd",
                 enet_tol=1e-4, eps=float(np.finfo(np.float64).eps), covariance=None,
                 max_component=None):
        keep_arguments(self, locals())

    def fit(self, X, y=None, **params):
        """Fit: cross-validate the grid(s) of alphas on X, refit at the best.
        Keyword ``params`` (e.g. ``groups``) go to the splitter's ``split``."""
        import numbers
        import sys

        from .objective import empirical_covariance
        from .path import alpha_grid, check_n_alphas, gaussian_path

        _check_compat(self)
        if self.center_test not in ("train", "test"):
            raise ParameterError(f"center_test must be 'train' or 'test', got {self.center_test!r}")
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            check_n_alphas(self.alphas, "alphas")       # before a grid is sized by it
        X = self._data(X, reset=True, least=2, purpose="estimate a covariance")
        m, n = X.shape
        fd = _from_data_choice(self, X.shape, 0)
        if fd:                                  # no p x p matrix (from_data_select.py)
            from . import from_data_select as fds
            from .from_data import _Columns
            from .path import grid_below

            S, cols = None, _Columns(X, self.assume_centered)
            _check_no_constant_columns(cols.var, self.penalize_diagonal)
            amax, cols = fds.alpha_max_from_data(cols), None
        else:
            S = empirical_covariance(X, assume_centered=self.assume_centered)
            _check_no_constant_columns(S, self.penalize_diagonal)
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            n_alphas = int(self.alphas)
            alphas = grid_below(amax, n_alphas, self.alpha_min_ratio) if fd else \
                alpha_grid(S, n_alphas, self.alpha_min_ratio, blocks=self.blocks,
                           block_weight=self.block_weight)
            first = alphas
            nr = self.n_refinements
            if isinstance(nr, bool) or not isinstance(nr, numbers.Integral) or nr < 1:
                raise ParameterError(f"n_refinements must be an integer >= 1, got {nr!r}")
            n_ref = int(nr)
        else:
            alphas = np.sort(_check_alphas(self.alphas))[::-1]
            n_alphas, n_ref = alphas.size, 1
        kw = dict(blocks=self.blocks, solver=self.solver, tol=self.tol,
                  max_iter=self.max_iter, penalize_diagonal=self.penalize_diagonal,
                  block_weight=self.block_weight, screen=self.screen, n_jobs=self.n_jobs)
        fold_fn = _cv_fold
        if fd:
            kw = dict(solver=self.solver, tol=self.tol, max_iter=self.max_iter,
                      n_jobs=self.n_jobs, max_component=self.max_component)
            fold_fn = fds.cv_fold_from_data
        splits = _kfold(X, m, self.cv, self.random_state, y, params)
        n_folds = len(splits)
        args = (self.assume_centered, self.center_test, self.penalize_diagonal)
        path = []                     # (alpha, fold scores, fold edge counts)
        best = 0
        for ref in range(n_ref):
            if self.client is None:
                rows = [fold_fn(X, tr, te, f, alphas, kw, *args)
                        for f, (tr, te) in enumerate(splits)]
            else:
                from .scaleout import map_folds
                rows = map_folds(self.client, fold_fn, X, splits, (alphas, kw) + args)
            if self.verbose:
                for f, (sc, _) in enumerate(rows):
                    print(f"fold {f}: best alpha {alphas[int(np.argmax(sc))]:.4g}",
                          file=sys.stderr, flush=True)
            scores = np.array([sc for sc, _ in rows]).reshape(n_folds, alphas.size)
            edges = np.array([ed for _, ed in rows]).reshape(n_folds, alphas.size)
            path += [(float(a), scores[:, k], edges[:, k]) for k, a in enumerate(alphas)]
            path.sort(key=lambda t: -t[0])
            best, last_finite = _best_on_path([np.mean(sc) for _, sc, _ in path])
            if self.verbose:
                print(f"refinement {ref + 1} of {n_ref}: best alpha {path[best][0]:.4g} "
                      f"(mean held-out score {np.mean(path[best][1]):.6g})",
                      file=sys.stderr, flush=True)
            if ref + 1 < n_ref:
                alphas = _refined_grid([a for a, _, _ in path], best, last_finite, n_alphas)
                if alphas.size == 0:
                    break
        all_alphas = np.array([a for a, _, _ in path])
        # from data, S_train of rank < p (fewer samples than variables) is singular: -inf
        # without a p x p array; else (p x p no larger than the data) the dense score
        rank = (lambda tr: len(tr) - (0 if self.assume_centered else 1))
        unpen = np.array([-np.inf if fd and rank(tr) < n else
                          _unpenalised_fold(X, tr, te, self.assume_centered)
                          for tr, te in splits])
        grid = np.vstack([np.array([sc for _, sc, _ in path]), unpen[None, :]])
        self.alphas_ = all_alphas
        self.alpha_ = float(all_alphas[best])
        results = {"alphas": np.append(all_alphas, 0.0)}
        for f in range(n_folds):
            results[f"split{f}_test_score"] = grid[:, f]
        results["mean_test_score"] = grid.mean(axis=1)
        with np.errstate(invalid="ignore"):           # -inf scores give a NaN spread
            results["std_test_score"] = grid.std(axis=1)
        results["mean_edges"] = np.append([np.mean(ed) for _, _, ed in path], n * (n - 1) / 2)
        self.cv_results_ = results
        if fd:                                 # one from-data fit at the chosen alpha
            res = fds.refit_from_data(X, self.alpha_, self.assume_centered,
                                      self.penalize_diagonal, kw)
        else:      # along the first grid's alphas above the chosen one (warm starts)
            first = first if isinstance(self.alphas, numbers.Integral) else all_alphas
            refit = [a for a in first if a > self.alpha_] + [self.alpha_]
            res = gaussian_path(S, refit, client=self.client, **kw)[-1]
        self._store(res, n)
        self._result = res
        self.location_ = np.zeros(n) if self.assume_centered else X.mean(axis=0)
        self.n_samples_ = m
        return self

    def get_metadata_routing(self):
        """scikit-learn's metadata routing: ``fit``'s keyword arguments go to the
        splitter's ``split`` (asked for by scikit-learn's tools only; imports
        scikit-learn)."""
        from sklearn.model_selection import check_cv
        from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping

        cv = self.cv if hasattr(self.cv, "split") or isinstance(self.cv, int) else list(self.cv)
        return MetadataRouter(owner=self).add(
            splitter=check_cv(cv), method_mapping=MethodMapping().add(caller="fit",
                                                                      callee="split"))
