"""EBIC / StARS / RIC selection, the nonparanormal transforms and per-entry
penalty matrices, each checked against its definition computed here
independently (brute-force loops, scipy's ranks and normal quantiles, separate
fits)."""

import itertools
import math

import numpy as np
import pytest
from gmrf_helpers import kkt_violation
from scipy.stats import norm, spearmanr

from spargel.gaussian.estimator import SparseGaussianMRF
from spargel.gaussian.selection import Nonparanormal, SparseGaussianMRFSelect
from spargel.gaussian.select import ric_alpha, stars_choice
from spargel.gaussian.solve import solve_gaussian


def _chain_data(n=150, p=6, seed=0):
    rng = np.random.default_rng(seed)
    K = np.eye(p) + np.diag(np.full(p - 1, 0.45), 1) + np.diag(np.full(p - 1, 0.45), -1)
    X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(K), size=n)
    return X * np.arange(1, p + 1) + 10.0          # other units and means per column


def _correlation(X):
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    return Z, Z.T @ Z / (X.shape[0] - 1)


# -- nonparanormal --------------------------------------------------------------------------
def test_npn_shrinkage_is_its_formula():
    rng = np.random.default_rng(1)
    X = np.exp(rng.standard_normal((40, 4)))
    X[5, 2] = X[6, 2] = X[7, 2]                      # a tie of three in column 2
    n = X.shape[0]
    Z = Nonparanormal().fit_transform(X)
    for j in range(4):
        col = X[:, j]
        # rank by counting: 1 + #smaller + (#equal - 1) / 2
        r = np.array([1 + np.sum(col < v) + (np.sum(col == v) - 1) / 2 for v in col])
        expected = norm.ppf(r / (n + 1))
        first = norm.ppf(np.array([1 + np.sum(X[:, 0] < v) for v in X[:, 0]]) / (n + 1))
        np.testing.assert_allclose(Z[:, j], expected / np.std(first, ddof=1), rtol=0,
                                   atol=1e-12)
    assert np.all(Z[5:8, 2] == Z[5, 2])


def test_npn_truncation_is_its_formula():
    rng = np.random.default_rng(2)
    X = rng.standard_exponential((30, 3))
    n = 30
    delta = 1 / (4 * n ** 0.25 * math.sqrt(math.pi * math.log(n)))
    Z = Nonparanormal("truncation").fit_transform(X)
    U = np.clip((np.argsort(np.argsort(X, axis=0), axis=0) + 1) / n, delta, 1 - delta)
    G = norm.ppf(U)
    np.testing.assert_allclose(Z, G / np.std(G[:, 0], ddof=1), atol=1e-12)
    Z2 = Nonparanormal("truncation", truncation=0.2).fit_transform(X)
    G2 = norm.ppf(np.clip((np.argsort(np.argsort(X, axis=0), axis=0) + 1) / n, 0.2, 0.8))
    np.testing.assert_allclose(Z2, G2 / np.std(G2[:, 0], ddof=1), atol=1e-12)


def test_skeptic_is_its_formula():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 5)) ** 3
    X[:, 1] += X[:, 0]
    C = Nonparanormal("skeptic").fit_transform(X)
    rho = spearmanr(X).statistic
    np.testing.assert_allclose(C, 2 * np.sin(np.pi / 6 * rho), atol=1e-12)
    np.testing.assert_allclose(Nonparanormal("skeptic").fit(X).covariance_, C)


def test_npn_transform_of_new_rows():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((20, 2))
    t = Nonparanormal().fit(X)
    np.testing.assert_allclose(t.transform(X), t.fit_transform(X), atol=0)
    # a value between the k-th and (k+1)-th training values has rank k + 1/2
    s = np.sort(X[:, 0])
    x_new = np.array([[0.5 * (s[3] + s[4]), X[0, 1]], [s[0] - 1.0, X[0, 1]]])
    z = t.transform(x_new)
    assert z[0, 0] == pytest.approx(norm.ppf(4.5 / 21) / t.scale_, abs=1e-12)
    assert z[1, 0] == pytest.approx(norm.ppf(0.5 / 21) / t.scale_, abs=1e-12)
    with pytest.raises(ValueError, match="method must be one of"):
        Nonparanormal("ecdf").fit(X)
    with pytest.raises(ValueError, match="expecting 2 features"):
        t.transform(X[:, :1])


def test_npn_pipeline_with_sklearn():
    pipeline = pytest.importorskip("sklearn.pipeline")
    X = np.exp(_chain_data(n=120))
    pipe = pipeline.make_pipeline(Nonparanormal(), SparseGaussianMRF(alpha=0.1)).fit(X)
    direct = SparseGaussianMRF(alpha=0.1).fit(Nonparanormal().fit_transform(X))
    np.testing.assert_array_equal(pipe[-1].precision_, direct.precision_)


# -- EBIC -----------------------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0])
def test_ebic_is_its_definition(gamma):
    X = _chain_data()
    n, p = X.shape
    sel = SparseGaussianMRFSelect("ebic", alphas=6, gamma=gamma).fit(X)
    Z, R = _correlation(X)
    amax = np.max(np.abs(R - np.diag(np.diag(R))))
    np.testing.assert_allclose(sel.alphas_, amax * 0.1 ** (np.arange(6) / 5), rtol=1e-12)
    expected = []
    for a in sel.alphas_:
        K = solve_gaussian(R, a, penalize_diagonal=True).precision
        e = np.count_nonzero(K[np.triu_indices(p, 1)])
        ll = np.linalg.slogdet(K)[1] - np.trace(R @ K)
        expected.append(-n * ll + e * np.log(n) + 4 * gamma * e * np.log(p))
    # (path and cold starts: log-likelihoods agree to ~1e-8 relative, times n)
    np.testing.assert_allclose(sel.criterion_scores_, expected, rtol=1e-6)
    assert sel.alpha_ == sel.alphas_[int(np.argmin(expected))]
    # the chosen model, in the units of X: K_std / (sd_i sd_j), the same graph
    K = solve_gaussian(R, sel.alpha_, penalize_diagonal=True).precision
    sd = X.std(0, ddof=1)
    # (a warm-started path and a cold start agree to about 1e-7 of the largest entry)
    np.testing.assert_allclose(sel.precision_, K / np.outer(sd, sd), rtol=0,
                               atol=1e-6 * np.max(np.abs(sel.precision_)))
    assert np.isfinite(sel.score(X))


# -- StARS ----------------------------------------------------------------------------------
def test_stars_choice_rule():
    assert stars_choice([0.0, 0.02, 0.05, 0.2, 0.1], 0.1) == 2
    assert stars_choice([0.3, 0.02], 0.1) == 0          # the first already crosses
    assert stars_choice([0.0, 0.02, 0.05], 0.1) == 2     # none crosses: the smallest alpha
    assert stars_choice([0.0, 0.1], 0.1) == 0            # reaching the threshold crosses


def test_stars_is_its_definition():
    X = _chain_data(n=80, p=5, seed=5)
    n, p = X.shape
    rng = np.random.default_rng(0)
    subs = [np.sort(rng.choice(n, 50, replace=False)) for _ in range(6)]
    sel = SparseGaussianMRFSelect("stars", alphas=5, subsamples=subs,
                                  stars_threshold=0.05, stars_full_path=True).fit(X)
    early = SparseGaussianMRFSelect("stars", alphas=5, subsamples=subs,
                                    stars_threshold=0.05).fit(X)
    iu = np.triu_indices(p, 1)
    counts = np.zeros((5, iu[0].size))
    for idx in subs:
        _, Rb = _correlation(X[idx])
        for k, a in enumerate(sel.alphas_):
            counts[k] += solve_gaussian(Rb, a, penalize_diagonal=True).precision[iu] != 0
    theta = counts / len(subs)
    var = [8 * np.sum(t * (1 - t)) / (p * (p - 1)) for t in theta]    # 4 sum_{i!=j} / (p(p-1))
    np.testing.assert_allclose(sel.criterion_scores_, var, atol=1e-12)
    crossed = [k for k, v in enumerate(var) if v >= 0.05]
    k = max(crossed[0] - 1, 0) if crossed else len(var) - 1
    assert sel.alpha_ == sel.alphas_[k]
    np.testing.assert_allclose(sel.edge_frequency_[iu], theta[k])
    # stopped at the first alpha whose variability reaches the threshold: the same
    # choice and frequencies, the variability up to there, NaN after it
    last = crossed[0] if crossed else len(var) - 1
    assert early.alpha_ == sel.alpha_ and early.selected_index_ == sel.selected_index_
    np.testing.assert_allclose(early.criterion_scores_[:last + 1], var[:last + 1], atol=1e-12)
    assert np.all(np.isnan(early.criterion_scores_[last + 1:]))
    np.testing.assert_allclose(early.edge_frequency_, sel.edge_frequency_, atol=1e-12)
    assert all(f is None for f in early.edge_frequency_path_[last + 1:])
    # random subsamples: 0.8 n rows each for n <= 144, reproducible by seed
    a = SparseGaussianMRFSelect("stars", alphas=4, n_subsamples=3, random_state=7).fit(X)
    b = SparseGaussianMRFSelect("stars", alphas=4, n_subsamples=3, random_state=7).fit(X)
    np.testing.assert_array_equal(a.criterion_scores_, b.criterion_scores_)
    # the subsamples on two threads: the same counts
    c = SparseGaussianMRFSelect("stars", alphas=4, n_subsamples=3, random_state=7,
                                n_jobs=2).fit(X)
    np.testing.assert_array_equal(a.criterion_scores_, c.criterion_scores_)
    np.testing.assert_array_equal(a.edge_frequency_, c.edge_frequency_)
    with pytest.raises(ValueError, match=r"subsamples\[0\]"):
        SparseGaussianMRFSelect("stars", subsamples=[[0, 1, n]]).fit(X)


# -- RIC ------------------------------------------------------------------------------------
def test_ric_is_its_definition():
    X = _chain_data(n=12, p=4, seed=6)
    Z, R = _correlation(X)
    n, p = Z.shape

    def brute(shifts):
        best = np.inf
        for r in shifts:
            worst = 0.0
            for j, k in itertools.permutations(range(p), 2):
                worst = max(worst, abs(sum(Z[(m + r) % n, j] * Z[m, k] for m in range(n))))
            best = min(best, worst)
        return best / n

    assert ric_alpha(Z, [3, 7]) == pytest.approx(brute([3, 7]), rel=1e-12)
    # n <= n_rotations: every shift 1..n (shift n is no rotation at all)
    sel = SparseGaussianMRFSelect("ric", n_rotations=20, ric_data="standardized").fit(X)
    assert sel.alpha_ == pytest.approx(brute(range(1, n + 1)), rel=1e-12)
    K = solve_gaussian(R, sel.alpha_, penalize_diagonal=True).precision
    sd = X.std(0, ddof=1)
    np.testing.assert_allclose(sel.precision_ * np.outer(sd, sd), K, atol=1e-8)
    given = SparseGaussianMRFSelect("ric", rotations=[5], ric_data="standardized").fit(X)
    assert given.alpha_ == pytest.approx(brute([5]), rel=1e-12)


def test_select_checks_its_parameters():
    X = _chain_data()
    with pytest.raises(ValueError, match="criterion must be one of"):
        SparseGaussianMRFSelect("aic").fit(X)
    with pytest.raises(ValueError, match="gamma must be"):
        SparseGaussianMRFSelect(gamma=-1).fit(X)
    with pytest.raises(ValueError, match=r"alphas\[0\] == 0, must be > 0"):
        SparseGaussianMRFSelect(alphas=[0, 0.1]).fit(X)


# -- penalty matrices -----------------------------------------------------------------------
def test_penalty_matrix_in_every_l1_solver():
    X = _chain_data(n=100, p=6, seed=8)
    S = np.cov(X.T, bias=True)
    d = np.sqrt(np.diag(S))
    W = 0.15 * np.outer(d, d)                         # correlation-scale weights
    W[0, 5] = W[5, 0] = 0.0                           # this pair is never penalised
    W[1, 2] = W[2, 1] = 10 * W[1, 2]                  # this one heavily
    np.fill_diagonal(W, 0.0)
    Ks = []
    for solver in ("newton-cg", "newton-cd", "projected-gradient"):
        m = SparseGaussianMRF(alpha=W, solver=solver, tol=1e-10 if solver != "projected-gradient"
                              else 1e-9, max_iter=20000).fit(X)
        # the optimality conditions with these weights (a gap of 1e-9 leaves about 1e-5 of
        # max |S| for the first-order projected gradient, 1e-8 for Newton-CG)
        assert kkt_violation(m.precision_, S, W) <= 1e-4 * np.max(np.abs(S))
        Ks.append(m.precision_)
    for K in Ks[1:]:
        np.testing.assert_allclose(K, Ks[0], atol=1e-5 * np.max(np.abs(Ks[0])))
    assert Ks[0][0, 5] != 0 and Ks[0][1, 2] == 0
    with pytest.raises(ValueError, match="per-entry penalty matrix"):
        SparseGaussianMRF(alpha=W, blocks=[0, 0, 1, 1, 2, 2]).fit(X)


def test_ric_follows_huge_on_the_data_as_given():
    """huge.select's RIC rotates est$data, the data as given (neither centred nor
    scaled): its alpha depends on the units. That is the default; the standardised
    version is an option, invariant to units."""
    X = _chain_data(n=12, p=4, seed=6) * 0.02 + 3.0       # small units, a non-zero mean
    n, p = X.shape

    def brute(A, shifts):
        best = np.inf
        for r in shifts:
            worst = max(abs(sum(A[(m + r) % n, j] * A[m, k] for m in range(n)))
                        for j, k in itertools.permutations(range(p), 2))
            best = min(best, worst)
        return best / n

    sel = SparseGaussianMRFSelect("ric", rotations=[3, 7]).fit(X)
    assert sel.ric_data == "raw"
    assert sel.alpha_ == pytest.approx(brute(X, [3, 7]), rel=1e-12)
    Z, _ = _correlation(X)
    std = SparseGaussianMRFSelect("ric", rotations=[3, 7], ric_data="standardized").fit(X)
    assert std.alpha_ == pytest.approx(brute(Z, [3, 7]), rel=1e-12)
    # the raw alpha scales with the units squared; the standardised one does not
    assert SparseGaussianMRFSelect("ric", rotations=[3, 7]).fit(X * 10).alpha_ == \
        pytest.approx(100 * sel.alpha_, rel=1e-12)
    assert SparseGaussianMRFSelect("ric", rotations=[3, 7], ric_data="standardized").fit(
        X * 10).alpha_ == pytest.approx(std.alpha_, rel=1e-12)
    # the from-data path computes the same
    fd = SparseGaussianMRFSelect("ric", rotations=[3, 7], covariance="from_data").fit(X)
    assert fd.alpha_ == pytest.approx(sel.alpha_, rel=1e-12)
    with pytest.raises(ValueError, match="ric_data must be 'raw'"):
        SparseGaussianMRFSelect("ric", ric_data="scaled").fit(X)
