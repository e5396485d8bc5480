"""CONCORD: the l1-penalised symmetric pseudo-likelihood of a precision matrix.

Khare, Oh & Rajaratnam (2015), *A convex pseudolikelihood framework for high
dimensional partial correlation estimation with convergence guarantees* (JRSS-B),
solved by coordinate descent on an active set (their CONCORD-CD's updates; Oh, Dalal,
Khare & Rajaratnam 2014 for the proximal variants). The problem, with ``S = Z^T Z / n``
the covariance of the centred -- by default also standardised -- columns ``Z`` of X::

    Q(W) = -sum_i log w_ii + 1/2 tr(W S W) + alpha sum_{i<j} |w_ij|
         = sum_i [ -log w_ii + 1/(2n) || w_ii z_i + sum_{j != i} w_ij z_j ||^2 ]
           + alpha sum_{i<j} |w_ij|

which is the paper's objective divided by n (their ``lambda`` is ``n alpha``); each
off-diagonal pair is penalised once. Unlike the Gaussian likelihood it needs no
log-determinant, so nothing p x p is ever factorised.

The solver keeps the off-diagonal entries on an **active set** of pairs and works on
the columns of Z (``covariance="from_data"``, the default above 2,000 variables or
with fewer samples than variables):

1. ``Y = Z W`` (n x p) is kept up to date, so every coordinate step reads
   ``(W S)_ij = y_i . z_j / n`` in O(n) (:mod:`._concord_kernels`);
2. sweeps of coordinate descent on the active pairs and the diagonal until the largest
   change of a sweep, on the scale of the partial correlations, is at most ``tol``;
3. a **KKT pass** over all pairs, by slabs of rows of the upper triangle: the gradient
   ``G = W S + S W`` of a slab is ``(Y_a^T Z + Z_a^T Y) / n`` (two products of an
   n-column slab with the whole data, at most ``block_bytes`` of G at once); the pairs
   outside the active set with ``|G_ij| > alpha (1 + tol)`` are added and 2-3 repeat.
   None left: the KKT conditions hold for every pair and the fit stops. The products
   are made in single precision, with a bound on their rounding error: the pairs
   within that bound of the threshold are recomputed in double precision, so the
   pass finds exactly the pairs a double-precision pass would.

The first pass is made at the optimum of the empty graph (``w_ii = 1 / sqrt(s_ii)``),
where ``G_ij = s_ij (w_ii + w_jj)``: on standardised columns the starting set is the
screened set ``|S_ij| > alpha / 2``.

Memory: ``Z^T`` and ``Y^T`` (two n x p arrays of doubles), their single-precision
copies during a KKT pass (one more), the active pairs (24 bytes each), one slab of G
(at most ``block_bytes``, twice for its two products) and the result (CSR of the
non-zeros): ``O(n p + nnz)``, never p x p. Time: a sweep is ``O(n (p + m))`` for m
active pairs; a KKT pass is ``2 n p^2`` floating-point operations in BLAS (the first,
on the empty graph, ``n p^2``).

With ``covariance="dense"`` (the default for small problems with at least as many
samples as variables) S and ``V = W S`` are held as dense p x p arrays: a step is
``O(p)`` and a KKT pass reads ``V + V^T``. Both give the same solution.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((400, 6))
>>> X[:, 1] += 0.8 * X[:, 0]
>>> model = Concord(alpha=0.2).fit(X)
>>> model.edges_.tolist()
[[0, 1]]
>>> bool(model.partial_correlations_[0, 1] > 0.5)
True
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from ..core.first_use import announces_compiles
from ..core.interrupts import note_interrupt, reraise_interrupt
from ..core.params import ParamsMixin, check_number, keep_arguments
from ..errors import ConvergenceWarning, DataFormatError, ParameterError
from .estimator import PrecisionFitted
from .progress import record
from ..scaleout import cluster

__all__ = ["Concord", "concord_solve", "ColumnsBackend", "DenseBackend", "ClusterColumnsBackend"]

#: the largest p that covariance='auto' solves on the dense S (with n >= p)
AUTO_DENSE_P = 2000
_COVARIANCE = ("auto", "dense", "from_data")
#: coordinate-descent sweeps per kernel call (Ctrl-C is seen between calls)
_SWEEPS_PER_CALL = 10


class ColumnsBackend:
    """``(W S)`` read from the columns: ``ZT`` (p x n) and ``YT = W ZT`` (p x n)."""

    def __init__(self, ZT, block_bytes=2**26, single=True):
        self.single = bool(single)
        self.ZT = np.ascontiguousarray(ZT, dtype=np.float64)
        self.p, self.n = self.ZT.shape
        self.inv_n = 1.0 / self.n
        self.sdiag = np.einsum("ij,ij->i", self.ZT, self.ZT) * self.inv_n
        self.block_bytes = int(block_bytes)
        self.YT = None

    def reset(self, I, J, w, d):
        """``YT = W ZT`` computed afresh from the iterate (no drift from the steps)."""
        W = _sym_csr(self.p, I, J, w, d)
        self.YT = np.ascontiguousarray(W @ self.ZT)

    def sweeps(self, I, J, w, d, alpha, n_sweeps, tol, out):
        from . import _concord_kernels as K
        K.sweeps_columns(self.ZT, self.YT, self.sdiag, self.inv_n, I, J, w, d, alpha,
                         n_sweeps, tol, out)

    def trace(self, I, J, w, d):
        """``tr(W S W) = sum_i ||y_i||^2 / n``."""
        return float(np.einsum("ij,ij->", self.YT, self.YT)) * self.inv_n

    def diag_grad(self, d):
        return np.einsum("ij,ij->i", self.YT, self.ZT) * self.inv_n - 1.0 / d

    def pair_grad(self, I, J):
        g = np.empty(I.size)
        for a in range(0, I.size, 4096):
            b = min(a + 4096, I.size)
            g[a:b] = (np.einsum("ij,ij->i", self.YT[I[a:b]], self.ZT[J[a:b]])
                      + np.einsum("ij,ij->i", self.YT[J[a:b]], self.ZT[I[a:b]])) * self.inv_n
        return g

    def kkt(self, I, J, w, d, alpha, thr):
        return _kkt_pass(self, I, J, w, d, alpha, thr)

    def slabs(self, empty, d):
        """Yield ``(a, b, G[a:b, a:], margin)`` for consecutive slabs of rows (each slab
        at most ``block_bytes`` and at most a sixteenth of the rows). With ``empty`` (no
        off-diagonal entry) ``G_ij = s_ij (d_i + d_j)``: one product instead of two.

        With ``single`` the products are made in single precision (twice the speed of
        BLAS, half the memory traffic) and ``margin`` bounds their error entry by entry:
        rounding Z and Y to single precision and an inner product of length n in it err
        by at most ``(n + 4) u |a|^T |b| <= (n + 4) u ||a|| ||b||`` (u = 2^-24), so a
        pair whose single-precision ``|G_ij|`` is at most ``thr - margin`` cannot exceed
        ``thr``; the others are recomputed in double precision (:meth:`pair_grad`)."""
        p, n = self.p, self.n
        rows = max(1, min(max(1, p // 16), int(self.block_bytes // (8 * p))))
        if self.single:
            u = 2.0 ** -24
            zn = np.sqrt(self.sdiag * n)
            if empty:
                ZT = self.ZT.astype(np.float32)
                margin = (n + 8) * u * float(zn.max()) ** 2 * self.inv_n * 2 * float(d.max())
            else:
                ZT, YT = self.ZT.astype(np.float32), self.YT.astype(np.float32)
                yn = np.sqrt(np.einsum("ij,ij->i", self.YT, self.YT))
                margin = (n + 8) * u * 2 * float(zn.max()) * float(yn.max()) * self.inv_n
            d = d.astype(np.float32)
        else:
            ZT, YT = self.ZT, self.YT
            margin = 0.0
        for a in range(0, p, rows):
            b = min(a + rows, p)
            if empty:
                G = ZT[a:b] @ ZT[a:].T
                G *= d[a:b, None] + d[None, a:]
            else:
                G = YT[a:b] @ ZT[a:].T
                G += ZT[a:b] @ YT[a:].T
            G *= self.inv_n
            yield a, b, G, margin


class DenseBackend:
    """``(W S)`` read from the dense ``S`` and ``V = W S`` (both p x p)."""

    def __init__(self, S):
        self.S = np.ascontiguousarray(S, dtype=np.float64)
        self.p = self.S.shape[0]
        self.sdiag = np.diag(self.S).copy()
        self.V = None

    def reset(self, I, J, w, d):
        self.V = np.ascontiguousarray(_sym_csr(self.p, I, J, w, d) @ self.S)

    def sweeps(self, I, J, w, d, alpha, n_sweeps, tol, out):
        from . import _concord_kernels as K
        K.sweeps_dense(self.S, self.V, I, J, w, d, alpha, n_sweeps, tol, out)

    def trace(self, I, J, w, d):
        V = self.V
        return float(np.dot(d, np.diag(V)) + np.dot(w, V[I, J] + V[J, I]))

    def diag_grad(self, d):
        return np.diag(self.V) - 1.0 / d

    def pair_grad(self, I, J):
        return self.V[I, J] + self.V[J, I]

    def kkt(self, I, J, w, d, alpha, thr):
        return _kkt_pass(self, I, J, w, d, alpha, thr)

    def slabs(self, empty, d):
        G = self.V + self.V.T
        yield 0, self.p, G, 0.0


class ClusterColumnsBackend(ColumnsBackend):
    """:class:`ColumnsBackend` whose KKT passes run on the workers of a Dask cluster.

    The columns are cut into ``2 W`` slabs of about equal size (W workers); worker w
    holds slabs ``w`` and ``2 W - 1 - w`` of ``Z^T`` (scattered once per fit), so that
    each worker checks about the same share of the upper triangle: the rows of its two
    slabs against every column to their right. A pass sends each worker the rows of
    ``Y^T`` of its slabs and runs one task per tile (slab s of rows, slab t >= s of
    columns) on the worker of slab s (the slabs t it lacks come from the other
    workers, by Dask). Each task returns its violators, recomputed in double precision
    as on one machine, so the passes find the same pairs. The coordinate descent runs
    here (the client needs all of Z for it)."""

    def __init__(self, ZT, client, block_bytes=2**26):
        super().__init__(ZT, block_bytes)
        self.client = client
        addrs = list(cluster.workers(client))
        W = len(addrs)
        n_slabs = min(2 * W, self.p)
        self.bounds = np.linspace(0, self.p, n_slabs + 1).round().astype(np.int64)
        self.owner = [addrs[s] if s < W else addrs[2 * W - 1 - s] for s in range(n_slabs)]
        self.zf = [client.scatter(np.ascontiguousarray(self.ZT[a:b]), workers=[o], hash=False,
                                  direct=False)
                   for a, b, o in zip(self.bounds[:-1], self.bounds[1:], self.owner)]

    def kkt(self, I, J, w, d, alpha, thr):
        client, bounds = self.client, self.bounds
        n_slabs = len(self.owner)
        empty = I.size == 0
        # at the empty graph Y = Z diag(d): the diagonal is sent instead of Y
        yf = [client.scatter(np.ascontiguousarray(d[a:b] if empty else self.YT[a:b]),
                             workers=[o], hash=False, direct=False)
              for a, b, o in zip(bounds[:-1], bounds[1:], self.owner)]
        si = np.searchsorted(bounds, I, side="right") - 1
        ti = np.searchsorted(bounds, J, side="right") - 1
        futures = []
        try:
            for s in range(n_slabs):
                for t in range(s, n_slabs):
                    on = (si == s) & (ti == t)
                    futures.append(client.submit(
                        _tile_task, self.zf[s], yf[s], self.zf[t], yf[t], int(bounds[s]),
                        int(bounds[t]), float(thr), self.inv_n, self.block_bytes, I[on], J[on],
                        workers=[self.owner[s]], pure=False))
            parts = client.gather(futures)
        finally:
            for f in futures + yf:
                f.release()
        ni = np.concatenate([q[0] for q in parts])
        nj = np.concatenate([q[1] for q in parts])
        worst = max(q[2] for q in parts)
        return ni, nj, worst - alpha

    def close(self):
        for f in self.zf:
            f.release()
        self.zf = []


def _tile_task(Zs, Ys, Zt, Yt, s0, t0, thr, inv_n, block_bytes, AI, AJ):
    """The violators ``|G_ij| > thr`` among the pairs ``i < j`` with i in the slab of
    rows ``Zs, Ys`` (first variable ``s0``) and j in the slab of columns ``Zt, Yt``
    (first variable ``t0 >= s0``), outside the active pairs ``(AI, AJ)``: ``(i, j,
    largest |G_ij| outside the active set)``, global indices. Single-precision products
    with the rounding margin of :meth:`ColumnsBackend.slabs`, the candidates recomputed
    in double precision. ``Ys``, ``Yt`` may be the diagonal's slabs instead (1-D, the
    empty graph: ``Y = Z diag(d)``, ``G_ij = s_ij (d_i + d_j)``, one product)."""
    from . import _concord_kernels as K

    n = Zs.shape[1]
    u = 2.0 ** -24
    zmax = max(float(np.sqrt(np.einsum("ij,ij->i", A, A)).max()) for A in (Zs, Zt))
    empty = Ys.ndim == 1
    if empty:
        ds, dt = Ys, Yt
        margin = (n + 8) * u * zmax * zmax * inv_n * 2 * float(max(ds.max(), dt.max()))
        Ys, Yt = ds[:, None] * Zs, dt[:, None] * Zt          # exactly Y's entries
        ds32, dt32 = ds.astype(np.float32), dt.astype(np.float32)
    else:
        ymax = max(float(np.sqrt(np.einsum("ij,ij->i", A, A)).max()) for A in (Ys, Yt))
        margin = (n + 8) * u * 2 * zmax * ymax * inv_n
        Ys32, Yt32 = Ys.astype(np.float32), Yt.astype(np.float32)
    Zs32, Zt32 = Zs.astype(np.float32), Zt.astype(np.float32)
    rows = max(1, int(block_bytes // (8 * Zt.shape[0])))
    cap = max(1024, 4 * Zt.shape[0])
    out_i, out_j = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    stats = np.zeros(1)
    new_i, new_j = [], []
    worst = -np.inf
    for a in range(0, Zs.shape[0], rows):
        b = min(a + rows, Zs.shape[0])
        if empty:
            G = Zs32[a:b] @ Zt32.T
            G *= ds32[a:b, None] + dt32[None, :]
        else:
            G = Ys32[a:b] @ Zt32.T
            G += Zs32[a:b] @ Yt32.T
        G *= inv_n
        on = (AI >= s0 + a) & (AI < s0 + b)
        G[AI[on] - s0 - a, AJ[on] - t0] = 0.0
        shift = s0 + a - t0
        k = K.scan_slab(G, shift, thr - margin, out_i, out_j, stats)
        if k > cap:
            cap = 2 * k
            out_i, out_j = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
            k = K.scan_slab(G, shift, thr - margin, out_i, out_j, stats)
        G = None
        worst = max(worst, float(stats[0]) + margin)
        if k:
            r, c = out_i[:k] + a, out_j[:k]
            g = np.abs((np.einsum("ij,ij->i", Ys[r], Zt[c]) + np.einsum("ij,ij->i", Zs[r], Yt[c]))
                       * inv_n)
            worst = max(worst, float(g.max()))
            keep = g > thr
            new_i.append(r[keep] + s0)
            new_j.append(c[keep] + t0)
    if not new_i:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), worst
    return np.concatenate(new_i), np.concatenate(new_j), worst


def _sym_csr(p, I, J, w, d):
    """The symmetric p x p CSR matrix with diagonal d and ``w`` at (I, J) and (J, I)."""
    r = np.concatenate([I, J, np.arange(p)])
    c = np.concatenate([J, I, np.arange(p)])
    v = np.concatenate([w, w, d])
    return sp.csr_matrix((v, (r, c)), shape=(p, p))


def _kkt_pass(backend, I, J, w, d, alpha, thr):
    """One pass over all pairs: the pairs outside the active set ``(I, J)`` (sorted by
    ``I p + J``) whose gradient exceeds ``thr`` in absolute value, as arrays
    ``(i, j)``, and the largest ``|G_ij| - alpha`` over the pairs outside the active
    set (exact for the pairs near ``thr``, within the slabs' rounding margin for the
    others)."""
    from . import _concord_kernels as K

    new_i, new_j = [], []
    worst = -np.inf
    empty = I.size == 0
    cap = max(1024, 4 * backend.p)
    out_i, out_j = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    stats = np.zeros(1)
    for a, b, G, margin in backend.slabs(empty, d):
        if not empty:
            lo, hi = np.searchsorted(I, [a, b])
            G[I[lo:hi] - a, J[lo:hi] - a] = 0.0               # the active pairs: not candidates
        k = K.scan_slab(G, 0, thr - margin, out_i, out_j, stats)
        if k > cap:                                           # more than fit: scan again
            cap = 2 * k
            out_i, out_j = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
            k = K.scan_slab(G, 0, thr - margin, out_i, out_j, stats)
        worst = max(worst, float(stats[0]) + margin)
        ii, jj = out_i[:k] + a, out_j[:k] + a
        if k and margin:                                      # recomputed in double precision
            G = None                                          # the slab is done with
            g = np.abs(backend.pair_grad(ii, jj))
            worst = max(worst, float(g.max()))
            keep = g > thr
            ii, jj = ii[keep], jj[keep]
        elif k:
            worst = max(worst, float(np.abs(G[out_i[:k], out_j[:k]]).max()))
        G = None
        if ii.size:
            new_i.append(ii)
            new_j.append(jj)
    if not new_i:
        z = np.zeros(0, dtype=np.int64)
        return z, z, worst - alpha
    return np.concatenate(new_i), np.concatenate(new_j), worst - alpha


def _merge(p, I, J, w, ni, nj):
    """The active set with the pairs (ni, nj) added at zero, sorted by ``I p + J``."""
    I2 = np.concatenate([I, ni])
    J2 = np.concatenate([J, nj])
    w2 = np.concatenate([w, np.zeros(ni.size)])
    order = np.argsort(I2 * p + J2, kind="stable")
    return I2[order], J2[order], w2[order]


def kkt_violation(backend, I, J, w, d, alpha, outside):
    """The largest violation of the optimality conditions: ``|G_ii|`` on the diagonal,
    ``|G_ij + alpha sign(w_ij)|`` on the non-zeros, ``|G_ij| - alpha`` (when positive)
    on the zeros of the active set and ``outside`` for the pairs outside it."""
    gd = backend.diag_grad(d)
    worst = float(np.max(np.abs(gd))) if gd.size else 0.0
    if I.size:
        g = backend.pair_grad(I, J)
        nz = w != 0
        if np.any(nz):
            worst = max(worst, float(np.max(np.abs(g[nz] + alpha * np.sign(w[nz])))))
        if np.any(~nz):
            worst = max(worst, float(np.max(np.abs(g[~nz]))) - alpha)
    return max(worst, outside, 0.0)


def concord_solve(backend, alpha, *, state=None, tol=1e-7, max_iter=1000, verbose=False,
                  callback=None, name="concord"):
    """Minimise CONCORD's objective for one ``alpha`` on a backend
    (:class:`ColumnsBackend` or :class:`DenseBackend`).

    ``state``: a warm start ``(I, J, w, d)`` (active pairs, their values, the diagonal),
    e.g. the solution at a larger alpha. ``max_iter``: the most coordinate-descent
    sweeps in all. Returns a dict: ``I, J, w, d`` (the pairs kept are the non-zeros),
    ``objective``, ``n_iter`` (sweeps), ``n_kkt`` (passes), ``kkt_violation``,
    ``converged``, ``stop_reason`` (``"tol"``, ``"max_iter"``, ``"callback"`` or
    ``"interrupted"``: Ctrl-C, the iterate reached is returned) and ``history``.
    """
    t0 = time.perf_counter()
    p = backend.p
    alpha = float(alpha)
    if state is None:
        I = J = np.zeros(0, dtype=np.int64)
        w = np.zeros(0)
        d = 1.0 / np.sqrt(backend.sdiag)          # the optimum of the empty graph
    else:
        I, J, w, d = (np.array(a) for a in state)
    thr = alpha * (1.0 + tol)
    out = np.zeros(2)
    history = []
    sweeps = n_kkt = 0
    stop = None
    outside = np.inf
    try:
        backend.reset(I, J, w, d)
        while True:
            # coordinate descent on the active set (the empty start is already optimal)
            if I.size or state is not None:
                while sweeps < max_iter:
                    backend.sweeps(I, J, w, d, alpha, min(_SWEEPS_PER_CALL, max_iter - sweeps),
                                   tol, out)
                    sweeps += int(out[0])
                    if out[1] <= tol:
                        break
                backend.reset(I, J, w, d)
            state = ()                             # from now on: sweep before each pass
            t1 = time.perf_counter()
            ni, nj, outside = backend.kkt(I, J, w, d, alpha, thr)
            n_kkt += 1
            t_kkt = time.perf_counter() - t1
            f = _objective(backend, I, J, w, d, alpha)
            row = {"iteration": n_kkt, "objective": f,
                   "active_edges": int(np.count_nonzero(w)), "active_set": int(I.size),
                   "violators": int(ni.size), "sweeps": sweeps, "max_change": float(out[1]),
                   "kkt_seconds": t_kkt, "elapsed": time.perf_counter() - t0}
            stop_cb = record(row, history, verbose=verbose, callback=callback, name=name)
            if ni.size == 0 and out[1] <= tol:
                stop = "tol"
                break
            if sweeps >= max_iter:
                stop = "max_iter"
                break
            if stop_cb:
                stop = "callback"
                break
            I, J, w = _merge(p, I, J, w, ni, nj)
    except KeyboardInterrupt:
        stop = "interrupted"
        backend.reset(I, J, w, d)              # the products of the iterate reached
    f = _objective(backend, I, J, w, d, alpha)
    violation = kkt_violation(backend, I, J, w, d, alpha, outside)
    keep = w != 0
    return {"I": I[keep], "J": J[keep], "w": w[keep], "d": d, "objective": f,
            "n_iter": sweeps, "n_kkt": n_kkt, "kkt_violation": violation,
            "converged": stop == "tol", "stop_reason": stop, "history": history,
            "elapsed": time.perf_counter() - t0}


def _objective(backend, I, J, w, d, alpha):
    return float(-np.sum(np.log(d)) + 0.5 * backend.trace(I, J, w, d)
                 + alpha * np.sum(np.abs(w)))


class Concord(PrecisionFitted, ParamsMixin):
    """CONCORD: sparse partial correlations by the l1-penalised symmetric
    pseudo-likelihood (Khare, Oh & Rajaratnam 2015).

    Minimises, over symmetric W with a positive diagonal,

        -sum_i log w_ii + 1/2 tr(W S W) + alpha sum_{i<j} |w_ij|

    where ``S = Z^T Z / n`` and Z holds the centred columns of X, divided by their
    standard deviations when ``standardize`` (the default; S is then the sample
    correlation matrix). This is the paper's objective divided by n (its
    ``lambda = n alpha``); each pair is penalised once. The estimate of X's
    precision matrix is ``precision_ = D^-1 W D^-1`` with D the standard deviations
    (``D = I`` without ``standardize``); partial correlations do not depend on D.

    Parameters
    ----------
    alpha : float >= 0, the weight of the l1 penalty.
    alphas : None, or a sequence of weights: a warm-started path, fitted from the
        largest to the smallest; ``path_`` holds each fit and the fitted attributes
        are those of the smallest.
    standardize : divide the centred columns by their standard deviations.
    assume_centered : the data are already centred (no mean subtracted).
    covariance : ``"from_data"`` (the columns of X, never a p x p array: memory
        ``O(n p + nnz)``), ``"dense"`` (S and ``W S`` as dense p x p arrays) or
        ``"auto"`` (dense for p <= 2,000 with at least as many samples as
        variables, else from_data).
    tol : the sweeps stop when the largest change of an entry in a sweep, on the
        scale of the partial correlations ``|dw_ij| / sqrt(w_ii w_jj)``, is at most
        tol; a pair outside the active set enters when ``|G_ij| > alpha (1 + tol)``.
    max_iter : the most coordinate-descent sweeps (per alpha).
    block_bytes : the size of one slab of the gradient in a KKT pass.
    verbose : one line per KKT pass on stderr.
    client : a ``dask.distributed.Client`` or a scheduler address (or None): the KKT
        passes run on its workers, each holding slabs of X's columns and checking the
        pairs of their rows (:class:`ClusterColumnsBackend`); the coordinate descent
        runs here. Same solution as without.

    Attributes
    ----------
    precision_ : scipy.sparse.csr_matrix (p x p, symmetric), the estimate.
    edges_ : (m, 2) int64, the pairs i < j with a non-zero entry, row-major order.
    edge_weights_ : (m,), their entries of ``precision_``.
    adjacency_ : scipy.sparse.csr_matrix of int8, 1 on the edges (both orders).
    partial_correlations_ : scipy.sparse.csr_matrix, ``-w_ij / sqrt(w_ii w_jj)`` on
        the edges (no diagonal stored).
    location_, scale_ : the means and the standard deviations (ones without
        ``standardize``) of X's columns.
    objective_ : the objective at the solution (of the problem solved, on Z).
    n_iter_ : coordinate-descent sweeps; ``n_kkt_passes_``: the KKT passes.
    kkt_violation_ : the largest violation of the optimality conditions (gradient
        units; 0 at the exact optimum).
    converged_, stop_reason_, history_ : as the other Gaussian estimators.
    path_ : with ``alphas``, one dict per alpha (``alpha``, ``precision``,
        ``n_edges``, ``objective``, ``n_iter``).

    Examples
    --------
    >>> import numpy as np
    >>> import spargel
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((300, 4))
    >>> X[:, 2] += X[:, 3]
    >>> m = spargel.Concord(alpha=0.3).fit(X)
    >>> m.edges_.tolist(), m.precision_.shape
    ([[2, 3]], (4, 4))
    """

    _estimator_kind = "density"

    def __init__(self, alpha=0.1, *, alphas=None, standardize=True, assume_centered=False,
                 covariance="auto", tol=1e-7, max_iter=1000, block_bytes=2**26,
                 verbose=False, client=None):
        keep_arguments(self, locals())

    def _check_params(self):
        check_number("alpha", self.alpha)
        check_number("tol", self.tol)
        if not self.tol > 0:
            raise ParameterError(f"tol must be > 0, got {self.tol!r}")
        check_number("max_iter", self.max_iter, low=1, integer=True)
        check_number("block_bytes", self.block_bytes, low=1, integer=True)
        if self.covariance not in _COVARIANCE:
            raise ParameterError(f"covariance must be 'auto', 'dense' or 'from_data', got "
                                 f"{self.covariance!r}")
        if self.client is not None and self.covariance == "dense":
            raise ParameterError("a Dask client runs the KKT passes of covariance='from_data' "
                                 "on its workers; covariance='dense' has none to run there")
        if self.alphas is None:
            return [float(self.alpha)]
        if isinstance(self.alphas, (str, bytes)) or np.ndim(self.alphas) != 1 \
                or len(self.alphas) == 0:
            raise ParameterError(f"alphas must be None or a non-empty sequence of numbers, got "
                                 f"{self.alphas!r}")
        for a in self.alphas:
            check_number("alphas", a)
        return sorted((float(a) for a in self.alphas), reverse=True)

    def _columns(self, X):
        """Z^T (p x n): X's columns centred and scaled, as rows."""
        from .objective import as_matrix

        X = as_matrix(X, "X")
        n, p = X.shape
        if n < 2:
            raise DataFormatError("X", None, f"need at least 2 samples to estimate partial "
                                  f"correlations, got {n} sample{'s' if n != 1 else ''}")
        loc = np.zeros(p) if self.assume_centered else X.mean(axis=0)
        ZT = np.ascontiguousarray(X.T)
        del X
        ZT -= loc[:, None]
        sd = np.sqrt(np.einsum("ij,ij->i", ZT, ZT) / n)
        zero = np.flatnonzero(~(sd > 0))
        if zero.size:
            raise DataFormatError("X", None, f"column {int(zero[0])} is constant (zero "
                                  "variance): its partial correlations are undefined; remove "
                                  "constant columns")
        if self.standardize:
            ZT /= sd[:, None]
            scale = sd
        else:
            scale = np.ones(p)
        return ZT, loc, scale

    @announces_compiles
    @reraise_interrupt
    def fit(self, X, y=None):
        """Fit the model (for each alpha of ``alphas``, largest first) to the samples X
        (n x p). Returns self."""
        alphas = self._check_params()
        ZT, loc, scale = self._columns(X)
        p, n = ZT.shape
        rank = n if self.assume_centered else n - 1
        if alphas[-1] == 0.0 and rank < p:
            # S v = 0 for some v != 0: W + t v v^T has the same tr(W S W) and a larger
            # diagonal, so the objective falls without bound as t grows
            raise ParameterError(f"alpha = 0 needs a non-singular S, but {n} samples of {p} "
                                 f"variables give a covariance of rank at most {rank}: "
                                 "the objective has no minimum; use alpha > 0")
        dense = self.client is None and (
            self.covariance == "dense" or (self.covariance == "auto" and p <= AUTO_DENSE_P
                                           and n >= p))
        if dense:
            backend = DenseBackend(ZT @ ZT.T / n)
        elif self.client is not None:

            backend = ClusterColumnsBackend(ZT, cluster.resolve(self.client), self.block_bytes)
        else:
            backend = ColumnsBackend(ZT, self.block_bytes)
        del ZT
        try:
            res, path = self._fit_path(backend, alphas, p, scale)
        finally:
            if hasattr(backend, "close"):
                backend.close()
        self._store(p, res, scale, loc, alphas[len(path) - 1] if path else alphas[0])
        if self.alphas is not None:
            self.path_ = path
        elif hasattr(self, "path_"):
            del self.path_
        self.solver_ = "dense" if dense else "from_data"
        note_interrupt(self, res["stop_reason"])
        return self

    def _fit_path(self, backend, alphas, p, scale):
        state = None
        path = []
        res = None
        for a in alphas:
            res = concord_solve(backend, a, state=state, tol=float(self.tol),
                                max_iter=int(self.max_iter), verbose=self.verbose)
            state = (res["I"], res["J"], res["w"], res["d"])
            if len(alphas) > 1:
                K = self._precision(p, res, scale)
                path.append({"alpha": a, "precision": K, "n_edges": int(res["w"].size),
                             "objective": res["objective"], "n_iter": res["n_iter"]})
            if res["stop_reason"] == "interrupted":
                break
            if res["stop_reason"] == "max_iter":
                warnings.warn(f"Concord did not converge at alpha = {a:g} in {self.max_iter} "
                              "sweeps; raise max_iter or tol (with alpha = 0, collinear columns leave the "
                              "objective without a minimum)", ConvergenceWarning, stacklevel=3)
        return res, path

    @staticmethod
    def _precision(p, res, scale):
        inv = 1.0 / scale
        I, J, w, d = res["I"], res["J"], res["w"], res["d"]
        return _sym_csr(p, I, J, w * inv[I] * inv[J], d * inv * inv)

    @classmethod
    def from_path_point(cls, p, res, scale, loc, alpha, **params):
        """A fitted ``Concord`` at ``alpha`` from one point of a path (``res``: the
        solver's arrays there; ``scale`` / ``loc``: the data's column scales and means),
        with ``params`` as its other parameters: what a selector keeps of its choice."""
        est = cls(alpha=float(alpha), **params)
        est._store(p, res, scale, loc, alpha)
        return est

    def _store(self, p, res, scale, loc, alpha):
        I, J, w, d = res["I"], res["J"], res["w"], res["d"]
        self.alpha_ = float(alpha)
        self.n_features_in_ = p
        self.location_ = loc
        self.scale_ = scale
        self.precision_ = self._precision(p, res, scale)
        self.edges_ = np.stack([I, J], axis=1).astype(np.int64).reshape(-1, 2)
        self.edge_weights_ = (w / (scale[I] * scale[J])).copy()
        ones = np.ones(I.size, dtype=np.int8)
        self.adjacency_ = sp.csr_matrix((np.concatenate([ones, ones]),
                                         (np.concatenate([I, J]), np.concatenate([J, I]))),
                                        shape=(p, p))
        r = -w / np.sqrt(d[I] * d[J])
        self.partial_correlations_ = sp.csr_matrix(
            (np.concatenate([r, r]), (np.concatenate([I, J]), np.concatenate([J, I]))),
            shape=(p, p))
        self.objective_ = float(res["objective"])
        self.n_iter_ = int(res["n_iter"])
        self.n_kkt_passes_ = int(res["n_kkt"])
        self.kkt_violation_ = float(res["kkt_violation"])
        self.converged_ = bool(res["converged"])
        self.stop_reason_ = res["stop_reason"]
        self.history_ = list(res["history"])

    def get_precision(self):
        """The estimated precision matrix (sparse)."""
        self._check_fitted()
        return self.precision_
