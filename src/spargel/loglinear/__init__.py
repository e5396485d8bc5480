"""Flat and latent multinomial log-linear classifiers: models, kernels, bounds, estimators
and training on a Dask cluster."""
