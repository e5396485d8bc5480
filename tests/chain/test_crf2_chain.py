"""The LIST and PAIR_ONES transition structures of the one chain core
(models/chain.py) against brute-force enumeration over state paths: log Z (scaled and
log space), state and pair marginals, expected transition counts, Viterbi and n-best,
with and without per-position corrections (whole-matrix positions included), and
PAIR_ONES with begin-marker rows (states that start a chain and are never entered)."""

import itertools

import numpy as np
import pytest

from spargel.chain import decoding as D
from spargel.chain import inference as C
from spargel.chain.kernel_data import Corrections, correction_lists


def _brute(E, allowed, score):
    """Every state path allowed by ``allowed``: (paths, scores)."""
    n, S = E.shape
    paths, scores = [], []
    for p in itertools.product(range(S), repeat=n):
        if all((p[t - 1], p[t]) in allowed for t in range(1, n)):
            sc = E[0, p[0]] + sum(E[t, p[t]] + score(t, p[t - 1], p[t]) for t in range(1, n))
            if sc > -np.inf:
                paths.append(p)
                scores.append(sc)
    return paths, np.array(scores)


def _structure(kind, rng, L=2, extra_rows=0, scale=1.0):
    """(trans, S, allowed pairs, transition score dict)."""
    if kind == C.LIST:
        S = 4
        pairs = [(i, j) for i in range(S) for j in range(S) if rng.random() < 0.6]
        sc = rng.normal(size=len(pairs)) * scale
        perm = rng.permutation(len(pairs))                      # any order is accepted
        src = np.array([pairs[q][0] for q in perm], dtype=np.int64)
        dst = np.array([pairs[q][1] for q in perm], dtype=np.int64)
        trans = C.make_transitions(S, src, dst, sc[perm], kind=C.LIST, all_pairs=False)
        return trans, S, set(pairs), dict(zip(zip(src, dst), sc[perm]))
    A = L + extra_rows
    S = A * L
    allowed = [(a * L + b, b * L + c) for a in range(A) for b in range(L) for c in range(L)]
    listed = [p for p in allowed if rng.random() < 0.5]
    sc = rng.normal(size=len(listed)) * scale
    src = np.array([p[0] for p in listed], dtype=np.int64)
    dst = np.array([p[1] for p in listed], dtype=np.int64)
    trans = C.make_transitions(S, src, dst, sc, kind=C.PAIR_ONES, n_labels=L, all_pairs=False)
    T = {p: 0.0 for p in allowed}
    T.update(zip(listed, sc))
    return trans, S, set(allowed), T


def _corrections(trans, n, rng, full_at, scale=1.0):
    """Random position corrections on allowed pairs; position ``full_at`` lists its whole
    matrix. Returns (corr, B) with B[(t, i, j)] the raw score added."""
    S, fptr, fi = trans.S, trans.fptr, trans.fi
    listed = [(fi[k], j, k) for j in range(S) for k in range(fptr[j], fptr[j + 1])]
    cptr, rows, B = [0, 0], [], {}
    for t in range(1, n):
        if t == full_at:
            rows.append((C.FULL, 0, 0.0, 0.0, 0))
        for i, j, k in listed:
            if t == full_at or rng.random() < 0.3:
                v = rng.normal() * scale if t != full_at or rng.random() < 0.5 else 0.0
                B[(t, i, j)] = v
                factor = np.exp(v) if t == full_at else np.expm1(v)
                rows.append((i, j, C.base_entry(trans, i, j, k) * factor, v, k))
        cptr.append(len(rows))
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    corr = Corrections(np.array(cptr, np.int64), np.array(cols[0], np.int64), np.array(cols[1], np.int64),
                       np.array(cols[2], float), np.array(cols[3], float), np.array(cols[4], np.int64))
    return corr, B


def _infer(trans, E, corr, K=4):
    n, S = E.shape
    Sp = C.padded(S)
    Ep = np.zeros((n, Sp))
    Ep[:, :S] = E
    psi, shift = np.zeros((n, Sp)), np.zeros(n)
    C.exp_rows(Ep, psi, shift, n, S, C.exp_scratch(n, Sp))
    alpha, scale, beta, gamma = np.zeros((n, Sp)), np.zeros(n), np.zeros((n, Sp)), np.zeros((n, Sp))
    need = np.ones(n, np.uint8)
    P, Plog = np.zeros((n, S * S)), np.zeros((n, S * S))
    acc = (np.zeros((1, 1)), np.zeros(len(trans.gi)), np.zeros(len(trans.fv)))
    counts = np.zeros(len(trans.fv))
    logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
    if not np.isnan(logz):
        C.backward(psi, n, trans, corr, alpha, scale, beta, gamma, acc, need, P, np.zeros(Sp))
        C.transition_counts(trans, acc, counts)
    la, lb, glog = np.zeros((n, S)), np.zeros((n, S)), np.zeros((n, Sp))
    counts_log, fv_t = np.zeros(len(trans.fv)), np.zeros(len(trans.fv))
    cand = np.zeros(2 * S + len(trans.fv) + 1)
    logz_log = C.forward_backward_log(Ep, n, trans, corr, la, lb, np.zeros(n), glog, counts_log, need, Plog, fv_t,
                                      cand)
    path = np.zeros(n, np.int32)
    best = D.viterbi(Ep, n, trans, corr, np.zeros((n, S)), np.zeros((n, S), np.int32), fv_t, path)
    paths, scores = np.zeros((K, n), np.int32), np.zeros(K)
    found = D.nbest(Ep, n, trans, corr, K, fv_t, paths, scores)
    return dict(logz=logz, gamma=gamma[:, :S], P=P, counts=counts, logz_log=logz_log, gamma_log=glog[:, :S],
                P_log=Plog, counts_log=counts_log, best=best, path=path, nbest=scores[:found],
                nbest_paths=paths[:found])


KINDS = [(C.LIST, 0), (C.PAIR_ONES, 0), (C.PAIR_ONES, 1), (C.PAIR_ONES, 2)]


@pytest.mark.parametrize("kind,extra", KINDS)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("with_corrections", [False, True])
def test_structures_match_enumeration(kind, extra, seed, with_corrections):
    rng = np.random.default_rng(seed)
    trans, S, allowed, T = _structure(kind, rng, extra_rows=extra)
    n = 3 if S > 6 else 4
    E = rng.normal(size=(n, S))
    if with_corrections:
        corr, B = _corrections(trans, n, rng, full_at=2 if seed % 2 else -1)
    else:
        corr, B = correction_lists(n, 0), {}
    paths, scores = _brute(E, allowed, lambda t, i, j: T[(i, j)] + B.get((t, i, j), 0.0))
    m = scores.max()
    logz = m + np.log(np.exp(scores - m).sum())
    prob = np.exp(scores - logz)
    gamma, P, pair = np.zeros((n, S)), np.zeros((n, S * S)), {}
    for p, pr in zip(paths, prob):
        for t in range(n):
            gamma[t, p[t]] += pr
        for t in range(1, n):
            P[t, p[t - 1] * S + p[t]] += pr
            pair[(p[t - 1], p[t])] = pair.get((p[t - 1], p[t]), 0.0) + pr
    fptr, fi = trans.fptr, trans.fi
    expect = np.array([pair.get((fi[k], j), 0.0) for j in range(S) for k in range(fptr[j], fptr[j + 1])])
    r = _infer(trans, E, corr)
    # the scaled recursion gathers exact counts of the listed pairs (every allowed pair
    # under LIST, the pairs with a weight under PAIR_ONES); log space of every pair
    exact = np.arange(len(expect)) if kind == C.LIST else trans.gk
    assert r["logz"] == pytest.approx(logz, abs=1e-12)
    assert r["logz_log"] == pytest.approx(logz, abs=1e-12)
    np.testing.assert_allclose(r["gamma"], gamma, atol=1e-13)
    np.testing.assert_allclose(r["gamma_log"], gamma, atol=1e-13)
    np.testing.assert_allclose(r["P"][1:], P[1:], atol=1e-13)
    np.testing.assert_allclose(r["P_log"][1:], P[1:], atol=1e-13)
    np.testing.assert_allclose(r["counts"][exact], expect[exact], atol=1e-13)
    np.testing.assert_allclose(r["counts_log"], expect, atol=1e-13)
    order = np.argsort(-scores, kind="stable")
    assert tuple(r["path"]) == paths[order[0]]
    assert r["best"] == pytest.approx(scores[order[0]], abs=1e-12)
    np.testing.assert_allclose(r["nbest"], scores[order[:len(r["nbest"])]], atol=1e-12)
    assert len(r["nbest"]) == min(4, len(paths))
    for p, sc in zip(r["nbest_paths"], r["nbest"]):
        assert sc == pytest.approx(scores[paths.index(tuple(p))], abs=1e-12)


@pytest.mark.parametrize("kind,extra", [(C.LIST, 0), (C.PAIR_ONES, 1)])
def test_huge_scores_fall_back_to_log_space(kind, extra):
    """Scores so large that the scaled recursion fails (NaN): log space still agrees."""
    failed = 0
    for seed in range(4):
        rng = np.random.default_rng(seed)
        trans, S, allowed, T = _structure(kind, rng, extra_rows=extra, scale=400.0)
        n = 3
        E = rng.normal(size=(n, S)) * 400.0
        with np.errstate(over="ignore", invalid="ignore"):
            corr, B = _corrections(trans, n, rng, full_at=-1, scale=400.0)
        paths, scores = _brute(E, allowed, lambda t, i, j: T[(i, j)] + B.get((t, i, j), 0.0))
        m = scores.max()
        with np.errstate(over="ignore", invalid="ignore"):
            r = _infer(trans, E, corr)
        failed += bool(np.isnan(r["logz"]))
        assert r["logz_log"] == pytest.approx(m + np.log(np.exp(scores - m).sum()), rel=1e-12)
        assert r["best"] == pytest.approx(scores.max(), rel=1e-12)
    assert failed > 0                        # the fallback was needed at least once


def test_pair_ones_refresh_in_place_equals_rebuild():
    rng = np.random.default_rng(9)
    L, A = 3, 4
    S = A * L
    listed = [(a * L + b, b * L + c) for a in range(A) for b in range(L) for c in range(L) if rng.random() < 0.4]
    src = np.array([p[0] for p in listed], dtype=np.int64)
    dst = np.array([p[1] for p in listed], dtype=np.int64)
    trans = C.make_transitions(S, src, dst, np.zeros(len(listed)), kind=C.PAIR_ONES, n_labels=L, all_pairs=False)
    x = rng.normal(size=len(listed))
    C.refresh_pairs(trans, x)
    fresh = C.make_transitions(S, src, dst, x, kind=C.PAIR_ONES, n_labels=L, all_pairs=False)
    for a, b in zip(trans, fresh):
        np.testing.assert_array_equal(a, b)


def test_bad_structures_are_refused():
    with pytest.raises(ValueError, match="form"):
        C.make_transitions(4, [1], [0], [1.0], kind=C.PAIR_ONES, n_labels=2, all_pairs=False)
    with pytest.raises(ValueError, match="form"):                 # into a begin-marker state
        C.make_transitions(6, [1], [4], [1.0], kind=C.PAIR_ONES, n_labels=2, all_pairs=False)
    with pytest.raises(ValueError, match="A >= n_labels"):
        C.make_transitions(6, [0], [0], [1.0], kind=C.PAIR_ONES, n_labels=3, all_pairs=False)
    with pytest.raises(ValueError, match="repeated"):
        C.make_transitions(4, [0, 0], [1, 1], [1.0, 2.0], kind=C.PAIR_ONES, n_labels=2, all_pairs=False)
    with pytest.raises(ValueError, match="repeated"):
        C.make_transitions(4, [0, 0], [1, 1], [1.0, 2.0], kind=C.LIST, all_pairs=False)


@pytest.mark.parametrize("S", [1, 3, 9, 22])
@pytest.mark.parametrize("n", [1, 5, 150])
def test_exp_rows_blocks_match_numpy(S, n):
    """exp_rows exponentiates as many rows at a time as its scratch holds (one row; all
    of them; blocks of 64 for long sequences): each gives exp(E - max) on the label
    lanes (never 0 for a finite score: exp(-708) below that), zero on the padding lanes
    and for -inf, and the row maxima."""
    rng = np.random.default_rng(S * 1000 + n)
    Sp = C.padded(S)
    E = np.zeros((n, Sp))
    E[:, :S] = rng.normal(scale=30.0, size=(n, S))
    E[0, :S] = -800.0 + np.arange(S)                 # differences below -708 give exp(-708),
    E[0, 0] = 0.0
    if S > 2 and n > 1:
        E[1, 2] = -np.inf                            # -inf gives 0 (a state not allowed)
    want = np.exp(E[:, :S] - E[:, :S].max(axis=1, keepdims=True))
    want[E[:, :S] - E[:, :S].max(axis=1, keepdims=True) < -708] = np.exp(-708.0)
    want[np.isneginf(E[:, :S])] = 0.0
    for kbuf in (C.exp_scratch(1, Sp), C.exp_scratch(n, Sp)):
        psi, shift = np.full((n, Sp), 7.0), np.zeros(n)
        C.exp_rows(E, psi, shift, n, S, kbuf)
        np.testing.assert_allclose(shift, E[:, :S].max(axis=1), rtol=0, atol=0)
        np.testing.assert_allclose(psi[:, :S], want, rtol=1e-15, atol=0)
        assert np.all(psi[:, S:] == 0.0)


def test_forward_log_z_keeps_its_digits_over_long_tiny_and_huge_scales():
    """The forward pass folds the row normalisers into a running product (one logarithm
    per sequence): over 3,000 positions whose normalisers range from 1e-150 to 1e150 its
    log Z equals the sum of their logarithms."""
    rng = np.random.default_rng(5)
    n, S = 3000, 3
    trans = C.make_transitions(S, np.repeat(np.arange(S), S), np.tile(np.arange(S), S), np.zeros(S * S),
                               kind=C.DENSE)
    Sp = C.padded(S)
    psi = np.zeros((n, Sp))
    psi[:, :S] = rng.random((n, S)) + 0.1
    shift = rng.normal(scale=5.0, size=n)
    factor = 10.0 ** rng.choice([-150.0, -60.0, 0.0, 60.0, 150.0], size=n)
    psi *= factor[:, None]
    corr = correction_lists(n, 0)
    alpha, scale = np.zeros((n, Sp)), np.zeros(n)
    logz = C.forward(psi, shift, n, trans, corr, alpha, scale, 0)
    want = shift.sum() + np.log(scale).sum() + (n - 1) * trans.tshift[0]
    assert np.isfinite(logz)
    assert abs(logz - want) <= 1e-12 * abs(want)
    # the reference: the normalisers are what an unscaled recursion would multiply out
    a = psi[0, :S].copy()
    ref = np.log(a.sum())
    a /= a.sum()
    for t in range(1, n):
        a = (a @ trans.expT[:S, :S]) * psi[t, :S]
        ref += np.log(a.sum())
        a /= a.sum()
    assert abs(logz - (shift.sum() + ref + (n - 1) * trans.tshift[0])) <= 1e-12 * abs(logz)
