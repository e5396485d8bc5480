"""path_roc: TPR / FPR / precision against a direct count, huge.roc's AUC and F1
(values from huge 1.3.5), paths from the selection estimators."""

import numpy as np
import pytest
import scipy.sparse as sp

import spargel
from spargel.gaussian.roc import path_roc


def _sym(p, pairs):
    A = np.zeros((p, p), int)
    for i, j in pairs:
        A[i, j] = A[j, i] = 1
    return A


def test_huge_roc_values_on_a_small_path():
    # huge.roc(list(g1, g2, g3), theta) in huge 1.3.5 gives tp (1/3, 2/3, 2/3),
    # fp (0, 1/12, 3/12), AUC 0.1527778, F1 (0.5, 0.7619048, 0.6956522)
    theta = _sym(6, [(0, 1), (1, 2), (3, 4)])
    g1 = _sym(6, [(0, 1)])
    g2 = _sym(6, [(0, 1), (0, 5), (1, 2)])
    g3 = _sym(6, [(0, 1), (0, 5), (1, 2), (2, 5), (0, 2)])
    r = path_roc([g1, sp.csr_matrix(g2), g3], theta)
    np.testing.assert_allclose(r.tpr, [1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(r.fpr, [0, 1 / 12, 3 / 12])
    assert r.auc == pytest.approx(0.1527778, abs=1e-7)         # no (0,0), (1,1) added
    np.testing.assert_allclose(r.f1_huge, [0.5, 0.7619048, 0.6956522], atol=1e-7)
    np.testing.assert_allclose(r.precision, [1, 2 / 3, 2 / 5])
    np.testing.assert_allclose(r.f1, [0.5, 2 / 3, 2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3)])
    # with the end points: the same trapezoid from (0, 0) to (1, 1)
    x = [0, 0, 1 / 12, 3 / 12, 1]
    y = [0, 1 / 3, 2 / 3, 2 / 3, 1]
    assert r.auc_closed == pytest.approx(np.trapezoid(y, x) if hasattr(np, "trapezoid")
                                         else np.trapz(y, x))


def test_against_a_direct_count():
    rng = np.random.default_rng(0)
    p = 25
    T = np.triu(rng.random((p, p)) < 0.15, 1)
    T = (T | T.T).astype(int)
    path = []
    for q in (0.0, 0.05, 0.2, 0.5, 0.9):
        # noisy estimates: keep true edges with prob 1 - q / 2, add false ones with q / 3
        E = np.triu((T == 1) & (rng.random((p, p)) > q / 2) |
                    (T == 0) & (rng.random((p, p)) < q / 3), 1)
        K = np.eye(p) * 3 + (E | E.T) * rng.normal(0, 0.1, (p, p))   # a "precision"
        K = np.where(E | E.T, 0.5 * (K + K.T), np.diag(np.diag(K)))
        path.append(K)
    r = path_roc(np.array(path), T)
    iu = np.triu_indices(p, 1)
    tpr, fpr, prec = [], [], []
    for K in path:
        e = K[iu] != 0
        t = T[iu] == 1
        tpr.append((e & t).sum() / t.sum())
        fpr.append((e & ~t).sum() / (~t).sum())
        prec.append((e & t).sum() / e.sum() if e.sum() else 1.0)
    np.testing.assert_allclose(r.tpr, tpr)
    np.testing.assert_allclose(r.fpr, fpr)
    np.testing.assert_allclose(r.precision, prec)
    np.testing.assert_array_equal(r.recall, r.tpr)
    order = np.argsort(fpr, kind="stable")
    x, y = np.asarray(fpr)[order], np.asarray(tpr)[order]
    assert r.auc == pytest.approx(sum((x[k + 1] - x[k]) * (y[k + 1] + y[k]) / 2
                                      for k in range(len(x) - 1)))
    assert r.n_true_edges == T[iu].sum() and r.n_pairs == p * (p - 1) // 2


def test_perfect_path_and_sparse_truth():
    d = spargel.make_graph_data(10, 30, "band", g=2, random_state=0)
    r = path_roc([np.zeros((30, 30)), d.graph, d.precision, np.ones((30, 30))], d.graph)
    np.testing.assert_allclose(r.tpr, [0, 1, 1, 1])
    np.testing.assert_allclose(r.fpr, [0, 0, 0, 1])
    assert r.auc == 1.0 and r.auc_closed == 1.0
    assert r.precision[0] == 1.0 and r.f1[1] == 1.0


def test_paths_of_the_estimators():
    d = spargel.make_graph_data(300, 20, "hub", g=2, random_state=1)
    sel = spargel.SparseGaussianMRFSelect("ebic", alphas=6).fit(d.data)
    r = path_roc(sel, d)                                         # a GraphData as truth
    assert len(r.tpr) == 6 and r.tpr[-1] == 1.0 and r.fpr[0] == 0.0
    np.testing.assert_array_equal(r.n_edges, sel.edges_path_)
    mb = spargel.NeighbourhoodSelection(alphas=[0.5, 0.3, 0.1]).fit(d.data)
    assert len(path_roc(mb, d.graph).tpr) == 3


@pytest.mark.parametrize("path, truth, exc, msg", [
    ([], np.eye(3), ValueError, "the path is empty"),
    ([np.eye(4)], _sym(3, [(0, 1)]), ValueError, "path\\[0\\] has shape"),
    ([np.eye(3)], np.eye(3), ValueError, "no edges"),
    ([np.eye(3)], np.ones((3, 3)), ValueError, "complete"),
    ([np.zeros((2, 3))], _sym(3, [(0, 1)]), ValueError, "square"),
    ([np.array([["a"] * 3] * 3)], _sym(3, [(0, 1)]), TypeError, "numeric or boolean"),
    (spargel.SparseGaussianMRFSelect(), _sym(3, [(0, 1)]), ValueError, "fit it first"),
])
def test_bad_input(path, truth, exc, msg):
    with pytest.raises(exc, match=msg):
        path_roc(path, truth)
