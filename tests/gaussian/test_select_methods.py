"""SparseGaussianMRFSelect over neighbourhood selection and CONCORD (``method=``): StARS's
counts, variabilities and choice against a direct loop of the estimators' own path fits on
the same subsamples; RIC against its formula and a fit there; the refusals huge.select
makes (EBIC without a likelihood); threads against one thread; Ctrl-C leaves the previous
fit untouched; the command line."""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.errors import ParameterError
from spargel.gaussian.concord import Concord
from spargel.gaussian.neighbourhood import NeighbourhoodSelection
from spargel.gaussian.select import ric_alpha, stars_choice
from spargel.gaussian.selection import SparseGaussianMRFSelect


def _data(n=160, p=12, seed=0):
    """A chain with a few cross links, in other units and means per column."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    for j in range(1, p):
        X[:, j] += 0.6 * X[:, j - 1]
    X[:, 7] += 0.5 * X[:, 2]
    return X * np.linspace(1, 5, p) + 3.0


def _subsamples(n, k=6, size=100, seed=1):
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n, size, replace=False)) for _ in range(k)]


def _variability(counts, k, p):
    theta = counts / k
    return 4 * np.sum(theta * (1 - theta)) / (p * (p - 1) / 2)


def _upper(adj):
    A = sp.triu(sp.csr_matrix(adj), 1).toarray() != 0
    return A.astype(float)


@pytest.mark.parametrize("covariance", [None, "from_data"])
def test_mb_stars_equals_a_loop_of_neighbourhood_selection_paths(covariance):
    X = _data()
    n, p = X.shape
    subs = _subsamples(n)
    sel = SparseGaussianMRFSelect("stars", method="mb", subsamples=subs, alphas=8,
                                  stars_full_path=True, covariance=covariance).fit(X)
    mode = "data" if covariance == "from_data" else "auto"
    grid = list(sel.alphas_)
    # the grid: huge's, from max |R_ij| (R the correlation matrix) down to 0.1 of it
    R = np.corrcoef(X.T)
    amax = np.max(np.abs(R - np.eye(p)))
    np.testing.assert_allclose(sel.alphas_, amax * 0.1 ** (np.arange(8) / 7), rtol=1e-12)
    counts = np.zeros((len(grid), p, p))
    for s in subs:
        fit = NeighbourhoodSelection(alphas=grid, mode=mode).fit(X[s])
        for k, adj in enumerate(fit.adjacency_path_):
            counts[k] += _upper(adj)
    var = np.array([_variability(c, len(subs), p) for c in counts])
    np.testing.assert_allclose(sel.criterion_scores_, var, rtol=1e-12, atol=1e-15)
    best = stars_choice(var, 0.1)
    assert sel.selected_index_ == best and sel.alpha_ == grid[best]
    np.testing.assert_array_equal(sel.edge_frequency_.toarray(),
                                  (counts[best] + counts[best].T) / len(subs))
    # the graph at the choice and the path: the estimator's own path on all data
    full = NeighbourhoodSelection(alphas=grid, mode=mode).fit(X)
    np.testing.assert_array_equal(sel.edges_, full.edges_path_[best])
    np.testing.assert_array_equal(sel.edges_path_, [len(e) for e in full.edges_path_])
    for a, b in zip(sel.path_, full.adjacency_path_):
        assert (a != b).nnz == 0
    assert isinstance(sel.estimator_, NeighbourhoodSelection)
    assert sel.estimator_.alpha_ == sel.alpha_
    assert (sel.coef_ != full.coef_path_[best]).nnz == 0
    assert sel.criterion_ == "stars" and sel.method_ == "mb" and sel.loglik_path_ is None


def test_mb_stars_bounded_is_the_full_paths_choice():
    X = _data(seed=3)
    subs = _subsamples(X.shape[0], seed=4)
    kw = dict(method="mb", subsamples=subs, alphas=10, alpha_min_ratio=0.05)
    full = SparseGaussianMRFSelect("stars", stars_full_path=True, **kw).fit(X)
    bounded = SparseGaussianMRFSelect("stars", **kw).fit(X)
    assert bounded.alpha_ == full.alpha_
    fitted = np.isfinite(bounded.criterion_scores_)
    assert not fitted.all() and bounded.criterion_scores_[fitted][-1] >= 0.1
    np.testing.assert_array_equal(bounded.criterion_scores_[fitted], full.criterion_scores_[fitted])
    assert all(f is None for f, ok in zip(bounded.edge_frequency_path_, fitted) if not ok)
    # the path on all data only as far as the subsamples went (its dense end decides nothing)
    assert all(g is None for g, ok in zip(bounded.path_, fitted) if not ok)
    assert np.all(np.isnan(bounded.edges_path_[~fitted]))
    np.testing.assert_array_equal(bounded.edges_path_[fitted], full.edges_path_[fitted])
    np.testing.assert_array_equal(bounded.edges_, full.edges_)


def test_mb_and_rule():
    X = _data(seed=5)
    subs = _subsamples(X.shape[0], seed=6)
    sel = SparseGaussianMRFSelect("stars", method="mb", rule="and", subsamples=subs,
                                  stars_full_path=True).fit(X)
    grid = list(sel.alphas_)
    counts = np.zeros((len(grid),) + (X.shape[1],) * 2)
    for s in subs:
        fit = NeighbourhoodSelection(alphas=grid, rule="and").fit(X[s])
        for k, adj in enumerate(fit.adjacency_path_):
            counts[k] += _upper(adj)
    var = [_variability(c, len(subs), X.shape[1]) for c in counts]
    np.testing.assert_allclose(sel.criterion_scores_, var, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("covariance", [None, "from_data"])
def test_concord_stars_equals_a_loop_of_concord_paths(covariance):
    X = _data(seed=7)
    n, p = X.shape
    subs = _subsamples(n, seed=8)
    sel = SparseGaussianMRFSelect("stars", method="concord", subsamples=subs, alphas=6,
                                  stars_full_path=True, covariance=covariance).fit(X)
    R = np.corrcoef(X.T)
    amax = np.max(np.abs(R - np.eye(p)))
    # CONCORD's grid: twice the likelihood's (its gradient at the empty graph is 2 R_ij)
    np.testing.assert_allclose(sel.alphas_, 2 * amax * 0.1 ** (np.arange(6) / 5), rtol=1e-12)
    grid = list(sel.alphas_)
    cov = "auto" if covariance is None else covariance
    counts = np.zeros((len(grid), p, p))
    for s in subs:
        fit = Concord(alphas=grid, covariance=cov).fit(X[s])
        for k, step in enumerate(fit.path_):
            counts[k] += _upper(step["precision"])
    var = np.array([_variability(c, len(subs), p) for c in counts])
    np.testing.assert_allclose(sel.criterion_scores_, var, rtol=1e-12, atol=1e-15)
    best = stars_choice(var, 0.1)
    assert sel.alpha_ == grid[best]
    ref = Concord(alphas=grid[:best + 1], covariance=cov).fit(X)
    np.testing.assert_array_equal(sel.edges_, ref.edges_)
    assert abs(sel.precision_ - ref.precision_).max() <= 1e-12 * abs(ref.precision_).max()
    assert isinstance(sel.estimator_, Concord) and sel.estimator_.alpha_ == sel.alpha_


@pytest.mark.parametrize("method,scale", [("mb", 1.0), ("concord", 2.0)])
def test_ric_is_its_formula_and_a_fit_there(method, scale):
    X = _data(seed=9)
    rot = [3, 17, 40, 99]
    sel = SparseGaussianMRFSelect("ric", method=method, rotations=rot).fit(X)
    alpha = scale * ric_alpha(X, rot)
    assert sel.alpha_ == pytest.approx(alpha, rel=1e-12)
    ref = (NeighbourhoodSelection(alpha=sel.alpha_) if method == "mb"
           else Concord(alpha=sel.alpha_)).fit(X)
    np.testing.assert_array_equal(sel.edges_, ref.edges_)
    assert sel.selected_index_ is None and sel.criterion_scores_ is None
    std = SparseGaussianMRFSelect("ric", method=method, rotations=rot,
                                  ric_data="standardized").fit(X)
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    assert std.alpha_ == pytest.approx(scale * ric_alpha(Z, rot), rel=1e-12)


def test_criteria_per_method_as_huge_select():
    X = _data(n=60, p=8)
    # huge.select's defaults: EBIC for glasso, RIC for mb
    assert SparseGaussianMRFSelect().fit(X).criterion_ == "ebic"
    assert SparseGaussianMRFSelect(method="mb", random_state=0).fit(X).criterion_ == "ric"
    assert SparseGaussianMRFSelect(method="concord", random_state=0,
                                   n_subsamples=3).fit(X).criterion_ == "stars"
    for m in ("mb", "concord"):
        with pytest.raises(ParameterError, match="EBIC for glasso only"):
            SparseGaussianMRFSelect("ebic", method=m).fit(X)
    with pytest.raises(ParameterError, match="method must be one of"):
        SparseGaussianMRFSelect(method="tiger").fit(X)
    with pytest.raises(ParameterError, match="rule must be"):
        SparseGaussianMRFSelect(method="mb", rule="xor").fit(X)
    mb = SparseGaussianMRFSelect(method="mb", random_state=0).fit(X)
    for call in (lambda: mb.score(X), lambda: mb.save("x.model"), mb.get_precision):
        with pytest.raises(ParameterError):
            call()


@pytest.mark.parametrize("method", ["glasso", "mb", "concord"])
def test_threads_give_the_single_thread_result(method):
    X = _data(seed=11)
    kw = dict(method=method, n_subsamples=6, random_state=3, alphas=6)
    one = SparseGaussianMRFSelect("stars", **kw).fit(X)
    two = SparseGaussianMRFSelect("stars", n_jobs=2, **kw).fit(X)
    assert one.alpha_ == two.alpha_
    np.testing.assert_array_equal(one.criterion_scores_, two.criterion_scores_)
    np.testing.assert_array_equal(one.edges_, two.edges_)


def test_ctrl_c_leaves_the_previous_fit(monkeypatch):
    """A Ctrl-C in the middle of StARS re-raises and leaves the estimator as it was."""
    from spargel.gaussian import stars

    X = _data(seed=12)
    sel = SparseGaussianMRFSelect("stars", method="mb", n_subsamples=4, random_state=0).fit(X)
    before = {k: v for k, v in sel.__dict__.items()}
    calls = [0]
    real = stars.MBPath.advance

    def interrupted(self, alpha, n_jobs=1):
        calls[0] += 1
        if calls[0] == 14:                  # past the full-data path, inside StARS
            raise KeyboardInterrupt
        return real(self, alpha, n_jobs)

    monkeypatch.setattr(stars.MBPath, "advance", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sel.fit(X[:, ::-1].copy())
    assert calls[0] == 14
    assert set(sel.__dict__) == set(before)
    for k, v in before.items():
        assert sel.__dict__[k] is v
    fresh = SparseGaussianMRFSelect("stars", method="mb", n_subsamples=4, random_state=0)
    calls[0] = 0
    with pytest.raises(KeyboardInterrupt):
        fresh.fit(X)
    assert not hasattr(fresh, "alpha_") and not hasattr(fresh, "edges_")


def test_cli_select_with_method_mb(tmp_path):
    from spargel.cli import main

    X = _data(seed=13)
    data = tmp_path / "x.csv"
    np.savetxt(data, X, delimiter=",")
    out = tmp_path / "edges.csv"
    assert main(["gmrf", str(data), "--select", "stars", "--method", "mb", "--seed", "4",
                 "--n-subsamples", "5", "--out-edges", str(out), "--quiet"]) == 0
    got = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
    sel = SparseGaussianMRFSelect("stars", method="mb", n_subsamples=5, random_state=4).fit(X)
    np.testing.assert_array_equal(got[:, :2].astype(int), sel.edges_)
    out2 = tmp_path / "edges2.csv"
    assert main(["gmrf", str(data), "--select", "stars", "--method", "concord", "--seed", "4",
                 "--n-subsamples", "4", "--out-edges", str(out2), "--quiet"]) == 0
    sel = SparseGaussianMRFSelect("stars", method="concord", n_subsamples=4,
                                  random_state=4).fit(X)
    assert len(sel.edges_)
    got = np.loadtxt(out2, delimiter=",", skiprows=1, ndmin=2).reshape(-1, 3)
    np.testing.assert_array_equal(got[:, :2].astype(int), sel.edges_)


def test_glasso_selection_on_the_sparse_path():
    """solver='sparse-newton-cg' (the graphical lasso without a p x p matrix) takes the
    from-data path and makes the dense path's choice on a clear chain."""
    rng = np.random.default_rng(14)
    X = rng.standard_normal((200, 40))
    for j in range(1, 40):
        X[:, j] += 0.7 * X[:, j - 1]
    # (StARS stops at the alpha whose variability reaches the threshold: the densest
    # subsample fits, where the sparse path can stall short of its tolerance on 141 rows,
    # are not made)
    kw = dict(n_subsamples=4, random_state=2, alphas=5)
    sparse = SparseGaussianMRFSelect("stars", solver="sparse-newton-cg", **kw).fit(X)
    dense = SparseGaussianMRFSelect("stars", **kw).fit(X)
    assert sparse.solver_ == "sparse-newton-cg" and sp.issparse(sparse.precision_)
    assert sparse.alpha_ == pytest.approx(dense.alpha_, rel=1e-12)
    np.testing.assert_array_equal(sparse.edges_path_, dense.edges_path_)
    np.testing.assert_allclose(sparse.criterion_scores_, dense.criterion_scores_, atol=1e-12)
    assert np.isnan(dense.criterion_scores_[-1])
    np.testing.assert_array_equal(sparse.edges_, dense.edges_)
