"""SparseGaussianMRFSelect's huge.select outputs (path_, selected_index_,
edge_frequency_path_) and the plots of a path."""

import numpy as np
import pytest
import scipy.sparse as sp

import spargel


@pytest.fixture(scope="module")
def hub():
    return spargel.make_graph_data(150, 16, "hub", g=2, random_state=3)


def test_ebic_path_outputs(hub):
    sel = spargel.SparseGaussianMRFSelect("ebic", alphas=6).fit(hub.data)
    assert len(sel.path_) == 6
    for A, K_edges in zip(sel.path_, sel.edges_path_):
        assert sp.issparse(A) and A.dtype == bool and (A != A.T).nnz == 0
        assert A.diagonal().sum() == 0 and A.nnz // 2 == K_edges
    k = sel.selected_index_
    assert sel.alphas_[k] == sel.alpha_ and k == int(np.argmin(sel.criterion_scores_))
    # the chosen graph is the path's graph at the chosen alpha
    np.testing.assert_array_equal(sel.path_[k].toarray(),
                                  (sel.precision_ != 0) & ~np.eye(16, dtype=bool))


def test_stars_frequencies_per_alpha(hub):
    sel = spargel.SparseGaussianMRFSelect("stars", alphas=5, n_subsamples=4, random_state=0,
                                          stars_full_path=True).fit(hub.data)
    early = spargel.SparseGaussianMRFSelect("stars", alphas=5, n_subsamples=4,
                                            random_state=0).fit(hub.data)
    assert early.selected_index_ == sel.selected_index_
    F = sel.edge_frequency_path_
    assert len(F) == 5 and all(sp.issparse(f) for f in F)
    np.testing.assert_allclose(F[sel.selected_index_].toarray(), sel.edge_frequency_)
    iu = np.triu_indices(16, 1)
    for f, v in zip(F, sel.criterion_scores_):               # the variability from them
        theta = f.toarray()[iu]
        assert 4 * np.mean(theta * (1 - theta)) == pytest.approx(v)
    wide = spargel.SparseGaussianMRFSelect("stars", alphas=5, n_subsamples=4, random_state=0,
                                           covariance="from_data",
                                           stars_full_path=True).fit(hub.data)
    assert wide.selected_index_ == sel.selected_index_
    for a, b in zip(wide.edge_frequency_path_, F):
        np.testing.assert_allclose(a.toarray(), b.toarray())
    assert [A.nnz for A in wide.path_] == [A.nnz for A in sel.path_]


def test_ric_has_no_index(hub):
    sel = spargel.SparseGaussianMRFSelect("ric", alphas=4, random_state=0).fit(hub.data)
    assert sel.selected_index_ is None and len(sel.path_) == 4


def test_model_file_keeps_the_index(hub, tmp_path):
    for crit in ("ebic", "ric"):
        sel = spargel.SparseGaussianMRFSelect(crit, alphas=4, random_state=0).fit(hub.data)
        sel.save(tmp_path / "s.model")
        back = spargel.SparseGaussianMRFSelect.load(tmp_path / "s.model")
        assert back.selected_index_ == sel.selected_index_
        assert not hasattr(back, "path_")                 # not kept (documented)


def test_plots_have_legends(hub):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spargel.gaussian.plot import plot_instability, plot_path, plot_roc
    from spargel.gaussian.roc import path_roc

    ebic = spargel.SparseGaussianMRFSelect("ebic", alphas=5).fit(hub.data)
    a1, a2 = plot_path(ebic)
    assert any("EBIC: alpha = " in t.get_text() for t in a1.get_legend().get_texts())
    assert [t.get_text() for t in a2.get_legend().get_texts()][0] == "EBIC score"
    stars = spargel.SparseGaussianMRFSelect("stars", alphas=5, n_subsamples=3,
                                            random_state=0).fit(hub.data)
    ax = plot_instability(stars)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "threshold 0.1" in texts and any(t.startswith("chosen: alpha") for t in texts)
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("variability")]
    np.testing.assert_allclose(lines[0].get_ydata(), stars.criterion_scores_)
    ric = spargel.SparseGaussianMRFSelect("ric", alphas=4, random_state=0).fit(hub.data)
    ax = plot_path(ric)                                          # one panel
    assert any(t.get_text().startswith("RIC: alpha") for t in ax.get_legend().get_texts())
    with pytest.raises(ValueError, match="criterion='stars'"):
        plot_instability(ebic)
    with pytest.raises(ValueError, match="no fitted path"):
        plot_path(spargel.SparseGaussianMRFSelect())
    r1, r2 = plot_roc(path_roc(ebic, hub))
    assert "AUC" in r1.get_legend().get_texts()[0].get_text()
    assert "best F1" in r2.get_legend().get_texts()[0].get_text()
    plt.close("all")
