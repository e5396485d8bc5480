"""The ``spargel`` command: one front end for ``train``, ``label``, ``eval``, ``dump``,
``mrf``, ``gmrf``, ``plot`` and ``demo``."""

from .app import main

__all__ = ["main"]
