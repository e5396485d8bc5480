"""The chain bound of the CRF (spargel.chain.bound) against brute force on tiny
chains: the explicit-vector reference of the same recursion, Algorithm 1 over the
enumerated label paths, the exact log Z at random points, and the majoriser against
OWL-QN."""

import numpy as np
import pytest
from bound_reference import chain_bound_reference, chain_features, chain_paths
from crf_reference import random_data, random_space

from spargel.errors import CapabilityError
from spargel.core.bound import compute_bound
from spargel.chain.crf import ChainCRF
from spargel.core.penalties import ElasticNet
from spargel.solvers import get_solver


def explicit_vectors(space, data, s):
    """phi[t][y] and tau[j][y]: the weight-space feature vectors of sequence s."""
    L, p = space.n_labels, space.n_params
    lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
    phi = [[np.zeros(p) for _ in range(L)] for _ in range(hi - lo)]
    for t in range(hi - lo):
        for j in range(data.uni_ptr[lo + t], data.uni_ptr[lo + t + 1]):
            a = data.uni_ids[j]
            for k in range(space.u_ptr[a], space.u_ptr[a + 1]):
                phi[t][space.u_lab[k]][k] += data.uni_vals[j]
    tau = [[np.zeros(p) for _ in range(L)] for _ in range(L)]
    for k, pair in enumerate(space.t_pair):
        tau[pair // L][pair % L][space.t_base + k] = 1.0
    return phi, tau


def tiny_crf(seed, kind="full", n_seq=3, max_len=4, L=3, n_uni=5):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_seq=n_seq, max_len=max_len, n_uni=n_uni, n_big=0, n_labels=L, p_big=0.0)
    space = random_space(rng, data, kind, L, n_uni, 0)
    return ChainCRF(space, data), space, data, rng


def brute_logz(space, data, s, w):
    phi, tau = explicit_vectors(space, data, s)
    F = np.array([chain_features(phi, tau, p) for p in chain_paths(space.n_labels, len(phi))])
    a = F @ w
    return a.max() + np.log(np.exp(a - a.max()).sum()), F


@pytest.mark.parametrize("seed,kind", [(0, "full"), (1, "observed"), (2, "full"), (3, "observed"), (4, "full")])
def test_chain_curvature_is_the_recursion(seed, kind):
    """Sigma v of the compiled, matrix-free recursion equals the explicit-vector reference;
    log Z per sequence and the gradient are exact."""
    m, space, data, rng = tiny_crf(seed, kind, L=2 + seed % 3)
    w = rng.normal(size=m.n_params)
    B = m.bound(w)
    p = m.n_params
    Sigma, mu_sum = np.zeros((p, p)), np.zeros(p)
    for s in range(data.n_sequences):
        phi, tau = explicit_vectors(space, data, s)
        lz, mu, S = chain_bound_reference(w, phi, tau)
        Sigma += S
        mu_sum += mu
        assert B.info["logz"][s] == pytest.approx(lz, rel=1e-12)
        assert lz == pytest.approx(brute_logz(space, data, s, w)[0], rel=1e-12)
    np.testing.assert_allclose(B.grad, mu_sum - m._emp, atol=1e-12)
    assert B.loss == pytest.approx(m.loss(w), rel=1e-12)
    for _ in range(3):
        v = rng.normal(size=p)
        np.testing.assert_allclose(B.curvature.matvec(v), Sigma @ v, atol=1e-11 * max(1.0, np.abs(Sigma @ v).max()))


@pytest.mark.parametrize("L", [2, 3, 4])
def test_short_chains_are_algorithm1_over_the_paths(L):
    """One- and two-token sequences: the bound is Algorithm 1 over the enumerated paths
    (visited last label outer, previous label inner)."""
    m, space, data, rng = tiny_crf(10 + L, "full", n_seq=4, max_len=2, L=L)
    w = rng.normal(size=m.n_params)
    p = m.n_params
    Sigma = np.zeros((p, p))
    for s in range(data.n_sequences):
        lz, F = brute_logz(space, data, s, w)
        n = data.seq_ptr[s + 1] - data.seq_ptr[s]
        order = np.arange(len(F)) if n == 1 else np.array([j * L + y for y in range(L) for j in range(L)])
        _, _, S = compute_bound(w, F[order])
        Sigma += S
    v = rng.normal(size=p)
    np.testing.assert_allclose(m.bound(w).curvature.matvec(v), Sigma @ v, atol=1e-11)


@pytest.mark.parametrize("seed", range(4))
def test_chain_bound_upper_bounds_the_loss(seed):
    m, space, data, rng = tiny_crf(20 + seed, "full" if seed % 2 else "observed", n_seq=4, max_len=5, L=3)
    worst = np.inf
    for _ in range(5):
        w = rng.normal(size=m.n_params) * 1.5
        B = m.bound(w)
        for _ in range(200):
            d = rng.normal(size=m.n_params) * rng.choice([0.01, 0.3, 2.0, 10.0])
            worst = min(worst, (B.value(d) - m.loss(w + d)) / max(1.0, abs(B.loss)))
    assert worst >= -1e-12


def test_bigram_attributes_are_refused():
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=3, max_len=4, n_uni=4, n_big=3, n_labels=2, p_big=1.0)
    space = random_space(rng, data, "full", 2, 4, 3)
    m = ChainCRF(space, data)
    with pytest.raises(CapabilityError, match="bigram"):
        m.bound(np.zeros(m.n_params))
    with pytest.raises(ValueError, match="chain"):
        tiny_crf(0)[0].bound(np.zeros(tiny_crf(0)[0].n_params), curvature="dense")


@pytest.mark.parametrize("l1,l2,overrelax", [(0.0, 0.3, False), (0.2, 0.05, False), (0.2, 0.05, True)])
def test_bound_majoriser_on_a_crf(l1, l2, overrelax):
    """Monotone steps; l2 and elastic net reach the OWL-QN optimum to 1e-6 (relative)."""
    m, space, data, rng = tiny_crf(31, "full", n_seq=6, max_len=4, L=2, n_uni=4)
    pen = ElasticNet(l1, l2, m.layout.penalty_scale)
    ref = get_solver("owlqn")(m, pen, max_iter=3000, tol=1e-15, gtol=1e-10)
    res = get_solver("bound")(m, pen, max_iter=1000, tol=0, gtol=1e-7, overrelax=overrelax)
    obj = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(obj, obj[1:]))
    assert res.stop_reason == "gtol"
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)


def test_crf_estimator_with_solver_bound():
    from spargel import CRF
    X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}], [{"w": "dogs"}, {"w": "run"}]]
    y = [["DT", "NN"], ["DT", "NN", "VB"], ["NN", "VB"]]
    a = CRF(solver="bound", l1=0.0, l2=1.0, tol=0, gtol=1e-7, max_iter=500).fit(X, y)
    b = CRF(solver="lbfgs", l1=0.0, l2=1.0, tol=1e-14, gtol=1e-9, max_iter=2000).fit(X, y)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-7)
    assert a.predict(X) == b.predict(X) == y
