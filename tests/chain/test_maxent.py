"""Wapiti's maximum-entropy models (``CRF(model_type="maxent")``, ``spargel train -T
maxent``): every token labelled on its own. Ground truth: the same fit as a chain
whose template has no label-pair lines (no transitions, so the tokens are
independent), a plain per-token softmax likelihood and arg max decoding; the model
files (spargel's and Wapiti's type-0 files) round-trip; the command line trains,
labels and refuses what it cannot do."""

import pickle

import numpy as np
import pytest

from spargel.chain.estimator import CRF
from spargel.data.templates import Template
from spargel.errors import ParameterError

from test_cli import make_corpus, run, write_corpus

TPL = "U00:%x[0,0]\nU01:%x[-1,0]\nU02:%x[0,1]\nB01:%x[0,0]\nB\n"
UNIGRAMS = "U00:%x[0,0]\nU01:%x[-1,0]\nU02:%x[0,1]\n"


def corpus(n, seed):
    sents = make_corpus(n, seed=seed)
    X = [[tok[:-1] for tok in s] for s in sents]
    y = [[tok[-1] for tok in s] for s in sents]
    return X, y


@pytest.fixture(scope="module")
def data():
    return corpus(60, 1), corpus(20, 2)


def test_maxent_is_the_chain_without_label_pairs(data):
    (X, y), (Xt, _) = data
    kw = dict(solver="lbfgs", l1=0.0, l2=1.0, max_iter=300, tol=0, gtol=1e-9)
    me = CRF(template=TPL, model_type="maxent", **kw).fit(X, y)
    plain = CRF(template=UNIGRAMS, **kw).fit(X, y)
    assert me.transition_features_ == {} and len(me.space_.b_pair) == 0
    np.testing.assert_allclose(me.weights_, plain.weights_, atol=1e-6)
    assert me.predict(Xt) == plain.predict(Xt)


def test_maxent_likelihood_and_decoding_are_per_token(data):
    """The objective is a sum of per-token softmax losses, decoding an arg max per token
    (a plain computation from the state features)."""
    (X, y), (Xt, _) = data
    me = CRF(template=TPL, model_type="maxent", solver="lbfgs", l1=0.0, l2=1.0, max_iter=200).fit(X, y)
    feats = me.state_features_
    tpl = Template.parse(UNIGRAMS)
    labels = list(me.classes_)

    def scores(seq):
        uni, _ = tpl.extract(seq, pad=True)
        return np.array([[sum(feats.get((a, lab), 0.0) for a in attrs) for lab in labels] for attrs in uni])

    nll = 0.0
    for seq, gold in zip(X, y):
        s = scores(seq)
        top = s.max(axis=1, keepdims=True)
        logz = (top[:, 0] + np.log(np.exp(s - top).sum(axis=1)))
        nll += float(np.sum(logz - s[np.arange(len(gold)), [labels.index(g) for g in gold]]))
    assert me.objective_ == pytest.approx(nll + 0.5 * float(me.weights_ @ me.weights_), rel=1e-6)
    for seq, pred in zip(Xt, me.predict(Xt)):
        assert pred == [labels[k] for k in scores(seq).argmax(axis=1)]


def test_maxent_model_files_round_trip(data, tmp_path):
    (X, y), (Xt, _) = data
    me = CRF(template=TPL, model_type="maxent", l1=0.1, max_iter=50).fit(X, y)
    me.save(tmp_path / "m")
    back = CRF.load(tmp_path / "m")
    assert back.model_type == "maxent" and back.predict(Xt) == me.predict(Xt)
    t = pickle.loads(pickle.dumps(back._featurizer().template))
    assert t.unigram_only and t.n_bigram == 0 and not t.transitions


def test_maxent_parameters_are_checked():
    X, y = corpus(5, 3)
    with pytest.raises(ParameterError, match="model_type"):
        CRF(template=TPL, model_type="memm").fit(X, y)
    with pytest.raises(ParameterError, match="order=1"):
        CRF(template=TPL + "T\n", model_type="maxent", order=2).fit(X, y)


def test_wapiti_maxent_file_round_trip(tmp_path, capsys):
    train = write_corpus(tmp_path / "train.txt", make_corpus(60, seed=1))
    test = write_corpus(tmp_path / "test.txt", make_corpus(20, seed=2))
    pat = tmp_path / "pat"
    pat.write_text("# format: wapiti\nu:w=%x[0,0]\nu:p=%x[-1,0]\n*:t=%x[0,1]\nb\n")
    model = tmp_path / "m.wapiti"
    rc, _, err = run(["train", "-q", "-T", "maxent", "-a", "rprop", "-i", "40", "-p", pat, "--model-format",
                      "wapiti", train, model], capsys)
    assert rc == 0, err
    assert model.read_bytes().startswith(b"#mdl#0#")
    rc, labelled, err = run(["label", "-m", model, test], capsys)
    assert rc == 0, err
    from spargel.chain.wapiti_format import from_wapiti_file
    est = from_wapiti_file(CRF, model)
    assert est.model_type == "maxent" and len(est.space_.t_pair) == 0
    rows = [line.split() for line in labelled.splitlines() if line.strip()]
    X = [[line.split()[:-1] for line in block.splitlines()] for block in test.read_text().strip().split("\n\n")]
    preds = [lab for seq in est.predict(X) for lab in seq]
    assert preds == [r[-1] for r in rows]


def test_cli_maxent_trains_and_labels(tmp_path, capsys):
    train = write_corpus(tmp_path / "train.txt", make_corpus(60, seed=1))
    model = tmp_path / "m"
    rc, _, err = run(["train", "-q", "--type", "maxent", "-i", "30", train, model], capsys)
    assert rc == 0, err
    rc, out, err = run(["label", "-m", model, train], capsys)
    assert rc == 0 and out.strip(), err
    assert CRF.load(model).model_type == "maxent"
