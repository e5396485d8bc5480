"""CRF++'s MIRA (solver 'mira', ``crf_learn -a MIRA``): the compiled passes against a
plain-Python transcription of CRF++'s rule (brute-force decoding, the same sample
order, the per-sample bound C and the shrinking), on first- and second-order chains
and on the flat log-linear model; convergence on separable data; parameter checks."""

import numpy as np
import pytest

from spargel.core.penalties import ElasticNet
from spargel.errors import CapabilityError
from spargel.solvers import get_solver

from test_online_trainers import Flat, _separable, chain, tiny


def reference_mira(ref, epochs, w0, c=1.0, shrinking_size=20):
    """CRF++'s runMIRA written out plainly (the sample weight multiplies the step)."""
    w = w0.copy()
    upper = np.zeros(ref.N)
    shrink = np.zeros(ref.N, int)
    converge = 0
    rows = []
    for _ in range(epochs):
        loss, kkt, active, cut = 0.0, 0.0, 0, 0
        for s in range(ref.N):
            if shrink[s] >= shrinking_size:
                continue
            active += 1
            y = ref.gold(s)
            z = ref.decode(s, w)
            d = sum(a != b for a, b in zip(y, z))
            if d == 0:
                shrink[s] += 1
                continue
            shrink[s] = 0
            loss += d / len(y) * ref.sw[s]
            delta = ref.features(s, y) - ref.features(s, z)
            cost = d - w @ delta
            mu = max(0.0, cost / (delta @ delta))
            if upper[s] + mu > c:
                mu = c - upper[s]
                cut += 1
            else:
                kkt = max(kkt, cost)
            if mu > 1e-10:
                upper[s] = min(c, upper[s] + mu)
                w = w + mu * ref.sw[s] * delta
        rows.append((loss, kkt, active, cut))
        if kkt <= 0.0:
            shrink[:] = 0
            converge += 1
        else:
            converge = 0
        if converge == 2:
            break
    return w, rows


@pytest.mark.parametrize("c,shrinking_size", [(1.0, 20), (0.05, 20), (10.0, 1), (0.3, 2)])
@pytest.mark.parametrize("weighted,order", [(False, 1), (True, 1), (False, 2)])
def test_mira_matches_a_plain_implementation(c, shrinking_size, weighted, order):
    space, data = tiny(5, n_seq=6, max_len=3, order=order)
    sw = np.array([1.0, 2.0, 0.5, 1.5, 1.0, 1.0]) if weighted else None
    model, ref = chain(order, space, data, sw)
    w0 = np.random.default_rng(7).normal(size=space.n_params) * 0.1
    w_ref, rows = reference_mira(ref, 6, w0, c, shrinking_size)
    res = get_solver("mira")(model, None, w0, max_iter=6, c=c, shrinking_size=shrinking_size)
    assert res.n_iter == len(rows)
    np.testing.assert_allclose(res.w, w_ref, rtol=1e-9, atol=1e-10)
    got = [(r["loss"], r["kkt"], r["active_set"], r["upper_active_set"]) for r in res.history]
    np.testing.assert_allclose(np.array(got), np.array(rows), rtol=1e-9, atol=1e-10)


def test_mira_on_the_flat_model_matches_a_plain_implementation():
    import scipy.sparse as sp
    from spargel.loglinear.model import FlatLogLinear
    rng = np.random.default_rng(12)
    X = rng.normal(size=(10, 4)) * (rng.random((10, 4)) < 0.7)
    y = rng.integers(3, size=10)
    model = FlatLogLinear(sp.csr_matrix(X), y, 3)
    ref = Flat(X, y, 3)
    w0 = rng.normal(size=model.n_params) * 0.1
    w_ref, rows = reference_mira(ref, 5, w0, 0.5, 2)
    res = get_solver("mira")(model, None, w0, max_iter=5, c=0.5, shrinking_size=2)
    np.testing.assert_allclose(res.w, w_ref, rtol=1e-9, atol=1e-10)
    assert res.n_iter == len(rows)


@pytest.mark.parametrize("seed", [0, 1])
def test_mira_converges_on_separable_data(seed):
    """With a large C no step is cut: on separable data MIRA ends with every training
    sequence decoded right and stops on CRF++'s rule (two epochs without a violation)."""
    model, ref = chain(1, *_separable(seed))
    res = get_solver("mira")(model, None, max_iter=200, c=1e6)
    assert res.stop_reason == "tol"
    assert res.history[-1]["loss"] == 0.0
    for s in range(ref.N):
        assert ref.decode(s, res.w) == ref.gold(s)


@pytest.mark.parametrize("bad, message", [({"c": 0.0}, "c must"), ({"c": "x"}, "c must"),
                                          ({"shrinking_size": 0}, "shrinking_size"),
                                          ({"shrinking_size": 2.5}, "shrinking_size"),
                                          ({"max_iter": -1}, "max_iter")])
def test_mira_parameters_are_validated(bad, message):
    space, data = tiny(1)
    model, _ = chain(1, space, data)
    with pytest.raises(ValueError, match=message):
        get_solver("mira")(model, None, **bad)


def test_mira_takes_no_penalty_and_needs_map():
    space, data = tiny(1)
    model, _ = chain(1, space, data)
    with pytest.raises(ValueError, match="takes no penalty"):
        get_solver("mira")(model, ElasticNet(0.1, 0.0))
    with pytest.raises(CapabilityError, match="mira"):
        get_solver("mira")(type("NoMap", (), {"n_params": 3, "n_samples": 1})(), None)


def test_crf_estimator_trains_with_mira():
    from spargel.chain.estimator import CRF
    X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    y = [["DT", "NN"], ["DT", "NN", "VB"]]
    crf = CRF(solver="mira", solver_options={"c": 2.0, "shrinking_size": 3}).fit(X, y)
    assert crf.predict(X) == y
