"""The flat multinomial log-linear (maxent, multinomial logistic regression) model as a
model of the protocol (:mod:`spargel.core.protocol`).

``p(y = k | x) ∝ exp(x . W[:, k] + b_k)``; the loss is ``sum_i s_i (log Z(x_i) - x_i .
W[:, y_i] - b_{y_i})`` with optional sample weights ``s_i``. Weights are one flat vector,
feature-major: ``w[j * K + k] = W[j, k]`` (feature ``j``'s K class weights form one group,
the natural block), then the K intercepts (unpenalised) when ``fit_intercept``.

``X`` is a dense float64 array or a scipy sparse matrix (n_samples x n_features). The
batch loss and gradient are two BLAS products (``X @ W`` and ``X.T @ (P - Y)``); the
SGD capability is a compiled pass over the rows (:mod:`spargel.loglinear.kernels`);
the block capability updates the cached scores of the rows a feature touches.

An optional 0/1 ``mask`` over the weights freezes the masked weights at zero (their
gradient is reported as 0): the ``"observed"`` feature space, where a feature only has
weights for the classes it was seen with.
"""

import numpy as np
import scipy.sparse as sp

from ..core.protocol import ParameterLayout
from ..core.sizes import Sized
from .map import FlatMapCapability


def _csr(X):
    M = sp.csr_matrix(X, dtype=np.float64)
    M.sum_duplicates()
    M.sort_indices()
    return M


def class_weight_layout(n_features, n_columns, fit_intercept):
    """The layout of ``n_features`` groups of ``n_columns`` weights (a feature's weights
    for every class, feature-major), then, with ``fit_intercept``, one unpenalised group
    of ``n_columns`` intercepts."""
    n_params = n_features * n_columns + (n_columns if fit_intercept else 0)
    ptr = np.arange(n_features + 1, dtype=np.int64) * n_columns
    scale = None
    if fit_intercept:
        ptr = np.append(ptr, n_params)
        scale = np.ones(n_params)
        scale[n_features * n_columns:] = 0.0
    return ParameterLayout(n_params, ptr, scale)


def _logsumexp_rows(Z):
    m = Z.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log(np.exp(Z - m[:, None]).sum(axis=1))


class FlatLogLinear(FlatMapCapability, Sized):
    """Multinomial logistic loss over samples ``X`` (dense or sparse) with labels ``y``
    (ints in 0..K-1), optional ``sample_weight`` and ``mask`` (see the module doc)."""

    def bound_design(self):
        """The bound's view of the design (:class:`~spargel.loglinear.bound.Design`),
        made once per model."""
        design = self.__dict__.get("_bound_design")
        if design is None:
            from .bound import Design
            design = self._bound_design = Design(self.X, self.fit_intercept)
        return design

    def __init__(self, X, y, n_classes, fit_intercept=True, sample_weight=None, mask=None):
        self.sparse = sp.issparse(X)
        self.X = _csr(X) if self.sparse else np.ascontiguousarray(X, dtype=np.float64)
        n, d = self.X.shape
        y = np.asarray(y, dtype=np.int64)
        if y.shape != (n,):
            raise ValueError(f"X has {n} samples but y has {y.shape[0] if y.ndim else 0} labels")
        K = int(n_classes)
        if len(y) and (y.min() < 0 or y.max() >= K):
            raise ValueError("labels out of range")
        self.y, self.K, self.d, self.n = y, K, d, n
        self.fit_intercept = bool(fit_intercept)
        self.sw = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
        self.layout = class_weight_layout(d, K, self.fit_intercept)
        self.n_params = self.layout.n_params
        self.mask = None if mask is None else np.ascontiguousarray(mask, dtype=np.float64)
        self._csc = None
        self._rows = None
        self._sw = np.zeros(0) if self.sw is None else self.sw
        self.n_evals = 0

    @property
    def n_samples(self):
        return self.n

    def entry_kernels(self, needs):
        """The compiled entry points that a solver needing the capabilities ``needs`` calls
        first (for the first-use note)."""
        from . import kernels as S
        return [S.sgd_pass] if "sgd" in needs else [S.softmax_residual]

    # -- batch ------------------------------------------------------------------------
    def _split(self, w):
        K, d = self.K, self.d
        W = w[:d * K].reshape(d, K)
        b = w[d * K:] if self.fit_intercept else None
        return W, b

    def scores(self, w, X=None):
        """``X @ W + b`` (n x K)."""
        W, b = self._split(np.asarray(w, dtype=np.float64))
        Z = (self.X if X is None else X) @ W
        Z = np.asarray(Z)
        if b is not None:
            Z += b
        return Z

    def _loss_terms(self, Z):
        lse = _logsumexp_rows(Z)
        per = lse - Z[np.arange(self.n), self.y]
        return per, lse

    def loss_grad(self, w):
        self.n_evals += 1
        w = np.asarray(w, dtype=np.float64)
        from .kernels import softmax_residual

        P = self.scores(w)
        loss = softmax_residual(P, self.y, self._sw)          # P becomes s_i (p_i - e_yi)
        g = np.empty(self.n_params)
        dK = self.d * self.K
        if self.sparse:
            g[:dK] = np.asarray(self.X.T @ P).ravel()
        else:
            np.dot(self.X.T, P, out=g[:dK].reshape(self.d, self.K))
        if self.fit_intercept:
            g[dK:] = P.sum(axis=0)
        if self.mask is not None:
            g *= self.mask
        return float(loss), g

    def loss(self, w):
        per, _ = self._loss_terms(self.scores(w))
        return float(per @ self.sw if self.sw is not None else per.sum())

    # -- the "sgd" capability -----------------------------------------------------------
    def _row_arrays(self):
        if self._rows is None:
            M = self.X if self.sparse else sp.csr_matrix(self.X)
            M = _csr(M)
            self._rows = (M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data,
                          self.y, np.ones(self.n) if self.sw is None else self.sw,
                          np.zeros(0) if self.mask is None else self.mask)
        return self._rows

    def sgd_pass(self, order, v, aux, l1w, m, st, prm):
        """One compiled pass of lazily penalised SGD over the samples ``order``."""
        from . import kernels as S
        rows = self._row_arrays()
        g = v if S.direct(prm, m) else np.zeros(len(v))
        return S.sgd_pass(rows, self.K, self.d, self.fit_intercept, np.ascontiguousarray(order, dtype=np.int64),
                          v, aux, l1w, m, st, prm, S.PassWork(g, np.zeros(self.K), np.zeros(self.d + 1, np.int64),
                                                              np.full(self.d + 1, -1, np.int64)))

    def sample_loss(self, order, w):
        order = np.asarray(order, dtype=np.int64)
        Z = self.scores(w, self.X[order])
        lse = _logsumexp_rows(Z)
        per = lse - Z[np.arange(len(order)), self.y[order]]
        return float(per @ self.sw[order] if self.sw is not None else per.sum())

    # -- the "blocks" capability ---------------------------------------------------------
    def block_layout(self, single=False):
        """One block per feature (its K class weights), then the intercepts; with
        ``single``, one block per weight (coordinate descent)."""
        self._single = bool(single)
        if single:
            return np.arange(self.n_params + 1, dtype=np.int64), np.arange(self.n_params, dtype=np.int64)
        return self.layout.group_ptr, np.arange(self.n_params, dtype=np.int64)

    def _feature_of(self, b):
        """(feature, slice of its K weights the block covers)."""
        if getattr(self, "_single", False):
            f, k = divmod(b, self.K)
            return f, slice(k, k + 1)
        return b, slice(0, self.K)

    def _column(self, b):
        if b == self.d:
            return np.arange(self.n), np.ones(self.n)
        if self.sparse:
            if self._csc is None:
                self._csc = self.X.tocsc()
                self._csc.sort_indices()
            C = self._csc
            lo, hi = C.indptr[b], C.indptr[b + 1]
            return C.indices[lo:hi], C.data[lo:hi]
        col = self.X[:, b]
        rows = np.flatnonzero(col)
        return rows, col[rows]

    def block_begin(self, w):
        self._w = np.array(w, dtype=np.float64)
        self._Z = self.scores(self._w)
        self._trial = None

    def block_weights(self):
        return self._w

    def block_grad_hess(self, b):
        b, part = self._feature_of(b)
        rows, x = self._column(b)
        Z = self._Z[rows]
        P = np.exp(Z - _logsumexp_rows(Z)[:, None])
        s = x if self.sw is None else x * self.sw[rows]
        R = P.copy()
        R[np.arange(len(rows)), self.y[rows]] -= 1.0
        g = s @ R
        h = (s * x) @ (P * (1.0 - P))
        lo, hi = b * self.K, (b + 1) * self.K
        if self.mask is not None:
            g = g * self.mask[lo:hi]
            h = h * self.mask[lo:hi]
        return g[part], h[part]

    def block_change(self, b, dw):
        b, part = self._feature_of(b)
        if part.stop - part.start < self.K:
            full = np.zeros(self.K)
            full[part] = dw
            dw = full
        rows, x = self._column(b)
        Z = self._Z[rows]
        Z_new = Z + np.outer(x, dw)
        idx = np.arange(len(rows))
        yr = self.y[rows]
        old = _logsumexp_rows(Z) - Z[idx, yr]
        new = _logsumexp_rows(Z_new) - Z_new[idx, yr]
        delta = new - old
        if self.sw is not None:
            delta = delta * self.sw[rows]
        self._trial = (b, rows, Z_new, dw)
        return float(delta.sum())

    def block_commit(self):
        b, rows, Z_new, dw = self._trial
        self._Z[rows] = Z_new
        self._w[b * self.K:(b + 1) * self.K] += dw
        self._trial = None

    def block_discard(self):
        self._trial = None

    # -- the "bound" capability (Jebara & Choromanska; see spargel.loglinear.bound) -------
    def bound(self, w, curvature="auto", rank=None, order="descending"):
        """Quadratic upper bound on the loss around ``w`` (Algorithm 1 over each sample's
        classes); ``curvature``: "auto", "dense", "woodbury", "cg" or "lowrank" (with
        ``rank``, Algorithm 4)."""
        from .bound import flat_bound
        self.n_evals += 1
        return flat_bound(self, w, curvature=curvature, rank=rank, order=order)

    # -- the "grafting" capability --------------------------------------------------------
    def _columns(self, features):
        """X restricted to the columns ``features`` (a dense or sparse matrix)."""
        if self.sparse:
            if self._csc is None:
                self._csc = self.X.tocsc()
                self._csc.sort_indices()
            return self._csc[:, features]
        return self.X[:, features]

    def _weights_grad(self, index, R):
        """Loss gradient of the weights ``index`` from the residuals R (n x K)."""
        K, dK = self.K, self.d * self.K
        index = np.asarray(index, dtype=np.int64)
        g = np.empty(len(index))
        feat = index < dK
        fi, inv = np.unique(index[feat] // K, return_inverse=True)
        if len(fi):
            G = np.asarray(self._columns(fi).T @ R)
            g[feat] = G[inv.ravel(), index[feat] % K]
        if np.any(~feat):
            g[~feat] = R.sum(axis=0)[index[~feat] - dK]
        if self.mask is not None:
            g *= self.mask[index]
        return g

    def loss_grad_subset(self, w, index):
        """Loss at ``w`` and the gradient of the weights ``index``: the scores multiply
        only the columns of features with a non-zero weight, the gradient only those of
        the features in ``index``. The residuals stay for :meth:`candidate_grad`.

        >>> m = FlatLogLinear(np.eye(3), [0, 1, 2], 3)
        >>> loss, g = m.loss_grad_subset(np.zeros(m.n_params), np.array([0, 4]))
        >>> bool(np.allclose(g, m.loss_grad(np.zeros(m.n_params))[1][[0, 4]]))
        True
        """
        from .kernels import softmax_residual

        self.n_evals += 1
        w = np.asarray(w, dtype=np.float64)
        W, b = self._split(w)
        live = np.flatnonzero(np.any(W != 0, axis=1))
        Z = np.zeros((self.n, self.K))
        if len(live):
            Z += np.asarray(self._columns(live) @ W[live])
        if b is not None:
            Z += b
        loss = softmax_residual(Z, self.y, self._sw)
        self._residual = Z
        return float(loss), self._weights_grad(index, Z)

    def candidate_grad(self, index):
        """Loss gradient of the weights ``index`` at the point of the last
        :meth:`loss_grad_subset` call."""
        return self._weights_grad(index, self._residual)
