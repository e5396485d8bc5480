"""Alias of :mod:`spargel.estimators.path` (the regularisation path sits beside the
estimators it drives)."""

from .estimators.path import L1_MAX_GUARD, l1_max, path  # noqa: F401
