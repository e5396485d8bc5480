"""Every solver on every model that offers what it needs (issue: one model protocol).

Models: the chain CRF over the observed and the full feature space, the flat log-linear
model on dense and on sparse inputs, and ``toy_model.LeastSquares`` -- a hand-written
least-squares model that only the tests use, so nothing here is CRF-shaped. Each
deterministic solver must reach the OWL-QN optimum of the same objective to 1e-6
relative; SGD-L1 to 1e-3 given enough passes; a solver handed a model without the
capability it needs must refuse with a CapabilityError that names it.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from spargel.errors import CapabilityError
from spargel.chain.crf import ChainCRF
from spargel.loglinear.model import FlatLogLinear
from spargel.core.protocol import capabilities
from spargel.core.penalties import ElasticNet
from spargel.core.solver_table import solver
from spargel.solvers import get_solver

from crf_reference import random_data, random_space
from toy_model import LeastSquares, make_least_squares

# the solvers that minimise the penalised objective itself, and the capability each needs
# (the solver table's record)
SOLVER_NEEDS = {name: solver(name).needs[0]
                for name in ("lbfgs", "fista", "cd", "bcd", "bound", "sgd-l1", "l2sgd", "rprop", "rprop-")}


def crf(kind):
    # the observed space with observation-dependent transitions (bigram attributes), the
    # full one without (the chain bound of the "bound" capability covers only that case)
    rng = np.random.default_rng(3)
    n_big = 3 if kind == "observed" else 0
    data = random_data(rng, n_seq=12, max_len=5, n_uni=6, n_big=n_big, n_labels=3)
    space = random_space(rng, data, kind, 3, 6, n_big)
    return ChainCRF(space, data)


def loglinear(sparse):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 5))
    X[rng.random(X.shape) < 0.4] = 0.0
    y = rng.integers(0, 3, size=60)
    return FlatLogLinear(sp.csr_matrix(X) if sparse else X, y, 3)


MODELS = {
    "crf-observed": lambda: crf("observed"),
    "crf-full": lambda: crf("full"),
    "loglinear-dense": lambda: loglinear(False),
    "loglinear-sparse": lambda: loglinear(True),
    "least-squares": lambda: make_least_squares(n=40, d=8),
}
# (l1, l2) per model: an elastic net with a sparse optimum, and for the solvers that
# take no l1 a pure l2 objective
ENET = {"crf-observed": (0.4, 0.1), "crf-full": (0.4, 0.1), "loglinear-dense": (1.0, 0.1),
        "loglinear-sparse": (1.0, 0.1), "least-squares": (3.0, 0.1)}

_cache = {}


def reference(model_name, l1, l2):
    key = (model_name, l1, l2)
    if key not in _cache:
        model = MODELS[model_name]()
        pen = ElasticNet(l1, l2, model.layout.penalty_scale)
        res = get_solver("owlqn")(model, pen, max_iter=5000, tol=0, gtol=1e-10)
        _cache[key] = (res.w, model.loss(res.w) + pen.value(res.w))
    return _cache[key]


def objective(model, pen, w):
    return model.loss(w) + pen.value(w)


def cases():
    for model_name in MODELS:
        for solver in SOLVER_NEEDS:
            yield model_name, solver


@pytest.mark.parametrize("model_name,solver", list(cases()))
def test_every_solver_on_every_model(model_name, solver):
    model = MODELS[model_name]()
    need = SOLVER_NEEDS[solver]
    l1, l2 = ENET[model_name]
    if solver in ("lbfgs", "l2sgd"):
        l1, l2 = 0.0, 1.0
    pen = ElasticNet(l1, l2, model.layout.penalty_scale)
    if need not in capabilities(model):
        with pytest.raises(CapabilityError, match=f"solver '{solver}' needs .*'{need}'"):
            get_solver(solver)(model, pen, max_iter=5)
        return
    if solver == "bound" and model_name == "crf-observed":
        with pytest.raises(CapabilityError, match="bigram attributes"):
            get_solver(solver)(model, pen, max_iter=5)
        return
    w_ref, F_ref = reference(model_name, l1, l2)
    if solver in ("sgd-l1", "l2sgd"):
        # (l2sgd stops at the first epoch whose objective rose over the last ten, even
        # with tol=0, as CRFsuite does: run all 3000 epochs)
        tol = -np.inf if solver == "l2sgd" else 0
        res = get_solver(solver)(model, pen, max_iter=3000, tol=tol, random_state=0)
        rel = 1e-3
    else:
        options = {"max_iter": 5000, "tol": 0, "gtol": 1e-9}
        res = get_solver(solver)(model, pen, **options)
        rel = 1e-6
    F = objective(model, pen, res.w)
    assert F <= F_ref + rel * abs(F_ref), (F, F_ref, res.stop_reason)
    if l1 > 0 and solver not in ("sgd-l1", "l2sgd"):
        # the same sparsity pattern as the reference optimum (weights clearly away from 0)
        big = np.abs(w_ref) > 1e-4
        assert np.all(res.w[~(np.abs(w_ref) > 0)] == 0) or solver in ("fista",), \
            "weights zero at the optimum came out non-zero"
        assert np.all(res.w[big] != 0)


def test_the_toy_model_lacks_the_bound_capability():
    model = make_least_squares()
    assert "bound" not in capabilities(model)
    assert {"loss_grad", "blocks", "sgd"} <= set(capabilities(model))


class OnlyLoss:
    """A model with nothing but a loss: every solver except the gradient ones refuses it."""

    def __init__(self):
        inner = make_least_squares()
        self.n_params, self.layout, self._inner = inner.n_params, inner.layout, inner

    def loss_grad(self, w):
        return self._inner.loss_grad(w)


@pytest.mark.parametrize("solver", ["cd", "bcd", "bound", "sgd-l1", "l2sgd", "ap", "pa", "arow", "mira"])
def test_a_model_without_the_capability_is_refused_clearly(solver):
    model = OnlyLoss()
    with pytest.raises(CapabilityError) as err:
        get_solver(solver)(model, ElasticNet(0.1, 0.1), max_iter=3)
    msg = str(err.value)
    assert solver in msg and "OnlyLoss" in msg and "loss_grad" in msg   # what it offers


def test_a_model_without_a_layout_is_refused():
    class NoLayout:
        n_params = 3

        def loss_grad(self, w):
            return float(w @ w), 2 * w

    with pytest.raises(CapabilityError, match="layout"):
        get_solver("owlqn")(NoLayout(), ElasticNet(0.1, 0.0), max_iter=3)


def test_least_squares_optimum_is_the_lasso_solution():
    """Ground truth for the toy: the OWL-QN optimum satisfies the lasso's KKT conditions."""
    model = make_least_squares(n=40, d=8)
    l1, l2 = ENET["least-squares"]
    w, _ = reference("least-squares", l1, l2)
    g = model.X.T @ (model.X @ w - model.y) + l2 * w
    on = w != 0
    assert np.allclose(g[on], -l1 * np.sign(w[on]), atol=1e-6)
    assert np.all(np.abs(g[~on]) <= l1 + 1e-6)
    assert isinstance(model, LeastSquares)


def test_models_report_the_memory_they_hold():
    """sys.getsizeof counts a model's arrays: Dask places a shard's evaluations by the
    sizes of their inputs, and a model that looked a few hundred bytes big was moved to
    the worker holding w."""
    import sys
    rng = np.random.default_rng(0)
    data = random_data(rng, n_seq=40, max_len=6, n_labels=3)
    crf = ChainCRF(random_space(rng, data, "observed", 3, 6, 3), data)
    crf.loss_grad(np.zeros(crf.n_params))
    held = data.uni_ids.nbytes + data.uni_vals.nbytes + data.seq_ptr.nbytes + crf._emp.nbytes
    assert sys.getsizeof(crf) >= held
    X = rng.normal(size=(500, 20))
    flat = FlatLogLinear(X, rng.integers(0, 3, size=500), 3)
    assert sys.getsizeof(flat) >= X.nbytes
