"""SGD-L1 (Tsuruoka et al. 2009): the cumulative rule against a hand-worked run of the
paper's Figure 2, lazy against eager penalties, seeds, partial_fit against fit."""

import numpy as np
import pytest

from spargel import CRF
from spargel.datasets import make_chain_data
from spargel.chain.crf import ChainCRF
from spargel.core.penalties import ElasticNet
from spargel.core import lazy_l1 as K
from spargel.solvers.sgd import minimize_sgd_l1

from crf_reference import random_data, random_space

EMPTY = np.zeros(0)


# --------------------------------------------------------------------------- Figure 2 by hand
# Two weights, eta * C / N = 0.125 per step (eta = 0.5, C / N = 0.25). Each step lists
# the weights its sample uses and the gradient step eta * dL/dw_i. Worked by hand with
# Figure 2 (u <- u + eta C / N; w_i <- w_i + step; APPLYPENALTY(i)); all numbers are
# multiples of 1/16, so floating point is exact.
#   step 1  u=0.125  w1: 0 + 1     -> max(0, 1 - (0.125 + 0))         = 0.875  q1 = -0.125
#                    w2: 0 - 0.25  -> min(0, -0.25 + (0.125 - 0))     = -0.125 q2 = +0.125
#   step 2  u=0.25   w1: 0.875-0.5 -> max(0, 0.375 - (0.25 - 0.125))  = 0.25   q1 = -0.25
#   step 3  u=0.375  w2: -0.125+0.0625 -> min(0, -0.0625 + (0.375 - 0.125)) = 0  q2 = 0.1875
#   step 4  u=0.5    w1: 0.25+0.5  -> max(0, 0.75 - (0.5 - 0.25))     = 0.5    q1 = -0.5
#   step 5  u=0.625  w1: 0.5-1     -> min(0, -0.5 + (0.625 + 0.5))    = 0      q1 = 0
#                    w2: 0-1       -> min(0, -1 + (0.625 - 0.1875))   = -0.5625 q2 = 0.625
FIG2_STEPS = [({0: 1.0, 1: -0.25}, {0: (0.875, -0.125), 1: (-0.125, 0.125)}),
              ({0: -0.5}, {0: (0.25, -0.25)}),
              ({1: 0.0625}, {1: (0.0, 0.1875)}),
              ({0: 0.5}, {0: (0.5, -0.5)}),
              ({0: -1.0, 1: -1.0}, {0: (0.0, 0.0), 1: (-0.5625, 0.625)})]


def test_cumulative_rule_matches_hand_worked_figure_2():
    # the kernel's rule, used as sgd_pass uses it: settle the sample's weights with the
    # penalty accrued so far, take the gradient step, advance u; the step's own penalty
    # is applied at the next settlement (here right away, to read the state of Figure 2)
    l1, eta, N = 0.25, 0.5, 1.0
    v, q = np.zeros(2), np.zeros(2)
    u = 0.0
    for steps, expected in FIG2_STEPS:
        for i in steps:
            K.penalise_block(v, q, EMPTY, l1, EMPTY, u, u, i, i + 1, K.CUMULATIVE)
        for i, s in steps.items():
            v[i] += s
        u += eta / N
        for i in steps:
            K.penalise_block(v, q, EMPTY, l1, EMPTY, u, u, i, i + 1, K.CUMULATIVE)
        for i, (w_i, q_i) in expected.items():
            assert v[i] == w_i and q[i] == q_i, (steps, i, v[i], q[i])
        # settling again at the same u changes nothing (settled weights stay put)
        v2, q2 = v.copy(), q.copy()
        for i in steps:
            K.penalise_block(v2, q2, EMPTY, l1, EMPTY, u, u, i, i + 1, K.CUMULATIVE)
        np.testing.assert_array_equal(v2, v)
        np.testing.assert_array_equal(q2, q)


def test_figure_2_literal_and_settled_runs_agree():
    # Figure 2 literally (penalty only at touch time) vs. settling every weight at every
    # step (the eager reading): same final state.
    l1 = 0.25
    lit_v, lit_q = np.zeros(2), np.zeros(2)
    eag_v, eag_q = np.zeros(2), np.zeros(2)
    u = 0.0
    for steps, _ in FIG2_STEPS:
        u += 0.5
        for i, s in steps.items():
            lit_v[i] += s
            K.penalise_block(lit_v, lit_q, EMPTY, l1, EMPTY, u, u, i, i + 1, K.CUMULATIVE)
            eag_v[i] += s
        K.penalise_block(eag_v, eag_q, EMPTY, l1, EMPTY, u, u, 0, 2, K.CUMULATIVE)
    np.testing.assert_array_equal(lit_v, eag_v)
    np.testing.assert_array_equal(lit_q, eag_q)
    np.testing.assert_array_equal(lit_v, [0.0, -0.5625])


# --------------------------------------------------------------------------- lazy == eager
def _eager_sgd(space, data, l1, l2, eta0, alpha, passes, variant, batch, w0=None):
    """Every weight penalised at every step; gradients from the batch model (ChainCRF).
    l2 shrinks the weights and the accumulated penalties u, q_i alike."""
    N = data.n_sequences
    n = space.n_params
    w, q = (np.zeros(n) if w0 is None else w0.copy()), np.zeros(n)
    u = 0.0
    k = 0
    models = [ChainCRF(space, data.subset([s])) for s in range(N)]
    for _ in range(passes):
        for start in range(0, N, batch):
            idx = range(start, min(start + batch, N))
            eta = eta0 * alpha ** (k / N)
            g = sum(models[s].loss_grad(w)[1] for s in idx)
            c = eta * len(idx) * l2 / N
            step = eta * len(idx) * l1 / N
            if variant == "naive":
                w = w * (1 - c) - eta * g - step * np.sign(w)
            else:
                w = w * (1 - c) - eta * g
                if variant == "clipping":
                    w = np.sign(w) * np.maximum(np.abs(w) - step, 0.0)
                else:
                    u, q = u * (1 - c) + step, q * (1 - c)
                    z = w.copy()
                    w = np.where(z > 0, np.maximum(0, z - (u + q)), np.where(z < 0, np.minimum(0, z + (u - q)), 0.0))
                    q += w - z
            k += len(idx)
    return w


@pytest.mark.parametrize("variant,kind,l2,batch", [
    ("cumulative", "observed", 0.0, 1), ("cumulative", "full", 0.5, 1), ("cumulative", "observed", 0.3, 3),
    ("clipping", "full", 0.0, 1), ("clipping", "observed", 0.5, 2), ("naive", "observed", 0.2, 1)])
def test_lazy_penalty_equals_eager(variant, kind, l2, batch):
    rng = np.random.default_rng(7)
    data = random_data(rng, n_seq=12, max_len=5, n_uni=8, n_big=3, n_labels=3)
    space = random_space(rng, data, kind, 3, 8, 3)
    model = ChainCRF(space, data)
    l1 = 0.8
    res = minimize_sgd_l1(model, ElasticNet(l1, l2), max_iter=3, penalty_update=variant, eta0=0.3,
                          alpha=0.8, batch_size=batch, shuffle=False)
    ref = _eager_sgd(space, data, l1, l2, 0.3, 0.8, 3, variant, batch)
    np.testing.assert_allclose(res.w, ref, rtol=1e-9, atol=1e-11)
    assert variant == "naive" or np.count_nonzero(ref == 0) > 0      # the penalty did zero some weights
    assert np.count_nonzero(res.w) == res.history[-1]["active"]



@pytest.mark.parametrize("variant,real_values", [("cumulative", True), ("clipping", True), ("cumulative", False)])
def test_padded_rows_with_labels_their_attribute_lacks_equal_eager(variant, real_values):
    """One sample per step, uniform l1, no l2: attributes with several labels live in
    padded rows during the pass, whose lanes for labels the attribute does not own take
    the gradient step and must be reset before the next read (NaN records); the pass
    reads the batch model's token lists, valued or all 1."""
    rng = np.random.default_rng(11)
    data = random_data(rng, n_seq=12, max_len=5, n_uni=30, n_big=2, n_labels=5, real_values=real_values)
    space = random_space(rng, data, "observed", 5, 30, 2)
    model = ChainCRF(space, data)
    assert model.view.aux.binary == (not real_values)          # the value-1 (binary) streams too
    sizes = np.diff(space.u_ptr)
    rows = np.zeros(len(sizes), bool)
    rows[model.view.d_attr] = True
    assert np.any(rows & (sizes < 5)) and np.any(~rows & (sizes > 0))   # partly owned rows, and flat blocks
    res = minimize_sgd_l1(model, ElasticNet(0.3), max_iter=3, penalty_update=variant, eta0=0.3, alpha=0.8,
                          batch_size=1, shuffle=False)
    ref = _eager_sgd(space, data, 0.3, 0.0, 0.3, 0.8, 3, variant, 1)
    np.testing.assert_allclose(res.w, ref, rtol=1e-9, atol=1e-11)

@pytest.mark.parametrize("batch,per_weight", [(1, False), (1, True), (2, False)])
def test_log_space_fallback_inside_the_pass_equals_eager(batch, per_weight):
    """Weights in the hundreds: the scaled recursion fails on some sequences. The common
    pass (one sequence per step) runs without the log-space fallback, stops at such a
    sequence and is resumed there by the variant that has it; mini-batch passes carry
    it from the start. Either way the run equals the eager reference, whose batch
    gradients have their own fallback."""
    from spargel.chain import crf_sgd
    from spargel.solvers.sgd import SGDOptions, _prm
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=12, max_len=6, n_uni=30, n_big=2, n_labels=4)
    space = random_space(rng, data, "observed", 4, 30, 2)
    model = ChainCRF(space, data)
    w0 = rng.normal(size=space.n_params) * 1000
    N = data.n_sequences
    # at w0 some sequences need log space (counted in st[5]) and some do not
    st = np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    prm = _prm(SGDOptions(batch_size=batch, alpha=0.8), 1e-3, N, 0.0, 0.3)
    assert model.sgd_pass(np.arange(N), w0.copy(), np.zeros(len(w0)), EMPTY, EMPTY, st, prm) == crf_sgd.DONE
    assert 0 < st[5] < N
    assert model.sample_loss(np.arange(N), w0) == pytest.approx(model.loss(w0), rel=1e-12)
    l1 = np.full(space.n_params, 0.3) if per_weight else 0.3     # per-weight l1: the general (flat) pass
    res = minimize_sgd_l1(model, ElasticNet(l1), w0=w0, max_iter=2, eta0=0.05, alpha=0.8, batch_size=batch,
                          shuffle=False)
    ref = _eager_sgd(space, data, 0.3, 0.0, 0.05, 0.8, 2, "cumulative", batch, w0=w0)
    np.testing.assert_allclose(res.w, ref, rtol=1e-9, atol=1e-9)


def test_per_weight_penalties_and_unpenalised_weights():
    rng = np.random.default_rng(3)
    data = random_data(rng, n_seq=10, max_len=4, n_uni=6, n_big=2, n_labels=3)
    space = random_space(rng, data, "observed", 3, 6, 2)
    model = ChainCRF(space, data)
    mask = np.ones(space.n_params)
    mask[: space.u_ptr[1]] = 0.0                    # attribute 0 unpenalised (like a bias)
    pen = ElasticNet(1.5 * mask, 0.4 * mask)
    res = minimize_sgd_l1(model, pen, max_iter=2, eta0=0.2, alpha=0.85, shuffle=False)
    # eager reference with per-weight l1 and a per-weight shrink (0 for the bias block)
    N, n = data.n_sequences, space.n_params
    w, q, u = np.zeros(n), np.zeros(n), np.zeros(n)
    for k in range(2 * N):
        s = k % N
        eta = 0.2 * 0.85 ** (k / N)
        g = ChainCRF(space, data.subset([s])).loss_grad(w)[1]
        c = eta * 0.4 * mask / N
        w = w * (1 - c) - eta * g
        u, q = u * (1 - c) + eta * 1.5 * mask / N, q * (1 - c)
        z = w.copy()
        w = np.where(z > 0, np.maximum(0, z - (u + q)), np.where(z < 0, np.minimum(0, z + (u - q)), 0.0))
        q += w - z
    np.testing.assert_allclose(res.w, w, rtol=1e-9, atol=1e-11)
    with pytest.raises(ValueError, match="one l2 value"):
        minimize_sgd_l1(model, ElasticNet(1.0, np.linspace(0.1, 1, space.n_params)), max_iter=1, eta0=0.1)


# --------------------------------------------------------------------------- estimator level
@pytest.fixture(scope="module")
def chain():
    X, y, relevant = make_chain_data(n_sequences=120, n_irrelevant=40, random_state=5)
    return X, y, relevant


def test_seed_reproducible_and_learns(chain):
    X, y, relevant = chain
    a = CRF(solver="sgd-l1", l1=2.0, max_iter=8, random_state=1).fit(X, y)
    b = CRF(solver="sgd-l1", l1=2.0, max_iter=8, random_state=1).fit(X, y)
    c = CRF(solver="sgd-l1", l1=2.0, max_iter=8, random_state=2).fit(X, y)
    assert a.state_features_ == b.state_features_ and a.transition_features_ == b.transition_features_
    assert a.state_features_ != c.state_features_
    assert a.score(X, y) > 0.8
    h = a.history_
    assert len(h) == 8 and [r["iteration"] for r in h] == list(range(1, 9))
    assert np.isnan(h[0]["objective"]) and h[0]["active"] > 0 and h[0]["eta0"] > 0   # eta0 calibrated
    assert np.isfinite(a.objective_)


def test_history_objective_and_variants_sparsity(chain):
    X, y, _ = chain
    fits = {v: CRF(solver="sgd-l1", l1=3.0, max_iter=6, random_state=0,
                   solver_options={"penalty_update": v, "eta0": 0.2, "compute_objective": True}).fit(X, y)
            for v in ("naive", "clipping", "cumulative")}
    for est in fits.values():
        objs = [r["objective"] for r in est.history_]
        assert all(np.isfinite(objs)) and objs[-1] < objs[0]
    assert fits["cumulative"].n_active_features_ < fits["naive"].n_active_features_


def test_partial_fit_chunks_equal_fit(chain):
    X, y, _ = chain
    N = len(X)
    opts = {"shuffle": False, "n_samples": N, "eta0": 0.2, "schedule": "inverse"}
    params = dict(solver="sgd-l1", l1=1.0, l2=0.1, feature_space="full", solver_options=opts)
    for passes in (1, 2):
        full = CRF(max_iter=passes, **params).fit(X, y)
        part = CRF(**params)
        for _ in range(passes):
            for lo in range(0, N, 25):
                part.partial_fit(X[lo:lo + 25], y[lo:lo + 25])
        assert part.n_iter_ == passes * len(range(0, N, 25))
        for attr in ("state_features_", "transition_features_"):
            a, b = getattr(full, attr), getattr(part, attr)
            assert a.keys() == b.keys()
            np.testing.assert_allclose([b[k] for k in a], [a[k] for k in a], rtol=1e-9, atol=1e-12)


def test_partial_fit_grows_layout_and_warm_starts(chain, tmp_path):
    X, y, _ = chain
    est = CRF(solver="sgd-l1", l1=0.5, solver_options={"eta0": 0.1}, random_state=0)
    est.partial_fit(X[:2], y[:2])
    n_attr, n_params = len(est._stream_state.uni), est._stream_state.space.n_params
    est.partial_fit(X[2:60], y[2:60])
    assert len(est._stream_state.uni) > n_attr and est._stream_state.space.n_params > n_params
    assert est.score(X, y) > 0.5
    path = tmp_path / "m.spargel"
    est.save(path)
    loaded = CRF.load(path)
    before = loaded.state_features_
    loaded.set_params(solver_options={"eta0": 1e-12})
    loaded.partial_fit(X[60:], y[60:])
    after = loaded.state_features_
    common = set(before) & set(after)
    assert len(common) >= 0.9 * len(before)
    assert max(abs(before[k] - after[k]) for k in common) < 1e-6      # continued from the saved weights


def test_streaming_from_file(tmp_path):
    from spargel.streaming import train_streaming
    rng = np.random.default_rng(0)
    words = ["the", "a", "dog", "cat", "runs", "sees"]
    tags = {"the": "DT", "a": "DT", "dog": "NN", "cat": "NN", "runs": "VB", "sees": "VB"}
    lines = []
    for _ in range(60):
        sent = [words[i] for i in rng.integers(0, 6, size=int(rng.integers(2, 6)))]
        lines += [f"{w} {tags[w]}" for w in sent] + [""]
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines))
    crf = train_streaming(path, "U00:%x[0,0]\nB\n", chunk_sentences=7, passes=3, l1=0.1, random_state=0)
    assert crf.solver_options["n_samples"] == 60
    assert crf.score([[["dog"], ["runs"]]], [["NN", "VB"]]) == 1.0


def test_options_are_checked(chain):
    X, y, _ = chain
    with pytest.raises(ValueError, match="penalty_update"):
        CRF(solver="sgd-l1", solver_options={"penalty_update": "lazy"}).fit(X, y)
    with pytest.raises(TypeError, match="unknown option"):
        CRF(solver="sgd-l1", solver_options={"eta": 0.1}).fit(X, y)
    with pytest.raises(ValueError, match="shrink"):
        CRF(solver="sgd-l1", l2=1e4, solver_options={"eta0": 1.0}).fit(X, y)


def test_loglinear_classifier_uses_the_same_solver():
    from sklearn.datasets import make_classification
    from spargel import LogLinearClassifier
    Xd, yd = make_classification(n_samples=200, n_features=10, n_informative=4, random_state=0)
    y = yd.astype(str)
    sgd = LogLinearClassifier(solver="sgd-l1", l1=0.5, max_iter=30, random_state=0).fit(Xd, y)
    ref = LogLinearClassifier(l1=0.5).fit(Xd, y)                       # OWL-QN to convergence
    assert ref.objective_ <= sgd.objective_ < ref.objective_ * 1.005
    assert abs(sgd.score(Xd, y) - ref.score(Xd, y)) <= 0.03


def test_partial_labels_and_weights_in_sgd_match_the_batch_model():
    """SGD's per-sample losses and steps use the same objective as the batch model:
    its summed sample loss equals the batch loss, and lazy SGD equals the eager
    reference built from batch gradients of one sequence at a time."""
    rng = np.random.default_rng(4)
    data = random_data(rng, n_seq=10, max_len=5, n_uni=8, n_big=3, n_labels=3)
    data.labels = np.where(rng.random(data.n_tokens) < 0.3, -1, data.labels).astype(np.int32)
    space = random_space(rng, data, "full", 3, 8, 3)
    sw = rng.uniform(0.5, 2.0, size=data.n_sequences)
    model = ChainCRF(space, data, sample_weight=sw)
    w = rng.normal(size=space.n_params)
    assert model.sample_loss(np.arange(data.n_sequences), w) == pytest.approx(model.loss(w), rel=1e-12)
    res = minimize_sgd_l1(model, ElasticNet(0.5, 0.0), max_iter=2, eta0=0.2, alpha=0.85, shuffle=False)
    N, n = data.n_sequences, space.n_params
    v, q, u = np.zeros(n), np.zeros(n), 0.0
    for k in range(2 * N):
        s = k % N
        eta = 0.2 * 0.85 ** (k / N)
        g = ChainCRF(space, data.subset([s]), sample_weight=sw[[s]]).loss_grad(v)[1]
        v = v - eta * g
        u += eta * 0.5 / N
        z = v.copy()
        v = np.where(z > 0, np.maximum(0, z - (u + q)), np.where(z < 0, np.minimum(0, z + (u - q)), 0.0))
        q += v - z
    np.testing.assert_allclose(res.w, v, rtol=1e-9, atol=1e-11)


def _dense_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 20))
    W = rng.normal(size=(20, 3)) * (rng.random((20, 3)) < 0.4)
    y = np.argmax(X @ W + rng.gumbel(size=(300, 3)), axis=1)
    return X, y


def test_default_decay_reaches_the_owlqn_objective_given_enough_passes():
    """The default rate decay is spread over max_iter passes (the default tol does not cut
    it short): 300 passes end within 1e-3 (relative) of OWL-QN's optimum on a 300-sample
    dense log-linear problem, and more passes get closer."""
    from spargel import LogLinearClassifier

    X, y = _dense_problem()
    best = LogLinearClassifier(l1=1.0, max_iter=5000, tol=1e-12, gtol=1e-10).fit(X, y).history_[-1]["objective"]
    gaps = []
    for passes in (30, 300):
        m = LogLinearClassifier(l1=1.0, solver="sgd-l1", max_iter=passes, random_state=0,
                                solver_options={"compute_objective": True}).fit(X, y)
        assert len(m.history_) == passes
        assert not any(r["rate_frozen"] for r in m.history_)
        gaps.append((m.history_[-1]["objective"] - best) / abs(best))
    assert gaps[1] < 1e-3 and gaps[1] < gaps[0]


def test_fixed_alpha_freezes_and_the_history_says_so():
    """With the paper's fixed alpha = 0.85 the rate fades geometrically: after some hundred
    passes it no longer moves the weights, short of the optimum, and the history flags it."""
    from spargel import LogLinearClassifier

    X, y = _dense_problem()
    m = LogLinearClassifier(l1=1.0, solver="sgd-l1", max_iter=200, tol=0.0, random_state=0,
                            solver_options={"alpha": 0.85}).fit(X, y)
    frozen = [r["rate_frozen"] for r in m.history_]
    assert not frozen[0] and frozen[-1]
    assert m.history_[-1]["eta"] < 1e-12 * m.history_[-1]["eta0"]
