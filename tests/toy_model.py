"""A small hand-written model of the protocol, used only by the tests: least squares
``L(w) = sum_i 1/2 (x_i . w - y_i)^2`` over a few samples. It offers every capability
in plain Python (the SGD pass uses the shared lazy-penalty bookkeeping exactly as the
compiled passes of the CRF and the log-linear model do), to show that solvers see
nothing CRF-shaped."""

import numpy as np

from spargel.core import lazy_l1 as Z
from spargel.core.protocol import ParameterLayout


class LeastSquares:
    def __init__(self, X, y, groups=None):
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.n_samples, self.n_params = self.X.shape
        ptr = np.arange(self.n_params + 1) if groups is None else np.asarray(groups)
        self.layout = ParameterLayout(self.n_params, ptr)

    # "loss_grad"
    def loss(self, w):
        r = self.X @ w - self.y
        return 0.5 * float(r @ r)

    def loss_grad(self, w):
        r = self.X @ w - self.y
        return 0.5 * float(r @ r), self.X.T @ r

    # "blocks": one block per layout group
    def block_layout(self, single=False):
        if single:
            return np.arange(self.n_params + 1), np.arange(self.n_params)
        return self.layout.group_ptr, np.arange(self.n_params)

    def block_begin(self, w):
        self._w = np.array(w, dtype=np.float64)
        self._r = self.X @ self._w - self.y
        self._trial = None

    def block_weights(self):
        return self._w

    def block_grad_hess(self, b):
        lo, hi = self.layout.group_ptr[b], self.layout.group_ptr[b + 1]
        Xb = self.X[:, lo:hi]
        return Xb.T @ self._r, (Xb * Xb).sum(axis=0)

    def block_change(self, b, dw):
        lo, hi = self.layout.group_ptr[b], self.layout.group_ptr[b + 1]
        r_new = self._r + self.X[:, lo:hi] @ dw
        self._trial = (lo, hi, dw, r_new)
        return 0.5 * float(r_new @ r_new - self._r @ self._r)

    def block_commit(self):
        lo, hi, dw, r_new = self._trial
        self._w[lo:hi] += dw
        self._r = r_new
        self._trial = None

    def block_discard(self):
        self._trial = None

    # "sgd": one pass of lazily penalised SGD (see spargel.core.lazy_l1), every weight a block
    def sgd_pass(self, order, v, aux, l1w, m, st, prm):
        variant, B = int(prm.variant), max(1, int(prm.batch))
        lazy = variant != Z.NAIVE
        n = self.n_params
        for start in range(0, len(order), B):
            idx = order[start:start + B]
            eta, a_new = Z.step_rate(st, prm, len(idx))
            a, us, up = st[Z.SHRINK], st[Z.U_SCALED], st[Z.U_PLAIN]
            if lazy:
                Z.penalise_block(v, aux, l1w, prm.l1, m, us, up, 0, n, variant)
            w = np.where(m == 0, v, a * v) if len(m) else a * v
            g = np.zeros(n)
            for i in idx:
                r = self.X[i] @ w - self.y[i]
                st[Z.ONLINE_LOSS] += 0.5 * r * r
                g += r * self.X[i]
            inc = Z.step_done(st, prm, eta, len(idx), a_new, lazy)
            if lazy:
                Z.step_block(v, g, m, 1.0 / a_new, eta, 0, n)
            else:
                Z.naive_step(v, g, l1w, prm.l1, m, eta, len(idx), prm.l2, prm.N, inc)
            if st[Z.SHRINK] < Z.RENORMALISE_BELOW:
                Z.renormalise(v, aux, m, st, variant)
        return 0

    def sample_loss(self, order, w):
        r = self.X[order] @ w - self.y[order]
        return 0.5 * float(r @ r)


def make_least_squares(n=40, d=8, seed=0, groups=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_true = np.where(rng.random(d) < 0.5, rng.normal(size=d) * 2, 0.0)
    y = X @ w_true + 0.3 * rng.normal(size=n)
    return LeastSquares(X, y, groups)


def random_quadratic(seed, n):
    """A random positive definite quadratic ``f(x) = x A x / 2 - b x`` and a start ``w``:
    ``(A, b, w)``, with ``A = Q Q^T + I``."""
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n))
    return Q @ Q.T + np.eye(n), rng.normal(size=n), rng.normal(size=n)
