"""Small corpora and model-file surgery shared by the reliability tests."""

import contextlib
import io
import json
import random
import signal
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


def default_sigint_in_child():
    """``preexec_fn`` of a child that must react to SIGINT: Python's default disposition
    even where the parent ignores SIGINT (an ignored SIGINT is inherited across exec, and
    Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
