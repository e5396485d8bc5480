"""``spargel.LogLinearClassifier``: the flat multinomial log-linear (maxent) model,
trained on :class:`~spargel.loglinear.model.FlatLogLinear` (BLAS products for the batch
gradient, its own compiled SGD pass and block updates)."""


import numpy as np
import scipy.sparse as sp

from ..data.featuredicts import token_attributes
from ..data.vocab import Vocabulary
from ..errors import ModelFileError, NonNumericDataError
from ..data.feature_space import FeatureSpace
from ..estimation import LogLinearCore, solve, warn_large_values
from ..core.interrupts import reraise_interrupt
from ..core.params import check_sample_weight, keep_arguments
from .labels import class_labels as _class_labels
from ..core.factory import make_model

BIAS = "__bias__"


#: the widest declared input a model file may name
MAX_DECLARED_WIDTH = 1 << 53

#: above this many entries (declared columns x classes) a fitted model keeps its weights
#: over the design columns as a sparse matrix instead of a dense array
DENSE_WEIGHTS_LIMIT = 1 << 22


def _used_columns(M):
    """(M restricted to its columns with a non-zero value, those columns' ids). Nothing
    here is sized by the declared width of a sparse M."""
    if sp.issparse(M):
        nz = M.data != 0
        used = np.unique(M.indices[nz])
        if len(used) == M.shape[1]:
            return M, used
        rows = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
        counts = np.bincount(rows[nz], minlength=M.shape[0])   # (empty rows anywhere, trailing too)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        C = sp.csr_matrix((M.data[nz], np.searchsorted(used, M.indices[nz]), indptr),
                          shape=(M.shape[0], len(used)))
        return C, used
    used = np.flatnonzero(np.any(M != 0, axis=0))
    if len(used) == M.shape[1]:
        return M, used
    return np.ascontiguousarray(M[:, used]), used


class _ColumnWeights:
    """The weights of a very wide model: a dense (columns with a weight) x K block and
    those columns' ids; nothing is sized by the declared width."""

    def __init__(self, n_cols, K, rows, labels, values):
        self.shape = (n_cols, K)
        self.cols, inv = np.unique(rows, return_inverse=True)
        self.block = np.zeros((len(self.cols), K))
        self.block[inv, labels] = values

    def scores(self, M):
        n, K = M.shape[0], self.shape[1]
        if not len(self.cols):
            return np.zeros((n, K))
        if sp.issparse(M):
            pos = np.searchsorted(self.cols, M.indices)
            hit = pos < len(self.cols)
            hit[hit] = self.cols[pos[hit]] == M.indices[hit]
            rows = np.repeat(np.arange(n), np.diff(M.indptr))
            Z = np.zeros((n, K))
            np.add.at(Z, rows[hit], M.data[hit, None] * self.block[pos[hit]])
            return Z
        return np.asarray(M[:, self.cols] @ self.block)

    def dense(self):
        W = np.zeros(self.shape)
        W[self.cols] = self.block
        return W


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

    _refused_solvers = {
        "l2sgd": "CRFsuite's l2sgd stops on the online loss of its epochs (CRFsuite's rule), which is too noisy "
                 "on a flat classifier (17% above the optimum on 300 samples at tol=1e-12); use solver='sgd-l1' "
                 "(stochastic, converges) or 'lbfgs' / 'owlqn'"}

    def __init__(self, solver="owlqn", l1=1.0, l2=0.0, max_iter=None, tol=1e-6, gtol=1e-5, window=10,
                 fit_intercept=True, feature_space="full", n_jobs=None, random_state=None,
                 warm_start=False, verbose=0, solver_options=None, client=None, n_shards=None):
        keep_arguments(self, locals())

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
            self._uni_vocab = None            # named by fit, after the unused columns are dropped
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
        from ..scaleout import cluster

        if cluster.is_dask_collection(X):
            client = cluster.resolve(self.client)
            if client is None:
                import dask
                X, y = dask.compute(X, y)
            else:
                return self._fit_collection(client, X, y, sample_weight)
        plan = self.fit_plan()
        if plan.previous is not None:
            self._prev = plan.previous
        M = self._design(X, fit=True)
        classes, ids = _class_labels(y)
        if len(ids) != M.shape[0]:
            raise ValueError(f"X has {M.shape[0]} samples but y has {len(ids)} labels")
        sw = check_sample_weight(sample_weight, M.shape[0])
        if not self._dict_input:
            # a column without a non-zero value has a zero gradient and a zero weight at every
            # optimum: the model is built over the used columns only, so a declared width of
            # 2^24 columns with a few thousand non-zeros costs nothing per column (no name,
            # no weight, no mask entry)
            M, used = _used_columns(M)
            self._uni_vocab = Vocabulary([f"x{j}" for j in used])
        warn_large_values(self, M.data if sp.issparse(M) else M.ravel())
        K, d = len(classes), M.shape[1]
        mask = self._observed_mask(M, ids, K) if self.feature_space == "observed" else None
        if self.client is not None:
            from .scaleout import sharded_model
            model = sharded_model(plan, M, ids, K, sw, mask)
            self.timings_ = model.timings
        else:
            model = make_model("loglinear", M, ids, K, fit_intercept=self.fit_intercept, sample_weight=sw,
                               mask=mask)
        self.classes_ = classes
        self._label_vocab = Vocabulary([str(c) for c in classes])
        w0 = self._warm_weights(plan.previous, d, K) if self.warm_start else None
        result = solve(plan, model, w0)
        self._record(result)
        self._set_flat(result.w, d, K)
        return self

    def _fit_collection(self, client, X, y, sample_weight):
        """``fit`` of a Dask array / dataframe on ``client`` (:mod:`.scaleout`)."""
        from .scaleout import fit_collection
        got = fit_collection(self.fit_plan(), client, X, y, sample_weight)
        d, classes = got.n_features, got.classes
        self._dict_input = False
        self.n_features_in_ = d
        if got.names is not None:
            self.feature_names_in_ = np.asarray(got.names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._uni_vocab = Vocabulary([f"x{j}" for j in range(d)])
        self.classes_ = classes
        self._label_vocab = Vocabulary([str(c) for c in classes])
        self._record(got.result)
        self.timings_ = got.timings
        self._set_flat(got.result.w, d, len(classes))
        return self

    def _plan_extras(self):
        return {"fit_intercept": self.fit_intercept}

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
        labs, vals, keep = [], [], []
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

    def _warm_weights(self, old, d, K):
        """The weights of ``old`` (a :class:`~spargel.estimation.WarmStart`) by name over
        the new columns and classes (None without one)."""
        if old is None:
            return None
        w = np.zeros(d * K + K)
        lab = {name: k for k, name in enumerate(self._label_vocab.names)}
        old_lab = old.labels
        for name, entries in old.uni.items():
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
        """(W, b): W over the design columns, a dense array, or the rows of its columns
        with a weight (:class:`_ColumnWeights`) when the declared width times the
        classes exceeds :data:`DENSE_WEIGHTS_LIMIT` (a model of 2^24 columns keeps only
        its non-zero weights in memory)."""
        s, coef, K = self.space_, self.weights_, self.space_.n_labels
        b = np.zeros(K)
        if getattr(self, "_dict_input", False) or not hasattr(self, "n_features_in_"):
            cols = np.arange(len(self._uni_vocab))
            n_cols = len(self._uni_vocab)
        else:
            n_cols = self.n_features_in_
            cols = np.array([int(n[1:]) if n != BIAS else -1 for n in self._uni_vocab.names], dtype=np.int64)
        rows, labs, vals = [], [], []
        for a, name in enumerate(self._uni_vocab.names):
            lo, hi = s.u_ptr[a], s.u_ptr[a + 1]
            if name == BIAS:
                b[s.u_lab[lo:hi]] = coef[lo:hi]
            else:
                rows.append(np.full(hi - lo, cols[a], np.int64))
                labs.append(s.u_lab[lo:hi])
                vals.append(coef[lo:hi])
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(labs).astype(np.int64) if labs else np.zeros(0, np.int64)
        v = np.concatenate(vals) if vals else np.zeros(0)
        if n_cols * K > DENSE_WEIGHTS_LIMIT:
            return _ColumnWeights(n_cols, K, r, c, v), b
        W = np.zeros((n_cols, K))
        W[r, c] = v
        return W, b

    def _scores(self, X):
        """Class scores ``X @ W + b`` (n_samples x n_classes)."""
        self._check_fitted()
        M = self._design(X)
        W, b = self._weights()
        Z = W.scores(M) if isinstance(W, _ColumnWeights) else np.asarray(M @ W)
        return Z + b

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
        return W.dense().T if isinstance(W, _ColumnWeights) else W.T.copy()

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
            raise ModelFileError(f"{path}: invalid model (attribute names do not match the number of "
                                 f"features)") from None
        return est

    def _restore(self, meta, path):
        """Field by field: ``n_features_in`` an integer >= 1 (at most 2^53) that covers
        every column the weights name (each ``x<j>``, ``0 <= j < n_features_in``)."""
        nf = meta.get("n_features_in")
        if nf is not None:
            if not isinstance(nf, int) or isinstance(nf, bool) or not 1 <= nf <= MAX_DECLARED_WIDTH:
                raise ValueError(f"n_features_in must be an integer in 1..2^53, got {nf!r}")
            for name in self._uni_vocab.names:
                if name == BIAS:
                    continue
                j = name[1:]
                if not (name.startswith("x") and j.isdigit() and j.isascii() and int(j) < nf):
                    raise ValueError(f"feature {name!r} is not a column x0..x{nf - 1}")
            self.n_features_in_ = nf
            self._dict_input = False
        else:
            self._dict_input = True

    def _classes_from_names(self, names, meta, path):
        """``classes_`` in the dtype they were fitted with: every stored name must be
        the text of a value of that dtype (a round trip), and the values distinct."""
        dt = meta.get("label_dtype")
        if dt is None:
            return np.asarray(names, dtype=object)
        try:
            if not isinstance(dt, str):
                raise TypeError("not a dtype string")
            dtype = np.dtype(dt)
            if dtype.kind not in "iufb" or dtype.hasobject:
                raise TypeError(f"{dt!r} is not a numeric dtype")
            if dtype.kind == "b":
                table = {"True": True, "False": False}
                if any(n not in table for n in names):
                    raise ValueError("boolean labels must be True or False")
                classes = np.array([table[n] for n in names], dtype=dtype)
            else:
                classes = np.asarray(names).astype(dtype)
            if [str(c) for c in classes.tolist()] != list(names) and \
                    [str(c) for c in classes] != list(names):
                raise ValueError("labels do not read back as themselves")
            if len(np.unique(classes)) != len(classes):
                raise ValueError("labels repeat")
        except (TypeError, ValueError, OverflowError) as exc:
            raise ModelFileError(f"{path}: invalid model (labels do not match their dtype {dt!r}: {exc})") from None
        return classes
