"""Claims of the user documentation that the code can check: the guide's quick start
runs in order, its troubleshooting names the model files spargel reads, the migration
table states SparseGaussianMRFCV's defaults where they differ from scikit-learn's."""

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _shell_lines(text):
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        lines += [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return lines


def test_quick_start_makes_the_pattern_file_before_using_it():
    lines = _shell_lines((DOCS / "guide.md").read_text())
    uses = [k for k, ln in enumerate(lines) if "--pattern chunking.tpl" in ln]
    makes = [k for k, ln in enumerate(lines) if re.search(r">\s*chunking\.tpl\s*$", ln)]
    assert uses and makes and makes[0] < uses[0]


def test_troubleshooting_names_the_foreign_models_spargel_reads():
    from spargel.chain import estimator

    doc = estimator.CRF.load.__doc__
    assert "CRFsuite" in doc and "Wapiti" in doc and "CRF++" in doc     # what the code reads
    text = (DOCS / "guide.md").read_text()
    entry = text[text.index("**`not a spargel model file`**"):]
    entry = entry[:entry.index("\n* ")]
    assert "cannot be read" not in entry.replace("binary model cannot be read", "")
    for tool in ("CRFsuite", "Wapiti", "CRF++"):
        assert tool in entry


def test_migration_table_states_the_cv_defaults():
    from sklearn.covariance import GraphicalLassoCV

    from spargel.gaussian.estimator import SparseGaussianMRFCV

    ours, theirs = SparseGaussianMRFCV().get_params(), GraphicalLassoCV().get_params()
    row = next(ln for ln in (DOCS / "migration.md").read_text().splitlines()
               if ln.startswith("| `GraphicalLassoCV("))
    assert f"alphas={ours['alphas']}" in row and f"alpha_min_ratio={ours['alpha_min_ratio']}" in row
    assert f"n_refinements={ours['n_refinements']}" in row
    assert f"alphas={theirs['alphas']}, n_refinements={theirs['n_refinements']}" in row
    assert f'center_test="{ours["center_test"]}"' in row and 'center_test="test"' in row


def test_sklearn_crfsuite_tutorial_score_is_the_measured_one():
    text = (DOCS / "migration.md").read_text()
    assert "0.798 " not in text and "0.7964-0.7965" in text


def test_penalty_matrix_accuracy_is_stated():
    text = " ".join((DOCS / "gaussian.md").read_text().split())
    assert "With a penalty matrix" in text and "1.9e-5" in text
