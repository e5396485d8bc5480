"""The estimators keep their constructor arguments through one function,
``core/params.keep_arguments``: every argument stored unchanged under its own name, so
that scikit-learn's ``get_params`` / ``set_params`` / ``clone`` read them back."""

import ast
import inspect
import os

import pytest

import spargel
from spargel.core.params import ParamsMixin, keep_arguments

PACKAGE = os.path.dirname(os.path.abspath(spargel.__file__))

ESTIMATORS = ["CRF", "LogLinearClassifier", "LatentLogLinearClassifier", "SparseGaussianMRF",
              "SparseGaussianMRFCV", "SparseGaussianMRFSelect", "Nonparanormal", "NeighbourhoodSelection",
              "Concord", "PairwiseMRF", "PairwiseMRFSelect", "IsingFit", "MixedGraphicalModel"]


def test_keeps_every_argument_but_self():
    class Base:
        def __init__(self, a, *, b=2):
            keep_arguments(self, locals())

    class Child(Base):
        def __init__(self, a, c=None):      # super() puts __class__ among the locals
            keep_arguments(self, locals())
            super().__init__(a)

    obj = Base([1], b=None)
    assert vars(obj) == {"a": [1], "b": None}
    child = Child("x", c=3)
    assert vars(child) == {"a": "x", "c": 3, "b": 2}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_each_argument_comes_back_unchanged(name):
    """Every parameter given a value of its own comes back from get_params as that very
    object, and from scikit-learn's clone (which deep-copies it) as an equal one."""
    from sklearn.base import clone
    cls = getattr(spargel, name)
    assert issubclass(cls, ParamsMixin)
    names = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    given = {p: [f"value of {p}"] for p in names}
    est = cls(**given)
    params = est.get_params()
    assert list(params) == names
    assert all(params[p] is given[p] for p in names)
    copy = clone(est, safe=False)
    assert copy.get_params() == given and all(getattr(copy, p) == given[p] for p in names)


def _only_stores_arguments(fn):
    """An ``__init__`` whose body (past its docstring) is nothing but ``self.x = x``."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) else fn.body
    return len(body) >= 2 and all(
        isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Attribute)
        and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == "self"
        and isinstance(s.value, ast.Name) and s.value.id == s.targets[0].attr for s in body)


def test_no_estimator_spells_out_its_arguments_again():
    """An estimator (a ParamsMixin class) stores its arguments with keep_arguments, not
    one assignment per argument."""
    found = []
    for d, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
                for cls in ast.walk(tree):
                    if isinstance(cls, ast.ClassDef):
                        for fn in cls.body:
                            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__" and _only_stores_arguments(fn):
                                found.append(f"{os.path.relpath(path, PACKAGE)}: {cls.name}")
    estimators = set(ESTIMATORS) | {"LogLinearCore"}
    assert not [f for f in found if f.split(": ")[1] in estimators]
