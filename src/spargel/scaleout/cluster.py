"""The Dask client and its workers, with clear errors.

>>> from spargel.scaleout.cluster import connect        # doctest: +SKIP
>>> client = connect("tcp://scheduler:8786")                # doctest: +SKIP
>>> client = connect("local:2")       # a LocalCluster of 2 worker processes (trying things out)
"""

from ..errors import SpargelError

#: seconds to wait for at least one worker before giving up
WORKER_WAIT = 10.0


def distributed():
    """The ``dask.distributed`` module, or a clear error when Dask is not installed."""
    try:
        import distributed as dd
    except ImportError:
        raise SpargelError("this needs Dask: pip install 'spargel[dask]' (dask[distributed])") from None
    return dd


def connect(address):
    """A client for the scheduler at ``address`` (``tcp://host:8786``, ``host:8786``), or a
    new :class:`LocalCluster` for ``local`` / ``local:N`` (N worker processes)."""
    dd = distributed()
    if address == "local" or address.startswith("local:"):
        n = address.partition(":")[2]
        try:
            n_workers = int(n) if n else None
        except ValueError:
            raise SpargelError(f"--scheduler {address!r}: expected local:N with N a number of workers") from None
        cluster = dd.LocalCluster(n_workers=n_workers, threads_per_worker=None if n_workers is None else 1,
                                  processes=True, dashboard_address=":0")
        client = dd.Client(cluster)
        _OWN_CLUSTERS[id(client)] = (client, cluster)
        return client
    try:
        return dd.Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise SpargelError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def disconnect(client):
    """Close a client made by :func:`connect` (and the local cluster it started)."""
    own = _OWN_CLUSTERS.pop(id(client), (None, None))[1]
    client.close()
    if own is not None:
        own.close()


#: the local clusters :func:`connect` started, by their client's id (with the client,
#: so that the id stays its own until :func:`disconnect`)
_OWN_CLUSTERS = {}


def resolve(client):
    """``client`` itself, a client for an address string, or Dask's current default
    client when ``client`` is None (None when there is none)."""
    if client is None:
        try:
            dd = distributed()
            return dd.get_client()
        except (SpargelError, ValueError):
            return None
    if isinstance(client, str):
        return connect(client)
    if not hasattr(client, "submit") or not hasattr(client, "scheduler_info"):
        raise TypeError(f"client must be a dask.distributed.Client or a scheduler address, got {client!r}")
    return client


def workers(client, wait=WORKER_WAIT):
    """``{address: n_threads}`` of the cluster's workers, in address order; a clear error
    when it has none (after waiting ``wait`` seconds for one to join)."""
    info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else client.scheduler_info()
    found = info.get("workers", {})
    if not found:
        try:
            client.wait_for_workers(1, timeout=wait)
        except Exception:
            address = getattr(client.scheduler, "address", None) or "?"
            raise SpargelError(f"the Dask cluster at {address} has no workers (waited {wait:g}s); "
                               f"start some (dask worker {address}) or use another scheduler") from None
        info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else client.scheduler_info()
        found = info.get("workers", {})
    return {addr: int(found[addr].get("nthreads", 1)) for addr in sorted(found)}


def _takes_n_workers(client):
    import inspect
    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False


def placement(worker_threads, n_shards):
    """The worker of each shard: contiguous runs of shards per worker (so that the first
    level of the reduction tree adds parts on one machine), and the threads each shard
    model may use there."""
    addrs = list(worker_threads)
    n_w = len(addrs)
    where = [addrs[k * n_w // n_shards] for k in range(n_shards)]
    return where, thread_shares(worker_threads, where)


def thread_shares(worker_threads, where):
    """The threads each shard model may use: its worker's threads split between the
    shards placed there (``where[k]`` the worker of shard k; None: unknown, one thread)."""
    per_worker = {}
    for a in where:
        per_worker[a] = per_worker.get(a, 0) + 1
    return [max(1, worker_threads.get(a, 1) // per_worker[a]) if a is not None else 1 for a in where]


def is_dask_collection(x):
    """True for a Dask bag / array / dataframe (without importing Dask when it is not)."""
    return hasattr(x, "__dask_graph__") and hasattr(x, "to_delayed")
