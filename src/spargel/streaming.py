"""Alias of :mod:`spargel.chain.streaming` (``partial_fit``) and
:mod:`spargel.chain.stream_file` (:func:`train_streaming`), which sit beside the
estimators they drive."""

from .chain.stream_file import train_streaming  # noqa: F401
from .chain.streaming import grow_space, partial_fit  # noqa: F401
