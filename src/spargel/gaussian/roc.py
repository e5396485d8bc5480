"""ROC and precision–recall of a path of graphs against the true graph, as R's
``huge.roc`` reports them.

For each graph of the path, over the ``p (p - 1) / 2`` pairs ``i < j``:

* ``tpr`` (= ``recall``): true edges found / true edges;
* ``fpr``: false edges found / pairs that are not edges;
* ``precision``: true edges found / edges found (1 for an empty graph);
* ``f1``: ``2 precision recall / (precision + recall)`` from these counts;
* ``f1_huge``: the F1 that ``huge.roc`` returns, whose precision is computed from
  the two *rates*, ``tpr / (tpr + fpr)`` instead of from the counts (it differs from
  ``f1`` unless the graph has as many non-edges as edges).

``auc`` is ``huge.roc``'s area under the ROC curve: the path's points sorted by
``fpr`` (stable; ``tpr`` follows), then the trapezoid rule over those points only:
**(0, 0) and (1, 1) are not added**, so a path that stops at a few false positives
has an area well below 1 even when it finds every edge (the maximum is the largest
fpr reached). ``auc_closed`` adds both end points (the usual area of a full ROC
curve, 0.5 for a path of random guesses). ``pr_auc``: the trapezoid under the
precision–recall points sorted by recall, likewise without added points.

Checked against ``huge.roc`` of huge 1.3.5 on its own paths: the same AUC to rounding
(``bench/huge_roc.py``).

>>> import numpy as np
>>> T = np.zeros((4, 4), int); T[0, 1] = T[1, 0] = T[2, 3] = T[3, 2] = 1
>>> g1 = np.zeros((4, 4), int); g1[0, 1] = g1[1, 0] = 1
>>> r = path_roc([g1, T], T)
>>> r.tpr.tolist(), r.fpr.tolist(), float(r.auc)
([0.5, 1.0], [0.0, 0.0], 0.0)
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["PathROC", "path_roc", "upper_pattern"]


@dataclasses.dataclass
class PathROC:
    """Per graph of the path (in the path's order): ``tpr``, ``fpr``, ``recall``
    (= tpr), ``precision``, ``f1``, ``f1_huge``, ``n_edges``, ``true_positives``;
    and ``auc`` (huge.roc's), ``auc_closed`` (with (0, 0) and (1, 1)), ``pr_auc``,
    ``n_true_edges``, ``n_pairs``."""

    tpr: np.ndarray
    fpr: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    f1_huge: np.ndarray
    n_edges: np.ndarray
    true_positives: np.ndarray
    auc: float
    auc_closed: float
    pr_auc: float
    n_true_edges: int
    n_pairs: int


def upper_pattern(A, name="graph"):
    """The strict upper triangle's pattern ``i < j`` of a square matrix (an adjacency
    or a precision; dense or ``scipy.sparse``) as a boolean CSR matrix. A matrix that
    is not symmetric in its pattern counts a pair when either entry is non-zero."""
    import scipy.sparse as sp

    if sp.issparse(A):
        M = sp.csr_matrix(A)
    else:
        a = np.asarray(A)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise TypeError(f"{name} must be a numeric or boolean matrix, got dtype {a.dtype}")
        M = sp.csr_matrix(a)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {M.shape}")
    M = M.astype(bool)
    M.eliminate_zeros()
    return sp.triu(M + M.T, 1, format="csr").astype(bool)


def _graphs_of(path):
    """The list of graphs of a path: a list / tuple of matrices, or a fitted estimator
    with ``path_`` (:class:`SparseGaussianMRFSelect`) or ``adjacency_path_``
    (:class:`NeighbourhoodSelection`)."""
    for attr in ("path_", "adjacency_path_"):
        got = getattr(path, attr, None)
        if got is not None:
            return list(got)
    if hasattr(path, "fit") and hasattr(path, "get_params"):
        raise ValueError(f"{type(path).__name__} holds no path of graphs: fit it first "
                         "(SparseGaussianMRFSelect: path_, NeighbourhoodSelection with "
                         "alphas: adjacency_path_)")
    if hasattr(path, "shape") and len(getattr(path, "shape")) == 2:
        return [path]
    if hasattr(path, "shape") and len(path.shape) == 3:
        return list(path)
    return list(path)


def _trapezoid(x, y):
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0)) if x.size > 1 else 0.0


def path_roc(path, true_graph):
    """ROC and precision–recall of every graph of ``path`` against ``true_graph`` (see
    the module). ``path``: a list of adjacency or precision matrices (dense or
    ``scipy.sparse``; off-diagonal non-zeros are edges), a (k, p, p) array, or a fitted
    :class:`~spargel.SparseGaussianMRFSelect` / :class:`~spargel.NeighbourhoodSelection`
    (``alphas=``); ``true_graph``: an adjacency matrix or a
    :func:`~spargel.gaussian.make_graph_data` result. Returns a :class:`PathROC`."""
    truth = getattr(true_graph, "graph", true_graph)
    T = upper_pattern(truth, "true_graph")
    p = T.shape[0]
    graphs = _graphs_of(path)
    if not graphs:
        raise ValueError("the path is empty")
    pairs = p * (p - 1) // 2
    n_true = int(T.nnz)
    if n_true == 0:
        raise ValueError("the true graph has no edges: the true positive rate is undefined")
    if n_true == pairs:
        raise ValueError("the true graph is complete: the false positive rate is undefined")
    tp = np.empty(len(graphs), np.int64)
    found = np.empty(len(graphs), np.int64)
    for k, G in enumerate(graphs):
        E = upper_pattern(G, f"path[{k}]")
        if E.shape != T.shape:
            raise ValueError(f"path[{k}] has shape {E.shape}, the true graph {T.shape}")
        found[k] = E.nnz
        tp[k] = E.multiply(T).nnz
    tpr = tp / n_true
    fpr = (found - tp) / (pairs - n_true)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(found > 0, tp / np.maximum(found, 1), 1.0)
        f1 = np.where(precision + tpr > 0, 2 * precision * tpr / (precision + tpr), 0.0)
        prec_rates = np.where(tpr + fpr > 0, tpr / (tpr + fpr), 0.0)
        f1_huge = np.where(prec_rates + tpr > 0, 2 * prec_rates * tpr / (prec_rates + tpr), 0.0)
    order = np.argsort(fpr, kind="stable")
    auc = _trapezoid(fpr[order], tpr[order])
    auc_closed = _trapezoid(np.r_[0.0, fpr[order], 1.0], np.r_[0.0, tpr[order], 1.0])
    by_recall = np.argsort(tpr, kind="stable")
    pr_auc = _trapezoid(tpr[by_recall], precision[by_recall])
    return PathROC(tpr=tpr, fpr=fpr, precision=precision, recall=tpr.copy(), f1=f1,
                   f1_huge=f1_huge, n_edges=found, true_positives=tp, auc=auc,
                   auc_closed=auc_closed, pr_auc=pr_auc, n_true_edges=n_true, n_pairs=pairs)
