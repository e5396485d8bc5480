"""How much memory a model holds, for schedulers that ask (``sys.getsizeof``).

Dask decides where a task runs, and whether moving it is worth it, from the sizes of its
inputs; for an object without ``__sizeof__`` it sees a few hundred bytes. A shard model
holding hundreds of megabytes would then look cheaper to move than the weight vector,
and evaluations would be sent to the worker that holds ``w``. :class:`Sized` gives the
models an honest ``__sizeof__``: the bytes of the arrays they reach.
"""

import ctypes
import mmap
import sys

import numpy as np


def reachable_nbytes(obj, seen=None, depth=0):
    """Bytes of the numpy arrays reachable from ``obj`` through attributes, tuples, lists
    and dicts (each array counted once; views count their base)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 6:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj if obj.base is None else obj.base
        if base is not obj:
            return reachable_nbytes(base, seen, depth + 1) if isinstance(base, np.ndarray) else 0
        return obj.nbytes
    if isinstance(obj, (tuple, list)):
        return sum(reachable_nbytes(x, seen, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return sum(reachable_nbytes(x, seen, depth + 1) for x in obj.values())
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return sum(reachable_nbytes(x, seen, depth + 1) for x in vars(obj).values())
    return 0


class Sized:
    """Mixin: ``sys.getsizeof(model)`` counts the arrays the model holds."""

    def __sizeof__(self):
        return object.__sizeof__(self) + reachable_nbytes(vars(self))



def return_free_memory():
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Freeing a large numpy array raises glibc's threshold for serving later
    allocations from fresh mappings, so the temporaries of a chunked build then come from
    the heap, and the heap keeps their pages when they are freed (tens of MB after the
    padded view of a 2 M-token training set). Called once after such a build; a few ms."""
    global _TRIM
    if _TRIM is None:
        import ctypes

        try:
            _TRIM = ctypes.CDLL(None).malloc_trim       # the C library the process runs on
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None


def plain_pages(shape):
    """A zeroed float64 array of ``shape`` whose memory is advised against huge pages
    (on Linux; elsewhere a plain numpy array): the weight-sized vectors of a fit (the
    curvature pairs of L-BFGS, the gradient buffers of a model).

    numpy asks for huge pages for every array from 4 MiB on. Where the system then has
    to assemble them on the first touch (Linux's ``defrag`` setting ``madvise``, the
    default, compacts memory in the faulting thread), that touch cost about four times
    the system time of ordinary pages, from run to run differently, on a 2-core Linux
    machine with its memory in the page cache (0.22 against 0.05 s for 96 MB; 4 ms a
    MB under load). Such vectors gain nothing measurable from huge pages: streamed,
    hardware prefetching hides the page walks, and the maxent gradient of CoNLL-2000
    chunking (2.4 M weights read and written by rows) took the same time with its
    weights and gradients in either. The array is numpy's own (``tracemalloc`` and
    :func:`reachable_nbytes` count it); only its pages' advice differs.
    """
    a = np.empty(shape)
    if _MADVISE is not None and a.nbytes >= _HUGE:
        start = a.ctypes.data
        lo = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE            # the whole pages inside
        hi = (start + a.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
        _MADVISE(lo, hi - lo, mmap.MADV_NOHUGEPAGE)                 # (before any page is touched)
    a.fill(0.0)
    return a


def _madvise():
    """The C library's ``madvise`` where huge pages can be declined (Linux), else None."""
    if not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return None
    try:
        f = ctypes.CDLL(None).madvise
    except (OSError, AttributeError):
        return None
    f.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return f


_MADVISE = _madvise()
#: below this size numpy asks for no huge pages, so there is nothing to decline
_HUGE = 4 * 2 ** 20


#: how many arrays :func:`spare_buffer` keeps an eye on
SPARE_BUFFERS = 4


def _count(items, i):
    """The reference count of ``items[i]`` as seen from here."""
    return sys.getrefcount(items[i])


#: what :func:`_count` reads for an object that only its list refers to (measured, not
#: assumed: interpreters differ in the references they take while calling)
_UNREFERENCED = _count([object()], 0)


def spare_buffer(handed, n):
    """A zeroed float64 array of ``n`` entries to hand out (a gradient): one of the
    arrays in ``handed`` (those handed out before) that nothing but ``handed`` refers to
    any more -- its receiver has let go of it -- or else a new one, which joins
    ``handed`` (the oldest is forgotten beyond :data:`SPARE_BUFFERS`).

    A solver that steps along gradients holds two or three of them at a time; without
    this each evaluation would take fresh memory the size of the weights, whose first
    touch (page faults: the kernel zeroes each page, and finds or assembles the huge
    pages that numpy asks for) costs system time comparable with the gradient itself.
    The test is CPython's reference count: an array still held by its receiver, by a
    view of it or by a container is never handed out again. New arrays are
    :func:`plain_pages`.
    """
    for i in range(len(handed)):
        if len(handed[i]) == n and _count(handed, i) == _UNREFERENCED:
            a = handed[i]
            a.fill(0.0)
            return a
    a = plain_pages(n)
    handed.append(a)
    if len(handed) > SPARE_BUFFERS:
        del handed[0]
    return a


__all__ = ["Sized", "plain_pages", "reachable_nbytes", "return_free_memory", "spare_buffer"]
