"""The linear-chain CRF's "blocks" capability: (block) coordinate descent steps with
cached forward/backward rows (Sokolovska, Lavergne, Cappé & Yvon 2010, Algorithms 1
and 2; ``docs/bcd.md``). Inference is :mod:`spargel.chain.inference` (its step functions
and pair marginals); the features are those of :mod:`spargel.chain.crf_kernels`.

What is kept between block steps, all in flat arrays:

* the inverted index ``attribute -> occurrences (token, value)`` (attributes numbered
  unigram first, ``m < n_u``, then bigram, ``n_u + a``);
* *groups*: attributes whose occurrences are the same tokens (one observation's
  unigram and bigram attributes, rare observations that always co-occur), so one pass
  over the rows serves all of them; each with its *spans* (per sequence, first and last
  occurrence) and its coordinates (the weights of its attributes). The global
  transitions are one more group, spanning positions 1..n-1 of every sequence;
* *blocks*: a range of a group's coordinates (the whole group; its unigram part and
  its bigram part; or one coordinate for plain coordinate descent);
* per token the emission scores ``E``, their shifted exponentials ``psi`` (shift
  ``shift``), the normalised forward row ``alpha`` with its log normaliser ``logca`` and
  the normalised backward row ``beta``; per sequence the last token whose alpha is valid
  (``va``) and the first token from which beta is valid (``vb``). A block step
  invalidates alpha after its first and beta before its last occurrence only; rows are
  recomputed lazily when a later block needs them;
* the non-zero weights of every bigram attribute as position corrections (pair,
  ``base * expm1(w)``, the exp(λ)-1 trick of §3.2), in the attribute's own slots
  ``vptr[2a]:vptr[2a+1]`` (from ``b_ptr[a]``). A position with a single bigram attribute of value 1
  (the usual case) hands these slots straight to the chain steps; other positions merge
  their attributes with :func:`crf_kernels.corrections` run on a *view* of the layout in
  which bigram attribute ``2a`` owns exactly those slots (data ids doubled), so it only
  ever reads non-zero weights.

Every operation runs through the one compiled entry point :func:`run`: the protocol's
primitives (``block_grad_hess``, ``block_change``, ``block_commit``,
``block_discard``) are its GRAD, CHANGE, COMMIT and DISCARD steps, and the fused sweep
(``block_sweep``, the elastic-net rule of ``solvers/coordinate_descent.py`` applied to
many blocks in one call) is a loop over the very same steps, so both give the same
iterates. :class:`CRFBlocks` is the Python side, which ``ChainCRF``'s block methods
delegate to:

>>> model.block_layout()                               # doctest: +SKIP
>>> model.block_begin(w); g, h = model.block_grad_hess(0)   # doctest: +SKIP
>>> delta = model.block_change(0, -0.1 * g); model.block_commit()   # doctest: +SKIP
"""

import math
from collections import namedtuple

import numpy as np
from ..core.jit import inner, kernel

from ..core import penalty_kernels as PK
from . import inference as C
from . import crf_kernels as K
from ..data.feature_space import Space
from .kernel_data import BigramList, Corrections, Data
from ..core.ranges import concat_ranges, owners, row_pointers
from ..solvers.coordinate_descent import SweepOptions

FAST = C.FAST
# operations of run(); NEXT and PROPOSE are internal steps of a sweep
BEGIN, REKIND, GRAD, CHANGE, COMMIT, DISCARD, LOSS, SWEEP, NEXT, PROPOSE = range(10)
# operations of _rows()
ALPHA, BETA, PAIR = range(3)
# the header hd (a Header): sizes, then a table of the operation codes of _rows
# (hd.ops[k] = k). Compiled code passes operation codes read from it: a constant would be
# a numba literal, and a callee is compiled once per literal value it receives.
Header = namedtuple("Header", "n_u n_grp L b_base ops")
# sweep statistics (the solver's history): sum of objective changes, rejected trials,
# blocks moved, visited, skipped, largest optimality violation, scaling failure
N_STATS = 7
# transitions use the ONES structure when at most this fraction of the |Y|^2 pairs is non-zero
ONES_FRACTION = 0.25
# the scratch of run() (CRFBlocks.wk):
#   VEC -- rows G, H, wold, dw, l1, l2 of the block's coordinates;
#   SAVE -- rows saved E, saved psi, new E, new psi; SAVES -- rows saved shift, new shift;
#   old_part -- the span parts of log Z; SQ -- rows r, P, T; kbuf -- exponentials' scratch;
#   info -- the slots PENDING (the pending trial's block, or -1), ROUNDING (the magnitude
#   of the log-partition terms of the last statistics) and STATS_OF (the block of the last
#   statistics, or -1)
PENDING, ROUNDING, STATS_OF = range(3)
BlockWork = namedtuple("BlockWork", "VEC SAVE SAVES old_part SQ kbuf info")
# the index of the kernels (BlockIndex.as_tuple): a_ptr / a_tok / a_val -- the occurrences
#   (token, value) of every attribute; grp_attr -- the attributes of the groups, in order;
#   gc_idx -- the groups' coordinates; GRP -- rows grp_ptr, sp_ptr, gc_ptr, g_nuni per group
#   (the transitions last); SPAN -- rows sequence, first token, last token, first and end
#   occurrence per span; BLK -- rows group, first and end coordinate per block
IndexTables = namedtuple("IndexTables", "a_ptr a_tok a_val grp_attr gc_idx GRP SPAN BLK")
# the cached rows (CRFBlocks.rows): R -- rows E, psi, alpha, beta per token; TOK -- rows
#   shift, logca, alpha's and beta's headroom (see _rows) per token; SEQ -- rows va, vb per
#   sequence; seq_ptr -- the sequences' token offsets
BlockRows = namedtuple("BlockRows", "R TOK SEQ seq_ptr")
# the bigram attributes and their listed non-zero weights (CRFBlocks.pos): big_ptr /
#   big_ids2 / big_vals -- per token its bigram attributes (ids doubled: the view's) and
#   values; vptr -- attribute a's non-zero weights are the slots vptr[2a]:vptr[2a+1]; per
#   slot nz_pair -- its label pair, NZIJ -- rows i, j, NZF -- rows correction, weight; the
#   scratch of a merge (crf_kernels.corrections): CI -- rows ptr, src, dst, pair and CF --
#   rows factor, score of its Corrections, CF's last row its accumulator; U8 -- its marks
#   (|Y|^2) then its need flags (2)
BigramSlots = namedtuple("BigramSlots", "big_ptr big_ids2 big_vals vptr nz_pair NZIJ NZF CI CF U8")
# the sweep's control (SWEEP): order -- the blocks to visit; l1, l2 -- the penalty per
#   weight; per block its damping, the sweep it is skipped until and its run of zero steps;
#   opts -- the solver's options (a coordinate_descent.SweepOptions); stats -- the N_STATS
#   statistics. Empty arrays for the other operations.
SweepControl = namedtuple("SweepControl", "order l1 l2 damping skip_until zero_streak opts stats")
# First-use compilation time grows with the number of compiled functions, the number of
# arrays each one holds and the code it inlines (inlining copies the callee's IR). So there
# are two compiled functions, _rows (the recursions) and run (everything else, the fused
# sweep included, written as a loop over steps so that each piece of code appears once),
# plus one small helper; they take packed arrays, grouped in the named tuples above (and
# the layout's Space) and read by name, and inline nothing of this module. numba's
# dispatcher types a named tuple argument from its class and field names on every call
# (about twice the time of a plain tuple), and the protocol's primitives call run() once
# per block: so CRFBlocks._run passes these tuples plain and run() names them on entry.


# --------------------------------------------------------------------------- index (numpy, once)
def occurrence_index(data, n_u, n_b):
    """(a_ptr, a_tok, a_val): the occurrences of every attribute, tokens ascending."""
    ids = np.concatenate([data.uni_ids.astype(np.int64), n_u + data.big_ids.astype(np.int64)])
    toks = np.concatenate([owners(data.uni_ptr), owners(data.big_ptr)])
    vals = np.concatenate([data.uni_vals, data.big_vals]).astype(np.float64)
    order = np.argsort(ids, kind="stable")          # keeps tokens ascending within an attribute
    a_ptr = row_pointers(ids, n_u + n_b)
    return a_ptr, np.ascontiguousarray(toks[order]), np.ascontiguousarray(vals[order])


def group_attributes(a_ptr, a_tok, n_tok):
    """Group id of every attribute: attributes with identical occurrence tokens share a
    group; groups are numbered by their smallest attribute id. Candidates are found by
    a hash of the token set, then compared exactly (a collision only costs grouping)."""
    n_attr = len(a_ptr) - 1
    if n_attr == 0:
        return np.zeros(0, np.int64)
    counts = np.diff(a_ptr)
    rnd = np.random.default_rng(0x5EED).integers(1, 2 ** 63, size=max(n_tok, 1), dtype=np.uint64)
    csum = np.zeros(len(a_tok) + 1, np.uint64)
    np.cumsum(rnd[a_tok], out=csum[1:])
    h = csum[a_ptr[1:]] - csum[a_ptr[:-1]]
    order = np.lexsort((h, counts))                  # stable: ascending ids within a key
    ks = np.ones(n_attr, bool)
    ks[1:] = (counts[order][1:] != counts[order][:-1]) | (h[order][1:] != h[order][:-1])
    rep = np.empty(n_attr, np.int64)
    rep[order] = order[np.flatnonzero(ks)][np.cumsum(ks) - 1]
    occ_attr = np.repeat(np.arange(n_attr, dtype=np.int64), counts)
    occ_rep = a_ptr[rep[occ_attr]] + (np.arange(len(a_tok), dtype=np.int64) - a_ptr[occ_attr])
    bad = np.zeros(n_attr, bool)
    bad[occ_attr[a_tok[occ_rep] != a_tok]] = True
    rep[bad] = np.flatnonzero(bad)
    return np.searchsorted(np.unique(rep), rep).astype(np.int64)


class BlockIndex:
    """Groups, spans, coordinates and blocks of a CRF (numpy only; see the module doc).

    ``single``: one block per coordinate (coordinate descent); ``split``: a group's
    unigram part and bigram part are two blocks ("update {μ}, then {λ}", Algorithm 2);
    ``group``: False puts every attribute in a group of its own.
    """

    def __init__(self, space, data, group=True, split=True, single=False):
        L = space.n_labels
        n_u, n_b = len(space.u_ptr) - 1, len(space.b_ptr) - 1
        self.n_u, self.n_b = n_u, n_b
        n_tok = data.n_tokens
        self.a_ptr, self.a_tok, self.a_val = occurrence_index(data, n_u, n_b)
        n_attr = n_u + n_b
        gid = group_attributes(self.a_ptr, self.a_tok, n_tok) if group else np.arange(n_attr, dtype=np.int64)
        n_grp = int(gid.max()) + 1 if n_attr else 0
        self.grp_attr = np.argsort(gid, kind="stable").astype(np.int64)
        self.grp_ptr = np.zeros(n_grp + 1, np.int64)
        np.cumsum(np.bincount(gid, minlength=n_grp), out=self.grp_ptr[1:])
        self.n_groups = n_grp
        # spans of every group (from its first attribute's occurrences), then the transitions
        counts = np.diff(self.a_ptr)
        rep = self.grp_attr[self.grp_ptr[:-1]]
        cnt = counts[rep]
        occ = concat_ranges(self.a_ptr[rep], self.a_ptr[rep + 1])
        og = np.repeat(np.arange(n_grp, dtype=np.int64), cnt)
        tok = self.a_tok[occ]
        tok_seq = owners(data.seq_ptr)
        seq = tok_seq[tok]
        new = np.ones(len(occ), bool)
        new[1:] = (og[1:] != og[:-1]) | (seq[1:] != seq[:-1])
        st = np.flatnonzero(new)
        en = np.append(st[1:], len(occ)).astype(np.int64)
        gstart = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
        sgrp = og[st]
        lens = np.diff(data.seq_ptr)
        tseq = np.flatnonzero(lens >= 2).astype(np.int64)
        self.has_trans = len(space.t_pair) > 0
        if not self.has_trans:
            tseq = tseq[:0]
        self.sp_seq = np.concatenate([seq[st], tseq])
        self.sp_f = np.concatenate([tok[st], data.seq_ptr[tseq] + 1]).astype(np.int64)
        self.sp_l = np.concatenate([tok[en - 1], data.seq_ptr[tseq + 1] - 1]).astype(np.int64)
        self.sp_olo = np.concatenate([st - gstart[sgrp], np.zeros(len(tseq), np.int64)])
        self.sp_ohi = np.concatenate([en - gstart[sgrp], np.zeros(len(tseq), np.int64)])
        self.sp_ptr = np.zeros(n_grp + 2, np.int64)
        np.cumsum(np.bincount(sgrp, minlength=n_grp), out=self.sp_ptr[1:n_grp + 1])
        self.sp_ptr[n_grp + 1] = self.sp_ptr[n_grp] + len(tseq)
        # coordinates: a group's unigram weights, then its bigram weights; the transitions last
        lo = np.concatenate([space.u_ptr[:-1], space.b_base + space.b_ptr[:-1]]).astype(np.int64)
        hi = np.concatenate([space.u_ptr[1:], space.b_base + space.b_ptr[1:]]).astype(np.int64)
        n_t = len(space.t_pair)
        self.gc_idx = np.concatenate([concat_ranges(lo[self.grp_attr], hi[self.grp_attr]),
                                      np.arange(space.t_base, space.n_params, dtype=np.int64)])
        size = hi - lo
        cs = np.concatenate([[0], np.cumsum(size[self.grp_attr])]).astype(np.int64)
        csu = np.concatenate([[0], np.cumsum(np.where(self.grp_attr < n_u, size[self.grp_attr], 0))]).astype(np.int64)
        gsize = np.append(cs[self.grp_ptr[1:]] - cs[self.grp_ptr[:-1]], n_t).astype(np.int64)
        self.g_nuni = np.append(csu[self.grp_ptr[1:]] - csu[self.grp_ptr[:-1]], 0).astype(np.int64)
        self.gc_ptr = np.concatenate([[0], np.cumsum(gsize)]).astype(np.int64)
        # blocks: the transitions first, then the groups (by their smallest attribute id,
        # i.e. by frequency: the vocabularies are frequency ordered)
        groups = np.concatenate([[n_grp], np.arange(n_grp)]).astype(np.int64)
        gs, gu = gsize[groups], self.g_nuni[groups]
        if single:
            self.blk_grp = np.repeat(groups, gs)
            self.blk_c0 = concat_ranges(np.zeros(len(groups), np.int64), gs)
            self.blk_c1 = self.blk_c0 + 1
        else:
            two = bool(split) & (gu > 0) & (gu < gs)
            nb = (gs > 0).astype(np.int64) + two
            self.blk_grp = np.repeat(groups, nb)
            first = np.concatenate([[0], np.cumsum(nb)[:-1]]).astype(np.int64)
            c0 = np.zeros(int(nb.sum()), np.int64)
            c1 = np.repeat(gs, nb)
            c1[first[two]] = gu[two]
            c0[first[two] + 1] = gu[two]
            self.blk_c0, self.blk_c1 = c0, c1
        self.n_blocks = len(self.blk_grp)
        gb = self.gc_ptr[self.blk_grp]
        self.ptr = np.concatenate([[0], np.cumsum(self.blk_c1 - self.blk_c0)]).astype(np.int64)
        self.index = self.gc_idx[concat_ranges(gb + self.blk_c0, gb + self.blk_c1)]
        # buffer sizes
        self.max_coord = max(int((self.blk_c1 - self.blk_c0).max()) if self.n_blocks else 0, 1)
        self.max_occ = max(int(cnt.max()) if n_grp else 0, 1)
        self.max_span = max(int(np.diff(self.sp_ptr).max()) if len(self.sp_ptr) > 1 else 0, 1)
        self.L = L

    def as_tuple(self):
        """The :data:`IndexTables` of the kernels: ``GRP`` rows grp_ptr, sp_ptr, gc_ptr,
        g_nuni (per group, the transitions last); ``SPAN`` rows sequence, first token,
        last token, first and end occurrence; ``BLK`` rows group, first and end coordinate."""
        n = self.n_groups + 2
        GRP = np.zeros((4, n), np.int64)
        GRP[0, :n - 1] = self.grp_ptr
        GRP[1], GRP[2] = self.sp_ptr, self.gc_ptr
        GRP[3, :n - 1] = self.g_nuni
        SPAN = np.ascontiguousarray(np.stack([self.sp_seq, self.sp_f, self.sp_l, self.sp_olo, self.sp_ohi]))
        BLK = np.ascontiguousarray(np.stack([self.blk_grp, self.blk_c0, self.blk_c1]))
        return IndexTables(self.a_ptr, self.a_tok, self.a_val, self.grp_attr, self.gc_idx, GRP, SPAN, BLK)


# --------------------------------------------------------------------------- rows (compiled)
@inner(fastmath=FAST)
def _rows(op, s, a, L, rows, pos, trans, SQ, big):
    """Cached rows of sequence s. ALPHA: make the normalised alpha rows valid up to
    token a (computing the invalid ones, with their log normalisers); BETA: the
    normalised beta rows valid down to token a; PAIR: the pair marginals (unnormalised)
    at token a into SQ[1], returning their sum. ALPHA / BETA return 0.0 when a row
    under- or overflows or could have lost a path that a later step raises (the bound
    of ``chain.forward``, on each row's headroom ``TOK[2]`` / ``TOK[3]``), 1.0
    otherwise. ``rows``: the :data:`BlockRows`; ``pos``: the :data:`BigramSlots`. ``big``
    None: the data has no bigram attributes (their corrections are not compiled)."""
    R, TOK, SEQ, seq_ptr = rows.R, rows.TOK, rows.SEQ, rows.seq_ptr
    psi, alpha, beta = R[1], R[2], R[3]
    shift, logca, room = TOK[0], TOK[1], TOK[2:4]
    va, vb = SEQ[0], SEQ[1]
    r, P = SQ[0], SQ[1]
    big_ptr, big_ids2, big_vals, vptr = pos.big_ptr, pos.big_ids2, pos.big_vals, pos.vptr
    nz_pair, NZIJ, NZF, CI, CF, U8 = pos.nz_pair, pos.NZIJ, pos.NZF, pos.CI, pos.CF, pos.U8
    corr = Corrections(CI[0], CI[1], CI[2], CF[0], CF[1], CI[3])
    Sp = R.shape[2]
    LL = L * L
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    if op == ALPHA:
        t0, t1, step = max(va[s] + 1, lo), a + 1, 1
    elif op == BETA:
        if vb[s] >= hi:
            for y in range(Sp):
                beta[hi - 1, y] = 1.0 / L if y < L else 0.0
            vb[s] = hi - 1
        t0, t1, step = vb[s] - 1, a - 1, -1
    else:
        t0, t1, step = a, a + 1, 1
    for t in range(t0, t1, step):
        cur = alpha[t]
        flo = 0.0
        fhi = 0.0
        if op == ALPHA and t == lo:
            for y in range(Sp):
                cur[y] = psi[t, y]
            lc = shift[t]
        else:
            # the corrections of the position whose factor the step uses: t (forward,
            # pairs) or t + 1 (backward)
            tf = t + 1 if op == BETA else t
            j0, j1 = big_ptr[tf], big_ptr[tf + 1]
            ci, cj, cc, q0, q1 = corr.src, corr.dst, corr.factor, j0 - j0, j0 - j0
            cv = corr.score
            if big is not None:
                if j1 - j0 == 1 and big_vals[j0] == 1.0:
                    # one attribute of value 1: its listed non-zero weights as they are
                    ci, cj, cc, q0, q1 = NZIJ[0], NZIJ[1], NZF[0], vptr[big_ids2[j0]], vptr[big_ids2[j0] + 1]
                    cv = NZF[1]
                elif j1 > j0:
                    # several: merge their non-zero weights with crf_kernels.corrections on
                    # the bigram list of the layout (the data fields it does not read are empty)
                    i64, f64 = vptr[:0], big_vals[:0]
                    bl = BigramList(vptr, nz_pair, j0 - j0, NZF[1], nz_pair[:0], nz_pair[:0], f64, i64)
                    data2 = Data(i64, i64, big_ids2[:0], f64, big_ptr, big_ids2, big_vals, big_ids2[:0])
                    K.corrections(f64, 1.0, bl, data2, tf - 1, tf + 1, trans, corr, CF[2], U8[:LL], U8[LL:], i64)
                    q0, q1 = corr.ptr[1], corr.ptr[2]
            if op != ALPHA:
                for y in range(Sp):
                    r[y] = psi[tf, y] * beta[tf, y]
            if op == PAIR:
                C.pair_matrix(alpha[t - 1], r, trans, ci, cj, cc, q0, q1, P)
                z = 0.0
                for p in range(LL):
                    z += P[p]
                return z
            # what the row before this step lost to underflow must stay negligible
            # after it (see chain.forward): its headroom against the step's log range
            flo, fhi = C.correction_range(trans, ci, cj, cv, q0, q1)
            if room[1 if op == BETA else 0, tf if op == BETA else t - 1] - (fhi - flo) < -C.SCALED_LIMIT:
                if op == BETA:
                    vb[s] = t + 1
                else:
                    va[s] = t - 1
                return 0.0
            if op == BETA:
                cur = beta[t]
                C.backward_step(r, cur, trans, ci, cj, cc, q0, q1)
            else:
                C.forward_step(alpha[t - 1], cur, trans, ci, cj, cc, q0, q1)
                for y in range(Sp):
                    cur[y] *= psi[t, y]
            lc = shift[t] + trans.tshift[0]
        c = 0.0
        for y in range(Sp):
            c += cur[y]
        if not (c > 0.0 and c < C.FLOAT_MAX):
            if op == BETA:
                vb[s] = t + 1
            else:
                va[s] = t - 1
            return 0.0
        inv = 1.0 / c
        for y in range(Sp):
            cur[y] *= inv
        # headroom of the row: log min(c, 1) less the largest log factor of its step
        # (what it lost is below exp(-708 + that) of its mass); the first and the last
        # row are not raised by a later step
        hr = math.log(min(c, 1.0))
        if (op == BETA and t < hi - 1) or (op == ALPHA and t > lo):
            hr -= max(0.0, fhi)
        if (op == BETA and t == lo) or (op == ALPHA and t == hi - 1):
            if hr < -C.SCALED_LIMIT:
                if op == BETA:
                    vb[s] = t + 1
                else:
                    va[s] = t - 1
                return 0.0
        room[1 if op == BETA else 0, t] = hr
        if op == BETA:
            vb[s] = t
        else:
            logca[t] = lc + math.log(c)
    if op == ALPHA and a > va[s]:
        va[s] = a
    return 1.0


@inner()
def _span_part(f, l, alpha, beta, logca):
    """sum(logca[f..l]) + log(alpha[l] . beta[l]): the part of log Z that a change of
    the factors at tokens f..l can move."""
    s = 0.0
    for t in range(f, l + 1):
        s += logca[t]
    d = 0.0
    for y in range(alpha.shape[1]):
        d += alpha[l, y] * beta[l, y]
    return s + math.log(d)


# --------------------------------------------------------------------------- everything else (compiled)
@kernel()
def run(op, b, hd, ix, space, rows, pos, trans, wk, w, emp, ctl, big):
    """The one entry point: operation ``op`` on block ``b`` (or the blocks ``ctl.order``).

    BEGIN   emission rows of every token from w, the bigram correction lists, empty
            caches;
    REKIND  the transition structure was rebuilt: recompute the listed corrections,
            empty the caches;
    GRAD    loss gradient (expected - empirical counts) and diagonal curvature (eq. 16)
            of the block's coordinates into G / H, the span parts of log Z into old_part
            (their magnitude into info[ROUNDING]), the weights into wold; returns 1.0, or 0.0
            when a row could not be scaled;
    CHANGE  move the block by dw and keep the trial pending; returns the exact change of
            the loss (NaN when a row could not be scaled);
    COMMIT / DISCARD   keep / undo the pending trial, mark the rows it invalidated;
    LOSS    sum of log Z from the cached rows (completing alpha; NaN on a scaling failure);
    SWEEP   the elastic-net block step of the generic loop of
            ``solvers/coordinate_descent.py`` (with ElasticNet.block_step) on every block
            of ``ctl.order``, with zero-block skipping (``ctl``: the :data:`SweepControl`).
            It runs the steps above as the actions of one loop (NEXT block, GRAD,
            PROPOSE a step, CHANGE, COMMIT or DISCARD).
    ``hd``, ``ix``, ``space``, ``rows``, ``pos``, ``wk``, ``ctl``: the plain tuples of a
    :data:`Header`, an :data:`IndexTables`, a :class:`~spargel.data.feature_space.Space`, a
    :data:`BlockRows`, a :data:`BigramSlots`, a :data:`BlockWork` and a
    :data:`SweepControl` (named here).
    """
    hd, ix, space, rows, pos = Header(*hd), IndexTables(*ix), Space(*space), BlockRows(*rows), BigramSlots(*pos)
    wk, ctl = BlockWork(*wk), SweepControl(*ctl)
    order, l1, l2 = ctl.order, ctl.l1, ctl.l2
    VEC, SAVE, SAVES, old_part, SQ, kbuf, info = wk.VEC, wk.SAVE, wk.SAVES, wk.old_part, wk.SQ, wk.kbuf, wk.info
    n_u, n_grp, L, b_base, ops = hd.n_u, hd.n_grp, hd.L, hd.b_base, hd.ops
    a_ptr, a_tok, a_val, grp_attr, gc_idx = ix.a_ptr, ix.a_tok, ix.a_val, ix.grp_attr, ix.gc_idx
    GRP, SPAN, BLK = ix.GRP, ix.SPAN, ix.BLK
    u_ptr, u_lab, b_ptr, b_pair, t_pair = space.u_ptr, space.u_lab, space.b_ptr, space.b_pair, space.t_pair
    R, TOK, SEQ, seq_ptr = rows.R, rows.TOK, rows.SEQ, rows.seq_ptr
    E, psi, alpha, beta = R[0], R[1], R[2], R[3]
    shift, logca = TOK[0], TOK[1]
    va, vb = SEQ[0], SEQ[1]
    vptr, nz_pair, NZIJ, NZF = pos.vptr, pos.nz_pair, pos.NZIJ, pos.NZF
    G, H, wold, dw, l1b, l2b = VEC[0], VEC[1], VEC[2], VEC[3], VEC[4], VEC[5]
    r, P, T = SQ[0], SQ[1], SQ[2]
    LL = L * L
    n_b = len(b_ptr) - 1
    n_seq = len(seq_ptr) - 1
    Lp = E.shape[1]
    if op == LOSS:
        total = 0.0
        for s in range(n_seq):
            if _rows(ops[ALPHA], s, seq_ptr[s + 1] - 1, L, rows, pos, trans, SQ, big) == 0.0:
                return np.nan
            for t in range(seq_ptr[s], seq_ptr[s + 1]):
                total += logca[t]
        return total
    damping, skip_until, zero_streak, stats = ctl.damping, ctl.skip_until, ctl.zero_streak, ctl.stats
    opts = SweepOptions(*ctl.opts)
    sweep_mode = op == SWEEP
    max_trials, up, dmin, max_step, h_floor, accept_tol, max_skip, relax = (
        int(opts.max_trials), opts.damping_factor, opts.min_damping, opts.max_step, opts.h_floor, opts.accept_tol,
        int(opts.max_skip), opts.damping_relax)
    sweep, allow_skip = int(opts.sweep), opts.allow_skip != 0.0
    act = NEXT if sweep_mode else op
    k_next = -1
    g = c0 = c1 = base = n_uni = z0 = z1 = rep_lo = trial = 0
    is_t = False
    inside = False
    a_b = pen_old = pen_new = dobj = 0.0
    while True:
        # -- NEXT: the next block of the sweep (skipping those that stay at zero) -------
        if act == NEXT:
            k_next += 1
            if k_next >= len(order):
                return 0.0
            b = order[k_next]
            if allow_skip and skip_until[b] > sweep:
                stats[4] += 1
                continue
            stats[3] += 1
            act = GRAD
        if act != BEGIN and act != REKIND:
            g, c0, c1 = BLK[0, b], BLK[1, b], BLK[2, b]
            base, n_uni, z0, z1 = GRP[2, g], GRP[3, g], GRP[1, g], GRP[1, g + 1]
            is_t = g == n_grp
            rep_lo = 0 if is_t else a_ptr[grp_attr[GRP[0, g]]]
        done = False          # the block's step is over (skip bookkeeping below)

        # -- GRAD: statistics of the block at the current weights ----------------------
        if act == GRAD:
            info[STATS_OF] = -1.0
            for n in range(c1 - c0):
                G[n] = 0.0
                H[n] = 0.0
            scale = 0.0
            failed = False
            for z in range(z0, z1):
                s, f, l = SPAN[0, z], SPAN[1, z], SPAN[2, z]
                lo = seq_ptr[s]
                for d in range(2):         # alpha rows up to l, beta rows down to f
                    if _rows(ops[ALPHA + d], s, l if d == 0 else f, L, rows, pos, trans, SQ, big) == 0.0:
                        failed = True
                if failed:
                    break
                part = _span_part(f, l, alpha, beta, logca)
                old_part[z - z0] = part
                scale += abs(part)
                if not is_t and c0 < n_uni:
                    # unigram weights: point marginals at the occurrences
                    for o in range(SPAN[3, z], SPAN[4, z]):
                        t = a_tok[rep_lo + o]
                        zq = 0.0
                        for y in range(L):
                            x = alpha[t, y] * beta[t, y]
                            r[y] = x
                            zq += x
                        iz = 1.0 / zq
                        n = 0
                        for qq in range(GRP[0, g], GRP[0, g + 1]):
                            m = grp_attr[qq]
                            if m >= n_u or n >= c1:
                                break
                            k0, k1 = u_ptr[m], u_ptr[m + 1]
                            if n + (k1 - k0) <= c0:
                                n += k1 - k0
                                continue
                            v = a_val[a_ptr[m] + o]
                            for k in range(k0, k1):
                                if n >= c0 and n < c1:
                                    pk = r[u_lab[k]] * iz
                                    G[n - c0] += v * pk
                                    H[n - c0] += v * v * pk * (1.0 - pk)
                                n += 1
                if is_t or c1 > n_uni:
                    # pair weights (bigram attributes, transitions): pair marginals
                    o0, o1 = (f, l + 1) if is_t else (SPAN[3, z], SPAN[4, z])
                    for o in range(o0, o1):
                        t = o if is_t else a_tok[rep_lo + o]
                        if t == lo:
                            continue
                        iz = 1.0 / _rows(ops[PAIR], s, t, L, rows, pos, trans, SQ, big)
                        if is_t:
                            for n in range(c0, c1):
                                x = P[t_pair[n]] * iz
                                G[n - c0] += x
                                H[n - c0] += x * (1.0 - x)
                            continue
                        if big is not None:
                            n = n_uni
                            for qq in range(GRP[0, g], GRP[0, g + 1]):
                                m = grp_attr[qq]
                                if m < n_u:
                                    continue
                                if n >= c1:
                                    break
                                a = m - n_u
                                k0, k1 = b_ptr[a], b_ptr[a + 1]
                                v = a_val[a_ptr[m] + o]
                                if n + (k1 - k0) <= c0 or v == 0.0:
                                    n += k1 - k0
                                    continue
                                v1 = v * iz
                                v2 = v * v1
                                if k1 - k0 == LL and c0 <= n and n + LL <= c1:
                                    # every label pair, in order (the "full" space): contiguous
                                    for p in range(LL):
                                        x = P[p]
                                        G[n - c0 + p] += v1 * x
                                        H[n - c0 + p] += v2 * x * (1.0 - x * iz)
                                    n += LL
                                    continue
                                for k in range(k0, k1):
                                    if n >= c0 and n < c1:
                                        x = P[b_pair[k]]
                                        G[n - c0] += v1 * x
                                        H[n - c0] += v2 * x * (1.0 - x * iz)
                                    n += 1
            if failed:
                stats[6] = 1.0
                return 0.0
            for n in range(c0, c1):
                G[n - c0] -= emp[gc_idx[base + n]]
                wold[n - c0] = w[gc_idx[base + n]]
            info[ROUNDING] = scale
            info[STATS_OF] = b
            if not sweep_mode:
                return 1.0
            # the optimality violation, whether the block stays at zero, its penalty
            viol = 0.0
            inside = True
            pen_old = 0.0
            for n in range(c1 - c0):
                k = gc_idx[base + c0 + n]
                x = wold[n]
                l1b[n] = l1[k]
                l2b[n] = l2[k]
                gg = G[n] + l2[k] * x
                if x > 0:
                    v = abs(gg + l1[k])
                elif x < 0:
                    v = abs(gg - l1[k])
                else:
                    v = abs(gg) - l1[k]
                if v > viol:
                    viol = v
                if x != 0.0 or abs(G[n] / 0.9) > l1[k]:
                    inside = False
                pen_old += l1[k] * abs(x) + 0.5 * l2[k] * x * x
            stats[5] = max(stats[5], viol)
            a_b = damping[b]
            trial = 0
            act = PROPOSE

        # -- PROPOSE: the penalty's closed-form step with the damped curvature ---------
        if act == PROPOSE:
            moved = False
            pen_new = 0.0
            for n in range(c1 - c0):
                # the arithmetic of ElasticNet.block_step (_penalty_kernels.enet_newton)
                h = a_b * max(H[n], h_floor)
                den = h + l2b[n]
                if not den > 0.0:
                    den = 1e-12
                d = PK.soft_threshold(h * wold[n] - G[n], l1b[n]) / den - wold[n]
                if d > max_step:
                    d = max_step
                elif d < -max_step:
                    d = -max_step
                if d != 0.0:
                    moved = True
                dw[n] = d
                nw = wold[n] + d
                pen_new += l1b[n] * abs(nw) + 0.5 * l2b[n] * nw * nw
            if moved:
                act = CHANGE
            else:
                damping[b] = max(dmin, a_b)
                done = True

        # -- CHANGE / DISCARD: load wold + dw (or wold) into the weights and all that
        #    depends on them; BEGIN / REKIND: (re)build what depends on all weights
        moving = act == CHANGE or act == DISCARD
        restore = act == DISCARD
        dlin = 0.0
        if moving:
            for n in range(c0, c1):
                k = gc_idx[base + n]
                w[k] = wold[n - c0] if restore else wold[n - c0] + dw[n - c0]
                dlin += dw[n - c0] * emp[k]
            if is_t:
                for p in range(LL):
                    T[p] = 0.0
                for k in range(len(t_pair)):
                    T[t_pair[k]] = w[b_base + len(b_pair) + k]
                C.refresh(trans, T)
        if big is not None:
            if act == REKIND or (moving and is_t):
                # the transition structure changed: recompute the listed corrections
                for a in range(n_b):
                    for q in range(vptr[2 * a], vptr[2 * a + 1]):
                        i, j = NZIJ[0, q], NZIJ[1, q]
                        NZF[0, q] = C.base_entry(trans, i, j, j * L + i) * math.expm1(NZF[1, q])
        if act == BEGIN or (moving and not is_t and c0 < n_uni):
            # emission rows: of every token (BEGIN), or of the block's occurrences, saved
            # first (CHANGE) or put back (DISCARD)
            sE, sP, X, Y, sS, Z = SAVE[0], SAVE[1], SAVE[2], SAVE[3], SAVES[0], SAVES[1]
            if act == BEGIN:
                n_occ = seq_ptr[n_seq]
                for t in range(n_occ):
                    for y in range(Lp):
                        E[t, y] = 0.0
                for m in range(n_u):
                    for o in range(a_ptr[m], a_ptr[m + 1]):
                        for k in range(u_ptr[m], u_ptr[m + 1]):
                            E[a_tok[o], u_lab[k]] += a_val[o] * w[k]
            else:
                n_occ = a_ptr[grp_attr[GRP[0, g]] + 1] - rep_lo
                for o in range(n_occ):
                    t = a_tok[rep_lo + o]
                    if restore:
                        for y in range(Lp):
                            E[t, y] = sE[o, y]
                            psi[t, y] = sP[o, y]
                        shift[t] = sS[o]
                        continue
                    for y in range(Lp):
                        sE[o, y] = E[t, y]
                        sP[o, y] = psi[t, y]
                    sS[o] = shift[t]
                    n = 0
                    for qq in range(GRP[0, g], GRP[0, g + 1]):
                        m = grp_attr[qq]
                        if m >= n_u or n >= c1:
                            break
                        v = a_val[a_ptr[m] + o]
                        for k in range(u_ptr[m], u_ptr[m + 1]):
                            if n >= c0 and n < c1:
                                E[t, u_lab[k]] += v * dw[n - c0]
                            n += 1
                    for y in range(Lp):
                        X[o, y] = E[t, y]
            if not restore:
                # psi = exp(E - shift): of every row (BEGIN) or of the new rows X (CHANGE)
                C.exp_rows(E if act == BEGIN else X, psi if act == BEGIN else Y, shift if act == BEGIN else Z,
                           n_occ, L, kbuf)
            if act == CHANGE:
                for o in range(n_occ):
                    t = a_tok[rep_lo + o]
                    for y in range(Lp):
                        psi[t, y] = Y[o, y]
                    shift[t] = Z[o]
        if big is not None:
            if act == BEGIN or (moving and not is_t and c1 > n_uni):
                # list the non-zero weights of the bigram attributes (all, or the block's)
                n = n_uni
                q_lo, q_hi = (0, n_b) if act == BEGIN else (GRP[0, g], GRP[0, g + 1])
                for qq in range(q_lo, q_hi):
                    a = qq
                    if act != BEGIN:
                        m = grp_attr[qq]
                        if m < n_u:
                            continue
                        a = m - n_u
                        size = b_ptr[a + 1] - b_ptr[a]
                        n += size
                        if n - size >= c1 or n <= c0:
                            continue
                    q = b_ptr[a]
                    for k in range(b_ptr[a], b_ptr[a + 1]):
                        x = w[b_base + k]
                        if x != 0.0:
                            p = b_pair[k]
                            i = p // L
                            j = p - i * L
                            nz_pair[q] = p
                            NZIJ[0, q] = i
                            NZIJ[1, q] = j
                            NZF[0, q] = C.base_entry(trans, i, j, j * L + i) * math.expm1(x)
                            NZF[1, q] = x
                            q += 1
                    vptr[2 * a + 1] = q
        if act == BEGIN or act == REKIND:
            for s in range(n_seq):
                va[s] = seq_ptr[s] - 1
                vb[s] = seq_ptr[s + 1]
            return 0.0

        # -- CHANGE: the exact change of log Z over the spans (a forward pass from the
        #    unchanged alpha rows before each span to its end, where beta is unchanged)
        if act == CHANGE:
            info[PENDING] = b
            dl = -dlin
            for z in range(z0, z1):
                s, f, l = SPAN[0, z], SPAN[1, z], SPAN[2, z]
                va[s] = f - 1
                if _rows(ops[ALPHA], s, l, L, rows, pos, trans, SQ, big) == 0.0:
                    dl = np.nan
                    break
                dl += _span_part(f, l, alpha, beta, logca) - old_part[z - z0]
            if not sweep_mode:
                return dl
            dobj = dl + (pen_new - pen_old)
            act = COMMIT if dobj <= accept_tol * (1.0 + info[ROUNDING]) else DISCARD      # (NaN fails)
            continue

        # -- COMMIT: keep the trial; the rows after its first / before its last
        #    occurrence were invalidated (the trial recomputed alpha up to the last one)
        if act == COMMIT:
            for z in range(z0, z1):
                s, l = SPAN[0, z], SPAN[2, z]
                va[s] = l
                if vb[s] < l:
                    vb[s] = l
            info[PENDING] = -1.0
            info[STATS_OF] = -1.0          # the statistics of b are stale now
            if not sweep_mode:
                return 0.0
            stats[0] += dobj
            stats[1] += trial
            stats[2] += 1
            damping[b] = max(dmin, a_b / relax) if trial == 0 else a_b
            done = True

        # -- DISCARD (the weights were put back above): mark the rows the trial overwrote
        if act == DISCARD:
            for z in range(z0, z1):
                s, f = SPAN[0, z], SPAN[1, z]
                if va[s] >= f:
                    va[s] = f - 1
            info[PENDING] = -1.0
            if not sweep_mode:
                return 0.0
            a_b *= up
            trial += 1
            if trial < max_trials:
                act = PROPOSE
                continue
            stats[1] += max_trials
            damping[b] = a_b
            done = True

        if done:
            if inside and max_skip > 0:
                zero_streak[b] += 1
                skip_until[b] = sweep + 1 + min(2 ** (min(zero_streak[b], 20) - 1), max_skip)
            else:
                zero_streak[b] = 0
            act = NEXT


# --------------------------------------------------------------------------- Python side
class CRFBlocks:
    """Block coordinate descent state of a :class:`~spargel.chain.crf.ChainCRF`
    (what its "blocks" and "block_sweep" methods delegate to).

    ``group``, ``split``, ``single``: see :class:`BlockIndex`.
    """

    def __init__(self, model, group=True, split=True, single=False):
        space, data = model.space, model.data
        view = model.view
        self.model = model
        self.ix = BlockIndex(space, data, group, split, single)
        self.ixt = self.ix.as_tuple()
        self.sp, self.dt = view.space_t, view.data_t
        self.emp = model.empirical
        L, Lp = view.L, view.Lp
        self.L = L
        n_tok, n_seq = data.n_tokens, data.n_sequences
        self.w = np.zeros(space.n_params)
        self.hd = Header(int(self.ix.n_u), int(self.ix.n_groups), int(L), int(space.b_base),
                         np.arange(3, dtype=np.int64))
        # rows: (E, psi, alpha, beta) per token, (shift, logca, alpha's and beta's headroom: see
        # _rows) per token, (va, vb) per sequence
        self.rows = BlockRows(np.zeros((4, n_tok, Lp)), np.zeros((4, n_tok)), np.zeros((2, n_seq), np.int64),
                              data.seq_ptr)
        # bigram non-zero weights in their attribute's slots; the view: attribute 2a owns
        # slots vptr[2a]:vptr[2a+1] (the non-zero ones), 2a+1 the rest of a's slots
        n_b = self.ix.n_b
        nb = max(len(space.b_pair), 1)
        vptr = np.zeros(2 * n_b + 1, np.int64)
        vptr[0:2 * n_b:2] = space.b_ptr[:-1]
        vptr[1:2 * n_b:2] = space.b_ptr[:-1]
        vptr[2 * n_b] = space.b_ptr[-1]
        dt = self.dt
        cap = L * L + 1
        self.pos = BigramSlots(dt.big_ptr, (2 * dt.big_ids).astype(dt.big_ids.dtype), dt.big_vals, vptr,
                               np.zeros(nb, space.b_pair.dtype), np.zeros((2, nb), np.int64), np.zeros((2, nb)),
                               np.zeros((4, cap), np.int64), np.zeros((3, cap)), np.zeros(L * L + 2, np.uint8))
        ix = self.ix
        mc, mo = ix.max_coord, ix.max_occ
        # scratch (a BlockWork)
        self.wk = BlockWork(np.zeros((6, mc)), np.zeros((4, mo, Lp)), np.zeros((2, mo)), np.zeros(ix.max_span),
                            np.zeros((3, max(L * L, Lp))), C.exp_scratch(mo, Lp), np.array([-1.0, 0.0, -1.0]))
        self.trans = None
        self.kind = None
        self._none_i = np.zeros(0, np.int64)
        self._none_f = np.zeros(0)
        self._ctl = tuple(SweepControl(self._none_i, self._none_f, self._none_f, np.zeros(0), np.zeros(0, np.int64),
                                       np.zeros(0, np.int64), (0.0,) * len(SweepOptions._fields), np.zeros(N_STATS)))
        self.big = True if len(dt.big_ids) > 0 else None
        self._plain = tuple(tuple(x) for x in (self.hd, self.ixt, self.sp, self.rows, self.pos, self.wk))
        self.started = False

    # -- helpers ------------------------------------------------------------------------
    def _run(self, op, b=0, ctl=None):
        hd, ix, sp, rows, pos, wk = self._plain          # plain tuples: see run
        return run(op, b, hd, ix, sp, rows, pos, self.trans, wk, self.w, self.emp,
                   self._ctl if ctl is None else ctl, self.big)

    def _transitions(self, kind):
        s = self.model.space
        L = self.L
        t_pair = s.t_pair.astype(np.int64)
        self.trans = C.make_transitions(L, t_pair // L, t_pair % L, self.w[s.t_base:], kind=kind, keep_zeros=True)
        self.kind = kind

    def transition_kind(self, w):
        """ONES when at most a quarter of the |Y|^2 transitions of w are non-zero and none
        is so negative that ``1 + expm1`` would cancel."""
        s = self.model.space
        t = w[s.t_base:]
        nnz = int(np.count_nonzero(t))
        few = nnz <= ONES_FRACTION * self.L * self.L
        return C.ONES if few and not (len(t) and t.min() < -C.CANCEL_LIMIT) else C.DENSE

    def _info(self, k):
        return int(self.wk.info[k])

    def _check_block(self, b):
        if not self.started:
            raise RuntimeError("call block_begin(w) first")
        if not 0 <= b < self.ix.n_blocks:
            raise IndexError(f"block {b} out of range (the layout has {self.ix.n_blocks} blocks)")

    # -- the protocol -------------------------------------------------------------------
    def layout(self):
        return self.ix.ptr, self.ix.index

    def begin(self, w):
        """Start from weights w. With the weights already loaded, only the transition
        structure is re-chosen (the caches survive unless it changes)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != self.w.shape:
            raise ValueError(f"weights have shape {w.shape}, the model has {self.w.shape[0]} parameters")
        self.discard()
        kind = self.transition_kind(w)
        if self.started and np.array_equal(w, self.w):
            if kind != self.kind:
                self._transitions(kind)
                self._run(REKIND)
            return
        self.w[:] = w
        self.wk.info[STATS_OF] = -1.0
        self._transitions(kind)
        self._run(BEGIN)
        self.started = True

    def grad_hess(self, b):
        self._check_block(b)
        self.discard()
        if self._run(GRAD, b) != 1.0:
            raise FloatingPointError(_SCALING)
        n = int(self.ix.blk_c1[b] - self.ix.blk_c0[b])
        return self.wk.VEC[0, :n].copy(), self.wk.VEC[1, :n].copy()

    def change(self, b, dw):
        """The exact loss change of moving block b by dw (the trial is kept until
        :meth:`commit` or :meth:`discard`); after :meth:`grad_hess` of b."""
        self._check_block(b)
        self.discard()
        n = int(self.ix.blk_c1[b] - self.ix.blk_c0[b])
        dw = np.asarray(dw, dtype=np.float64)
        if dw.shape != (n,):
            raise ValueError(f"block {b} has {n} coordinates, got a step of shape {dw.shape}")
        if self._info(STATS_OF) != b:
            raise RuntimeError(f"block_change({b}) needs block_grad_hess({b}) first (at the current weights)")
        self.wk.VEC[3, :n] = dw
        return float(self._run(CHANGE, b))

    def commit(self):
        b = self._info(PENDING)
        if b >= 0:
            self._run(COMMIT, b)

    def discard(self):
        b = self._info(PENDING)
        if b >= 0:
            self._run(DISCARD, b)

    def rounding(self):
        """Magnitude of the log-partition terms of the last block's statistics (the
        rounding allowance of the acceptance test is relative to it)."""
        return float(self.wk.info[ROUNDING])

    def loss(self):
        self.discard()
        logz = self._run(LOSS)
        if not np.isfinite(logz):
            raise FloatingPointError(_SCALING)
        return float(logz - np.dot(self.w, self.emp))

    def weights(self):
        return self.w.copy()

    def sweep(self, order, l1, l2, damping, skip_until, zero_streak, opts, stats):
        if not self.started:
            raise RuntimeError("call block_begin(w) first")
        self.discard()
        order = np.ascontiguousarray(order, dtype=np.int64)
        ctl = SweepControl(order, l1, l2, damping, skip_until, zero_streak, tuple(opts), stats)
        self._run(SWEEP, 0, tuple(ctl))
        if stats[6]:
            raise FloatingPointError(_SCALING)


_SCALING = ("block coordinate descent: a scaled forward/backward row underflowed or overflowed "
            "(weights too large); add an l2 penalty")
