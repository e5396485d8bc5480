"""Reading the model files of other tools (CRFsuite, Wapiti, CRF++): a look at a file's
first bytes, and its bytes read whole but never more than a bound."""

from __future__ import annotations

import os

from ..errors import ModelFileError


def starts_with(path, magic):
    """True when the file ``path`` begins with the bytes ``magic`` (False when it cannot
    be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def read_limited(path, tool, max_size):
    """``(name, bytes)`` of the ``tool`` model file ``path``; a file larger than
    ``max_size`` bytes, or one that cannot be read, raises a ``ModelFileError`` naming it."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
        if size > max_size:
            raise ModelFileError(f"{name}: {size} bytes; larger than any {tool} model read here ({max_size})")
        with open(name, "rb") as fh:
            data = fh.read(max_size + 1)
    except OSError as exc:
        raise ModelFileError(f"{name}: cannot read ({exc.strerror or exc})") from None
    return name, data
