"""Index arithmetic on pointer arrays (CSR style: row ``i`` owns ``ptr[i]:ptr[i+1]``),
in numpy: one-off preparation of layouts and data, not worth a compiled kernel."""

import numpy as np


def owners(ptr):
    """The row of every entry: ``i`` repeated ``ptr[i+1] - ptr[i]`` times."""
    ptr = np.asarray(ptr)
    return np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))


def concat_ranges(starts, ends):
    """Concatenation of ``arange(starts[i], ends[i])`` over i."""
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(ends, dtype=np.int64) - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.concatenate([[0], np.cumsum(lens)[:-1]])
    return np.repeat(starts - first, lens) + np.arange(total, dtype=np.int64)


def row_pointers(rows, n_rows, weights=None):
    """``ptr`` (length ``n_rows + 1``) of entries whose rows are ``rows`` once they are
    sorted by row, each entry counting ``weights[j]`` slots (1 when None)."""
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    counts = np.bincount(rows, weights=weights, minlength=n_rows)[:n_rows]
    np.cumsum(counts.astype(np.int64), out=ptr[1:])
    return ptr
