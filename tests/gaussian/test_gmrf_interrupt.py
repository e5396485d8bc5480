"""Ctrl-C during ``spargel gmrf`` (a real SIGINT to the process): the solver stops at
its next iteration, the iterate reached is written where asked (atomically) and the
status is 130, as the help says; the estimator keeps the iterate and re-raises."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from spargel.gaussian.estimator import SparseGaussianMRF

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reliability_helpers import default_sigint_in_child, python_sigint_handler  # noqa: E402


def _slow_data(path, m=60, p=400):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, p))
    X[:, 1:] += 0.9 * X[:, :-1]
    path.write_text("".join(",".join(f"{v:.6f}" for v in row) + "\n" for row in X))
    return path


def test_ctrl_c_writes_the_model_reached_and_exits_130(tmp_path):
    data = _slow_data(tmp_path / "d.csv")
    model, edges = tmp_path / "m.model", tmp_path / "e.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "spargel.cli", "gmrf", str(data), "--alpha", "0.01",
         "--solver", "projected-gradient", "--tol", "0", "--max-iter", "10000000", "--verbose",
         "--save-model", str(model), "--out-edges", str(edges)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"), preexec_fn=default_sigint_in_child)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("projected-gradient it "):
                break
        assert lines and lines[-1].startswith("projected-gradient it "), "".join(lines)
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, rest
    assert "Traceback" not in rest and "interrupted; the model reached so far is written" in rest
    fitted = SparseGaussianMRF.load(model)
    assert fitted.precision_.shape == (400, 400) and np.all(np.isfinite(fitted.precision_))
    assert np.all(np.linalg.eigvalsh(fitted.precision_) > 0)
    assert edges.read_text().startswith("i,j,weight")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "e.csv", "m.model"]


def test_estimator_keeps_the_iterate_and_reraises():
    X = np.random.default_rng(1).standard_normal((40, 30))
    X[:, 1:] += 0.9 * X[:, :-1]
    sent = []

    est = SparseGaussianMRF(alpha=0.01, solver="projected-gradient", tol=0, max_iter=100000,
                            verbose=False)
    import spargel.gaussian.control as control
    record = control.record

    def record_and_interrupt(row, history, **kw):      # SIGINT to ourselves at iteration 3
        if row.get("iteration") == 3 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return record(row, history, **kw)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(control, "record", record_and_interrupt)     # every solver reports there
        with python_sigint_handler():
            with pytest.raises(KeyboardInterrupt):
                est.fit(X)
            # Python's own handler is back after the fit
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        mp.undo()
    assert sent and est.stop_reason_ == "interrupted" and 3 <= est.n_iter_ <= 5
    assert np.all(np.linalg.eigvalsh(est.precision_) > 0)
    # a later fit runs to its end
    assert SparseGaussianMRF(alpha=0.1).fit(X).stop_reason_ == "tol"


def test_sparse_path_keeps_the_iterate_and_reraises():
    """Ctrl-C while the from-data path solves a component on its sparse pattern: the
    solver stops at its next iteration, the estimator keeps a positive definite sparse
    precision with ``stop_reason_ == 'interrupted'`` and re-raises."""
    import scipy.sparse as sp

    import spargel.gaussian.sparse_newton as sparse_newton

    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 1600))
    X[:, 1:] += 0.6 * X[:, :-1]
    sent = []
    record = sparse_newton.record

    def record_and_interrupt(row, history, **kw):      # SIGINT to ourselves at iteration 2
        if row.get("iteration") == 2 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return record(row, history, **kw)

    est = SparseGaussianMRF(alpha=0.3, covariance="from_data", solver=sparse_newton.SOLVER)
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(sparse_newton, "record", record_and_interrupt)
        with python_sigint_handler():
            with pytest.raises(KeyboardInterrupt):
                est.fit(X)
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        mp.undo()
    assert sent and est.stop_reason_ == "interrupted"
    K = est.precision_
    assert sp.issparse(K) and K.shape == (1600, 1600)
    assert np.all(np.isfinite(K.data))
    # positive definite: a Cholesky factor of the sparse matrix exists
    from spargel.gaussian.sparse_newton import SparsePattern

    U = sp.triu(K, 1).tocoo()
    P = SparsePattern(1600, U.row, U.col)
    x = np.empty(P.m)
    x[P.pair_entry] = U.data
    x[P.diag] = K.diagonal()[P.node_of[P.erow[P.diag]]]
    assert np.isfinite(P.factor(x))
