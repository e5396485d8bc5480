"""Model files: safe to load from strangers.

A model file is a zip archive of ``.npy`` arrays (numpy's ``.npz`` layout) written and
read without pickles. The archive holds a JSON ``header`` (format name, version, kind of
model, its parameters, the dtype, shape and SHA-256 of every array, and a SHA-256 of the
header itself) and plain numeric arrays only.

Loading trusts nothing in the file:

* the archive's directory is checked first: known member names only, no duplicates, no
  encryption, only stored or deflated members, and every member's declared size equal
  to what the header's dtype and shape imply; the arrays together must fit in the
  memory available -- all before anything is decompressed (a "zip bomb" is refused
  from its directory);
* every member is read with a cap (never more bytes than declared), into an array
  allocated from the header's shape, and its checksum is compared;
* the header is size-capped, nesting-capped JSON whose fields must have their types;
  version 2 files carry a checksum of the header itself, so a damaged template text or
  parameter is caught like a damaged array;
* the model's own consistency (shapes, id ranges, finite weights) is checked by the
  estimator, and a stored template is parsed (bounded offsets, safe regexes) before the
  model is returned.

Anything wrong raises :class:`ModelFileError` naming the file and the problem. Writing
(:func:`save_arrays`) is atomic: see :mod:`spargel.core.files`.
"""

import io
import json
import os
import struct

import numpy as np

from ..errors import ModelFileError
from .files import atomic_write, read_at_most

__all__ = ["FORMAT", "VERSION", "ModelFileError", "save_arrays", "load_arrays", "require"]

FORMAT = "spargel-model"
VERSION = 2
READABLE_VERSIONS = (1, 2)

#: the JSON header may not be larger than this (a template of a million patterns fits)
MAX_HEADER_BYTES = 64 << 20
#: nor nest deeper than this (the real header nests 4 levels)
MAX_HEADER_DEPTH = 16
#: nor hold more arrays than this
MAX_ARRAYS = 1024
#: a ``.npy`` member's own header is at most this long (numpy writes ~128 bytes)
MAX_NPY_HEADER = 1 << 14
#: dtype kinds a model array may have: bool, signed and unsigned integers, floats
_KINDS = "biuf"
_CHUNK = 1 << 20


# (hashlib and zipfile are imported where used: a run that reads another tool's model
# file, as a one-shot 'spargel label' does, needs neither)

def _digest(a):
    import hashlib
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _header_digest(header):
    import hashlib
    body = {k: v for k, v in header.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def save_arrays(path, kind, meta, arrays):
    """Write ``arrays`` (name -> numeric ndarray) and ``meta`` (JSON-able) to ``path``,
    atomically (the previous file stays intact until the new one is complete)."""
    import zipfile
    arrays = {name: np.asarray(a) for name, a in arrays.items()}
    for name, a in arrays.items():
        if not isinstance(name, str) or not name or "/" in name or name == "header":
            raise ValueError(f"bad array name {name!r}")
        if a.dtype.kind not in _KINDS or a.dtype.hasobject:
            raise TypeError(f"array {name!r} has dtype {a.dtype}; model files hold numeric arrays only")
    header = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "meta": meta,
        "arrays": {name: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _digest(a)}
                   for name, a in arrays.items()},
    }
    header["sha256"] = _header_digest(header)
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with atomic_write(path, "wb") as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, a in [("header", blob), *arrays.items()]:
                with zf.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.ascontiguousarray(a), allow_pickle=False)


# ---------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------

def _fail(name, message):
    raise ModelFileError(f"{name}: {message}")


def _read_exact(fh, n, name, what):
    data = fh.read(n)
    if len(data) != n:
        _fail(name, f"{what} is truncated")
    return data


def _read_npy(zf, info, name, aname, dtype, shape):
    """Read one ``.npy`` member whose dtype and shape are known in advance, with caps."""
    with zf.open(info) as fh:
        magic = _read_exact(fh, 8, name, f"array {aname!r}")
        if magic[:6] != b"\x93NUMPY":
            _fail(name, f"array {aname!r} is not a .npy array")
        major = magic[6]
        if major == 1:
            hlen = struct.unpack("<H", _read_exact(fh, 2, name, f"array {aname!r}"))[0]
        elif major in (2, 3):
            hlen = struct.unpack("<I", _read_exact(fh, 4, name, f"array {aname!r}"))[0]
        else:
            _fail(name, f"array {aname!r} has an unknown .npy version {major}")
        if hlen > MAX_NPY_HEADER:
            _fail(name, f"array {aname!r} has an oversized .npy header ({hlen} bytes)")
        text = _read_exact(fh, hlen, name, f"array {aname!r}")
        prefix = magic + (struct.pack("<H", hlen) if major == 1 else struct.pack("<I", hlen))
        try:
            d, fortran, dt = _parse_npy_header(prefix + text, major)
        except ValueError as exc:
            _fail(name, f"array {aname!r} has a corrupt .npy header ({exc})")
        if dt != dtype or fortran or tuple(d) != tuple(shape):
            _fail(name, f"array {aname!r} does not have the dtype and shape its header declares")
        out = np.empty(shape, dtype=dtype)
        view = memoryview(out.reshape(-1).view(np.uint8)) if out.size else memoryview(b"")
        total, pos = out.nbytes, 0
        while pos < total:
            chunk = fh.read(min(_CHUNK, total - pos))
            if not chunk:
                _fail(name, f"array {aname!r} is truncated")
            view[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        if fh.read(1):
            _fail(name, f"array {aname!r} has trailing data")
    return out


def _parse_npy_header(raw, major):
    bio = io.BytesIO(raw)
    np.lib.format.read_magic(bio)
    if major == 1:
        return np.lib.format.read_array_header_1_0(bio, max_header_size=MAX_NPY_HEADER)
    return np.lib.format.read_array_header_2_0(bio, max_header_size=MAX_NPY_HEADER)


def _depth_ok(obj, limit):
    """True when ``obj`` (parsed JSON) nests at most ``limit`` levels (iterative walk)."""
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return False
            values = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in values)
    return True


def _checked_spec(name, aname, spec):
    if not isinstance(aname, str) or not aname or "/" in aname or aname == "header":
        _fail(name, f"bad array name {aname!r} in the header")
    if not isinstance(spec, dict):
        _fail(name, f"array {aname!r}: its header entry is not an object")
    dstr, shape, sha = spec.get("dtype"), spec.get("shape"), spec.get("sha256")
    if not isinstance(dstr, str) or len(dstr) > 8:
        _fail(name, f"array {aname!r}: bad dtype {dstr!r} in the header")
    try:
        dtype = np.dtype(dstr)
    except (TypeError, ValueError):
        _fail(name, f"array {aname!r}: unknown dtype {dstr!r} in the header")
    if dtype.kind not in _KINDS or dtype.hasobject or dtype.str != dstr:
        _fail(name, f"array {aname!r}: dtype {dstr!r} is not a plain numeric type")
    if (not isinstance(shape, list) or len(shape) > 8
            or not all(type(n) is int and 0 <= n < 1 << 62 for n in shape)):
        _fail(name, f"array {aname!r}: bad shape {shape!r} in the header")
    if not isinstance(sha, str) or len(sha) != 64:
        _fail(name, f"array {aname!r}: bad checksum field in the header")
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    return dtype, tuple(shape), sha, nbytes


def _read_header(zf, infos, name):
    info = infos.get("header")
    if info is None:
        _fail(name, "not a spargel model file (no header)")
    if info.file_size > MAX_HEADER_BYTES + MAX_NPY_HEADER:
        _fail(name, f"the header declares {info.file_size} bytes (at most {MAX_HEADER_BYTES} allowed)")
    limit = info.file_size             # at most MAX_HEADER_BYTES + MAX_NPY_HEADER (checked above)
    with zf.open(info) as fh:
        raw = read_at_most(fh, limit)
    if len(raw) > limit:
        _fail(name, "the header is larger than its archive entry declares")
    try:
        blob = np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False,
                                        max_header_size=MAX_NPY_HEADER)
    except (ValueError, EOFError, OSError) as exc:
        _fail(name, f"corrupt model header ({exc})")
    if blob.dtype != np.uint8 or blob.ndim != 1:
        _fail(name, "corrupt model header (not a byte string)")
    try:
        header = json.loads(blob.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _fail(name, f"corrupt model header ({exc})")
    except RecursionError:
        _fail(name, "corrupt model header (nested too deeply)")
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        _fail(name, "not a spargel model file")
    if not _depth_ok(header, MAX_HEADER_DEPTH):
        _fail(name, "corrupt model header (nested too deeply)")
    return header


def load_arrays(path, kind, *, memory_limit=None):
    """Read a model file written by :func:`save_arrays`; returns ``(meta, arrays)``.

    ``memory_limit``: the most bytes the arrays may take together (default: the memory
    available, see :func:`spargel.core.limits.available_memory`). Raises
    :class:`ModelFileError` naming the file on any problem.
    """
    name = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    try:
        return _load(path, name, kind, memory_limit)
    except ModelFileError:
        raise
    except FileNotFoundError:
        raise ModelFileError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{name}: is a directory, not a model file") from None
    except PermissionError:
        raise ModelFileError(f"{name}: permission denied") from None
    except MemoryError:
        raise ModelFileError(f"{name}: the model does not fit in memory") from None
    except RecursionError:
        raise ModelFileError(f"{name}: corrupt model file (nested too deeply)") from None
    except Exception as exc:  # zlib.error, NotImplementedError, struct.error, ...: all corruption
        raise ModelFileError(f"{name}: corrupt or truncated model file ({type(exc).__name__}: {exc})") from None


def _load(path, name, kind, memory_limit):
    import zipfile
    with open(path, "rb") as raw:
        if not zipfile.is_zipfile(raw):
            _fail(name, "not a spargel model file (not a zip archive of arrays)")
        archive_size = os.fstat(raw.fileno()).st_size
        raw.seek(0)
        with zipfile.ZipFile(raw) as zf:
            infos = {}
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    _fail(name, f"unexpected member {info.filename!r} in the archive")
                aname = info.filename[:-4]
                if aname in infos:
                    _fail(name, f"member {info.filename!r} appears twice in the archive")
                if info.flag_bits & 0x1:
                    _fail(name, f"member {info.filename!r} is encrypted")
                if info.compress_size > archive_size:
                    _fail(name, f"member {info.filename!r} declares {info.compress_size} compressed "
                                f"bytes, more than the file's {archive_size}")
                if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    _fail(name, f"member {info.filename!r} uses an unsupported compression "
                                f"(method {info.compress_type})")
                infos[aname] = info
            header = _read_header(zf, infos, name)
            version = header.get("version")
            if version not in READABLE_VERSIONS or type(version) is not int:
                _fail(name, f"model file version {version!r} is not supported (this spargel reads "
                            f"versions {', '.join(map(str, READABLE_VERSIONS))})")
            if version >= 2 and header.get("sha256") != _header_digest(header):
                _fail(name, "the header fails its checksum (file altered or damaged)")
            if header.get("kind") != kind:
                _fail(name, f"holds a {header.get('kind')!r} model, not a {kind!r} model")
            specs = header.get("arrays")
            if not isinstance(specs, dict) or len(specs) > MAX_ARRAYS:
                _fail(name, "corrupt model header (bad array table)")
            meta = header.get("meta")
            if not isinstance(meta, dict):
                _fail(name, "corrupt model header (meta is not an object)")
            checked = {}
            total = 0
            for aname, spec in specs.items():
                dtype, shape, sha, nbytes = _checked_spec(name, aname, spec)
                info = infos.get(aname)
                if info is None:
                    _fail(name, f"array {aname!r} is missing")
                # the member is the array's bytes after a .npy header of at most MAX_NPY_HEADER
                if not nbytes + 10 <= info.file_size <= nbytes + MAX_NPY_HEADER:
                    _fail(name, f"array {aname!r}: the archive declares {info.file_size} bytes for "
                                f"it, its header {nbytes} bytes of data")
                total += nbytes
                checked[aname] = (info, dtype, shape, sha)
            extra = sorted(set(infos) - set(specs) - {"header"})
            if extra:
                _fail(name, f"unexpected member {extra[0] + '.npy'!r} in the archive")
            if memory_limit is None:
                from .limits import available_memory
                memory_limit = available_memory()
            if total > memory_limit:
                _fail(name, f"the arrays declare {total / 1e9:.3g} GB, more than the "
                            f"{memory_limit / 1e9:.3g} GB of memory available")
            arrays = {}
            for aname, (info, dtype, shape, sha) in checked.items():
                a = _read_npy(zf, info, name, aname, dtype, shape)
                if _digest(a) != sha:
                    _fail(name, f"array {aname!r} fails its checksum (file altered or damaged)")
                arrays[aname] = a
    _check_meta(kind, meta, arrays, name)
    return meta, arrays


# ---------------------------------------------------------------------------------------
# what the header's meta must hold, per kind of model
# ---------------------------------------------------------------------------------------

def _scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def _check_params(meta, name):
    params = meta.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(k, str) and _scalar(v) for k, v in params.items()):
        _fail(name, "invalid model (its parameters are not a table of plain values)")
    for key, v in params.items():
        if isinstance(v, str) and len(v) > 4096:
            _fail(name, f"invalid model (parameter {key!r} is oversized)")


def _check_labels(meta, arrays, name):
    n = meta.get("n_labels")
    if type(n) is not int or n < 1:
        _fail(name, f"invalid model (n_labels {n!r} is not a positive integer)")
    offsets = arrays.get("labels_offsets")
    if offsets is not None and (offsets.ndim != 1 or offsets.shape[0] != n + 1):
        _fail(name, "invalid model (label count does not match the label list)")


def _check_crf(meta, arrays, name):
    _check_params(meta, name)
    _check_labels(meta, arrays, name)
    order = meta.get("params", {}).get("order", 1)           # files before order 2 have none
    if type(order) is not int or order not in (1, 2):
        _fail(name, f"invalid model (order {order!r} is not 1 or 2)")
    template = meta.get("template")
    if template is None:
        return
    if not isinstance(template, str):
        _fail(name, f"invalid model (its template is a {type(template).__name__}, not text)")
    # (the CRF parses the stored template when it restores the model: chain.estimator)


def _check_loglinear(meta, arrays, name):
    _check_params(meta, name)
    _check_labels(meta, arrays, name)
    n = meta.get("n_features_in")
    if n is not None and (type(n) is not int or n < 0):
        _fail(name, f"invalid model (n_features_in {n!r} is not a non-negative integer)")
    dt = meta.get("label_dtype")
    if dt is not None:
        try:
            ok = isinstance(dt, str) and len(dt) < 8 and np.dtype(dt).kind in "iufb"
        except TypeError:
            ok = False
        if not ok:
            _fail(name, f"invalid model (label_dtype {dt!r} is not a numeric dtype)")


_META_CHECKS = {"crf": _check_crf, "loglinear": _check_loglinear}


def _check_meta(kind, meta, arrays, name):
    check = _META_CHECKS.get(kind)
    if check is not None:
        check(meta, arrays, name)


def require(cond, path, message):
    if not cond:
        raise ModelFileError(f"{path}: invalid model ({message})")
