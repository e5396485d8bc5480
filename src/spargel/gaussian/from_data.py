"""The l1 problem solved from the data matrix, without a dense covariance (n << p).

With a scalar weight ``alpha`` the solution is block diagonal on the connected
components of the graph ``|S_ij| > alpha`` (exact screening, see
:mod:`.screening`). When there are far fewer samples than variables the
covariance ``S = X_c^T X_c / n`` (p x p) is the one thing that does not fit in
memory, and it is not needed:

1. **screening by column blocks**: ``S[a:b, a:] = X_c[:, a:b]^T X_c[:, a:] / n``
   for consecutive blocks of columns (each block about ``block_bytes``), keeping
   only the entries above ``alpha`` as a sparse list of pairs;
2. the **connected components** of that graph (scipy's ``connected_components``);
3. each component of two or more variables is solved by :func:`solve_gaussian`
   on its own dense covariance block, computed from its columns of ``X_c``;
   a single variable has the closed form ``K_ii = 1 / (S_ii + L_ii)``.

The result's ``precision`` and ``covariance`` are ``scipy.sparse.csr_matrix``
(block diagonal: the components' dense blocks and the singletons' diagonal). The
arithmetic of each component is that of the dense path (same screening test on
the same numbers, same rescaling, same per-component tolerance), so both paths
give the same precision to the solver's tolerance.

A component too large to solve in memory (more than ``max_component`` variables;
by default what about six dense blocks of its size fit into the available
memory) is refused with :class:`ComponentTooLargeError`, which names its size and
the smallest ``alpha`` that splits every component below the limit (the weights
of a maximum spanning forest of the screened graph: Kruskal's order, by
decreasing ``|S_ij|``).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((500, 8)); X[:, 1] += X[:, 0]
>>> res = solve_from_data(X, 0.3)
>>> type(res.precision).__name__, res.n_components
('csr_matrix', 7)
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..core.limits import available_memory
from ..errors import DataFormatError, ParameterError, SpargelError
from .result import GaussianResult
from .progress import Stages

__all__ = ["solve_from_data", "solve_columns", "screen_from_data", "ComponentTooLargeError",
           "default_max_component"]

#: dense blocks of a component's size that its solve holds at its peak, with a margin
#: (the component's S, Newton-CG's K, W and one scratch, and the sparse result: about
#: 4.9 counted with tracemalloc on one component, see tests/gaussian/test_memory.py)
_ARRAYS_PER_SOLVE = 6
#: rows per slab when a component's block is copied into the sparse result
_ROWS = 256


class ComponentTooLargeError(SpargelError, MemoryError):
    """A screened component has too many variables to solve in memory.

    Attributes: ``size`` (its number of variables), ``limit`` (the most allowed),
    ``alpha`` (the weight used) and ``split_alpha`` (the smallest weight at which
    every component has at most ``limit`` variables)."""

    def __init__(self, size, limit, alpha, split_alpha):
        self.size, self.limit = int(size), int(limit)
        self.alpha, self.split_alpha = float(alpha), float(split_alpha)
        super().__init__(
            f"the screened graph |S_ij| > alpha at alpha = {self.alpha:.6g} has a connected "
            f"component of {self.size} variables, more than the {self.limit} that fit in "
            f"memory (its dense solve needs about {_ARRAYS_PER_SOLVE} arrays of "
            f"{self.size} x {self.size}); alpha >= {self.split_alpha:.6g} splits every "
            f"component to at most {self.limit} variables")


def default_max_component():
    """Largest component (variables) whose dense solve fits into about 80% of the
    memory available now (:func:`available_memory`)."""
    return max(2, int(np.sqrt(0.8 * available_memory() / (8.0 * _ARRAYS_PER_SOLVE))))


class _Columns:
    """The centred data, its column scales and blocks of its covariance.

    Entries are computed as :func:`.objective.empirical_covariance` does: on columns
    rescaled to ``max |x| = 1``, scaled back (the same numbers as the dense path)."""

    def __init__(self, X, assume_centered, ddof=0):
        m = X.shape[0] - ddof            # the divisor of S (ddof=1: the sample covariance)
        # one n x p copy: centred (unless assume_centered) and rescaled in place
        Y = np.array(X, dtype=np.float64, order="C", copy=True)
        if not assume_centered:
            Y -= X.mean(axis=0)
        a = np.max(np.abs(Y), axis=0)
        self.scale = np.where(a > 0, a, 1.0)
        Y /= self.scale
        self.Y = Y
        self.m = m
        C_diag = np.einsum("ij,ij->j", self.Y, self.Y) / m
        with np.errstate(over="ignore", under="ignore"):
            var = C_diag * self.scale * self.scale
        tiny = np.finfo(float).tiny
        bad = (C_diag > 0) & ~((var >= tiny) & np.isfinite(var))
        if np.any(bad):
            j = int(np.flatnonzero(bad)[0])
            raise DataFormatError("X", None, f"column {j} has a variance outside the range of "
                                  "double precision; rescale the variables")
        self.var = var

    def block(self, rows, cols):
        """``S[rows, cols]`` (index arrays or slices) as a dense array."""
        C = self.Y[:, rows].T @ self.Y[:, cols] / self.m
        with np.errstate(over="ignore", under="ignore"):
            C *= self.scale[rows][:, None]
            C *= self.scale[cols][None, :]
        return C

    def square(self, idx):
        """The covariance block ``S[idx, idx]`` (symmetric, exact diagonal)."""
        S = self.block(idx, idx)
        S = 0.5 * (S + S.T)
        S[np.diag_indices_from(S)] = self.var[idx]
        return np.ascontiguousarray(S)


def screen_from_data(cols, alpha, block_bytes=2**26, verbose=False):
    """Pairs ``i < j`` with ``|S_ij| > alpha`` and their ``|S_ij|``, computed by
    slabs of rows of the upper triangle (never more than ``block_bytes`` of S, nor
    more than a sixteenth of its rows, at once). Returns ``(i, j, w)`` arrays.
    ``verbose``: progress on stderr (a line at each tenth of the pairs)."""
    p = cols.Y.shape[1]
    stages = Stages(verbose, "screening |S_ij| by slabs", p * (p + 1) / 2)
    # slabs of at most block_bytes and at most a sixteenth of the rows
    rows = max(1, min(p // 16, int(block_bytes // (8 * p))))
    I, J, V = [], [], []
    for a in range(0, p, rows):
        b = min(a + rows, p)
        B = cols.block(slice(a, b), slice(a, p))
        np.abs(B, out=B)
        # only the strict upper triangle of this slab: column offset > row offset
        B[np.tril_indices(b - a, 0, B.shape[1])] = 0.0
        i, j = np.nonzero(B > alpha)
        I.append(i + a)
        J.append(j + a)
        V.append(B[i, j])
        del B
        stages.done(b * p - b * (b - 1) / 2)
    if not I:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return (np.concatenate(I).astype(np.int64), np.concatenate(J).astype(np.int64),
            np.concatenate(V))


def _components(p, i, j):
    graph = sp.coo_matrix((np.ones(i.size, dtype=np.int8), (i, j)), shape=(p, p)).tocsr()
    n_comp, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    counts = np.bincount(labels, minlength=n_comp)
    comps = [np.sort(c) for c in np.split(order, np.cumsum(counts)[:-1])]
    comps.sort(key=lambda c: (-c.size, c[0]))
    return comps


def split_alpha(p, i, j, w, limit):
    """The smallest weight at which every component of the graph ``{(i, j): w > alpha}``
    has at most ``limit`` nodes: edges joined by decreasing weight (Kruskal's order,
    union-find); the first edge that would make a component exceed ``limit`` gives it
    (the graph keeps only the edges strictly heavier than it). Only the edges of a
    maximum spanning forest can join two components, so those are all it visits."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    if w.size:
        # maximum spanning forest = minimum spanning forest of (top + 1 - w) > 0
        cost = float(w.max()) + 1.0 - w
        forest = minimum_spanning_tree(sp.coo_matrix((cost, (i, j)), shape=(p, p))).tocoo()
        i, j = forest.row, forest.col
        w = float(w.max()) + 1.0 - forest.data
    parent = np.arange(p)
    size = np.ones(p, dtype=np.int64)

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for k in np.argsort(-w, kind="stable"):
        ri, rj = find(int(i[k])), find(int(j[k]))
        if ri == rj:
            continue
        if size[ri] + size[rj] > limit:
            return float(w[k])
        if size[ri] < size[rj]:
            ri, rj = rj, ri
        parent[rj] = ri
        size[ri] += size[rj]
    return 0.0


#: components of at least this many variables may be solved on their sparse pattern
#: (:mod:`.sparse_newton`): below it the dense solvers are as fast (chain graphs, same
#: run: p = 2,000 sparse 1.3 s, dense 2.9 s)
SPARSE_MIN_COMPONENT = 1500
#: screened pairs per variable up to which a component may suit the sparse path
SPARSE_MAX_PAIRS_PER_VARIABLE = 16
#: the sparse path is taken when one selected inverse on the pattern's factor is at
#: most this share of a dense one (``sparse_newton.sparse_work``; measured: a chain's
#: 3e-7 and a random graph's 4e-4 to 6e-4 solved 1.3-3.4x faster sparse, a noisy
#: pattern's 0.06 17x slower)
SPARSE_MAX_WORK = 1e-3


def _sparse_may_suit(size, pairs, limit):
    """Whether a screened component of ``size`` variables and ``pairs`` screened pairs
    is a candidate for its sparse pattern (then its factor decides): always when its
    dense solve does not fit in memory (``size > limit``), otherwise when it is large
    and its pattern sparse."""
    return size > limit or (size >= SPARSE_MIN_COMPONENT and
                            pairs <= SPARSE_MAX_PAIRS_PER_VARIABLE * size)


def _block_diagonal(p, singles, single_values, comps, results, name):
    """The p x p CSR matrix with ``single_values`` on the diagonal at ``singles`` and
    each component's block (attribute ``name`` of its result: dense, or a sparse
    matrix from the sparse path; released once copied) on its rows and columns;
    written straight into the CSR arrays (no triplets)."""
    width = np.ones(p, dtype=np.int64)
    for idx, r in zip(comps, results):
        block = getattr(r, name)
        width[idx] = np.diff(block.indptr) if sp.issparse(block) else idx.size
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(width, out=indptr[1:])
    nnz = int(indptr[-1])
    itype = np.int32 if max(nnz, p) < 2**31 - 1 else np.int64
    indices = np.empty(nnz, dtype=itype)
    data = np.empty(nnz)
    at = indptr[singles]
    indices[at] = singles
    data[at] = single_values
    for idx, r in zip(comps, results):
        block = getattr(r, name)
        k = idx.size
        if sp.issparse(block):
            block = sp.csr_matrix(block)
            block.sort_indices()
            rows = np.repeat(np.arange(k), np.diff(block.indptr))
            pos = indptr[idx[rows]] + (np.arange(block.nnz) - block.indptr[rows])
            indices[pos] = idx[block.indices]
            data[pos] = block.data
        else:
            block = np.asarray(block)
            for a in range(0, k, _ROWS):                  # rows of the block, a slab at a time
                b = min(a + _ROWS, k)
                pos = indptr[idx[a:b]][:, None] + np.arange(k)
                indices[pos] = idx[None, :]
                data[pos] = block[a:b]
        setattr(r, name, None)
    return sp.csr_matrix((data, indices.astype(itype, copy=False), indptr.astype(itype)),
                         shape=(p, p))


def solve_from_data(X, alpha, *, assume_centered=False, penalize_diagonal=False,
                    max_component=None, block_bytes=2**26, **solve_kw):
    """Solve the l1 problem for the covariance of the data ``X`` (m x p) without
    forming the p x p covariance.

    Parameters
    ----------
    X : (m, p) data (validated: finite numbers; centred unless ``assume_centered``).
    alpha : scalar weight (>= 0) on every off-diagonal entry (and on the diagonal
        with ``penalize_diagonal``). Per-entry weights are p x p and so are refused.
    max_component : most variables a screened component may have (None:
        :func:`default_max_component`); a larger one raises
        :class:`ComponentTooLargeError`.
    block_bytes : size of the slabs of S computed at once for the screening.
    solve_kw : passed to :func:`.solve.solve_gaussian` for each component (solver,
        tol, atol, max_iter, verbose, callback); ``n_jobs``: threads that solve
        components concurrently (each holds its own dense blocks).

    Returns
    -------
    GaussianResult with ``precision`` and ``covariance`` as ``scipy.sparse.csr_matrix``
    (block diagonal on the components), the whole problem's objective, gap and costs.
    """
    if np.ndim(alpha) != 0:
        raise DataFormatError("alpha", None, "the from-data path takes a scalar alpha only (a "
                              "weight matrix is p x p); use the dense path for per-entry weights")
    X = np.asarray(X, dtype=np.float64)
    return solve_columns(_Columns(X, assume_centered), alpha,
                         penalize_diagonal=penalize_diagonal, max_component=max_component,
                         block_bytes=block_bytes, **solve_kw)


def solve_columns(cols, alpha, *, penalize_diagonal=False, max_component=None,
                  block_bytes=2**26, screened=None, screened_at=None, **solve_kw):
    """:func:`solve_from_data` on data already centred and rescaled (a ``_Columns``):
    a path of alphas on the same data builds them once. ``screened``: the
    ``(i, j, |S_ij|)`` of :func:`screen_from_data` at a threshold ``screened_at`` no
    larger than this alpha (None: this alpha; a path screens once, at its smallest
    alpha; the pairs above this alpha are the same numbers passing the same test, so
    the result is the same)."""
    from .solve import _whole_costs, combine_components, solve_gaussian
    from .sparse_newton import MARGIN, SOLVER as SPARSE_SOLVER, solve_component_sparse, sparse_work

    t0 = time.perf_counter()
    alpha = float(alpha)
    if not (np.isfinite(alpha) and alpha >= 0):
        raise ParameterError(f"alpha must be a finite number >= 0, got {alpha!r}")
    p = cols.Y.shape[1]
    diag_pen = alpha if penalize_diagonal else 0.0
    d = cols.var + diag_pen
    if np.any(d <= 0):
        bad = int(np.flatnonzero(d <= 0)[0])
        raise DataFormatError("X", None, f"column {bad} is constant (zero variance): its "
                              "precision is unbounded; remove constant columns or set "
                              "penalize_diagonal=True")
    band = (1.0 - MARGIN) * alpha
    if alpha == 0.0:
        comps = [np.arange(p)]
        i = j = w = ni = nj = np.zeros(0, dtype=np.int64)
        near_known = False
    else:
        if screened is None:
            i, j, w = screen_from_data(cols, band, block_bytes, verbose=solve_kw.get("verbose"))
            near_known = True
        else:
            i, j, w = screened
            near_known = screened_at is not None and screened_at <= band
        above = w > alpha
        ni, nj = (i[~above & (w > band)], j[~above & (w > band)]) if near_known else (None, None)
        i, j, w = i[above], j[above], w[above]
        comps = _components(p, i, j)
    solver = solve_kw.get("solver", "auto")
    sparse_solver = solver == SPARSE_SOLVER
    limit = default_max_component() if max_component is None else int(max_component)
    label = np.empty(p, dtype=np.int64)
    for c, idx in enumerate(comps):
        label[idx] = c
    pair_count = np.bincount(label[i], minlength=len(comps)) if i.size else \
        np.zeros(len(comps), dtype=np.int64)
    # the sparse path: asked for, or chosen by 'auto' when no explicit limit is set
    # (decided on the pattern's factor, whose order is then kept for the solve)
    sparse_parts = {}                   # component -> (its pairs, its near band, order)
    for c, idx in enumerate(comps):
        if idx.size < 2 or not (sparse_solver or solver == "auto" and max_component is None
                                and alpha > 0 and _sparse_may_suit(idx.size, pair_count[c],
                                                                   limit)):
            continue
        local = np.full(p, -1, dtype=np.int64)
        local[idx] = np.arange(idx.size)
        sel = label[i] == c
        pairs = (local[i[sel]], local[j[sel]])
        perm, work = (None, 0.0) if sparse_solver else sparse_work(idx.size, *pairs)
        if not (sparse_solver or idx.size > limit or work <= SPARSE_MAX_WORK):
            continue
        near = None
        if ni is not None:
            nsel = (label[ni] == c) & (label[nj] == c)
            near = (local[ni[nsel]], local[nj[nsel]])
        sparse_parts[c] = (pairs, near, perm)
    on_pattern = set(sparse_parts)
    dense_sizes = [comps[c].size for c in range(len(comps)) if c not in on_pattern]
    if dense_sizes and max(dense_sizes) > limit:
        raise ComponentTooLargeError(max(dense_sizes), limit, alpha,
                                     split_alpha(p, i, j, w, limit))
    del i, j, w
    big = [c for c in comps if c.size > 1]
    singles = np.concatenate([c for c in comps if c.size == 1]) if len(big) < len(comps) \
        else np.zeros(0, dtype=np.int64)
    solve_kw = dict(solve_kw)
    n_jobs = solve_kw.pop("n_jobs", 1)
    solve_kw.pop("screen", None)

    if sparse_solver:
        solve_kw.pop("solver")
    sparse_kw = {k: solve_kw[k] for k in ("tol", "max_iter", "verbose", "callback")
                 if solve_kw.get(k) is not None}
    which = {id(comps[c]): c for c in sparse_parts}

    def run(idx):
        c = which.get(id(idx))
        if c is not None:
            pairs, near, perm = sparse_parts[c]
            return solve_component_sparse(cols, idx, alpha, pairs=pairs, near=near, perm=perm,
                                          penalize_diagonal=penalize_diagonal, **sparse_kw)
        return solve_gaussian(cols.square(idx), alpha, penalize_diagonal=penalize_diagonal,
                              screen=False, validated=True, overwrite_S=True, **solve_kw)

    if n_jobs is not None and n_jobs != 1 and len(big) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=None if n_jobs == -1 else int(n_jobs)) as ex:
            results = list(ex.map(run, big))
    else:
        results = [run(idx) for idx in big]
    # each component's rows hold its own objective (its offset included): the base is
    # the singletons' share
    f0 = float(np.sum(np.log(d[singles]) + 1.0))
    costs = _whole_costs(f0, [(r.history, 0.0, r) for r in results])
    summary = combine_components(f0, results, "closed-form")
    if not summary["history"]:
        summary["history"] = [{"iteration": 0, "objective": summary["objective"],
                               "duality_gap": summary["duality_gap"], "active_edges": 0,
                               "elapsed": time.perf_counter() - t0}]
    K = _block_diagonal(p, singles, 1.0 / d[singles], big, results, "precision")
    C = _block_diagonal(p, singles, d[singles], big, results, "covariance")
    K.eliminate_zeros()
    return GaussianResult(precision=K, covariance=C, n_components=len(comps), costs=costs,
                          **summary)
