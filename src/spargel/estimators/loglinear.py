"""``spargel.LogLinearClassifier``: the flat multinomial log-linear (maxent) model,
trained on :class:`~spargel.models.loglinear.FlatLogLinear` (BLAS products for the batch
gradient, its own compiled SGD pass and block updates)."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp

from ..data.featuredicts import token_attributes
from ..data.vocab import Vocabulary
from ..errors import DataConversionWarning, NonNumericDataError
from ..models.feature_space import FeatureSpace
from ..penalties import ElasticNet
from ._core import LogLinearCore, reraise_interrupt, run_solver, warn_large_values
from .base import check_sample_weight

BIAS = "__bias__"


def _is_feature_dicts(X):
    """True for sklearn-crfsuite style input: a list of dicts or of attribute lists."""
    if sp.issparse(X) or hasattr(X, "__array__") or hasattr(X, "columns"):
        return False
    if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
        raise TypeError("X must be a 2-d array, a sparse matrix or a list of feature dicts")
    first = next(iter(X), None)
    if isinstance(first, dict):
        return True
    if isinstance(first, (list, tuple)) and len(first) and isinstance(first[0], (str, tuple)):
        return True
    return False


def _as_matrix(X, name="X"):
    """A 2-d float64 array or CSR matrix from X, with clear errors (in scikit-learn's
    words where its checks look for them).

    >>> _as_matrix([1.0, 2.0])
    Traceback (most recent call last):
    ...
    ValueError: X is 1-dimensional, expected 2 dimensions (samples x features). Reshape your data: X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a single sample
    >>> _as_matrix([[1.0, {}]])
    Traceback (most recent call last):
    ...
    spargel.errors.NonNumericDataError: X: must be numeric (float() argument must be a string or a real number, not 'dict')
    """
    if sp.issparse(X):
        if np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError(f"{name} has complex values: Complex data not supported")
        M = sp.csr_matrix(X, dtype=np.float64)
        if M.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional")
        _check_shape(M, name)
        if not np.all(np.isfinite(M.data)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return M
    if hasattr(X, "to_numpy") and hasattr(X, "columns"):
        X = X.to_numpy()
    try:
        A = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric matrix ({exc})") from None
    if np.iscomplexobj(A):
        raise ValueError(f"{name} has complex values: Complex data not supported")
    try:
        A = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise NonNumericDataError(name, None, f"must be numeric ({exc})") from None
    if A.ndim == 1:
        raise ValueError(f"{name} is 1-dimensional, expected 2 dimensions (samples x features). Reshape your "
                         f"data: {name}.reshape(-1, 1) for a single feature, {name}.reshape(1, -1) for a single "
                         f"sample")
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got {A.ndim} dimensions")
    _check_shape(A, name)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(A)


def _check_shape(M, name):
    for n, what in ((M.shape[0], "sample"), (M.shape[1], "feature")):
        if n == 0:
            raise ValueError(f"{name} has 0 {what}(s) (shape={M.shape}) while a minimum of 1 is required.")


def _class_labels(y, who="LogLinearClassifier", min_classes=2):
    """(classes_, label ids) from targets y: sorted distinct labels, their dtype kept;
    missing, continuous or multi-column targets and fewer than ``min_classes``
    classes are refused; a column vector is flattened with a
    :class:`~spargel.errors.DataConversionWarning`.

    >>> _class_labels(["b", "a", "b"])
    (array(['a', 'b'], dtype='<U1'), array([1, 0, 1]))
    >>> _class_labels([3, 3])
    Traceback (most recent call last):
    ...
    ValueError: y has only one class (3); LogLinearClassifier needs at least 2 classes
    """
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(DataConversionWarning("A column-vector y was passed when a 1d array was expected: y was "
                                            "flattened; give y of shape (n_samples,), e.g. y.ravel()"),
                      stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array (one label per sample), got shape {y.shape}")
    if y.dtype == object:
        bad = [v for v in y if v is None or (isinstance(v, float) and v != v)]
        if bad:
            raise ValueError("y contains missing labels (None or NaN)")
        kinds = {type(v) for v in y}
        if len(kinds) > 1 and not all(issubclass(k, numbers.Integral) for k in kinds):
            raise ValueError(f"y mixes label types: {sorted(k.__name__ for k in kinds)}")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        if np.any(y != np.round(y)):
            raise ValueError(f"y looks continuous (non-integer floats): {who} is a classifier")
    classes, ids = np.unique(y, return_inverse=True)
    if len(classes) < min_classes:
        if len(classes) == 0:
            raise ValueError("y is empty")
        raise ValueError(f"y has only one class ({classes.tolist()[0]!r}); {who} needs at least {min_classes} classes")
    return classes, ids.astype(np.int64)


class LogLinearClassifier(LogLinearCore):
    """Multinomial logistic regression with l1 / elastic-net penalties.

    Minimises ``sum_i s_i (-log p(y_i | x_i)) + l1 * ||w||_1 + l2 / 2 * ||w||^2`` (the
    intercept is not penalised; ``s_i`` the sample weights). ``X`` is a dense 2-d array
    (or anything numpy turns into one, a pandas DataFrame included), a scipy sparse
    matrix, or a list of feature dicts / attribute lists (one per sample,
    sklearn-crfsuite style).

    Parameters are those of :class:`spargel.CRF` (without templates; ``client`` and
    ``n_shards`` included: with a client, ``fit`` runs sharded on a Dask cluster, and
    ``X`` / ``y`` may be a Dask array or dataframe / series, see ``docs/distributed.md``),
    plus ``fit_intercept``. The default feature space is ``"full"`` (every feature with every
    class), as in scikit-learn; ``"observed"`` keeps only the (feature, class) pairs seen
    in training. scikit-learn's ``LogisticRegression(C=C)`` minimises the same objective
    with ``l2 = 1 / C``.

    Examples
    --------
    >>> X = [{"colour": "red", "size": 3.0}, {"colour": "blue", "size": 1.0},
    ...      {"colour": "red", "size": 2.5}, {"colour": "blue", "size": 0.5}]
    >>> clf = LogLinearClassifier(l1=0.1).fit(X, ["apple", "berry", "apple", "berry"])
    >>> clf.predict([{"colour": "red", "size": 2.0}]).tolist()
    ['apple']
    """

    _kind = "loglinear"
    _estimator_kind = "classifier"

    def __init__(self, solver="owlqn", l1=1.0, l2=0.0, max_iter=None, tol=1e-6, gtol=1e-5, window=10,
                 fit_intercept=True, feature_space="full", n_jobs=None, random_state=None,
                 warm_start=False, verbose=0, solver_options=None, client=None, n_shards=None):
        self.solver = solver
        self.l1 = l1
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol
        self.gtol = gtol
        self.window = window
        self.fit_intercept = fit_intercept
        self.feature_space = feature_space
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.solver_options = solver_options
        self.client = client
        self.n_shards = n_shards

    def _more_sklearn_tags(self, tags):
        tags.input_tags.sparse = True

    # -- input -------------------------------------------------------------------------
    def _design(self, X, fit=False):
        """X as a float64 matrix whose columns are this model's features: at fit, every
        column (matrix input) or attribute (dict input); later, the columns of the
        fitted model (attributes it does not know are ignored)."""
        if _is_feature_dicts(X):
            if fit:
                self._dict_input = True
                self._uni_vocab = Vocabulary()
            elif not getattr(self, "_dict_input", False):
                raise ValueError("this model was fitted on a matrix; give X as a matrix")
            return self._dict_matrix(X, grow=fit)
        if not fit and getattr(self, "_dict_input", False):
            raise ValueError("this model was fitted on feature dicts; give X as a list of feature dicts")
        names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
        M = _as_matrix(X)
        if fit:
            self._dict_input = False
            self.n_features_in_ = M.shape[1]
            if names is not None:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            self._uni_vocab = Vocabulary([f"x{j}" for j in range(M.shape[1])])
        elif M.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {M.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input (the number it was fitted with)")
        return M

    def _dict_matrix(self, X, grow):
        vocab = self._uni_vocab
        indptr, indices, values = [0], [], []
        for i, x in enumerate(X):
            for name, value in token_attributes(x, f"sample {i}: "):
                j = vocab.id(name)
                if j < 0:
                    if not grow:
                        continue
                    j = vocab.add(name)
                indices.append(j)
                values.append(value)
            indptr.append(len(indices))
        n = len(indptr) - 1
        if n == 0:
            raise ValueError("X has no samples")
        return sp.csr_matrix((np.asarray(values, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                              np.asarray(indptr, dtype=np.int64)), shape=(n, len(vocab)))

    # -- fitting -------------------------------------------------------------------------
    @reraise_interrupt
    def fit(self, X, y, sample_weight=None):
        """Fit on samples ``X`` with labels ``y`` (any sortable label type; kept as is).
        Ctrl-C keeps the weights reached (``stop_reason_ == "interrupted"``) and then
        raises ``KeyboardInterrupt``."""
        from ..distributed.cluster import is_dask_collection
        from ..models.factory import make_model

        if is_dask_collection(X):
            from ..distributed.flat import fit_collection
            return fit_collection(self, X, y, sample_weight)
        self._check_params()
        if self.warm_start:
            self._remember_for_warm_start()
        M = self._design(X, fit=True)
        classes, ids = _class_labels(y)
        if len(ids) != M.shape[0]:
            raise ValueError(f"X has {M.shape[0]} samples but y has {len(ids)} labels")
        sw = check_sample_weight(sample_weight, M.shape[0])
        warn_large_values(self, M.data if sp.issparse(M) else M.ravel())
        K, d = len(classes), M.shape[1]
        mask = self._observed_mask(M, ids, K) if self.feature_space == "observed" else None
        if self.client is not None:
            from ..distributed.flat import sharded_model
            model = sharded_model(self, M, ids, K, sw, mask)
        else:
            model = make_model("loglinear", M, ids, K, fit_intercept=self.fit_intercept, sample_weight=sw,
                               mask=mask)
        self.classes_ = classes
        self._label_vocab = Vocabulary([str(c) for c in classes])
        w0 = self._warm_weights(d, K) if self.warm_start else None
        result = run_solver(self, model, ElasticNet(self.l1, self.l2, model.layout.penalty_scale), w0)
        self._set_flat(result.w, d, K)
        return self

    @staticmethod
    def _observed_mask(M, ids, K):
        C = sp.csr_matrix(M) if not sp.issparse(M) else M
        C = C.tocoo()
        seen = np.zeros((C.shape[1], K))
        nz = C.data != 0
        seen[C.col[nz], ids[C.row[nz]]] = 1.0
        mask = seen.ravel()
        return np.concatenate([mask, np.ones(K)])

    def _set_flat(self, w, d, K):
        """Keep the non-zero weights in the compact layout of the model files: one
        attribute per feature (its classes with a weight) and the intercept as the
        attribute ``__bias__``."""
        W = w[:d * K].reshape(d, K)
        names = list(self._uni_vocab.names)
        rows, labs, vals, keep = [], [], [], []
        for j in np.flatnonzero(np.any(W != 0, axis=1)):
            nz = np.flatnonzero(W[j])
            keep.append(names[j])
            labs.append(nz)
            vals.append(W[j, nz])
        if self.fit_intercept and np.any(w[d * K:] != 0):
            b = w[d * K:]
            nz = np.flatnonzero(b)
            keep.append(BIAS)
            labs.append(nz)
            vals.append(b[nz])
        counts = np.array([len(x) for x in labs], dtype=np.int64)
        u_ptr = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(counts, out=u_ptr[1:])
        u_lab = np.concatenate(labs).astype(np.int32) if labs else np.zeros(0, np.int32)
        coef = np.concatenate(vals) if vals else np.zeros(0)
        self._uni_vocab = Vocabulary(keep)
        self._big_vocab = Vocabulary()
        empty = np.zeros(0, np.int32)
        self.space_ = FeatureSpace(K, u_ptr, u_lab, np.zeros(1, np.int64), empty, empty)
        self.weights_ = coef
        self.n_active_features_ = int(np.count_nonzero(coef))
        self._cache = self._dense_weights()

    def _warm_weights(self, d, K):
        if not hasattr(self, "_prev"):
            return None
        old = self._prev
        w = np.zeros(d * K + K)
        lab = {name: k for k, name in enumerate(self._label_vocab.names)}
        old_lab = old["labels"]
        for name, entries in old["uni"].items():
            j = d if name == BIAS else self._uni_vocab.id(name)
            if j < 0:
                continue
            for code, value in entries:
                k = lab.get(old_lab[code])
                if k is not None:
                    w[j * K + k] = value
        return w

    # -- prediction ----------------------------------------------------------------------
    def _weights(self):
        """(W over the design columns, intercepts) of the fitted model: kept from fit or
        load (prediction changes no attribute)."""
        cache = getattr(self, "_cache", None)
        return cache if cache is not None else self._dense_weights()

    def _dense_weights(self):
        s, coef, K = self.space_, self.weights_, self.space_.n_labels
        b = np.zeros(K)
        if getattr(self, "_dict_input", False) or not hasattr(self, "n_features_in_"):
            cols = np.arange(len(self._uni_vocab))
            n_cols = len(self._uni_vocab)
        else:
            n_cols = self.n_features_in_
            cols = np.array([int(n[1:]) if n != BIAS else -1 for n in self._uni_vocab.names], dtype=np.int64)
        W = np.zeros((n_cols, K))
        for a, name in enumerate(self._uni_vocab.names):
            lo, hi = s.u_ptr[a], s.u_ptr[a + 1]
            if name == BIAS:
                b[s.u_lab[lo:hi]] = coef[lo:hi]
            else:
                W[cols[a], s.u_lab[lo:hi]] = coef[lo:hi]
        return W, b

    def _scores(self, X):
        """Class scores ``X @ W + b`` (n_samples x n_classes)."""
        self._check_fitted()
        M = self._design(X)
        W, b = self._weights()
        return np.asarray(M @ W) + b

    def decision_function(self, X):
        """Class scores ``X @ W + b`` (n_samples x n_classes, columns in ``classes_``
        order). With two classes, as in scikit-learn, one score per sample: that of
        ``classes_[1]`` minus that of ``classes_[0]`` (the log-odds of ``classes_[1]``;
        positive where it is predicted)."""
        Z = self._scores(X)
        return Z[:, 1] - Z[:, 0] if Z.shape[1] == 2 else Z

    def predict_proba(self, X):
        """Class probabilities, one row per sample, columns in ``classes_`` order."""
        Z = self._scores(X)
        Z -= Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=1, keepdims=True)
        return P

    def predict_log_proba(self, X):
        Z = self._scores(X)
        m = Z.max(axis=1, keepdims=True)
        return Z - m - np.log(np.exp(Z - m).sum(axis=1, keepdims=True))

    def predict(self, X):
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy (weighted by ``sample_weight`` when given)."""
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        hit = (self.predict(X) == y).astype(float)
        return float(np.average(hit, weights=sample_weight))

    # -- inspection ----------------------------------------------------------------------
    @property
    def feature_names_(self):
        """Names of the columns of ``coef_``: every column for matrix input; for dict
        input, the attributes that kept a non-zero weight (the model keeps no others)."""
        self._check_fitted()
        if not getattr(self, "_dict_input", False) and hasattr(self, "n_features_in_"):
            if hasattr(self, "feature_names_in_"):
                return list(self.feature_names_in_)
            return [f"x{j}" for j in range(self.n_features_in_)]
        return [name for name in self._uni_vocab if name != BIAS]

    @property
    def coef_(self):
        """Weights as a (n_classes x n_features) array (sparse for dict input)."""
        self._check_fitted()
        W, _ = self._weights()
        if getattr(self, "_dict_input", False):
            keep = [a for a, name in enumerate(self._uni_vocab.names) if name != BIAS]
            return sp.csr_matrix(W[keep].T)
        return W.T.copy()

    @property
    def intercept_(self):
        self._check_fitted()
        return self._weights()[1].copy()

    # -- model files ---------------------------------------------------------------------
    def _meta(self):
        meta = super()._meta()
        meta["n_features_in"] = None if getattr(self, "_dict_input", False) else getattr(self, "n_features_in_", None)
        meta["label_dtype"] = self.classes_.dtype.str if self.classes_.dtype.kind in "iufb" else None
        return meta

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`; raises ``ModelFileError`` on any problem."""
        est = super().load(path)
        try:
            est._cache = est._dense_weights()
        except (ValueError, IndexError):
            from ..errors import ModelFileError
            raise ModelFileError(f"{path}: invalid model (attribute names do not match the number of "
                                 f"features)") from None
        return est

    def _restore(self, meta):
        if meta.get("n_features_in") is not None:
            self.n_features_in_ = int(meta["n_features_in"])
            self._dict_input = False
        else:
            self._dict_input = True

    def _classes_from_names(self, names, meta, path):
        dt = meta.get("label_dtype")
        try:
            return np.asarray(names, dtype=np.dtype(dt)) if dt else np.asarray(names, dtype=object)
        except (TypeError, ValueError):
            from ..errors import ModelFileError
            raise ModelFileError(f"{path}: invalid model (labels do not match their dtype)") from None
