"""What a CRF fit reports after each iteration (the solvers' ``monitor``)."""

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Training:
    """What a fit trains on, for a callback that looks at the weights as they are
    (``with_training``): ``space`` (the training layout, uncompacted: the weights'
    layout), ``featurizer`` (the settings and training vocabularies: ``featurizer.encode``
    encodes held-out data as prediction does) and the label names ``labels``."""

    space: object
    featurizer: object
    labels: list


class FitMonitor:
    """Per-iteration hook of a CRF fit: dev metrics into the history row, a log line on
    stderr when verbose, and the user's callback (which may stop the fit). A callback
    whose attribute ``with_weights`` is true is called as ``callback(row, w)`` with the
    current weights in the training layout, as the solvers call their monitor; one whose
    ``with_training`` is also true as ``callback(row, w, training)`` with the
    :class:`Training` (spargel's python-crfsuite ``Trainer`` writes CRFsuite's log and
    holdout scores from them).

    ``space``: the training layout; ``labels``: the label names; ``constraints``: the
    transition constraints dev data is decoded under (or None); ``dev``: ``(encoded
    data, label lists)`` or None; ``featurizer``: the training featurizer (for
    :class:`Training`)."""

    def __init__(self, space, labels, constraints, dev, verbose, callback=None, featurizer=None):
        self.space, self.labels, self.constraints = space, labels, constraints
        self.dev, self.verbose, self.callback = dev, verbose, callback
        self.featurizer = featurizer

    def __call__(self, row, w):
        if self.dev is not None:
            from ..metrics import sequence_scores
            data, y_dev = self.dev
            # the training layout is still uncompacted here: decode with it
            space = self.space
            if getattr(space, "order", 1) == 2:
                from .crf2 import decode
            else:
                from .crf import decode
            names = self.labels
            ids, _ = decode(space, data, w, constraints=self.constraints)     # decoded as predict will
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
            if getattr(self.callback, "with_training", False):
                return bool(self.callback(row, w, Training(self.space, self.featurizer, list(self.labels))))
            return bool(self.callback(row, w))
        return bool(self.callback(row))


def monitor_for(plan, space, labels, constraints=None, dev=None, callback=None, featurizer=None):
    """The :class:`FitMonitor` of a fit under ``plan`` (None when nothing watches)."""
    if dev is None and not plan.verbose and not callback:
        return None
    return FitMonitor(space, labels, constraints, dev, plan.verbose, callback, featurizer)
