"""The solver table (``core/solver_table.py``) is the one place that describes a solver:
the command line and the guide show exactly its solvers, each solver refuses a model
without the capabilities its record says it needs, and no list of solver names appears
anywhere else in the package."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from spargel.core.penalties import ElasticNet
from spargel.core.solver_table import SOLVER_TABLE, solver, solver_names, solvers_for
from spargel.errors import CapabilityError, ParameterError
from spargel.solvers import SOLVERS, get_solver

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "spargel"


def _number(value):
    return str(value) if isinstance(value, int) else f"{value:.0e}".replace("e-0", "e-")


def _guide_row(record):
    """The row of ``record`` in the guide's solver tables (docs/guide.md, "Solvers")."""
    if record.works_on == "model":
        yes = {True: "yes", False: "no"}
        return (f"| `{record.name}` | {record.doc} | {', '.join(record.needs)} | {record.max_iter} | "
                f"{_number(record.tol)} | {yes[record.stochastic]} | {yes[record.warn_at_max_iter]} |")
    return f"| `{record.name}` | {record.doc} | {record.max_iter} | {_number(record.tol)} |"


def test_names_are_unique_and_records_are_consistent():
    names = [s.name for s in SOLVER_TABLE]
    assert len(names) == len(set(names))
    for s in SOLVER_TABLE:
        assert s.works_on in ("model", "covariance")
        assert s.max_iter > 0 and s.tol > 0 and s.doc
        assert (s.works_on == "model") == bool(s.needs)
        assert s.with_blocks is None or solver(s.with_blocks, "covariance").works_on == "covariance"


def test_the_guide_lists_every_solver_as_the_table_says():
    text = (ROOT / "docs" / "guide.md").read_text()
    section = text[text.index("\n## Solvers\n"):]
    section = section[:section.index("\n## ", 1)]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    expected = [_guide_row(s) for s in SOLVER_TABLE]
    missing = [row for row in expected if row not in rows]
    assert not missing, "add (or correct) these rows of docs/guide.md, 'Solvers':\n" + "\n".join(missing)
    assert not [row for row in rows if row not in expected], "rows of solvers the table does not have"


def test_train_offers_exactly_the_model_solvers():
    from spargel.cli.common import UsageError

    assert list(SOLVERS) == solver_names("model")
    with pytest.raises(UsageError) as err:
        _train_solver_check("no-such-solver")
    assert str(err.value).split("choose one of ", 1)[1].split(", ") == solver_names("model")
    help_text = " ".join(_help("train").split())
    for record in SOLVERS.values():
        line = " ".join(record.doc.split())
        assert f"{record.name}: {line}" in help_text or f"{record.name} (default): {line}" in help_text


def _train_solver_check(name):
    """The check ``spargel train`` makes of -a NAME (before reading any file)."""
    from spargel.cli.train import cmd_train

    cmd_train(_parser().parse_args(["train", "-a", name, "train.txt", "model"]))


def _parser():
    from spargel.cli.app import build_parser
    return build_parser()


def _help(command):
    import argparse
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command].format_help()


def _squeezed(text):
    return "".join(text.split())


def _choices(command, option):
    import argparse
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return next(a for a in sub.choices[command]._actions if option in a.option_strings).choices


def test_gmrf_offers_auto_and_the_covariance_solvers():
    assert list(_choices("gmrf", "--solver")) == ["auto", *solver_names("covariance")]
    from spargel.gaussian.solve import SOLVERS as GAUSSIAN
    assert list(GAUSSIAN) == ["auto", *solver_names("covariance")]
    text = _squeezed(_help("gmrf"))          # (argparse breaks lines at hyphens here)
    for name in solver_names("covariance"):
        assert _squeezed(f"{name}: {solver(name, 'covariance').doc}") in text


def test_the_gaussian_defaults_come_from_the_table():
    from spargel.gaussian.solve import resolve_solver, solve_gaussian

    rng = np.random.default_rng(0)
    S = np.cov(rng.standard_normal((40, 5)).T, bias=True)
    for name in solver_names("covariance"):
        if solver(name, "covariance").from_data_only:
            with pytest.raises(ParameterError, match="from the data matrix only"):
                resolve_solver(name, None)
            continue
        assert resolve_solver(name, None) == name
        res = solve_gaussian(S, 0.1, solver=name, max_iter=None)
        assert res.converged
    assert resolve_solver("auto", None) == "newton-cg"
    assert resolve_solver("auto", [[0, 1], [2, 3, 4]]) == "block-l1"
    assert resolve_solver("projected-gradient", [[0, 1], [2, 3, 4]]) == "block-l1"
    with pytest.raises(ParameterError, match="plain l1 weights only"):
        resolve_solver("newton-cd", [[0, 1], [2, 3, 4]])


class _Nothing:
    """A model with a layout and no capability at all."""

    def __init__(self):
        from toy_model import make_least_squares
        inner = make_least_squares()
        self.n_params, self.layout, self.n_samples = inner.n_params, inner.layout, inner.n_samples

    def loss(self, w):
        return 0.0


@pytest.mark.parametrize("name", solver_names("model"))
def test_each_solver_refuses_a_model_without_its_needs(name):
    with pytest.raises(CapabilityError) as err:
        get_solver(name)(_Nothing(), ElasticNet(0.0, 0.1), max_iter=2)
    # (the message names the function's solver: 'owlqn' for lbfgs, 'rprop' for rprop+)
    assert f"needs a model with {solver(name).needs[0]!r}" in str(err.value)


def test_models_offer_what_their_solver_lists_say():
    from spargel.chain.crf import ChainCRF
    from spargel.chain.estimator import CONSTRAINED_SOLVERS
    from spargel.cli.mrf import GROUP_SOLVERS, MRF_SOLVERS
    from spargel.core.protocol import capabilities
    from spargel.mrf.model import PairwiseMRFModel

    assert set(MRF_SOLVERS) <= set(solvers_for(capabilities(PairwiseMRFModel)))
    assert set(GROUP_SOLVERS) <= set(MRF_SOLVERS)
    assert set(CONSTRAINED_SOLVERS) <= set(solvers_for(capabilities(ChainCRF)))
    assert CONSTRAINED_SOLVERS == ("lbfgs", "owlqn", "fista", "rprop", "rprop+", "rprop-")


def test_other_tools_names_map_onto_table_solvers():
    from spargel.chain.crfsuite_compat import ALGORITHMS
    from spargel.cli.tool_options import _TOOL_SOLVERS

    assert {s for s in _TOOL_SOLVERS.values() if s is not None} <= set(SOLVERS)
    assert {s for _, s in ALGORITHMS.values() if s is not None} <= set(SOLVERS)


# -- no second list of solver names ----------------------------------------------------------
#: files that may hold several solver names in one literal, and why
ALLOWED = {
    "core/solver_table.py": "the table itself",
    "chain/crfsuite_compat.py": "CRFsuite's trainer names (lbfgs, l2sgd, ap, pa, arow) and their parameters",
    "chain/crfsuite_trainer.py": "python-crfsuite's trainer names and parameter tables",
    "cli/tool_options.py": "Wapiti's and CRF++'s -a names, mapped onto table solvers (checked above)",
    "core/protocol.py": "capability names that are also solver names (bound, grafting)",
    "solvers/grafting.py": "the module's own three variants of one function",
    "solvers/rprop.py": "the module's own three variants of one function",
    "loglinear/latent.py": "LatentLogLinearClassifier's own solvers (em, newton, cg, sd via scipy; not in the table)",
    "cli/mrf.py": "the shorter list spargel mrf offers (checked against the table above)",
}
#: single literals elsewhere that name solvers without listing a property of them
ALLOWED_LITERALS = {
    ("cli/train.py", ("owlqn", "sgd-l1")): "--stream notes a solver other than the default and the one it uses",
    ("gaussian/solve.py", ("newton-cg", "newton-cd")): "the dispatch: the Newton solvers read a scalar weight",
}


def _name_lists():
    names = {s.name for s in SOLVER_TABLE}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                items = node.elts
            elif isinstance(node, ast.Dict):
                items = [k for k in node.keys if k is not None]
            else:
                continue
            found = tuple(e.value for e in items if isinstance(e, ast.Constant) and e.value in names)
            if len(found) >= 2 and (rel, found) not in ALLOWED_LITERALS:
                yield f"{rel}:{node.lineno}: {found}"


def test_no_list_of_solver_names_outside_the_table():
    found = list(_name_lists())
    assert not found, ("lists of solver names outside core/solver_table.py (add a field to the "
                       "solver table instead):\n" + "\n".join(found))


def test_the_table_module_is_light():
    import os
    import subprocess
    import sys
    code = "import spargel.core.solver_table, sys; print('numpy' in sys.modules, 'numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(PACKAGE.parent)), check=True).stdout
    assert out.split() == ["False", "False"]
