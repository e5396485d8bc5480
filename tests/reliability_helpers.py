"""Small corpora and model-file surgery shared by the reliability tests."""

import contextlib
import io
import json
import os
import random
import signal
import threading
import zipfile

import numpy as np

_WORDS = {"DT": ["the", "a", "this"], "JJ": ["big", "red", "old"], "NN": ["dog", "cat", "house", "tree"],
          "VB": ["sees", "likes", "buys"], "IN": ["in", "on", "near"]}


def corpus(n, seed=0):
    """``n`` sentences of (word, POS, chunk) triples from a toy grammar."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        toks = [("DT", "B-NP"), ("NN", "I-NP"), ("VB", "B-VP"), ("DT", "B-NP")]
        if rng.random() < 0.5:
            toks.append(("JJ", "I-NP"))
        toks.append(("NN", "I-NP"))
        if rng.random() < 0.5:
            toks += [("IN", "B-PP"), ("DT", "B-NP"), ("NN", "I-NP")]
        out.append([(rng.choice(_WORDS[p]), p, c) for p, c in toks])
    return out


def write_corpus(path, sents, encoding="utf-8"):
    with open(path, "w", encoding=encoding) as fh:
        for s in sents:
            fh.write("".join(" ".join(t) + "\n" for t in s) + "\n")
    return path


def members(path):
    """{member name: bytes} of a model file, in archive order."""
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def write_members(path, parts, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return path


def header_of(parts):
    blob = np.lib.format.read_array(io.BytesIO(parts["header.npy"]))
    return json.loads(blob.tobytes().decode("utf-8"))


def npy_bytes(a):
    bio = io.BytesIO()
    np.lib.format.write_array(bio, np.ascontiguousarray(a), allow_pickle=False)
    return bio.getvalue()


def with_header(parts, header, *, reseal=True):
    """``parts`` with ``header`` as its header; ``reseal`` recomputes the header's checksum
    (what a forger would do), otherwise the old checksum stays."""
    from spargel.core import model_file as sio

    header = dict(header)
    if reseal:
        header["sha256"] = sio._header_digest(header)
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    out = dict(parts)
    out["header.npy"] = npy_bytes(blob)
    return out


@contextlib.contextmanager
def python_sigint_handler():
    """Within: SIGINT has Python's own handler, whatever an earlier test in the same
    worker process left (a test that sends SIGINT to itself checks what spargel does with
    the KeyboardInterrupt, not what the worker inherited); the previous one is restored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield previous
    finally:
        signal.signal(signal.SIGINT, previous)


class SigintAtCall:
    """Wraps a function so that its ``n``-th call sends SIGINT to this process, and every
    later call -- on whichever worker thread -- waits until the main thread has taken the
    KeyboardInterrupt: on a loaded machine the main thread may run Python again only after
    the other workers have raced through every queued task, which would make "the queued
    ones never ran" a matter of luck.  Use as ``with sigint_at_call(n) as at:`` and patch
    in ``at.wrap(real)``; ``at.calls`` counts the calls."""

    def __init__(self, n):
        self.n, self.calls = n, 0
        self._lock = threading.Lock()
        self.interrupted = threading.Event()

    def wrap(self, fn):
        def wrapped(*args, **kw):
            with self._lock:
                self.calls += 1
                k = self.calls
            if k == self.n:
                os.kill(os.getpid(), signal.SIGINT)
            elif k > self.n:
                assert self.interrupted.wait(60), "the main thread never took the SIGINT"
            return fn(*args, **kw)
        return wrapped

    def _handler(self, signum, frame):
        self.interrupted.set()
        raise KeyboardInterrupt


@contextlib.contextmanager
def sigint_at_call(n):
    """Within: SIGINT raises KeyboardInterrupt in the main thread (as Python's own handler
    does) and a :class:`SigintAtCall` that sends it at the ``n``-th call."""
    at = SigintAtCall(n)
    previous = signal.signal(signal.SIGINT, at._handler)
    try:
        yield at
    finally:
        signal.signal(signal.SIGINT, previous)


def default_sigint_in_child():
    """``preexec_fn`` of a child that must react to SIGINT: Python's default disposition
    even where the parent ignores SIGINT (an ignored SIGINT is inherited across exec, and
    Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
