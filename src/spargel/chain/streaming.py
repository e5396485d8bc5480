"""Learning from data that arrives in pieces: ``CRF.partial_fit`` and
:func:`~spargel.chain.stream_file.train_streaming` (the engine of ``spargel train --stream``).

Each :meth:`spargel.CRF.partial_fit` call runs one SGD-L1 pass over its chunk and
continues everything the previous calls left: the learning-rate schedule (its sample
counter), the cumulative penalty (u and every q_i), the random generator and the
weights. The vocabularies grow with every chunk: new attributes and labels are appended
and the flat parameter layout is extended (in the ``"observed"`` space also with the new
(attribute, label) pairs), the state of the known weights being carried over by name.

What fixes the objective is ``N``, the number of sequences the loss sums over (the
per-sample penalty is ``l1 / N``): give it as ``solver_options={"n_samples": N}``.
Without it, ``partial_fit`` uses the number of sequences it has received so far, which
is right for a single pass over a stream of new data but under-penalises when the same
data is passed again. :func:`~spargel.chain.stream_file.train_streaming` counts the file first and passes it.

Warm start: a fitted or loaded model (``CRF.load``) continues from its weights; its
schedule restarts at sample 0 with ``u = q = 0`` (a model file keeps no SGD state), so
a small ``eta0`` is advisable for fine-tuning.
"""

import time

import numpy as np

from ..data.vocab import Vocabulary
from ..data.feature_space import FeatureSpace
from ..solvers.sgd import SGDState, parse_options, sgd_partial_pass
from .labels import label_lists, refuse_marker_label


class _StreamState:
    """The uncompacted training state kept between partial_fit calls."""

    def __init__(self, uni, big, labels, space, sgd_state):
        self.uni, self.big, self.labels = uni, big, labels
        self.space = space
        self.sgd = sgd_state
        self.history = []
        self.fitted = None
        self.n_seen = 0
        self.t0 = time.perf_counter()


def _options(plan):
    """(the SGD pass's keyword options, N or None, the parsed options) of a plan."""
    options = dict(plan.solver_options)
    options.setdefault("random_state", plan.random_state)
    n_samples = options.pop("n_samples", None)
    return options, n_samples, parse_options(options)


def start_state(plan, fitted=None):
    """The streaming state of a first ``partial_fit`` call: fresh, or continuing from
    ``fitted`` (a :class:`~spargel.chain.fitted.FittedChain`: its layout is the
    compacted one)."""
    _, _, opts = _options(plan)
    variant = opts.penalty_update
    if fitted is not None:
        uni, big, labels = (Vocabulary(v.names) for v in (fitted.uni, fitted.big, fitted.labels))
        space = fitted.space
        w = np.array(fitted.weights, dtype=np.float64)
    else:
        uni, big, labels = Vocabulary(), Vocabulary(), Vocabulary()
        space, w = None, np.zeros(0)
    return _StreamState(uni, big, labels, space, SGDState.fresh(w, variant, opts.random_state))


def grow_space(old, L, n_u, n_b, chunk, kind, transitions, space_class=FeatureSpace):
    """The layout after a chunk: ``old`` (or None) extended to L labels and n_u / n_b
    attributes plus what the chunk needs. Returns (space, positions of the old weights)
    (:meth:`~spargel.data.feature_space.FeatureSpace.grown` of ``space_class``)."""
    return space_class.grown(old, L, n_u, n_b, chunk, kind, transitions)


def partial_fit(est, X, y):
    """One SGD-L1 pass of ``est`` (a :class:`spargel.CRF`) over the chunk ``(X, y)``,
    continuing the previous calls: :meth:`spargel.CRF.partial_fit` (see the module
    documentation)."""
    return est.partial_fit(X, y)


def partial_pass(plan, state, X, y):
    """One SGD-L1 pass under ``plan`` (:meth:`spargel.CRF.partial_fit_plan`) over the
    chunk ``(X, y)``, continuing ``state`` (a ``_StreamState``: :func:`start_state`,
    then the previous calls'); grows and updates ``state`` and returns the
    :class:`~spargel.estimation.FitOutcome` (``record``: the history, the passes)."""
    from ..estimation import FitOutcome

    options, n_samples, _ = _options(plan)
    y = label_lists(y, "y")
    if plan.order == 2:
        refuse_marker_label(y)
    builder = plan.builder
    if state.space is not None and type(state.space) is not builder.space_class:
        raise ValueError(f"partial_fit: the model has order {getattr(state.space, 'order', 1)}, the estimator "
                         f"order={plan.order!r}; the order cannot change between calls")
    data = plan.new_featurizer(state.uni, state.big, state.labels).extend(X, y)
    L = len(state.labels)
    space, pos = builder.space_class.grown(state.space, L, len(state.uni), len(state.big), data,
                                           builder.feature_space, builder.transitions)
    state.sgd.grow(space.n_params, pos)
    state.space = space
    model = builder.model(space, data)
    penalty = plan.penalty(model.layout)
    state.n_seen += data.n_sequences
    N = int(n_samples) if n_samples is not None else state.n_seen
    row = sgd_partial_pass(model, penalty, state.sgd, N, **options)
    row["elapsed"] = time.perf_counter() - state.t0
    state.history.append(row)
    record = {"history": list(state.history), "n_iter": state.sgd.passes, "stop_reason": "max_iter",
              "objective": float("nan")}
    return FitOutcome(state.uni, state.big, Vocabulary(state.labels.names), space, state.sgd.v.copy(),
                      record=record)


def chunks(sentences, size):
    """Consecutive lists of ``size`` items (the last one shorter) from an iterable."""
    chunk = []
    for s in sentences:
        chunk.append(s)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
