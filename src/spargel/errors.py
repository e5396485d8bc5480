"""The exceptions and warnings users catch.

Everything spargel raises on purpose derives from :class:`SpargelError`, and each
subclass also derives from the built-in exception that code written before it would
have caught (``ValueError``, ``TypeError``), so ``except ValueError`` keeps working.

* :class:`DataFormatError` -- bad input data, naming the file and line;
* :class:`ModelFileError` -- a model file that cannot be used (corrupt, truncated,
  tampered with, foreign, or from an unsupported version);
* :class:`CapabilityError` -- a solver was given a model (or penalty) that lacks what the
  solver needs;
* :class:`NotFittedError` -- an estimator was used before ``fit`` (scikit-learn's
  convention: it is both a ``ValueError`` and an ``AttributeError``, which is what
  scikit-learn's own checks expect; importing spargel never imports scikit-learn).

Warnings: :class:`ConvergenceWarning` when a solver stops on its iteration limit (or on
a failed line search before the optimality conditions hold), :class:`SpargelWarning`
for the rest.

>>> issubclass(CapabilityError, TypeError), issubclass(ModelFileError, ValueError)
(True, True)
"""

from __future__ import annotations

import sys

__all__ = ["SpargelError", "DataFormatError", "ModelFileError", "CapabilityError", "NotFittedError",
           "SpargelWarning", "ConvergenceWarning"]


class SpargelError(Exception):
    """Base of every error spargel raises on purpose."""


class DataFormatError(SpargelError, ValueError):
    """Bad input data, with the place where it was found.

    ``source`` names the input (a file name, ``"<stdin>"``, ``"<string>"`` ...), ``line``
    is the 1-based line number or ``None`` when the problem is not tied to one line.

    >>> str(DataFormatError("train.txt", 12, "expected 3 columns, found 2"))
    'train.txt:12: expected 3 columns, found 2'
    >>> str(DataFormatError("empty.txt", None, "no sequences"))
    'empty.txt: no sequences'
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


class ModelFileError(SpargelError, ValueError):
    """A model file that cannot be used: corrupt, truncated, tampered with or foreign."""


class CapabilityError(SpargelError, TypeError):
    """A solver was given a model or penalty without what the solver needs."""


class NotFittedError(SpargelError, ValueError, AttributeError):
    """An estimator was used before ``fit`` (a ``ValueError`` and an ``AttributeError``).

    When scikit-learn is loaded, the error raised is also an instance of
    ``sklearn.exceptions.NotFittedError``, so that scikit-learn's tools (and code that
    catches its error) recognise it -- without spargel importing scikit-learn."""

    def __new__(cls, *args, **kwargs):
        if cls is NotFittedError:
            sk = sys.modules.get("sklearn.exceptions")
            if sk is not None and hasattr(sk, "NotFittedError"):
                cls = _with_sklearn(sk.NotFittedError)
        return super().__new__(cls, *args, **kwargs)


_COMBINED = {}


def _with_sklearn(sk_error):
    """spargel's NotFittedError that is also scikit-learn's (one class per process)."""
    if sk_error not in _COMBINED:
        _COMBINED[sk_error] = type("NotFittedError", (NotFittedError, sk_error),
                                   {"__module__": __name__, "__doc__": NotFittedError.__doc__})
    return _COMBINED[sk_error]


class SpargelWarning(UserWarning):
    """Base of spargel's warnings."""


class ConvergenceWarning(SpargelWarning):
    """A solver stopped before the optimality conditions held (iteration limit)."""
