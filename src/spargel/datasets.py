"""Deterministic synthetic data sets for tests, examples and the demo."""

import numpy as np


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
