"""The model protocol: how solvers and penalties see a model.

A *model* is data + a parameter layout + a smooth loss ``L(w)`` (a negative
log-likelihood summed over samples). It knows nothing about penalties or solvers.
Solvers reach it only through the attributes and methods below, and declare which
*capabilities* they need; :func:`require` refuses a model that lacks one with a
:class:`~spargel.errors.CapabilityError` naming the solver, the model and what is
missing.

Every model has

``n_params``
    the length of the flat float64 weight vector;
``layout``
    a :class:`ParameterLayout`: the groups of weights (the natural blocks: a CRF
    attribute's label weights, an MRF edge's state table) and the per-weight penalty
    scale (0 leaves a weight unpenalised, e.g. an intercept);
``n_samples``
    the number of samples the loss sums over;
``loss(w)``
    the loss at ``w``.

and may have

``approximate_loss``
    True when the loss comes from approximate inference that is not a function of
    ``w`` alone (loopy BP warm-started from the previous evaluation's messages): the
    line searches then stop backtracking once the objective's noise hides the
    decrease a step can make (see :func:`spargel.solvers.owlqn.orthant_line_search`).
    Absent means False.
``convex_loss``
    True when ``loss`` is convex in ``w`` (a log-linear negative log-likelihood): the
    line searches then refuse a trial point whose objective lies below the tangent
    plane at the current point by more than rounding -- impossible for a convex
    function, so the sign of a fault (an overflow that a kernel missed), never a step
    to take. Absent means False.

Capabilities (a model offers one by defining the method; ``capabilities(model)``
lists them):

``"loss_grad"`` -- ``loss_grad(w) -> (loss, gradient)``
    the batch loss and its gradient (a new array). L-BFGS, OWL-QN, FISTA, Grafting.
``"sgd"`` -- ``sgd_pass(order, v, aux, l1w, m, st, prm) -> status`` and ``sample_loss(order, w)``
    one pass of lazily penalised SGD over the samples ``order``: ``v`` the scaled
    weights and ``aux`` their penalty records, ``l1w`` the per-weight l1 scales and
    ``m`` the l2 mask (both empty when uniform / absent), ``st`` the pass state (an
    array of counters, its slots named in :mod:`spargel.core.lazy_l1`) and ``prm`` its
    parameters (a ``lazy_l1.SGDParams``; see :mod:`spargel.solvers.sgd` and
    :mod:`spargel.core.lazy_l1`; models build their pass from the
    shared compiled bookkeeping of :mod:`spargel.core.lazy_l1`; the chain CRFs' pass,
    both orders, is :func:`spargel.chain.sgd_kernels.run_pass`). Returns 0, or 1 when
    a loss became non-finite. ``sample_loss`` sums the samples' losses at ``w``.
``"blocks"`` -- block coordinate descent primitives
    ``block_layout() -> (ptr, index)`` (the coordinates of each block),
    ``block_begin(w)`` (start from weights ``w``; the model keeps caches),
    ``block_grad_hess(b) -> (g, h)`` (loss gradient and diagonal curvature of block
    ``b``'s coordinates at the current weights), ``block_change(b, dw) -> delta`` (the
    exact change of the loss if block ``b`` moved by ``dw``; the trial is kept),
    ``block_commit()`` / ``block_discard()`` (accept or drop the last trial),
    ``block_weights() -> w`` (the current weights). BCD, CD and Gauss-Seidel.
``"block_sweep"`` -- ``block_sweep(order, l1, l2, damping, skip_until, zero_streak, opts, stats)``
    a compiled sweep over the blocks ``order`` with the same update rule as the
    generic solver loop (a fused fast path; a test proves both equal): ``l1`` / ``l2``
    the coordinates' penalty weights, ``damping`` / ``skip_until`` / ``zero_streak``
    per block the step damping, the sweep it is skipped until and its run of zero
    steps (updated in place), ``opts`` the solver's options (a
    ``coordinate_descent.SweepOptions``, a named tuple of floats) and ``stats`` its
    counters (both as :mod:`spargel.solvers.coordinate_descent` builds them).
``"bound"`` -- ``bound(w, **options) -> QuadraticBound``
    a quadratic upper bound on the loss, tight at ``w`` (loss, gradient and a
    curvature object, see :mod:`spargel.core.bound`). Bound majorisation.
``"grafting"`` -- ``loss_grad_subset(w, index) -> (loss, g)`` and ``candidate_grad(index) -> g``
    the loss at ``w`` and the loss gradient of the weights ``index`` only (the model
    may skip the work for the others), and the gradient of other weights at the point
    of the last ``loss_grad_subset`` call, reusing its inference. Grafting,
    Grafting-Light and Gauss-Seidel (:mod:`spargel.solvers.grafting`) use it when
    offered: the OWL-QN steps need only the working set's gradient, the selection the
    candidates'. A pairwise MRF runs inference on its active graph and estimates the
    candidates' pair marginals from it; the log-linear model multiplies only the
    columns it needs.
``"map"`` -- ``map_pass(order, w, ws, cov, st, prm)`` and ``map_sample(i, w)``
    MAP decoding for the online trainers (averaged perceptron, passive-aggressive,
    AROW: :mod:`spargel.solvers.online_margin`). ``map_sample`` decodes sample ``i``
    at ``w`` and returns ``(idx, delta, d, n_parts)``: ``delta = F(x_i, y_i) -
    F(x_i, y_map)``, the difference of the gold and the decoded structure's feature
    counts on the distinct weights ``idx`` (unweighted), ``d`` the number of parts
    (tokens; 1 for a flat sample) whose label differs, ``n_parts`` their number (None
    for a sample that cannot be decoded against a gold structure, e.g. partially
    labelled). ``map_pass`` is the compiled loop: for each sample of ``order`` the
    same decoding with the current ``w``, then the update rule
    ``prm`` of :mod:`spargel.core.online_rules` on ``w`` (the lazy average sum ``ws``,
    AROW's variances ``cov``, the counters ``st``) in place. The first- and
    second-order CRFs decode by Viterbi, the log-linear model by the arg max class.

Nothing here is CRF-shaped: the tests run every solver on a small hand-written model.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import CapabilityError

CAPABILITIES = {
    "loss_grad": ("loss_grad",),
    "sgd": ("sgd_pass", "sample_loss"),
    "blocks": ("block_layout", "block_begin", "block_grad_hess", "block_change", "block_commit",
               "block_discard", "block_weights"),
    "block_sweep": ("block_sweep",),
    "bound": ("bound",),
    "grafting": ("loss_grad_subset", "candidate_grad"),
    "map": ("map_pass", "map_sample"),
}


@dataclass
class ParameterLayout:
    """Groups of weights and their penalty scales.

    ``group_ptr`` (n_groups + 1): group ``g`` is the contiguous range
    ``group_ptr[g]:group_ptr[g+1]``; the ranges cover ``0 .. n_params`` in order.
    ``penalty_scale``: ``None`` (every weight penalised alike) or a float array of
    length ``n_params`` multiplying the penalty of each weight (0: unpenalised).
    ``group_names``: optional names (for messages and plots).
    """

    n_params: int
    group_ptr: np.ndarray
    penalty_scale: np.ndarray | None = None
    group_names: list | None = None

    def __post_init__(self):
        self.n_params = int(self.n_params)
        ptr = np.asarray(self.group_ptr, dtype=np.int64)
        if ptr.ndim != 1 or len(ptr) < 1 or ptr[0] != 0 or ptr[-1] != self.n_params or np.any(np.diff(ptr) < 0):
            raise ValueError("group_ptr must rise from 0 to n_params")
        self.group_ptr = ptr
        if self.penalty_scale is not None:
            s = np.asarray(self.penalty_scale, dtype=np.float64)
            if s.shape != (self.n_params,) or not np.all(np.isfinite(s)) or np.any(s < 0):
                raise ValueError("penalty_scale must be n_params finite values >= 0")
            self.penalty_scale = None if np.all(s == 1.0) else s

    @classmethod
    def ungrouped(cls, n_params, penalty_scale=None):
        """Every weight its own group."""
        return cls(n_params, np.arange(n_params + 1, dtype=np.int64), penalty_scale)

    @property
    def n_groups(self):
        return len(self.group_ptr) - 1

    @property
    def group_sizes(self):
        return np.diff(self.group_ptr)

    def group_of(self):
        """The group id of every weight."""
        return np.repeat(np.arange(self.n_groups, dtype=np.int64), self.group_sizes)


def approximate_loss(model):
    """Whether the model's loss is approximate and noisy (see ``approximate_loss`` above)."""
    return bool(getattr(model, "approximate_loss", False))


def convex_loss(model):
    """Whether the model's loss is convex in its weights (see ``convex_loss`` above)."""
    return bool(getattr(model, "convex_loss", False))


def capabilities(model):
    """The names of the capabilities ``model`` offers."""
    return sorted(name for name, methods in CAPABILITIES.items()
                  if all(callable(getattr(model, m, None)) for m in methods))


def require(model, solver_name, *needs):
    """Raise :class:`CapabilityError` unless ``model`` offers every capability in ``needs``."""
    missing = []
    for need in needs:
        methods = CAPABILITIES.get(need, (need,))
        absent = [m for m in methods if not callable(getattr(model, m, None))]
        if absent:
            missing.append(f"{need!r} ({', '.join(m + '()' for m in absent)})")
    for attr in ("n_params", "layout"):
        if not hasattr(model, attr):
            missing.append(f"the attribute {attr!r}")
    if missing:
        raise CapabilityError(f"solver {solver_name!r} needs a model with {'; '.join(missing)}; "
                              f"{type(model).__name__} does not offer it (it offers: "
                              f"{', '.join(capabilities(model)) or 'nothing'})")
