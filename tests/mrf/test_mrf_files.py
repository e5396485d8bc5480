"""Model files of IsingFit and MixedGraphicalModel: round trips (the same graph, weights
and predictions), and damaged or forged files refused with the file named."""

import hashlib

import numpy as np
import pytest

from reliability_helpers import header_of, members, npy_bytes, with_header, write_members
from spargel.errors import ModelFileError
from spargel.mrf.mixed import MixedGraphicalModel, make_mixed_data
from spargel.mrf.nodewise import IsingFit


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (400, 6))
    X[:, 1] = np.where(rng.random(400) < 0.85, X[:, 0], 1 - X[:, 0])
    X[:, 3] = np.where(rng.random(400) < 0.8, X[:, 2], 1 - X[:, 2])
    return X


@pytest.fixture(scope="module")
def mixed():
    types = "gcgccg"
    X, _, _ = make_mixed_data(500, types, 6, levels=[2, 2, 2, 3, 4, 2], seed=4)
    X[:, 3] += 10                                      # levels 10, 11, 12: kept as given
    return types, X


def test_isingfit_round_trip(tmp_path, binary):
    fit = IsingFit(rule="or", gamma=0.5).fit(binary)
    fit.save(tmp_path / "m.isingfit")
    back = IsingFit.load(tmp_path / "m.isingfit")
    assert back.get_params() == fit.get_params()
    for name in ("coef_", "thresholds_", "lambdas_", "weights_", "edges_"):
        assert np.array_equal(getattr(back, name), getattr(fit, name))
    assert np.array_equal(back.ebic_, fit.ebic_, equal_nan=True)
    assert back.n_samples_ == fit.n_samples_
    assert back.score(binary) == fit.score(binary)


@pytest.mark.parametrize("criterion", ["ebic", "stars", "cv"])
def test_mixed_round_trip(tmp_path, mixed, criterion):
    types, X = mixed
    fit = MixedGraphicalModel(types, criterion=criterion, n_subsamples=5, cv=3, random_state=1, n_lambdas=30,
                              levels={1: [1, 0]}).fit(X)
    fit.save(tmp_path / "m.mgm")
    back = MixedGraphicalModel.load(tmp_path / "m.mgm")
    assert back.get_params() == dict(fit.get_params(), levels=None)      # levels_ carry them
    assert "".join(back.types_) == types
    assert [None if v is None else v.tolist() for v in back.levels_] == \
        [None if v is None else v.tolist() for v in fit.levels_]
    assert back.levels_[1].tolist() == [1, 0] and back.levels_[3].tolist() == [10, 11, 12]
    for name in ("edges_", "adjacency_", "signs_", "groups_", "lambdas_", "path_index_"):
        assert np.array_equal(getattr(back, name), getattr(fit, name)), name
    assert all(np.array_equal(a, b) for a, b in zip(back.coef_, fit.coef_))
    assert all(np.array_equal(a, b) for a, b in zip(back.intercepts_, fit.intercepts_))
    assert back.edge_params_.keys() == fit.edge_params_.keys()
    assert np.array_equal(back.criterion_scores_, fit.criterion_scores_, equal_nan=True)
    if criterion == "stars":
        assert np.array_equal(back.edge_frequency_, fit.edge_frequency_)
    if criterion == "cv":
        assert np.array_equal(back.cv_scores_, fit.cv_scores_)


def test_damaged_and_forged_files_are_refused(tmp_path, mixed, binary):
    types, X = mixed
    MixedGraphicalModel(types).fit(X).save(tmp_path / "m.mgm")
    IsingFit().fit(binary).save(tmp_path / "i.isingfit")
    with pytest.raises(ModelFileError, match="i.isingfit: holds a 'isingfit' model, not a 'mixed-graph'"):
        MixedGraphicalModel.load(tmp_path / "i.isingfit")
    with pytest.raises(ModelFileError, match="not a 'isingfit'"):
        IsingFit.load(tmp_path / "m.mgm")
    parts = members(tmp_path / "m.mgm")
    raw = bytearray(parts["coef.npy"])
    raw[-3] ^= 0xFF
    write_members(tmp_path / "bad.mgm", dict(parts, **{"coef.npy": bytes(raw)}))
    with pytest.raises(ModelFileError, match="bad.mgm: array 'coef' fails its checksum"):
        MixedGraphicalModel.load(tmp_path / "bad.mgm")

    def forged(name, array, path):
        """The file with one array replaced and its header resealed (as a forger would)."""
        header = header_of(parts)
        header["arrays"][name] = {"dtype": array.dtype.str, "shape": list(array.shape),
                                  "sha256": hashlib.sha256(array.tobytes()).hexdigest()}
        write_members(path, dict(with_header(parts, header), **{name + ".npy": npy_bytes(array)}))
        return path

    with pytest.raises(ModelFileError, match="groups do not match"):
        MixedGraphicalModel.load(forged("groups", np.arange(7, dtype=np.int64), tmp_path / "g.mgm"))
    with pytest.raises(ModelFileError, match="coef must hold"):
        MixedGraphicalModel.load(forged("coef", np.zeros(3), tmp_path / "c.mgm"))
    with pytest.raises(ModelFileError, match="levels_count"):
        MixedGraphicalModel.load(forged("levels_count", np.array([0, 1, 0, 3, 4, 0]), tmp_path / "l.mgm"))
    with pytest.raises(ModelFileError, match="no such file"):
        IsingFit.load(tmp_path / "none.isingfit")
    iparts = members(tmp_path / "i.isingfit")
    header = header_of(iparts)
    bad = np.full((6, 6), np.nan)
    header["arrays"]["coef"] = {"dtype": bad.dtype.str, "shape": [6, 6],
                                "sha256": hashlib.sha256(bad.tobytes()).hexdigest()}
    write_members(tmp_path / "n.isingfit", dict(with_header(iparts, header), **{"coef.npy": npy_bytes(bad)}))
    with pytest.raises(ModelFileError, match="n.isingfit: invalid model .coef must be finite"):
        IsingFit.load(tmp_path / "n.isingfit")
