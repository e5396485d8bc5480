"""Compiled kernels of (blockwise) coordinate descent for the linear-chain CRF
(Sokolovska et al. 2010, Algorithms 1 and 2). See ``coordinate_descent.py`` and
``docs/bcd.md``.

Everything lives in flat arrays:

* the inverted index ``attribute -> occurrences`` (``a_ptr``, ``a_tok``, ``a_val``),
  attributes numbered unigram first (``m < n_u``) then bigram (``n_u + a``);
* blocks: groups of attributes occurring at exactly the same tokens (``blk_ptr``,
  ``blk_attr``), each with its spans ``(sequence, first token, last token, first
  occurrence, end occurrence)``; the optional last block is the global transitions;
* the training state: emission scores ``E``, their shifted exponentials ``psi`` (shift
  ``msh``), scaled forward rows ``alpha`` with their log normalisers ``logca``,
  normalised backward rows ``beta``, and per sequence the last token whose alpha is
  valid (``va``) and the first token from which beta is valid (``vb``). A block update
  invalidates alpha after its first occurrence and beta before its last one; later
  blocks recompute only what they need (the cache is how blocks share work).
"""

import math

import numpy as np
from numba import njit

from ..models import crf_kernels as K
from ..models import sparse_kernels as S

FAST = K.FAST


# --------------------------------------------------------------------------- index
@njit(cache=True)
def occurrence_index(n_tok, data, n_u, n_b):
    """Inverted index attribute -> (token, value), tokens ascending; linear time."""
    uni_ptr, uni_ids, uni_vals = data[1], data[2], data[3]
    big_ptr, big_ids, big_vals = data[4], data[5], data[6]
    n_attr = n_u + n_b
    a_ptr = np.zeros(n_attr + 1, np.int64)
    for j in range(len(uni_ids)):
        a_ptr[uni_ids[j] + 1] += 1
    for j in range(len(big_ids)):
        a_ptr[n_u + big_ids[j] + 1] += 1
    for m in range(n_attr):
        a_ptr[m + 1] += a_ptr[m]
    pos = a_ptr[:-1].copy()
    total = a_ptr[n_attr]
    a_tok = np.empty(total, np.int64)
    a_val = np.empty(total)
    for t in range(n_tok):
        for j in range(uni_ptr[t], uni_ptr[t + 1]):
            m = uni_ids[j]
            a_tok[pos[m]] = t
            a_val[pos[m]] = uni_vals[j]
            pos[m] += 1
        for j in range(big_ptr[t], big_ptr[t + 1]):
            m = n_u + big_ids[j]
            a_tok[pos[m]] = t
            a_val[pos[m]] = big_vals[j]
            pos[m] += 1
    return a_ptr, a_tok, a_val


@njit(cache=True)
def occurrence_hashes(a_ptr, a_tok):
    n = len(a_ptr) - 1
    h = np.empty(n, np.uint64)
    for m in range(n):
        x = np.uint64(1469598103934665603)
        for o in range(a_ptr[m], a_ptr[m + 1]):
            x = (x ^ np.uint64(a_tok[o])) * np.uint64(1099511628211)
        h[m] = x
    return h


@njit(cache=True)
def group_sorted(order, counts, hashes, a_ptr, a_tok):
    """Group attributes (visited in ``order``, sorted by (count, hash)) whose occurrence
    token lists are identical. Returns the group id of every attribute."""
    n = len(order)
    gid = np.empty(n, np.int64)
    g = -1
    rep = -1
    for r in range(n):
        m = order[r]
        same = False
        if rep >= 0 and counts[m] == counts[rep] and hashes[m] == hashes[rep]:
            same = True
            o1, o2 = a_ptr[m], a_ptr[rep]
            for o in range(counts[m]):
                if a_tok[o1 + o] != a_tok[o2 + o]:
                    same = False
                    break
        if not same:
            g += 1
            rep = m
        gid[m] = g
    return gid


@njit(cache=True)
def block_spans(blk_ptr, blk_attr, a_ptr, a_tok, tok_seq, seq_ptr, with_trans):
    """Per block, its spans (s, first token, last token, occurrence lo, hi); the
    transitions block (when with_trans) spans tokens 1..n-1 of every sequence."""
    n_blk = len(blk_ptr) - 1
    n_seq = len(seq_ptr) - 1
    cap = 0
    for b in range(n_blk):
        cap += a_ptr[blk_attr[blk_ptr[b]] + 1] - a_ptr[blk_attr[blk_ptr[b]]]
    cap += n_seq
    bs_ptr = np.zeros(n_blk + 2, np.int64)
    sp_seq = np.empty(cap, np.int64)
    sp_f = np.empty(cap, np.int64)
    sp_l = np.empty(cap, np.int64)
    sp_olo = np.empty(cap, np.int64)
    sp_ohi = np.empty(cap, np.int64)
    n = 0
    for b in range(n_blk):
        m = blk_attr[blk_ptr[b]]
        o0, o1 = a_ptr[m], a_ptr[m + 1]
        o = o0
        while o < o1:
            s = tok_seq[a_tok[o]]
            start = o
            while o + 1 < o1 and tok_seq[a_tok[o + 1]] == s:
                o += 1
            sp_seq[n] = s
            sp_f[n] = a_tok[start]
            sp_l[n] = a_tok[o]
            sp_olo[n] = start - o0
            sp_ohi[n] = o + 1 - o0
            n += 1
            o += 1
        bs_ptr[b + 1] = n
    if with_trans:
        for s in range(n_seq):
            lo, hi = seq_ptr[s], seq_ptr[s + 1]
            if hi - lo >= 2:
                sp_seq[n] = s
                sp_f[n] = lo + 1
                sp_l[n] = hi - 1
                sp_olo[n] = 0
                sp_ohi[n] = 0
                n += 1
    bs_ptr[n_blk + 1] = n
    return bs_ptr, sp_seq[:n].copy(), sp_f[:n].copy(), sp_l[:n].copy(), sp_olo[:n].copy(), sp_ohi[:n].copy()


# --------------------------------------------------------------------------- cached forward / backward
@njit(cache=True, nogil=True, fastmath=FAST)
def alpha_row(space, data, sp, st, scr, lo, t):
    """Scaled alpha of token t from alpha[t-1] (or the emissions at t == lo). Returns
    False when scaling failed."""
    L = space[0]
    psi, msh, alpha, logca = st[1], st[2], st[3], st[4]
    acc, mark, tp, ti, tj, tc = scr[0], scr[1], scr[2], scr[3], scr[4], scr[5]
    if t == lo:
        c = 0.0
        for y in range(L):
            c += psi[t, y]
        if not (c > 0.0) or not math.isfinite(c):
            return False
        inv = 1.0 / c
        for y in range(L):
            alpha[t, y] = psi[t, y] * inv
        logca[t] = msh[t] + math.log(c)
        return True
    nt = S.gather(space, data, sp, t, acc, mark, tp, ti, tj, tc)
    c = S.forward_step(alpha[t - 1], alpha[t], psi[t], sp, L, nt, ti, tj, tc)
    if not (c > 0.0) or not math.isfinite(c):
        return False
    inv = 1.0 / c
    for y in range(L):
        alpha[t, y] *= inv
    logca[t] = msh[t] + math.log(c) + (0.0 if sp[0] else sp[2])
    return True


@njit(cache=True, nogil=True)
def ensure_alpha(space, data, sp, st, scr, s, upto):
    va = st[6]
    lo = data[0][s]
    for t in range(max(va[s] + 1, lo), upto + 1):
        if not alpha_row(space, data, sp, st, scr, lo, t):
            va[s] = t - 1
            return False
    if upto > va[s]:
        va[s] = upto
    return True


@njit(cache=True, nogil=True, fastmath=FAST)
def ensure_beta(space, data, sp, st, scr, s, downto):
    L = space[0]
    psi, beta, vb = st[1], st[5], st[7]
    acc, mark, tp, ti, tj, tc, r = scr[0], scr[1], scr[2], scr[3], scr[4], scr[5], scr[6]
    hi = data[0][s + 1]
    if vb[s] >= hi:
        for y in range(L):
            beta[hi - 1, y] = 1.0 / L
        vb[s] = hi - 1
    for t in range(vb[s] - 1, downto - 1, -1):
        for j in range(L):
            r[j] = psi[t + 1, j] * beta[t + 1, j]
        nt = S.gather(space, data, sp, t + 1, acc, mark, tp, ti, tj, tc)
        S.backward_step(r, beta[t], sp, L, nt, ti, tj, tc)
        d = 0.0
        for i in range(L):
            d += beta[t, i]
        if not (d > 0.0) or not math.isfinite(d):
            vb[s] = t + 1
            return False
        inv = 1.0 / d
        for i in range(L):
            beta[t, i] *= inv
        vb[s] = t
    return True


@njit(cache=True, nogil=True)
def span_part(st, f, l, L):
    """sum(logca[f..l]) + log(alpha[l] . beta[l]): the part of log Z that a change of
    the weights acting on tokens f..l can move."""
    logca, alpha, beta = st[4], st[3], st[5]
    s = 0.0
    for t in range(f, l + 1):
        s += logca[t]
    d = 0.0
    for y in range(L):
        d += alpha[l, y] * beta[l, y]
    return s + math.log(d)


# --------------------------------------------------------------------------- one block
@njit(cache=True, nogil=True)
def block_coords(space, blk, b, idx, is_trans):
    """Global weight index of every coordinate of block b into idx; returns the count."""
    u_ptr, b_ptr, b_base, t_pair, t_base = space[1], space[3], space[5], space[6], space[7]
    n_u = blk[7]
    n = 0
    if is_trans:
        for k in range(len(t_pair)):
            idx[n] = t_base + k
            n += 1
        return n
    blk_ptr, blk_attr = blk[0], blk[1]
    for q in range(blk_ptr[b], blk_ptr[b + 1]):
        m = blk_attr[q]
        if m < n_u:
            for k in range(u_ptr[m], u_ptr[m + 1]):
                idx[n] = k
                n += 1
        else:
            a = m - n_u
            for k in range(b_ptr[a], b_ptr[a + 1]):
                idx[n] = b_base + k
                n += 1
    return n


ROWS = 2048   # rows gathered before one matrix product in the pair statistics


@njit(cache=True, nogil=True)
def _flush(A, R, AH, A2, R2, n, GP, HP1, HP2):
    if n == 0:
        return
    GP += np.dot(A[:n].T, R[:n])
    HP1 += np.dot(AH[:n].T, R[:n])
    HP2 += np.dot(A2[:n].T, R2[:n])


@njit(cache=True, nogil=True, fastmath=FAST)
def pair_stats(space, data, sp, st, scr, pst, blk, b, is_trans, m, G, H, n0):
    """Gradient and approximate Hessian of the pair weights of bigram attribute m
    (global attribute id; or of the transitions when is_trans) over block b's
    occurrences, added to G/H from position n0.

    The pairwise marginal at t is P = alpha[t-1] (x) r * M_t / Z_t with r = psi_t * beta_t.
    Pairs that carry no weight at t have M = base, so their sums are matrix products of
    the stacked (alpha / Z) and r rows (done in blocks of ROWS by BLAS), multiplied
    by the base at the end; the pairs touched at t get an O(1) correction each. The
    cost follows the non-zero weights, not |Y|^2 per occurrence."""
    L, b_ptr, b_pair, t_pair = space[0], space[3], space[4], space[6]
    seq_ptr = data[0]
    psi, alpha, beta = st[1], st[3], st[5]
    acc, mark, tp, ti, tj, tc, r, cur = scr[0], scr[1], scr[2], scr[3], scr[4], scr[5], scr[6], scr[7]
    A, R, AH, A2, R2, GP, HP1, HP2, cG, cH = pst
    blk_ptr, blk_attr, a_ptr, a_tok, a_val, bs_ptr = blk[0], blk[1], blk[2], blk[3], blk[4], blk[5]
    sp_seq, sp_f, sp_l, sp_olo, sp_ohi = blk[6][0], blk[6][1], blk[6][2], blk[6][3], blk[6][4]
    ones, expT = sp[0], sp[1]
    GP[:, :] = 0.0
    HP1[:, :] = 0.0
    HP2[:, :] = 0.0
    cG[:] = 0.0
    cH[:] = 0.0
    o_base = 0
    if not is_trans:
        o_base = a_ptr[blk_attr[blk_ptr[b]]]
    nrow = 0
    for z in range(bs_ptr[b], bs_ptr[b + 1]):
        s = sp_seq[z]
        lo = seq_ptr[s]
        if is_trans:
            o_lo, o_hi = sp_f[z], sp_l[z] + 1
        else:
            o_lo, o_hi = sp_olo[z], sp_ohi[z]
        for o in range(o_lo, o_hi):
            if is_trans:
                t = o
                v = 1.0
            else:
                t = a_tok[o_base + o]
                v = a_val[a_ptr[m] + o]
            if t == lo or v == 0.0:
                continue
            for j in range(L):
                r[j] = psi[t, j] * beta[t, j]
            nt = S.gather(space, data, sp, t, acc, mark, tp, ti, tj, tc)
            Z = S.forward_step(alpha[t - 1], cur, r, sp, L, nt, ti, tj, tc)
            prev = alpha[t - 1]
            iz = 1.0 / Z
            a1 = v * iz
            a2 = v * a1
            a3 = a1 * a1
            for i in range(L):
                ai = prev[i]
                A[nrow, i] = ai * a1
                AH[nrow, i] = ai * a2
                A2[nrow, i] = ai * ai * a3
                R[nrow, i] = r[i]
                R2[nrow, i] = r[i] * r[i]
            for q in range(nt):
                i, j = ti[q], tj[q]
                p = i * L + j
                bp = 1.0 if ones else expT[p]
                pb = prev[i] * bp * r[j] * iz
                pt = pb + prev[i] * tc[q] * r[j] * iz
                cG[p] += v * (pt - pb)
                cH[p] += v * v * ((pt - pt * pt) - (pb - pb * pb))
            nrow += 1
            if nrow == ROWS:
                _flush(A, R, AH, A2, R2, nrow, GP, HP1, HP2)
                nrow = 0
    _flush(A, R, AH, A2, R2, nrow, GP, HP1, HP2)
    n = n0
    if is_trans:
        lo_k, hi_k, off = 0, len(t_pair), 0
    else:
        a = m - blk[7]
        lo_k, hi_k, off = b_ptr[a], b_ptr[a + 1], 1
    for k in range(lo_k, hi_k):
        p = t_pair[k] if off == 0 else b_pair[k]
        i = p // L
        j = p - i * L
        bp = 1.0 if ones else expT[p]
        G[n] += GP[i, j] * bp + cG[p]
        H[n] += HP1[i, j] * bp - HP2[i, j] * bp * bp + cH[p]
        n += 1


@njit(cache=True, nogil=True, fastmath=FAST)
def block_stats(space, data, sp, st, scr, pst, blk, b, is_trans, G, H, old_part, need_uni, need_big):
    """Gradient of the summed log Z (expected counts) and the approximate diagonal
    Hessian (eq. 16) of the coordinates of block b, from the cached alpha/beta over
    the block's spans. Returns False when scaling failed."""
    L, u_ptr, u_lab, b_ptr = space[0], space[1], space[2], space[3]
    alpha, beta = st[3], st[5]
    q = scr[7]
    blk_ptr, blk_attr, a_ptr, a_tok, a_val, bs_ptr = blk[0], blk[1], blk[2], blk[3], blk[4], blk[5]
    sp_seq, sp_f, sp_l, sp_olo, sp_ohi, n_u = blk[6][0], blk[6][1], blk[6][2], blk[6][3], blk[6][4], blk[7]
    o_base = 0
    if not is_trans:
        o_base = a_ptr[blk_attr[blk_ptr[b]]]
    for z in range(bs_ptr[b], bs_ptr[b + 1]):
        s = sp_seq[z]
        f, l = sp_f[z], sp_l[z]
        if not ensure_alpha(space, data, sp, st, scr, s, l):
            return False
        if not ensure_beta(space, data, sp, st, scr, s, f):
            return False
        old_part[z - bs_ptr[b]] = span_part(st, f, l, L)
        if is_trans or not need_uni:
            continue
        for o in range(sp_olo[z], sp_ohi[z]):
            t = a_tok[o_base + o]
            Zq = 0.0
            for y in range(L):
                v = alpha[t, y] * beta[t, y]
                q[y] = v
                Zq += v
            inv = 1.0 / Zq
            for y in range(L):
                q[y] *= inv
            n = 0
            for qq in range(blk_ptr[b], blk_ptr[b + 1]):
                m = blk_attr[qq]
                if m >= n_u:
                    break
                v = a_val[a_ptr[m] + o]
                v2 = v * v
                for k in range(u_ptr[m], u_ptr[m + 1]):
                    pk = q[u_lab[k]]
                    G[n] += v * pk
                    H[n] += v2 * pk * (1.0 - pk)
                    n += 1
    if is_trans:
        pair_stats(space, data, sp, st, scr, pst, blk, b, True, 0, G, H, 0)
        return True
    if not need_big:
        return True
    n = 0
    for qq in range(blk_ptr[b], blk_ptr[b + 1]):
        m = blk_attr[qq]
        if m < n_u:
            n += u_ptr[m + 1] - u_ptr[m]
        else:
            pair_stats(space, data, sp, st, scr, pst, blk, b, False, m, G, H, n)
            n += b_ptr[m - n_u + 1] - b_ptr[m - n_u]
    return True


@njit(cache=True, nogil=True)
def refresh_structure(w, space, spm, blk, b, is_trans):
    """Re-list the non-zero weights that block b owns (after its weights changed).
    Returns the new sp tuple (transitions may switch base)."""
    ones_arr, expT, tinfo, tnz_pair, tnz_val, tcount = spm[0], spm[1], spm[2], spm[3], spm[4], spm[5]
    bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1 = spm[6], spm[7], spm[8], spm[9], spm[10], spm[11]
    n_u = blk[7]
    L = space[0]
    if is_trans:
        t_pair, t_base = space[6], space[7]
        nnz = 0
        for k in range(len(t_pair)):
            if w[t_base + k] != 0.0:
                nnz += 1
        ones = nnz <= S.TRANS_SPARSE_FRACTION * L * L
        ones_arr[0] = 1 if ones else 0
        tmax, n = S.fill_transitions(w, space, ones, expT, tnz_pair, tnz_val, spm[12], spm[13], spm[14])
        tinfo[0] = tmax
        tcount[0] = n
        S.fill_all_bigram(w, space, ones, expT, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1)
    else:
        ones = ones_arr[0] == 1
        blk_ptr, blk_attr = blk[0], blk[1]
        for q in range(blk_ptr[b], blk_ptr[b + 1]):
            m = blk_attr[q]
            if m >= n_u:
                S.fill_bigram_attr(w, space, ones, expT, m - n_u, bnz_cnt, bnz_pair, bnz_i, bnz_j, bnz_w, bnz_e1)


@njit(cache=True, nogil=True)
def make_sp(spm):
    n = spm[5][0]
    return (spm[0][0] == 1, spm[1], spm[2][0], spm[3][:n], spm[4][:n], spm[6], spm[7], spm[8], spm[9],
            spm[10], spm[11], spm[12][:n], spm[13][:n], spm[14][:n])


@njit(cache=True, nogil=True)
def update_emissions(space, st, blk, b, idx, dw, n_coord, sgn):
    """E/psi of the block's occurrence tokens after the block's unigram weights moved
    by sgn * dw (sgn = 1 apply, the saved rows are restored separately)."""
    L, u_ptr, u_lab = space[0], space[1], space[2]
    E, psi, msh = st[0], st[1], st[2]
    blk_ptr, blk_attr, a_ptr, a_tok, a_val, n_u = blk[0], blk[1], blk[2], blk[3], blk[4], blk[7]
    first = blk_attr[blk_ptr[b]]
    o0, o1 = a_ptr[first], a_ptr[first + 1]
    for o in range(o1 - o0):
        t = a_tok[o0 + o]
        n = 0
        for q in range(blk_ptr[b], blk_ptr[b + 1]):
            m = blk_attr[q]
            if m < n_u:
                v = a_val[a_ptr[m] + o]
                for k in range(u_ptr[m], u_ptr[m + 1]):
                    E[t, u_lab[k]] += sgn * v * dw[n]
                    n += 1
        msh[t] = S.psi_row(E[t], psi[t], L)


@njit(cache=True, nogil=True)
def save_rows(st, blk, b, buf, bufm):
    L = st[0].shape[1]
    E, psi, msh = st[0], st[1], st[2]
    blk_ptr, blk_attr, a_ptr, a_tok = blk[0], blk[1], blk[2], blk[3]
    first = blk_attr[blk_ptr[b]]
    o0, o1 = a_ptr[first], a_ptr[first + 1]
    for o in range(o1 - o0):
        t = a_tok[o0 + o]
        for y in range(L):
            buf[o, y] = E[t, y]
            buf[o, L + y] = psi[t, y]
        bufm[o] = msh[t]


@njit(cache=True, nogil=True)
def restore_rows(st, blk, b, buf, bufm):
    L = st[0].shape[1]
    E, psi, msh = st[0], st[1], st[2]
    blk_ptr, blk_attr, a_ptr, a_tok = blk[0], blk[1], blk[2], blk[3]
    first = blk_attr[blk_ptr[b]]
    o0, o1 = a_ptr[first], a_ptr[first + 1]
    for o in range(o1 - o0):
        t = a_tok[o0 + o]
        for y in range(L):
            E[t, y] = buf[o, y]
            psi[t, y] = buf[o, L + y]
        msh[t] = bufm[o]


@njit(cache=True, nogil=True)
def process_block(w, space, data, spm, st, scr, pst, blk, b, is_trans, emp, l1, l2, damping, opts, c_lo, c_hi,
                  G, H, idx, wold, dw, old_part, buf, bufm, out):
    """One (block) coordinate descent step on block b, coordinates c_lo..c_hi-1 of the
    block (all of them for BCD, one for CD). out receives: [0] objective change,
    [1] trials rejected, [2] 1 if the block moved, [3] max optimality violation before
    the step, [4] 1 if the block is zero and strictly inside the l1 band (skippable),
    [5] 1 if scaling failed. Returns the new damping factor."""
    L = space[0]
    max_trials, damping_up, damping_min, max_step, h_floor, accept_tol = (
        int(opts[0]), opts[1], opts[2], opts[3], opts[4], opts[5])
    seq_ptr = data[0]
    bs_ptr, sp_seq, sp_f, sp_l = blk[5], blk[6][0], blk[6][1], blk[6][2]
    va, vb = st[6], st[7]
    n_coord = block_coords(space, blk, b, idx, is_trans)
    if c_hi < 0:
        c_hi = n_coord
    for n in range(n_coord):
        G[n] = 0.0
        H[n] = 0.0
    for k in range(6):
        out[k] = 0.0
    n_uni = 0
    if not is_trans:
        for q in range(blk[0][b], blk[0][b + 1]):
            m = blk[1][q]
            if m < blk[7]:
                n_uni += space[1][m + 1] - space[1][m]
    sp = make_sp(spm)
    if not block_stats(space, data, sp, st, scr, pst, blk, b, is_trans, G, H, old_part, c_lo < n_uni,
                       is_trans or c_hi > n_uni):
        out[5] = 1.0
        return damping
    viol = 0.0
    inside = True
    for n in range(c_lo, c_hi):
        k = idx[n]
        G[n] -= emp[k]                      # loss gradient = expected - empirical counts
        g = G[n] + l2[k] * w[k]
        if w[k] != 0.0:
            v = abs(g + (l1[k] if w[k] > 0 else -l1[k]))
            inside = False
        else:
            v = max(abs(g) - l1[k], 0.0)
            if not abs(G[n]) < 0.9 * l1[k]:
                inside = False
        if v > viol:
            viol = v
    out[3] = viol
    out[4] = 1.0 if inside else 0.0
    n_span = bs_ptr[b + 1] - bs_ptr[b]
    has_uni = c_lo < n_uni
    for n in range(n_coord):
        wold[n] = w[idx[n]]
    alpha_b = damping
    for trial in range(max_trials):
        moved = False
        dpen = 0.0
        dlin = 0.0
        for n in range(n_coord):
            dw[n] = 0.0
        for n in range(c_lo, c_hi):
            k = idx[n]
            h = alpha_b * max(H[n], h_floor)
            x = wold[n]
            z = h * x - G[n]
            if z > l1[k]:
                nw = (z - l1[k]) / (h + l2[k])
            elif z < -l1[k]:
                nw = (z + l1[k]) / (h + l2[k])
            else:
                nw = 0.0
            d = nw - x
            if d > max_step:
                d = max_step
                nw = x + d
            elif d < -max_step:
                d = -max_step
                nw = x + d
            if d != 0.0:
                moved = True
            dw[n] = d
            dlin += d * emp[k]
            dpen += l1[k] * (abs(nw) - abs(x)) + 0.5 * l2[k] * (nw * nw - x * x)
        if not moved:
            return max(damping_min, alpha_b)
        for n in range(n_coord):
            w[idx[n]] = wold[n] + dw[n]
        if has_uni:
            save_rows(st, blk, b, buf, bufm)
            update_emissions(space, st, blk, b, idx, dw, n_coord, 1.0)
        refresh_structure(w, space, spm, blk, b, is_trans)
        sp = make_sp(spm)
        dlogz = 0.0
        ok = True
        scale = 0.0
        for z in range(bs_ptr[b], bs_ptr[b + 1]):
            s = sp_seq[z]
            f, l = sp_f[z], sp_l[z]
            lo = seq_ptr[s]
            va[s] = f - 1
            if not ensure_alpha(space, data, sp, st, scr, s, l):
                ok = False
                break
            part = span_part(st, f, l, L)
            old = old_part[z - bs_ptr[b]]
            dlogz += part - old
            scale += abs(old)
        dobj = dlogz - dlin + dpen
        if ok and math.isfinite(dobj) and dobj <= accept_tol * (scale + 1.0):
            for z in range(bs_ptr[b], bs_ptr[b + 1]):
                s = sp_seq[z]
                l = sp_l[z]
                va[s] = l
                if vb[s] < l:
                    vb[s] = l
            out[0] = dobj
            out[1] = trial
            out[2] = 1.0
            return max(damping_min, alpha_b / opts[7]) if trial == 0 else alpha_b
        # reject: restore the weights, the emissions and the structure; damp harder
        for n in range(n_coord):
            w[idx[n]] = wold[n]
        if has_uni:
            restore_rows(st, blk, b, buf, bufm)
        refresh_structure(w, space, spm, blk, b, is_trans)
        for z in range(bs_ptr[b], bs_ptr[b + 1]):
            s = sp_seq[z]
            f = sp_f[z]
            if va[s] >= f:
                va[s] = f - 1
        alpha_b *= damping_up
    out[1] = max_trials
    return alpha_b


@njit(cache=True, nogil=True)
def run_blocks(w, space, data, spm, st, scr, pst, blk, order, emp, l1, l2, damping, opts, single, split, sweep,
               skip_until, zero_streak, allow_skip, bufs, stats):
    """Process the blocks in ``order`` (BCD; CD when ``single``: one coordinate at a
    time). stats: [0] sum of objective changes, [1] rejected trials, [2] blocks moved,
    [3] blocks visited, [4] blocks skipped, [5] max violation, [6] scaling failure."""
    G, H, idx, wold, dw, old_part, buf, bufm, out = bufs
    n_blk = len(blk[0]) - 1
    max_skip = int(opts[6])
    for r in range(len(order)):
        b = order[r]
        is_trans = b == n_blk
        if allow_skip and skip_until[b] > sweep:
            stats[4] += 1
            continue
        stats[3] += 1
        if single:
            n_coord = block_coords(space, blk, b, idx, is_trans)
            inside = True
            for c in range(n_coord):
                damping[2 * b] = process_block(w, space, data, spm, st, scr, pst, blk, b, is_trans, emp, l1, l2,
                                           damping[2 * b], opts, c, c + 1, G, H, idx, wold, dw, old_part, buf,
                                           bufm, out)
                stats[0] += out[0]
                stats[1] += out[1]
                stats[2] += out[2]
                stats[5] = max(stats[5], out[3])
                if out[5] != 0.0:
                    stats[6] = 1.0
                    return
                if out[4] == 0.0:
                    inside = False
        else:
            # unigram part, then bigram part (each from fresh statistics), or all at once
            n_coord = block_coords(space, blk, b, idx, is_trans)
            n_uni = 0
            if not is_trans:
                for q in range(blk[0][b], blk[0][b + 1]):
                    m = blk[1][q]
                    if m < blk[7]:
                        n_uni += space[1][m + 1] - space[1][m]
            if split and 0 < n_uni < n_coord:
                parts = ((0, n_uni, 2 * b), (n_uni, n_coord, 2 * b + 1))
            else:
                parts = ((0, n_coord, 2 * b), (0, 0, -1))
            inside = True
            for part in parts:
                c0, c1, d = part
                if d < 0:
                    continue
                damping[d] = process_block(w, space, data, spm, st, scr, pst, blk, b, is_trans, emp, l1, l2,
                                           damping[d], opts, c0, c1, G, H, idx, wold, dw, old_part, buf, bufm,
                                           out)
                stats[0] += out[0]
                stats[1] += out[1]
                stats[2] += out[2]
                stats[5] = max(stats[5], out[3])
                if out[5] != 0.0:
                    stats[6] = 1.0
                    return
                if out[4] == 0.0:
                    inside = False
        if inside and max_skip > 0:
            zero_streak[b] += 1
            skip_until[b] = sweep + 1 + min(2 ** (min(zero_streak[b], 20) - 1), max_skip)
        else:
            zero_streak[b] = 0


@njit(cache=True, nogil=True)
def init_state(w, space, data, st):
    """Emission scores and their shifted exponentials for every token; caches empty."""
    L = space[0]
    E, psi, msh, va, vb = st[0], st[1], st[2], st[6], st[7]
    seq_ptr = data[0]
    n_tok = seq_ptr[len(seq_ptr) - 1]
    K.emission_scores(w, space, data, 0, n_tok, E)
    for t in range(n_tok):
        msh[t] = S.psi_row(E[t], psi[t], L)
    for s in range(len(seq_ptr) - 1):
        va[s] = seq_ptr[s] - 1
        vb[s] = seq_ptr[s + 1]


@njit(cache=True, nogil=True)
def total_logz(space, data, spm, st, scr):
    """Sum of log Z over all sequences from the cache (completing alpha to the ends);
    NaN when scaling failed."""
    sp = make_sp(spm)
    seq_ptr = data[0]
    logca = st[4]
    total = 0.0
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        if not ensure_alpha(space, data, sp, st, scr, s, hi - 1):
            return np.nan
        for t in range(lo, hi):
            total += logca[t]
    return total
