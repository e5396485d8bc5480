"""Scale-out on Dask (``pip install spargel[dask]``): sharded training of the CRF and
the log-linear classifier, Gaussian MRF cross-validation folds and screened components
mapped over a cluster. See ``docs/distributed.md``.

Nothing in spargel imports Dask unless a client, a Dask collection or a file list with a
client is given: these modules import ``dask.distributed`` only inside their functions.

* :mod:`~spargel.scaleout.cluster` -- the client, its workers, clear errors;
* :mod:`~spargel.data.conll_ranges` -- reading a byte range of a column file
  (the sequences that start in it), so that no process reads a whole corpus;
* :mod:`~spargel.chain.shards` -- the worker-side steps: encode a part with local
  vocabularies, merge vocabularies and seen (attribute, label) pairs, remap ids, build
  the shard model;
* :mod:`~spargel.chain.scaleout` / :mod:`~spargel.loglinear.scaleout` -- fitting
  the CRF / the log-linear classifier on a cluster;
* :mod:`~spargel.gaussian.scaleout` -- the cross-validation folds of Gaussian MRFs.
"""
