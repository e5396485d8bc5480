"""Deterministic synthetic data sets for tests, examples and the demo."""

import numpy as np
from .data.dataset import SequenceData


def make_chain_data(n_sequences=300, length=(6, 16), n_labels=4, n_relevant=12, n_irrelevant=200,
                    p_on=0.6, p_noise=0.05, random_state=0):
    """Sequence-labelling data with many irrelevant attributes.

    Labels follow a first-order Markov chain with sticky transitions. Relevant attribute
    ``r{j}`` belongs to label ``j % n_labels`` and fires with probability ``p_on`` on
    that label and ``p_noise`` otherwise; irrelevant attributes ``n{j}`` fire with
    probability ``p_noise`` whatever the label (the setting of the Grafting-Light
    paper's synthetic study: a few informative features among many useless ones).

    Returns ``(X, y, relevant)``: X is a list of sequences, each a list of tokens, each
    a list of attribute strings; y the label strings; relevant the names of the
    relevant attributes.

    >>> X, y, relevant = make_chain_data(n_sequences=2, random_state=1)
    >>> len(X), len(X[0]) == len(y[0]), relevant[:2]
    (2, True, ['r0', 'r1'])
    """
    rng = np.random.default_rng(random_state)
    names = [f"L{k}" for k in range(n_labels)]
    T = np.full((n_labels, n_labels), 0.4 / max(n_labels - 1, 1))
    np.fill_diagonal(T, 0.6)
    owner = np.arange(n_relevant) % n_labels
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(length[0], length[1] + 1))
        labs = [int(rng.integers(n_labels))]
        for _ in range(n - 1):
            labs.append(int(rng.choice(n_labels, p=T[labs[-1]])))
        seq = []
        for lab in labs:
            on_rel = rng.random(n_relevant) < np.where(owner == lab, p_on, p_noise)
            on_irr = rng.random(n_irrelevant) < p_noise
            seq.append([f"r{j}" for j in np.flatnonzero(on_rel)] + [f"n{j}" for j in np.flatnonzero(on_irr)])
        X.append(seq)
        y.append([names[k] for k in labs])
    return X, y, [f"r{j}" for j in range(n_relevant)]


def sample_chain_crf_gibbs(X, unary, transition, sweeps=50, rng=None):
    """Label sequences drawn from the linear-chain CRF ``p(y | x) ∝ exp(sum_t x_t . U[:, y_t]
    + sum_t T[y_{t-1}, y_t])`` by Gibbs sampling.

    ``X`` (n_sequences, length, d) inputs, ``unary`` (d, n_labels) state weights,
    ``transition`` (n_labels, n_labels). Every chain starts from a uniformly drawn
    labelling and makes ``sweeps`` systematic scans (each position resampled from its
    conditional given its two neighbours); all sequences are scanned together. Returns
    the final labels, (n_sequences, length) int32.

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3, 4, 2))
    >>> sample_chain_crf_gibbs(X, np.zeros((2, 2)), np.zeros((2, 2)), rng=rng).shape
    (3, 4)
    """
    rng = np.random.default_rng(rng)
    X = np.asarray(X, dtype=np.float64)
    n, length, _ = X.shape
    L = unary.shape[1]
    scores = X @ unary                                   # (n, length, L)
    y = rng.integers(L, size=(n, length))
    for _ in range(int(sweeps)):
        for t in range(length):
            s = scores[:, t, :].copy()
            if t > 0:
                s += transition[y[:, t - 1], :]
            if t + 1 < length:
                s += transition[:, y[:, t + 1]].T
            s -= s.max(axis=1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=1, keepdims=True)
            u = rng.random(n)
            y[:, t] = np.minimum((np.cumsum(p, axis=1) < u[:, None]).sum(axis=1), L - 1)
    return y.astype(np.int32)


def make_crf_gibbs_data(n_sequences=5000, length=8, n_inputs=1000, n_relevant=100, n_labels=2, weight_scale=0.3,
                        transition_scale=1.0, sweeps=50, random_state=0):
    """The synthetic sequence-labelling data of the Grafting-Light paper (§6.1.1).

    Every token has ``n_inputs`` standard-Gaussian inputs, of which ``n_relevant`` (drawn
    at random) carry weight: a random linear-chain CRF with state weights
    ``U[a, k] ~ N(0, weight_scale^2)`` for the relevant inputs ``a`` (zero for the
    others) and transition weights ``T[i, j] ~ N(0, transition_scale^2)``; the label
    sequences are drawn from ``p(y | x)`` by Gibbs sampling
    (:func:`sample_chain_crf_gibbs`). With the defaults: sequences of 8 binary labels,
    2000 state features (input x label) and 2 x 2 transitions, as in the paper.

    Returns ``(X, y, unary, transition)``: inputs (n_sequences, length, n_inputs),
    labels (n_sequences, length), the true weights.

    >>> X, y, U, T = make_crf_gibbs_data(n_sequences=4, n_inputs=10, n_relevant=3)
    >>> X.shape, y.shape, int((U != 0).any(axis=1).sum())
    ((4, 8, 10), (4, 8), 3)
    """
    rng = np.random.default_rng(random_state)
    unary = np.zeros((n_inputs, n_labels))
    relevant = rng.choice(n_inputs, size=n_relevant, replace=False)
    unary[relevant] = rng.normal(scale=weight_scale, size=(n_relevant, n_labels))
    transition = rng.normal(scale=transition_scale, size=(n_labels, n_labels))
    X = rng.standard_normal((n_sequences, length, n_inputs))
    y = sample_chain_crf_gibbs(X, unary, transition, sweeps=sweeps, rng=rng)
    return X, y, unary, transition


def dense_sequence_data(X, y=None):
    """A :class:`~spargel.data.dataset.SequenceData` of equal-length sequences whose
    every token carries every input as a real-valued unigram attribute: attribute ``a``
    of token ``t`` of sequence ``s`` has value ``X[s, t, a]`` (no bigram attributes).

    >>> d = dense_sequence_data(np.ones((2, 3, 4)), np.zeros((2, 3), int))
    >>> d.n_sequences, d.n_tokens, len(d.uni_ids)
    (2, 6, 24)
    """
    X = np.asarray(X, dtype=np.float64)
    n, length, d = X.shape
    n_tok = n * length
    return SequenceData(
        np.arange(n + 1, dtype=np.int64) * length,
        np.arange(n_tok + 1, dtype=np.int64) * d,
        np.tile(np.arange(d, dtype=np.int32), n_tok),
        np.ascontiguousarray(X.reshape(-1)),
        np.zeros(n_tok + 1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0),
        None if y is None else np.ascontiguousarray(np.asarray(y).reshape(-1), dtype=np.int32))
