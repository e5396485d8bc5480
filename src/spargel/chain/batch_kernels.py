"""The batch and prediction kernels of both chain CRFs, written once with the order as
a parameter: the loss and gradient of a chunk of sequences (the scaled recursion, and
log space for the sequences where it fails), the empirical counts and the gradient's
finish, Viterbi, marginals, n-best and gold scores.

What differs per order comes from the order's own module: the state scores (first
order: :func:`~spargel.chain.crf_kernels.emissions` plus the bigram attributes'
position corrections; second order: the pair-state scores of
:mod:`spargel.chain.crf2_kernels`), the scatter of the expectations into the gradient,
the clamping of known labels and a transition's list index. Every kernel takes the
order as the two flags ``first, second`` of :func:`~spargel.chain.crf_kernels.order_flags`
(one True, the other None): numba compiles no code under ``if x is not None`` when
``x`` is None, so each order's compiled kernel holds that order's code only, as the
separate kernels did.

The leading arguments ``(space, data, aux, trans, bl, first, second)`` are a view's
``kernel_args`` (:mod:`spargel.chain.crf`): the layout (``Space``), the data
(``kernel_data.Data``), the padded unigram view, the transition structure and the
first order's bigram list (None at order 2, and at order 1 without bigram attributes:
the corrections are then not compiled). ``sw`` None: every sequence weighs 1;
``clamp`` None: the free pass (True: the clamped numerator of partially labelled
sequences); both prune the code they do not need. Scratch is a
:class:`~spargel.chain.kernel_data.Work` / ``LogWork``.
"""

import math


from ..core.jit import inner, kernel

from . import decoding as D
from . import inference as C
from . import crf2_kernels as K2
from . import crf_kernels as K


# --------------------------------------------------------------------------- per order
@inner(fastmath=C.FAST)
def state_rows(w, space, data, aux, trans, bl, lo, hi, buf, fixed, clamp, mats, first, second):
    """The state scores of tokens lo..hi-1 into ``buf.E`` (with ``clamp``, every label
    but ``fixed[t]`` (>= 0) at -inf; the states a constrained chain forbids at its first
    and last token at -inf) and, at order 1 with bigram attributes, their
    position corrections into ``buf.corr`` (``buf.need``: where pair marginals are
    needed; ``mats`` True: positions may name the stored matrices of
    ``crf_kernels.compact_bigrams``, None: they list their corrections, as log space
    needs)."""
    n = hi - lo
    if first is not None:
        K.emissions(w, space, aux, lo, hi, buf.E)
        if clamp is not None:
            K.clamp_labels(buf.E, fixed, lo, n, space.L)
        C.end_scores(buf.E, n, trans)      # a constrained chain's starts and ends
        if bl is not None:   # else cptr and need stay all zero: no corrections anywhere
            amat = bl.amat[:0]
            if mats is not None:
                amat = bl.amat
            K.corrections(buf.nomask, 1.0, bl, data, lo, hi, trans, buf.corr, buf.cacc, buf.mark, buf.need, amat)
    if second is not None:
        K2.state_scores(w, space, data, aux, lo, hi, buf.U, buf.E)
        if clamp is not None:
            K2.constrain(buf.E, fixed, lo, n, space.L)
        C.end_scores(buf.E, n, trans)


@inner(fastmath=C.FAST)
def scatter(space, data, aux, lo, hi, gamma, buf, c, g, Gd, shared, first, second):
    """g / Gd += c * the expected counts of tokens lo..hi-1 from the marginals
    ``gamma`` (``shared``: order 2's shared pair attribute, see
    :func:`~spargel.chain.crf2_kernels.scatter`)."""
    if first is not None:
        K.scatter(space, data, aux, lo, hi, gamma, buf.P, buf.need, c, g, Gd)
    if second is not None:
        K2.scatter(space, data, aux, lo, hi, gamma, buf.lm, buf.need, c, g, Gd, buf.gB, shared)


@inner()
def labels_of_states(out, lo, hi, L, first, second):
    """Label ids from the decoded states (order 2: pair states ``a * L + b``)."""
    if second is not None:
        for t in range(lo, hi):
            out[t] = out[t] % L


@inner()
def sequence_weight(sw, s, clamp):
    """The weight of sequence s in a pass (negated for the clamped numerator)."""
    c = 1.0
    if sw is not None:
        c = sw[s]
    if clamp is not None:
        c = -c
    return c


# --------------------------------------------------------------------------- batch pass
@kernel()
def empirical_counts(space, data, order, sw, emp, first, second):
    """emp += feature counts of the gold label sequences ``order`` (unigram, bigram /
    pair, transition / triple), each times its weight ``sw[s]`` (``sw`` None: 1)."""
    L, u_ptr, u_lab = space.L, space.u_ptr, space.u_lab
    b_ptr, b_pair, b_base = space.b_ptr, space.b_pair, space.b_base
    t_base, t_index = space.t_base, space.t_index
    seq_ptr, uni_ptr, uni_ids, uni_vals = data.seq_ptr, data.uni_ptr, data.uni_ids, data.uni_vals
    big_ptr, big_ids, big_vals, labels = data.big_ptr, data.big_ids, data.big_vals, data.labels
    unit = len(uni_vals) == 0                   # every unigram value is 1
    for r in range(len(order)):
        s = order[r]
        c = sequence_weight(sw, s, None)
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        prev2, prev = L, L
        for t in range(lo, hi):
            y = labels[t]
            for j in range(uni_ptr[t], uni_ptr[t + 1]):
                a = uni_ids[j]
                for k in range(u_ptr[a], u_ptr[a + 1]):
                    if u_lab[k] == y:
                        emp[k] += c if unit else c * uni_vals[j]
                        break
            # the codes of the token's pair weights and of its transition (-1: none)
            pair = -1
            code = -1
            if first is not None:
                if t > lo:
                    pair = labels[t - 1] * L + y
                    code = pair
            if second is not None:
                pair = prev * L + y
                if t > lo:
                    code = (prev2 * L + prev) * L + y
                prev2, prev = prev, y
            if code >= 0:
                ti = t_index[code]
                if ti >= 0:
                    emp[t_base + ti] += c
            if pair >= 0:
                for j in range(big_ptr[t], big_ptr[t + 1]):
                    a = big_ids[j]
                    for k in range(b_ptr[a], b_ptr[a + 1]):
                        if b_pair[k] == pair:
                            emp[b_base + k] += c * big_vals[j]
                            break


@kernel()
def chunk_logz_grad(w, space, data, aux, trans, bl, first, second, order, want_grad, g, Gd, acc, failed, buf, sw,
                    clamp, acc1):
    """``sum_s c_s log Z_s`` over the sequences ``order``, ``c_s`` their weight ``sw[s]``;
    with want_grad, adds ``c_s`` times their expected feature counts to ``g`` (sparse
    weights), ``Gd`` (dense unigram rows) and the transition accumulators ``acc`` (see
    ``chain.backward``; ``acc1`` is zeroed scratch of the same shapes). With ``clamp``
    the partition functions are those of the known labels (label -1: unknown, summed
    over) and ``c_s`` is negated: the numerator of a partially labelled sequence. With
    ``sw`` and ``clamp`` None (the common case) the code for other weights than 1 is not
    compiled. A sequence whose scaled recursion underflows is skipped and flagged in
    ``failed`` (the caller redoes it with :func:`chunk_logz_grad_log`). At order 2 the
    sequences whose pair scores are the same at every token share their factors
    (:func:`~spargel.chain.crf2_kernels.scaled_rows`)."""
    L = space.L
    seq_ptr, labels = data.seq_ptr, data.labels
    psi, alpha, beta, scale, shift, tmp, P, need, corr = (buf.psi, buf.alpha, buf.beta, buf.scale, buf.shift,
                                                          buf.tmp, buf.P, buf.need, buf.corr)
    if second is not None:
        buf.pcache[0] = -3.0            # no shared pair factors yet
        buf.pcache[1] = 0.0
    total = 0.0
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        n = hi - lo
        c = sequence_weight(sw, s, clamp)
        shared = False
        if first is not None:
            state_rows(w, space, data, aux, trans, bl, lo, hi, buf, labels, clamp, True, first, None)
            C.exp_rows(buf.E, psi, shift, n, L, buf.kbuf)
        if second is not None:
            shared = K2.scaled_rows(w, space, data, aux, lo, hi, buf, buf.pcache, labels, clamp is not None,
                                    trans) >= -1
        logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
        if math.isnan(logz):
            failed[r] = 1
            continue
        total += c * logz
        if want_grad:
            if (sw is None and clamp is None) or c == 1.0:
                C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc, need, P, tmp)
            else:
                C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc1, need, P, tmp)
                K.add_scaled_acc(acc, acc1, c)
            scatter(space, data, aux, lo, hi, alpha, buf, c, g, Gd, shared, first, second)
    if second is not None:
        if want_grad:
            K2.flush_shared(space, int(buf.pcache[0]), g, buf.gB)
    return total


@kernel()
def chunk_logz_grad_log(w, space, data, aux, trans, bl, first, second, order, want_grad, g, Gd, tcount, buf, lbuf,
                        sw, clamp, tcount1):
    """:func:`chunk_logz_grad` in log space (for the sequences whose scaled recursion
    underflowed); the transition counts go straight to ``tcount`` (by list index;
    ``tcount1`` is zeroed scratch of the same length). ``sw`` and ``clamp`` as there."""
    seq_ptr, labels = data.seq_ptr, data.labels
    need = buf.need
    # the sparse step's structure (every weighted pair listed, no bigram attributes, so no
    # position corrections or pair marginals): the O(S + nnz) log-space pass
    sparse = trans.kind == C.ONES and buf.P is None
    total = 0.0
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        n = hi - lo
        c = sequence_weight(sw, s, clamp)
        state_rows(w, space, data, aux, trans, bl, lo, hi, buf, labels, clamp, None, first, second)
        if not want_grad:
            need[:n] = 0
        if sparse:
            logz = C.forward_backward_log_ones(buf.E, n, trans, lbuf.la, lbuf.lb, buf.scale, lbuf.gamma, tcount1,
                                               lbuf.cand)
        else:
            logz = C.forward_backward_log(buf.E, n, trans, buf.corr, lbuf.la, lbuf.lb, buf.scale, lbuf.gamma,
                                          tcount1, need, buf.P, lbuf.fv_t, lbuf.cand)
        total += c * logz
        if sparse:                # (only the listed pairs' counts were written)
            gk = trans.gk
            for q in range(len(gk)):
                k = gk[q]
                tcount[k] += c * tcount1[k]
                tcount1[k] = 0.0
        else:
            for k in range(len(tcount)):
                tcount[k] += c * tcount1[k]
                tcount1[k] = 0.0
        if want_grad and math.isfinite(logz):
            scatter(space, data, aux, lo, hi, lbuf.gamma, buf, c, g, Gd, False, first, second)
    return total


@kernel()
def finish_gradient(space, d_attr, Gd, tcount, emp, g, first, second):
    """g += dense-row expectations scattered to their weights and the transition counts
    (``tcount`` by chain list index: ``j * L + i`` for the pair ``(i, j)`` at order 1,
    :func:`~spargel.chain.crf2_kernels.list_index` at order 2); g -= empirical counts."""
    L, u_ptr, u_lab, t_pair, t_base = space.L, space.u_ptr, space.u_lab, space.t_pair, space.t_base
    for r in range(len(d_attr)):
        a = d_attr[r]
        for k in range(u_ptr[a], u_ptr[a + 1]):
            g[k] += Gd[r, u_lab[k]]
    for k in range(len(t_pair)):
        p = t_pair[k]
        q = 0
        if first is not None:
            i = p // L
            q = (p - i * L) * L + i
        if second is not None:
            q = K2.list_index(p, L)
        g[t_base + k] += tcount[q]
    for k in range(len(g)):
        g[k] -= emp[k]


# --------------------------------------------------------------------------- prediction
@kernel()
def decode_all(w, space, data, aux, trans, bl, first, second, fixed, out, scores, buf, lbuf):
    """Viterbi labels of every sequence into out (flat over tokens), path scores into
    scores; ``fixed[t] >= 0`` forces the label of token t."""
    seq_ptr = data.seq_ptr
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        state_rows(w, space, data, aux, trans, bl, lo, hi, buf, fixed, True, True, first, second)
        scores[s] = D.viterbi(buf.E, n, trans, buf.corr, buf.alpha, lbuf.back, lbuf.fv_t, out[lo:hi])
        labels_of_states(out, lo, hi, space.L, first, second)


@kernel()
def marginals_all(w, space, data, aux, trans, bl, first, second, out, logz, failed, buf, tcount):
    """Label marginals of every token into out (n_tokens x L) and log Z per sequence by
    the scaled recursion; sequences where it underflows are flagged in ``failed``.
    ``tcount`` is scratch of the chain's list length (transition expectations, unused)."""
    L = space.L
    seq_ptr = data.seq_ptr
    psi, alpha, beta, scale, shift, tmp, P, need, corr = (buf.psi, buf.alpha, buf.beta, buf.scale, buf.shift,
                                                          buf.tmp, buf.P, buf.need, buf.corr)
    if first is not None:
        acc = (alpha[:1, :1], tcount, tcount[:0])
    if second is not None:
        acc = (P[:1, :1], tcount[:len(trans.gi)], tcount)
        buf.pcache[0] = -3.0
        buf.pcache[1] = 0.0
    for s in range(len(seq_ptr) - 1):
        lo, hi = seq_ptr[s], seq_ptr[s + 1]
        n = hi - lo
        if first is not None:
            state_rows(w, space, data, aux, trans, bl, lo, hi, buf, data.labels, None, True, first, None)
            C.exp_rows(buf.E, psi, shift, n, L, buf.kbuf)
        if second is not None:
            K2.scaled_rows(w, space, data, aux, lo, hi, buf, buf.pcache, data.labels, False, trans)
        z = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
        logz[s] = z
        if math.isnan(z):
            failed[s] = 1
            continue
        need[:n] = 0
        C.backward(psi, n, trans, corr, alpha, scale, beta, alpha, acc, need, P, tmp)
        gamma = alpha
        if second is not None:
            K2.label_marginals(alpha, n, L, buf.lm)
            gamma = buf.lm
        for t in range(n):
            for y in range(L):
                out[lo + t, y] = gamma[t, y]


@kernel()
def marginals_log(w, space, data, aux, trans, bl, first, second, order, out, logz, buf, lbuf, tcount):
    """:func:`marginals_all` in log space for the sequences ``order``."""
    L = space.L
    seq_ptr = data.seq_ptr
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        n = hi - lo
        state_rows(w, space, data, aux, trans, bl, lo, hi, buf, data.labels, None, None, first, second)
        buf.need[:n] = 0
        if trans.kind == C.ONES and buf.P is None:        # (the sparse step: see chunk_logz_grad_log)
            logz[s] = C.forward_backward_log_ones(buf.E, n, trans, lbuf.la, lbuf.lb, buf.scale, lbuf.gamma, tcount,
                                                  lbuf.cand)
        else:
            logz[s] = C.forward_backward_log(buf.E, n, trans, buf.corr, lbuf.la, lbuf.lb, buf.scale, lbuf.gamma,
                                             tcount, buf.need, buf.P, lbuf.fv_t, lbuf.cand)
        gamma = lbuf.gamma
        if second is not None:
            K2.label_marginals(lbuf.gamma, n, L, buf.lm)
            gamma = buf.lm
        for t in range(n):
            for y in range(L):
                out[lo + t, y] = gamma[t, y]


@kernel(allocates=True)        # chain.nbest allocates its lists
def nbest_one(w, space, data, aux, trans, bl, first, second, s, fixed, K_, paths, scores, buf, lbuf):
    """The K best label sequences of sequence s (see ``chain.nbest``)."""
    seq_ptr = data.seq_ptr
    lo, hi = seq_ptr[s], seq_ptr[s + 1]
    n = hi - lo
    state_rows(w, space, data, aux, trans, bl, lo, hi, buf, fixed, True, None, first, second)
    found = D.nbest(buf.E, n, trans, buf.corr, K_, lbuf.fv_t, paths, scores)
    for r in range(found):
        labels_of_states(paths[r], 0, n, space.L, first, second)
    return found


@kernel()
def gold_scores(w, space, data, aux, first, second, order, out, buf):
    """Gold path score of every sequence of ``order`` into out."""
    seq_ptr = data.seq_ptr
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        if first is not None:
            K.emissions(w, space, aux, lo, hi, buf.E)
            out[r] = K.gold_score(w, buf.nomask, 1.0, space, data, s, buf.E)
        if second is not None:
            K2.state_scores(w, space, data, aux, lo, hi, buf.U, buf.E)
            out[r] = K2.gold_score(w, w[:0], 1.0, space, data, s, buf.E)
