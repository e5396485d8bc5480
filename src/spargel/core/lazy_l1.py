"""Compiled bookkeeping of lazily applied l1 / l2 penalties for stochastic gradient
descent (Tsuruoka, Tsujii & Ananiadou 2009): the learning-rate schedule, the cumulative
(and clipping) penalty rule, and the lazy l2 scale factor. Every model's compiled SGD
pass (its ``sgd_pass`` capability) is built from these; the driver is
:mod:`spargel.solvers.sgd`.

Weights are stored as ``w_i = s_i * v_i`` with one global shrink factor ``a`` (``s_i =
a`` for l2-penalised weights, 1 for the others), which makes the l2 shrink ``w <- (1 -
eta * l2 / N) w`` an O(1) update of ``a``. All penalty bookkeeping is in ``v`` units, in
which the l1 penalty of a step is ``eta * l1_i / (N * a)`` and the paper's rules apply
unchanged. ``aux`` holds per weight the paper's ``q_i`` (total penalty actually
received; ``cumulative``) or ``l1_i * u`` at its last settlement (``clipping``).

State ``st``: a float64 array of six counters that the pass updates in place, its slots
named by the constants below (:func:`new_state`): ``st[SAMPLES]`` samples processed,
``st[SHRINK]`` the shrink factor ``a``, ``st[U_SCALED]`` / ``st[U_PLAIN]`` the
accumulated penalty per unit of l1 in v units for scaled (``u_s``) and unscaled (``u_p``)
weights, ``st[ONLINE_LOSS]`` the sum of the per-sample losses met during the pass (each
at the weights it was visited with) and ``st[FALLBACKS]`` the number of samples that
needed log space.

Parameters ``prm``: an :class:`SGDParams` (a named tuple of floats, read by name in the
kernels: numba compiles it as a plain tuple). ``schedule`` 0 = exponential ``eta0 *
alpha ** (k / N)``, 1 = inverse ``eta0 / (1 + k / N)``, 2 = constant, 3 = Pegasos /
CRFsuite's l2sgd ``eta0 / (1 + k / t0)`` with ``t0`` in the place of alpha (with ``eta0
= 1 / (lambda t0)`` this is ``1 / (lambda (t0 + k))``); ``variant`` 0 = naive, 1 =
clipping, 2 = cumulative; ``l1`` is the uniform l1 weight used when the per-weight array
``l1w`` is empty. ``m`` is empty (every weight l2-scaled alike) or a 0/1 float mask of
the l2-penalised weights.
"""

from typing import NamedTuple

import numpy as np
from numba import njit
from .jit import inner, kernel

NAIVE, CLIPPING, CUMULATIVE = 0, 1, 2
EXPONENTIAL, INVERSE, CONSTANT, PEGASOS = 0, 1, 2, 3
RENORMALISE_BELOW = 1e-8      # fold the shrink factor into v when it gets this small
# the slots of the state array st (see the module documentation)
SAMPLES, SHRINK, U_SCALED, U_PLAIN, ONLINE_LOSS, FALLBACKS = range(6)


class SGDParams(NamedTuple):
    """The parameters of an SGD pass (see the module documentation), every field a
    float (one numba type for every pass: make them with :func:`sgd_params`)."""
    eta0: float
    alpha: float
    schedule: float
    variant: float
    N: float
    l2: float
    batch: float
    l1: float


def sgd_params(eta0, alpha, schedule, variant, N, l2, batch, l1):
    """An :class:`SGDParams` with every field a Python float.

    >>> sgd_params(0.1, 0.85, EXPONENTIAL, CUMULATIVE, 100, 0.0, 1, 0.5).variant
    2.0
    """
    return SGDParams(float(eta0), float(alpha), float(schedule), float(variant), float(N), float(l2),
                     float(batch), float(l1))


def new_state():
    """A fresh state array ``st``: no samples seen, shrink factor 1, nothing accrued."""
    st = np.zeros(6)
    st[SHRINK] = 1.0
    return st


@njit(cache=True, nogil=True, inline="always")
def weight(v, m, a, k):
    """The weight ``w_k = s_k * v_k`` (see the module documentation)."""
    if len(m) > 0 and m[k] == 0.0:
        return v[k]
    return a * v[k]


@kernel()
def learning_rate(eta0, alpha, schedule, k, N):
    """Paper eq. 6 (exponential decay, written with alpha < 1), eq. 5 (inverse),
    constant, or Pegasos' ``eta0 / (1 + k / t0)`` (``t0`` passed as alpha)."""
    if schedule == EXPONENTIAL:
        return eta0 * alpha ** (k / N)
    if schedule == INVERSE:
        return eta0 / (1.0 + k / N)
    if schedule == PEGASOS:
        return eta0 / (1.0 + k / alpha)
    return eta0


@njit(cache=True, nogil=True, inline="always")
def _settle(z, q, pen, variant):
    """One weight z with record q brought up to the accumulated penalty ``pen``: returns
    (new weight, new record). Written with selects instead of sign branches."""
    if variant == CUMULATIVE:
        zp = z - (pen + q)
        zn = z + (pen - q)
        zp = zp if zp > 0.0 else 0.0
        zn = zn if zn < 0.0 else 0.0
        nz = zp if z > 0.0 else (zn if z < 0.0 else 0.0)
        return nz, q + (nz - z)
    d = pen - q
    zp = z - d
    zn = z + d
    zp = zp if zp > 0.0 else 0.0
    zn = zn if zn < 0.0 else 0.0
    return (zp if z > 0.0 else (zn if z < 0.0 else 0.0)), pen


@inner()
def penalise_block(v, aux, l1w, l1, m, us, up, lo, hi, variant):
    """Bring weights lo..hi-1 up to the accumulated penalty ``l1_i * u`` (v units; ``u``
    is ``us`` for l2-scaled weights and ``up`` for the others).

    cumulative (the paper's Figure 2, APPLYPENALTY): ``aux[i]`` is q_i, the signed total
    penalty the weight has actually received; a positive weight is pulled towards zero
    by ``u + q_i``, a negative one by ``u - q_i``, never across zero.
    clipping (Carpenter's lazy update): ``aux[i]`` is the penalty at the last
    settlement; the weight is pulled towards zero by what accrued since, clipped at
    zero."""
    mixed = len(m) > 0
    per_weight = len(l1w) > 0
    for i in range(lo, hi):
        uu = up + m[i] * (us - up) if mixed else us
        v[i], aux[i] = _settle(v[i], aux[i], (l1w[i] if per_weight else l1) * uu, variant)


@njit(cache=True, nogil=True, inline="always")
def penalise_row(row, rec, pen, variant):
    """:func:`penalise_block` on one padded row (uniform penalty ``pen = l1 * u``):
    ``row`` the weights, ``rec`` their penalty records; a lane whose record is NaN is
    not a weight (a label the row's attribute does not own) and is set to 0."""
    for y in range(len(row)):
        q0 = rec[y]
        z, q = _settle(row[y], q0, pen, variant)
        own = q0 == q0
        row[y] = z if own else 0.0
        rec[y] = q if own else q0


@njit(cache=True, nogil=True, inline="always")
def step_block(v, g, m, inv_a, eta, lo, hi):
    """v -= eta * g / s for weights lo..hi-1 (s = a or 1), and g <- 0 there."""
    mixed = len(m) > 0
    for i in range(lo, hi):
        inv_s = 1.0 + m[i] * (inv_a - 1.0) if mixed else inv_a
        v[i] -= eta * g[i] * inv_s
        g[i] = 0.0


@njit(cache=True, nogil=True, inline="always")
def naive_step(v, g, l1w, l1, m, eta, nb, l2, N, inc):
    """The naive variant: the sub-gradient of the penalty at the old weights and the
    gradient step, on every weight (cost proportional to the model size)."""
    mixed = len(m) > 0
    per_weight = len(l1w) > 0
    shrink = eta * nb * l2 / N
    for i in range(len(v)):
        z = v[i]
        sgn = 1.0 if z > 0.0 else (-1.0 if z < 0.0 else 0.0)
        sh = shrink * m[i] if mixed else shrink
        v[i] = z * (1.0 - sh) - eta * g[i] - inc * (l1w[i] if per_weight else l1) * sgn


@inner()
def renormalise(v, aux, m, st, variant):
    """Fold the shrink factor into v (and the records), so that ``st[SHRINK] == 1``."""
    a = st[SHRINK]
    if a == 1.0:
        return
    mixed = len(m) > 0
    for i in range(len(v)):
        if mixed and m[i] == 0.0:
            continue
        v[i] *= a
        if variant != NAIVE:
            aux[i] *= a
    st[U_SCALED] *= a
    st[SHRINK] = 1.0


@kernel()
def settle_all(v, aux, l1w, l1, m, st, variant):
    """Bring every weight up to date and fold the shrink factor into v, so that
    afterwards ``v`` is the weight vector and ``st[SHRINK] == 1``. O(model size): once per
    pass, never per sample."""
    if variant != NAIVE:
        # np.int64(0), not 0: a literal argument would compile a second penalise_block
        penalise_block(v, aux, l1w, l1, m, st[U_SCALED], st[U_PLAIN], np.int64(0), len(v), variant)
    renormalise(v, aux, m, st, variant)


@njit(cache=True, nogil=True, inline="always")
def step_rate(st, prm, nb):
    """(eta, a_new) of the next step of ``nb`` samples."""
    eta = learning_rate(prm.eta0, prm.alpha, int(prm.schedule), st[SAMPLES], prm.N)
    return eta, st[SHRINK] * (1.0 - eta * nb * prm.l2 / prm.N)


@njit(cache=True, nogil=True, inline="always")
def step_done(st, prm, eta, nb, a_new, lazy):
    """Advance the counters after a step: the accumulated penalty per unit of l1 (v
    units), the shrink factor and the sample counter. Returns the increment of the
    unscaled accumulator (the naive variant's penalty of the step)."""
    inc = eta * nb / prm.N
    st[U_SCALED] += inc / a_new
    st[U_PLAIN] += inc
    if lazy:
        st[SHRINK] = a_new
    else:
        st[U_SCALED] = st[U_PLAIN]
    st[SAMPLES] += nb
    return inc
