"""One entry point for every solver: validation, screening, dispatch.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> S = np.cov(rng.standard_normal((40, 6)).T, bias=True)
>>> res = solve_gaussian(S, 0.1)
>>> res.converged, res.solver
(True, 'newton-cd')
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .objective import penalty_matrix, validate_covariance
from .result import GaussianResult

__all__ = ["solve_gaussian", "SOLVERS"]

SOLVERS = ("auto", "newton-cd", "projected-gradient")
_DEFAULT_MAX_ITER = {"newton-cd": 100, "projected-gradient": 1000, "block-l1": 2000}


def _check_common(tol, max_iter):
    if not (isinstance(tol, (int, float, np.floating)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if max_iter is not None and (not isinstance(max_iter, (int, np.integer)) or max_iter < 1):
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")


def resolve_solver(solver, blocks):
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(map(repr, SOLVERS))}, got {solver!r}")
    if blocks is not None:
        if solver == "newton-cd":
            raise ValueError("solver='newton-cd' handles plain l1 weights only; block penalties "
                             "need solver='projected-gradient' (Algorithm 3) or 'auto'")
        return "block-l1"
    return "newton-cd" if solver == "auto" else solver


def solve_gaussian(S, alpha, *, blocks=None, solver="auto", tol=1e-6, atol=0.0,
                   max_iter=None, penalize_diagonal=False, block_weight="size",
                   screen=True, warm_start=None, n_jobs=1, step_rule="bb",
                   random_state=0, verbose=False, validated=False):
    """Solve the (block-)l1 penalised Gaussian maximum-likelihood problem.

    Parameters
    ----------
    S : (n, n) empirical covariance (symmetric, finite; may be singular).
    alpha : scalar, or (n, n) non-negative per-entry weights (plain l1 only).
    blocks : None for plain l1, else a block specification (see
        ``block_l1.make_block_penalty``).
    solver : 'auto' (Newton-CD for l1 — handing over to Algorithm 1 if Newton
        stalls on an ill-conditioned problem — and Algorithm 3 for blocks),
        'newton-cd', or 'projected-gradient' (Algorithm 1; Algorithm 3 with
        blocks).
    tol, atol : stop when the certified duality gap is <= max(atol, tol *
        max(1, |f|)) (per screened component).
    screen : split the l1 problem into the connected components of
        ``|S_ij| > L_ij`` (exact; ignored with blocks).
    warm_start : a previous :class:`GaussianResult` of the same size.
    n_jobs : threads used to solve screened components concurrently.
    step_rule : block-l1 only: 'bb' (default; Barzilai-Borwein initial step
        for the Armijo search of Algorithm 3) or 'paper' (line 22 of
        Algorithm 3: t grows by 1/beta after every accepted step).

    Returns
    -------
    GaussianResult
    """
    t0 = time.perf_counter()
    _check_common(tol, max_iter)
    if not (np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
    S = S if validated else validate_covariance(S)
    n = S.shape[0]
    kind = resolve_solver(solver, blocks)
    if max_iter is None:
        max_iter = _DEFAULT_MAX_ITER[kind]
    if warm_start is not None and warm_start.precision.shape != (n, n):
        warm_start = None
    if kind == "block-l1":
        from .block_l1 import block_l1_projected_gradient, make_block_penalty

        bp = make_block_penalty(blocks, n, alpha, block_weight=block_weight,
                                penalize_diagonal=penalize_diagonal)
        res = block_l1_projected_gradient(
            S, bp, Sigma0=None if warm_start is None else warm_start.covariance,
            tol=tol, atol=atol, max_iter=max_iter, random_state=random_state,
            step_rule=step_rule,
            t0=t0, verbose=verbose)
        return res
    L = penalty_matrix(alpha, n, penalize_diagonal)
    d = np.diag(S) + np.diag(L)
    if np.any(d <= 0):
        bad = int(np.flatnonzero(d <= 0)[0])
        raise ValueError(f"variable {bad} has zero variance and an unpenalised diagonal: the "
                         "likelihood is unbounded (remove constant columns or penalise the diagonal)")
    if screen:
        from .screening import screen_components

        comps = screen_components(S, L)
    else:
        comps = [np.arange(n)]

    def run(idx):
        sub = np.ix_(idx, idx)
        Ss, Ls = np.ascontiguousarray(S[sub]), np.ascontiguousarray(L[sub])
        if kind == "newton-cd":
            from .newton_cd import newton_cd

            X0 = None if warm_start is None else warm_start.precision[sub]
            if X0 is not None and np.linalg.eigvalsh(X0)[0] <= 0:
                X0 = None
            res = newton_cd(Ss, Ls, X0=X0, tol=tol, atol=atol, max_iter=max_iter,
                            stall_after=30 if solver == "auto" else None,
                            t0=t0, verbose=verbose)
            if res.converged or solver != "auto":
                return res
            # ill-conditioned problem: inexact Newton directions make slow
            # linear progress; finish with the dual projected gradient,
            # started from the dual point of the Newton iterate
            from .projected_gradient import projected_gradient

            pg = projected_gradient(Ss, Ls, Sigma0=res.covariance, tol=tol, atol=atol,
                                    max_iter=_DEFAULT_MAX_ITER["projected-gradient"] * 5,
                                    t0=t0, verbose=verbose)
            for row in pg.history:
                row["phase"] = "projected-gradient"
            best = pg if pg.duality_gap <= res.duality_gap else res
            best.history = res.history + pg.history
            best.n_iter = res.n_iter + pg.n_iter
            best.solver = "newton-cd+projected-gradient"
            return best
        from .projected_gradient import projected_gradient

        Sig0 = None if warm_start is None else warm_start.covariance[sub]
        return projected_gradient(Ss, Ls, Sigma0=Sig0, tol=tol, atol=atol,
                                  max_iter=max_iter, t0=t0, verbose=verbose)

    big = [c for c in comps if c.size > 1]
    singles = np.concatenate([c for c in comps if c.size == 1]) if len(big) < len(comps) \
        else np.zeros(0, dtype=np.int64)
    if n_jobs is not None and n_jobs != 1 and len(big) > 1:
        workers = None if n_jobs == -1 else int(n_jobs)
        with ThreadPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(run, big))
    else:
        results = [run(c) for c in big]
    if len(results) == 1 and not singles.size:
        res = results[0]
        res.n_components = 1
        return res
    K = np.zeros((n, n))
    C = np.zeros((n, n))
    ds = d[singles]
    K[singles, singles] = 1.0 / ds
    C[singles, singles] = ds
    f = float(np.sum(np.log(ds) + 1.0))
    g = f
    hist = []
    n_iter = 0
    converged = True
    for ci, (idx, r) in enumerate(zip(big, results)):
        sub = np.ix_(idx, idx)
        K[sub] = r.precision
        C[sub] = r.covariance
        f += r.objective
        g += r.dual_objective
        n_iter = max(n_iter, r.n_iter)
        converged &= bool(r.converged)
        for row in r.history:
            row = dict(row)
            row["component"] = ci
            hist.append(row)
    return GaussianResult(precision=K, covariance=C, objective=f, dual_objective=g,
                          duality_gap=f - g, n_iter=n_iter, converged=converged,
                          history=hist, solver=kind, n_components=len(comps))
