"""The low-rank bound (Jebara & Choromanska 2012, Algorithm 4): the curvature kept as

    Sigma_k = V' diag(s) V + D        V: k x d with orthonormal rows, s >= 0, D >= 0 diagonal,

built from a stream of rank-one terms ``r r'`` (the ``sqrt(omega) l`` of Algorithm 1)
without ever forming a d x d matrix, and still an *upper* bound: whatever does not fit
in rank k is not dropped but *absorbed* into the diagonal, using
``v v' <= diag(|v|) ||v||_1`` (Cauchy-Schwarz: ``(v.x)^2 <= (sum |v_i|)(sum |v_i| x_i^2)``).

The paper adds one term at a time (project it on V, rotate by a k x k eigen-decomposition,
absorb the weakest of the k + 1 directions). Here terms come in blocks (all the terms of
a few samples): project the block on V, orthonormalise the residual, eigen-decompose the
small ``(k + b) x (k + b)`` matrix in the joint basis (cross terms included: dropping
them would not bound), keep the k strongest directions and absorb the others. With
``b = 1`` it is the paper's update; blocks turn its vector loops into matrix products.

Steps use the Woodbury identity,
``(E + V' S V)^-1 = E^-1 - E^-1 V' G (I + G V E^-1 V' G)^-1 G V E^-1`` with
``G = S^(1/2)``, ``E = D + shift``: O(k^2 d) instead of O(d^3).

>>> rng = np.random.default_rng(1)
>>> R = rng.normal(size=(12, 6))
>>> lr = LowRankCurvature.build([R[:5], R[5:]], 6, rank=2)
>>> exact = R.T @ R
>>> bool(np.linalg.eigvalsh(lr.dense() - exact).min() >= -1e-9)     # still an upper bound
True
"""

import math

import numpy as np
from ..core.jit import kernel

from ..core.bound import coordinate_step, positive_shift


class LowRankCurvature:
    """``Sigma = V' diag(s) V + diag(D)`` (see the module documentation)."""

    exact_solve = True

    def __init__(self, V, s, D):
        self.V = np.ascontiguousarray(V, dtype=np.float64)
        self.s = np.ascontiguousarray(s, dtype=np.float64)
        self.D = np.ascontiguousarray(D, dtype=np.float64)
        self.n = len(self.D)
        self._Vt = None

    @property
    def rank(self):
        return len(self.s)

    # -- Algorithm 4 ------------------------------------------------------------------
    @classmethod
    def build(cls, blocks, n, rank, D=None, rel_tol=1e-10):
        """Accumulate the rank-one terms given as the rows of each array in ``blocks`` (an
        iterable of ``b x n`` arrays) into a rank-``rank`` bound; ``D`` an initial
        diagonal (e.g. the l2 strength, as the paper's ``D = t lambda I``)."""
        rank = int(rank)
        if rank < 0:
            raise ValueError("rank must be >= 0")
        V = np.zeros((0, n))
        s = np.zeros(0)
        D = np.zeros(n) if D is None else np.array(D, dtype=np.float64)
        for R in blocks:
            R = np.atleast_2d(np.asarray(R, dtype=np.float64))
            if R.shape[0] == 0:
                continue
            if R.shape[1] != n:
                raise ValueError(f"rank-one terms have {R.shape[1]} entries, expected {n}")
            P = R @ V.T                                     # coefficients on V
            Res = R - P @ V
            # orthonormal basis of the residual rows; directions too weak to normalise
            # reliably (relative size < rel_tol) are bounded by a tiny ridge instead: their
            # part B of the block adds at most 2 ||A|| ||B|| + ||B||^2 in any direction
            Ua, sv, Bt = np.linalg.svd(Res, full_matrices=False)
            keep = sv > rel_tol * max(float(sv[0]) if len(sv) else 0.0, math.sqrt(float(np.sum(R * R))))
            if np.any(~keep):
                weak = float(np.max(sv[~keep]))
                D += 2.0 * weak * math.sqrt(float(np.sum(R * R))) + weak * weak
            E = Bt[keep]                                    # new orthonormal rows
            C = np.hstack([P, Ua[:, keep] * sv[keep]])      # the block's coefficients in [V; E]
            M = C.T @ C
            M[:len(s), :len(s)] += np.diag(s)
            ev, Q = np.linalg.eigh(M)
            ev = np.maximum(ev, 0.0)
            basis = np.vstack([V, E])
            n_drop = max(len(ev) - rank, 0)
            if n_drop:
                drop = Q[:, :n_drop].T @ basis              # weakest directions, absorbed
                D += (ev[:n_drop] * np.abs(drop).sum(axis=1)) @ np.abs(drop)
            V = Q[:, n_drop:].T @ basis
            s = ev[n_drop:]
        good = s > 0
        return cls(V[good], s[good], D)

    @classmethod
    def from_dense(cls, Sigma, rank, block=8):
        """Algorithm 4 applied to the eigen-factors of a dense PSD matrix (tests, small d)."""
        lam, Q = np.linalg.eigh(np.asarray(Sigma, dtype=np.float64))
        lam = np.maximum(lam, 0.0)
        R = (Q * np.sqrt(lam)).T[lam > 0]
        return cls.build((R[i:i + block] for i in range(0, len(R), block)), Sigma.shape[0], rank)

    # -- the curvature interface ------------------------------------------------------
    def matvec(self, v):
        return self.V.T @ (self.s * (self.V @ v)) + self.D * v

    def diagonal(self):
        return (self.V * self.V).T @ self.s + self.D

    def dense(self):
        return (self.V.T * self.s) @ self.V + np.diag(self.D)

    def solve(self, rhs, shift):
        E = self.D + positive_shift(shift, self.diagonal())
        Ei = 1.0 / E
        g = np.sqrt(self.s)
        GV = self.V * g[:, None]
        x = Ei * rhs
        if len(g) == 0:
            return x
        K = np.eye(len(g)) + (GV * Ei) @ GV.T
        y = np.linalg.solve(K, GV @ x)
        return x - Ei * (GV.T @ y)

    def coordinate_descent(self, g, w, l1, l2, delta, max_sweeps=100, tol=1e-10, active=None):
        if self._Vt is None:
            self._Vt = np.ascontiguousarray(self.V.T)
        a = self.s * (self.V @ delta)
        sweeps = _lowrank_cd(self._Vt, self.s, self.D, self.diagonal(), g, w, l1, l2, delta, a, int(max_sweeps),
                             float(tol))
        return delta, sweeps


@kernel()
def _lowrank_cd(Vt, s, D, diag, g, w, l1, l2, delta, a, max_sweeps, tol):
    """Coordinate descent on ``g.d + 1/2 d'(V'SV + D)d + enet(w + d)``, keeping
    ``a = S V d`` (k numbers) so that a coordinate costs O(k)."""
    n, k = Vt.shape
    for sweep in range(max_sweeps):
        biggest = 0.0
        for j in range(n):
            h = diag[j]
            col = 0.0
            for r in range(k):
                col += Vt[j, r] * a[r]
            step = coordinate_step(g[j] + col + D[j] * delta[j], h, w, delta, j, l1, l2)
            if step != 0.0:
                for r in range(k):
                    a[r] += step * s[r] * Vt[j, r]
                biggest = max(biggest, abs(step) * math.sqrt(h + l2[j]))
        if biggest <= tol:
            return sweep + 1
    return max_sweeps
