"""CRFsuite's training log, written and read.

:class:`TrainLogParser` reads the messages a CRFsuite trainer sends (python-crfsuite's
``Trainer.logparser``): it is fed one message at a time, as CRFsuite sends them (a
line, a single progress character of the feature generation, or a blank line), and
answers with the event the message completes, or None:

* ``start`` -- the first message;
* ``featgen_progress`` -- one step of the feature generation's ``0....1....2`` line
  (``featgen_percent`` goes up by 2);
* ``featgen_end`` -- its ``Seconds required`` line;
* ``prepared`` -- the first iteration's header line (the segment ends before it);
* ``prepare_error`` -- a trainer that stopped with an error before its first iteration;
* ``iteration`` -- the blank line that closes an iteration (its numbers are in
  ``last_iteration``, a dict: ``num``, ``loss``, ``feature_norm``, ``error_norm``,
  ``active_features``, ``linesearch_trials``, ``linesearch_step``, ``time`` and, with a
  holdout group, ``scores`` (label -> :class:`LabelScore`), ``avg_precision``,
  ``avg_recall``, ``avg_f1``, ``item_accuracy`` / ``instance_accuracy`` (fractions) and
  their ``_float`` values);
* ``optimization_end`` -- the ``Storing the model`` line (the segment ends before it);
* ``end`` -- the blank line after the model was stored.

``log`` keeps every message, ``events`` the ``(event, first, end)`` message ranges, and
``last_log`` is the text of the last event's range.

The functions ``*_lines`` give the messages spargel's ``Trainer`` sends, in CRFsuite's
words and number formats, so that code written against CRFsuite's log (and this parser)
reads spargel's the same.
"""

import re
from collections import namedtuple
from fractions import Fraction

#: one label's holdout scores (``precision``, ``recall``, ``f1`` None for a label that
#: is neither predicted nor in the reference)
LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_HEAD = re.compile(r"\*{5} (?:Iteration|Epoch) #(\d+) \*{5}\n")
_SECONDS = re.compile(r"Seconds required: " + _NUM)
_FEATURES = re.compile(r"Number of features: (\d+)")
_TRAINING = re.compile(r"Total seconds required for training: " + _NUM)
_FIELDS = [(re.compile(pattern + _NUM), key, kind) for pattern, key, kind in (
    (r"Loss: ", "loss", float),
    (r"Feature norm: ", "feature_norm", float),
    (r"Error norm: ", "error_norm", float),
    (r"Active features: ", "active_features", int),
    (r"Line search trials: ", "linesearch_trials", int),
    (r"Line search step: ", "linesearch_step", float),
    (r"Seconds required for this iteration: ", "time", float))]
_MACRO = re.compile(r"Macro-average precision, recall, F1: \(" + ", ".join([_NUM] * 3) + r"\)")
_ACCURACY = re.compile(r"(Item|Instance) accuracy: (\d+) / (\d+)")
_LABEL = re.compile(r" {4}(.+): \((\d+), (\d+), (\d+)\) \((?:" + ", ".join([_NUM] * 3) + r"|\*+, \*+, \*+)\)")
#: the characters of the feature generation's progress line
_PROGRESS = "0123456789.10"


class TrainLogParser:
    """Reads a CRFsuite training log message by message (see the module documentation)."""

    def __init__(self):
        self.state = None
        self.featgen_percent = -2
        self.featgen_num_features = None
        self.featgen_seconds = None
        self.training_seconds = None
        self.storing_seconds = None
        self.iterations = []
        self.last_iteration = None
        self.log = []
        self.events = []

    def feed(self, line):
        """Read one message; returns the event it completes, or None."""
        self.log.append(line)
        if self.state is None:
            self.state = "FEATGEN" if line.startswith("Feature generation") else "STARTING"
            event = "start"
        else:
            event = getattr(self, "_" + self.state.lower())(line)
        if event is not None:
            first = self.events[-1][2] if self.events else 0
            end = len(self.log) - (1 if event in ("prepared", "optimization_end") else 0)
            self.events.append((event, first, end))
        return event

    @property
    def last_log(self):
        """The text of the messages of the last event."""
        _, first, end = self.events[-1]
        return "".join(self.log[first:end])

    # -- one method per state: the event a message completes ------------------------
    def _starting(self, line):
        if line.startswith("Feature generation"):
            self.state = "FEATGEN"
        return None

    def _featgen(self, line):
        if line in _PROGRESS:
            self.featgen_percent += 2
            return "featgen_progress"
        m = _FEATURES.match(line)
        if m:
            self.featgen_num_features = int(m.group(1))
            return None
        m = _SECONDS.match(line)
        if m:
            self.featgen_seconds = float(m.group(1))
            self.state = "AFTER_FEATGEN"
            return "featgen_end"
        return None

    def _after_featgen(self, line):
        if _HEAD.match(line):
            self.state = "ITERATION"
            self._iteration(line)
            return "prepared"
        if "terminated with error" in line:
            self.state = "AFTER_ITERATION"
            return "prepare_error"
        return None

    def _iteration(self, line):
        m = _HEAD.match(line)
        if m:
            self.last_iteration = {"num": int(m.group(1)), "scores": {}}
            self.iterations.append(self.last_iteration)
            return None
        if line == "\n":
            self.state = "AFTER_ITERATION"
            return "iteration"
        it = self.last_iteration
        for pattern, key, kind in _FIELDS:
            m = pattern.match(line)
            if m:
                it[key] = kind(float(m.group(1))) if kind is int else kind(m.group(1))
                return None
        m = _MACRO.match(line)
        if m:
            it["avg_precision"], it["avg_recall"], it["avg_f1"] = (float(v) for v in m.groups())
            return None
        m = _ACCURACY.match(line)
        if m:
            key = m.group(1).lower() + "_accuracy"
            it[key] = Fraction(int(m.group(2)), int(m.group(3))) if int(m.group(3)) else Fraction(0)
            it[key + "_float"] = float(it[key])
            return None
        m = _LABEL.match(line)
        if m:
            label, match, model, ref, p, r, f = m.groups()
            it["scores"][label] = LabelScore(int(match), int(model), int(ref), None if p is None else float(p),
                                             None if r is None else float(r), None if f is None else float(f))
        return None

    def _after_iteration(self, line):
        if _HEAD.match(line):
            self.state = "ITERATION"
            return self._iteration(line)
        m = _TRAINING.match(line)
        if m:
            self.training_seconds = float(m.group(1))
        if line.startswith("Storing the model"):
            self.state = "STORING"
            return "optimization_end"
        return None

    def _storing(self, line):
        if line == "\n":
            return "end"
        m = _SECONDS.match(line)
        if m:
            self.storing_seconds = float(m.group(1))
        return None


# --------------------------------------------------------------------------- writing
def featgen_lines(minfreq, possible_states, possible_transitions, n_features, seconds, holdout=-1):
    """The messages of the feature generation (and of a holdout group before it)."""
    out = [f"Holdout group: {holdout + 1}\n", "\n"] if holdout >= 0 else []
    out += ["Feature generation\n", "type: CRF1d\n", f"feature.minfreq: {minfreq:f}\n",
            f"feature.possible_states: {int(possible_states)}\n",
            f"feature.possible_transitions: {int(possible_transitions)}\n"]
    for k in range(10):
        out += [str(k), ".", ".", ".", "."]
    out += ["10", "\n", f"Number of features: {n_features}\n", f"Seconds required: {seconds:.3f}\n", "\n"]
    return out


def storing_lines(n_features, n_all_features, n_attrs, n_all_attrs, n_labels, seconds):
    """The messages of storing the model."""
    return ["Storing the model\n", f"Number of active features: {n_features} ({n_all_features})\n",
            f"Number of active attributes: {n_attrs} ({n_all_attrs})\n",
            f"Number of active labels: {n_labels} ({n_labels})\n", "Writing labels\n", "Writing attributes\n",
            "Writing feature references for transitions\n", "Writing feature references for attributes\n",
            f"Seconds required: {seconds:.3f}\n", "\n"]


def holdout_lines(labels, gold, pred):
    """CRFsuite's holdout evaluation of one iteration: per label (#match, #model, #ref)
    and (precision, recall, F1), their macro-average, item and instance accuracy.
    ``gold`` and ``pred``: per sequence a list of labels."""
    import numpy as np
    index = {lab: i for i, lab in enumerate(labels)}
    L = len(labels)
    match, model, ref = np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(L, np.int64)
    items = correct_items = correct_seqs = 0
    for g_seq, p_seq in zip(gold, pred):
        ok = True
        for g, p in zip(g_seq, p_seq):
            gi, pi = index.get(g, -1), index.get(p, -1)
            if gi >= 0:
                ref[gi] += 1
            if pi >= 0:
                model[pi] += 1
            if g == p:
                correct_items += 1
                if gi >= 0:
                    match[gi] += 1
            else:
                ok = False
            items += 1
        correct_seqs += ok
    out = ["Performance by label (#match, #model, #ref) (precision, recall, F1):\n"]
    ps, rs, fs = [], [], []
    for i, lab in enumerate(labels):
        if model[i] == 0 and ref[i] == 0:
            out.append(f"    {lab}: (0, 0, 0) (******, ******, ******)\n")
            continue
        p = match[i] / model[i] if model[i] else 0.0
        r = match[i] / ref[i] if ref[i] else 0.0
        f = 2 * p * r / (p + r) if p + r > 0 else 0.0
        ps.append(p)
        rs.append(r)
        fs.append(f)
        out.append(f"    {lab}: ({match[i]}, {model[i]}, {ref[i]}) ({p:.4f}, {r:.4f}, {f:.4f})\n")
    mean = (lambda v: sum(v) / L if L else 0.0)
    out.append(f"Macro-average precision, recall, F1: ({mean(ps):f}, {mean(rs):f}, {mean(fs):f})\n")
    out.append(f"Item accuracy: {correct_items} / {items} ({correct_items / items if items else 0.0:.4f})\n")
    n_seq = len(gold)
    out.append(f"Instance accuracy: {correct_seqs} / {n_seq} ({correct_seqs / n_seq if n_seq else 0.0:.4f})\n")
    return out
