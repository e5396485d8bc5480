"""CoNLL-2000 chunking with blockwise coordinate descent (``solver="bcd"``).

CRFsuite's classic chunking attributes (word and POS n-grams in a +-2 window, the
same as ``bench/conll2000.py``), the "observed" feature space, label transitions and
the objective ``sum -log p(y|x) + l1 ||w||_1 + l2/2 ||w||^2`` (default l1 = 1, l2 = 0).
BCD runs ``--sweeps`` sweeps (or until ``--budget`` seconds are spent); after each
sweep the test set is decoded and its chunk F1 (conlleval rules) recorded.

Reported per sweep: wall and CPU seconds, blocks visited / skipped, active features,
objective, test F1. The reference for the time per sweep is Wapiti's ``bcd`` on the
same kind of features, about 380 s per iteration on this kind of machine (the issue's
measurement; Wapiti is not run here). The target is <= 0.25x of that, i.e. <= 95 s.

    python bench/bcd_conll2000.py [--sweeps N] [--budget S] [--l1 1.0] [--markdown FILE]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, markdown_table, peak_rss_mb  # noqa: E402

WAPITI_BCD_S_PER_ITER = 380.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweeps", type=int, default=30)
    ap.add_argument("--budget", type=float, default=540.0, help="stop after the sweep that passes this many seconds")
    ap.add_argument("--l1", type=float, default=1.0)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--no-skip", action="store_true", help="do not skip blocks that stay at zero")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()

    import spargel
    from spargel.data.conll import read_conll
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE
    from spargel.metrics import chunk_f1
    from spargel.chain.crf import ChainCRF, decode
    from spargel.data.feature_space import FeatureSpace
    from spargel.core.penalties import ElasticNet
    from spargel.solvers.coordinate_descent import minimize_bcd

    d = data_dir("conll2000")
    train, test = list(read_conll(d / "train.txt")), list(read_conll(d / "test.txt"))
    est = spargel.CRF(feature_space="observed", template=CRFSUITE_CHUNKING_TEMPLATE, pad=False)
    data = est._dataset(train, [s.labels for s in train], grow=True)
    L = len(est._label_vocab)
    space = FeatureSpace.observed(data, L, len(est._uni_vocab), len(est._big_vocab), True)
    test_data = est._dataset(test)                 # unlabelled: test labels unseen in training are fine
    gold = [s.labels for s in test]
    names = est._label_vocab.names
    model = ChainCRF(space, data)
    print(f"{data.n_sequences} sentences, {data.n_tokens} tokens, {L} labels, {space.n_params} weights",
          file=sys.stderr)

    rows = []
    t_start = time.perf_counter()

    def monitor(row, w):
        ids, _ = decode(space, test_data, w)
        pred = [[names[i] for i in ids[test_data.seq_ptr[s]:test_data.seq_ptr[s + 1]]]
                for s in range(test_data.n_sequences)]
        row["test_f1"] = 100 * chunk_f1(gold, pred)
        rows.append(dict(row))
        print(f"sweep {row['iteration']:3d}  obj {row['objective']:.2f}  active {row['active']}  "
              f"wall {row['sweep_time']:.1f}s  cpu {row['sweep_cpu']:.1f}s  visited {row['blocks_visited']}  "
              f"skipped {row['blocks_skipped']}  rejected {row['rejected_steps']}  damping {row['median_damping']:.1f}  F1 {row['test_f1']:.2f}", file=sys.stderr, flush=True)
        return time.perf_counter() - t_start > args.budget

    t0 = time.perf_counter()
    res = minimize_bcd(model, ElasticNet(args.l1, args.l2), max_iter=args.sweeps, tol=0.0, gtol=0.0,
                       monitor=monitor, skip_zero_blocks=not args.no_skip)
    total = time.perf_counter() - t0
    cols = [("iteration", "sweep", None), ("sweep_time", "wall s", "{:.1f}"), ("sweep_cpu", "CPU s", "{:.1f}"),
            ("blocks_visited", "blocks visited", None), ("blocks_skipped", "skipped", None),
            ("active", "active features", None), ("objective", "objective", "{:.1f}"),
            ("test_f1", "test F1", "{:.2f}")]
    table = markdown_table(rows, cols)
    cpu = np.array([r["sweep_cpu"] for r in rows])
    wall = np.array([r["sweep_time"] for r in rows])
    best_f1 = max(r["test_f1"] for r in rows)
    med = float(np.median(cpu))
    summary = (f"{len(rows)} sweeps in {total:.0f} s (including test decoding), stop: {res.stop_reason}; "
               f"median CPU s / sweep {med:.1f} (wall {float(np.median(wall)):.1f}); "
               f"last F1 {rows[-1]['test_f1']:.2f}, best {best_f1:.2f}; peak memory {peak_rss_mb():.0f} MiB; "
               f"{len(est._uni_vocab)} attributes")
    checks = "\n".join([
        "| target | measured | met |", "|---|---|---|",
        f"| test F1 >= 93.3 | {rows[-1]['test_f1']:.2f} | {'yes' if rows[-1]['test_f1'] >= 93.3 else 'NO'} |",
        f"| time per sweep <= 0.25 x Wapiti bcd ({WAPITI_BCD_S_PER_ITER:.0f} s) | "
        f"{med:.1f} s CPU = {med / WAPITI_BCD_S_PER_ITER:.3f}x | {'yes' if med <= 0.25 * WAPITI_BCD_S_PER_ITER else 'NO'} |",
    ])
    text = f"{summary}\n\n{table}\n\n{checks}\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
