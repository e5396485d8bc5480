"""Bad option values of ``spargel mrf`` and ``spargel gmrf`` are usage errors: exit
status 2 and one line that names the option, as the CRF commands do."""

import numpy as np
import pytest

from spargel.cli import main


def _states(path):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (40, 3))
    path.write_text("a,b,c\n" + "".join(",".join(map(str, r)) + "\n" for r in X))
    return str(path)


def _samples(path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    path.write_text("a,b,c,d\n" + "".join(",".join(map(repr, map(float, r))) + "\n" for r in X))
    return str(path)


@pytest.mark.parametrize("options, named", [
    (["--bp-damping", "1"], "--bp-damping"),
    (["--bp-damping", "1.5"], "--bp-damping"),
    (["--solver", "bogus"], "--solver"),
    (["--solver", "sgd-l1"], "--solver"),          # needs sample passes an MRF does not offer
    (["--solver", "bcd"], "--solver"),
    (["--solver", "ap"], "--solver"),
    (["--group", "--solver", "grafting"], "--solver"),   # a group penalty is not separable
])
def test_mrf_bad_option_values_exit_2_naming_the_option(tmp_path, capsys, options, named):
    data = _states(tmp_path / "d.csv")
    rc = main(["mrf", data, "--l1", "1", "--quiet", *options])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert named in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


@pytest.mark.parametrize("options, named", [
    (["--alpha", "0.1", "--seed", "3"], "--seed"),            # no folds to shuffle: not ignored
    (["--alpha", "0.1", "--n-samples", "5"], "--n-samples"),  # only with --covariance
    (["--alpha", "0.1", "--blocks", "GROUPS", "--solver", "newton-cg"], "--blocks"),
])
def test_gmrf_bad_option_combinations_exit_2_naming_the_option(tmp_path, capsys, options, named):
    data = _samples(tmp_path / "d.csv")
    (tmp_path / "g.csv").write_text("x\nx\ny\ny\n")
    options = [str(tmp_path / "g.csv") if o == "GROUPS" else o for o in options]
    rc = main(["gmrf", data, "--quiet", "--out-edges", str(tmp_path / "e.csv"), *options])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert named in err and err.count("\n") == 1
    assert not (tmp_path / "e.csv").exists()


def test_check_number_open_upper_bound():
    from spargel.cli.common import UsageError, check_number

    assert check_number("--x", 0.5, low=0, high=1, high_open=True) == 0.5
    with pytest.raises(UsageError, match=r"--x must be a finite number >= 0 and < 1, got 1"):
        check_number("--x", 1, low=0, high=1, high_open=True)
