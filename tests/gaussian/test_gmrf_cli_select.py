"""``spargel gmrf --select ebic|stars|ric``: the same choice as SparseGaussianMRFSelect,
the path plot, and the option checks."""

import csv

import pytest

import spargel
from spargel.cli import main
from spargel.gaussian.selection import SparseGaussianMRFSelect


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    X = spargel.make_graph_data(120, 12, "hub", g=2, random_state=0).data
    path = tmp_path_factory.mktemp("sel") / "x.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"v{j}" for j in range(X.shape[1])])
        w.writerows([[repr(float(v)) for v in row] for row in X])
    return X, path


def _run(argv, capsys):
    rc = main(["gmrf", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("crit, extra, kw", [
    ("ebic", ["--gamma", "0.25"], dict(gamma=0.25)),
    ("stars", ["--seed", "3", "--n-subsamples", "4"], dict(random_state=3, n_subsamples=4)),
    ("ric", ["--seed", "3"], dict(random_state=3)),
])
def test_select_matches_the_estimator(data, tmp_path, capsys, crit, extra, kw):
    X, path = data
    edges = tmp_path / "e.csv"
    model = tmp_path / "m.model"
    rc, out, err = _run([path, "--select", crit, "--n-alphas", 6, "--out-edges", edges,
                         "--save-model", model, *extra], capsys)
    assert rc == 0 and out == ""
    ref = SparseGaussianMRFSelect(crit, alphas=6, **kw).fit(X)
    assert f"alpha={ref.alpha_:.6g} ({crit.upper()}" in err
    rows = list(csv.DictReader(open(edges)))
    assert [[int(r["i"]), int(r["j"])] for r in rows] == ref.edges_.tolist()
    loaded = SparseGaussianMRFSelect.load(model)
    assert loaded.alpha_ == pytest.approx(ref.alpha_)


def test_plot_path(data, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _, path = data
    png = tmp_path / "p.png"
    rc, _, err = _run([path, "--select", "ebic", "--plot-path", png, "--quiet"], capsys)
    assert rc == 0 and png.read_bytes()[:4] == b"\x89PNG" and err == ""


@pytest.mark.parametrize("argv, msg", [
    (["--select", "ebic", "--alpha", "0.1"], "give either --alpha or --select, not both"),
    (["--select", "ebic", "--cv", "3"], "give either --cv or --select, not both"),
    (["--select", "ebic", "--cv", "3", "--alpha", "1"], "only one of --alpha, --cv and --select"),
    (["--select", "ebic", "--stars-threshold", "0.05"], "--stars-threshold goes with --select stars"),
    (["--select", "stars", "--gamma", "1"], "--gamma goes with --select ebic"),
    (["--alpha", "0.1", "--plot-path", "x.png"], "--plot-path goes with --select"),
    (["--select", "ric", "--standardize"], "--select does not take --standardize"),
    (["--select", "ebic", "--penalize-diagonal"], "does not take --penalize-diagonal"),
    (["--select", "ebic", "--method", "mb"], "--select ebic needs a likelihood"),
    (["--select", "stars", "--method", "concord", "--alpha", "0.2"], "give either --alpha or --select"),
    (["--method", "mb"], "--method mb needs --alpha X or --select stars|ric"),
    (["--select", "stars", "--n-subsamples", "0"], "--n-subsamples"),
    (["--select", "aic"], "invalid choice"),
    (["--select", "ebic", "--seed", "1"], "--seed shuffles the --cv folds or seeds"),
])
def test_usage_errors(data, capsys, argv, msg):
    _, path = data
    rc, _, err = _run([path, *argv], capsys)
    assert rc == 2 and msg in err
