"""Drawing a learned MRF graph (matplotlib, imported only here)."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_mrf_graph"]


def plot_mrf_graph(n_nodes, edges, strength, *, ax=None, labels=None, positions=None, node_size=300,
                   max_width=4.0, title=None):
    """Variables as points (on a circle unless ``positions`` is given), edges as lines of
    width proportional to ``strength``. Returns the axes."""
    from ..core.plot import import_pyplot

    plt = import_pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    if positions is None:
        t = 2 * np.pi * np.arange(n_nodes) / max(n_nodes, 1)
        positions = np.stack([np.cos(t), np.sin(t)], axis=1)
    positions = np.asarray(positions, dtype=float)
    if positions.shape != (n_nodes, 2):
        raise ValueError(f"positions must have shape ({n_nodes}, 2), got {positions.shape}")
    s = np.asarray(strength, dtype=float)
    top = s.max() if len(s) and s.max() > 0 else 1.0
    for (i, j), v in zip(edges, s):
        ax.plot(positions[[i, j], 0], positions[[i, j], 1], color="tab:blue",
                linewidth=0.5 + max_width * v / top, alpha=0.8, zorder=1)
    ax.scatter(positions[:, 0], positions[:, 1], s=node_size, color="white", edgecolor="black", zorder=2)
    names = [str(i) for i in range(n_nodes)] if labels is None else [str(x) for x in labels]
    if len(names) != n_nodes:
        raise ValueError(f"{len(names)} labels for {n_nodes} variables")
    for (x, y), name in zip(positions, names):
        ax.annotate(name, (x, y), ha="center", va="center", fontsize=8, zorder=3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title if title is not None else f"{n_nodes} variables, {len(edges)} edges")
    return ax
