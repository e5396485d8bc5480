"""Ctrl-C during a fit: the solver stops and keeps what it reached; the estimator
stores it, then raises ``KeyboardInterrupt`` so that a script stops as asked."""

import functools


def note_interrupt(est, stop_reason):
    """Remember that the solver stopped on Ctrl-C (stop reason ``interrupted``): the
    ``fit`` wrapped by :func:`reraise_interrupt` raises ``KeyboardInterrupt`` once it
    has stored the state reached."""
    if stop_reason == "interrupted":
        est._interrupted = True


def reraise_interrupt(fit):
    """Wrap an estimator's ``fit``: a fit that the user interrupted (Ctrl-C) keeps the
    state reached -- the fitted attributes are set and usable, ``stop_reason_`` is
    ``"interrupted"`` -- and then raises ``KeyboardInterrupt``, so that a script or a
    loop of fits stops as Ctrl-C asks (the command line catches it, writes the model and
    says so)."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        self.__dict__.pop("_interrupted", None)
        out = fit(self, *args, **kwargs)
        if self.__dict__.pop("_interrupted", False):
            raise KeyboardInterrupt
        return out
    return wrapper
