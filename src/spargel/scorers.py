"""scikit-learn scorers of label sequences (sklearn-crfsuite's ``scorers``), for
``cross_val_score``, ``GridSearchCV`` and the like: ``flat_accuracy`` (token accuracy)
and ``sequence_accuracy`` (whole sequences right). Other flat scores:
``sklearn.metrics.make_scorer(spargel.metrics.flat_f1_score, average="weighted")``.
Importing this module imports scikit-learn."""

from sklearn.metrics import make_scorer

from .flat_metrics import flat_accuracy_score, sequence_accuracy_score

__all__ = ["flat_accuracy", "sequence_accuracy"]

flat_accuracy = make_scorer(flat_accuracy_score)
sequence_accuracy = make_scorer(sequence_accuracy_score)
