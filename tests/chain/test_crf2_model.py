"""The second-order CRF model (models/crf2.py) against brute-force enumeration on random
tiny models: log Z, label marginals, loss, gradient (finite differences), Viterbi,
n-best and constrained decoding, in both feature spaces and both transition forms
(PAIR_ONES and the LIST of every allowed transition), with the log-space fallback; and
the reduction to a first-order model when the triple weights are zero."""

import numpy as np
import pytest

from spargel.chain import crf as M1
from spargel.chain import crf2 as M
from spargel.chain.crf2_space import FeatureSpace2
from spargel.data.feature_space import FeatureSpace

from crf2_reference import brute_logz2, brute_loss2, brute_marginals2, enumerate_paths2, random_space2
from crf_reference import random_data

CASES = [("full", True), ("observed", True), ("full", False), ("observed", False)]


def problem(seed, kind, transitions, n_labels=3, scale=1.0, **data_args):
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_labels=n_labels, **data_args)
    space = random_space2(data, kind, n_labels, 6, 3, transitions)
    w = rng.normal(scale=scale, size=space.n_params)
    return space, data, w


def _finite_differences(model, w, eps=1e-6):
    fd = np.empty_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        fd[i] = (model.loss(w + e) - model.loss(w - e)) / (2 * eps)
    return fd


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("seed", range(2))
def test_logz_marginals_and_loss_match_enumeration(seed, kind, transitions):
    space, data, w = problem(seed, kind, transitions)
    marg, logz = M.marginals(space, data, w)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz2(space, data, w, s), rel=1e-12, abs=1e-12)
        point, _ = brute_marginals2(space, data, w, s)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-12)
    loss = brute_loss2(space, data, w)
    for inference in ("auto", "dense"):
        model = M.ChainCRF2(space, data, inference=inference)
        assert model.loss_grad(w)[0] == pytest.approx(loss, rel=1e-12)
        assert model.loss(w) == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(M.sequence_loss(space, data, w).sum(), loss, rtol=1e-12)


@pytest.mark.parametrize("kind", ["full", "observed"])
def test_shared_pair_scores_match_enumeration(kind):
    """Tokens that carry only the plain pair weights (one attribute, value 1, at every
    token of a sequence) or no pair attribute at all take the factored path (L
    exponentials per token); a sequence with one more attribute the general one."""
    from spargel.data.dataset import SequenceData
    base = random_data(np.random.default_rng(3), n_seq=5, n_labels=3)
    n = base.n_tokens
    seq_of = np.repeat(np.arange(base.n_sequences), np.diff(base.seq_ptr))
    ids, ptr = [], [0]
    for t in range(n):
        if seq_of[t] != 0:                          # sequence 0: no pair attribute
            ids.append(0)
        if t == base.seq_ptr[1]:                    # sequence 1: a second one at its first token
            ids.append(1)
        ptr.append(len(ids))
    vals = np.ones(len(ids))
    vals[np.array(ids) == 1] = 0.7
    data = SequenceData(base.seq_ptr, base.uni_ptr, base.uni_ids, base.uni_vals, np.array(ptr, np.int64),
                        np.array(ids, np.int32), vals, base.labels)
    space = random_space2(data, kind, 3, 6, 3, True)
    w = np.random.default_rng(4).normal(scale=1.5, size=space.n_params)
    marg, logz = M.marginals(space, data, w)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz2(space, data, w, s), rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(marg[lo:hi], brute_marginals2(space, data, w, s)[0], atol=1e-12)
    model = M.ChainCRF2(space, data)
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(brute_loss2(space, data, w), rel=1e-12)
    np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("density", [1.0, 0.3, 0.0])
def test_gradient_matches_finite_differences(kind, transitions, density):
    # density 0: every weight zero, yet every pair and triple weight needs its count
    space, data, w = problem(7, kind, transitions)
    w = np.where(np.random.default_rng(1).random(len(w)) < density, w, 0.0)
    for inference in ("auto", "dense"):
        model = M.ChainCRF2(space, data, inference=inference)
        _, g = model.loss_grad(w)
        np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,transitions", CASES)
@pytest.mark.parametrize("seed", range(2))
def test_viterbi_and_nbest_match_enumeration(seed, kind, transitions):
    space, data, w = problem(seed, kind, transitions)
    best, best_scores = M.decode(space, data, w)
    lists = M.nbest(space, data, w, k=5)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths2(space, data, w, s)
        order = np.argsort(-scores, kind="stable")
        assert tuple(best[lo:hi]) == paths[order[0]]
        assert best_scores[s] == pytest.approx(scores[order[0]], abs=1e-12)
        got = np.array([sc for _, sc in lists[s]])
        np.testing.assert_allclose(got, scores[order[:5]], atol=1e-12)
        for path, sc in lists[s]:
            assert sc == pytest.approx(scores[paths.index(tuple(path))], abs=1e-12)
        assert len({tuple(p) for p, _ in lists[s]}) == len(lists[s]) == min(5, len(paths))


@pytest.mark.parametrize("kind", ["full", "observed"])
@pytest.mark.parametrize("density", [0.0, 0.2, 0.6])
def test_viterbi_with_sparse_triples_matches_enumeration(kind, density):
    """The O(S + triples) Viterbi step: most triples unscored (the best source of a
    column usually wins), some scored (either sign); small integer weights make ties,
    which must go to the lowest state as in the enumeration's order."""
    rng = np.random.default_rng(11)
    for trial in range(3):
        space, data, w = problem(20 + trial, kind, True, n_labels=4)
        w = np.round(w)                                  # ties
        t = np.arange(space.t_base, space.n_params)
        w[t] = np.where(rng.random(len(t)) < density, rng.integers(-2, 3, len(t)), 0.0)
        best, best_scores = M.decode(space, data, w)
        for s in range(data.n_sequences):
            lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
            paths, scores = enumerate_paths2(space, data, w, s)
            top = scores.max()
            assert best_scores[s] == pytest.approx(top, abs=1e-12)
            assert scores[paths.index(tuple(best[lo:hi]))] == pytest.approx(top, abs=1e-12)


def test_constrained_decoding_matches_enumeration():
    space, data, w = problem(3, "full", True)
    rng = np.random.default_rng(0)
    fixed = np.where(rng.random(data.n_tokens) < 0.4, rng.integers(space.n_labels, size=data.n_tokens), -1)
    fixed = fixed.astype(np.int32)
    best, _ = M.decode(space, data, w, fixed)
    lists = M.nbest(space, data, w, 3, fixed)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths2(space, data, w, s)
        ok = np.array([all(f < 0 or f == y for f, y in zip(fixed[lo:hi], p)) for p in paths])
        allowed = np.where(ok, scores, -np.inf)
        assert tuple(best[lo:hi]) == paths[int(np.argmax(allowed))]
        expect = np.sort(scores[ok])[::-1][:3]
        np.testing.assert_allclose([sc for _, sc in lists[s]], expect, atol=1e-12)


@pytest.mark.parametrize("kind,transitions", [("full", True), ("observed", True)])
def test_huge_weights_match_enumeration(kind, transitions):
    """Weights so large that scaling underflows: the log-space fallback must agree."""
    space, data, w = problem(11, kind, transitions, scale=900.0)
    marg, logz = M.marginals(space, data, w)
    model = M.ChainCRF2(space, data)
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(brute_loss2(space, data, w), rel=1e-9, abs=1e-6)
    assert np.isfinite(g).all()
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        assert logz[s] == pytest.approx(brute_logz2(space, data, w, s), rel=1e-10)
        point, _ = brute_marginals2(space, data, w, s)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-9)


def test_very_negative_triples_use_the_exact_list_form():
    """A triple weight of -40 would cancel in 1 + expm1(-40): the model then lists every
    transition with its exact factor, and the loss still equals enumeration."""
    space, data, w = problem(5, "full", True)
    w[space.t_base:] = 0.0
    w[space.t_base + 3] = -40.0
    model = M.ChainCRF2(space, data)
    assert model.view.refresh(w)[0] == M.C.LIST
    w2 = w.copy()
    w2[space.t_base + 3] = -5.0
    assert model.view.refresh(w2)[0] == M.C.PAIR_ONES
    assert model.loss(w) == pytest.approx(brute_loss2(space, data, w), rel=1e-12)
    _, g = model.loss_grad(w)
    np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)


def test_parallel_gradient_equals_single_thread():
    space, data, w = problem(5, "full", True, n_labels=4, n_seq=60, max_len=8)
    l1, g1 = M.ChainCRF2(space, data, n_jobs=1).loss_grad(w)
    l3, g3 = M.ChainCRF2(space, data, n_jobs=3).loss_grad(w)
    assert l3 == l1
    np.testing.assert_array_equal(g3, g1)


def _as_order2(space1, w1):
    """The order-2 layout and weights of an order-1 model: unigram weights as they are,
    each bigram attribute's pair weights on the same pairs, the transitions as the pairs
    of an attribute ``B`` that fires at every token; no triple weights."""
    L = space1.n_labels
    n_u, n_b = len(space1.u_ptr) - 1, len(space1.b_ptr) - 1
    S = (L + 1) * L
    full = FeatureSpace2.full(L, n_u, n_b + 1, transitions=False)
    w2 = np.zeros(full.n_params)
    for a in range(n_u):
        for k in range(space1.u_ptr[a], space1.u_ptr[a + 1]):
            w2[a * L + space1.u_lab[k]] = w1[k]
    for a in range(n_b):
        for k in range(space1.b_ptr[a], space1.b_ptr[a + 1]):
            w2[full.b_base + a * S + space1.b_pair[k]] = w1[space1.b_base + k]
    for k, p in enumerate(space1.t_pair):
        w2[full.b_base + n_b * S + p] = w1[space1.t_base + k]
    return full, w2


def _with_bias_attribute(data, n_big):
    """The data with one more bigram attribute (id n_big) at every token."""
    from spargel.data.dataset import SequenceData
    n = data.n_tokens
    ids, vals, ptr = [], [], [0]
    for t in range(n):
        lo, hi = data.big_ptr[t], data.big_ptr[t + 1]
        ids += list(data.big_ids[lo:hi]) + [n_big]
        vals += list(data.big_vals[lo:hi]) + [1.0]
        ptr.append(len(ids))
    return SequenceData(data.seq_ptr, data.uni_ptr, data.uni_ids, data.uni_vals, np.array(ptr, np.int64),
                        np.array(ids, np.int32), np.array(vals), data.labels)


@pytest.mark.parametrize("seed", range(3))
def test_zero_triples_give_the_first_order_model(seed):
    """An order-2 model whose triple weights (and begin-marker pair weights) are zero
    is the order-1 model: same log Z, marginals, loss, Viterbi paths, and the gradient
    of every weight the order-1 model has."""
    rng = np.random.default_rng(seed)
    data1 = random_data(rng, n_labels=3)
    space1 = FeatureSpace.full(3, 6, 3)
    w1 = rng.normal(size=space1.n_params)
    space2, w2 = _as_order2(space1, w1)
    data2 = _with_bias_attribute(data1, 3)
    m1, z1 = M1.marginals(space1, data1, w1)
    m2, z2 = M.marginals(space2, data2, w2)
    np.testing.assert_allclose(z2, z1, rtol=1e-13)
    np.testing.assert_allclose(m2, m1, atol=1e-13)
    np.testing.assert_array_equal(M.decode(space2, data2, w2)[0], M1.decode(space1, data1, w1)[0])
    loss1, g1 = M1.ChainCRF(space1, data1).loss_grad(w1)
    # with triples in the layout (all zero) the order-2 gradient has their counts too
    space2t = FeatureSpace2(3, space2.u_ptr, space2.u_lab, space2.b_ptr, space2.b_pair,
                            np.arange(4 * 3 * 3, dtype=np.int32))
    w2t = np.concatenate([w2, np.zeros(36)])
    loss2, g2 = M.ChainCRF2(space2t, data2).loss_grad(w2t)
    assert loss2 == pytest.approx(loss1, rel=1e-13)
    _, g1_as2 = _as_order2(space1, g1)
    L, S = 3, 12
    # first-order pairs never see the begin marker: compare on the order-1 weights only
    keep = np.ones(space2.n_params, bool)
    for a in range(4):
        keep[space2.b_base + a * S + L * L: space2.b_base + (a + 1) * S] = False
    np.testing.assert_allclose(g2[:space2.n_params][keep], g1_as2[keep], atol=1e-12)


def test_observed_space_keeps_seen_pairs_and_triples_only():
    rng = np.random.default_rng(4)
    data = random_data(rng, n_labels=3, n_seq=6)
    space = FeatureSpace2.observed(data, 3, 6, 3)
    L = 3
    y = data.labels
    seen_t, seen_p = set(), set()
    for s in range(data.n_sequences):
        lab = [L, L] + list(y[data.seq_ptr[s]:data.seq_ptr[s + 1]])
        for t in range(2, len(lab)):
            if t >= 3:
                seen_t.add((lab[t - 2] * L + lab[t - 1]) * L + lab[t])
            tok = data.seq_ptr[s] + t - 2
            for j in range(data.big_ptr[tok], data.big_ptr[tok + 1]):
                seen_p.add((int(data.big_ids[j]), lab[t - 1] * L + lab[t]))
    assert set(space.t_pair.tolist()) == seen_t
    got = {(a, int(p)) for a in range(3) for p in space.b_pair[space.b_ptr[a]:space.b_ptr[a + 1]]}
    assert got == seen_p
    space.validate(6, 3)
    bad = FeatureSpace2(3, space.u_ptr, space.u_lab, space.b_ptr, space.b_pair, np.array([36], np.int32))
    with pytest.raises(ValueError, match="triples"):
        bad.validate(6, 3)


def _partial_problem(seed, kind="full"):
    """Random data where some labels are unknown (-1), and per-sequence weights."""
    rng = np.random.default_rng(seed)
    data = random_data(rng, n_labels=3, n_seq=5)
    labels = data.labels.copy()
    labels[rng.random(len(labels)) < 0.3] = -1
    data.labels = labels
    space = random_space2(data, kind, 3, 6, 3, True)
    w = rng.normal(size=space.n_params)
    sw = rng.uniform(0.5, 2.0, size=data.n_sequences)
    return space, data, w, sw


def _brute_weighted_loss(space, data, w, sw):
    total = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = enumerate_paths2(space, data, w, s)
        known = data.labels[lo:hi]
        ok = np.array([all(k < 0 or k == y for k, y in zip(known, p)) for p in paths])
        m = scores.max()
        logz = m + np.log(np.exp(scores - m).sum())
        num = m + np.log(np.exp(scores[ok] - m).sum())
        total += sw[s] * (logz - num)
    return total


@pytest.mark.parametrize("kind", ["full", "observed"])
def test_sample_weights_and_unknown_labels_match_enumeration(kind):
    """Label -1 (unknown): the numerator sums over the consistent label sequences; each
    sequence's term is multiplied by its weight. Batch loss, gradient and the SGD
    capability's summed loss agree with enumeration."""
    space, data, w, sw = _partial_problem(2, kind)
    assert np.any(data.labels < 0)
    expect = _brute_weighted_loss(space, data, w, sw)
    model = M.ChainCRF2(space, data, sample_weight=sw)
    loss, g = model.loss_grad(w)
    assert loss == pytest.approx(expect, rel=1e-12)
    np.testing.assert_allclose(g, _finite_differences(model, w), rtol=1e-5, atol=1e-6)
    assert model.sample_loss(np.arange(data.n_sequences), w) == pytest.approx(expect, rel=1e-12)
    with pytest.raises(ValueError, match="sample_weight"):
        M.ChainCRF2(space, data, sample_weight=sw[:2])


@pytest.mark.parametrize("variant", [0, 2])                 # naive, cumulative
@pytest.mark.parametrize("very_negative", [False, True])     # PAIR_ONES / exact LIST
def test_sgd_step_is_the_batch_gradient(variant, very_negative):
    """One SGD step over every sequence at once, without penalty and with a constant
    rate, moves the weights by exactly -eta times the batch gradient (sample weights and
    unknown labels included)."""
    space, data, w, sw = _partial_problem(6)
    if very_negative:
        w[space.t_base + 1] = -40.0
    model = M.ChainCRF2(space, data, sample_weight=sw)
    _, g = model.loss_grad(w)
    eta = 1e-3
    n = data.n_sequences
    v = w.copy()
    from spargel.core import lazy_l1 as Z
    st = Z.new_state()
    prm = Z.sgd_params(eta, 1.0, Z.CONSTANT, variant, n, 0.0, n, 0.0)
    assert model.sgd_pass(np.arange(n), v, np.zeros(len(v)), np.zeros(0), np.zeros(0), st, prm) == 0
    np.testing.assert_allclose((w - v) / eta, g, rtol=1e-9, atol=1e-9)
    assert st[Z.ONLINE_LOSS] == pytest.approx(model.loss(w), rel=1e-12)   # the online loss of the step


def test_sgd_reaches_the_batch_optimum():
    """SGD-L1 (cumulative penalty) ends near the OWL-QN optimum of the same objective."""
    from spargel.core.penalties import ElasticNet
    from spargel.solvers import get_solver
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=40, max_len=6, n_labels=3)
    space = random_space2(data, "full", 3, 6, 3, True)
    model = M.ChainCRF2(space, data)
    penalty = ElasticNet(0.5, 0.1)
    exact = get_solver("owlqn")(model, penalty, max_iter=500, tol=1e-10, gtol=1e-8)
    sgd = get_solver("sgd-l1")(model, penalty, max_iter=200, tol=0, random_state=0)
    assert sgd.objective == pytest.approx(exact.objective, rel=1e-4)
    assert sgd.objective >= exact.objective - 1e-6
