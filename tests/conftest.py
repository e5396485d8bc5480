"""Shared by every test folder.

The helper modules at the top of tests/ (crf_reference.py, crf2_reference.py,
bound_reference.py, toy_model.py, reliability_helpers.py) and test_protocol.py are
imported by plain name from tests in any sub-folder, so this folder goes on sys.path
first. tests/cli/ goes there too: test_cli.py's corpus helpers (make_corpus,
write_corpus, run) are imported by chain/test_maxent.py and test_docs_examples.py.
(pytest's default "prepend" import mode only adds a test file's own folder, and this
conftest's folder; the explicit inserts do not depend on the import mode or on the
order in which files are collected.) Test file basenames stay unique across folders:
without __init__.py files pytest imports each one under its basename."""

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parent
for _folder in (_TESTS / "cli", _TESTS):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

# The first-use line of the Gaussian and MRF fits depends on how long a compilation
# takes and on what is in the kernel cache; in-process tests that read stderr must not
# see it (tests/test_first_use.py checks it in fresh processes).
from spargel.core import first_use as _first_use  # noqa: E402

_first_use.DELAY = None
