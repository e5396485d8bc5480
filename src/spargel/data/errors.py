"""The error raised for every piece of bad input: data files, templates, attribute files.

Every reader in :mod:`spargel.data` reports a problem in its input as a
:class:`DataFormatError` that names the input (a file name, ``"<stdin>"``,
``"<string>"`` ...) and, when it is known, the 1-based line number, so that a
user can go straight to the offending line.
"""

from __future__ import annotations

__all__ = ["DataFormatError"]


class DataFormatError(ValueError):
    """Bad input data, with the place where it was found.

    Parameters
    ----------
    source : str
        Name of the input: a file name, or a placeholder such as
        ``"<string>"`` or ``"<stdin>"``.
    line : int or None
        1-based line number of the problem, or ``None`` when the problem is
        not tied to one line (an empty file, for instance).
    message : str
        What is wrong, in words.

    It is a :class:`ValueError`, so code that already catches ``ValueError``
    keeps working.

    Examples
    --------
    >>> err = DataFormatError("train.txt", 12, "expected 3 columns, found 2")
    >>> str(err)
    'train.txt:12: expected 3 columns, found 2'
    >>> str(DataFormatError("empty.txt", None, "no sequences"))
    'empty.txt: no sequences'
    >>> isinstance(err, ValueError)
    True
    """

    def __init__(self, source: str, line: int | None, message: str):
        self.source = str(source)
        self.line = None if line is None else int(line)
        self.message = str(message)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.source}: {self.message}"
        return f"{self.source}:{self.line}: {self.message}"

    def __reduce__(self):
        # keep the three attributes when pickled (e.g. across processes)
        return (type(self), (self.source, self.line, self.message))
