"""Writing output files safely: one implementation for the library and the command line
(and reading a file whole within a bound, :func:`read_at_most`).

* :func:`atomic_write` writes a file completely or not at all: the bytes go to a
  temporary file in the target's own folder, which is flushed, ``fsync``-ed and renamed
  over the target (then the folder is ``fsync``-ed), so a full disk, an exception, Ctrl-C
  or ``kill -9`` in the middle leaves the previous file as it was. The new file gets the
  permissions of the file it replaces, or the umask's for a new file (never the 0600 of
  a bare temporary file). ``SIGTERM`` during the write (whose default action ends the
  process at once) first removes the temporary file, then ends the process as the
  signal would have.
* A symbolic link is written *through*: ``current.model -> v1.model`` keeps the link and
  updates ``v1.model``. So are character devices and named pipes (``/dev/null``,
  ``/dev/stdout``, a FIFO another process reads): they are opened and written, never
  replaced by a regular file; a pipe that no process reads is an error, not a wait.
  Folders, block devices and sockets are refused.
* Temporary files are named ``.NAME.spargel-PID-XXXX.tmp`` beside ``NAME``, and their
  writer holds a lock on each (``flock``) while it writes; the next write of ``NAME``
  removes only those whose lock is free (their writer is gone, also when it ran in
  another PID namespace or container: the lock, not the process id, decides;
  :func:`remove_stale_temporaries`).
* :func:`refuse_same_file` stops a command whose output is one of its inputs (``train
  data.txt data.txt`` would otherwise destroy the training data).
* Errors from the operating system name the file they concern (``OSError.filename``).
* :func:`read_at_most` reads an open file whole but never more than a bound, in chunks
  (the model file readers: spargel's archive header, CRFsuite's, Wapiti's and CRF++'s
  files).

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "notes.txt")
>>> with atomic_write(path, "w") as fh:
...     _ = fh.write("complete or absent\\n")
>>> open(path).read()
'complete or absent\\n'
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time

from ..errors import SpargelError

__all__ = ["SameFileError", "atomic_write", "check_output_path", "refuse_same_file",
           "remove_stale_temporaries", "temporary_name_pattern", "write_bytes"]

#: environment variable read by the tests only: seconds to pause inside a save, after the
#: data is written and before the rename (to deliver a signal or ``kill -9`` there)
TEST_PAUSE_VARIABLE = "SPARGEL_TEST_PAUSE_IN_SAVE"


class SameFileError(SpargelError, ValueError):
    """An output path names one of the inputs of the same command."""


#: bytes read at a time by :func:`read_at_most`
READ_CHUNK = 1 << 20


def read_at_most(fh, limit: int) -> bytes:
    """The bytes of the open binary file ``fh`` from where it stands, but at most
    ``limit + 1`` of them: a result longer than ``limit`` says that the file holds more
    (the caller refuses it). Read in chunks of :data:`READ_CHUNK`, since one
    ``read(limit + 1)`` reserves the whole bound (gigabytes for a model file) before
    reading a byte, which fails under a memory limit.

    >>> import io
    >>> read_at_most(io.BytesIO(b"abcdef"), 4), read_at_most(io.BytesIO(b"abc"), 4)
    (b'abcde', b'abc')
    """
    pieces, size = [], 0
    while size <= limit:
        piece = fh.read(min(READ_CHUNK, limit + 1 - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)


def _name(path) -> str:
    return os.fsdecode(path)


def check_output_path(path) -> str:
    """The path to actually write for ``path``: symbolic links resolved to their final
    target. Raises ``OSError`` (naming ``path``) when the target exists but is not a
    regular file, or when its folder does not exist.

    >>> check_output_path("/")
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] not a regular file (a folder); refusing to write it: '/'
    """
    name = _name(path)
    target = os.path.realpath(name)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, name) from None
    if st is not None and not (stat.S_ISREG(st.st_mode) or _written_through(st.st_mode)):
        message = f"not a regular file ({_kind(st.st_mode)}); refusing to write it"
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, message, name)
        raise OSError(errno.EINVAL, message, name)
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, f"the folder {folder} does not exist", name)
    return target


def _written_through(mode) -> bool:
    """Targets opened and written in place rather than replaced: character devices and
    named pipes."""
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _kind(mode) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def temporary_name_pattern(target) -> re.Pattern:
    """The regular expression that the temporary files of ``target`` match (group 1 is
    the id of the process that made it)."""
    base = os.path.basename(target)
    return re.compile(r"\." + re.escape(base) + r"\.spargel-(\d+)(?:-[A-Za-z0-9_]+)?\.tmp\Z")


#: a temporary file younger than this is removed by another writer only when its process
#: id names no process here (its writer may not have locked it yet)
STALE_AFTER_SECONDS = 60.0


def _lock(fd) -> bool:
    """Take the writer's lock on an open temporary file without waiting; False when
    another process holds it (or locks are not supported here)."""
    try:
        import fcntl
    except ImportError:       # no flock: nobody's temporaries are ever removed
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    """Whether a process with this id exists in this PID namespace (or cannot be told)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError, OSError):
        return True
    return True


def remove_stale_temporaries(target) -> list[str]:
    """Delete the temporary files of ``target`` whose writer is gone (``kill -9`` during
    a save): those whose lock is free, and that are older than
    :data:`STALE_AFTER_SECONDS` or whose process id names no process here. (The lock
    decides: a writer in another PID namespace holds it while it writes; the age only
    covers the instant between creating a temporary and locking it.) Returns the removed
    paths."""
    target = os.path.realpath(_name(target))
    folder = os.path.dirname(target) or "."
    pattern = temporary_name_pattern(target)
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for entry in names:
        m = pattern.match(entry)
        if m is None:
            continue
        path = os.path.join(folder, entry)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            young = now - st.st_mtime < STALE_AFTER_SECONDS
            if not stat.S_ISREG(st.st_mode) or (young and _pid_alive(int(m.group(1)))) or not _lock(fd):
                continue
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _umask() -> int:
    try:  # Linux: read it without changing it (no race with other threads)
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder):
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the rename is done all the same
    finally:
        os.close(fd)


def _test_pause():
    value = os.environ.get(TEST_PAUSE_VARIABLE)
    if value:
        print(f"spargel: test pause in save ({value} s)", file=sys.stderr, flush=True)
        time.sleep(float(value))


class _Terminated(BaseException):
    """SIGTERM arrived while a temporary file existed (raised by the handler)."""


def _raise_terminated(signum, frame):
    raise _Terminated


@contextlib.contextmanager
def _sigterm_cleans_up():
    """While the block runs, SIGTERM raises (so that ``finally`` clauses remove the
    temporary file) and then ends the process as SIGTERM's default action would. Only
    where that default is in force, in the main thread (signal handlers live there)."""
    sigterm = getattr(signal, "SIGTERM", None)
    if sigterm is None or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(sigterm) is not signal.SIG_DFL:
        yield
        return
    signal.signal(sigterm, _raise_terminated)
    try:
        yield
    except _Terminated:
        signal.signal(sigterm, signal.SIG_DFL)
        os.kill(os.getpid(), sigterm)    # ends the process here (status: killed by SIGTERM)
        raise                            # pragma: no cover - only if the signal is blocked
    finally:
        if signal.getsignal(sigterm) is _raise_terminated:
            signal.signal(sigterm, signal.SIG_DFL)


@contextlib.contextmanager
def atomic_write(path, mode="wb", *, encoding="utf-8", newline=None, errors="strict"):
    """Open ``path`` for writing so that it is replaced only when the ``with`` block ends
    without an exception; yields the file object (``mode``: ``"wb"`` or ``"w"``).

    See the module documentation for symbolic links, non-regular targets, permissions
    and temporary files. An ``OSError`` raised while writing, syncing or renaming names
    ``path``; the temporary file is always removed.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    name = _name(path)
    target = check_output_path(name)
    try:
        through = _written_through(os.stat(target).st_mode)
    except OSError:
        through = False
    if through:
        with _open_through(target, name, mode, encoding, newline, errors) as fh:
            yield fh
        return
    with _sigterm_cleans_up():
        yield from _write_via_temporary(name, target, mode, encoding, newline, errors)


def _write_via_temporary(name, target, mode, encoding, newline, errors):
    folder = os.path.dirname(target) or "."
    remove_stale_temporaries(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.spargel-{os.getpid()}-",
                                   suffix=".tmp")
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, name) from None
    _lock(fd)        # held until the file is closed: the writer is alive while it is held
    try:
        try:
            old = os.stat(target)
            perms = stat.S_IMODE(old.st_mode)
        except FileNotFoundError:
            perms = 0o666 & ~_umask()
        try:
            if mode == "wb":
                fh = os.fdopen(fd, "wb")
            else:
                fh = os.fdopen(fd, "w", encoding=encoding, newline=newline, errors=errors)
        except BaseException:
            os.close(fd)
            raise
        with fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), perms)
            os.fsync(fh.fileno())
        _test_pause()
        os.replace(tmp, target)
        tmp = None
        _fsync_folder(folder)
    except OSError as exc:
        if exc.filename is None or exc.filename == tmp:
            raise type(exc)(exc.errno, exc.strerror, name) from None
        raise
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


@contextlib.contextmanager
def _open_through(target, name, mode, encoding, newline, errors):
    """Open a character device or a named pipe for writing in place. A pipe that no
    process reads is an error (opening it would wait for a reader forever)."""
    try:
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a named pipe that no process reads", name) from None
        raise type(exc)(exc.errno, exc.strerror, name) from None
    try:
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding, newline=newline,
                                                                 errors=errors)
    except BaseException:
        os.close(fd)
        raise
    try:
        with fh:
            yield fh
    except OSError as exc:
        if exc.filename is None:
            raise type(exc)(exc.errno, exc.strerror, name) from None
        raise


def write_bytes(path, data: bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_write`), or to standard
    output for ``"-"`` / None, all of it: a write that takes only part (a file-size
    limit, a full disk) is an ``OSError`` naming ``<stdout>``, never a silently cut
    output. (``encoding``: that of the text, for a standard output without bytes.)"""
    if path is None or os.fspath(path) == "-":
        try:
            out = getattr(sys.stdout, "buffer", None)
            if out is not None:
                sys.stdout.flush()
                _write_all(out, data)
            else:                                   # a text stream (tests)
                sys.stdout.write(data.decode(encoding, "surrogateescape"))
                sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, "<stdout>") from None
        return
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def _write_all(out, data):
    """Write all of ``data`` to the binary stream ``out`` and flush it. A write can take
    only part: the rest is written again, so that the failure shows as the next
    write's error instead of a silently cut output."""
    view = memoryview(data)
    while len(view):
        n = out.write(view)
        if not n:
            raise OSError(errno.EIO, f"only part of the output could be written ({len(data) - len(view)} "
                                     f"of {len(data)} bytes)")
        view = view[n:]
    out.flush()


def _same(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_same_file(outputs, inputs, *, stdin="-"):
    """Raise :class:`SameFileError` when an output is one of the inputs (or two outputs
    are one file). ``outputs`` and ``inputs`` map a description (an option name such as
    ``"--history"``) to a path; ``None`` and ``"-"`` (standard streams) are skipped.
    Paths are compared as files: links and different spellings of one path are caught.

    >>> refuse_same_file({"MODEL": "a.txt"}, {"TRAIN": "./a.txt"})
    Traceback (most recent call last):
    ...
    spargel.core.files.SameFileError: a.txt: MODEL is also TRAIN; writing it would destroy the input (give another output file)
    """
    outs = [(k, _name(v)) for k, v in outputs.items() if v is not None and _name(v) != stdin]
    ins = [(k, _name(v)) for k, v in inputs.items() if v is not None and _name(v) != stdin]
    for i, (what, out) in enumerate(outs):
        for other, src in ins:
            if _same(out, src):
                raise SameFileError(f"{out}: {what} is also {other}; writing it would destroy the "
                                    f"input (give another output file)")
        for other, out2 in outs[:i]:
            if _same(out, out2):
                raise SameFileError(f"{out}: {what} and {other} are the same file; give two files")
