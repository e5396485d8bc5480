"""Latent conditional likelihood (Jebara & Choromanska 2012, section 4): a mixture of
``M`` Gaussian-gated logistic regressions per class, as a model of the protocol.

Each class ``k`` has ``M`` hidden components; component ``(k, m)`` scores a sample
``x`` by ``theta_km . x + nu_km`` (features ``[x, 1]``), and

    p(k | x) = sum_m exp(theta_km . x + nu_km) / sum_{k', m'} exp(theta_k'm' . x + nu_k'm').

This is what conditioning a generative model gives when each class is a mixture of
Gaussians with one shared covariance (``theta = Sigma0^-1 mean``, ``nu`` = log mixing
weight minus the mean's quadratic term; see ``em_fit``). The loss is the negative
conditional log-likelihood ``sum_i s_i (log sum_{k,m} e^{.} - log sum_m e^{(y_i, m)})``,
not convex (a difference of two log-partitions).

Weights are laid out as the flat log-linear model's, over the ``K * M`` "super-classes"
``c = k * M + m``: ``w[j * KM + c]`` then the ``KM`` intercepts (unpenalised).

The ``"bound"`` capability: the denominator is bounded by Algorithm 1 over the ``K M``
components (the flat model's class curvature, :mod:`spargel.loglinear.bound`) and the
numerator from below by Jensen's inequality with the responsibilities ``eta_im`` of the
true class's components (a linear term, tight at ``w``), so the quadratic bound has the
flat curvature and the exact gradient: each majorisation step is an EM-like update that
never lowers the conditional likelihood.
"""

import numpy as np
import scipy.sparse as sp

from .bound import Design, class_bound, log_softmax
from .model import class_weight_layout


class LatentLogLinear:
    """The latent conditional likelihood over samples ``X`` (dense or CSR) with labels
    ``y`` (0..K-1), ``n_components`` hidden components per class."""

    def __init__(self, X, y, n_classes, n_components, fit_intercept=True, sample_weight=None):
        self.sparse = sp.issparse(X)
        self.X = sp.csr_matrix(X, dtype=np.float64) if self.sparse else np.ascontiguousarray(X, dtype=np.float64)
        n, d = self.X.shape
        y = np.asarray(y, dtype=np.int64)
        if y.shape != (n,):
            raise ValueError(f"X has {n} samples but y has {y.shape[0] if y.ndim else 0} labels")
        K, M = int(n_classes), int(n_components)
        if M < 1:
            raise ValueError("n_components must be >= 1")
        if len(y) and (y.min() < 0 or y.max() >= K):
            raise ValueError("labels out of range")
        self.y, self.K, self.M, self.KM, self.d, self.n = y, K, M, K * M, d, n
        self.fit_intercept = bool(fit_intercept)
        self.sw = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
        self.layout = class_weight_layout(d, K * M, self.fit_intercept)
        self.n_params = self.layout.n_params
        self.design = Design(self.X, self.fit_intercept)
        # the columns of each sample's true class
        self._true_cols = (y[:, None] * M + np.arange(M)[None, :])
        self.n_evals = 0

    @property
    def n_samples(self):
        return self.n

    def scores(self, w, X=None):
        """Component scores (n x K M)."""
        w = np.asarray(w, dtype=np.float64)
        KM, d = self.KM, self.d
        Z = np.asarray((self.X if X is None else X) @ w[:d * KM].reshape(d, KM))
        if self.fit_intercept:
            Z = Z + w[d * KM:]
        return Z

    def _terms(self, w):
        Z = self.scores(w)
        logP, lse = log_softmax(Z)
        Zt = np.take_along_axis(Z, self._true_cols, axis=1)
        logEta, lse_t = log_softmax(Zt)
        per = lse - lse_t
        return Z, logP, logEta, per

    def _sum(self, per):
        return float(per @ self.sw) if self.sw is not None else float(per.sum())

    def _residual(self, logP, logEta):
        """d loss / d scores: s_i (p_i - q_i), q_i the responsibilities placed on the true
        class's components."""
        R = np.exp(logP)
        idx = np.arange(self.n)[:, None]
        R[idx, self._true_cols] -= np.exp(logEta)
        if self.sw is not None:
            R *= self.sw[:, None]
        return R

    # -- the "loss_grad" capability ----------------------------------------------------
    def loss(self, w):
        return self._sum(self._terms(w)[3])

    def loss_grad(self, w):
        self.n_evals += 1
        _, logP, logEta, per = self._terms(w)
        R = self._residual(logP, logEta)
        return self._sum(per), self.design.back(R).ravel()

    def hessp(self, w, v):
        """Hessian-vector product of the loss (Newton-CG): the softmax covariance of all
        components minus that of the true class's components, applied to the direction's
        score changes."""
        _, logP, logEta, _ = self._terms(w)
        S = self.design.scores(np.asarray(v, dtype=np.float64).reshape(self.design.db, self.KM))
        P = np.exp(logP)
        H = P * (S - (P * S).sum(axis=1, keepdims=True))
        idx = np.arange(self.n)[:, None]
        St = S[idx, self._true_cols]
        Q = np.exp(logEta)
        H[idx, self._true_cols] -= Q * (St - (Q * St).sum(axis=1, keepdims=True))
        if self.sw is not None:
            H *= self.sw[:, None]
        return self.design.back(H).ravel()

    # -- the "bound" capability (Jebara & Choromanska, section 4) ------------------------
    def bound(self, w, curvature="auto", rank=None, order="descending"):
        """Quadratic upper bound on the loss around ``w``: Algorithm 1 over the ``K M``
        components for the denominator, Jensen's inequality for the numerator."""
        self.n_evals += 1
        w = np.asarray(w, dtype=np.float64)
        _, logP, logEta, per = self._terms(w)
        R = self._residual(logP, logEta)
        return class_bound(self.design, w, logP, R, self._sum(per), self.sw, None, curvature, rank, order)

    # -- prediction ---------------------------------------------------------------------
    def class_log_proba(self, w, X):
        """``log p(k | x)`` (n x K) for samples X."""
        logP, _ = log_softmax(self.scores(w, X))
        n = logP.shape[0]
        L = logP.reshape(n, self.K, self.M)
        m = L.max(axis=2, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        return (m + np.log(np.exp(L - m).sum(axis=2, keepdims=True)))[:, :, 0]

    def responsibilities(self, w):
        """``eta_im``: the posterior of sample i's true-class components (n x M)."""
        return np.exp(self._terms(w)[2])


# --------------------------------------------------------------------------- generative EM
def em_fit(model, resp, max_iter=200, tol=1e-8, var_floor=1e-6):
    """Maximum *joint* likelihood of the generative counterpart by EM: per class, a mixture
    of ``M`` Gaussians sharing one diagonal covariance (shared by all classes, so that
    conditioning gives the latent log-linear model), started from the responsibilities
    ``resp`` (n x M, within each sample's true class). Returns (weights of the latent
    model, history of the joint log-likelihood per iteration, stop reason).

    The weights are ``theta_km = mean_km / var`` and ``nu_km = log pi_km - 1/2 sum
    mean_km^2 / var`` (the Gaussians' shared terms cancel in p(k | x)); ``var_floor`` keeps
    each variance above that fraction of the feature's variance (n < d: SRBCT)."""
    X = model.X.toarray() if model.sparse else model.X
    n, d = X.shape
    # EM runs in units where every feature's largest magnitude is 1: the fit is the same
    # (means scale, variances scale squared, responsibilities do not change), and features
    # of 1e160 no longer overflow their squares; the weights are mapped back at the end
    scale = np.abs(X).max(axis=0) if n else np.ones(d)
    scale = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
    X = X / scale
    log_scale = float(np.log(scale).sum())
    K, M, y = model.K, model.M, model.y
    sw = np.ones(n) if model.sw is None else model.sw
    total = sw.sum()
    floor = var_floor * np.maximum(X.var(axis=0), 1e-12) + 1e-12
    R = np.asarray(resp, dtype=np.float64).copy()
    history = []
    prev = -np.inf
    stop = "max_iter"
    means = np.zeros((K, M, d))
    logpi = np.zeros((K, M))
    var = np.ones(d)
    for it in range(1, max_iter + 1):
        # M step
        W = R * sw[:, None]
        for k in range(K):
            rows = y == k
            Wk = W[rows]
            mass = Wk.sum(axis=0)
            logpi[k] = np.log(np.maximum(mass, 1e-300) / total)
            means[k] = (Wk.T @ X[rows]) / np.maximum(mass, 1e-300)[:, None]
        resid = np.zeros(d)
        for k in range(K):
            rows = y == k
            for m in range(M):
                diff = X[rows] - means[k, m]
                resid += (W[rows, m][:, None] * diff * diff).sum(axis=0)
        var = np.maximum(resid / total, floor)
        # E step and the joint log-likelihood (up to the constant of the Gaussians)
        logj = np.empty((n, M))
        for m in range(M):
            mu = means[y, m]
            logj[:, m] = logpi[y, m] - 0.5 * (((X - mu) ** 2) / var).sum(axis=1)
        logj -= 0.5 * np.log(var).sum() + 0.5 * d * np.log(2 * np.pi)
        mx = logj.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(logj - mx).sum(axis=1))
        R = np.exp(logj - lse[:, None])
        ll = float(lse @ sw) - total * log_scale        # the density of the features as given
        history.append({"iteration": it, "objective": -ll})
        if np.isfinite(prev) and abs(ll - prev) <= tol * max(1.0, abs(ll)):
            stop = "tol"
            break
        prev = ll
    theta = means / var / scale                              # (K, M, d), per unit of each feature
    nu = logpi - 0.5 * (means * means / var).sum(axis=2)     # (K, M)
    w = np.zeros(model.n_params)
    KM = model.KM
    w[:d * KM] = theta.reshape(KM, d).T.ravel()
    if model.fit_intercept:
        w[d * KM:] = nu.ravel()
    else:
        raise ValueError("solver='em' needs fit_intercept=True (the mixing weights live in the intercepts)")
    return w, history, stop
