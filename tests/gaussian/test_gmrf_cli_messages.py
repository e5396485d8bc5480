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
