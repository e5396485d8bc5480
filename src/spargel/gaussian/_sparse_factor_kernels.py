"""numba kernels of the sparse graphical lasso (imported lazily by :mod:`.sparse_newton`).

The precision ``K`` lives on a fixed symmetric pattern (the candidate pairs and the
diagonal), stored as the *upper* triangle of the symmetrically permuted matrix in
compressed columns (``Ap``, ``Ai``; rows sorted, the diagonal last in each column). On
that pattern:

* :func:`ldl_symbolic` -- the elimination tree (``parent``) and the entries per column
  of the unit lower factor (``Lnz``) of ``K = L D L^T`` (the classic up-looking scheme:
  row k of L is the set of nodes reached from the entries of column k of the upper
  triangle by climbing the elimination tree);
* :func:`ldl_numeric` -- the factor's values (``Li``, ``Lx``, ``d``) by sparse triangular
  solves, row by row; K is positive definite exactly when every pivot ``d_k`` is
  positive, and ``log det K = sum log d_k``. The factor's pattern is structural (it does
  not depend on the values), so every call writes the same ``Li``;
* :func:`selected_inverse` -- the entries of ``W = K^-1`` on the factor's pattern and
  the diagonal (Takahashi's recurrence, column by column from the last:
  ``W[I, j] = -W[I, I] L[I, j]``, ``W_jj = 1/d_j - L[I, j]^T W[I, j]``, I the rows of
  column j of L; the pattern of every column is a clique of the filled graph, so each
  ``W[I, I]`` entry needed is already on the pattern);
* :func:`inverse_derivative` -- the derivative of those entries along a direction ``E``
  on the pattern: forward-mode differentiation of the factorisation and of the
  recurrence together. Since ``d(K^-1)[E] = -W E W``, this is the Hessian product of
  ``-log det`` restricted to the pattern, at about three times the cost of the factor (its state as the named tuples
  :data:`Factor`, :data:`SelectedInverse` and :data:`DerivativeWork`);
* :func:`sandwich` -- ``(K V K)`` on a set of pairs, K and V sparse (the Newton-CG
  preconditioner, the inverse of the Hessian when the set is everything);
* :func:`solve_columns` -- ``K^-1 B`` for a block of right-hand sides (rows of B
  contiguous), used to compute columns of W for the optimality check off the pattern;
* :func:`off_pattern_candidates` -- the pairs of a block of W columns that can violate
  the optimality conditions off the pattern.
"""

from collections import namedtuple

import numpy as np

from ..core.jit import inner, kernel

#: a numeric factor ``K = L D L^T`` on its pattern: K's upper triangle (``Ap``, ``Ai``),
#: the elimination tree (``parent``) and the unit lower factor in compressed columns
#: (``Lp``, ``Li``, ``Lx``) with its pivots ``d`` (:func:`ldl_symbolic`,
#: :func:`ldl_numeric`)
Factor = namedtuple("Factor", "Ap Ai Lp parent Li Lx d")
#: :func:`selected_inverse`'s entries of ``K^-1``: on the factor's pattern (``zL``,
#: parallel to ``Lx``) and on the diagonal (``zd``)
SelectedInverse = namedtuple("SelectedInverse", "zL zd")
#: the scratch and outputs of :func:`inverse_derivative`: the factor's derivative
#: (``dLx``, ``dd``), a dense accumulator ``dY`` (q, all zero between calls),
#: ``pattern``, ``flag`` and ``cnt`` (q, int), the inverse's derivative (``dzL``, ``dzd``:
#: the output) and one column's ``out`` / ``dout`` (the longest column of L)
DerivativeWork = namedtuple("DerivativeWork", "dLx dd dY pattern flag cnt dzL dzd out dout")


@kernel()
def ldl_symbolic(Ap, Ai, parent, Lnz, flag, cap):
    """Elimination tree and column counts of the factor of the pattern (Ap, Ai).
    Returns the factor's entries (below the diagonal), or -1 as soon as they pass
    ``cap`` (then parent and Lnz are incomplete)."""
    n = Ap.shape[0] - 1
    total = 0
    for k in range(n):
        parent[k] = -1
        flag[k] = k
        Lnz[k] = 0
        for p in range(Ap[k], Ap[k + 1]):
            i = Ai[p]
            if i < k:
                while flag[i] != k:
                    if parent[i] == -1:
                        parent[i] = k
                    Lnz[i] += 1
                    total += 1
                    flag[i] = k
                    i = parent[i]
        if total > cap:
            return -1
    return total


@inner()
def row_reach(Ap, Ai, Ax, k, parent, flag, pattern, Y):
    """Row k of the factor's pattern: the nodes reached from the entries of column k
    of the upper triangle by climbing the elimination tree, written to
    ``pattern[top:]`` in an order that solves them (returns top); the column's values
    are scattered into Y (Y[k] cleared first)."""
    n = Ap.shape[0] - 1
    Y[k] = 0.0
    top = n
    flag[k] = k
    for p in range(Ap[k], Ap[k + 1]):
        i = Ai[p]
        Y[i] += Ax[p]
        ln = 0
        while flag[i] != k:
            pattern[ln] = i
            ln += 1
            flag[i] = k
            i = parent[i]
        while ln > 0:
            top -= 1
            ln -= 1
            pattern[top] = pattern[ln]
    return top


@kernel()
def ldl_numeric(Ap, Ai, Ax, Lp, parent, Li, Lx, d, Y, pattern, flag, Lnz):
    """Factor ``K = L D L^T`` (values Ax on the pattern). Returns ``log det K``, or
    -inf at the first pivot that is not positive (K not positive definite)."""
    n = Ap.shape[0] - 1
    logdet = 0.0
    for k in range(n):
        Lnz[k] = 0
        top = row_reach(Ap, Ai, Ax, k, parent, flag, pattern, Y)
        dk = Y[k]
        Y[k] = 0.0
        for t in range(top, n):
            i = pattern[t]
            yi = Y[i]
            Y[i] = 0.0
            p2 = Lp[i] + Lnz[i]
            for p in range(Lp[i], p2):
                Y[Li[p]] -= Lx[p] * yi
            lki = yi / d[i]
            dk -= lki * yi
            Li[p2] = k
            Lx[p2] = lki
            Lnz[i] += 1
        if not (dk > 0.0) or not np.isfinite(dk):
            # clear what this row left behind for the next call
            for t in range(top, n):
                Y[pattern[t]] = 0.0
            return -np.inf
        d[k] = dk
        logdet += np.log(dk)
    return logdet


@kernel()
def selected_inverse(Lp, Li, Lx, d, zL, zd, out):
    """Entries of ``K^-1`` on the factor's pattern (``zL``, parallel to ``Lx``) and
    its diagonal (``zd``)."""
    n = d.shape[0]
    for j in range(n - 1, -1, -1):
        a0 = Lp[j]
        s = Lp[j + 1] - a0
        for a in range(s):
            out[a] = 0.0
        for a in range(s):
            r = Li[a0 + a]
            la = Lx[a0 + a]
            out[a] -= zd[r] * la
            # W[r_b, r] for the later rows r_b of column j: column r of W, merged
            q = Lp[r]
            for b in range(a + 1, s):
                rb = Li[a0 + b]
                while Li[q] < rb:
                    q += 1
                z = zL[q]
                out[a] -= z * Lx[a0 + b]
                out[b] -= z * la
                q += 1
        acc = 1.0 / d[j]
        for a in range(s):
            zL[a0 + a] = out[a]
            acc -= Lx[a0 + a] * out[a]
        zd[j] = acc


@kernel()
def inverse_derivative(F, Ex, inv, work):
    """Derivative of :func:`selected_inverse`'s entries along ``E`` (values ``Ex`` on
    the pattern), at the factor ``F`` (a :data:`Factor`) and inverse ``inv`` (a
    :data:`SelectedInverse`) of the current point: writes ``work.dzL``, ``work.dzd``
    (``= -(W E W)`` on the pattern; ``work`` a :data:`DerivativeWork`)."""
    Ap, Ai, Lp, parent, Li, Lx, d = F.Ap, F.Ai, F.Lp, F.parent, F.Li, F.Lx, F.d
    zL, zd = inv.zL, inv.zd
    dLx, dd, dY, pattern, flag, cnt = work.dLx, work.dd, work.dY, work.pattern, work.flag, work.cnt
    dzL, dzd, out, dout = work.dzL, work.dzd, work.out, work.dout
    n = Ap.shape[0] - 1
    # forward mode through the factorisation (values y_i = L_ki d_i are the factor's)
    for k in range(n):
        cnt[k] = 0
        top = row_reach(Ap, Ai, Ex, k, parent, flag, pattern, dY)
        ddk = dY[k]
        dY[k] = 0.0
        for t in range(top, n):
            i = pattern[t]
            dyi = dY[i]
            dY[i] = 0.0
            p2 = Lp[i] + cnt[i]
            lki = Lx[p2]
            yi = lki * d[i]
            for p in range(Lp[i], p2):
                dY[Li[p]] -= dLx[p] * yi + Lx[p] * dyi
            dl = (dyi - lki * dd[i]) / d[i]
            ddk -= dl * yi + lki * dyi
            dLx[p2] = dl
            cnt[i] += 1
        dd[k] = ddk
    # forward mode through the recurrence of the selected inverse
    for j in range(n - 1, -1, -1):
        a0 = Lp[j]
        s = Lp[j + 1] - a0
        for a in range(s):
            out[a] = 0.0
            dout[a] = 0.0
        for a in range(s):
            r = Li[a0 + a]
            la = Lx[a0 + a]
            dla = dLx[a0 + a]
            out[a] -= zd[r] * la
            dout[a] -= dzd[r] * la + zd[r] * dla
            q = Lp[r]
            for b in range(a + 1, s):
                rb = Li[a0 + b]
                while Li[q] < rb:
                    q += 1
                z = zL[q]
                dz = dzL[q]
                lb = Lx[a0 + b]
                dlb = dLx[a0 + b]
                dout[a] -= dz * lb + z * dlb
                dout[b] -= dz * la + z * dla
                q += 1
        dj = d[j]
        acc = -dd[j] / (dj * dj)
        for a in range(s):
            dzL[a0 + a] = dout[a]
            acc -= dLx[a0 + a] * zL[a0 + a] + Lx[a0 + a] * dout[a]
        dzd[j] = acc


@kernel()
def sandwich(Kp, Kj, Kx, Vp, Vj, Vslot, v, Fp, Fj, Fslot, out, acc, touched, mark):
    """``out[Fslot] = (K V K)_ij`` for the pairs ``(i, Fj[t])``, ``Fp[i] <= t < Fp[i+1]``.

    K: symmetric CSR (Kp, Kj, Kx); V: symmetric CSR pattern (Vp, Vj) whose entry at
    slot t has the value ``v[Vslot[t]]``. ``acc`` (n), ``touched`` (n, int) and ``mark``
    (n, int, all -1 on entry and on exit) are scratch."""
    n = Kp.shape[0] - 1
    for i in range(n):
        if Fp[i] == Fp[i + 1]:
            continue
        nt = 0
        # row i of K V, accumulated densely
        for a_ in range(Kp[i], Kp[i + 1]):
            a = Kj[a_]
            kia = Kx[a_]
            for b_ in range(Vp[a], Vp[a + 1]):
                b = Vj[b_]
                if mark[b] != i:
                    mark[b] = i
                    acc[b] = 0.0
                    touched[nt] = b
                    nt += 1
                acc[b] += kia * v[Vslot[b_]]
        for t in range(Fp[i], Fp[i + 1]):
            j = Fj[t]
            s = 0.0
            for b_ in range(Kp[j], Kp[j + 1]):
                b = Kj[b_]
                if mark[b] == i:
                    s += acc[b] * Kx[b_]
            out[Fslot[t]] = s
        for t in range(nt):
            mark[touched[t]] = -1


@kernel()
def solve_columns(Lp, Li, Lx, d, B):
    """``B <- K^-1 B`` in place (B: n x m, a row per variable) from ``K = L D L^T``."""
    n = d.shape[0]
    m = B.shape[1]
    for c in range(n):
        for p in range(Lp[c], Lp[c + 1]):
            r = Li[p]
            l = Lx[p]
            for t in range(m):
                B[r, t] -= l * B[c, t]
    for c in range(n):
        inv = 1.0 / d[c]
        for t in range(m):
            B[c, t] *= inv
    for c in range(n - 1, -1, -1):
        for p in range(Lp[c], Lp[c + 1]):
            r = Li[p]
            l = Lx[p]
            for t in range(m):
                B[c, t] -= l * B[r, t]


@kernel()
def off_pattern_candidates(B, j0, Pp, Pi, Np, Ni, thresh, mark, ci, cj, cw):
    """The pairs ``(i, j)``, ``i > j``, j a column of the block ``B = W[:, j0:j0+m]``,
    that are off the pattern and either have ``|W_ij| > thresh`` or are in the near
    band: their (i, j, W_ij) are written to ci, cj, cw. The pattern's and the near
    band's pairs are given by their smaller index j: rows ``Pi[Pp[j]:Pp[j+1]]`` and
    ``Ni[Np[j]:Np[j+1]]`` (all > j). ``mark`` (n x 2, int) is scratch holding stamps
    below j0 on entry. Returns the number of pairs, or -1 when the buffers are too
    small."""
    n = B.shape[0]
    m = B.shape[1]
    c = 0
    cap = ci.shape[0]
    for t in range(m):
        j = j0 + t
        for p in range(Pp[j], Pp[j + 1]):
            mark[Pi[p], 0] = j
        for p in range(Np[j], Np[j + 1]):
            mark[Ni[p], 1] = j
        for i in range(j + 1, n):
            w = B[i, t]
            if mark[i, 0] == j:
                continue
            if abs(w) > thresh or mark[i, 1] == j:
                if c >= cap:
                    return -1
                ci[c] = i
                cj[c] = j
                cw[c] = w
                c += 1
    return c


@kernel()
def pair_products(Zt, ia, ja, out):
    """``out[t] = Zt[ia[t]] . Zt[ja[t]]`` (rows of Zt: the variables' data)."""
    m = Zt.shape[1]
    for t in range(ia.shape[0]):
        a = ia[t]
        b = ja[t]
        s = 0.0
        for k in range(m):
            s += Zt[a, k] * Zt[b, k]
        out[t] = s
