"""Slow, obviously-correct reference computations for tiny second-order CRFs
(brute-force enumeration over every label sequence). Shared by the order-2 tests."""

import itertools

import numpy as np

from spargel.chain.crf2_space import FeatureSpace2


def random_space2(data, kind, n_labels, n_uni, n_big, transitions=True):
    if kind == "full":
        return FeatureSpace2.full(n_labels, n_uni, n_big, transitions)
    return FeatureSpace2.observed(data, n_labels, n_uni, n_big, transitions)


def dense_weights2(space, w):
    """(U[a, y], P[a, pair], T[triple]) dense views of w (zero where absent)."""
    L = space.n_labels
    S = (L + 1) * L
    n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
    U = np.zeros((n_u, L))
    for a in range(n_u):
        for k in range(space.u_ptr[a], space.u_ptr[a + 1]):
            U[a, space.u_lab[k]] = w[k]
    P = np.zeros((n_b, S))
    for a in range(n_b):
        for k in range(space.b_ptr[a], space.b_ptr[a + 1]):
            P[a, space.b_pair[k]] = w[space.b_base + k]
    T = np.zeros(S * L)
    T[space.t_pair] = w[space.t_base:]
    return U, P, T


def path_score2(space, data, w, s, path):
    """Score of a label path: unigram weights of the label, pair weights of (previous
    label, label) with the begin marker L before the first token, triple weights of
    (label two back, previous, label) from the second token on."""
    U, P, T = dense_weights2(space, w)
    L = space.n_labels
    lo = data.seq_ptr[s]
    total = 0.0
    for t, y in enumerate(path):
        tok = lo + t
        prev = path[t - 1] if t > 0 else L
        prev2 = path[t - 2] if t > 1 else L
        for j in range(data.uni_ptr[tok], data.uni_ptr[tok + 1]):
            total += data.uni_vals[j] * U[data.uni_ids[j], y]
        for j in range(data.big_ptr[tok], data.big_ptr[tok + 1]):
            total += data.big_vals[j] * P[data.big_ids[j], prev * L + y]
        if t > 0:
            total += T[(prev2 * L + prev) * L + y]
    return total


def enumerate_paths2(space, data, w, s):
    n = data.seq_ptr[s + 1] - data.seq_ptr[s]
    paths = list(itertools.product(range(space.n_labels), repeat=n))
    scores = np.array([path_score2(space, data, w, s, p) for p in paths])
    return paths, scores


def brute_logz2(space, data, w, s):
    _, scores = enumerate_paths2(space, data, w, s)
    m = scores.max()
    return m + np.log(np.exp(scores - m).sum())


def brute_marginals2(space, data, w, s):
    """Label marginals (n x L) and pair-state marginals (n x (L+1) L)."""
    paths, scores = enumerate_paths2(space, data, w, s)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    n = len(paths[0])
    L = space.n_labels
    point = np.zeros((n, L))
    pair = np.zeros((n, (L + 1) * L))
    for path, prob in zip(paths, p):
        for t, y in enumerate(path):
            point[t, y] += prob
            pair[t, (path[t - 1] if t else L) * L + y] += prob
    return point, pair


def brute_loss2(space, data, w):
    total = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        total += brute_logz2(space, data, w, s) - path_score2(space, data, w, s, list(data.labels[lo:hi]))
    return total
