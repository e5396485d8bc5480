"""Keep numba's on-disk kernel cache consistent with the sources.

numba decides whether a cached kernel is still valid from the modification time of the
kernel's *own* source file only. Kernels here call kernels of other modules (every chain
model calls :mod:`spargel.chain.inference`), and a cached caller keeps the code of the
callee it was compiled with: after an edit of the callee's module (or an upgrade of
spargel that keeps file times), numba would serve stale code.

:func:`check` hashes the source of every spargel module that defines compiled kernels
and, when the hash differs from the one recorded next to the
cache, deletes spargel's cached kernels before any is loaded. :mod:`spargel.core.jit`
runs it once, when the first kernel module is imported (a process that compiles nothing
does not pay for it); it costs a few milliseconds and never raises (a read-only install
simply keeps its cache).
"""

import glob
import hashlib
import os

_checked = False


def _kernel_sources(pkg_dir):
    out = []
    for root, _, files in os.walk(pkg_dir):
        if "__pycache__" in root:
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as fh:
                    text = fh.read()
                if b"njit" in text or b"@kernel" in text or b"@inner" in text:   # kernels and core/jit.py
                    out.append((os.path.relpath(path, pkg_dir), text))
    return sorted(out)


def _numba_cache_dir(src_file):
    """Where numba keeps the cache of the kernels defined in ``src_file``, by numba's
    documented layout: ``NUMBA_CACHE_DIR/<folder>_<sha1 of the folder's path>`` when that
    variable is set, else the source's ``__pycache__`` when it can be written, else the
    user-wide cache (``<user cache>/numba/<folder>_<sha1>``)."""
    src_dir = os.path.dirname(os.path.abspath(src_file))
    sub = os.path.basename(src_dir) + "_" + hashlib.sha1(src_dir.encode()).hexdigest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return os.path.join(user, sub)
    in_tree = os.path.join(src_dir, "__pycache__")
    try:
        os.makedirs(in_tree, exist_ok=True)
        if os.access(in_tree, os.W_OK):
            return in_tree
    except OSError:
        pass
    try:
        from numba.misc.appdirs import AppDirs

        return os.path.join(AppDirs(appname="numba", appauthor=False).user_cache_dir, sub)
    except ImportError:
        return in_tree


def _cache_dirs(pkg_dir, sources):
    """The directories where numba keeps the cache files of these modules (one per
    source folder: numba names a cache folder by the source's folder, not its file)."""
    first = {}
    for rel, _ in sources:
        path = os.path.join(pkg_dir, rel)
        first.setdefault(os.path.dirname(path), path)
    return sorted(_numba_cache_dir(path) for path in first.values())


def check():
    """Drop spargel's cached kernels if any kernel source changed since they were made."""
    global _checked
    if _checked:
        return
    _checked = True
    try:
        pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sources = _kernel_sources(pkg_dir)
        h = hashlib.sha256()        # (numba itself rejects caches of another numba version)
        for rel, text in sources:
            h.update(rel.encode() + b"\0" + text)
        digest = h.hexdigest()
        dirs = _cache_dirs(pkg_dir, sources)
        stamp = os.path.join(dirs[0] if dirs else pkg_dir, "spargel-kernels.stamp")
        try:
            with open(stamp) as fh:
                if fh.read().strip() == digest:
                    return
        except OSError:
            pass
        modules = {os.path.splitext(os.path.basename(rel))[0] for rel, _ in sources}
        for d in dirs:
            for path in glob.glob(os.path.join(d, "*.nb[ic]")):
                if os.path.basename(path).split(".", 1)[0] in modules:
                    try:
                        os.remove(path)
                    except OSError:
                        pass
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        tmp = f"{stamp}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(digest + "\n")
        os.replace(tmp, stamp)
    except Exception:          # a cache problem must never stop the library
        return
