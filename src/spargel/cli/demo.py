"""``spargel demo``: solvers compared on a synthetic sequence-labelling task.

The task is the one of the Grafting-Light paper's synthetic study: labels follow a
sticky Markov chain, a handful of *relevant* attributes fire mostly on "their" label,
and many *irrelevant* attributes fire at random whatever the label
(:func:`spargel.datasets.make_chain_data`). A good sparse learner keeps the relevant
attributes and drops the irrelevant ones; a smooth (l2) learner keeps everything.

Every entry of :data:`DEMO_CONFIGS` (with ``all_solvers``, also :data:`MORE_CONFIGS`) is
trained on the same data; the demo prints a
table (time, objective, active weights, test accuracy, relevant attributes recovered,
irrelevant attributes kept) and draws the histories. To compare another solver, append
a :class:`SolverConfig`; configurations whose solver this installation does not offer
are listed as skipped.

>>> from spargel.cli.demo import run_demo
>>> results = run_demo(out=None, quick=True)     # doctest: +SKIP
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from ..solvers import SOLVERS

__all__ = ["SolverConfig", "DEMO_CONFIGS", "MORE_CONFIGS", "DemoResult", "run_demo", "make_demo_data"]


@dataclass(frozen=True)
class SolverConfig:
    """One line of the demo: a display name and the :class:`spargel.CRF` parameters."""

    name: str
    params: dict = field(default_factory=dict)

    @property
    def solver(self):
        return self.params.get("solver", "owlqn")


#: The configurations the demo trains, in order. Extend this list to add solvers.
DEMO_CONFIGS = [
    SolverConfig("owlqn l1=2", {"solver": "owlqn", "l1": 2.0}),
    SolverConfig("owlqn l1=8", {"solver": "owlqn", "l1": 8.0}),
    SolverConfig("owlqn l1=16", {"solver": "owlqn", "l1": 16.0}),
    SolverConfig("owlqn l1=8 l2=1", {"solver": "owlqn", "l1": 8.0, "l2": 1.0}),
    SolverConfig("lbfgs l2=10 (dense)", {"solver": "lbfgs", "l1": 0.0, "l2": 10.0}),
]

#: Added by ``spargel demo --all-solvers``: solvers with kernels of their own, which a
#: first run compiles (about 20 seconds more on a 2-core machine).
MORE_CONFIGS = [
    SolverConfig("bcd l1=8 l2=1", {"solver": "bcd", "l1": 8.0, "l2": 1.0, "max_iter": 30}),
    SolverConfig("sgd-l1 l1=8 (30 passes)", {"solver": "sgd-l1", "l1": 8.0, "max_iter": 30}),
]


@dataclass
class DemoResult:
    """What the demo measured for one configuration."""

    name: str
    seconds: float
    objective: float
    n_iter: int
    stop_reason: str
    active: int
    accuracy: float
    relevant_found: int
    n_relevant: int
    irrelevant_kept: int
    n_irrelevant: int
    history: list


def make_demo_data(seed=0, quick=False):
    """Training and test sets of the demo task and the relevant attribute names.

    Returns ``(X_train, y_train, X_test, y_test, relevant, n_irrelevant)``.
    """
    from ..datasets import make_chain_data

    n_train, n_test, n_irr = (150, 100, 100) if quick else (600, 400, 400)
    common = dict(n_labels=4, n_relevant=12, n_irrelevant=n_irr, p_on=0.5, p_noise=0.05)
    X, y, relevant = make_chain_data(n_sequences=n_train, random_state=seed, **common)
    Xt, yt, _ = make_chain_data(n_sequences=n_test, random_state=seed + 1000, **common)
    return X, y, Xt, yt, relevant, n_irr


def _relevance(crf, relevant, n_labels):
    """(relevant attributes whose own label got a positive weight, irrelevant attributes
    with any non-zero weight)."""
    owner = {name: f"L{j % n_labels}" for j, name in enumerate(relevant)}
    found = set()
    kept = set()
    for (attr, label), w in crf.state_features_.items():
        if attr in owner:
            if label == owner[attr] and w > 0:
                found.add(attr)
        else:
            kept.add(attr)
    for (attr, _prev, _label), _w in crf.bigram_features_.items():
        if attr not in owner:
            kept.add(attr)
    return len(found), len(kept)


def run_demo(out="spargel-demo.png", n_jobs=2, seed=0, quick=False, configs=None, file=None, all_solvers=False):
    """Train every configuration on the synthetic task, print the table, draw the plot.

    ``configs=None`` trains :data:`DEMO_CONFIGS` (and :data:`MORE_CONFIGS` with
    ``all_solvers=True``). ``out=None`` skips the plot. Returns the list of
    :class:`DemoResult`.
    """
    from ..chain.estimator import CRF

    file = sys.stdout if file is None else file
    hint = configs is None and not all_solvers
    if configs is None:
        configs = DEMO_CONFIGS + (MORE_CONFIGS if all_solvers else [])
    X, y, Xt, yt, relevant, n_irr = make_demo_data(seed, quick)
    n_tok = sum(len(s) for s in X)
    print(f"spargel demo: {len(X)} training sequences ({n_tok} tokens), {len(Xt)} test sequences; "
          f"4 labels, {len(relevant)} relevant and {n_irr} irrelevant attributes", file=file)
    # compile the numba kernels once, outside the timings
    print("compiling the kernels (the first run only: about 40 s on 2 cores; cached afterwards) ...",
          file=file, flush=True)
    t = time.perf_counter()
    with _heartbeat(file, "  ... still compiling"):
        _compile_kernels([c.solver for c in configs if c.solver in SOLVERS], X[:5], y[:5], Xt[:2], n_jobs)
    print(f"(kernels ready in {time.perf_counter() - t:.1f}s)", file=file, flush=True)

    results = []
    for cfg in configs:
        if cfg.solver not in SOLVERS:
            print(f"  skipped {cfg.name}: solver {cfg.solver!r} is not available here", file=file)
            continue
        params = {"max_iter": 300, "n_jobs": n_jobs, "random_state": seed}
        params.update(cfg.params)
        crf = CRF(**params)
        print(f"training {cfg.name} ...", file=file, flush=True)
        t = time.perf_counter()
        with _heartbeat(file, f"  ... still training {cfg.name}"):
            crf.fit(X, y, X_dev=Xt, y_dev=yt)  # test accuracy per iteration, for the plot
        seconds = time.perf_counter() - t
        found, kept = _relevance(crf, relevant, 4)
        results.append(DemoResult(
            name=cfg.name, seconds=seconds, objective=float(crf.objective_), n_iter=int(crf.n_iter_),
            stop_reason=str(crf.stop_reason_), active=int(crf.n_active_features_),
            accuracy=float(crf.score(Xt, yt)), relevant_found=found, n_relevant=len(relevant),
            irrelevant_kept=kept, n_irrelevant=n_irr, history=list(crf.history_)))
    print(format_table(results), file=file)
    print("relevant: relevant attributes whose own label got a positive weight;\n"
          "irrelevant: irrelevant attributes with any non-zero weight; time includes scoring\n"
          "the test set after every iteration. Rows with different penalties have different "
          "objectives.", file=file)
    if hint:
        print("More solvers: `spargel demo --all-solvers` adds block coordinate descent (bcd) and "
              "SGD-L1;\ntheir kernels compile on first use (about 20 seconds).", file=file)

    if out is not None and results:
        from ..core.plot import MissingMatplotlibError, plot_histories

        try:
            plot_histories([(r.name, r.history) for r in results], out,
                           title="spargel demo: synthetic chain CRF")
            print(f"plot written to {out}", file=file)
        except MissingMatplotlibError as exc:
            print(f"no plot: {exc}", file=file)
    return results


class _heartbeat:
    """Within: a line ``what (N s)`` on ``file`` every ``every`` seconds, so that a long
    silent step (compilation) shows it is alive."""

    def __init__(self, file, what, every=10.0):
        import threading

        self.file, self.what, self.every = file, what, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        t0 = time.perf_counter()
        while not self.stop.wait(self.every):
            print(f"{self.what} ({time.perf_counter() - t0:.0f} s)", file=self.file, flush=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        return False


def _tiny_fit(solver, X, y, n_jobs=1):
    """A two-iteration fit that makes numba compile (or load) a solver's kernels."""
    import warnings

    from ..chain.estimator import CRF

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # max_iter=2 does not converge, on purpose
        return CRF(solver=solver, l1=1.0, max_iter=2, n_jobs=n_jobs).fit(X, y)


def _compile_kernels(solvers, X, y, X_test, n_jobs):
    """Compile the kernels of every solver of the demo: OWL-QN / L-BFGS here, each other
    solver in a process of its own at the same time (numba's on-disk cache hands the
    result to this process), so that first use costs about one compilation, not one
    per solver, on a machine with a few cores."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    here = SOLVERS["owlqn"].function            # lbfgs is the same function: the same kernels
    others = sorted({s for s in solvers if SOLVERS[s].function != here})
    pool = futures = None
    if others:
        try:
            pool = ProcessPoolExecutor(max_workers=len(others), mp_context=multiprocessing.get_context("spawn"))
            futures = [pool.submit(_tiny_fit, s, X, y) for s in others]
        except OSError:                  # no processes here: compile one after the other
            pool = None
    try:
        _tiny_fit("owlqn", X, y, n_jobs).predict(X_test)
        for f in futures or ():
            try:
                f.result()
            except Exception:            # the demo row compiles it then, and says so
                pass
    finally:
        if pool is not None:
            pool.shutdown()
    if pool is None:
        for s in others:
            _tiny_fit(s, X, y)


def format_table(results):
    """The comparison table as text."""
    head = ("solver", "time (s)", "iters", "objective", "active", "test acc", "relevant", "irrelevant")
    rows = [(r.name, f"{r.seconds:.2f}", str(r.n_iter), f"{r.objective:.2f}", str(r.active),
             f"{100 * r.accuracy:.2f}%", f"{r.relevant_found}/{r.n_relevant}",
             f"{r.irrelevant_kept}/{r.n_irrelevant}") for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)
