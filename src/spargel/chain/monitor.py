"""What a CRF fit reports after each iteration (the solvers' ``monitor``)."""

import sys


class FitMonitor:
    """Per-iteration hook of a CRF fit: dev metrics into the history row, a log line on
    stderr when verbose, and the user's callback (which may stop the fit). A callback
    whose attribute ``with_weights`` is true is called as ``callback(row, w)`` with the
    current weights in the training layout (``est._training_space``), as the solvers
    call their monitor (spargel's python-crfsuite ``Trainer`` writes CRFsuite's log and
    holdout scores from them)."""

    def __init__(self, est, dev, verbose, callback=None):
        self.est, self.dev, self.verbose, self.callback = est, dev, verbose, callback

    def __call__(self, row, w):
        if self.dev is not None:
            from ..metrics import sequence_scores
            data, y_dev = self.dev
            # the training layout is still uncompacted here: decode with it
            space = self._space()
            if getattr(space, "order", 1) == 2:
                from .crf2 import decode
            else:
                from .crf import decode
            names = self.est._label_vocab.names
            lc = None
            if getattr(self.est, "constraints", None) is not None:
                lc = self.est._label_constraints(names)         # decoded as predict will
            ids, _ = decode(space, data, w, constraints=lc)
            pred = [[names[i] for i in ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]] for s in range(data.n_sequences)]
            scores = sequence_scores(y_dev, pred)
            row["dev_accuracy"] = scores.accuracy
            if scores.chunk_f1 is not None:
                row["dev_f1"] = scores.chunk_f1
        if self.verbose:
            parts = [f"iter {row['iteration']:4d}", f"obj {row['objective']:.6g}", f"active {row['active']}"]
            if "dev_accuracy" in row:
                parts.append(f"dev acc {100 * row['dev_accuracy']:.2f}")
            if "dev_f1" in row:
                parts.append(f"dev F1 {100 * row['dev_f1']:.2f}")
            parts.append(f"{row['elapsed']:.1f}s")
            print("  ".join(parts), file=sys.stderr, flush=True)
        if self.callback is None:
            return False
        if getattr(self.callback, "with_weights", False):
            return bool(self.callback(row, w))
        return bool(self.callback(row))

    def _space(self):
        return self.est._training_space
