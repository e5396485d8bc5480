"""``spargel gmrf``'s messages for inputs it cannot use: a singular covariance at
alpha = 0 (which columns, and what to do), a file that is not comma-separated."""

import numpy as np
import pytest

from spargel.cli import main
from spargel.errors import DataFormatError
from spargel.gaussian.estimator import SparseGaussianMRF


def _run(argv, capsys):
    rc = main(["gmrf", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_alpha_0_on_duplicate_columns_names_them(tmp_path, capsys):
    # small integers: the covariance is exactly singular yet its Cholesky factor
    # exists, and numpy's inverse then said only "Singular matrix"
    data = tmp_path / "d.csv"
    data.write_text("a,b,c\n1,1,5\n2,2,3\n3,3,1\n4,4,0\n5,5,2\n")
    rc, out, err = _run([data, "--alpha", "0", "--out-edges", tmp_path / "e.csv"], capsys)
    assert rc == 1 and err.count("\n") == 1
    assert f"{data}: the covariance is singular: column 'a' and column 'b' are perfectly correlated" in err
    assert "use alpha > 0" in err
    assert not (tmp_path / "e.csv").exists()


def test_alpha_0_on_too_few_samples_says_so(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = tmp_path / "w.csv"
    data.write_text("".join(",".join(map(repr, r)) + "\n" for r in rng.standard_normal((3, 5)).tolist()))
    rc, out, err = _run([data, "--alpha", "0", "--out-edges", tmp_path / "e.csv"], capsys)
    assert rc == 1 and "singular" in err and "fewer samples than variables" in err
    assert "Singular matrix" not in err


def test_estimator_alpha_0_on_a_multiple_of_a_column():
    X = np.random.default_rng(0).standard_normal((30, 3))
    X = np.column_stack([X, 2 * X[:, 0]])
    with pytest.raises(DataFormatError, match=r"singular: variable 0 and variable 3 are perfectly correlated"):
        SparseGaussianMRF(alpha=0).fit(X)
    # alpha > 0 is the way out the message gives
    assert np.all(np.isfinite(SparseGaussianMRF(alpha=0.1).fit(X).precision_))


@pytest.mark.parametrize("text, line, what", [
    ("a;b;c\n1;2;3\n4;5;6\n7;8;9\n", 1, "semicolon"),            # one field per line
    ("a;b;c\n1;2;3\n4,5;5;6\n7;8;9\n", 3, "semicolon"),          # a decimal comma: 2 fields
    ("a b c\n1 2 3\n4 5 6\n7 8 9\n", 1, "space"),
    ("1,5\t2,5\n3,1\t4,2\n7,0\t1,1\n", None, "tab"),              # tabs and decimal commas
])
def test_a_file_that_is_not_comma_separated_says_so(tmp_path, capsys, text, line, what):
    data = tmp_path / "d.csv"
    data.write_text(text)
    rc, out, err = _run([data, "--alpha", "0.1", "--out-edges", tmp_path / "e.csv"], capsys)
    assert rc == 1 and err.count("\n") == 1, err
    where = f"{data}:{line}: " if line else f"{data}:"
    assert where in err
    assert f"{what}-separated" in err and "not comma-separated" in err
    assert not (tmp_path / "e.csv").exists()


def test_tab_separated_files_are_still_read(tmp_path, capsys):
    data = tmp_path / "d.tsv"
    rng = np.random.default_rng(0)
    data.write_text("a\tb\tc\n" + "".join("\t".join(map(repr, r)) + "\n" for r in rng.standard_normal((20, 3)).tolist()))
    rc, out, err = _run([data, "--alpha", "0.1", "--out-edges", tmp_path / "e.csv", "--quiet"], capsys)
    assert rc == 0, err


@pytest.mark.parametrize("how, options", [
    ("given", ["--alpha", "0.1"]),
    ("chosen by 3-fold cross-validation among 4 alphas", ["--cv", "3", "--n-alphas", "4"]),
])
def test_plot_title_says_alpha_and_how_it_was_chosen(tmp_path, capsys, monkeypatch, how, options):
    pytest.importorskip("matplotlib")
    import spargel.gaussian.plot as plot

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    X[:, 1] += X[:, 0]
    data = tmp_path / "d.csv"
    data.write_text("".join(",".join(map(repr, r)) + "\n" for r in X.tolist()))
    titles = []
    real = plot.plot_overview
    monkeypatch.setattr(plot, "plot_overview",
                        lambda *a, **k: titles.append(real(*a, **k).get_title()) or real(*a, **k))
    rc, out, err = _run([data, *options, "--out-edges", tmp_path / "e.csv", "--plot", tmp_path / "g.png",
                         "--quiet"], capsys)
    assert rc == 0, err
    first = titles[0].splitlines()[0]
    assert first.startswith("alpha = ") and first.endswith(f"({how})")
    assert (tmp_path / "g.png").stat().st_size > 0
