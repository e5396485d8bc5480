"""The fit plan (estimation.FitPlan) every fit route receives, and the fitted-model value
(chain/fitted.FittedChain) the model files' writers and readers receive."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from spargel import CRF, LogLinearClassifier
from spargel.datasets import make_chain_data

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.filterwarnings("ignore::spargel.errors.ConvergenceWarning")


@pytest.fixture(scope="module")
def chain():
    X, y, _ = make_chain_data(n_sequences=30, random_state=2)
    return X, y


def test_the_plan_holds_the_resolved_settings_and_is_frozen():
    plan = CRF(algorithm="l2sgd", c2=0.25, max_iterations=7, period=3).fit_plan()
    assert plan.solver.name == "l2sgd" and plan.l1 == 0.0 and plan.l2 == 0.5
    assert plan.max_iter == 7 and plan.window == 3 and plan.tol == 1e-6        # CRFsuite's delta of l2sgd
    assert CRF(solver="bcd").fit_plan().max_iter == 200                         # the solver table's default
    assert CRF().fit_plan().solver_options["memory"] == 6
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.l1 = 1.0
    with pytest.raises(TypeError):
        plan.solver_options["memory"] = 3
    flat = LogLinearClassifier(l1=0.5, fit_intercept=False).fit_plan()
    assert (flat.l1, flat.fit_intercept, flat.builder) == (0.5, False, None)


def test_the_plan_checks_the_parameters():
    from spargel.errors import ParameterError
    with pytest.raises(ParameterError):
        CRF(c1=1.0, l1=2.0).fit_plan()


def test_the_in_memory_route_leaves_the_estimator_alone(chain):
    from spargel.chain.fitting import fit_sequences
    X, y = chain
    est = CRF(l1=0.1, max_iter=10)
    before = dict(vars(est))
    out = fit_sequences(est.fit_plan(), X, y)
    assert {k: v for k, v in vars(est).items() if k != "_template_cache"} == before
    fitted = CRF(l1=0.1, max_iter=10).fit(X, y)
    # what fit keeps is the route's outcome, compacted
    space, w, _, _ = out.space.compact(out.w)
    np.testing.assert_array_equal(w, fitted.weights_)
    assert out.result.n_iter == fitted.n_iter_ and out.labels.names == list(fitted.classes_)


def test_warm_start_maps_the_previous_weights_by_name(chain):
    X, y = chain
    crf = CRF(l1=0.2, max_iter=10, warm_start=True).fit(X, y)
    plan = crf.fit_plan()
    from spargel.chain.fitting import fit_sequences
    out = fit_sequences(dataclasses.replace(plan, max_iter=0), X, y)     # no iteration: the start itself
    space, w, _, _ = out.space.compact(out.w)
    np.testing.assert_array_equal(w, crf.weights_)


def test_fitted_model_round_trip_and_writers(chain, tmp_path):
    from spargel.chain import crfsuite_compat
    from spargel.chain.crfsuite_format import to_bytes
    X, y = chain
    crf = CRF(l1=0.1, max_iter=15).fit(X, y)
    m = crf.fitted_model_
    again = CRF.from_fitted_model(m)
    assert again.predict(X) == crf.predict(X)
    np.testing.assert_array_equal(np.array([[d[c] for c in crf.classes_] for s in again.predict_marginals(X) for d in s]),
                                  np.array([[d[c] for c in crf.classes_] for s in crf.predict_marginals(X) for d in s]))
    crf.save(tmp_path / "m.crfsuite", format="crfsuite")
    assert to_bytes(crfsuite_compat.to_crfsuite_model(m)) == (tmp_path / "m.crfsuite").read_bytes()
    assert CRF().fitted_model_ is None


def test_readers_return_fitted_models():
    from spargel.chain import wapiti_format
    m = wapiti_format.read_fitted(DATA / "tiny_chunks.wapiti")
    loaded = CRF.load(DATA / "tiny_chunks.wapiti")
    np.testing.assert_array_equal(m.weights, loaded.weights_)
    assert m.template.format == "wapiti" and m.labels.names == list(loaded.classes_)
    assert wapiti_format.to_bytes(wapiti_format.to_wapiti_model(m)) == \
        wapiti_format.to_bytes(wapiti_format.to_wapiti_model(loaded))
