"""OWL-QN's progress per iteration: spargel vs CRFsuite (libLBFGS) on the same objective.

CoNLL-2000 chunking, CRFsuite's classic chunking attributes (the attribute lists of
``bench/conll2000.py``, no features past the sentence edges), the "observed" feature
space, ``sum -log p(y|x) + 1 * ||w||_1`` (CRFsuite ``lbfgs`` with c1 = 1, c2 = 0;
spargel OWL-QN with l1 = 1, l2 = 0), one thread each, in the same run (one process
each, one after the other unless ``--parallel``).

Both run ``--max-iter`` iterations with their relative-change stopping rule switched
off (CRFsuite ``delta = 0``, spargel ``tol = 0``), so that both are measured over the
same iterations; each still stops early on its gradient test or a failed line search.
Reported, per iteration as each learner logs it (CRFsuite's own ``loss``, spargel's
``objective``, the same quantity):

* the objective at iteration ``--check-iter`` (100) and at a few later iterations;
  target: spargel's <= CRFsuite's + 0.05%;
* gradient evaluations per iteration over the whole training (CRFsuite's line-search
  trials; spargel's ``n_evals``); target: spargel's <= CRFsuite's;
* the time spargel takes to reach CRFsuite's final objective against CRFsuite's
  training time (both the optimiser's own clock: after the data are prepared, wall and
  CPU time of the process); target: <= 0.35x.

Then, with spargel's default stopping rule (``--default-rule``, off by default: one
more training), the iteration where it stops, its objective and time, and the test
chunk F1 of that model against the one of the ``--max-iter`` model.

    python bench/owlqn_vs_crfsuite.py [--max-iter 1000] [--check-iter 100] [--parallel]
                                      [--default-rule] [--sentences N] [--markdown FILE]

Timings on a loaded machine are noisy; the CPU-time ratio is the steadier one.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, run_worker  # noqa: E402

C1 = 1.0
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def load(args):
    from spargel.data.conll import read_conll
    d = data_dir("conll2000")
    train = list(read_conll(d / "train.txt"))
    return train[:args.sentences] if args.sentences else train, list(read_conll(d / "test.txt"))


def worker_crfsuite(args):
    import pycrfsuite
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE, Template

    rows = []

    class Trainer(pycrfsuite.Trainer):
        def on_iteration(self, log, info):
            rows.append({"iteration": int(info["num"]), "objective": float(info["loss"]),
                         "trials": int(info.get("linesearch_trials", 1)), "active": int(info["active_features"]),
                         "cpu": time.process_time() - self.c0, "wall": time.perf_counter() - self.t0})

    tpl = Template.parse(CRFSUITE_CHUNKING_TEMPLATE)
    train, _ = load(args)
    trainer = Trainer(verbose=True)          # python-crfsuite calls on_iteration only when verbose
    for s in train:
        trainer.append(pycrfsuite.ItemSequence(tpl.extract(s.columns, pad=False)[0]), s.labels)
    trainer.select("lbfgs")
    trainer.set_params({"c1": C1, "c2": 0.0, "max_iterations": args.max_iter, "delta": 0.0})
    with tempfile.TemporaryDirectory() as tmp:
        trainer.t0, trainer.c0 = time.perf_counter(), time.process_time()
        trainer.train(str(Path(tmp) / "model"))
    n_evals = 1                          # libLBFGS evaluates the start once, as spargel does
    for r in rows:
        n_evals += r.pop("trials")
        r["n_evals"] = n_evals
    return {"rows": rows}


def worker_spargel(args):
    import warnings
    import spargel
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE
    from spargel.metrics import chunk_f1

    train, test = load(args)
    y = [s.labels for s in train]
    # load the compiled kernels first (their first-use compilation is not timed)
    spargel.CRF(l1=C1, template=CRFSUITE_CHUNKING_TEMPLATE, pad=False, n_jobs=1, max_iter=2).fit(train[:50], y[:50])
    cpu = []
    start = {}

    def callback(row):
        cpu.append(time.process_time() - start["cpu"])

    rule = {"tol": 0.0} if args.which == "fixed" else {}
    crf = spargel.CRF(l1=C1, l2=0.0, feature_space="observed", template=CRFSUITE_CHUNKING_TEMPLATE, pad=False,
                      n_jobs=1, max_iter=args.max_iter, **rule)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        start["cpu"] = time.process_time()
        crf.fit(train, y, callback=callback)
        fit_s = time.perf_counter() - t0
    rows = [{"iteration": r["iteration"], "objective": r["objective"], "n_evals": r["n_evals"], "active": r["active"],
             "wall": r["elapsed"], "cpu": c} for r, c in zip(crf.history_, cpu)]
    f1 = 100 * chunk_f1([s.labels for s in test], crf.predict(test))
    return {"rows": rows, "stop": crf.stop_reason_, "fit_s": fit_s, "f1": f1}


def at(rows, iteration):
    """The row of ``iteration`` (the last one if the run ended before it)."""
    for r in rows:
        if r["iteration"] >= iteration:
            return r
    return rows[-1]


def summarise(cs, sp, check_iter):
    cs_rows, sp_rows = cs["rows"], sp["rows"]
    lines = []
    marks = sorted({check_iter, 250, 500, cs_rows[-1]["iteration"]} & set(range(1, cs_rows[-1]["iteration"] + 1)))
    lines.append("| iteration | CRFsuite objective | spargel objective | gap | CRFsuite evals | spargel evals |")
    lines.append("|---|---|---|---|---|---|")
    for k in marks:
        c, s = at(cs_rows, k), at(sp_rows, k)
        lines.append(f"| {k} | {c['objective']:.2f} | {s['objective']:.2f} | "
                     f"{100 * (s['objective'] - c['objective']) / c['objective']:+.3f}% | {c['n_evals']} | "
                     f"{s['n_evals']} |")
    c100, s100 = at(cs_rows, check_iter), at(sp_rows, check_iter)
    gap = (s100["objective"] - c100["objective"]) / c100["objective"]
    cs_rate = cs_rows[-1]["n_evals"] / cs_rows[-1]["iteration"]
    sp_rate = sp_rows[-1]["n_evals"] / sp_rows[-1]["iteration"]
    target = cs_rows[-1]["objective"]
    reach = next((r for r in sp_rows if r["objective"] <= target), None)
    checks = [
        (f"objective at iteration {check_iter} <= CRFsuite's + 0.05%", f"{100 * gap:+.3f}%", gap <= 5e-4),
        ("evaluations per iteration <= CRFsuite's",
         f"{sp_rate:.3f} ({sp_rows[-1]['n_evals']} / {sp_rows[-1]['iteration']}) vs {cs_rate:.3f} "
         f"({cs_rows[-1]['n_evals']} / {cs_rows[-1]['iteration']})", sp_rate <= cs_rate),
    ]
    if reach is None:
        checks.append(("time to CRFsuite's final objective <= 0.35x", "not reached", False))
    else:
        ratio_cpu = reach["cpu"] / cs_rows[-1]["cpu"]
        ratio_wall = reach["wall"] / cs_rows[-1]["wall"]
        checks.append(("time to CRFsuite's final objective <= 0.35x (CPU)",
                       f"{ratio_cpu:.2f}x (iteration {reach['iteration']}: {reach['cpu']:.1f} s vs "
                       f"{cs_rows[-1]['cpu']:.1f} s; wall {ratio_wall:.2f}x)", ratio_cpu <= 0.35))
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in checks]
    lines.append("")
    lines.append(f"CRFsuite: {cs_rows[-1]['iteration']} iterations, final objective {target:.3f}; spargel: "
                 f"{sp_rows[-1]['iteration']} iterations ({sp['stop']}), final objective "
                 f"{sp_rows[-1]['objective']:.3f}, test chunk F1 {sp['f1']:.2f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--check-iter", type=int, default=100)
    ap.add_argument("--sentences", type=int, default=None, help="only the first N training sentences (quick runs)")
    ap.add_argument("--parallel", action="store_true", help="train both at once (a machine with 2+ free cores)")
    ap.add_argument("--default-rule", action="store_true",
                    help="also train spargel with its default stopping rule and compare the test F1")
    ap.add_argument("--markdown", help="also write the report to this file")
    ap.add_argument("--worker", choices=["crfsuite", "spargel"], help=argparse.SUPPRESS)
    ap.add_argument("--which", choices=["fixed", "default"], default="fixed", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps({"crfsuite": worker_crfsuite, "spargel": worker_spargel}[args.worker](args)))
        return
    data_dir("conll2000")
    common = ["--max-iter", str(args.max_iter)] + (["--sentences", str(args.sentences)] if args.sentences else [])
    jobs = [("crfsuite", ["--worker", "crfsuite", *common]), ("spargel", ["--worker", "spargel", *common])]
    if args.default_rule:
        jobs.append(("default", ["--worker", "spargel", "--which", "default", *common]))
    if args.parallel:
        import os
        env = dict(os.environ, **ONE_THREAD)
        procs = {name: subprocess.Popen([sys.executable, __file__, *a], stdout=subprocess.PIPE, text=True, env=env)
                 for name, a in jobs}
        out = {}
        for name, p in procs.items():
            stdout, _ = p.communicate()
            if p.returncode != 0:
                raise RuntimeError(f"worker {name} failed with exit code {p.returncode}")
            out[name] = json.loads(stdout.strip().splitlines()[-1])
    else:
        out = {}
        for name, a in jobs:
            print(f"training {name} ...", file=sys.stderr)
            out[name] = run_worker(__file__, a, ONE_THREAD)
    n = f"the first {args.sentences} training sentences" if args.sentences else "the whole training set"
    text = (f"CoNLL-2000 ({n}), CRFsuite's chunking attributes, l1 = 1, one thread, {args.max_iter} iterations at most"
            f"{' (both trained at once)' if args.parallel else ''}\n\n" + summarise(out["crfsuite"], out["spargel"],
                                                                                     args.check_iter))
    if args.default_rule:
        d, full = out["default"], out["spargel"]
        last = d["rows"][-1]
        text += (f"\n\nDefault stopping rule: stopped after {last['iteration']} iterations ({d['stop']}), objective "
                 f"{last['objective']:.3f}, solver time {last['wall']:.1f} s wall / {last['cpu']:.1f} s CPU "
                 f"(the {full['rows'][-1]['iteration']}-iteration run: {full['rows'][-1]['wall']:.1f} s / "
                 f"{full['rows'][-1]['cpu']:.1f} s); test chunk F1 {d['f1']:.2f} vs {full['f1']:.2f} "
                 f"({d['f1'] - full['f1']:+.2f})")
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
