"""A fitted pairwise MRF as a networkx graph or a pgmpy Markov network.

Neither package is a dependency of spargel: each is imported only when its export is
called, with a clear error when it is missing.

* :func:`to_networkx`: an undirected ``networkx.Graph`` whose nodes are the variables
  (attributes ``states``, the number of states, and ``bias``, the node log-potentials)
  and whose edges carry ``weight`` (:func:`~spargel.mrf.common.edge_weight_matrix`:
  the 0/1 interaction of a binary pair, the coupling strength otherwise), ``strength``
  and ``table`` (the log-potential table, rows the first variable's states).
* :func:`to_pgmpy`: a ``pgmpy.models.DiscreteMarkovNetwork`` (``MarkovNetwork`` before pgmpy 1.0) with one ``DiscreteFactor`` per
  variable (``exp`` of its node log-potentials) and one per edge (``exp`` of its table):
  the product of the factors of a joint state is ``exp`` of spargel's unnormalised
  log-probability (:meth:`~spargel.mrf.estimator.PairwiseMRF.log_potential`). A factor
  whose log-potentials exceed 700 in magnitude (``exp`` would overflow) is shifted by its
  largest entry; the distribution is the same, the product then differs by a constant.
"""

from __future__ import annotations

import numpy as np

from ..errors import CapabilityError
from .common import edge_weight_matrix, variable_names as _names

__all__ = ["to_networkx", "to_pgmpy"]


def _fitted_mrf(est):
    if hasattr(est, "best_estimator_"):
        est = est.best_estimator_
    elif hasattr(est, "model_"):
        est = est.model_
    if not hasattr(est, "_check_fitted"):
        raise TypeError(f"expected a fitted PairwiseMRF, got {type(est).__name__}")
    est._check_fitted()
    if getattr(est, "_features", None) is not None:
        raise CapabilityError("the conditional model (fitted with node_features) has per-sample node "
                              "potentials; only the unconditional model exports")
    return est


def to_networkx(estimator, labels=None):
    """The learned graph as a ``networkx.Graph`` (see the module documentation);
    ``labels``: the variables' names (default 0..p-1)."""
    try:
        import networkx as nx
    except ImportError:
        raise CapabilityError("to_networkx needs networkx (pip install networkx)") from None
    est = _fitted_mrf(estimator)
    names = _names(est, labels)
    W = edge_weight_matrix(est)
    G = nx.Graph()
    for i, name in enumerate(names):
        G.add_node(name, states=int(est.n_states_[i]), bias=est.node_weights_[i].copy())
    for e, (i, j) in enumerate(est.edges_):
        G.add_edge(names[i], names[j], weight=float(W[i, j]), strength=float(est.edge_strength_[e]),
                   table=est.edge_weights_[e].copy())
    return G


def _factor_values(theta):
    theta = np.asarray(theta, dtype=np.float64)
    if theta.size and np.abs(theta).max() > 700:
        theta = theta - theta.max()
    return np.exp(theta)


def to_pgmpy(estimator, labels=None):
    """The fitted model as a pgmpy ``DiscreteMarkovNetwork`` with its ``DiscreteFactor``s
    (see the module documentation); ``labels``: the variables' names (default
    ``'x0'``, ``'x1'``, ...)."""
    try:
        from pgmpy.factors.discrete import DiscreteFactor
        import pgmpy.models as models
        # pgmpy >= 1.0: DiscreteMarkovNetwork; 0.1.13 - 0.1.x: MarkovNetwork; before: MarkovModel
        MarkovNetwork = getattr(models, "DiscreteMarkovNetwork", None) or getattr(models, "MarkovNetwork", None) \
            or models.MarkovModel
    except ImportError:
        raise CapabilityError("to_pgmpy needs pgmpy (pip install pgmpy)") from None
    est = _fitted_mrf(estimator)
    names = [f"x{i}" for i in range(est.n_features_in_)] if labels is None else _names(est, labels)
    net = MarkovNetwork()
    net.add_nodes_from(names)
    net.add_edges_from([(names[i], names[j]) for i, j in est.edges_])
    factors = [DiscreteFactor([names[i]], [int(est.n_states_[i])], _factor_values(est.node_weights_[i]))
               for i in range(est.n_features_in_)]
    factors += [DiscreteFactor([names[i], names[j]], [int(est.n_states_[i]), int(est.n_states_[j])],
                               _factor_values(t)) for (i, j), t in zip(est.edges_, est.edge_weights_)]
    net.add_factors(*factors)
    return net
