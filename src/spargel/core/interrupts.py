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
        before = self.__dict__.get("history_")
        try:
            out = fit(self, *args, **kwargs)
        except KeyboardInterrupt:
            self.__dict__.pop("_interrupted", None)
            if self.__dict__.get("history_") is before:
                interrupted_before_training(self)
            raise
        if self.__dict__.pop("_interrupted", False):
            raise KeyboardInterrupt
        return out
    return wrapper


def interrupted_before_training(est):
    """The state of a fit stopped by Ctrl-C before its solver ran (while the data was
    read or encoded): no new model -- ``stop_reason_`` is ``"interrupted"``,
    ``n_iter_`` 0, ``history_`` empty; the model of an earlier fit, if any, stays as it
    was (a new estimator stays unfitted)."""
    est.stop_reason_ = "interrupted"
    est.n_iter_ = 0
    est.history_ = []
