"""The second-order linear-chain CRF as a *model* of the protocol
(:mod:`spargel.core.protocol`): a chain over label pairs (layout:
:mod:`spargel.chain.crf2_space`, kernels: :mod:`spargel.chain.crf2_kernels`), run by
the one inference core :mod:`spargel.chain.inference`.

Inference costs ``O(S + |triples|)`` per position with ``S = (L + 1) L`` pair states
when the triple weights go through the ``PAIR_ONES`` structure (the default), and
``(L + 1) L^2`` with the ``LIST`` of every allowed transition (``inference="dense"``, or
when a triple weight is below ``-CANCEL_LIMIT``, where ``1 + expm1`` would cancel) --
never ``S^2``.

>>> model = ChainCRF2(space, data, n_jobs=2)            # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                      # doctest: +SKIP
"""


import numpy as np

from . import inference as C
from . import crf2_kernels as K2
from . import crf_kernels as K
from .crf import BatchChain, CRFView, prediction_functions
from .crf_map import MapCapability


class CRF2View(CRFView):
    """:class:`~spargel.chain.crf.CRFView` (the padded unigram view, shared) with the
    order-2 transition structure and buffers."""

    compacts_bigrams = False    # the order-2 kernels read the space's own bigram layout

    def __init__(self, space, data, inference="auto", constraints=None):
        super().__init__(space, data, inference, constraints)
        L = space.n_labels
        self.S = (L + 1) * L
        t_pair = space.t_pair.astype(np.int64)
        src = t_pair // L
        self._src, self._dst = src, (src % L) * L + t_pair % L
        self._list_k = None

    def refresh(self, w):
        """Load weights w into the padded rows; returns the transition structure."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        s = self.space
        self.load_rows(w)
        x = w[s.t_base:]
        if self.dense or self.constraints is not None or (len(x) and x.min() < -K.CANCEL_LIMIT):
            return self._list_structure(x)
        return C.make_transitions(self.S, self._src, self._dst, x, kind=C.PAIR_ONES, n_labels=self.L,
                                  all_pairs=False)

    def _list_structure(self, x):
        """Every allowed transition, listed by destination then source (so that the
        list index of triple (a, b, c) is the same as under PAIR_ONES)."""
        L, S = self.L, self.S
        A = L + 1
        if self._list_k is None:
            j = np.repeat(np.arange(L * L, dtype=np.int64), A)
            a = np.tile(np.arange(A, dtype=np.int64), L * L)
            self._list_all = (a * L + j // L, j)
            code = self.space.t_pair.astype(np.int64)
            src = code // L
            self._list_k = ((src % L) * L + code % L) * A + src // L
        score = np.zeros(S * L)
        score[self._list_k] = x
        lc = self.constraints
        if lc is None:
            return C.make_transitions(S, self._list_all[0], self._list_all[1], score, kind=C.LIST, all_pairs=False)
        # constrained: a transition into the pair state (b, c) exists only where c may
        # follow b; the begin-marker states (L, b) start a chain only where b may start
        # one, and a state (a, b) ends it only where b may end one
        score.reshape(L * L, A)[~lc.allowed.ravel()] = -np.inf
        start = np.ones(S, bool)
        start[L * L:] = lc.start
        end = np.tile(lc.end, A)
        # a pair state reaches another in one step more than its label reaches the other's
        return C.make_transitions(S, self._list_all[0], self._list_all[1], score, kind=C.LIST, all_pairs=False,
                                  start=start, end=end, steps=self.reach + 1)

    def buffers(self, order):
        return K2.work_buffers(self.L, K.max_length(self.data.seq_ptr, order))

    def log_buffers(self, order):
        return K2.log_buffers(self.L, K.max_length(self.data.seq_ptr, order))

    def accumulators(self, trans):
        return np.zeros((1, 1)), np.zeros(len(trans.gi)), np.zeros(0)


class ChainCRF2(MapCapability, BatchChain):
    """Negative log-likelihood ``sum_i -log p(y_i | x_i)`` of a second-order
    linear-chain CRF over the layout ``space`` (a
    :class:`~spargel.chain.crf2_space.FeatureSpace2`) and the data set ``data``.

    The batch gradient runs like the first-order one (:class:`~spargel.chain.crf.ChainCRF`):
    ``n_jobs`` threads over ``max(n_jobs, 4)`` fixed chunks summed in a fixed order.
    ``inference``: ``"auto"`` / ``"sparse"`` (triples through ``PAIR_ONES``) or
    ``"dense"`` (the ``LIST`` of every allowed transition).

    ``sample_weight`` (one per sequence) multiplies each sequence's term. Label -1 marks
    a position whose label is unknown: such a sequence's numerator sums over the
    unknown labels (a forward-backward with the known labels clamped),
    ``-log sum_{y consistent} p(y|x)``.
    """

    def __init__(self, space, data, n_jobs=1, inference="auto", penalty_scale=None, sample_weight=None,
                 constraints=None):
        if getattr(space, "order", 1) != 2:
            raise ValueError("ChainCRF2 needs a second-order layout (FeatureSpace2)")
        super().__init__(space, data, n_jobs, inference, penalty_scale, sample_weight, constraints)

    def _make_view(self, space, data, inference):
        return CRF2View(space, data, inference, self.constraints)

    def _sgd_trans(self):
        """The pass's transition structures (PAIR_ONES, LIST, list index of each triple;
        built once, refreshed in place per step)."""
        if getattr(self, "_structures", None) is None:
            from .crf2_sgd import structures
            self._structures = structures(self.view.space_t)
        return self._structures


# --------------------------------------------------------------------------- prediction
# decode, marginals (summed from the pair states), nbest, sequence_loss
decode, marginals, nbest, sequence_loss = prediction_functions(CRF2View)
