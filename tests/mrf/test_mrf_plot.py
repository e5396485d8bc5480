"""The picture of a selected graph with its edge stability: one line per selected edge,
width by |weight|, colour and opacity by inclusion frequency, dashed when negative,
frequent unselected pairs dotted, a colour bar and a legend."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib as mpl  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

import spargel  # noqa: E402
from spargel.mrf.common import edge_weight_matrix  # noqa: E402
from spargel.mrf.mixed import MixedGraphicalModel, make_mixed_data  # noqa: E402
from spargel.mrf.nodewise import IsingFit  # noqa: E402
from spargel.mrf.selection import PairwiseMRFSelect  # noqa: E402
from spargel.mrf.stability import edge_stability  # noqa: E402


def _lines(ax, gid):
    return [ln for ln in ax.get_lines() if ln.get_gid() == gid]


def test_edges_carry_weight_and_frequency():
    types = "gc" * 5
    X, _, _ = make_mixed_data(400, types, 10, seed=3)
    fit = MixedGraphicalModel(types).fit(X)
    st = edge_stability(MixedGraphicalModel(types), X, n_boot=6, random_state=0)
    ax = fit.plot(st, labels=list("abcdefghij"), show_unselected=0.3)
    W = edge_weight_matrix(fit)
    lines = _lines(ax, "edge")
    assert len(lines) == len(fit.edges_) > 0
    top = np.abs(W[tuple(fit.edges_.T)]).max()
    viridis = mpl.colormaps["viridis"]
    for (i, j), ln in zip(fit.edges_, lines):
        f = st.frequency[i, j]
        assert ln.get_linewidth() == pytest.approx(0.5 + 5.0 * abs(W[i, j]) / top)
        assert to_rgba(ln.get_color())[:3] == pytest.approx(viridis(f)[:3])
        assert ln.get_alpha() == pytest.approx(0.35 + 0.65 * f)
        assert ln.get_linestyle() == ("--" if W[i, j] < 0 else "-")
    on = np.zeros_like(W, bool)
    on[tuple(fit.edges_.T)] = True
    iu = np.triu_indices(10, 1)
    assert len(_lines(ax, "unselected")) == int(np.sum((st.frequency[iu] >= 0.3) & ~on[iu]))
    assert [t.get_text() for t in ax.texts] == list("abcdefghij")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "negative weight" in legend and any(t.startswith("|weight|") for t in legend)
    assert any(a.get_ylabel() == "inclusion frequency" for a in ax.figure.axes)


def test_stars_frequencies_by_default_and_plain_edges_without():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (500, 6))
    X[:, 1] = np.where(rng.random(500) < 0.85, X[:, 0], 1 - X[:, 0])
    X[:, 3] = np.where(rng.random(500) < 0.8, X[:, 2], 1 - X[:, 2])
    sel = PairwiseMRFSelect("stars", n_l1s=8, n_subsamples=5, random_state=0,
                            estimator=spargel.PairwiseMRF(adaptive=False)).fit(X)
    ax = sel.plot()
    F = sel.edge_frequency_
    viridis = mpl.colormaps["viridis"]
    for (i, j), ln in zip(sel.edges_, _lines(ax, "edge")):
        assert to_rgba(ln.get_color())[:3] == pytest.approx(viridis(F[i, j])[:3])
    plain = IsingFit().fit(X).plot()
    assert all(ln.get_color() == "tab:blue" for ln in _lines(plain, "edge"))
    assert len(plain.figure.axes) == 1                     # no colour bar without frequencies
    with pytest.raises(ValueError, match="6, 6"):
        IsingFit().fit(X).plot(np.zeros((3, 3)))
    with pytest.raises(spargel.NotFittedError):
        IsingFit().plot()
