"""Slow, obviously-correct reference computations for tiny CRFs (brute-force
enumeration over every label sequence). Shared by the tests."""

import itertools

import numpy as np

from spargel.data.dataset import SequenceData
from spargel.data.feature_space import FeatureSpace


def random_data(rng, n_seq=4, max_len=4, n_uni=6, n_big=3, n_labels=3, p_big=0.5, real_values=True):
    seq_ptr = [0]
    uni_ptr, uni_ids, uni_vals = [0], [], []
    big_ptr, big_ids, big_vals = [0], [], []
    labels = []
    for _ in range(n_seq):
        n = int(rng.integers(1, max_len + 1))
        for _ in range(n):
            ids = rng.choice(n_uni, size=int(rng.integers(1, min(4, n_uni) + 1)), replace=False)
            uni_ids += list(ids)
            uni_vals += list(rng.normal(size=len(ids)) if real_values else np.ones(len(ids)))
            uni_ptr.append(len(uni_ids))
            if n_big and rng.random() < p_big:
                ids = rng.choice(n_big, size=int(rng.integers(1, min(2, n_big) + 1)), replace=False)
                big_ids += list(ids)
                big_vals += list(rng.normal(size=len(ids)) if real_values else np.ones(len(ids)))
            big_ptr.append(len(big_ids))
            labels.append(int(rng.integers(n_labels)))
        seq_ptr.append(len(labels))
    return SequenceData(np.array(seq_ptr, np.int64), np.array(uni_ptr, np.int64), np.array(uni_ids, np.int32),
                        np.array(uni_vals, float), np.array(big_ptr, np.int64), np.array(big_ids, np.int32),
                        np.array(big_vals, float), np.array(labels, np.int32))


def random_space(rng, data, kind, n_labels, n_uni, n_big, transitions=True):
    if kind == "full":
        return FeatureSpace.full(n_labels, n_uni, n_big, transitions)
    return FeatureSpace.observed(data, n_labels, n_uni, n_big, transitions)


def dense_weights(space, w):
    """(U[a, y], B[a, prev*L+cur], T[prev*L+cur]) dense views of w (zero where absent)."""
    L = space.n_labels
    n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
    U = np.zeros((n_u, L))
    for a in range(n_u):
        for k in range(space.u_ptr[a], space.u_ptr[a + 1]):
            U[a, space.u_lab[k]] = w[k]
    B = np.zeros((n_b, L * L))
    for a in range(n_b):
        for k in range(space.b_ptr[a], space.b_ptr[a + 1]):
            B[a, space.b_pair[k]] = w[space.b_base + k]
    T = np.zeros(L * L)
    T[space.t_pair] = w[space.t_base:]
    return U, B, T


def path_score(space, data, w, s, path):
    U, B, T = dense_weights(space, w)
    L = space.n_labels
    lo = data.seq_ptr[s]
    total = 0.0
    for t, y in enumerate(path):
        tok = lo + t
        for j in range(data.uni_ptr[tok], data.uni_ptr[tok + 1]):
            total += data.uni_vals[j] * U[data.uni_ids[j], y]
        if t > 0:
            p = path[t - 1] * L + y
            total += T[p]
            for j in range(data.big_ptr[tok], data.big_ptr[tok + 1]):
                total += data.big_vals[j] * B[data.big_ids[j], p]
    return total


def enumerate_paths(space, data, w, s):
    n = data.seq_ptr[s + 1] - data.seq_ptr[s]
    paths = list(itertools.product(range(space.n_labels), repeat=n))
    scores = np.array([path_score(space, data, w, s, p) for p in paths])
    return paths, scores


def brute_logz(space, data, w, s):
    _, scores = enumerate_paths(space, data, w, s)
    m = scores.max()
    return m + np.log(np.exp(scores - m).sum())


def brute_marginals(space, data, w, s):
    paths, scores = enumerate_paths(space, data, w, s)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    n = len(paths[0])
    L = space.n_labels
    point = np.zeros((n, L))
    pair = np.zeros((n, L, L))
    for path, prob in zip(paths, p):
        for t, y in enumerate(path):
            point[t, y] += prob
            if t:
                pair[t, path[t - 1], y] += prob
    return point, pair


def brute_loss(space, data, w):
    total = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        total += brute_logz(space, data, w, s) - path_score(space, data, w, s, list(data.labels[lo:hi]))
    return total
