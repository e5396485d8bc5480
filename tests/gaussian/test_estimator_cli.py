import csv
import io
import json
import argparse
import contextlib
from pathlib import Path

import numpy as np
import pytest

from spargel.estimators.gaussian import SparseGaussianMRF, SparseGaussianMRFCV

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
GENE = DATA / "gene_expression_bdgraph" / "geneExpression.csv"


def _data(m=80, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.9 * X[:, 0]
    X[:, 2] += 0.7 * X[:, 1]
    return X + 3.0


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
    assert m.converged_ and m.duality_gap_ <= 1e-10 * abs(m.objective_) + 1e-12
    assert m.history_[-1]["iteration"] == m.n_iter_
    # fit_covariance gives the same estimate
    S = np.cov(X.T, bias=True)
    m2 = SparseGaussianMRF(alpha=0.1, tol=1e-10).fit_covariance(S, n_samples=80)
    np.testing.assert_allclose(m2.precision_, m.precision_, atol=1e-8)
    # assume_centered uses the raw second moment
    m3 = SparseGaussianMRF(alpha=0.1, tol=1e-10, assume_centered=True).fit(X - X.mean(0))
    np.testing.assert_allclose(m3.precision_, m.precision_, atol=1e-4)


def test_estimator_errors():
    with pytest.raises(ValueError, match="NaN"):
        SparseGaussianMRF().fit(np.array([[1.0, np.nan], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="2-D"):
        SparseGaussianMRF().fit(np.ones(4))
    with pytest.raises(ValueError, match="square"):
        SparseGaussianMRF().fit_covariance(np.ones((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        SparseGaussianMRF().fit_covariance(np.array([[1.0, 0.1], [0.5, 1.0]]))
    with pytest.raises(ValueError, match="negative"):
        SparseGaussianMRF(alpha=-0.5).fit(_data())
    with pytest.raises(ValueError, match="overlap"):
        SparseGaussianMRF(blocks=[[(0, 1)], [(1, 0)]]).fit(_data())
    with pytest.raises(ValueError, match="not fitted"):
        SparseGaussianMRF().score(_data())
    m = SparseGaussianMRF(alpha=0.1).fit(_data())
    with pytest.raises(ValueError, match="shape"):
        m.score(np.ones((3, 2)))


def test_block_estimator_and_cv():
    X = _data(60, 9)
    lab = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    m = SparseGaussianMRF(alpha=0.02, blocks=lab).fit(X)
    assert m.solver_ == "block-l1" and m.converged_
    cvm = SparseGaussianMRFCV(alphas=6, cv=3, random_state=0, tol=1e-10).fit(X)
    assert cvm.alpha_ in cvm.alphas_
    res = cvm.cv_results_
    assert res["split_test_scores"].shape == (3, 6)
    assert res["mean_test_score"][list(cvm.alphas_).index(cvm.alpha_)] == res["mean_test_score"].max()
    ref = SparseGaussianMRF(alpha=cvm.alpha_, tol=1e-10).fit(X)
    np.testing.assert_allclose(cvm.precision_, ref.precision_, atol=1e-4)
    cvb = SparseGaussianMRFCV(alphas=[0.5, 0.05, 0.01], cv=3, blocks=lab).fit(X)
    assert cvb.alpha_ in (0.5, 0.05, 0.01)


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


def _cli(argv):
    from spargel.gaussian import cli

    parser = argparse.ArgumentParser(prog="spargel")
    sub = parser.add_subparsers(dest="command")
    cli.add_parser(sub)
    args = parser.parse_args(argv)
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = cli.run(args)
    return rc, out.getvalue(), err.getvalue()


def test_cli(tmp_path):
    X = _data(50, 5)
    f = tmp_path / "d.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id"] + [f"v{j}" for j in range(5)])
        for k, row in enumerate(X):
            w.writerow([f"s{k}"] + [repr(float(v)) for v in row])
    rc, out, err = _cli(["gmrf", str(f), "--alpha", "0.1", "--history", str(tmp_path / "h.jsonl")])
    assert rc == 0, err
    K = np.loadtxt(tmp_path / "d.precision.csv", delimiter=",", skiprows=1)
    ref = SparseGaussianMRF(alpha=0.1).fit(X)
    np.testing.assert_allclose(K, ref.precision_, rtol=1e-12)
    edges = list(csv.DictReader(open(tmp_path / "d.edges.csv")))
    assert len(edges) == len(ref.edges_) and edges[0]["name_i"].startswith("v")
    hist = [json.loads(l) for l in open(tmp_path / "h.jsonl")]
    assert hist and "objective" in hist[0]
    rc, out, err = _cli(["gmrf", str(f), "--alpha", "0.1", "--out-edges", "-",
                         "--out-precision", str(tmp_path / "p.csv"), "--quiet"])
    assert rc == 0 and out.startswith("i,j,weight") and err == ""
    rc, out, err = _cli(["gmrf", str(f), "--cv", "3", "--n-alphas", "4", "--out-edges", "-",
                         "--out-precision", str(tmp_path / "p.csv")])
    assert rc == 0 and "alpha=" in err


@pytest.mark.parametrize("content, argv, msg", [
    ("a,b\n1,2\n3,x\n", ["--alpha", "0.1"], "line 3: non-numeric"),
    ("a,b\n1,2\n3\n", ["--alpha", "0.1"], "line 3: expected 2 values"),
    ("a,b\n1,2\n3,4\n", [], "give --alpha"),
    ("a,b\n1,2\n3,4\n", ["--alpha", "-1"], "--alpha must be"),
    ("", ["--alpha", "0.1"], "empty"),
    ("1,2\n2,1\n", ["--alpha", "0.1", "--covariance", "--cv", "2"], "--cv needs samples"),
    ("1,2\n3,1\n", ["--alpha", "0.1", "--covariance"], "not symmetric"),
    ("a,b\n1,nan\n3,4\n", ["--alpha", "0.1"], "non-finite"),
])
def test_cli_errors(tmp_path, content, argv, msg):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    rc, out, err = _cli(["gmrf", str(f)] + argv)
    assert rc == 2
    assert msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_missing_file(tmp_path):
    rc, out, err = _cli(["gmrf", str(tmp_path / "none.csv"), "--alpha", "1"])
    assert rc == 2 and "cannot read" in err


@pytest.mark.skipif(not GENE.exists(), reason="shared data folder ../shared/data (gene_expression_bdgraph) not present")
def test_gene_expression_block_l1():
    X = np.genfromtxt(GENE, delimiter=",", skip_header=1)[:, 1:]
    assert X.shape == (60, 100)
    X = (X - X.mean(0)) / X.std(0)
    lab = np.arange(100) % 10
    m = SparseGaussianMRF(alpha=0.05, blocks=lab, tol=1e-5).fit(X)
    assert m.converged_ and np.linalg.eigvalsh(m.precision_)[0] > 0
    l1 = SparseGaussianMRF(alpha=0.3).fit(X)     # n > m: singular S
    assert l1.converged_ and 0 < len(l1.edges_) < 100 * 99 // 2
