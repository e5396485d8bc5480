"""CRFsuite's model files (``crfsuite learn -m``, python-crfsuite's ``Trainer.train``),
read and written without CRFsuite.

The format, as CRFsuite 0.12 writes it (first-order linear-chain CRF, model type
"FOMC"; every integer a little-endian unsigned 32-bit number, every weight a
little-endian IEEE double):

* a 48-byte header: the magic ``lCRF``, the file size, the type ``FOMC``, the version
  (100), the numbers of features (left at 0 by CRFsuite: the feature chunk's count is
  the one used), labels and attributes, and the offsets of the five parts below;
* the features (chunk ``FEAT``: id, chunk size, count, then 20 bytes a feature): a
  type (0: state feature, an (attribute, label) weight; 1: transition, a (label,
  label) weight), a source (the attribute, or the previous label), a destination (the
  label) and the weight;
* two string tables (``CQDB`` chunks), one for the labels and one for the attributes:
  a 24-byte header (id, size, flags, a byte-order mark, the number and the offset of
  the id -> string links), 256 references to hash tables, the records (id, key size,
  the key with its terminating NUL), the hash tables (pairs of hash and record offset,
  open addressing, a table twice as large as its number of keys, a key's table chosen
  by its hash modulo 256 and its first slot by the hash shifted right by 8, the hash
  being Bob Jenkins' lookup3 ``hashlittle`` of the key with its NUL, seed 0) and the
  id -> record-offset links; offsets inside a table are relative to its start;
* per label, the transition features leaving it (chunk ``LFRF``, aligned to 4 bytes:
  a table of offsets, then at each offset a count and the feature ids), and per
  attribute its state features (chunk ``AFRF``, the same layout).

A tagger scores label ``y`` at a position by the sum, over the position's attributes,
of the attribute's value times its (attribute, ``y``) weight, and a label pair by its
transition weight: exactly spargel's first-order CRF without bigram attributes.

Reading trusts nothing: every count and offset is checked against the file's size
before it is used, the string tables are read through both their hash tables and their
id links and must agree (a tagger finds attributes by hash), names must be unique, and
the features must be exactly those the reference lists name. Anything else raises
:class:`~spargel.errors.ModelFileError` naming the file and the problem.
"""

import struct
from dataclasses import dataclass

import numpy as np

from ..errors import ModelFileError
from ..core.files import atomic_write
from ..core.limits import check_label_pairs
from .foreign_files import CRFSUITE_MAGIC, is_crfsuite_file, read_limited, starts_with  # noqa: F401

MAGIC = CRFSUITE_MAGIC
MODEL_TYPE = b"FOMC"
VERSION = 100
HEADER_SIZE = 48
CHUNK_SIZE = 12
FEATURE_SIZE = 20
CQDB_HEADER = 24
CQDB_TABLES = 256
CQDB_DATA = CQDB_HEADER + 8 * CQDB_TABLES
BYTEORDER = 0x62445371
STATE, TRANSITION = 0, 1
#: offsets are 32-bit: no CRFsuite file is larger
MAX_FILE_SIZE = (1 << 32) - 1
#: a label or attribute name may not be longer than this (CRFsuite has no limit; a
#: name of a megabyte is damage, not a feature)
MAX_NAME_BYTES = 1 << 20


@dataclass
class CRFsuiteModel:
    """The content of a CRFsuite model file in spargel's layout: per attribute (in
    ``attributes`` order) its labels ``u_lab[u_ptr[a]:u_ptr[a+1]]`` (increasing) and
    weights ``u_w``; transitions ``t_pair`` (``prev * L + cur``, increasing) and
    ``t_w``."""
    labels: list
    attributes: list
    u_ptr: np.ndarray
    u_lab: np.ndarray
    u_w: np.ndarray
    t_pair: np.ndarray
    t_w: np.ndarray
    size: int = 0


# --------------------------------------------------------------------------- hashing
# lookup3's arithmetic on uint32 arrays (numpy wraps them modulo 2^32), every key at once:
# reading a model then needs no compiled code (``spargel label``, ``Tagger.open``)


def _rot(x, k):
    """lookup3's ``rot``: the 32-bit ``x`` rotated left by ``k`` bits."""
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def _mix(a, b, c):
    """lookup3's ``mix`` of three uint32 arrays (in place)."""
    for x, y, z, k in ((a, c, b, 4), (b, a, c, 6), (c, b, a, 8), (a, c, b, 16), (b, a, c, 19), (c, b, a, 4)):
        x -= y                      # x -= y; x ^= rot(y, k); y += z
        x ^= _rot(y, k)
        y += z


def _final(a, b, c):
    """lookup3's ``final`` mixing of three uint32 arrays (in place); ``c`` is the hash."""
    for x, y, k in ((c, b, 14), (a, c, 11), (b, a, 25), (c, b, 16), (a, c, 4), (b, a, 14), (c, b, 24)):
        x ^= y                      # x ^= y; x -= rot(y, k)
        x -= _rot(y, k)


def _hashes(keys):
    """lookup3 ``hashlittle(key, len(key), 0)`` of byte strings that already end with
    their NUL, as int64."""
    n_keys = len(keys)
    if not n_keys:
        return np.zeros(0, dtype=np.int64)
    length = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n_keys)
    start = np.zeros(n_keys, dtype=np.int64)
    np.cumsum(length[:-1], out=start[1:])
    buf = np.frombuffer(b"".join(keys) + bytes(12), dtype=np.uint8).astype(np.uint32)
    blocks = np.maximum(length - 1, 0) // 12          # whole blocks mixed before the last one
    # keys by decreasing block count: those still mixing in round r are a prefix (work in
    # proportion to the bytes, however long the longest key)
    order = np.argsort(-blocks, kind="stable")
    length, start, blocks = length[order], start[order], blocks[order]
    a = (np.uint32(0xDEADBEEF) + length.astype(np.uint32)).astype(np.uint32)
    b, c = a.copy(), a.copy()

    def word(p):
        return buf[p] | (buf[p + 1] << np.uint32(8)) | (buf[p + 2] << np.uint32(16)) | (buf[p + 3] << np.uint32(24))

    active = n_keys - np.searchsorted(blocks[::-1], np.arange(int(blocks[0])), side="right")
    for r, k in enumerate(active):
        p = start[:k] + 12 * r
        a[:k] += word(p)
        b[:k] += word(p + 4)
        c[:k] += word(p + 8)
        _mix(a[:k], b[:k], c[:k])
    # the last 1..12 bytes, little-endian into a, b, c, then the final mixing
    tail = start + 12 * blocks
    rest = length - 12 * blocks
    for j in range(12):
        on = np.flatnonzero(rest > j)
        v = buf[tail[on] + j] << np.uint32(8 * (j % 4))
        (a, b, c)[j // 4][on] += v
    on = np.flatnonzero(length > 0)
    a_, b_, c_ = a[on], b[on], c[on]
    _final(a_, b_, c_)
    c[on] = c_
    out = np.empty(n_keys, dtype=np.int64)
    out[order] = c
    return out


def hashlittle(key):
    """lookup3 ``hashlittle`` (seed 0) of the bytes ``key``."""
    return int(_hashes([bytes(key)])[0])


# --------------------------------------------------------------------------- writing
def _encode_name(name, what):
    data = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else bytes(name)
    if b"\0" in data:
        raise ValueError(f"the {what} name {name!r} contains a NUL byte, which a CRFsuite file cannot hold")
    return data + b"\0"


def _cqdb(names, what):
    """One CQDB chunk holding ``names`` with ids 0, 1, ... (offsets relative to it)."""
    keys = [_encode_name(n, what) for n in names]
    hashes = _hashes(keys)
    records = bytearray()
    rec_off = np.zeros(len(keys), dtype=np.int64)
    for i, k in enumerate(keys):
        rec_off[i] = CQDB_DATA + len(records)
        records += struct.pack("<II", i, len(k)) + k
    cur = CQDB_DATA + len(records)
    tables = bytearray()
    refs = []
    slot = hashes % CQDB_TABLES
    order = np.argsort(slot, kind="stable")
    bounds = np.searchsorted(slot[order], np.arange(CQDB_TABLES + 1))
    for t in range(CQDB_TABLES):
        members = order[bounds[t]:bounds[t + 1]]
        if len(members) == 0:
            refs.append((0, 0))
            continue
        n = 2 * len(members)
        bucket = np.zeros((n, 2), dtype=np.int64)
        for i in members:
            k = (int(hashes[i]) >> 8) % n
            while bucket[k, 1] != 0:
                k = (k + 1) % n
            bucket[k] = (hashes[i], rec_off[i])
        refs.append((cur + len(tables), n))
        tables += bucket.astype("<u4").tobytes()
    bwd_offset = cur + len(tables) if len(keys) else 0
    bwd = rec_off.astype("<u4").tobytes()
    size = cur + len(tables) + len(bwd)
    head = b"CQDB" + struct.pack("<IIIII", size, 0, BYTEORDER, len(keys), bwd_offset)
    head += b"".join(struct.pack("<II", o, n) for o, n in refs)
    return head + bytes(records) + bytes(tables) + bwd


def _pad4(out):
    while len(out) % 4:
        out += b"\0"


def _refs_chunk(chunk_id, base, lists, n_slots):
    """A feature-reference chunk starting at file offset ``base``: ``n_slots`` offsets
    (the lists first, zeros after), then per list its count and feature ids."""
    table_end = base + CHUNK_SIZE + 4 * n_slots
    body = bytearray()
    offsets = []
    for fids in lists:
        offsets.append(table_end + len(body))
        body += struct.pack("<I", len(fids)) + np.asarray(fids, dtype="<u4").tobytes()
    offsets += [0] * (n_slots - len(lists))
    size = CHUNK_SIZE + 4 * n_slots + len(body)
    return chunk_id + struct.pack("<II", size, n_slots) + np.asarray(offsets, dtype="<u4").tobytes() + bytes(body)


def to_bytes(model):
    """The bytes of a CRFsuite model file holding ``model`` (a :class:`CRFsuiteModel`)."""
    L, A = len(model.labels), len(model.attributes)
    u_ptr = np.asarray(model.u_ptr, dtype=np.int64)
    u_lab = np.asarray(model.u_lab, dtype=np.int64)
    t_pair = np.asarray(model.t_pair, dtype=np.int64)
    n_state, n_trans = len(u_lab), len(t_pair)
    K = n_state + n_trans
    feats = np.zeros(K, dtype=[("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("w", "<f8")])
    owner = np.repeat(np.arange(A, dtype=np.int64), np.diff(u_ptr))
    feats["type"][:n_state] = STATE
    feats["src"][:n_state] = owner
    feats["dst"][:n_state] = u_lab
    feats["w"][:n_state] = model.u_w
    feats["type"][n_state:] = TRANSITION
    feats["src"][n_state:] = t_pair // max(L, 1)
    feats["dst"][n_state:] = t_pair % max(L, 1)
    feats["w"][n_state:] = model.t_w

    out = bytearray(HEADER_SIZE)
    off_features = len(out)
    out += b"FEAT" + struct.pack("<II", CHUNK_SIZE + FEATURE_SIZE * K, K) + feats.tobytes()
    off_labels = len(out)
    out += _cqdb(model.labels, "label")
    off_attrs = len(out)
    out += _cqdb(model.attributes, "attribute")
    _pad4(out)
    off_labelrefs = len(out)
    src = t_pair // max(L, 1)
    trans_ids = n_state + np.arange(n_trans)
    by_label = [trans_ids[src == lab] for lab in range(L)]
    out += _refs_chunk(b"LFRF", off_labelrefs, by_label, L + 2)
    _pad4(out)
    off_attrrefs = len(out)
    out += _refs_chunk(b"AFRF", off_attrrefs, [np.arange(u_ptr[a], u_ptr[a + 1]) for a in range(A)], A)
    if len(out) > MAX_FILE_SIZE:
        raise ValueError(f"the model needs {len(out)} bytes; a CRFsuite file holds at most {MAX_FILE_SIZE}")
    out[:HEADER_SIZE] = (MAGIC + struct.pack("<I", len(out)) + MODEL_TYPE
                         + struct.pack("<8I", VERSION, 0, L, A, off_features, off_labels, off_attrs, off_labelrefs)
                         + struct.pack("<I", off_attrrefs))
    return bytes(out)


def write(path, model):
    """Write ``model`` to ``path`` atomically."""
    data = to_bytes(model)
    with atomic_write(path, "wb") as fh:
        fh.write(data)


# --------------------------------------------------------------------------- reading
class _Reader:
    def __init__(self, data, name):
        self.data, self.name, self.size = data, name, len(data)

    def fail(self, message):
        raise ModelFileError(f"{self.name}: not a usable CRFsuite model: {message}")

    def need(self, cond, message):
        if not cond:
            self.fail(message)

    def span(self, off, n, what):
        """Check that ``[off, off + n)`` lies in the file."""
        if off < 0 or n < 0 or off + n > self.size:
            self.fail(f"{what} lies outside the file ({off}+{n} > {self.size} bytes)")

    def u32(self, off, what):
        self.span(off, 4, what)
        return struct.unpack_from("<I", self.data, off)[0]

    def u32_array(self, off, n, what):
        self.span(off, 4 * n, what)
        return np.frombuffer(self.data, dtype="<u4", count=n, offset=off).astype(np.int64)


def _read_cqdb(r, off, count, what):
    """The names of a CQDB chunk at ``off`` (ids 0..count-1), checked both ways."""
    r.span(off, CQDB_DATA, f"the {what} table")
    r.need(r.data[off:off + 4] == b"CQDB", f"the {what} table has no CQDB mark")
    size, _flag, byteorder, bwd_size, bwd_offset = struct.unpack_from("<IIIII", r.data, off + 4)
    r.need(byteorder == BYTEORDER, f"the {what} table has a wrong byte-order mark")
    r.need(CQDB_DATA <= size and off + size <= r.size, f"the {what} table's size ({size}) does not fit the file")
    end = off + size
    r.need(bwd_size == count, f"the {what} table links {bwd_size} ids, the header says {count}")
    refs = r.u32_array(off + CQDB_HEADER, 2 * CQDB_TABLES, f"the {what} table's hash references").reshape(-1, 2)
    total = int(refs[:, 1].sum())
    r.need(total == 2 * count, f"the {what} table's hash tables hold {total // 2} keys, the header says {count}")
    # each name takes at least its id link (4 bytes), its record's id and size (8) and
    # one byte: a count the table cannot hold is refused before anything is sized by it
    r.need(count * 13 <= size - CQDB_DATA,
           f"the {what} table's {size} bytes cannot hold {count} names")
    names = [None] * count
    rec_end = []
    if count:
        r.need(bwd_offset >= CQDB_DATA and off + bwd_offset + 4 * count <= end,
               f"the {what} table's id links lie outside it")
        bwd = r.u32_array(off + bwd_offset, count, f"the {what} table's id links")
        for i in range(count):
            p = int(bwd[i])
            r.need(CQDB_DATA <= p and off + p + 8 <= end, f"{what} {i}: its record lies outside the table")
            rid, ksize = struct.unpack_from("<II", r.data, off + p)
            r.need(rid == i, f"{what} {i}: its record says id {rid}")
            r.need(1 <= ksize <= MAX_NAME_BYTES and off + p + 8 + ksize <= end,
                   f"{what} {i}: its name's size ({ksize}) is out of bounds")
            key = r.data[off + p + 8: off + p + 8 + ksize]
            r.need(key[-1] == 0 and key.find(b"\0") == ksize - 1, f"{what} {i}: its name is not one NUL-ended string")
            names[i] = bytes(key)
            rec_end.append(p)
    r.need(len(set(names)) == count, f"the {what} table holds a name twice")
    # every key must be found through its hash table where a tagger looks for it: its
    # hash stored right, in the table its hash picks, and reachable by the tagger's
    # linear probing from its first slot (no empty slot in between)
    hashes = _hashes(names)
    rec = np.asarray(rec_end, dtype=np.int64)
    by_offset = np.argsort(rec, kind="stable")
    seen = np.zeros(count, dtype=np.int64)
    for t in range(CQDB_TABLES):
        t_off, n = int(refs[t, 0]), int(refs[t, 1])
        if n == 0:
            continue
        r.need(t_off >= CQDB_DATA and off + t_off + 8 * n <= end, f"the {what} table's hash table {t} lies outside it")
        bucket = r.u32_array(off + t_off, 2 * n, f"the {what} table's hash table {t}").reshape(-1, 2)
        occupied = bucket[:, 1] != 0
        # a full table makes a tagger search it forever for an unknown name
        r.need(not occupied.all(), f"the {what} table's hash table {t} has no empty slot")
        slots = np.flatnonzero(occupied)
        if len(slots) == 0:
            continue
        pos = np.searchsorted(rec[by_offset], bucket[slots, 1])
        pos = np.minimum(pos, count - 1) if count else pos
        r.need(count > 0 and bool(np.all(rec[by_offset][pos] == bucket[slots, 1])),
               f"the {what} table's hash table {t} points to no record")
        ids = by_offset[pos]
        r.need(bool(np.all(bucket[slots, 0] == hashes[ids])) and bool(np.all(hashes[ids] % CQDB_TABLES == t)),
               f"the {what} table's hash table {t} holds a wrong hash")
        np.add.at(seen, ids, 1)
        empty = np.flatnonzero(~occupied)
        before = np.searchsorted(empty, slots) - 1          # the last empty slot before each entry
        last_empty = np.where(before >= 0, empty[np.maximum(before, 0)], empty[-1] - n)
        home = (bucket[slots, 0] >> 8) % n
        r.need(bool(np.all((slots - home) % n < slots - last_empty)),
               f"the {what} table's hash table {t}: a tagger cannot find some of its names")
    r.need(bool(np.all(seen == 1)), f"the {what} table's hash tables do not list each name once")
    return [n[:-1].decode("utf-8", "surrogateescape") for n in names]


def read_bytes(data, name="<bytes>"):
    """Parse the bytes of a CRFsuite model file into a :class:`CRFsuiteModel`."""
    r = _Reader(memoryview(bytes(data)).tobytes(), name)
    r.need(r.size >= HEADER_SIZE, f"only {r.size} bytes (a header alone has {HEADER_SIZE})")
    r.need(r.data[:4] == MAGIC, "no CRFsuite magic 'lCRF'")
    (size,) = struct.unpack_from("<I", r.data, 4)
    r.need(r.data[8:12] == MODEL_TYPE, f"model type {r.data[8:12]!r}; only first-order CRFs ('FOMC') are known")
    version, K, L, A, off_f, off_l, off_a, off_lr, off_ar = struct.unpack_from("<9I", r.data, 12)
    r.need(version == VERSION, f"version {version}; only version {VERSION} is known")
    r.need(size == r.size, f"the header says {size} bytes, the file has {r.size} (truncated or extended)")
    r.need(L >= 1, "no labels")
    check_label_pairs(L, name)
    # features
    r.span(off_f, CHUNK_SIZE, "the feature chunk")
    r.need(r.data[off_f:off_f + 4] == b"FEAT", "the feature chunk has no FEAT mark")
    fsize, fnum = struct.unpack_from("<II", r.data, off_f + 4)
    # CRFsuite leaves the header's feature count at 0: the chunk's count is the one used
    r.need(K in (0, fnum) and fsize == CHUNK_SIZE + FEATURE_SIZE * fnum, "the feature chunk's size or count is wrong")
    K = fnum
    r.span(off_f, fsize, "the features")
    feats = np.frombuffer(r.data, dtype=[("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("w", "<f8")],
                          count=K, offset=off_f + CHUNK_SIZE)
    ftype = feats["type"].astype(np.int64)
    src = feats["src"].astype(np.int64)
    dst = feats["dst"].astype(np.int64)
    w = feats["w"].astype(np.float64)
    r.need(bool(np.all((ftype == STATE) | (ftype == TRANSITION))), "a feature has an unknown type")
    state = ftype == STATE
    r.need(bool(np.all(dst < L)), "a feature names a label out of range")
    r.need(bool(np.all(src[state] < A)), "a state feature names an attribute out of range")
    r.need(bool(np.all(src[~state] < L)), "a transition names a label out of range")
    r.need(bool(np.all(np.isfinite(w))), "a weight is not finite")
    # names
    labels = _read_cqdb(r, off_l, L, "label")
    attributes = _read_cqdb(r, off_a, A, "attribute")
    # references: the tagger finds features through them, so they must list exactly
    # the features of each label / attribute
    for chunk, off, n_min, what, sel in ((b"LFRF", off_lr, L, "label", ~state),
                                         (b"AFRF", off_ar, A, "attribute", state)):
        r.span(off, CHUNK_SIZE, f"the {what} references")
        r.need(r.data[off:off + 4] == chunk, f"the {what} references have no {chunk.decode()} mark")
        csize, cnum = struct.unpack_from("<II", r.data, off + 4)
        r.need(n_min <= cnum <= n_min + 2 and off + csize <= r.size and csize >= CHUNK_SIZE + 4 * cnum,
               f"the {what} references' size or count is wrong")
        offs = r.u32_array(off + CHUNK_SIZE, n_min, f"the {what} references")
        listed = []
        for i in range(n_min):
            p = int(offs[i])
            r.need(off + CHUNK_SIZE <= p and p + 4 <= off + csize, f"{what} {i}: its references lie outside the chunk")
            (n,) = struct.unpack_from("<I", r.data, p)
            r.need(p + 4 + 4 * n <= off + csize, f"{what} {i}: its references lie outside the chunk")
            fids = np.frombuffer(r.data, dtype="<u4", count=n, offset=p + 4).astype(np.int64)
            r.need(bool(np.all(fids < K)), f"{what} {i}: a reference to a feature out of range")
            r.need(bool(np.all(sel[fids]) and np.all(src[fids] == i)), f"{what} {i}: a reference to another's feature")
            listed.append(fids)
        allf = np.concatenate(listed) if listed else np.zeros(0, np.int64)
        r.need(len(allf) == int(sel.sum()) and len(np.unique(allf)) == len(allf),
               f"the {what} references do not list each of its features once")
    # spargel's layout
    s_idx = np.flatnonzero(state)
    key = src[s_idx] * L + dst[s_idx]
    order = np.argsort(key, kind="stable")
    key = key[order]
    r.need(bool(np.all(np.diff(key) > 0)), "a state feature is repeated")
    u_ptr = np.zeros(A + 1, dtype=np.int64)
    np.cumsum(np.bincount(src[s_idx], minlength=A), out=u_ptr[1:])
    t_idx = np.flatnonzero(~state)
    tkey = src[t_idx] * L + dst[t_idx]
    torder = np.argsort(tkey, kind="stable")
    r.need(bool(np.all(np.diff(tkey[torder]) > 0)), "a transition is repeated")
    return CRFsuiteModel(labels, attributes, u_ptr, (key % L).astype(np.int32), w[s_idx][order].copy(),
                         tkey[torder].astype(np.int32), w[t_idx][torder].copy(), r.size)


def read(path):
    """Read the CRFsuite model file ``path`` (see the module documentation)."""
    name, data = read_limited(path, "CRFsuite", MAX_FILE_SIZE)
    return read_bytes(data, name)
