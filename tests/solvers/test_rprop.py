"""Wapiti's Rprop trainers (solvers 'rprop' / 'rprop+' / 'rprop-'): the compiled move
against a plain-Python transcription of the rule on tiny vectors, every l1 mode and
both variants; convergence to the OWL-QN optimum on every model of the protocol tests;
clear errors for bad options."""

import math

import numpy as np
import pytest

from spargel.core.penalties import ElasticNet
from spargel.errors import CapabilityError
from spargel.solvers import get_solver
from spargel.solvers.rprop import EPS, rprop_step

from test_protocol import MODELS, objective, reference


def sgn(v):
    return -1.0 if v < -EPS else (1.0 if v > EPS else 0.0)


def reference_step(x, xp, stp, g, gp, rho1, stpmin, stpmax, inc, dec, backtrack, mode):
    """The rule, one weight at a time, in plain Python (lists in, lists out)."""
    x, xp, stp, g, gp = list(x), list(xp), list(stp), list(g), list(gp)
    for f in range(len(x)):
        r = rho1[f]
        pg = g[f]
        if mode == "projection" and r > 0:
            if x[f] < -EPS:
                pg = g[f] - r
            elif x[f] > EPS:
                pg = g[f] + r
            elif g[f] < -r:
                pg = g[f] + r
            elif g[f] > r:
                pg = g[f] - r
            else:
                pg = 0.0
        if mode == "cutoff" and r > 0 and (g[f] + r * sgn(x[f])) ** 2 < r * r:
            if x[f] == 0.0 or (gp[f] * g[f] < 0 and xp[f] * x[f] < 0):
                if backtrack:
                    xp[f] = x[f]
                x[f] = 0.0
                gp[f] = g[f]
                continue
        proj = mode == "projection" and r > 0
        if proj:
            g[f] = pg
        turn = sgn(gp[f]) * sgn(pg)
        if turn > 0:
            stp[f] = min(stp[f] * inc, stpmax)
        elif turn < 0:
            stp[f] = max(stp[f] * dec, stpmin)
        if not backtrack or turn > 0:
            if proj:
                side = sgn(x[f]) if x[f] != 0.0 else -sgn(pg)
                new = x[f] - stp[f] * sgn(pg)
                if new * side <= 0:
                    new = 0.0
            else:
                new = x[f] - stp[f] * sgn(g[f])
            if backtrack:
                xp[f] = x[f]
            x[f] = new
        elif turn < 0:
            x[f] = xp[f]
            g[f] = 0.0
        else:
            xp[f] = x[f]
            if not proj:
                x[f] -= stp[f] * sgn(pg)
        gp[f] = g[f]
    return x, xp, stp, gp


@pytest.mark.parametrize("mode", ["none", "projection", "cutoff"])
@pytest.mark.parametrize("backtrack", [True, False])
def test_step_matches_plain_python(mode, backtrack):
    rng = np.random.default_rng(11)
    n = 40
    # a mix of zeros, signs and values near the l1 band so that every branch is met
    x = rng.choice([0.0, 0.3, -0.2, 1.0], size=n) * rng.integers(0, 2, size=n)
    xp = rng.choice([0.0, -0.3, 0.2], size=n)
    stp = rng.uniform(1e-3, 1.0, size=n)
    g = rng.choice([-1.5, -0.4, 0.0, 0.3, 2.0], size=n)
    gp = rng.choice([-1.0, 0.0, 0.5], size=n)
    rho = np.where(rng.random(n) < 0.8, 0.5, 0.0) if mode != "none" else np.zeros(n)
    prm = np.array([1e-2, 0.9, 1.2, 0.5, 1.0 if backtrack else 0.0, {"none": 0, "projection": 1, "cutoff": 2}[mode]])
    want = reference_step(x, xp, stp, g, gp, rho, 1e-2, 0.9, 1.2, 0.5, backtrack, mode)
    arrays = [a.copy() for a in (x, xp, stp, g, gp)]
    rprop_step(arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], rho, 0.0, prm)
    for got, exp in zip((arrays[0], arrays[1], arrays[2], arrays[4]), want):
        np.testing.assert_allclose(got, exp, rtol=0, atol=1e-15)
    # a uniform strength gives the same move as the per-weight array of it
    if mode != "none":
        rho_u = np.full(n, 0.5)
        want = reference_step(x, xp, stp, g, gp, rho_u, 1e-2, 0.9, 1.2, 0.5, backtrack, mode)
        arrays = [a.copy() for a in (x, xp, stp, g, gp)]
        rprop_step(arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], np.zeros(0), 0.5, prm)
        np.testing.assert_allclose(arrays[0], want[0], atol=1e-15)


def test_trajectory_matches_plain_python_on_toy_model():
    """Whole runs on the least-squares toy model equal the plain-Python loop."""
    model = MODELS["least-squares"]()
    pen = ElasticNet(3.0, 0.1)
    res = get_solver("rprop")(model, pen, max_iter=25, tol=0)
    n = model.n_params
    x, xp, stp, gp = [0.0] * n, [0.0] * n, [0.1] * n, [0.0] * n
    rho = [3.0] * n
    for it in range(25):
        _, g = model.loss_grad(np.array(x))
        g = g + 0.1 * np.array(x)
        if it == 24:
            break
        x, xp, stp, gp = reference_step(x, xp, stp, list(g), gp, rho, 1e-8, 50.0, 1.2, 0.5, True, "projection")
    np.testing.assert_allclose(res.w, x, rtol=1e-12, atol=1e-14)
    assert res.n_iter == 25 and res.stop_reason == "max_iter"


@pytest.mark.parametrize("solver", ["rprop", "rprop+", "rprop-"])
@pytest.mark.parametrize("model_name", list(MODELS))
def test_reaches_the_optimum(model_name, solver):
    model = MODELS[model_name]()
    l1, l2 = {"least-squares": (3.0, 0.1)}.get(model_name, (0.4, 0.1))
    pen = ElasticNet(l1, l2, model.layout.penalty_scale)
    w_ref, f_ref = reference(model_name, l1, l2)
    res = get_solver(solver)(model, pen, max_iter=1000, tol=0, window=10)
    f = objective(model, pen, res.w)
    assert f <= f_ref + 1e-8 * abs(f_ref)
    # the projection lands on the optimum's zeros exactly
    assert np.array_equal(res.w != 0, w_ref != 0)


def test_cutoff_is_a_heuristic_that_zeroes_weights():
    """Wapiti's cutoff ignores l1 outside the band (no convergence to the l1 optimum
    is claimed): it decreases the objective from 0 and sets weights to exactly 0."""
    model = MODELS["crf-observed"]()
    pen = ElasticNet(0.4, 0.1, model.layout.penalty_scale)
    res = get_solver("rprop")(model, pen, max_iter=300, tol=0, cutoff=True)
    assert objective(model, pen, res.w) < objective(model, pen, np.zeros(model.n_params))
    assert 0 < np.count_nonzero(res.w) < model.n_params


def test_smooth_objective_without_l1():
    model = MODELS["loglinear-dense"]()
    pen = ElasticNet(0.0, 1.0)
    w_ref = get_solver("lbfgs")(model, pen, max_iter=2000, tol=0, gtol=1e-10).w
    res = get_solver("rprop-")(model, pen, max_iter=2000, tol=1e-14, window=20)
    np.testing.assert_allclose(res.w, w_ref, atol=1e-5)


@pytest.mark.parametrize("bad, message", [
    ({"stpmin": 0.0}, "stpmin"), ({"stpmax": -1.0}, "stpmax"), ({"stpmin": 2.0, "stpmax": 1.0}, "stpmax"),
    ({"stpinc": 1.0}, "stpinc"), ({"stpdec": 1.5}, "stpdec"), ({"stpdec": "x"}, "stpdec"),
    ({"step0": math.nan}, "step0"), ({"cutoff": "yes"}, "cutoff"), ({"window": 0}, "window"),
    ({"max_iter": -1}, "max_iter"),
])
def test_bad_options(bad, message):
    model = MODELS["least-squares"]()
    with pytest.raises(ValueError, match=message):
        get_solver("rprop")(model, ElasticNet(1.0, 0.0), **bad)


def test_needs_loss_grad():
    class NoGradient:
        n_params = 2
        n_samples = 1

        def loss(self, w):
            return 0.0

    with pytest.raises(CapabilityError, match="rprop"):
        get_solver("rprop")(NoGradient(), ElasticNet(0.0, 0.0))


def test_per_weight_strengths_reach_the_optimum():
    """Per-weight l1 / l2 (an array, and a scale with unpenalised weights) reach the
    OWL-QN optimum of the same objective; the penalty kernel matches its plain value."""
    from spargel.solvers.rprop import add_penalty
    model = MODELS["loglinear-dense"]()
    rng = np.random.default_rng(5)
    n = model.n_params
    scale = np.where(rng.random(n) < 0.2, 0.0, 1.0)
    pen = ElasticNet(rng.uniform(0.2, 1.5, n), 0.1, scale)
    ref = get_solver("owlqn")(model, pen, max_iter=5000, tol=0, gtol=1e-10).w
    res = get_solver("rprop")(model, pen, max_iter=1500, tol=0)
    f_ref = objective(model, pen, ref)
    assert objective(model, pen, res.w) <= f_ref + 1e-8 * abs(f_ref)
    x = rng.normal(size=n)
    g = np.zeros(n)
    l1, l2 = pen.per_weight(n)
    assert add_penalty(x, g, l1, 0.0, l2, 0.0) == pytest.approx(pen.value(x), rel=1e-12)
    np.testing.assert_allclose(g, l2 * x)
    g[3] = np.inf
    assert math.isnan(add_penalty(x, g, l1, 0.0, l2, 0.0))


def test_constrained_training_reaches_the_owlqn_objective():
    """Rprop trains through the batch likelihood, so also under constraints."""
    from spargel.chain.estimator import CRF
    X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}], [{"w": "dog"}, {"w": "runs"}]]
    y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "O"], ["B-NP", "O"]]
    kw = dict(l1=0.01, l2=0.1, constraints="bio", constrain_training=True)
    ref = CRF(solver="owlqn", max_iter=2000, tol=0, gtol=1e-10, **kw).fit(X, y)
    got = CRF(solver="rprop", max_iter=2000, tol=0, **kw).fit(X, y)
    assert got.objective_ <= ref.objective_ + 1e-7 * abs(ref.objective_)
    assert got.predict(X) == y
