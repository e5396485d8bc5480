"""The package's import graph: no circles, no arrow up the layers of docs/architecture.md.

Every ``import`` of a spargel module counts, at the top of a file or inside a function
(a function-level import that only dodges a circle is still a circle)."""

import ast
import os
from collections import defaultdict

import spargel

SRC = os.path.dirname(os.path.dirname(os.path.abspath(spargel.__file__)))

#: circles allowed, each with its reason (sets of modules)
ALLOWED_CIRCLES = {
}

#: what each package or module below the families may import (docs/architecture.md,
#: "The house"); the families' own lists: chain imports no other family
MAY_IMPORT = {
    "errors": set(),
    "core": {"errors"},
    "metrics": {"errors", "flat_metrics"},
    "flat_metrics": {"errors"},
    "scorers": {"errors", "flat_metrics"},
    "data": {"errors", "core"},
    "scaleout": {"errors", "core"},
    "solvers": {"errors", "core"},
    "conlleval": {"errors", "core", "metrics", "data"},
    "estimation": {"errors", "core", "data", "solvers"},
    "gaussian": {"errors", "core", "scaleout"},
    "mrf": {"errors", "core", "solvers"},
    "loglinear": {"errors", "core", "data", "solvers", "estimation", "scaleout"},
    "chain": {"errors", "core", "data", "solvers", "estimation", "scaleout", "metrics",
              "flat_metrics", "scorers", "conlleval", "eli5_support"},
}

#: arrows up allowed, each with its reason (module, imported module)
ALLOWED_UP = {
    # python-crfsuite's stand-alone Tagger opens a file with the public spargel.CRF when
    # it holds no model, so the compat layer stays below the estimator
    ("spargel.chain.crfsuite_compat", "spargel"),
}


def _modules():
    mods = {}
    for d, _, files in os.walk(os.path.join(SRC, "spargel")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, SRC)[:-3].replace(os.sep, ".")
                mods[name.removesuffix(".__init__")] = path
    return mods


def import_graph():
    """{module: {(imported module, line)}} over spargel's own modules."""
    mods = _modules()
    edges = defaultdict(set)
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        package = mod.split(".") if path.endswith("__init__.py") else mod.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "spargel":
                        edges[mod].add((alias.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "spargel":
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    edges[mod].add((sub if sub in mods else target, node.lineno))
    return mods, edges


def circles(mods, edges):
    """The strongly connected components of more than one module (Tarjan)."""
    graph = {m: sorted({t for t, _ in edges[m] if t in mods and t != m}) for m in mods}
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(graph[v]):
                work.append((v, i + 1))
                w = graph[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return found


def _unit(mod):
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "spargel"


def test_circles_finder_sees_a_circle():
    mods = {"spargel.a": "", "spargel.b": "", "spargel.c": ""}
    edges = {"spargel.a": {("spargel.b", 1)}, "spargel.b": {("spargel.a", 1)},
             "spargel.c": {("spargel.a", 1)}}
    assert circles(mods, edges) == [frozenset({"spargel.a", "spargel.b"})]


def test_no_import_circles():
    mods, edges = import_graph()
    found = [sorted(c) for c in circles(mods, edges) if c not in ALLOWED_CIRCLES]
    assert not found, f"import circles: {found}"


def test_no_arrows_up():
    mods, edges = import_graph()
    up = []
    for mod in mods:
        unit = _unit(mod)
        if unit not in MAY_IMPORT:
            continue  # cli, eli5_support and the public aliases may import anything
        for target, line in edges[mod]:
            other = _unit(target)
            if (other != unit and other not in MAY_IMPORT[unit]
                    and (mod, target) not in ALLOWED_UP):
                up.append(f"{mod}:{line} -> {target}")
    assert not up, "imports up the layers:\n" + "\n".join(sorted(up))
