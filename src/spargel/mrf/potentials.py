"""What every exact inference of a pairwise MRF shares: its result, and potentials
shifted so that the dominant entry of every factor is 0 (the junction tree of
:mod:`.exact`, the forest sum-product of :mod:`.tree`, brute force)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ExactResult:
    """Exact ``log_z``, ``node_beliefs`` and ``edge_beliefs`` (flat layouts of the graph;
    edge beliefs for the active edges), and ``treewidth`` (largest clique size - 1)."""

    log_z: float
    node_beliefs: np.ndarray
    edge_beliefs: np.ndarray
    treewidth: int


def shift_potentials(graph, node_theta, edge_theta):
    """``(node_theta, edge_theta, shift)``: each variable's potentials and each active
    edge's table shifted by its largest entry, and the sum of those shifts (``log Z`` of
    the original = ``log Z`` of the shifted + ``shift``; marginals are unchanged).

    With potentials of 1e100 (node features of that size in the conditional model) a
    sum such as ``1e100 + 0.8`` keeps nothing of the 0.8, and every joint state that
    differs only in the small terms gets the same log-probability: marginals that sum to
    2 or 4. After the shift the dominant entry of every factor is 0 and the small terms
    are added to 0 exactly; entries near -1e100 are probabilities of exactly 0."""
    node_theta = np.asarray(node_theta, dtype=np.float64)
    edge_theta = np.asarray(edge_theta, dtype=np.float64)
    node_max = np.maximum.reduceat(node_theta, graph.node_ptr[:-1]) if graph.n_nodes else np.zeros(0)
    shift = float(node_max.sum())
    node_theta = node_theta - np.repeat(node_max, graph.n_states)
    if len(graph.active):
        sizes = np.diff(graph.edge_ptr)
        edge_max = np.zeros(graph.n_edges)
        edge_max[graph.active] = np.maximum.reduceat(edge_theta, graph.edge_ptr[:-1])[graph.active]
        shift += float(edge_max.sum())
        edge_theta = edge_theta - np.repeat(edge_max, sizes)
    return node_theta, edge_theta, shift
