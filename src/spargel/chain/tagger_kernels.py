"""The per-call kernels of a tagger (:class:`spargel.chain.crfsuite_compat.Tagger`):
one sequence of a first-order CRF without bigram attributes -- what a CRFsuite file
holds -- given as attribute lists (token ``t`` has the attributes
``ids[tok_ptr[t]:tok_ptr[t+1]]`` with values ``vals``, empty: all 1; a negative id is an
unknown attribute, skipped) and the layout's unigram weights (attribute ``a``'s labels
``u_lab[u_ptr[a]:u_ptr[a+1]]``, weights ``u_w``). Each kernel is one compiled call: the
state scores, then the chain's own Viterbi (:func:`spargel.chain.decoding.viterbi`) or
scaled forward-backward (:func:`spargel.chain.inference.forward` / ``backward``), over
the buffers of the batch kernels (:func:`spargel.chain.crf_kernels.work_buffers`,
``log_buffers``)."""

import math

from ..core.jit import inner, kernel
from . import decoding as D
from . import inference as C


@inner()
def attribute_scores(tok_ptr, ids, vals, u_ptr, u_lab, u_w, S, E):
    """``E[t, y]``: the sum over token t's attributes of value x weight for label y."""
    n = len(tok_ptr) - 1
    unit = len(vals) == 0
    for t in range(n):
        for y in range(S):
            E[t, y] = 0.0
        for k in range(tok_ptr[t], tok_ptr[t + 1]):
            a = ids[k]
            if a < 0:
                continue
            x = 1.0 if unit else vals[k]
            for e in range(u_ptr[a], u_ptr[a + 1]):
                E[t, u_lab[e]] += x * u_w[e]


@kernel()
def viterbi_attributes(tok_ptr, ids, vals, u_ptr, u_lab, u_w, trans, corr, E, delta, back, fv_t, out):
    """Best labels of the sequence into ``out``; returns the path's score."""
    attribute_scores(tok_ptr, ids, vals, u_ptr, u_lab, u_w, trans.S, E)
    return D.viterbi(E, len(tok_ptr) - 1, trans, corr, delta, back, fv_t, out)


@kernel()
def marginals_attributes(tok_ptr, ids, vals, u_ptr, u_lab, u_w, trans, buf, tcount, out):
    """Point marginals of the sequence into ``out`` (n x S), its state scores left in
    ``buf.E``; returns log Z, NaN when the scaled recursion cannot be trusted (then the
    batch path's log-space fallback is needed). ``tcount``: scratch of the structure's
    list length."""
    n = len(tok_ptr) - 1
    S = trans.S
    attribute_scores(tok_ptr, ids, vals, u_ptr, u_lab, u_w, S, buf.E)
    C.exp_rows(buf.E, buf.psi, buf.shift, n, S, buf.kbuf)
    z = C.forward(buf.psi, buf.shift, n, trans, buf.corr, buf.alpha, buf.scale, 0)
    if math.isnan(z):
        return z
    for t in range(n):
        buf.need[t] = 0
    C.backward(buf.psi, n, trans, buf.corr, buf.alpha, buf.scale, buf.beta, buf.alpha,
               (buf.alpha[:1, :1], tcount, tcount[:0]), buf.need, buf.P, buf.tmp)
    for t in range(n):
        for y in range(S):
            out[t, y] = buf.alpha[t, y]
    return z
