"""Warnings attributed to the user's line, not to spargel's.

A warning raised deep inside a fit (``CRF.fit`` -> the estimator core -> the solver's
runner) with a fixed ``stacklevel`` points at whichever spargel frame happens to be that
many calls up. :func:`warn` skips every frame of the package instead: on Python 3.12+
with ``skip_file_prefixes``, before that by walking the stack.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn"]

#: the package's folder (``.../spargel/``): frames of files under it are skipped
PACKAGE_PREFIX = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _inside(frame) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE_PREFIX)


def warn(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller outside
    spargel (the user's ``fit`` line)."""
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=(PACKAGE_PREFIX,))
        return
    level = 2                      # 1: this function; 2: its caller
    frame = sys._getframe(1)
    while frame is not None and _inside(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
