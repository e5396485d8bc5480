"""Parameter checks and warnings of the penalised estimators: clear errors before any
work (never a numpy error from inside a solver), warnings instead of useless models."""

import numpy as np
import pytest

from spargel import CRF, ConvergenceWarning, LatentLogLinearClassifier, LogLinearClassifier, SparseGaussianMRF
from spargel.errors import ParameterError, SpargelError
from spargel.datasets import make_chain_data


@pytest.fixture(scope="module")
def chain():
    X, y, _ = make_chain_data(n_sequences=30, random_state=0)
    return X, y


@pytest.mark.parametrize("params,err,match", [
    ({"window": 0}, ValueError, "window"),
    ({"window": -3}, ValueError, "window"),
    ({"window": 2.5}, TypeError, "window"),
    ({"tol": float("nan")}, ValueError, "tol"),
    ({"gtol": float("nan")}, ValueError, "gtol"),
    ({"tol": -1.0}, ValueError, "tol"),
    ({"l1": "1"}, TypeError, "l1"),
    ({"l2": -0.5}, ValueError, "l2"),
    ({"l1": float("inf")}, ValueError, "l1"),
    ({"max_iter": -1}, ValueError, "max_iter"),
    ({"max_iter": 2.5}, TypeError, "max_iter"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
    ({"n_jobs": "2"}, ValueError, "n_jobs"),
    ({"solver": "newton"}, ValueError, "unknown solver"),
    ({"solver": "lbfgs", "l1": 1.0}, ValueError, "lbfgs"),
    ({"solver_options": "fast"}, TypeError, "solver_options"),
    ({"feature_space": "all"}, ValueError, "feature_space"),
])
def test_bad_parameters_fail_before_training(chain, params, err, match):
    X, y = chain
    with pytest.raises(err, match=match) as crf_info:
        CRF(**params).fit(X, y)
    with pytest.raises(err, match=match) as flat_info:
        LogLinearClassifier(**params).fit([x[0] for x in X], [s[0] for s in y])
    for info in (crf_info, flat_info):         # one error type, catchable as either built-in
        assert isinstance(info.value, ParameterError) and isinstance(info.value, SpargelError)
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("make, match", [
    (lambda: LatentLogLinearClassifier(n_components=0), "n_components"),
    (lambda: LatentLogLinearClassifier(tol=float("nan")), "tol"),
    (lambda: LatentLogLinearClassifier(solver="em", l2=1.0), "solver='em'"),
    (lambda: SparseGaussianMRF(alpha=-1.0), "alpha"),
    (lambda: SparseGaussianMRF(alpha="0.1"), "alpha"),
    (lambda: SparseGaussianMRF(mode="newton"), "mode"),
    (lambda: SparseGaussianMRF(alpha=0.1, tol=-1.0), "tol"),
    (lambda: SparseGaussianMRF(alpha=0.1, solver="admm"), "solver"),
])
def test_other_families_raise_parameter_errors(make, match):
    import spargel
    assert spargel.ParameterError is ParameterError and issubclass(ParameterError, SpargelError)
    X = np.random.default_rng(0).normal(size=(40, 4))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ParameterError, match=match):
        make().fit(X, y)


def test_huge_attribute_values_warn_instead_of_a_silent_useless_model(chain):
    X, y = chain
    big = [[{a: 1e9 for a in tok} for tok in seq] for seq in X]
    with pytest.warns(UserWarning, match="attribute values as large as 1e\\+09"):
        with pytest.warns(ConvergenceWarning, match="no decrease"):
            CRF(l1=0.1).fit(big, y)


def test_max_iter_stop_warns(chain):
    X, y = chain
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        CRF(max_iter=3).fit(X, y)
