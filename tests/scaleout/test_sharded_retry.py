"""A sharded evaluation that lost every worker at once is retried like one that lost
one worker (a fake client: the round's futures come back cancelled, as Dask's do when
the scattered weights went with the workers)."""

from concurrent.futures import CancelledError

import numpy as np
import pytest

from spargel.errors import SpargelError
from spargel.core import sharded
from spargel.core.protocol import ParameterLayout


class FutureCancelledError(CancelledError):
    """What dask.distributed raises (a subclass of concurrent.futures.CancelledError)."""


class _Value:
    def __init__(self, value):
        self.value = value

    def release(self):
        pass


class _Shard:
    def __init__(self, a):
        self.a = a

    def loss_grad(self, w):
        return float(self.a @ w), self.a.copy()

    def loss(self, w):
        return float(self.a @ w)


class FakeClient:
    """Runs every task at once; the first ``lose`` rounds lose every worker: their
    results come back cancelled and the scheduler knows no worker for ``down`` polls."""

    def __init__(self, lose, down=3):
        self.lose, self.down, self.rounds, self.polls = lose, down, 0, 0

    def scatter(self, w, hash=False, direct=False):
        return _Value(w)

    def submit(self, fn, *args, pure=False):
        return _Value(fn(*[a.value if isinstance(a, _Value) else a for a in args]))

    def gather(self, futures):
        self.rounds += 1
        if self.rounds <= self.lose:
            raise FutureCancelledError("ndarray-1234 cancelled: lost dependencies")
        return [f.value for f in futures]

    def nthreads(self):
        self.polls += 1
        return {} if self.polls <= self.down else {"tcp://w0": 1, "tcp://w1": 1}


def _model(client):
    rng = np.random.default_rng(0)
    shards = [_Shard(rng.normal(size=4)) for _ in range(3)]
    layout = ParameterLayout(4, np.array([0, 4]), np.ones(4), ["w"])
    return sharded.ShardedModel(client, shards, layout, 3), shards


def test_a_round_that_lost_every_worker_is_run_again(monkeypatch):
    monkeypatch.setattr(sharded.time, "sleep", lambda s: None)
    client = FakeClient(lose=2)
    model, shards = _model(client)
    w = np.arange(4.0)
    loss, g = model.loss_grad(w)
    assert model.retries == 2 and client.rounds == 3
    assert client.polls >= 4                          # it waited for the workers to come back
    assert loss == pytest.approx(sum(float(s.a @ w) for s in shards), rel=1e-15)
    np.testing.assert_allclose(g, sum(s.a for s in shards), rtol=1e-15)


def test_a_cluster_that_keeps_losing_its_workers_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sharded.time, "sleep", lambda s: None)
    model, _ = _model(FakeClient(lose=10 ** 6))
    with pytest.raises(SpargelError, match="lost its workers"):
        model.loss_grad(np.zeros(4))
    # no worker ever comes back: a clear error after the wait, not a hang
    monkeypatch.setattr(sharded, "WORKER_RESTART_WAIT", 0.0)
    model, _ = _model(FakeClient(lose=1, down=10 ** 9))
    with pytest.raises(SpargelError, match="none came back"):
        model.loss_grad(np.zeros(4))
