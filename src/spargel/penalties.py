"""Penalties R(w): value, the orthant-wise pseudo-gradient, the proximal step and
the optimality violation. The objective is ``L(w) + l1 * ||w||_1 + l2 / 2 * ||w||^2``.

``l1`` and ``l2`` are scalars or per-weight arrays (per-feature penalty weights; a zero
leaves that weight unpenalised).

Conversions from other tools (their objectives are sums over sequences too):

* CRFsuite: ``c1 * ||w||_1 + c2 * ||w||^2``  ->  ``l1 = c1``, ``l2 = 2 * c2``;
* Wapiti:   ``rho1 * ||w||_1 + rho2 / 2 * ||w||^2``  ->  ``l1 = rho1``, ``l2 = rho2``.

>>> p = ElasticNet(l1=1.0, l2=0.5)
>>> float(p.value(np.array([2.0, -1.0])))
4.25
"""

import numpy as np


class ElasticNet:
    def __init__(self, l1=0.0, l2=0.0):
        for name, v in (("l1", l1), ("l2", l2)):
            arr = np.asarray(v, dtype=float)
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
        self.l1 = l1
        self.l2 = l2

    @property
    def has_l1(self):
        return bool(np.any(np.asarray(self.l1) > 0))

    # the smooth part (l2) is added to the model's loss by the solvers
    def smooth_value_grad(self, w):
        if np.isscalar(self.l2) and self.l2 == 0:
            return 0.0, None
        return 0.5 * float(np.dot(self.l2 * w, w)), self.l2 * w

    def l1_value(self, w):
        if np.isscalar(self.l1):
            return self.l1 * float(np.abs(w).sum())
        return float(np.dot(self.l1, np.abs(w)))

    def value(self, w):
        return self.l1_value(w) + self.smooth_value_grad(w)[0]

    def pseudo_gradient(self, w, g):
        """The orthant-wise pseudo-gradient of ``f + l1 |w|`` given the smooth gradient
        g (Andrew & Gao 2007): the minimum-norm sub-gradient."""
        if not self.has_l1:
            return g.copy()
        l1 = self.l1
        pg = np.where(w > 0, g + l1, np.where(w < 0, g - l1, 0.0))
        zero = w == 0
        right = g + l1          # derivative going right from zero
        left = g - l1           # derivative going left from zero
        pg[zero] = np.where(right[zero] < 0, right[zero], np.where(left[zero] > 0, left[zero], 0.0))
        return pg

    def prox(self, w, step):
        """argmin_x  l1 |x| + l2/2 x^2 + 1/(2 step) (x - w)^2  (soft threshold, shrink)."""
        x = np.sign(w) * np.maximum(np.abs(w) - step * self.l1, 0.0)
        return x / (1.0 + step * self.l2)

    def optimality_violation(self, w, g_loss):
        """Largest violation of the optimality conditions given the loss gradient:
        ``|g + l2 w + l1 sign(w)|`` where w != 0 and ``max(|g| - l1, 0)`` where w == 0."""
        g = g_loss + self.l2 * w
        l1 = np.broadcast_to(np.asarray(self.l1, dtype=float), w.shape)
        viol = np.where(w != 0, np.abs(g + l1 * np.sign(w)), np.maximum(np.abs(g) - l1, 0.0))
        return float(viol.max()) if len(viol) else 0.0
