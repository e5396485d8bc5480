"""``spargel gmrf`` through the real entry point: outputs, exit codes, atomic writes."""

import csv
import json

import numpy as np
import pytest

from spargel.cli import main
from spargel.gaussian.estimator import SparseGaussianMRF, SparseGaussianMRFCV


def _data(m=50, n=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] += 0.9 * X[:, 0]
    X[:, 2] += 0.7 * X[:, 1]
    return X


def _write(path, X, names=True, labels=True):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        if names:
            w.writerow((["id"] if labels else []) + [f"v{j}" for j in range(X.shape[1])])
        for k, row in enumerate(X):
            w.writerow(([f"s{k}"] if labels else []) + [repr(float(v)) for v in row])
    return path


def _run(argv, capsys):
    rc = main(["gmrf", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_outputs_go_where_asked(tmp_path, capsys):
    X = _data()
    data_dir = tmp_path / "in"
    data_dir.mkdir()
    f = _write(data_dir / "d.csv", X)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, out, err = _run([f, "--alpha", 0.1, "--out-precision", out_dir / "K.csv",
                         "--history", out_dir / "h.jsonl"], capsys)
    assert rc == 0, err
    ref = SparseGaussianMRF(alpha=0.1).fit(X)
    # the edge list went to stdout, the rest where asked, nothing beside the input
    rows = list(csv.DictReader(out.splitlines()))
    assert len(rows) == len(ref.edges_) and rows[0]["name_i"].startswith("v")
    assert [(int(r["i"]), int(r["j"])) for r in rows] == [tuple(e) for e in ref.edges_]
    np.testing.assert_allclose([float(r["weight"]) for r in rows], ref.edge_weights_, rtol=1e-12)
    K = np.loadtxt(out_dir / "K.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(K, ref.precision_, rtol=1e-12)
    hist = [json.loads(line) for line in open(out_dir / "h.jsonl")]
    assert len(hist) == len(ref.history_) and "objective" in hist[0]
    assert sorted(p.name for p in data_dir.iterdir()) == ["d.csv"]
    assert sorted(p.name for p in out_dir.iterdir()) == ["K.csv", "h.jsonl"]
    assert "gmrf: 5 variables" in err and len(err.strip().splitlines()) == 1
    # edges to a file, precision to stdout, quiet
    rc, out, err = _run([f, "--alpha", 0.1, "--out-edges", out_dir / "e.csv",
                         "--out-precision", "-", "--quiet"], capsys)
    assert rc == 0 and err == "" and out.startswith("v0,v1")
    assert open(out_dir / "e.csv").readline().startswith("i,j,weight")


def test_verbose_and_convergence_warning(tmp_path, capsys):
    f = _write(tmp_path / "d.csv", _data(60, 8))
    rc, out, err = _run([f, "--alpha", 0.02, "--verbose"], capsys)
    assert rc == 0 and "newton-cg it 1" in err and "newton-cg it" not in out
    rc, out, err = _run([f, "--alpha", 0.02, "--max-iter", 1, "--tol", 1e-12], capsys)
    assert rc == 0 and "warning: newton-cg stopped before" in err


def test_cv_uses_the_estimators_folds(tmp_path, capsys):
    X = _data(60, 6, seed=2)
    f = _write(tmp_path / "d.csv", X, names=False, labels=False)
    rc, out, err = _run([f, "--cv", 3, "--n-alphas", 5], capsys)
    assert rc == 0, err
    ref = SparseGaussianMRFCV(alphas=5, cv=3).fit(X)
    assert f"alpha={ref.alpha_:.6g}," in err
    rc, out, err = _run([f, "--cv", 3, "--n-alphas", 5, "--seed", 4], capsys)
    ref = SparseGaussianMRFCV(alphas=5, cv=3, random_state=4).fit(X)
    assert rc == 0 and f"alpha={ref.alpha_:.6g}," in err


def test_refuses_to_overwrite_the_input(tmp_path, capsys):
    f = _write(tmp_path / "d.csv", _data())
    before = f.read_bytes()
    for opt in ("--out-edges", "--out-precision", "--history"):
        rc, out, err = _run([f, "--alpha", 0.1, opt, f], capsys)
        assert rc == 2 and "is also the input file" in err and len(err.strip().splitlines()) == 1
    rc, out, err = _run([f, "--alpha", 0.1, "--out-edges", tmp_path / "x.csv",
                         "--out-precision", tmp_path / "x.csv"], capsys)
    assert rc == 2 and "same file" in err
    rc, out, err = _run([f, "--alpha", 0.1, "--out-precision", "-"], capsys)
    assert rc == 2 and "only one output can go to stdout" in err
    assert f.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_atomic_writes(tmp_path, capsys, monkeypatch):
    import os

    import spargel.core.files as files

    f = _write(tmp_path / "d.csv", _data())
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "K.csv"
    target.write_text("old content\n")
    real_fsync = os.fsync

    def full_disk(fd):                       # the precision matrix is written, then the disk is full
        if os.fstat(fd).st_size > 100:
            raise OSError(28, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", full_disk)
    rc, out, err = _run([f, "--alpha", 0.1, "--out-edges", "-", "--out-precision", target], capsys)
    assert rc == 1 and "No space left on device" in err
    assert target.read_text() == "old content\n"          # untouched
    assert sorted(p.name for p in out_dir.iterdir()) == ["K.csv"]  # no temp file


def test_interrupt_exits_130(tmp_path, capsys, monkeypatch):
    f = _write(tmp_path / "d.csv", _data())

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(SparseGaussianMRF, "fit", interrupted)
    rc, out, err = _run([f, "--alpha", 0.1, "--out-edges", tmp_path / "e.csv"], capsys)
    assert rc == 130 and "interrupted" in err
    assert not (tmp_path / "e.csv").exists()


@pytest.mark.parametrize("content, argv, status, msg", [
    ("a,b\n1,2\n3,x\n", ["--alpha", "0.1"], 1, "bad.csv:3: non-numeric value 'x'"),
    ("a,b\n1,2\n3\n", ["--alpha", "0.1"], 1, "bad.csv:3: expected 2 values"),
    ("a,b\n1,nan\n3,4\n", ["--alpha", "0.1"], 1, "bad.csv:2: non-finite"),
    ("", ["--alpha", "0.1"], 1, "bad.csv: the file is empty"),
    ("1,2\n3,1\n", ["--alpha", "0.1", "--covariance"], 1, "not symmetric"),
    ("1,2\n2,1\n", ["--alpha", "0.1", "--covariance"], 1, "not positive semidefinite"),
    ("a,b\n1,2\n1,3\n1,4\n", ["--alpha", "0.1"], 1, "bad.csv: column 0 is constant"),
    ("a,b\n1,2\n", ["--alpha", "0.1"], 1, "need at least 2 samples"),
    ("a,b\n1,2\n3,4\n", [], 2, "give --alpha"),
    ("a,b\n1,2\n3,4\n", ["--alpha", "-1"], 2, "--alpha must be"),
    ("a,b\n1,2\n3,4\n", ["--alpha", "1", "--cv", "3"], 2, "either --alpha or --cv"),
    ("1,2\n2,1\n", ["--covariance", "--cv", "2"], 2, "--cv needs samples"),
    ("a,b\n1,2\n3,4\n", ["--alpha", "0.1", "--bogus"], 2, "unrecognized arguments"),
    ("a,b\n1,2\n3,4\n", ["--alpha", "0.1", "--solver", "glasso"], 2, "invalid choice"),
])
def test_errors_and_exit_status(tmp_path, capsys, content, argv, status, msg):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    rc, out, err = _run([f, *argv], capsys)
    assert rc == status, err
    assert msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_missing_file_and_extreme_scale(tmp_path, capsys):
    rc, out, err = _run([tmp_path / "none.csv", "--alpha", 1], capsys)
    assert rc == 1 and "none.csv: no such file" in err
    f = _write(tmp_path / "tiny.csv", _data() * 1e-160, names=False, labels=False)
    rc, out, err = _run([f, "--alpha", 0.1, "--out-edges", tmp_path / "e.csv"], capsys)
    assert rc == 1 and "tiny.csv: column 0 has standard deviation" in err
    assert not (tmp_path / "e.csv").exists()


def test_from_data(tmp_path, capsys):
    X = _data(m=30, n=8, seed=3)
    f = _write(tmp_path / "d.csv", X)
    rc, out, err = _run([f, "--alpha", 0.3, "--from-data", "--history", tmp_path / "h.jsonl"],
                        capsys)
    assert rc == 0, err
    ref = SparseGaussianMRF(alpha=0.3).fit(X)                 # the dense path
    rows = list(csv.DictReader(out.splitlines()))
    assert len(rows) >= 2
    assert [(int(r["i"]), int(r["j"])) for r in rows] == [tuple(e) for e in ref.edges_]
    np.testing.assert_allclose([float(r["weight"]) for r in rows], ref.edge_weights_,
                               rtol=1e-6)
    # a component larger than allowed: one line naming the alpha that splits it
    rc, out, err = _run([f, "--alpha", 0.01, "--from-data", "--max-component", 2], capsys)
    assert rc == 1 and out == "" and "splits every component" in err
    assert len(err.strip().splitlines()) == 1
    rc, out, err = _run([f, "--alpha", 0.3, "--from-data", "--covariance"], capsys)
    assert rc == 2 and "--from-data" in err and "--covariance" in err
    rc, out, err = _run([f, "--alpha", 0.3, "--max-component", 5], capsys)
    assert rc == 2 and "goes with --from-data" in err


def test_from_data_writes_the_precisions_nonzeros_and_a_picture(tmp_path, capsys):
    """--from-data --out-precision: the non-zeros of the upper triangle as i,j,value rows
    (no p x p CSV), equal to the dense path's precision; --plot draws the graph."""
    pytest.importorskip("matplotlib")
    X = _data(m=40, n=8, seed=5)
    f = _write(tmp_path / "d.csv", X)
    rc, out, err = _run([f, "--alpha", 0.3, "--from-data", "--out-edges", tmp_path / "e.csv",
                         "--out-precision", tmp_path / "K.csv", "--plot", tmp_path / "g.png"], capsys)
    assert rc == 0, err
    ref = SparseGaussianMRF(alpha=0.3).fit(X).precision_
    rows = list(csv.DictReader((tmp_path / "K.csv").read_text().splitlines()))
    assert set(rows[0]) == {"i", "j", "value", "name_i", "name_j"}
    K = np.zeros_like(ref)
    for r in rows:
        i, j = int(r["i"]), int(r["j"])
        assert i <= j and r["name_i"] == f"v{i}" and r["name_j"] == f"v{j}"
        K[i, j] = K[j, i] = float(r["value"])
    assert np.array_equal(K != 0, ref != 0)
    np.testing.assert_allclose(K, ref, rtol=1e-6, atol=1e-9)
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_from_data_plot_of_a_large_graph_draws_the_variables_with_edges(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import spargel.cli.gmrf as gmrf_cli

    X = _data(m=40, n=8, seed=5)
    f = _write(tmp_path / "d.csv", X)
    monkeypatch.setattr(gmrf_cli, "PLOT_MAX_VARIABLES", 5)
    drawn = []
    real = gmrf_cli._plot_matrix
    monkeypatch.setattr(gmrf_cli, "_plot_matrix", lambda *a: drawn.append(real(*a)) or drawn[-1])
    rc, out, err = _run([f, "--alpha", 0.6, "--from-data", "--plot", tmp_path / "g.png"], capsys)
    ref = SparseGaussianMRF(alpha=0.6).fit(X)
    with_edges = np.unique(ref.edges_)
    assert 0 < with_edges.size <= 5          # the correlated first columns, not all eight
    assert rc == 0, err
    K, labels, title = drawn[0]
    assert labels == [f"v{i}" for i in with_edges] and K.shape == (with_edges.size,) * 2
    np.testing.assert_allclose(K, ref.precision_[np.ix_(with_edges, with_edges)], rtol=1e-6, atol=1e-9)
    assert title.startswith(f"{with_edges.size} of 8 variables")
    monkeypatch.setattr(gmrf_cli, "PLOT_MAX_VARIABLES", 1)
    rc, out, err = _run([f, "--alpha", 0.3, "--from-data", "--plot", tmp_path / "h.png"], capsys)
    assert rc == 1 and "variables with an edge; --plot draws at most 1" in err
    assert not (tmp_path / "h.png").exists()
