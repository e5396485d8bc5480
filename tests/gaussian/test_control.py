"""The options the Gaussian solvers share (``gaussian/control.RunControl``): one record,
built once by ``solve_gaussian``, read the same way by every solver."""

import dataclasses

import numpy as np
import pytest

from spargel.core.solver_table import solver as solver_record
from spargel.gaussian.block_l1 import block_l1_projected_gradient, make_block_penalty
from spargel.gaussian.control import RunControl
from spargel.gaussian.newton_cd import newton_cd
from spargel.gaussian.newton_cg import newton_cg
from spargel.gaussian.objective import penalty_matrix
from spargel.gaussian.projected_gradient import dual_stop, projected_gradient
from spargel.gaussian.solve import POLISH_STEPS, solve_gaussian

from gmrf_helpers import random_covariance

N = 12


def _problem():
    S = random_covariance(40, N, 3)
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)              # the solvers' standardised scale


def _run(name, S, control):
    if name == "newton-cg":
        return newton_cg(S, penalty_matrix(0.1, N), control=control)
    if name == "newton-cd":
        return newton_cd(S, penalty_matrix(0.1, N), control=control)
    if name == "projected-gradient":
        return projected_gradient(S, penalty_matrix(0.1, N), control=control)
    bp = make_block_penalty(np.repeat(np.arange(N // 3), 3), N, 0.1)     # group labels
    return block_l1_projected_gradient(S, bp, control=control)


SOLVERS = ["newton-cg", "newton-cd", "projected-gradient", "block-l1"]


def test_the_record_is_frozen_and_its_defaults_are_the_solver_table():
    c = RunControl()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.tol = 1.0
    for name in SOLVERS:
        assert c.max_iter_for(name) == solver_record(name, "covariance").max_iter
    assert RunControl(max_iter=7).max_iter_for("newton-cg") == 7
    assert RunControl.given(None) == c and RunControl.given(RunControl(tol=1.0)).tol == 1.0
    assert RunControl(tol=1e-3, atol=0.5).threshold(-2000.0) == 2.0
    assert RunControl(tol=1e-3, atol=0.5).threshold(10.0) == 0.5
    quiet = RunControl(tol=1e-3, verbose=True, callback=print).quiet()
    assert (quiet.tol, quiet.verbose, quiet.callback) == (1e-3, False, None)


@pytest.mark.parametrize("name", SOLVERS)
def test_every_solver_stops_at_max_iter_and_at_the_callback(name):
    S = _problem()
    res = _run(name, S, RunControl(tol=0.0, max_iter=3))
    assert not res.converged and res.stop_reason == "max_iter" and res.n_iter == 3
    seen = []
    res = _run(name, S, RunControl(tol=0.0, callback=lambda row: seen.append(row) or len(seen) == 2))
    assert res.stop_reason == "callback" and len(seen) == 2 and res.history == seen
    res = _run(name, S, RunControl(tol=1e-8))
    assert res.converged and res.stop_reason == "tol"
    assert res.duality_gap <= 1e-8 * max(1.0, abs(res.objective))


@pytest.mark.parametrize("name", SOLVERS)
def test_every_solver_reports_on_stderr_when_verbose(name, capsys):
    _run(name, _problem(), RunControl(tol=0.0, max_iter=2, verbose=True))
    out, err = capsys.readouterr()
    assert not out and err.count(f"{name} it ") >= 2


def test_polish_is_read_by_the_newton_solvers():
    S = _problem()
    plain = newton_cg(S, penalty_matrix(0.1, N), control=RunControl(tol=1e-4))
    polished = newton_cg(S, penalty_matrix(0.1, N), control=RunControl(tol=1e-4, polish=2))
    assert plain.converged and polished.converged
    assert polished.n_iter > plain.n_iter and polished.duality_gap <= plain.duality_gap


def test_solve_gaussian_hands_one_record_to_every_component(monkeypatch):
    import spargel.gaussian.newton_cg as ncg

    seen = []
    real = ncg.newton_cg

    def spy(S, L, *, control=None, **kw):
        seen.append(control)
        return real(S, L, control=control, **kw)

    monkeypatch.setattr(ncg, "newton_cg", spy)
    S = random_covariance(60, 9, 5)
    S[:4, 4:] = S[4:, :4] = 0.0                          # two screened components
    cb = lambda row: False                               # noqa: E731
    res = solve_gaussian(S, 0.05, solver="newton-cg", tol=1e-9, max_iter=40, callback=cb)
    assert res.n_components >= 2 and len(seen) >= 2 and all(c is seen[0] for c in seen)
    assert seen[0] == RunControl(tol=1e-9, max_iter=40, polish=POLISH_STEPS, callback=cb,
                                 t0=seen[0].t0)
    seen.clear()
    solve_gaussian(S, 0.05, solver="newton-cg", polish=0)
    assert seen[0].polish == 0 and seen[0].tol == solver_record("newton-cg", "covariance").tol
    assert seen[0].max_iter == solver_record("newton-cg", "covariance").max_iter


def test_dual_stop_reasons_in_order():
    calls = []

    def sparse(value):
        return lambda: calls.append(value) or value

    row = {}
    assert dual_stop(row, 1e-9, 1e-8, 5, 10, True, sparse(1.0)) == "tol" and not calls
    # far from the tolerance, not a tenth iteration, not the last: no sparsified gap
    assert dual_stop(row, 1.0, 1e-8, 5, 10, False, sparse(0.0)) is None and not calls
    assert dual_stop(row, 1.0, 1e-8, 5, 10, True, sparse(0.0)) == "callback"
    # every tenth iteration the sparsified primal may certify
    assert dual_stop(row, 1.0, 1e-8, 9, 100, False, sparse(1e-9)) == "tol"
    assert row["duality_gap_sparse"] == 1e-9 and calls == [1e-9]
    # at the last iteration too, before max_iter
    assert dual_stop({}, 1.0, 1e-8, 10, 10, True, sparse(1.0)) == "max_iter"
    assert dual_stop({}, 1.0, 1e-8, 10, 10, True, sparse(0.0)) == "tol"
