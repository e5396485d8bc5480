"""Pictures of a learned Gaussian MRF (optional: needs matplotlib).

* :func:`plot_graph`: the graph. Edges coloured by the sign of the partial
  correlation (blue positive, red negative) with width by its size, and a
  legend for both; nodes sized by degree. Up to ``circle_max`` variables sit
  on a circle; larger graphs get a force-directed layout per connected
  component, the components packed apart (largest first) and the isolated
  variables in a strip below. Every variable is labelled up to
  ``max_labels``; beyond that only the hubs (the ``n_hub_labels`` highest
  degrees); above ``circle_max`` a label that would overlap one already drawn
  is skipped.
* :func:`plot_heatmap`: the partial correlations as a heat map, variables
  reordered by hierarchical clustering (average linkage on ``1 - |partial
  correlation|``) so that blocks show, with a colour bar.
* :func:`plot_overview`: both side by side (what ``spargel gmrf --plot`` draws
  for more than 30 variables).
* :func:`plot_pattern`: the sparsity pattern.
* :func:`plot_path`, :func:`plot_instability`: a selection's path (edges and the
  criterion against alpha, the choice marked) and StARS's instability;
  :func:`plot_roc`: ROC and precision–recall of a path against the true graph;
  :func:`plot_graph_data`: a generated model (``huge.generator``'s ``vis``).

The layouts are deterministic (fixed seed).

>>> import numpy as np
>>> K = np.array([[2.0, -0.5, 0.0], [-0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
>>> round(float(partial_correlations(K)[0, 1]), 12)
0.25
>>> layout(K).shape
(3, 2)
"""

from __future__ import annotations

import numpy as np

__all__ = ["partial_correlations", "plot_graph", "plot_heatmap", "plot_overview",
           "plot_pattern", "layout", "cluster_order", "plot_graph_data", "plot_path",
           "plot_instability", "plot_roc"]

_POS, _NEG = "#2166ac", "#b2182b"        # blue: positive, red: negative partial correlation


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


def _components(A):
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n_comp, lab = connected_components(csr_matrix(A), directed=False)
    comps = [np.flatnonzero(lab == c) for c in range(n_comp)]
    comps.sort(key=lambda c: (-c.size, c[0]))
    return comps


def _mds_init(A):
    """Classical multidimensional scaling of the shortest-path distances of a
    connected graph: a spread-out starting layout (2 columns)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    D = shortest_path(csr_matrix(A), unweighted=True)
    m = D.shape[0]
    J = np.eye(m) - 1.0 / m
    B = -0.5 * J @ (D * D) @ J
    w, V = np.linalg.eigh(B)
    top = np.argsort(w)[::-1][:2]
    X = V[:, top] * np.sqrt(np.maximum(w[top], 1e-12))
    for j in range(2):                   # a deterministic orientation
        if X[np.argmax(np.abs(X[:, j])), j] < 0:
            X[:, j] = -X[:, j]
    return X


def _force_layout(A, W, seed, iterations=80):
    """One connected component (``A`` its adjacency, ``W`` edge weights in
    (0, 1] pulling harder) in [-0.5, 0.5]^2: classical MDS of the graph
    distances, then Fruchterman-Reingold steps that pull neighbours together and
    push crowded nodes apart."""
    m = A.shape[0]
    if m == 1:
        return np.zeros((1, 2))
    if m == 2:
        return np.array([[-0.5, 0.0], [0.5, 0.0]])
    rng = np.random.default_rng(seed)
    pos = _mds_init(A)
    pos = pos / max(float(np.max(np.abs(pos))), 1e-12) + rng.uniform(-1e-3, 1e-3, (m, 2))
    k = 1.5 / np.sqrt(m)
    t = 0.05
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.sqrt(np.einsum("ijk,ijk->ij", delta, delta)), 1e-3)
        force = k * k / dist - A * W * dist * dist / k           # repulsion - attraction
        np.fill_diagonal(force, 0.0)
        disp = np.einsum("ijk,ij->ik", delta, force / dist)
        length = np.maximum(np.sqrt(np.einsum("ik,ik->i", disp, disp)), 1e-12)
        pos += disp / length[:, None] * np.minimum(length, t)[:, None]
        t *= 0.96
    pos -= np.median(pos, axis=0)
    # scale by the bulk, not by one far node: the 95th percentile radius -> 0.45
    r = np.sqrt(np.einsum("ik,ik->i", pos, pos))
    pos *= 0.45 / max(float(np.quantile(r, 0.95)), 1e-12)
    return np.clip(pos, -0.5, 0.5)


def layout(precision, circle_max=30, seed=0):
    """(n, 2) node positions: a circle for at most ``circle_max`` variables, else
    a force-directed layout per connected component, components packed in rows
    (largest first, each in a box scaled by the square root of its size), the
    isolated variables in a grid below."""
    K = np.asarray(precision, dtype=np.float64)
    n = K.shape[0]
    if n <= circle_max:
        ang = np.pi / 2 - 2 * np.pi * np.arange(n) / max(n, 1)
        return np.stack([np.cos(ang), np.sin(ang)], axis=1)
    A = (K != 0).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    P = np.abs(partial_correlations(K))
    comps = _components(A)
    big = [c for c in comps if c.size > 1]
    single = np.array([c[0] for c in comps if c.size == 1], dtype=np.int64)
    pos = np.zeros((n, 2))
    sizes = np.array([np.sqrt(c.size) for c in big])
    total_w = max(np.sqrt(np.sum(sizes ** 2)) * 1.6, float(sizes.max()) if sizes.size else 1.0)
    x = y = row_h = 0.0
    for c, s in zip(big, sizes):
        if x > 0 and x + s > total_w:
            x, y, row_h = 0.0, y - row_h - 0.25, 0.0
        sub = np.ix_(c, c)
        W = P[sub] / max(float(P[sub].max()), 1e-12)
        pos[c] = _force_layout(A[sub], 0.5 + 0.5 * W, seed) * s + [x + s / 2, y - s / 2]
        x += s + 0.25
        row_h = max(row_h, s)
    if single.size:
        y -= row_h + 0.4
        step = 0.3
        per_row = max(int(total_w / step), 1)
        for k, v in enumerate(single):
            pos[v] = [(k % per_row) * step, y - (k // per_row) * step]
    return pos


def _strength_legend(ax, pmax, lw, n_isolated=0):
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=_POS, lw=2.5, label="positive partial correlation"),
               Line2D([], [], color=_NEG, lw=2.5, label="negative partial correlation")]
    for v in sorted({round(pmax / 4, 2), round(pmax / 2, 2), round(pmax, 2)}):
        if v > 0:
            handles.append(Line2D([], [], color="0.35", lw=lw(v), label=f"|partial corr.| = {v:g}"))
    if n_isolated:
        handles.append(Line2D([], [], ls="", marker="o", color="0.6", markersize=4,
                              label=f"{n_isolated} variables without edges"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
              frameon=False, title="edges", title_fontsize=9)


def plot_graph(precision, labels=None, ax=None, max_labels=60, title=None, circle_max=30,
               n_hub_labels=15, seed=0, legend=True, caption=None):
    """Draw the graph of a precision matrix (see the module docstring). Returns
    the axes. ``caption``: a first title line above the default one (``title``
    replaces the default)."""
    plt = _pyplot()
    K = np.asarray(precision, dtype=np.float64)
    n = K.shape[0]
    P = partial_correlations(K)
    if ax is None:
        size = 6.5 if n <= circle_max else min(12.0, 7.0 + n / 100)
        _, ax = plt.subplots(figsize=(size + 2.5, size))
    pos = layout(K, circle_max=circle_max, seed=seed)
    iu, ju = np.nonzero(np.triu(K != 0, 1))
    pmax = float(np.max(np.abs(P[iu, ju]))) if iu.size else 1.0
    thin = 0.4 if n > 100 else 0.6

    def lw(v):
        return thin + 3.0 * abs(v) / pmax

    from matplotlib.collections import LineCollection

    order = np.argsort(np.abs(P[iu, ju]))                    # strong edges drawn on top
    segs = np.stack([pos[iu[order]], pos[ju[order]]], axis=1)
    vals = P[iu[order], ju[order]]
    ax.add_collection(LineCollection(segs, colors=[_POS if v > 0 else _NEG for v in vals],
                                     linewidths=[lw(v) for v in vals],
                                     alpha=0.75 if n <= 100 else 0.6, zorder=1))
    deg = np.count_nonzero(K, axis=0) - (np.diag(K) != 0)
    isolated = deg == 0
    ns = 12 + 60 * deg / max(int(deg.max()), 1) if n > circle_max else np.full(n, 30.0)
    ax.scatter(pos[~isolated, 0], pos[~isolated, 1], s=ns[~isolated], color="0.15",
               zorder=2, linewidths=0)
    if np.any(isolated):
        ax.scatter(pos[isolated, 0], pos[isolated, 1], s=8, color="0.6", zorder=2,
                   linewidths=0)
    names = [str(i) for i in range(n)] if labels is None else [str(s) for s in labels]
    ax.set_aspect("equal")
    ax.autoscale_view()
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    pad = 0.2 * max(float(np.max(hi - lo)), 1e-9) if n <= circle_max else 0.15
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.axis("off")
    ax.apply_aspect()                               # the axes' box as it will be drawn
    if n <= circle_max:                             # around the circle: every variable
        for k in range(n):
            x, y = pos[k] * 1.13
            ax.annotate(names[k], (x, y), ha="center", va="center", fontsize=8)
        shown = n
    else:
        # every variable up to max_labels, else the hubs by degree; a label whose box
        # would overlap one already drawn is skipped (the next hub is tried instead)
        hubs = n > max_labels
        order = np.argsort(-deg, kind="stable") if hubs else np.arange(n)
        shown = len(place_labels(ax, [(names[k], pos[k]) for k in order if not hubs or deg[k] > 0],
                                 most=n_hub_labels if hubs else None,
                                 fontsize=7 if hubs else 6))
    head = f"{n} variables, {iu.size} edges"
    if n > max_labels:
        head += f" (the {shown} largest hubs labelled)"
    elif shown < n:
        head += f" ({n - shown} overlapping labels left out)"
    ax.set_title(title or (head if caption is None else f"{caption}\n{head}"), fontsize=10)
    if legend:
        _strength_legend(ax, pmax, lw, int(np.sum(isolated)) if n > circle_max else 0)
    return ax


def _renderer(fig):
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else fig._get_renderer()


def place_labels(ax, items, most=None, fontsize=7):
    """Annotate ``(text, (x, y))`` items in order, each on a white box just above and
    right of its point, skipping any whose box would overlap a label already drawn
    (measured as drawn, with the axes' limits as they are now); at most ``most``
    labels. Returns the annotations drawn."""
    renderer = _renderer(ax.figure)
    drawn, boxes = [], []
    for text, xy in items:
        if most is not None and len(drawn) >= most:
            break
        t = ax.annotate(text, xy, xytext=(4, 4), textcoords="offset points", fontsize=fontsize,
                        zorder=3, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none",
                                            alpha=0.8))
        box = t.get_window_extent(renderer).expanded(1.1, 1.3)
        if any(box.overlaps(b) for b in boxes):
            t.remove()
            continue
        drawn.append(t)
        boxes.append(box)
    return drawn


def cluster_order(precision):
    """Variable order from average-linkage clustering on ``1 - |partial corr.|``
    (leaves of the dendrogram, optimally ordered)."""
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    P = partial_correlations(precision)
    n = P.shape[0]
    if n < 3:
        return np.arange(n)
    D = 1.0 - np.abs(P)
    np.fill_diagonal(D, 0.0)
    y = squareform(np.clip(0.5 * (D + D.T), 0.0, None), checks=False)
    Z = linkage(y, method="average")
    return leaves_list(optimal_leaf_ordering(Z, y))


def plot_heatmap(precision, labels=None, ax=None, max_labels=60, title=None):
    """Partial correlations as a heat map in clustered order, with a colour bar
    (blue positive, red negative, white zero). Returns the axes."""
    plt = _pyplot()
    K = np.asarray(precision, dtype=np.float64)
    n = K.shape[0]
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 5.5))
    order = cluster_order(K)
    P = partial_correlations(K)[np.ix_(order, order)]
    np.fill_diagonal(P, 0.0)
    vmax = float(np.max(np.abs(P))) or 1.0
    im = ax.imshow(P, cmap="RdBu", vmin=-vmax, vmax=vmax, interpolation="nearest")
    cb = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    cb.set_label("partial correlation", fontsize=8)
    cb.ax.tick_params(labelsize=7)
    names = [str(i) for i in range(n)] if labels is None else [str(s) for s in labels]
    if n <= max_labels:
        ax.set_xticks(range(n), [names[k] for k in order], rotation=90, fontsize=6)
        ax.set_yticks(range(n), [names[k] for k in order], fontsize=6)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(f"{n} variables in clustered order", fontsize=8)
    ax.set_title(title or "partial correlations (clustered)", fontsize=10)
    return ax


def plot_overview(precision, labels=None, max_labels=60, title=None, caption=None):
    """The graph and, for more than 30 variables, the clustered heat map beside
    it, in one figure. Returns the graph's axes (``caption``: as in
    :func:`plot_graph`)."""
    plt = _pyplot()
    n = np.asarray(precision).shape[0]
    if n <= 30:
        return plot_graph(precision, labels=labels, max_labels=max_labels, title=title,
                          caption=caption)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(19, 8.5),
                                 gridspec_kw={"width_ratios": [1.35, 1.0]})
    # the axes are placed before the labels are (no tight_layout afterwards: moving the
    # axes would move the labels against each other after their overlaps were checked)
    fig.subplots_adjust(left=0.02, right=0.96, bottom=0.08, top=0.92, wspace=0.12)
    plot_graph(precision, labels=labels, ax=a1, max_labels=max_labels, title=title,
               caption=caption)
    plot_heatmap(precision, labels=labels, ax=a2, max_labels=max_labels)
    return a1


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


def plot_graph_data(d, max_graph=500):
    """What ``huge.generator(..., vis = TRUE)`` shows for a
    :func:`spargel.gaussian.make_graph_data` result: the adjacency matrix, the graph
    (up to ``max_graph`` variables), the covariance and the empirical covariance of
    the samples (both only when the covariance is dense). Returns the figure."""
    import scipy.sparse as sp

    plt = _pyplot()
    p = d.graph.shape[0]
    dense = d.covariance is not None
    panels = 2 + (2 if dense else 0) - (1 if p > max_graph else 0)
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 4.6), squeeze=False)
    axes = list(axes[0])
    ax = axes.pop(0)
    ax.spy(sp.csr_matrix(d.graph), markersize=max(0.5, 200.0 / max(p, 1)), color="black")
    ax.set_title(f"adjacency matrix: {d.n_edges} edges ({d.graph_type})", fontsize=10)
    if p <= max_graph:
        K = d.precision.toarray() if sp.issparse(d.precision) else np.asarray(d.precision)
        plot_graph(K, ax=axes.pop(0), title=f"graph pattern: {p} variables", legend=p <= 30)
    if dense:
        S = np.cov(d.data.T, bias=True) if d.data.shape[0] > 1 else np.zeros((p, p))
        for ax, M, title in ((axes[0], d.covariance, "covariance matrix"),
                             (axes[1], S, "empirical covariance matrix")):
            vmax = float(np.max(np.abs(M))) or 1.0
            im = ax.imshow(M, cmap="RdBu", vmin=-vmax, vmax=vmax, interpolation="nearest")
            cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
            cb.set_label("covariance", fontsize=8)
            ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _fitted_path(selector):
    alphas = getattr(selector, "alphas_", None)
    edges = getattr(selector, "edges_path_", None)
    if alphas is None or edges is None:
        raise ValueError(f"{type(selector).__name__} holds no fitted path: fit a "
                         "SparseGaussianMRFSelect (or an estimator with alphas_ and "
                         "edges_path_) first")
    return np.asarray(alphas, dtype=np.float64), np.asarray(edges)


def _alpha_axis(ax, alphas):
    """A log alpha axis labelled at (up to 6 of) the path's own alphas."""
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.set_xscale("log")
    a = np.sort(np.asarray(alphas, dtype=np.float64))
    ticks = a[np.unique(np.linspace(0, a.size - 1, min(6, a.size)).round().astype(int))]
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(ticks, [f"{t:.3g}" for t in ticks])
    ax.set_xlabel("alpha (correlation scale)")


def _criterion_of(selector):
    """The criterion a selector used (``criterion_``; else its parameter), lower case."""
    crit = getattr(selector, "criterion_", None) or getattr(selector, "criterion", None)
    return str(crit or "").lower()


def _mark_choice(ax, alpha, label):
    ax.axvline(alpha, color="#b2182b", ls="--", lw=1.2, label=label)


def plot_path(selector, axes=None, title=None):
    """The path of a fitted :class:`~spargel.SparseGaussianMRFSelect` (or any estimator
    with ``alphas_`` and ``edges_path_``): the number of edges against alpha, and the
    criterion per alpha (EBIC's score, StARS's variability with its threshold; RIC has
    no curve: its alpha is marked on the first panel), the chosen alpha marked on both.
    Returns the axes (two, or one without a criterion curve)."""
    plt = _pyplot()
    alphas, edges = _fitted_path(selector)
    scores = getattr(selector, "criterion_scores_", None)
    crit = _criterion_of(selector)
    chosen = getattr(selector, "alpha_", None)
    k = 2 if scores is not None else 1
    if axes is None:
        fig, axes = plt.subplots(1, k, figsize=(5.2 * k, 4.0), squeeze=False)
        axes = list(axes[0])
    axes = list(np.atleast_1d(axes))
    name = {"ebic": "EBIC", "stars": "StARS", "ric": "RIC"}.get(crit, crit or "chosen")
    ax = axes[0]
    ax.plot(alphas, edges, "o-", color="0.2", ms=4, label="edges (all data)")
    if chosen is not None:
        _mark_choice(ax, chosen, f"{name}: alpha = {chosen:.4g}")
    _alpha_axis(ax, alphas)
    ax.set_ylabel("number of edges")
    ax.set_title(title or f"path: {len(alphas)} alphas", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    if scores is not None and len(axes) > 1:
        ax = axes[1]
        if crit == "stars":
            _draw_instability(ax, selector, alphas, scores, chosen)
        else:
            ax.plot(alphas, scores, "o-", color="#2166ac", ms=4, label=f"{name} score")
            if chosen is not None:
                _mark_choice(ax, chosen, f"chosen: alpha = {chosen:.4g} (smallest score)")
            _alpha_axis(ax, alphas)
            ax.set_ylabel(f"{name} score")
            ax.set_title(f"{name} along the path", fontsize=10)
            ax.legend(fontsize=8, frameon=False)
    axes[0].figure.tight_layout()
    return axes if len(axes) > 1 else axes[0]


def _draw_instability(ax, selector, alphas, var, chosen):
    thr = getattr(selector, "stars_threshold", None)
    ax.plot(alphas, var, "o-", color="#2166ac", ms=4, label="variability (subsamples)")
    if thr is not None:
        ax.axhline(thr, color="0.5", ls=":", lw=1.2, label=f"threshold {thr:g}")
    if chosen is not None:
        _mark_choice(ax, chosen, f"chosen: alpha = {chosen:.4g}")
    _alpha_axis(ax, alphas)
    ax.set_ylabel("4 mean theta (1 - theta)")
    ax.set_title("StARS edge instability", fontsize=10)
    ax.legend(fontsize=8, frameon=False)


def plot_instability(selector, ax=None, title=None):
    """StARS's variability ``4 mean_{i<j} theta (1 - theta)`` per alpha of a
    :class:`~spargel.SparseGaussianMRFSelect` fitted with ``criterion='stars'``, with
    the threshold and the chosen alpha. Returns the axes."""
    plt = _pyplot()
    alphas, _ = _fitted_path(selector)
    if _criterion_of(selector) != "stars" or \
            getattr(selector, "criterion_scores_", None) is None:
        raise ValueError("plot_instability needs a selector fitted with criterion='stars' "
                         f"(this one: {getattr(selector, 'criterion', None)!r})")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.0))
    _draw_instability(ax, selector, alphas, np.asarray(selector.criterion_scores_),
                      getattr(selector, "alpha_", None))
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def plot_roc(roc, axes=None, label="path", title=None):
    """The ROC curve (FPR sorted, TPR following, as ``huge.roc`` draws it) and the
    precision–recall points of a :func:`spargel.gaussian.path_roc` result, each with a
    legend (the AUC as huge.roc computes it). Returns the two axes."""
    plt = _pyplot()
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    a1, a2 = axes
    order = np.argsort(roc.fpr, kind="stable")
    a1.plot(roc.fpr[order], roc.tpr[order], "o-", ms=4, color="#2166ac",
            label=f"{label}: AUC {roc.auc:.3f} (closed {roc.auc_closed:.3f})")
    a1.plot([0, 1], [0, 1], ls=":", color="0.6", label="random guess")
    a1.set_xlim(-0.02, 1.02)
    a1.set_ylim(-0.02, 1.02)
    a1.set_xlabel("false positive rate")
    a1.set_ylabel("true positive rate")
    a1.set_title(title or f"ROC against the true graph ({roc.n_true_edges} edges)", fontsize=10)
    a1.legend(fontsize=8, frameon=False, loc="lower right")
    by = np.argsort(roc.recall, kind="stable")
    a2.plot(roc.recall[by], roc.precision[by], "o-", ms=4, color="#b2182b",
            label=f"{label}: best F1 {float(np.max(roc.f1)):.3f}")
    a2.set_xlim(-0.02, 1.02)
    a2.set_ylim(-0.02, 1.02)
    a2.set_xlabel("recall")
    a2.set_ylabel("precision")
    a2.set_title("precision-recall", fontsize=10)
    a2.legend(fontsize=8, frameon=False, loc="lower left")
    a1.figure.tight_layout()
    return a1, a2
