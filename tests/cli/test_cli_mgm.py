"""``spargel mgm``: a mixed graphical model from a CSV of continuous and categorical
columns -- the edges of a known graph, the names and levels, the model file, every
criterion, and bad input as one line naming the file and line."""

import json

import numpy as np
import pytest

from spargel.cli import main
from spargel.mrf.mixed import MixedGraphicalModel, make_mixed_data

LEVELS = {1: ["no", "yes"], 3: ["high", "low", "mid"]}       # sorted: the order of the codes


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, code):
    assert rc == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spargel: error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def data():
    X, edges, _ = make_mixed_data(600, "gcgcg", 4, levels=[2, 2, 2, 3, 2], seed=1)
    lines = ["age,smoker,bmi,stage,score"]
    for row in X:
        lines.append(",".join(f"{v:.17g}" if j not in LEVELS else LEVELS[j][int(v)] for j, v in enumerate(row)))
    return X, edges, "\n".join(lines) + "\n"


def test_edges_names_levels_and_model(tmp_path, capsys, data):
    X, edges, text = data
    path = tmp_path / "d.csv"
    path.write_text(text)
    rc, out, err = run(["mgm", path, "--types", "g,c,g,c,g"], capsys)
    assert rc == 0, err
    assert "mgm: 5 variables (3 continuous, 2 categorical), 600 samples" in err
    direct = MixedGraphicalModel("gcgcg").fit(X)                  # the same data, coded 0..k-1
    lines = (tmp_path / "d.mgm-edges.csv").read_text().splitlines()
    assert lines[0] == "i,j,weight,sign,name_i,name_j"
    got = [tuple(map(int, ln.split(",")[:2])) for ln in lines[1:]]
    assert got == [tuple(e) for e in direct.edges_.tolist()] and set(got) == set(map(tuple, edges.tolist()))
    names = "age smoker bmi stage score".split()
    for ln in lines[1:]:
        i, j, w, s, a, b = ln.split(",")
        assert float(w) == pytest.approx(direct.adjacency_[int(i), int(j)], rel=1e-5)
        assert int(s) == direct.signs_[int(i), int(j)] and (a, b) == (names[int(i)], names[int(j)])
    meta = json.loads((tmp_path / "d.mgm.levels.json").read_text())
    assert meta == {"names": names, "types": "gcgcg", "levels": [None, LEVELS[1], None, LEVELS[3], None]}
    model = MixedGraphicalModel.load(tmp_path / "d.mgm")
    assert np.array_equal(model.edges_, direct.edges_)


@pytest.mark.parametrize("select", ["stars", "cv"])
def test_other_criteria_to_stdout(tmp_path, capsys, data, select):
    X, _, text = data
    path = tmp_path / "d.csv"
    path.write_text(text)
    rc, out, err = run(["mgm", path, "--types", "gcgcg", "--select", select, "--out-edges", "-", "--quiet",
                        "--n-subsamples", "6", "--cv", "3", "--jobs", "2", "--random-state", "3"], capsys)
    assert rc == 0 and err == "", err
    direct = MixedGraphicalModel("gcgcg", criterion=select, n_subsamples=6, cv=3, random_state=3).fit(X)
    rows = out.splitlines()[1:]
    assert [tuple(map(int, r.split(",")[:2])) for r in rows] == [tuple(e) for e in direct.edges_.tolist()]


def test_bad_input_is_one_line_naming_file_and_line(tmp_path, capsys, data):
    _, _, text = data
    path = tmp_path / "d.csv"
    path.write_text(text)
    err = one_line_error(*run(["mgm", path, "--types", "gcgc"], capsys)[::2], 2)
    assert "--types gives 4 types for the 5 columns of" in err
    err = one_line_error(*run(["mgm", path, "--types", "gcgxg"], capsys)[::2], 2)
    assert "--types must be letters g" in err
    err = one_line_error(*run(["mgm", path, "--types", "ggggg"], capsys)[::2], 1)
    assert "d.csv:2: column 2 (smoker) is continuous (type g): 'yes' is not a number" in err
    rows = text.splitlines()
    rows[5] = "1.5,yes,,low,0.2"
    path.write_text("\n".join(rows) + "\n")
    err = one_line_error(*run(["mgm", path, "--types", "gcgcg"], capsys)[::2], 1)
    assert "d.csv:6: column 3 (bmi): missing value ''" in err
    rows = text.splitlines()
    rows = [rows[0]] + [",".join(r.split(",")[:1] + ["yes"] + r.split(",")[2:]) for r in rows[1:]]
    path.write_text("\n".join(rows) + "\n")
    err = one_line_error(*run(["mgm", path, "--types", "gcgcg"], capsys)[::2], 1)
    assert "column 2 (smoker) (categorical) is constant" in err
    err = one_line_error(*run(["mgm", path, "--types", "gcgcg", "--jobs", "0"], capsys)[::2], 2)
    assert "--jobs" in err
    err = one_line_error(*run(["mgm", path, "--types", "gcgcg", "--model", path], capsys)[::2], 2)
    assert "input" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]          # nothing written
