"""spargel.CRF as sklearn-crfsuite's CRF: constructor, parameter spellings, fitted
surface, feature values, the tagger, and the flat metrics."""

import itertools
import pickle

import numpy as np
import pytest

from spargel import CRF, metrics
from spargel.solvers import SOLVERS

X = [[{"w": "the", "n": 0.5}, {"w": "dog"}, {"w": "barks", "end": True}],
     [{"w": "a"}, {"w": "cat", "n": 2.0}],
     [{"w": "the"}, {"w": "cat"}, {"w": "sleeps", "end": True}],
     [{"w": "a"}, {"w": "dog"}, {"w": "sleeps", "end": True}]]
Y = [["D", "N", "V"], ["D", "N"], ["D", "N", "V"], ["D", "N", "V"]]
SK_PARAMS = ["algorithm", "min_freq", "all_possible_states", "all_possible_transitions", "c1", "c2",
             "max_iterations", "num_memories", "epsilon", "period", "delta", "linesearch", "max_linesearch",
             "calibration_eta", "calibration_rate", "calibration_samples", "calibration_candidates",
             "calibration_max_trials", "pa_type", "c", "error_sensitive", "averaging", "variance", "gamma",
             "verbose", "model_filename", "keep_tempfiles", "trainer_cls"]


def test_constructor_takes_sklearn_crfsuite_parameters_in_order():
    import inspect
    names = list(inspect.signature(CRF.__init__).parameters)[1:len(SK_PARAMS) + 1]
    assert names == SK_PARAMS
    crf = CRF("l2sgd")
    assert crf.algorithm == "l2sgd" and crf.get_params()["algorithm"] == "l2sgd"
    assert CRF().algorithm == "lbfgs"
    from sklearn.base import clone
    c = clone(CRF("lbfgs", c1=0.2, period=5, value_sep="="))
    assert (c.c1, c.period, c.value_sep) == (0.2, 5, "=")


@pytest.mark.parametrize("kwargs, match", [
    (dict(c1=0.1, l1=0.2), "c1=0.1 and l1=0.2"),
    (dict(c2=0.5, l2=3.0), "c2=0.5"),
    (dict(max_iter=5, max_iterations=10), "max_iterations=10 and max_iter=5"),
    (dict(epsilon=1e-3, gtol=1e-4), "epsilon"),
    (dict(delta=1e-3, tol=1e-4), "delta"),
    (dict(period=3, window=4), "period"),
    (dict(num_memories=3, solver_options={"memory": 4}), "num_memories"),
    (dict(algorithm="l2sgd", solver="bcd"), "two different trainers"),
    (dict(algorithm="l2sgd", c1=0.1), "c1=0.1 is a parameter of CRFsuite's 'lbfgs'"),
    (dict(pa_type=1), "not of algorithm='lbfgs'"),
    (dict(algorithm="crf"), "algorithm must be one of"),
    (dict(linesearch="Wolfe"), "linesearch must be one of"),
    (dict(trainer_cls=object), "trainer_cls"),
])
def test_conflicting_or_foreign_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CRF(**kwargs).fit(X, Y)


def test_same_setting_under_both_spellings_with_one_value_is_fine():
    a = CRF(c1=0.1, l1=0.1, max_iter=30, max_iterations=30).fit(X, Y)
    b = CRF(l1=0.1, max_iter=30).fit(X, Y)
    assert a.state_features_ == b.state_features_


def _weights(crf):
    return crf.state_features_, crf.transition_features_


def test_crfsuite_spellings_set_spargel_settings():
    # c2 is CRFsuite's coefficient of ||w||^2: spargel's l2 = 2 * c2
    assert _weights(CRF(c1=0.0, c2=0.25, solver="lbfgs", max_iterations=60).fit(X, Y)) == \
        _weights(CRF(l1=0.0, l2=0.5, solver="lbfgs", max_iter=60).fit(X, Y))
    assert _weights(CRF(epsilon=1e-2, delta=1e-3, period=3, num_memories=3, max_linesearch=7).fit(X, Y)) == \
        _weights(CRF(gtol=1e-2, tol=1e-3, window=3, solver_options={"memory": 3, "max_linesearch": 7}).fit(X, Y))
    sgd = CRF("l2sgd", c2=0.5, max_iterations=3, random_state=0)
    assert sgd._effective("solver") == "l2sgd" and sgd._effective("l1") == 0.0 and sgd._effective("l2") == 1.0
    sgd.fit(X, Y)
    assert sgd.history_ and len(sgd.history_) <= 3


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow"])
def test_trainers_spargel_lacks_are_named(algorithm):
    crf = CRF(algorithm)
    if algorithm in SOLVERS:
        crf.fit(X, Y)
        assert len(crf.predict(X)) == len(X)
    else:
        with pytest.raises(ValueError, match=f"algorithm='{algorithm}'.*not implemented"):
            crf.fit(X, Y)


def test_min_freq_keeps_the_features_seen_often_enough():
    # CRFsuite's rule: a state feature's frequency sums the attribute's values at the
    # tokens with that label; a transition's counts its occurrences
    from spargel.data.featuredicts import token_attributes
    freq = {}
    trans = {}
    for x, y in zip(X, Y):
        for tok, lab in zip(x, y):
            for name, v in token_attributes(tok, sep=":"):
                freq[(name, lab)] = freq.get((name, lab), 0.0) + v
        for a, b in zip(y, y[1:]):
            trans[(a, b)] = trans.get((a, b), 0) + 1
    crf = CRF(c1=0.0, c2=0.01, min_freq=2, max_iterations=100).fit(X, Y)
    assert set(crf.state_features_) == {k for k, f in freq.items() if f >= 2}
    assert set(crf.transition_features_) == {k for k, c in trans.items() if c >= 2}
    full = CRF(c1=0.0, c2=0.01, max_iterations=100).fit(X, Y)
    assert set(full.state_features_) == {k for k, f in freq.items() if f != 0}


def test_feature_values_as_python_crfsuite_reads_them():
    crf = CRF(c1=0.0, c2=0.1, max_iterations=50)
    Xb = [[{"w": "café".encode(), "x": {"y": "z"}, "tags": ["p", b"q"], "on": True, "off": False, "v": 2}]] * 2
    crf.fit(Xb + [[{"w": "b"}]], [["A"], ["A"], ["B"]])
    assert {"w:café", "x:y:z", "tags:p", "tags:q", "on", "v"} <= set(crf.attributes_)
    assert crf.predict_single([{"w": "café"}]) == crf.predict_single([{"w": "café".encode()}])
    with pytest.raises(ValueError, match="sequence 0, token 1: .*not UTF-8"):
        crf.predict([[{"w": "b"}, {"w": b"\xff"}]])
    old = CRF(value_sep="=", c1=0.0, c2=0.1, max_iterations=20).fit(X, Y)
    assert "w=the" in old.attributes_ and "w:the" not in old.attributes_


def test_score_counts_unknown_gold_labels_as_errors():
    crf = CRF(c1=0.0, c2=0.1, max_iterations=50).fit(X, Y)
    gold = [list(y) for y in Y]
    gold[1][0] = "UNSEEN"
    pred = crf.predict(X)
    flat = [(g, p) for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
    assert crf.score(X, gold) == pytest.approx(sum(g == p for g, p in flat) / len(flat))
    from sklearn.model_selection import cross_val_score
    Xs, Ys = X * 3, [list(y) for y in Y] * 3
    Ys[0][0] = "RARE"                          # a label only one fold has
    scores = cross_val_score(CRF(c1=0.0, c2=0.1, max_iterations=30), Xs, Ys, cv=3)
    assert np.all(np.isfinite(scores))


def test_fitted_surface_is_none_before_fit_and_filled_after(tmp_path):
    crf = CRF(c1=0.0, c2=0.1, max_iterations=60)
    for name in ("tagger_", "size_", "classes_", "num_attributes_", "attributes_", "state_features_",
                 "transition_features_", "training_log_"):
        assert getattr(crf, name) is None, name
    with pytest.raises(Exception):
        crf.predict(X)
    crf.fit(X, Y, X_dev=X[:2], y_dev=Y[:2])
    assert crf.num_attributes_ == len(crf.attributes_) > 0
    path = str(tmp_path / "m.crfsuite")
    crf.save(path, format="crfsuite")
    import os
    assert crf.size_ == os.path.getsize(path)
    assert crf.training_log_ is crf.history_ and "dev_accuracy" in crf.training_log_[-1]
    with pytest.raises(ValueError, match="X_dev and y_dev"):
        crf.fit(X, Y, X)
    with pytest.raises(ValueError, match="X_dev and y_dev"):
        crf.fit(X, Y, y_dev=Y)


def test_tagger_probability_and_marginals_match_enumeration():
    crf = CRF(c1=0.0, c2=0.1, max_iterations=80).fit(X, Y)
    tagger = crf.tagger_
    labels = tagger.labels()
    assert labels == list(crf.classes_)
    x = X[0]
    sf, tf = crf.state_features_, crf.transition_features_
    from spargel.data.featuredicts import token_attributes
    attrs = [token_attributes(tok, sep=":") for tok in x]

    def score(path):
        s = sum(v * sf.get((a, lab), 0.0) for t, lab in enumerate(path) for a, v in attrs[t])
        return s + sum(tf.get((a, b), 0.0) for a, b in zip(path, path[1:]))
    paths = list(itertools.product(labels, repeat=len(x)))
    z = sum(np.exp(score(p)) for p in paths)
    tagger.set(x)
    best = max(paths, key=score)
    assert tagger.tag() == list(best) == crf.predict_single(x)
    for p in paths[:10] + [best]:
        assert tagger.probability(list(p)) == pytest.approx(np.exp(score(p)) / z, rel=1e-10)
    for t in range(len(x)):
        for lab in labels:
            want = sum(np.exp(score(p)) for p in paths if p[t] == lab) / z
            assert tagger.marginal(lab, t) == pytest.approx(want, rel=1e-10, abs=1e-15)
    info = tagger.info()
    assert info.state_features == sf and info.transitions == tf
    assert int(info.header["num_attrs"]) == len(crf.attributes_)


def test_pickling_keeps_the_model_and_drops_the_tagger():
    crf = CRF("lbfgs", c1=0.0, c2=0.1, max_iterations=50).fit(X, Y)
    crf.tagger_.set(X[0])
    back = pickle.loads(pickle.dumps(crf))
    assert back.algorithm == "lbfgs" and back.predict(X) == crf.predict(X)
    assert back.tagger_.tag(X[1]) == crf.predict_single(X[1])


def test_flat_metrics_equal_scikit_learn_on_the_flattened_labels():
    from sklearn import metrics as skm
    gold = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
    pred = [["B-PER", "O", "O"], ["O", "B-LOC"]]
    g = [t for s in gold for t in s]
    p = [t for s in pred for t in s]
    assert metrics.flat_accuracy_score(gold, pred) == skm.accuracy_score(g, p)
    labels = ["B-PER", "I-PER", "B-LOC"]
    assert metrics.flat_f1_score(gold, pred, average="weighted", labels=labels) == \
        skm.f1_score(g, p, average="weighted", labels=labels)
    assert metrics.flat_precision_score(gold, pred, average="macro") == skm.precision_score(g, p, average="macro")
    assert metrics.flat_recall_score(gold, pred, average="micro") == skm.recall_score(g, p, average="micro")
    assert metrics.flat_classification_report(gold, pred, digits=3) == skm.classification_report(g, p, digits=3)
    assert metrics.sequence_accuracy_score(gold, pred) == 0.5
    assert metrics.sequence_accuracy_score([], []) == 0.0
    with pytest.raises(ValueError, match="sequence 1"):
        metrics.flat_accuracy_score(gold, [pred[0], ["O"]])
    from spargel import scorers
    crf = CRF(c1=0.0, c2=0.1, max_iterations=50).fit(X, Y)
    assert scorers.flat_accuracy(crf, X, Y) == metrics.flat_accuracy_score(Y, crf.predict(X))
    assert scorers.sequence_accuracy(crf, X, Y) == metrics.sequence_accuracy_score(Y, crf.predict(X))
