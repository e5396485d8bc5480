import numpy as np
import pytest


def chain_samples(n, p, seed=0, rho=0.6, size=None):
    """n samples of p variables in a chain: each variable plus ``rho`` times the one
    before it (in independent chains of ``size`` variables when given)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    for j in range(1, p):
        if size is None or j % size:
            X[:, j] += rho * X[:, j - 1]
    return X


def random_covariance(m, n, seed, sparse_truth=True):
    """Empirical covariance of m samples from a random sparse-precision Gaussian."""
    rng = np.random.default_rng(seed)
    if sparse_truth:
        A = np.triu(rng.random((n, n)) < 0.2, 1) * rng.uniform(-0.5, 0.5, (n, n))
        K = A + A.T
        K += np.eye(n) * (0.5 - min(0.0, np.linalg.eigvalsh(K)[0]))
        C = np.linalg.inv(K)
        X = rng.multivariate_normal(np.zeros(n), C, size=m)
    else:
        X = rng.standard_normal((m, n))
    X = X - X.mean(axis=0)
    return X.T @ X / m


@pytest.fixture(name="problems")
def _problems():
    """(S, alpha) pairs: well-posed, singular (m < n), and a screened one."""
    out = [(random_covariance(60, 12, 0), 0.08),
           (random_covariance(10, 25, 1), 0.15),      # singular S
           (random_covariance(40, 30, 2), 0.05)]
    # block-diagonal truth -> several screened components
    S = random_covariance(200, 15, 3)
    mask = np.zeros((15, 15), bool)
    for g in (range(0, 5), range(5, 9), range(9, 15)):
        mask[np.ix_(list(g), list(g))] = True
    S = np.where(mask, S, 0.02 * S)
    out.append((S, 0.06))
    return out


def kkt_violation(K, S, L):
    """Max violation of the optimality conditions of the l1 problem:
    (K^-1 - S)_ij = L_ij sign(K_ij) on the support, |(K^-1 - S)_ij| <= L_ij off it."""
    W = np.linalg.inv(K) - S
    on = K != 0
    v_on = np.abs(W - L * np.sign(K))[on]
    v_off = np.maximum(np.abs(W) - L, 0)[~on]
    return max(v_on.max(initial=0), v_off.max(initial=0))
