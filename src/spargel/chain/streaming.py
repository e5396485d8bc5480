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
from .crf2_space import weight_keys
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


def _keys(space, L):
    """Sorted keys of the weights of a layout in a label space of size L (>= its own):
    unigram ``attr * L + label``, bigram ``attr * L^2 + pair``, transitions ``pair``
    (order 2: see :func:`spargel.chain.crf2_space.weight_keys`)."""
    if getattr(space, "order", 1) == 2:
        return weight_keys(space, L)
    L0 = space.n_labels
    u_attr = np.repeat(np.arange(len(space.u_ptr) - 1, dtype=np.int64), np.diff(space.u_ptr))
    b_attr = np.repeat(np.arange(len(space.b_ptr) - 1, dtype=np.int64), np.diff(space.b_ptr))
    b_pair = space.b_pair.astype(np.int64)
    t_pair = space.t_pair.astype(np.int64)
    b_new = (b_pair // L0) * L + b_pair % L0
    t_new = (t_pair // L0) * L + t_pair % L0
    return u_attr * L + space.u_lab, b_attr * (L * L) + b_new, t_new


def _space_from_keys(L, n_u, n_b, uk, bk, tk, space_class=FeatureSpace):
    P = (L + 1) * L if getattr(space_class, "order", 1) == 2 else L * L      # pair codes
    u_ptr = np.zeros(n_u + 1, dtype=np.int64)
    np.cumsum(np.bincount(uk // L, minlength=n_u), out=u_ptr[1:])
    b_ptr = np.zeros(n_b + 1, dtype=np.int64)
    np.cumsum(np.bincount(bk // P, minlength=n_b), out=b_ptr[1:])
    return space_class(L, u_ptr, (uk % L).astype(np.int32), b_ptr, (bk % P).astype(np.int32), tk.astype(np.int32))


def grow_space(old, L, n_u, n_b, chunk, kind, transitions, space_class=FeatureSpace):
    """The layout after a chunk: ``old`` (or None) extended to L labels and n_u / n_b
    attributes plus what the chunk needs. Returns (space, positions of the old weights)."""
    if kind == "full":
        new = space_class.full(L, n_u, n_b, transitions)
    else:
        new = space_class.observed(chunk, L, n_u, n_b, transitions)
    uk, bk, tk = _keys(new, L)
    if old is None:
        return new, np.zeros(0, dtype=np.int64)
    ok, obk, otk = _keys(old, L)
    uk, bk, tk = np.union1d(uk, ok), np.union1d(bk, obk), np.union1d(tk, otk)
    space = _space_from_keys(L, n_u, n_b, uk, bk, tk, space_class)
    pos = np.concatenate([np.searchsorted(uk, ok), space.b_base + np.searchsorted(bk, obk),
                          space.t_base + np.searchsorted(tk, otk)]).astype(np.int64)
    return space, pos


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
    space, pos = grow_space(state.space, L, len(state.uni), len(state.big), data, builder.feature_space,
                            builder.transitions, builder.space_class)
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
