"""Gaussian MRFs on a Dask cluster: the cross-validation folds of
:class:`~spargel.gaussian.estimator.SparseGaussianMRFCV` as tasks on the workers.

The sample matrix is scattered once; each fold's task receives only its index arrays,
fits its warm-started path where it runs and returns one row of held-out scores and edge
counts. The rows come back in fold order, so the chosen alpha and the refit are those
of the single-process fit, bit for bit.

>>> SparseGaussianMRFCV(alphas=8, cv=5, client=client).fit(X)     # doctest: +SKIP
"""

from ..scaleout import cluster


def map_folds(client, fold, X, splits, args):
    """``[fold(X, train, test, f, *args) for each split f]``, computed on the workers."""
    client = cluster.resolve(client)
    if client is None:
        raise ValueError("map_folds needs a Dask client")
    cluster.workers(client)                     # a clear error when there are none
    xf = client.scatter(X, broadcast=False, hash=False, direct=False)
    futures = [client.submit(fold, xf, tr, te, f, *args, pure=False) for f, (tr, te) in enumerate(splits)]
    try:
        return client.gather(futures)
    finally:
        xf.release()
