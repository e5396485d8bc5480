"""The byte ranges of a column file, at their old import path: the module is
:mod:`spargel.data.conll_ranges` (a text format, read by the Dask workers)."""

from ..data.conll_ranges import line_number, read_range, split_ranges

__all__ = ["line_number", "read_range", "split_ranges"]
