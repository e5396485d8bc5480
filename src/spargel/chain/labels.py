"""Label sequences as the CRF family receives them: checked and made lists (or, for an
iterator, checked as they are read, so that training data is read in step with them and
never held whole), the second-order begin marker refused."""


def refuse_marker_label(y):
    """Refuse the label reserved for the begin marker of second-order models; returns
    ``y`` (an iterator: a checking iterator)."""
    if not isinstance(y, list):                 # an iterator: checked as it is read
        return _marker_checked(y)
    for _ in _marker_checked(y):
        pass
    return y


def _marker_checked(y):
    from .crf2_space import BOS_NAME
    for i, labels in enumerate(y):
        if BOS_NAME in labels:
            raise ValueError(f"y[{i}]: the label {BOS_NAME!r} is reserved for the begin marker of second-order "
                             f"models")
        yield labels


def label_lists(y, name, lazy=False):
    """The label sequences (a sequence's ``labels`` where it has them) as lists, or a
    clear error; with ``lazy``, an iterator (no ``len``) stays one, checked as it is
    read."""
    if y is None:
        raise ValueError(f"{name} is required")
    if lazy and not hasattr(y, "__len__") and iter(y) is y:
        return _checked_labels(y, name)
    return list(_checked_labels(y, name))


def _checked_labels(y, name):
    for i, seq in enumerate(y):
        labels = getattr(seq, "labels", seq)
        if labels is None or isinstance(labels, str):
            raise TypeError(f"{name}[{i}] must be a list of label strings")
        yield list(labels)
