"""Alias of :mod:`spargel.chain.streaming` (``partial_fit`` and
:func:`train_streaming` sit beside the estimators they drive)."""

from .chain.streaming import grow_space, partial_fit, train_streaming  # noqa: F401
