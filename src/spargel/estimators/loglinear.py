"""``spargel.LogLinearClassifier``: the flat multinomial log-linear (maxent) model.

It is the CRF's datafit with sequences of length one and no transitions, so it shares
every kernel, penalty and solver with :class:`spargel.CRF`.
"""

import numpy as np
import scipy.sparse as sp

from ..data.dataset import SequenceData, check_values
from ..data.featuredicts import token_attributes
from ..data.vocab import Vocabulary
from ._core import LogLinearCore

BIAS = "__bias__"


class LogLinearClassifier(LogLinearCore):
    """Multinomial logistic regression with l1 / elastic-net penalties.

    Minimises ``sum_i -log p(y_i | x_i) + l1 * ||w||_1 + l2 / 2 * ||w||^2`` (the
    intercept is not penalised). ``X`` is a scipy sparse matrix or dense 2-d array
    (n_samples x n_features), or a list of feature dicts / attribute lists (one per
    sample, sklearn-crfsuite style).

    Parameters are those of :class:`spargel.CRF` (without templates), plus
    ``fit_intercept``. The default feature space is ``"full"`` (every feature with
    every class), as in scikit-learn.

    Examples
    --------
    >>> X = [{"colour": "red", "size": 3.0}, {"colour": "blue", "size": 1.0},
    ...      {"colour": "red", "size": 2.5}, {"colour": "blue", "size": 0.5}]
    >>> clf = LogLinearClassifier(l1=0.1).fit(X, ["apple", "berry", "apple", "berry"])
    >>> clf.predict([{"colour": "red", "size": 2.0}]).tolist()
    ['apple']
    """

    _kind = "loglinear"

    def __init__(self, solver="owlqn", l1=1.0, l2=0.0, max_iter=None, tol=1e-6, gtol=1e-5, window=10,
                 fit_intercept=True, feature_space="full", n_jobs=None, random_state=None,
                 warm_start=False, verbose=0, solver_options=None):
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

    def _has_transitions(self):
        return False

    def _unpenalised(self, uni_vocab):
        i = uni_vocab.id(BIAS)
        return (i,) if i >= 0 else ()

    def _rows(self, X):
        for i, x in enumerate(X):
            attrs = token_attributes(x, f"sample {i}: ")
            if self.fit_intercept:
                attrs.append((BIAS, 1.0))
            yield [attrs], None

    def _dataset(self, X, y=None, grow=False):
        y_seqs = None if y is None else [[lab] for lab in y]
        if not (sp.issparse(X) or isinstance(X, np.ndarray)):
            return super()._dataset(X, y_seqs, grow)
        M = sp.csr_matrix(X, dtype=np.float64)
        M.sort_indices()
        if grow:
            self.n_features_in_ = M.shape[1]
            self._uni_vocab = Vocabulary([f"x{j}" for j in range(M.shape[1])] + [BIAS])
            self._big_vocab, self._label_vocab = Vocabulary(), Vocabulary()
        elif M.shape[1] != getattr(self, "n_features_in_", None):
            raise ValueError(f"X has {M.shape[1]} features, the model was fitted with "
                             f"{getattr(self, 'n_features_in_', 'dict')} features")
        if M.shape[0] == 0:
            raise ValueError("X has no samples")
        col = self._column_ids(M.shape[1])
        ids, vals, ptr = col[M.indices], M.data, M.indptr.astype(np.int64)
        keep = ids >= 0
        if self.fit_intercept and self._uni_vocab.id(BIAS) >= 0:
            n = M.shape[0]
            rows = np.repeat(np.arange(n), np.diff(ptr))[keep]
            ids = np.concatenate([ids[keep], np.full(n, self._uni_vocab.id(BIAS), np.int32)])
            vals = np.concatenate([vals[keep], np.ones(n)])
            order = np.argsort(np.concatenate([rows, np.arange(n)]), kind="stable")
            ids, vals = ids[order], vals[order]
            counts = np.bincount(rows, minlength=n) + 1
        else:
            ids, vals = ids[keep], vals[keep]
            counts = np.bincount(np.repeat(np.arange(M.shape[0]), np.diff(ptr))[keep], minlength=M.shape[0])
        uni_ptr = np.zeros(M.shape[0] + 1, np.int64)
        np.cumsum(counts, out=uni_ptr[1:])
        n = M.shape[0]
        data = SequenceData(np.arange(n + 1, dtype=np.int64), uni_ptr, ids.astype(np.int32), vals.astype(np.float64),
                            np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0))
        check_values(data)
        if y_seqs is not None:
            from ..data.dataset import _add_labels
            from array import array
            out = array("i")
            _add_labels([lab for (lab,) in y_seqs], self._label_vocab, grow, out, 0)
            data.labels = np.frombuffer(out, dtype=np.int32).copy()
            if len(data.labels) != n:
                raise ValueError(f"X has {n} samples but y has {len(data.labels)} labels")
            if grow and len(self._label_vocab) < 2:
                raise ValueError("training data has fewer than 2 distinct labels")
        return data

    def _column_ids(self, n_cols):
        """Attribute id of every matrix column (-1 for columns without weights)."""
        v = self._uni_vocab
        return np.array([v.id(f"x{j}") for j in range(n_cols)], dtype=np.int32)

    def fit(self, X, y):
        """Fit on samples ``X`` with labels ``y`` (strings or anything ``str()`` names)."""
        self._check_params()
        if self.warm_start:
            self._remember_for_warm_start()
        y = [str(lab) for lab in np.asarray(y, dtype=object).ravel()]
        data = self._dataset(X, y, grow=True)
        return self._fit_data(data)

    def predict_proba(self, X):
        """Class probabilities, one row per sample, columns in ``classes_`` order."""
        from ..models.crf import marginals
        self._check_fitted()
        proba, _ = marginals(self.space_, self._dataset(X), self.weights_)
        return proba

    def predict(self, X):
        return np.asarray(self.classes_, dtype=object)[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y):
        """Accuracy."""
        y = np.asarray([str(v) for v in np.asarray(y, dtype=object).ravel()], dtype=object)
        return float(np.mean(self.predict(X) == y))

    @property
    def feature_names_(self):
        """Names of the columns of ``coef_``: every column for matrix input; for dict
        input, the attributes that kept a non-zero weight (the model file keeps no others)."""
        self._check_fitted()
        if hasattr(self, "n_features_in_"):
            return [f"x{j}" for j in range(self.n_features_in_)]
        return [name for name in self._uni_vocab if name != BIAS]

    @property
    def coef_(self):
        """Weights as a sparse (n_classes x n_features) matrix."""
        self._check_fitted()
        s, w = self.space_, self.weights_
        names = self.feature_names_
        col = {name: j for j, name in enumerate(names)}
        rows, cols, vals = [], [], []
        for a, name in enumerate(self._uni_vocab):
            j = col.get(name)
            if j is None:
                continue
            for k in range(s.u_ptr[a], s.u_ptr[a + 1]):
                rows.append(s.u_lab[k]); cols.append(j); vals.append(w[k])
        return sp.csr_matrix((vals, (rows, cols)), shape=(s.n_labels, len(names)))

    @property
    def intercept_(self):
        self._check_fitted()
        out = np.zeros(self.space_.n_labels)
        a = self._uni_vocab.id(BIAS)
        if a >= 0:
            s = self.space_
            out[s.u_lab[s.u_ptr[a]:s.u_ptr[a + 1]]] = self.weights_[s.u_ptr[a]:s.u_ptr[a + 1]]
        return out

    def _meta(self):
        meta = super()._meta()
        meta["n_features_in"] = getattr(self, "n_features_in_", None)
        return meta

    def _restore(self, meta):
        if meta.get("n_features_in") is not None:
            self.n_features_in_ = int(meta["n_features_in"])
