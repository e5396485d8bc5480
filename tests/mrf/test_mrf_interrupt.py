"""Ctrl-C (a real SIGINT to a child process) during the selection of a pairwise MRF's
graph: the fit raises KeyboardInterrupt promptly, its threads are gone, the queued
subsamples never run, and the selector keeps nothing of the interrupted fit (an earlier
fit's attributes stay); ``spargel mrf --select`` exits 130 and writes nothing.

The child runs a problem that cannot finish before the signal (hundreds of path points
over many subsamples, a threshold the instability never reaches), with SIGINT's default
disposition (``default_sigint_in_child``: an ignored SIGINT would be inherited), and
says when its first path point is done; the parent then sends SIGINT."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from reliability_helpers import default_sigint_in_child, python_sigint_handler, sigint_at_call

CHILD = textwrap.dedent("""
    import sys, threading
    import numpy as np
    from spargel.mrf.selection import PairwiseMRFSelect
    from spargel.mrf.estimator import PairwiseMRF

    criterion, jobs, points = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (1500, 24))
    for j in range(1, 24, 2):
        X[:, j] = np.where(rng.random(1500) < 0.8, X[:, j - 1], 1 - X[:, j - 1])
    sel = PairwiseMRFSelect("ebic", n_l1s=3, estimator=PairwiseMRF(adaptive=False)).fit(X[:200, :4])
    before = {k: v for k, v in vars(sel).items() if k.endswith("_")}
    sel.set_params(criterion=criterion, n_l1s=points, l1_min_ratio=1e-4, n_subsamples=40, cv=40,
                   stars_threshold=1.0, n_jobs=jobs, verbose=True,
                   estimator=PairwiseMRF(adaptive=False, tol=1e-12))
    try:
        sel.fit(X)
    except KeyboardInterrupt:
        after = {k: v for k, v in vars(sel).items() if k.endswith("_")}
        same = after.keys() == before.keys() and all(after[k] is before[k] for k in before)
        print("interrupted", "kept" if same else "CHANGED", threading.active_count(), flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")


def _interrupt_when(cmd, ready, timeout=240, delay=0.0):
    """Start ``cmd``, wait for a stderr line starting with ``ready`` (and ``delay``
    seconds more), send SIGINT;
    returns (status, stdout, stderr after the signal, seconds from signal to exit)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), preexec_fn=default_sigint_in_child)
    try:
        lines = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith(ready):
                break
        assert lines and lines[-1].startswith(ready), "".join(lines)
        time.sleep(delay)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=120)
        return proc.returncode, out, rest, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("criterion, jobs, points, ready", [
    ("stars", 1, 400, "StARS l1"), ("stars", 2, 400, "StARS l1"), ("cv", 2, 6, "CV:"), ("ebic", 1, 400, "l1 ")])
def test_sigint_stops_the_selection_and_keeps_the_earlier_fit(criterion, jobs, points, ready):
    """(CV: the signal lands while the folds' threads run, half a second after they
    start; the folds' paths at a tolerance of 1e-12 take minutes.)"""
    rc, out, err, _ = _interrupt_when([sys.executable, "-c", CHILD, criterion, str(jobs), str(points)], ready,
                                      delay=0.5)
    assert rc == 0, err
    assert out.split() == ["interrupted", "kept", "1"], (out, err)
    assert "Traceback" not in err


def test_cli_select_interrupted_exits_130_and_writes_nothing(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (600, 20))              # 2^20 joint states: the pseudo-likelihood
    data = tmp_path / "d.csv"
    np.savetxt(data, X, fmt="%d", delimiter=",")
    cmd = [sys.executable, "-m", "spargel.cli", "mrf", str(data), "--no-header", "--select", "stars",
           "--n-l1s", "400", "--stars-threshold", "1", "--tol", "1e-12", "--verbose"]
    rc, _, err, _ = _interrupt_when(cmd, "StARS l1")
    assert rc == 130, err
    assert "Traceback" not in err and "interrupted" in err.splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_a_failing_subsample_cancels_the_others(monkeypatch):
    """An error in one thread's task: the others stop at their next solver iteration
    (the cancel event), the queued ones never start, the error propagates, nothing is
    kept."""
    from spargel.mrf import selection
    from spargel.mrf.estimator import PairwiseMRF

    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (600, 8))
    calls = []
    real = selection._Walker.step

    def fail_on_the_third(self, l1):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("subsample 3 failed")
        return real(self, l1)

    monkeypatch.setattr(selection._Walker, "step", fail_on_the_third)
    sel = selection.PairwiseMRFSelect("stars", n_subsamples=30, n_jobs=2, estimator=PairwiseMRF(adaptive=False))
    with pytest.raises(RuntimeError, match="subsample 3"):
        sel.fit(X)
    assert len(calls) < 30 and not any(k.endswith("_") for k in vars(sel))


def test_sigint_in_process_reraises_and_keeps_nothing(monkeypatch):
    """SIGINT to ourselves inside a solver's iteration (one thread): the solver catches
    it to keep its iterate (stop reason 'interrupted'); the selector must not walk on."""
    from spargel.mrf import estimator as mrf_estimator
    from spargel.mrf import selection
    from spargel.mrf.estimator import PairwiseMRF

    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, (400, 6))
    X[:, 1] = np.where(rng.random(400) < 0.8, X[:, 0], 1 - X[:, 0])
    iterations, reasons = [], []
    real_monitor, real_solve = mrf_estimator._Monitor.__call__, mrf_estimator.MRFFitPlan.solve

    def signal_at_the_tenth(self, row, w):
        iterations.append(1)
        if len(iterations) == 10:
            os.kill(os.getpid(), signal.SIGINT)
        return real_monitor(self, row, w)

    def solve(self, *args, **kw):
        stage = real_solve(self, *args, **kw)
        reasons.append(stage.reasons)
        return stage

    monkeypatch.setattr(mrf_estimator._Monitor, "__call__", signal_at_the_tenth)
    monkeypatch.setattr(mrf_estimator.MRFFitPlan, "solve", solve)
    sel = selection.PairwiseMRFSelect("ebic", n_l1s=20, estimator=PairwiseMRF(adaptive=False, tol=1e-12))
    with python_sigint_handler(), pytest.raises(KeyboardInterrupt):
        sel.fit(X)
    assert reasons[-1] == ["interrupted"] and len(reasons) < 20
    assert not any(k.endswith("_") for k in vars(sel))
    monkeypatch.undo()
    assert len(sel.fit(X).l1s_) == 20                    # a later fit runs to its end


@pytest.mark.parametrize("jobs", [1, 2])
def test_isingfit_sigint_reraises_and_keeps_nothing(monkeypatch, jobs):
    from spargel.mrf import nodewise

    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, (300, 12))
    fit = nodewise.IsingFit(n_jobs=jobs)
    with sigint_at_call(3) as at, pytest.raises(KeyboardInterrupt):
        monkeypatch.setattr(nodewise, "regression_path", at.wrap(nodewise.regression_path))
        fit.fit(X)
    assert at.calls < 12 and not any(k.endswith("_") for k in vars(fit))


def test_map_threads_raises_the_failure_not_the_cancellations():
    """A task that fails sets the cancel event; the tasks that see it stop with
    Cancelled; map_threads raises the failure, whichever task the main thread waited on."""
    import threading

    from spargel.mrf.common import Cancelled, map_threads

    cancel = threading.Event()
    started = []

    def task(t):
        started.append(t)
        if t == 1:
            raise ValueError("task 1 failed")
        if t == 0:                           # waits until the failure has cancelled it
            assert cancel.wait(30)
            raise Cancelled
        return t

    with pytest.raises(ValueError, match="task 1 failed"):
        map_threads(task, range(40), n_jobs=2, cancel=cancel)
    assert len(started) < 40 and not [t for t in threading.enumerate() if t.name.startswith("spargel-mrf-")]
    assert map_threads(lambda t: -t, range(5), n_jobs=3) == [0, -1, -2, -3, -4]
