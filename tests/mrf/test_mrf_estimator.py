"""PairwiseMRF: fitting, scoring, conditional marginals, sampling, model files, the CLI."""

import json

import numpy as np
import pytest

from spargel.errors import CapabilityError, DataFormatError, ModelFileError, NotFittedError
from spargel.mrf.estimator import PairwiseMRF
from spargel.mrf.exact import brute_force
from spargel.mrf.graph import Graph, all_pairs
from spargel.mrf.sampling import gibbs_sample


def _planted(N=800, seed=0):
    """Samples of a 5-variable binary chain 0-1-2 plus an edge 3-4."""
    g = Graph([2] * 5, [[0, 1], [1, 2], [3, 4]])
    strong = np.array([0.4, -0.4, -0.4, 0.4])        # agreement favoured
    return gibbs_sample(g, np.zeros(10), np.tile(strong, 3), N, seed=seed, thin=3), g


@pytest.mark.parametrize("inference", ["exact", "loopy-bp", "pseudo-likelihood"])
def test_recovers_planted_graph(inference):
    X, _ = _planted()
    m = PairwiseMRF(l1=30.0, inference=inference).fit(X)
    assert m.edges_.tolist() == [[0, 1], [1, 2], [3, 4]]
    assert m.converged_ and m.history_[-1]["iteration"] == m.n_iter_
    assert {"objective", "loss", "penalty", "active", "n_evals", "elapsed", "active_edges"} <= set(m.history_[-1])
    assert len(m.edge_weights_) == 3 and m.edge_weights_[0].shape == (2, 2)
    assert np.all(m.edge_strength_ > 0.2)


def test_adaptive_lasso_drops_the_spurious_edge_and_solves_the_weighted_problem():
    from spargel.mrf.model import PairwiseMRFModel, adaptive_edge_weights
    X, _ = _planted()
    plain = PairwiseMRF(l1=16.0, inference="pseudo-likelihood", adaptive=False).fit(X)
    assert [1, 3] in plain.edges_.tolist()                # the lasso admits a spurious edge here
    m = PairwiseMRF(l1=16.0, inference="pseudo-likelihood", adaptive=True, tol=1e-10).fit(X)
    assert m.screening_edges_.tolist() == plain.edges_.tolist()
    assert m.edges_.tolist() == [[0, 1], [1, 2], [3, 4]]
    # optimality of the second stage: the lasso with each screened edge's l1 scaled by
    # median strength / strength, over the screened edges only
    model = PairwiseMRFModel(X, candidate_edges=m.screening_edges_, objective="pseudo")
    strength = plain.edge_strength_
    lam = np.repeat(16.0 * adaptive_edge_weights(strength), 4)
    _, g = model.loss_grad(m.weights_)
    node, edge = slice(0, model.n_node_params), slice(model.n_node_params, model.n_params)
    assert np.abs(g[node]).max() < 1e-3
    w, ge = m.weights_[edge], g[edge]
    on = w != 0
    assert np.allclose(ge[on], -lam[on] * np.sign(w[on]), atol=1e-3)
    assert np.all(np.abs(ge[~on]) <= lam[~on] + 1e-3)
    assert adaptive_edge_weights([1.0, 2.0, 4.0]).tolist() == [2.0, 1.0, 0.5]
    with pytest.raises(ValueError, match="active edges"):
        adaptive_edge_weights([1.0, 0.0])


def test_score_is_exact_mean_log_likelihood():
    X, _ = _planted(N=300)
    m = PairwiseMRF(l1=30.0, inference="exact").fit(X)
    g = Graph(m.n_states_, m.edges_)
    logz = brute_force(g, np.concatenate(m.node_weights_),
                       np.concatenate([t.ravel() for t in m.edge_weights_]) if m.edge_weights_ else np.zeros(0)).log_z
    expect = np.mean([sum(m.node_weights_[i][x[i]] for i in range(5)) +
                      sum(t[x[i], x[j]] for (i, j), t in zip(m.edges_, m.edge_weights_)) - logz for x in X[:50]])
    assert m.score(X[:50]) == pytest.approx(expect, rel=1e-12)
    assert m.score_method_ == "exact"


def test_predict_marginals_and_map():
    X, _ = _planted(N=500)
    m = PairwiseMRF(l1=5.0, inference="exact").fit(X)
    part = np.array([[1, -1, -1, 0, -1], [-1, -1, -1, -1, -1]])
    P = m.predict_marginals(part)
    assert P.shape == (2, 5, 2)
    np.testing.assert_allclose(P.sum(-1), 1.0)
    assert P[0, 0, 1] == 1.0 and P[0, 1, 1] > 0.55 and P[0, 4, 0] > 0.55     # agreement
    # compare with conditioning by enumeration
    g = Graph(m.n_states_, m.edges_)
    nt = np.concatenate(m.node_weights_)
    et = np.concatenate([t.ravel() for t in m.edge_weights_])
    full = brute_force(g, nt, et)
    np.testing.assert_allclose(P[1].ravel(), full.node_beliefs, atol=1e-10)
    filled = m.predict(part)
    assert filled[0, 0] == 1 and filled[0, 3] == 0 and np.all(filled >= 0)
    with pytest.raises(DataFormatError, match="below -1"):
        m.predict_marginals([[0, -2, 0, 0, 0]])


def test_sample_is_seeded_and_follows_model():
    X, _ = _planted(N=500)
    m = PairwiseMRF(l1=5.0, inference="exact", random_state=3).fit(X)
    a, b = m.sample(1000), m.sample(1000)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (1000, 5) and set(np.unique(a)) <= {0, 1}
    assert np.mean(a[:, 0] == a[:, 1]) > 0.55           # the learned coupling prefers agreement


def test_save_load_round_trip(tmp_path):
    X, _ = _planted(N=300)
    m = PairwiseMRF(l1=30.0, inference="exact").fit(X)
    p = tmp_path / "m.mrf"
    m.save(p)
    m2 = PairwiseMRF.load(p)
    np.testing.assert_array_equal(m2.edges_, m.edges_)
    assert m2.score(X) == pytest.approx(m.score(X), rel=1e-13)
    assert m2.l1 == 30.0 and m2.inference == "exact"
    # a tampered file is refused
    from spargel.core import model_file as io
    meta, arrays = io.load_arrays(p, "mrf")
    arrays["edges"] = np.array([[0, 0]], dtype=np.int64)
    io.save_arrays(p, "mrf", meta, arrays)
    with pytest.raises(ModelFileError, match="self-loop"):
        PairwiseMRF.load(p)
    with pytest.raises(ModelFileError):
        PairwiseMRF.load(tmp_path / "missing.mrf")


def test_params_clone_tags_and_not_fitted():
    m = PairwiseMRF(l1=3.0, inference="exact")
    assert m.get_params()["l1"] == 3.0 and "inference='exact'" in repr(m)
    with pytest.raises(NotFittedError):
        m.score([[0, 1]])
    sk_base = pytest.importorskip("sklearn.base")
    assert sk_base.clone(m).get_params() == m.get_params()
    if hasattr(sk_base.BaseEstimator, "__sklearn_tags__"):                       # scikit-learn >= 1.6
        assert m.__sklearn_tags__().estimator_type == "density_estimator"


def test_group_penalty_needs_group_lasso_or_works():
    X, _ = _planted(N=300)
    try:
        from spargel.core.penalties import GroupLasso  # noqa: F401
    except ImportError:
        with pytest.raises(CapabilityError, match="GroupLasso"):
            PairwiseMRF(l1=30.0, penalty="group", inference="exact").fit(X)
    else:  # pragma: no cover - once the group lasso lands
        m = PairwiseMRF(l1=30.0, penalty="group", inference="exact").fit(X)
        assert m.edges_.tolist() == [[0, 1], [1, 2], [3, 4]]


def test_candidate_edges_fix_the_graph_and_bad_params():
    X, _ = _planted(N=300)
    m = PairwiseMRF(l1=0.0, inference="loopy-bp", candidate_edges=[[0, 1], [1, 2]]).fit(X)
    assert m.edges_.tolist() == [[0, 1], [1, 2]]
    with pytest.raises(ValueError, match="inference must be"):
        PairwiseMRF(inference="gibbs").fit(X)
    with pytest.raises(DataFormatError, match="repeats"):
        PairwiseMRF(candidate_edges=[[0, 1], [1, 0]]).fit(X)
    with pytest.raises(DataFormatError, match="constant"):
        PairwiseMRF().fit(np.zeros((5, 3), dtype=int))
    with pytest.raises(DataFormatError, match="at least 2 samples"):
        PairwiseMRF().fit([[0, 1, 0]])


def _cli(argv):
    from spargel.cli import main
    return main(["mrf", *argv])


def test_cli_writes_edges_and_model(tmp_path, capsys):
    X, _ = _planted(N=400)
    data = tmp_path / "d.csv"
    data.write_text("a,b,c,d,e\n" + "".join(",".join("yes" if v else "no" for v in r) + "\n" for r in X))
    rc = _cli([str(data), "--l1", "30", "--inference", "exact", "--no-adaptive", "--out-edges", "-"])
    out = capsys.readouterr()
    assert rc == 0
    assert out.out.splitlines()[0] == "i,j,strength,name_i,name_j"
    assert [ln.split(",")[3:] for ln in out.out.splitlines()[1:]] == [["a", "b"], ["b", "c"], ["d", "e"]]
    m = PairwiseMRF.load(tmp_path / "d.mrf")
    assert m.edges_.tolist() == [[0, 1], [1, 2], [3, 4]]
    states = json.loads((tmp_path / "d.mrf.states.json").read_text())
    assert states["states"][0] == ["no", "yes"]
    assert _cli([str(data), "--l1", "10", "--inference", "pseudo-likelihood", "--adaptive", "--quiet"]) == 0
    assert PairwiseMRF.load(tmp_path / "d.mrf").adaptive is True
    # the defaults: inference and adaptive stage chosen as in Python
    assert _cli([str(data), "--l1", "10", "--quiet"]) == 0
    m = PairwiseMRF.load(tmp_path / "d.mrf")
    assert m.inference == "auto" and m.adaptive == "auto"


@pytest.mark.parametrize("text, message", [
    ("a,b\n1,2\n?,1\n", "d.csv:3: column 1: missing value"),
    ("a,b\n1,2\n1,1\n", "a is constant"),
    ("a,b\n1,2\n", "at least 2 samples"),
    ("a,b\n1,2\n1\n", "d.csv:3: expected 2 values"),
    ("a;b\n1;2\n2;1\n", "d.csv:1: one value per line: the file looks semicolon-separated"),
])
def test_cli_bad_input(tmp_path, capsys, text, message):
    data = tmp_path / "d.csv"
    data.write_text(text)
    assert _cli([str(data), "--l1", "1"]) == 1          # bad input: a runtime problem, as every command
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_main_cli_has_mrf():
    from spargel.cli.app import build_parser
    parser = build_parser()
    args = parser.parse_args(["mrf", "x.csv", "--l1", "2"])
    assert args.l1 == 2.0


def test_conditional_model_learns_feature_weights(tmp_path):
    """A chain CRF: each variable's state follows its own input (weight 2), neighbours agree."""
    rng = np.random.default_rng(0)
    N, n = 600, 4
    F = rng.normal(size=(N, n, 1))
    g = Graph([2] * n, [[0, 1], [1, 2], [2, 3]])
    X = np.empty((N, n), dtype=np.int64)
    for r in range(N):
        nt = np.stack([-F[r, :, 0], F[r, :, 0]], axis=1).ravel()          # +-1 * input
        X[r] = gibbs_sample(g, nt, np.tile([0.5, -0.5, -0.5, 0.5], 3), 1, burn_in=50, n_chains=1, seed=r)[0]
    m = PairwiseMRF(l1=10.0, inference="exact", tie_features=True).fit(X, node_features=F)
    assert m.edges_.tolist() == [[0, 1], [1, 2], [2, 3]]
    fw = m.feature_weights_
    assert fw.shape == (2, 1) and fw[1, 0] - fw[0, 0] > 1.4               # true difference 2
    s = m.score(X[:20], node_features=F[:20])
    with pytest.raises(ValueError, match="give node_features"):
        m.score(X[:20])
    P = m.predict_marginals(np.full((2, n), -1), node_features=np.array([[[3.0]] * n, [[-3.0]] * n]))
    assert P[0, :, 1].min() > 0.9 and P[1, :, 0].min() > 0.9
    assert m.sample(node_features=F[:5]).shape == (5, n)
    p = tmp_path / "c.mrf"
    m.save(p)
    m2 = PairwiseMRF.load(p)
    assert m2.score(X[:20], node_features=F[:20]) == pytest.approx(s, rel=1e-13)
    untied = PairwiseMRF(l1=10.0, inference="pseudo-likelihood").fit(X, node_features=F)
    assert len(untied.feature_weights_) == n and untied.feature_weights_[0].shape == (2, 1)


def test_verbose_warnings_and_plot(capsys):
    from spargel.errors import ConvergenceWarning

    X, _ = _planted(N=300)
    PairwiseMRF(l1=30.0, inference="loopy-bp", verbose=True).fit(X)
    err = capsys.readouterr().err
    assert "iter    1" in err and "bp " in err and "edges" in err
    with pytest.warns(ConvergenceWarning) as caught:
        PairwiseMRF(l1=1.0, inference="loopy-bp", bp_max_iter=1, bp_tol=1e-14, max_iter=5).fit(X)
        PairwiseMRF(l1=30.0, inference="pseudo-likelihood", n_states=3, max_iter=3).fit(X)
    messages = " | ".join(str(w.message) for w in caught)
    assert "loopy BP did not converge" in messages and "max_iter=5" in messages
    assert "state 2 of variable 0 never occurs" in messages
    pytest.importorskip("matplotlib")
    m = PairwiseMRF(l1=30.0, inference="exact").fit(X)
    ax = m.plot(labels=list("abcde"))
    E = len(m.edges_)
    assert E >= 1 and ax.get_title() == f"5 variables, {E} edges" and len(ax.lines) == E
