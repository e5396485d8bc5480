"""Alias of :mod:`spargel.core.penalties` (penalties belong to the core every model family
stands on): ``from spargel.penalties import ElasticNet, GroupLasso`` keeps working."""

from .core.penalties import ElasticNet, GroupLasso, Penalty, make_penalty  # noqa: F401
