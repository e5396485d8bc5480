"""Bounds on what a request may cost, checked before the memory is allocated.

A model file, a command-line option or an input file can ask for far more memory than
the machine has (a model declaring 10^12 weights, ``--nbest 1000000000``). The checks
here turn such a request into a clear error up front instead of a process killed by the
operating system half-way through.

>>> check_nbest(10**9, n_labels=3, lengths=[1])      # 1 token, 3 labels: 3 paths exist
3
"""

from __future__ import annotations

import math
import os

from ..errors import ModelFileError

__all__ = ["available_memory", "check_label_pairs", "check_nbest", "label_pair_bytes", "nbest_bytes",
           "distinct_paths", "gradient_buffers", "gradient_chunks", "training_bytes", "weight_copies"]

#: 8-byte tables of one entry per label pair that reading a model and decoding with it
#: hold at once: the transition weights and the weight index of each pair, the
#: transition structure's scores, sources and build scratch, its exponentials, their
#: transpose and refresh scratch where the step is dense (constraints, many weighted
#: pairs), a position's scores (Viterbi) and the corrections' scratch
LABEL_PAIR_TABLES = 10


def available_memory() -> int:
    """Bytes of memory this process may still use: the kernel's ``MemAvailable`` (or the
    physical memory when that is unknown), lowered by an address-space limit
    (``ulimit -v``) when one is set."""
    avail = None
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 1 << 34  # 16 GiB: a guess when the system does not say
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            avail = min(avail, soft)
    except (ImportError, ValueError, OSError):
        pass
    return int(avail)


def label_pair_bytes(n_labels: int) -> int:
    """Bytes of the label x label tables a chain model of ``n_labels`` labels needs.

    >>> label_pair_bytes(40000) / 2**30 > 30
    True
    """
    return int(n_labels) ** 2 * 8 * LABEL_PAIR_TABLES


#: the largest weight magnitude a model file may hold: sums of such weights over a
#: token's attributes and a sequence stay far from overflow, while weights near 1e308
#: overflow the scores and give all-zero or NaN marginals
MAX_ABS_WEIGHT = 1e100


def check_weight_range(weights, path, what="a weight"):
    """Refuse a model file whose weights are not finite or exceed :data:`MAX_ABS_WEIGHT`
    in magnitude (a ``ModelFileError`` naming ``path``): inference on such weights
    overflows and its results mean nothing.

    >>> check_weight_range([1.0, -2e100], "m.model")
    Traceback (most recent call last):
    ...
    spargel.errors.ModelFileError: m.model: invalid model (a weight, -2e+100, is beyond +-1e+100: inference would overflow)
    """
    import numpy as np

    w = np.asarray(weights)
    bad = np.flatnonzero(~(np.abs(w) <= MAX_ABS_WEIGHT))
    if bad.size:
        raise ModelFileError(f"{path}: invalid model ({what}, {w[bad[0]]:.6g}, is beyond "
                             f"+-{MAX_ABS_WEIGHT:.0e}: inference would overflow)")


#: label x label float64 tables that a first-order training evaluation holds at once:
#: the transition structure (scores, sources, exponentials and their refresh scratch
#: where the step is dense), the weight index of each pair, the expected counts and
#: their scratch, the log-space scratch, an SGD step's own dense structure; plus
#: :data:`CHUNK_PAIR_TABLES` per chunk of the batch gradient (its correction scratch)
TRAINING_PAIR_TABLES, CHUNK_PAIR_TABLES = 12, 2
#: bytes per token-attribute entry of the encoded data and its per-token lists
#: (attribute ids, the padded view's row lists), and per token (offsets, labels)
ENTRY_BYTES, TOKEN_BYTES = 12, 40
#: what the interpreter, numpy, numba and the compiled kernels take before any data
BASE_BYTES = 400 * 2 ** 20
#: the batch gradient's fixed chunks and their buffers' budget (chain/crf.py)
FIXED_CHUNKS, CHUNK_BUFFER_BUDGET = 4, 256 * 2 ** 20


def gradient_chunks(n_features: int, n_jobs: int = 1) -> int:
    """How many chunks (each with a weight-sized gradient buffer) the batch gradient of a
    chain CRF with ``n_features`` weights uses on ``n_jobs`` threads: at least 4 (so
    that 1 to 4 threads give the same rounding) while four buffers fit in 256 MiB, else
    one per thread.

    >>> gradient_chunks(1_000_000), gradient_chunks(100_000_000), gradient_chunks(100_000_000, 2)
    (4, 1, 2)
    """
    fixed = FIXED_CHUNKS if FIXED_CHUNKS * int(n_features) * 8 <= CHUNK_BUFFER_BUDGET else 1
    return max(int(n_jobs), fixed)


def gradient_buffers(n_features: int, n_jobs: int = 1) -> int:
    """How many weight-sized gradient buffers the chunks of :func:`gradient_chunks` hold:
    one each on threads; on one thread the chunks run one after the other, and those
    after the first share one buffer (each is added into the first as it ends).

    >>> gradient_buffers(1_000_000), gradient_buffers(1_000_000, 2), gradient_buffers(100_000_000)
    (2, 4, 1)
    """
    k = gradient_chunks(n_features, n_jobs)
    return k if int(n_jobs) != 1 else min(k, 2)


def weight_copies(solver: str, memory: int = 6, l1: bool = True, n_chunks: int = 1) -> int:
    """How many weight-sized float64 vectors a first-order CRF's training holds at its
    peak (:func:`training_bytes`), with the model's padded rows the weights' own (every
    attribute with every label, ``|Y|`` a multiple of 4; else add the padded rows and
    one per chunk of their gradient):

    * ``"owlqn"`` / ``"lbfgs"``: the ``2 * memory`` curvature vectors, the weights, the
      trial point, the direction, the gradient and the trial point's gradient (5), the
      pseudo-gradient with an l1 term (OWL-QN), the empirical counts, and one more
      gradient buffer per extra buffer of the batch gradient's chunks (``n_chunks``:
      :func:`gradient_buffers`);
    * ``"sgd-l1"``: the weights and their penalty records (2) and, while the learning
      rate is calibrated, one trial pair (2).

    >>> weight_copies("owlqn", memory=6), weight_copies("lbfgs", memory=3, l1=False), weight_copies("sgd-l1")
    (19, 12, 4)
    """
    from .solver_table import solver as solver_record     # (training only: labelling loads no solver table)

    record = solver_record(solver)
    if record.memory_formula == "curvature":
        # the pseudo-gradient: only a solver that takes an l1 term keeps one
        pseudo = 1 if l1 and not record.refuses_l1 else 0
        return 2 * int(memory) + 5 + pseudo + 1 + (int(n_chunks) - 1)
    if record.memory_formula == "sgd":
        return 4
    raise ValueError(f"no memory formula for solver {solver!r}")


def training_bytes(n_labels: int, n_attributes: int, n_features: int, n_tokens: int, solver: str = "owlqn",
                   memory: int = 6, l1: bool = True, n_jobs: int = 1, entries_per_token: float = 20.0) -> int:
    """Estimated peak resident bytes of training a first-order CRF (no bigram
    attributes) with ``n_labels`` labels L, ``n_attributes`` unigram attributes A,
    ``n_features`` weights F and ``n_tokens`` tokens T on ``n_jobs`` threads::

        8 F c + 4 F_u + 8 (12 + 2 k) L^2 + T (12 e + 40) + 8 A + base

    ``c`` = :func:`weight_copies` (the solver's and the model's weight-sized vectors),
    ``k`` the gradient's chunks (:func:`gradient_chunks`), ``F_u`` the unigram weights
    (their int32 labels: ``A L`` at most), the label-pair tables
    (:data:`TRAINING_PAIR_TABLES`), ``e`` the attribute entries per token, ``base``
    the interpreter and compiled kernels. Checked against measured peaks in
    ``docs/benchmarks.md`` ("Thousands of labels").

    >>> round(training_bytes(1524, 78517, 119665212, 11934, "sgd-l1") / 2**30, 1)
    4.6
    """
    from .solver_table import solver as solver_record

    curvature = solver_record(solver).memory_formula == "curvature"
    k = gradient_chunks(n_features, n_jobs) if curvature else 1
    c = weight_copies(solver, memory, l1, gradient_buffers(n_features, n_jobs) if curvature else 1)
    F = int(n_features)
    L = int(n_labels)
    pairs = TRAINING_PAIR_TABLES + CHUNK_PAIR_TABLES * k
    return int(8 * F * c + 4 * min(F, int(n_attributes) * L) + 8 * pairs * L * L
               + int(n_tokens) * (ENTRY_BYTES * entries_per_token + TOKEN_BYTES) + 8 * int(n_attributes)
               + BASE_BYTES)


def check_label_pairs(n_labels: int, name: str, memory_limit=None) -> None:
    """Refuse (``ModelFileError`` naming ``name``) a model whose labels imply label-pair
    tables larger than the memory available, before any of them is allocated."""
    need = label_pair_bytes(n_labels)
    have = available_memory() if memory_limit is None else int(memory_limit)
    if need > have:
        raise ModelFileError(f"{name}: {n_labels} labels need {need / 2**30:.1f} GiB for the tables of "
                             f"label pairs; only {have / 2**30:.1f} GiB of memory is available")


def distinct_paths(n_labels: int, length: int, cap: int) -> int:
    """``min(n_labels ** length, cap)`` without computing a huge power.

    >>> distinct_paths(45, 30, 10**9), distinct_paths(3, 2, 100)
    (1000000000, 9)
    """
    n_labels, length, cap = int(n_labels), int(length), int(cap)
    if n_labels <= 1 or length <= 0:
        return min(1, cap)
    if length * math.log(n_labels) >= math.log(cap) + 1e-9:
        return cap
    return min(n_labels ** length, cap)


def nbest_bytes(k: int, n_labels: int, lengths) -> int:
    """Estimated peak bytes of a list-Viterbi decoding of the ``k`` best paths of every
    sequence: the per-position tables of the longest sequence (a score and two
    back-pointers per label and rank) plus the paths that are returned (ids and the
    label strings that name them)."""
    lengths = [int(n) for n in lengths]
    L = max(int(n_labels), 1)
    longest = max(lengths, default=0)
    k_longest = distinct_paths(L, longest, k)
    tables = k_longest * longest * L * 16 + k_longest * L * 8
    kept = sum(distinct_paths(L, n, k) * (n * 12 + 200) for n in lengths)
    return tables + kept


def check_nbest(k, n_labels, lengths, memory_limit=None) -> int:
    """The number of paths worth asking for, or a ``ValueError`` when it cannot fit.

    ``k`` is lowered to the largest number of distinct label sequences that any of the
    sequences (of the given ``lengths``) has, ``n_labels ** length``: asking for more
    only allocates rows that stay empty. The estimated memory (:func:`nbest_bytes`) must
    then fit in ``memory_limit`` bytes (default: half of :func:`available_memory`).

    >>> check_nbest(5, n_labels=2, lengths=[2, 1])      # 2 tokens, 2 labels: 4 paths
    4
    >>> check_nbest(10**6, n_labels=40, lengths=[30], memory_limit=10**9)
    Traceback (most recent call last):
    ...
    ValueError: --nbest 1000000 needs about 20.1 GB for these sequences (longest 30 tokens, 40 labels), more than the 1.0 GB available; ask for fewer paths
    """
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise ValueError(f"--nbest must be an integer, got {k!r}") from None
    if k < 1:
        raise ValueError(f"--nbest must be >= 1, got {k}")
    lengths = [int(n) for n in lengths]
    longest = max(lengths, default=0)
    k_eff = max((distinct_paths(n_labels, n, k) for n in lengths), default=1)
    need = nbest_bytes(k_eff, n_labels, lengths)
    limit = available_memory() // 2 if memory_limit is None else int(memory_limit)
    if need > limit:
        raise ValueError(f"--nbest {k} needs about {need / 1e9:.1f} GB for these sequences (longest "
                         f"{longest} tokens, {n_labels} labels), more than the {limit / 1e9:.1f} GB "
                         f"available; ask for fewer paths")
    return k_eff
