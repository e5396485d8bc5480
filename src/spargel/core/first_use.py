"""Tell the user, once, when kernels are about to be compiled.

The first fit in a fresh environment compiles numba kernels (seconds to tens of
seconds, then cached on disk). :func:`announce` checks whether the entry kernels a fit
is about to call are in numba's on-disk cache and, if one is not, writes one line to
stderr -- once per process -- so that nobody waits in silence. It is quiet when the
caller asks (``verbose=0`` in the Python API, ``--quiet`` on the command line) and
never fails (it only reads numba's cache index).

Estimators whose kernels are not listed up front (the Gaussian and discrete MRF
families) wrap their ``fit`` in :func:`announces_compiles` instead: within such a fit
(``verbose`` set, or under the command line) compiling a kernel that is not in the
on-disk cache starts a timer, and once such compilations have taken :data:`DELAY`
seconds in all, the same line is written (while the compilation goes on). A kernel
loaded from the cache never writes it.
"""

import functools
import os
import sys
import threading
import time

_announced = False
_forced = False          # the command line turns the line on unless --quiet
_listening = 0           # fits running that want the line (see announces_compiles)
_local = threading.local()
_spent = 0.0             # seconds spent compiling kernels that were not in the cache

#: seconds of kernel compilation before the first-use line is written (None: never)
DELAY = 1.0

MESSAGE = ("spargel: compiling the numeric kernels for first use; they are cached, so this wait "
           "(usually 10-30 s) happens once per installation")


def enable():
    """Announce even for estimators with ``verbose=0`` (used by the command line)."""
    global _forced
    _forced = True


def _cached(dispatcher):
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:          # another numba version: assume cached, say nothing
        return True


def needs_compiling(dispatchers):
    """True when one of these kernels has no compiled code in the on-disk cache."""
    return any(not _cached(d) for d in dispatchers)


def announce(dispatchers, quiet=False, stream=None):
    """Write the first-use line if one of ``dispatchers`` must be compiled; returns
    whether it wrote it."""
    global _announced
    if (quiet and not _forced) or _announced or not needs_compiling(dispatchers):
        return False
    _announced = True
    print(MESSAGE, file=stream or sys.stderr, flush=True)
    return True


def _say():
    global _announced
    if _announced:
        return
    _announced = True
    try:
        print(MESSAGE, file=sys.stderr, flush=True)
    except Exception:          # a closed stderr must not break the compilation
        pass


def announces_compiles(fit):
    """Wrap an estimator's ``fit``: while it runs with ``verbose`` set (or under the command
    line), a kernel compilation longer than :data:`DELAY` seconds writes the first-use line."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        global _listening
        if _announced or not (_forced or getattr(self, "verbose", 0)):
            return fit(self, *args, **kwargs)
        _listening += 1
        try:
            return fit(self, *args, **kwargs)
        finally:
            _listening -= 1
    wrapper.announces_compiles = True
    return wrapper


def compile_started(dispatcher):
    """Called by a kernel's dispatcher before it compiles (or loads from the cache) a
    signature; returns what to hand to :func:`compile_ended`."""
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    if depth or DELAY is None or not _listening or _announced or _cached(dispatcher):
        return None
    try:
        timer = threading.Timer(max(0.0, DELAY - _spent), _say)
        timer.daemon = True
        timer.start()
    except Exception:          # no thread to be had: say nothing rather than fail
        return None
    return timer, time.perf_counter()


def compile_ended(started):
    global _spent
    _local.depth -= 1
    if started is not None:
        started[0].cancel()
        _spent += time.perf_counter() - started[1]
