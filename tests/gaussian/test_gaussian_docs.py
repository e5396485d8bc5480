"""Every Python example of docs/gaussian.md runs as written (in order, in one
namespace, as a reader would paste them)."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "gaussian.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_there_are_examples():
    assert len(_blocks()) >= 6


def test_docs_examples_run(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)           # nothing an example writes lands in the checkout
    namespace = {"__name__": "docs_gaussian"}
    for k, code in enumerate(_blocks()):
        exec(compile(code, f"{DOC.name}[python block {k}]", "exec"), namespace)
    # what the comments of the examples claim
    assert namespace["model"].edges_.tolist() == [[0, 1]]
    assert namespace["m"].solver_ == "block-l1"
    res, rows = namespace["res"], namespace["rows"]
    assert res.converged
    sim, sel_path, roc = namespace["sim"], namespace["sel_path"], namespace["roc"]
    assert sim.data.shape == (200, 40) and sim.n_edges == 38
    assert sel_path.alphas_[sel_path.selected_index_] == sel_path.alpha_
    assert len(roc.tpr) == len(sel_path.path_) and 0 < roc.auc <= max(roc.fpr)
    cv = namespace["cv"]
    assert sorted(cv.cv_results_)[:4] == ["alphas", "mean_edges", "mean_test_score",
                                         "split0_test_score"]
