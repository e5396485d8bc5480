"""Whole-process labelling time: ``spargel label`` against ``wapiti label`` and CRF++'s
``crf_test``, on the same model files and the same inputs.

Given a built Wapiti 1.5 (``make`` in a checkout of Jekub/Wapiti) and a built CRF++
0.58 (``./configure && make`` in a checkout of taku910/crfpp), and a Wapiti model and a
CRF++ model of CoNLL-2000 (trained by the tools themselves; with ``--train`` this
script trains them: ``wapiti train -i N`` with a chunking pattern file and ``crf_learn
-m N`` with a chunking template, both written here), every labeller runs as a fresh
process on:

* ``short``: the first 3 sentences of CoNLL-2000's test set;
* ``test``: the whole test set (2012 sentences, 47,377 tokens).

Each run is timed from start to exit: wall seconds and the child's CPU seconds (user +
system, from ``wait4``); the medians of ``--runs`` runs are printed with the ratios
spargel / tool. The predicted label columns must be identical (spargel labelling the
Wapiti model against ``wapiti label``, the CRF++ model against ``crf_test``), and
spargel's whole output is compared byte for byte with the tool's where the tool writes
the same layout. Exits 1 on any difference in the labels.

    python bench/label_speed.py --wapiti path/to/Wapiti --crfpp path/to/crfpp \\
        [--wapiti-model M] [--crfpp-model M | --train --iter 50] [--runs 7] \\
        [--baseline-src path/to/older/checkout/src]

Each command runs once more first, untimed (caches warm: files, bytecode, numba's
kernels). ``--baseline-src`` times another checkout's spargel in the same runs (before
and after a change, on the same machine and load). The first lines time the floor of a
labeller in Python: the interpreter alone (``python -c pass``, ``python -S -c pass``)
and numpy's import (with OpenBLAS's default threads, and with one).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from _common import data_dir  # noqa: E402

PATTERN = r"""# format: wapiti
# chunking: words, tags and a few shapes (Wapiti's pattern language)
u:w-2=%x[-2,0]
u:w-1=%x[-1,0]
u:w=%x[0,0]
u:w+1=%x[1,0]
u:w+2=%x[2,0]
u:ww=%x[-1,0]/%x[0,0]
u:p-2=%x[-2,1]
u:p-1=%x[-1,1]
u:p=%x[0,1]
u:p+1=%x[1,1]
u:p+2=%x[2,1]
u:pp=%x[-1,1]/%x[0,1]
u:pp+=%x[0,1]/%x[1,1]
u:cap=%t[0,0,"^\u"]
u:num=%t[0,0,"\d"]
u:suf=%m[0,0,"..?$"]
u:low=%X[0,0]
*:bp=%x[0,1]
b
"""

TEMPLATE = """U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-1,1]/%x[0,1]
U16:%x[0,1]/%x[1,1]
B01:%x[0,1]
B
"""


def timed(cmd, env=None, stdout=None):
    """(wall seconds, CPU seconds of the child) of one run of ``cmd``; raises on failure."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=stdout or subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def labels_of(path):
    """The last field of every non-blank line."""
    return [line.split()[-1] for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def first_sentences(src, dst, n):
    blocks = Path(src).read_text(encoding="utf-8").strip("\n").split("\n\n")
    Path(dst).write_text("\n\n".join(blocks[:n]) + "\n\n", encoding="utf-8")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wapiti", type=Path, required=True, help="built Wapiti folder (holds the 'wapiti' binary)")
    ap.add_argument("--crfpp", type=Path, required=True, help="built CRF++ folder (crf_learn, crf_test, .libs)")
    ap.add_argument("--wapiti-model", type=Path, help="a Wapiti model of CoNLL-2000 (else --train)")
    ap.add_argument("--crfpp-model", type=Path, help="a CRF++ model of CoNLL-2000 (else --train)")
    ap.add_argument("--train", action="store_true", help="train the missing models with the tools")
    ap.add_argument("--iter", type=int, default=50, help="training iterations with --train")
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command (medians)")
    ap.add_argument("--work", type=Path, default=None, help="keep the inputs and outputs here")
    ap.add_argument("--baseline-src", type=Path, default=None,
                    help="also time the 'src' folder of another spargel checkout (an older commit), same runs")
    args = ap.parse_args(argv)

    wapiti = args.wapiti / "wapiti"
    crf_test = args.crfpp / ".libs" / "crf_test"
    if not crf_test.exists():
        crf_test = args.crfpp / "crf_test"
    missing = [p for p in (wapiti, crf_test) if not p.exists()]
    if missing:
        print(f"skipped: missing {', '.join(map(str, missing))}")
        return 0
    data = data_dir("conll2000")
    work = args.work or Path(tempfile.mkdtemp(prefix="label-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    tool_env = dict(os.environ, LD_LIBRARY_PATH=str(args.crfpp / ".libs"))
    # (compiled bytecode is written and reused, as in an installed package)
    spargel_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    spargel_env["PYTHONPATH"] = str(REPO / "src")
    base_env = None
    if args.baseline_src is not None:
        base_env = dict(spargel_env, PYTHONPATH=str(args.baseline_src.resolve()))

    wmodel, cmodel = args.wapiti_model, args.crfpp_model
    if wmodel is None or cmodel is None:
        if not args.train:
            ap.error("give --wapiti-model and --crfpp-model, or --train")
        if wmodel is None:
            (work / "pattern.txt").write_text(PATTERN)
            wmodel = work / "wapiti.model"
            subprocess.run([str(wapiti), "train", "-p", str(work / "pattern.txt"), "-i", str(args.iter), "-t", "1",
                            str(data / "train.txt"), str(wmodel)], check=True, stderr=subprocess.DEVNULL)
        if cmodel is None:
            (work / "template.txt").write_text(TEMPLATE)
            cmodel = work / "crfpp.model"
            learn = args.crfpp / "crf_learn"
            subprocess.run([str(learn), "-m", str(args.iter), "-p", "1", str(work / "template.txt"),
                            str(data / "train.txt"), str(cmodel)], check=True, stdout=subprocess.DEVNULL,
                           env=tool_env)

    inputs = {"short": work / "short.txt", "test": data / "test.txt"}
    first_sentences(data / "test.txt", inputs["short"], 3)
    spargel = [sys.executable, "-m", "spargel.cli"]

    def commands(inp, tag):
        """(name, environment, argv, output path or None when the command writes it)."""
        out = [
            ("wapiti label", tool_env, [wapiti, "label", "-m", wmodel, inp, work / f"{tag}.wapiti.out"], None),
            ("spargel label (Wapiti model)", spargel_env,
             [*spargel, "label", "-m", wmodel, inp, work / f"{tag}.spw.out"], None),
            ("crf_test", tool_env, [crf_test, "-m", cmodel, inp], work / f"{tag}.crftest.out"),
            ("spargel label (CRF++ model)", spargel_env,
             [*spargel, "label", "-m", cmodel, inp, work / f"{tag}.spc.out"], None),
        ]
        if base_env is not None:
            out += [("baseline (Wapiti model)", base_env,
                     [*spargel, "label", "-m", wmodel, inp, work / f"{tag}.bw.out"], None),
                    ("baseline (CRF++ model)", base_env,
                     [*spargel, "label", "-m", cmodel, inp, work / f"{tag}.bc.out"], None)]
        return out

    ok = True
    print(f"{args.runs} runs each, medians; CPU = user + system of the process")
    print(f"{'input':6} {'command':30} {'wall s':>8} {'CPU s':>8}")
    # the floor of any labeller written in Python: the interpreter, and numpy's import
    # (with OpenBLAS's default threads, and with one, as spargel label loads it)
    one_thread = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    floor = [("python -c pass", None, [sys.executable, "-c", "pass"]),
             ("python -S -c pass", None, [sys.executable, "-S", "-c", "pass"]),
             ("python -c 'import numpy'", None, [sys.executable, "-c", "import numpy"]),
             ("  the same, 1 OpenBLAS thread", one_thread, [sys.executable, "-c", "import numpy"])]
    for name, env, cmd in floor:
        walls, cpus = [], []
        for i in range(args.runs + 1):
            w, c = timed(cmd, env)
            if i:
                walls.append(w)
                cpus.append(c)
        print(f"{'-':6} {name:30} {statistics.median(walls):8.3f} {statistics.median(cpus):8.3f}", flush=True)
    for tag, inp in inputs.items():
        results = {}
        for name, env, cmd, stdout_path in commands(inp, tag):
            walls, cpus = [], []
            for i in range(args.runs + 1):       # run 0 warms the caches (files, numba)
                if stdout_path is not None:
                    with open(stdout_path, "wb") as f:
                        w, c = timed(cmd, env, f)
                else:
                    w, c = timed(cmd, env)
                if i:
                    walls.append(w)
                    cpus.append(c)
            results[name] = (statistics.median(walls), statistics.median(cpus))
            print(f"{tag:6} {name:30} {results[name][0]:8.3f} {results[name][1]:8.3f}", flush=True)
        pairs = [("wapiti label", "spargel label (Wapiti model)"), ("crf_test", "spargel label (CRF++ model)")]
        if base_env is not None:
            pairs += [("wapiti label", "baseline (Wapiti model)"), ("crf_test", "baseline (CRF++ model)")]
        for tool, ours in pairs:
            (tw, tc), (sw, sc) = results[tool], results[ours]
            print(f"{tag:6} {ours} / {tool}: wall {sw / tw:.2f}x, CPU {sc / tc:.2f}x")
        outs = {"wapiti": (work / f"{tag}.wapiti.out", work / f"{tag}.spw.out"),
                "crfpp": (work / f"{tag}.crftest.out", work / f"{tag}.spc.out")}
        if base_env is not None:
            outs.update({"wapiti (baseline)": (work / f"{tag}.wapiti.out", work / f"{tag}.bw.out"),
                         "crfpp (baseline)": (work / f"{tag}.crftest.out", work / f"{tag}.bc.out")})
        for kind, (theirs, ours) in outs.items():
            a, b = labels_of(theirs), labels_of(ours)
            same = sum(x == y for x, y in zip(a, b))
            identical = theirs.read_bytes() == ours.read_bytes()
            print(f"{tag:6} {kind} model: {same}/{len(a)} labels identical"
                  f"{' (spargel has ' + str(len(b)) + ')' if len(a) != len(b) else ''}; "
                  f"whole output {'byte-identical' if identical else 'differs in layout'}")
            ok &= len(a) == len(b) == same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
