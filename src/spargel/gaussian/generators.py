"""Synthetic Gaussian graphical models with a known graph, as R's ``huge.generator``
documents them.

:func:`make_graph_data` draws an adjacency matrix ``theta`` (symmetric, zero diagonal)
of one of five shapes and turns it into a precision matrix and samples:

* ``"band"``: ``theta_ij = 1`` when ``1 <= |i - j| <= g`` (bandwidth ``g``, default 1:
  a chain); ``(2p - 1 - g) g / 2`` edges;
* ``"hub"``: the variables split evenly into ``g`` contiguous groups (default
  ``ceil(p / 20)`` from 40 variables, 2 below; the first ``g - p mod g`` groups of
  ``floor(p / g)`` variables, the others of one more, as huge.generator splits them);
  the first variable of each group is its hub, joined to every other variable of the
  group; ``p - g`` edges;
* ``"cluster"``: the same ``g`` groups; each pair within a group is an edge with
  probability ``prob`` (default ``6 g / p`` when ``p / g <= 30``, else 0.3);
* ``"random"``: Erdős–Rényi, each pair an edge with probability ``prob``
  (default ``3 / p``);
* ``"scale-free"``: Barabási–Albert: an edge between the first two variables, then
  each further variable joins one earlier variable drawn with probability
  proportional to its degree; ``p - 1`` edges (a tree; huge's documentation says p).

The precision is ``K0 = v theta + (|e| + 0.1 + u) I``, ``e`` the smallest eigenvalue of
``v theta`` (``v = 0.3``, ``u = 0.1`` by default), so ``K0`` is positive definite. As
huge does, the covariance is then rescaled to unit diagonal,
``Sigma = D^-1/2 K0^-1 D^-1/2`` with ``D = diag(K0^-1)``, and the precision returned is
its inverse ``K = D^1/2 K0 D^1/2`` (the same zeros as ``K0``). The rows of ``data`` are
independent draws of ``N(0, Sigma)``.

From ``dense_max`` variables on (default 10,000) no p x p array is formed: ``theta``
and ``K`` are ``scipy.sparse`` CSR matrices; the smallest eigenvalue is the smallest
over the connected components (LAPACK up to 2,000 variables, ARPACK's Lanczos above;
the chain's in closed form, ``-2 v cos(pi / (p + 1))``); ``D`` and the samples come
from one sparse ``L D L^T`` factorisation of ``K0`` (SuperLU, minimum-degree ordering,
diagonal pivots): ``x = P^T U^-1 D0^1/2 z`` has covariance ``K0^-1``, and
``diag(K0^-1)`` follows from Takahashi's recurrences on the factor's pattern
(:mod:`._generator_kernels`). The dense covariance is then not formed either
(``covariance`` is None).

>>> d = make_graph_data(100, 8, "band", g=2, random_state=0)
>>> d.data.shape, int(d.graph.nnz // 2), bool(np.allclose(np.diag(d.covariance), 1.0))
((100, 8), 13, True)
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ..errors import ParameterError

__all__ = ["GraphData", "make_graph_data", "make_graph", "graph_precision", "graph_model",
           "GRAPHS"]

GRAPHS = ("band", "hub", "cluster", "random", "scale-free")

#: from this many variables on, nothing p x p is formed (sparse precision, no covariance)
DENSE_MAX = 10_000
#: connected components up to this size get their smallest eigenvalue from LAPACK
_DENSE_COMPONENT = 2000
#: columns of the identity solved for at once when computing diag(K0^-1) sparsely
_SLAB = 256


@dataclasses.dataclass
class GraphData:
    """What :func:`make_graph_data` returns (huge's ``sim`` object).

    data : (n, p) samples of ``N(0, covariance)``.
    precision : (p, p) precision ``K`` (ndarray, or ``scipy.sparse`` CSR when sparse).
    covariance : (p, p) ndarray with unit diagonal, or None when sparse.
    graph : (p, p) ``scipy.sparse`` CSR adjacency (0/1 int8, symmetric, zero diagonal).
    graph_type : the shape asked for; params : the parameters used (v, u, g, prob, ...).
    edges, n_edges : the true edges (i < j) and their number; sample_covariance :
    huge's ``sigmahat`` (dense models only).
    """

    data: np.ndarray
    precision: object
    covariance: object
    graph: object
    graph_type: str
    params: dict

    @property
    def edges(self):
        """(m, 2) array of the true edges ``i < j``, row-major order."""
        import scipy.sparse as sp

        up = sp.triu(self.graph, 1).tocoo()
        order = np.lexsort((up.col, up.row))
        return np.column_stack([up.row[order], up.col[order]]).astype(np.int64)

    @property
    def n_edges(self):
        """The number of true edges."""
        return int(self.graph.nnz // 2)

    @property
    def sample_covariance(self):
        """huge's ``sigmahat``: the empirical covariance of ``data`` (divisor n,
        centred on the column means), computed when read; (p, p) and dense, so only
        while the covariance is (below ``dense_max`` variables)."""
        if self.covariance is None:
            raise ValueError("the sample covariance is a dense p x p matrix; it is not "
                             "formed for a model drawn without a dense covariance "
                             "(p >= dense_max)")
        Xc = self.data - self.data.mean(axis=0)
        return Xc.T @ Xc / self.data.shape[0]


def _integer(name, value, least):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ParameterError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def _real(name, value, low, high=None, low_open=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = value > low if low_open else value >= low
        if high is not None:
            ok = ok and value <= high
    if not ok:
        bound = f"{'>' if low_open else '>='} {low}" + (f" and <= {high}" if high is not None else "")
        raise ParameterError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def _groups(p, g):
    """Boundaries of ``g`` contiguous groups: the first ``g - p mod g`` of
    ``floor(p / g)`` variables, the others of one more (huge.generator's partition)."""
    size = np.full(g, p // g, np.int64)
    size[g - p % g:] += 1
    return np.r_[0, np.cumsum(size)]


def _pairs_to_ij(codes, p):
    """Pair codes ``0 .. p(p-1)/2 - 1`` in row-major order of the upper triangle -> i < j."""
    r = np.arange(p, dtype=np.int64)
    start = r * p - r * (r + 1) // 2                      # first code of row i
    i = np.searchsorted(start, codes, side="right") - 1
    j = codes - start[i] + i + 1
    return i, j


def _erdos_renyi(p, prob, rng):
    """Edges (i < j) of an Erdős–Rényi graph on p nodes: the number of edges is
    Binomial(p (p - 1) / 2, prob) and the edges a uniform draw of that many pairs,
    without a p x p array."""
    pairs = p * (p - 1) // 2
    if pairs == 0 or prob == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = int(rng.binomial(pairs, prob))
    codes = np.sort(rng.choice(pairs, size=m, replace=False)) if m else np.zeros(0, np.int64)
    return _pairs_to_ij(codes.astype(np.int64), p)


def _barabasi_albert(p, rng):
    """Edges of a Barabási–Albert tree: node 0 -- node 1, then node t joins one earlier
    node drawn with probability proportional to its degree (the list of edge ends
    holds every node as often as its degree)."""
    i = np.empty(p - 1, np.int64)
    j = np.empty(p - 1, np.int64)
    i[0], j[0] = 0, 1
    ends = np.empty(2 * (p - 1), np.int64)
    ends[:2] = (0, 1)
    u = rng.random(p)
    for t in range(2, p):
        k = ends[int(u[t] * 2 * (t - 1))]
        i[t - 1], j[t - 1] = k, t
        ends[2 * (t - 1)] = k
        ends[2 * (t - 1) + 1] = t
    return i, j


def _defaults(graph, p, g, prob):
    if graph == "band":
        g = 1 if g is None else _integer("g", g, 1)
        if g >= p:
            raise ParameterError(f"g (the bandwidth) must be below p = {p}, got {g}")
    elif graph in ("hub", "cluster"):
        g = (math.ceil(p / 20) if p >= 40 else 2) if g is None else _integer("g", g, 1)
        if g > p // 2:
            raise ParameterError(f"g (the number of {graph}s) must be at most p / 2 = "
                                 f"{p // 2} so that each group has 2 variables, got {g}")
    elif g is not None:
        raise ParameterError(f"g does not apply to graph={graph!r}")
    if graph == "random":
        prob = min(1.0, 3.0 / p) if prob is None else _real("prob", prob, 0.0, 1.0)
    elif graph == "cluster":
        if prob is None:
            prob = min(1.0, 6.0 * g / p) if p / g <= 30 else 0.3
        else:
            prob = _real("prob", prob, 0.0, 1.0)
    elif prob is not None:
        raise ParameterError(f"prob does not apply to graph={graph!r}")
    return g, prob


def make_graph(p, graph="random", *, g=None, prob=None, random_state=None):
    """The adjacency matrix ``theta`` alone: ``(theta, params)`` with ``theta`` a
    symmetric 0/1 ``scipy.sparse`` CSR matrix (int8, zero diagonal); see the module."""
    import scipy.sparse as sp

    p = _integer("p", p, 2)
    if graph not in GRAPHS:
        raise ParameterError(f"graph must be one of {', '.join(map(repr, GRAPHS))}, got {graph!r}")
    g, prob = _defaults(graph, p, g, prob)
    rng = np.random.default_rng(random_state)
    if graph == "band":
        i = np.concatenate([np.arange(p - k) for k in range(1, g + 1)])
        j = np.concatenate([np.arange(k, p) for k in range(1, g + 1)])
    elif graph == "hub":
        b = _groups(p, g)
        i = np.concatenate([np.full(b[c + 1] - b[c] - 1, b[c]) for c in range(g)])
        j = np.concatenate([np.arange(b[c] + 1, b[c + 1]) for c in range(g)])
    elif graph == "cluster":
        b = _groups(p, g)
        parts = [_erdos_renyi(int(b[c + 1] - b[c]), prob, rng) for c in range(g)]
        i = np.concatenate([pi + b[c] for c, (pi, _) in enumerate(parts)])
        j = np.concatenate([pj + b[c] for c, (_, pj) in enumerate(parts)])
    elif graph == "random":
        i, j = _erdos_renyi(p, prob, rng)
    else:
        i, j = _barabasi_albert(p, rng)
    ones = np.ones(2 * i.size, np.int8)
    theta = sp.csr_matrix((ones, (np.concatenate([i, j]), np.concatenate([j, i]))),
                          shape=(p, p))
    theta.sum_duplicates()
    theta.sort_indices()
    return theta, {"g": g, "prob": prob}


def _smallest_eigenvalue(A, dense):
    """The smallest eigenvalue of the symmetric sparse matrix A: the smallest over its
    connected components, each by LAPACK up to 2,000 variables (or when ``dense``),
    by ARPACK's Lanczos iteration above."""
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    if A.nnz == 0:
        return 0.0
    if dense:
        return float(np.linalg.eigvalsh(A.toarray())[0])
    A = A.tocsr()
    n_comp, lab = connected_components(A, directed=False)
    order = np.argsort(lab, kind="stable")
    bounds = np.searchsorted(lab[order], np.arange(n_comp + 1))
    best = 0.0
    small = []
    for c in range(n_comp):
        idx = order[bounds[c]:bounds[c + 1]]
        if idx.size < 2:
            continue
        if idx.size <= _DENSE_COMPONENT:
            small.append(idx)
            continue
        B = A[idx][:, idx].tocsc()
        try:
            e = eigsh(B, k=1, which="SA", tol=1e-10, v0=np.ones(idx.size),
                      ncv=min(idx.size, 64), maxiter=2000, return_eigenvectors=False)[0]
        except ArpackNoConvergence as exc:          # a tight cluster at the bottom: the
            if not exc.eigenvalues.size:             # Ritz value reached is an upper bound
                raise                                # within the iteration's tolerance
            e = exc.eigenvalues[0]
        best = min(best, float(e))
    for idx in small:
        best = min(best, float(np.linalg.eigvalsh(A[idx][:, idx].toarray())[0]))
    return best


def graph_precision(theta, v=0.3, u=0.1, *, dense=None, smallest=None):
    """``K0 = v theta + (|e| + 0.1 + u) I`` (``e`` the smallest eigenvalue of
    ``v theta``, or ``smallest`` when given) as a CSC matrix."""
    import scipy.sparse as sp

    p = theta.shape[0]
    dense = p < DENSE_MAX if dense is None else dense
    A = (v * theta.astype(np.float64)).tocsc()
    e = _smallest_eigenvalue(A, dense) if smallest is None else float(smallest)
    return (A + sp.identity(p, format="csc") * (abs(e) + 0.1 + u)).tocsc()


def graph_model(theta, v=0.3, u=0.1, *, smallest=None):
    """The dense ``(precision, covariance)`` of the graph ``theta`` (a symmetric 0/1
    matrix, dense or sparse) as huge.generator makes them: ``K0`` of
    :func:`graph_precision`, the covariance ``D^-1/2 K0^-1 D^-1/2`` (unit diagonal,
    ``D = diag(K0^-1)``) and its inverse ``D^1/2 K0 D^1/2``."""
    import scipy.sparse as sp

    theta = sp.csr_matrix(theta)
    K0 = graph_precision(theta, v, u, dense=True, smallest=smallest).toarray()
    C0 = np.linalg.inv(K0)
    s = np.sqrt(np.diag(C0))
    cov = C0 / np.outer(s, s)
    cov = 0.5 * (cov + cov.T)
    np.fill_diagonal(cov, 1.0)
    return K0 * np.outer(s, s), cov


class _SparseFactor:
    """``P K P^T = L D L^T`` by SuperLU on the diagonal (``U = D L^T``)."""

    def __init__(self, K):
        from scipy.sparse.linalg import splu

        self.lu = splu(K.tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True})
        if not np.array_equal(self.lu.perm_r, self.lu.perm_c):    # pragma: no cover
            raise ArithmeticError("the sparse factorisation pivoted off the diagonal")
        self.d = self.lu.U.diagonal()
        self.U = self.lu.U.tocsr()

    def inverse_diagonal(self):
        """``diag(K^-1)`` in the original order: Takahashi's recurrences on the factor's
        pattern (:mod:`._generator_kernels`), or solves for slabs of the identity when
        the pattern is not closed (it always is for a factor without padding)."""
        import scipy.sparse as sp

        from ._generator_kernels import inverse_diagonal

        L = self.lu.L.tocsc()
        L = L - sp.identity(L.shape[0], format="csc")             # strictly lower part
        L.eliminate_zeros()
        L.sort_indices()
        p = self.d.size
        zdiag = np.empty(p)
        indptr = L.indptr.astype(np.int64)
        longest = int(np.max(np.diff(indptr))) if p else 0
        ok = inverse_diagonal(indptr, L.indices.astype(np.int64), L.data, self.d,
                              np.empty(L.nnz), zdiag, np.empty(max(longest, 1)))
        if ok:
            return zdiag[self.lu.perm_c]
        out = np.empty(p)                                  # pragma: no cover
        for a in range(0, p, _SLAB):
            b = min(p, a + _SLAB)
            E = np.zeros((p, b - a))
            E[np.arange(a, b), np.arange(b - a)] = 1.0
            out[a:b] = self.lu.solve(E)[np.arange(a, b), np.arange(b - a)]
        return out

    def sample(self, n, rng):
        """(n, p) draws of ``N(0, K^-1)``."""
        from scipy.sparse.linalg import spsolve_triangular

        p = self.d.size
        Z = rng.standard_normal((p, n)) * np.sqrt(self.d)[:, None]
        Y = spsolve_triangular(self.U, Z, lower=False)
        return np.ascontiguousarray(Y[self.lu.perm_c].T)      # x = P^T y


def make_graph_data(n=200, p=50, graph="random", *, v=0.3, u=0.1, g=None, prob=None,
                    vis=False, dense_max=DENSE_MAX, random_state=None):
    """Samples of a Gaussian graphical model with a known graph, as R's
    ``huge.generator(n, d = p, graph, v, u, g, prob, vis)`` documents it (see the
    module for the constructions and the defaults).

    Parameters
    ----------
    n : number of samples (>= 1); p : number of variables (>= 2).
    graph : 'band', 'hub', 'cluster', 'random' (default) or 'scale-free'.
    v : the off-diagonal value of the precision (> 0, default 0.3).
    u : added to the diagonal (>= 0, default 0.1); larger v / smaller u give
        stronger partial correlations.
    g : the bandwidth ('band'), the number of hubs ('hub') or clusters ('cluster').
    prob : edge probability ('random': default 3 / p; 'cluster': within a group).
    vis : draw the graph and the matrices (:func:`spargel.gaussian.plot.plot_graph_data`).
    dense_max : from this many variables on the precision is sparse and the
        covariance is not formed (default 10,000).
    random_state : seed or ``numpy.random.Generator``.

    Returns
    -------
    :class:`GraphData` with ``data``, ``precision``, ``covariance`` (unit diagonal),
    ``graph`` (sparse adjacency), ``graph_type`` and ``params``.
    """
    n = _integer("n", n, 1)
    p = _integer("p", p, 2)
    v = _real("v", v, 0.0, low_open=True)
    u = _real("u", u, 0.0)
    dense_max = _integer("dense_max", dense_max, 2)
    rng = np.random.default_rng(random_state)
    theta, params = make_graph(p, graph, g=g, prob=prob, random_state=rng)
    dense = p < dense_max
    # the chain's (band, g = 1) smallest eigenvalue in closed form: Lanczos converges
    # slowly on its tightly clustered spectrum
    chain = -2.0 * v * np.cos(np.pi / (p + 1)) if graph == "band" and params["g"] == 1 else None
    params.update(v=v, u=u)
    if dense:
        K, cov = graph_model(theta, v, u, smallest=chain)
        L = np.linalg.cholesky(cov)
        X = rng.standard_normal((n, p)) @ L.T
    else:
        import scipy.sparse as sp

        K0 = graph_precision(theta, v, u, dense=False, smallest=chain)
        f = _SparseFactor(K0)
        s = np.sqrt(f.inverse_diagonal())
        S = sp.diags(s)
        K = (S @ K0 @ S).tocsr()
        X = f.sample(n, rng) / s
        cov = None
    out = GraphData(data=X, precision=K, covariance=cov, graph=theta, graph_type=graph,
                    params=params)
    if vis:
        from .plot import plot_graph_data

        plot_graph_data(out)
    return out
