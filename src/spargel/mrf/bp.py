"""Loopy belief propagation on a pairwise MRF: beliefs, the Bethe estimate of log Z, MAP.

The model is ``p(x) = exp(sum_i theta_i(x_i) + sum_(i,j) theta_ij(x_i, x_j)) / Z`` with
the log-potentials in the flat layout of :class:`~spargel.mrf.graph.Graph`.

* Sum-product gives node and edge *beliefs*; on a tree (or forest) they are the exact
  marginals and the Bethe free energy is exactly ``-log Z``. On a loopy graph the Bethe
  estimate ``log Z_B = sum b . theta + sum_edges H(b_ij) - sum_i (deg_i - 1) H(b_i)`` is
  reported as ``log_z``; at a fixed point its gradient with respect to the
  log-potentials is the beliefs, so loss and gradient agree.
* Max-product (``max_product=True``) gives max-marginals; their argmax is the MAP
  assignment on a tree and the usual approximation elsewhere.
* Schedules: ``"sequential"`` (Gauss-Seidel over the variables), ``"residual"`` (the
  variables whose incoming messages changed most go first, settled ones are skipped),
  ``"parallel"`` (flooding). ``damping`` mixes the old message into the new one.
* Warm start: pass the ``messages`` of a previous result (same graph layout); training
  does this between consecutive gradient evaluations.

>>> import numpy as np
>>> from spargel.mrf.graph import Graph
>>> g = Graph([2, 2, 2], [[0, 1], [1, 2]])            # a chain: BP is exact
>>> th_n = np.zeros(6); th_e = np.tile([1.0, 0.0, 0.0, 1.0], 2)
>>> r = loopy_bp(g, th_n, th_e)
>>> r.converged, round(float(np.exp(r.log_z)), 6)    # 2 * (e + 1)^2
(True, 27.65124)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ConvergenceWarning

__all__ = ["BPResult", "loopy_bp", "bethe_log_z", "SCHEDULES"]

SCHEDULES = {"sequential": 0, "residual": 1, "parallel": 2}


@dataclass
class BPResult:
    """What a run of loopy BP returns.

    ``node_beliefs`` (flat, ``graph.node_ptr`` layout), ``edge_beliefs`` (flat,
    ``graph.edge_ptr`` layout; filled for the active edges, zero elsewhere), ``log_z`` (Bethe; ``nan``
    for max-product), ``n_iter`` (sweeps), ``max_change`` (the last sweep's largest
    message change), ``converged``, ``n_updates`` (messages computed) and ``messages``
    (to warm-start the next call).
    """

    node_beliefs: np.ndarray
    edge_beliefs: np.ndarray
    log_z: float
    n_iter: int
    max_change: float
    converged: bool
    n_updates: int
    messages: np.ndarray

    def node_marginal(self, graph, i):
        return self.node_beliefs[graph.node_ptr[i]:graph.node_ptr[i + 1]]

    def edge_marginal(self, graph, e):
        i, j = graph.edges[e]
        t = self.edge_beliefs[graph.edge_ptr[e]:graph.edge_ptr[e + 1]]
        return t.reshape(graph.n_states[i], graph.n_states[j])

    def map_state(self, graph):
        """The argmax of every node's belief (the MAP assignment after max-product)."""
        return np.array([int(np.argmax(self.node_marginal(graph, i))) for i in range(graph.n_nodes)],
                        dtype=np.int64)


def _xlogx(b):
    out = np.zeros_like(b)
    pos = b > 0
    out[pos] = b[pos] * np.log(b[pos])
    return out


def bethe_log_z(graph, node_theta, edge_theta, node_b, edge_b):
    """The Bethe estimate of log Z from beliefs of the active graph."""
    sizes = np.diff(graph.edge_ptr)
    mask = np.zeros(graph.n_edges, dtype=bool)
    mask[graph.active] = True
    flat = np.repeat(mask, sizes)
    energy = float(node_b @ node_theta) + float(edge_b[flat] @ edge_theta[flat])
    node_sizes = np.diff(graph.node_ptr)
    deg = np.repeat(graph.degree - 1, node_sizes)
    neg_entropy = float(_xlogx(edge_b[flat]).sum()) - float((deg * _xlogx(node_b)).sum())
    return energy - neg_entropy


def loopy_bp(graph, node_theta, edge_theta, *, messages=None, schedule="sequential", damping=0.0,
             max_iter=200, tol=1e-8, max_product=False, warn=True,
             _pots=None):
    """Run loopy BP on the active edges of ``graph``; returns a :class:`BPResult`.

    ``node_theta`` / ``edge_theta`` are the flat log-potentials. A
    :class:`ConvergenceWarning` is issued when ``max_iter`` sweeps end with a message
    change above ``tol`` (``warn=False`` leaves that to the caller).
    """
    from . import bp_kernels as K

    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    node_theta = np.ascontiguousarray(node_theta, dtype=np.float64)
    edge_theta = np.ascontiguousarray(edge_theta, dtype=np.float64)
    if node_theta.shape != (graph.n_node_values,) or edge_theta.shape != (graph.n_edge_values,):
        raise ValueError("log-potentials do not match the graph layout")
    if not (np.all(np.isfinite(node_theta)) and np.all(np.isfinite(edge_theta))):
        raise ValueError("log-potentials must be finite")
    if _pots is None:
        node_pot = np.empty_like(node_theta)
        edge_pot = np.empty_like(edge_theta)
        K.exp_shifted(node_theta, graph.node_ptr, node_pot)
        K.exp_shifted(edge_theta, graph.edge_ptr, edge_pot)
    else:
        node_pot, edge_pot = _pots
    n_msg = int(graph.msg_ptr[-1])
    if messages is None or messages.shape != (n_msg,):
        sizes = np.diff(graph.msg_ptr)
        messages = np.repeat(1.0 / np.maximum(sizes, 1), sizes)
    else:
        messages = np.array(messages, dtype=np.float64, copy=True)
    G = graph.arrays()
    n_iter, change, updates = K.run_bp(G, node_pot, edge_pot, messages, SCHEDULES[schedule],
                                       int(max_iter), float(tol), float(damping), bool(max_product))
    converged = bool(change < tol)
    if not converged and warn:
        warnings.warn(f"loopy BP did not converge in {n_iter} sweeps (largest message change "
                      f"{change:.3g} > tol {tol:g}); try damping or the residual schedule",
                      ConvergenceWarning, stacklevel=2)
    node_b = np.empty(graph.n_node_values)
    edge_b = np.zeros(graph.n_edge_values)
    K.beliefs(G, node_pot, edge_pot, messages, graph.active, node_b, edge_b)
    log_z = np.nan if max_product else bethe_log_z(graph, node_theta, edge_theta, node_b, edge_b)
    return BPResult(node_b, edge_b, log_z, int(n_iter), float(change), converged, int(updates), messages)
