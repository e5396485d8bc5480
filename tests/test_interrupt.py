"""Ctrl-C in Python: an interrupted ``fit`` keeps the state reached (fitted attributes
usable, ``stop_reason_ == "interrupted"``) and then raises ``KeyboardInterrupt``, so a
loop of fits stops and a script exits as Ctrl-C asks. (The command line's behaviour --
write the model reached, say so, exit 130 -- is tested in test_reliability_faults.py
and test_cli.py.)"""

import os
import signal

import numpy as np
import pytest

from reliability_helpers import corpus, python_sigint_handler
from spargel.errors import ConvergenceWarning
from spargel.chain.estimator import CRF
from spargel.loglinear.estimator import LogLinearClassifier
from spargel.mrf.estimator import PairwiseMRF


def _sentences():
    sents = corpus(40, seed=3)
    X = [[[w, p] for w, p, _ in s] for s in sents]
    y = [[c for _, _, c in s] for s in sents]
    return X, y


def test_crf_fit_interrupted_by_a_callback_keeps_the_state_and_raises():
    X, y = _sentences()
    seen = []

    def callback(row):
        seen.append(row["iteration"])
        if row["iteration"] == 3:
            raise KeyboardInterrupt

    crf = CRF(l1=0.1, max_iter=50, tol=0, gtol=0)
    with pytest.raises(KeyboardInterrupt):
        crf.fit(X, y, callback=callback)
    assert crf.stop_reason_ == "interrupted"
    assert seen == [1, 2, 3] and crf.n_iter_ in (2, 3)
    pred = crf.predict(X[:3])                          # the fitted attributes are usable
    assert [len(p) for p in pred] == [len(x) for x in X[:3]]
    assert crf.n_active_features_ > 0
    # a loop of fits stops at the interrupted one
    fits = 0
    with pytest.raises(KeyboardInterrupt):
        for _ in range(3):
            seen.clear()
            CRF(l1=0.1, max_iter=50, tol=0, gtol=0).fit(X, y, callback=callback)
            fits += 1
    assert fits == 0
    # an uninterrupted fit after that is not affected
    with pytest.warns(ConvergenceWarning):
        again = CRF(l1=0.1, max_iter=5, tol=0, gtol=0).fit(X, y)
    assert again.stop_reason_ == "max_iter"


def test_crf_fit_interrupted_by_sigint_to_itself():
    """The real thing: SIGINT delivered to the process during the fit (Python's default
    handler turns it into KeyboardInterrupt wherever the interpreter is)."""
    X, y = _sentences()
    sent = []

    def callback(row):
        if row["iteration"] == 2 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    crf = CRF(l1=0.1, max_iter=50, tol=0, gtol=0)
    with python_sigint_handler(), pytest.raises(KeyboardInterrupt):
        crf.fit(X, y, callback=callback)
    assert sent and crf.stop_reason_ == "interrupted"
    assert len(crf.predict(X[:1])[0]) == len(X[0])


def test_loglinear_fit_interrupted_keeps_the_weights_and_raises(monkeypatch):
    from spargel.loglinear import model as ll

    rng = np.random.default_rng(0)
    Xn = rng.normal(size=(200, 5))
    yn = (Xn[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    real = ll.FlatLogLinear.loss_grad
    calls = {"n": 0}

    def interrupted(self, w):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(self, w)

    monkeypatch.setattr(ll.FlatLogLinear, "loss_grad", interrupted)
    clf = LogLinearClassifier(l1=0.01, max_iter=100, tol=0, gtol=0)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(Xn, yn)
    assert clf.stop_reason_ == "interrupted" and clf.n_iter_ >= 1
    assert clf.predict(Xn[:4]).shape == (4,)


def test_mrf_fit_interrupted_keeps_the_model_and_raises(monkeypatch):
    from spargel.mrf import model as mrf_model

    rng = np.random.default_rng(1)
    X = (rng.random((300, 4)) < 0.5).astype(int)
    X[:, 1] = X[:, 0] ^ (rng.random(300) < 0.1)
    real = mrf_model.PairwiseMRFModel.loss_grad
    calls = {"n": 0}

    def interrupted(self, w):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(self, w)

    monkeypatch.setattr(mrf_model.PairwiseMRFModel, "loss_grad", interrupted)
    mrf = PairwiseMRF(l1=0.01, inference="exact", max_iter=100, tol=0)
    with pytest.raises(KeyboardInterrupt):
        mrf.fit(X)
    assert mrf.stop_reason_ == "interrupted"
    assert np.isfinite(mrf.objective_) and len(mrf.edges_) >= 0
