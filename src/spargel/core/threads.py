"""Threads for batch work: how many (scikit-learn's ``n_jobs`` convention) and how a
batch of sequences is split into fixed chunks of about equal size."""

import os

import numpy as np

from ..errors import ParameterError


def resolve_n_jobs(n_jobs):
    """scikit-learn's convention: None -> 1, -1 -> all cores, -2 -> all but one."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise ParameterError(f"n_jobs must be an integer or None, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    cores = os.cpu_count() or 1
    if n_jobs < 0:
        return max(1, cores + 1 + n_jobs)
    if n_jobs == 0:
        raise ParameterError("n_jobs must be a non-zero integer or None")
    return n_jobs


def balanced_chunks(seq_ptr, n_chunks):
    """Sequence boundaries of n_chunks contiguous chunks with about equal token counts."""
    n_seq = len(seq_ptr) - 1
    n_chunks = max(1, min(n_chunks, n_seq))
    targets = np.linspace(0, seq_ptr[-1], n_chunks + 1)
    bounds = np.searchsorted(seq_ptr, targets[1:-1])
    return np.unique(np.concatenate([[0], bounds, [n_seq]])).astype(np.int64)
