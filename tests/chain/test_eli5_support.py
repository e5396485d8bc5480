"""eli5's explain_weights / explain_prediction for spargel.CRF (spargel.eli5_support).

Most tests need eli5 (not a dependency of spargel) and skip without it; the first one
runs everywhere: ``import spargel`` and a fit never import eli5.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")

XSEQ = [{"walk": 1, "shop": 0.5}, {"walk": 1}, {"walk": 1, "clean": 0.5}, {"shop": 0.5, "clean": 0.5},
        {"walk": 0.5, "clean": 1}, {"clean": 1, "shop": 0.1}, {"walk": 1, "shop": 0.5}, {},
        {"clean": 1}, {"sun": "none", "clean": 1}]
YSEQ = ["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "sunny", "sunny", "rainy", "rainy"]


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_spargel_never_imports_eli5():
    r = _run("import sys, spargel\n"
             "from spargel import CRF\n"
             "crf = CRF(c2=0.1, max_iterations=5).fit([[{'a': 1}, {'b': 1}]], [['x', 'y']])\n"
             "crf.predict([[{'a': 1}]])\n"
             "assert 'eli5' not in sys.modules and 'spargel.eli5_support' not in sys.modules, 'eli5 imported'\n")
    assert r.returncode == 0, r.stderr


def _eli5():
    return pytest.importorskip("eli5", reason="eli5 is not installed (spargel's eli5 support is optional)")


@pytest.fixture(scope="module")
def crf():
    _eli5()
    from spargel import CRF
    import spargel.eli5_support  # noqa: F401
    return CRF(c1=0.0, c2=0.1, max_iterations=50).fit([XSEQ], [YSEQ])


def test_explain_weights_structure(crf):
    eli5 = _eli5()
    expl = eli5.explain_weights(crf)
    assert expl.error is None and expl.method == "CRF"
    assert [t.target for t in expl.targets] == ["rainy", "sunny"]
    assert expl.transition_features.class_names == ["rainy", "sunny"]
    tr = crf.transition_features_
    np.testing.assert_array_equal(expl.transition_features.coef,
                                  [[tr.get((a, b), 0) for b in ("rainy", "sunny")] for a in ("rainy", "sunny")])
    state = crf.state_features_
    for t in expl.targets:
        got = {fw.feature: fw.weight for fw in t.feature_weights.pos + t.feature_weights.neg}
        assert got == {a: w for (a, lab), w in state.items() if lab == t.target}
    text = eli5.format_as_text(expl)
    assert "y='sunny' top features" in text and "Transition features" in text and "sun:none" in text
    html = eli5.format_as_html(expl).replace(" ", "").replace("\n", "")
    assert "<th>rainy</th><th>sunny</th>" in html
    if hasattr(eli5, "show_weights"):                     # with IPython: the notebook's HTML
        assert "<th>rainy</th><th>sunny</th>" in eli5.show_weights(crf).data.replace(" ", "").replace("\n", "")


def test_explain_weights_options(crf):
    eli5 = _eli5()
    expl = eli5.explain_weights(crf, feature_re="clean|sun", targets=["sunny", "rainy"],
                                target_names={"sunny": "SUN"}, top=1)
    assert [t.target for t in expl.targets] == ["SUN", "rainy"]
    assert expl.transition_features.class_names == ["SUN", "rainy"]
    for t in expl.targets:
        fws = t.feature_weights.pos + t.feature_weights.neg
        assert len(fws) == 1 and all(("clean" in fw.feature or "sun" in fw.feature) for fw in fws)


def test_same_as_for_sklearn_crfsuite(crf):
    eli5 = _eli5()
    sk = pytest.importorskip("sklearn_crfsuite", reason="sklearn-crfsuite is not installed")
    ref = sk.CRF(c1=0.0, c2=0.1, max_iterations=50).fit([XSEQ], [YSEQ])
    a, b = eli5.explain_weights(crf), eli5.explain_weights(ref)
    assert [t.target for t in a.targets] == [t.target for t in b.targets]
    assert a.transition_features.class_names == b.transition_features.class_names
    np.testing.assert_allclose(a.transition_features.coef, b.transition_features.coef, atol=2e-3)
    for ta, tb in zip(a.targets, b.targets):
        fa = {fw.feature: fw.weight for fw in ta.feature_weights.pos + ta.feature_weights.neg}
        fb = {fw.feature: fw.weight for fw in tb.feature_weights.pos + tb.feature_weights.neg}
        assert fa.keys() == fb.keys()
        np.testing.assert_allclose([fa[k] for k in fa], [fb[k] for k in fa], atol=2e-3)


def test_explain_prediction(crf):
    eli5 = _eli5()
    expl = eli5.explain_prediction(crf, XSEQ)
    assert expl.error is None
    labels = crf.predict_single(XSEQ)
    marg = crf.predict_marginals_single(XSEQ)
    assert [t.target for t in expl.targets] == labels
    state = crf.state_features_
    for tok, t, lab, m in zip(XSEQ, expl.targets, labels, marg):
        assert t.proba == pytest.approx(m[lab])
        want = {}
        for k, v in tok.items():
            name, value = (f"{k}:{v}", 1.0) if isinstance(v, str) else (k, float(v))
            if state.get((name, lab), 0):
                want[name] = state[(name, lab)] * value
        got = {fw.feature: fw.weight for fw in t.feature_weights.pos + t.feature_weights.neg}
        assert got.keys() == want.keys()
        for k in want:
            assert got[k] == pytest.approx(want[k])
        assert t.score == pytest.approx(sum(want.values()))
    assert "y='sunny' (probability=" in eli5.format_as_text(expl)


def test_binary_crfpp_model_explained():
    eli5 = _eli5()
    from spargel import CRF
    crf = CRF.load(DATA / "tiny_chunks.crfpp.model")
    expl = eli5.explain_weights(crf, top=5)
    assert expl.error is None
    assert [t.target for t in expl.targets] == ["O", "B-NP", "I-NP", "B-PP", "B-VP"]
    assert expl.transition_features.coef.shape == (5, 5)
    x = [["the", "DT"], ["dog", "NN"], ["sees", "VBZ"], ["Anna", "NNP"]]
    pred = eli5.explain_prediction(crf, x)
    assert [t.target for t in pred.targets] == crf.predict_single(x)


def test_registered_without_an_import_when_eli5_came_first():
    _eli5()
    r = _run("import eli5\n"
             "from spargel import CRF\n"
             f"crf = CRF.load({str(DATA / 'tiny_chunks.crfpp.model')!r})\n"
             "e = eli5.explain_weights(crf)\n"
             "assert e.error is None and e.targets, e.error\n")
    assert r.returncode == 0, r.stderr


def test_eli5_support_imports_nothing_of_the_chain_package():
    """The estimator hands eli5_support its class (``register``): no import circle."""
    import ast
    src = Path(__file__).resolve().parents[2] / "src" / "spargel" / "eli5_support.py"
    tree = ast.parse(src.read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert imported and not [m for m in imported if m.startswith(("chain", "spargel.chain"))]


def test_registered_when_the_model_was_fitted_before_eli5():
    _eli5()
    r = _run("from spargel import CRF\n"
             "crf = CRF(c2=0.1, max_iterations=5).fit([[{'a': 1}, {'b': 1}]], [['x', 'y']])\n"
             "import eli5\n"
             "import spargel.eli5_support\n"
             "e = eli5.explain_weights(crf)\n"
             "assert e.error is None and e.targets, e.error\n")
    assert r.returncode == 0, r.stderr
