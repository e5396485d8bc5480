"""The imports within spargel.mrf run one way: no module imports, even inside a
function, a module that (through others) imports it back. A cycle works only while
every import in it stays inside a function, and breaks the day one moves to the top."""

import ast
from pathlib import Path

import spargel.mrf

PACKAGE = Path(spargel.mrf.__file__).resolve().parent


def _edges():
    """{module: modules of the package it imports (``from .x import``, ``from . import x``)}."""
    out = {}
    for f in sorted(PACKAGE.glob("*.py")):
        deps = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                deps.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
        out[f.stem] = deps
    return out


def _cycles(edges):
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == "open":
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    return found


def test_the_finder_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_within_mrf():
    edges = _edges()
    assert {"estimator", "export", "stability", "mixed", "nodewise", "common"} <= set(edges)
    assert edges["estimator"] >= {"export"} and "stability" not in edges["export"]
    assert _cycles(edges) == []


def test_common_imports_nothing_of_the_package():
    assert _edges()["common"] == set()
