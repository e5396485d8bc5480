"""The projected backtracking line search shared by OWL-QN and the incremental solvers:
with a noisy objective (a model's ``approximate_loss``) it gives up as soon as the
trials' rise over F stops shrinking with the step; a smooth objective never triggers
that."""

import numpy as np
import pytest

from spargel.mrf.model import PairwiseMRFModel
from spargel.core.protocol import approximate_loss
from spargel.core.penalties import ElasticNet
from spargel.solvers.owlqn import minimize_owlqn, orthant_line_search

from toy_model import make_least_squares, random_quadratic


def quadratic(A, b):
    def evaluate(x):
        f = 0.5 * float(x @ A @ x) - float(b @ x)
        return f, f, A @ x - b
    return evaluate


@pytest.mark.parametrize("seed", range(20))
def test_smooth_objective_search_unchanged_by_noisy_flag(seed):
    """Random ill-scaled quadratics, steps far too long at first (many backtracks):
    the search accepts the same step after the same trials with and without the flag."""
    rng = np.random.default_rng(seed)
    n = 6
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T + np.diag(10.0 ** rng.uniform(-2, 3, n))
    b = rng.normal(size=n)
    w = rng.normal(size=n)
    evaluate = quadratic(A, b)
    _, F, g = evaluate(w)
    d = -g
    step0 = 10.0 ** rng.uniform(0, 4)
    out = []
    for noisy in (False, True):
        w_new = np.empty(n)
        res, step, trials = orthant_line_search(evaluate, w, d, g.copy(), F, step0, False, w_new, 40, 1e-4, g,
                                                noisy)
        out.append((res is not None, step, trials, w_new.copy()))
    assert out[0][0] and out[1][0]
    assert out[0][1:3] == out[1][1:3] and np.array_equal(out[0][3], out[1][3])


def stale(evaluate, offset):
    """The objective seen by the trials sits ``offset`` above the one of the base point
    (what warm-started loopy BP can do: the same weights give another value with other
    messages)."""
    def noisy_evaluate(x):
        loss, F, g = evaluate(x)
        return loss + offset, F + offset, g
    return noisy_evaluate


def test_noisy_search_gives_up_when_the_rise_stops_shrinking():
    rng = np.random.default_rng(0)
    A = np.diag(rng.uniform(1.0, 2.0, 5))
    b = rng.normal(size=5)
    w = np.linalg.solve(A, b) + 0.01 * rng.normal(size=5)     # near the optimum: every
    evaluate = quadratic(A, b)                                 # decrease is below the offset
    _, F, g = evaluate(w)
    runs = {}
    for noisy in (False, True):
        res, step, trials = orthant_line_search(stale(evaluate, 1.0), w, -g, g.copy(), F, 1.0, False,
                                                np.empty(5), 40, 1e-4, g, noisy)
        runs[noisy] = (res, trials)
    assert runs[False][0] is None and runs[False][1] == 40
    assert runs[True][0] is None and runs[True][1] <= 8


class StaleModel:
    """Least squares whose loss reads 1.0 higher at every point but the first it is
    asked for after ``turn`` evaluations: a base value that later trials never see."""

    approximate_loss = True

    def __init__(self, turn):
        self.inner = make_least_squares(n=30, d=5, seed=3)
        self.n_params, self.layout, self.n_samples = self.inner.n_params, self.inner.layout, 30
        self.turn, self.calls = turn, 0

    def loss_grad(self, w):
        self.calls += 1
        loss, g = self.inner.loss_grad(w)
        return (loss + 1.0 if self.calls > self.turn + 1 else loss), g

    def loss(self, w):
        return self.loss_grad(w)[0]


def test_owlqn_reads_the_models_flag():
    pen = ElasticNet(0.1, 0.0, np.ones(5))
    noisy = minimize_owlqn(StaleModel(turn=6), pen, max_iter=100, tol=0, gtol=1e-12)
    StaleModel.approximate_loss = False
    try:
        exact = minimize_owlqn(StaleModel(turn=6), pen, max_iter=100, tol=0, gtol=1e-12)
    finally:
        StaleModel.approximate_loss = True
    assert noisy.stop_reason == exact.stop_reason == "linesearch"
    assert noisy.n_iter == exact.n_iter
    assert noisy.n_evals < exact.n_evals - 20


def test_mrf_flags_only_the_loopy_bp_likelihood():
    X = np.random.default_rng(0).integers(0, 2, size=(20, 4))
    assert approximate_loss(PairwiseMRFModel(X, inference="loopy-bp"))
    assert not approximate_loss(PairwiseMRFModel(X, inference="exact"))
    assert not approximate_loss(PairwiseMRFModel(X, objective="pseudo"))
    assert not approximate_loss(make_least_squares())


def faulty(evaluate, bad, value=-1e3, grad=None):
    """``evaluate`` with a fault: at trial points where ``bad(x)`` the objective reads
    ``value`` (a kernel that missed an overflow), or the gradient ``grad``."""
    def run(x):
        loss, F, g = evaluate(x)
        if bad(x):
            if grad is not None:
                return loss, F, np.full_like(g, grad)
            return value, value, g
        return loss, F, g
    return run


@pytest.mark.parametrize("seed", range(10))
def test_convex_search_refuses_a_trial_below_the_tangent_plane(seed):
    """A trial whose objective lies below F + pg . s (impossible for a convex objective)
    is backtracked from; the step finally taken is a sound one with its true value."""
    n = 5
    A, b, w = random_quadratic(seed, n)
    evaluate = quadratic(A, b)
    _, F, g = evaluate(w)
    d = -g
    step0 = 1.0 / np.linalg.norm(g)
    far = lambda x: np.linalg.norm(x - w) > 0.5 * step0 * np.linalg.norm(g)      # the first trial
    w_new = np.empty(n)
    res, step, trials = orthant_line_search(faulty(evaluate, far), w, d, g.copy(), F, step0, False, w_new, 40,
                                            1e-4, g, False, True)
    assert res is not None and trials >= 2 and step < step0
    assert res[1] == pytest.approx(evaluate(w_new)[1], rel=1e-15)
    # without the convexity flag nothing tells the fault from progress
    res2, step2, _ = orthant_line_search(faulty(evaluate, far), w, d, g.copy(), F, step0, False, np.empty(n), 40,
                                         1e-4, g, False, False)
    assert res2[1] == -1e3 and step2 == step0


def test_search_refuses_a_trial_with_a_non_finite_gradient():
    A = np.diag([1.0, 2.0, 3.0])
    b = np.ones(3)
    w = np.zeros(3)
    evaluate = quadratic(A, b)
    _, F, g = evaluate(w)
    far = lambda x: np.linalg.norm(x) > 0.3
    w_new = np.empty(3)
    res, step, trials = orthant_line_search(faulty(evaluate, far, grad=np.inf), w, -g, g.copy(), F, 1.0, False,
                                            w_new, 40, 1e-4, g)
    assert res is not None and np.all(np.isfinite(res[2])) and np.linalg.norm(w_new) <= 0.3


class FaultyConvexModel:
    """Least squares (convex) whose loss reads -1000 far from the start: OWL-QN must
    never take such a point, and stops at sound weights with their true loss."""

    convex_loss = True

    def __init__(self):
        self.inner = make_least_squares(n=30, d=5, seed=4)
        self.n_params, self.layout, self.n_samples = self.inner.n_params, self.inner.layout, 30

    def loss_grad(self, w):
        loss, g = self.inner.loss_grad(w)
        if np.linalg.norm(w) > 0.2:
            return -1000.0, g
        return loss, g

    def loss(self, w):
        return self.loss_grad(w)[0]


def test_owlqn_never_takes_a_faulty_step_of_a_convex_model():
    model = FaultyConvexModel()
    res = minimize_owlqn(model, ElasticNet(0.0, 0.0, np.ones(5)), max_iter=50, tol=0, gtol=0)
    assert np.linalg.norm(res.w) <= 0.2
    assert res.objective == pytest.approx(model.inner.loss_grad(res.w)[0], rel=1e-12)
    assert all(row["objective"] > 0 for row in res.history)
