"""What the reliability checks cost: model files and template regexes, each against the
plain way of doing the same thing, measured in the same run (medians of repeats).

* save: ``io.save_arrays`` (temporary file, fsync, rename, header checksum) against
  ``np.savez_compressed`` into an open file;
* load: ``io.load_arrays`` (directory checks, capped reads, checksums, meta checks)
  against ``np.load`` plus the per-array SHA-256 the old loader computed;
* extract: ``Template.extract`` over CoNLL-2000 with regex patterns compiled by
  ``safe_regex.compile_regex`` against the same template with plain ``re.compile``.

    PYTHONPATH=src python bench/reliability_overhead.py [--data ../shared/data/conll2000/train.txt]
"""

import argparse
import hashlib
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from spargel.core import model_file as sio
from spargel.data import templates as T
from spargel.data.conll import read_conll

TEMPLATE = """\
U00:%x[-1,0]
U01:%x[0,0]
U02:%t[0,0,"^[A-Z][a-z]+$"]
U03:%m[0,0,".?.?.?$"]
U04:%T[0,0,"^[0-9]+([.,][0-9]+)*$"]
U05:%t[0,0,"-"]
B
"""


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def model_arrays(n_weights, n_attrs, rng):
    words = [f"U01:w{i}_{rng.integers(1e9)}" for i in range(n_attrs)]
    text = np.frombuffer("".join(words).encode(), dtype=np.uint8).copy()
    offsets = np.zeros(n_attrs + 1, dtype=np.int64)
    np.cumsum([len(w) for w in words], out=offsets[1:])
    return {"coef": rng.normal(size=n_weights), "u_ptr": np.linspace(0, n_weights, n_attrs + 1).astype(np.int64),
            "u_lab": rng.integers(0, 23, size=n_weights).astype(np.int32),
            "uni_text": text, "uni_offsets": offsets}


def old_load(path):
    with np.load(path, allow_pickle=False) as npz:
        out = {}
        for name in npz.files:
            a = npz[name]
            hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
            out[name] = a
    return out


def main():
    ap = argparse.ArgumentParser()
    here = Path(__file__).resolve().parents[1]
    ap.add_argument("--data", default=str(here.parent / "shared" / "data" / "conll2000" / "train.txt"))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    arrays = model_arrays(1_000_000, 200_000, rng)
    meta = {"params": {"l1": 1.0}, "n_labels": 23, "template": None}
    with tempfile.TemporaryDirectory() as d:
        new_path, old_path = os.path.join(d, "new.model"), os.path.join(d, "old.model")
        header = np.frombuffer(b'{"format": "x"}', dtype=np.uint8)

        def old_save():
            with open(old_path, "wb") as fh:
                np.savez_compressed(fh, header=header, **arrays)

        t_new_save = median_time(lambda: sio.save_arrays(new_path, "bench", meta, arrays), args.repeat)
        t_old_save = median_time(old_save, args.repeat)
        t_new_load = median_time(lambda: sio.load_arrays(new_path, "bench"), args.repeat)
        t_old_load = median_time(lambda: old_load(old_path), args.repeat)
        size = os.path.getsize(new_path) / 1e6
    print(f"model file: 1,000,000 weights, 200,000 attributes, {size:.1f} MB")
    print(f"save  spargel {t_new_save * 1e3:7.1f} ms   plain savez {t_old_save * 1e3:7.1f} ms   "
          f"ratio {t_new_save / t_old_save:.2f}")
    print(f"load  spargel {t_new_load * 1e3:7.1f} ms   np.load+sha {t_old_load * 1e3:7.1f} ms   "
          f"ratio {t_new_load / t_old_load:.2f}")

    if not os.path.exists(args.data):
        print(f"no {args.data}: template timing skipped")
        return
    sents = list(read_conll(args.data))
    cols = [s.columns for s in sents]

    def extract(tpl):
        for c in cols:
            tpl.extract(c)

    safe = T.Template.parse(TEMPLATE)
    real = T.compile_regex
    T.compile_regex = lambda p, f=0, where=None: re.compile(p, f)
    try:
        plain = T.Template.parse(TEMPLATE)
    finally:
        T.compile_regex = real
    assert [safe.extract(c) for c in cols[:200]] == [plain.extract(c) for c in cols[:200]]
    t_safe = median_time(lambda: extract(T.Template.parse(TEMPLATE)), max(3, args.repeat // 2))

    def plain_run():
        T.compile_regex = lambda p, f=0, where=None: re.compile(p, f)
        try:
            tpl = T.Template.parse(TEMPLATE)
        finally:
            T.compile_regex = real
        extract(tpl)

    t_plain = median_time(plain_run, max(3, args.repeat // 2))
    n_tok = sum(len(c) for c in cols)
    print(f"extract {len(cols)} sentences / {n_tok} tokens, 4 regex patterns: safe regexes "
          f"{t_safe:.3f} s   plain re {t_plain:.3f} s   ratio {t_safe / t_plain:.3f}")


if __name__ == "__main__":
    main()
