"""The second-order linear-chain CRF as a *model* of the protocol
(:mod:`spargel.models.protocol`): a chain over label pairs (layout:
:mod:`spargel.models.crf2_space`, kernels: :mod:`spargel.models.crf2_kernels`), run by
the one inference core :mod:`spargel.models.chain`.

Inference costs ``O(S + |triples|)`` per position with ``S = (L + 1) L`` pair states
when the triple weights go through the ``PAIR_ONES`` structure (the default), and
``(L + 1) L^2`` with the ``LIST`` of every allowed transition (``inference="dense"``, or
when a triple weight is below ``-CANCEL_LIMIT``, where ``1 + expm1`` would cancel) --
never ``S^2``.

>>> model = ChainCRF2(space, data, n_jobs=2)            # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                      # doctest: +SKIP
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._vec import dot
from . import chain as C
from . import crf2_kernels as K2
from . import crf_kernels as K
from .crf import CHUNK_BUFFER_BUDGET, FIXED_CHUNKS, CRFView, balanced_chunks, crf_layout, resolve_n_jobs


class CRF2View(CRFView):
    """:class:`~spargel.models.crf.CRFView` (the padded unigram view, shared) with the
    order-2 transition structure and buffers."""

    def __init__(self, space, data, inference="auto"):
        super().__init__(space, data, inference)
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
        K.refresh_weights(w, self.space_t, self.d_attr, self.Wd, self.dnz)
        x = w[s.t_base:]
        if self.all_pairs or (len(x) and x.min() < -K.CANCEL_LIMIT):
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
        return C.make_transitions(S, self._list_all[0], self._list_all[1], score, kind=C.LIST, all_pairs=False)

    def buffers(self, order):
        return K2.work_buffers(self.L, K.max_length(self.data.seq_ptr, order))

    def log_buffers(self, order):
        return K2.log_buffers(self.L, K.max_length(self.data.seq_ptr, order))

    def accumulators(self, trans):
        return np.zeros((1, 1)), np.zeros(len(trans[6])), np.zeros(0)


class ChainCRF2:
    """Negative log-likelihood ``sum_i -log p(y_i | x_i)`` of a second-order
    linear-chain CRF over the layout ``space`` (a
    :class:`~spargel.models.crf2_space.FeatureSpace2`) and the data set ``data``.

    The batch gradient runs like the first-order one (:class:`~spargel.models.crf.ChainCRF`):
    ``n_jobs`` threads over ``max(n_jobs, 4)`` fixed chunks summed in a fixed order.
    ``inference``: ``"auto"`` / ``"sparse"`` (triples through ``PAIR_ONES``) or
    ``"dense"`` (the ``LIST`` of every allowed transition).

    ``sample_weight`` (one per sequence) multiplies each sequence's term. Label -1 marks
    a position whose label is unknown: such a sequence's numerator sums over the
    unknown labels (a forward-backward with the known labels clamped),
    ``-log sum_{y consistent} p(y|x)``.
    """

    def __init__(self, space, data, n_jobs=1, inference="auto", penalty_scale=None, sample_weight=None):
        if data.labels is None:
            raise ValueError("training data needs labels")
        if getattr(space, "order", 1) != 2:
            raise ValueError("ChainCRF2 needs a second-order layout (FeatureSpace2)")
        self.sw = np.zeros(0) if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
        if len(self.sw) and self.sw.shape != (data.n_sequences,):
            raise ValueError(f"sample_weight has {len(self.sw)} entries, the data {data.n_sequences} sequences")
        self.view = CRF2View(space, data, inference)
        self.space, self.data, self.inference = space, data, inference
        self.n_jobs = resolve_n_jobs(n_jobs)
        self.layout = crf_layout(space, penalty_scale)
        self.n_evals = 0
        fixed = FIXED_CHUNKS if FIXED_CHUNKS * space.n_params * 8 <= CHUNK_BUFFER_BUDGET else 1
        bounds = balanced_chunks(data.seq_ptr, max(self.n_jobs, fixed))
        self._orders = [np.arange(bounds[c], bounds[c + 1], dtype=np.int64) for c in range(len(bounds) - 1)]
        tok_seq = np.repeat(np.arange(data.n_sequences), np.diff(data.seq_ptr))
        self.partial = np.zeros(data.n_sequences, dtype=np.uint8)
        self.partial[tok_seq[data.labels < 0]] = 1
        self._partial = [o[self.partial[o] == 1] for o in self._orders]
        self._emp = np.zeros(self.n_params)
        K2.empirical_counts(self.view.space_t, self.view.data_t, np.flatnonzero(self.partial == 0).astype(np.int64),
                            self.sw, self._emp)
        n_dense = len(self.view.d_attr)
        self._gbufs = [np.zeros(self.n_params) for _ in self._orders]
        self._Gdbufs = [np.zeros((n_dense, self.view.Lp)) for _ in self._orders]
        self._work = None

    @property
    def n_params(self):
        return self.space.n_params

    @property
    def n_samples(self):
        return self.data.n_sequences

    def entry_kernels(self, solver):
        """The compiled entry points a solver will call first (for a first-use note)."""
        if solver == "sgd-l1":
            from . import crf2_sgd
            return [crf2_sgd.sgd_pass]
        return [K2.chunk_logz_grad]

    # -- loss and gradient ----------------------------------------------------------
    def _run(self, w, want_grad):
        v = self.view
        trans = v.refresh(w)
        if self._work is None:
            self._work = [v.buffers(o) for o in self._orders]
        bufs = self._work
        accs = [v.accumulators(trans) for _ in self._orders]
        n_chunks = len(self._orders)
        scratch = [np.zeros(len(trans[6])) for _ in range(n_chunks)]
        # per chunk: the free pass over all its sequences, the clamped pass over its
        # partially labelled ones (each flags the sequences that need log space)
        passes = [(self._orders[c], False) for c in range(n_chunks)] + [(self._partial[c], True)
                                                                         for c in range(n_chunks)]
        failed = [np.zeros(len(o), np.uint8) for o, _ in passes]
        if want_grad:
            for c in range(n_chunks):
                self._gbufs[c].fill(0.0)
                self._Gdbufs[c].fill(0.0)

        def run(c):
            total = 0.0
            for p in (c, c + n_chunks):
                order, clamp = passes[p]
                if len(order):
                    total += K2.chunk_logz_grad(w, v.space_t, v.data_t, v.aux, trans, order, want_grad,
                                                self._gbufs[c], self._Gdbufs[c], accs[c], failed[p], bufs[c], self.sw,
                                                clamp, scratch[c])
            return total

        if self.n_jobs == 1 or n_chunks == 1:
            logz = [run(c) for c in range(n_chunks)]
        else:
            with ThreadPoolExecutor(max_workers=min(self.n_jobs, n_chunks)) as pool:
                logz = list(pool.map(run, range(n_chunks)))
        tcount, tcount1 = np.zeros(len(trans[11])), np.zeros(len(trans[11]))
        for c in range(n_chunks):
            for p in (c, c + n_chunks):
                order, clamp = passes[p]
                bad = order[failed[p] == 1]
                if len(bad):
                    logz[c] += K2.chunk_logz_grad_log(w, v.space_t, v.data_t, v.aux, trans, bad, want_grad,
                                                      self._gbufs[c], self._Gdbufs[c], tcount, bufs[c],
                                                      v.log_buffers(bad), self.sw, clamp, tcount1)
            if want_grad:
                C.transition_counts(trans, accs[c], tcount)
        total = sum(logz)
        if not want_grad:
            return total, None
        g = self._gbufs[0]
        Gd = self._Gdbufs[0]
        for c in range(1, len(self._orders)):
            g += self._gbufs[c]
            Gd += self._Gdbufs[c]
        out = g.copy()
        K2.finish_gradient(v.space_t, v.d_attr, Gd, tcount, self._emp, out)
        return total, out

    def loss_grad(self, w):
        """(loss, gradient) at w."""
        self.n_evals += 1
        w = np.ascontiguousarray(w, dtype=np.float64)
        logz, g = self._run(w, True)
        return float(logz - dot(w, self._emp)), g

    def loss(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        logz, _ = self._run(w, False)
        return float(logz - dot(w, self._emp))

    # -- the "sgd" capability ---------------------------------------------------------
    def _sgd_structures(self):
        from . import crf2_sgd
        if getattr(self, "_structures", None) is None:
            self._structures = crf2_sgd.structures(self.view.space_t)
        return self._structures

    def sgd_pass(self, order, v, aux, l1w, m, st, prm):
        """One compiled pass of lazily penalised SGD over the sequences ``order``
        (see :mod:`spargel.models.crf2_sgd`); returns 0, or 1 on divergence."""
        from . import crf2_sgd
        st_, dt_ = self.view.space_t, self.view.data_t
        order = np.ascontiguousarray(order, dtype=np.int64)
        ones, lst, list_k = self._sgd_structures()
        wk = crf2_sgd.work(st_, dt_, order, self.n_params, self.sw, self.partial)
        return crf2_sgd.sgd_pass(st_, dt_, ones, lst, list_k, order, v, aux, l1w, m, st, prm, wk)

    def sample_loss(self, order, w):
        """Sum of -log p(y_s | x_s) over the sequences ``order`` at w."""
        from . import crf2_sgd
        st_, dt_ = self.view.space_t, self.view.data_t
        order = np.ascontiguousarray(order, dtype=np.int64)
        w = np.ascontiguousarray(w, dtype=np.float64)
        ones, lst, list_k = self._sgd_structures()
        wk = crf2_sgd.work(st_, dt_, order, self.n_params, self.sw, self.partial)
        st = np.zeros(6)
        prm = np.zeros(8)
        prm[3], prm[4], prm[6] = crf2_sgd.LOSS_ONLY, 1.0, 1.0
        crf2_sgd.sgd_pass(st_, dt_, ones, lst, list_k, order, w, np.zeros(0), np.zeros(0), np.zeros(0), st, prm, wk)
        return float(st[4])


# --------------------------------------------------------------------------- prediction
def _fixed_or_free(fixed, n_tokens):
    if fixed is None:
        return np.full(n_tokens, -1, dtype=np.int32)
    return np.ascontiguousarray(fixed, dtype=np.int32)


def decode(space, data, w, fixed=None, inference="auto"):
    """Viterbi label ids (one flat array over all tokens) and the path scores;
    ``fixed[t] >= 0`` forces the label of token t."""
    view = CRF2View(space, data, inference)
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = view.refresh(w)
    out = np.empty(data.n_tokens, dtype=np.int32)
    scores = np.empty(data.n_sequences)
    order = np.arange(data.n_sequences, dtype=np.int64)
    K2.decode_all(w, view.space_t, view.data_t, view.aux, trans, _fixed_or_free(fixed, data.n_tokens), out, scores,
                  view.buffers(order), view.log_buffers(order))
    return out, scores


def marginals(space, data, w):
    """Label marginals (n_tokens x L, summed from the pair states) and log Z per sequence."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    view = CRF2View(space, data)
    trans = view.refresh(w)
    out = np.zeros((data.n_tokens, space.n_labels))
    logz = np.empty(data.n_sequences)
    failed = np.zeros(data.n_sequences, np.uint8)
    order = np.arange(data.n_sequences, dtype=np.int64)
    buf = view.buffers(order)
    tcount = np.zeros(len(trans[11]))
    K2.marginals_all(w, view.space_t, view.data_t, view.aux, trans, out, logz, failed, buf, tcount)
    bad = np.flatnonzero(failed).astype(np.int64)
    if len(bad):
        K2.marginals_log(w, view.space_t, view.data_t, view.aux, trans, bad, out, logz, buf, view.log_buffers(bad),
                         tcount)
    return out, logz


def nbest(space, data, w, k, fixed=None):
    """Per sequence, a list of (label id array, score) for the k best paths, best first."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    view = CRF2View(space, data)
    trans = view.refresh(w)
    fixed = _fixed_or_free(fixed, data.n_tokens)
    order = np.arange(data.n_sequences, dtype=np.int64)
    buf, lbuf = view.buffers(order), view.log_buffers(order)
    result = []
    for s in range(data.n_sequences):
        n = data.seq_ptr[s + 1] - data.seq_ptr[s]
        paths = np.zeros((k, n), dtype=np.int32)
        scores = np.empty(k)
        found = K2.nbest_one(w, view.space_t, view.data_t, view.aux, trans, s, fixed, k, paths, scores, buf, lbuf)
        result.append([(paths[r].copy(), float(scores[r])) for r in range(found)])
    return result


def sequence_loss(space, data, w):
    """-log p(y|x) of every labelled sequence, as an array (no gradient)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    _, logz = marginals(space, data, w)
    view = CRF2View(space, data)
    view.refresh(w)
    order = np.arange(data.n_sequences, dtype=np.int64)
    gold = np.empty(data.n_sequences)
    K2.gold_scores(w, view.space_t, view.data_t, view.aux, order, gold, view.buffers(order))
    return logz - gold
