"""Training a CRF with SGD-L1 on a column file read in chunks, each through
``CRF.partial_fit`` (:mod:`spargel.chain.streaming`), so the file is never held in
memory. (``spargel.streaming.train_streaming``; ``spargel train --stream``.)"""

from .estimator import CRF
from .streaming import chunks


def train_streaming(path, template, chunk_sentences=1000, passes=1, model=None, encoding="utf-8", callback=None,
                    unknown_label=None, **crf_params):
    """Train a CRF with SGD-L1 on a CoNLL column file read in chunks of
    ``chunk_sentences`` sequences (the file is never held in memory).

    The file is read ``passes + 1`` times: once to count its sequences (N of the
    objective, passed as ``solver_options["n_samples"]``), then once per pass, each chunk
    going through :meth:`spargel.CRF.partial_fit` (samples are shuffled within a chunk).
    ``model``: a :class:`spargel.CRF` to continue (e.g. ``CRF.load(path)``: warm start
    from its weights); otherwise a new ``CRF(template=template, solver="sgd-l1",
    **crf_params)``. ``path`` may also be a :class:`~spargel.data.column_file.ColumnFile`;
    ``encoding``: the file's text encoding; ``unknown_label``: the label that marks a
    token's label as unknown. ``callback(model, pass_no, chunk_no, n_sequences)`` is
    called after every chunk (``chunk_no`` counts from the first pass on); returning
    True stops. Returns the model.
    """
    from ..data.column_file import ColumnFile

    if int(chunk_sentences) < 1:
        raise ValueError("chunk_sentences must be >= 1")
    if model is None:
        model = CRF(template=template, solver="sgd-l1", **crf_params)
    else:
        if crf_params:
            model.set_params(**crf_params)
        if template is not None:
            model.template = template
    source = path if isinstance(path, ColumnFile) else ColumnFile(path, encoding, unknown_label)
    n = source.count()
    options = dict(model.solver_options or {}) if model.solver == "sgd-l1" else {}
    options.setdefault("n_samples", n)
    model.solver = "sgd-l1"
    model.solver_options = options
    done = 0
    for p in range(1, int(passes) + 1):
        for chunk in chunks(source.sentences(), int(chunk_sentences)):
            model.partial_fit(chunk, [s.labels for s in chunk])
            done += 1
            if callback is not None and callback(model, p, done, len(chunk)):
                return model
    return model
