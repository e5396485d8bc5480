"""Compiled update rules of the online max-margin / perceptron trainers (averaged
perceptron, passive-aggressive, AROW), shared by every model's ``map_pass``
(:mod:`spargel.core.protocol`, capability ``"map"``); the driver is
:mod:`spargel.solvers.online_margin`.

A model's pass decodes each sample with the current weights (its MAP structure) and
hands the rule the sparse difference ``delta = F(x, y_gold) - F(x, y_map)`` of the two
structures' feature counts (distinct weight indices, unweighted), the number ``d`` of
parts (tokens, or 1 for a flat sample) whose label differs and the number of parts.
The margin error ``s(y_map) - s(y_gold)`` is ``-w . delta``, so no model computes
path scores.

Averaging uses the lazy trick of Daumé (and CRFsuite): besides ``w`` a sum ``ws`` of
every update times the counter ``u`` of the sample that made it is kept; the average
of the weight vectors met (the initial one and those after each of the ``u - 1``
steps) is ``w - ws / u``, computed once per epoch.

Parameters ``prm = [rule, pa_type, c, error_sensitive, gamma]`` (rule 0: averaged
perceptron, 1: passive-aggressive, 2: AROW, 3: CRF++'s MIRA). State ``st = [u, loss,
updates]``: the sample counter (starts at 1), the epoch's summed loss (perceptron and
MIRA: the fraction of wrong parts; PA / AROW: the cost) and the number of updates.

CRF++'s MIRA (rule 3) keeps per sample the sum of its step sizes, bounded by ``C =
prm[2]``: the pass's ``cov`` holds, for the ``m`` samples of the pass in their order,
those sums (``cov[:m]``, read and updated) and then each sample's number of wrong parts
(``cov[m:]``, written; the driver's shrinking reads them); the sample's place in the
pass is ``u - 1``, so the driver starts ``u`` at 1. The step is ``mu = max(0, (d -
w . delta) / ||delta||^2)``, cut to ``C`` minus the sample's sum; ``st`` has two more
slots: ``st[3]`` the largest ``d - w . delta`` of a sample whose step was not cut (the
KKT violation that stops CRF++) and ``st[4]`` the number of cut steps.
"""

import math

from .jit import inner

AP, PA, AROW, MIRA = 0, 1, 2, 3
DIFF_ONLY = -1          # a model's pass with this rule only reports the difference


@inner()
def collect(acc, mark, idx, nnz, k, v):
    """delta[k] += v in the dense accumulator ``acc``; a new index joins ``idx``.
    Returns the new number of indices."""
    if mark[k] == 0:
        mark[k] = 1
        idx[nnz] = k
        nnz += 1
    acc[k] += v
    return nnz


@inner()
def gather(acc, mark, idx, val, nnz):
    """val[j] = delta[idx[j]], and the accumulator cleared for the next sample."""
    for j in range(nnz):
        k = idx[j]
        val[j] = acc[k]
        acc[k] = 0.0
        mark[k] = 0


@inner()
def update(w, ws, cov, idx, val, nnz, d, n_parts, weight, prm, st):
    """One sample's update of the rule ``prm[0]`` (nothing when ``d == 0``)."""
    rule = int(prm[0])
    u = st[0]
    if d > 0:
        if rule == AP:
            for j in range(nnz):
                k = idx[j]
                w[k] += weight * val[j]
                ws[k] += u * weight * val[j]
            st[1] += d / n_parts * weight
            st[2] += 1.0
        else:
            err = 0.0
            for j in range(nnz):
                err -= w[idx[j]] * val[j]
            if rule == PA:
                cost = err + (math.sqrt(d) if prm[3] != 0.0 else 1.0)
                norm2 = 0.0
                for j in range(nnz):
                    norm2 += val[j] * val[j]
                pa_type = int(prm[1])
                c = prm[2]
                if pa_type == 0:
                    tau = cost / norm2 if norm2 > 0.0 else 0.0
                elif pa_type == 1:
                    tau = min(c, cost / norm2) if norm2 > 0.0 else 0.0
                else:
                    tau = cost / (norm2 + 0.5 / c)
                t = tau * weight
                for j in range(nnz):
                    k = idx[j]
                    w[k] += t * val[j]
                    ws[k] += t * u * val[j]
                st[1] += cost * weight
            elif rule == MIRA:
                _mira(w, cov, idx, val, nnz, d, n_parts, weight, err, prm, st, int(u) - 1)
            else:
                # the difference vector carries the sample weight (as CRFsuite's AROW)
                cost = err + d
                gamma = prm[4]
                frac = gamma
                for j in range(nnz):
                    dv = weight * val[j]
                    frac += dv * dv * cov[idx[j]]
                alpha = cost / frac
                for j in range(nnz):
                    k = idx[j]
                    dv = weight * val[j]
                    w[k] += alpha * cov[k] * dv
                    cov[k] = 1.0 / (1.0 / cov[k] + dv * dv / gamma)
                st[1] += cost * weight
            if rule != MIRA:
                st[2] += 1.0
    elif rule == MIRA:
        cov[len(cov) // 2 + int(u) - 1] = 0.0
    st[0] = u + 1.0


@inner()
def _mira(w, cov, idx, val, nnz, d, n_parts, weight, err, prm, st, pos):
    """CRF++'s MIRA step for the sample at place ``pos`` of the pass (see the module
    documentation); ``err = -w . delta``."""
    m = len(cov) // 2
    cov[m + pos] = d
    st[1] += d / n_parts * weight
    cost = d + err
    norm2 = 0.0
    for j in range(nnz):
        norm2 += val[j] * val[j]
    mu = max(0.0, cost / norm2) if norm2 > 0.0 else 0.0
    c = prm[2]
    if cov[pos] + mu > c:
        mu = c - cov[pos]
        st[4] += 1.0
    elif cost > st[3]:
        st[3] = cost
    if mu > 1e-10:
        cov[pos] = min(c, cov[pos] + mu)
        t = mu * weight
        for j in range(nnz):
            w[idx[j]] += t * val[j]
        st[2] += 1.0
