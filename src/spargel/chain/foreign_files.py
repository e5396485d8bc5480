"""Reading the model files of other tools (CRFsuite, Wapiti, CRF++): a look at a file's
first bytes, and its bytes read whole but never more than a bound."""

from __future__ import annotations

import os

from ..core.files import read_at_most
from ..errors import ModelFileError

#: the first bytes of a CRFsuite model file
CRFSUITE_MAGIC = b"lCRF"


def starts_with(path, magic):
    """True when the file ``path`` begins with the bytes ``magic`` (False when it cannot
    be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def is_crfsuite_file(path):
    """True when ``path`` starts with CRFsuite's magic bytes (here, not in
    :mod:`.crfsuite_format`, whose kernels would load numba just to look at a file)."""
    return starts_with(path, CRFSUITE_MAGIC)


def read_limited(path, tool, max_size):
    """``(name, bytes)`` of the ``tool`` model file ``path``; a file larger than
    ``max_size`` bytes, or one that cannot be read, raises a ``ModelFileError`` naming it."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
        if size > max_size:
            raise ModelFileError(f"{name}: {size} bytes; larger than any {tool} model read here ({max_size})")
        with open(name, "rb") as fh:
            data = read_at_most(fh, max_size)
    except OSError as exc:
        raise ModelFileError(f"{name}: cannot read ({exc.strerror or exc})") from None
    if len(data) > max_size:
        raise ModelFileError(f"{name}: grew past {max_size} bytes while being read; "
                             f"larger than any {tool} model read here")
    return name, data
