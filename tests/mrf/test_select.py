"""Selection of a pairwise MRF's l1 (PairwiseMRFSelect), IsingFit's procedure, bootstrap
edge stability and the networkx / pgmpy exports, against known graphs and enumeration."""

import itertools

import numpy as np
import pytest

import spargel
from spargel.errors import DataFormatError, ParameterError
from spargel.mrf.graph import Graph
from spargel.mrf.sampling import gibbs_sample
from spargel.mrf.selection import PairwiseMRFSelect, l1_max
from spargel.mrf.nodewise import IsingFit
from spargel.mrf.stability import edge_stability, edge_weight_matrix


def ising(p, n_edges, n, seed):
    """A random graph with couplings of 0.4-0.8 in magnitude (spins), Gibbs samples of it."""
    rng = np.random.default_rng(seed)
    pairs = list(itertools.combinations(range(p), 2))
    edges = np.array(sorted(pairs[k] for k in rng.choice(len(pairs), n_edges, replace=False)))
    w = rng.uniform(0.4, 0.8, n_edges) * rng.choice([-1, 1], n_edges)
    h = rng.uniform(-0.3, 0.3, p)
    g = Graph(np.full(p, 2), edges)
    X = gibbs_sample(g, np.column_stack([-h, h]).ravel(), np.concatenate([[x, -x, -x, x] for x in w]), n,
                     burn_in=500, thin=10, n_chains=8, seed=seed)
    return edges, X


def f1(truth, found):
    t, f = set(map(tuple, np.asarray(truth).tolist())), set(map(tuple, np.asarray(found).tolist()))
    return 2 * len(t & f) / (len(t) + len(f))


@pytest.fixture(scope="module")
def ising20():
    return ising(20, 20, 1000, seed=1)


@pytest.fixture(scope="module")
def small():
    return ising(6, 6, 800, seed=3)


def test_ebic_recovers_a_20_node_ising_graph(ising20):
    edges, X = ising20
    sel = PairwiseMRFSelect("ebic", n_l1s=10, estimator=spargel.PairwiseMRF(adaptive=False, tol=1e-4)).fit(X)
    assert sel.criterion_likelihood_ == "pseudo-likelihood"
    assert f1(edges, sel.edges_) >= 0.9
    assert sel.edges_path_[0] == 0 and np.all(np.diff(sel.l1s_) < 0)
    score = sel.criterion_scores_          # ties (the same edges refitted) go to the largest l1
    assert sel.l1_ == sel.l1s_[np.flatnonzero(score <= score.min() + 1e-7 * abs(score.min()))[0]]
    assert np.array_equal(sel.best_estimator_.edges_, sel.edges_) and sel.best_estimator_.l1 == sel.l1_


def test_isingfit_recovers_a_20_node_ising_graph(ising20):
    edges, X = ising20
    fit = IsingFit().fit(X)
    assert f1(edges, fit.edges_) >= 0.9
    assert np.allclose(fit.weights_, fit.weights_.T) and np.all(np.diag(fit.weights_) == 0)
    orr = IsingFit(rule="or").fit(X)
    assert {tuple(e) for e in fit.edges_.tolist()} <= {tuple(e) for e in orr.edges_.tolist()}
    # each path starts at the empty regression: its EBIC is the null deviance, no coefficient
    q = X.mean(axis=0)
    null = -2 * len(X) * (q * np.log(q) + (1 - q) * np.log(1 - q))
    assert np.allclose(fit.ebic_[:, 0], null)
    # the same data with one thread or two: the same fit
    assert np.array_equal(IsingFit(n_jobs=2).fit(X).coef_, fit.coef_)


def test_isingfit_ebic_stop_keeps_the_choice(ising20):
    edges, X = ising20
    Xs = X[:80]                               # wide enough that the stop cuts the paths short
    cut = IsingFit().fit(Xs)
    whole = IsingFit(ebic_stop=False).fit(Xs)
    assert np.isnan(cut.ebic_).sum() > np.isnan(whole.ebic_).sum()
    assert np.array_equal(cut.coef_, whole.coef_) and np.array_equal(cut.lambdas_, whole.lambdas_)


def test_isingfit_regressions_meet_the_lasso_optimality_conditions(small):
    _, X = small
    fit = IsingFit(tol=1e-12).fit(X)
    n, p = X.shape
    sd = X.std(axis=0)
    for i in range(p):
        others = np.delete(np.arange(p), i)
        b = fit.coef_[i, others]
        eta = fit.thresholds_[i] + X[:, others] @ b
        r = X[:, i] - 1 / (1 + np.exp(-eta))
        g = X[:, others].T @ r / n / sd[others]          # on the standardised scale
        lam = fit.lambdas_[i]
        assert abs(r.mean()) < 1e-6                         # the intercept's condition
        on = b != 0
        assert np.allclose(g[on], lam * np.sign(b[on]), atol=1e-5)
        assert np.all(np.abs(g[~on]) <= lam + 1e-6)


def test_isingfit_model_is_the_ising_model_of_its_weights(small):
    _, X = small
    fit = IsingFit().fit(X)
    states = np.array(list(itertools.product([0, 1], repeat=X.shape[1])))
    direct = states @ fit.thresholds_ + 0.5 * np.einsum("ni,ij,nj->n", states, fit.weights_, states)
    assert np.allclose(fit.model_.log_potential(states), direct)


def test_l1_max_is_where_the_empty_graph_starts(small):
    _, X = small
    for inference in ("exact", "pseudo-likelihood"):
        est = spargel.PairwiseMRF(adaptive=False, inference=inference)
        model = est._prepare(X).make_model(None)
        top, _ = l1_max(model)
        assert len(spargel.PairwiseMRF(l1=top * 1.001, adaptive=False, inference=inference).fit(X).edges_) == 0
        assert len(spargel.PairwiseMRF(l1=top * 0.9, adaptive=False, inference=inference).fit(X).edges_) >= 1


def test_ebic_with_exact_likelihood_scores_refitted_models(small):
    edges, X = small
    n, p = X.shape
    sel = PairwiseMRFSelect("ebic", n_l1s=8).fit(X)
    assert sel.criterion_likelihood_ == "exact"
    assert f1(edges, sel.edges_) >= 0.9
    k = int(np.flatnonzero(sel.l1s_ == sel.l1_)[0])
    # the loss is the unpenalised exact likelihood of the point's edges (enumeration)
    refit = spargel.PairwiseMRF(l1=0.0, candidate_edges=sel.edges_, inference="exact", adaptive=False,
                                tol=1e-10).fit(X)
    assert sel.loss_path_[k] == pytest.approx(-n * refit.score(X), rel=1e-5)
    expect = 2 * sel.loss_path_ + sel.dof_path_ * np.log(n) + 4 * 0.5 * sel.edges_path_ * np.log(p)
    assert np.allclose(sel.criterion_scores_, expect)
    assert np.array_equal(sel.dof_path_, sel.edges_path_)        # binary pairs: one parameter each


def test_stars_stops_once_the_instability_passes_the_threshold(small):
    _, X = small
    sel = PairwiseMRFSelect("stars", n_l1s=15, n_subsamples=8, random_state=0, stars_threshold=0.05).fit(X)
    v = sel.criterion_scores_
    assert len(v) == len(sel.l1s_) == len(sel.edges_path_)
    if len(v) < 15:                               # stopped early: only the last point passed
        assert v[-1] >= 0.05 and np.all(v[:-1] < 0.05)
    assert sel.l1_ == sel.l1s_[max(len(v) - 2, 0)] or len(v) == 15
    F = sel.edge_frequency_
    assert np.allclose(F, F.T) and F.min() >= 0 and F.max() <= 1
    again = PairwiseMRFSelect("stars", n_l1s=15, n_subsamples=8, random_state=0, stars_threshold=0.05,
                              n_jobs=2).fit(X)
    assert np.array_equal(again.criterion_scores_, v) and again.l1_ == sel.l1_


def test_cv_scores_held_out_pseudo_likelihood(small):
    _, X = small
    sel = PairwiseMRFSelect("cv", n_l1s=6, cv=3, random_state=0).fit(X)
    assert sel.cv_scores_.shape == (3, 6)
    assert np.allclose(sel.criterion_scores_, sel.cv_scores_.mean(axis=0))
    assert sel.l1_ == sel.l1s_[int(np.argmin(sel.criterion_scores_))]
    assert sel.criterion_scores_[0] > sel.criterion_scores_.min()          # the empty graph is worse


def test_bootstrap_frequencies_equal_a_direct_loop_of_fits(small):
    _, X = small
    st = edge_stability(IsingFit(), X, n_boot=6, random_state=5, n_jobs=2)
    direct = np.stack([edge_weight_matrix(IsingFit().fit(X[rows])) for rows in st.resamples])
    assert np.array_equal(st.weights, direct)
    assert np.array_equal(st.frequency, (direct != 0).mean(axis=0))
    assert np.all(st.lower <= st.upper)
    again = edge_stability(IsingFit(), X, n_boot=6, random_state=5)
    assert np.array_equal(again.resamples, st.resamples) and np.array_equal(again.weights, st.weights)
    # a PairwiseMRF: the weight of a binary pair is its 0/1 interaction
    est = spargel.PairwiseMRF(l1=30.0, adaptive=False, inference="exact")
    st2 = edge_stability(est, X, n_boot=3, random_state=1)
    for b, rows in enumerate(st2.resamples):
        m = spargel.PairwiseMRF(l1=30.0, adaptive=False, inference="exact").fit(X[rows])
        W = edge_weight_matrix(m)
        assert np.allclose(st2.weights[b], W)
        for (i, j), t in zip(m.edges_, m.edge_weights_):
            assert W[i, j] == pytest.approx(t[0, 0] - t[0, 1] - t[1, 0] + t[1, 1])


def test_pgmpy_factors_reproduce_the_unnormalised_log_probabilities(small):
    pytest.importorskip("pgmpy")
    _, X = small
    m = spargel.PairwiseMRF(l1=20.0, inference="exact").fit(X)
    net = m.to_pgmpy()
    assert sorted(net.nodes()) == [f"x{i}" for i in range(X.shape[1])]
    assert len(net.get_factors()) == X.shape[1] + len(m.edges_)
    states = np.array(list(itertools.product([0, 1], repeat=X.shape[1])))
    logp = m.log_potential(states)
    for s, lp in zip(states, logp):
        prod = 0.0
        for f in net.get_factors():
            prod += np.log(f.get_value(**{v: int(s[int(v[1:])]) for v in f.variables}))
        assert prod == pytest.approx(lp, abs=1e-10)


def test_to_networkx_carries_the_graph(small):
    pytest.importorskip("networkx")
    _, X = small
    fit = IsingFit().fit(X)
    G = fit.to_networkx(labels=list("abcdef"))
    assert G.number_of_nodes() == 6 and G.number_of_edges() == len(fit.edges_)
    for i, j in fit.edges_:
        assert G["abcdef"[i]]["abcdef"[j]]["weight"] == pytest.approx(fit.weights_[i, j])


def test_bad_input_is_refused_clearly(small):
    _, X = small
    with pytest.raises(ParameterError, match="criterion"):
        PairwiseMRFSelect("aic").fit(X)
    with pytest.raises(ParameterError, match="l1_min_ratio"):
        PairwiseMRFSelect(l1_min_ratio=1.5).fit(X)
    with pytest.raises(ParameterError, match="estimator"):
        PairwiseMRFSelect(estimator=IsingFit()).fit(X)
    with pytest.raises(ParameterError, match="rule"):
        IsingFit(rule="both").fit(X)
    with pytest.raises(DataFormatError, match="binary"):
        IsingFit().fit(np.column_stack([X, X[:, 0] + X[:, 1]]))
    with pytest.raises(ValueError, match="node_theta"):
        spargel.PairwiseMRF.from_potentials([2, 2], [[0, 1]], [0.0] * 3, [0.0] * 4)
    with pytest.raises(spargel.NotFittedError):
        PairwiseMRFSelect().score(X)


def test_cli_select(tmp_path, small):
    from spargel.cli import main
    edges, X = small
    data = tmp_path / "d.csv"
    np.savetxt(data, X, fmt="%d", delimiter=",")
    out = tmp_path / "e.csv"
    path = tmp_path / "path.csv"
    assert main(["mrf", str(data), "--no-header", "--select", "ebic", "--n-l1s", "8", "--out-edges", str(out),
                 "--out-path", str(path), "--quiet"]) == 0
    got = np.loadtxt(out, delimiter=",", skiprows=1, usecols=(0, 1), ndmin=2).astype(int)
    assert f1(edges, got) >= 0.9
    assert len(path.read_text().splitlines()) == 9
    assert main(["mrf", str(data), "--no-header", "--quiet", "--out-edges", str(out)]) == 2   # neither


def test_scikit_learn_clone_keeps_the_parameters():
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    sel = PairwiseMRFSelect("stars", estimator=spargel.PairwiseMRF(inference="exact"), n_l1s=7, random_state=3)
    c = clone(sel)
    assert c.get_params()["n_l1s"] == 7 and c.estimator is not sel.estimator
    assert c.estimator.get_params() == sel.estimator.get_params()
    assert clone(IsingFit(gamma=0.5, rule="or")).get_params()["rule"] == "or"
