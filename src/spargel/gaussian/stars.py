"""StARS's subsample paths for every Gaussian estimator, alpha by alpha, on threads or on
the workers of a Dask cluster.

:class:`~spargel.gaussian.selection.SparseGaussianMRFSelect` fits, for each subsample of
rows, the path of decreasing alphas of its ``method``: the graphical lasso (``'glasso'``),
neighbourhood selection (``'mb'``) or CONCORD (``'concord'``). A subsample's path is a
small state object (:class:`GlassoPath`, :class:`MBPath`, :class:`ConcordPath`) made once
from its rows -- the standardised columns, MB's screened pairs, CONCORD's backend:
what all alphas share -- and advanced one alpha at a time, warm-started from the previous
alpha's solution. :func:`stars_counts` advances every subsample to the next alpha, adds
their edge patterns in subsample order (so the counts, and the choice, do not depend on
which subsample finished first, nor on threads against a cluster) and, unless asked for
the whole path, stops at the first alpha whose variability reaches the threshold: the
choice is the alpha before it, the same as from the whole path.

On a cluster (``client``) X is scattered once; each subsample's state is made on a worker
and stays there, each alpha a task that takes the previous state and leaves the next one
where it ran (only the edge pattern, the upper triangle of a sparse boolean matrix, comes
back). A lost worker is recomputed from the lineage: the states are never changed in
place, so a recomputation gives the same pattern.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((60, 5)); X[:, 1] += X[:, 0]
>>> subs = [np.arange(0, 40), np.arange(20, 60)]
>>> spec = PathSpec("mb", lowest=0.2)
>>> var, counts, stop = stars_counts(X, subs, spec, np.array([0.6, 0.4, 0.2]), 0.1)
>>> counts[0].nnz <= counts[2].nnz, int(counts[2][0, 1])
(True, 2)
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np
import scipy.sparse as sp
from ..core.threads import resolve_n_jobs
from ..scaleout import cluster
from .select import standardize

__all__ = ["PathSpec", "GlassoPath", "GlassoColumnsPath", "MBPath", "ConcordPath", "start_path", "stars_counts",
           "upper_pattern"]

METHODS = ("glasso", "mb", "concord")


@dataclasses.dataclass(frozen=True)
class PathSpec:
    """How a subsample's path is fitted: the ``method`` and its settings (``lowest``: the
    smallest alpha the path may reach, which sizes MB's screening)."""

    method: str
    lowest: float = 0.0
    rule: str = "or"                    # mb
    mode: str = "auto"                  # mb: 'auto' / 'gram' / 'data'
    covariance: str = "auto"            # concord: 'auto' / 'dense' / 'from_data'
    tol: float | None = None
    max_iter: int | None = None
    penalize_diagonal: bool = True      # glasso
    solver: str = "auto"                # glasso
    screen: bool = True                 # glasso
    loose: bool = False                 # glasso: the path's tolerance (path.PATH_TOL)
    columns: bool = False               # glasso: from the data (covariance='from_data')
    max_component: int | None = None    # glasso from the data


def upper_pattern(A):
    """The strict upper triangle of a (p, p) matrix's non-zero pattern as a float CSR
    matrix of ones (dense or sparse input)."""
    U = sp.triu(sp.csr_matrix(A), 1, format="csr")
    U.eliminate_zeros()
    U.data = np.ones_like(U.data, dtype=np.float64)
    U.sort_indices()
    return U


class GlassoPath:
    """The graphical lasso on a subsample: its correlation matrix (formed per alpha, as
    :class:`SparseGaussianMRFSelect` does; only the standardised rows are kept) and the
    previous alpha's precision (sparse) as the warm start."""

    def __init__(self, X, spec, prev=None, Z=None):
        self.spec = spec
        self.Z = standardize(X) if Z is None else Z
        self.prev = prev

    def advance(self, alpha, n_jobs=1):
        import types

        from .objective import gram
        from .path import PATH_TOL
        from .solve import solve_gaussian

        s = self.spec
        Z = self.Z
        R = gram(Z) / (Z.shape[0] - 1)
        R = 0.5 * (R + R.T)
        np.fill_diagonal(R, 1.0)
        warm = None if self.prev is None else types.SimpleNamespace(
            precision=self.prev.toarray(), covariance=None, solver="")
        res = solve_gaussian(R, float(alpha), warm_start=warm, validated=True, solver=s.solver,
                             tol=PATH_TOL if s.loose else s.tol, max_iter=s.max_iter,
                             penalize_diagonal=s.penalize_diagonal, screen=s.screen,
                             n_jobs=n_jobs, polish=0 if s.loose else None)
        K = sp.csr_matrix(res.precision)
        return GlassoPath(None, s, K, Z), upper_pattern(K), res


class GlassoColumnsPath:
    """The graphical lasso on a subsample from its columns (``covariance='from_data'``,
    :func:`.from_data.solve_columns`: no p x p matrix): the standardised columns and
    their screening, made once just below the smallest alpha (as
    :func:`.from_data_select.fit_path`); each alpha a from-data fit (not warm-started,
    as that path)."""

    def __init__(self, X, spec, data=None, screened=None):
        from .from_data import screen_from_data
        from .from_data_select import SelectPath
        from .sparse_newton import MARGIN

        self.spec = spec
        self.low = (1.0 - MARGIN) * float(spec.lowest)
        if data is None:
            data = SelectPath(standardize(X), self._kw(), spec.penalize_diagonal)
            screened = screen_from_data(data.cols, self.low) if self.low > 0 else None
        self.data, self.screened = data, screened

    def _kw(self):
        s = self.spec
        return dict(solver=s.solver, tol=s.tol, max_iter=s.max_iter,
                    max_component=s.max_component, n_jobs=1)

    def advance(self, alpha, n_jobs=1):
        from .from_data import solve_columns

        kw = dict(self._kw(), n_jobs=n_jobs)
        res = solve_columns(self.data.cols, float(alpha),
                            penalize_diagonal=self.spec.penalize_diagonal,
                            screened=self.screened,
                            screened_at=self.low if self.screened else None, **kw)
        return self, self.data.edge_pattern(res.precision), res


class MBPath:
    """Neighbourhood selection on a subsample: the standardised columns and their screening
    (:class:`.neighbourhood.MBPath`, made once for the smallest alpha) and the previous
    alpha's coefficients as the warm start."""

    def __init__(self, X, spec, prev=None, setup=None):
        from .neighbourhood import MBPath as Setup, standardize_unit

        self.spec = spec
        self.setup = Setup(standardize_unit(X), spec.lowest, spec.mode) if setup is None \
            else setup
        self.prev = prev

    def advance(self, alpha, n_jobs=1):
        from .neighbourhood import adjacency_from_coef

        s = self.spec
        C, n_iter, unconverged, _, _ = self.setup.solve(
            float(alpha), self.prev, 1e-7 if s.tol is None else s.tol,
            1000 if s.max_iter is None else s.max_iter, n_jobs)
        adj, _ = adjacency_from_coef(C, s.rule)
        return MBPath(None, s, C, self.setup), upper_pattern(adj), (C, n_iter, unconverged)


class ConcordPath:
    """CONCORD on a subsample: its backend (the dense correlation matrix, or the columns
    when p > 2,000 or n < p with ``covariance='auto'``) and the previous alpha's solution
    ``(I, J, w, d)`` as the warm start."""

    def __init__(self, X, spec, prev=None, backend=None):
        from .concord import AUTO_DENSE_P, ColumnsBackend, DenseBackend
        from .neighbourhood import standardize_unit

        self.spec = spec
        self.prev = prev
        if backend is None:
            ZT = standardize_unit(X)                 # centred, (1/n) z^T z = 1: Concord's Z
            p, n = ZT.shape
            dense = spec.covariance == "dense" or (spec.covariance == "auto" and
                                                   p <= AUTO_DENSE_P and n >= p)
            backend = DenseBackend(ZT @ ZT.T / n) if dense else ColumnsBackend(ZT)
        self.backend = backend

    def advance(self, alpha, n_jobs=1):
        from .concord import _sym_csr, concord_solve

        s = self.spec
        res = concord_solve(self.backend, float(alpha), state=self.prev,
                            tol=1e-7 if s.tol is None else s.tol,
                            max_iter=1000 if s.max_iter is None else s.max_iter)
        if res["stop_reason"] == "interrupted":
            raise KeyboardInterrupt
        state = (res["I"], res["J"], res["w"], res["d"])
        p = self.backend.p
        K = _sym_csr(p, res["I"], res["J"], res["w"], np.zeros(p))
        return ConcordPath(None, s, state, self.backend), upper_pattern(K), res


_CLASSES = {"glasso": GlassoPath, "mb": MBPath, "concord": ConcordPath}


def start_path(X, rows, spec):
    """The path state of the subsample ``rows`` of X (None: all rows)."""
    cls = GlassoColumnsPath if spec.method == "glasso" and spec.columns else \
        _CLASSES[spec.method]
    return cls(X if rows is None else X[rows], spec)


def _advance_task(state, alpha):
    """A cluster task: the next state and the edge pattern (the fit itself stays behind)."""
    new, pattern, _ = state.advance(alpha)
    return new, pattern


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def _variability(count, n_sub, pairs):
    theta = count.data / n_sub
    return 4.0 * float(np.sum(theta * (1.0 - theta))) / pairs if pairs else 0.0


def stars_counts(X, subs, spec, alphas, threshold, *, full_path=False, n_jobs=1,
                 client=None, verbose=False):
    """StARS over the subsamples ``subs`` (index arrays of rows of X) on the decreasing
    ``alphas``: per alpha the variability ``4 mean_{i<j} theta (1 - theta)`` and the
    sparse upper-triangle counts of subsamples with each edge.

    Stops after the first alpha whose variability reaches ``threshold`` unless
    ``full_path``. Returns ``(variability, counts, stop)``: NaN / None past ``stop``, the
    index of the last alpha fitted. ``n_jobs`` threads (each advancing whole subsamples)
    or a Dask ``client``; the same numbers either way."""
    alphas = np.asarray(alphas, dtype=np.float64)
    p = X.shape[1]
    n_sub = len(subs)
    pairs = p * (p - 1) / 2
    var = np.full(alphas.size, np.nan)
    counts = [None] * alphas.size
    t0 = time.perf_counter()
    runner = (_ClusterRunner(client, X, subs, spec) if client is not None
              else _ThreadRunner(X, subs, spec, n_jobs))
    stop = alphas.size - 1
    try:
        for k, a in enumerate(alphas):
            def progress(done, k=k, a=a):
                if verbose:
                    print(f"StARS ({spec.method}): alpha {k + 1} of {alphas.size} ({a:.4g}), "
                          f"subsample {done} of {n_sub}, {time.perf_counter() - t0:.1f} s",
                          file=sys.stderr, flush=True)

            patterns = runner.step(float(a), progress)
            c = sp.csr_matrix((p, p))
            for P in patterns:                   # in subsample order: the same sums
                c = c + P
            counts[k] = c
            var[k] = _variability(c, n_sub, pairs)
            if verbose:
                print(f"StARS ({spec.method}): alpha {k + 1} of {alphas.size} ({a:.4g}): "
                      f"variability {var[k]:.4g}, {c.nnz} pairs seen", file=sys.stderr,
                      flush=True)
            if var[k] >= threshold and not full_path:
                stop = k
                break
    finally:
        runner.close()
    return var, counts, stop


class _ThreadRunner:
    """The subsamples' states here, advanced on ``n_jobs`` threads (the solvers release
    the GIL); each made on its first step."""

    def __init__(self, X, subs, spec, n_jobs):
        self.X, self.subs, self.spec = X, subs, spec
        self.states = [None] * len(subs)
        jobs = min(resolve_n_jobs(n_jobs), len(subs))
        self.ex = None
        if jobs > 1:
            from concurrent.futures import ThreadPoolExecutor

            self.ex = ThreadPoolExecutor(max_workers=jobs)

    def _one(self, b, alpha):
        st = self.states[b]
        if st is None:
            st = start_path(self.X, self.subs[b], self.spec)
        new, pattern, _ = st.advance(alpha)
        return new, pattern

    def step(self, alpha, progress):
        n = len(self.subs)
        out = [None] * n
        if self.ex is None:
            for b in range(n):
                out[b] = self._one(b, alpha)
                progress(b + 1)
        else:
            from concurrent.futures import as_completed

            futures = {self.ex.submit(self._one, b, alpha): b for b in range(n)}
            for done, f in enumerate(as_completed(futures), 1):
                out[futures[f]] = f.result()
                progress(done)
        for b in range(n):                          # all advanced: only now replaced
            self.states[b] = out[b][0]
        return [o[1] for o in out]

    def close(self):
        if self.ex is not None:
            # Ctrl-C: the queued subsamples are dropped, the running ones finish
            self.ex.shutdown(wait=True, cancel_futures=True)
            self.ex = None


class _ClusterRunner:
    """The subsamples' states on the workers of a Dask cluster (see the module's text)."""

    def __init__(self, client, X, subs, spec):
        self.client = cluster.resolve(client)
        cluster.workers(self.client)                # a clear error when there are none
        self.xf = self.client.scatter(X, broadcast=False, hash=False, direct=False)
        self.states = [self.client.submit(start_path, self.xf, np.asarray(s), spec, pure=False)
                       for s in subs]

    def step(self, alpha, progress):
        c = self.client
        dd = __import__("distributed")
        pairs = [c.submit(_advance_task, st, alpha, pure=False) for st in self.states]
        new_states = [c.submit(_first, f, pure=False) for f in pairs]
        patterns = [c.submit(_second, f, pure=False) for f in pairs]
        out = [None] * len(patterns)
        where = {f.key: b for b, f in enumerate(patterns)}
        try:
            for done, f in enumerate(dd.as_completed(patterns), 1):
                out[where[f.key]] = f.result()
                progress(done)
        except BaseException:
            c.cancel(new_states + pairs + patterns)
            raise
        for f in self.states + pairs + patterns:
            f.release()
        self.states = new_states
        return out

    def close(self):
        for f in self.states:
            f.release()
        self.states = []
        self.xf.release()
