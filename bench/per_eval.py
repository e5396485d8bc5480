"""Seconds per loss + gradient evaluation of the CRF, and of CRFsuite, on the data and
attributes of ``bench/conll2000.py`` (one run, so that the ratios compare like with like).

spargel: ``ChainCRF.loss_grad`` at w = 0 and at a random 10%-non-zero w, one and two
threads, median of 7 after a warm-up call; and (``fit``) the time per evaluation over
25 OWL-QN iterations at l1 = 1 from w = 0 (wall time of the solver over its number of
evaluations), the way CRFsuite is measured. CRFsuite (``--crfsuite``): its own
per-iteration times over its gradient evaluations in 25 L-BFGS iterations with c1 = 1. ``--src``
times another checkout's ``src`` folder instead (e.g. an older version) with the same
data, for before / after comparisons; prints one JSON line.

    python bench/per_eval.py --dataset conll2000 --crfsuite
    python bench/per_eval.py --dataset conll2002 --src ../old-checkout/src
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def crfsuite_per_eval(train, template):
    import pycrfsuite
    from spargel.data.templates import Template

    tpl = Template.parse(template)
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in train:
        trainer.append(pycrfsuite.ItemSequence(tpl.extract(s.columns, pad=False)[0]), s.labels)
    trainer.select("lbfgs")
    trainer.set_params({"c1": 1.0, "c2": 0.0, "max_iterations": 25})
    with tempfile.TemporaryDirectory() as d:
        trainer.train(str(Path(d) / "model"))
    its = trainer.logparser.iterations
    return sum(i["time"] for i in its) / sum(int(i.get("linesearch_trials", 1)) for i in its)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=["conll2000", "conll2002"], default="conll2000")
    ap.add_argument("--crfsuite", action="store_true", help="also time python-crfsuite")
    ap.add_argument("--src", help="a spargel src folder to time instead of the installed one")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import conll2000 as bench
    import spargel
    from spargel.chain.crf import ChainCRF

    train = bench.load(args, "train")
    template = bench.template(args)
    out = {"dataset": args.dataset, "spargel": str(Path(spargel.__file__).parent)}
    if args.crfsuite:
        out["crfsuite"] = crfsuite_per_eval(train, template)
    est = spargel.CRF(template=template, pad=False)
    data = est._dataset(train, [s.labels for s in train], grow=True)
    space = est._feature_space(data)
    rng = np.random.default_rng(0)
    weights = {"w0": np.zeros(space.n_params),
               "w10": np.where(rng.random(space.n_params) < 0.1, rng.normal(scale=0.5, size=space.n_params), 0.0)}
    from spargel.core.penalties import ElasticNet
    from spargel.solvers.owlqn import minimize_owlqn

    for n_jobs in (1, 2):
        model = ChainCRF(space, data, n_jobs=n_jobs)
        minimize_owlqn(model, ElasticNet(l1=1.0), max_iter=2)      # warm-up: load the solver's kernels
        n0, t = model.n_evals, time.perf_counter()
        minimize_owlqn(model, ElasticNet(l1=1.0), max_iter=25, tol=0.0, gtol=0.0)
        out[f"spargel_{n_jobs}thr_fit"] = (time.perf_counter() - t) / (model.n_evals - n0)
        for name, w in weights.items():
            model.loss_grad(w)
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                model.loss_grad(w)
                times.append(time.perf_counter() - t)
            out[f"spargel_{n_jobs}thr_{name}"] = float(np.median(times))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
