import numpy as np
import pytest

from spargel.gaussian.control import RunControl
from spargel.gaussian.objective import (alpha_max, duality_gap, empirical_covariance,
                                        interior_dual_start, penalty_matrix,
                                        primal_objective, validate_covariance)
from spargel.gaussian.solve import solve_gaussian

from gmrf_helpers import random_covariance


def test_two_by_two_closed_form():
    # with an unpenalised diagonal the 2x2 solution is (S + W)^-1 with
    # W_12 = -alpha sign(S_12) when |S_12| > alpha, else diagonal
    S = np.array([[2.0, 0.9], [0.9, 1.5]])
    for alpha in (0.1, 0.5, 0.95):
        res = solve_gaussian(S, alpha, tol=1e-12)
        if abs(S[0, 1]) > alpha:
            W = np.array([[0, -alpha * np.sign(S[0, 1])], [-alpha * np.sign(S[0, 1]), 0]])
            expect = np.linalg.inv(S + W)
        else:
            expect = np.diag(1 / np.diag(S))
        # objective within 1e-12 relative => precision within ~1e-6
        np.testing.assert_allclose(res.precision, expect, rtol=1e-5, atol=1e-12)
        L = penalty_matrix(alpha, 2)
        assert res.objective == pytest.approx(primal_objective(expect, S, L), rel=1e-11)


def test_gap_of_dual_pair_matches_paper_formula():
    S = random_covariance(30, 8, 5)
    L = penalty_matrix(0.1, 8)
    Sigma = interior_dual_start(S, L)
    W = Sigma - S
    assert np.all(np.abs(W) <= L + 1e-15)
    K = np.linalg.inv(Sigma)
    gap, f, g = duality_gap(K, S, L, K_inv=Sigma)
    paper = np.trace(S @ K) + np.sum(L * np.abs(K)) - 8
    assert gap == pytest.approx(paper, rel=1e-9, abs=1e-9)


def test_interior_start_with_singular_S():
    S = random_covariance(4, 10, 6)
    assert np.linalg.matrix_rank(S) < 10
    L = penalty_matrix(0.05, 10)
    Sigma = interior_dual_start(S, L)
    W = Sigma - S
    off = ~np.eye(10, dtype=bool)
    assert np.all(np.abs(W[off]) < L[off])            # strictly interior
    assert np.linalg.eigvalsh(Sigma)[0] > 0
    np.testing.assert_allclose(np.diag(W), 0.0)


def test_duality_gap_certifies_suboptimality():
    S = random_covariance(20, 15, 7)
    L = penalty_matrix(0.1, 15)
    fstar = solve_gaussian(S, 0.1, tol=1e-13, screen=False).objective
    rng = np.random.default_rng(0)
    from spargel.gaussian.newton_cd import newton_cd

    for it in (1, 2, 3, 5):
        r = newton_cd(S, L, control=RunControl(max_iter=it, tol=0))
        assert r.duality_gap >= r.objective - fstar - 1e-10
    for _ in range(5):   # arbitrary positive definite points
        A = rng.standard_normal((15, 15))
        K = A @ A.T / 15 + np.eye(15)
        gap, f, g = duality_gap(K, S, L)
        assert f == pytest.approx(primal_objective(K, S, L))
        assert gap >= f - fstar - 1e-10


def test_alpha_max_gives_diagonal():
    S = random_covariance(50, 10, 8)
    a = alpha_max(S)
    res = solve_gaussian(S, a * 1.0001)
    assert np.count_nonzero(np.triu(res.precision, 1)) == 0
    res = solve_gaussian(S, a * 0.95)
    assert np.count_nonzero(np.triu(res.precision, 1)) >= 1


@pytest.mark.parametrize("bad, msg", [
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN or infinite"),
    (np.array([[1.0, np.inf], [np.inf, 1.0]]), "NaN or infinite"),
    (np.ones((2, 3)), "square"),
    (np.array([[1.0, 0.2], [0.3, 1.0]]), "not symmetric"),
    (np.ones(3), "2-D"),
    (np.array([[-1.0, 0.0], [0.0, 1.0]]), "negative diagonal"),
    (np.array([["a", "b"], ["c", "d"]]), "numeric"),
])
def test_bad_covariance(bad, msg):
    with pytest.raises(ValueError, match=msg):
        solve_gaussian(bad, 0.1)


def test_bad_weights_and_params():
    S = np.eye(3)
    with pytest.raises(ValueError, match="negative"):
        solve_gaussian(S, -0.1)
    W = np.full((3, 3), 0.1)
    W[0, 1] = W[1, 0] = -0.2
    with pytest.raises(ValueError, match="negative weights"):
        solve_gaussian(S, W)
    with pytest.raises(ValueError, match="shape"):
        solve_gaussian(S, np.ones((2, 2)))
    with pytest.raises(ValueError, match="not symmetric"):
        solve_gaussian(S, np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="solver"):
        solve_gaussian(S, 0.1, solver="nope")
    with pytest.raises(ValueError, match="tol"):
        solve_gaussian(S, 0.1, tol=-1)
    with pytest.raises(ValueError, match="max_iter"):
        solve_gaussian(S, 0.1, max_iter=0)
    with pytest.raises(ValueError, match="zero variance"):
        solve_gaussian(np.diag([1.0, 0.0]), 0.1)
    with pytest.raises(ValueError, match="NaN"):
        empirical_covariance([[1.0, np.nan], [0.0, 1.0]])
    # symmetric input within rounding is accepted
    S2 = np.array([[1.0, 0.3], [0.3 + 1e-14, 1.0]])
    assert validate_covariance(S2)[0, 1] == validate_covariance(S2)[1, 0]


def test_per_entry_weights_and_penalised_diagonal():
    S = random_covariance(40, 8, 9)
    rng = np.random.default_rng(1)
    Lw = rng.uniform(0.02, 0.2, (8, 8))
    Lw = (Lw + Lw.T) / 2
    for pen_diag in (False, True):
        r1 = solve_gaussian(S, Lw, penalize_diagonal=pen_diag, tol=1e-11)
        r2 = solve_gaussian(S, Lw, penalize_diagonal=pen_diag, tol=1e-11, solver="projected-gradient",
                            max_iter=20000)
        assert r1.objective == pytest.approx(r2.objective, rel=1e-8)
        L = Lw.copy()
        if not pen_diag:
            np.fill_diagonal(L, 0)
        from gmrf_helpers import kkt_violation
        assert kkt_violation(r1.precision, S, L) < 1e-5
