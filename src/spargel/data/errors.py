"""The error raised for every piece of bad input: data files, templates, attribute files.

Every reader in :mod:`spargel.data` reports a problem in its input as a
:class:`~spargel.errors.DataFormatError` that names the input (a file name,
``"<stdin>"``, ``"<string>"`` ...) and, when it is known, the 1-based line number, so
that a user can go straight to the offending line. (It lives in :mod:`spargel.errors`
with the other exceptions; this module keeps the old import path working.)
"""

from ..errors import DataFormatError

__all__ = ["DataFormatError"]
