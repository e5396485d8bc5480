"""Sharded training on a Dask LocalCluster (2 worker processes): the sharded CRF and
log-linear models against the single-process models (loss and gradient to 1e-10
relative, OWL-QN weights to 1e-8), a worker killed during a fit, the errors."""

import contextlib
import os
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install spargel[dask])")

from spargel import CRF, LogLinearClassifier, read_conll                     # noqa: E402
from spargel.datasets import make_chain_data                                # noqa: E402
from spargel.scaleout import cluster as dcluster  # noqa: E402
from spargel.chain import scaleout as sequences  # noqa: E402
from spargel.errors import CapabilityError, DataFormatError, SpargelError  # noqa: E402
from spargel.chain.crf import ChainCRF                                      # noqa: E402
from spargel.loglinear.model import FlatLogLinear                           # noqa: E402

TEMPLATE = "U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[1,0]\nU03:%x[0,1]\nU04:%x[0,0]/%x[0,1]\nB10:%x[0,1]\nB\n"


@contextlib.contextmanager
def _local_client():
    """A client of a fresh local cluster of two one-thread worker processes."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def client():
    with _local_client() as c:
        yield c


def write_corpus(path, n_seq=120, seed=0):
    """A column file (word, tag, label) whose labels follow the words and tags."""
    rng = np.random.default_rng(seed)
    lines = []
    for s in range(n_seq):
        if s % 37 == 0:
            lines += ["-DOCSTART- -X- O", ""]
        lab = int(rng.integers(3))
        for _ in range(int(rng.integers(1, 9))):
            lab = lab if rng.random() < 0.6 else int(rng.integers(3))
            word = f"w{int(rng.integers(12)) + 4 * lab}"
            tag = f"T{lab if rng.random() < 0.7 else int(rng.integers(3))}"
            lines.append(f"{word} {tag} L{lab}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def relative(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("dask") / "train.txt")


def local_model(est, X, y):
    data = est._dataset(X, y, grow=True)
    space = est._feature_space(data)
    return ChainCRF(space, data), space


# -- loss and gradient ---------------------------------------------------------------------
@pytest.mark.parametrize("feature_space", ["observed", "full"])
def test_sharded_crf_loss_grad_equal_single_process(client, corpus, feature_space):
    sents = list(read_conll(corpus))
    y = [s.labels for s in sents]
    est = CRF(template=TEMPLATE, feature_space=feature_space)
    ref, space = local_model(est, sents, y)
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.5, size=ref.n_params)
    loss, g = ref.loss_grad(w)
    for X, yy, n_shards in ((sents, y, 3), ([str(corpus)], None, 4)):
        built = sequences.build(CRF(template=TEMPLATE, feature_space=feature_space, n_shards=n_shards), X, yy,
                                client=client)
        assert built.model.n_shards >= 2
        # same numbering of attributes and labels as one process: the same layout
        for name in ("u_ptr", "u_lab", "b_ptr", "b_pair", "t_pair"):
            np.testing.assert_array_equal(getattr(built.space, name), getattr(space, name))
        loss_s, g_s = built.model.loss_grad(w)
        assert abs(loss_s - loss) <= 1e-10 * abs(loss)
        assert relative(g_s, g) <= 1e-10
        assert built.model.loss(w) == pytest.approx(loss, rel=1e-10)
        t = built.model.timings[-1]
        assert t["workers"] == 2 and 0 <= t["compute"] <= t["wall"]


def test_sharded_crf_with_dict_features_partial_labels_and_weights(client):
    X, y, _ = make_chain_data(n_sequences=60, n_irrelevant=20, random_state=2)
    y[3] = [None] * len(y[3])
    y[5][1] = None
    sw = np.linspace(0.5, 2.0, len(X))
    est = CRF()
    data = est._dataset(X, y, grow=True)
    ref = ChainCRF(est._feature_space(data), data, sample_weight=sw)
    w = np.random.default_rng(3).normal(size=ref.n_params)
    built = sequences.build(CRF(n_shards=3), X, y, client=client, sample_weight=sw)
    loss, g = ref.loss_grad(w)
    loss_s, g_s = built.model.loss_grad(w)
    assert abs(loss_s - loss) <= 1e-10 * abs(loss) and relative(g_s, g) <= 1e-10


def test_sharded_loglinear_loss_grad_equal_single_process(client):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 7))
    y = rng.integers(0, 3, size=300)
    clf = LogLinearClassifier(client=client, n_shards=3)
    from spargel.loglinear.scaleout import sharded_model
    model = sharded_model(clf.fit_plan(), X, y, 3, None, None)
    ref = FlatLogLinear(X, y, 3)
    w = rng.normal(size=ref.n_params)
    loss, g = ref.loss_grad(w)
    loss_s, g_s = model.loss_grad(w)
    assert model.n_shards == 3
    assert abs(loss_s - loss) <= 1e-10 * abs(loss) and relative(g_s, g) <= 1e-10


# -- fitted models ---------------------------------------------------------------------------
# converged until the pseudo-gradient is 1e-10 (no stop on the objective: its changes are
# lost in rounding long before): the optimum is unique (l2 > 0), so fits whose sums round
# differently end within 1e-8 of each other
FIT = dict(template=TEMPLATE, l1=3.0, l2=0.01, tol=0.0, gtol=1e-10, max_iter=1000)


@pytest.fixture(scope="module")
def reference(corpus):
    sents = list(read_conll(corpus))
    return sents, CRF(**FIT).fit(sents, [s.labels for s in sents])


@pytest.fixture(scope="module")
def sharded(client, corpus):
    """The same fit on the cluster: 2 shards read from the file by the workers."""
    return CRF(client=client, n_shards=2, **FIT).fit(str(corpus))


def test_crf_owlqn_same_model(client, reference, sharded):
    """Same objective to 1e-12 relative and the same weights to 1e-8, although the shard
    sums round differently from the single-process ones (docs/distributed.md, "Same
    model?")."""
    sents, ref = reference
    assert ref.stop_reason_ == "gtol" and sharded.stop_reason_ == "gtol"
    assert sharded.attributes_ == ref.attributes_
    assert sharded.weights_.shape == ref.weights_.shape
    assert abs(sharded.objective_ - ref.objective_) <= 1e-12 * abs(ref.objective_)
    assert np.max(np.abs(sharded.weights_ - ref.weights_)) <= 1e-8
    assert sharded.predict(sents[:20]) == ref.predict(sents[:20])
    assert len(sharded.timings_) == sharded.history_[-1]["n_evals"]
    # in memory, 3 shards: the same objective again
    crf = CRF(client=client, n_shards=3, **FIT).fit(sents, [s.labels for s in sents])
    assert abs(crf.objective_ - ref.objective_) <= 1e-12 * abs(ref.objective_)
    assert np.max(np.abs(crf.weights_ - ref.weights_)) <= 1e-8


def test_loglinear_owlqn_same_weights(client):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 10))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.5 * rng.normal(size=(400, 3)), axis=1)]
    kw = dict(l1=2.0, tol=1e-8, gtol=1e-6, max_iter=500)
    ref = LogLinearClassifier(**kw).fit(X, y)
    got = LogLinearClassifier(client=client, n_shards=2, **kw).fit(X, y)
    assert np.max(np.abs(got.coef_ - ref.coef_)) <= 1e-8
    assert np.max(np.abs(got.intercept_ - ref.intercept_)) <= 1e-8
    da = pytest.importorskip("dask.array")
    got = LogLinearClassifier(client=client, **kw).fit(da.from_array(X, chunks=(150, 5)), da.from_array(y, chunks=150))
    assert list(got.classes_) == ["a", "b", "c"]
    assert np.max(np.abs(got.coef_ - ref.coef_)) <= 1e-8


def test_crf_from_a_dask_bag(client, corpus):
    db = pytest.importorskip("dask.bag")
    sents = list(read_conll(corpus))
    kw = dict(template=TEMPLATE, l1=0.5, max_iter=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # may stop on max_iter
        ref = CRF(**kw).fit(sents, [s.labels for s in sents])
        got = CRF(client=client, **kw).fit(db.from_sequence(sents, npartitions=3))
    assert got.n_iter_ == ref.n_iter_
    assert got.attributes_ == ref.attributes_
    assert np.max(np.abs(got.weights_ - ref.weights_)) <= 1e-8


# -- the bound solver on a sharded model -----------------------------------------------------
UNIGRAMS = "U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[1,0]\nU03:%x[0,1]\nB\n"


def test_crf_bound_solver_on_shards_same_model(client, corpus):
    """The bound of the sharded CRF is the sum of its shards' bounds (curvature products
    on the workers): with (nearly) exact inner solves the bound solver takes the same
    steps as in one process (the chain bound converges linearly, so the test compares
    the first 15 iterations rather than the optimum). With l1 the inner problem is an
    OWL-QN run on the quadratic model, one cluster round trip per evaluation: a few
    steps reach the single-process objective (to the accuracy of the inexact inner
    solves, whose iterates round differently)."""
    sents = list(read_conll(corpus))
    y = [s.labels for s in sents]
    kw = dict(template=UNIGRAMS, solver="bound", l2=1.0, tol=0.0, gtol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # stops on max_iter
        exact = dict(kw, l1=0.0, max_iter=15, solver_options={"inner_tol": 1e-12})
        ref = CRF(**exact).fit(sents, y)
        got = CRF(client=client, n_shards=3, **exact).fit(sents, y)
        assert got.n_iter_ == ref.n_iter_ == 15
        assert abs(got.objective_ - ref.objective_) <= 1e-12 * abs(ref.objective_)
        assert np.max(np.abs(got.weights_ - ref.weights_)) <= 1e-8
        assert got.history_[-1]["curvature"].startswith("sharded")
        sparse = dict(kw, l1=1.0, max_iter=4)
        ref = CRF(**sparse).fit(sents, y)
        got = CRF(client=client, n_shards=2, **sparse).fit(sents, y)
    objs = [r["objective"] for r in got.history_]
    assert all(b <= a for a, b in zip(objs, objs[1:]))
    assert abs(got.objective_ - ref.objective_) <= 1e-5 * abs(ref.objective_)     # inexact inner solves


@pytest.mark.parametrize("solver", ["grafting-light", "grafting"])
def test_grafting_runs_unchanged_on_shards(client, corpus, solver):
    """The incremental solvers need only the loss and gradient: on the sharded model they
    select the same features and reach the single-process objective. Both run to
    convergence (Grafting needs about 1,050 iterations here): two runs stopped by
    max_iter part at different points of the path, the sharded sums rounding apart."""
    sents = list(read_conll(corpus))
    y = [s.labels for s in sents]
    kw = dict(template=TEMPLATE, solver=solver, l1=3.0, l2=0.01, tol=1e-9, max_iter=5000)
    ref = CRF(**kw).fit(sents, y)
    got = CRF(client=client, n_shards=2, **kw).fit(sents, y)
    assert abs(got.objective_ - ref.objective_) <= 1e-6 * abs(ref.objective_)
    assert np.array_equal(got.weights_ != 0, ref.weights_ != 0)


def test_sharded_bound_equals_the_single_process_bound(client):
    """Loss, gradient and curvature products of the sharded bound against one process
    (a CRF: operator curvature; a small log-linear model: one dense matrix)."""
    from spargel.loglinear.scaleout import sharded_model
    X, y, _ = make_chain_data(n_sequences=40, random_state=4)
    est = CRF()
    data = est._dataset(X, y, grow=True)
    ref = ChainCRF(est._feature_space(data), data)
    built = sequences.build(CRF(n_shards=3).fit_plan(), X, y, client=client)
    rng = np.random.default_rng(6)
    w = rng.normal(scale=0.3, size=ref.n_params)
    v = rng.normal(size=ref.n_params)
    A, B = ref.bound(w), built.model.bound(w)
    assert abs(B.loss - A.loss) <= 1e-10 * abs(A.loss) and relative(B.grad, A.grad) <= 1e-10
    assert relative(B.curvature.matvec(v), A.curvature.matvec(v)) <= 1e-10
    assert relative(B.curvature.diagonal(), A.curvature.diagonal()) <= 1e-12
    Xf = rng.normal(size=(200, 5))
    yf = rng.integers(0, 3, size=200)
    ref_f = FlatLogLinear(Xf, yf, 3)
    model = sharded_model(LogLinearClassifier(client=client, n_shards=2).fit_plan(), Xf, yf, 3, None, None)
    wf = rng.normal(size=ref_f.n_params)
    A, B = ref_f.bound(wf, curvature="dense"), model.bound(wf, curvature="dense")
    assert type(B.curvature).__name__ == "DenseCurvature"
    np.testing.assert_allclose(B.curvature.M, A.curvature.dense().M, rtol=1e-10, atol=1e-12)
    assert relative(B.grad, A.grad) <= 1e-10


def test_loglinear_bound_solver_on_shards_same_weights(client):
    """Small log-linear models: the shards' exact dense curvatures are added into one
    matrix, so the sharded bound solver converges like the single-process one."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 10))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.5 * rng.normal(size=(400, 3)), axis=1)]
    kw = dict(solver="bound", l1=1.0, l2=0.5, tol=0.0, gtol=1e-9, max_iter=300)
    ref = LogLinearClassifier(**kw).fit(X, y)
    got = LogLinearClassifier(client=client, n_shards=2, **kw).fit(X, y)
    assert ref.stop_reason_ == got.stop_reason_ == "gtol"
    assert np.max(np.abs(got.coef_ - ref.coef_)) <= 1e-8
    assert got.history_[-1]["curvature"] == "sharded DenseCurvature"


# -- faults ----------------------------------------------------------------------------------
@pytest.fixture()
def own_client():
    """A cluster of its own (a worker of it gets killed)."""
    with _local_client() as c:
        yield c


def test_killing_a_worker_during_the_fit_gives_the_same_model(own_client, corpus, sharded):
    """The training file is read by the workers; one of them is killed after iteration
    3: its shards are read again on the other worker, and the fit ends with the model of
    the fit without a fault (on another cluster: its workers' memory layout can move the
    last bits of a sum, 1e-14 relative seen with the generic-CPU kernels, which the
    remaining iterations carry)."""
    import signal
    killed = []

    def kill_one(row):
        if row["iteration"] == 3 and not killed:
            victim = sorted(own_client.scheduler_info()["workers"])[0]
            pid = own_client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.append(victim)

    crf = CRF(client=own_client, n_shards=2, **FIT).fit(str(corpus), callback=kill_one)
    assert killed
    assert crf.attributes_ == sharded.attributes_
    np.testing.assert_allclose(crf.weights_, sharded.weights_, rtol=1e-8, atol=1e-10)
    assert abs(crf.n_iter_ - sharded.n_iter_) <= 0.05 * sharded.n_iter_
    own_client.wait_for_workers(2, timeout=60)            # the nanny restarts the lost worker


def test_no_workers_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(dcluster, "WORKER_WAIT", 0.5)
    cluster = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    with distributed.Client(cluster) as c:
        with pytest.raises(SpargelError, match="no workers"):
            CRF(client=c).fit([[{"a": 1}]], [["x"]])
    cluster.close()


def test_unreadable_training_file_is_named(client, tmp_path):
    missing = tmp_path / "absent.txt"
    with pytest.raises(DataFormatError, match=r"absent\.txt.*cannot be read on the Dask worker"):
        CRF(client=client, template=TEMPLATE).fit([str(missing)])


def test_bad_line_in_a_shard_names_the_file_line(client, corpus, tmp_path):
    text = corpus.read_text().splitlines()
    text[200] = "only_one_field_and extra fields here"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(text) + "\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:201: expected 3 columns"):
        CRF(client=client, template=TEMPLATE, n_shards=4).fit(str(bad))


def test_solver_without_its_capability_is_refused_before_reading(client, corpus):
    with pytest.raises(CapabilityError, match="sgd"):
        CRF(client=client, solver="sgd-l1", template=TEMPLATE).fit(str(corpus))


def test_cli_train_with_scheduler_writes_the_same_model(client, corpus, tmp_path):
    from spargel.cli import main
    from spargel.core.model_file import load_arrays
    tpl = tmp_path / "t.tpl"
    tpl.write_text(TEMPLATE)
    args = ["train", "-q", "--pattern", str(tpl), "--l1", "0.5", "--max-iter", "12", str(corpus)]
    assert main(args + [str(tmp_path / "local.model")]) == 0
    addr = client.scheduler.address
    assert main(args[:1] + ["--scheduler", addr, "--shards", "3"] + args[1:] + [str(tmp_path / "dask.model")]) == 0
    a = load_arrays(str(tmp_path / "local.model"), "crf")[1]
    b = load_arrays(str(tmp_path / "dask.model"), "crf")[1]
    assert set(a) == set(b)
    np.testing.assert_array_equal(a["uni_text"], b["uni_text"])
    assert np.max(np.abs(a["coef"] - b["coef"])) <= 1e-8


# -- Gaussian MRFs -----------------------------------------------------------------------------
def test_gaussian_cv_folds_on_the_cluster_give_the_same_choice(client):
    from spargel.gaussian.estimator import SparseGaussianMRFCV
    rng = np.random.default_rng(7)
    X = rng.standard_normal((80, 6))
    X[:, 1] += X[:, 0]
    X[:, 4] -= 0.5 * X[:, 3]
    ref = SparseGaussianMRFCV(alphas=6, cv=4).fit(X)
    got = SparseGaussianMRFCV(alphas=6, cv=4, client=client).fit(X)
    # the same choice and edges; scores and estimate to the last bits a process's memory
    # alignment can move (numpy's vectorised sums; a test order here gave 2e-16 relative)
    assert got.alpha_ == ref.alpha_
    np.testing.assert_array_equal(got.cv_results_["mean_edges"], ref.cv_results_["mean_edges"])
    for key in ("mean_test_score", "split3_test_score"):
        np.testing.assert_allclose(got.cv_results_[key], ref.cv_results_[key], rtol=1e-12)
    np.testing.assert_allclose(got.precision_, ref.precision_, rtol=1e-10, atol=1e-12)


def test_gaussian_from_data_cv_folds_on_the_cluster(client):
    """covariance='from_data': the folds' from-data paths run on the workers (no p x p
    matrix there either) and give the single-process choice."""
    import scipy.sparse as sp

    from spargel.gaussian.estimator import SparseGaussianMRFCV
    rng = np.random.default_rng(9)
    X = rng.standard_normal((24, 40))
    for j in range(1, 40):
        if j % 8:
            X[:, j] += 0.7 * X[:, j - 1]
    kw = dict(covariance="from_data", alphas=4, alpha_min_ratio=0.3, cv=3)
    ref = SparseGaussianMRFCV(**kw).fit(X)
    got = SparseGaussianMRFCV(client=client, **kw).fit(X)
    assert got.alpha_ == ref.alpha_ and sp.issparse(got.precision_)
    for key in ("mean_test_score", "mean_edges", "split2_test_score"):
        np.testing.assert_allclose(got.cv_results_[key], ref.cv_results_[key], rtol=1e-12)
    assert abs(got.precision_ - ref.precision_).max() <= 1e-12 * abs(ref.precision_).max()


def test_gaussian_screened_components_on_the_cluster(client):
    """Three independent blocks of variables: screening splits the problem and each block
    is solved on a worker; the estimate is the single-process one (to the last bits that
    memory alignment moves: 4e-14 relative seen in one test order)."""
    from spargel.gaussian.estimator import SparseGaussianMRF
    rng = np.random.default_rng(8)
    blocks = []
    for size in (5, 4, 6):
        A = rng.standard_normal((size, size)) * 0.8
        blocks.append(rng.standard_normal((300, size)) @ (np.eye(size) + A))
    X = np.hstack(blocks)
    X /= X.std(axis=0)
    ref = SparseGaussianMRF(alpha=0.2).fit(X)
    with distributed.get_task_stream(client) as ts:
        got = SparseGaussianMRF(alpha=0.2, client=client).fit(X)
    assert sum("solve_component" in t["key"] for t in ts.data) == 3      # one task per component
    assert ref.n_components_ == got.n_components_ == 3
    np.testing.assert_array_equal(got.precision_ != 0, ref.precision_ != 0)
    np.testing.assert_allclose(got.precision_, ref.precision_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.covariance_, ref.covariance_, rtol=1e-10, atol=1e-12)
    assert got.converged_ and got.objective_ == pytest.approx(ref.objective_, rel=1e-12)


@pytest.mark.parametrize("method", ["mb", "glasso", "concord"])
def test_gaussian_stars_on_the_cluster_chooses_the_threads_alpha(client, method):
    """StARS's subsample paths on the workers (each subsample's state stays on its worker,
    one task per alpha): the threads' choice, variabilities and frequencies from the same
    random_state, and the same stop (the bounded path)."""
    from spargel.gaussian.selection import SparseGaussianMRFSelect
    rng = np.random.default_rng(21)
    X = rng.standard_normal((150, 14))
    for j in range(1, 14):
        X[:, j] += 0.6 * X[:, j - 1]
    kw = dict(method=method, n_subsamples=6, alphas=8, random_state=5)
    ref = SparseGaussianMRFSelect("stars", n_jobs=2, **kw).fit(X)
    with distributed.get_task_stream(client) as ts:
        got = SparseGaussianMRFSelect("stars", client=client, **kw).fit(X)
    fitted = int(np.isfinite(ref.criterion_scores_).sum())
    assert sum("_advance_task" in t["key"] for t in ts.data) == 6 * fitted
    assert got.alpha_ == ref.alpha_ and got.selected_index_ == ref.selected_index_
    np.testing.assert_array_equal(got.criterion_scores_, ref.criterion_scores_)
    np.testing.assert_array_equal(got.edges_, ref.edges_)
    freq = got.edge_frequency_
    freq = freq.toarray() if hasattr(freq, "toarray") else freq
    ref_freq = ref.edge_frequency_
    np.testing.assert_array_equal(freq, ref_freq.toarray() if hasattr(ref_freq, "toarray")
                                  else ref_freq)
