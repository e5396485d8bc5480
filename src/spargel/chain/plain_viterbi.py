"""First-order Viterbi in vectorised numpy, for processes that label once and exit.

``spargel label`` on a model file spends most of a short run loading numba and its
cached kernels (numba's import and the first cached kernel cost about as much CPU time
as ``wapiti label`` needs for all of CoNLL-2000's test set). This module decodes
without them: the score of every token's labels is a sum of rows of a small dense
table (the weights of the attributes that occur), and the Viterbi recursion steps all
sequences at once, longest first, one position at a time, over ``(sequences, L, L)``
arrays.

It computes what :func:`spargel.chain.crf.decode` computes for a first-order chain
without constraints and with binary attributes: the same scores (a token's unigram
weights summed in the order of its attributes, a position's pair scores the transition
plus its bigram weights added one by one), and ties broken the same way (towards the
lowest previous label, the lowest last label). :func:`supported` says whether a model
and a data set are such a case.
"""

import numpy as np

from ..data.dataset import is_unit


#: the entries of a block's (sequences, L, L) scores: blocks of sequences small enough
#: that a step's arrays stay in the processor's cache
BLOCK_ENTRIES = 1 << 16


#: most label-pair entries (tokens x L^2) this module steps through: its dense L x L
#: step per token outgrows the cost of loading the compiled kernels, whose Viterbi
#: step over a sparse transition structure costs O(L + weighted pairs) (1,500 labels:
#: 2.3 M entries a token, about 100 tokens)
MAX_PAIR_ENTRIES = 2 * 10 ** 8


def supported(space, data, constraints=None):
    """Whether :func:`decode` handles this model and data (first order, no label
    constraints, binary attributes) and does so quickly (at most
    :data:`MAX_PAIR_ENTRIES` label pairs over all tokens: large label sets go to the
    compiled kernels)."""
    L = int(space.n_labels)
    return (getattr(space, "order", 1) == 1 and constraints is None
            and is_unit(data.uni_vals) and is_unit(data.big_vals) and data.n_tokens * L * L <= MAX_PAIR_ENTRIES)


def _rows(ptr, entries, attrs):
    """The entry indices of the attributes ``attrs`` (CSR ``ptr``): (index, owner)."""
    lo, hi = ptr[attrs], ptr[attrs + 1]
    counts = hi - lo
    owner = np.repeat(np.arange(len(attrs), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    k = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts) + np.repeat(lo, counts)
    return k, owner


def _table(ptr, ids, entries, w, base, width):
    """(dense rows of the attributes in ``ids``, each occurrence's row): the weights of
    every attribute that occurs, one row of ``width`` each."""
    # the attributes that occur, in increasing order, and each occurrence's rank among
    # them: np.unique's answer, marked in a table of all the attributes instead of sorted
    ids = np.asarray(ids, np.int64).reshape(-1)
    seen = np.zeros(len(ptr) - 1, bool)
    seen[ids] = True
    used = np.flatnonzero(seen)
    rank = np.cumsum(seen, dtype=np.int64) - 1
    local = rank[ids]
    rows = np.zeros((len(used), width))
    k, owner = _rows(np.asarray(ptr, np.int64), entries, used.astype(np.int64))
    rows[owner, entries[k]] = w[base + k]
    return rows, local


def _slots(ptr):
    """For j = 0, 1, ...: (tokens with more than j attributes, the index of their j-th)."""
    counts = np.diff(ptr)
    out = []
    j = 0
    while True:
        tok = np.flatnonzero(counts > j)
        if not len(tok):
            return out
        out.append((tok, ptr[tok] + j))
        j += 1


def decode(space, data, w):
    """Viterbi label ids (one flat int32 array over all tokens) of a first-order chain
    (see :func:`supported`)."""
    L = int(space.n_labels)
    w = np.asarray(w, dtype=np.float64)
    n_tok = data.n_tokens
    seq_ptr = np.asarray(data.seq_ptr, np.int64)
    # state scores: unigram weights summed over each token's attributes, in order
    E = np.zeros((n_tok, L))
    if len(data.uni_ids):
        U, li = _table(space.u_ptr, data.uni_ids, np.asarray(space.u_lab, np.int64), w, 0, L)
        U = np.concatenate([U, np.zeros((1, L))])     # a last row of zeros: "no attribute"
        slots = _slots(np.asarray(data.uni_ptr, np.int64))
        A = np.full((len(slots), n_tok), len(U) - 1, np.int64)
        for j, (tok, idx) in enumerate(slots):
            A[j, tok] = li[idx]
        E = U[A[0]]
        for j in range(1, len(slots)):                # (adding a zero row leaves a sum as it is)
            E += U[A[j]]
    # pair scores, [current, previous]: the transitions plus each token's bigram weights
    # added one by one (as the kernels add them); a token's first bigram attribute
    # picks a precomputed table T + B[a], table 0 being T alone
    T = np.zeros(L * L)
    t_pair = np.asarray(space.t_pair, np.int64)
    T[t_pair] = w[space.t_base:space.t_base + len(t_pair)]
    T = T.reshape(L, L)                       # [previous, current]
    tables = T.T[None]
    first = np.zeros(n_tok, np.int64)
    extra = []
    if len(data.big_ids) > 0 and space.n_bigram > 0:
        Bw, lb = _table(space.b_ptr, data.big_ids, np.asarray(space.b_pair, np.int64), w, space.b_base, L * L)
        Bw = Bw.reshape(-1, L, L)
        tables = np.concatenate([T.T[None], (T[None] + Bw).transpose(0, 2, 1)])
        slots = _slots(np.asarray(data.big_ptr, np.int64))
        if slots:
            tok, idx = slots[0]
            first[tok] = lb[idx] + 1
            extra = [(tok, lb[idx]) for tok, idx in slots[1:]]
    if extra:                                   # tokens with several bigram attributes
        more = np.zeros(n_tok, bool)
        more[extra[0][0]] = True
        BwT = Bw.transpose(0, 2, 1)
    lengths = np.diff(seq_ptr)
    order = np.argsort(-lengths, kind="stable")    # longest first: the active ones are a prefix
    starts = seq_ptr[:-1][order]
    sorted_len = lengths[order]
    n_active = np.searchsorted(-sorted_len, -np.arange(int(sorted_len[0]) if len(order) else 0), "left")
    delta = np.empty((len(order), L))
    back = np.zeros((n_tok, L), dtype=np.uint8 if L <= 256 else np.int32)
    step = max(1, BLOCK_ENTRIES // (L * L))
    for b0 in range(0, len(order), step):       # blocks of sequences whose tables stay in cache
        b1 = min(b0 + step, len(order))
        for t in range(int(sorted_len[b0])):
            n = min(int(n_active[t]), b1) - b0
            tok = starts[b0:b0 + n] + t
            if t == 0:
                delta[b0:b0 + n] = E[tok]
                continue
            M = tables[first[tok]]
            if extra and more[tok].any():
                pos = np.full(n_tok, -1, np.int64)
                pos[tok] = np.arange(n)
                for etok, a in extra:
                    rows = pos[etok]
                    keep = rows >= 0
                    M[rows[keep]] += BwT[a[keep]]
            cand = np.add(delta[b0:b0 + n, None, :], M, out=M)   # [sequence, current, previous] (M: a copy)
            arg = cand.argmax(axis=2)                      # the lowest previous label on ties
            delta[b0:b0 + n] = np.take_along_axis(cand, arg[:, :, None], axis=2)[:, :, 0] + E[tok]
            back[tok] = arg
    y = delta.argmax(axis=1)                          # the lowest last label on ties
    out = np.empty(n_tok, dtype=np.int32)
    for t in range(len(n_active) - 1, -1, -1):
        n = int(n_active[t])
        tok = starts[:n] + t
        out[tok] = y[:n]
        if t:
            y[:n] = back[tok, y[:n]]
    return out
