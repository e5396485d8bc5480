"""The CRF estimator: scikit-learn conventions, solvers' optimality, model files."""

import numpy as np
import pytest

from spargel import CRF
from spargel.datasets import make_chain_data
from spargel.core.model_file import ModelFileError
from spargel.chain.crf import ChainCRF
from spargel.data.feature_space import FeatureSpace
from spargel.core.penalties import ElasticNet
from spargel.solvers.owlqn import minimize_owlqn

from crf_reference import random_data


@pytest.fixture(scope="module")
def chain():
    X, y, relevant = make_chain_data(n_sequences=150, n_irrelevant=60, random_state=3)
    Xt, yt, _ = make_chain_data(n_sequences=80, n_irrelevant=60, random_state=4)
    return X, y, Xt, yt, relevant


@pytest.fixture(scope="module")
def fitted(chain):
    X, y, *_ = chain
    return CRF(l1=4.0, max_iter=200).fit(X, y)


def test_learns_the_chain_and_selects_relevant_features(chain, fitted):
    X, y, Xt, yt, relevant = chain
    assert fitted.score(Xt, yt) > 0.8
    used = {a for a, _ in fitted.state_features_}
    assert set(relevant) <= used
    noise = [a for a in used if a.startswith("n")]
    assert len(noise) <= 5
    assert fitted.history_ and {"iteration", "objective", "loss", "penalty", "active", "n_evals",
                                "elapsed"} <= set(fitted.history_[0])
    assert fitted.stop_reason_ in ("tol", "gtol")
    assert fitted.n_active_features_ == len(fitted.state_features_) + len(fitted.transition_features_)


def test_sklearn_conventions():
    from sklearn.base import clone
    crf = CRF(l1=0.3, feature_space="full", n_jobs=2)
    assert repr(crf) == "CRF(l1=0.3, feature_space='full', n_jobs=2)"
    params = crf.get_params()
    assert params["l1"] == 0.3 and params["solver"] == "owlqn"
    c2 = clone(crf)
    assert c2.get_params() == params and c2 is not crf
    crf.set_params(l2=2.0)
    assert crf.l2 == 2.0
    with pytest.raises(ValueError, match="invalid parameter"):
        crf.set_params(C1=1.0)


    # no work or validation in __init__
    bad = CRF(feature_space="nonsense")
    with pytest.raises(ValueError, match="feature_space"):
        bad.fit([[["a"]]], [["x"]])
    with pytest.raises(ValueError, match="not fitted"):
        CRF().predict([[["a"]]])


def test_owlqn_reaches_l1_optimality():
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=30, max_len=6, n_labels=3)
    for kind in ("full", "observed"):
        space = FeatureSpace.full(3, 6, 3) if kind == "full" else FeatureSpace.observed(data, 3, 6, 3)
        model = ChainCRF(space, data)
        pen = ElasticNet(l1=0.7, l2=0.1)
        res = minimize_owlqn(model, pen, max_iter=2000, tol=0, gtol=1e-9)
        _, g = model.loss_grad(res.w)
        assert pen.optimality_violation(res.w, g) < 1e-4
        assert 0 < np.count_nonzero(res.w) < len(res.w)      # l1 made it sparse


def test_owlqn_converges_below_the_objectives_rounding():
    """Past a pseudo-gradient of ~1e-6 the decrease Armijo asks for is below the rounding
    of the objective; the approximate Wolfe test on gradients carries OWL-QN on to 1e-10,
    so fits whose sums round differently (4 and 5 chunks) end within 1e-8 of each other."""
    rng = np.random.default_rng(3)
    data = random_data(rng, n_seq=120, max_len=8, n_labels=3)
    space = FeatureSpace.observed(data, 3, 6, 3)
    pen = ElasticNet(l1=0.5, l2=0.01)
    fits = []
    for n_jobs in (1, 5):
        res = minimize_owlqn(ChainCRF(space, data, n_jobs=n_jobs), pen, max_iter=1000, tol=0, gtol=1e-10)
        assert res.stop_reason == "gtol"
        fits.append(res.w)
    assert 0 < np.count_nonzero(fits[0]) < len(fits[0])
    assert np.max(np.abs(fits[0] - fits[1])) <= 1e-8


def test_lbfgs_reaches_a_stationary_point():
    rng = np.random.default_rng(1)
    data = random_data(rng, n_seq=30, max_len=6, n_labels=3)
    model = ChainCRF(FeatureSpace.full(3, 6, 3), data)
    res = minimize_owlqn(model, ElasticNet(0.0, 1.0), max_iter=2000, tol=0, gtol=1e-9)
    _, g = model.loss_grad(res.w)
    assert np.abs(g + res.w).max() < 1e-5


def test_warm_start_continues_from_previous_weights(chain):
    X, y, *_ = chain
    crf = CRF(l1=4.0, max_iter=300, warm_start=True).fit(X, y)
    first = crf.n_iter_
    crf.fit(X, y)
    assert crf.n_iter_ < max(first // 3, 12)


def test_predict_variants_agree(chain, fitted):
    _, _, Xt, _, _ = chain
    pred = fitted.predict(Xt[:10])
    best = fitted.predict_nbest(Xt[:10], k=3)
    for p, lst in zip(pred, best):
        assert lst[0][0] == p
        probs = [q for _, q in lst]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-12
    marg = fitted.predict_marginals(Xt[:10])
    for seq in marg:
        for tok in seq:
            assert sum(tok.values()) == pytest.approx(1.0)
    # constrained decoding obeys the constraints
    cons = [[fitted.classes_[0]] + [None] * (len(s) - 1) for s in Xt[:10]]
    for seq in fitted.predict(Xt[:10], constraints=cons):
        assert seq[0] == fitted.classes_[0]


def test_save_load_round_trip(tmp_path, chain, fitted):
    _, _, Xt, _, _ = chain
    path = tmp_path / "m.spargel"
    fitted.save(path)
    again = CRF.load(path)
    assert again.predict(Xt) == fitted.predict(Xt)
    assert again.state_features_ == fitted.state_features_
    assert np.count_nonzero(again.weights_) == len(again.weights_)     # zero weights compacted away
    assert again.get_params()["l1"] == 4.0


def test_template_input(tmp_path):
    tpl = "# words and a bigram\nU00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\n*02:%X[0,1]\nB\n"
    X = [[["The", "a"], ["dog", "b"], ["runs", "c"]], [["A", "a"], ["cat", "b"]]] * 5
    y = [["D", "N", "V"], ["D", "N"]] * 5
    crf = CRF(template=tpl, l1=0.05, feature_space="full").fit(X, y)
    assert crf.predict(X[:2]) == y[:2]
    assert crf.bigram_features_                    # the * pattern produced bigram weights
    crf.save(tmp_path / "t.model")
    again = CRF.load(tmp_path / "t.model")
    assert again.template == tpl and again.predict(X[:2]) == y[:2]


# -- bad input ---------------------------------------------------------------------------------
def test_empty_sequence_is_an_error():
    with pytest.raises(ValueError, match="sequence 1 is empty"):
        CRF().fit([[["a"]], []], [["x"], []])


def test_unknown_label_at_score_time_counts_as_an_error(fitted, chain):
    _, _, Xt, yt, _ = chain
    bad = [list(s) for s in yt[:3]]
    bad[2][0] = "NOPE"
    pred = fitted.predict(Xt[:3])
    flat_gold = [g for s in bad for g in s]
    flat_pred = [p for s in pred for p in s]
    expected = np.mean([g == p for g, p in zip(flat_gold, flat_pred)])
    assert fitted.score(Xt[:3], bad) == pytest.approx(expected)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_feature_values(value):
    X = [[{"a": 1.0}, {"a": value}]]
    with pytest.raises(ValueError, match="token 1.*not allowed"):
        CRF().fit(X, [["x", "y"]])


def test_mismatched_lengths():
    with pytest.raises(ValueError, match="sequence 0 has 2 tokens but 1 labels"):
        CRF().fit([[["a"], ["b"]]], [["x"]])


def test_malformed_template():
    from spargel import DataFormatError
    with pytest.raises(DataFormatError, match="<template>:2: missing"):
        CRF(template="U00:%x[0,0]\nU01:%x[0,\n").fit([[["a"]]], [["x"]])


def test_truncated_tampered_and_foreign_model_files(tmp_path, fitted):
    path = tmp_path / "m.spargel"
    fitted.save(path)
    raw = path.read_bytes()
    (tmp_path / "trunc").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError, match="trunc"):
        CRF.load(tmp_path / "trunc")
    (tmp_path / "foreign").write_bytes(b"\x00CRFSUITE model\n" + bytes(100))
    with pytest.raises(ModelFileError, match="not a spargel model"):
        CRF.load(tmp_path / "foreign")
    # an array replaced by a different one of the same shape: checksum catches it
    import zipfile
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    coef = bytearray(members["coef.npy"])
    coef[-1] ^= 0xFF
    members["coef.npy"] = bytes(coef)
    with zipfile.ZipFile(tmp_path / "tampered", "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(ModelFileError, match="checksum"):
        CRF.load(tmp_path / "tampered")
    with pytest.raises(ModelFileError, match="no such file"):
        CRF.load(tmp_path / "missing")
    from spargel import LogLinearClassifier
    with pytest.raises(ModelFileError, match="not a 'loglinear' model"):
        LogLinearClassifier.load(path)


def test_dev_set_with_labels_unseen_in_training(chain):
    X, y, Xt, yt, _ = chain
    y_dev = [list(s) for s in yt[:20]]
    y_dev[0][0] = "NEVER-SEEN"
    crf = CRF(l1=4.0, max_iter=5).fit(X, y, X_dev=Xt[:20], y_dev=y_dev)
    assert all(0 < row["dev_accuracy"] < 1 for row in crf.history_)


def test_sklearn_crfsuite_parameter_names_and_helpers():
    X, y, _ = make_chain_data(n_sequences=40, random_state=2)
    ours = CRF(l1=0.3, l2=0.2, max_iter=40).fit(X, y)
    theirs = CRF(c1=0.3, c2=0.1, max_iterations=40).fit(X, y)      # l2 = 2 * c2
    np.testing.assert_array_equal(ours.weights_, theirs.weights_)
    assert theirs.predict_single(X[0]) == theirs.predict(X[:1])[0]
    assert theirs.predict_marginals_single(X[0]) == theirs.predict_marginals(X[:1])[0]
    assert set(theirs.attributes_) == {a for a, _ in theirs.state_features_}
    assert theirs.training_log_ is theirs.history_
    full = CRF(c1=0.0, c2=0.5, max_iterations=5, all_possible_transitions=True,
               all_possible_states=True).fit(X, y)
    L = len(full.classes_)
    assert full.space_.n_params >= 0 and len(full.transition_features_) == L * L
    from sklearn.base import clone
    assert clone(theirs).get_params()["c1"] == 0.3


def test_partial_labels_and_sample_weights():
    X, y, _ = make_chain_data(n_sequences=60, random_state=4)
    rng = np.random.default_rng(0)
    hidden = [[None if rng.random() < 0.4 else lab for lab in seq] for seq in y]
    crf = CRF(l1=0.5).fit(X, hidden)
    assert crf.score(X, y) > 0.8 and set(crf.classes_) == {lab for s in y for lab in s}
    assert np.isfinite(crf.objective_)
    # integer weights = duplicated sequences
    w = rng.integers(1, 4, size=len(X))
    a = CRF(l1=0.5, tol=1e-9).fit(X, y, sample_weight=w)
    b = CRF(l1=0.5, tol=1e-9).fit([x for x, k in zip(X, w) for _ in range(k)],
                                  [s for s, k in zip(y, w) for _ in range(k)])
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-6)
    with pytest.raises(ValueError, match="sample_weight"):
        CRF().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="bcd"):
        CRF(solver="bcd").fit(X, hidden)


def test_compaction_with_attributes_that_have_no_weights():
    """Rows without any weight (attributes seen only at unknown labels), also at the end
    of the table, compact without error and keep every other row's weights."""
    import numpy as np

    from spargel.data.feature_space import _compact_csr

    ptr = np.array([0, 2, 2, 3, 3])
    vals = np.array([5, 6, 7])
    new_ptr, new_vals, attrs = _compact_csr(ptr, vals, np.array([True, False, True]))
    assert new_ptr.tolist() == [0, 1, 2] and new_vals.tolist() == [5, 7] and attrs.tolist() == [0, 2]

    from spargel import CRF
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "a"}, {"w": "zz"}], [{"w": "b"}, {"w": "a"}]]
    y = [["A", "B"], ["A", None], ["B", "A"]]          # "zz" occurs only where the label is unknown
    crf = CRF(l1=0.01).fit(X, y)
    assert crf.predict([[{"w": "a"}, {"w": "b"}]]) == [["A", "B"]]
