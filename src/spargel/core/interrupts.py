"""Ctrl-C during a fit: the solver stops and keeps what it reached; the estimator
stores it, then raises ``KeyboardInterrupt`` so that a script stops as asked."""

import contextlib
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


class CtrlC:
    """What :func:`ctrl_c_stops` hands out: ``requested`` (Ctrl-C was pressed) and
    ``callback(row)``, a solver callback that answers True (stop) once it was."""

    def __init__(self):
        self.requested = False

    def callback(self, row=None):
        return self.requested


@contextlib.contextmanager
def ctrl_c_stops():
    """Within: the first Ctrl-C (SIGINT) only sets ``requested``, so that a solver given
    ``callback`` stops at its next iteration with the iterate it reached (for solvers
    whose loops are compiled code, where a ``KeyboardInterrupt`` would lose it); a second
    Ctrl-C raises ``KeyboardInterrupt`` at once, so nothing hangs. Outside the main
    thread, or when SIGINT has a handler other than Python's default, nothing changes
    (``requested`` stays False and ``KeyboardInterrupt`` is raised as usual)."""
    import signal
    import threading

    state = CtrlC()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield state
        return

    def handler(signum, frame):
        if state.requested:
            raise KeyboardInterrupt
        state.requested = True

    signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def all_or_nothing(fit):
    """Wrap a ``fit`` that sets many attributes along the way (a selector's path, its
    criterion, its chosen model): when it raises -- Ctrl-C's ``KeyboardInterrupt``
    included -- every attribute is put back as it was before the call, so nothing
    half-fitted remains (a new estimator stays unfitted, a fitted one keeps its earlier
    fit), and the exception propagates."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
    return wrapper
