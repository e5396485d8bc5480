"""A mixed graphical model's penalties chosen by StARS or cross-validation, each against a
direct loop over the subsamples / folds and the variables; categorical levels given by
the user (``levels=``)."""

import numpy as np
import pytest

from spargel.core.selection import default_subsample_size
from spargel.errors import DataFormatError, ParameterError
from spargel.mrf.mixed import MixedGraphicalModel, design, make_mixed_data, node_path
from spargel.mrf.nodewise import lambda_path


def f1(truth, found):
    t, f = set(map(tuple, np.asarray(truth).tolist())), set(map(tuple, np.asarray(found).tolist()))
    return 2 * len(t & f) / (len(t) + len(f))


@pytest.fixture(scope="module")
def mixed30():
    types = "gc" * 15
    X, edges, _ = make_mixed_data(1000, types, 30, seed=0)
    return types, X, edges


@pytest.fixture(scope="module")
def small():
    types = "gcgccg"
    X, edges, _ = make_mixed_data(400, types, 6, levels=[2, 2, 2, 3, 4, 2], seed=4)
    return types, X, edges


def _response(Z, gstart, types, codes, levels, i, rows):
    """kind, K, y, yk and the null residuals of regression i on a design restandardised on rows."""
    if types[i] == "g":
        y = np.ascontiguousarray(Z[gstart[i]])
        return 0, 1, y, np.zeros(0, np.int64), y - y.mean()
    code = codes[i][rows]
    K = len(levels[i])
    if K == 2:
        y = code.astype(float)
        return 1, 1, y, np.zeros(0, np.int64), y - y.mean()
    onehot = np.eye(K)[code]
    return 2, K, np.zeros(0), np.ascontiguousarray(code), onehot - onehot.mean(axis=0)


def _restandardise(Z, rows):
    Zr = Z[:, rows]
    mu, sd = Zr.mean(axis=1), Zr.std(axis=1)
    sd[sd == 0] = 1
    return np.ascontiguousarray((Zr - mu[:, None]) / sd[:, None]), mu, sd


def _graph(sel, rule):
    sel = sel.copy()
    np.fill_diagonal(sel, False)
    return (sel & sel.T) if rule == "and" else (sel | sel.T)


def _groups(beta, gstart):
    return np.array([np.any(beta[gstart[g]:gstart[g + 1]] != 0) for g in range(len(gstart) - 1)])


def test_stars_is_the_direct_loop_over_subsamples(mixed30):
    types, X, edges = mixed30
    n, p = X.shape
    nl, thr = 30, 0.05
    fit = MixedGraphicalModel(types, criterion="stars", n_lambdas=nl, n_subsamples=6, stars_threshold=thr,
                              random_state=7).fit(X)
    # the subsamples as documented: drawn first from random_state
    rng = np.random.default_rng(7)
    size = default_subsample_size(n)
    subs = [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(6)]
    Z, gstart, _, _, levels, codes = design(X, np.array(list(types)))
    ratio = 1e-4
    tops = np.zeros(p)
    for rows in [np.arange(n)] + subs:                  # the paths start where every fit is empty
        Zr, _, _ = _restandardise(Z, rows)
        for i in range(p):
            resid = _response(Zr, gstart, types, codes, levels, i, rows)[4]
            tops[i] = max(tops[i], lambda_path(Zr, gstart, i, resid, 1, 0.5)[0])
    counts = np.zeros((nl, p, p))
    for rows in subs:
        Zr, _, _ = _restandardise(Z, rows)
        sel = np.zeros((nl, p, p), bool)
        for i in range(p):
            kind, K, y, yk, _ = _response(Zr, gstart, types, codes, levels, i, rows)
            beta, _, _ = node_path(Zr, gstart, i, kind, y, yk, K, tops[i] * np.geomspace(1, ratio, nl), tol=1e-7)
            for k in range(nl):
                sel[k, i] = _groups(beta[k], gstart)
        for k in range(nl):
            counts[k] += _graph(sel[k], "and")
    iu = np.triu_indices(p, 1)
    f = counts[:, iu[0], iu[1]] / 6
    instability = 4 * (f * (1 - f)).mean(axis=1)
    assert np.allclose(fit.criterion_scores_, instability)
    assert instability[0] == 0                            # the empty graph everywhere
    over = np.flatnonzero(instability >= thr)
    k = max(over[0] - 1, 0) if over.size else nl - 1
    assert np.all(fit.path_index_ == k)
    assert np.allclose(fit.edge_frequency_, counts[k] / 6)
    # the model: every regression on all the data at point k
    sel = np.zeros((p, p), bool)
    for i in range(p):
        kind, K, y, yk, _ = _response(Z, gstart, types, codes, levels, i, np.arange(n))
        beta, _, _ = node_path(Z, gstart, i, kind, y, yk, K, tops[i] * np.geomspace(1, ratio, nl), tol=1e-7)
        sel[i] = _groups(beta[k], gstart)
        assert fit.lambdas_[i] == pytest.approx(tops[i] * ratio ** (k / (nl - 1)))
    assert np.array_equal(fit.edges_, np.argwhere(np.triu(_graph(sel, "and"), 1)))
    assert f1(edges, fit.edges_) >= 0.8
    # the same subsamples on two threads: the same fit
    two = MixedGraphicalModel(types, criterion="stars", n_lambdas=nl, n_subsamples=6, stars_threshold=thr,
                              random_state=7, n_jobs=2).fit(X)
    assert np.array_equal(two.criterion_scores_, fit.criterion_scores_)
    assert np.array_equal(two.edges_, fit.edges_)


def _held_out(kind, beta, b0, Zt, yt_row, yt):
    """Held-out negative log-likelihood per sample, written plainly."""
    eta = b0[None, :] + Zt.T @ beta                      # (n_test, K)
    if kind == 0:
        return float(np.mean(0.5 * (yt_row - eta[:, 0]) ** 2) + 0.5 * np.log(2 * np.pi))
    if kind == 1:
        prob = 1 / (1 + np.exp(-eta[:, 0]))
        return float(-np.mean(np.where(yt == 1, np.log(prob), np.log(1 - prob))))
    prob = np.exp(eta - eta.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(prob[np.arange(len(yt)), yt])))


def test_cv_is_the_direct_loop_over_folds(small):
    types, X, _ = small
    n, p = X.shape
    nl = 15
    fit = MixedGraphicalModel(types, criterion="cv", cv=3, n_lambdas=nl, random_state=2).fit(X)
    perm = np.random.default_rng(2).permutation(n)
    folds = [np.sort(perm[f::3]) for f in range(3)]
    Z, gstart, scale, shift, levels, codes = design(X, np.array(list(types)))
    lams = []
    for i in range(p):
        resid = _response(Z, gstart, types, codes, levels, i, np.arange(n))[4]
        cand = Z.shape[0] - (gstart[i + 1] - gstart[i])
        lams.append(lambda_path(Z, gstart, i, resid, nl, 0.01 if n < cand else 1e-4))
    scores = np.zeros((3, p, nl))
    for f, test in enumerate(folds):
        train = np.setdiff1d(np.arange(n), test)
        Zr, mu, sd = _restandardise(Z, train)
        Zt = (Z[:, test] - mu[:, None]) / sd[:, None]
        for i in range(p):
            kind, K, y, yk, _ = _response(Zr, gstart, types, codes, levels, i, train)
            beta, b0, _ = node_path(Zr, gstart, i, kind, y, yk, K, lams[i], tol=1e-7)
            yt = None if types[i] == "g" else codes[i][test]
            for k in range(nl):
                scores[f, i, k] = _held_out(kind, beta[k], b0[k], Zt, Zt[gstart[i]], yt)
    assert np.allclose(fit.cv_scores_, scores, rtol=1e-10, atol=1e-12)
    assert np.array_equal(fit.path_index_, np.argmin(scores.mean(axis=0), axis=1))
    for i in range(p):                                  # each regression at its chosen point, all the data
        kind, K, y, yk, _ = _response(Z, gstart, types, codes, levels, i, np.arange(n))
        beta, _, _ = node_path(Z, gstart, i, kind, y, yk, K, lams[i], tol=1e-7)
        assert np.allclose(fit.coef_[i], beta[fit.path_index_[i]] / scale[:, None])
        assert fit.lambdas_[i] == lams[i][fit.path_index_[i]]
    # two threads: the same folds, the same choice
    two = MixedGraphicalModel(types, criterion="cv", cv=3, n_lambdas=nl, random_state=2, n_jobs=2).fit(X)
    assert np.array_equal(two.cv_scores_, fit.cv_scores_)


def test_ebic_is_the_default_and_its_choice_is_the_ebic_minimum(small):
    types, X, _ = small
    fit = MixedGraphicalModel(types).fit(X)
    assert np.array_equal(fit.path_index_, [int(np.nanargmin(e)) for e in fit.ebic_])
    assert fit.criterion_scores_ is fit.ebic_ and not hasattr(fit, "edge_frequency_")
    # a StARS fit after it keeps nothing of EBIC's but ebic_'s place
    fit.set_params(criterion="stars", n_subsamples=4, random_state=0).fit(X)
    assert fit.criterion_scores_.ndim == 1 and hasattr(fit, "edge_frequency_")


def test_given_levels_set_the_reference_and_are_checked(small):
    types, X, _ = small
    base = MixedGraphicalModel(types).fit(X)
    # the binary column 1 with its levels reversed: the same graph, the other reference
    flipped = MixedGraphicalModel(types, levels={1: [1, 0]}).fit(X)
    assert flipped.levels_[1].tolist() == [1, 0]
    assert np.array_equal(flipped.edges_, base.edges_)
    c = base.groups_[1]                                  # its one dummy column: 1 - d, standardised: -z
    for i in range(len(types)):
        if i == 1:                                       # its own regression: the response flipped
            assert np.allclose(flipped.coef_[1], -base.coef_[1], rtol=1e-6, atol=1e-9)
        else:
            assert np.allclose(flipped.coef_[i][c], -base.coef_[i][c], rtol=1e-6, atol=1e-9)
    assert np.any(base.coef_[1] != 0)
    # levels given for every variable, as inferred: the same fit
    same = MixedGraphicalModel(types, levels=[None if lv is None else lv.tolist() for lv in base.levels_]).fit(X)
    assert all(np.array_equal(a, b) for a, b in zip(same.coef_, base.coef_))
    Xb = X.copy()
    Xb[7, 3] = 9
    with pytest.raises(DataFormatError, match=r"8: column 3 \(categorical\): 9 is not one of its levels"):
        MixedGraphicalModel(types, levels={3: [0, 1, 2]}).fit(Xb)
    with pytest.raises(DataFormatError, match="level 5 never occurs"):
        MixedGraphicalModel(types, levels={1: [0, 1, 5]}).fit(X)
    with pytest.raises(ParameterError, match="continuous"):
        MixedGraphicalModel(types, levels={0: [0, 1]}).fit(X)
    with pytest.raises(ParameterError, match="at least 2 distinct"):
        MixedGraphicalModel(types, levels={1: [0, 0]}).fit(X)
    with pytest.raises(ParameterError, match="column index"):
        MixedGraphicalModel(types, levels={9: [0, 1]}).fit(X)
    with pytest.raises(ParameterError, match="one entry per variable"):
        MixedGraphicalModel(types, levels=[None, [0, 1]]).fit(X)


def test_bad_selection_parameters_are_refused(small):
    types, X, _ = small
    with pytest.raises(ParameterError, match="criterion"):
        MixedGraphicalModel(types, criterion="aic").fit(X)
    with pytest.raises(ParameterError, match="cv"):
        MixedGraphicalModel(types, criterion="cv", cv=1).fit(X)
    with pytest.raises(ParameterError, match="subsample_size"):
        MixedGraphicalModel(types, criterion="stars", subsample_size=10_000).fit(X)
    # a subsample without a level of a categorical variable: a clear error, nothing kept
    est = MixedGraphicalModel(types, criterion="stars", subsample_size=4, n_subsamples=3, random_state=0)
    with pytest.raises(DataFormatError, match="missing from a subsample"):
        est.fit(X)
    assert not any(k.endswith("_") for k in vars(est))


@pytest.mark.parametrize("criterion", ["stars", "cv"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_sigint_stops_the_subsamples_and_folds(mixed30, monkeypatch, criterion, jobs):
    from reliability_helpers import sigint_at_call
    from spargel.mrf import mixed as mixed_module

    types, X, _ = mixed30
    fit = MixedGraphicalModel(types).fit(X)                      # an earlier fit stays as it was
    before = dict(vars(fit))
    fit.set_params(criterion=criterion, n_subsamples=8, cv=4, n_jobs=jobs, n_lambdas=20)
    with sigint_at_call(5) as at, pytest.raises(KeyboardInterrupt):
        monkeypatch.setattr(mixed_module, "node_path", at.wrap(mixed_module.node_path))
        fit.fit(X)
    assert at.calls < 30 * 4                                      # the queued ones never ran
    assert vars(fit).keys() == before.keys()
    assert all(vars(fit)[k] is v for k, v in before.items() if k.endswith("_"))
