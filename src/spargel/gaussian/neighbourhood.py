"""Neighbourhood selection (Meinshausen & Buhlmann 2006) with R huge's scaling:
:class:`NeighbourhoodSelection` and the path function :func:`neighbourhood_path`.

Every column of X is centred and scaled so that ``(1/n) z_j^T z_j = 1``; for each node
j the lasso

    min_beta  1/(2n) ||z_j - Z_{-j} beta||^2 + alpha ||beta||_1

gives its neighbours (the non-zero beta_k), and the edges follow by the "or" rule (k is
a neighbour of j or j of k) or the "and" rule (both). ``S = Z^T Z / n`` is then the
correlation matrix of X, the matrix R's ``huge.mb`` solves on (``huge`` standardises
with ``scale(x)``, the n - 1 standard deviation, and takes ``S = cor(x)``, which is the
same correlation matrix; the n - 1 cancels), so the same ``alpha`` is huge's ``lambda``.

Two ways to reach S (``mode``):

* ``"gram"``: S formed once (p x p) and read by every node;
* ``"data"``: no p x p matrix. The pairs with ``|S_kl| > tau`` (``tau`` half the
  smallest alpha, at least ``3 / sqrt(n)``) are found by slabs of rows of S
  (``Z[:, a:b]^T Z[:, a:] / n`` in single precision with a rounding margin, at most
  ``block_bytes`` at once) and kept as a sparse graph; each node's working set starts
  from its screened pairs above alpha, its entries of S are dot products of columns of
  Z, and the optimality check visits only the variables that could violate it (see
  :mod:`._mb_kernels`); the nodes that bound does not certify are checked together by
  one product ``R^T Z`` per block of nodes and solved again with their violators.
  Memory about ``12 n p`` bytes for the standardised data and its single-precision
  copy, one slab, ``48`` bytes per screened pair and ``24`` per non-zero coefficient.

``"auto"`` takes ``"gram"`` up to 2,000 variables, ``"data"`` above.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((400, 6)); X[:, 1] += X[:, 0]; X[:, 2] += X[:, 1]
>>> NeighbourhoodSelection(alpha=0.2).fit(X).edges_.tolist()
[[0, 1], [1, 2]]
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np

from ..core.first_use import announces_compiles
from ..core.params import check_number, keep_arguments, ParamsMixin
from ..errors import ConvergenceWarning, DataFormatError, NotFittedError, ParameterError
from ..core.threads import resolve_n_jobs

__all__ = ["NeighbourhoodSelection", "neighbourhood_path", "standardize_unit", "MBPath"]

_RULES = ("or", "and")
_MODES = ("auto", "gram", "data")
#: above this many variables "auto" is the data mode
AUTO_DATA_P = 2000
#: the screening threshold tau of the data mode: this fraction of the smallest alpha ...
TAU_RATIO = 0.5
#: ... and at least this many standard deviations of a correlation of independent
#: variables (1 / sqrt(n)): about 0.27% of the pairs of unrelated variables are kept
TAU_NOISE = 3.0
#: nodes per task of the thread pool (and per progress line)
_CHUNK = 512
#: most rounds of "check, solve the nodes with violators again" per alpha
_ROUNDS = 100


def standardize_unit(X, stats=False):
    """The columns of X centred and scaled to ``(1/n) z^T z = 1``, as a p x n array (a
    variable per row, contiguous); with ``stats`` also the columns' means and (1/n)
    standard deviations. A constant column is a :class:`DataFormatError`."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Zt = np.empty((X.shape[1], n))
    for c in range(0, X.shape[1], 256):         # the transpose by blocks of columns
        Zt[c:c + 256] = X[:, c:c + 256].T
    mean = Zt.mean(axis=1)
    Zt -= mean[:, None]
    sd = np.sqrt(np.einsum("ij,ij->i", Zt, Zt) / n)
    top = np.max(np.abs(Zt), axis=1) if n else np.zeros(Zt.shape[0])
    const = ~(sd > 1e-14 * np.maximum(top, np.finfo(float).tiny))
    if np.any(const):
        j = int(np.flatnonzero(const)[0])
        raise DataFormatError("X", None, f"column {j} is constant (zero variance): it cannot "
                              "be standardised; remove constant columns")
    Zt /= sd[:, None]
    return (Zt, mean, sd) if stats else Zt


def screen_pairs(Zt, tau, block_bytes=2**26, keep_single=False):
    """The pairs ``k != l`` with ``|S_kl| > tau`` (``S = Z^T Z / n``) as a symmetric
    graph in CSR arrays ``(indptr, indices, values)`` (int64, int32, float64).

    The slabs of rows of the upper triangle (at most ``block_bytes`` at once) are
    multiplied in single precision, about twice as fast, keeping every pair above
    ``tau - margin``; ``margin = 2 (n + 4) u`` (u the unit roundoff of float32) bounds the
    error of a single-precision ``S_kl`` (the columns' rounding, ``2 u``, and the
    accumulation, ``n u / (1 - n u)``, each times ``|z_k| |z_l| / n = 1``). Those pairs are
    recomputed in double precision and kept when above ``tau``: the same pairs as a
    double-precision screening, never one fewer. With ``keep_single`` the single-precision
    columns (scaled by ``1 / sqrt(n)``) are returned too, as a fourth value."""
    from ._mb_kernels import slab_pairs

    p, n = Zt.shape
    u = float(np.finfo(np.float32).eps) / 2
    margin = 2.0 * (n + 4) * u
    low = max(tau - margin, 0.0)
    Z32 = Zt.astype(np.float32)
    Z32 *= np.float32(1.0 / np.sqrt(n))                # S = Z32 Z32^T directly
    rows = max(1, min(p, int(block_bytes // (4 * max(p, 1)))))
    I, J = [], []
    guess = 4096
    for a in range(0, p, rows):
        b = min(a + rows, p)
        B = Z32[a:b] @ Z32[a:].T
        i = np.empty(guess, np.int32)
        j = np.empty(guess, np.int32)
        got = slab_pairs(B, a, low, i, j)
        if got > guess:                             # more than room for: once more
            guess = 2 * got
            i = np.empty(got, np.int32)
            j = np.empty(got, np.int32)
            slab_pairs(B, a, low, i, j)
        I.append(i[:got].copy())
        J.append(j[:got].copy())
        del B
    if not keep_single:
        del Z32
    i = np.concatenate(I) if I else np.zeros(0, np.int32)
    j = np.concatenate(J) if J else np.zeros(0, np.int32)
    v = np.empty(i.size)
    for c in range(0, i.size, 4096):                # the candidates in double precision
        v[c:c + 4096] = np.einsum("ij,ij->i", Zt[i[c:c + 4096]], Zt[j[c:c + 4096]]) / n
    keep = np.abs(v) > tau
    i, j, v = i[keep], j[keep], v[keep]
    rows_all = np.concatenate([i, j])
    cols_all = np.concatenate([j, i])
    vals_all = np.concatenate([v, v])
    order = np.lexsort((cols_all, rows_all))
    indptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows_all, minlength=p), out=indptr[1:])
    graph = indptr, np.ascontiguousarray(cols_all[order]), np.ascontiguousarray(vals_all[order])
    return (*graph, Z32) if keep_single else graph


def _check_alpha_list(alphas):
    """The alphas as a decreasing float array; each must be a finite number > 0."""
    if isinstance(alphas, (str, bytes)) or np.ndim(alphas) == 0:
        raise ParameterError(f"alphas must be a list of numbers > 0, got {alphas!r}")
    values = list(np.ravel(alphas)) if isinstance(alphas, np.ndarray) else list(alphas)
    if len(values) == 0:
        raise ParameterError("alphas is empty; give at least one alpha > 0")
    for k, a in enumerate(values):
        if isinstance(a, (bool, np.bool_, str, bytes)) or not isinstance(a, numbers.Real):
            raise ParameterError(f"alphas[{k}] must be a number, got {a!r}")
        if not (np.isfinite(a) and a > 0):
            raise ParameterError(f"alphas[{k}] == {a!r}, must be a finite number > 0")
    return np.sort(np.asarray(values, dtype=np.float64))[::-1].copy()


def _run_chunk(prob, a, tau, nodes, seeds, tol, max_iter):
    """One thread's share: the lasso at ``a`` of ``nodes`` (seeded by the rows of the CSR
    ``seeds``, one per node); returns (counts, idx, val, n_iter, unconverged, uncertified)."""
    from ._mb_kernels import Out, Work, mb_nodes

    p, n = prob.Zt.shape
    m = nodes.size
    longest = int(np.diff(seeds.indptr).max()) if m else 0
    wc = min(max(64, 2 * longest), max(p, 1))

    def work(wc):
        return Work(np.zeros(wc, np.int64), np.zeros((wc, wc)), np.zeros(wc), np.zeros(wc),
                    np.zeros(wc), np.zeros(p if prob.S.shape[0] else n), np.zeros(p, np.int64),
                    np.zeros(p, np.int64), np.zeros(2, np.int64))

    wk = work(wc)
    cap = max(4 * wc, 8 * m, seeds.nnz + wc)
    out = Out(np.zeros(cap, np.int32), np.zeros(cap), np.zeros(m, np.int64),
              np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64))
    ptr = seeds.indptr.astype(np.int64)
    idx = seeds.indices.astype(np.int64)
    val = seeds.data.astype(np.float64)
    i, pos = 0, 0
    while True:
        status, i, pos = mb_nodes(prob, wk, out, a, tau, nodes, ptr, idx, val, i, pos, tol,
                                  max_iter)
        if status == 0:
            break
        if status == 1:                         # more room for coefficients
            cap = max(2 * out.idx.size, pos + 2 * wk.wlist.size)
            new_idx = np.zeros(cap, np.int32)
            new_val = np.zeros(cap)
            new_idx[:pos] = out.idx[:pos]
            new_val[:pos] = out.val[:pos]
            out = out._replace(idx=new_idx, val=new_val)
        else:                                   # a larger working set
            wk = work(min(2 * wk.wlist.size, p))
    return (out.cnt, out.idx[:pos], out.val[:pos], out.n_iter, out.unconverged,
            out.uncertified)


def _solve(prob, a, tau, nodes, seeds, tol, max_iter, jobs, progress=None):
    """The lasso at ``a`` of ``nodes`` (warm-started from the rows of ``seeds``, a CSR with a
    row per node), in chunks of :data:`_CHUNK` nodes on ``jobs`` threads. Returns the
    coefficients (CSR, a row per node) and per node its sweeps, whether it stopped at
    max_iter and whether its optimality is left to check (data mode)."""
    import scipy.sparse as sp

    p = prob.Zt.shape[0]
    m = nodes.size
    bounds = list(range(0, m, _CHUNK)) + [m]
    chunks = list(zip(bounds[:-1], bounds[1:]))
    results = [None] * len(chunks)

    def task(k):
        c0, c1 = chunks[k]
        return _run_chunk(prob, a, tau, nodes[c0:c1], seeds[c0:c1], tol, max_iter)

    def done(k, res):
        results[k] = res
        if progress is not None:
            progress(chunks[k][1] - chunks[k][0])

    if jobs > 1 and len(chunks) > 1:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        with ThreadPoolExecutor(max_workers=jobs) as ex:
            futures = {ex.submit(task, k): k for k in range(len(chunks))}
            for f in as_completed(futures):
                done(futures[f], f.result())
    else:
        for k in range(len(chunks)):
            done(k, task(k))
    if not results:
        z = np.zeros(0, np.int64)
        return sp.csr_matrix((0, p)), z, z, z
    cnt, idx, val, n_iter, unconv, uncert = (np.concatenate(part) for part in zip(*results))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(cnt, out=indptr[1:])
    C = sp.csr_matrix((val, idx, indptr), shape=(m, p))
    C.sort_indices()
    return C, n_iter, unconv, uncert


def _violators(Zt, Z32, nodes, rows, a, slack):
    """The exact optimality check of the lasso solutions ``rows`` (CSR, a row per node of
    ``nodes``) at weight ``a``: per node, the variables k outside its support with ``|c_k|
    = |z_k . r| / n > a + slack``, ``r = z_j - Z beta``. By blocks of nodes, one
    single-precision product ``R^T Z`` each (candidates above ``a`` less the rounding
    margin of :func:`screen_pairs`, ``|r| / sqrt(n)`` times that of unit columns),
    recomputed in double precision."""
    p, n = Zt.shape
    u = float(np.finfo(np.float32).eps) / 2
    out = []
    for b0 in range(0, nodes.size, 256):
        js = nodes[b0:b0 + 256]
        B = rows[b0:b0 + 256]
        R = Zt[js] - np.asarray(B @ Zt)                  # residuals, a row per node
        scale = np.sqrt(np.einsum("ij,ij->i", R, R) / n)
        R32 = (R * (1.0 / np.sqrt(n))).astype(np.float32)
        C = R32 @ Z32.T                                  # c_k = z_k . r / n, in float32
        margin = 2.0 * (n + 4) * u * np.maximum(scale, 1.0)
        np.abs(C, out=C)
        C[np.arange(js.size), js] = 0.0                  # the node itself
        for t in range(js.size):                         # the support: |c_k| = a there
            C[t, B.indices[B.indptr[t]:B.indptr[t + 1]]] = 0.0
        ti, k = np.nonzero(C > (a + slack - margin)[:, None])
        del C
        exact = np.einsum("ij,ij->i", Zt[k], R[ti]) / n
        keep = np.abs(exact) > a + slack
        ti, k = ti[keep], k[keep]
        for t in range(js.size):
            out.append(k[ti == t])
    return out


def _replace_rows(C, where, R):
    """C (CSR) with its rows ``where`` replaced by the rows of R (in that order)."""
    import scipy.sparse as sp

    p = C.shape[0]
    keep = np.ones(p)
    keep[where] = 0.0
    P = sp.csr_matrix((np.ones(where.size), (where, np.arange(where.size))), shape=(p, where.size))
    out = (sp.diags(keep) @ C + P @ R).tocsr()
    out.eliminate_zeros()
    out.sort_indices()
    return out


class MBPath:
    """The setup of :func:`neighbourhood_path` on the standardised columns ``Zt`` (p x n):
    S in Gram mode, or the screened pairs (``tau`` from the smallest alpha the path will
    reach, ``lowest``) and the single-precision columns in data mode; :meth:`solve` then
    fits one alpha warm-started from a previous one's coefficients. What a path, StARS's
    subsamples (alpha by alpha, :mod:`.stars`) and the estimator share."""

    def __init__(self, Zt, lowest, mode="auto", block_bytes=2**26, verbose=False):
        from ._mb_kernels import Problem

        t0 = time.perf_counter()
        p, n = Zt.shape
        if mode == "auto":
            mode = "gram" if p <= AUTO_DATA_P else "data"
        self.Zt, self.mode, self.Z32, self.pairs = Zt, mode, None, None
        if mode == "gram":
            S = Zt @ Zt.T
            S *= 1.0 / n
            self.tau = 0.0
            self.prob = Problem(Zt, S, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0))
        else:
            self.tau = max(TAU_RATIO * float(lowest), TAU_NOISE / np.sqrt(n))
            ptr, idx, val, self.Z32 = screen_pairs(Zt, self.tau, block_bytes, keep_single=True)
            self.prob = Problem(Zt, np.zeros((0, 0)), ptr, idx, val)
            self.pairs = idx.size // 2
            if verbose:
                print(f"neighbourhood selection: {self.pairs} pairs with |S_kl| > {self.tau:.4g} "
                      f"screened from {p} variables, {time.perf_counter() - t0:.2f} s",
                      file=sys.stderr, flush=True)

    def solve(self, a, prev, tol, max_iter, jobs, progress=None, verbose=False):
        """Every node's lasso at ``a`` warm-started from ``prev`` (CSR, a row per node; None:
        cold), then the data mode's exact check of the nodes its bound did not certify (solved
        again with their violators until none is left). Returns ``(C, n_iter, unconverged,
        checked, resolved)``, C the p x p CSR of coefficients."""
        import scipy.sparse as sp

        Zt, Z32, prob, tau = self.Zt, self.Z32, self.prob, self.tau
        p = Zt.shape[0]
        a = float(a)
        prev = sp.csr_matrix((p, p)) if prev is None else prev
        nodes = np.arange(p, dtype=np.int64)
        slack = 10.0 * float(tol)
        checked = resolved = 0
        C, n_iter, unconverged, flag = _solve(prob, a, tau, nodes, prev, float(tol),
                                              int(max_iter), jobs, progress)
        todo = np.flatnonzero(flag)
        rounds = 0
        while todo.size:
            checked += todo.size
            found = _violators(Zt, Z32, todo, C[todo], a, slack)
            redo = np.array([j for j, v in zip(todo, found) if v.size], dtype=np.int64)
            if verbose:
                print(f"neighbourhood selection: alpha {a:.4g}: checked {todo.size} nodes by "
                      f"a product, {redo.size} to solve again", file=sys.stderr, flush=True)
            if not redo.size:
                break
            rounds += 1
            resolved += redo.size
            if rounds > _ROUNDS:                # never seen; kept as unconverged, not a loop
                unconverged[redo] += 1
                break
            extra = {int(j): v for j, v in zip(todo, found) if v.size}
            rows_ptr, rows_idx, rows_val = [0], [], []
            for j in redo:
                lo, hi = C.indptr[j], C.indptr[j + 1]
                rows_idx += [C.indices[lo:hi], extra[int(j)]]
                rows_val += [C.data[lo:hi], np.zeros(extra[int(j)].size)]
                rows_ptr.append(rows_ptr[-1] + (hi - lo) + extra[int(j)].size)
            seeds = sp.csr_matrix((np.concatenate(rows_val), np.concatenate(rows_idx),
                                   np.asarray(rows_ptr)), shape=(redo.size, p))
            R, it, unc, flag = _solve(prob, a, tau, redo, seeds, float(tol), int(max_iter), jobs)
            n_iter[redo] += it
            unconverged[redo] += unc
            C = _replace_rows(C, redo, R)
            todo = redo[flag.astype(bool)]
        return C, n_iter, unconverged, checked, resolved


def neighbourhood_path(X, alphas, *, mode="auto", tol=1e-7, max_iter=1000, n_jobs=1,
                       block_bytes=2**26, verbose=False, standardized=False):
    """Each node's lasso coefficients for every alpha of ``alphas`` (solved largest
    first, each warm-started from the previous one).

    Returns ``(alphas, coefs, n_iter, unconverged, info)``: the alphas in decreasing
    order, per alpha the p x p ``scipy.sparse.csr_matrix`` whose row j is node j's beta,
    per node its coordinate-descent sweeps over the path and how many of its alphas
    stopped at ``max_iter``, and a dict (``mode``, ``tau``, ``screened_pairs``,
    ``checked``: the nodes checked by the matrix product, over the path; ``resolved``:
    those solved again with its violators).
    ``standardized``: X is already the p x n output of :func:`standardize_unit`."""
    t0 = time.perf_counter()
    alphas = _check_alpha_list(alphas)
    Zt = X if standardized else standardize_unit(X)
    p, n = Zt.shape
    setup = MBPath(Zt, alphas[-1], mode, block_bytes, verbose)
    jobs = resolve_n_jobs(n_jobs)
    n_iter = np.zeros(p, np.int64)
    unconverged = np.zeros(p, np.int64)
    coefs = []
    checked = resolved = 0
    prev = None
    for ia, a in enumerate(alphas):
        a = float(a)
        count = [0]

        def progress(k, ia=ia, a=a, count=count):
            count[0] += k
            if verbose:
                print(f"neighbourhood selection: alpha {a:.4g} ({ia + 1} of {alphas.size}), "
                      f"{count[0]} of {p} nodes, {time.perf_counter() - t0:.2f} s",
                      file=sys.stderr, flush=True)

        C, it, unc, ch, res = setup.solve(a, prev, tol, max_iter, jobs, progress, verbose)
        n_iter += it
        unconverged += unc
        checked += ch
        resolved += res
        coefs.append(C)
        prev = C
    info = {"mode": setup.mode, "tau": setup.tau, "screened_pairs": setup.pairs,
            "checked": checked, "resolved": resolved, "elapsed": time.perf_counter() - t0}
    return alphas, coefs, n_iter, unconverged, info


def adjacency_from_coef(coef, rule="or"):
    """The symmetric boolean CSR adjacency of the coefficient matrix (row j: node j's
    beta) by the ``"or"`` or ``"and"`` rule, and its edges ``i < j`` (row-major)."""
    import scipy.sparse as sp

    P = coef.copy().tocsr()
    P.eliminate_zeros()
    P.data = np.ones_like(P.data, dtype=bool)
    P = P.astype(bool)
    T = P.T.tocsr()
    adj = (P + T) if rule == "or" else P.multiply(T)
    adj = sp.csr_matrix(adj, dtype=bool)
    adj.setdiag(False)
    adj.eliminate_zeros()
    adj.sort_indices()
    upper = sp.triu(adj, 1).tocoo()
    order = np.lexsort((upper.col, upper.row))
    edges = np.stack([upper.row[order], upper.col[order]], axis=1).astype(np.int64).reshape(-1, 2)
    return adj, edges


class NeighbourhoodSelection(ParamsMixin):
    """Gaussian graphical model structure by neighbourhood selection (Meinshausen &
    Buhlmann 2006), with the lambda scaling of R's ``huge.mb``.

    The columns of X are centred and scaled to ``(1/n) x_j^T x_j = 1`` (so ``S = Z^T Z /
    n`` is X's correlation matrix: ``huge``'s ``scale`` divides by the n - 1 standard
    deviation but then solves on ``cor(x)``, the same matrix); for each node j the lasso
    ``1/(2n) ||z_j - Z_{-j} beta||^2 + alpha ||beta||_1`` is solved by coordinate
    descent, and the edges follow by the "or" or "and" rule.

    Parameters
    ----------
    alpha : float > 0, the l1 weight (huge's ``lambda``). Give either ``alpha`` or
        ``alphas``.
    rule : 'or' (default; an edge when either node selects the other) or 'and'
        (both must).
    alphas : None or a list of alphas > 0: fit the path (largest first, each node
        warm-started from its previous alpha); the fitted attributes are then those of
        the smallest alpha, and the ``*_path_`` attributes hold every alpha's.
    mode : 'auto' (default: 'gram' up to 2,000 variables, 'data' above), 'gram'
        (forms the p x p correlation matrix) or 'data' (never forms it: screened pairs
        and dot products of columns; memory about ``12 n p`` bytes plus the screened
        pairs and the coefficients).
    tol : stop a node's coordinate descent when no coefficient moves more than tol
        (default 1e-7; coefficients are on the standardised scale).
    max_iter : most sweeps per node and alpha (default 1000).
    n_jobs : threads over nodes (scikit-learn's convention: None -> 1, -1 all cores).
    verbose : progress lines on stderr.

    Attributes
    ----------
    coef_ : p x p ``scipy.sparse.csr_matrix``; row j holds node j's beta (standardised
        scale, zero diagonal).
    adjacency_ : p x p symmetric boolean ``scipy.sparse.csr_matrix``.
    edges_ : (E, 2) int array of the edges i < j, row-major.
    n_iter_ : (p,) int array, each node's coordinate-descent sweeps (over the path).
    alpha_ : the alpha of the fitted attributes; alphas_ : the path (decreasing).
    coef_path_, adjacency_path_, edges_path_ : per alpha of ``alphas_``.
    location_, scale_ : the column means and the (1/n) standard deviations.
    mode_ : 'gram' or 'data'; screened_pairs_ : the pairs kept by the data mode's
        screening (None in Gram mode); n_features_in_, feature_names_in_.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 5)); X[:, 1] += 0.8 * X[:, 0]
    >>> mb = NeighbourhoodSelection(alpha=0.2).fit(X)
    >>> mb.edges_.tolist(), mb.adjacency_.shape
    ([[0, 1]], (5, 5))
    >>> path = NeighbourhoodSelection(alphas=[0.5, 0.3, 0.1]).fit(X)
    >>> [len(e) for e in path.edges_path_][0] <= len(path.edges_)
    True
    """

    def __init__(self, alpha=None, *, rule="or", alphas=None, mode="auto", tol=1e-7,
                 max_iter=1000, n_jobs=1, verbose=False):
        keep_arguments(self, locals())

    def _check_params(self):
        if self.rule not in _RULES:
            raise ParameterError(f"rule must be 'or' or 'and', got {self.rule!r}")
        if self.mode not in _MODES:
            raise ParameterError(f"mode must be 'auto', 'gram' or 'data', got {self.mode!r}")
        if self.alpha is None and self.alphas is None:
            raise ParameterError("give alpha (one fit) or alphas (a path)")
        if self.alpha is not None and self.alphas is not None:
            raise ParameterError("give either alpha or alphas, not both")
        if self.alpha is not None:
            check_number("alpha", self.alpha)
            if not self.alpha > 0:
                raise ParameterError(f"alpha must be > 0, got {self.alpha!r}")
            alphas = np.array([float(self.alpha)])
        else:
            alphas = _check_alpha_list(self.alphas)
        check_number("tol", self.tol)
        check_number("max_iter", self.max_iter, low=1, integer=True)
        return alphas

    @announces_compiles
    def fit(self, X, y=None):
        """Standardise X (n_samples, n_features) and select every node's neighbours."""
        from .estimator import _feature_names, need_samples
        from .objective import as_matrix

        alphas = self._check_params()
        names = _feature_names(X)
        X = as_matrix(X, "X")
        need_samples(X, 2, "standardise the columns")
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        Zt, self.location_, self.scale_ = standardize_unit(X, stats=True)
        del X
        alphas, coefs, n_iter, unconverged, info = neighbourhood_path(
            Zt, alphas, mode=self.mode, tol=self.tol, max_iter=self.max_iter,
            n_jobs=self.n_jobs, verbose=self.verbose, standardized=True)
        if np.any(unconverged):
            warnings.warn(f"neighbourhood selection: {int(np.count_nonzero(unconverged))} of "
                          f"{unconverged.size} nodes stopped at max_iter={self.max_iter} sweeps "
                          "before tol; increase max_iter", ConvergenceWarning, stacklevel=2)
        adj_path, edges_path = [], []
        for C in coefs:
            adj, edges = adjacency_from_coef(C, self.rule)
            adj_path.append(adj)
            edges_path.append(edges)
        self.n_features_in_ = Zt.shape[0]
        self.alphas_ = alphas
        self.alpha_ = float(alphas[-1])
        self.coef_path_ = coefs
        self.adjacency_path_ = adj_path
        self.edges_path_ = edges_path
        self.coef_ = coefs[-1]
        self.adjacency_ = adj_path[-1]
        self.edges_ = edges_path[-1]
        self.n_iter_ = n_iter
        self.mode_ = info["mode"]
        self.screened_pairs_ = info["screened_pairs"]
        if self.verbose:
            print(f"neighbourhood selection: {Zt.shape[0]} variables, alpha={self.alpha_:.6g}, "
                  f"{len(self.edges_)} edges ({self.rule} rule), {info['elapsed']:.2f} s",
                  file=sys.stderr, flush=True)
        return self

    def __sklearn_is_fitted__(self):
        return hasattr(self, "coef_")

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")
