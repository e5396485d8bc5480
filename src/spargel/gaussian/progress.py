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

__all__ = ["record", "format_row", "Stages"]

_KEYS = (("objective", "objective", "{:.10g}"), ("duality_gap", "gap", "{:.3g}"),
         ("active_edges", "edges", "{:d}"), ("free_set", "free", "{:d}"),
         ("cg_iterations", "cg", "{:d}"), ("step", "step", "{:.3g}"),
         ("kkt", "kkt", "{:.3g}"), ("added", "added", "{:d}"), ("elapsed", "t", "{:.3f}s"))


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


class Stages:
    """Progress of a long pass (the from-data screening, the sparse path's check off
    its pattern) on stderr when ``verbose``: a line at each tenth of the work.

    >>> st = Stages(False, "screening", 100)
    >>> st.done(50)
    """

    def __init__(self, verbose, what, total):
        import time

        self.verbose, self.what, self.total = bool(verbose), what, max(int(total), 1)
        self.t0 = time.perf_counter()
        self.next = 0.1

    def done(self, count):
        import time

        share = count / self.total
        if self.verbose and (share >= self.next or count >= self.total):
            while self.next <= share:
                self.next += 0.1
            print(f"{self.what}: {100 * min(share, 1.0):.0f}%  t "
                  f"{time.perf_counter() - self.t0:.3f}s", file=sys.stderr, flush=True)
