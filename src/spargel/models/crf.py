"""The linear-chain CRF as a *model*: data + parameter layout + the negative
log-likelihood and its gradient. It knows nothing about penalties or solvers.

>>> model = ChainCRF(space, data, n_jobs=2)            # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                     # doctest: +SKIP
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import crf_kernels as K


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


class ChainCRF:
    """Negative log-likelihood ``sum_i -log p(y_i | x_i)`` of a linear-chain CRF.

    The batch gradient is computed on ``n_jobs`` threads (compiled kernels release the
    GIL), each over a fixed contiguous chunk of sequences with its own gradient buffer;
    the buffers are added in a fixed order, so a run is reproducible and equals the
    one-thread result up to float rounding.
    """

    def __init__(self, space, data, n_jobs=1):
        if data.labels is None:
            raise ValueError("training data needs labels")
        self.space = space
        self.data = data
        self.n_jobs = resolve_n_jobs(n_jobs)
        self._space_t = space.as_tuple()
        self._data_t = data_tuple(data)
        self._bounds = balanced_chunks(data.seq_ptr, self.n_jobs)
        self.n_evals = 0

    @property
    def n_params(self):
        return self.space.n_params

    def loss_grad(self, w):
        """(loss, gradient) at w."""
        self.n_evals += 1
        w = np.ascontiguousarray(w, dtype=np.float64)
        bounds = self._bounds
        n_chunks = len(bounds) - 1
        grads = [np.zeros(self.n_params) for _ in range(n_chunks)]

        def run(c):
            return K.chunk_loss_grad(w, self._space_t, self._data_t, bounds[c], bounds[c + 1], grads[c], True)

        if n_chunks == 1:
            losses = [run(0)]
        else:
            with ThreadPoolExecutor(max_workers=n_chunks) as pool:
                losses = list(pool.map(run, range(n_chunks)))
        g = grads[0]
        for other in grads[1:]:
            g += other
        return float(sum(losses)), g

    def loss(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        dummy = np.zeros(0)
        return float(K.chunk_loss_grad(w, self._space_t, self._data_t, 0, self.data.n_sequences, dummy, False))


def sequence_loss(space, data, w):
    """-log p(y|x) of every labelled sequence, as an array (no gradient)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    st, dt = space.as_tuple(), data_tuple(data)
    dummy = np.zeros(0)
    return np.array([K.chunk_loss_grad(w, st, dt, s, s + 1, dummy, False) for s in range(data.n_sequences)])


def decode(space, data, w, fixed=None):
    """Viterbi label ids (one flat array over all tokens) and the path scores."""
    w = np.ascontiguousarray(w, dtype=np.float64)
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
