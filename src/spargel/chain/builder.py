"""The chain CRF's model builder: the feature space of either order, with CRFsuite's
``all_possible_states`` / ``all_possible_transitions`` and ``min_freq`` (see
:class:`spargel.estimation.ModelBuilder`)."""

from ..data.feature_space import FeatureSpace
from ..errors import ParameterError
from ..estimation import ModelBuilder
from .crf2_space import FeatureSpace2


def space_class(order):
    """The feature-space class of a chain CRF of ``order`` 1 or 2."""
    if order == 2:
        return FeatureSpace2
    return FeatureSpace


class ChainModelBuilder(ModelBuilder):
    """A :class:`~spargel.estimation.ModelBuilder` for chain CRFs of ``order`` 1 or 2.

    ``all_states`` / ``all_transitions``: every attribute gets a weight for every label /
    every label pair a transition weight (CRFsuite's ``all_possible_states`` /
    ``all_possible_transitions``; first order); ``min_freq``: drop the features seen
    less often (CRFsuite's ``feature.minfreq``; first order, no bigram attributes).
    """

    def __init__(self, order=1, feature_space="observed", transitions=True, *, all_states=False,
                 all_transitions=False, min_freq=None, n_jobs=None, constraints=None):
        super().__init__("crf2" if order == 2 else "crf", space_class(order), feature_space, transitions,
                         n_jobs=n_jobs)
        self.constraints = constraints
        self.order = order
        self.all_states = bool(all_states)
        self.all_transitions = bool(all_transitions)
        self.min_freq = min_freq

    def with_constraints(self, constraints):
        """The same builder whose models sum over the label sequences that
        ``constraints`` (a :class:`~spargel.chain.constraints.LabelConstraints`) allows."""
        return ChainModelBuilder(self.order, self.feature_space, self.transitions, all_states=self.all_states,
                                 all_transitions=self.all_transitions, min_freq=self.min_freq, n_jobs=self.n_jobs,
                                 constraints=constraints)

    def model(self, space, data, **options):
        """The model over ``space`` and ``data``; with ``constraints`` (a
        :class:`~spargel.chain.constraints.LabelConstraints`, first order) its likelihood
        sums over the allowed label sequences only."""
        if self.constraints is not None:
            options["constraints"] = self.constraints
        return super().model(space, data, **options)

    def space(self, data, n_labels, n_uni, n_big):
        if self.feature_space == "full" or not (self.all_states or self.all_transitions):
            space = super().space(data, n_labels, n_uni, n_big)
        elif self.order == 2:
            raise ParameterError("all_possible_states / all_possible_transitions are first-order options; at "
                                 "order=2 use feature_space='full'")
        else:
            space = FeatureSpace.observed(data, n_labels, n_uni, n_big, self.transitions,
                                          all_states=self.all_states, all_transitions=self.all_transitions)
        if self.min_freq:
            if self.order != 1 or len(space.b_pair):
                raise ParameterError("min_freq applies to first-order models without bigram attributes")
            from .crfsuite_compat import apply_min_freq
            space = apply_min_freq(space, data, float(self.min_freq))
        return space
