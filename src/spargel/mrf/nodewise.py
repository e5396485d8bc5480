"""IsingFit's procedure (van Borkulo et al. 2014) for binary data: :class:`IsingFit`.

Every variable is regressed on all the others by l1-penalised logistic regression (a
path of ``n_lambdas`` penalties on the standardised predictors, as glmnet's defaults:
from the smallest penalty that keeps no predictor down to ``lambda_min_ratio`` of it,
0.01 when there are fewer samples than predictors and 1e-4 otherwise); each variable's
penalty is chosen by its own EBIC, ``-2 loglik + J log n + 2 gamma J log(p - 1)`` (``J``
its non-zero coefficients, ``p`` the variables). An edge is kept when both regressions
select it (``rule="and"``, the default) or either (``"or"``); its weight is the mean of
the two coefficients (a coefficient not selected counts as 0 under ``"or"``). The
thresholds are the regressions' intercepts. The model is the Ising model in 0/1 coding,

    p(x) ∝ exp( sum_i thresholds_i x_i + sum_{i<j} weights_ij x_i x_j ),

and :attr:`IsingFit.model_` holds it as a :class:`~spargel.mrf.estimator.PairwiseMRF`
(tables ``[[0, 0], [0, w_ij]]``, node potentials ``[0, tau_i]``), so its marginals,
scores, samples and exports are those of any fitted MRF.

It is a class of its own rather than a criterion of
:class:`~spargel.mrf.selection.PairwiseMRFSelect`: each variable gets its own penalty,
so there is no single ``l1`` and no joint path.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 2, (500, 4))
>>> X[:, 1] = np.where(rng.random(500) < 0.85, X[:, 0], 1 - X[:, 0])   # 0 -- 1
>>> X[:, 3] = np.where(rng.random(500) < 0.85, X[:, 2], 1 - X[:, 2])   # 2 -- 3
>>> fit = IsingFit().fit(X)
>>> fit.edges_.tolist()
[[0, 1], [2, 3]]
>>> bool(fit.weights_[0, 1] > 2), fit.weights_.shape
(True, (4, 4))
"""

from __future__ import annotations

import numpy as np

from ..core.first_use import announces_compiles
from ..core.params import ParamsMixin, check_number, keep_arguments
from ..errors import DataFormatError, NotFittedError, ParameterError
from .common import ExportsSelectedModel, map_threads
from .plot import plot_edge_stability

__all__ = ["IsingFit", "nodewise_logistic"]

RULES = ("and", "or")


def lambda_path(Z, gstart, skip, resid, n_lambdas, lambda_min_ratio):
    """glmnet's path for one regression: from the smallest penalty that keeps every group
    at zero, ``max_g ||Z_g' resid||_2 / (n sqrt(m_g))`` (``resid``: the null model's
    residuals, (n,) or (n, K)), down geometrically to ``lambda_min_ratio`` of it."""
    n = Z.shape[1]
    g = Z @ resid
    sq = g * g if g.ndim == 1 else (g * g).sum(axis=1)
    sizes = np.diff(gstart)
    norms = np.sqrt(np.add.reduceat(sq, gstart[:-1])) / n / np.sqrt(sizes)
    norms[skip] = 0.0
    top = float(norms.max())
    return top * np.geomspace(1.0, lambda_min_ratio, int(n_lambdas))


def regression_path(Z, gstart, skip, kind, y, yk, n_classes, lams, *, gamma, tol, max_outer=100, ebic_stop=True):
    """One node-wise regression down the penalties ``lams`` (see
    :func:`~spargel.mrf.nodewise_kernels.group_path`), its EBIC-chosen point. Returns
    ``(beta, b0, lam, ebic)``: ``beta`` (m, K) standardised coefficients (0 on the
    response's own columns), ``b0`` (K,) intercepts, the chosen penalty and the EBIC along
    the path (NaN past its end)."""
    from .nodewise_kernels import PathOut, group_path, path_rules
    m = Z.shape[0]
    K = int(n_classes)
    nl = len(lams)
    betas = np.zeros((nl, m * K))
    icpt = np.zeros((nl, K))
    eb = np.zeros(nl)
    nnz = np.zeros(nl, np.int64)
    done = group_path(Z, gstart, int(skip), int(kind), y, yk, K, lams,
                      path_rules(gamma, tol, max_outer, ebic_stop=ebic_stop), PathOut(betas, icpt, eb, nnz))
    k = int(np.argmin(eb[:done]))
    ebic = np.full(nl, np.nan)
    ebic[:done] = eb[:done]
    return betas[k].reshape(m, K), icpt[k].copy(), float(lams[k]), ebic


def run_nodes(one, todo, n_jobs=1, verbose=False, what="regression"):
    """Calls ``one(i)`` for every ``i`` of ``todo``, on ``n_jobs`` threads (-1: one per
    CPU). ``verbose`` prints the progress on stderr (about 20 lines). On any exception --
    KeyboardInterrupt included -- the queued calls are cancelled, those running are
    waited for (each is one regression) and the exception propagates
    (:func:`~spargel.mrf.common.map_threads`)."""
    import sys
    import threading
    import time
    todo = list(todo)
    total = len(todo)
    every = max(1, total // 20)
    t0 = time.perf_counter()
    lock = threading.Lock()
    done = [0]

    def run(i):
        one(i)
        if verbose:
            with lock:
                done[0] += 1
                d = done[0]
                if d % every == 0 or d == total:
                    print(f"{what} {d}/{total}, {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    map_threads(run, todo, n_jobs)


def nodewise_logistic(X, *, gamma=0.25, n_lambdas=100, lambda_min_ratio=None, tol=1e-7, max_outer=100,
                      ebic_stop=True, n_jobs=1, nodes=None, verbose=False):
    """Every column of the 0/1 matrix ``X`` (n, p) regressed on the others (see the module
    documentation). Returns ``(B, b0, lam, ebic)``: ``B[i, j]`` the coefficient of ``x_j``
    in the regression of ``x_i`` at its EBIC-chosen penalty (original scale), ``b0`` the
    intercepts, ``lam`` the chosen penalties, ``ebic`` (p, n_lambdas) each regression's
    EBIC along its path (NaN past the point where glmnet's rules stop it, or with
    ``ebic_stop`` where the EBIC's penalty alone passes the best EBIC so far).
    ``nodes``: only these variables' regressions (the other rows stay 0). The
    regressions are :func:`regression_path`'s with one column per group (the same engine
    as :class:`~spargel.mrf.mixed.MixedGraphicalModel`'s)."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    Z = np.ascontiguousarray(((X - mean) / sd).T)
    gstart = np.arange(p + 1, dtype=np.int64)
    no_classes = np.zeros(0, np.int64)
    if lambda_min_ratio is None:
        lambda_min_ratio = 0.01 if n < p - 1 else 1e-4
    B = np.zeros((p, p))
    b0 = np.zeros(p)
    lam = np.zeros(p)
    ebic = np.full((p, int(n_lambdas)), np.nan)

    def one(i):
        y = np.ascontiguousarray(X[:, i])
        lams = lambda_path(Z, gstart, i, y - y.mean(), n_lambdas, lambda_min_ratio)
        beta, icpt, lam[i], ebic[i] = regression_path(Z, gstart, i, 1, y, no_classes, 1, lams, gamma=gamma, tol=tol,
                                                      max_outer=max_outer, ebic_stop=ebic_stop)
        coef = beta[:, 0] / sd
        B[i] = coef
        b0[i] = icpt[0] - float(coef @ mean)

    run_nodes(one, range(p) if nodes is None else [int(i) for i in nodes], n_jobs, verbose)
    return B, b0, lam, ebic


class IsingFit(ExportsSelectedModel, ParamsMixin):
    """IsingFit's procedure for binary data (see the module documentation).

    Parameters
    ----------
    gamma : EBIC's gamma (default 0.25, IsingFit's).
    rule : 'and' (default: an edge needs both regressions) or 'or'.
    n_lambdas : penalties per regression (default 100, glmnet's).
    lambda_min_ratio : end of each path as a fraction of its start (default: 0.01 when
        there are fewer samples than predictors, 1e-4 otherwise, glmnet's).
    tol : coordinate descent's tolerance (weighted squared change of a coefficient).
    ebic_stop : stop a regression's path once the EBIC's penalty alone,
        ``J (log n + 2 gamma log(p - 1))``, exceeds the best EBIC so far (default True: no
        later point with as many non-zeros can be chosen; on wide data most of the path
        lies beyond, the dense end being the costly part). False computes the whole path.
    n_jobs : threads over the variables (same result for any value).
    verbose : the progress on stderr (about 20 lines).

    Attributes
    ----------
    weights_ : (p, p) symmetric edge weights (0/1 coding), zero diagonal.
    thresholds_ : (p,) the intercepts of the regressions.
    edges_ : (E, 2) the edges ``i < j``.
    coef_ : (p, p) each regression's coefficients (row ``i``: the regression of ``x_i``).
    lambdas_ : (p,) each regression's chosen penalty; ebic_ : (p, n_lambdas) its EBIC
        along the path (NaN where the path stopped).
    model_ : the fitted :class:`~spargel.mrf.estimator.PairwiseMRF` of these weights.

    Examples
    --------
    See the module documentation.
    """

    _selected_model = "model_"

    def __init__(self, gamma=0.25, rule="and", *, n_lambdas=100, lambda_min_ratio=None, tol=1e-7, ebic_stop=True,
                 n_jobs=1, verbose=False):
        keep_arguments(self, locals())

    @announces_compiles
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_variables) of 0/1 values."""
        from .model import check_discrete_data
        if not isinstance(self.rule, str) or self.rule not in RULES:
            raise ParameterError(f"rule must be 'and' or 'or', got {self.rule!r}")
        check_number("gamma", self.gamma)
        check_number("n_lambdas", self.n_lambdas, low=1, integer=True)
        check_number("tol", self.tol)
        check_number("n_jobs", self.n_jobs, low=-1, integer=True, allow_none=True)
        if self.lambda_min_ratio is not None:
            check_number("lambda_min_ratio", self.lambda_min_ratio)
            if not 0 < self.lambda_min_ratio < 1:
                raise ParameterError(f"lambda_min_ratio must be in (0, 1), got {self.lambda_min_ratio!r}")
        Xc, ns = check_discrete_data(X)
        if np.any(ns != 2):
            i = int(np.flatnonzero(ns != 2)[0])
            raise DataFormatError("X", None, f"IsingFit needs binary (0/1) data; column {i} has {int(ns[i])} states")
        if Xc.shape[1] < 2:
            raise DataFormatError("X", None, "IsingFit needs at least 2 variables")
        B, b0, lam, ebic = nodewise_logistic(Xc, gamma=float(self.gamma), n_lambdas=int(self.n_lambdas),
                                             lambda_min_ratio=self.lambda_min_ratio, tol=float(self.tol),
                                             ebic_stop=bool(self.ebic_stop), n_jobs=self.n_jobs,
                                             verbose=self.verbose)
        self.coef_ = B
        self.thresholds_ = b0
        self.lambdas_ = lam
        self.ebic_ = ebic
        self._set_graph()
        self.n_samples_ = Xc.shape[0]
        return self

    def _set_graph(self):
        """``weights_``, ``edges_`` and ``model_`` from the regressions (``coef_``,
        ``thresholds_``) by the rule."""
        B = self.coef_
        nz = B != 0
        keep = (nz & nz.T) if self.rule == "and" else (nz | nz.T)
        W = np.where(keep, (B + B.T) / 2.0, 0.0)
        np.fill_diagonal(W, 0.0)
        self.weights_ = W
        iu = np.triu_indices(len(B), 1)
        on = W[iu] != 0
        self.edges_ = np.column_stack([iu[0][on], iu[1][on]]).astype(np.int64)
        self.n_features_in_ = len(B)
        self.model_ = self._mrf()

    def save(self, path):
        """Write the fitted model to ``path`` (spargel's model file: arrays and a checked
        header, no pickle; atomic); :meth:`load` reads it back, the graph recomputed
        from the regressions by ``rule``."""
        from ..core import model_file as io
        self._check_fitted()
        params = {k: v for k, v in self.get_params().items() if isinstance(v, (int, float, str, bool, type(None)))}
        io.save_arrays(path, "isingfit", {"params": params, "n_samples": int(self.n_samples_)},
                       {"coef": self.coef_, "thresholds": self.thresholds_, "lambdas": self.lambdas_,
                        "ebic": self.ebic_})

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` (every array checked before use)."""
        from ..core import model_file as io
        from .estimator import MAX_ABS_POTENTIAL
        meta, a = io.load_arrays(path, "isingfit")
        for name in ("coef", "thresholds", "lambdas", "ebic"):
            io.require(name in a and a[name].dtype == np.float64, path, f"array {name!r} missing or not float64")
        B = a["coef"]
        io.require(B.ndim == 2 and B.shape[0] == B.shape[1] >= 2, path, "coef must be a square (p, p) array, p >= 2")
        p = B.shape[0]
        io.require(np.all(np.isfinite(B)) and np.all(np.diag(B) == 0), path,
                   "coef must be finite with a zero diagonal")
        for name in ("thresholds", "lambdas"):
            io.require(a[name].shape == (p,) and np.all(np.isfinite(a[name])), path, f"{name} must be {p} finite values")
        io.require(a["ebic"].ndim == 2 and a["ebic"].shape[0] == p, path, "ebic must have one row per variable")
        big = max(np.abs(B).max(initial=0), np.abs(a["thresholds"]).max())
        io.require(big <= MAX_ABS_POTENTIAL, path, f"weights beyond +-{MAX_ABS_POTENTIAL:.0e}")
        params = meta.get("params", {})
        io.require(isinstance(params, dict), path, "params must be a mapping")
        est = cls(**{k: v for k, v in params.items() if k in cls._param_names()})
        if not isinstance(est.rule, str) or est.rule not in RULES:
            raise io.ModelFileError(f"{path}: invalid model (params: rule must be 'and' or 'or', got {est.rule!r})")
        n = meta.get("n_samples")
        io.require(isinstance(n, int) and not isinstance(n, bool) and n >= 1, path, "n_samples must be an integer >= 1")
        est.coef_ = B.copy()
        est.thresholds_ = a["thresholds"].copy()
        est.lambdas_ = a["lambdas"].copy()
        est.ebic_ = a["ebic"].copy()
        est._set_graph()
        est.n_samples_ = n
        return est

    def _mrf(self):
        from .estimator import PairwiseMRF
        p = len(self.thresholds_)
        node = np.column_stack([np.zeros(p), self.thresholds_]).ravel()
        edge = np.concatenate([[0.0, 0.0, 0.0, self.weights_[i, j]] for i, j in self.edges_]) \
            if len(self.edges_) else np.zeros(0)
        return PairwiseMRF.from_potentials(np.full(p, 2), self.edges_, node, edge)

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def plot(self, stability=None, **kwargs):
        """Draw the selected graph with each edge's stability (needs matplotlib): width by
        weight, colour and opacity by inclusion frequency (``stability``: an
        :class:`~spargel.mrf.stability.EdgeStability` or a (p, p) matrix; see
        :func:`~spargel.mrf.plot.plot_edge_stability`). Returns the axes."""
        self._check_fitted()
        return plot_edge_stability(self, stability, **kwargs)

    def score(self, X, y=None):
        """Mean log-likelihood of X under the fitted Ising model (exact where it fits)."""
        self._check_fitted()
        return self.model_.score(X)
