"""The flat log-linear model's ``map`` capability (:mod:`spargel.core.protocol`): a
compiled pass that predicts each sample's class (the arg max of its scores, the lowest
class on ties) with the current weights and applies an online update rule of
:mod:`spargel.core.online_rules` to the difference ``x (e_y - e_pred)`` (and the
intercepts' ``e_y - e_pred``); weights frozen by the model's mask are left out."""

import numpy as np

from ..core import online_rules as R
from ..core.jit import kernel


@kernel()
def map_pass_flat(rows, K, d, fit_intercept, order, w, ws, cov, prm, st, bufs):
    """One pass of the rule prm[0] over the samples ``order``; with rule ``DIFF_ONLY``
    only the first sample's difference is reported (idx, val, info = [nnz, d, 1])."""
    indptr, indices, data, y, sw, mask = rows
    z, acc, mark, idx, val, info = bufs
    masked = len(mask) > 0
    for r in range(len(order)):
        i = order[r]
        for k in range(K):
            z[k] = w[d * K + k] if fit_intercept else 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            x = data[p]
            for k in range(K):
                z[k] += x * w[j * K + k]
        pred = 0
        for k in range(1, K):
            if z[k] > z[pred]:
                pred = k
        gold = y[i]
        nnz = 0
        wrong = 1 if pred != gold else 0
        if wrong:
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                x = data[p]
                kg, kp = j * K + gold, j * K + pred
                if not masked or mask[kg] != 0.0:
                    nnz = R.collect(acc, mark, idx, nnz, kg, x)
                if not masked or mask[kp] != 0.0:
                    nnz = R.collect(acc, mark, idx, nnz, kp, -x)
            if fit_intercept:
                nnz = R.collect(acc, mark, idx, nnz, d * K + gold, 1.0)
                nnz = R.collect(acc, mark, idx, nnz, d * K + pred, -1.0)
        R.gather(acc, mark, idx, val, nnz)
        if prm[0] == R.DIFF_ONLY:
            info[0] = nnz
            info[1] = wrong
            info[2] = 1
            return
        R.update(w, ws, cov, idx, val, nnz, wrong, 1, sw[i], prm, st)


class FlatMapCapability:
    """The ``map`` capability, mixed into :class:`~spargel.loglinear.model.FlatLogLinear`."""

    def _map_buffers(self):
        bufs = getattr(self, "_map_bufs", None)
        if bufs is None:
            indptr = self._row_arrays()[0]
            most = int(np.diff(indptr).max()) if self.n else 0
            m = 2 * most + 2
            bufs = self._map_bufs = (np.zeros(self.K), np.zeros(self.n_params), np.zeros(self.n_params, np.uint8),
                                     np.zeros(m, np.int64), np.zeros(m), np.zeros(3, np.int64))
        return bufs

    def map_pass(self, order, w, ws, cov, st, prm):
        """One compiled pass of an online rule over the samples ``order`` (see
        :mod:`spargel.core.online_rules`)."""
        map_pass_flat(self._row_arrays(), self.K, self.d, self.fit_intercept,
                      np.ascontiguousarray(order, dtype=np.int64), w, ws, cov, prm, st, self._map_buffers())

    def map_sample(self, i, w):
        """``(idx, delta, d, 1)``: the difference ``F(x_i, y_i) - F(x_i, y_pred)`` on the
        distinct weights ``idx``, ``d`` = 1 when the predicted class is wrong."""
        bufs = self._map_buffers()
        w = np.ascontiguousarray(w, dtype=np.float64)
        prm = np.array([R.DIFF_ONLY, 0, 0, 0, 0], dtype=np.float64)
        self.map_pass(np.array([i], dtype=np.int64), w, w, w, np.zeros(3), prm)
        info = bufs[-1]
        nnz = int(info[0])
        return bufs[3][:nnz].copy(), bufs[4][:nnz].copy(), int(info[1]), 1
