"""The bound of the flat multinomial log-linear model and of the latent (mixture) model:
Algorithm 1 of Jebara & Choromanska over the classes of each sample.

For sample ``i`` with features ``xb = [x_i, 1]`` (the 1 when there are intercepts) the
configurations are the classes ``k`` and ``f(k) = e_k (x) xb``, so every vector ``l`` of
Algorithm 1 is ``(e_k - m) (x) xb`` and the sample's curvature is a Kronecker product:

    Sigma_i = C_i (x) xb xb'        C_i = s_i sum_k omega_k (e_k - m_k)(e_k - m_k)'  (K x K)

(``s_i`` the sample weight). With the weights as the ``(d + 1) x K`` matrix ``W`` (the
model's flat vector, feature-major, intercepts last), ``d' Sigma d = sum_i s_i' C_i s_i``
with ``s_i = W_d' xb_i`` the change of the sample's class scores: the bound is Newton's
quadratic model with each sample's softmax covariance replaced by the per-sample
majoriser ``C_i``. :class:`ClassCurvature` works with it without forming ``Sigma``:

* ``matvec``: two products with the data (like a gradient) and n small K x K products;
* ``solve``: exactly, by the cheapest of a dense ``(d+1)K`` Cholesky (small d) and the
  Woodbury identity on the data side, an ``nK x nK`` system (n*K small, e.g. SRBCT: 63
  samples, 9236 weights); otherwise (``exact_solve`` False) the majoriser runs conjugate
  gradients on ``matvec``;
* ``coordinate_descent``: the l1 / elastic-net inner problem one weight at a time, each
  costing the non-zeros of its feature column times K;
* ``lowrank(rank)``: Algorithm 4 on its rank-one factors.

The latent model's denominator is the same sum over ``K * M`` (class, component) pairs,
so it shares this curvature (:mod:`spargel.loglinear.latent_model`).
"""

import math

from collections import namedtuple

import numpy as np
import scipy.sparse as sp
from ..core.jit import kernel

from ..core.bound import DenseCurvature, QuadraticBound, curvature_weight, coordinate_step, log_add, positive_shift, share
from .bound_lowrank import LowRankCurvature

CURVATURES = ("auto", "dense", "woodbury", "cg", "lowrank")

#: the design's columns in CSC form (intercept column included): column ``j`` has the
#: rows ``indices[indptr[j]:indptr[j+1]]`` with the values ``data[...]``
Columns = namedtuple("Columns", "indptr indices data")

#: a coordinate-descent problem ``g.d + 1/2 d' Sigma d + enet(w + d)``: the linear term
#: ``g``, the current weights ``w`` and the per-weight penalties ``l1``, ``l2``
CDProblem = namedtuple("CDProblem", "g w l1 l2")


@kernel()
def class_curvature(logP, sw, order, C, m):
    """``C[i] = sw_i * sum_k omega (e_k - m)(e_k - m)'`` by Algorithm 1 over the classes of
    row i of the log-probabilities ``logP`` (any per-row shift), visited in the order
    ``order[i]`` (natural order when ``order`` is empty); ``m`` a K scratch row."""
    n, K = logP.shape
    natural = order.shape[0] == 0
    weighted = len(sw) > 0
    for i in range(n):
        for a in range(K):
            m[a] = 0.0
            for b in range(K):
                C[i, a, b] = 0.0
        lz = -np.inf
        wi = sw[i] if weighted else 1.0
        for r in range(K):
            k = r if natural else order[i, r]
            lam = logP[i, k]
            if lam == -np.inf:
                continue
            u = lam - lz
            om = curvature_weight(u) * wi
            sh = share(u)
            if om > 0.0:
                for a in range(K):
                    la = (1.0 if a == k else 0.0) - m[a]
                    for b in range(K):
                        C[i, a, b] += om * la * ((1.0 if b == k else 0.0) - m[b])
            for a in range(K):
                m[a] += sh * ((1.0 if a == k else 0.0) - m[a])
            lz = log_add(lz, lam)


class Design:
    """The samples as the kernels of the bound need them: ``X`` (dense or CSR), the
    intercept column, its CSC form (columns = features, then the intercept) for the
    coordinate steps. Built once per model."""

    def __init__(self, X, fit_intercept):
        self.sparse = sp.issparse(X)
        self.X = X
        self.n, self.d = X.shape
        self.fit_intercept = bool(fit_intercept)
        self.db = self.d + (1 if self.fit_intercept else 0)
        self._csc = None
        self._sq = None
        self._gram = None

    def scores(self, V):
        """``Xb @ V`` for a ``db x K`` matrix V (n x K)."""
        S = np.asarray(self.X @ V[:self.d])
        if self.fit_intercept:
            S = S + V[self.d]
        return S

    def back(self, T):
        """``Xb' @ T`` (db x K)."""
        out = np.empty((self.db, T.shape[1]))
        out[:self.d] = np.asarray(self.X.T @ T)
        if self.fit_intercept:
            out[self.d] = T.sum(axis=0)
        return out

    def back_squares(self, T):
        """``(Xb * Xb)' @ T``."""
        if self._sq is None:
            self._sq = self.X.multiply(self.X).tocsr() if self.sparse else self.X * self.X
        out = np.empty((self.db, T.shape[1]))
        out[:self.d] = np.asarray(self._sq.T @ T)
        if self.fit_intercept:
            out[self.d] = T.sum(axis=0)
        return out

    def dense(self):
        Xd = self.X.toarray() if self.sparse else self.X
        if self.fit_intercept:
            Xd = np.hstack([Xd, np.ones((self.n, 1))])
        return Xd

    def gram(self, inv_shift):
        """``Xb diag(inv_shift) Xb'`` (n x n) for a per-feature vector of length db (the
        last one is kept: the shift, an l2 strength, is the same at every iteration)."""
        key = inv_shift[:self.d].tobytes()
        if self._gram is None or self._gram[0] != key:
            Xs = self.X.multiply(inv_shift[:self.d]).tocsr() if self.sparse else self.X * inv_shift[:self.d]
            G = np.asarray((Xs @ self.X.T).todense()) if self.sparse else Xs @ self.X.T
            self._gram = (key, G)
        G = self._gram[1]
        return G + inv_shift[self.d] if self.fit_intercept else G

    def csc(self):
        if self._csc is None:
            M = sp.csc_matrix(self.X, dtype=np.float64)
            if self.fit_intercept:
                M = sp.hstack([M, np.ones((self.n, 1))], format="csc")
            M.sort_indices()
            self._csc = Columns(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data.astype(np.float64))
        return self._csc


class ClassCurvature:
    """``Sigma = sum_i C_i (x) xb_i xb_i'`` over the weights ``W`` (db x K, flat
    feature-major); ``mask`` (0/1 per weight) freezes weights at 0 (see the module
    documentation)."""

    def __init__(self, design, C, mask=None, method="auto"):
        if method not in CURVATURES or method == "lowrank":
            raise ValueError(f"curvature must be one of {CURVATURES[:-1]}, got {method!r}")
        self.design, self.C = design, C
        self.K = C.shape[1]
        self.n = design.db * self.K
        self.mask = mask
        self.method = self._plan(method)
        self.exact_solve = self.method in ("dense", "woodbury")
        self._dense = None

    def _plan(self, method):
        D, K = self.design, self.K
        n, db, p = D.n, D.db, self.n
        if method != "auto":
            if method == "woodbury" and self.mask is not None:
                raise ValueError("curvature='woodbury' does not support a weight mask; use 'dense' or 'cg'")
            return method
        cost = {"dense": 0.5 * K * K * n * db * db + p ** 3 / 3.0 if p <= 6000 else np.inf,
                "woodbury": K * n * n * db + (n * K) ** 3 if n * K <= 6000 and self.mask is None else np.inf,
                "cg": 40.0 * (4.0 * n * db * K + 2.0 * n * K * K)}
        return min(cost, key=cost.get)

    # -- products ---------------------------------------------------------------------
    def _apply(self, v):
        K = self.K
        V = v.reshape(self.design.db, K)
        S = self.design.scores(V)
        T = np.matmul(self.C, S[:, :, None])[:, :, 0]
        return self.design.back(T).ravel()

    def matvec(self, v):
        if self.mask is None:
            return self._apply(v)
        return self.mask * self._apply(self.mask * v) + (1.0 - self.mask) * v

    def diagonal(self):
        Ckk = np.ascontiguousarray(np.diagonal(self.C, axis1=1, axis2=2))
        diag = self.design.back_squares(Ckk).ravel()
        if self.mask is not None:
            diag = self.mask * diag + (1.0 - self.mask)
        return diag

    def dense(self):
        """Sigma as a dense ``(db K) x (db K)`` matrix."""
        if self._dense is None:
            Xd = self.design.dense()
            db, K = self.design.db, self.K
            M = np.empty((db, K, db, K))
            for k in range(K):
                for l in range(k, K):
                    B = Xd.T @ (Xd * self.C[:, k, l][:, None])
                    M[:, k, :, l] = B
                    M[:, l, :, k] = B.T
            M = M.reshape(db * K, db * K)
            if self.mask is not None:
                M = M * self.mask[:, None] * self.mask[None, :] + np.diag(1.0 - self.mask)
            self._dense = DenseCurvature(M)
        return self._dense

    def solve(self, rhs, shift):
        if self.method == "dense":
            return self.dense().solve(rhs, shift)
        if self.method != "woodbury":
            raise ValueError("this curvature has no exact solve (method 'cg')")
        D, K = self.design, self.K
        n, db = D.n, D.db
        # the tiny ridge of the unpenalised weights needs a scale, not the exact diagonal
        E = positive_shift(shift, np.array([float(np.max(self.C)) * n + float(np.max(shift))]), self.n).reshape(db, K)
        Ei = 1.0 / E
        x = Ei * rhs.reshape(db, K)
        if np.all(Ei == Ei[:, :1]):
            G = D.gram(Ei[:, 0])
            Gk = np.broadcast_to(G, (K, n, n))
        else:
            Gk = np.stack([D.gram(Ei[:, k]) for k in range(K)])
        # I + B G with (B G)[(i,k),(j,l)] = C_i[k,l] G_l[i,j]
        BG = np.einsum("ikl,lij->ikjl", self.C, Gk).reshape(n * K, n * K)
        BG[np.diag_indices_from(BG)] += 1.0
        S = D.scores(x)
        T = np.matmul(self.C, S[:, :, None])[:, :, 0]
        y = np.linalg.solve(BG, T.ravel()).reshape(n, K)
        return (x - Ei * D.back(y)).ravel()

    def coordinate_descent(self, g, w, l1, l2, delta, max_sweeps=100, tol=1e-10, active=None):
        if self.method == "dense":
            return self.dense().coordinate_descent(g, w, l1, l2, delta, max_sweeps, tol)
        V = delta.reshape(self.design.db, self.K)
        S = self.design.scores(V)
        T = np.ascontiguousarray(np.matmul(self.C, S[:, :, None])[:, :, 0])
        mask = np.zeros(0) if self.mask is None else self.mask
        prob = CDProblem(g, w, l1, l2)
        sweeps = _class_cd(self.design.csc(), self.K, self.C, self.diagonal(), mask, prob, delta, T,
                           int(max_sweeps), float(tol))
        return delta, sweeps

    # -- Algorithm 4 ------------------------------------------------------------------
    def factor_blocks(self, block=32):
        """The rank-one terms of Sigma, a few samples at a time: for each sample the
        eigen-vectors of C_i (times the root of their eigenvalue) Kronecker xb_i."""
        D, K = self.design, self.K
        Xd = D.X
        for lo in range(0, D.n, block):
            hi = min(lo + block, D.n)
            lam, Q = np.linalg.eigh(self.C[lo:hi])                     # (b, K), (b, K, K)
            rows = []
            xs = Xd[lo:hi].toarray() if D.sparse else Xd[lo:hi]
            if D.fit_intercept:
                xs = np.hstack([xs, np.ones((hi - lo, 1))])
            for i in range(hi - lo):
                for r in range(K):
                    if lam[i, r] > 1e-14 * max(lam[i, -1], 1e-300):
                        v = np.outer(xs[i], Q[i, :, r] * math.sqrt(lam[i, r])).ravel()
                        rows.append(v if self.mask is None else v * self.mask)
            if rows:
                yield np.array(rows)

    def lowrank(self, rank, block=32):
        lr = LowRankCurvature.build(self.factor_blocks(block), self.n, rank)
        if self.mask is not None:
            lr.D = lr.D + (1.0 - self.mask)
        return lr


@kernel()
def _class_cd(X, K, C, diag, mask, prob, delta, T, max_sweeps, tol):
    """Cyclic coordinate descent on the :data:`CDProblem` ``prob`` (``g.d + 1/2 d' Sigma
    d + enet(w + d)``) for the class curvature (``C`` per sample, ``diag`` its diagonal,
    ``mask`` empty or 0 for the weights held at zero): weight (j, k) = index j * K + k
    touches the rows of feature column j of the :data:`Columns` ``X``;
    ``T[i] = C_i (scores of d on sample i)`` is kept up to date."""
    indptr, indices, data = X.indptr, X.indices, X.data
    g, w, l1, l2 = prob.g, prob.w, prob.l1, prob.l2
    ncol = len(indptr) - 1
    masked = len(mask) > 0
    for sweep in range(max_sweeps):
        biggest = 0.0
        for j in range(ncol):
            lo, hi = indptr[j], indptr[j + 1]
            for k in range(K):
                idx = j * K + k
                if masked and mask[idx] == 0.0:
                    continue
                h = diag[idx]
                col = 0.0
                for e in range(lo, hi):
                    col += data[e] * T[indices[e], k]
                step = coordinate_step(g[idx] + col, h, w, delta, idx, l1, l2)
                if step != 0.0:
                    for e in range(lo, hi):
                        i = indices[e]
                        v = step * data[e]
                        for a in range(K):
                            T[i, a] += v * C[i, a, k]
                    biggest = max(biggest, abs(step) * math.sqrt(h + l2[idx]))
        if biggest <= tol:
            return sweep + 1
    return max_sweeps


# --------------------------------------------------------------------------- building the bound
def class_orders(logP, order):
    """The visiting order of the classes per sample: ``"natural"`` (0..K-1) or
    ``"descending"`` (most probable first)."""
    if order == "natural":
        return np.zeros((0, 0), dtype=np.int64)
    if order == "descending":
        return np.ascontiguousarray(np.argsort(-logP, axis=1, kind="stable"), dtype=np.int64)
    if order == "ascending":
        return np.ascontiguousarray(np.argsort(logP, axis=1, kind="stable"), dtype=np.int64)
    raise ValueError(f"order must be 'natural', 'descending' or 'ascending', got {order!r}")


def class_bound(design, w, logP, residual, loss, sw=None, mask=None, curvature="auto", rank=None,
                order="descending"):
    """The :class:`~spargel.core.bound.QuadraticBound` of a loss whose partition
    functions are softmaxes over the columns of ``logP`` (n x K log-probabilities at w):
    ``residual`` (n x K) is the loss gradient with respect to the scores (so the weight
    gradient is ``Xb' residual``)."""
    n, K = logP.shape
    grad = design.back(residual).ravel()
    if mask is not None:
        grad *= mask
    C = np.empty((n, K, K))
    sw_arr = np.zeros(0) if sw is None else np.ascontiguousarray(sw, dtype=np.float64)
    class_curvature(np.ascontiguousarray(logP), sw_arr, class_orders(logP, order), C, np.empty(K))
    if curvature == "lowrank":
        if rank is None:
            raise ValueError("curvature='lowrank' needs rank=k")
        curv = ClassCurvature(design, C, mask, "cg").lowrank(rank)
    else:
        curv = ClassCurvature(design, C, mask, curvature)
    return QuadraticBound(w, loss, grad, curv, {"curvature": getattr(curv, "method", "lowrank")})


def log_softmax(Z):
    m = Z.max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    lse = m + np.log(np.exp(Z - m).sum(axis=1, keepdims=True))
    return Z - lse, lse[:, 0]


def flat_bound(model, w, curvature="auto", rank=None, order="descending"):
    """The bound of :class:`~spargel.loglinear.model.FlatLogLinear` at ``w``."""
    w = np.asarray(w, dtype=np.float64)
    design = model.bound_design()
    Z = model.scores(w)
    logP, lse = log_softmax(Z)
    idx = np.arange(model.n)
    per = lse - Z[idx, model.y]
    R = np.exp(logP)
    R[idx, model.y] -= 1.0
    if model.sw is not None:
        R *= model.sw[:, None]
        loss = float(per @ model.sw)
    else:
        loss = float(per.sum())
    return class_bound(design, w, logP, R, loss, model.sw, model.mask, curvature, rank, order)
