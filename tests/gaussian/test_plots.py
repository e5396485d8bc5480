"""The pictures: legend, hub labels, components apart, clustered heat map."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spargel.gaussian.estimator import SparseGaussianMRF  # noqa: E402
from spargel.gaussian.plot import (cluster_order, layout, partial_correlations,  # noqa: E402
                                   plot_graph, plot_heatmap, plot_overview)


def _blocks_precision(sizes=(40, 30, 20, 10), isolated=5, seed=0):
    """Chains (alternating signs) as separate components, plus isolated variables,
    in a shuffled order."""
    p = sum(sizes) + isolated
    K = np.eye(p) * 2.0
    start = 0
    for s in sizes:
        for i in range(start, start + s - 1):
            K[i, i + 1] = K[i + 1, i] = 0.6 if i % 2 else -0.6
        start += s
    perm = np.random.default_rng(seed).permutation(p)
    return K[np.ix_(perm, perm)], perm


def test_legend_tells_sign_and_strength():
    K, _ = _blocks_precision()
    ax = plot_graph(K)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "positive partial correlation" in texts and "negative partial correlation" in texts
    pmax = np.max(np.abs(partial_correlations(K)[np.triu(K != 0, 1)]))
    assert f"|partial corr.| = {round(pmax, 2):g}" in texts
    assert "5 variables without edges" in texts
    plt.close("all")


def test_only_hubs_are_labelled_on_large_graphs():
    K, _ = _blocks_precision()
    hub = 3
    K[hub, :] = np.where(K[hub, :] == 0, 0.01, K[hub, :])       # a hub joined to everything
    K[:, hub] = K[hub, :]
    K[hub, hub] = 10.0
    ax = plot_graph(K, max_labels=60, n_hub_labels=8)
    labels = [t.get_text() for t in ax.texts]
    assert 1 <= len(labels) <= 8 and str(hub) in labels
    small = plot_graph(K[:12, :12].copy() + np.eye(12), max_labels=60)
    assert len(small.texts) == 12                     # every variable of a small graph
    plt.close("all")


def test_components_are_laid_out_apart():
    K, perm = _blocks_precision()
    pos = layout(K)
    inv = np.argsort(perm)                            # original variable -> shuffled index
    boxes, start = [], 0
    for s in (40, 30, 20, 10):
        idx = inv[start:start + s]
        boxes.append((pos[idx].min(axis=0), pos[idx].max(axis=0)))
        start += s
    for (lo1, hi1), (lo2, hi2) in [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]]:
        overlap = np.all(np.minimum(hi1, hi2) > np.maximum(lo1, lo2))
        assert not overlap
    # isolated variables below every component
    iso = inv[100:]
    assert np.all(pos[iso, 1] < min(lo[1] for lo, _ in boxes))
    np.testing.assert_array_equal(layout(K), pos)     # deterministic


def test_cluster_order_recovers_blocks():
    K, perm = _blocks_precision(sizes=(6, 5, 4), isolated=0)
    order = cluster_order(K)
    assert sorted(order) == list(range(15))
    block_of = np.repeat([0, 1, 2], [6, 5, 4])[perm]   # block of each shuffled variable
    seq = block_of[order]
    assert np.count_nonzero(np.diff(seq)) == 2          # each block contiguous


def test_heatmap_and_overview():
    K, _ = _blocks_precision()
    ax = plot_heatmap(K)
    assert ax.images and "partial correlation" in ax.figure.axes[-1].get_ylabel()
    a1 = plot_overview(K)
    assert len(a1.figure.axes) == 3                     # graph, heat map, colour bar
    plt.close("all")


def test_estimator_plot_kinds_use_feature_names():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    X[:, 1] += X[:, 0]
    m = SparseGaussianMRF(alpha=0.1).fit(X)
    m.feature_names_in_ = np.array(["a", "b", "c", "d"], dtype=object)
    assert {t.get_text() for t in m.plot().texts} == {"a", "b", "c", "d"}
    m.plot(kind="heatmap")
    m.plot(kind="overview")
    with pytest.raises(ValueError, match="kind must be"):
        m.plot(kind="circle")
    plt.close("all")


def _star_of_hubs(n_hubs=12, leaves=6):
    """Hubs joined in a tight clique, each with its own leaves: the hubs sit close
    together, so long hub labels collide."""
    p = n_hubs * (1 + leaves)
    K = np.eye(p) * 4.0
    for a in range(n_hubs):
        for b in range(a + 1, n_hubs):
            K[a, b] = K[b, a] = 0.05
        for k in range(leaves):
            j = n_hubs + a * leaves + k
            K[a, j] = K[j, a] = 0.3
    return K


def _boxes(ax):
    ax.figure.canvas.draw()
    r = ax.figure.canvas.get_renderer()
    return [t.get_window_extent(r) for t in ax.texts]


@pytest.mark.parametrize("overview", [False, True])
def test_hub_labels_that_would_overlap_are_skipped(overview):
    K = _star_of_hubs()
    names = [f"a_rather_long_variable_name_{i}" for i in range(K.shape[0])]
    draw = plot_overview if overview else plot_graph
    ax = draw(K, labels=names, max_labels=20)
    boxes = _boxes(ax)
    shown = {t.get_text() for t in ax.texts}
    assert 1 <= len(boxes) <= 15
    assert not {names[h] for h in range(12)} <= shown  # some hubs' labels were left out
    for i in range(len(boxes)):                       # and no two drawn labels overlap
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (ax.texts[i].get_text(), ax.texts[j].get_text())
    assert f"(the {len(boxes)} largest hubs labelled)" in ax.get_title()
    plt.close("all")


def test_caption_goes_above_the_default_title():
    K = _star_of_hubs(4, 2)
    ax = plot_graph(K, caption="alpha=0.1 (given)")
    assert ax.get_title().startswith("alpha=0.1 (given)\n12 variables, ")
    plt.close("all")
