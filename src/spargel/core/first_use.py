"""Tell the user, once, when kernels are about to be compiled.

The first fit in a fresh environment compiles numba kernels (seconds to tens of
seconds, then cached on disk). :func:`announce` checks whether the entry kernels a fit
is about to call are in numba's on-disk cache and, if one is not, writes one line to
stderr -- once per process -- so that nobody waits in silence. It is quiet when the
caller asks (``verbose=0`` in the Python API, ``--quiet`` on the command line) and
never fails (it only reads numba's cache index).
"""

import os
import sys

_announced = False
_forced = False          # the command line turns the line on unless --quiet


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
    print("spargel: compiling the numeric kernels for first use; they are cached, so this wait "
          "(usually 10-30 s) happens once per installation", file=stream or sys.stderr, flush=True)
    return True
