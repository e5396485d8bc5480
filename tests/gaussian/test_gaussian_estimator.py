import warnings
from pathlib import Path

import numpy as np
import pytest

from spargel.errors import ConvergenceWarning, DataFormatError, NotFittedError
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
GENE = DATA / "gene_expression_bdgraph" / "geneExpression.csv"


def _data(m=80, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.9 * X[:, 0]
    X[:, 2] += 0.7 * X[:, 1]
    return X + 3.0


class _Frame:
    """Just enough of a data frame: ``columns`` and ``to_numpy`` (pandas is
    not needed to test the duck typing)."""

    def __init__(self, values, columns):
        self._values = np.asarray(values)
        self.columns = list(columns)
        self.shape = self._values.shape

    def to_numpy(self):
        return self._values

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)


def test_params_clone_repr():
    m = SparseGaussianMRF(alpha=0.2, tol=1e-7)
    assert m.get_params()["alpha"] == 0.2
    assert "alpha=0.2" in repr(m) and "tol=1e-07" in repr(m)
    m.set_params(alpha=0.3)
    assert m.alpha == 0.3
    with pytest.raises(ValueError, match="invalid parameter"):
        m.set_params(nope=1)
    sk_base = pytest.importorskip("sklearn.base")
    c = sk_base.clone(m)
    assert c.get_params() == m.get_params() and c is not m
    assert repr(SparseGaussianMRFCV()) == "SparseGaussianMRFCV()"
    # __init__ does no validation
    SparseGaussianMRF(alpha=-1, solver="bogus")


def test_fit_matches_sklearn_and_score():
    skc = pytest.importorskip("sklearn.covariance")
    X = _data()
    m = SparseGaussianMRF(alpha=0.1, tol=1e-10).fit(X)
    sk = skc.GraphicalLasso(alpha=0.1, tol=1e-10, enet_tol=1e-10, max_iter=1000).fit(X)
    np.testing.assert_allclose(m.precision_, sk.precision_, atol=1e-4)
    np.testing.assert_allclose(m.location_, sk.location_)
    Xt = _data(seed=5)
    assert m.score(Xt) == pytest.approx(sk.score(Xt), abs=1e-5)
    np.testing.assert_allclose(m.covariance_ @ m.precision_, np.eye(8), atol=1e-8)
    assert m.edges_.shape[1] == 2 and np.all(m.edges_[:, 0] < m.edges_[:, 1])
    assert [0, 1] in m.edges_.tolist()
    np.testing.assert_allclose(m.edge_weights_, m.precision_[m.edges_[:, 0], m.edges_[:, 1]])
    assert m.converged_ and m.duality_gap_ <= 1e-10 * abs(m.objective_)
    assert m.stop_reason_ == "tol" and m.solver_ == "newton-cg"
    assert m.history_[-1]["iteration"] == m.n_iter_
    assert len(m.costs_) == len(m.history_) and m.costs_[-1][0] == m.history_[-1]["objective"]
    assert m.costs_[-1][1] == pytest.approx(m.duality_gap_)
    assert m.n_features_in_ == 8 and not hasattr(m, "feature_names_in_")
    # the objective the estimator reports is the one sklearn's costs_ use
    assert m.objective_ <= sk.costs_[-1][0] + 1e-9 * abs(m.objective_)
    # the covariance given directly gives the same estimate, both ways
    S = np.cov(X.T, bias=True)
    m2 = SparseGaussianMRF(alpha=0.1, tol=1e-10).fit_covariance(S, n_samples=80)
    np.testing.assert_allclose(m2.precision_, m.precision_, atol=1e-8)
    m3 = SparseGaussianMRF(alpha=0.1, tol=1e-10, covariance="precomputed").fit(S)
    np.testing.assert_allclose(m3.precision_, m.precision_, atol=1e-8)
    np.testing.assert_array_equal(m3.location_, np.zeros(8))
    # assume_centered uses the raw second moment
    m4 = SparseGaussianMRF(alpha=0.1, tol=1e-10, assume_centered=True).fit(X - X.mean(0))
    np.testing.assert_allclose(m4.precision_, m.precision_, atol=1e-4)


def test_input_kinds():
    X = _data(40, 4)
    ref = SparseGaussianMRF(alpha=0.1).fit(X)
    # a list of lists of floats is dense data
    m = SparseGaussianMRF(alpha=0.1).fit(X.tolist())
    np.testing.assert_allclose(m.precision_, ref.precision_, rtol=1e-12)
    # a data frame (duck-typed): feature names are kept and checked
    names = ["a", "b", "c", "d"]
    f = SparseGaussianMRF(alpha=0.1).fit(_Frame(X, names))
    np.testing.assert_allclose(f.precision_, ref.precision_, rtol=1e-12)
    assert f.feature_names_in_.tolist() == names and f.n_features_in_ == 4
    assert f.score(_Frame(X, names)) == pytest.approx(ref.score(X))
    with pytest.raises(ValueError, match="feature names should match"):
        f.score(_Frame(X, ["a", "b", "d", "c"]))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        f.score(X)
    # refitting on a plain array forgets the names
    f.fit(X)
    assert not hasattr(f, "feature_names_in_")
    # non-string column names are not feature names
    assert not hasattr(SparseGaussianMRF(alpha=0.1).fit(_Frame(X, [0, 1, 2, 3])),
                       "feature_names_in_")


def test_estimator_errors():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(NotFittedError, match="not fitted"):
        SparseGaussianMRF().score(_data())
    with pytest.raises(NotFittedError):
        SparseGaussianMRFCV().get_precision()
    with pytest.raises(DataFormatError, match="sparse matrices are not supported"):
        SparseGaussianMRF().fit(sp.csr_matrix(_data()))
    with pytest.raises(DataFormatError, match="1-D array"):
        SparseGaussianMRF().fit(np.ones(4))
    with pytest.raises(TypeError, match="numeric"):
        SparseGaussianMRF().fit([["a", "b"], ["c", "d"]])
    with pytest.raises(DataFormatError, match="square"):
        SparseGaussianMRF().fit_covariance(np.ones((2, 3)))
    with pytest.raises(ValueError, match="negative"):
        SparseGaussianMRF(alpha=-0.5).fit(_data())
    with pytest.raises(ValueError, match="overlap"):
        SparseGaussianMRF(blocks=[[(0, 1)], [(1, 0)]]).fit(_data())
    with pytest.raises(ValueError, match="covariance must be None, 'dense', 'precomputed'"):
        SparseGaussianMRF(covariance="empirical").fit(_data())
    m = SparseGaussianMRF(alpha=0.1).fit(_data())
    with pytest.raises(ValueError, match="X has 2 features, but SparseGaussianMRF is expecting 8"):
        m.score(np.ones((3, 2)))


def test_block_estimator():
    X = _data(60, 9)
    lab = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    m = SparseGaussianMRF(alpha=0.02, blocks=lab).fit(X)
    assert m.solver_ == "block-l1" and m.converged_
    # block penalties are rescaled by one common factor: same problem in other units
    m2 = SparseGaussianMRF(alpha=0.02 * 1e6, blocks=lab, tol=1e-8).fit(X * 1e3)
    m1 = SparseGaussianMRF(alpha=0.02, blocks=lab, tol=1e-8).fit(X)
    np.testing.assert_allclose(m2.precision_ * 1e6, m1.precision_, atol=1e-5)
    with pytest.raises(ValueError, match="handles plain l1 weights only"):
        SparseGaussianMRF(alpha=0.02, blocks=lab, solver="newton-cg").fit(X)


def test_cv_results_and_refit():
    X = _data(60, 9)
    cvm = SparseGaussianMRFCV(alphas=6, cv=3, tol=1e-10).fit(X)
    assert cvm.alpha_ in cvm.alphas_
    res = cvm.cv_results_
    for key in ("alphas", "split0_test_score", "split1_test_score", "split2_test_score",
                "mean_test_score", "std_test_score", "mean_edges"):
        assert key in res and len(res[key]) == 7, key        # the grid, then alpha = 0
    assert "split3_test_score" not in res
    np.testing.assert_array_equal(res["alphas"][:6], cvm.alphas_)
    assert res["alphas"][6] == 0.0 and res["mean_edges"][6] == 9 * 8 / 2
    np.testing.assert_allclose(res["mean_test_score"],
                               np.mean([res[f"split{k}_test_score"] for k in range(3)], axis=0))
    assert res["mean_test_score"][list(cvm.alphas_).index(cvm.alpha_)] == \
        res["mean_test_score"][:6].max()
    ref = SparseGaussianMRF(alpha=cvm.alpha_, tol=1e-10).fit(X)
    np.testing.assert_allclose(cvm.precision_, ref.precision_, atol=1e-4)
    lab = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    cvb = SparseGaussianMRFCV(alphas=[0.5, 0.05, 0.01], cv=3, blocks=lab).fit(X)
    assert cvb.alpha_ in (0.5, 0.05, 0.01)
    # a scikit-learn splitter object is accepted (its folds are the default ones here)
    ms = pytest.importorskip("sklearn.model_selection")
    cvk = SparseGaussianMRFCV(alphas=6, cv=ms.KFold(3), tol=1e-10).fit(X)
    np.testing.assert_allclose(cvk.cv_results_["mean_test_score"], res["mean_test_score"])


def test_cv_centering_matches_sklearn():
    """With the test folds centred on their own mean (scikit-learn's choice),
    the same grid and the same (default, contiguous) folds give scikit-learn's
    scores and alpha; centring on the training mean (the default) scores the
    fitted model itself and may pick another alpha."""
    skc = pytest.importorskip("sklearn.covariance")
    rng = np.random.default_rng(3)
    n = 6
    K = np.eye(n) + np.diag(np.full(n - 1, 0.4), 1) + np.diag(np.full(n - 1, 0.4), -1)
    X = rng.multivariate_normal(np.zeros(n), np.linalg.inv(K), size=40) + 5.0
    alphas = [0.3, 0.15, 0.08, 0.04, 0.02, 0.01]
    ours = SparseGaussianMRFCV(alphas=alphas, cv=4, center_test="test", tol=1e-10).fit(X)
    sk = skc.GraphicalLassoCV(alphas=alphas, cv=4, tol=1e-10, enet_tol=1e-10,
                              max_iter=5000).fit(X)
    # the same rows: the grid (decreasing), then alpha = 0 (held-out data centred on the
    # training mean there, in both libraries)
    np.testing.assert_allclose(ours.cv_results_["alphas"], sk.cv_results_["alphas"])
    for key in ["mean_test_score", "std_test_score"] + [f"split{k}_test_score" for k in range(4)]:
        np.testing.assert_allclose(ours.cv_results_[key], sk.cv_results_[key], atol=1e-5)
    assert ours.alpha_ == pytest.approx(sk.alpha_)
    train = SparseGaussianMRFCV(alphas=alphas, cv=4, tol=1e-10).fit(X)
    assert np.all(train.cv_results_["mean_test_score"][:-1] <
                  ours.cv_results_["mean_test_score"][:-1])


def test_plot():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    m = SparseGaussianMRF(alpha=0.1).fit(_data())
    ax = m.plot()
    assert "edges" in ax.get_title()
    ax2 = m.plot(kind="pattern")
    assert "pattern" in ax2.get_title()
    with pytest.raises(ValueError):
        m.plot(kind="nope")


def test_verbose_goes_to_stderr_and_history_is_kept(capsys):
    X = _data(60, 9)
    m = SparseGaussianMRF(alpha=0.05, verbose=True).fit(X)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == len(m.history_) and lines[0].startswith("newton-cg it 1")
    for solver in ("newton-cd", "projected-gradient"):
        m = SparseGaussianMRF(alpha=0.05, verbose=True, solver=solver).fit(X)
        out, err = capsys.readouterr()
        assert out == "" and solver in err and len(m.history_) >= 1
    m = SparseGaussianMRF(alpha=0.02, blocks=[0, 0, 0, 1, 1, 1, 2, 2, 2], verbose=True).fit(X)
    out, err = capsys.readouterr()
    assert out == "" and "block-l1" in err
    SparseGaussianMRFCV(alphas=3, cv=3, verbose=True).fit(X)
    out, err = capsys.readouterr()
    assert out == "" and "fold 2" in err


def test_convergence_warning_on_max_iter():
    X = _data(60, 9)
    for solver in ("newton-cg", "newton-cd", "projected-gradient"):
        with pytest.warns(ConvergenceWarning, match="max_iter=1"):
            m = SparseGaussianMRF(alpha=0.02, solver=solver, max_iter=1, tol=1e-12).fit(X)
        assert not m.converged_ and m.stop_reason_ == "max_iter"
    with pytest.warns(ConvergenceWarning):
        SparseGaussianMRF(alpha=0.02, blocks=[0, 0, 0, 1, 1, 1, 2, 2, 2], max_iter=1,
                          tol=1e-12).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SparseGaussianMRF(alpha=0.02).fit(X)


@pytest.mark.skipif(not GENE.exists(), reason="shared data folder ../shared/data "
                    "(gene_expression_bdgraph) not present")
def test_gene_expression_block_l1():
    X = np.genfromtxt(GENE, delimiter=",", skip_header=1)[:, 1:]
    assert X.shape == (60, 100)
    X = (X - X.mean(0)) / X.std(0)
    lab = np.arange(100) % 10
    m = SparseGaussianMRF(alpha=0.05, blocks=lab, tol=1e-5).fit(X)
    assert m.converged_ and np.linalg.eigvalsh(m.precision_)[0] > 0
    l1 = SparseGaussianMRF(alpha=0.3).fit(X)     # n > m: singular S
    assert l1.converged_ and 0 < len(l1.edges_) < 100 * 99 // 2
