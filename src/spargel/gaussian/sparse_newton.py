"""The graphical lasso without a dense p x p matrix: orthant-wise Newton-CG on a sparse
pattern, with a sparse LDL^T factor, its selected inverse and an optimality check off
the pattern.

For a component too large for the dense solvers (p = 20,000 holds 3.2 GB per p x p
array; p = 100,000 would need 80 GB each), the problem

    min_K  -log det K + tr(S K) + sum_ij L_ij |K_ij|

is solved on a **candidate pattern** C (the diagonal and the pairs screened from the
data, ``|S_ij| > alpha``): every entry of K off C is held at zero, so K is a sparse
matrix, and the solution on C is the solution of the whole problem when the optimality
conditions hold off C as well (checked at the end, see below). On C:

* **factor**: ``K = L D L^T`` in a fill-reducing order (SuperLU's minimum degree on
  the pattern), symbolic analysis once per pattern; positive definiteness (every pivot
  positive) and ``log det K = sum log d_k`` from each numeric factorisation;
* **gradient**: ``S - W`` on C, with ``W = K^-1`` only where it is needed -- its
  entries on the factor's pattern, a superset of C (the *selected inverse*,
  Takahashi's recurrence);
* **Newton direction**: the orthant-wise Newton-CG of :mod:`.newton_cg` on the free
  set F (the non-zeros and the zeros whose gradient exceeds their weight): the Hessian
  product ``(W E W)_F`` is the derivative of the selected inverse along E (forward-mode
  through the factorisation and the recurrence), the preconditioner ``(K V K)_F`` is
  sparse; Armijo backtracking on the orthant projection;
* **stop**: the largest entry of the minimum-norm subgradient on C (on the
  standardised scale, unit diagonal of S) is at most ``tol``.

**Off the pattern.** With W's columns computed in blocks from the factor, a pair
``(i, j)`` off C satisfies the optimality conditions when ``|S_ij - W_ij| <= L_ij``.
The screening that made C also kept the pairs of ``(1 - margin) alpha < |S_ij| <=
alpha`` (the *near* band); for any other pair off C, ``|S_ij| <= (1 - margin) alpha``,
so only the pairs of the near band and those with ``|W_ij| > margin * alpha`` can fail,
and only for those is ``S_ij`` computed (a dot product of two data columns). Failing
pairs join C and the solve resumes from the current K: the result is certified on
every pair, yet no p x p matrix (nor a second pass over all of S) is ever formed.

Memory: the data (n x p, twice: the rescaled copy and its transpose for the pair
products), the pattern and factor (``O(nnz(L))``), and one block of W columns
(``p x b`` with ``p b`` at most :data:`BLOCK_BYTES`): about ``16 n p + 40 nnz(L) +
BLOCK_BYTES`` bytes.

>>> import numpy as np
>>> from spargel.gaussian.from_data import _Columns
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((400, 30)); X[:, 1:] += 0.6 * X[:, :-1]
>>> res = solve_component_sparse(_Columns(X, False), np.arange(30), 0.1)
>>> res.converged, res.precision.shape
(True, (30, 30))
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from ..core.limits import available_memory
from ..core.solver_table import solver as solver_record
from ..errors import ConvergenceWarning, SpargelError
from .progress import record, Stages
from .result import GaussianResult

__all__ = ["solve_component_sparse", "SparsePattern", "SOLVER", "FactorTooLargeError"]

#: the solver's name (``solver=`` of the from-data path forces it for every component)
SOLVER = "sparse-newton-cg"

#: the near band kept by the screening, as a share of alpha: pairs with
#: ``(1 - MARGIN) alpha < |S_ij| <= alpha`` are checked off the pattern, and any other
#: pair only when ``|W_ij| > MARGIN alpha``
MARGIN = 0.1
#: largest block of W columns computed at once for the check off the pattern
BLOCK_BYTES = 2**27
#: most rounds of "solve on the pattern, check off it"
MAX_ROUNDS = 10
#: relative rounding of the objective's sums, the Armijo test's slack
ROUNDING = 1e-14
#: Newton iterations without a tenfold fall of the optimality measure before the
#: solve stops as stalled (the rounding floor)
STALL = 5


def _kernels():
    from . import _sparse_factor_kernels as k
    return k


def _ordering(q, rows, cols):
    """A fill-reducing symmetric ordering of the pattern: SuperLU's minimum degree on
    ``A + A^T`` (a factorisation of a diagonally dominant matrix of that pattern),
    or the identity when that fills more. Returns ``perm`` (new position -> node)."""
    from scipy.sparse.linalg import splu

    if rows.size == 0:
        return np.arange(q)
    deg = np.bincount(rows, minlength=q) + np.bincount(cols, minlength=q)
    A = sp.csc_matrix((np.concatenate([np.full(rows.size, -1.0), np.full(rows.size, -1.0),
                                       deg + 1.0]),
                       (np.concatenate([rows, cols, np.arange(q)]),
                        np.concatenate([cols, rows, np.arange(q)]))), shape=(q, q))
    try:
        lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options=dict(SymmetricMode=True))
    except RuntimeError:                            # pragma: no cover - A is diagonally dominant
        return np.arange(q)
    cands = [np.asarray(lu.perm_c), np.argsort(lu.perm_c), np.arange(q)]
    fills = [_fill(q, rows, cols, c) for c in cands]
    return cands[int(np.argmin(fills))]


def _column_counts(q, rows, cols, perm, cap=np.iinfo(np.int64).max):
    """The factor's entries per column (below the diagonal) in the order ``perm``, or
    None when they pass ``cap`` in all."""
    inv = np.empty(q, dtype=np.int64)
    inv[perm] = np.arange(q)
    Ap, Ai = _upper_csc(q, inv[rows], inv[cols])[:2]
    parent = np.empty(q, dtype=np.int64)
    Lnz = np.empty(q, dtype=np.int64)
    flag = np.empty(q, dtype=np.int64)
    total = int(_kernels().ldl_symbolic(Ap, Ai, parent, Lnz, flag, cap))
    return None if total < 0 else Lnz


def _fill(q, rows, cols, perm, cap=np.iinfo(np.int64).max):
    """The factor's entries below the diagonal in the order ``perm`` (inf past cap)."""
    counts = _column_counts(q, rows, cols, perm, cap)
    return np.inf if counts is None else int(counts.sum())


def sparse_work(q, a, b):
    """``(perm, work)``: the fill-reducing order of the pattern of the pairs (a, b) and
    the work of one selected inverse in it relative to a dense one, ``sum_j c_j^2 /
    q^3`` (c_j the factor's entries in column j). Measured break-even against the
    dense Newton-CG: about 5e-3 at q = 1,600, 5e-4 at q = 10,000 (the sparse kernels
    are scalar, the dense ones BLAS)."""
    perm = _ordering(q, np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    counts = _column_counts(q, np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
                            perm).astype(np.float64)
    return perm, float(np.dot(counts, counts)) / float(q) ** 3


def bandwidth_ordering(q, rows, cols, cap):
    """An ordering found without factorising (reverse Cuthill-McKee, or the identity
    when that fills less), for patterns that are not trusted (a model file's): returns
    ``perm``, or None when the factor would have more than ``cap`` entries in both."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(q, q))
    cands = [np.asarray(reverse_cuthill_mckee(A + A.T, symmetric_mode=True), dtype=np.int64),
             np.arange(q)]
    fills = [_fill(q, rows, cols, c, cap) for c in cands]
    best = int(np.argmin(fills))
    return None if not np.isfinite(fills[best]) else cands[best]


def _upper_csc(q, a, b):
    """The upper-triangle pattern of the pairs (a, b) (a != b) and the diagonal, in
    compressed columns with sorted rows. Returns ``(Ap, Ai, order)``: the entry of
    pair t is ``order[t]`` (the diagonal entries follow the pairs in ``order``)."""
    r = np.minimum(a, b)
    c = np.maximum(a, b)
    r = np.concatenate([r, np.arange(q)])
    c = np.concatenate([c, np.arange(q)])
    key = c * q + r
    srt = np.argsort(key, kind="stable")
    Ai = r[srt].astype(np.int64)
    Ap = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(np.bincount(c, minlength=q), out=Ap[1:])
    order = np.empty(srt.size, dtype=np.int64)
    order[srt] = np.arange(srt.size)
    return Ap, Ai, order


class SparsePattern:
    """A fixed symmetric pattern over q variables with its ordering and symbolic
    factor, and the buffers of the numeric kernels.

    ``pairs`` are (a, b) node pairs, a < b, in component-local numbering; entry t of
    the values vectors is the t-th upper-triangle entry of the permuted pattern
    (``erow[t] <= ecol[t]``, permuted numbering); ``node_of`` maps permuted positions
    to nodes."""

    def __init__(self, q, a, b, perm=None, max_factor=None):
        k = _kernels()
        self.q = q
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        self.node_of = _ordering(q, a, b) if perm is None else perm
        inv = np.empty(q, dtype=np.int64)
        inv[self.node_of] = np.arange(q)
        self.pos_of = inv
        self.Ap, self.Ai, order = _upper_csc(q, inv[a], inv[b])
        self.m = self.Ai.size
        self.pair_entry = order[:a.size]               # entry of each input pair
        self.ecol = np.repeat(np.arange(q), np.diff(self.Ap))
        self.erow = self.Ai
        self.diag = self.erow == self.ecol
        self.weight = np.where(self.diag, 1.0, 2.0)    # <A, B> = sum over both triangles
        self.parent = np.empty(q, dtype=np.int64)
        self.Lnz = np.empty(q, dtype=np.int64)
        self.flag = np.empty(q, dtype=np.int64)
        cap = _factor_budget() if max_factor is None else int(max_factor)
        if k.ldl_symbolic(self.Ap, self.Ai, self.parent, self.Lnz, self.flag, cap) < 0:
            raise FactorTooLargeError(q, cap)
        self.Lp = np.zeros(q + 1, dtype=np.int64)
        np.cumsum(self.Lnz, out=self.Lp[1:])
        nl = int(self.Lp[-1])
        self.nnz_L = nl
        self.Li = np.empty(nl, dtype=np.int64)
        self.Lx = np.empty(nl)
        self.d = np.empty(q)
        self.Y = np.zeros(q)
        self.work = np.empty(q, dtype=np.int64)
        self.zL = np.empty(nl)
        self.zd = np.empty(q)
        # the factor's pattern (Li) is structural: one factorisation of the identity
        one = np.where(self.diag, 1.0, 0.0)
        self.factor(one)
        # entry t (off the diagonal) <-> its place in the factor's pattern
        lkey = np.repeat(np.arange(q), np.diff(self.Lp)) * q + self.Li
        off = ~self.diag
        ekey = self.erow[off] * q + self.ecol[off]
        where = np.searchsorted(lkey, ekey)
        if not np.array_equal(lkey[np.minimum(where, nl - 1)], ekey):  # pragma: no cover
            raise AssertionError("pattern entry missing from the symbolic factor")
        self.entry_in_L = np.full(self.m, -1, dtype=np.int64)
        self.entry_in_L[off] = where
        self._deriv = None

    def factor(self, x):
        """Numeric LDL^T of the values x; log det, or -inf if not positive definite."""
        return float(_kernels().ldl_numeric(self.Ap, self.Ai, x, self.Lp, self.parent, self.Li,
                                            self.Lx, self.d, self.Y, self.work, self.flag,
                                            self.Lnz))

    def inverse_on_pattern(self):
        """W = K^-1 on the pattern's entries, from the last (accepted) factor."""
        out = np.empty(max(1, int(np.diff(self.Lp).max(initial=0))))
        _kernels().selected_inverse(self.Lp, self.Li, self.Lx, self.d, self.zL, self.zd, out)
        return self.entries(self.zL, self.zd)

    def entries(self, zL, zd):
        w = np.empty(self.m)
        w[self.diag] = zd[self.erow[self.diag]]
        off = ~self.diag
        w[off] = zL[self.entry_in_L[off]]
        return w

    def hessian_product(self, E):
        """``(W E W)`` on the pattern's entries for the direction E (entry values)."""
        k = _kernels()
        if self._deriv is None:
            nl, q = self.nnz_L, self.q
            width = max(1, int(np.diff(self.Lp).max(initial=0)))
            # (the factor's and the inverse's arrays are written in place by every
            # factorisation: the tuples hold the current point's values)
            self._deriv = (
                k.Factor(self.Ap, self.Ai, self.Lp, self.parent, self.Li, self.Lx, self.d),
                k.SelectedInverse(self.zL, self.zd),
                k.DerivativeWork(dLx=np.empty(nl), dd=np.empty(q), dY=np.zeros(q),
                                 pattern=np.empty(q, dtype=np.int64),
                                 flag=np.empty(q, dtype=np.int64),
                                 cnt=np.empty(q, dtype=np.int64), dzL=np.empty(nl),
                                 dzd=np.empty(q), out=np.empty(width), dout=np.empty(width)))
        factor, inverse, work = self._deriv
        k.inverse_derivative(factor, E, inverse, work)
        return -self.entries(work.dzL, work.dzd)

    def symmetric_csr(self, vals, keep):
        """The symmetric q x q CSR (indptr, indices, slot) of the entries ``keep``
        (a boolean mask): ``slot`` gives the index into ``vals[keep]`` of each
        stored value (both triangles)."""
        idx = np.flatnonzero(keep)
        r, c = self.erow[idx], self.ecol[idx]
        off = r != c
        rows = np.concatenate([r, c[off]])
        cols = np.concatenate([c, r[off]])
        slot = np.concatenate([np.arange(idx.size), np.flatnonzero(off)])
        srt = np.lexsort((cols, rows))
        ptr = np.zeros(self.q + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.q), out=ptr[1:])
        return ptr, cols[srt].astype(np.int64), slot[srt].astype(np.int64)


#: bytes per entry of the factor that a solve holds (its values, indices, selected
#: inverse, the derivative's values and inverse), with a margin
_BYTES_PER_FACTOR_ENTRY = 48


def _factor_budget():
    """Most factor entries that fit into about half the memory available now."""
    return int(0.5 * available_memory() / _BYTES_PER_FACTOR_ENTRY)


class FactorTooLargeError(SpargelError, MemoryError):
    """The sparse factor of a component's pattern would not fit in memory."""

    def __init__(self, size, cap):
        self.size, self.cap = size, cap
        super().__init__(f"the sparse factor of a screened component of {size} variables would "
                         f"have more than {cap} entries, more than fit in memory; a larger alpha "
                         "gives a sparser pattern")


def _objective(P, x, s, lw, logdet):
    return -logdet + float(np.dot(P.weight, s * x)) + float(np.dot(P.weight, lw * np.abs(x)))


def _kkt(x, G, lw):
    """Minimum-norm subgradient entries of the objective on the pattern."""
    r = np.where(x != 0, G + lw * np.sign(x), np.sign(G) * np.maximum(np.abs(G) - lw, 0.0))
    return r


class _Preconditioner:
    """``V -> (K V K)_F`` for the free set F (entry indices ``free``) at K (x)."""

    def __init__(self, P, x, free):
        self.P = P
        nz = x != 0
        self.Kp, self.Kj, kslot = P.symmetric_csr(x, nz)
        self.Kx = x[nz][kslot]
        keep = np.zeros(P.m, dtype=bool)
        keep[free] = True
        self.Vp, self.Vj, self.Vslot = P.symmetric_csr(None, keep)
        # the pairs of F grouped by their row
        r = P.erow[free]
        srt = np.argsort(r, kind="stable")
        self.Fp = np.zeros(P.q + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=P.q), out=self.Fp[1:])
        self.Fj = P.ecol[free][srt].astype(np.int64)
        self.Fslot = srt.astype(np.int64)
        self.acc = np.empty(P.q)
        self.touched = np.empty(P.q, dtype=np.int64)
        self.mark = np.full(P.q, -1, dtype=np.int64)

    def __call__(self, v):
        out = np.empty(v.size)
        _kernels().sandwich(self.Kp, self.Kj, self.Kx, self.Vp, self.Vj, self.Vslot, v,
                            self.Fp, self.Fj, self.Fslot, out, self.acc, self.touched,
                            self.mark)
        return out


def _newton_cg_direction(P, x, g, free, wF, max_cg):
    """Approximate solution of ``(W D W)_F = -g`` on F by preconditioned CG."""
    pre = _Preconditioner(P, x, free)
    E = np.zeros(P.m)

    def hess(v):
        E[free] = v
        return P.hessian_product(E)[free]

    def dot(a, b):
        return float(np.dot(wF, a * b))

    g_norm = np.sqrt(dot(g, g))
    D = np.zeros(g.size)
    r = -g
    z = pre(r)
    p = z.copy()
    rz = dot(r, z)
    eta = min(0.5, np.sqrt(g_norm))
    n_cg = 0
    for n_cg in range(1, max_cg + 1):
        Hp = hess(p)
        pHp = dot(p, Hp)
        if not pHp > 0:
            break
        a = rz / pHp
        D += a * p
        r -= a * Hp
        if np.sqrt(dot(r, r)) <= eta * g_norm:
            break
        z = pre(r)
        rz_new = dot(r, z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    if not np.any(D):
        D = -g / np.maximum(P.weight[free], 1.0)
    return D, n_cg


def _solve_on_pattern(P, x, s, lw, tol, max_iter, max_cg, t0, it0, history, verbose, callback,
                      shift):
    """Orthant-wise Newton-CG on the pattern P from x (entry values, positive definite).
    Returns (x, f, G, status, iterations)."""
    logdet = P.factor(x)
    if not np.isfinite(logdet):
        raise FloatingPointError("the starting point is not positive definite")
    f = _objective(P, x, s, lw, logdet)
    W = P.inverse_on_pattern()
    status, it = "max_iter", 0
    penalised = lw > 0
    floor = ROUNDING * (abs(f) + float(np.dot(P.weight, np.abs(s * x))) + abs(logdet))
    best, since = np.inf, 0
    for it in range(1, max_iter + 1):
        G = s - W
        kkt = float(np.max(np.abs(_kkt(x, G, lw)), initial=0.0))
        nz = int(np.count_nonzero(x[~P.diag]))
        row = {"iteration": it0 + it - 1, "objective": f + shift, "duality_gap": np.nan,
               "kkt": kkt, "active_edges": nz, "elapsed": time.perf_counter() - t0}
        if record(row, history, verbose=verbose, callback=callback, name=SOLVER):
            return x, f, G, "callback", it - 1
        if kkt <= tol:
            return x, f, G, "tol", it - 1
        # at the rounding floor the optimality measure stops falling: give up after
        # STALL iterations without a tenfold improvement
        if kkt < 0.1 * best:
            best, since = kkt, 0
        else:
            since += 1
            if since >= STALL:
                return x, f, G, "stalled", it - 1
        free = np.flatnonzero((x != 0) | (np.abs(G) > lw) | ~penalised)
        sgn = np.where(x[free] != 0, np.sign(x[free]), -np.sign(G[free]))
        gF = G[free] + lw[free] * sgn
        wF = P.weight[free]
        D, _ = _newton_cg_direction(P, x, gF, free, wF, max_cg)
        # Armijo backtracking on the orthant projection
        t = 1.0
        accepted = False
        for _ in range(40):
            y = x.copy()
            yF = x[free] + t * D
            flip = penalised[free] & (np.sign(yF) != sgn)
            yF[flip] = 0.0
            y[free] = yF
            ld = P.factor(y)
            if np.isfinite(ld):
                fy = _objective(P, y, s, lw, ld)
                # Armijo, with the rounding of f's sums as slack (near the optimum the
                # predicted decrease falls below it, and the Newton step is then taken)
                if fy <= f + 1e-4 * float(np.dot(wF, gF * (yF - x[free]))) + floor:
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            P.factor(x)
            P.inverse_on_pattern()
            return x, f, G, "linesearch", it - 1
        x, f = y, fy
        W = P.inverse_on_pattern()
    return x, f, s - W, status, it


def _pair_S(cols, nodes, Zt, a, b):
    """S entries of the component-local pairs (a, b) from the data (exact, as
    ``_Columns.block`` computes them)."""
    out = np.empty(a.size)
    if a.size:
        _kernels().pair_products(Zt, a.astype(np.int64), b.astype(np.int64), out)
    sc = cols.scale[nodes]
    with np.errstate(over="ignore", under="ignore"):
        out = out / cols.m * sc[a] * sc[b]
    return out


def solve_component_sparse(cols, nodes, alpha, *, pairs=None, near=None, penalize_diagonal=False,
                           tol=None, max_iter=100, max_cg=50, verbose=False, callback=None,
                           t0=None, perm=None):
    """Solve the l1 problem for the variables ``nodes`` of the data ``cols`` (a
    ``from_data._Columns``) on a sparse pattern, certified off it.

    ``pairs``: (a, b) arrays of the screened pairs ``|S_ab| > alpha`` in the component's
    own numbering (computed here when None); ``near``: the pairs with ``(1 - MARGIN)
    alpha < |S_ab| <= alpha`` (likewise); ``perm``: the pattern's order (as
    :func:`sparse_work` gives it; found here when None). Returns a :class:`GaussianResult` whose
    ``precision`` is a sparse CSR matrix and whose ``covariance`` holds ``K^-1`` on the
    precision's pattern only (the full inverse is dense)."""
    t0 = time.perf_counter() if t0 is None else t0
    # tol: the largest minimum-norm subgradient entry on the standardised scale
    tol = solver_record(SOLVER, "covariance").tol if tol is None else float(tol)
    nodes = np.asarray(nodes, dtype=np.int64)
    q = nodes.size
    alpha = float(alpha)
    Zt = np.ascontiguousarray(cols.Y[:, nodes].T)
    var = cols.var[nodes]
    if pairs is None or near is None:
        pairs, near = _screen_component(cols, nodes, alpha)
    a, b = (np.asarray(v, dtype=np.int64) for v in pairs)
    near_a, near_b = (np.asarray(v, dtype=np.int64) for v in near)
    diag_pen = alpha if penalize_diagonal else 0.0
    root = np.sqrt(var)
    # standardised scale: unit diagonal of S
    shift = float(np.sum(np.log(var)))
    x_prev = None                                   # (a, b, value) of the last round
    history = []
    it_total = 0
    status = "max_iter"
    for rounds in range(1, MAX_ROUNDS + 1):
        P = SparsePattern(q, a, b, perm=perm if rounds == 1 else None)
        s = np.empty(P.m)
        s[P.diag] = 1.0
        s[P.pair_entry] = _pair_S(cols, nodes, Zt, a, b) / (root[a] * root[b])
        node_r, node_c = P.node_of[P.erow], P.node_of[P.ecol]
        lw = np.where(P.diag, diag_pen / var[node_r], alpha / (root[node_r] * root[node_c]))
        x = np.zeros(P.m)
        x[P.diag] = 1.0 / (1.0 + lw[P.diag])
        if x_prev is not None:
            x[P.pair_entry[:x_prev[0].size]] = x_prev[0]
            x[P.diag] = x_prev[1][P.node_of[P.erow[P.diag]]]
            if not np.isfinite(P.factor(x)):        # pragma: no cover - same K as before
                x[~P.diag] = 0.0
                x[P.diag] = 1.0 / (1.0 + lw[P.diag])
        x, f, G, status, it = _solve_on_pattern(P, x, s, lw, tol, max(1, max_iter - it_total),
                                                max_cg, t0, it_total, history, verbose, callback,
                                                shift)
        it_total += it
        if status == "callback" or it_total >= max_iter and status != "tol":
            break
        diag_vals = np.empty(q)
        diag_vals[P.node_of[P.erow[P.diag]]] = x[P.diag]
        x_prev = (x[P.pair_entry], diag_vals)
        new_a, new_b = _off_pattern_violators(P, cols, nodes, Zt, var, alpha, tol,
                                              near_a, near_b, verbose)
        if new_a.size == 0:
            break
        a = np.concatenate([a, new_a])
        b = np.concatenate([b, new_b])
        history[-1]["added"] = int(new_a.size)
    W = P.inverse_on_pattern()
    if status not in ("tol", "callback"):
        warnings.warn(f"{SOLVER} stopped before the optimality measure reached the tolerance "
                      f"({status}; largest subgradient entry {history[-1]['kkt']:.3g}, tol "
                      f"{tol:g})", ConvergenceWarning, stacklevel=3)
    return _result(P, x, W, f + shift, root, nodes, status, it_total, history, rounds)


def _screen_component(cols, nodes, alpha):
    """Pairs of ``|S_ab| > alpha`` and of the near band, by blocks of columns."""
    q = nodes.size
    rows = max(1, min(q, int(2**26 // (8 * q))))
    A, B, NA, NB = [], [], [], []
    for lo in range(0, q, rows):
        hi = min(lo + rows, q)
        blk = np.abs(cols.block(nodes[lo:hi], nodes[lo:]))
        blk[np.tril_indices(hi - lo, 0, blk.shape[1])] = 0.0
        i, j = np.nonzero(blk > alpha)
        A.append(i + lo)
        B.append(j + lo)
        i, j = np.nonzero((blk > (1.0 - MARGIN) * alpha) & (blk <= alpha))
        NA.append(i + lo)
        NB.append(j + lo)
    cat = np.concatenate
    return (cat(A), cat(B)), (cat(NA), cat(NB))


def _off_pattern_violators(P, cols, nodes, Zt, var, alpha, tol, near_a, near_b, verbose=False):
    """Pairs off the pattern where ``|S_ij - W_ij| > alpha`` (beyond the tolerance on
    the standardised scale), W's columns computed by blocks from the factor."""
    k = _kernels()
    q = P.q
    stages = Stages(verbose, f"{SOLVER}: checking the pairs off the pattern", q)
    root_perm = np.sqrt(var[P.node_of])            # by permuted position
    pa, pb = P.pos_of[near_a], P.pos_of[near_b]
    Np, Ni = _by_smaller(q, pa, pb)
    off = ~P.diag
    Pp, Pi = _by_smaller(q, P.erow[off], P.ecol[off])
    mark = np.full((q, 2), -1, dtype=np.int64)
    thresh = MARGIN * alpha
    width = max(1, min(q, int(BLOCK_BYTES // (8 * q))))
    cap = max(1024, 4 * q)
    ci = np.empty(cap, dtype=np.int64)
    cj = np.empty(cap, dtype=np.int64)
    cw = np.empty(cap)
    out_a, out_b = [], []
    for j0 in range(0, q, width):
        j1 = min(q, j0 + width)
        stages.done(j0)
        B = np.zeros((q, j1 - j0))
        B[np.arange(j0, j1), np.arange(j1 - j0)] = 1.0
        k.solve_columns(P.Lp, P.Li, P.Lx, P.d, B)
        # unscaled W = D^1/2 W~ D^1/2
        B *= root_perm[:, None]
        B *= root_perm[None, j0:j1]
        while True:
            c = int(k.off_pattern_candidates(B, j0, Pp, Pi, Np, Ni, thresh, mark, ci, cj, cw))
            if c >= 0:
                break
            cap *= 4
            ci = np.empty(cap, dtype=np.int64)
            cj = np.empty(cap, dtype=np.int64)
            cw = np.empty(cap)
        if c == 0:
            continue
        na, nb = P.node_of[ci[:c]], P.node_of[cj[:c]]
        Sij = _pair_S(cols, nodes, Zt, na, nb)
        slack = tol * np.sqrt(var[na] * var[nb])
        bad = np.abs(Sij - cw[:c]) > alpha + slack
        if np.any(bad):
            out_a.append(np.minimum(na[bad], nb[bad]))
            out_b.append(np.maximum(na[bad], nb[bad]))
    stages.done(q)
    if not out_a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_a), np.concatenate(out_b)


def _by_smaller(q, a, b):
    """The pairs (a, b) grouped by their smaller index: (ptr, larger index)."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    srt = np.lexsort((hi, lo))
    ptr = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(np.bincount(lo, minlength=q), out=ptr[1:])
    return ptr, hi[srt].astype(np.int64)


def _result(P, x, W, f, root, nodes, status, n_iter, history, rounds):
    """The component's result in its own numbering, back on the original scale."""
    q = P.q
    r = P.node_of[P.erow]
    c = P.node_of[P.ecol]
    keep = x != 0
    scale = 1.0 / (root[r] * root[c])
    K = _sym_csr(q, r[keep], c[keep], (x * scale)[keep])
    Wu = W / scale
    C = _sym_csr(q, r[keep], c[keep], Wu[keep])
    converged = status == "tol"
    return GaussianResult(precision=K, covariance=C, objective=float(f), dual_objective=np.nan,
                          duality_gap=np.nan, n_iter=int(n_iter), converged=converged,
                          history=history, solver=SOLVER, n_components=1,
                          stop_reason=status, costs=[(float(h["objective"]), np.nan)
                                                     for h in history])


def _sym_csr(q, r, c, v):
    off = r != c
    return sp.csr_matrix((np.concatenate([v, v[off]]),
                          (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]))),
                         shape=(q, q))
