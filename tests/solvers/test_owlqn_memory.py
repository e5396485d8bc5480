"""OWL-QN's curvature memory (``CurvatureMemory``) on hand-made pair sequences: the
direction is libLBFGS's (the inverse-Hessian recursion over the newest ``memory``
pairs, started from ``ys / yy`` of the newest pair), a pair of no positive curvature
is not kept, and the orthant-wise direction zeroes the components that disagree with
steepest descent."""

import numpy as np
import pytest

from spargel.solvers.owlqn import CurvatureMemory


def explicit_direction(pairs, pg):
    """-H pg with H built densely: H0 = (s.y / y.y of the newest pair) I, then the BFGS
    update of the inverse Hessian with every pair, oldest first."""
    n = len(pg)
    if not pairs:
        return -pg
    s, y = pairs[-1]
    H = (s @ y) / (y @ y) * np.eye(n)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    return -H @ pg


def convex_pairs(rng, n, count):
    """Pairs (s, y = A s) of a random positive definite A: positive curvature."""
    M = rng.standard_normal((n, n))
    A = M @ M.T + 0.5 * np.eye(n)
    return [(s, A @ s) for s in rng.standard_normal((count, n))]


def stored(mem, pairs):
    """Store ``pairs`` through ``CurvatureMemory.store`` (from points and gradients)."""
    for s, y in pairs:
        w = np.zeros(len(s))
        g = np.ones(len(s))
        mem.store(w + s, w, g + y, g)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("memory, count", [(6, 3), (6, 6), (6, 11), (10, 11)])
def test_direction_is_the_inverse_hessian_recursion_over_the_newest_pairs(seed, memory, count):
    """After ``count`` pairs the direction uses exactly the newest ``memory`` of them,
    with the initial scaling of the newest pair (libLBFGS's choice)."""
    rng = np.random.default_rng(seed)
    n = 8
    pairs = convex_pairs(rng, n, count)
    mem = CurvatureMemory(memory, n)
    stored(mem, pairs)
    assert len(mem) == min(memory, count)
    pg = rng.standard_normal(n)
    d = np.empty(n)
    mem.direction(pg, d, False)
    expected = explicit_direction(pairs[-memory:], pg)
    assert np.allclose(d, expected, rtol=1e-9, atol=1e-12)
    # an older window would give another direction: the test can tell them apart
    if count > memory:
        assert not np.allclose(d, explicit_direction(pairs[-memory - 1:], pg), rtol=1e-6)


def test_a_pair_without_positive_curvature_is_not_kept():
    """s.y <= 0 (a step along which the gradient did not grow): the pair is dropped and
    the direction is that of the pairs kept before it; the slot it took is reused."""
    rng = np.random.default_rng(1)
    n = 5
    good = convex_pairs(rng, n, 3)
    mem = CurvatureMemory(4, n)
    stored(mem, good[:2])
    s = rng.standard_normal(n)
    stored(mem, [(s, -s)])                                         # s.y = -|s|^2 < 0
    assert len(mem) == 2
    stored(mem, [(s, np.zeros(n))])                                # s.y = 0
    assert len(mem) == 2
    stored(mem, good[2:])
    assert len(mem) == 3
    pg = rng.standard_normal(n)
    d = np.empty(n)
    mem.direction(pg, d, False)
    assert np.allclose(d, explicit_direction(good, pg), rtol=1e-9, atol=1e-12)


def test_orthant_wise_direction_zeroes_components_against_steepest_descent():
    """With the l1 term the components of -H pg whose sign disagrees with -pg are set
    to zero, the others are those of -H pg."""
    rng = np.random.default_rng(3)
    n = 12
    for _ in range(20):
        pairs = convex_pairs(rng, n, 5)
        mem = CurvatureMemory(6, n)
        stored(mem, pairs)
        pg = rng.standard_normal(n)
        full = explicit_direction(pairs, pg)
        if not (np.any(full * pg > 0) and full @ pg < 0):
            continue
        d = np.empty(n)
        mem.direction(pg, d, True)
        agree = full * pg < 0
        assert np.all(d[~agree] == 0.0)
        assert np.allclose(d[agree], full[agree], rtol=1e-9, atol=1e-12)
        return
    pytest.fail("no random case had a component against steepest descent")


def test_grown_coordinates_are_zero_in_the_stored_pairs():
    """New coordinates (the incremental solvers' working set grows) are zero in every
    pair stored before: the direction on the old ones is unchanged, and on a new one it
    is the initial scaling times -pg there."""
    rng = np.random.default_rng(4)
    n = 6
    pairs = convex_pairs(rng, n, 4)
    mem = CurvatureMemory(6, n)
    stored(mem, pairs)
    mem.grow(n + 2)
    pg = rng.standard_normal(n + 2)
    d = np.empty(n + 2)
    mem.direction(pg, d, False)
    padded = [(np.r_[s, 0.0, 0.0], np.r_[y, 0.0, 0.0]) for s, y in pairs]
    assert np.allclose(d, explicit_direction(padded, pg), rtol=1e-9, atol=1e-12)
    s, y = pairs[-1]
    assert np.allclose(d[n:], -(s @ y) / (y @ y) * pg[n:])


@pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")
@pytest.mark.parametrize("kwargs, memory", [
    (dict(), 6),                                               # CRFsuite's num_memories default
    (dict(solver="lbfgs", l1=0.0, l2=1.0), 6),
    (dict(solver_options={"memory": 10}), 10),
    (dict(num_memories=3), 3),                                 # CRFsuite's spelling
])
def test_crf_passes_its_memory_to_the_solver(monkeypatch, kwargs, memory):
    """A CRF trains OWL-QN / L-BFGS with 6 curvature pairs unless told otherwise, and
    the solver keeps no more than that."""
    from spargel import CRF
    from spargel.datasets import make_chain_data
    from spargel.solvers import owlqn

    seen = []
    real = owlqn.CurvatureMemory

    class Spy(real):
        def store(self, *args):
            super().store(*args)
            seen.append((self.memory, len(self)))

    monkeypatch.setattr(owlqn, "CurvatureMemory", Spy)
    X, y, _ = make_chain_data(n_sequences=40, random_state=0)
    CRF(max_iter=12, tol=0.0, gtol=0.0, **kwargs).fit(X, y)
    assert seen and all(m == memory for m, _ in seen)
    assert max(k for _, k in seen) == min(memory, len(seen))
