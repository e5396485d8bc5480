"""What every selection of a penalty from subsamples shares (StARS, Liu, Roeder &
Wasserman 2010), for any family: the subsample size, the instability of the edges
over the subsamples, and the choice on a path of decreasing penalties.

>>> import numpy as np
>>> counts = np.array([[0, 0, 0], [10, 0, 0], [10, 5, 1]])   # 3 pairs, 10 subsamples
>>> stars_variability(counts, 10).round(3).tolist()
[0.0, 0.0, 0.453]
>>> stars_choice(stars_variability(counts, 10), 0.1)
1
"""

from __future__ import annotations

import numpy as np

__all__ = ["default_subsample_size", "stars_variability", "stars_choice"]


def default_subsample_size(n):
    """``floor(10 sqrt(n))`` samples when ``n > 144``, else ``floor(0.8 n)``."""
    ratio = 10.0 * np.sqrt(n) / n if n > 144 else 0.8
    return int(np.floor(n * ratio))


def stars_variability(edge_counts, n_subsamples):
    """``4 mean_{i<j} theta (1 - theta)`` per penalty from the per-pair counts of
    subsamples with the edge (shape ``(n_penalties, n_pairs)``)."""
    theta = np.asarray(edge_counts, dtype=np.float64) / n_subsamples
    return 4.0 * np.mean(theta * (1.0 - theta), axis=-1)


def stars_choice(variability, threshold):
    """Index (on the path of decreasing penalties) of the last penalty before the
    variability first reaches ``threshold``; the last index when it never does."""
    v = np.asarray(variability)
    over = np.flatnonzero(v >= threshold)
    if over.size == 0:
        return v.size - 1
    return max(int(over[0]) - 1, 0)
