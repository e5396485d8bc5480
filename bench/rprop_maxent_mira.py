"""Wapiti's Rprop and maxent models and CRF++'s MIRA: spargel against the peers on the
same files and features, same run.

The first ``--sentences`` sentences of CoNLL-2000's train.txt (shared data), its whole
test.txt, CRF++'s chunking template (read by all three tools: ``--template``, e.g. the
``example/chunking/template`` of a CRF++ source tree), one thread, every (observation,
label) pair a weight (``--feature-space full``, as the peers). Runs, each peer first:

* ``wapiti train -a rprop`` / ``spargel train -a rprop`` (100 iterations, rho1 0.5,
  rho2 1e-4; Wapiti's error-window stop off, spargel's objective stop off);
* the same with ``-T maxent``; ``-T maxent -a l-bfgs`` (Wapiti stops on its own rule,
  spargel runs as many iterations);
* ``crf_learn -a MIRA -c 1 -H 20 -m 50`` / ``spargel train -a MIRA -c 1 -H 20 -i 50``.

Each model labels test.txt with its own tool; conlleval's accuracy and F1 by ``spargel
eval``; wall and CPU seconds of the training command (``/usr/bin/time``-free: from
``os.wait4``).

    python bench/rprop_maxent_mira.py --wapiti path/to/wapiti --crfpp path/to/crfpp-build \\
        --template path/to/template [--sentences 2000]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import data_dir

REPO = Path(__file__).resolve().parents[1]
SPARGEL = [sys.executable, "-c", "import sys; from spargel.cli.app import main; sys.exit(main())"]


def timed(cmd, log):
    t = time.perf_counter()
    with open(log, "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(map(str, cmd))}; see {log}")
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime


def score(out, work):
    text = Path(out).read_text().replace("\t", " ")
    fixed = Path(work) / (Path(out).name + ".sp")
    fixed.write_text(text)
    line = subprocess.run(SPARGEL + ["eval", str(fixed)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"accuracy:\s+([\d.]+)%.*FB1:\s+([\d.]+)", line)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wapiti", required=True, help="the wapiti binary")
    ap.add_argument("--crfpp", required=True, help="the folder with crf_learn and crf_test")
    ap.add_argument("--template", required=True, help="CRF++'s chunking template")
    ap.add_argument("--sentences", type=int, default=2000)
    args = ap.parse_args()
    conll = data_dir("conll2000")
    work = Path(tempfile.mkdtemp(prefix="rprop-mira-"))
    blocks = conll.joinpath("train.txt").read_text().strip().split("\n\n")[:args.sentences]
    train = work / "train.txt"
    train.write_text("\n\n".join(blocks) + "\n\n")
    test, tpl = conll / "test.txt", args.template
    W, C = args.wapiti, Path(args.crfpp)
    common = ["-p", tpl, "-t", "1", "-1", "0.5", "-2", "0.0001"]
    runs = [
        ("rprop", [W, "train", "-a", "rprop", "-i", "100", "-w", "0", *common],
         ["train", "-q", "-a", "rprop", "-i", "100", "-e", "0", "--feature-space", "full", *common]),
        ("maxent, rprop", [W, "train", "-T", "maxent", "-a", "rprop", "-i", "100", "-w", "0", *common],
         ["train", "-q", "-T", "maxent", "-a", "rprop", "-i", "100", "-e", "0", "--feature-space", "full",
          *common]),
        ("maxent, l-bfgs", [W, "train", "-T", "maxent", "-a", "l-bfgs", "-i", "100", "-w", "0", *common],
         None),
        ("MIRA", [C / "crf_learn", "-a", "MIRA", "-c", "1", "-H", "20", "-p", "1", "-m", "50", tpl],
         ["train", "-q", "-a", "MIRA", "-c", "1", "-H", "20", "-p", tpl, "-t", "1", "-i", "50",
          "--feature-space", "full"]),
    ]
    print("| run | peer acc / F1 | spargel acc / F1 | peer wall / CPU s | spargel wall / CPU s | ratio (wall) |")
    print("|---|---|---|---|---|---|")
    for i, (name, peer, ours) in enumerate(runs):
        pm, sm = work / f"p{i}.mdl", work / f"s{i}.mdl"
        crfpp = name == "MIRA"
        p_cmd = [*peer, train, pm]
        p_wall, p_cpu = timed(list(map(str, p_cmd)), work / f"p{i}.log")
        if ours is None:   # as many iterations as the peer's own stopping rule ran
            its = len(re.findall(r"^\s+\[\s*\d+\]", (work / f"p{i}.log").read_text(), re.M))
            ours = ["train", "-q", "-T", "maxent", "-a", "l-bfgs", "-i", str(its), "--feature-space", "full",
                    *common]
            name += f" ({its} iterations)"
        s_wall, s_cpu = timed(SPARGEL + list(map(str, [*ours, train, sm])), work / f"s{i}.log")
        po, so = work / f"p{i}.out", work / f"s{i}.out"
        with open(po, "w") as fh:
            label = [C / "crf_test", "-m", pm, test] if crfpp else [W, "label", "-m", pm, test]
            subprocess.run(list(map(str, label)), stdout=fh, stderr=subprocess.DEVNULL, check=True)
        subprocess.run(SPARGEL + ["label", "-m", str(sm), str(test), str(so)], check=True)
        pa, pf = score(po, work)
        sa, sf = score(so, work)
        print(f"| {name} | {pa:.2f} / {pf:.2f} | {sa:.2f} / {sf:.2f} | {p_wall:.1f} / {p_cpu:.1f} | "
              f"{s_wall:.1f} / {s_cpu:.1f} | {s_wall / p_wall:.2f} |", flush=True)


if __name__ == "__main__":
    main()
