"""Second-order CRFs on CoNLL-2000: Sha & Pereira's NP chunker, and full chunking.

Part ``np`` (Sha & Pereira 2003; the NP-chunking experiment of the Grafting-Light
paper): CoNLL-2000 (``../shared/data/conll2000``, train and test sections as
distributed) reduced to NP chunks -- B-NP / I-NP kept, every other tag O -- with
Sha & Pereira's feature set (``spargel.data.templates.SHA_PEREIRA_TEMPLATE``: word
unigrams and bigrams and POS unigrams, bigrams and trigrams in a +-2 window, each
conjoined with the current label and with the label pair, a constant predicate on
both, and the label triples). Order 1 is trained on the same features without the
triples (its pair features are the order-1 bigram features and transitions).

Part ``full``: all 22 chunk tags with CRFsuite's classic chunking attributes
(``CRFSUITE_CHUNKING_TEMPLATE``: unigram features and transitions, no feature past
the sentence edges), order 1 against order 2 (the same template plus ``T``).

Both orders of a part are trained in the same run, one after the other, by OWL-QN on
``sum -log p(y|x) + l1 ||w||_1 + l2/2 ||w||^2`` in the "observed" feature space (or
``--feature-space full``), each to its default stopping rule (or ``--max-iter``). Reported per model: parameters (the training layout),
active features, iterations, gradient evaluations, training time, the time per
gradient evaluation (median of ``--repeat`` timed ``loss_grad`` calls at the final
weights) and its ratio to order 1, Viterbi speed, test chunk F1 (conlleval rules) and
token accuracy.

    python bench/np_chunking.py [--part np|full|both] [--threads N] [--l1 X] [--l2 X]
                                [--max-iter N] [--markdown FILE]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table  # noqa: E402


def load(name, np_only):
    from spargel.data.conll import read_conll
    sents = list(read_conll(data_dir("conll2000") / name))
    if np_only:
        for s in sents:
            s.labels = [lab if lab in ("B-NP", "I-NP") else "O" for lab in s.labels]
    return sents


def templates(part):
    """(order-1 template, order-2 template, pad) of a part."""
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE, SHA_PEREIRA_TEMPLATE
    if part == "np":
        first = "\n".join(line for line in SHA_PEREIRA_TEMPLATE.splitlines() if line.strip() != "T")
        return first, SHA_PEREIRA_TEMPLATE, True
    return CRFSUITE_CHUNKING_TEMPLATE, CRFSUITE_CHUNKING_TEMPLATE + "T\n", False


def train_and_score(order, template, pad, train, test, args):
    """Fit like ``CRF.fit`` does (the model is kept for timing); returns a result row."""
    import spargel
    from spargel.estimation import run_solver
    from spargel.metrics import accuracy, chunk_f1
    from spargel.core.factory import make_model
    from spargel.core.penalties import ElasticNet

    est = spargel.CRF(order=order, template=template, pad=pad, l1=args.l1, l2=args.l2, max_iter=args.max_iter,
                      n_jobs=args.threads, feature_space=args.feature_space)
    est._check_params()
    t0 = time.perf_counter()
    data = est._dataset(train, [s.labels for s in train], grow=True)
    space = est._feature_space(data)
    model = make_model(est._model_kind(), space, data, n_jobs=args.threads)
    extract_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run_solver(est, model, ElasticNet(args.l1, args.l2, model.layout.penalty_scale))
    train_s = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t1 = time.perf_counter()
        model.loss_grad(result.w)
        times.append(time.perf_counter() - t1)
    est._set_fitted(space, result.w)
    test_data = est._dataset(test)
    decode = est._inference().decode
    t0 = time.perf_counter()
    ids, _ = decode(est.space_, test_data, est.weights_)
    tag_s = time.perf_counter() - t0
    names = est.classes_
    pred = [[names[i] for i in ids[test_data.seq_ptr[s]:test_data.seq_ptr[s + 1]]] for s in range(len(test))]
    gold = [s.labels for s in test]
    return {"order": order, "labels": len(names), "params": space.n_params, "triples": len(space.t_pair),
            "active": est.n_active_features_, "iterations": result.n_iter, "n_evals": result.n_evals,
            "stop": result.stop_reason, "extract_s": extract_s, "train_s": train_s,
            "per_eval_s": float(np.median(times)), "objective": result.objective,
            "f1": 100 * chunk_f1(gold, pred), "accuracy": 100 * accuracy(gold, pred),
            "tokens_per_s": test_data.n_tokens / tag_s}


COLUMNS = [("part", "task", None), ("penalty", "penalty", None), ("order", "order", None), ("labels", "labels", None),
           ("params", "parameters", "{:,}"), ("triples", "label triples", None), ("active", "active", "{:,}"),
           ("iterations", "iterations", None), ("stop", "stop", None), ("n_evals", "grad evals", None),
           ("train_s", "train (s)", "{:.0f}"),
           ("per_eval_s", "s / grad eval", "{:.3f}"), ("ratio", "vs order 1", "{:.2f}x"),
           ("tokens_per_s", "Viterbi tokens/s", "{:,.0f}"), ("f1", "test F1", "{:.2f}"),
           ("accuracy", "token acc.", "{:.2f}")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("np", "full", "both"), default="both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--l1", type=float, default=1.0)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--feature-space", choices=("observed", "full"), default="observed")
    ap.add_argument("--repeat", type=int, default=5, help="timed gradient evaluations per model")
    ap.add_argument("--orders", default="1,2", help="which orders to train (the ratio column needs order 1)")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    data_dir("conll2000")
    rows = []
    for part in (("np", "full") if args.part == "both" else (args.part,)):
        train, test = load("train.txt", part == "np"), load("test.txt", part == "np")
        first, second, pad = templates(part)
        part_rows = []
        orders = [int(o) for o in args.orders.split(",")]
        for order, tpl in ((o, t) for o, t in ((1, first), (2, second)) if o in orders):
            print(f"{part}: training order {order} ...", file=sys.stderr, flush=True)
            row = train_and_score(order, tpl, pad, train, test, args)
            row["part"] = "NP chunking" if part == "np" else "chunking"
            row["penalty"] = f"l1={args.l1:g} l2={args.l2:g}" + (" full" if args.feature_space == "full" else "")
            part_rows.append(row)
            print(f"  F1 {row['f1']:.2f}  {row['per_eval_s']:.3f} s/eval  {row['iterations']} iterations "
                  f"({row['stop']})", file=sys.stderr, flush=True)
        for r in part_rows:
            if part_rows[0]["order"] == 1:
                r["ratio"] = r["per_eval_s"] / part_rows[0]["per_eval_s"]
        rows += part_rows
    table = markdown_table(rows, COLUMNS)
    print(f"l1={args.l1:g} l2={args.l2:g} threads={args.threads}\n")
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
