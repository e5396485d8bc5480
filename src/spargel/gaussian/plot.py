"""Pictures of a learned Gaussian MRF (optional: needs matplotlib).

>>> import numpy as np
>>> K = np.array([[2.0, -0.5, 0.0], [-0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
>>> round(float(partial_correlations(K)[0, 1]), 12)
0.25
"""

from __future__ import annotations

import numpy as np

__all__ = ["partial_correlations", "plot_graph", "plot_pattern"]


def _pyplot():
    try:
        import matplotlib

        if matplotlib.get_backend().lower() not in ("agg",) and not _has_display():
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib, which is not installed; "
                          "install it with: pip install 'spargel[plot]'") from None
    return plt


def _has_display():
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def partial_correlations(K):
    """``-K_ij / sqrt(K_ii K_jj)`` off the diagonal, 1 on it."""
    K = np.asarray(K, dtype=np.float64)
    d = np.sqrt(np.diag(K))
    P = -K / np.outer(d, d)
    np.fill_diagonal(P, 1.0)
    return P


def plot_graph(precision, labels=None, ax=None, max_labels=60, title=None):
    """Draw the graph of a precision matrix: variables on a circle, one line
    per non-zero off-diagonal entry, width and colour by the partial
    correlation (blue positive, red negative). Returns the axes."""
    plt = _pyplot()
    K = np.asarray(precision, dtype=np.float64)
    n = K.shape[0]
    P = partial_correlations(K)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    ang = 2 * np.pi * np.arange(n) / max(n, 1)
    x, y = np.cos(ang), np.sin(ang)
    iu, ju = np.nonzero(np.triu(K != 0, 1))
    pmax = float(np.max(np.abs(P[iu, ju]))) if iu.size else 1.0
    for i, j in zip(iu, ju):
        p = P[i, j]
        ax.plot([x[i], x[j]], [y[i], y[j]], color="tab:blue" if p > 0 else "tab:red",
                lw=0.3 + 2.5 * abs(p) / pmax, alpha=0.6, zorder=1)
    ax.scatter(x, y, s=18, color="black", zorder=2)
    if n <= max_labels:
        names = [str(i) for i in range(n)] if labels is None else [str(s) for s in labels]
        for k in range(n):
            ax.annotate(names[k], (1.08 * x[k], 1.08 * y[k]), ha="center", va="center", fontsize=7)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or f"{n} variables, {iu.size} edges")
    return ax


def plot_pattern(precision, ax=None, title=None):
    """Sparsity pattern of the precision matrix (non-zeros in black)."""
    plt = _pyplot()
    K = np.asarray(precision)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    ax.spy(K != 0, markersize=max(0.5, 200.0 / max(K.shape[0], 1)), color="black")
    nnz = int((np.count_nonzero(K) - np.count_nonzero(np.diag(K))) // 2)
    ax.set_title(title or f"sparsity pattern: {nnz} edges")
    return ax
