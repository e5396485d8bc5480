"""The parts of scikit-learn's GraphicalLasso / GraphicalLassoCV contract that
spargel takes over: closed form at alpha = 0, whole-problem costs, the default
precision, the CV grid with refinements, alpha validation, groups for the
splitter, and the ``graphical_lasso`` function."""

import warnings

import numpy as np
import pytest
from gmrf_helpers import kkt_violation, random_covariance

from spargel.errors import DataFormatError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV
from spargel.gaussian import graphical_lasso
from spargel.gaussian.objective import penalty_matrix


def _block_data(seed=0, m=200):
    """Three independent blocks of 3 correlated variables (screening splits them)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 9))
    for b in range(3):
        X[:, 3 * b + 1] += 0.9 * X[:, 3 * b]
        X[:, 3 * b + 2] += 0.6 * X[:, 3 * b + 1]
    return X


def test_alpha_zero_is_the_inverse_in_closed_form():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 7))
    S = np.cov(X.T, bias=True)
    m = SparseGaussianMRF(alpha=0.0, covariance="precomputed").fit(S)
    # K S = I to rounding (relative to the condition number)
    np.testing.assert_allclose(m.precision_ @ S, np.eye(7), atol=1e-12 * np.linalg.cond(S))
    assert m.n_iter_ == 0 and m.converged_ and m.duality_gap_ == 0.0
    # objective -log det K + tr(S K) = log det S + n
    assert m.objective_ == pytest.approx(np.linalg.slogdet(S)[1] + 7, rel=1e-12)
    assert len(m.costs_) == 1 and m.costs_[0][0] == pytest.approx(m.objective_)
    # a singular S has no maximum-likelihood estimate
    with pytest.raises(DataFormatError, match="unbounded"):
        SparseGaussianMRF(alpha=0.0, covariance="precomputed").fit(np.cov(X[:5].T, bias=True))


def test_costs_describe_the_whole_problem():
    X = _block_data()
    m = SparseGaussianMRF(alpha=0.2).fit(X)
    assert m.n_components_ >= 2
    f = np.array([c[0] for c in m.costs_])
    # one row per iteration of the longest component; non-increasing; ends at the objective
    assert len(f) == max(h["iteration"] for h in m.history_)
    assert np.all(np.diff(f) <= 1e-12 * abs(f[0]))
    assert f[-1] == pytest.approx(m.objective_, rel=1e-13)
    # the last gap is the sum of the components' gaps: the reported one
    assert m.costs_[-1][1] == pytest.approx(m.duality_gap_, rel=1e-9, abs=1e-15)
    # every variable on its own: K = diag(1 / S_ii), one row with that objective
    big = SparseGaussianMRF(alpha=10.0).fit(X)
    S = np.cov(X.T, bias=True)
    assert big.n_components_ == 9 and len(big.costs_) == 1
    assert big.costs_[0][0] == pytest.approx(np.sum(np.log(np.diag(S))) + 9, rel=1e-12)
    assert big.costs_[0][1] == 0.0


def test_default_precision_matches_a_much_tighter_solve():
    """The default stop leaves K within ~1e-7 (relative to its largest entry) of
    the solution, measured against a run to a gap 1e4 times smaller, on problems
    with singular and with ill-conditioned S."""
    for m_, n, seed, alpha in ((6, 8, 0, 0.02), (40, 10, 1, 0.05), (200, 12, 2, 0.1)):
        S = random_covariance(m_, n, seed)
        ref = SparseGaussianMRF(alpha=alpha, covariance="precomputed", tol=1e-14,
                                max_iter=500)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # 1e-14 may end at the precision floor
            ref.fit(S)
        got = SparseGaussianMRF(alpha=alpha, covariance="precomputed").fit(S)
        scale = np.max(np.abs(ref.precision_))
        assert np.max(np.abs(got.precision_ - ref.precision_)) <= 1e-6 * scale
        assert kkt_violation(got.precision_, S, penalty_matrix(alpha, n)) <= 1e-5


def test_default_precision_equals_sklearn_tight():
    """scikit-learn run to its tightest tolerances and spargel at its default give
    the same precision matrix (iris, alpha = 1 and a rank-deficient subset)."""
    skc = pytest.importorskip("sklearn.covariance")
    datasets = pytest.importorskip("sklearn.datasets")
    X = datasets.load_iris().data
    for data, alpha in ((X, 1.0), (X[10:13], 0.01), (X[:, 2:], 0.1)):
        S = skc.empirical_covariance(data)
        _, K_sk = skc.graphical_lasso(S, alpha, tol=1e-12, enet_tol=1e-14, max_iter=5000)
        cov, K = graphical_lasso(S, alpha)
        np.testing.assert_allclose(K, K_sk, rtol=0, atol=2e-7 * np.max(np.abs(K_sk)))
        np.testing.assert_allclose(cov @ K, np.eye(S.shape[0]), atol=1e-8)


def test_graphical_lasso_function_returns():
    S = random_covariance(50, 6, 3)
    out = graphical_lasso(S, 0.05, return_costs=True, return_n_iter=True, mode="lars",
                          enet_tol=1e-8)
    assert len(out) == 4
    cov, K, costs, n_iter = out
    ref = SparseGaussianMRF(alpha=0.05, covariance="precomputed").fit(S)
    np.testing.assert_array_equal(K, ref.precision_)
    assert n_iter == ref.n_iter_ and costs == ref.costs_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert graphical_lasso(S, 0.05, max_iter=2, return_n_iter=True)[2] == 2


@pytest.mark.parametrize("kw, err, msg", [
    (dict(mode="lasso"), ValueError, "mode must be 'cd' or 'lars'"),
    (dict(enet_tol=0.0), ValueError, "enet_tol must be a finite number > 0"),
    (dict(enet_tol="x"), TypeError, "enet_tol must be a number"),
    (dict(eps=-1.0), ValueError, "eps must be"),
])
def test_compat_parameters_are_checked(kw, err, msg):
    X = _block_data()
    with pytest.raises(err, match=msg):
        SparseGaussianMRF(alpha=0.1, **kw).fit(X)
    with pytest.raises(err, match=msg):
        SparseGaussianMRFCV(alphas=2, cv=2, **kw).fit(X)
    # accepted values change nothing
    a = SparseGaussianMRF(alpha=0.1).fit(X).precision_
    b = SparseGaussianMRF(alpha=0.1, mode="lars", enet_tol=1e-9, eps=1e-12).fit(X).precision_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("alphas, err, msg", [
    ([-0.02, 0.03], ValueError, r"alphas\[0\] == -0.02, must be > 0"),
    ([0.03, 0], ValueError, r"alphas\[1\] == 0, must be > 0"),
    (["x", 0.03], TypeError, r"alphas\[0\] must be an instance of float, not str"),
    ([], ValueError, "empty"),
])
def test_cv_alphas_validation(alphas, err, msg):
    with pytest.raises(err, match=msg):
        SparseGaussianMRFCV(alphas=alphas, cv=2).fit(_block_data())


def test_cv_refinement_grid():
    """Each refinement puts ``alphas`` new values strictly between the neighbours
    of the best alpha found so far; rows: every alpha tried, then alpha = 0."""
    X = _block_data(seed=4, m=120)
    n_alphas, n_ref = 4, 3
    cvm = SparseGaussianMRFCV(alphas=n_alphas, n_refinements=n_ref, cv=3).fit(X)
    res = cvm.cv_results_
    assert len(res["alphas"]) == n_alphas * n_ref + 1 and res["alphas"][-1] == 0.0
    assert np.all(np.diff(cvm.alphas_) < 0)
    # replay the refinements from the recorded scores
    first = np.geomspace(cvm.alphas_[0], 0.01 * cvm.alphas_[0], n_alphas)
    tried = list(first)
    score = dict(zip(res["alphas"][:-1], res["mean_test_score"][:-1]))
    for _ in range(n_ref - 1):
        path = sorted(tried, reverse=True)
        sc = [score[a] for a in path]
        k = len(sc) - 1 - int(np.argmax(sc[::-1]))       # the smallest alpha on ties
        hi = path[k - 1] if k > 0 else path[0]
        lo = path[k + 1] if k + 1 < len(path) else 0.01 * path[k]
        if k == 0:
            lo = path[1]
        new = np.geomspace(hi, lo, n_alphas + 2)[1:-1]
        assert np.all((new < hi) & (new > lo))
        tried += list(new)
    np.testing.assert_allclose(sorted(tried, reverse=True), cvm.alphas_, rtol=1e-12)
    best = int(np.argmax(res["mean_test_score"][:-1][::-1]))
    assert cvm.alpha_ == cvm.alphas_[len(cvm.alphas_) - 1 - best]
    # a list is one grid, never refined
    lst = SparseGaussianMRFCV(alphas=[0.3, 0.1], n_refinements=5, cv=3).fit(X)
    assert list(lst.cv_results_["alphas"]) == [0.3, 0.1, 0.0]
    with pytest.raises(ValueError, match="n_refinements"):
        SparseGaussianMRFCV(alphas=3, n_refinements=0, cv=3).fit(X)


def test_cv_matches_sklearn_with_refinements():
    """Same folds, test folds centred on their own mean: scikit-learn's grids,
    rows and choice, refinements included."""
    skc = pytest.importorskip("sklearn.covariance")
    X = _block_data(seed=5, m=150) + 3.0
    ours = SparseGaussianMRFCV(alphas=4, n_refinements=3, cv=4, center_test="test").fit(X)
    sk = skc.GraphicalLassoCV(alphas=4, n_refinements=3, cv=4, tol=1e-12, enet_tol=1e-12,
                              max_iter=5000).fit(X)
    np.testing.assert_allclose(ours.cv_results_["alphas"], sk.cv_results_["alphas"], rtol=1e-9)
    # scikit-learn's coordinate descent stops near 1e-6 here however tight its tolerances
    for key in ["mean_test_score"] + [f"split{k}_test_score" for k in range(4)]:
        np.testing.assert_allclose(ours.cv_results_[key], sk.cv_results_[key], atol=1e-5)
    assert ours.alpha_ == pytest.approx(sk.alpha_, rel=1e-12)
    np.testing.assert_allclose(ours.precision_, sk.precision_, atol=1e-5)


def test_cv_groups_go_to_the_splitter():
    ms = pytest.importorskip("sklearn.model_selection")
    X = _block_data(seed=6, m=90)
    groups = np.repeat(np.arange(6), 15)
    cvm = SparseGaussianMRFCV(alphas=3, cv=ms.GroupKFold(3)).fit(X, groups=groups)
    # the same folds given as explicit (train, test) pairs give the same rows
    pairs = list(ms.GroupKFold(3).split(X, None, groups))
    ref = SparseGaussianMRFCV(alphas=3, cv=pairs).fit(X)
    np.testing.assert_array_equal(cvm.cv_results_["mean_test_score"],
                                  ref.cv_results_["mean_test_score"])
    with pytest.raises(ValueError, match="groups given, but cv=3 folds"):
        SparseGaussianMRFCV(alphas=3, cv=3).fit(X, groups=groups)


def test_cv_metadata_routing_through_sklearn_tools():
    """With scikit-learn's metadata routing on, its tools hand ``groups`` to the CV
    estimator's splitter (get_metadata_routing); the same folds as explicit pairs give
    the same fitted model."""
    sklearn = pytest.importorskip("sklearn", minversion="1.4")     # cross_validate(params=...)
    ms = pytest.importorskip("sklearn.model_selection")
    X = _block_data(seed=7, m=120)
    groups = np.repeat(np.arange(6), 20)
    with sklearn.config_context(enable_metadata_routing=True):
        inner = ms.GroupKFold(3).set_split_request(groups=True)
        res = ms.cross_validate(SparseGaussianMRFCV(alphas=3, cv=inner), X,
                                params={"groups": groups}, cv=ms.GroupKFold(2),
                                return_estimator=True)
    outer = list(ms.GroupKFold(2).split(X, None, groups))
    for (tr, _), est in zip(outer, res["estimator"]):
        pairs = list(ms.GroupKFold(3).split(X[tr], None, groups[tr]))
        ref = SparseGaussianMRFCV(alphas=3, cv=pairs).fit(X[tr])
        np.testing.assert_array_equal(est.cv_results_["mean_test_score"],
                                      ref.cv_results_["mean_test_score"])
