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
``types="c" * p``, the selected graph is IsingFit's.

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
from ..core.params import ParamsMixin, check_number
from ..errors import DataFormatError, NotFittedError, ParameterError
from .common import check_mixed_data, check_types, variable_names
from .nodewise import RULES, lambda_path, regression_path, run_nodes

__all__ = ["MixedGraphicalModel", "make_mixed_data", "mixed_gibbs_sample", "nodewise_mixed"]

def design(X, types):
    """The standardised design of ``X`` (see the module documentation). Returns ``(Z,
    gstart, scale, shift, levels, codes)``: ``Z`` (m, n) the columns, variable ``j``'s
    columns ``gstart[j]:gstart[j + 1]``; a column is ``(raw - shift) / scale`` where raw
    is the standardised continuous variable or a 0/1 dummy; ``levels[j]`` a categorical
    variable's sorted levels (None for a continuous one), ``codes[j]`` its level indices."""
    n, p = X.shape
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
            lv, code = np.unique(x, return_inverse=True)
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


def nodewise_mixed(X, types, *, gamma=0.25, n_lambdas=100, lambda_min_ratio=None, tol=1e-7, ebic_stop=True,
                   n_jobs=1, verbose=False, nodes=None):
    """Every variable of ``X`` (n, p; checked) regressed on the others (module
    documentation). Returns ``(coef, intercepts, lambdas, ebic, levels, gstart)`` as
    :class:`MixedGraphicalModel`'s attributes ``coef_``, ``intercepts_``, ``lambdas_``,
    ``ebic_``, ``levels_`` and ``groups_``; ``nodes``: only these variables' regressions
    (the others' entries stay None / 0 / NaN)."""
    n, p = X.shape
    Z, gstart, scale, shift, levels, codes = design(X, types)
    m = Z.shape[0]
    nl = int(n_lambdas)
    coef = [None] * p
    icpt = [None] * p
    lam = np.zeros(p)
    ebic = np.full((p, nl), np.nan)
    none_i = np.zeros(0, np.int64)
    none_f = np.zeros(0)

    def one(i):
        cand = m - (gstart[i + 1] - gstart[i])
        r = (0.01 if n < cand else 1e-4) if lambda_min_ratio is None else float(lambda_min_ratio)
        if types[i] == "g":
            kind, K, y, yk = 0, 1, np.ascontiguousarray(Z[gstart[i]]), none_i
            resid = y - y.mean()
        elif len(levels[i]) == 2:
            kind, K, yk = 1, 1, none_i
            y = codes[i].astype(np.float64)
            resid = y - y.mean()
        else:
            kind, K, y, yk = 2, len(levels[i]), none_f, codes[i]
            onehot = np.eye(K)[yk]
            resid = onehot - onehot.mean(axis=0)
        lams = lambda_path(Z, gstart, i, resid, nl, r)
        beta, b0, lam[i], ebic[i] = regression_path(Z, gstart, i, kind, y, yk, K, lams, gamma=gamma, tol=tol,
                                                    ebic_stop=ebic_stop)
        c = beta / scale[:, None]
        coef[i] = c
        icpt[i] = b0 - shift @ c

    run_nodes(one, range(p) if nodes is None else [int(i) for i in nodes], n_jobs, verbose, what="regression")
    return coef, icpt, lam, ebic, levels, gstart


class MixedGraphicalModel(ParamsMixin):
    """A mixed graphical model learnt node-wise (see the module documentation).

    Parameters
    ----------
    types : one entry per variable (a sequence or a string): ``"g"`` continuous
        (Gaussian), ``"c"`` categorical (integer levels, any values; 2 levels make a
        logistic regression, more a multinomial one). mgm's names.
    gamma : EBIC's gamma (default 0.25, mgm's and IsingFit's).
    rule : 'and' (default: an edge needs both regressions) or 'or'.
    n_lambdas, lambda_min_ratio, tol, ebic_stop : each regression's path, as
        :class:`~spargel.mrf.nodewise.IsingFit`'s (100 penalties down to 1e-4 of the
        first, 0.01 when there are fewer samples than candidate columns).
    n_jobs : threads over the variables (same result for any value; -1 one per CPU).
    verbose : the progress on stderr (about 20 lines).

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
        along the path (NaN past its end).

    Examples
    --------
    See the module documentation.
    """

    def __init__(self, types, gamma=0.25, rule="and", *, n_lambdas=100, lambda_min_ratio=None, tol=1e-7,
                 ebic_stop=True, n_jobs=1, verbose=False):
        self.types = types
        self.gamma = gamma
        self.rule = rule
        self.n_lambdas = n_lambdas
        self.lambda_min_ratio = lambda_min_ratio
        self.tol = tol
        self.ebic_stop = ebic_stop
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _check_params(self):
        if not isinstance(self.rule, str) or self.rule not in RULES:
            raise ParameterError(f"rule must be 'and' or 'or', got {self.rule!r}")
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
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_variables): continuous values and integer levels."""
        self._check_params()
        A = check_mixed_data(X)
        n, p = A.shape
        types = check_types(self.types, p)
        coef, icpt, lam, ebic, levels, gstart = nodewise_mixed(
            A, types, gamma=float(self.gamma), n_lambdas=int(self.n_lambdas), lambda_min_ratio=self.lambda_min_ratio,
            tol=float(self.tol), ebic_stop=bool(self.ebic_stop), n_jobs=self.n_jobs, verbose=self.verbose)
        # the edges, from the blocks of both regressions
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
        self.types_ = types
        self.levels_ = levels
        self.groups_ = gstart
        self.coef_ = coef
        self.intercepts_ = icpt
        self.lambdas_ = lam
        self.ebic_ = ebic
        self.adjacency_ = adj
        self.signs_ = signs
        self.edge_params_ = params
        self.edges_ = np.array(edges, np.int64).reshape(-1, 2)
        self.n_features_in_ = p
        self.n_samples_ = n
        return self

    def _check_fitted(self):
        if not hasattr(self, "edges_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def to_networkx(self, labels=None):
        """The selected graph as a ``networkx.Graph``: nodes with ``type`` ('g'/'c') and
        ``levels``, edges with ``weight`` (:attr:`adjacency_`) and ``sign``."""
        self._check_fitted()
        try:
            import networkx as nx
        except ImportError:
            from ..errors import CapabilityError
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
