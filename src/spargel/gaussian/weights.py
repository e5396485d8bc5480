"""The l1 weights of the Newton solvers without an n x n matrix when the penalty is a scalar.

On the rescaled problem (``solve``'s ``S~ = S / (s s^T)``) a scalar penalty a
becomes the weights ``L~_ij = min(a / (s_i s_j), cap)`` off the diagonal and
``d_i / s_i^2`` on it: n + n + 2 numbers, not n^2. :class:`ScalarWeights` holds
them; the Newton solvers' kernels read a weight entry by entry (``weight`` in
``_cd_kernels``), with the same arithmetic as the dense rescaling, so the
results are those of the dense weight matrix. A solver that needs the matrix
(the projected gradients, a rare fallback) gets it from :func:`dense_weights`.

>>> import numpy as np
>>> w = ScalarWeights(np.array([1.0, 2.0]), np.array([0.0, 0.5]), 0.4, 1e6)
>>> dense_weights(w)
array([[0. , 0.2],
       [0.2, 0.5]])
"""

from __future__ import annotations

import numpy as np

__all__ = ["ScalarWeights", "weight_args", "dense_weights", "weights_diag"]

_NO_MATRIX = np.empty((0, 0))
_NO_VECTOR = np.empty(0)


class ScalarWeights:
    """Weights ``min(a / (s_i s_j), cap)`` off the diagonal and ``diag_i`` on it.

    Parameters
    ----------
    s : (n,) positive scale factors. diag : (n,) the diagonal weights.
    a : the scalar weight before rescaling. cap : the largest weight.
    """

    def __init__(self, s, diag, a, cap):
        s = np.asarray(s, dtype=np.float64)
        self.lw = np.ascontiguousarray(np.concatenate([s, np.asarray(diag, dtype=np.float64),
                                                       [float(a), float(cap)]]))
        self.shape = (s.size, s.size)

    @property
    def n(self):
        return self.shape[0]


def weight_args(L):
    """The ``(L, lw)`` pair the kernels take: a dense matrix with an empty ``lw``,
    or an empty matrix and the :class:`ScalarWeights` vector."""
    if isinstance(L, ScalarWeights):
        return _NO_MATRIX, L.lw
    return L, _NO_VECTOR


def dense_weights(L):
    """The n x n weight matrix (L itself when it is one)."""
    if not isinstance(L, ScalarWeights):
        return L
    from ._cd_kernels import weights_dense

    out = np.empty(L.shape)
    weights_dense(_NO_MATRIX, L.lw, out)
    return out


def weights_diag(L):
    """The diagonal weights (a copy)."""
    if isinstance(L, ScalarWeights):
        return L.lw[L.n:2 * L.n].copy()
    return np.diag(L).copy()
