"""Penalties R(w): the objects solvers call.

The objective is ``L(w) + R(w)`` with L a model's loss (a sum over samples). A penalty
knows its value, its smooth part (the l2 term, which quasi-Newton solvers add to the
loss), the orthant-wise pseudo-gradient (separable penalties: OWL-QN), the proximal
step (proximal-gradient solvers), the closed-form block step on a quadratic model
(coordinate descent), the optimality violation and ``l1_max`` (the smallest strength for
which ``w = 0`` is optimal).

* :class:`ElasticNet` -- ``sum_i s_i (l1 |w_i| + l2 / 2 w_i^2)``; ``l1``, ``l2`` scalars or
  per-weight arrays, ``scale`` the model layout's per-weight penalty scale (0 leaves a
  weight unpenalised, e.g. an intercept). Separable.
* :class:`GroupLasso` -- ``sum_g s_g (l1 ||w_g||_2 + l2 / 2 ||w_g||^2)`` over the groups of
  a :class:`~spargel.core.protocol.ParameterLayout` (an MRF edge's state table, a CRF
  attribute's label weights): whole groups become zero together.

Conversions from other tools (their objectives are sums over sequences too):

* CRFsuite: ``c1 * ||w||_1 + c2 * ||w||^2``  ->  ``l1 = c1``, ``l2 = 2 * c2``;
* Wapiti:   ``rho1 * ||w||_1 + rho2 / 2 * ||w||^2``  ->  ``l1 = rho1``, ``l2 = rho2``.

>>> p = ElasticNet(l1=1.0, l2=0.5)
>>> float(p.value(np.array([2.0, -1.0])))
4.25
>>> ElasticNet(l1=1.0).prox(np.array([3.0, -0.5]), 1.0).tolist()
[2.0, -0.0]
"""

import numpy as np

from . import penalty_kernels as PK
from .vec import asum, axpy


def _check_strength(name, v):
    arr = np.asarray(v, dtype=float) if not isinstance(v, str) else None
    if arr is None or arr.dtype.kind not in "fiu" or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be a finite number >= 0 (or an array of them), got {v!r}")
    return arr


class Penalty:
    """What every penalty offers (see the module documentation)."""

    separable = False           # a sum of one-weight terms (OWL-QN, SGD-L1, coordinate steps)

    def value(self, w):
        return self.smooth_value_grad(w)[0] + self.nonsmooth_value(w)

    def smooth_value_grad(self, w):
        """Value and gradient of the smooth (l2) part; the gradient is None when zero."""
        raise NotImplementedError

    def nonsmooth_value(self, w):
        raise NotImplementedError

    def add_smooth_grad(self, w, g):
        """Add the smooth part's gradient to ``g`` in place; returns the smooth part's
        value (what :meth:`smooth_value_grad` gives, without a weight-sized array where
        the penalty can avoid one)."""
        sv, sg = self.smooth_value_grad(w)
        if sg is not None:
            g += sg
        return sv

    @property
    def has_nonsmooth(self):
        raise NotImplementedError

    def prox(self, w, step):
        """``argmin_x R(x) + ||x - w||^2 / (2 step)`` (a new array)."""
        raise NotImplementedError

    def block_step(self, w, g, h, lo, hi):
        """New values of weights ``lo:hi`` minimising ``g.d + d' diag(h) d / 2 + R(w + d)``
        over that block (exactly when separable; with the block's largest curvature as a
        majoriser otherwise). ``w`` is the whole vector, ``g``, ``h`` the block's loss
        gradient and curvature."""
        raise NotImplementedError

    def block_value(self, w, lo, hi):
        """The penalty terms of weights ``lo:hi`` of w (block solvers: the change of the
        penalty when one block moves)."""
        raise NotImplementedError

    def block_violation(self, w, g, lo, hi):
        """Largest violation of the optimality conditions of weights ``lo:hi`` given
        their loss gradient ``g``."""
        raise NotImplementedError

    def optimality_violation(self, w, g_loss):
        """Largest violation of the optimality conditions given the loss gradient."""
        raise NotImplementedError

    def l1_max(self, g0):
        """Smallest ``l1`` for which ``w = 0`` is optimal, given the loss gradient at 0
        (the unpenalised weights are assumed optimal there)."""
        raise NotImplementedError

    def with_l1(self, l1):
        """The same penalty with another l1 strength."""
        raise NotImplementedError


class ElasticNet(Penalty):
    """``sum_i s_i (l1_i |w_i| + l2_i / 2 w_i^2)``.

    ``l1``, ``l2``: scalars or per-weight arrays; ``scale``: per-weight multipliers (the
    layout's ``penalty_scale``) or None.
    """

    separable = True

    def __init__(self, l1=0.0, l2=0.0, scale=None):
        a1, a2 = _check_strength("l1", l1), _check_strength("l2", l2)
        self.l1 = float(a1) if a1.ndim == 0 else a1
        self.l2 = float(a2) if a2.ndim == 0 else a2
        self.scale = None if scale is None else np.asarray(scale, dtype=np.float64)
        self._cache = {}

    def __repr__(self):
        return f"ElasticNet(l1={self.l1!r}, l2={self.l2!r}{'' if self.scale is None else ', scale=...'})"

    # per-weight coefficients -------------------------------------------------------
    def per_weight(self, n):
        """(l1, l2) as float64 arrays of length n (scale applied); cached per n."""
        hit = self._cache.get(n)
        if hit is None:
            l1 = np.array(np.broadcast_to(np.asarray(self.l1, dtype=np.float64), (n,)))
            l2 = np.array(np.broadcast_to(np.asarray(self.l2, dtype=np.float64), (n,)))
            if self.scale is not None:
                if self.scale.shape != (n,):
                    raise ValueError(f"penalty scale has {self.scale.shape[0]} entries, the model {n} weights")
                l1 *= self.scale
                l2 *= self.scale
            hit = self._cache[n] = (l1, l2)
        return hit

    def uniform(self):
        """(l1, l2) as two floats when every weight has the same coefficients, else None."""
        if self.scale is None and np.ndim(self.l1) == 0 and np.ndim(self.l2) == 0:
            return float(self.l1), float(self.l2)
        return None

    @property
    def has_nonsmooth(self):
        return bool(np.any(np.asarray(self.l1) > 0)) and (self.scale is None or bool(np.any(self.scale > 0)))

    # value --------------------------------------------------------------------------
    def smooth_value_grad(self, w):
        if np.ndim(self.l2) == 0 and self.l2 == 0:
            return 0.0, None
        l2 = self.per_weight(len(w))[1]
        g = l2 * w
        return 0.5 * float(np.dot(g, w)), g

    def nonsmooth_value(self, w):
        u = self.uniform()
        if u is not None:
            return u[0] * float(asum(np.ascontiguousarray(w, dtype=np.float64))) if u[0] else 0.0
        return float(np.dot(self.per_weight(len(w))[0], np.abs(w)))

    def add_smooth_grad(self, w, g):
        """``g += l2 * w`` in place (one compiled pass when l2 is one number: no per-weight
        coefficient arrays and no temporary); returns ``l2 / 2 ||w||^2``."""
        u = self.uniform()
        if u is None or g.dtype != np.float64 or not g.flags.c_contiguous:
            return super().add_smooth_grad(w, g)
        if u[1] == 0:
            return 0.0
        return 0.5 * u[1] * float(axpy(u[1], np.ascontiguousarray(w, dtype=np.float64), g))

    # steps --------------------------------------------------------------------------
    def pseudo_gradient(self, w, g, out=None):
        """The orthant-wise pseudo-gradient of ``f + sum l1_i |w_i|`` given the gradient
        ``g`` of the smooth part f (Andrew & Gao 2007): the minimum-norm sub-gradient."""
        out = np.empty_like(g) if out is None else out
        if not self.has_nonsmooth:
            if out is not g:
                out[:] = g
            return out
        u = self.uniform()
        l1 = np.array([u[0]]) if u is not None else self.per_weight(len(w))[0]
        PK.pseudo_gradient(w, g, l1, out)
        return out

    def prox(self, w, step):
        l1, l2 = self.per_weight(len(w))
        out = np.empty_like(w)
        PK.enet_prox(w, float(step), l1, l2, out)
        return out

    def block_step(self, w, g, h, lo, hi):
        l1, l2 = self.per_weight(len(w))
        out = np.empty(hi - lo)
        PK.enet_newton(w[lo:hi], g, h, l1[lo:hi], l2[lo:hi], out)
        return out

    def block_value(self, w, lo, hi):
        l1, l2 = self.per_weight(len(w))
        x = w[lo:hi]
        return float(np.dot(l1[lo:hi], np.abs(x)) + 0.5 * np.dot(l2[lo:hi], x * x))

    def block_violation(self, w, g, lo, hi):
        l1, l2 = self.per_weight(len(w))
        return float(PK.enet_violation(w[lo:hi], g, l1[lo:hi], l2[lo:hi]))

    def optimality_violation(self, w, g_loss):
        if len(w) == 0:
            return 0.0
        l1, l2 = self.per_weight(len(w))
        return float(PK.enet_violation(w, g_loss, l1, l2))

    def l1_max(self, g0):
        s = np.ones(len(g0)) if self.scale is None else self.scale
        pen = s > 0
        return float(np.max(np.abs(g0[pen]) / s[pen])) if np.any(pen) else 0.0

    def with_l1(self, l1):
        return ElasticNet(l1, self.l2, self.scale)

    def subset(self, index, n):
        """The penalty of the weights ``index`` of an ``n``-weight vector, as a penalty on
        the vector ``w[index]`` (incremental solvers keep their working set compact).
        Uniform coefficients stay scalars, so the arithmetic is that of the whole penalty.

        >>> ElasticNet(1.0, scale=np.array([0.0, 1.0, 2.0])).subset(np.array([2, 0]), 3).l1.tolist()
        [2.0, 0.0]
        """
        if self.uniform() is not None:
            return ElasticNet(self.l1, self.l2)
        l1, l2 = self.per_weight(n)
        index = np.asarray(index, dtype=np.int64)
        l2 = l2[index]
        return ElasticNet(l1[index], l2 if l2.any() else 0.0)


class GroupLasso(Penalty):
    """``sum_g s_g (l1 ||w_g||_2 + l2 / 2 ||w_g||^2)`` over the layout's groups.

    ``layout`` is a :class:`~spargel.core.protocol.ParameterLayout`; ``s_g`` is the
    group's penalty scale (the layout's per-weight scale, which must be equal within a
    group; 0 leaves a group unpenalised) times ``group_weights[g]`` when given (e.g.
    ``sqrt(group size)``, the usual choice when groups differ in size).

    >>> from spargel.core.protocol import ParameterLayout
    >>> lay = ParameterLayout(4, np.array([0, 2, 4]))
    >>> pen = GroupLasso(1.0, lay)
    >>> pen.prox(np.array([3.0, 4.0, 0.3, 0.4]), 1.0).tolist()    # ||(3,4)|| = 5 -> 4
    [2.4, 3.2, 0.0, 0.0]
    """

    separable = False

    def __init__(self, l1, layout, l2=0.0, group_weights=None):
        self.l1 = float(_check_strength("l1", l1))
        self.l2 = float(_check_strength("l2", l2))
        self.layout = layout
        ptr = layout.group_ptr
        n_groups = len(ptr) - 1
        if layout.penalty_scale is None:
            gs = np.ones(n_groups)
        else:
            s = layout.penalty_scale
            first = s[ptr[:-1]] if n_groups else np.zeros(0)
            sizes = np.diff(ptr)
            gs = np.where(sizes > 0, first, 0.0)
            same = np.maximum.reduceat(s, ptr[:-1][sizes > 0]) == np.minimum.reduceat(s, ptr[:-1][sizes > 0]) \
                if len(s) else np.ones(0, bool)
            if not np.all(same):
                raise ValueError("GroupLasso needs the same penalty scale for every weight of a group")
        if group_weights is not None:
            gw = _check_strength("group_weights", group_weights)
            if gw.shape != (n_groups,):
                raise ValueError(f"group_weights needs {n_groups} values, got {gw.shape}")
            gs = gs * gw
        self.group_scale = np.ascontiguousarray(gs, dtype=np.float64)
        self.group_weights = group_weights

    def __repr__(self):
        return f"GroupLasso(l1={self.l1!r}, l2={self.l2!r}, groups={self.layout.n_groups})"

    @property
    def has_nonsmooth(self):
        return self.l1 > 0 and bool(np.any(self.group_scale > 0))

    def _check(self, w):
        if len(w) != self.layout.n_params:
            raise ValueError(f"the penalty's layout has {self.layout.n_params} weights, got {len(w)}")

    def smooth_value_grad(self, w):
        self._check(w)
        if self.l2 == 0:
            return 0.0, None
        s = np.repeat(self.group_scale, self.layout.group_sizes) * self.l2
        g = s * w
        return 0.5 * float(np.dot(g, w)), g

    def group_norms(self, w):
        return PK.group_norms(w, self.layout.group_ptr)

    def nonsmooth_value(self, w):
        self._check(w)
        return self.l1 * float(np.dot(self.group_scale, self.group_norms(w)))

    def prox(self, w, step):
        self._check(w)
        out = np.empty_like(w)
        PK.group_prox(w, float(step), self.l1, self.l2, self.layout.group_ptr, self.group_scale, out)
        return out

    def _whole_groups(self, lo, hi):
        """(first group, end group) of weights lo:hi, which must be whole groups."""
        ptr = self.layout.group_ptr
        g0, g1 = int(np.searchsorted(ptr, lo)), int(np.searchsorted(ptr, hi))
        if g0 >= len(ptr) or g1 >= len(ptr) or ptr[g0] != lo or ptr[g1] != hi:
            raise ValueError("a GroupLasso block must cover whole groups")
        return g0, g1

    def block_step(self, w, g, h, lo, hi):
        """Block = one or more whole groups; the curvature is majorised by max(h)."""
        ptr = self.layout.group_ptr
        g0, g1 = self._whole_groups(lo, hi)
        hmax = float(np.max(h)) if len(h) else 1.0
        hmax = max(hmax, 1e-12)
        z = w[lo:hi] - g / hmax
        out = np.empty(hi - lo)
        PK.group_prox(z, 1.0 / hmax, self.l1, self.l2, ptr[g0:g1 + 1] - lo, self.group_scale[g0:g1], out)
        return out

    def block_value(self, w, lo, hi):
        g0, g1 = self._whole_groups(lo, hi)
        norms = PK.group_norms(w[lo:hi], self.layout.group_ptr[g0:g1 + 1] - lo)
        s = self.group_scale[g0:g1]
        return float(self.l1 * np.dot(s, norms) + 0.5 * self.l2 * np.dot(s, norms * norms))

    def block_violation(self, w, g, lo, hi):
        g0, g1 = self._whole_groups(lo, hi)
        return float(PK.group_violation(w[lo:hi], g, self.l1, self.l2, self.layout.group_ptr[g0:g1 + 1] - lo,
                                        self.group_scale[g0:g1]))

    def optimality_violation(self, w, g_loss):
        self._check(w)
        return float(PK.group_violation(w, g_loss, self.l1, self.l2, self.layout.group_ptr, self.group_scale))

    def l1_max(self, g0):
        self._check(g0)
        norms = self.group_norms(g0)
        pen = self.group_scale > 0
        return float(np.max(norms[pen] / self.group_scale[pen])) if np.any(pen) else 0.0

    def with_l1(self, l1):
        return GroupLasso(l1, self.layout, self.l2, self.group_weights)


def make_penalty(kind, l1, l2, layout):
    """The penalty an estimator asks for: ``"l1"`` (elastic net) or ``"group"``."""
    if kind in ("l1", "elasticnet", None):
        return ElasticNet(l1, l2, None if layout is None else layout.penalty_scale)
    if kind == "group":
        return GroupLasso(l1, layout, l2)
    raise ValueError(f"penalty must be 'l1' or 'group', got {kind!r}")
