"""Pseudo regularisation path: exact l1_max, warm-started fits for decreasing l1."""

import numpy as np
import pytest

from spargel import CRF
from spargel.datasets import make_chain_data
from spargel.path import l1_max, path


@pytest.fixture(scope="module")
def chain():
    X, y, _ = make_chain_data(n_sequences=40, n_irrelevant=15, random_state=2)
    Xd, yd, _ = make_chain_data(n_sequences=20, n_irrelevant=15, random_state=3)
    return X, y, Xd, yd


@pytest.mark.parametrize("solver", ["bcd", "owlqn"])
def test_l1_max_is_the_zero_model_boundary(chain, solver):
    X, y, *_ = chain
    est = CRF(solver=solver, l2=0.1, max_iter=300)
    top = l1_max(est, X, y)
    assert top > 0
    at = CRF(solver=solver, l1=top, l2=0.1, max_iter=300).fit(X, y)
    assert at.n_active_features_ == 0
    below = CRF(solver=solver, l1=0.98 * top, l2=0.1, max_iter=300).fit(X, y)
    assert below.n_active_features_ > 0


def test_path_warm_starts_and_reports(chain):
    X, y, Xd, yd = chain
    est = CRF(solver="bcd", l2=0.1, max_iter=200, tol=1e-6, window=1)
    rows = path(est, X, y, n_l1=4, l1_min_ratio=0.01, X_dev=Xd, y_dev=yd)
    assert len(rows) == 4
    l1s = [r["l1"] for r in rows]
    assert l1s == sorted(l1s, reverse=True)
    assert rows[0]["active"] == 0                      # the first value is l1_max
    assert rows[-1]["active"] > rows[1]["active"] > 0
    for r in rows:
        assert {"objective", "active_unigram", "active_bigram", "active_transitions", "dev_accuracy",
                "n_iter", "fit_seconds"} <= set(r)
        assert r["active"] == r["active_unigram"] + r["active_bigram"] + r["active_transitions"]
    assert rows[-1]["dev_accuracy"] > 0.6
    # explicit values are sorted decreasing; another solver works the same way
    rows2 = path(CRF(solver="owlqn", l2=0.1, max_iter=200), X, y, l1_values=[0.5, 4.0])
    assert [r["l1"] for r in rows2] == [4.0, 0.5]
    with pytest.raises(ValueError):
        path(est, X, y, l1_values=[-1.0])


def test_crf_path_method(chain):
    X, y, Xd, yd = chain
    est = CRF(solver="owlqn", l2=0.1, max_iter=100)
    rows = est.path(X, y, l1_values=[8.0, 2.0], X_dev=Xd, y_dev=yd)
    assert [r["l1"] for r in rows] == [8.0, 2.0] and "dev_accuracy" in rows[1]
    assert not hasattr(est, "weights_")
