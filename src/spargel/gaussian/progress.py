"""Where the Gaussian solvers send their per-iteration history rows.

Every solver builds one dict per iteration (iteration, objective,
duality_gap, active_edges, elapsed, ...) and hands it to :func:`record`,
which keeps it in the history list, prints it as one line on **stderr** when
``verbose`` is set (never stdout: a program's output stays its own), and
passes it to an optional ``callback(row)`` that may return True to stop the
solver after this iteration.

>>> rows = []
>>> record({"iteration": 1, "objective": 2.5}, rows, name="demo")
False
>>> format_row({"iteration": 1, "objective": 2.5, "duality_gap": float("nan")}, "demo")
'demo it 1  objective 2.5  gap -'
"""

from __future__ import annotations

import math
import sys

__all__ = ["record", "format_row"]

_KEYS = (("objective", "objective", "{:.10g}"), ("duality_gap", "gap", "{:.3g}"),
         ("active_edges", "edges", "{:d}"), ("free_set", "free", "{:d}"),
         ("cg_iterations", "cg", "{:d}"), ("step", "step", "{:.3g}"),
         ("elapsed", "t", "{:.3f}s"))


def format_row(row, name=""):
    """One human-readable line for a history row (missing values as '-')."""
    parts = [f"{name} it {row.get('iteration', '?')}".strip()]
    if "component" in row:
        parts[0] += f" [component {row['component']}]"
    for key, label, fmt in _KEYS:
        if key not in row:
            continue
        v = row[key]
        if isinstance(v, float) and not math.isfinite(v):
            parts.append(f"{label} -")
        else:
            parts.append(f"{label} {fmt.format(v)}")
    return "  ".join(parts)


def record(row, history, *, verbose=False, callback=None, name=""):
    """Append ``row`` to ``history``, print it to stderr when verbose, and
    return whether the callback asks the solver to stop."""
    history.append(row)
    if verbose:
        print(format_row(row, name), file=sys.stderr, flush=True)
    if callback is not None:
        return bool(callback(row))
    return False
