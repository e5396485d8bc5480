"""Label sequences as the CRF family receives them: checked and made lists, the
second-order begin marker refused."""


def refuse_marker_label(y):
    """Refuse the label reserved for the begin marker of second-order models."""
    from .crf2_space import BOS_NAME
    for i, labels in enumerate(y):
        if BOS_NAME in labels:
            raise ValueError(f"y[{i}]: the label {BOS_NAME!r} is reserved for the begin marker of second-order "
                             f"models")


def label_lists(y, name):
    """``y`` as a list of label lists (a sequence's ``labels`` where it has them), or a clear error."""
    if y is None:
        raise ValueError(f"{name} is required")
    out = []
    for i, seq in enumerate(y):
        labels = getattr(seq, "labels", seq)
        if labels is None or isinstance(labels, str):
            raise TypeError(f"{name}[{i}] must be a list of label strings")
        out.append(list(labels))
    return out
