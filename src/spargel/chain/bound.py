"""The bound of the linear-chain CRF: Algorithm 3 of Jebara & Choromanska specialised to
the chain, as a forward recursion carrying ``(z, mu, Sigma)`` per state, matrix-free.

Why not the paper's recursion as written. Along a chain, Algorithm 3 adds the children's
curvatures of every configuration of a separator (``Sigma_{c|u} += sum_b Sigma_{b|w}``
for each ``v``), so the curvature is multiplied by the number of states ``S`` at each
position; and Algorithm 1 over the enumerated label paths -- the bound the recursion
claims to reproduce -- grows the same way (its ``S^n`` configurations each add a
curvature ``~ 1 / (2 |log(alpha / z)|)``). On 3 states the trace of Algorithm 1's
curvature is 10, 30, 90, 260 for 3..6 positions while the Hessian's grows 2, 2.6, 3.3,
3.9: on sentences the step would be zero. The recursion here keeps the bound valid with
a curvature that grows *linearly* in the length:

* the prefix sums ``alpha_t(s)`` (paths of positions ``0..t`` ending in ``s``) are bounded
  with a ``z_{t,s}`` and ``mu_{t,s}`` per state -- these are exact: ``z`` the forward
  score, ``mu`` the gradient of ``log alpha_t(s)`` -- and ONE curvature ``Sigma_t``
  shared by all states of the position;
* ``alpha_t(s) = sum_j alpha_{t-1}(j) exp(T[j, s] + E[t, s])`` is bounded by Algorithm 1
  over the previous states ``j`` (visited most probable state ``r`` first), whose
  vectors ``l = (e_j - running mean)`` live in the span of
  ``g_j = (mu_{t-1,j} - mu_{t-1,r}) + (tau(j, s) - tau(r, s))`` (``tau`` a transition's
  indicator). With ``l l' <= diag(|l|) ||l||_1`` in those coordinates and
  ``(a + b)(a + b)' <= 2 a a' + 2 b b'``, every state's curvature is dominated by

      Sigma_t - Sigma_{t-1} = sum_j P_{t,j} dmu_j dmu_j' + sum_{s,j} Q_{s,j} dtau_{j,s} dtau_{j,s}'

  with ``D_{s,j} = sum_i omega_i ||l_i||_1 |l_i|_j`` (computed by suffix sums, O(S) per
  state), ``P_{t,j} = 2 max_s D_{s,j}`` (the prefix directions are shared by all states,
  so one maximum dominates them all, where a sum would cost a factor S) and
  ``Q_{s,j} = D P / (P - D)`` (between D and 2D: the split of ``(a + b)^2`` is chosen per
  pair so that the prefix weight is exactly P); the transition directions of different
  ``s`` are disjoint, so their sum is their maximum;
* the last position runs Algorithm 1 exactly over the ``S^2`` pairs
  ``(j at n-2, s at n-1)`` (so on chains of one or two positions the bound *is*
  Algorithm 1 over the enumerated paths, visited in that order).

The curvature is never formed. ``Sigma v`` runs, per sequence: the direction's
emission scores (the CRF's own emission kernel), a forward pass of the scalars
``mu_{t,s} . v``, the coefficients of the curvature terms, and the adjoint pass back to
the emissions and transitions (the CRF's own scatter kernel) -- about one
forward-backward. The bound's build is a log-space forward recursion (nothing
underflows; it also yields ``log Z``). Bigram-attribute features (observation-dependent
transitions) are not supported by this bound.
"""

import math
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ..core.jit import kernel

from ..errors import CapabilityError
from . import crf_kernels as K
from ..core.bound import QuadraticBound, curvature_weight, log_add, share
from ..data.dataset import is_unit


# --------------------------------------------------------------------------- kernels
#: the recursion state of one chunk of sequences, written by :func:`chain_bound_build`
#: and read by :func:`chain_bound_matvec`: the chunk's sequences ``order``, the r-th
#: one's entries at ``iptr[r]`` in ``items``, and the reference states ``refs`` and
#: prefix weights ``pw`` of the inner tokens (arrays over all tokens, shared by the chunks)
Recursion = namedtuple("Recursion", "order iptr items refs pw")

#: the build's scratch: emission scores ``E`` and log prefix sums ``la`` (maxlen x Lp),
#: Algorithm 1's ``lam``, ``lzb``, ``us`` (S) and the weights ``Dm`` (S x S)
BuildWork = namedtuple("BuildWork", "E la lam lzb us Dm")

#: the product's scratch: the direction's emission scores ``E`` (maxlen x Lp), the
#: forward scalars ``rho`` and their adjoints ``gam`` (maxlen x S), the emissions'
#: adjoint ``outE`` (maxlen x Lp), the coefficients ``cbuf`` (S^2), and the scatter
#: kernel's ``P`` / ``need``
MatvecWork = namedtuple("MatvecWork", "E rho gam outE cbuf P need")


@kernel()
def chain_bound_build(w, space, data, aux, T, st, wtr, logz, wk):
    """Per sequence of ``st.order`` (``st``: the chunk's :data:`Recursion`; r-th at
    ``iptr[r]`` in ``items``): the log-space forward recursion of the bound. ``items``
    gets, for the inner positions, the conditional ``p(j | s)`` of every pair (t, s, j)
    at ``((t-1) S + s) S + j``; for the last position the log ratio
    ``u = log(alpha / z)`` of Algorithm 1 over its pairs (s outer, j inner); for
    one-token sequences the ``u`` of its states. ``refs[tok]`` / ``pw[tok]`` the
    reference state and prefix weights ``P_{t, j}`` of inner tokens; ``wtr[r, j, s]`` (S^3)
    accumulates the transition weights ``2 D_{s, j}`` of positions whose reference is r;
    ``logz[r]`` log Z. ``T`` the S x S transition scores (flat); ``wk`` the
    :data:`BuildWork` scratch."""
    order, iptr, items, refs, pw = st.order, st.iptr, st.items, st.refs, st.pw
    E, la, lam, lzb, us, Dm = wk.E, wk.la, wk.lam, wk.lzb, wk.us, wk.Dm
    L = space.L
    seq_ptr = data.seq_ptr
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        n = hi - lo
        K.emissions(w, space, aux, lo, hi, E)
        q = iptr[r]
        if n == 1:
            lz = -np.inf
            for y in range(L):
                items[q + y] = E[0, y] - lz
                lz = log_add(lz, E[0, y])
            logz[r] = lz
            continue
        off = 0.0
        m = E[0, 0]
        for y in range(1, L):
            m = max(m, E[0, y])
        for y in range(L):
            la[0, y] = E[0, y] - m
        off += m
        for t in range(1, n - 1):
            ref = 0
            for j in range(1, L):
                if la[t - 1, j] > la[t - 1, ref]:
                    ref = j
            refs[lo + t] = ref
            for j in range(L):
                pw[lo + t, j] = 0.0
            base = q + (t - 1) * L * L
            for y in range(L):
                # Algorithm 1 over the previous states, the reference first
                lz = -np.inf
                for i in range(L):
                    j = ref if i == 0 else (i - 1 if i - 1 < ref else i)
                    lam[i] = la[t - 1, j] + T[j * L + y]
                    lzb[i] = lz
                    us[i] = lam[i] - lz
                    lz = log_add(lz, lam[i])
                for j in range(L):
                    items[base + y * L + j] = math.exp(la[t - 1, j] + T[j * L + y] - lz)
                # D_j = c_j + share_j B_j, B_{j-1} = c_j + (1 - share_j) B_j, c = omega ||l||_1
                B = 0.0
                for i in range(L - 1, 0, -1):
                    j = i - 1 if i - 1 < ref else i
                    sh = share(us[i])
                    l1 = 2.0 - math.exp(lam[0] - lzb[i]) if lzb[i] > -np.inf else 1.0
                    c = curvature_weight(us[i]) * l1
                    Dm[y, j] = c + sh * B
                    B = c + (1.0 - sh) * B
                    if 2.0 * Dm[y, j] > pw[lo + t, j]:
                        pw[lo + t, j] = 2.0 * Dm[y, j]
                la[t, y] = lz + E[t, y]
            # (a + b)^2 <= (1 + e) a^2 + (1 + 1/e) b^2 with e = P/D - 1: the prefix weight
            # is P_j = 2 max_s D_{s,j} for every s, the transition weight D P / (P - D)
            for y in range(L):
                for j in range(L):
                    if j != ref and Dm[y, j] > 0.0:
                        P = pw[lo + t, j]
                        wtr[ref, j, y] += Dm[y, j] * P / (P - Dm[y, j])
            m = la[t, 0]
            for y in range(1, L):
                m = max(m, la[t, y])
            if not (m > -np.inf and m < np.inf):
                logz[r] = np.nan
                break
            for y in range(L):
                la[t, y] -= m
            off += m
        else:
            base = q + (n - 2) * L * L
            lz = -np.inf
            for y in range(L):
                for j in range(L):
                    x = la[n - 2, j] + T[j * L + y] + E[n - 1, y]
                    items[base + y * L + j] = x - lz
                    lz = log_add(lz, x)
            logz[r] = lz + off


@kernel()
def chain_bound_matvec(v, space, data, aux_v, aux, Tv, st, wk, g, Gd, tout):
    """``g / Gd / tout += Sigma v`` (without the global transition part) over the
    sequences of ``st.order`` (``st``: the chunk's :data:`Recursion`, ``wk``: the
    :data:`MatvecWork` scratch): emission scores of the direction (``aux_v`` holds its
    dense rows), the forward scalars ``rho[t, s] = mu_{t,s} . v``, the curvature
    coefficients and the adjoint pass, scattered with the model's own token lists (``aux``)."""
    order, iptr, items, refs, pw = st.order, st.iptr, st.items, st.refs, st.pw
    E, rho, gam, outE, cbuf, P, need = wk.E, wk.rho, wk.gam, wk.outE, wk.cbuf, wk.P, wk.need
    L = space.L
    Lp = aux.Lp
    seq_ptr = data.seq_ptr
    for r in range(len(order)):
        s, lo, hi = K.span(seq_ptr, order, r)
        n = hi - lo
        K.emissions(v, space, aux_v, lo, hi, E)
        q = iptr[r]
        for t in range(n):
            for y in range(Lp):
                outE[t, y] = 0.0
        if n == 1:
            mean = 0.0
            for y in range(L):
                u = items[q + y]
                cbuf[y] = curvature_weight(u) * (E[0, y] - mean)
                mean += share(u) * (E[0, y] - mean)
            B = 0.0
            for y in range(L - 1, -1, -1):
                sh = share(items[q + y])
                outE[0, y] += cbuf[y] - sh * B
                B = cbuf[y] + (1.0 - sh) * B
            K.scatter(space, data, aux, lo, hi, outE, P, need, 1.0, g, Gd)
            continue
        for y in range(L):
            rho[0, y] = E[0, y]
            gam[0, y] = 0.0
        for t in range(1, n - 1):
            base = q + (t - 1) * L * L
            for y in range(L):
                acc = 0.0
                for j in range(L):
                    acc += items[base + y * L + j] * (rho[t - 1, j] + Tv[j * L + y])
                rho[t, y] = acc + E[t, y]
                gam[t, y] = 0.0
        # the last position: Algorithm 1 over the pairs, forward (coefficients) and back
        base = q + (n - 2) * L * L
        mean = 0.0
        for y in range(L):
            for j in range(L):
                k = y * L + j
                u = items[base + k]
                x = rho[n - 2, j] + Tv[j * L + y] + E[n - 1, y]
                cbuf[k] = curvature_weight(u) * (x - mean)
                mean += share(u) * (x - mean)
        B = 0.0
        for k in range(L * L - 1, -1, -1):
            y = k // L
            j = k - y * L
            sh = share(items[base + k])
            coef = cbuf[k] - sh * B
            B = cbuf[k] + (1.0 - sh) * B
            gam[n - 2, j] += coef
            tout[j * L + y] += coef
            outE[n - 1, y] += coef
        # inner positions, last to first: their prefix curvature, then mu's adjoint
        for t in range(n - 2, 0, -1):
            ref = refs[lo + t]
            for j in range(L):
                if j != ref:
                    c = pw[lo + t, j] * (rho[t - 1, j] - rho[t - 1, ref])
                    gam[t - 1, j] += c
                    gam[t - 1, ref] -= c
            base = q + (t - 1) * L * L
            for y in range(L):
                gb = gam[t, y]
                if gb == 0.0:
                    continue
                outE[t, y] += gb
                for j in range(L):
                    c = gb * items[base + y * L + j]
                    gam[t - 1, j] += c
                    tout[j * L + y] += c
        for y in range(L):
            outE[0, y] += gam[0, y]
        K.scatter(space, data, aux, lo, hi, outE, P, need, 1.0, g, Gd)


# --------------------------------------------------------------------------- the curvature
class ChainCurvature:
    """The chain bound's curvature as an operator (see the module documentation)."""

    exact_solve = False

    def __init__(self, model, w):
        view, space = model.view, model.space
        if view.has_bigrams:
            raise CapabilityError("the bound of a CRF supports unigram attributes and label transitions only; this "
                                  "model has bigram attributes (observation-dependent transitions): use another "
                                  "solver (owlqn, lbfgs, bcd)")
        self.model, self.view, self.space = model, view, space
        self.n = space.n_params
        L = self.L = space.n_labels
        self.t_pair = space.t_pair.astype(np.int64)
        T = np.zeros(L * L)
        T[self.t_pair] = w[space.t_base:]
        data = model.data
        lengths = np.diff(data.seq_ptr)
        self.orders = model.chunk_orders
        per_seq = np.where(lengths == 1, L, (lengths - 1) * L * L).astype(np.int64)
        self.iptrs = []
        for o in self.orders:
            ptr = np.zeros(len(o) + 1, dtype=np.int64)
            np.cumsum(per_seq[o], out=ptr[1:])
            self.iptrs.append(ptr)
        self.items = [np.empty(p[-1]) for p in self.iptrs]
        self.refs = np.full(data.n_tokens, -1, dtype=np.int64)
        self.pw = np.zeros((data.n_tokens, L))
        self.states = [Recursion(o, ptr, items, self.refs, self.pw)
                       for o, ptr, items in zip(self.orders, self.iptrs, self.items)]
        wtrs = [np.zeros((L, L, L)) for _ in self.orders]
        logzs = [np.empty(len(o)) for o in self.orders]
        maxlen = K.max_length(data.seq_ptr, np.arange(data.n_sequences, dtype=np.int64))
        self._maxlen = maxlen
        w = np.ascontiguousarray(w, dtype=np.float64)
        view.refresh(w)

        def build(c):
            E, la = np.zeros((maxlen, view.Lp)), np.zeros((maxlen, view.Lp))
            wk = BuildWork(E, la, np.empty(L), np.empty(L), np.empty(L), np.zeros((L, L)))
            chain_bound_build(w, view.space_t, view.data_t, view.aux, T, self.states[c], wtrs[c], logzs[c], wk)

        self._run(build)
        self.wtr = sum(wtrs)
        self.logz = np.empty(data.n_sequences)
        for o, lz in zip(self.orders, logzs):
            self.logz[o] = lz
        if not np.all(np.isfinite(self.logz)):
            raise FloatingPointError("the chain bound's forward recursion overflowed (weights far too large)")
        # dense-row scatter of the emission part and transition indices
        sizes = np.diff(space.u_ptr)
        rows = np.repeat(np.arange(len(view.d_attr)), sizes[view.d_attr])
        self._dense_w = np.concatenate([np.arange(space.u_ptr[a], space.u_ptr[a + 1]) for a in view.d_attr]) \
            if len(view.d_attr) else np.zeros(0, np.int64)
        self._dense_rc = (rows, space.u_lab[self._dense_w].astype(np.int64))
        self._aux_v = None
        self._diag = None

    def _run(self, fn):
        jobs = self.model.n_jobs
        if jobs == 1 or len(self.orders) == 1:
            for c in range(len(self.orders)):
                fn(c)
        else:
            with ThreadPoolExecutor(max_workers=min(jobs, len(self.orders))) as pool:
                list(pool.map(fn, range(len(self.orders))))

    def matvec(self, v):
        v = np.ascontiguousarray(v, dtype=np.float64)
        view, space, L = self.view, self.space, self.L
        if self._aux_v is None:
            self._aux_v = view.aux._replace(Wd=np.zeros_like(view.Wd), dnz=np.zeros_like(view.dnz))
        aux_v = self._aux_v
        K.refresh_weights(v, view.space_t, view.d_attr, aux_v.Wd, aux_v.dnz)
        Tv = np.zeros(L * L)
        Tv[self.t_pair] = v[space.t_base:]
        maxlen = self._maxlen
        outs = [(np.zeros(self.n), np.zeros((len(view.d_attr), view.Lp)), np.zeros(L * L)) for _ in self.orders]
        need = np.zeros(maxlen, np.uint8)
        P = np.zeros((1, 1))

        def run(c):
            g, Gd, tout = outs[c]
            wk = MatvecWork(np.zeros((maxlen, view.Lp)), np.zeros((maxlen, L)), np.zeros((maxlen, L)),
                            np.zeros((maxlen, view.Lp)), np.empty(L * L), P, need)
            chain_bound_matvec(v, view.space_t, view.data_t, aux_v, view.aux, Tv, self.states[c], wk, g, Gd, tout)

        self._run(run)
        g, Gd, tout = outs[0]
        for c in range(1, len(outs)):
            g += outs[c][0]
            Gd += outs[c][1]
            tout += outs[c][2]
        if len(self._dense_w):
            g[self._dense_w] += Gd[self._dense_rc]
        # the transition curvature shared by all positions: wtr[r, j, s] on tau(j,s) - tau(r,s)
        T2 = Tv.reshape(L, L)
        C = self.wtr * (T2[None, :, :] - T2[:, None, :])
        tout = tout.reshape(L, L) + C.sum(axis=0) - C.sum(axis=1)
        g[space.t_base:] += tout.ravel()[self.t_pair]
        return g

    def diagonal(self):
        """A positive scale for each weight (a preconditioner, not Sigma's exact diagonal,
        which would need every curvature direction): a quarter of the summed squared
        attribute values per emission weight, of the number of positions per transition."""
        if self._diag is None:
            data, space = self.model.data, self.space

            sq = np.bincount(data.uni_ids, weights=None if is_unit(data.uni_vals) else data.uni_vals ** 2,
                             minlength=len(space.u_ptr) - 1)
            d = np.empty(self.n)
            d[:space.b_base] = np.repeat(sq[:len(space.u_ptr) - 1], np.diff(space.u_ptr))
            d[space.b_base:space.t_base] = 1.0
            d[space.t_base:] = max(data.n_tokens - data.n_sequences, 1)
            self._diag = 0.25 * np.maximum(d, 1e-12)
        return self._diag


def chain_bound(model, w):
    """The :class:`~spargel.core.bound.QuadraticBound` of a
    :class:`~spargel.chain.crf.ChainCRF` at ``w``."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    curv = ChainCurvature(model, w)
    loss, grad = model.loss_grad(w)
    return QuadraticBound(w, loss, grad, curv, {"curvature": "chain", "logz": curv.logz})
