"""Mixed graphical models: continuous and categorical variables together
(:class:`MixedGraphicalModel`), and samples of a known one (:func:`make_mixed_data`).

The model is Lee & Hastie's (2015) pairwise mixed model: Gaussian variables ``x_s``
and categorical ``y_r``,

    log p(x, y) = sum_s (alpha_s x_s - d_s x_s^2 / 2) + sum_{s<t} theta_st x_s x_t
                  + sum_{s,r} rho_sr(y_r) x_s + sum_r phi_r(y_r) + sum_{r<q} phi_rq(y_r, y_q) + c,

so every variable given all the others is a generalised linear model: a Gaussian
regression for ``x_s``, a (multinomial) logistic one for ``y_r``. Its graph is learnt
node-wise, as R's mgm does: every variable regressed on all the others, with the
predictors standardised (continuous variables as they are, after scaling; a categorical
variable with ``k`` levels as ``k - 1`` dummy columns of its levels but the first) and a
group-lasso penalty ``lam sqrt(m_g) ||beta_g||_2`` per predictor variable ``g`` (its
``m_g`` columns, over every class of a categorical response), so each edge's block of
parameters is in or out as a whole. Each regression's penalty is chosen on its own path
by its EBIC, ``-2 loglik + J log n + 2 gamma J log(m')`` (``J`` its non-zero
parameters, ``m'`` its candidate columns; a Gaussian's variance profiled out), and an
edge is kept when both regressions select it (``rule="and"``) or either (``"or"``).
The engine is IsingFit's (:mod:`.nodewise`): on binary data alone, with
``types="c" * p``, the selected graph is IsingFit's. Instead of each regression's EBIC,
``criterion="stars"`` chooses one point of the paths for all of them by StARS over
subsamples, and ``criterion="cv"`` each regression's penalty by its held-out
log-likelihood (:class:`MixedGraphicalModel`); ``levels=`` gives a categorical
variable's levels (and reference) instead of inferring them.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> n = 1000
>>> x0 = rng.normal(size=n)
>>> y1 = (rng.random(n) < 1 / (1 + np.exp(-2 * x0))).astype(int)      # x0 -- y1
>>> x2 = rng.normal(size=n)
>>> x3 = x2 + rng.normal(size=n)                                          # x2 -- x3
>>> y4 = rng.integers(0, 3, n)                                            # 3 levels, alone
>>> X = np.column_stack([x0, y1, x2, x3, y4])
>>> mgm = MixedGraphicalModel(types="gcggc").fit(X)
>>> mgm.edges_.tolist()
[[0, 1], [2, 3]]
>>> [len(lv) if lv is not None else None for lv in mgm.levels_]
[None, 2, None, None, 3]
>>> int(mgm.signs_[2, 3]), bool(mgm.adjacency_[2, 3] > 0.3)
(1, True)
"""

from __future__ import annotations

import numpy as np

from ..core.first_use import announces_compiles
from ..core.params import check_number, keep_arguments, ParamsMixin
from ..errors import CapabilityError, DataFormatError, NotFittedError, ParameterError
from ..core.interrupts import all_or_nothing
from .common import Cancelled, check_mixed_data, check_types, map_threads, variable_names
from .nodewise import RULES, lambda_path, regression_path, run_nodes
from .plot import plot_edge_stability

__all__ = ["MixedGraphicalModel", "cv_nodewise", "make_mixed_data", "mixed_gibbs_sample", "node_path",
           "nodewise_mixed", "stars_nodewise"]

def design(X, types, levels=None):
    """The standardised design of ``X`` (see the module documentation). Returns ``(Z,
    gstart, scale, shift, levels, codes)``: ``Z`` (m, n) the columns, variable ``j``'s
    columns ``gstart[j]:gstart[j + 1]``; a column is ``(raw - shift) / scale`` where raw
    is the standardised continuous variable or a 0/1 dummy; ``levels[j]`` a categorical
    variable's levels (None for a continuous one), ``codes[j]`` its level indices.
    ``levels``: per variable, a categorical variable's levels in the order to use (the
    first is the reference), or None to take its sorted distinct values
    (:func:`check_levels`); every value must be one of them, and each must occur."""
    n, p = X.shape
    given = [None] * p if levels is None else levels
    cols, scale, shift, gstart, levels, codes = [], [], [], [0], [], []
    for j in range(p):
        x = X[:, j]
        if types[j] == "g":
            sd = x.std()
            if not sd > 0:
                raise DataFormatError("X", None, f"column {j} (continuous) is constant")
            cols.append((x - x.mean()) / sd)
            scale.append(1.0)
            shift.append(0.0)
            levels.append(None)
            codes.append(None)
        else:
            frac = x != np.round(x)
            if frac.any():
                r = int(np.flatnonzero(frac)[0])
                raise DataFormatError("X", r + 1, f"column {j} (categorical): {x[r]} is not an integer level")
            if given[j] is None:
                lv, code = np.unique(x, return_inverse=True)
            else:
                lv = np.asarray(given[j], dtype=np.int64)
                order = np.argsort(lv, kind="stable")
                pos = np.searchsorted(lv[order], x)
                pos = np.minimum(pos, len(lv) - 1)
                bad = lv[order][pos] != x
                if bad.any():
                    r = int(np.flatnonzero(bad)[0])
                    raise DataFormatError("X", r + 1, f"column {j} (categorical): {x[r]:g} is not one of its "
                                          f"levels {lv.tolist()}")
                code = order[pos]
                unseen = np.setdiff1d(np.arange(len(lv)), code)
                if unseen.size:
                    raise DataFormatError("X", None, f"column {j} (categorical): level {int(lv[unseen[0]])} "
                                          f"never occurs")
            if len(lv) < 2:
                raise DataFormatError("X", None, f"column {j} (categorical) has a single level")
            levels.append(lv.astype(np.int64))
            codes.append(code.astype(np.int64))
            for a in range(1, len(lv)):
                d = (code == a).astype(np.float64)
                q, s = d.mean(), d.std()
                cols.append((d - q) / s)
                scale.append(s)
                shift.append(q)
        gstart.append(len(cols))
    Z = np.ascontiguousarray(np.array(cols))
    return Z, np.array(gstart, np.int64), np.array(scale), np.array(shift), levels, codes


CRITERIA = ("ebic", "stars", "cv")


def check_levels(levels, types):
    """``levels`` (:class:`MixedGraphicalModel`'s parameter) as a list of p entries: a
    categorical variable's levels (distinct integers, at least 2) or None."""
    p = len(types)
    if levels is None:
        return [None] * p
    if isinstance(levels, dict):
        bad = [k for k in levels if not isinstance(k, (int, np.integer)) or not 0 <= k < p]
        if bad:
            raise ParameterError(f"levels: {bad[0]!r} is not a column index in [0, {p})")
        levels = [levels.get(j) for j in range(p)]
    elif isinstance(levels, (str, bytes)) or not hasattr(levels, "__len__") or len(levels) != p:
        raise ParameterError(f"levels must be None, a dict {{column: levels}} or one entry per variable ({p}), "
                             f"got {levels!r}")
    out = []
    for j, lv in enumerate(levels):
        if lv is None:
            out.append(None)
            continue
        if types[j] != "c":
            raise ParameterError(f"levels[{j}]: column {j} is continuous; give None for it")
        try:
            a = np.asarray(lv, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise ParameterError(f"levels[{j}] must be integers, got {lv!r}") from None
        if a.size < 2 or np.any(a != np.round(a)) or len(np.unique(a)) != a.size:
            raise ParameterError(f"levels[{j}] must be at least 2 distinct integers, got {lv!r}")
        out.append(a.astype(np.int64))
    return out


def _response(Z, gstart, types, levels, codes, i, rows=None):
    """Regression ``i``'s response as :func:`~spargel.mrf.nodewise.regression_path`
    takes it from the design ``Z`` (standardised on the rows ``rows`` of the data, all
    if None): ``(kind, K, y, yk, resid)``, ``resid`` the null model's residuals (for the
    path's start). A categorical response needs every level among the rows."""
    if types[i] == "g":
        y = np.ascontiguousarray(Z[gstart[i]])
        return 0, 1, y, _NO_INT, y - y.mean()
    code = codes[i] if rows is None else codes[i][rows]
    K = len(levels[i])
    seen = np.bincount(code, minlength=K)
    if np.any(seen == 0):
        raise DataFormatError("X", None, f"column {i} (categorical): level {int(levels[i][np.argmin(seen)])} is "
                              f"missing from a subsample or training fold of {len(code)} rows (use larger "
                              f"subsamples or fewer folds)")
    if K == 2:
        y = code.astype(np.float64)
        return 1, 1, y, _NO_INT, y - y.mean()
    onehot = np.eye(K)[code]
    return 2, K, _NO_FLOAT, np.ascontiguousarray(code), onehot - onehot.mean(axis=0)


_NO_INT = np.zeros(0, np.int64)
_NO_FLOAT = np.zeros(0)


def _restandardised(Z, rows):
    """The design's columns on the rows ``rows``, standardised again on them (a column
    constant there stays 0: it never enters). Returns ``(Zr, mean, sd)``."""
    Zr = Z[:, rows]
    mu = Zr.mean(axis=1)
    sd = Zr.std(axis=1)
    sd = np.where(sd > 0, sd, 1.0)
    return np.ascontiguousarray((Zr - mu[:, None]) / sd[:, None]), mu, sd


def node_path(Z, gstart, i, kind, y, yk, K, lams, *, tol, gamma=0.25):
    """Regression ``i``'s whole path at the penalties ``lams`` (no EBIC stop): ``(beta,
    b0, done)``, ``beta`` (n_lambdas, m, K) and ``b0`` (n_lambdas, K) on the design's
    standardised columns; the points past ``done``, where glmnet's rules ended the path
    (the deviance explained barely moves), repeat its last point."""
    from .nodewise_kernels import PathOut, group_path, path_rules
    m = Z.shape[0]
    nl = len(lams)
    betas = np.zeros((nl, m * K))
    icpt = np.zeros((nl, K))
    eb = np.zeros(nl)
    nnz = np.zeros(nl, np.int64)
    done = group_path(Z, gstart, int(i), int(kind), y, yk, int(K), lams, path_rules(gamma, tol),
                      PathOut(betas, icpt, eb, nnz))
    betas[done:] = betas[done - 1]
    icpt[done:] = icpt[done - 1]
    return betas.reshape(nl, m, K), icpt, int(done)


def node_lambdas(Z, gstart, types, levels, codes, i, n_lambdas, lambda_min_ratio, top=None):
    """Regression ``i``'s penalties on all the data (glmnet's path, :func:`~spargel.mrf.nodewise.lambda_path`);
    ``top``: start there instead (the same ratio down)."""
    n = Z.shape[1]
    cand = Z.shape[0] - (gstart[i + 1] - gstart[i])
    r = (0.01 if n < cand else 1e-4) if lambda_min_ratio is None else float(lambda_min_ratio)
    if top is not None:
        return float(top) * np.geomspace(1.0, r, int(n_lambdas))
    resid = _response(Z, gstart, types, levels, codes, i)[4]
    return lambda_path(Z, gstart, i, resid, int(n_lambdas), r)


def nodewise_mixed(X, types, *, gamma=0.25, n_lambdas=100, lambda_min_ratio=None, tol=1e-7, ebic_stop=True,
                   n_jobs=1, verbose=False, nodes=None, levels=None, at=None, tops=None):
    """Every variable of ``X`` (n, p; checked) regressed on the others (module
    documentation). Returns ``(coef, intercepts, lambdas, ebic, levels, gstart)`` as
    :class:`MixedGraphicalModel`'s attributes ``coef_``, ``intercepts_``, ``lambdas_``,
    ``ebic_``, ``levels_`` and ``groups_``; ``nodes``: only these variables' regressions
    (the others' entries stay None / 0 / NaN). ``levels``: :func:`design`'s. ``at``: per
    variable, the index on its path of the penalty to keep (StARS's or CV's choice; the
    whole path is computed) instead of the EBIC's; ``tops``: per variable, where its path
    starts (default glmnet's, the smallest penalty that keeps the regression empty)."""
    n, p = X.shape
    Z, gstart, scale, shift, levels, codes = design(X, types, levels)
    nl = int(n_lambdas)
    coef = [None] * p
    icpt = [None] * p
    lam = np.zeros(p)
    ebic = np.full((p, nl), np.nan)

    def one(i):
        kind, K, y, yk, _ = _response(Z, gstart, types, levels, codes, i)
        lams = node_lambdas(Z, gstart, types, levels, codes, i, nl, lambda_min_ratio,
                            None if tops is None else tops[i])
        if at is None:
            beta, b0, lam[i], ebic[i] = regression_path(Z, gstart, i, kind, y, yk, K, lams, gamma=gamma, tol=tol,
                                                        ebic_stop=ebic_stop)
        else:
            betas, b0s, _ = node_path(Z, gstart, i, kind, y, yk, K, lams, tol=tol, gamma=gamma)
            k = int(at[i])
            beta, b0, lam[i] = betas[k], b0s[k], float(lams[k])
        c = beta / scale[:, None]
        coef[i] = c
        icpt[i] = b0 - shift @ c

    run_nodes(one, range(p) if nodes is None else [int(i) for i in nodes], n_jobs, verbose, what="regression")
    return coef, icpt, lam, ebic, levels, gstart


def _selected_groups(beta, gstart):
    """(n_lambdas, p) whether each path point's coefficients (n_lambdas, m, K) use a group."""
    return np.add.reduceat(np.any(beta != 0, axis=2), gstart[:-1], axis=1) > 0


def stars_nodewise(X, types, subsamples, *, levels=None, rule="and", n_lambdas=100, lambda_min_ratio=None,
                   tol=1e-7, n_jobs=1, verbose=False):
    """StARS over the node-wise paths: every regression's penalties, from the largest of
    the penalties that keep it empty on all the data and on each subsample (so that the
    path starts at the empty graph everywhere: a subsample's gradients are noisier than
    all the data's) geometrically down to ``lambda_min_ratio`` of it, so point ``k`` is
    the same fraction of every variable's start; every subsample's regressions down
    them (the design's columns standardised again on the subsample), the graph of every
    point by ``rule``. Returns ``(counts, tops)``: ``counts`` (n_lambdas, p, p) how many
    subsamples have each edge at each point (summed in subsample order: the same for
    any ``n_jobs``), ``tops`` (p,) the paths' starts."""
    import threading

    n, p = X.shape
    Z, gstart, _, _, levels, codes = design(X, types, levels)
    nl = int(n_lambdas)
    tops = np.array([node_lambdas(Z, gstart, types, levels, codes, i, 1, lambda_min_ratio)[0] for i in range(p)])
    for rows in subsamples:
        Zr, _, _ = _restandardised(Z, rows)
        for i in range(p):
            resid = _response(Zr, gstart, types, levels, codes, i, rows)[4]
            tops[i] = max(tops[i], lambda_path(Zr, gstart, i, resid, 1, 0.5)[0])
    lams = [node_lambdas(Z, gstart, types, levels, codes, i, nl, lambda_min_ratio, tops[i]) for i in range(p)]
    cancel = threading.Event()
    done = [0]
    lock = threading.Lock()

    def one(rows):
        Zr, _, _ = _restandardised(Z, rows)
        sel = np.zeros((nl, p, p), bool)
        for i in range(p):
            if cancel.is_set():
                raise Cancelled
            kind, K, y, yk, _ = _response(Zr, gstart, types, levels, codes, i, rows)
            beta, _, _ = node_path(Zr, gstart, i, kind, y, yk, K, lams[i], tol=tol)
            sel[:, i, :] = _selected_groups(beta, gstart)
        sel[:, np.arange(p), np.arange(p)] = False
        edges = (sel & sel.transpose(0, 2, 1)) if rule == "and" else (sel | sel.transpose(0, 2, 1))
        if verbose:
            import sys
            with lock:
                done[0] += 1
                print(f"StARS subsample {done[0]}/{len(subsamples)}", file=sys.stderr, flush=True)
        return edges

    counts = np.zeros((nl, p, p))
    for e in map_threads(one, subsamples, n_jobs, cancel):
        counts += e
    return counts, tops


def cv_nodewise(X, types, folds, *, levels=None, n_lambdas=100, lambda_min_ratio=None, tol=1e-7, n_jobs=1,
                verbose=False):
    """Cross-validation of every regression's penalty: each fold's training rows fitted
    down the variable's path (penalties from all the data; the design standardised again
    on the training rows), scored on the held-out rows by the negative log-likelihood
    per sample: a categorical variable's log loss, a continuous one's Gaussian with unit
    variance on its standardised scale (half the mean squared error plus
    ``log(2 pi) / 2``). Returns (folds, p, n_lambdas)."""
    import threading

    n, p = X.shape
    Z, gstart, _, _, levels, codes = design(X, types, levels)
    nl = int(n_lambdas)
    lams = [node_lambdas(Z, gstart, types, levels, codes, i, nl, lambda_min_ratio) for i in range(p)]
    cancel = threading.Event()

    def one(f):
        test = folds[f]
        train = np.setdiff1d(np.arange(n), test)
        Zr, mu, sd = _restandardised(Z, train)
        Zt = (Z[:, test] - mu[:, None]) / sd[:, None]
        out = np.empty((p, nl))
        for i in range(p):
            if cancel.is_set():
                raise Cancelled
            kind, K, y, yk, _ = _response(Zr, gstart, types, levels, codes, i, train)
            beta, b0, _ = node_path(Zr, gstart, i, kind, y, yk, K, lams[i], tol=tol)
            eta = b0[:, None, :] + np.einsum("mt,kmc->ktc", Zt, beta)       # (n_lambdas, n_test, K)
            if kind == 0:
                r = Zt[gstart[i]][None, :] - eta[:, :, 0]
                out[i] = 0.5 * (r * r).mean(axis=1) + 0.5 * np.log(2 * np.pi)
            elif kind == 1:
                yt = codes[i][test]
                e = eta[:, :, 0]
                out[i] = (np.logaddexp(0.0, e) - yt[None, :] * e).mean(axis=1)
            else:
                yt = codes[i][test]
                lse = np.logaddexp.reduce(eta, axis=2)
                out[i] = (lse - eta[:, np.arange(len(test)), yt]).mean(axis=1)
        if verbose:
            import sys
            print(f"CV fold {f + 1} of {len(folds)}", file=sys.stderr, flush=True)
        return out

    return np.array(map_threads(one, list(range(len(folds))), n_jobs, cancel))


class MixedGraphicalModel(ParamsMixin):
    """A mixed graphical model learnt node-wise (see the module documentation).

    Parameters
    ----------
    types : one entry per variable (a sequence or a string): ``"g"`` continuous
        (Gaussian), ``"c"`` categorical (integer levels, any values; 2 levels make a
        logistic regression, more a multinomial one). mgm's names.
    criterion : how each regression's penalty is chosen on its path:

        * ``'ebic'`` (default): each regression's own EBIC (below);
        * ``'stars'`` (Liu, Roeder & Wasserman 2010): one point ``k`` of the paths for
          all the regressions (each path runs from its own largest penalty down to
          ``lambda_min_ratio`` of it, so point ``k`` is the same fraction of each);
          ``n_subsamples`` subsamples of ``subsample_size`` rows (default ``10 sqrt(N)``
          when ``N > 144``, else ``0.8 N``; drawn first from ``random_state``), every
          regression fitted down its path on each (the design standardised again on the
          subsample), the graph of every point by ``rule``; the instability
          ``4 mean_{i<j} f (1 - f)`` (``f``: the fraction of subsamples with the edge) per
          point, and the last point before it first reaches ``stars_threshold``;
        * ``'cv'``: each regression's penalty by ``cv``-fold cross-validation (mgm's
          ``lambdaSel="CV"``): the held-out negative log-likelihood per sample of the
          regression (a categorical variable's log loss; a continuous one's Gaussian with
          unit variance on its standardised scale), smallest mean over the folds.
    levels : None (default: each categorical variable's sorted distinct values), or per
        variable its levels in the order to use, the first the reference (None for a
        continuous one, or to infer): a sequence of p entries or a dict ``{column:
        levels}``. A value outside its variable's levels, or a level that never occurs,
        is an error naming the row and column.
    gamma : EBIC's gamma (default 0.25, mgm's and IsingFit's).
    rule : 'and' (default: an edge needs both regressions) or 'or'.
    n_lambdas, lambda_min_ratio, tol, ebic_stop : each regression's path, as
        :class:`~spargel.mrf.nodewise.IsingFit`'s (100 penalties down to 1e-4 of the
        first, 0.01 when there are fewer samples than candidate columns).
    n_subsamples, subsample_size, stars_threshold : StARS's (default 20 subsamples,
        threshold 0.1, as R's huge).
    cv : folds of ``'cv'`` (default 5).
    random_state : seed of StARS's subsamples and CV's folds.
    n_jobs : threads over the variables (EBIC), the subsamples (StARS) or the folds
        (CV); the same result for any value; -1 one per CPU.
    verbose : the progress on stderr (about 20 lines).

    Ctrl-C (``KeyboardInterrupt``) cancels the queued regressions, subsamples or folds
    and propagates; the estimator keeps nothing of the interrupted fit.

    Attributes
    ----------
    edges_ : (E, 2) the edges ``i < j``.
    adjacency_ : (p, p) symmetric edge weights: the mean absolute value of the edge's
        parameters in both regressions (a regression that did not select it counts as
        zeros under ``"or"``), 0 without an edge.
    signs_ : (p, p) the sign of an edge whose parameters are single numbers (between
        continuous and binary variables: the sign of the sum of the two), 0 where it has
        none (a categorical variable of more than 2 levels) or no edge.
    edge_params_ : dict ``(i, j) -> (B_ij, B_ji)`` for every edge: ``B_ij`` the block of
        the regression of ``i`` for the columns of ``j``, shape ``(m_j, K_i)`` (``m_j``
        columns of ``j``: 1, or ``k - 1`` dummies; ``K_i`` 1, or ``k`` classes of a
        multinomial ``i``).
    coef_ : list of p arrays (m, K_i): each regression's parameters for every design
        column (zero on its own), continuous variables in standard units, dummies 0/1.
    intercepts_ : list of p arrays (K_i,).
    groups_ : (p + 1,) variable ``j``'s design columns are ``groups_[j]:groups_[j + 1]``.
    levels_ : per variable, a categorical one's sorted levels (None for a continuous one).
    lambdas_ : (p,) each regression's chosen penalty; ebic_ : (p, n_lambdas) its EBIC
        along the path (NaN past its end; EBIC only).
    path_index_ : (p,) the index of each regression's chosen penalty on its path.
    criterion_scores_ : StARS: (n_lambdas,) the instability per point; CV: (p,
        n_lambdas) each regression's mean held-out score; EBIC: ``ebic_``.
    edge_frequency_ : StARS only, (p, p) the fraction of subsamples with each edge at
        the chosen point; cv_scores_ : CV only, (folds, p, n_lambdas).

    Examples
    --------
    See the module documentation.
    """

    def __init__(self, types, gamma=0.25, rule="and", *, criterion="ebic", levels=None, n_lambdas=100,
                 lambda_min_ratio=None, tol=1e-7, ebic_stop=True, n_subsamples=20, subsample_size=None,
                 stars_threshold=0.1, cv=5, random_state=None, n_jobs=1, verbose=False):
        keep_arguments(self, locals())

    def _check_params(self):
        if not isinstance(self.rule, str) or self.rule not in RULES:
            raise ParameterError(f"rule must be 'and' or 'or', got {self.rule!r}")
        if not isinstance(self.criterion, str) or self.criterion not in CRITERIA:
            raise ParameterError(f"criterion must be one of {', '.join(map(repr, CRITERIA))}, got {self.criterion!r}")
        check_number("n_subsamples", self.n_subsamples, low=1, integer=True)
        check_number("subsample_size", self.subsample_size, low=3, integer=True, allow_none=True)
        check_number("stars_threshold", self.stars_threshold)
        check_number("cv", self.cv, low=2, integer=True)
        check_number("gamma", self.gamma)
        check_number("n_lambdas", self.n_lambdas, low=1, integer=True)
        check_number("tol", self.tol)
        check_number("n_jobs", self.n_jobs, low=-1, integer=True, allow_none=True)
        if self.n_jobs == 0:
            raise ParameterError("n_jobs must be a positive number of threads or -1, got 0")
        if self.lambda_min_ratio is not None:
            check_number("lambda_min_ratio", self.lambda_min_ratio)
            if not 0 < self.lambda_min_ratio < 1:
                raise ParameterError(f"lambda_min_ratio must be in (0, 1), got {self.lambda_min_ratio!r}")

    @announces_compiles
    @all_or_nothing
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_variables): continuous values and integer levels."""
        self._check_params()
        A = check_mixed_data(X)
        n, p = A.shape
        types = check_types(self.types, p)
        given = check_levels(self.levels, types)
        nl = int(self.n_lambdas)
        path = dict(n_lambdas=nl, lambda_min_ratio=self.lambda_min_ratio, tol=float(self.tol), n_jobs=self.n_jobs,
                    verbose=self.verbose, levels=given)
        rng = np.random.default_rng(self.random_state)
        extra = {}
        at = tops = None
        if self.criterion == "stars":
            from ..core.selection import default_subsample_size, stars_choice, stars_variability
            size = default_subsample_size(n) if self.subsample_size is None else int(self.subsample_size)
            if not 3 <= size <= n:
                raise ParameterError(f"subsample_size must be in [3, {n}], got {size}")
            subs = [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(int(self.n_subsamples))]
            counts, tops = stars_nodewise(A, types, subs, rule=self.rule, **path)
            iu = np.triu_indices(p, 1)
            scores = stars_variability(counts[:, iu[0], iu[1]], len(subs))
            k = stars_choice(scores, float(self.stars_threshold))
            at = np.full(p, k)
            extra = {"criterion_scores_": scores, "edge_frequency_": counts[k] / len(subs)}
        elif self.criterion == "cv":
            k = int(self.cv)
            if k > n:
                raise ParameterError(f"cv={k} folds need at least {k} samples, got {n}")
            perm = rng.permutation(n)
            folds = [np.sort(perm[f::k]) for f in range(k)]
            cvs = cv_nodewise(A, types, folds, **path)
            scores = cvs.mean(axis=0)
            at = np.argmin(scores, axis=1)
            extra = {"criterion_scores_": scores, "cv_scores_": cvs}
        coef, icpt, lam, ebic, levels, gstart = nodewise_mixed(
            A, types, gamma=float(self.gamma), ebic_stop=bool(self.ebic_stop), at=at, tops=tops, **path)
        if at is None:
            extra = {"criterion_scores_": ebic}
            at = np.array([int(np.nanargmin(e)) for e in ebic])
        for name in ("criterion_scores_", "edge_frequency_", "cv_scores_"):
            self.__dict__.pop(name, None)                   # an earlier fit's
        self.__dict__.update(extra)
        self.path_index_ = np.asarray(at, np.int64)
        self.types_ = types
        self.levels_ = levels
        self.groups_ = gstart
        self.coef_ = coef
        self.intercepts_ = icpt
        self.lambdas_ = lam
        self.ebic_ = ebic
        self._set_graph()
        self.n_samples_ = n
        return self

    def _set_graph(self):
        """The edges from the blocks of both regressions (``coef_``, ``groups_``) by the
        rule: ``adjacency_``, ``signs_``, ``edge_params_``, ``edges_``."""
        coef, gstart = self.coef_, self.groups_
        p = len(coef)
        sel = np.array([np.add.reduceat((c != 0).any(axis=1), gstart[:-1]) > 0 for c in coef])
        np.fill_diagonal(sel, False)
        keep = (sel & sel.T) if self.rule == "and" else (sel | sel.T)
        adj = np.zeros((p, p))
        signs = np.zeros((p, p), np.int64)
        params = {}
        edges = []
        for i, j in np.argwhere(np.triu(keep, 1)).tolist():
            bij = coef[i][gstart[j]:gstart[j + 1]].copy()
            bji = coef[j][gstart[i]:gstart[i + 1]].copy()
            both = np.concatenate([bij.ravel(), bji.ravel()])
            adj[i, j] = adj[j, i] = float(np.abs(both).mean())
            if bij.size == 1 and bji.size == 1:
                signs[i, j] = signs[j, i] = int(np.sign(both.sum()))
            params[(i, j)] = (bij, bji)
            edges.append((i, j))
        self.adjacency_ = adj
        self.signs_ = signs
        self.edge_params_ = params
        self.edges_ = np.array(edges, np.int64).reshape(-1, 2)
        self.n_features_in_ = p

    # -- model files ----------------------------------------------------------------------
    _OPTIONAL = ("ebic_", "criterion_scores_", "edge_frequency_", "cv_scores_")

    def save(self, path):
        """Write the fitted model to ``path`` (spargel's model file: arrays and a checked
        header, no pickle; atomic). :meth:`load` reads it back, the graph recomputed
        from the regressions' coefficients by ``rule``."""
        from ..core import model_file as io
        self._check_fitted()
        lv = [np.zeros(0, np.int64) if v is None else np.asarray(v, np.int64) for v in self.levels_]
        arrays = {
            "types": (self.types_ == "c").astype(np.uint8),
            "levels": np.concatenate(lv), "levels_count": np.array([len(v) for v in lv], np.int64),
            "groups": np.asarray(self.groups_, np.int64),
            "coef": np.concatenate([c.ravel() for c in self.coef_]),
            "intercepts": np.concatenate([b.ravel() for b in self.intercepts_]),
            "lambdas": np.asarray(self.lambdas_, np.float64), "path_index": np.asarray(self.path_index_, np.int64),
        }
        for name in self._OPTIONAL:
            if getattr(self, name, None) is not None:
                arrays[name.rstrip("_")] = np.asarray(getattr(self, name), np.float64)
        params = {k: v for k, v in self.get_params().items()
                  if k not in ("types", "levels") and isinstance(v, (int, float, str, bool, type(None)))}
        io.save_arrays(path, "mixed-graph", {"params": params, "n_samples": int(self.n_samples_)}, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`; every array is checked against the
        others (shapes, level counts, finite values) before the model is built."""
        from ..core import model_file as io
        meta, a = io.load_arrays(path, "mixed-graph")
        for name in ("types", "levels", "levels_count", "groups", "coef", "intercepts", "lambdas", "path_index"):
            io.require(name in a and a[name].ndim == 1, path, f"array {name!r} missing or not flat")
        t, counts, groups = a["types"], a["levels_count"], a["groups"]
        p = len(t)
        io.require(p >= 2 and t.dtype.kind in "ui" and np.all((t == 0) | (t == 1)), path,
                   "types must be 0 (continuous) or 1 (categorical), at least 2 of them")
        io.require(counts.dtype.kind == "i" and counts.shape == (p,) and np.all(np.where(t == 1, counts >= 2,
                                                                                          counts == 0)), path,
                   "levels_count must be >= 2 for a categorical variable and 0 for a continuous one")
        io.require(a["levels"].dtype.kind == "i" and len(a["levels"]) == int(counts.sum()), path,
                   "levels do not match levels_count")
        cols = np.where(t == 1, counts - 1, 1)
        io.require(groups.dtype.kind == "i" and groups.shape == (p + 1,) and groups[0] == 0
                   and np.array_equal(np.diff(groups), cols), path, "groups do not match the variables")
        m = int(groups[-1])
        K = np.where((t == 1) & (counts > 2), counts, 1)
        for name, size in (("coef", int(m * K.sum())), ("intercepts", int(K.sum())), ("lambdas", p),
                           ("path_index", p)):
            io.require(a[name].shape == (size,) and np.all(np.isfinite(a[name])), path,
                       f"{name} must hold {size} finite values")
        io.require(a["coef"].dtype == np.float64 and a["intercepts"].dtype == np.float64, path,
                   "coef and intercepts must be float64")
        params = meta.get("params", {})
        io.require(isinstance(params, dict), path, "params must be a mapping")
        types = np.where(t == 1, "c", "g")
        est = cls("".join(types), **{k: v for k, v in params.items() if k in cls._param_names() and k != "types"})
        try:
            est._check_params()
        except (ValueError, TypeError) as exc:
            raise io.ModelFileError(f"{path}: invalid model (params: {exc})") from None
        n = meta.get("n_samples")
        io.require(isinstance(n, int) and not isinstance(n, bool) and n >= 3, path, "n_samples must be an integer >= 3")
        split = np.cumsum(counts)[:-1]
        est.types_ = types
        est.levels_ = [lv.copy() if c else None for lv, c in zip(np.split(a["levels"], split), counts)]
        est.groups_ = groups.astype(np.int64)
        coef_split = np.cumsum(m * K)[:-1]
        est.coef_ = [c.reshape(m, k).copy() for c, k in zip(np.split(a["coef"], coef_split), K)]
        for i in range(p):
            io.require(np.all(est.coef_[i][groups[i]:groups[i + 1]] == 0), path,
                       f"regression {i} has coefficients on its own columns")
        est.intercepts_ = [b.copy() for b in np.split(a["intercepts"], np.cumsum(K)[:-1])]
        est.lambdas_ = a["lambdas"].astype(np.float64)
        est.path_index_ = a["path_index"].astype(np.int64)
        for name in cls._OPTIONAL:
            if name.rstrip("_") in a:
                est.__dict__[name] = a[name.rstrip("_")].astype(np.float64)
        if "ebic_" not in est.__dict__:
            est.ebic_ = None
        est._set_graph()
        est.n_samples_ = n
        return est

    def _check_fitted(self):
        if not hasattr(self, "edges_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def plot(self, stability=None, **kwargs):
        """Draw the selected graph with each edge's stability (needs matplotlib): width by
        weight, colour and opacity by inclusion frequency (``stability``: an
        :class:`~spargel.mrf.stability.EdgeStability` or a (p, p) matrix; default StARS's
        :attr:`edge_frequency_` when it chose the penalty; see
        :func:`~spargel.mrf.plot.plot_edge_stability`). Returns the axes."""
        self._check_fitted()
        return plot_edge_stability(self, stability, **kwargs)

    def to_networkx(self, labels=None):
        """The selected graph as a ``networkx.Graph``: nodes with ``type`` ('g'/'c') and
        ``levels``, edges with ``weight`` (:attr:`adjacency_`) and ``sign``."""
        self._check_fitted()
        try:
            import networkx as nx
        except ImportError:
            raise CapabilityError("to_networkx needs networkx (pip install networkx)") from None
        names = variable_names(self, labels)
        G = nx.Graph()
        for j, name in enumerate(names):
            lv = self.levels_[j]
            G.add_node(name, type=str(self.types_[j]), levels=None if lv is None else lv.tolist())
        for i, j in self.edges_:
            G.add_edge(names[i], names[j], weight=float(self.adjacency_[i, j]), sign=int(self.signs_[i, j]))
        return G


# --- known mixed models and samples of them ---------------------------------------


def mixed_gibbs_sample(types, levels, edges, params, n, *, alpha=None, burn_in=200, seed=0):
    """``n`` independent samples of the pairwise mixed model (module documentation) by
    Gibbs sampling: ``n`` chains run ``burn_in`` sweeps from independent starts, each
    giving one sample (vectorised over the chains). ``types``: 'g'/'c' per variable;
    ``levels[j]``: a categorical variable's number of levels (ignored for 'g');
    ``params[e]`` for edge ``edges[e] = (i, j)``: a number ``theta`` between two
    continuous variables; a vector over the levels of the categorical one between a
    continuous and a categorical one (``rho``); a (levels_i, levels_j) table between two
    categorical ones. The continuous variables' precision is ``d_s = 1 + sum |theta_st|``
    on the diagonal (so the model is proper) and ``-theta`` off it. ``alpha``: per
    variable, a continuous one's linear term or a categorical one's level potentials
    (default zeros). Returns X (n, p), categorical levels as 0..k-1."""
    rng = np.random.default_rng(seed)
    types = list(types)
    p = len(types)
    nbr = [[] for _ in range(p)]             # (other, parameter oriented from here)
    d = np.ones(p)
    for (i, j), par in zip(np.asarray(edges).tolist(), params):
        par = np.asarray(par, dtype=float)
        if types[i] == "g" and types[j] == "g":
            d[i] += abs(float(par))
            d[j] += abs(float(par))
            nbr[i].append((j, float(par)))
            nbr[j].append((i, float(par)))
        elif types[i] == "c" and types[j] == "c":
            nbr[i].append((j, par))
            nbr[j].append((i, par.T))
        else:
            nbr[i].append((j, par))
            nbr[j].append((i, par))
    X = np.zeros((n, p))
    for j in range(p):
        X[:, j] = rng.normal(size=n) if types[j] == "g" else rng.integers(0, int(levels[j]), n)
    if alpha is None:
        alpha = [0.0 if t == "g" else np.zeros(int(levels[j])) for j, t in enumerate(types)]
    for _ in range(int(burn_in)):
        for s in range(p):
            if types[s] == "g":
                mean = np.full(n, float(alpha[s]))
                for t, par in nbr[s]:
                    mean += par * X[:, t] if types[t] == "g" else par[X[:, t].astype(np.int64)]
                X[:, s] = mean / d[s] + rng.normal(size=n) / np.sqrt(d[s])
            else:
                logit = np.tile(np.asarray(alpha[s], float), (n, 1))
                for t, par in nbr[s]:
                    logit += np.outer(X[:, t], par) if types[t] == "g" else par[:, X[:, t].astype(np.int64)].T
                logit -= logit.max(axis=1, keepdims=True)
                pr = np.exp(logit)
                pr /= pr.sum(axis=1, keepdims=True)
                u = rng.random(n)[:, None]
                X[:, s] = np.minimum((np.cumsum(pr, axis=1) < u).sum(axis=1), pr.shape[1] - 1)
    return X


def make_mixed_data(n, types, n_edges, *, levels=2, low=0.5, high=1.0, cc_range=None, burn_in=200, seed=0):
    """A random mixed graph of ``n_edges`` edges over variables of ``types`` ('g'/'c'
    per variable), parameters of magnitude ``low``..``high`` with random signs (a
    categorical variable's first level is the reference: its entries are 0), and ``n``
    Gibbs samples of it (:func:`mixed_gibbs_sample`). ``levels``: categorical variables'
    number of levels (one for all, or per variable). ``cc_range``: ``(low, high)`` of the
    parameters between two categorical variables, if not the same (an interaction
    between two binary variables in 0/1 coding carries less information than one of
    the same size with a continuous variable). Returns ``(X, edges, params)``."""
    rng = np.random.default_rng(seed)
    types = list(types)
    p = len(types)
    lv = np.broadcast_to(np.asarray(levels, np.int64), (p,)) if np.ndim(levels) == 0 else np.asarray(levels)
    pairs = set()
    if n_edges > p * (p - 1) // 2:
        raise ParameterError(f"{n_edges} edges do not fit in {p} variables")
    while len(pairs) < n_edges:
        i, j = sorted(rng.choice(p, 2, replace=False).tolist())
        pairs.add((i, j))
    edges = np.array(sorted(pairs), np.int64).reshape(-1, 2)

    def draw(shape, lo=low, hi=high):
        return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)

    cc_lo, cc_hi = (low, high) if cc_range is None else cc_range

    params = []
    for i, j in edges.tolist():
        if types[i] == "g" and types[j] == "g":
            params.append(float(draw(())))
        elif types[i] == "c" and types[j] == "c":
            t = np.zeros((lv[i], lv[j]))
            t[1:, 1:] = draw((lv[i] - 1, lv[j] - 1), cc_lo, cc_hi)
            params.append(t)
        else:
            k = lv[j] if types[j] == "c" else lv[i]
            v = np.zeros(k)
            v[1:] = draw(k - 1)
            params.append(v)
    X = mixed_gibbs_sample(types, lv, edges, params, n, burn_in=burn_in, seed=seed)
    return X, edges, params
