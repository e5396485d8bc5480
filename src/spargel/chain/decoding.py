"""Decoding on a chain, written once for every model that reduces to one (see
:mod:`.inference`): the best label sequence (:func:`viterbi`, exact ties broken towards
the lowest state) and the K best (:func:`nbest`), over the same state scores and
transition structures as the forward-backward, with the same position corrections.
"""

import numpy as np
from numba import njit

from ..core.jit import inner
from .inference import DENSE, FULL, MAT, NEG_INF, ONES, PAIR_ONES, position_scores


@njit(cache=True, nogil=True, inline="always")
def _better(v, i, best, arg):
    """Whether candidate (score v, source i) beats (best, arg): higher, or equal with a
    lower source (ties go to the lowest state)."""
    return v > best or (v == best and (arg < 0 or i < arg))


@njit(cache=True, nogil=True, inline="always")
def _pair_ones_max_step(prev, cur, arg, trans):
    """One Viterbi step under ``PAIR_ONES`` (no position corrections) in ``O(S +
    triples)``: destination ``(b, c)`` takes the best source ``(a, b)`` of its middle
    label b unless that source's triple has a score (then its whole column, A sources),
    and the scored triples are then looked at one by one. ``arg[L * L:]`` serves as
    scratch (those begin-marker states are never destinations)."""
    S, L = trans.S, trans.L
    A = S // L
    LL = L * L
    gi, gj, gk, fv = trans.gi, trans.gj, trans.gk, trans.fv
    for b in range(L):                  # best source of each middle label, lowest on ties
        m = b
        for a in range(1, A):
            if prev[a * L + b] > prev[m]:
                m = a * L + b
        arg[LL + b] = m
    for b in range(L):
        m = arg[LL + b]
        for c in range(L):
            j = b * L + c
            if fv[j * A + m // L] == 0.0:
                cur[j], arg[j] = prev[m], m
            else:
                best = NEG_INF
                bi = -1
                for a in range(A):
                    i = a * L + b
                    v = prev[i] + fv[j * A + a]
                    if _better(v, i, best, bi):
                        best, bi = v, i
                cur[j], arg[j] = best, bi
    for q in range(len(gi)):            # scored triples: a positive score may win
        x = fv[gk[q]]
        if x != 0.0:
            i, j = gi[q], gj[q]
            v = prev[i] + x
            if _better(v, i, cur[j], arg[j]):
                cur[j], arg[j] = v, i
    for j in range(LL, S):
        cur[j], arg[j] = NEG_INF, 0


@njit(cache=True, nogil=True, inline="always")
def _column_best(prev, scores, j, S):
    """(best score, source) of destination j over every source i: ``prev[i] +
    scores[j * S + i]`` (source -1 when all are -inf)."""
    best = NEG_INF
    arg = -1
    for i in range(S):
        v = prev[i] + scores[j * S + i]
        if _better(v, i, best, arg):
            best = v
            arg = i
    return best, arg


@inner()
def viterbi(E, n, trans, corr, delta, back, fv_t, out):
    """Best state sequence for scores E (constrained states already at -inf) into out;
    returns its score (-inf when no path is allowed). Ties go to the lowest state.

    Under ``ONES`` a step costs ``O(S + corrections)``, not ``S^2``: a pair whose score is
    zero contributes ``delta[i]``, so the best such source of every destination is the
    overall best state ``m`` unless the pair ``(m, j)`` has a score, and only the scored
    pairs (global and position corrections) and those columns are looked at one by one
    (at positions with fewer corrections than a quarter of the pairs; the others take
    the plain step). Under ``DENSE`` and ``ONES`` ``fv_t`` holds the structure's scores
    between steps: a step adds its position's corrections and takes them off again, so
    no step copies all ``S^2`` scores, and a position with a stored matrix (:data:`MAT`)
    reads its raw scores directly."""
    kind, S = trans.kind, trans.S
    fptr, fi, fv = trans.fptr, trans.fi, trans.fv
    gi, gj, gk = trans.gi, trans.gj, trans.gk
    cptr, ci, cj, cv, ck = corr.ptr, corr.src, corr.dst, corr.score, corr.pair
    sparse = kind == ONES
    allp = kind == DENSE or kind == ONES            # every pair allowed, k = j * S + i
    if allp:
        for k in range(S * S):
            fv_t[k] = fv[k]
    for y in range(S):
        delta[0, y] = E[0, y]
    for t in range(1, n):
        q0, q1 = cptr[t], cptr[t + 1]
        prev, cur, arg = delta[t - 1], delta[t], back[t]
        mat = q1 > q0 and ci[q0] == MAT
        full = q1 > q0 and ci[q0] == FULL
        if mat or (allp and not full):
            # every source of every destination, on scores kept in place (k = j * S + i)
            if not mat:
                for q in range(q0, q1):
                    fv_t[ck[q]] += cv[q]
            scores = trans.mscores[cj[q0]] if mat else fv_t
            if sparse and not mat and 4 * (q1 - q0) < S * S:
                m = 0
                for i in range(1, S):
                    if prev[i] > prev[m]:
                        m = i
                for j in range(S):
                    if scores[j * S + m] == 0.0:
                        cur[j], arg[j] = prev[m], m
                    else:
                        cur[j], arg[j] = _column_best(prev, scores, j, S)
                for q in range(len(gi)):
                    i, j = gi[q], gj[q]
                    v = prev[i] + scores[gk[q]]
                    if _better(v, i, cur[j], arg[j]):
                        cur[j], arg[j] = v, i
                for q in range(q0, q1):
                    i, j = ci[q], cj[q]
                    v = prev[i] + scores[ck[q]]
                    if _better(v, i, cur[j], arg[j]):
                        cur[j], arg[j] = v, i
            else:
                for j in range(S):
                    cur[j], arg[j] = _column_best(prev, scores, j, S)
            if not mat:
                for q in range(q0, q1):
                    fv_t[ck[q]] = fv[ck[q]]
        elif kind == PAIR_ONES and q0 == q1:
            _pair_ones_max_step(prev, cur, arg, trans)
        else:
            # the listed pairs (LIST, PAIR_ONES; a FULL position), in list order
            position_scores(trans, corr, t, fv_t)
            for j in range(S):
                best = NEG_INF
                a = -1
                for k in range(fptr[j], fptr[j + 1]):
                    i = fi[k]
                    v = prev[i] + fv_t[k]
                    if _better(v, i, best, a):
                        best = v
                        a = i
                cur[j], arg[j] = best, a
            if allp:
                for q in range(q0, q1):
                    fv_t[ck[q]] = fv[ck[q]]
        for j in range(S):
            cur[j] += E[t, j]
            arg[j] = max(arg[j], 0)
    y = 0
    for s in range(1, S):
        if delta[n - 1, s] > delta[n - 1, y]:
            y = s
    score = delta[n - 1, y]
    for t in range(n - 1, -1, -1):
        out[t] = y
        y = back[t, y]
    return score


@inner(allocates=True)
def nbest(E, n, trans, corr, K, fv_t, paths, scores):
    """The K best state sequences (list Viterbi): ``paths`` (K, n), ``scores`` (K,);
    rows past the number of distinct paths get score -inf. Returns that number."""
    S = trans.S
    fptr, fi = trans.fptr, trans.fi
    delta = np.full((n, S, K), NEG_INF)
    back_state = np.zeros((n, S, K), dtype=np.int32)
    back_rank = np.zeros((n, S, K), dtype=np.int32)
    for y in range(S):
        delta[0, y, 0] = E[0, y]
    maxin = 1
    for j in range(S):
        maxin = max(maxin, fptr[j + 1] - fptr[j])
    cand = np.empty(maxin * K)
    csrc = np.empty(maxin * K, dtype=np.int64)
    crank = np.empty(maxin * K, dtype=np.int64)
    for t in range(1, n):
        position_scores(trans, corr, t, fv_t)
        for j in range(S):
            m = 0
            for k in range(fptr[j], fptr[j + 1]):
                i = fi[k]
                for r in range(K):
                    cand[m] = delta[t - 1, i, r] + fv_t[k]
                    csrc[m] = i
                    crank[m] = r
                    m += 1
            order = np.argsort(-cand[:m], kind="mergesort")
            for r in range(min(K, m)):
                c = order[r]
                delta[t, j, r] = cand[c] + E[t, j]
                back_state[t, j, r] = csrc[c]
                back_rank[t, j, r] = crank[c]
    final = delta[n - 1].ravel()
    order = np.argsort(-final, kind="mergesort")
    found = 0
    for r in range(K):
        if r >= len(order) or final[order[r]] == NEG_INF:
            scores[r] = NEG_INF
            continue
        c = order[r]
        scores[r] = final[c]
        y = c // K
        rank = c % K
        for t in range(n - 1, -1, -1):
            paths[r, t] = y
            y, rank = back_state[t, y, rank], back_rank[t, y, rank]
        found += 1
    return found
