"""Thousands of labels: a synthetic tagging task of Wapiti issue #27's shape, scaled down.

Wapiti #27 trained 1,524 labels with 118 M features (every observation with every
label) on 17.8 M sequences. This script generates a task with the same label count and
a chosen number of observations from a known model, then trains spargel and (where it
runs) Wapiti 1.5 on the same file with the same pattern, each in its own process, and
reports seconds per iteration, peak resident memory and token accuracy on held-out
sequences.

The known model: label frequencies follow a Zipf law; each label has a few likely
successors (a sparse transition structure: with probability 0.8 the next label is one
of them, else a fresh Zipf draw); every token has ``--columns`` columns -- a word drawn
from its label's own small lexicon (10% of the time a shared ambiguous word), a
label-cluster code (a weak signal), then noise columns drawn uniformly from
``--noise-vocab`` values each. The pattern takes every column at the token and the
previous token's word (``U`` lines) and a ``B`` line (transitions), so a token has
``columns + 1`` active attributes and the model ``A x L`` observation weights.

spargel trains with ``all_possible_states=True`` (every attribute with every label, as
Wapiti) and transition weights for the label pairs seen in training (CRFsuite's
``possible_transitions=False``, spargel's default), so its forward-backward takes the
sparse transition step; ``--full`` gives it every label pair a weight instead (a dense
L x L step per token, Wapiti's model).

    python bench/many_labels.py --sequences 600 --noise-vocab 20000 [--labels 1524] \\
        [--solver owlqn|lbfgs|sgd] [--iters 3] [--wapiti PATH] [--wapiti-algo l-bfgs] \\
        [--limit-gb 8] [--predict] [--wapiti-sequences N --wapiti-noise-vocab V] [--wapiti-timeout S]

``--wapiti-sequences`` / ``--wapiti-noise-vocab`` give Wapiti a smaller file of the same
task (its dense L x L forward-backward takes minutes per iteration at this label count),
``--wapiti-timeout`` stops it after that many seconds (its log up to then is reported).
Each run prints one JSON line (sizes, seconds per iteration, peak RSS, accuracy, the
memory formula's estimate; ``docs/benchmarks.md``, "Thousands of labels"). A child
process whose resident memory passes ``--limit-gb`` is killed and reported as such.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the task
def generate(n_seq, L=1524, columns=9, noise_vocab=20000, words_per_label=10, successors=6, seed=0,
             min_len=10, max_len=30):
    """(sequences, labels): per sequence a list of tokens (lists of column strings) and
    its label names, drawn from the known model of the module documentation."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(2, L + 2)
    p /= p.sum()
    succ = rng.choice(L, size=(L, successors), p=p)
    cluster = rng.integers(0, 64, size=L)
    lengths = rng.integers(min_len, max_len + 1, size=n_seq)
    T = int(lengths.sum())
    # labels: a Markov chain with sparse likely successors
    starts = np.zeros(T, dtype=bool)
    starts[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
    fresh = rng.choice(L, size=T, p=p)
    stay = rng.random(T) < 0.8
    # the first L fresh draws are every label once (each label occurs when T is large
    # enough: about 5 L tokens), the others Zipf
    fresh_at = np.flatnonzero(starts | ~stay)[:L]
    fresh[fresh_at] = rng.permutation(L)[:len(fresh_at)]
    pick = rng.integers(0, successors, size=T)
    y = np.empty(T, dtype=np.int64)
    prev = 0
    for t in range(T):
        prev = fresh[t] if (starts[t] or not stay[t]) else succ[prev, pick[t]]
        y[t] = prev
    wz = 1.0 / np.arange(1, words_per_label + 1)
    wz /= wz.sum()
    word_j = rng.choice(words_per_label, size=T, p=wz)
    ambiguous = rng.random(T) < 0.1
    amb_word = rng.integers(0, 2000, size=T)
    clus_ok = rng.random(T) < 0.7
    clus_rand = rng.integers(0, 64, size=T)
    noise = rng.integers(0, noise_vocab, size=(T, max(columns - 2, 0)))
    seqs, labs = [], []
    t = 0
    for n in lengths:
        toks = []
        for k in range(t, t + n):
            word = f"a{amb_word[k]}" if ambiguous[k] else f"w{y[k]}_{word_j[k]}"
            clus = f"c{cluster[y[k]] if clus_ok[k] else clus_rand[k]}"
            toks.append([word, clus] + [f"n{v}" for v in noise[k]])
        seqs.append(toks)
        labs.append([f"L{v}" for v in y[t:t + n]])
        t += n
    return seqs, labs


def pattern(columns):
    """Wapiti's pattern file: every column at the token, the previous word, transitions."""
    lines = [f"U{c:02d}:%x[0,{c}]" for c in range(columns)] + ["U90:%x[-1,0]", "B"]
    return "\n".join(lines) + "\n"


def write_wapiti(path, seqs, labs):
    with open(path, "w", encoding="utf-8") as fh:
        for toks, ys in zip(seqs, labs):
            for cols, lab in zip(toks, ys):
                fh.write(" ".join(cols) + " " + lab + "\n")
            fh.write("\n")


# --------------------------------------------------------------------------- memory
def memory_formula(sizes, solver, memory, l1, n_jobs=1):
    """Bytes spargel's training holds at its peak by the formula of
    :func:`spargel.core.limits.training_bytes` (10 attribute entries a token here)."""
    from spargel.core.limits import training_bytes
    return training_bytes(sizes["labels"], sizes["attributes"], sizes["features"], sizes["tokens"], solver,
                          memory=memory, l1=l1, n_jobs=n_jobs, entries_per_token=10)


# --------------------------------------------------------------------------- workers
def _rss(pid):
    """Resident bytes of a process (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return []


def _cpu_s(pid):
    """User + system CPU seconds of a running process (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def rss_watch(pid, limit, out):
    """Poll the resident memory of the child and of its own children (a program run
    under ``/usr/bin/time``); kill the child past ``limit`` bytes. ``out["child_cpu_s"]``:
    the last CPU seconds seen of the child's children (for a run stopped early)."""
    peak = 0
    while os.path.exists(f"/proc/{pid}/status"):
        rss = _rss(pid)
        kids = _children(pid)
        rss = max([rss] + [_rss(k) for k in kids])
        if not rss and not kids:
            break
        peak = max(peak, rss)
        if rss > limit:
            os.kill(pid, 9)
            out["killed"] = True
        cpu = [c for c in (_cpu_s(k) for k in kids) if c is not None]
        if cpu:
            out["child_cpu_s"] = max(cpu)
        out["peak"] = peak
        time.sleep(0.1)


def run_watched(cmd, limit, env=None, stdout=None, timeout=None):
    """Run ``cmd``, its resident memory watched (killed past ``limit`` bytes) and, with
    ``timeout``, stopped after that many seconds (``info["timed_out"]``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=bool(timeout))
    info = {"killed": False, "peak": 0, "timed_out": False}
    th = threading.Thread(target=rss_watch, args=(proc.pid, limit, info), daemon=True)
    th.start()
    if timeout:
        def stop():
            if proc.poll() is None:
                info["timed_out"] = True
                os.killpg(proc.pid, 15)         # its own group: /usr/bin/time and what it runs
        timer = threading.Timer(timeout, stop)
        timer.daemon = True
        timer.start()
    lines = []
    stamps = []
    for line in proc.stdout:
        lines.append(line)
        stamps.append(time.perf_counter() - t0)
        if stdout is not None:
            stdout.write(line)
            stdout.flush()
    proc.wait()
    th.join(timeout=1)
    return proc.returncode, lines, stamps, info, time.perf_counter() - t0


def spargel_worker(args):
    """Train spargel in this process; print one JSON line."""
    import resource

    from spargel import CRF

    t0 = time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = ru0.ru_utime + ru0.ru_stime
    seqs, labs = generate(args.sequences + args.test, args.labels, args.columns, args.noise_vocab, seed=args.seed)
    Xtr, ytr = seqs[:args.sequences], labs[:args.sequences]
    Xte, yte = seqs[args.sequences:], labs[args.sequences:]
    del seqs, labs
    t_gen = time.perf_counter() - t0
    solver = {"owlqn": "owlqn", "lbfgs": "lbfgs", "sgd": "sgd-l1"}[args.solver]
    opts = {"memory": args.memory} if solver in ("owlqn", "lbfgs") else {"eta0": 0.05, "calibration_samples": 50}
    l1 = 0.0 if solver == "lbfgs" else 0.05
    iters = []

    def cb(row):
        iters.append((row["iteration"], time.perf_counter(), row.get("objective"), time.process_time()))
        print(f"iteration {row['iteration']}: {iters[-1][1] - t1:.1f} s, objective {row.get('objective')}",
              file=sys.stderr, flush=True)

    crf = CRF(template="# format: wapiti\n" + pattern(args.columns), solver=solver, l1=l1, l2=0.0,
              max_iter=args.iters, tol=0, gtol=0, all_possible_states=True,
              all_possible_transitions=bool(args.full), solver_options=opts, n_jobs=args.n_jobs)
    t1 = time.perf_counter()
    c1 = time.process_time()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf.fit(Xtr, ytr, callback=cb)
    t_fit = time.perf_counter() - t1
    ru = resource.getrusage(resource.RUSAGE_SELF)
    rss_fit = ru.ru_maxrss * 1024
    stamps = [t1] + [it[1] for it in iters]
    per_iter = np.diff(stamps)
    cpu_iter = np.diff([c1] + [it[3] for it in iters])
    # the layout as trained (before compaction): from the fitted vocabularies' sizes
    A = crf.n_train_attributes_ if hasattr(crf, "n_train_attributes_") else None
    res = {"tool": "spargel", "solver": solver, "labels": args.labels, "train_sequences": args.sequences,
           "train_tokens": int(sum(len(s) for s in Xtr)), "iters": len(iters),
           "fit_s": round(t_fit, 1), "gen_s": round(t_gen, 1),
           "cpu_s_total": round(ru.ru_utime + ru.ru_stime - cpu0, 1),
           "first_iter_s": round(float(per_iter[0]), 1) if len(per_iter) else None,
           "s_per_iter_after_first": round(float(np.median(per_iter[1:])), 1) if len(per_iter) > 1 else None,
           "cpu_s_per_iter": [round(float(x), 1) for x in cpu_iter],
           "peak_rss_gb_fit": round(rss_fit / 2 ** 30, 2), "full": bool(args.full),
           "n_jobs": args.n_jobs}
    res.update(task_sizes(Xtr, ytr, args.labels, args.full))
    res["formula_gb"] = round(memory_formula(dict(res, labels=args.labels), solver, args.memory, l1 > 0,
                                             args.n_jobs) / 2 ** 30, 2)
    if args.predict:
        import resource as _r
        t2 = time.perf_counter()
        pred = crf.predict(Xte)
        t_pred = time.perf_counter() - t2
        gold = [v for s in yte for v in s]
        got = [v for s in pred for v in s]
        res["accuracy"] = round(float(np.mean(np.array(gold) == np.array(got))), 4)
        res["test_tokens"] = len(gold)
        res["predict_tokens_per_s"] = round(len(gold) / t_pred, 1)
        res["peak_rss_gb"] = round(_r.getrusage(_r.RUSAGE_SELF).ru_maxrss * 1024 / 2 ** 30, 2)
    print(json.dumps(res), flush=True)


def task_sizes(X, y, L, full):
    """Attributes A (distinct strings the pattern makes), label pairs seen, features F as
    spargel lays them out (``all_possible_states``: A x L, plus the transitions), tokens T
    and the longest sequence."""
    attrs = set()
    pairs = set()
    for toks, labs in zip(X, y):
        for t, cols in enumerate(toks):
            for c, v in enumerate(cols):
                attrs.add((c, v))
            attrs.add((90, toks[t - 1][0] if t else None))
        pairs.update(zip(labs[:-1], labs[1:]))
    A = len(attrs)
    n_trans = L * L if full else len(pairs)
    return {"attributes": A, "seen_pairs": len(pairs), "features": A * L + n_trans,
            "tokens": sum(len(s) for s in X), "max_len": max(len(s) for s in X)}


ITER = re.compile(r"^\s*\[\s*(\d+)\]")


def wapiti_run(args, train_path, pat_path, test_path, tmp):
    model = os.path.join(tmp, "wapiti.model")
    algo = args.wapiti_algo
    cmd = [args.wapiti, "train", "-a", algo, "-i", str(args.iters), "-p", pat_path, "-t", str(args.n_jobs),
           "-1", "0.05" if algo != "l-bfgs" or args.solver != "lbfgs" else "0", "-2", "0"]
    if algo == "l-bfgs":
        cmd += ["--histsz", str(args.memory)]
    cmd += [train_path, model]
    rc, lines, stamps, info, wall = run_watched(["/usr/bin/time", "-v"] + cmd, int(args.limit_gb * 2 ** 30),
                                                timeout=args.wapiti_timeout)
    text = "".join(lines)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    peak = int(m.group(1)) * 1024 if m else info["peak"]
    it_stamps = [s for line, s in zip(lines, stamps) if ITER.match(line)]
    times = [float(x) for x in re.findall(r"time=\s*([0-9.]+)", text)]
    nfeat = re.search(r"nb features:\s*(\d+)", text, re.IGNORECASE)
    res = {"tool": "wapiti", "algo": algo, "rc": rc, "killed_at_limit": info["killed"],
           "stopped_at_timeout": info["timed_out"], "train_sequences": args.wapiti_sequences or args.sequences,
           "peak_rss_gb": round(max(peak, info["peak"]) / 2 ** 30, 2), "wall_s": round(wall, 1),
           "iters": len(it_stamps), "features": int(nfeat.group(1)) if nfeat else None,
           "cpu_s": info.get("child_cpu_s"),
           "s_per_iter": round(float(np.median(np.diff(times))), 1) if len(times) > 1 else
           (times[0] if times else None)}
    res["log"] = "".join(ln for ln in lines if "\t" not in ln)[-1500:]      # Wapiti's own lines
    if rc != 0 and not info["killed"]:
        res["tail"] = text[-600:]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", type=int, default=1524)
    ap.add_argument("--sequences", type=int, default=600)
    ap.add_argument("--test", type=int, default=100)
    ap.add_argument("--columns", type=int, default=9)
    ap.add_argument("--noise-vocab", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solver", default="owlqn", choices=("owlqn", "lbfgs", "sgd"))
    ap.add_argument("--memory", type=int, default=6, help="L-BFGS / OWL-QN curvature pairs")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="spargel: every label pair a transition weight")
    ap.add_argument("--predict", action="store_true", help="also tag the held-out sequences")
    ap.add_argument("--wapiti", default=None, help="path of Wapiti 1.5's binary (skipped when absent)")
    ap.add_argument("--wapiti-algo", default="l-bfgs")
    ap.add_argument("--wapiti-sequences", type=int, default=None,
                    help="Wapiti: train on this many sequences instead (a smaller file)")
    ap.add_argument("--wapiti-noise-vocab", type=int, default=None, help="Wapiti: the smaller file's noise vocabulary")
    ap.add_argument("--wapiti-timeout", type=float, default=None, help="Wapiti: stop it after this many seconds")
    ap.add_argument("--skip-spargel", action="store_true")
    ap.add_argument("--limit-gb", type=float, default=8.0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        spargel_worker(args)
        return
    out = []
    if not args.skip_spargel:
        cmd = [sys.executable, __file__, "--worker"] + [a for a in sys.argv[1:] if a != "--worker"]
        rc, lines, _, info, wall = run_watched(cmd, int(args.limit_gb * 2 ** 30), env=os.environ.copy(),
                                               stdout=sys.stderr)
        res = json.loads(lines[-1]) if rc == 0 else {"tool": "spargel", "rc": rc, "tail": "".join(lines)[-600:]}
        res["killed_at_limit"] = info["killed"]
        res["peak_rss_gb_watch"] = round(info["peak"] / 2 ** 30, 2)
        out.append(res)
    if args.wapiti and os.path.exists(args.wapiti):
        with tempfile.TemporaryDirectory() as tmp:
            n_train = args.wapiti_sequences or args.sequences
            seqs, labs = generate(n_train + args.test, args.labels, args.columns,
                                  args.wapiti_noise_vocab or args.noise_vocab, seed=args.seed)
            train_path, test_path, pat_path = (os.path.join(tmp, n) for n in ("train.txt", "test.txt", "pat.txt"))
            write_wapiti(train_path, seqs[:n_train], labs[:n_train])
            write_wapiti(test_path, seqs[n_train:], labs[n_train:])
            Path(pat_path).write_text(pattern(args.columns))
            del seqs, labs
            out.append(wapiti_run(args, train_path, pat_path, test_path, tmp))
    for r in out:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
