"""Constrained decoding (allowed transitions, starts and ends) against brute-force
enumeration of the allowed label paths on tiny random first-order CRFs: Viterbi, n-best,
marginals and log Z (scaled and log-space), the constrained likelihood's gradient
against finite differences; the presets' rules; the estimator, its model file and the
command line; clear refusals."""

import itertools
import warnings

import numpy as np
import pytest

from spargel import CRF, read_conll
from spargel.chain import batch_kernels as B
from spargel.chain import crf as M
from spargel.chain.constraints import TransitionConstraints, invalid_sequences, violations
from spargel.cli import main
from spargel.errors import ParameterError
from spargel.metrics import chunk_f1

from crf_reference import enumerate_paths, path_score, random_data, random_space
from crf2_reference import enumerate_paths2, path_score2, random_space2

LABELS = {
    "bio": ["O", "B-A", "I-A", "B-B", "I-B"],
    "iob1": ["O", "I-A", "B-A", "I-B", "B-B"],
    "bioes": ["O", "B-A", "I-A", "E-A", "S-A"],
}


def _random_constraints(rng, L):
    """Random allowed pairs, starts and ends; label 0 may follow, start and end anything,
    so every length has an allowed path."""
    allowed = rng.random((L, L)) < 0.5
    allowed[0, :] = allowed[:, 0] = True
    start, end = rng.random(L) < 0.5, rng.random(L) < 0.5
    start[0] = end[0] = True
    names = [f"y{i}" for i in range(L)]
    spec = TransitionConstraints(allowed=allowed, labels=names, start=[n for n, s in zip(names, start) if s],
                                 end=[n for n, e in zip(names, end) if e])
    return spec.resolve(names)


def problem(seed, kind, scheme, scale=1.0, real_values=True):
    # real_values=False: attributes at value 1, so that positions with one bigram attribute
    # copy its compacted list or name its stored matrix (crf_kernels.corrections)
    rng = np.random.default_rng(seed)
    L = 5
    data = random_data(rng, n_labels=L, max_len=4, n_seq=4 if real_values else 8, real_values=real_values)
    space = random_space(rng, data, kind, L, 6, 3)
    w = rng.normal(scale=scale, size=space.n_params)
    lc = _random_constraints(rng, L) if scheme == "random" else TransitionConstraints(scheme).resolve(LABELS[scheme])
    return space, data, w, lc


def _ok(lc, path):
    return bool(lc.start[path[0]] and lc.end[path[-1]] and all(lc.allowed[a, b] for a, b in zip(path, path[1:])))


def allowed_paths(space, data, w, s, lc):
    paths, scores = enumerate_paths(space, data, w, s)
    keep = [i for i, p in enumerate(paths) if _ok(lc, p)]
    return [paths[i] for i in keep], scores[keep]


def _logsumexp(x):
    m = x.max()
    return m + np.log(np.exp(x - m).sum())


SCHEMES = ["bio", "iob1", "bioes", "random"]
KINDS = ["full", "observed"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", range(2))
def test_viterbi_and_nbest_are_the_best_allowed_paths(seed, scheme, kind):
    space, data, w, lc = problem(seed, kind, scheme)
    best, best_scores = M.decode(space, data, w, constraints=lc)
    lists = M.nbest(space, data, w, 6, constraints=lc)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = allowed_paths(space, data, w, s, lc)
        order = np.argsort(-scores, kind="stable")
        assert tuple(best[lo:hi]) == paths[order[0]]
        assert best_scores[s] == pytest.approx(scores[order[0]], abs=1e-12)
        got = lists[s]
        assert len(got) == min(6, len(paths))
        np.testing.assert_allclose([sc for _, sc in got], scores[order[:6]], atol=1e-12)
        for path, sc in got:
            assert _ok(lc, tuple(path))
            assert sc == pytest.approx(path_score(space, data, w, s, list(path)), abs=1e-12)
        assert len({tuple(p) for p, _ in got}) == len(got)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", range(2))
def test_marginals_and_logz_sum_over_allowed_paths(seed, scheme, kind):
    space, data, w, lc = problem(seed, kind, scheme)
    marg, logz = M.marginals(space, data, w, constraints=lc)
    # the log-space pass (taken where the scaled recursion would underflow) on every sequence
    view = M.CRFView(space, data, constraints=lc)
    trans = view.refresh(w)
    order = np.arange(data.n_sequences, dtype=np.int64)
    marg_log, logz_log = np.zeros_like(marg), np.empty(data.n_sequences)
    B.marginals_log(w, *view.kernel_args(trans), order, marg_log, logz_log, view.buffers(order),
                    view.log_buffers(order), np.zeros(len(trans.fv)))
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = allowed_paths(space, data, w, s, lc)
        z = _logsumexp(scores)
        p = np.exp(scores - z)
        point = np.zeros((hi - lo, space.n_labels))
        for path, pr in zip(paths, p):
            point[np.arange(hi - lo), list(path)] += pr
        assert logz[s] == pytest.approx(z, rel=1e-10, abs=1e-10)
        assert logz_log[s] == pytest.approx(z, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-12)
        np.testing.assert_allclose(marg_log[lo:hi], point, atol=1e-12)


def _valid_labels(rng, data, lc, L):
    """``data`` with its labels replaced by an allowed path per sequence."""
    labels = data.labels.copy()
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        ok = [p for p in itertools.product(range(L), repeat=hi - lo) if _ok(lc, p)]
        labels[lo:hi] = ok[int(rng.integers(len(ok)))]
    data.labels = labels
    return data


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheme", ["bio", "bioes", "random"])
def test_constrained_likelihood_and_its_gradient(scheme, kind):
    space, data, w, lc = problem(5, kind, scheme)
    data = _valid_labels(np.random.default_rng(1), data, lc, space.n_labels)
    space = random_space(np.random.default_rng(2), data, kind, space.n_labels, 6, 3)
    w = np.random.default_rng(3).normal(size=space.n_params)
    model = M.ChainCRF(space, data, constraints=lc)
    loss, g = model.loss_grad(w)
    brute = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        _, scores = allowed_paths(space, data, w, s, lc)
        brute += _logsumexp(scores) - path_score(space, data, w, s, list(data.labels[lo:hi]))
    assert loss == pytest.approx(brute, rel=1e-10)
    eps = 1e-6
    fd = np.empty_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        fd[i] = (model.loss(w + e) - model.loss(w - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inference", ["auto", "dense"])
@pytest.mark.parametrize("scheme", ["bioes", "random"])
def test_unit_values_matrices_and_dense_inference(scheme, inference):
    space, data, w, lc = problem(4, "full", scheme, real_values=False)
    view = M.CRFView(space, data, inference, constraints=lc)
    assert inference == "dense" or len(view.mats) > 0        # stored position matrices in use
    best, _ = M.decode_view(view, w)
    marg, logz = M.marginals_view(view, w)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = allowed_paths(space, data, w, s, lc)
        assert tuple(best[lo:hi]) == paths[int(np.argmax(scores))]
        assert logz[s] == pytest.approx(_logsumexp(scores), rel=1e-10, abs=1e-10)
        p = np.exp(scores - _logsumexp(scores))
        point = np.zeros((hi - lo, space.n_labels))
        for path, pr in zip(paths, p):
            point[np.arange(hi - lo), list(path)] += pr
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-12)


# --------------------------------------------------------------------------- order 2
def problem2(seed, kind, scheme, scale=1.0):
    from spargel.chain import crf2 as M2
    rng = np.random.default_rng(seed)
    L = 5
    data = random_data(rng, n_labels=L, max_len=4, n_big=2)
    space = random_space2(data, kind, L, 6, 2)
    w = rng.normal(scale=scale, size=space.n_params)
    lc = _random_constraints(rng, L) if scheme == "random" else TransitionConstraints(scheme).resolve(LABELS[scheme])
    return M2, space, data, w, lc


def allowed_paths2(space, data, w, s, lc):
    paths, scores = enumerate_paths2(space, data, w, s)
    keep = [i for i, p in enumerate(paths) if _ok(lc, p)]
    return [paths[i] for i in keep], scores[keep]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_second_order_matches_enumeration_of_allowed_paths(scheme, kind):
    M2, space, data, w, lc = problem2(7, kind, scheme)
    best, best_scores = M2.decode(space, data, w, constraints=lc)
    lists = M2.nbest(space, data, w, 5, constraints=lc)
    marg, logz = M2.marginals(space, data, w, constraints=lc)
    view = M2.CRF2View(space, data, constraints=lc)
    trans = view.refresh(w)
    order = np.arange(data.n_sequences, dtype=np.int64)
    marg_log, logz_log = np.zeros_like(marg), np.empty(data.n_sequences)
    B.marginals_log(w, *view.kernel_args(trans), order, marg_log, logz_log, view.buffers(order),
                    view.log_buffers(order), np.zeros(len(trans.fv)))
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = allowed_paths2(space, data, w, s, lc)
        order_ = np.argsort(-scores, kind="stable")
        assert tuple(best[lo:hi]) == paths[order_[0]]
        assert best_scores[s] == pytest.approx(scores[order_[0]], abs=1e-12)
        np.testing.assert_allclose([sc for _, sc in lists[s]], scores[order_[:5]], atol=1e-12)
        assert all(_ok(lc, tuple(p)) for p, _ in lists[s])
        z = _logsumexp(scores)
        point = np.zeros((hi - lo, space.n_labels))
        for path, pr in zip(paths, np.exp(scores - z)):
            point[np.arange(hi - lo), list(path)] += pr
        assert logz[s] == pytest.approx(z, rel=1e-10, abs=1e-10)
        assert logz_log[s] == pytest.approx(z, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(marg[lo:hi], point, atol=1e-12)
        np.testing.assert_allclose(marg_log[lo:hi], point, atol=1e-12)


@pytest.mark.parametrize("scheme", ["bioes", "random"])
def test_second_order_constrained_likelihood_and_gradient(scheme):
    M2, space, data, w, lc = problem2(8, "full", scheme)
    data = _valid_labels(np.random.default_rng(1), data, lc, space.n_labels)
    model = M2.ChainCRF2(space, data, constraints=lc)
    loss, g = model.loss_grad(w)
    brute = 0.0
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        _, scores = allowed_paths2(space, data, w, s, lc)
        brute += _logsumexp(scores) - path_score2(space, data, w, s, list(data.labels[lo:hi]))
    assert loss == pytest.approx(brute, rel=1e-10)
    eps = 1e-6
    fd = np.empty_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        fd[i] = (model.loss(w + e) - model.loss(w - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_large_weights_take_log_space_and_stay_exact():
    space, data, w, lc = problem(1, "full", "bio", scale=150.0)
    view = M.CRFView(space, data, constraints=lc)
    trans = view.refresh(w)
    failed = np.zeros(data.n_sequences, np.uint8)
    B.marginals_all(w, *view.kernel_args(trans), np.zeros((data.n_tokens, space.n_labels)),
                    np.empty(data.n_sequences), failed, view.buffers(np.arange(data.n_sequences)),
                    np.zeros(len(trans.fv)))
    assert failed.sum() > 0                     # the scaled recursion hands these to log space
    marg, logz = M.marginals(space, data, w, constraints=lc)
    best, _ = M.decode(space, data, w, constraints=lc)
    for s in range(data.n_sequences):
        lo, hi = data.seq_ptr[s], data.seq_ptr[s + 1]
        paths, scores = allowed_paths(space, data, w, s, lc)
        assert logz[s] == pytest.approx(_logsumexp(scores), rel=1e-10)
        assert tuple(best[lo:hi]) == paths[int(np.argmax(scores))]
    assert np.all(np.isfinite(marg))


def test_unconstrained_structure_unchanged():
    # no constraints: empty start / end rows, every pair reached in one step
    space, data, w, _ = problem(0, "full", "bio")
    trans = M.CRFView(space, data).refresh(w)
    assert len(trans.start) == 0 and len(trans.end) == 0 and trans.tshift[3] == 1.0


# --------------------------------------------------------------------------- presets
def test_bio_rules():
    lc = TransitionConstraints("bio").resolve(["O", "B-NP", "I-NP", "B-VP", "I-VP"])
    O, BN, IN, BV, IV = range(5)
    assert list(lc.start) == [True, True, False, True, False]
    assert lc.end.all()
    assert lc.allowed[BN, IN] and lc.allowed[IN, IN] and not lc.allowed[BV, IN] and not lc.allowed[O, IN]
    assert not lc.allowed[IN, IV] and lc.allowed[IN, BV] and lc.allowed[IV, O] and lc.allowed[O, BV]
    assert lc.allowed[:, [O, BN, BV]].all()
    assert TransitionConstraints("iob2") == TransitionConstraints("bio")


def test_iob1_rules():
    lc = TransitionConstraints("iob1").resolve(["O", "I-NP", "B-NP", "I-VP"])
    O, IN, BN, IV = range(4)
    assert list(lc.start) == [True, True, False, True] and lc.end.all()
    assert lc.allowed[:, [O, IN, IV]].all()                  # I- opens or continues a chunk
    assert lc.allowed[IN, BN] and lc.allowed[BN, BN]         # B- splits two adjacent NP chunks
    assert not lc.allowed[O, BN] and not lc.allowed[IV, BN]


@pytest.mark.parametrize("spelling,names", [("bioes", ["O", "B-X", "I-X", "E-X", "S-X", "B-Y", "E-Y"]),
                                            ("bilou", ["O", "B-X", "I-X", "L-X", "U-X", "B-Y", "L-Y"])])
def test_bioes_rules(spelling, names):
    lc = TransitionConstraints(spelling).resolve(names)
    O, BX, IX, EX, SX, BY, EY = range(7)
    assert list(lc.start) == [True, True, False, False, True, True, False]
    assert list(lc.end) == [True, False, False, True, True, False, True]
    for a in (BX, IX):                                       # inside X: I-X, E-X only
        assert set(np.flatnonzero(lc.allowed[a])) == {IX, EX}
    for a in (O, EX, SX, EY):                                # outside: O, B-, S- only
        assert set(np.flatnonzero(lc.allowed[a])) == {O, BX, SX, BY}
    assert set(np.flatnonzero(lc.allowed[BY])) == {EY}


def test_user_pairs_and_round_trip():
    spec = TransitionConstraints.coerce({"allowed": [("a", "b"), ("b", "a"), ("a", "a")], "start": ["a"],
                                         "end": ["a", "b"]})
    lc = spec.resolve(["b", "a"])
    assert lc.allowed.tolist() == [[False, True], [True, True]]
    assert lc.start.tolist() == [False, True] and lc.end.tolist() == [True, True]
    assert TransitionConstraints.coerce(spec.to_dict()) == spec
    m = TransitionConstraints(allowed=np.array([[1, 0], [1, 1]]), labels=["a", "b"])
    assert m.resolve(["a", "b"]).allowed.tolist() == [[True, False], [True, True]]


@pytest.mark.parametrize("spec,labels,match", [
    ("bogus", ["O"], "unknown constraints preset"),
    ("bio", ["O", "NN"], "does not fit the BIO scheme"),
    ("bio", ["O", "E-X"], "does not fit the BIO scheme"),
    ({"allowed": [("a", "c")]}, ["a", "b"], "labels the model does not have"),
    ({"allowed": [("a",)]}, ["a"], "pair"),
    ({"allowed": [("a", "a")], "start": []}, ["a"], "no label to start"),
    ({"allowed": np.ones((2, 2), bool)}, ["a", "b"], "needs labels"),
    ({"allowed": [[1, 0]], "labels": ["a", "b"]}, ["a", "b"], "2 x 2"),
    ({"presets": "bio"}, ["O"], "unknown keys"),
    (3, ["O"], "preset name"),
])
def test_bad_constraints_are_refused(spec, labels, match):
    with pytest.raises(ParameterError, match=match):
        TransitionConstraints.coerce(spec).resolve(labels)


def test_violations_and_counts():
    lc = TransitionConstraints("bio").resolve(["O", "B-A", "I-A"])
    assert violations(lc, np.array([0, 1, 2, 0]), np.array([0, 4])) is None
    assert violations(lc, np.array([0, 2]), np.array([0, 2]))[:2] == (0, 1)
    assert violations(lc, np.array([2]), np.array([0, 1]))[:2] == (0, 0)
    assert violations(lc, np.array([0, -1, 2]), np.array([0, 3])) is None       # unknown: not checked
    assert invalid_sequences([["O", "I-A"], ["B-A", "I-A"], ["I-A"]], "bio") == 2


# --------------------------------------------------------------------------- estimator
TEMPLATE = "U00:%x[1,0]\nU01:%x[-1,0]\n"        # a weak model: it writes invalid sequences


@pytest.fixture(scope="module")
def chunks():
    from pathlib import Path
    d = Path(__file__).resolve().parents[1] / "data"
    tr = list(read_conll(str(d / "tiny_chunks_train.txt")))
    te = list(read_conll(str(d / "tiny_chunks_test.txt")))
    return [s.columns for s in tr], [s.labels for s in tr], [s.columns for s in te], [s.labels for s in te]


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CRF(template=TEMPLATE, l1=0.5, max_iter=30, **kw).fit(X, y)


def test_trained_chunker_writes_no_invalid_sequence(chunks, tmp_path):
    X, y, Xt, yt = chunks
    crf = _fit(X, y)
    free = crf.predict(Xt)
    assert invalid_sequences(free, "bio") > 0
    crf.constraints = "bio"
    cons = crf.predict(Xt)
    assert invalid_sequences(cons, "bio") == 0
    assert chunk_f1(yt, cons) >= chunk_f1(yt, free)
    # n-best and marginals honour them; the probabilities are over the allowed paths
    nb = crf.predict_nbest(Xt[:5], k=4)
    for lst in nb:
        assert all(invalid_sequences([p], "bio") == 0 for p, _ in lst)
        assert sum(pr for _, pr in lst) <= 1 + 1e-9
    marg = crf.predict_marginals(Xt)
    for seq in marg:
        assert seq[0]["I-NP"] == 0.0            # I- may not start a sequence
        for row in seq:
            assert sum(row.values()) == pytest.approx(1.0)
    assert crf.predict_single(Xt[0]) == cons[0]
    # python-crfsuite's Tagger API over the estimator honours them too
    tagger = crf.tagger_
    bad = next(i for i, (p, q) in enumerate(zip(free, cons)) if p != q)
    assert tagger.tag(Xt[bad]) == cons[bad]
    assert tagger.marginal("I-NP", 0) == 0.0
    seq_lists = crf.predict_nbest([Xt[bad]], k=1)
    assert tagger.probability(seq_lists[0][0][0]) == pytest.approx(seq_lists[0][0][1])
    assert tagger.probability(["I-NP"] * len(Xt[bad])) == 0.0
    # the model file keeps the constraints; one without them still loads without
    path = tmp_path / "m.spargel"
    crf.save(path)
    back = CRF.load(path)
    assert TransitionConstraints.coerce(back.constraints) == TransitionConstraints("bio")
    assert back.predict(Xt) == cons
    with pytest.raises(ValueError, match="CRFsuite file cannot hold"):
        crf.save(tmp_path / "m.crfsuite", format="crfsuite")
    with pytest.raises(ValueError, match="Wapiti file cannot hold"):
        crf.save(tmp_path / "m.wapiti", format="wapiti")
    crf.constraints = None
    crf.save(path)
    assert CRF.load(path).constraints is None and CRF.load(path).predict(Xt) == free


def test_feature_dict_model_and_its_tagger(chunks):
    # a model a CRFsuite file could hold: its tagger has a one-call path, which the
    # constraints bypass for the estimator's (constrained) paths
    X, y, Xt, yt = chunks

    def dicts(seqs):
        return [[{"n": s[t + 1][0] if t + 1 < len(s) else "EOS", "p": s[t - 1][0] if t else "BOS"}
                 for t in range(len(s))] for s in seqs]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRF(l1=0.5, max_iter=30).fit(dicts(X), y)
    D = dicts(Xt)
    free = [crf.tagger_.tag(x) for x in D]
    assert free == crf.predict(D)

    def has_np(seqs):                   # sequences with B-NP followed by I-NP
        return sum(any(a == "B-NP" and b == "I-NP" for a, b in zip(s, s[1:])) for s in seqs)

    assert has_np(free) > 0
    names = list(crf.classes_)
    crf.constraints = {"allowed": [(a, b) for a in names for b in names if (a, b) != ("B-NP", "I-NP")],
                       "start": [n for n in names if n != "I-NP"]}
    cons = crf.predict(D)
    assert has_np(cons) == 0
    assert [crf.tagger_.tag(x) for x in D] == cons == [crf.predict_single(x) for x in D]
    crf.tagger_.set(D[0])
    assert crf.tagger_.marginal("I-NP", 0) == 0.0
    assert crf.tagger_.probability(cons[0]) == pytest.approx(crf.predict_nbest(D[:1], k=1)[0][0][1])
    i = next(i for i, seq in enumerate(free) if has_np([seq]))
    crf.tagger_.set(D[i])
    assert crf.tagger_.probability(free[i]) == 0.0          # a forbidden sequence


def test_stored_constraints_are_checked_on_load(chunks, tmp_path, monkeypatch):
    from spargel.core.model_file import ModelFileError
    X, y, _, _ = chunks
    crf = _fit(X, y, constraints={"allowed": [("O", "O")]})
    path = tmp_path / "m.spargel"
    crf.save(path)
    assert TransitionConstraints.coerce(CRF.load(path).constraints).pairs == {("O", "O")}
    meta = crf._meta()
    for bad in ({"allowed": [["O", "X-Y"]]}, {"allowed": "OO"}, {"preset": "bogus"}, {"allowed": 3}):
        monkeypatch.setattr(crf, "_meta", lambda bad=bad: {**meta, "constraints": bad})
        crf.save(path)
        with pytest.raises(ModelFileError, match="stored constraints"):
            CRF.load(path)


def test_constrained_training(chunks):
    X, y, Xt, yt = chunks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRF(template=TEMPLATE, l1=0.5, max_iter=30, constraints="bio", constrain_training=True)
        crf.fit(X, y, X_dev=Xt, y_dev=yt)
    pred = crf.predict(Xt)
    assert invalid_sequences(pred, "bio") == 0
    assert chunk_f1(yt, pred) > 0.5
    assert crf.history_[-1]["dev_f1"] == pytest.approx(chunk_f1(yt, pred))     # dev decoded under them too


def test_second_order_estimator(chunks):
    X, y, Xt, yt = chunks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRF(template=TEMPLATE + "T\n", order=2, l1=0.5, max_iter=30).fit(X, y)
    free = crf.predict(Xt)
    crf.constraints = "bio"
    cons = crf.predict(Xt)
    assert invalid_sequences(cons, "bio") == 0
    assert chunk_f1(yt, cons) >= chunk_f1(yt, free) - 0.02
    for lst in crf.predict_nbest(Xt[:3], k=3):
        assert all(invalid_sequences([p], "bio") == 0 for p, _ in lst)
    assert crf.predict_marginals(Xt[:2])[0][0]["I-NP"] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trained = CRF(template=TEMPLATE + "T\n", order=2, l1=0.5, max_iter=30, constraints="bio",
                      constrain_training=True).fit(X, y)
    assert invalid_sequences(trained.predict(Xt), "bio") == 0


def test_estimator_refusals(chunks):
    X, y, Xt, _ = chunks
    pos = [[tok[1] for tok in s] for s in X]                 # part-of-speech tags: no chunk scheme
    with pytest.raises(ParameterError, match="label 'DT' does not fit the BIO scheme"):
        _fit(X, pos, constraints="bio")
    with pytest.raises(ValueError, match="token 3: label 'B-VP' may not follow 'I-NP' under the constraints"):
        _fit(X, y, constraints="bioes", constrain_training=True)          # BIO data is not BIOES
    with pytest.raises(ParameterError, match="needs constraints"):
        _fit(X, y, constrain_training=True)
    with pytest.raises(ParameterError, match="solver 'sgd-l1' cannot"):
        _fit(X, y, constraints="bio", constrain_training=True, solver="sgd-l1")
    with pytest.raises(ParameterError, match="partial_fit does not train under constraints"):
        CRF(template=TEMPLATE, constraints="bio", constrain_training=True).partial_fit(X, y)
    bad = [list(s) for s in y]
    bad[3][0] = "I-NP"
    with pytest.raises(ValueError, match="training sequence 3, token 0: label 'I-NP' may not start"):
        _fit(X, bad, constraints="bio", constrain_training=True)
    # a sequence the constraints leave no path for
    crf = _fit(X, y, constraints={"allowed": [("O", "O")], "end": ["B-NP"], "start": ["O"]})
    with pytest.raises(ValueError, match="no label sequence that the constraints allow"):
        crf.predict(Xt[:1])


# --------------------------------------------------------------------------- command line
def test_cli_label_and_train_constraints(chunks, tmp_path, capsys):
    from pathlib import Path
    d = Path(__file__).resolve().parents[1] / "data"
    pattern = tmp_path / "pattern.txt"
    pattern.write_text(TEMPLATE)
    model = tmp_path / "m.spargel"
    args = ["train", "--quiet", "--l1", "0.5", "--max-iter", "30", "--pattern", pattern]
    assert main([str(a) for a in args + [d / "tiny_chunks_train.txt", model]]) == 0

    def labelled(*extra):
        out = tmp_path / "out.txt"
        assert main([str(a) for a in ["label", "--model", model, *extra, d / "tiny_chunks_test.txt", out]]) == 0
        seqs = [[]]
        for line in out.read_text().splitlines():
            if line.strip():
                seqs[-1].append(line.split()[-1])
            elif seqs[-1]:
                seqs.append([])
        return [s for s in seqs if s]

    assert invalid_sequences(labelled(), "bio") > 0
    assert invalid_sequences(labelled("--constraints", "bio"), "bio") == 0
    assert invalid_sequences(labelled("--constraints", "bio", "--nbest", "2"), "bio") == 0
    capsys.readouterr()
    # constraints stored at training time, and constrained training
    assert main([str(a) for a in args + ["--constraints", "bio", "--constrain-training",
                                         d / "tiny_chunks_train.txt", model]]) == 0
    assert invalid_sequences(labelled(), "bio") == 0
    # constraints stored, then taken off at labelling time
    assert main([str(a) for a in args + ["--constraints", "bio", d / "tiny_chunks_train.txt", model]]) == 0
    assert invalid_sequences(labelled(), "bio") == 0
    assert invalid_sequences(labelled("--constraints", "none"), "bio") > 0
    capsys.readouterr()
    assert main([str(a) for a in args + ["--constrain-training", d / "tiny_chunks_train.txt", model]]) == 2
    assert "needs --constraints" in capsys.readouterr().err
    assert main([str(a) for a in args + ["--constraints", "bio", "--model-format", "wapiti",
                                         d / "tiny_chunks_train.txt", model]]) == 2
    assert "Wapiti model file cannot hold --constraints" in capsys.readouterr().err
