import numpy as np
import pytest

from spargel.gaussian.block_l1 import make_block_penalty
from spargel.gaussian.projections import (project_blocks, project_box, project_l1_ball,
                                          project_l1_ball_sort)
from spargel.gaussian.solve import solve_gaussian

from gmrf_helpers import random_covariance


def test_l1_projection_matches_sort_reference():
    rng = np.random.default_rng(0)
    for trial in range(300):
        d = int(rng.integers(1, 60))
        v = rng.standard_normal(d) * rng.uniform(0.1, 5)
        if trial % 5 == 0:
            v = np.round(v, 1)            # ties
        z = float(rng.uniform(0, 1.5 * np.abs(v).sum()))
        p = project_l1_ball(v, z, random_state=trial)
        ref = project_l1_ball_sort(v, z)
        np.testing.assert_allclose(p, ref, atol=1e-12)
        assert np.abs(p).sum() <= z + 1e-10
    v = np.array([1.0, -2.0])
    np.testing.assert_array_equal(project_l1_ball(v, 10.0), v)   # inside: unchanged
    np.testing.assert_array_equal(project_l1_ball(v, 0.0), [0.0, 0.0])
    with pytest.raises(ValueError):
        project_l1_ball(v, -1.0)
    with pytest.raises(ValueError):
        project_l1_ball([np.nan], 1.0)


def test_l1_projection_is_the_nearest_point():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(20)
    z = 2.0
    p = project_l1_ball(v, z)
    for _ in range(200):   # no feasible point is closer
        q = project_l1_ball_sort(p + 0.05 * rng.standard_normal(20), z)
        assert np.linalg.norm(v - q) >= np.linalg.norm(v - p) - 1e-12


def test_box_projection():
    W = np.array([[0.0, 2.0], [-3.0, 0.5]])
    L = np.array([[0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(project_box(W, L), [[0.0, 1.0], [-1.0, 0.5]])


def test_project_blocks_constraints():
    rng = np.random.default_rng(2)
    n = 9
    bp = make_block_penalty(np.arange(n) % 3, n, 0.05)
    W = rng.standard_normal((n, n))
    W = W + W.T
    W0 = W.copy()
    work = np.empty(2 * n * n)
    state = np.array([7], dtype=np.uint64)
    project_blocks(W, bp.block_ptr, bp.rows, bp.cols, bp.radius, work, state)
    np.testing.assert_allclose(W, W.T)
    l1 = bp.block_l1(W)
    assert np.all(l1 <= bp.radius + 1e-12)
    for k in range(bp.n_blocks):
        sl = slice(bp.block_ptr[k], bp.block_ptr[k + 1])
        ref = project_l1_ball_sort(W0[bp.rows[sl], bp.cols[sl]], bp.radius[k])
        np.testing.assert_allclose(W[bp.rows[sl], bp.cols[sl]], ref, atol=1e-12)


def test_block_specs_and_errors():
    n = 5
    lab = make_block_penalty([0, 0, 1, 1, 2], n, 1.0)
    assert lab.n_blocks == 3 and sorted(np.diff(lab.block_ptr)) == [2, 2, 4]
    ids = -np.ones((n, n), int)
    ids[0, 1] = ids[1, 0] = 0
    ids[2, 3] = ids[3, 2] = ids[2, 4] = ids[4, 2] = 1
    m = make_block_penalty(ids, n, 1.0)
    assert m.n_blocks == 2 and m.L_box[0, 1] == 0 and m.L_box[0, 2] == 1.0
    lst = make_block_penalty([[(0, 1), (2, 1)], [(3, 4)]], n, 0.5, block_weight="one")
    np.testing.assert_allclose(lst.radius, [0.5, 0.5])
    with pytest.raises(ValueError, match="overlap"):
        make_block_penalty([[(0, 1), (1, 2)], [(2, 1)]], n, 1.0)
    with pytest.raises(ValueError, match="diagonal"):
        make_block_penalty([[(0, 0)]], n, 1.0)
    with pytest.raises(ValueError, match="outside"):
        make_block_penalty([[(0, 7)]], n, 1.0)
    with pytest.raises(ValueError, match="length"):
        make_block_penalty([0, 1], n, 1.0)
    with pytest.raises(ValueError, match="symmetric"):
        bad = ids.copy(); bad[0, 1] = 3
        make_block_penalty(bad, n, 1.0)
    with pytest.raises(ValueError, match="scalar"):
        make_block_penalty([0] * n, n, np.ones((n, n)))
    with pytest.raises(ValueError, match="newton-cd"):
        solve_gaussian(np.eye(n), 0.1, blocks=[0] * n, solver="newton-cd")


def test_singleton_blocks_reproduce_l1():
    S = random_covariance(30, 10, 3)
    iu, ju = np.triu_indices(10, 1)
    blocks = [[(i, j)] for i, j in zip(iu, ju)]
    rb = solve_gaussian(S, 0.07, blocks=blocks, tol=1e-10, max_iter=20000)
    rl = solve_gaussian(S, 0.07, tol=1e-10)
    assert abs(rb.objective - rl.objective) <= 1e-7 * abs(rl.objective)
    np.testing.assert_allclose(rb.precision, rl.precision, atol=1e-3)
    rp = solve_gaussian(S, 0.07, blocks=blocks, tol=1e-10, max_iter=20000, step_rule="paper")
    assert abs(rp.objective - rl.objective) <= 1e-7 * abs(rl.objective)


def test_block_solution_optimality():
    S = random_covariance(25, 12, 4)        # singular-ish, m close to n
    lab = np.repeat(np.arange(4), 3)
    alpha = 0.03
    res = solve_gaussian(S, alpha, blocks=lab, tol=1e-9, max_iter=20000)
    bp = make_block_penalty(lab, 12, alpha)
    K = res.precision
    assert np.linalg.eigvalsh(K)[0] > 0
    assert res.objective == pytest.approx(
        -np.linalg.slogdet(K)[1] + np.sum(S * K) + bp.value(K), rel=1e-12)
    # the documented certificate: converged means a duality gap within tol times the
    # objective on the standardised scale (block-l1: S / mean(diag S))
    assert res.converged and res.stop_reason == "tol"
    f_std = res.objective - 12 * np.log(np.mean(np.diag(S)))
    assert res.duality_gap <= 1e-9 * max(1.0, abs(f_std))
    # and a gap certifies suboptimality: no feasible point beats objective - gap
    # random feasible perturbations never improve the objective
    rng = np.random.default_rng(0)
    for _ in range(50):
        E = rng.standard_normal((12, 12)) * 1e-3
        E = E + E.T
        K2 = K + E
        if np.linalg.eigvalsh(K2)[0] <= 0:
            continue
        f2 = -np.linalg.slogdet(K2)[1] + np.sum(S * K2) + bp.value(K2)
        assert f2 >= res.objective - res.duality_gap
    # whole blocks are zero or not (block sparsity), and alpha_max empties the graph
    from spargel.gaussian.path import alpha_max_for
    amax = alpha_max_for(S, lab)
    r0 = solve_gaussian(S, amax * 1.001, blocks=lab)
    inblock = bp.in_block()
    assert np.all(r0.precision[inblock] == 0)
