"""The exceptions and warnings users catch.

Everything spargel raises on purpose derives from :class:`SpargelError`, and each
subclass also derives from the built-in exception that code written before it would
have caught (``ValueError``, ``TypeError``), so ``except ValueError`` keeps working.

* :class:`DataFormatError` -- bad input data, naming the file and line;
* :class:`ModelFileError` -- a model file that cannot be used (corrupt, truncated,
  tampered with, foreign, or from an unsupported version);
* :class:`ParameterError` -- an estimator's (or solver's) parameter has a bad value or
  type; it names the parameter and the value, and is both a ``ValueError`` and a
  ``TypeError`` (as scikit-learn's ``InvalidParameterError``), so code that catches
  either keeps working;
* :class:`CapabilityError` -- a solver was given a model (or penalty) that lacks what the
  solver needs;
* :class:`NotFittedError` -- an estimator was used before ``fit`` (scikit-learn's
  convention: it is both a ``ValueError`` and an ``AttributeError``, which is what
  scikit-learn's own checks expect; importing spargel never imports scikit-learn);
* :class:`NonNumericDataError` -- a :class:`DataFormatError` for entries that are not
  numbers (also a ``TypeError``, as numpy's own conversion error).

Warnings: :class:`ConvergenceWarning` when a solver stops on its iteration limit (or on
a failed line search before the optimality conditions hold), :class:`DataConversionWarning`
when input had to be reshaped (a column-vector ``y``), :class:`SpargelWarning` for the
rest.

>>> issubclass(CapabilityError, TypeError), issubclass(ModelFileError, ValueError)
(True, True)
"""

from __future__ import annotations

import sys

__all__ = ["SpargelError", "DataFormatError", "NonNumericDataError", "ModelFileError", "ParameterError", "ItemFormatError",
           "TaggerClosedError",
           "CapabilityError", "NotFittedError", "SpargelWarning", "ConvergenceWarning", "DataConversionWarning"]


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


class NonNumericDataError(DataFormatError, TypeError):
    """Entries that are not numbers (both a DataFormatError and, as numpy's own
    conversion error, a TypeError)."""


class ModelFileError(SpargelError, ValueError):
    """A model file that cannot be used: corrupt, truncated, tampered with or foreign."""


class ParameterError(SpargelError, ValueError, TypeError):
    """A parameter with a bad value or type, checked before any work; the message names
    the parameter and the value. Both a ``ValueError`` and a ``TypeError``, as
    scikit-learn's ``InvalidParameterError``, so either ``except`` catches it.

    >>> err = ParameterError("tol must be a finite number >= 0, got nan")
    >>> isinstance(err, ValueError) and isinstance(err, TypeError)
    True
    """


class ItemFormatError(SpargelError, TypeError, ValueError):
    """An item (token) of a sequence given to ``spargel.pycrfsuite`` in none of the
    accepted formats (a string instead of a list of items, a list holding a dict, ...):
    both a ``TypeError``, as spargel's feature readers raise, and a ``ValueError``, as
    python-crfsuite's callers expect."""


class TaggerClosedError(SpargelError, RuntimeError):
    """``info()`` or ``dump()`` of a tagger that holds no model (python-crfsuite raises a
    ``RuntimeError`` there)."""


class CapabilityError(SpargelError, TypeError):
    """A solver was given a model or penalty without what the solver needs."""


class NotFittedError(SpargelError, ValueError, AttributeError):
    """An estimator was used before ``fit`` (a ``ValueError`` and an ``AttributeError``).

    When scikit-learn is loaded, the error raised is also an instance of
    ``sklearn.exceptions.NotFittedError``, so that scikit-learn's tools (and code that
    catches its error) recognise it -- without spargel importing scikit-learn."""

    def __new__(cls, *args, **kwargs):
        if cls is NotFittedError:
            cls = _with_sklearn(cls, "NotFittedError")
        return super().__new__(cls, *args, **kwargs)


_COMBINED = {}


def _with_sklearn(cls, name):
    """``cls``, or when scikit-learn is loaded a subclass of ``cls`` that is also
    ``sklearn.exceptions.<name>`` (one class per process); scikit-learn is never
    imported here."""
    sk = sys.modules.get("sklearn.exceptions")
    sk_cls = getattr(sk, name, None) if sk is not None else None
    if sk_cls is None:
        return cls
    if (cls, sk_cls) not in _COMBINED:
        _COMBINED[cls, sk_cls] = type(cls.__name__, (cls, sk_cls), {"__module__": __name__, "__doc__": cls.__doc__})
    return _COMBINED[cls, sk_cls]


class SpargelWarning(UserWarning):
    """Base of spargel's warnings."""


class ConvergenceWarning(SpargelWarning):
    """A solver stopped before the optimality conditions held (iteration limit)."""


class DataConversionWarning(SpargelWarning):
    """Input was converted to the shape the estimator expects (e.g. a column-vector
    ``y`` flattened). When scikit-learn is loaded, the warning is also an instance of
    ``sklearn.exceptions.DataConversionWarning`` (scikit-learn's filters and checks see
    it), without spargel importing scikit-learn."""

    def __new__(cls, *args, **kwargs):
        if cls is DataConversionWarning:
            cls = _with_sklearn(cls, "DataConversionWarning")
        return super().__new__(cls, *args, **kwargs)
