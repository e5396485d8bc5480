"""Every fit route's outputs on small data, saved to one ``.npz``: a refactoring of the
estimators must leave them bit for bit the same.

Fits the chain ``CRF`` with every solver at orders 1 and 2 (feature dicts from the tiny
chunking corpus in ``tests/data``), a template model (CRF++ patterns with bigram
attributes, and Wapiti's) and Wapiti's maxent models on both templates, constrained
training, warm starts, ``partial_fit``, the l1 path, the CRF++ / Wapiti / CRFsuite model
files (the bytes written and the predictions of the files read back), the
python-crfsuite ``Trainer``'s log, and the log-linear classifier with several solvers;
saves weights, predictions, marginals, n-best lists,
probabilities, histories' objectives and the files' bytes. A solver a model refuses
saves its error message. Then ``--compare`` checks two such files with
``np.array_equal``::

    python bench/saved_outputs.py --out before.npz          # on the old code
    python bench/saved_outputs.py --out after.npz           # on the new code
    python bench/saved_outputs.py --compare before.npz after.npz
"""

import argparse
import io
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
CHAIN_SOLVERS = ("lbfgs", "owlqn", "sgd-l1", "cd", "bcd", "fista", "bound", "grafting-light", "grafting",
                 "gauss-seidel", "ap", "pa", "arow", "l2sgd", "mira", "rprop", "rprop+", "rprop-")
FLAT_SOLVERS = ("owlqn", "lbfgs", "sgd-l1", "bcd", "cd", "fista", "bound")


def read(name):
    sents, cur = [], []
    for line in (DATA / name).read_text().splitlines():
        if not line.strip():
            if cur:
                sents.append(cur)
            cur = []
        else:
            cur.append(line.split())
    if cur:
        sents.append(cur)
    return sents


def dicts(sents):
    X = []
    for s in sents:
        seq = []
        for t, row in enumerate(s):
            f = {"w": row[0].lower(), "p": row[1], "cap": row[0][:1].isupper()}
            if t:
                f["p-1"] = s[t - 1][1]
            if t + 1 < len(s):
                f["p+1"] = s[t + 1][1]
            seq.append(f)
        X.append(seq)
    return X, [[row[-1] for row in s] for s in sents]


def columns(sents):
    return [[row[:-1] for row in s] for s in sents], [[row[-1] for row in s] for s in sents]


class Saver:
    def __init__(self):
        self.out = {}

    def put(self, key, value):
        if key in self.out:
            raise KeyError(key)
        self.out[key] = value

    def array(self, key, value):
        self.put(key, np.asarray(value))

    def text(self, key, value):
        self.put(key, np.frombuffer(repr(value).encode("utf-8"), np.uint8))

    def error(self, key, exc):
        self.text(key + "/error", f"{type(exc).__name__}: {exc}")


def save_crf(s, key, crf, X):
    s.array(key + "/weights", crf.weights_)
    for name in ("u_ptr", "u_lab", "b_ptr", "b_pair", "t_pair"):
        s.array(f"{key}/space/{name}", getattr(crf.space_, name))
    s.text(key + "/classes", list(crf.classes_))
    s.text(key + "/attributes", crf.attributes_)
    s.text(key + "/predict", crf.predict(X))
    s.array(key + "/marginals", [[m[c] for c in crf.classes_] for seq in crf.predict_marginals(X) for m in seq])
    s.text(key + "/nbest", crf.predict_nbest(X[:5], k=3))
    hist = crf.__dict__.get("history_") or []
    s.array(key + "/objective", [r.get("objective", np.nan) for r in hist])
    s.text(key + "/fit", (crf.__dict__.get("n_iter_"), crf.__dict__.get("stop_reason_"),
                          crf.__dict__.get("objective_"), crf.n_active_features_))


def file_bytes(crf, fmt, **kw):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m")
        crf.save(path, format=fmt, **kw)
        data = Path(path).read_bytes()
    return np.frombuffer(data, np.uint8)


def chain(s):
    from spargel import CRF
    train, test = read("tiny_chunks_train.txt"), read("tiny_chunks_test.txt")
    X, y = dicts(train)
    Xt, _ = dicts(test)
    for order in (1, 2):
        for solver in CHAIN_SOLVERS:
            key = f"crf/order{order}/{solver}"
            params = dict(solver=solver, max_iter=25, order=order, n_jobs=1, random_state=3)
            if solver in ("lbfgs", "l2sgd", "ap", "pa", "arow", "mira", "rprop", "rprop+", "rprop-"):
                params["l1"] = 0.0
                params["l2"] = 0.1 if solver not in ("ap", "pa", "arow", "mira") else 0.0
            else:
                params["l1"], params["l2"] = 0.3, 0.05
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    crf = CRF(**params).fit(X, y)
                except Exception as exc:            # a refused combination: its message
                    s.error(key, exc)
                    continue
            save_crf(s, key, crf, Xt)
    # sklearn-crfsuite's spellings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.01, max_iterations=30, all_possible_transitions=True,
                  min_freq=1).fit(X, y)
        save_crf(s, "crf/crfsuite_params", crf, Xt)
        s.array("crf/crfsuite_params/file", file_bytes(crf, "crfsuite"))
        s.array("crf/crfsuite_params/size", crf.size_)
        s.text("crf/crfsuite_params/state_features", sorted(crf.state_features_.items()))
        s.text("crf/crfsuite_params/transitions", sorted(crf.transition_features_.items()))
        info = crf.tagger_.info()
        s.text("crf/crfsuite_params/info", (info.header, info.labels, sorted(info.transitions.items())))
        tagger = crf.tagger_
        tagger.set(Xt[0])
        s.text("crf/crfsuite_params/tagger", (tagger.tag(), tagger.probability(tagger.tag()),
                                              tagger.marginal(tagger.labels()[0], 0)))
        crf = CRF(algorithm="l2sgd", c2=0.5, max_iterations=5, random_state=1).fit(X, y)
        save_crf(s, "crf/l2sgd_params", crf, Xt)
        # warm start
        crf = CRF(l1=0.5, max_iter=10, warm_start=True).fit(X[:40], y[:40])
        crf.set_params(l1=0.2).fit(X, y)
        save_crf(s, "crf/warm_start", crf, Xt)
        crf = CRF(l1=0.5, max_iter=10, warm_start=True, order=2).fit(X[:40], y[:40])
        crf.set_params(l1=0.2).fit(X, y)
        save_crf(s, "crf/warm_start2", crf, Xt)
        # dev scores in the history, a callback with weights
        rows = []

        def cb(row, w):
            rows.append(float(np.dot(w, w)))
        cb.with_weights = True
        crf = CRF(l1=0.2, max_iter=8).fit(X, y, X_dev=Xt, y_dev=dicts(test)[1], callback=cb)
        s.array("crf/dev/acc", [r["dev_accuracy"] for r in crf.history_])
        s.array("crf/dev/norms", rows)
        # sample weights and partial labels
        sw = np.arange(len(X)) % 3 + 1.0
        y_part = [[lab if (i + t) % 5 else None for t, lab in enumerate(seq)] for i, seq in enumerate(y)]
        crf = CRF(l1=0.2, max_iter=15).fit(X, y_part, sample_weight=sw)
        save_crf(s, "crf/weighted_partial", crf, Xt)
        # streaming
        for order in (1, 2):
            crf = CRF(solver="sgd-l1", l1=0.2, random_state=5, order=order,
                      solver_options={"n_samples": len(X)})
            for lo in range(0, len(X), 30):
                crf.partial_fit(X[lo:lo + 30], y[lo:lo + 30])
            save_crf(s, f"crf/partial_fit{order}", crf, Xt)
        # the l1 path
        from spargel.path import l1_max, path
        s.array("crf/l1_max", l1_max(CRF(), X, y))
        rows = path(CRF(solver="owlqn", max_iter=15), X, y, n_l1=4, X_dev=Xt, y_dev=dicts(test)[1])
        s.text("crf/path", [{k: v for k, v in r.items() if k != "fit_seconds"} for r in rows])
        # constraints, trained with them
        crf = CRF(l1=0.1, max_iter=20, constraints="bio", constrain_training=True).fit(X, y)
        save_crf(s, "crf/constrained", crf, Xt)
    # templates: CRF++'s and Wapiti's, and their files
    cols, ycols = columns(train)
    colst, _ = columns(test)
    for name, tpl_file, fmt in (("crfpp", "tiny_chunks.crfpp_template", None),
                                ("wapiti", "tiny_chunks.wapiti_pattern", "wapiti")):
        tpl = (DATA / tpl_file).read_text()
        if fmt == "wapiti":
            tpl = "# format: wapiti\n" + tpl
        for solver in ("owlqn", "lbfgs", "rprop"):          # Wapiti's maxent models
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                crf = CRF(template=tpl, model_type="maxent", solver=solver, l1=0.0 if solver == "lbfgs" else 0.3,
                          l2=0.01, max_iter=20).fit(cols, ycols)
            save_crf(s, f"tpl/{name}/maxent/{solver}", crf, colst)
        for solver in ("owlqn", "bcd"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                crf = CRF(template=tpl, solver=solver, l1=0.3, l2=0.01, max_iter=20).fit(cols, ycols)
            key = f"tpl/{name}/{solver}"
            save_crf(s, key, crf, colst)
            for f in ("spargel", "wapiti", "crfsuite"):
                try:
                    s.array(f"{key}/file/{f}", file_bytes(crf, f))
                except Exception as exc:
                    s.error(f"{key}/file/{f}", exc)
    tpl2 = (DATA / "tiny_chunks.crfpp_template").read_text() + "T\n"
    crf = CRF(template=tpl2, order=2, l1=0.3, max_iter=15).fit(cols, ycols)
    save_crf(s, "tpl/order2", crf, colst)
    # model files read back
    from spargel import CRF as C
    for f in ("tiny_chunks.wapiti", "tiny_chunks.crfpp.model", "tiny_chunks.crfpp.model.txt",
              "crfsuite_small.crfsuite", "order1_release.spargel"):
        m = C.load(DATA / f)
        key = f"load/{f}"
        s.array(key + "/weights", m.weights_)
        s.text(key + "/classes", list(m.classes_))
        s.text(key + "/attributes", m.attributes_)
        if m.template is not None:
            s.text(key + "/predict", m.predict(colst))
            s.array(key + "/marginals", [[d[c] for c in m.classes_] for seq in m.predict_marginals(colst) for d in seq])
        for g in ("spargel", "wapiti", "crfsuite"):
            try:
                s.array(f"{key}/file/{g}", file_bytes(m, g))
            except Exception as exc:
                s.error(f"{key}/file/{g}", exc)
    # python-crfsuite's Trainer and its log
    from spargel.pycrfsuite import Tagger, Trainer
    for alg in ("lbfgs", "l2sgd", "ap"):
        tr = Trainer(verbose=False)
        for i, (xs, ys) in enumerate(zip(X, y)):
            tr.append([{k: (v if not isinstance(v, bool) else float(v)) for k, v in t.items()} for t in xs], ys,
                      int(i % 4 == 0))
        tr.select(alg)
        tr.set("max_iterations", 6)
        with tempfile.TemporaryDirectory() as d:
            path_ = os.path.join(d, "m.crfsuite")
            tr.train(path_, holdout=1)
            data = Path(path_).read_bytes()
            tg = Tagger().open(path_)
            s.text(f"trainer/{alg}/tag", [tg.tag(x) for x in Xt[:10]])
        s.array(f"trainer/{alg}/file", np.frombuffer(data, np.uint8))
        log = [line for line in tr.logparser.last_log.splitlines() if "econds" not in line] \
            if tr.logparser.last_log else []
        s.text(f"trainer/{alg}/last_log", log)
        s.text(f"trainer/{alg}/iterations", [{k: v for k, v in it.items() if k != "time"}
                                             for it in tr.logparser.iterations])


def flat(s):
    from spargel import LogLinearClassifier
    rng = np.random.default_rng(0)
    Xf = rng.normal(size=(150, 6))
    w = rng.normal(size=(6, 3))
    yf = np.argmax(Xf @ w + rng.gumbel(size=(150, 3)), axis=1)
    for solver in FLAT_SOLVERS:
        for fs in ("full", "observed"):
            key = f"flat/{solver}/{fs}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    clf = LogLinearClassifier(solver=solver, l1=0.5 if solver != "lbfgs" else 0.0, l2=0.1,
                                              max_iter=30, feature_space=fs, random_state=2).fit(Xf, yf)
                except Exception as exc:
                    s.error(key, exc)
                    continue
            s.array(key + "/coef", clf.coef_)
            s.array(key + "/intercept", clf.intercept_)
            s.array(key + "/proba", clf.predict_proba(Xf))
            s.array(key + "/predict", clf.predict(Xf))
            s.array(key + "/objective", [r["objective"] for r in clf.history_])
    train = read("tiny_chunks_train.txt")
    Xd = [{"w": row[0], "p": row[1]} for sent in train for row in sent]
    yd = [row[-1] for sent in train for row in sent]
    clf = LogLinearClassifier(l1=0.2, max_iter=30, warm_start=True).fit(Xd[:300], yd[:300])
    clf.set_params(l1=0.1).fit(Xd, yd)
    s.array("flat/dicts/coef", clf.coef_.toarray())
    s.text("flat/dicts/predict", clf.predict(Xd[:50]).tolist())
    with tempfile.TemporaryDirectory() as d:
        clf.save(os.path.join(d, "m"))
        s.array("flat/dicts/file", np.frombuffer(Path(d, "m").read_bytes(), np.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    args = ap.parse_args()
    if args.compare:
        a, b = (np.load(p) for p in args.compare)
        ka, kb = set(a.files), set(b.files)
        bad = sorted(k for k in ka & kb if not (a[k].shape == b[k].shape and np.array_equal(a[k], b[k],
                                                                                            equal_nan=True)))
        for k in sorted(ka ^ kb):
            print("only in one:", k)
        for k in bad:
            print("differs:", k)
        print(f"{len(ka & kb) - len(bad)} of {len(ka | kb)} arrays identical")
        return 1 if bad or ka ^ kb else 0
    s = Saver()
    chain(s)
    flat(s)
    np.savez(args.out, **s.out)
    print(f"{len(s.out)} arrays -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
