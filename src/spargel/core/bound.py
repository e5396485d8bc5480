"""The quadratic upper bound on a log-partition function (Jebara & Choromanska 2012,
Algorithm 1 "ComputeBound") and the objects a bound majoriser works with.

For a log-linear family over an enumerable set Omega,
``Z(theta) = sum_y h(y) exp(theta . f(y))``, Algorithm 1 visits the configurations once
(in any order) and returns ``z``, ``mu``, ``Sigma`` with

    log Z(theta) <= log z + (theta - t)' mu + 1/2 (theta - t)' Sigma (theta - t)   for all theta,

with equality at ``theta = t``; ``mu`` is the gradient of ``log Z`` at ``t`` (the mean
of ``f``) and ``Sigma`` dominates every Hessian the bound must cover. Visiting
configuration ``y`` with weight ``alpha = h(y) exp(t . f(y))`` when the configurations
seen so far sum to ``z``::

    l      = f(y) - mu
    Sigma += omega(log(alpha / z)) l l'          omega(u) = tanh(u / 2) / (2 u)
    mu    += alpha / (z + alpha) l
    z     += alpha

(``omega(0) = 1/4``; the first configuration, ``z -> 0+``, gets ``omega = 0``). Everything
here runs in the log domain: only ``u = log(alpha / z)`` is needed, so no weight
underflows (a configuration a trillion times less likely than the others still adds its
curvature ``~ 1 / (2 |u|)``, which is what keeps the bound valid far from ``t``).

The loss of a conditional model is a sum of such log-partitions minus linear terms, so
its bound is the quadratic model ``QuadraticBound``: the loss and gradient at ``w`` and a
*curvature* object standing for ``Sigma`` (the sum over samples). Curvatures offer

``matvec(v)``, ``diagonal()``
    ``Sigma v`` and ``diag(Sigma)``;
``solve(rhs, shift)`` (optional, ``exact_solve = True``)
    ``(Sigma + diag(shift))^-1 rhs`` exactly;
``coordinate_descent(g, w, l1, l2, delta, ...)`` (optional)
    minimise ``g . d + 1/2 d' Sigma d + sum l1 |w + d| + l2 / 2 (w + d)^2`` over ``d``
    one coordinate at a time (the l1 / elastic-net inner problem).

Forms: :class:`DenseCurvature` (small ``d``), :class:`~spargel.loglinear.bound_lowrank.LowRankCurvature`
(Algorithm 4: ``V' S V + D`` with absorbed residual), the class-structured curvature of the
flat log-linear and latent models (:mod:`spargel.loglinear.bound`) and the matrix-free
chain curvature of the CRF (:mod:`spargel.chain.bound`).

>>> rng = np.random.default_rng(0)
>>> F, t = rng.normal(size=(5, 3)), np.zeros(3)
>>> log_z, mu, Sigma = compute_bound(t, F)
>>> theta = rng.normal(size=3)
>>> exact = np.log(np.exp(F @ theta).sum())
>>> bool(exact <= log_z + theta @ mu + 0.5 * theta @ Sigma @ theta)
True
"""

import math

import numpy as np
from numba import njit
from .jit import inner, kernel


# --------------------------------------------------------------------------- Algorithm 1
@njit(cache=True, nogil=True, inline="always")
def curvature_weight(u):
    """``omega(u) = tanh(u / 2) / (2 u)`` for ``u = log(alpha / z)`` (0 for u = +-inf or NaN)."""
    a = abs(u)
    if not (a < np.inf):
        return 0.0
    if a < 1e-4:
        return 0.25 - u * u / 48.0
    return math.tanh(0.5 * u) / (2.0 * u)


@njit(cache=True, nogil=True, inline="always")
def share(u):
    """``alpha / (z + alpha) = 1 / (1 + exp(-u))`` (1 for the first configuration)."""
    if u > 0.0:
        return 1.0 / (1.0 + math.exp(-u))
    if u != u:
        return 0.0
    e = math.exp(u)
    return e / (1.0 + e)


@njit(cache=True, nogil=True, inline="always")
def log_add(lz, lam):
    """``log(exp(lz) + exp(lam))`` for lz, lam >= -inf."""
    if lz == -np.inf:
        return lam
    if lam == -np.inf:
        return lz
    if lz > lam:
        return lz + math.log1p(math.exp(lam - lz))
    return lam + math.log1p(math.exp(lz - lam))


@kernel()
def _compute_bound(logw, F, mu, Sigma, l):
    """Algorithm 1 over the rows of F with log weights logw: fills mu, Sigma (zeroed by the
    caller; l is a scratch row), returns log z."""
    n, d = F.shape
    lz = -np.inf
    for i in range(n):
        lam = logw[i]
        if lam == -np.inf:
            continue                      # h(y) = 0: the configuration does not exist
        u = lam - lz
        om = curvature_weight(u)
        sh = share(u)
        for a in range(d):
            l[a] = F[i, a] - mu[a]
        if om > 0.0:
            for a in range(d):
                c = om * l[a]
                for b in range(d):
                    Sigma[a, b] += c * l[b]
        for a in range(d):
            mu[a] += sh * l[a]
        lz = log_add(lz, lam)
    return lz


def compute_bound(theta, F, h=None, log_h=None):
    """Algorithm 1: ``(log z, mu, Sigma)`` of ``Z(theta) = sum_y h(y) exp(theta . F[y])`` at
    ``theta``, visiting the rows of ``F`` in order. ``h`` (>= 0) or ``log_h`` default to 1.

    >>> log_z, mu, Sigma = compute_bound(np.zeros(1), np.array([[0.0], [1.0]]))
    >>> round(float(np.exp(log_z)), 6), mu.round(6).tolist(), Sigma.round(6).tolist()
    (2.0, [0.5], [[0.25]])
    """
    F = np.ascontiguousarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError("F must be a 2-d array: one feature vector per configuration")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (F.shape[1],):
        raise ValueError(f"theta has shape {theta.shape}, the features have {F.shape[1]} dimensions")
    logw = F @ theta
    if log_h is not None:
        logw = logw + np.asarray(log_h, dtype=np.float64)
    elif h is not None:
        h = np.asarray(h, dtype=np.float64)
        if np.any(h < 0):
            raise ValueError("h must be >= 0")
        with np.errstate(divide="ignore"):
            logw = logw + np.log(h)
    mu = np.zeros(F.shape[1])
    Sigma = np.zeros((F.shape[1], F.shape[1]))
    log_z = _compute_bound(np.ascontiguousarray(logw), F, mu, Sigma, np.empty(F.shape[1]))
    return float(log_z), mu, Sigma


def bound_value(theta, theta_tilde, log_z, mu, Sigma):
    """The bound on ``log Z(theta)`` built at ``theta_tilde``."""
    d = np.asarray(theta, dtype=np.float64) - theta_tilde
    return float(log_z + d @ mu + 0.5 * d @ Sigma @ d)


# --------------------------------------------------------------------------- the quadratic model
class QuadraticBound:
    """``L(w + d) <= loss + grad . d + 1/2 d' Sigma d`` (``curvature`` stands for Sigma),
    equality at ``d = 0``; ``grad`` is the loss gradient at ``w``."""

    def __init__(self, w, loss, grad, curvature, info=None):
        self.w, self.loss, self.grad, self.curvature = w, float(loss), grad, curvature
        self.info = info or {}

    def value(self, d):
        """The bound at ``w + d``."""
        return self.loss + float(self.grad @ d) + 0.5 * float(d @ self.curvature.matvec(d))


class DenseCurvature:
    """``Sigma`` as a dense symmetric matrix (small problems)."""

    exact_solve = True

    def __init__(self, M):
        self.M = np.ascontiguousarray(M, dtype=np.float64)
        self.n = self.M.shape[0]

    def matvec(self, v):
        return self.M @ v

    def diagonal(self):
        return np.diag(self.M).copy()

    def solve(self, rhs, shift):
        import scipy.linalg as la
        A = self.M + np.diag(positive_shift(shift, self.diagonal()))
        return la.cho_solve(la.cho_factor(A, lower=True, check_finite=False), rhs, check_finite=False)

    def coordinate_descent(self, g, w, l1, l2, delta, max_sweeps=100, tol=1e-10, active=None):
        Sd = self.M @ delta
        sweeps = _dense_cd(self.M, g, w, l1, l2, delta, Sd, int(max_sweeps), float(tol))
        return delta, sweeps


def positive_shift(shift, diag, n=None):
    """The shift (length ``n``, default ``len(diag)``) made strictly positive where it is 0
    (unpenalised weights), by a tiny ridge (``1e-10`` of the largest of ``diag``, the
    curvature or a bound on it): adding curvature keeps the quadratic an upper bound, and
    it removes exact flat directions such as the common shift of all intercepts of a
    softmax."""
    shift = np.array(np.broadcast_to(np.asarray(shift, dtype=np.float64), (len(diag) if n is None else n,)))
    eps = 1e-10 * max(float(np.max(diag)) if len(diag) else 1.0, 1e-300) + 1e-300
    shift[shift <= 0] = eps
    return shift


@njit(cache=True, nogil=True, inline="always")
def enet_coordinate(grad, h, z, l1, l2):
    """New value x of a weight now at z minimising
    ``grad (x - z) + h/2 (x - z)^2 + l1 |x| + l2/2 x^2``."""
    t = h * z - grad
    den = h + l2
    if not den > 0.0:
        return z
    if t > l1:
        return (t - l1) / den
    if t < -l1:
        return (t + l1) / den
    return 0.0


@inner()
def coordinate_step(grad, h, w, delta, j, l1, l2):
    """One step of coordinate descent on ``g.d + 1/2 d'Md + enet(w + d)`` at coordinate
    ``j`` (``grad``: the quadratic's gradient there, ``h = M[j, j]``): moves ``delta[j]``
    by :func:`enet_coordinate` and returns the step (0.0 when it stays)."""
    z = w[j] + delta[j]
    step = enet_coordinate(grad, h, z, l1[j], l2[j]) - z
    if step != 0.0:
        delta[j] += step
    return step


@kernel()
def _dense_cd(M, g, w, l1, l2, delta, Sd, max_sweeps, tol):
    """Cyclic coordinate descent on ``g.d + 1/2 d'Md + enet(w + d)``; Sd = M d kept up to date.
    Stops when a sweep moves no weight by more than tol (scaled by its curvature)."""
    n = len(g)
    for sweep in range(max_sweeps):
        biggest = 0.0
        for j in range(n):
            h = M[j, j]
            step = coordinate_step(g[j] + Sd[j], h, w, delta, j, l1, l2)
            if step != 0.0:
                for i in range(n):
                    Sd[i] += step * M[i, j]
                biggest = max(biggest, abs(step) * math.sqrt(h + l2[j]))
        if biggest <= tol:
            return sweep + 1
    return max_sweeps
