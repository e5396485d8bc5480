"""Imports inside functions: each must defer something (docs/architecture.md, "Imports
inside functions"). A function-level import of a spargel module that the importing module
has already loaded through its own top-level imports defers nothing: it belongs at the top.

The check follows only top-level imports (a package's ``__init__`` included, since
importing ``a.b.c`` runs ``a`` and ``a.b`` first), so it finds the imports that are habit
for certain; which of the others are worth their place (compiled kernels, scipy, a
command's readers) is the architecture page's list."""

import ast
import os

import spargel

PACKAGE = os.path.dirname(os.path.abspath(spargel.__file__))
SRC = os.path.dirname(PACKAGE)

#: (module, line's imported modules) -> why the function-level import stays
ALLOWED = {
    # python-crfsuite's stand-alone Tagger opens a file with the public spargel.CRF: the
    # one upward import (tests/core/test_import_graph.py), kept where it is used
    ("spargel.chain.crfsuite_compat", ("spargel",)): "upward by design",
}


def _modules():
    out = {}
    for d, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, SRC)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


MODULES = _modules()


def _targets(module, node):
    """The spargel modules an import statement in ``module`` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "spargel"]
    if node.level:
        parts = module.split(".")
        if not MODULES[module].endswith("__init__.py"):
            parts = parts[:-1]
        base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != "spargel":
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _imports(module):
    """(top-level targets, [(line, targets)] of the imports inside functions)."""
    with open(MODULES[module], encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    top, inner = set(), []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                targets = _targets(module, child)
                if in_function:
                    if targets:
                        inner.append((child.lineno, targets))
                else:
                    top.update(targets)
            else:
                visit(child, in_function)

    visit(tree, False)
    return top, inner


IMPORTS = {m: _imports(m) for m in MODULES}


def loaded_by(module):
    """Every spargel module that importing ``module`` loads (its packages, then its
    top-level imports, transitively)."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen or m not in MODULES:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)))
        todo.extend(IMPORTS[m][0])
    return seen


def habit_imports():
    """[(module, line, targets)] of the function-level imports that load nothing new."""
    found = []
    for module, (_, inner) in IMPORTS.items():
        loaded = loaded_by(module)
        for line, targets in inner:
            if all(t in loaded for t in targets) and (module, tuple(targets)) not in ALLOWED:
                found.append((module, line, targets))
    return found


def test_the_scan_reads_relative_imports():
    top, inner = IMPORTS["spargel.solvers.owlqn"]
    assert "spargel.solvers._owlqn_kernels" in top and "spargel.core.vec" in top
    assert "spargel.core.vec" in loaded_by("spargel.solvers.owlqn")
    assert "spargel" in loaded_by("spargel.solvers.owlqn")


def test_no_function_level_import_of_a_module_already_loaded():
    assert habit_imports() == []


def test_the_scan_finds_a_habit_import(tmp_path):
    """Planted: a function-level import of a module the file imports at its top."""
    global MODULES, IMPORTS
    saved = MODULES, IMPORTS
    path = tmp_path / "planted.py"
    path.write_text("from .errors import ParameterError\n\ndef f():\n    from .errors import DataFormatError\n"
                    "    return DataFormatError\n")
    try:
        MODULES = dict(saved[0], **{"spargel.planted": str(path)})
        IMPORTS = dict(saved[1], **{"spargel.planted": _imports("spargel.planted")})
        assert ("spargel.planted", 4, ["spargel.errors"]) in habit_imports()
    finally:
        MODULES, IMPORTS = saved
