"""Every Python example in README.md and docs/*.md runs as written.

The ```python blocks of one page run in order, in one namespace (a later block may use
what an earlier one defined), in a scratch folder that holds the files the examples
name: small CoNLL-style column files ``train.txt``, ``dev.txt`` and ``test.txt`` (word,
POS, chunk tag) and the pattern file ``chunking.tpl``. A page whose examples read the
shared data sets (``../shared/data/...``) runs only when they are there (the scratch
folder gets a ``../shared`` link to them); otherwise it is skipped with the reason.
"""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
# docs/gaussian.md has its own test (tests/gaussian/test_gaussian_docs.py) that also checks
# what its comments claim
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "gaussian.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cli import make_corpus, write_corpus  # noqa: E402


IMPORT = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", re.M)


def _blocks(page):
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def _missing_modules(code):
    """The top-level modules a block imports that are not installed (an example of an
    optional peer, such as eli5, runs only where that peer is)."""
    import importlib.util
    return sorted({m for m in IMPORT.findall(code) if importlib.util.find_spec(m) is None})


@pytest.fixture()
def scratch(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    write_corpus(work / "train.txt", make_corpus(60, seed=1))
    write_corpus(work / "dev.txt", make_corpus(20, seed=2))
    write_corpus(work / "test.txt", make_corpus(20, seed=3))
    from spargel.data.templates import CRFSUITE_CHUNKING_TEMPLATE
    (work / "chunking.tpl").write_text(CRFSUITE_CHUNKING_TEMPLATE)
    if SHARED.is_dir():
        os.symlink(SHARED, tmp_path / "shared")
    monkeypatch.chdir(work)
    import matplotlib
    matplotlib.use("Agg")
    return work


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_examples_run(page, scratch):
    blocks = _blocks(page)
    if any("../shared/" in b for b in blocks) and not SHARED.is_dir():
        pytest.skip(f"{page.name} reads the shared data sets, which are not beside the checkout")
    namespace = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(blocks):
        if _missing_modules(code):
            continue
        try:
            exec(compile(code, f"{page.name}[python block {i + 1}]", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{page.name}, python block {i + 1} fails: {type(exc).__name__}: {exc}") from exc
