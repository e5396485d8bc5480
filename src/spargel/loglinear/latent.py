"""``spargel.LatentLogLinearClassifier``: maximum latent conditional likelihood
(Jebara & Choromanska 2012, section 4) -- a mixture of ``n_components`` Gaussian-gated
logistic regressions per class, trained by bound majorisation or a baseline solver,
from several random starts."""

import math
import time

import numpy as np

from ..errors import ConvergenceWarning, NotFittedError, ParameterError
from .latent_model import LatentLogLinear, em_fit
from ..core.penalties import ElasticNet
from ..core.params import ParamsMixin, check_number, check_sample_weight, keep_arguments
from .estimator import _as_matrix
from .labels import class_labels as _class_labels
from ..solvers import get_solver

LATENT_SOLVERS = ("bound", "em", "lbfgs", "newton", "cg", "sd")


class LatentLogLinearClassifier(ParamsMixin):
    """Classifier with ``n_components`` hidden components per class:
    ``p(k | x) = sum_m exp(theta_km . x + nu_km) / sum_{k', m'} exp(theta_k'm' . x + nu_k'm')``.

    Minimises ``-sum_i s_i log p(y_i | x_i) + l1 ||theta||_1 + l2 / 2 ||theta||^2`` (the
    ``nu`` are not penalised). The objective is not convex: ``n_init`` random starts
    (``N(0, init_scale^2)`` weights) are tried and the best kept.

    Parameters
    ----------
    n_components : int
        Hidden components per class (1: multinomial logistic regression).
    solver : {"bound", "em", "lbfgs", "newton", "cg", "sd"}
        "bound": bound majorisation (monotone, EM-like steps: Jensen on the numerator,
        Algorithm 1 on the denominator; l1 / elastic net by coordinate descent on the
        bound). "lbfgs": L-BFGS (OWL-QN with l1). "newton": Newton-CG with a trust region
        (scipy's trust-ncg on exact Hessian-vector products). "cg": nonlinear conjugate
        gradient (scipy). "sd": steepest descent with a backtracking line search.
        "em": *not* the conditional objective: maximum joint likelihood of the generative
        counterpart (per class a mixture of Gaussians with one shared diagonal covariance)
        by EM, then conditioned -- the classical baseline the paper compares with; takes no
        penalty. "newton", "cg", "sd" handle l2 only.
    l1, l2 : float
        Penalty weights.
    n_init : int
        Random starts; the one with the lowest final objective is kept.
    random_state : int or None
        Seed of the starts (the same seed gives every solver the same starts).
    init_scale : float
        Standard deviation of the random initial weights.
    max_iter, tol, gtol : stopping rules (relative objective change per iteration, norm
        of the (pseudo-)gradient relative to ``max(1, ||w||)``).
    verbose : int
        1: one line per start on stderr.
    solver_options : dict or None
        Extra options of the solver (e.g. ``{"overrelax": False}``: "bound" without its default over-relaxation).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)                 # XOR: two blobs per class
    >>> clf = LatentLogLinearClassifier(n_components=2, n_init=3, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _estimator_kind = "classifier"

    def __init__(self, n_components=2, solver="bound", l1=0.0, l2=0.0, n_init=1, random_state=None, init_scale=0.1,
                 max_iter=None, tol=1e-9, gtol=1e-6, fit_intercept=True, verbose=0, solver_options=None):
        keep_arguments(self, locals())

    # -- checks ------------------------------------------------------------------------
    def _check_params(self):
        if self.solver not in LATENT_SOLVERS:
            raise ParameterError(f"solver must be one of {LATENT_SOLVERS}, got {self.solver!r}")
        check_number("n_components", self.n_components, low=1, integer=True)
        check_number("n_init", self.n_init, low=1, integer=True)
        check_number("l1", self.l1)
        check_number("l2", self.l2)
        check_number("tol", self.tol)
        check_number("gtol", self.gtol)
        check_number("max_iter", self.max_iter, integer=True, allow_none=True)
        check_number("init_scale", self.init_scale)
        if self.l1 > 0 and self.solver not in ("bound", "lbfgs"):
            raise ParameterError(f"solver={self.solver!r} handles smooth objectives only: set l1=0 or use "
                                 f"solver='bound' or 'lbfgs'")
        if self.solver == "em" and (self.l1 > 0 or self.l2 > 0):
            raise ParameterError("solver='em' fits the generative mixture by maximum likelihood and takes no penalty: "
                                 "set l1=0 and l2=0")
        if self.solver == "em" and not self.fit_intercept:
            raise ParameterError("solver='em' needs fit_intercept=True (the mixing weights live in the intercepts)")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ParameterError(f"solver_options must be a dict or None, got {self.solver_options!r}")

    # -- fitting -------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit from ``n_init`` random starts; keep the best."""
        import sys
        import warnings

        self._check_params()
        M = _as_matrix(X)
        classes, ids = _class_labels(y, "LatentLogLinearClassifier")
        if len(ids) != M.shape[0]:
            raise ValueError(f"X has {M.shape[0]} samples but y has {len(ids)} labels")
        sw = check_sample_weight(sample_weight, M.shape[0])      # all-zero weights say nothing
        model = LatentLogLinear(M, ids, len(classes), self.n_components, self.fit_intercept, sw)
        penalty = ElasticNet(self.l1, self.l2, model.layout.penalty_scale)
        rng = np.random.default_rng(self.random_state)
        best = None
        self.init_objectives_ = []
        for r in range(self.n_init):
            w0 = rng.normal(0.0, float(self.init_scale), model.n_params)
            res = self._fit_from(model, penalty, w0)
            self.init_objectives_.append(res.objective)
            if self.verbose:
                print(f"start {r + 1}/{self.n_init}: objective {res.objective:.6g} after {res.n_iter} iterations "
                      f"({res.stop_reason})", file=sys.stderr)
            if best is None or res.objective < best.objective:
                best = res
        self.classes_ = classes
        self.n_features_in_ = M.shape[1]
        self.weights_ = best.w
        self.objective_ = best.objective
        self.n_iter_ = best.n_iter
        self.stop_reason_ = best.stop_reason
        self.history_ = best.history
        self._model = model
        if best.stop_reason == "max_iter":
            warnings.warn(f"LatentLogLinearClassifier: solver {self.solver!r} stopped after max_iter iterations "
                          f"before meeting tol={self.tol:g} / gtol={self.gtol:g}", ConvergenceWarning, stacklevel=2)
        return self

    def _max_iter(self):
        if self.max_iter is not None:
            return int(self.max_iter)
        return {"bound": 1000, "em": 1000, "lbfgs": 2000, "newton": 500, "cg": 5000, "sd": 20000}[self.solver]

    def _fit_from(self, model, penalty, w0):
        """One start: the chosen solver from ``w0`` (a SolverResult-like object)."""
        from ..solvers.base import SolverResult

        options = dict(self.solver_options or {})
        max_iter = self._max_iter()
        if self.solver in ("bound", "lbfgs"):
            name = "bound" if self.solver == "bound" else ("owlqn" if self.l1 > 0 else "lbfgs")
            return get_solver(name)(model, penalty, w0, max_iter=max_iter, tol=self.tol, gtol=self.gtol, window=1,
                                    **options)
        if self.solver == "em":
            w, hist, stop = em_fit(model, model.responsibilities(w0), max_iter=max_iter, tol=self.tol, **options)
            return SolverResult(w=w, objective=hist[-1]["objective"], n_iter=len(hist), n_evals=len(hist),
                                stop_reason=stop, history=hist)
        if self.solver == "sd":
            return steepest_descent(model, penalty, w0, max_iter=max_iter, tol=self.tol, gtol=self.gtol)
        return _scipy_fit(self.solver, model, penalty, w0, max_iter, self.tol, self.gtol, options)

    # -- prediction ----------------------------------------------------------------------
    def _X(self, X):
        if not hasattr(self, "weights_"):
            raise NotFittedError("this LatentLogLinearClassifier is not fitted yet; call fit() first")
        M = _as_matrix(X)
        if M.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {M.shape[1]} features, but LatentLogLinearClassifier was fitted with "
                             f"{self.n_features_in_} features")
        return M

    def predict_log_proba(self, X):
        """``log p(k | x)``, columns in ``classes_`` order."""
        M = self._X(X)
        return self._model.class_log_proba(self.weights_, M)

    def predict_proba(self, X):
        return np.exp(self.predict_log_proba(X))

    def predict(self, X):
        best = np.argmax(self.predict_log_proba(X), axis=1)
        return self.classes_[best]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy."""
        y = np.asarray(y).ravel()
        return float(np.average((self.predict(X) == y).astype(float), weights=sample_weight))

    def log_likelihood(self, X, y):
        """The latent conditional log-likelihood ``sum_i log p(y_i | x_i)`` of labelled data
        (labels unseen in training give -inf)."""
        L = self.predict_log_proba(X)
        y = np.asarray(y).ravel()
        index = {c: k for k, c in enumerate(self.classes_.tolist())}
        cols = np.array([index.get(v, -1) for v in y.tolist()])
        if np.any(cols < 0):
            return -math.inf
        return float(L[np.arange(len(y)), cols].sum())

    @property
    def coef_(self):
        """theta as (n_classes, n_components, n_features)."""
        m = self._model
        return self.weights_[:m.d * m.KM].reshape(m.d, m.K, m.M).transpose(1, 2, 0)

    @property
    def intercept_(self):
        """nu as (n_classes, n_components)."""
        m = self._model
        return self.weights_[m.d * m.KM:].reshape(m.K, m.M) if m.fit_intercept else np.zeros((m.K, m.M))


# --------------------------------------------------------------------------- baseline solvers
def _smooth(model, penalty):
    def f(w):
        loss, g = model.loss_grad(w)
        sv, sg = penalty.smooth_value_grad(w)
        return loss + sv, (g if sg is None else g + sg)
    return f


def steepest_descent(model, penalty, w0, max_iter=20000, tol=1e-9, gtol=1e-6, c1=1e-4, stop=None):
    """Gradient descent with an Armijo backtracking line search (the step starts from
    twice the last accepted one). Smooth (l2) objectives only. ``stop(objective)``: an
    optional callback that ends the run when it returns True."""
    from ..solvers.base import HistoryRecorder, SolverResult
    f = _smooth(model, penalty)
    callback = stop
    w = np.array(w0, dtype=np.float64)
    F, g = f(w)
    hist = HistoryRecorder()
    step = 1.0 / max(np.linalg.norm(g), 1e-12)
    n_evals, stop, it = 1, "max_iter", 0
    for it in range(1, max_iter + 1):
        gg = float(g @ g)
        if math.sqrt(gg) <= gtol * max(1.0, float(np.linalg.norm(w))):
            stop, it = "gtol", it - 1
            break
        for _ in range(60):
            w_new = w - step * g
            F_new, g_new = f(w_new)
            n_evals += 1
            if F_new <= F - c1 * step * gg:
                break
            step *= 0.5
        else:
            stop, it = "linesearch", it - 1
            break
        change = (F - F_new) / max(abs(F_new), 1.0)
        w, F, g = w_new, F_new, g_new
        if hist.record(it, F, F, 0.0, w, n_evals, step=step) or (callback is not None and callback(F)):
            stop = "callback"
            break
        step *= 2.0
        if change < tol:
            stop = "tol"
            break
    return SolverResult(w=w, objective=F, n_iter=it, n_evals=n_evals, stop_reason=stop, history=hist.rows)


def _scipy_fit(name, model, penalty, w0, max_iter, tol, gtol, options):
    """Nonlinear CG ("cg") or trust-region Newton-CG ("newton") from scipy, recording a
    history row per iteration."""
    from scipy.optimize import minimize

    from ..solvers.base import SolverResult
    f = _smooth(model, penalty)
    rows = []
    t0 = time.perf_counter()

    def callback(intermediate_result):
        rows.append({"iteration": len(rows) + 1, "objective": float(intermediate_result.fun),
                     "elapsed": time.perf_counter() - t0})

    if name == "cg":
        res = minimize(f, w0, jac=True, method="CG", callback=callback,
                       options={"maxiter": max_iter, "gtol": gtol, **options})
    else:
        l2 = penalty.per_weight(model.n_params)[1]

        def hessp(w, v):
            return model.hessp(w, v) + l2 * v
        res = minimize(f, w0, jac=True, hessp=hessp, method="trust-ncg", callback=callback,
                       options={"maxiter": max_iter, "gtol": gtol, **options})
    stop = "gtol" if res.success else ("max_iter" if res.nit >= max_iter else "linesearch")
    return SolverResult(w=res.x, objective=float(res.fun), n_iter=int(res.nit), n_evals=int(res.nfev),
                        stop_reason=stop, history=rows)
