"""Linear-chain CRFs of order 1 and 2: chain inference written once, the models and their
compiled kernels (batch, SGD, blockwise coordinate descent, bound), the featurizer, the
``CRF`` estimator, streaming, the regularisation path and training on a Dask cluster.
"""
