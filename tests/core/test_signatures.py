"""Functions with many parameters: at most a few, each with its reason.

A kernel's state travels as named tuples read by name (numba compiles a named tuple as a
plain one: ``chain/kernel_data.py``, ``core/lazy_l1.SGDParams``, ``chain/crf_bcd.py``'s
``Header`` / ``SweepControl``), so a long list of positional arrays is a sign of state
that has no name yet. What must stay separate arguments: flags that are None to leave
code out of a compiled kernel (numba prunes ``if x is not None`` only on an argument),
and a solver's public keyword options."""

import ast
import os

import spargel

PACKAGE = os.path.dirname(os.path.abspath(spargel.__file__))

#: a function with this many parameters or more (``self`` included, ``__init__`` not
#: counted) must be listed below
LONG = 15

#: how many may be listed (the aim was at most 10)
MAX_LONG = 7

#: (module path, function) -> why it keeps its parameters
ALLOWED = {
    # the chain's batch and prediction kernels: the view's leading arguments
    # (w, space, data, aux, trans, bl, first, second; bl, first, second are None flags),
    # the None flags sw / clamp, and the chunk's output buffers
    ("chain/batch_kernels.py", "chunk_logz_grad"): "view arguments + None flags sw, clamp + chunk buffers",
    ("chain/batch_kernels.py", "chunk_logz_grad_log"): "view arguments + None flags sw, clamp + chunk buffers",
    ("chain/batch_kernels.py", "nbest_one"): "view arguments + one sequence's n-best buffers",
    # the SGD sequence steps of both orders: the None flags tok / flat / big / logsp / sw /
    # partial, and the step's weights and scratch as separate arguments (grouped into a
    # Step and the pass's PassWork, the first-order pass measured up to a tenth slower)
    ("chain/crf_sgd.py", "sample_step"): "None flags + the step's weights and scratch (grouping measured slower)",
    ("chain/crf2_sgd.py", "sample_step"): "None flags sw / partial + the step's weights and scratch",
    # a solver's public options are keyword arguments (the solver table's interface)
    ("solvers/l2sgd.py", "minimize_l2sgd"): "a solver's public keyword options",
    # the Gaussian family's one entry point: the public keywords it builds the solvers'
    # RunControl from
    ("gaussian/solve.py", "solve_gaussian"): "the Gaussian solvers' public options",
}


def n_params(fn):
    a = fn.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
            + (a.kwarg is not None))


def long_signatures(root=PACKAGE, limit=LONG):
    """{(module path, function name): parameter count} of the functions with ``limit``
    or more parameters (``__init__`` left out)."""
    found = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__init__":
                    k = n_params(node)
                    if k >= limit:
                        found[(os.path.relpath(path, root).replace(os.sep, "/"), node.name)] = k
    return found


def test_counter_counts_every_kind_of_parameter(tmp_path):
    (tmp_path / "m.py").write_text("def f(a, /, b, *c, d, **e): pass\n"
                                   "class C:\n    def __init__(self, a, b, c, d, e): pass\n")
    assert long_signatures(tmp_path, limit=5) == {("m.py", "f"): 5}


def test_long_signatures_are_listed():
    found = long_signatures()
    unlisted = sorted(f"{p}: {name} ({k} parameters)" for (p, name), k in found.items() if (p, name) not in ALLOWED)
    assert not unlisted, ("functions with >= 15 parameters: group their state into named tuples, or list them "
                          "in ALLOWED with the reason:\n" + "\n".join(unlisted))
    assert len(found) <= MAX_LONG, f"{len(found)} functions with >= {LONG} parameters (at most {MAX_LONG})"
