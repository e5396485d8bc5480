"""One entry point for every solver: validation, rescaling, screening, dispatch.

Every problem is solved on the *standardised* scale: with
``d_i = S_ii + L_ii`` (the optimal diagonal of the dual, always > 0) the
problem for ``S~ = D^-1/2 S D^-1/2`` and ``L~ = D^-1/2 L D^-1/2`` has the
solution ``K~ = D^1/2 K D^1/2`` and the objective ``f(K) = f~(K~) + sum_i log
d_i``; the duality gap is the same number on both scales. So the solvers see
a matrix with unit diagonal whatever the units of the data (1e-150 or
1e+150), the relative tolerance refers to the standardised objective ``f~``
(invariant to rescaling the variables), and results are mapped back at the
end; a result that does not fit in double precision is an error, not an
``inf``. Block-l1 problems are rescaled by one common factor (their l1-ball
constraints are not invariant to per-variable scaling).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> S = np.cov(rng.standard_normal((40, 6)).T, bias=True)
>>> res = solve_gaussian(S, 0.1)
>>> res.converged, res.solver
(True, 'newton-cg')
>>> big = solve_gaussian(S * 1e100, 0.1 * 1e100)      # same problem in other units
>>> bool(np.allclose(big.precision * 1e100, res.precision, rtol=1e-6))
True
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.solver_table import solver as solver_record, solver_names
from ..errors import ConvergenceWarning, DataFormatError, ParameterError
from .control import RunControl
from .objective import lapack_threads, penalty_matrix, validate_covariance
from .result import GaussianResult
from .weights import ScalarWeights, dense_weights
from ..scaleout import cluster
from .screening import screen_components

__all__ = ["solve_gaussian", "SOLVERS"]

#: the names ``solver`` takes: "auto" and the covariance solvers of the solver table
#: (``core/solver_table.py``: their defaults, ``max_iter`` and the duality-gap ``tol``)
SOLVERS = ("auto", *solver_names("covariance"))
#: Newton steps after the tolerance is met, towards the rounding floor (the estimate
#: as close to the optimum as scikit-learn's coordinate descent leaves it at the same
#: tolerance; ``newton_cd.polish_done``)
POLISH_STEPS = 2
#: weights above this (times the largest diagonal of the rescaled problem) are
#: all equivalent to +inf (the optimal dual has |W~_ij| <= 2 max_i d~_i), so
#: larger ones are capped
_WEIGHT_CAP = 1e6


def _check_common(tol, atol, max_iter):
    for name, v in (("tol", 0.0 if tol is None else tol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not np.isfinite(v) or v < 0:
            raise ParameterError(f"{name} must be a finite number >= 0, got {v!r}")
    if max_iter is not None and (isinstance(max_iter, bool) or
                                 not isinstance(max_iter, (int, np.integer)) or max_iter < 1):
        raise ParameterError(f"max_iter must be a positive integer, got {max_iter!r}")


def resolve_solver(solver, blocks):
    """The solver that will run: 'newton-cg', 'newton-cd', 'projected-gradient'
    or 'block-l1' (Algorithm 3, for block penalties)."""
    if solver not in SOLVERS:
        raise ParameterError(f"solver must be one of {', '.join(map(repr, SOLVERS))}, got {solver!r}")
    if solver != "auto" and solver_record(solver, "covariance").from_data_only:
        raise ParameterError(f"solver={solver!r} solves from the data matrix only "
                             "(covariance='from_data', or 'auto' with n < p)")
    if blocks is None:
        return "newton-cg" if solver == "auto" else solver
    instead = "block-l1" if solver == "auto" else solver_record(solver, "covariance").with_blocks
    if instead is None:
        raise ParameterError(f"solver={solver!r} handles plain l1 weights only; block penalties "
                             "need solver='projected-gradient' (Algorithm 3) or 'auto'")
    return instead


#: rows per block of the in-place rescalings (a block's ``outer(s_rows, s)`` is small)
_ROWS = 256


def _map_back(res, s, offset, n_components=None):
    """Undo the rescaling in place: K = K~ / (s s^T), Sigma = Sigma~ * (s s^T) (row
    blocks: no further dense n x n array)."""
    K, C = res.precision, res.covariance
    n = K.shape[0]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for a in range(0, n, _ROWS):
            b = min(a + _ROWS, n)
            ss = np.outer(s[a:b], s)
            for name, A, op in (("precision", K, np.divide), ("covariance", C, np.multiply)):
                was = A[a:b] != 0
                op(A[a:b], ss, out=A[a:b])
                bad = ~np.isfinite(A[a:b]) | ((A[a:b] == 0) & was)
                if np.any(bad):
                    i, j = (int(v) for v in np.argwhere(bad)[0])
                    raise DataFormatError(
                        "S", None, f"the {name} matrix does not fit in double precision (entry "
                        f"({a + i}, {j}) over- or underflows: variances range from "
                        f"{float(np.min(s * s)):.3g} to {float(np.max(s * s)):.3g}); rescale "
                        "the variables")
    res.objective = float(res.objective) + offset
    res.dual_objective = float(res.dual_objective) + offset
    if n_components is not None:
        res.n_components = n_components
    return res


def solve_gaussian(S, alpha, *, blocks=None, solver="auto", tol=None, atol=0.0,
                   max_iter=None, penalize_diagonal=False, block_weight="size",
                   screen=True, warm_start=None, n_jobs=1, step_rule="bb",
                   random_state=0, verbose=False, callback=None, validated=False, client=None,
                   overwrite_S=False, polish=None):
    """Solve the (block-)l1 penalised Gaussian maximum-likelihood problem.

    Parameters
    ----------
    S : (n, n) empirical covariance (symmetric, finite; may be singular).
    alpha : scalar, or (n, n) non-negative per-entry weights (plain l1 only).
    blocks : None for plain l1, else a block specification (see
        ``block_l1.make_block_penalty``).
    solver : 'auto' (Newton-CG for l1 — handing over to Algorithm 1 if it
        stops early on an ill-conditioned problem — and Algorithm 3 for
        blocks), 'newton-cg', 'newton-cd' (QUIC-like coordinate descent
        directions), or 'projected-gradient' (Algorithm 1; Algorithm 3 with
        blocks).
    tol, atol : stop when the certified duality gap is <= max(atol, tol *
        max(1, |f~|)), f~ the objective on the standardised scale (per
        screened component). ``tol=None``: the solver's default, 1e-10 for the
        Newton solvers (the precision matrix then agrees with other exact
        solvers to about 1e-7 relative) and 1e-6 for the projected gradients.
    max_iter : iteration limit (default per solver: 100 / 100 / 1000 / 2000).
    screen : split the l1 problem into the connected components of
        ``|S_ij| > L_ij`` (exact; ignored with blocks).
    warm_start : a previous :class:`GaussianResult` of the same size.
    n_jobs : threads used to solve screened components concurrently.
    client : a ``dask.distributed.Client``: the screened components (more than one)
        are solved as tasks on its workers instead, each where it runs; the results
        come back in component order, so the solution is the single-process one, bit
        for bit. ``verbose`` and ``callback`` then see no per-iteration rows (the
        iterations run on the workers; the rows are in the result's history).
    step_rule : block-l1 only: 'bb' (default; Barzilai-Borwein initial step
        for the Armijo search of Algorithm 3) or 'paper' (line 22 of
        Algorithm 3: t grows by 1/beta after every accepted step).
    verbose : print one line per iteration on stderr.
    callback : ``callback(row)`` after every iteration; returning True stops
        the solver (the result then has ``stop_reason == 'callback'``).
    overwrite_S : with ``validated=True``, the rescaled problem of the l1 path is
        built in S's memory (one dense n x n array less; S is then garbage): for
        callers that own S and do not use it afterwards. Without ``validated``
        the validated copy is used so, and the caller's S is never written.
    polish : Newton steps after the tolerance is met (None: :data:`POLISH_STEPS`;
        0 for fits whose last digits nobody reads, such as the path of a model
        selection).

    Returns
    -------
    GaussianResult. A ``ConvergenceWarning`` is issued when the tolerance was
    not reached (iteration limit, or no further progress possible).
    """
    t0 = time.perf_counter()
    _check_common(tol, atol, max_iter)
    S = S if validated else validate_covariance(S)
    n = S.shape[0]
    kind = resolve_solver(solver, blocks)
    if max_iter is None:
        max_iter = solver_record(kind, "covariance").max_iter
    fallback_tol = None
    if tol is None:
        tol = solver_record(kind, "covariance").tol
        fallback_tol = solver_record("projected-gradient", "covariance").tol
    if warm_start is not None and warm_start.precision.shape != (n, n):
        warm_start = None
    if polish is not None and (isinstance(polish, bool) or not isinstance(polish, (int, np.integer))
                               or polish < 0):
        raise ParameterError(f"polish must be an integer >= 0 or None, got {polish!r}")
    # the options every solver shares, built once (the projected gradients read no polish)
    control = RunControl(tol=tol, atol=atol, max_iter=max_iter,
                         polish=POLISH_STEPS if polish is None else int(polish),
                         verbose=verbose, callback=callback, t0=t0)
    with lapack_threads(n):
        if kind == "block-l1":
            res = _solve_blocks(S, alpha, blocks, penalize_diagonal, block_weight, warm_start,
                                step_rule, random_state, control)
        else:
            res = _solve_l1(S, alpha, kind, solver, penalize_diagonal, screen, warm_start,
                            n_jobs, control, client, fallback_tol,
                            overwrite=overwrite_S or not validated)   # validation copies S
    if not res.costs:
        res.costs = [(float(h["objective"]), float(h.get("duality_gap", np.nan)))
                     for h in res.history] or [(float(res.objective), float(res.duality_gap))]
    if not res.converged and res.stop_reason != "callback":
        what = {"max_iter": f"reached max_iter={max_iter}",
                "linesearch": "no further decrease was possible (precision limit)",
                "stalled": "progress stalled"}.get(res.stop_reason, res.stop_reason)
        warnings.warn(f"{res.solver} stopped before the duality gap reached the tolerance "
                      f"({what}; gap {res.duality_gap:.3g}, tol {tol:g})",
                      ConvergenceWarning, stacklevel=2)
    return res


def _solve_blocks(S, alpha, blocks, penalize_diagonal, block_weight, warm_start, step_rule,
                  random_state, control):
    from .block_l1 import block_l1_projected_gradient, make_block_penalty

    n = S.shape[0]
    bp = make_block_penalty(blocks, n, alpha, block_weight=block_weight,
                            penalize_diagonal=penalize_diagonal)
    d = np.diag(S) + np.diag(bp.L_box)
    c = float(np.mean(d))
    if not (np.isfinite(c) and c > 0):
        c = 1.0
    s = np.full(n, np.sqrt(c))
    offset = n * float(np.log(c))
    bp = dataclasses.replace(bp, radius=bp.radius / c, L_box=bp.L_box / c)
    Sig0 = None if warm_start is None else warm_start.covariance / c
    res = block_l1_projected_gradient(S / c, bp, Sigma0=Sig0, control=control, offset=offset,
                                      random_state=random_state, step_rule=step_rule)
    return _map_back(res, s, offset)


def _rescale_rows(S, L, s_rows, s_cols, cap, S_out, L_out):
    """``S_out = S / outer(s_rows, s_cols)`` and ``L_out = min(L / outer(...), cap)``
    (L None: S only), by blocks of rows (no further dense array; the outputs may be
    the inputs)."""
    with np.errstate(over="ignore"):
        for a in range(0, S.shape[0], _ROWS):
            b = min(a + _ROWS, S.shape[0])
            ss = np.outer(s_rows[a:b], s_cols)
            np.divide(S[a:b], ss, out=S_out[a:b])
            if L is not None:
                np.divide(L[a:b], ss, out=L_out[a:b])
                np.minimum(L_out[a:b], cap, out=L_out[a:b])


def _solve_l1(S, alpha, kind, solver, penalize_diagonal, screen, warm_start, n_jobs, control,
              client=None, fallback_tol=None, overwrite=False):
    n = S.shape[0]
    # a scalar weight stays a scalar until a component needs its weight matrix
    scalar = np.ndim(alpha) == 0
    if scalar:
        a_off = float(penalty_matrix(alpha, 2, True)[0, 1])        # validated
        L = a_off
        L_diag = np.full(n, a_off if penalize_diagonal else 0.0)
    else:
        L = penalty_matrix(alpha, n, penalize_diagonal)
        L_diag = np.diag(L).copy()
    d = np.diag(S) + L_diag
    if np.any(d <= 0):
        bad = int(np.flatnonzero(d <= 0)[0])
        raise DataFormatError("S", None, f"variable {bad} has zero variance and an unpenalised "
                              "diagonal: the likelihood is unbounded (remove constant columns or "
                              "penalise the diagonal)")
    penalised = ((a_off > 0 and n > 1) or bool(np.any(L_diag))) if scalar else np.any(L)
    if not penalised:
        return _unpenalised(S, kind, control.t0)
    if kind == "projected-gradient":
        # one common factor: Algorithm 1's iterates are then exactly those of
        # the unscaled problem (per-variable scaling changes its path)
        s = np.full(n, np.sqrt(float(np.mean(d))))
    else:
        s = np.sqrt(d)
    dt = d / (s * s)
    if screen:

        # on the unscaled matrices: |S_ij| > L_ij exactly as given (the rescaled
        # comparison could split a tie at alpha_max by one rounding error)
        comps = screen_components(S, L)
    else:
        comps = [np.arange(n)]
    # the rescaled problem, built in row blocks (the same arithmetic as S / outer(s, s)):
    # for one component St is the one new dense array (none with overwrite: S's memory)
    # and Lt overwrites L (ours: penalty_matrix copies); for several, each component's
    # block is rescaled when it is solved (no full rescaled copy besides S and L). A
    # scalar weight never becomes a matrix for the Newton solvers: their kernels compute
    # each rescaled weight when they read it (ScalarWeights)
    S_diag = np.diag(S).copy()
    cap = _WEIGHT_CAP * max(1.0, float(dt.max()))
    whole = len(comps) == 1
    implicit = scalar and kind in ("newton-cg", "newton-cd")
    if whole:
        St = S if overwrite and S.flags.c_contiguous and S.dtype == np.float64 \
            else np.empty_like(S)
        if implicit:
            Lt = ScalarWeights(s, L_diag / (s * s), L, cap)
            _rescale_rows(S, None, s, s, cap, St, None)
        else:
            Lt = np.full((n, n), L) if scalar else L
            _rescale_rows(S, Lt, s, s, cap, St, Lt)
        del L
        np.fill_diagonal(St, S_diag / (s * s))
        if not implicit:
            np.fill_diagonal(Lt, L_diag / (s * s))
    offset = float(np.sum(np.log(s * s)))
    K0 = None
    if warm_start is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            K0 = warm_start.precision * s[:, None]
            K0 *= s[None, :]
        if not np.all(np.isfinite(K0)):
            K0 = None
    # the warm start's inverse, rescaled when a Newton solver starts (no inverse of K0
    # to compute): a previous Newton fit's covariance is its precision's inverse
    C0 = warm_start.covariance if K0 is not None and kind in ("newton-cg", "newton-cd") \
        and _inverse_of_precision(warm_start) else None

    def inputs(idx):
        if whole:                           # the whole problem: no copies
            Ss, Ls = St, Lt
        else:
            sub = np.ix_(idx, idx)
            Ss = np.ascontiguousarray(S[sub])
            si = s[idx]
            if implicit:
                Ls = ScalarWeights(si, L_diag[idx] / (si * si), L, cap)
                _rescale_rows(Ss, None, si, si, cap, Ss, None)
            else:
                Ls = np.full((idx.size, idx.size), L) if scalar else np.ascontiguousarray(L[sub])
                _rescale_rows(Ss, Ls, si, si, cap, Ss, Ls)
                np.fill_diagonal(Ls, L_diag[idx] / (si * si))
            np.fill_diagonal(Ss, S_diag[idx] / (si * si))
        off = float(np.sum(np.log(s[idx] * s[idx])))
        X0 = None if K0 is None else (K0 if idx.size == n else K0[np.ix_(idx, idx)])
        # (the Newton solvers test X0 by its Cholesky factor: solve_component retries
        # without a warm start that is not positive definite)
        return Ss, Ls, off, X0

    def inverse_of(idx):
        """The rescaled inverse of K0's block ``idx`` (a function filling an array),
        or None: C0's block is that inverse when K0 has no entry joining ``idx`` to
        the other variables (the previous fit's components are inside this one's)."""
        if C0 is None:
            return None
        if idx.size < n:
            rest = np.ones(n, dtype=bool)
            rest[idx] = False
            if np.any(K0[idx][:, rest]):
                return None

        def fill(out):
            out[...] = C0 if idx.size == n else C0[np.ix_(idx, idx)]
            si = s[idx]
            _rescale_rows(out, None, si, si, cap, out, None)      # C0 / (s s^T)
        return fill

    def run(idx):
        return solve_component(*inputs(idx), kind, solver, control, fallback_tol,
                               W0=inverse_of(idx))

    big = [c for c in comps if c.size > 1]
    singles = np.concatenate([c for c in comps if c.size == 1]) if len(big) < len(comps) \
        else np.zeros(0, dtype=np.int64)
    if client is not None and len(big) > 1:
        results = _map_components(client, [inputs(c) for c in big], kind, solver, control,
                                  fallback_tol)
    elif n_jobs is not None and n_jobs != 1 and len(big) > 1:
        workers = None if n_jobs == -1 else int(n_jobs)
        with ThreadPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(run, big))
    else:
        results = [run(c) for c in big]
    St = Lt = K0 = L = None                 # the rescaled inputs are no longer needed
    if len(results) == 1 and not singles.size:
        res = results[0]
        # the component's objective already is the whole problem's (offset included)
        return _map_back(res, s, offset, n_components=1)
    # singletons: K~_ii = 1 / (S~_ii + L~_ii) = 1 / dt_i, objective log dt_i + 1 each
    f = float(np.sum(np.log(dt[singles]) + 1.0))
    costs = _whole_costs(f + offset, [(r.history, float(np.sum(np.log(s[idx] * s[idx]))), r)
                                      for idx, r in zip(big, results)])
    summary = combine_components(f, results, kind)
    # one whole matrix at a time, each component's block let go once it is copied in
    K = np.zeros((n, n))
    K[singles, singles] = 1.0 / dt[singles]
    for idx, r in zip(big, results):
        K[np.ix_(idx, idx)] = r.precision
        r.precision = None
    C = np.zeros((n, n))
    C[singles, singles] = dt[singles]
    for idx, r in zip(big, results):
        C[np.ix_(idx, idx)] = r.covariance
        r.covariance = None
    res = GaussianResult(precision=K, covariance=C, n_components=len(comps), costs=costs,
                         **summary)
    return _map_back(res, s, offset)


def _inverse_of_precision(res):
    """Whether ``res.covariance`` is the inverse of ``res.precision`` (dense arrays from
    the Newton solvers or the closed form; the projected gradients' covariance is their
    dual point instead)."""
    return isinstance(res.covariance, np.ndarray) and isinstance(res.precision, np.ndarray) \
        and res.covariance.shape == res.precision.shape and bool(res.solver) and \
        set(res.solver.split("/")) <= {"newton-cg", "newton-cd", "closed-form"}


def combine_components(f0, results, solver):
    """The whole problem's summary from its screened components' results: objective
    and dual value (``f0``, the closed-form part, plus theirs), gap, iterations (the
    most of any), convergence (all), the history (their rows, each with its
    ``component`` index), the solvers and the stop reason. ``solver``: the name when
    there are no results. Keyword arguments of :class:`GaussianResult`."""
    f = g = float(f0)
    hist, reasons = [], set()
    n_iter, converged = 0, True
    for ci, r in enumerate(results):
        f += r.objective
        g += r.dual_objective
        n_iter = max(n_iter, r.n_iter)
        converged &= bool(r.converged)
        reasons.add(r.stop_reason)
        for row in r.history:
            row = dict(row)
            row["component"] = ci
            hist.append(row)
    reasons.discard("tol")
    reason = "tol" if converged else (sorted(reasons)[0] if reasons else "max_iter")
    solvers = sorted({r.solver for r in results}) or [solver]
    return dict(objective=f, dual_objective=g, duality_gap=f - g, n_iter=n_iter,
                converged=converged, history=hist, solver="/".join(solvers), stop_reason=reason)


def singular_reason(S, most=3):
    """Why a covariance is singular: ``(kind, groups, more)`` with ``kind`` 'constant'
    (``groups``: the constant variables, 0-based), 'correlated' (perfectly correlated
    pairs: duplicate columns, or one a multiple of the other) or 'other'; at most
    ``most`` groups, ``more`` how many were left out. :func:`singular_text` words it."""
    d = np.sqrt(np.maximum(np.diag(S), 0.0))
    n = S.shape[0]
    zero = np.flatnonzero(d == 0)
    if zero.size:
        return "constant", [[int(j)] for j in zero[:most]], max(zero.size - most, 0)
    R = np.abs(S / np.outer(d, d))
    R[np.tril_indices(n)] = 0.0
    i, j = np.nonzero(R >= 1.0 - 1e-9)
    if i.size:
        return "correlated", [[int(a), int(b)] for a, b in zip(i[:most], j[:most])], max(i.size - most, 0)
    return "other", [], 0


def singular_text(reason, label=lambda j: f"variable {j}"):
    """:func:`singular_reason`'s answer in words, each variable named by ``label(j)``."""
    kind, groups, more = reason
    tail = f" and {more} more" if more else ""
    if kind == "constant":
        return ", ".join(label(g[0]) for g in groups) + tail + (" are" if len(groups) > 1 or more
                                                                else " is") + " constant"
    if kind == "correlated":
        return ("; ".join(f"{label(a)} and {label(b)}" for a, b in groups) + tail
                + " are perfectly correlated (duplicate columns, or one a multiple of the other)")
    return "a column is a linear combination of others, or fewer samples than variables"


def _unpenalised(S, kind, t0):
    """alpha = 0 everywhere: the maximum-likelihood estimate ``K = S^-1`` in closed form
    (the problem is unbounded when S is singular)."""
    n = S.shape[0]
    try:
        C = np.linalg.cholesky(S)
        c2 = np.diag(C) ** 2
        singular = not np.min(c2) > 10 * n * np.finfo(float).eps * np.max(np.diag(S))
    except np.linalg.LinAlgError:
        singular = True
    if singular:                        # (also singular up to rounding: inv would fail or be noise)
        reason = singular_reason(S)
        exc = DataFormatError("S", None, f"the covariance is singular: {singular_text(reason)}; "
                              "no entry is penalised (alpha = 0), so the likelihood is unbounded: "
                              "use alpha > 0")
        exc.singular = reason           # for a caller that names the variables otherwise
        raise exc
    K = np.linalg.inv(S)
    K = 0.5 * (K + K.T)
    f = 2.0 * float(np.sum(np.log(np.diag(C)))) + n
    row = {"iteration": 0, "objective": f, "duality_gap": 0.0,
           "active_edges": int(n * (n - 1) // 2), "elapsed": time.perf_counter() - t0}
    return GaussianResult(precision=K, covariance=S.copy(), objective=f, dual_objective=f,
                          duality_gap=0.0, n_iter=0, converged=True, history=[row],
                          solver="closed-form", n_components=1, stop_reason="tol",
                          costs=[(f, 0.0)])


def _whole_costs(base, parts):
    """``(objective, gap)`` of the whole problem after each iteration: ``base`` (the
    closed-form part and the offset) plus every component's objective at that iteration
    (its last one once it has stopped). ``parts``: (history rows, the component's offset
    included in its rows, its result)."""
    steps = max((len(rows) for rows, _, _ in parts), default=0)
    if steps == 0:
        return [(float(base + sum(r.objective for _, _, r in parts)),
                 float(sum(r.duality_gap for _, _, r in parts)))]
    out = []
    for t in range(steps):
        f, g = base, 0.0
        for rows, off, r in parts:
            if rows:
                row = rows[min(t, len(rows) - 1)]
                f += float(row["objective"]) - off
                g += float(row.get("duality_gap", np.nan))
            else:
                f += r.objective
                g += r.duality_gap
        out.append((float(f), float(g)))
    return out


def solve_component(Ss, Ls, off, X0, kind, solver, control, fallback_tol=None, W0=None):
    """One screened component (standardised ``Ss``, ``Ls``; ``off`` its share of the
    objective's offset; ``X0`` a warm start or None, ``W0`` its inverse when known, see
    :func:`~.newton_cd.start_point`) by solver ``kind`` under ``control`` (a
    :class:`~.control.RunControl`). ``fallback_tol``: the tolerance of the
    projected-gradient hand-over of solver 'auto' (None: ``control.tol``). A warm
    start of the Newton solvers that is not positive definite is dropped."""
    if kind == "projected-gradient":
        from .projected_gradient import projected_gradient

        Sig0 = None if X0 is None else np.linalg.inv(X0)
        return projected_gradient(Ss, dense_weights(Ls), Sigma0=Sig0, control=control, offset=off)
    from .newton_cd import NotPositiveDefinite

    if kind == "newton-cd":
        from .newton_cd import newton_cd as newton
    else:
        from .newton_cg import newton_cg as newton
    try:
        res = newton(Ss, Ls, X0=X0, W0=W0, control=control, offset=off)
    except NotPositiveDefinite:
        if X0 is None:
            raise
        res = newton(Ss, Ls, control=control, offset=off)
    if res.converged or solver != "auto" or res.stop_reason in ("max_iter", "callback"):
        return res
    # no further progress on a badly conditioned problem: finish with the dual projected
    # gradient, started from the dual point of the iterate (five times its usual limit)
    from .projected_gradient import projected_gradient

    pg_control = dataclasses.replace(
        control, max_iter=solver_record("projected-gradient", "covariance").max_iter * 5)
    if fallback_tol is not None:
        pg_control = pg_control.with_tol(max(control.tol, fallback_tol))
    pg = projected_gradient(Ss, dense_weights(Ls), Sigma0=res.covariance, offset=off,
                            control=pg_control)
    for row in pg.history:
        row["phase"] = "projected-gradient"
    best = pg if pg.duality_gap <= res.duality_gap else res
    best.history = res.history + pg.history
    best.n_iter = res.n_iter + pg.n_iter
    best.solver = f"{res.solver}+projected-gradient"
    return best


def _map_components(client, parts, kind, solver, control, fallback_tol=None):
    """:func:`solve_component` of every ``(Ss, Ls, off, X0)`` as a task on the Dask
    workers (the matrices scattered, not embedded in the task graph); results in order."""
    client = cluster.resolve(client)
    cluster.workers(client)                     # a clear error when there are none
    remote = control.quiet()
    futures, sent = [], []
    for Ss, Ls, off, X0 in parts:
        arrays = client.scatter([Ss, Ls] if X0 is None else [Ss, Ls, X0], hash=False, direct=False)
        sent += arrays
        x0 = arrays[2] if X0 is not None else None
        futures.append(client.submit(solve_component, arrays[0], arrays[1], off, x0, kind, solver,
                                     remote, fallback_tol, pure=False))
    try:
        return client.gather(futures)
    finally:
        for f in sent:
            f.release()
