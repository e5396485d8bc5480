"""Plots of training histories: objective, active features and dev scores over time.

A history is the list of per-iteration rows that every solver records
(``estimator.history_``, or the JSON lines written by ``spargel train --history``):
dicts with at least ``iteration``, ``objective``, ``active`` and ``elapsed``, and
``dev_f1`` / ``dev_accuracy`` when a development set was scored.

matplotlib is an optional dependency (``pip install 'spargel[plot]'``); it is imported
only when a plot is drawn, with the non-interactive Agg backend, so nothing here needs a
display.

>>> rows = [{"iteration": 1, "objective": 9.0, "active": 5, "elapsed": 0.1},
...         {"iteration": 2, "objective": 7.5, "active": 3, "elapsed": 0.2}]
>>> fig = plot_histories([("owlqn", rows)], "run.png")   # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
from ..errors import DataFormatError

__all__ = ["MissingMatplotlibError", "load_history", "plot_histories", "import_pyplot"]

INSTALL_HINT = "install the plot extra: pip install 'spargel[plot]'"


class MissingMatplotlibError(ImportError):
    """matplotlib is not installed; the message says how to install it."""


def import_pyplot():
    """``matplotlib.pyplot`` with the Agg backend, or :class:`MissingMatplotlibError`."""
    try:
        import matplotlib
    except ImportError:
        raise MissingMatplotlibError(f"plots need matplotlib, which is not installed; {INSTALL_HINT}") from None
    try:
        matplotlib.use("Agg", force=True)
    except Exception:  # pragma: no cover - a backend already in use elsewhere
        pass
    import matplotlib.pyplot as plt
    return plt


def load_history(path):
    """Read a JSON-lines history file into a list of dicts.

    Blank lines are skipped; any other line must be a JSON object with an
    ``objective``. Raises ``ValueError`` naming the file and line otherwise.
    """
    name = os.fspath(path)
    rows = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise DataFormatError(name, lineno, "not UTF-8 text; expected a JSON-lines history") from None
            if not text:
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataFormatError(name, lineno, f"not a JSON-lines history ({exc.msg})") from None
            if not isinstance(row, dict) or "objective" not in row:
                raise DataFormatError(name, lineno, "a history row must be a JSON object with an 'objective'")
            rows.append(row)
    if not rows:
        raise DataFormatError(name, None, "the history is empty")
    return rows


def _series(rows, key, x):
    xs, ys = [], []
    for i, row in enumerate(rows):
        v = row.get(key)
        if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
            continue
        xs.append(row.get("elapsed", i) if x == "time" else row.get("iteration", i + 1))
        ys.append(v)
    return xs, ys


def plot_histories(runs, out=None, *, x="time", figsize=None, dpi=100, title=None):
    """Draw one or more histories on one figure and optionally save it.

    Parameters
    ----------
    runs : list of (name, rows) pairs, or a dict name -> rows
        Each ``rows`` is a history (list of dicts).
    out : path or None
        Where to write the image (format from the extension, e.g. ``.png``),
        atomically: a failure leaves no partial image (see :mod:`spargel.core.files`).
    x : {"time", "iteration"}
        Horizontal axis: elapsed seconds or iteration number.
    figsize : (width, height) in inches or None
        Default: 4 inches per panel wide, 3.6 high. The saved image has exactly
        ``figsize * dpi`` pixels.
    dpi : int
        Resolution of the saved image.

    Panels: the objective (log scale when positive), the number of active
    (non-zero) features, and the development F1 -- or accuracy --
    when any run has one (zoomed on the 10 points below the best score, since
    the first iterations score far lower). Returns the matplotlib ``Figure``.
    """
    if x not in ("time", "iteration"):
        raise ValueError(f"x must be 'time' or 'iteration', got {x!r}")
    if isinstance(runs, dict):
        runs = list(runs.items())
    runs = [(str(name), list(rows)) for name, rows in runs]
    if not runs or not any(rows for _, rows in runs):
        raise ValueError("nothing to plot: no history rows")
    plt = import_pyplot()

    dev_key = None
    for key in ("dev_f1", "dev_accuracy"):
        if any(row.get(key) is not None for _, rows in runs for row in rows):
            dev_key = key
            break
    n_panels = 3 if dev_key else 2
    if figsize is None:
        figsize = (4.0 * n_panels, 3.6)
    fig, axes = plt.subplots(1, n_panels, figsize=figsize, dpi=dpi)
    xlabel = "time (s)" if x == "time" else "iteration"

    ax = axes[0]
    positive = True
    for name, rows in runs:
        xs, ys = _series(rows, "objective", x)
        positive = positive and all(y > 0 for y in ys)
        ax.plot(xs, ys, linewidth=1.2, label=name, **_markers(xs))
    if positive:
        ax.set_yscale("log")
    ax.set_ylabel("objective")
    ax.set_title("objective")

    ax = axes[1]
    for name, rows in runs:
        xs, ys = _series(rows, "active", x)
        ax.plot(xs, ys, linewidth=1.2, label=name, **_markers(xs))
    ax.set_ylabel("non-zero weights")
    ax.set_title("active features")

    if dev_key:
        ax = axes[2]
        values = []
        for name, rows in runs:
            xs, ys = _series(rows, dev_key, x)
            values += [100 * y for y in ys]
            ax.plot(xs, [100 * y for y in ys], linewidth=1.2, label=name, **_markers(xs))
        if values:  # the first iterations score low: zoom on the last 10 points below the best
            top = max(values)
            ax.set_ylim(max(min(values), top - 10) - 0.2, min(top + 0.5, 100.5))
        what = "F1" if dev_key == "dev_f1" else "accuracy"
        ax.set_ylabel(f"dev {what} (%)")
        ax.set_title(f"development {what}")
    for ax in axes:
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if out is not None:
        from .files import atomic_write

        ext = os.path.splitext(os.fspath(out))[1].lstrip(".").lower() or "png"
        with atomic_write(out, "wb") as fh:
            fig.savefig(fh, dpi=dpi, format=ext)
        plt.close(fig)
    return fig


def _markers(xs):
    """Dots on short runs only (on long ones they hide the line)."""
    return {"marker": ".", "markersize": 3} if len(xs) <= 80 else {}


def _finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)
