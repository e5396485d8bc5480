"""Model files: safe to load from strangers.

A model file is a zip archive of ``.npy`` arrays (numpy's ``.npz`` layout) written and
read without pickles. The archive holds a JSON ``header`` (format name, version, kind of
model, its parameters, and a SHA-256 of every array) and plain numeric arrays only.
Loading checks the format and version, every array's presence, dtype and checksum, and
the model's own consistency (shapes, id ranges, finite weights) before anything uses it;
anything wrong raises :class:`ModelFileError` naming the file and the problem.
"""

import hashlib
import json
import zipfile

import numpy as np

from .errors import ModelFileError

FORMAT = "spargel-model"
VERSION = 1


def _digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def save_arrays(path, kind, meta, arrays):
    """Write ``arrays`` (name -> numeric ndarray) and ``meta`` (JSON-able) to ``path``."""
    for name, a in arrays.items():
        if a.dtype == object:
            raise TypeError(f"array {name!r} has dtype object; model files hold numeric arrays only")
    header = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "meta": meta,
        "arrays": {name: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _digest(a)}
                   for name, a in arrays.items()},
    }
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, header=blob, **arrays)


def load_arrays(path, kind):
    """Read a model file written by :func:`save_arrays`; returns (meta, arrays)."""
    name = str(path)
    try:
        with open(path, "rb"):
            pass
        if not zipfile.is_zipfile(path):
            raise ModelFileError(f"{name}: not a spargel model file (not a zip archive of arrays)")
        with np.load(path, allow_pickle=False) as npz:
            files = set(npz.files)
            if "header" not in files:
                raise ModelFileError(f"{name}: not a spargel model file (no header)")
            try:
                header = json.loads(npz["header"].tobytes().decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ModelFileError(f"{name}: corrupt model header ({exc})") from None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise ModelFileError(f"{name}: not a spargel model file")
            if header.get("version") != VERSION:
                raise ModelFileError(f"{name}: model file version {header.get('version')!r} is not "
                                     f"supported (this spargel reads version {VERSION})")
            if header.get("kind") != kind:
                raise ModelFileError(f"{name}: holds a {header.get('kind')!r} model, not a {kind!r} model")
            arrays = {}
            for aname, spec in header["arrays"].items():
                if aname not in files:
                    raise ModelFileError(f"{name}: array {aname!r} is missing")
                a = npz[aname]
                if a.dtype.str != spec["dtype"] or list(a.shape) != spec["shape"]:
                    raise ModelFileError(f"{name}: array {aname!r} has the wrong dtype or shape")
                if _digest(a) != spec["sha256"]:
                    raise ModelFileError(f"{name}: array {aname!r} fails its checksum (file altered or damaged)")
                arrays[aname] = a
            return header["meta"], arrays
    except ModelFileError:
        raise
    except FileNotFoundError:
        raise ModelFileError(f"{name}: no such file") from None
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{name}: corrupt or truncated model file ({type(exc).__name__}: {exc})") from None


def require(cond, path, message):
    if not cond:
        raise ModelFileError(f"{path}: invalid model ({message})")
