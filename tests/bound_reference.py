"""Plain-Python references of the bounds, written from the definitions with explicit
feature vectors (no recursions shared with the compiled code): used only by the tests."""

import itertools

import numpy as np


def omega(u):
    if not np.isfinite(u):
        return 0.0
    if abs(u) < 1e-4:
        return 0.25 - u * u / 48.0
    return np.tanh(0.5 * u) / (2.0 * u)


def chain_paths(S, n):
    return list(itertools.product(range(S), repeat=n))


def chain_features(phi, tau, path):
    """Feature vector of a label path: sum of emission vectors phi[t][s] and transition
    vectors tau[s', s]."""
    f = sum(phi[t][path[t]] for t in range(len(path)))
    for t in range(1, len(path)):
        f = f + tau[path[t - 1]][path[t]]
    return f


def chain_bound_reference(theta, phi, tau):
    """The chain bound of :mod:`spargel.chain.bound` from its definition, with
    explicit vectors: per-state prefix bounds (z, mu) by enumerating the prefix paths, one
    curvature shared by all states of a position (prefix part: twice the largest
    ||l||_1-diagonal weight P over the destination states; transition part D P / (P - D)), Algorithm 1
    over the pairs of the last two positions. Returns (log z, mu, Sigma)."""
    n, S = len(phi), len(phi[0])
    d = len(theta)

    def prefix(t, s):
        """(log z, mu) of the paths of positions 0..t ending in state s."""
        paths = [p + (s,) for p in itertools.product(range(S), repeat=t)]
        F = np.array([chain_features(phi[:t + 1], tau, p) for p in paths])
        a = F @ theta
        m = a.max()
        wts = np.exp(a - m)
        return m + np.log(wts.sum()), (wts / wts.sum()) @ F

    Sigma = np.zeros((d, d))
    for t in range(1, n - 1):
        pre = [prefix(t - 1, j) for j in range(S)]
        la = np.array([p[0] for p in pre])
        mus = [p[1] for p in pre]
        ref = int(np.argmax(la))
        others = [j for j in range(S) if j != ref]
        Dmax = np.zeros(S)
        Ds = []
        for s in range(S):
            items = [ref] + others
            lam = np.array([la[j] + theta @ tau[j][s] for j in items])
            # Algorithm 1 in the coordinates of the items, l = e_j - running mean
            lz, mean = -np.inf, np.zeros(S)
            D = np.zeros(S)
            for i, j in enumerate(items):
                u = lam[i] - lz
                l = -mean.copy()
                l[j] += 1.0
                lt = np.delete(l, ref)                        # reduced coordinates (drop ref)
                D += omega(u) * np.abs(lt).sum() * np.insert(np.abs(lt), ref, 0.0)
                mean += (1.0 / (1.0 + np.exp(-u)) if np.isfinite(u) else 1.0) * l
                lz = np.logaddexp(lz, lam[i])
            Dmax = np.maximum(Dmax, 2.0 * D)
            Ds.append(D)
        for s in range(S):
            for j in others:
                if Ds[s][j] > 0:
                    dt = tau[j][s] - tau[ref][s]
                    Sigma += Ds[s][j] * Dmax[j] / (Dmax[j] - Ds[s][j]) * np.outer(dt, dt)
        for j in others:
            dm = mus[j] - mus[ref]
            Sigma += Dmax[j] * np.outer(dm, dm)
    # root: Algorithm 1 over the pairs (j at n-2, s at n-1), s outer, j inner
    if n == 1:
        F = np.array([phi[0][s] for s in range(S)])
    else:
        pre = [prefix(n - 2, j) for j in range(S)]
        F, lh = [], []
        for s in range(S):
            for j in range(S):
                F.append(pre[j][1] + tau[j][s] + phi[n - 1][s])
                lh.append(pre[j][0] - theta @ pre[j][1])
        F = np.array(F)
    logw = F @ theta if n == 1 else F @ theta + np.array(lh)
    lz, mu, R = -np.inf, np.zeros(d), np.zeros((d, d))
    for i in range(len(F)):
        u = logw[i] - lz
        l = F[i] - mu
        R += omega(u) * np.outer(l, l)
        mu += (1.0 / (1.0 + np.exp(-u)) if np.isfinite(u) else 1.0) * l
        lz = np.logaddexp(lz, logw[i])
    return lz, mu, Sigma + R
