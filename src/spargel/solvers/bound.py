"""Bound majorisation (Jebara & Choromanska 2012, Algorithm 2), with l2 as in the paper
and -- beyond it -- with l1 / elastic net.

Each outer iteration asks the model for its quadratic upper bound at the current
weights ``w`` (the ``"bound"`` capability: loss, gradient ``g`` and a curvature ``Sigma``
with ``L(w + d) <= L(w) + g.d + 1/2 d' Sigma d`` for every ``d``) and moves to the
minimiser of bound + penalty::

    l2 only:          d = -(Sigma + diag(l2))^-1 (g + l2 w)       (the paper's update)
    l1 / elastic net: d = argmin g.d + 1/2 d' Sigma d + sum l1 |w + d| + l2/2 (w + d)^2

The l2 step is solved exactly where the curvature can (dense Cholesky, Woodbury on a
low-rank form) and by preconditioned conjugate gradients on ``Sigma v`` products
otherwise (matrix-free curvatures: large flat models, CRFs); the elastic-net step by
coordinate descent on the bound (a lasso on a quadratic), or by OWL-QN on the quadratic
model where the curvature has no coordinate access. Any ``d`` that does not raise
bound + penalty above its value at ``d = 0`` (the objective at ``w``) lowers the true
objective, so the inner problems need not be solved exactly: the objective never goes
up (checked every iteration; an increase, which can only come from rounding at the
optimum, stops the solver with ``linesearch``).

Stopping: ``gtol`` (optimality violation of the penalised objective <= gtol *
max(1, ||w||)), ``tol`` (relative objective decrease over ``window`` iterations),
``max_iter``, ``linesearch``, ``interrupted``, ``callback`` as the other solvers.

Options (``solver_options``): ``curvature`` (the model's choice: ``"auto"``, or e.g.
``"dense"``, ``"woodbury"``, ``"cg"``, ``"lowrank"`` for the flat models), ``rank``
(Algorithm 4's k with ``curvature="lowrank"``), ``inner_tol`` (relative accuracy of the
inexact inner solves, tightened as the outer iterations converge), ``inner_max_iter``.
"""

import math

import numpy as np

from ..core.vec import norm
from ..errors import CapabilityError
from ..core.protocol import ParameterLayout, require
from .base import HistoryRecorder, SolverResult, check_start, require_separable
from ..core.bound import positive_shift
from .owlqn import minimize_owlqn


def minimize_bound(model, penalty, w0=None, *, max_iter=100, tol=1e-9, gtol=1e-5, window=1, monitor=None,
                   inner_tol=0.1, inner_max_iter=None, overrelax=True, growth=2.0, max_eta=1e4, **bound_options):
    """Minimise ``model.loss + penalty`` by bound majorisation from ``w0``.

    ``overrelax`` (default True): adaptive over-relaxation (Salakhutdinov & Roweis 2003;
    not in Jebara & Choromanska): try ``w + eta d`` with ``eta`` multiplied by ``growth``
    after every success (up to ``max_eta``); when that does not lower the objective, take
    the plain bound step ``w + d`` (which always does) and restart from ``eta = 1``. A
    failed try costs one extra bound evaluation. It is the default because it was faster
    on every problem measured (3-4x fewer iterations and bound evaluations, l2 and l1);
    ``overrelax=False`` gives the paper's plain majorisation."""
    require(model, "bound", "bound")
    require_separable(penalty, "bound")
    if not hasattr(penalty, "per_weight"):
        raise CapabilityError(f"solver 'bound' needs an elastic-net penalty, got {type(penalty).__name__}")
    w = check_start(model, w0)
    n = model.n_params
    l1, l2 = penalty.per_weight(n)
    use_l1 = penalty.has_nonsmooth
    history = HistoryRecorder(monitor)
    B = model.bound(w, **bound_options)
    n_bounds, n_products = 1, 0
    F = B.loss + penalty.value(w)
    if not math.isfinite(F):
        raise FloatingPointError("bound: the objective is not finite at the initial weights")
    objectives = [F]
    pg = np.empty(n)
    pg0 = None
    eta, n_failed = 1.0, 0
    stop, it = "max_iter", 0
    try:
        for it in range(1, max_iter + 1):
            sg = penalty.smooth_value_grad(w)[1]
            g_smooth = B.grad if sg is None else B.grad + sg
            penalty.pseudo_gradient(w, g_smooth, pg)
            pg_norm = norm(pg)
            if pg0 is None:
                pg0 = max(pg_norm, 1e-300)
            if pg_norm <= gtol * max(1.0, norm(w)):
                stop, it = "gtol", it - 1
                break
            # inexact inner solves, tighter as the outer iterations converge
            forcing = max(min(float(inner_tol), math.sqrt(pg_norm / pg0)), 1e-12)
            if not use_l1:
                d, products = _smooth_step(B.curvature, -g_smooth, l2, forcing, inner_max_iter)
            else:
                d, products = _enet_step(B, penalty, w, l1, l2, pg, forcing, inner_max_iter)
            n_products += products
            used = 1.0
            if overrelax and eta > 1.0:
                w_new = _relaxed(w, d, eta) if use_l1 else w + eta * d
                B_new = model.bound(w_new, **bound_options)
                n_bounds += 1
                F_new = B_new.loss + penalty.value(w_new)
                if F_new < F:
                    used = eta
                    eta = min(eta * growth, max_eta)
                else:
                    n_failed += 1
                    eta = 1.0
            if used == 1.0:
                w_new = w + d
                B_new = model.bound(w_new, **bound_options)
                n_bounds += 1
                F_new = B_new.loss + penalty.value(w_new)
                if overrelax:
                    eta = growth
            if not (F_new <= F + 1e-12 * max(1.0, abs(F))):
                stop, it = "linesearch", it - 1
                break
            w, B, F = w_new, B_new, F_new
            objectives.append(F)
            if history.record(it, F, B.loss, F - B.loss, w, n_bounds, products=n_products, inner=products,
                              eta=used, curvature=B.info.get("curvature", type(B.curvature).__name__)):
                stop = "callback"
                break
            if tol > 0 and it >= window and (objectives[-1 - window] - F) / max(abs(F), 1.0) < tol:
                stop = "tol"
                break
        else:
            stop = "max_iter"
    except KeyboardInterrupt:
        stop = "interrupted"
    return SolverResult(w=w.copy(), objective=F, n_iter=it, n_evals=n_bounds, stop_reason=stop,
                        history=history.rows)


def _relaxed(w, d, eta):
    """``w + eta d`` kept in the orthant of ``w + d`` (zeros of the bound step stay zero),
    so over-relaxation keeps the sparsity the l1 step found."""
    b = w + d
    x = w + eta * d
    x[np.sign(x) != np.sign(b)] = 0.0
    return x


# --------------------------------------------------------------------------- inner problems
def _smooth_step(curv, rhs, l2, eta, max_iter):
    """``(Sigma + diag(l2)) d = rhs``: exactly, or by preconditioned CG to relative
    residual eta. Returns (d, number of Sigma products)."""
    if getattr(curv, "exact_solve", False):
        return curv.solve(rhs, l2), 0
    diag = curv.diagonal()
    shift = positive_shift(l2, diag)
    return conjugate_gradient(lambda v: curv.matvec(v) + shift * v, rhs, 1.0 / (diag + shift), eta,
                              max_iter or max(50, min(len(rhs), 500)))


def conjugate_gradient(matvec, b, precond, rtol, max_iter):
    """Preconditioned CG from 0 on an SPD system; every iterate lowers the quadratic
    ``x'Ax/2 - b'x``. Stops at ``||r|| <= rtol ||b||``. Returns (x, products)."""
    x = np.zeros_like(b)
    r = b.copy()
    bn = norm(b)
    if bn == 0.0:
        return x, 0
    z = precond * r
    p = z.copy()
    rz = float(r @ z)
    k = 0
    for k in range(1, int(max_iter) + 1):
        Ap = matvec(p)
        pAp = float(p @ Ap)
        if not pAp > 0.0:
            return x, k
        a = rz / pAp
        x += a * p
        r -= a * Ap
        if norm(r) <= rtol * bn:
            return x, k
        z = precond * r
        rz_new = float(r @ z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, k


def _enet_step(B, penalty, w, l1, l2, pg, eta, max_iter):
    """The elastic-net inner problem: coordinate descent when the curvature offers it,
    otherwise OWL-QN on the quadratic model."""
    curv = B.curvature
    d = np.zeros_like(w)
    if hasattr(curv, "coordinate_descent"):
        h = curv.diagonal() + l2
        scaled = np.abs(pg) / np.sqrt(np.maximum(h, 1e-300))
        tol = eta * 1e-2 * float(np.max(scaled)) if len(scaled) else 0.0
        d, sweeps = curv.coordinate_descent(B.grad, w, l1, l2, d, max_iter or 1000, tol)
        return d, sweeps
    res = minimize_owlqn(_QuadraticModel(B), penalty, w, max_iter=max_iter or 200, tol=0.0,
                         gtol=eta * norm(pg) / max(1.0, norm(w)))
    return res.w - w, res.n_evals


class _QuadraticModel:
    """The bound as a smooth model of the protocol (for OWL-QN on the inner problem)."""

    n_samples = 1

    def __init__(self, B):
        self.B = B
        self.n_params = len(B.w)
        self.layout = ParameterLayout.ungrouped(self.n_params)

    def loss_grad(self, u):
        d = u - self.B.w
        Sd = self.B.curvature.matvec(d)
        return self.B.loss + float(self.B.grad @ d) + 0.5 * float(d @ Sd), self.B.grad + Sd

    def loss(self, u):
        return self.loss_grad(u)[0]
