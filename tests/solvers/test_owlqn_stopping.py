"""OWL-QN / L-BFGS stopping rules: the relative-change rule over a window (CRFsuite's
``delta`` / ``period``) on known objective sequences, the stop reason in the history,
and the estimator's default rule (the solver's ``tol`` when ``tol`` is None)."""

import numpy as np
import pytest

from spargel import CRF
from spargel.core.penalties import ElasticNet
from spargel.datasets import make_chain_data
from spargel.solvers import default_tol
from spargel.solvers.owlqn import minimize_owlqn, stop_test

from toy_model import make_least_squares


def first_stop(objectives, tol, window, pg_norms=None, gtol=0.0):
    """Feed the sequence to the rule one iterate at a time: (iteration, reason)."""
    for k in range(1, len(objectives)):
        pg = 1.0 if pg_norms is None else pg_norms[k]
        reason = stop_test(objectives[:k + 1], pg, 0.0, tol, gtol, window)
        if reason is not None:
            return k, reason
    return None, None


def test_relative_change_over_the_window_on_a_known_sequence():
    # window 2, tol 1%: (F[k-2] - F[k]) / F[k] is 0.176 at k=2, 0.065 at k=3, 0.0071 at k=4
    F = [10.0, 9.0, 8.5, 8.45, 8.44, 8.43]
    assert first_stop(F, 0.01, 2) == (4, "tol")
    # a tighter tol waits for a smaller change: 0.0071 at k=4, (8.45-8.43)/8.43 = 0.0024 at k=5
    assert first_stop(F, 0.005, 2) == (5, "tol")
    # never before `window` iterations are done, however flat the start
    assert first_stop([5.0, 5.0, 5.0, 5.0], 0.1, 3) == (3, "tol")
    # tol = 0 switches the rule off, even on a constant sequence
    assert first_stop([5.0] * 20, 0.0, 2) == (None, None)


def test_relative_change_is_measured_against_max_of_the_objective_and_one():
    # a drop of 8e-4 at F = 0.5: 1.6e-3 of F, but 8e-4 of max(|F|, 1)
    assert first_stop([0.5008, 0.5], 1e-3, 1) == (1, "tol")
    assert first_stop([1000.8, 1000.0], 1e-3, 1) == (1, "tol")
    assert first_stop([1001.2, 1000.0], 1e-3, 1) == (None, None)


def test_an_objective_that_rises_over_the_window_stops():
    # a negative change is below any tol > 0 (libLBFGS takes |rate|, the same for a rise)
    assert first_stop([10.0, 10.5, 11.0], 1e-6, 1) == (1, "tol")


def test_gradient_test_and_its_order():
    F = [10.0, 9.0, 8.99]
    # the gradient test alone (the change 0.1% is above tol = 1e-4)
    assert first_stop(F, 1e-4, 1, pg_norms=[1.0, 1e-9, 1e-9], gtol=1e-6) == (1, "gtol")
    assert first_stop(F, 1e-4, 1, pg_norms=[1.0, 1.0, 1.0], gtol=1e-6) == (None, None)
    # both hold at iterate 2: the relative-change rule is named (the grafting solvers' order)
    assert first_stop(F, 0.01, 1, pg_norms=[1.0, 1.0, 1e-9], gtol=1e-6) == (2, "tol")


def relative_changes(rows, window):
    F = [r["objective"] for r in rows]
    return [(F[k - window] - F[k]) / max(abs(F[k]), 1.0) for k in range(window, len(F))]


@pytest.mark.parametrize("tol, window", [(1e-3, 1), (1e-4, 3), (1e-6, 5)])
def test_solver_stops_at_the_first_iterate_that_meets_the_rule(tol, window):
    model = make_least_squares(n=60, d=30, seed=2)
    res = minimize_owlqn(model, ElasticNet(0.5, 0.0), max_iter=500, tol=tol, gtol=0.0, window=window)
    assert res.stop_reason == "tol"
    rows = res.history
    assert len(rows) == res.n_iter and rows[-1]["iteration"] == res.n_iter
    # the history starts after the first step: prepend the objective at w0 = 0
    F0 = model.loss(np.zeros(model.n_params))
    full = [{"objective": F0}] + rows
    changes = relative_changes(full, window)
    assert changes[-1] < tol and all(c >= tol for c in changes[:-1])
    assert rows[-1]["stop"] == "tol" and all("stop" not in r for r in rows[:-1])


def test_history_names_every_stop():
    model = make_least_squares(n=60, d=30, seed=2)
    pen = ElasticNet(0.5, 0.0)
    res = minimize_owlqn(model, pen, max_iter=3, tol=0.0, gtol=0.0)
    assert res.stop_reason == "max_iter" and res.history[-1]["stop"] == "max_iter" and res.n_iter == 3
    res = minimize_owlqn(model, pen, max_iter=1000, tol=0.0, gtol=1e-6)
    last = res.history[-1]
    assert res.stop_reason == "gtol" and last["stop"] == "gtol"
    assert last["pg_norm"] <= 1e-6 * max(1.0, np.linalg.norm(res.w))
    res = minimize_owlqn(model, pen, max_iter=1000, tol=0.0, gtol=1e-6, monitor=lambda row, w: row["iteration"] == 2)
    assert res.stop_reason == "callback" and res.history[-1]["stop"] == "callback" and res.n_iter == 2


def test_default_tol_per_solver():
    assert default_tol("owlqn") == default_tol("lbfgs") == 2e-4
    assert default_tol("bcd") == default_tol("sgd-l1") == 1e-5
    assert CRF()._effective("tol") == 2e-4
    assert CRF(solver="lbfgs", l1=0.0)._effective("tol") == 2e-4
    assert CRF(solver="bcd")._effective("tol") == 1e-5
    assert CRF(tol=1e-5)._effective("tol") == 1e-5
    assert CRF(delta=1e-5)._effective("tol") == 1e-5            # CRFsuite's spelling, CRFsuite's rule
    assert CRF(algorithm="l2sgd")._effective("tol") == 1e-6     # CRFsuite's l2sgd delta
    with pytest.raises(ValueError, match="delta"):
        CRF(delta=1e-5, tol=1e-4).fit([[{"a": 1.0}]], [["x"]])


def test_default_rule_ends_a_fit_before_max_iter():
    X, y, _ = make_chain_data(n_sequences=150, n_irrelevant=60, random_state=3)
    crf = CRF(l1=1.0, max_iter=1000).fit(X, y)
    assert crf.stop_reason_ in ("tol", "gtol") and crf.n_iter_ < 1000
    assert crf.history_[-1]["stop"] == crf.stop_reason_
    if crf.stop_reason_ == "tol":
        changes = relative_changes(crf.history_, 10)
        assert changes[-1] < 2e-4 and all(c >= 2e-4 for c in changes[:-1])
    # CRFsuite's tighter rule goes on from there, to a lower objective
    tight = CRF(l1=1.0, max_iter=1000, tol=1e-5).fit(X, y)
    assert tight.n_iter_ >= crf.n_iter_ and tight.objective_ <= crf.objective_ + 1e-9 * abs(crf.objective_)
