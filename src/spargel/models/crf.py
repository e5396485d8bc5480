"""The linear-chain CRF as a *model*: data + parameter layout + the negative
log-likelihood and its gradient. It knows nothing about penalties or solvers.

>>> model = ChainCRF(space, data, n_jobs=2)            # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                     # doctest: +SKIP
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._vec import dot
from . import crf_kernels as K
from . import sparse_kernels as SK


def resolve_n_jobs(n_jobs):
    """scikit-learn's convention: None -> 1, -1 -> all cores, -2 -> all but one."""
    if n_jobs is None:
        return 1
    n_jobs = int(n_jobs)
    cores = os.cpu_count() or 1
    if n_jobs < 0:
        return max(1, cores + 1 + n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a non-zero integer or None")
    return n_jobs


def data_tuple(data):
    labels = data.labels if data.labels is not None else np.zeros(data.n_tokens, np.int32)
    return (data.seq_ptr, data.uni_ptr, data.uni_ids, data.uni_vals,
            data.big_ptr, data.big_ids, data.big_vals, labels)


def balanced_chunks(seq_ptr, n_chunks):
    """Sequence boundaries of n_chunks contiguous chunks with about equal token counts."""
    n_seq = len(seq_ptr) - 1
    n_chunks = max(1, min(n_chunks, n_seq))
    targets = np.linspace(0, seq_ptr[-1], n_chunks + 1)
    bounds = np.searchsorted(seq_ptr, targets[1:-1])
    return np.unique(np.concatenate([[0], bounds, [n_seq]])).astype(np.int64)


def dense_label_threshold(n_labels):
    """Unigram attributes with at least this many labels use the padded dense layout."""
    return max(2, int(np.ceil(DENSE_FRACTION * n_labels)))


# unigram attributes that carry at least this fraction of the labels get a padded row
# (fixed-length SIMD adds); the others keep their short label lists
DENSE_FRACTION = 0.25


class ChainCRF:
    """Negative log-likelihood ``sum_i -log p(y_i | x_i)`` of a linear-chain CRF.

    The batch gradient is computed on ``n_jobs`` threads (compiled kernels release the
    GIL), each over a fixed contiguous chunk of sequences with its own gradient buffer;
    the buffers are added in a fixed order, so a run is reproducible and equals the
    one-thread result up to float rounding.

    The kernels use a second view of the unigram features built once here (see
    ``crf_kernels``): padded label rows for attributes with many labels, flat per-token
    weight lists for the others. The empirical feature counts are computed once; the loss
    is ``sum log Z - w . counts`` and the gradient ``expected counts - counts``.

    ``inference``: ``"dense"`` kernels, ``"sparse"`` forward-backward (cost follows the
    non-zero bigram weights, see ``sparse_kernels``), or ``"auto"`` (default): sparse
    when the mean fraction of non-zero bigram weights per position is small.
    """

    def __init__(self, space, data, n_jobs=1, inference="auto"):
        if inference not in SK.INFERENCE_MODES:
            raise ValueError(f"inference must be one of {SK.INFERENCE_MODES}, got {inference!r}")
        self.inference = inference
        self._probe = None
        if data.labels is None:
            raise ValueError("training data needs labels")
        self.space = space
        self.data = data
        self.n_jobs = resolve_n_jobs(n_jobs)
        self._space_t = space.as_tuple()
        self._data_t = data_tuple(data)
        self._bounds = balanced_chunks(data.seq_ptr, self.n_jobs)
        self.n_evals = 0
        L = space.n_labels
        self._Lp = -(-L // K.LANES) * K.LANES
        # dense rows: attributes with many labels, most frequent first
        sizes = np.diff(space.u_ptr)
        counts = np.bincount(data.uni_ids, minlength=len(sizes))[:len(sizes)]
        dense = np.flatnonzero(sizes >= dense_label_threshold(L))
        self._d_attr = dense[np.argsort(-counts[dense], kind="stable")].astype(np.int64)
        drow = np.full(len(sizes), -1, dtype=np.int32)
        drow[self._d_attr] = np.arange(len(self._d_attr), dtype=np.int32)
        n_dense = len(self._d_attr)
        binary = bool(np.all(data.uni_vals == 1.0))
        nd, ne = K.token_list_sizes(self._space_t, self._data_t, drow)
        n_tok = data.n_tokens
        dptr = np.zeros(n_tok + 1, dtype=np.int64)
        eptr = np.zeros(n_tok + 1, dtype=np.int64)
        drows = np.empty(nd, dtype=np.int32)
        ek = np.empty(ne, dtype=np.int32 if space.n_unigram < 2**31 else np.int64)
        dval = np.empty(0 if binary else nd)
        evals = np.empty(0 if binary else ne)
        K.fill_token_lists(self._space_t, self._data_t, drow, binary, dptr, drows, dval, eptr, ek, evals)
        self._Wd = np.zeros((n_dense, self._Lp))
        self._dnz = np.zeros(n_dense, dtype=np.uint8)
        self._aux_t = (self._Lp, binary, dptr, drows, dval, eptr, ek, evals, self._Wd, self._dnz)
        self._emp = np.zeros(self.n_params)
        K.empirical_counts(self._space_t, self._data_t, self._emp)
        n_chunks = len(self._bounds) - 1
        self._gbufs = [np.zeros(self.n_params) for _ in range(n_chunks - 1)]
        self._Gdbufs = [np.zeros((n_dense, self._Lp)) for _ in range(n_chunks)]

    @property
    def n_params(self):
        return self.space.n_params

    def _aux(self, w):
        K.refresh_weights(w, self._space_t, self._d_attr, self._Wd, self._dnz)
        return self._aux_t

    def _sparse(self, w):
        if self.inference != "auto":
            return self.inference == "sparse"
        if self._probe is None:
            self._probe = SK.SparsityProbe(self._space_t, self.data)
        return self._probe.choose(w) == "sparse"

    def loss_grad(self, w):
        """(loss, gradient) at w."""
        self.n_evals += 1
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self._sparse(w):
            return SK.sparse_loss_grad(self, w)
        aux = self._aux(w)
        bounds = self._bounds
        n_chunks = len(bounds) - 1
        g = np.zeros(self.n_params)
        grads = [g] + self._gbufs
        for buf in self._gbufs:
            buf.fill(0.0)
        for buf in self._Gdbufs:
            buf.fill(0.0)

        def run(c):
            return K.chunk_logz_grad(w, self._space_t, self._data_t, aux, bounds[c], bounds[c + 1],
                                     grads[c], self._Gdbufs[c], True)

        if n_chunks == 1:
            logz = [run(0)]
        else:
            with ThreadPoolExecutor(max_workers=n_chunks) as pool:
                logz = list(pool.map(run, range(n_chunks)))
        Gd = self._Gdbufs[0]
        for c in range(1, n_chunks):
            g += grads[c]
            Gd += self._Gdbufs[c]
        K.finish_gradient(self._space_t, self._d_attr, Gd, self._emp, g)
        return float(sum(logz) - dot(w, self._emp)), g

    def loss(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self._sparse(w):
            return SK.sparse_loss_grad(self, w, want_grad=False)[0]
        aux = self._aux(w)
        dummy = np.zeros(0)
        logz = K.chunk_logz_grad(w, self._space_t, self._data_t, aux, 0, self.data.n_sequences, dummy,
                                 self._Wd[:0], False)
        return float(logz - dot(w, self._emp))


def sequence_loss(space, data, w):
    """-log p(y|x) of every labelled sequence, as an array (no gradient)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    out = np.empty(data.n_sequences)
    K.sequence_losses(w, st, dt, out)
    return out


def decode(space, data, w, fixed=None, inference="auto"):
    """Viterbi label ids (one flat array over all tokens) and the path scores;
    ``inference`` as in :class:`ChainCRF` (the sparse Viterbi gives the same paths)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    if SK.choose_inference(w, space, data, inference, task="viterbi") == "sparse":
        return SK.sparse_decode(space, data, w, fixed)
    st, dt = space.as_tuple(), data_tuple(data)
    if fixed is None:
        fixed = np.full(data.n_tokens, -1, dtype=np.int32)
    out = np.empty(data.n_tokens, dtype=np.int32)
    scores = np.empty(data.n_sequences)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        scores[s] = K.viterbi(w, st, dt, s, fixed, out[lo:hi])
    return out, scores


def marginals(space, data, w):
    """Point marginals (n_tokens x L) and log Z per sequence."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    out = np.empty((data.n_tokens, space.n_labels))
    logz = np.empty(data.n_sequences)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        logz[s] = K.sequence_marginals(w, st, dt, s, out[lo:hi])
    return out, logz


def nbest(space, data, w, k, fixed=None):
    """Per sequence, a list of (label id array, score) for the k best paths, best first."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    if fixed is None:
        fixed = np.full(data.n_tokens, -1, dtype=np.int32)
    result = []
    for s in range(data.n_sequences):
        n = data.seq_ptr[s + 1] - data.seq_ptr[s]
        paths = np.zeros((k, n), dtype=np.int32)
        scores = np.empty(k)
        found = K.nbest_viterbi(w, st, dt, s, fixed, k, paths, scores)
        result.append([(paths[r].copy(), float(scores[r])) for r in range(found)])
    return result
