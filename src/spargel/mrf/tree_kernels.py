"""Compiled exact inference on a pairwise MRF whose active edges form a forest.

Sum-product on a tree is exact and linear in the number of variables. The messages are
kept in log space and every belief is formed as a *sum* of the messages it needs (the
cavity of a variable towards one child is its potential plus the messages from its
parent and its other children, built from prefix and suffix sums), never by subtracting
a message again: with potentials of 1e100 or clamped states (``-inf``) a subtraction
would lose every digit or give NaN.

The forest is the adjacency of :class:`~spargel.mrf.graph.Graph` (CSR over the
active edges): ``adj_ptr, adj_nbr, adj_edge, adj_side``. Message arrays are laid out as
the graph's ``msg_ptr``: slot ``2e`` carries values over the edge's second variable
(sent by the first), slot ``2e + 1`` values over the first.
"""

from collections import namedtuple

import numpy as np

from ..core.jit import kernel

#: a forest as the compiled kernels read it, built once per graph
#: (:func:`spargel.mrf.tree.forest_plan_of`): the graph's layout -- ``n_states``,
#: ``node_ptr`` (each variable's states in the node arrays), ``edges`` (E, 2),
#: ``edge_ptr`` (each edge's row-major table), ``msg_ptr`` (the message layout above),
#: the adjacency ``adj_ptr``, ``adj_nbr``, ``adj_edge`` -- and the plan of
#: :func:`forest_plan`: the breadth-first ``order``, each variable's ``parent`` and
#: ``parent_edge`` (-1 at a root) and its tree's id ``comp``
Forest = namedtuple("Forest", "n_states node_ptr edges edge_ptr msg_ptr adj_ptr adj_nbr adj_edge "
                              "order parent parent_edge comp")


@kernel()
def forest_plan(adj_ptr, adj_nbr, adj_edge, order, parent, parent_edge, comp):
    """Breadth-first order of every tree of the forest (roots: the lowest variable of
    each tree), each variable's parent and the edge to it (-1 at a root), and its tree's
    id. Returns False when the active graph has a cycle."""
    n = len(adj_ptr) - 1
    for v in range(n):
        comp[v] = -1
    head = 0
    tail = 0
    n_comp = 0
    for r in range(n):
        if comp[r] >= 0:
            continue
        comp[r] = n_comp
        parent[r] = -1
        parent_edge[r] = -1
        order[tail] = r
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            for s in range(adj_ptr[v], adj_ptr[v + 1]):
                u = adj_nbr[s]
                if adj_edge[s] == parent_edge[v]:
                    continue
                if comp[u] >= 0:
                    return False
                comp[u] = n_comp
                parent[u] = v
                parent_edge[u] = adj_edge[s]
                order[tail] = u
                tail += 1
        n_comp += 1
    return True


@kernel()
def forest_sum_product(F, node_theta, edge_theta, inc, up, cav, down, node_b, edge_b):
    """Exact log Z, node beliefs and the beliefs of the forest's edges (``F``: the
    :data:`Forest`).

    Scratch: ``inc`` (K) the potential of each variable plus its children's messages;
    ``up`` and ``cav`` (message layout) the message of each child to its parent and the
    parent's cavity towards that child (over the parent's states); ``down`` (K) the
    message from each variable's parent (0 at a root). Beliefs of edges outside the
    forest are left untouched.
    """
    n_states, node_ptr, edges, edge_ptr, msg_ptr = F.n_states, F.node_ptr, F.edges, F.edge_ptr, F.msg_ptr
    adj_ptr, adj_nbr, adj_edge = F.adj_ptr, F.adj_nbr, F.adj_edge
    order, parent, parent_edge = F.order, F.parent, F.parent_edge
    n = len(order)
    for t in range(len(inc)):
        inc[t] = node_theta[t]
        down[t] = 0.0
    log_z = 0.0
    # upward: leaves first
    for q in range(n - 1, -1, -1):
        v = order[q]
        p = parent[v]
        kv = n_states[v]
        if p < 0:
            m = -np.inf
            for x in range(kv):
                m = max(m, inc[node_ptr[v] + x])
            s = 0.0
            if m > -np.inf:
                for x in range(kv):
                    s += np.exp(inc[node_ptr[v] + x] - m)
            log_z += m + np.log(s)
            continue
        e = parent_edge[v]
        kp = n_states[p]
        first = edges[e, 0] == v
        o = msg_ptr[2 * e] if first else msg_ptr[2 * e + 1]     # over the parent's states
        t0 = edge_ptr[e]
        for y in range(kp):
            m = -np.inf
            for x in range(kv):
                a = inc[node_ptr[v] + x] + (edge_theta[t0 + x * kp + y] if first else edge_theta[t0 + y * kv + x])
                m = max(m, a)
            s = 0.0
            if m > -np.inf:
                for x in range(kv):
                    a = inc[node_ptr[v] + x] + (edge_theta[t0 + x * kp + y] if first else edge_theta[t0 + y * kv + x])
                    s += np.exp(a - m)
                up[o + y] = m + np.log(s)
            else:
                up[o + y] = -np.inf
        for y in range(kp):
            inc[node_ptr[p] + y] += up[o + y]
    # downward: parents first. The cavity of v towards child c: theta_v + down_v + the
    # messages of v's other children (prefix sums forward, suffix sums backward)
    for q in range(n):
        v = order[q]
        kv = n_states[v]
        nv = node_ptr[v]
        a0, a1 = adj_ptr[v], adj_ptr[v + 1]
        prev = -1
        for s in range(a0, a1):
            e = adj_edge[s]
            if e == parent_edge[v]:
                continue
            o = msg_ptr[2 * e] if edges[e, 0] != v else msg_ptr[2 * e + 1]    # over v's states
            for x in range(kv):
                cav[o + x] = node_theta[nv + x] + down[nv + x] if prev < 0 else cav[prev + x] + up[prev + x]
            prev = o
        prev = -1
        for s in range(a1 - 1, a0 - 1, -1):
            e = adj_edge[s]
            if e == parent_edge[v]:
                continue
            o = msg_ptr[2 * e] if edges[e, 0] != v else msg_ptr[2 * e + 1]
            if prev >= 0:
                for x in range(kv):
                    node_b[nv + x] += up[prev + x]           # node_b: running suffix sum
                    cav[o + x] += node_b[nv + x]
            else:
                for x in range(kv):
                    node_b[nv + x] = 0.0
            prev = o
        # v's belief: its potential, its parent's message and every child's message
        m = -np.inf
        for x in range(kv):
            b = inc[nv + x] + down[nv + x]
            node_b[nv + x] = b
            m = max(m, b)
        s_ = 0.0
        for x in range(kv):
            s_ += np.exp(node_b[nv + x] - m)
        for x in range(kv):
            node_b[nv + x] = np.exp(node_b[nv + x] - m) / s_
        # messages to the children, and the children's edge beliefs
        for s in range(a0, a1):
            e = adj_edge[s]
            if e == parent_edge[v]:
                continue
            c = adj_nbr[s]
            kc = n_states[c]
            nc = node_ptr[c]
            vfirst = edges[e, 0] == v
            o = msg_ptr[2 * e + 1] if vfirst else msg_ptr[2 * e]
            t0 = edge_ptr[e]
            for y in range(kc):
                m = -np.inf
                for x in range(kv):
                    a = cav[o + x] + (edge_theta[t0 + x * kc + y] if vfirst else edge_theta[t0 + y * kv + x])
                    m = max(m, a)
                s_ = 0.0
                if m > -np.inf:
                    for x in range(kv):
                        a = cav[o + x] + (edge_theta[t0 + x * kc + y] if vfirst else edge_theta[t0 + y * kv + x])
                        s_ += np.exp(a - m)
                    down[nc + y] = m + np.log(s_)
                else:
                    down[nc + y] = -np.inf
            m = -np.inf
            for x in range(kv):
                for y in range(kc):
                    t = t0 + x * kc + y if vfirst else t0 + y * kv + x
                    a = cav[o + x] + edge_theta[t] + inc[nc + y]
                    edge_b[t] = a
                    m = max(m, a)
            s_ = 0.0
            for t in range(t0, t0 + kv * kc):
                s_ += np.exp(edge_b[t] - m)
            for t in range(t0, t0 + kv * kc):
                edge_b[t] = np.exp(edge_b[t] - m) / s_
    return log_z


@kernel()
def forest_pair_marginals(F, node_b, edge_b, src_ptr, src_var, pair_j, pair_off, out, cond, queue, seen, kmax):
    """Exact pairwise marginals ``p(x_i, x_j)`` of any pairs on a forest (``F``: the
    :data:`Forest`) with exact node and edge beliefs.

    On a tree ``x_j`` depends on ``x_i`` only through the path between them, so
    ``p(x_j | x_i)`` is the product of the conditionals ``p(x_c | x_v) = b_vc / b_v``
    along it. Pairs are grouped by their first variable: ``src_var[g]`` with pairs
    ``src_ptr[g]:src_ptr[g+1]`` (second variable ``pair_j``, table at ``pair_off`` of
    ``out``, row-major over ``(x_i, x_j)``). For each group one breadth-first walk from
    ``src_var[g]`` over its tree fills ``cond`` (``kmax`` rows of each variable's
    states: ``cond[kmax * node_ptr[u] + a * k_u + b] = p(x_u = b | x_i = a)``); pairs
    across trees are independent. Scratch ``queue``, ``seen`` (n).
    """
    n_states, node_ptr, edges, edge_ptr = F.n_states, F.node_ptr, F.edges, F.edge_ptr
    adj_ptr, adj_nbr, adj_edge, comp = F.adj_ptr, F.adj_nbr, F.adj_edge, F.comp
    for u in range(len(seen)):
        seen[u] = -1
    for g in range(len(src_var)):
        i = src_var[g]
        ki = n_states[i]
        ci = kmax * node_ptr[i]
        for a in range(ki):
            for b in range(ki):
                cond[ci + a * ki + b] = 1.0 if a == b else 0.0
        seen[i] = g
        queue[0] = i
        head = 0
        tail = 1
        while head < tail:
            v = queue[head]
            head += 1
            kv = n_states[v]
            cv = kmax * node_ptr[v]
            nv = node_ptr[v]
            for s in range(adj_ptr[v], adj_ptr[v + 1]):
                c = adj_nbr[s]
                if seen[c] == g:
                    continue
                seen[c] = g
                queue[tail] = c
                tail += 1
                e = adj_edge[s]
                kc = n_states[c]
                cc = kmax * node_ptr[c]
                t0 = edge_ptr[e]
                vfirst = edges[e, 0] == v
                for a in range(ki):
                    for y in range(kc):
                        acc = 0.0
                        for x in range(kv):
                            if node_b[nv + x] > 0.0:
                                t = t0 + x * kc + y if vfirst else t0 + y * kv + x
                                acc += cond[cv + a * kv + x] * (edge_b[t] / node_b[nv + x])
                        cond[cc + a * kc + y] = acc
        for p in range(src_ptr[g], src_ptr[g + 1]):
            j = pair_j[p]
            kj = n_states[j]
            o = pair_off[p]
            same = comp[j] == comp[i]
            for a in range(ki):
                pa = node_b[node_ptr[i] + a]
                for b in range(kj):
                    if same:
                        out[o + a * kj + b] = pa * cond[kmax * node_ptr[j] + a * kj + b]
                    else:
                        out[o + a * kj + b] = pa * node_b[node_ptr[j] + b]
