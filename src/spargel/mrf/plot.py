"""Drawing a learned MRF graph (matplotlib, imported only here)."""

from __future__ import annotations

import numpy as np

from ..errors import NotFittedError
from ..core.plot import import_pyplot
from .common import edge_weight_matrix

__all__ = ["plot_edge_stability", "plot_mrf_graph"]


def plot_mrf_graph(n_nodes, edges, strength, *, ax=None, labels=None, positions=None, node_size=300,
                   max_width=4.0, title=None):
    """Variables as points (on a circle unless ``positions`` is given), edges as lines of
    width proportional to ``strength``. Returns the axes."""
    plt = import_pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    positions = _circle(n_nodes, positions)
    s = np.asarray(strength, dtype=float)
    top = s.max() if len(s) and s.max() > 0 else 1.0
    for (i, j), v in zip(edges, s):
        ax.plot(positions[[i, j], 0], positions[[i, j], 1], color="tab:blue",
                linewidth=0.5 + max_width * v / top, alpha=0.8, zorder=1)
    _nodes(ax, positions, labels, node_size)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title if title is not None else f"{n_nodes} variables, {len(edges)} edges")
    return ax


def _nodes(ax, positions, labels, node_size):
    """The variables as white discs at ``positions``, each with its label (default its
    index)."""
    n_nodes = len(positions)
    names = [str(i) for i in range(n_nodes)] if labels is None else [str(x) for x in labels]
    if len(names) != n_nodes:
        raise ValueError(f"{len(names)} labels for {n_nodes} variables")
    ax.scatter(positions[:, 0], positions[:, 1], s=node_size, color="white", edgecolor="black", zorder=2)
    for (x, y), name in zip(positions, names):
        ax.annotate(name, (x, y), ha="center", va="center", fontsize=8, zorder=3)


def _circle(n_nodes, positions):
    if positions is None:
        t = 2 * np.pi * np.arange(n_nodes) / max(n_nodes, 1)
        positions = np.stack([np.cos(t), np.sin(t)], axis=1)
    positions = np.asarray(positions, dtype=float)
    if positions.shape != (n_nodes, 2):
        raise ValueError(f"positions must have shape ({n_nodes}, 2), got {positions.shape}")
    return positions


def plot_edge_stability(estimator, stability=None, *, ax=None, labels=None, positions=None, node_size=300,
                        max_width=5.0, cmap="viridis", show_unselected=0.5, title=None):
    """The selected graph of a fitted learner (a :class:`~spargel.mrf.estimator.PairwiseMRF`,
    a selector, :class:`~spargel.mrf.nodewise.IsingFit` or
    :class:`~spargel.mrf.mixed.MixedGraphicalModel`) with each edge's stability: width
    by the absolute edge weight (:func:`~spargel.mrf.common.edge_weight_matrix`), dashed
    where the weight is negative; colour (``cmap``) and opacity by the inclusion
    frequency from ``stability`` -- an :class:`~spargel.mrf.stability.EdgeStability`
    (the bootstrap's) or a (p, p) matrix such as StARS's ``edge_frequency_`` (default:
    the estimator's ``edge_frequency_`` if it has one, else none: plain edges). Pairs
    outside the selected graph whose frequency reaches ``show_unselected`` (None: none)
    are drawn as thin grey dotted lines. A colour bar and a legend (signs, widths,
    unselected pairs) explain the picture. Returns the axes.

    >>> import numpy as np
    >>> from spargel.mrf.nodewise import IsingFit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, (300, 4))
    >>> X[:, 1] = np.where(rng.random(300) < 0.9, X[:, 0], 1 - X[:, 0])
    >>> F = np.zeros((4, 4)); F[0, 1] = F[1, 0] = 0.9
    >>> ax = plot_edge_stability(IsingFit().fit(X), F)
    >>> ax.get_legend() is not None
    True
    """
    plt = import_pyplot()
    import matplotlib as mpl
    from matplotlib.lines import Line2D

    est = estimator.best_estimator_ if hasattr(estimator, "best_estimator_") else estimator
    if not hasattr(est, "edges_"):
        raise NotFittedError(f"this {type(est).__name__} is not fitted yet; call fit() first")
    W = edge_weight_matrix(est)
    p = W.shape[0]
    edges = np.asarray(est.edges_, dtype=np.int64).reshape(-1, 2)
    if stability is None:
        stability = getattr(estimator, "edge_frequency_", None)
    F = getattr(stability, "frequency", stability)
    if F is not None:
        F = np.asarray(F, dtype=float)
        if F.shape != (p, p) or not np.all((F >= 0) & (F <= 1)):
            raise ValueError(f"the inclusion frequencies must be a ({p}, {p}) matrix of values in [0, 1]")
    positions = _circle(p, positions)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 6))
    colours = mpl.colormaps[cmap] if isinstance(cmap, str) else cmap
    top = float(np.abs(W[edges[:, 0], edges[:, 1]]).max()) if len(edges) else 1.0
    top = top if top > 0 else 1.0

    def width(v):
        return 0.5 + max_width * abs(v) / top

    if F is not None and show_unselected is not None:
        on = np.zeros((p, p), bool)
        on[edges[:, 0], edges[:, 1]] = True
        for i, j in zip(*np.triu_indices(p, 1)):
            if not on[i, j] and F[i, j] >= show_unselected:
                ax.plot(positions[[i, j], 0], positions[[i, j], 1], color="0.6", linestyle=":", linewidth=1.0,
                        zorder=0, gid="unselected")
    for i, j in edges:
        v = W[i, j]
        f = None if F is None else F[i, j]
        ax.plot(positions[[i, j], 0], positions[[i, j], 1], color="tab:blue" if f is None else colours(f),
                alpha=0.8 if f is None else 0.35 + 0.65 * f, linewidth=width(v),
                linestyle="--" if v < 0 else "-", zorder=1, gid="edge")
    _nodes(ax, positions, labels, node_size)
    handles = [Line2D([], [], color="0.3", linewidth=width(top), label=f"|weight| {top:.3g}"),
               Line2D([], [], color="0.3", linewidth=width(top / 2), label=f"|weight| {top / 2:.3g}"),
               Line2D([], [], color="0.3", linestyle="--", linewidth=1.5, label="negative weight")]
    if F is not None and show_unselected is not None:
        handles.append(Line2D([], [], color="0.6", linestyle=":", label=f"not selected, frequency >= "
                                                                       f"{show_unselected:g}"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8, frameon=False)
    if F is not None:
        bar = ax.figure.colorbar(mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(0, 1), cmap=colours), ax=ax,
                                 shrink=0.6, location="right")
        bar.set_label("inclusion frequency")
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title if title is not None else f"{p} variables, {len(edges)} edges")
    return ax
