"""OWL-QN's backtracking line search: the step libLBFGS takes (halving until the
Armijo test holds), and the iterates of an l1 fit decrease the objective and never
leave the orthant of the point they start from."""

import numpy as np
import pytest

from spargel.core.penalties import ElasticNet
from spargel.solvers.owlqn import NOISE, minimize_owlqn, orthant_line_search

from toy_model import make_least_squares, random_quadratic


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("overshoot", [1.5, 3.0, 7.0])
def test_search_takes_the_longest_halved_step_that_passes_armijo(seed, overshoot):
    """A Newton step made ``overshoot`` times too long on a quadratic (as OWL-QN's steps
    are late in an l1 fit): the search takes libLBFGS's step, the longest of 1, 1/2,
    1/4, ... whose objective passes the Armijo test, computed here by hand."""
    n = 6
    A, b, w = random_quadratic(seed, n)

    def evaluate(x):
        f = 0.5 * float(x @ A @ x) - float(b @ x)
        return f, f, A @ x - b

    _, F, g = evaluate(w)
    d = -overshoot * np.linalg.solve(A, g)
    c1 = 1e-4
    t, expected_trials = 1.0, 1
    while evaluate(w + t * d)[1] > F + c1 * t * float(g @ d):
        t *= 0.5
        expected_trials += 1
    w_new = np.empty(n)
    res, step, trials = orthant_line_search(evaluate, w, d, g.copy(), F, 1.0, False, w_new, 40, c1, g)
    assert res is not None and trials == expected_trials == 1 + int(np.ceil(np.log2(overshoot / 2.0 + 1e-12)))
    assert step == t and np.allclose(w_new, w + t * d, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_l1_iterates_decrease_and_stay_in_their_orthant(seed):
    """Badly scaled least squares with an l1 term (line searches that backtrack): every
    accepted iterate lowers the objective (near the optimum up to its rounding: the
    gradient-based acceptance of ``orthant_line_search`` admits a rise of at most
    ``NOISE`` relative), no weight crosses zero in one step, and the fit ends at the
    optimum (pseudo-gradient test)."""
    model = make_least_squares(n=50, d=20, seed=seed)
    model.X *= np.geomspace(0.05, 20.0, model.n_params)              # columns on very different scales
    pen = ElasticNet(2.0, 0.0)
    iterates = []
    res = minimize_owlqn(model, pen, max_iter=2000, tol=0.0, gtol=1e-9,
                         monitor=lambda row, w: iterates.append(w.copy()))
    assert res.stop_reason == "gtol"
    assert res.n_evals > res.n_iter + 1                              # some searches backtracked
    F = [model.loss(np.zeros(model.n_params))] + [r["objective"] for r in res.history]
    assert all(b <= a + NOISE * max(abs(a), 1.0) for a, b in zip(F, F[1:]))
    prev = np.zeros(model.n_params)
    for w in iterates:
        assert np.all(w * prev >= 0)
        prev = w
    assert np.count_nonzero(res.w) < model.n_params                   # the l1 term zeroed some weights
