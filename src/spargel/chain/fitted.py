"""A fitted chain CRF as one plain value: what the model-file writers and readers
(CRFsuite's, Wapiti's, CRF++'s), python-crfsuite's ``Tagger``, eli5's explanations and
``spargel label`` receive instead of reading an estimator's private state.

:attr:`spargel.CRF.fitted_model_` gives the value of a fitted estimator;
:meth:`spargel.CRF.from_fitted_model` makes an estimator of one (what the readers
return).
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FittedChain:
    """A fitted first- or second-order chain CRF.

    ``space``: the layout (:class:`~spargel.data.feature_space.FeatureSpace` or
    :class:`~spargel.chain.crf2_space.FeatureSpace2`); ``weights``: its flat weights;
    ``uni``, ``big``, ``labels``: the vocabularies of unigram and bigram attributes and
    of labels; ``template``: the :class:`~spargel.data.templates.Template` the features
    come from (None for feature dicts); ``pad``: CRF++ padding markers; ``value_sep``: how
    a string feature value joins its key; ``model_type``: ``"crf"`` or ``"maxent"``;
    ``constraints``: the transition constraints prediction decodes under, as the
    estimator holds them (None: none); ``file_size``: the size of the CRFsuite file it
    was read from (None otherwise).

    >>> from spargel import CRF
    >>> crf = CRF(l1=0.01, max_iter=20).fit([[{"w": "a"}, {"w": "b"}]], [["X", "Y"]])
    >>> m = crf.fitted_model_
    >>> m.labels.names, len(m.weights) == m.space.n_params, m.order
    (['X', 'Y'], True, 1)
    >>> CRF.from_fitted_model(m).predict([[{"w": "a"}, {"w": "b"}]])
    [['X', 'Y']]
    """

    space: object
    weights: np.ndarray
    uni: object
    big: object
    labels: object
    template: object = None
    pad: bool = True
    value_sep: str = ":"
    model_type: str = "crf"
    constraints: object = None
    file_size: object = None

    @property
    def order(self):
        """The Markov order of the labels, 1 or 2."""
        return getattr(self.space, "order", 1)

    @property
    def classes(self):
        """The label names."""
        return self.labels.names

    def params(self):
        """The estimator parameters that go with the model (its template's text, padding,
        model type, value separator)."""
        return {"template": None if self.template is None else self.template.text, "pad": self.pad,
                "model_type": self.model_type, "value_sep": self.value_sep}

    def featurizer(self):
        """The featurizer of the model: its settings over its vocabularies (the
        prediction encoding: unknown attributes are left out)."""
        from .featurizer import SequenceFeaturizer
        return SequenceFeaturizer(self.template, self.pad, self.order, self.value_sep, self.uni, self.big,
                                  self.labels, maxent=self.model_type == "maxent")

    def encode(self, X, y=None):
        """``X`` (and label sequences ``y``) encoded over the model's vocabularies."""
        return self.featurizer().encode(X, y)

    def inference(self):
        """The prediction functions of the model's order (:mod:`spargel.chain.crf` or
        :mod:`spargel.chain.crf2`)."""
        if self.order == 2:
            from . import crf2
            return crf2
        from . import crf
        return crf

    def label_constraints(self):
        """The transition constraints over the model's labels (a
        :class:`~spargel.chain.constraints.LabelConstraints`), or None."""
        from .constraints import TransitionConstraints
        spec = TransitionConstraints.coerce(self.constraints)
        return None if spec is None else spec.resolve(self.classes)
