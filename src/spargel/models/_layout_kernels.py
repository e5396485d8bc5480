"""Compiled helpers for building parameter layouts."""

import numpy as np
from .._jit import kernel


@kernel(allocates=True)
def seen_bitmap(ptr, ids, token_col, n_rows, n_cols):
    """seen[a, c] is True when attribute a occurs at a token whose column is c."""
    seen = np.zeros((n_rows, n_cols), dtype=np.bool_)
    for t in range(len(ptr) - 1):
        c = token_col[t]
        if c < 0:
            continue
        for j in range(ptr[t], ptr[t + 1]):
            seen[ids[j], c] = True
    return seen
