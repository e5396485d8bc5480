"""The bound of a pairwise MRF whose candidate graph is a forest: Algorithm 3 of Jebara &
Choromanska (the junction-tree bound) on the tree's own junction tree (cliques = edges,
separators = variables), with one curvature per subtree.

Root every tree of the forest and visit the variables leaves first. The *message* of a
variable ``v`` with parent ``u`` (edge ``e``) is the sum over the subtree below ``v``,

    M_v(a) = sum_x exp(theta_e(a, x) + theta_v(x) + sum_{c child of v} log M_c(x)),

one function of the weights for each state ``a`` of ``u``. Each is bounded by

    log M_v(a) <= log m_v(a) + (theta - t) . mu_v(a) + 1/2 (theta - t)' Sigma_v (theta - t)

with exact ``m_v(a)`` (the message at ``t``) and ``mu_v(a)`` (its gradient) per state and
**one** curvature ``Sigma_v`` shared by all states ``a``:

* the children's bounds add up inside the sum: every term ``x`` is ``exp`` of a linear
  function (value ``theta_e(a, x) + theta_v(x) + sum_c log m_c(x)``, gradient
  ``e_{e,(a,x)} + e_{v,x} + sum_c mu_c(x)``) times ``exp(1/2 (theta - t)' S (theta - t))``
  with ``S = sum_c Sigma_c`` -- the same factor for every ``x``, because the children's
  curvatures do not depend on the state;
* so ``M_v(a)`` is that common factor times a sum of exponentials of linear functions,
  which Algorithm 1 bounds (visited most probable first, the smallest curvature):
  ``Sigma_v = S + sum_a C_v(a)``, the sum over ``a`` dominating each ``C_v(a)``;
* at a root, Algorithm 1 over its states gives ``log Z`` of the tree; the trees of a
  forest multiply (their bounds add).

Why not the paper's recursion as written: it adds the children's curvatures of *every*
configuration of a separator, so the curvature is multiplied by the number of states
at every level (on a path it grows like ``S^n``, as Algorithm 1 over the enumerated
configurations does; see :mod:`.bound_chain`). Sharing one curvature per subtree makes it
grow linearly in the number of variables: each variable adds the Algorithm-1 curvature of
its ``k_u`` messages. ``log z`` and ``mu`` are exact (``mu`` is the vector of node and edge
marginals: a bound that touches a function at a point has its gradient there), so the
bound's loss and gradient are the model's.

The curvature is formed densely over the log-potentials (``n_node_values +
n_edge_values``), then mapped to the weights (``A' Sigma A`` with ``A`` the linear map from
weights to log-potentials: the identity for full edge tables, the fixed table for Ising
features). Cost: ``sum_v k_u k_v`` rank-one updates of that size -- for trees of up to a
few hundred variables.
"""

import numpy as np

from ..errors import CapabilityError
from ..core.bound import DenseCurvature, QuadraticBound, _compute_bound


def check_tree_model(model):
    """Raise :class:`CapabilityError` unless ``model`` is a likelihood pairwise MRF without
    node features on a forest of candidate edges (what :func:`tree_bound` covers)."""
    why = None
    if model.objective != "likelihood":
        why = f"its objective is {model.objective!r} (the bound covers the likelihood)"
    elif model.F is not None:
        why = "it has node features (a conditional model: one partition function per sample)"
    elif not model.graph.is_forest():
        why = ("its candidate edges contain a cycle (the bound needs a tree or forest: pass "
               "candidate_edges, e.g. a Chow-Liu tree)")
    if why:
        raise CapabilityError(f"the pairwise MRF has no quadratic bound: {why}")


def _forest_order(graph):
    """(order, parent, parent_edge): every tree's variables parents before children."""
    n = graph.n_nodes
    parent = np.full(n, -1, np.int64)
    parent_edge = np.full(n, -1, np.int64)
    seen = np.zeros(n, bool)
    order = []
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        queue = [root]
        while queue:
            v = queue.pop()
            order.append(v)
            for k in range(graph.adj_ptr[v], graph.adj_ptr[v + 1]):
                c = graph.adj_nbr[k]
                if not seen[c]:
                    seen[c] = True
                    parent[c], parent_edge[c] = v, graph.adj_edge[k]
                    queue.append(c)
    return np.array(order, np.int64), parent, parent_edge


def forest_bound(graph, node_theta, edge_theta):
    """``(log z, mu, Sigma)`` of ``log Z`` of the pairwise MRF on a forest ``graph`` at the
    log-potentials ``(node_theta, edge_theta)``, over the log-potential vector
    ``[node_theta, edge_theta]`` (see the module docstring)."""
    nn = graph.n_node_values
    D = nn + graph.n_edge_values
    ns, node_ptr, edges, edge_ptr = graph.n_states, graph.node_ptr, graph.edges, graph.edge_ptr
    order, parent, parent_edge = _forest_order(graph)
    Sigma = np.zeros((D, D))
    scratch = np.empty(D)
    mu_total = np.zeros(D)
    log_z = 0.0
    # per variable: log of the sum over its subtree (its own potentials plus the finished
    # children's messages) and that sum's gradient, per state
    inside_log = {v: node_theta[node_ptr[v]:node_ptr[v + 1]].astype(np.float64) for v in range(graph.n_nodes)}
    inside_mu = {}
    for v in order[::-1]:
        k = ns[v]
        lam = inside_mu.pop(v, None)
        if lam is None:
            lam = np.zeros((k, D))
        lam[np.arange(k), node_ptr[v] + np.arange(k)] += 1.0
        iv = inside_log.pop(v)
        u = parent[v]
        if u < 0:
            z, mu = _algorithm1(iv, lam, Sigma, scratch)
            log_z += z
            mu_total += mu
            continue
        e, ku = parent_edge[v], ns[u]
        ms = np.empty(ku)
        mus = np.empty((ku, D))
        for a in range(ku):
            # the table entry of (u = a, v = x): row-major with the edge's first variable as row
            entry = edge_ptr[e] + (a * k + np.arange(k) if edges[e, 0] == u else np.arange(k) * ku + a)
            F = lam.copy()
            F[np.arange(k), nn + entry] += 1.0
            ms[a], mus[a] = _algorithm1(edge_theta[entry] + iv, F, Sigma, scratch)
        inside_log[u] += ms
        if u in inside_mu:
            inside_mu[u] += mus
        else:
            inside_mu[u] = mus
    return log_z, mu_total, Sigma


def _algorithm1(logw, F, Sigma, scratch):
    """Algorithm 1 over the rows of F (log weights ``logw``), most probable first; adds its
    curvature into Sigma, returns (log z, mu)."""
    first = np.argsort(-logw, kind="stable")
    mu = np.zeros(F.shape[1])
    lz = _compute_bound(np.ascontiguousarray(logw[first]), np.ascontiguousarray(F[first]), mu, Sigma, scratch)
    return float(lz), mu


def potential_map(model):
    """The matrix ``A`` (log-potentials x weights) with ``[node_theta, edge_theta] = A w``."""
    g = model.graph
    nn, D = g.n_node_values, g.n_node_values + g.n_edge_values
    A = np.zeros((D, model.n_params))
    A[np.arange(nn), np.arange(nn)] = 1.0
    if model.feature_table is None:
        A[np.arange(nn, D), np.arange(nn, D)] = 1.0
    else:
        for e in range(g.n_edges):
            lo, hi = g.edge_ptr[e], g.edge_ptr[e + 1]
            A[nn + lo:nn + hi, nn + e] = model.feature_table[lo:hi]
    return A


def tree_bound(model, w):
    """The :class:`~spargel.core.bound.QuadraticBound` of a
    :class:`~spargel.mrf.model.PairwiseMRFModel` on a forest at ``w``: loss
    ``N log Z - theta . counts``, its gradient, and ``N A' Sigma A``."""
    check_tree_model(model)
    w = np.ascontiguousarray(w, dtype=np.float64)
    node_theta, edge_theta = model.potentials(w)
    log_z, mu, Sigma = forest_bound(model.graph, node_theta, edge_theta)
    Nw = model.total_weight
    counts = np.concatenate([model.node_counts, model.edge_counts])
    theta = np.concatenate([node_theta, edge_theta])
    A = potential_map(model)
    loss = Nw * log_z - float(theta @ counts)
    grad = A.T @ (Nw * mu - counts)
    M = Nw * (A.T @ Sigma @ A)
    return QuadraticBound(w, loss, grad, DenseCurvature(0.5 * (M + M.T)),
                          {"curvature": "tree", "logz": log_z})
