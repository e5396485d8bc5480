"""The first-order linear-chain CRF as a *model* of the protocol
(:mod:`spargel.core.protocol`): data + parameter layout + the negative
log-likelihood and its gradient, plus decoding. It knows nothing about penalties or
solvers.

>>> model = ChainCRF(space, data, n_jobs=2)            # doctest: +SKIP
>>> loss, grad = model.loss_grad(w)                     # doctest: +SKIP
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.vec import add_and_clear, dot
from . import inference as C
from . import batch_kernels as B
from . import crf_kernels as K
from .kernel_data import Aux, BigramList, data_tuple
from ..core.protocol import ParameterLayout
from ..core.ranges import concat_ranges, owners
from ..core.sizes import Sized, plain_pages, return_free_memory, spare_buffer
from ..core.threads import balanced_chunks, resolve_n_jobs
from .crf_map import MapCapability
from ..data.dataset import compact_values, id_counts, is_unit
from .constraints import violations

INFERENCE_MODES = ("auto", "dense", "sparse")
# the batch gradient is always split into at least this many fixed chunks (summed in a
# fixed order), so that n_jobs = 1 .. 4 give bit-identical gradients and models ...
FIXED_CHUNKS = 4
# ... unless the per-chunk gradient buffers would take more memory than this
CHUNK_BUFFER_BUDGET = 256 * 2 ** 20
# unigram attributes that carry at least this fraction of the labels get a padded row
# (fixed-length SIMD adds); the others keep their short label lists
DENSE_FRACTION = 0.25
# memory for the stored position matrices of bigram attributes with many non-zero weights
MATRIX_BUDGET = 64 * 2 ** 20
# tokens whose per-token lists token_lists builds at a time
TOKEN_CHUNK = 1 << 16
#: padded views at least this large give the freed heap memory back once built
TRIM_ENTRIES = 1 << 24
#: without bigram attributes, a chain whose transition weights cover at most this
#: fraction of the label pairs takes the sparse step (a ONES structure listing the
#: weighted pairs: O(|Y| + pairs) per token for the forward and backward recursions and
#: the expected counts, instead of the dense |Y|^2 product and outer product)
SPARSE_TRANSITIONS = 0.25
#: the SGD pass takes the sparse step from this many labels on (with the conditions of
#: :data:`SPARSE_TRANSITIONS`): below, a dense step is a few thousand vectorised
#: multiply-adds a token, small next to the emissions, and small models' passes keep
#: their arithmetic
SGD_SPARSE_LABELS = 64


def crf_layout(space, penalty_scale=None):
    """Groups: one per unigram attribute, one per bigram attribute, the transitions."""
    ptr = np.concatenate([space.u_ptr, space.b_base + space.b_ptr[1:], [space.n_params]]).astype(np.int64)
    return ParameterLayout(space.n_params, ptr, penalty_scale)


def token_lists(space, data, drow, binary):
    """Per token, its dense rows and the weights of its sparse attributes: (dptr, drows,
    dval, eptr, ek, evals, el). Token t's unigram attributes with a dense row
    (``drow[a] >= 0``) give ``drows[dptr[t]:dptr[t+1]]`` (values in ``dval``); every
    other attribute gives its weight indices ``ek[eptr[t]:eptr[t+1]]`` (labels ``el``,
    values ``evals``); ``dval`` / ``evals`` are empty for binary data. Built a chunk of
    tokens at a time into arrays of their final size (no temporary the size of the data);
    offsets, dense rows and labels in the smallest integer type that holds them (int32,
    uint16 and uint8 in practice: 3 instead of 8 bytes a list entry)."""
    n_tok = data.n_tokens
    ptr, ids = data.uni_ptr, data.uni_ids
    u_ptr = space.u_ptr
    sizes = np.diff(u_ptr)
    chunks = [(t0, min(n_tok, t0 + TOKEN_CHUNK)) for t0 in range(0, n_tok, TOKEN_CHUNK)]
    dcount = np.zeros(n_tok, dtype=np.int64)
    ecount = np.zeros(n_tok, dtype=np.int64)
    for t0, t1 in chunks:
        a = ids[ptr[t0]:ptr[t1]]
        dense = drow[a] >= 0
        tok = np.repeat(np.arange(t1 - t0, dtype=np.int64), np.diff(ptr[t0:t1 + 1]))
        dcount[t0:t1] = np.bincount(tok[dense], minlength=t1 - t0)
        ecount[t0:t1] = np.bincount(tok[~dense], weights=sizes[a[~dense]], minlength=t1 - t0).astype(np.int64)
    dptr = np.zeros(n_tok + 1, dtype=np.int32 if dcount.sum() < 2 ** 31 else np.int64)
    np.cumsum(dcount, out=dptr[1:])
    eptr = np.zeros(n_tok + 1, dtype=np.int32 if ecount.sum() < 2 ** 31 else np.int64)
    np.cumsum(ecount, out=eptr[1:])
    del dcount, ecount
    drows = np.empty(dptr[-1], dtype=np.uint16 if int(drow.max(initial=-1)) < 2 ** 16 else np.int32)
    ek = np.empty(eptr[-1], dtype=np.int32 if space.n_unigram < 2 ** 31 else np.int64)
    el = np.empty(eptr[-1], dtype=label_dtype(space.n_labels))
    if binary:
        dval = evals = np.empty(0)
    else:
        dval, evals = np.empty(dptr[-1]), np.empty(eptr[-1])
    for t0, t1 in chunks:
        a = ids[ptr[t0]:ptr[t1]]
        rows = drow[a]
        dense = rows >= 0
        sparse = ~dense
        drows[dptr[t0]:dptr[t1]] = rows[dense]
        sa = a[sparse]
        lo, hi = u_ptr[sa], u_ptr[sa + 1]
        k = concat_ranges(lo, hi)
        ek[eptr[t0]:eptr[t1]] = k
        el[eptr[t0]:eptr[t1]] = space.u_lab[k]
        if not binary:
            vals = data.uni_vals[ptr[t0]:ptr[t1]].astype(np.float64)
            dval[dptr[t0]:dptr[t1]] = vals[dense]
            evals[eptr[t0]:eptr[t1]] = np.repeat(vals[sparse], hi - lo)
    return dptr, drows, dval, eptr, ek, evals, el


def full_rows(space, L, Lp):
    """Whether every unigram attribute owns all L labels in label order (the "full"
    layout, ``all_possible_states``) and rows need no padding (``L == Lp``): then the
    weights of the attributes, read as an A x L array, are the padded rows themselves,
    and the kernels read and write them in place (no copy of the weights nor of the
    gradient per chunk)."""
    n = len(space.u_ptr) - 1
    if L != Lp or L < 2 or len(space.u_lab) != n * L:
        return False
    if not np.array_equal(space.u_ptr, np.arange(n + 1, dtype=np.int64) * L):
        return False
    labels = np.arange(L, dtype=space.u_lab.dtype)
    step = max(1, (1 << 22) // L)             # rows compared at a time (no weight-sized temporary)
    for a in range(0, n, step):
        if not (space.u_lab[a * L:min(n, a + step) * L].reshape(-1, L) == labels).all():
            return False
    return True


def label_dtype(n_labels):
    """The smallest integer type of the padded view's per-entry labels (``el``): one byte
    for up to 256 labels (a quarter of the memory of int32 labels, as large as the
    attribute index lists themselves on big data sets)."""
    return np.uint8 if n_labels <= 256 else np.int32


class CRFView:
    """A feature space and a data set prepared for the kernels: the layout and data
    tuples and the padded view of the unigram features (``aux``). Shared by training and
    prediction; :meth:`refresh` loads a weight vector into the padded rows and builds
    the transition structure and bigram lists for it."""

    compacts_bigrams = True     # its kernels read the compacted bigram list (self.bl)

    def __init__(self, space, data, inference="auto", constraints=None):
        if inference not in INFERENCE_MODES:
            raise ValueError(f"inference must be one of {INFERENCE_MODES}, got {inference!r}")
        self.space, self.data, self.inference = space, data, inference
        # a LabelConstraints (chain/constraints.py): its forbidden transitions, starts
        # and ends are folded into every transition structure (refresh); None: none
        self.constraints = constraints
        # in how many steps the allowed pairs connect the labels (once: refresh is per weight vector)
        self.reach = None if constraints is None else C.reach(constraints.allowed)
        self.space_t = space.as_tuple()
        self.data_t = data_tuple(data)
        self.flags = K.order_flags(space)       # the order, as the batch kernels take it
        L = space.n_labels
        self.L, self.Lp = L, C.padded(L)
        sizes = np.diff(space.u_ptr)
        # every attribute with every label, in label order, |Y| a multiple of LANES: the
        # padded rows are the weight vector's own rows (views, refresh), not copies
        self.rows_in_w = full_rows(space, L, self.Lp)
        if self.rows_in_w:
            self.d_attr = np.arange(len(sizes), dtype=np.int64)
        else:
            counts = id_counts(data.uni_ids, len(sizes))
            dense = np.flatnonzero(sizes >= max(2, int(np.ceil(DENSE_FRACTION * L))))
            self.d_attr = dense[np.argsort(-counts[dense], kind="stable")].astype(np.int64)
        drow = np.full(len(sizes), -1, dtype=np.int32)
        drow[self.d_attr] = np.arange(len(self.d_attr), dtype=np.int32)
        binary = is_unit(compact_values(data.uni_vals))
        dptr, drows, dval, eptr, ek, evals, el = token_lists(space, data, drow, binary)
        # (with rows_in_w: the weights' own rows, set by refresh)
        self.Wd = np.zeros((0 if self.rows_in_w else len(self.d_attr), self.Lp))
        self.dnz = np.zeros(len(self.d_attr), dtype=np.uint8)
        self.aux = Aux(self.Lp, binary, dptr, drows, dval, eptr, ek, evals, self.Wd, self.dnz, el)
        if len(ek) > TRIM_ENTRIES:
            return_free_memory()                # the chunks' temporaries (see the function)
        self.has_bigrams = len(data.big_ids) > 0 and space.n_bigram > 0
        self.dense = inference == "dense"
        # the bigram list of the current weights (crf_kernels.compact_bigrams), refreshed
        # in place like the dense rows (empty for a view whose kernels do not read it)
        listed = self.has_bigrams and self.compacts_bigrams
        nb = len(space.b_pair) if listed else 0
        n_ba = len(space.b_ptr) - 1 if listed else 0
        self.bl = BigramList(np.zeros(n_ba + 1, dtype=np.int64), np.zeros(nb, dtype=self.space_t.b_pair.dtype), 0,
                             np.zeros(nb), np.zeros(nb, dtype=np.int32), np.zeros(nb, dtype=np.int32), np.zeros(nb),
                             np.full(n_ba, -1, dtype=np.int64))
        self.has_transitions = len(space.t_pair) > 0
        self._matrix_slots(space, data)

    def _matrix_slots(self, space, data):
        """Stored position matrices (``chain.MAT``) for the bigram attributes that can have
        many non-zero weights, most frequent first, within MATRIX_BUDGET bytes."""
        n_ba = len(self.bl.amat)
        self.slot = np.full(n_ba, -1, dtype=np.int64)
        n = 0
        if n_ba:
            L, Lp = self.L, self.Lp
            sizes = np.diff(space.b_ptr)
            counts = np.bincount(data.big_ids, minlength=n_ba)[:n_ba]
            can = np.flatnonzero((sizes * K.MAT_SHARE >= L * Lp) & (counts > 0))
            can = can[np.argsort(-counts[can], kind="stable")][:MATRIX_BUDGET // (3 * Lp * Lp * 8)]
            self.slot[can] = np.arange(len(can))
            n = len(can)
        Lp = self.Lp if n else 1
        self.mats, self.matsT = np.zeros((n, Lp, Lp)), np.zeros((n, Lp, Lp))
        self.mscores = np.zeros((n, self.L ** 2 + 2 if n else 1))

    def refresh(self, w):
        """Load weights w into the padded rows; returns the transition structure."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        s = self.space
        self.load_rows(w)
        L = self.L
        t_pair = s.t_pair.astype(np.int64)
        # With bigram attributes most positions carry corrections, whose cost a ONES base
        # keeps at O(|Y| + nnz) instead of |Y|^2: take it up to a quarter non-zero. Without
        # them the backward pass accumulates |Y|^2 transition expectations per position
        # anyway, and the dense step (a vectorised loop) is faster whatever the sparsity.
        ones = 0.25 if self.has_bigrams and not self.dense else 0.0
        lc = self.constraints
        if self.sparse_step(w):
            # every weighted pair listed (zero weights too): their whole expected counts
            # are gathered per pair (inference.backward), no |Y|^2 outer product
            return C.make_transitions(L, t_pair // L, t_pair % L, w[s.t_base:], kind=C.ONES, keep_zeros=True)
        trans = C.make_transitions(L, t_pair // L, t_pair % L, w[s.t_base:], kind=None if ones else C.DENSE,
                                   ones_fraction=ones, allowed=None if lc is None else lc.allowed,
                                   start=None if lc is None else lc.start, end=None if lc is None else lc.end,
                                   steps=self.reach)
        if self.has_bigrams:
            K.compact_bigrams(w, self.space_t, trans, self.dense, self.bl, self.slot, self.mats, self.matsT,
                              self.mscores)
            if len(self.mats):
                trans = C.with_matrices(trans, self.mats, self.matsT, self.mscores)
        return trans

    def load_rows(self, w):
        """Load the weights w (contiguous float64) into the padded rows: a view of w's own
        rows (``rows_in_w``, which the view then holds) or a copy."""
        if self.rows_in_w:
            self.Wd = self.dense_rows(w)
            K.row_flags(self.Wd, self.dnz)
            self.aux = self.aux._replace(Wd=self.Wd)
        else:
            K.refresh_weights(w, self.space_t, self.d_attr, self.Wd, self.dnz)

    def dense_rows(self, v):
        """The padded rows of a weight-sized vector ``v`` when they are its own rows
        (``rows_in_w``): the view ``v[:A * |Y|]`` as A x |Y|."""
        n = len(self.d_attr)
        return v[:n * self.Lp].reshape(n, self.Lp)

    def sparse_step(self, w):
        """Whether the transition structure at weights w is the sparse one
        (:data:`SPARSE_TRANSITIONS`): no bigram attributes, no constraints, not
        ``inference="dense"``, few weighted pairs, and no transition weight so negative
        that ``1 + expm1`` would cancel (``inference.CANCEL_LIMIT``)."""
        if self.has_bigrams or self.constraints is not None or self.dense:
            return False
        s = self.space
        if len(s.t_pair) > SPARSE_TRANSITIONS * self.L * self.L:
            return False
        tw = w[s.t_base:]
        return not (len(tw) and float(tw.min()) < -C.CANCEL_LIMIT)

    def buffers(self, order):
        """Scratch for the sequences ``order``, large enough for any weights."""
        maxlen = K.max_length(self.data.seq_ptr, order)
        n_corr = 0
        if self.has_bigrams:
            sizes = np.diff(self.space.b_ptr).astype(np.int64)
            n_corr = K.correction_capacity(self.space_t, self.data_t, sizes, order)
        return K.work_buffers(self.L, self.Lp, maxlen, n_corr, self.has_bigrams)

    def log_buffers(self, order):
        """Scratch of the log-space and decoding kernels for the sequences ``order``."""
        return K.log_buffers(self.L, self.Lp, K.max_length(self.data.seq_ptr, order))

    def kernel_args(self, trans):
        """The leading arguments of the batch and prediction kernels
        (:mod:`spargel.chain.batch_kernels`): the layout, data and padded tuples, the
        transition structure, the bigram list (None without bigram attributes: the
        kernels then compile without corrections) and the order flags."""
        listed = self.has_bigrams and self.compacts_bigrams
        return self.space_t, self.data_t, self.aux, trans, self.bl if listed else None, *self.flags

    def accumulators(self, trans):
        """The transition accumulators ``(outer, glob, pos)`` of :func:`inference.backward`:
        the |Y| x |Y| outer product only for a structure that needs it (not the sparse
        step), the position corrections' counts only where there are corrections (bigram
        attributes)."""
        want = self.has_transitions and not (trans.kind == C.ONES and not self.has_bigrams)
        outer = np.zeros((self.Lp, self.Lp)) if want else np.zeros((1, 1))
        pos = np.zeros(len(trans.fv) if self.has_transitions and self.has_bigrams else 0)
        return outer, np.zeros(len(trans.gi)), pos


class BatchChain(Sized):
    """What the first- and second-order chain CRFs share: the fixed chunks of sequences,
    the per-chunk gradient buffers, the free and the clamped (partially labelled) passes,
    the log-space redo of the sequences whose scaled recursion failed, and the reduction.
    The kernels are those of :mod:`spargel.chain.batch_kernels`, the order a parameter;
    a subclass gives its view (:meth:`_make_view`), whose ``kernel_args`` carry what
    differs per order."""
    convex_loss = True          # a log-linear negative log-likelihood (protocol.convex_loss)

    def __init__(self, space, data, n_jobs=1, inference="auto", penalty_scale=None, sample_weight=None,
                 constraints=None):
        self.constraints = constraints
        if data.labels is None:
            raise ValueError("training data needs labels")
        self.sw = np.zeros(0) if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
        if len(self.sw) and self.sw.shape != (data.n_sequences,):
            raise ValueError(f"sample_weight has {len(self.sw)} entries, the data {data.n_sequences} sequences")
        self.view = self._make_view(space, data, inference)
        self.space, self.data, self.inference = space, data, inference
        self.n_jobs = resolve_n_jobs(n_jobs)
        self.layout = crf_layout(space, penalty_scale)
        self.n_evals = 0
        fixed = FIXED_CHUNKS if FIXED_CHUNKS * space.n_params * 8 <= CHUNK_BUFFER_BUDGET else 1
        bounds = balanced_chunks(data.seq_ptr, max(self.n_jobs, fixed))
        self._orders = [np.arange(bounds[c], bounds[c + 1], dtype=np.int64) for c in range(len(bounds) - 1)]
        tok_seq = owners(data.seq_ptr)
        self.partial = np.zeros(data.n_sequences, dtype=np.uint8)      # 1: a label is unknown
        self.partial[tok_seq[data.labels < 0]] = 1
        self._partial = [o[self.partial[o] == 1] for o in self._orders]
        self._emp_counts = None
        # per-chunk gradient buffers, made on the first gradient (an SGD fit never needs
        # them); chunk 0's is handed out as the gradient itself, and its next one is a
        # gradient handed out before that its caller has let go of (spare_buffer)
        self._gbufs = None
        self._Gdbufs = None
        self._handed = []
        self._shared_clear = False
        self._work = None

    @property
    def chunk_orders(self):
        """Per chunk of the batch gradient, the ids of its sequences (each thread's share)."""
        return self._orders

    @property
    def empirical(self):
        """The empirical feature counts of the fully labelled sequences (weighted)."""
        return self._emp

    @property
    def _emp(self):
        """The empirical feature counts (computed on first use: an SGD fit never needs
        this weight-sized vector)."""
        if self._emp_counts is None:
            emp = plain_pages(self.n_params)
            B.empirical_counts(self.view.space_t, self.view.data_t,
                               np.flatnonzero(self.partial == 0).astype(np.int64), self._sw(), emp, *self.view.flags)
            self._emp_counts = emp
        return self._emp_counts

    @property
    def n_params(self):
        return self.space.n_params

    @property
    def n_samples(self):
        return self.data.n_sequences

    # -- loss and gradient ----------------------------------------------------------
    def _run(self, w, want_grad):
        v = self.view
        trans = v.refresh(w)
        if self._work is None:
            self._work = [v.buffers(o) for o in self._orders]
        bufs = self._work
        n_chunks = len(self._orders)
        accs = [v.accumulators(trans) for _ in range(n_chunks)]
        scratch = [v.accumulators(trans) for _ in range(n_chunks)]
        # per chunk: the free pass over all its sequences, the clamped pass over its
        # partially labelled ones (each flags the sequences that need log space)
        passes = [(self._orders[c], False) for c in range(n_chunks)]
        passes += [(self._partial[c], True) for c in range(n_chunks)]
        failed = [np.zeros(len(o), np.uint8) for o, _ in passes]
        # one chunk after the other: chunks 1.. share one gradient buffer, each added
        # into chunk 0's as it ends (the same sums, in the same order, as separate ones)
        sequential = self.n_jobs == 1 or n_chunks == 1
        if want_grad:
            self._gradient_buffers(shared=sequential)
        tcount = np.zeros(len(trans.fv))
        tcount1 = np.zeros(len(trans.fv))

        def run(c):
            total = 0.0
            for p in (c, c + n_chunks):
                order, clamp = passes[p]
                if len(order):
                    total += self._chunk(w, trans, order, want_grad, c, accs[c], failed[p], bufs[c], clamp,
                                         scratch[c])
            return total

        def finish(c, logz):
            """Chunk c's sequences redone in log space and its transition counts; its
            log partition functions."""
            for p in (c, c + n_chunks):
                order, clamp = passes[p]
                bad = order[failed[p] == 1]
                if len(bad):
                    logz += self._chunk_log(w, trans, bad, want_grad, c, tcount, bufs[c], v.log_buffers(bad),
                                            clamp, tcount1)
            if want_grad:
                C.transition_counts(trans, accs[c], tcount)
            return logz

        def add(c):
            """Chunk c's gradient added into chunk 0's."""
            self._gbufs[0] += self._gbufs[c]
            if not v.rows_in_w:
                self._Gdbufs[0] += self._Gdbufs[c]

        if sequential:
            logz = []
            if want_grad:
                self._shared_clear = False
            for c in range(n_chunks):
                if want_grad and c > 1 and not v.rows_in_w:
                    self._Gdbufs[c].fill(0.0)           # (the rows chunk c - 1 used)
                logz.append(finish(c, run(c)))
                if want_grad and c:
                    # the shared buffer added in and left zero for the next chunk
                    add_and_clear(self._gbufs[c], self._gbufs[0])
                    if not v.rows_in_w:
                        self._Gdbufs[0] += self._Gdbufs[c]
            if want_grad:
                self._shared_clear = True
        else:
            with ThreadPoolExecutor(max_workers=min(self.n_jobs, n_chunks)) as pool:
                logz = list(pool.map(run, range(n_chunks)))
            logz = [finish(c, logz[c]) for c in range(n_chunks)]
            if want_grad:
                for c in range(1, n_chunks):
                    add(c)
        total = sum(logz)
        if not want_grad:
            return total, None
        out = self._gbufs[0]
        Gd = self._Gdbufs[0]
        self._gbufs[0] = None                           # the caller owns the gradient now
        d_attr = v.d_attr[:0] if v.rows_in_w else v.d_attr     # (rows in w: already in place)
        B.finish_gradient(v.space_t, d_attr, Gd, tcount, self._emp, out, *v.flags)
        if v.rows_in_w:
            self._Gdbufs[0] = None                      # (a view of the gradient handed out)
        return total, out

    def _gradient_buffers(self, shared=False):
        """Zeroed gradient buffers, one per chunk (chunk 0's the gradient to hand out, see
        :func:`~spargel.core.sizes.spare_buffer`), and their padded dense rows: views of
        the buffers' own rows when the rows are the weights' (``view.rows_in_w``), else
        arrays of their own. ``shared``: chunks 2.. get chunk 1's buffers (the chunks
        run one after the other, and the caller zeroes them between chunks; the weight-
        sized one is left zero by the last chunk of a complete pass: ``_shared_clear``)."""
        v = self.view
        n = len(self._orders)
        own = min(n, 2) if shared else n
        if self._gbufs is None:
            self._gbufs = [None] * n
            self._Gdbufs = [None if v.rows_in_w or c >= own else np.zeros((len(v.d_attr), v.Lp)) for c in range(n)]
        for c in range(own):
            if self._gbufs[c] is None:
                self._gbufs[c] = plain_pages(self.n_params) if c else spare_buffer(self._handed, self.n_params)
            elif not (shared and c == 1 and self._shared_clear):
                self._gbufs[c].fill(0.0)
            if v.rows_in_w:
                self._Gdbufs[c] = v.dense_rows(self._gbufs[c])
            else:
                self._Gdbufs[c].fill(0.0)
        for c in range(own, n):
            self._gbufs[c], self._Gdbufs[c] = self._gbufs[1], self._Gdbufs[1]

    def _sw(self):
        """The sample weights for the kernels: None when there are none (the kernels
        then compile without the code for other sequence weights than 1)."""
        return self.sw if len(self.sw) else None

    def _grad_args(self, want_grad, c):
        """Chunk c's gradient buffers (g, Gd), or empty ones for a pass without gradient."""
        if want_grad:
            return self._gbufs[c], self._Gdbufs[c]
        return np.zeros(0), np.zeros((0, self.view.Lp))

    def _chunk(self, w, trans, order, want_grad, c, acc, failed, buf, clamp, scratch):
        v = self.view
        return B.chunk_logz_grad(w, *v.kernel_args(trans), order, want_grad, *self._grad_args(want_grad, c), acc,
                                 failed, buf, self._sw(), True if clamp else None, scratch)

    def _chunk_log(self, w, trans, bad, want_grad, c, tcount, buf, lbuf, clamp, tcount1):
        v = self.view
        return B.chunk_logz_grad_log(w, *v.kernel_args(trans), bad, want_grad, *self._grad_args(want_grad, c),
                                     tcount, buf, lbuf, self._sw(), True if clamp else None, tcount1)

    def loss_grad(self, w):
        """(loss, gradient) at w."""
        self.n_evals += 1
        w = np.ascontiguousarray(w, dtype=np.float64)
        logz, g = self._run(w, True)
        return float(logz - dot(w, self._emp)), g

    def loss(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        logz, _ = self._run(w, False)
        return float(logz - dot(w, self._emp))

    def entry_kernels(self, needs):
        """The compiled entry points that a solver needing the capabilities ``needs`` calls
        first (for the first-use note)."""
        if "sgd" in needs:
            return [self._sgd_module().sgd_pass]
        return [B.chunk_logz_grad]

    # -- the "sgd" capability: one pass for both orders (sgd_kernels), the order's structures --
    @staticmethod
    def _sgd_module():
        from . import sgd_kernels       # imported on first use (it compiles on first call)
        return sgd_kernels

    def sgd_pass(self, order, v, aux, l1w, m, st, prm):
        """One compiled pass of lazily penalised SGD over the sequences ``order`` (see
        :mod:`spargel.chain.sgd_kernels`); returns 0, or 1 on divergence."""
        return self._sgd_module().run_pass(self.view, self._sgd_trans(), order, v, aux, l1w, m, st, prm, self.sw,
                                           self.partial)

    def sample_loss(self, order, w):
        """Sum of -log p(y_s | x_s) over the sequences ``order`` at w."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        w = np.ascontiguousarray(w, dtype=np.float64)
        return self._sgd_module().summed_loss(self.view, self._sgd_trans(), order, w, self.sw, self.partial)


class ChainCRF(MapCapability, BatchChain):
    """Negative log-likelihood ``sum_i -log p(y_i | x_i)`` of a linear-chain CRF.

    The batch gradient runs on ``n_jobs`` threads (compiled kernels release the GIL)
    over ``max(n_jobs, 4)`` fixed contiguous chunks of sequences, each with its own
    gradient buffer; the buffers are added in chunk order, so ``n_jobs`` from 1 to 4
    give bit-identical gradients, hence identical models (more threads use as many
    chunks, which changes the rounding; so do models whose four buffers would exceed
    256 MB, which use ``n_jobs`` chunks).

    The empirical feature counts are computed once; the loss is ``sum log Z - w . counts``
    and the gradient ``expected counts - counts``.

    ``sample_weight`` (one per sequence) multiplies each sequence's term, so integer
    weights give the model of the duplicated sequences. Label -1 marks a position whose
    label is unknown: such a sequence's numerator sums over the unknown labels (a
    forward-backward with the known labels clamped), ``-log sum_{y consistent} p(y|x)``.

    ``inference``: ``"auto"`` / ``"sparse"`` (bigram attributes enter the chain through
    their non-zero weights only, and transitions through the exp(λ)-1 trick when few are
    non-zero) or ``"dense"`` (every bigram weight and a dense transition matrix).
    """

    def _make_view(self, space, data, inference):
        return CRFView(space, data, inference, self.constraints)

    # -- the "sgd" capability ---------------------------------------------------------
    def _sgd_trans(self):
        """The pass's transition structure, used as scratch (loaded per step by
        ``crf_sgd.set_transitions``): ONES listing every weighted pair in the order of
        ``t_pair`` where the batch gradient takes the sparse step (no bigram attributes or
        constraints, not ``inference="dense"``, at most :data:`SPARSE_TRANSITIONS` of the
        pairs weighted: O(L + weighted pairs) a token) and there are at least
        :data:`SGD_SPARSE_LABELS` labels, else DENSE."""
        L = self.space.n_labels
        t_pair = self.space.t_pair.astype(np.int64)
        v = self.view
        if (L >= SGD_SPARSE_LABELS and not v.has_bigrams and len(self.data.big_ids) == 0
                and v.constraints is None and not v.dense and len(t_pair)
                and len(t_pair) <= SPARSE_TRANSITIONS * L * L and np.all(np.diff(t_pair) > 0)):
            return C.make_transitions(L, t_pair // L, t_pair % L, np.zeros(len(t_pair)), kind=C.ONES,
                                      keep_zeros=True)
        return C.make_transitions(L, np.zeros(0), np.zeros(0), np.zeros(0), kind=C.DENSE)

    # -- the "blocks" capability (block coordinate descent, models/crf_bcd.py) ----------
    def block_layout(self, group_blocks=True, split_blocks=True, single=False):
        """The blocks ``(ptr, index)``: block b owns the weights ``index[ptr[b]:ptr[b+1]]``.

        A block is a range of the weights of a *group* of attributes that occur at the
        same tokens (``group_blocks=False``: one attribute per group): the whole group,
        or with ``split_blocks`` its unigram part then its bigram part, or with
        ``single`` one weight. The transitions come first, then the groups by frequency.
        (Re)builds the state of the block methods below."""
        from .crf_bcd import CRFBlocks
        self._blocks = CRFBlocks(self, group_blocks, split_blocks, single)
        return self._blocks.layout()

    def _block_state(self):
        state = getattr(self, "_blocks", None)
        if state is None:
            raise RuntimeError("call block_layout() before the other block methods")
        return state

    def block_begin(self, w):
        """Start (or go on) from weights w; the cached rows survive when w is unchanged."""
        self._block_state().begin(w)

    def block_grad_hess(self, b):
        """(loss gradient, diagonal curvature) of block b's weights at the current weights."""
        return self._block_state().grad_hess(b)

    def block_change(self, b, dw):
        """The exact loss change of moving block b by dw (kept as a trial; after
        block_grad_hess(b))."""
        return self._block_state().change(b, dw)

    def block_commit(self):
        self._block_state().commit()

    def block_discard(self):
        self._block_state().discard()

    def block_weights(self):
        return self._block_state().weights()

    def block_loss(self):
        """The loss at the current weights, from the cached rows."""
        return self._block_state().loss()

    def block_rounding(self):
        """Magnitude of the log-partition terms behind the last block_change."""
        return self._block_state().rounding()

    def block_sweep(self, order, l1, l2, damping, skip_until, zero_streak, opts, stats):
        """Elastic-net block steps over the blocks ``order`` in one compiled call (the
        rule of ``solvers/coordinate_descent.py``; see there for the arguments)."""
        self._block_state().sweep(order, l1, l2, damping, skip_until, zero_streak, opts, stats)

    # -- the "bound" capability (Jebara & Choromanska; see spargel.chain.bound) --------
    def bound(self, w, **options):
        """Quadratic upper bound on the loss around ``w`` (the chain bound: matrix-free
        curvature, ``Sigma v`` at about the cost of a forward-backward pass)."""
        from .bound import chain_bound
        if options.get("curvature", "auto") not in ("auto", "chain"):
            raise ValueError(f"a CRF's bound has one curvature ('chain'), got {options['curvature']!r}")
        return chain_bound(self, w)


# --------------------------------------------------------------------------- prediction
# One implementation for every chain model: a view gives the leading arguments of the
# prediction kernels (``kernel_args``: its tuples and order flags).
def _fixed_or_free(fixed, n_tokens):
    if fixed is None:
        return np.full(n_tokens, -1, dtype=np.int32)
    return np.ascontiguousarray(fixed, dtype=np.int32)


def decode_view(view, w, fixed=None):
    """Viterbi label ids (one flat array over all tokens) and the path scores;
    ``fixed[t] >= 0`` forces the label of token t. Under constraints (``view.constraints``)
    the best allowed path; a sequence that has none is refused."""
    data = view.data
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = view.refresh(w)
    out = np.empty(data.n_tokens, dtype=np.int32)
    scores = np.empty(data.n_sequences)
    order = np.arange(data.n_sequences, dtype=np.int64)
    B.decode_all(w, *view.kernel_args(trans), _fixed_or_free(fixed, data.n_tokens), out, scores,
                            view.buffers(order), view.log_buffers(order))
    if getattr(view, "constraints", None) is not None:
        _check_paths(scores, data)
    return out, scores


def _check_paths(scores, data):
    """Refuse the sequences for which the constraints (and fixed labels) leave no path."""
    none = np.flatnonzero(scores == -np.inf)
    if len(none):
        s = int(none[0])
        raise ValueError(f"sequence {s} ({data.seq_ptr[s + 1] - data.seq_ptr[s]} tokens) has no label sequence "
                         f"that the constraints allow ({len(none)} such sequences)")


def marginals_view(view, w):
    """Label marginals (n_tokens x L) and log Z per sequence (the view is left loaded
    with w)."""
    data = view.data
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = view.refresh(w)
    out = np.zeros((data.n_tokens, view.space.n_labels))
    logz = np.empty(data.n_sequences)
    failed = np.zeros(data.n_sequences, np.uint8)
    buf = view.buffers(np.arange(data.n_sequences, dtype=np.int64))
    tcount = np.zeros(len(trans.fv))
    args = view.kernel_args(trans)
    B.marginals_all(w, *args, out, logz, failed, buf, tcount)
    bad = np.flatnonzero(failed).astype(np.int64)
    if len(bad):
        B.marginals_log(w, *args, bad, out, logz, buf, view.log_buffers(bad), tcount)
    return out, logz


def nbest_view(view, w, k, fixed=None):
    """Per sequence, a list of (label id array, score) for the k best paths, best first."""
    data = view.data
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = view.refresh(w)
    args = view.kernel_args(trans)
    fixed = _fixed_or_free(fixed, data.n_tokens)
    order = np.arange(data.n_sequences, dtype=np.int64)
    buf, lbuf = view.buffers(order), view.log_buffers(order)
    result = []
    for s in range(data.n_sequences):
        n = data.seq_ptr[s + 1] - data.seq_ptr[s]
        paths = np.zeros((k, n), dtype=np.int32)
        scores = np.empty(k)
        found = B.nbest_one(w, *args, s, fixed, k, paths, scores, buf, lbuf)
        result.append([(paths[r].copy(), float(scores[r])) for r in range(found)])
    return result


def sequence_loss_view(view, w):
    """-log p(y|x) of every labelled sequence, as an array (no gradient)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    _, logz = marginals_view(view, w)
    data = view.data
    order = np.arange(data.n_sequences, dtype=np.int64)
    gold = np.empty(data.n_sequences)
    B.gold_scores(w, view.space_t, view.data_t, view.aux, *view.flags, order, gold, view.buffers(order))
    return logz - gold


def prediction_functions(view_class):
    """``(decode, marginals, nbest, sequence_loss)`` over a layout and a data set, for the
    chain whose view is ``view_class`` (one set per order). ``constraints``: a
    :class:`~spargel.chain.constraints.LabelConstraints` (allowed label transitions,
    starts and ends): decoding and marginals over the allowed paths only."""

    def view(space, data, inference="auto", constraints=None):
        return view_class(space, data, inference, constraints)

    def decode(space, data, w, fixed=None, inference="auto", constraints=None):
        """Viterbi label ids (one flat array over all tokens) and the path scores;
        ``fixed[t] >= 0`` forces the label of token t."""
        return decode_view(view(space, data, inference, constraints), w, fixed)

    def marginals(space, data, w, constraints=None):
        """Label marginals (n_tokens x L) and log Z per sequence."""
        return marginals_view(view(space, data, constraints=constraints), w)

    def nbest(space, data, w, k, fixed=None, constraints=None):
        """Per sequence, a list of (label id array, score) for the k best paths, best first."""
        return nbest_view(view(space, data, constraints=constraints), w, k, fixed)

    def sequence_loss(space, data, w, constraints=None):
        """-log p(y|x) of every labelled sequence, as an array (no gradient; +inf for a
        sequence whose labels the constraints forbid)."""
        loss = sequence_loss_view(view(space, data, constraints=constraints), w)
        if constraints is not None:
            for s in range(data.n_sequences):
                lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
                if violations(constraints, data.labels[lo:hi], np.array([0, hi - lo])) is not None:
                    loss[s] = np.inf
        return loss

    return decode, marginals, nbest, sequence_loss


decode, marginals, nbest, sequence_loss = prediction_functions(CRFView)
