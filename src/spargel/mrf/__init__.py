"""Pairwise Markov random fields: graphs, loopy BP, exact inference on junction trees,
pseudo-likelihood, sampling, the tree bound, the ``PairwiseMRF`` estimator and plots.
"""
