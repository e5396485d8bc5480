"""Alias of :mod:`spargel.chain.path` (the regularisation path sits beside the
estimators it drives)."""

from .chain.path import L1_MAX_GUARD, l1_max, path  # noqa: F401
