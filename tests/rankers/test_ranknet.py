"""RankNetRanker and the shared skorch machinery behind every neural ranker."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import sklearn
import torch
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, LRScheduler

from sklearn_ltr import RankNetRanker, ndcg_scorer
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking
from sklearn_ltr.exceptions import NonFiniteLossError, TrainingInterruptedWarning
from sklearn_ltr.metrics import ndcg_score, swapped_pairs
from sklearn_ltr.training._net import build_dataset
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=60, n_features=8, random_state=0)


def _toy_ranknet_data(n_queries, seed):
    """The RankNet tutorial's toy data: a linear score of Gaussian features binned into 5 grades."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, n_queries)
    groups = np.repeat(np.arange(n_queries), sizes)
    X = rng.normal(size=(len(groups), 10))
    w = np.random.default_rng(123).normal(size=10)
    latent = X @ w
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.75, 0.9, 0.97]))
    return X.astype(np.float32), y, groups


class SwappedPairsOnHeldOut(Callback):
    """Record the held-out swapped-pairs count at the end of every epoch."""

    def __init__(self, X, y, groups):
        self.X, self.y, self.groups = X, y, groups

    def on_train_begin(self, net, **kwargs):
        from sklearn_ltr._groups import QueryGroups

        self.query_groups = QueryGroups(self.groups)
        self.dataset = build_dataset(self.query_groups, self.X)
        self.counts = [self._count(net)]

    def _count(self, net):
        scores = self.query_groups.unsort(net.score_rows(self.dataset))
        return swapped_pairs(self.y, scores, self.groups)

    def on_epoch_end(self, net, **kwargs):
        self.counts.append(self._count(net))
        net.module_.train()


def test_ranknet_tutorial_swapped_pairs_fall_epoch_by_epoch():
    X, y, groups = _toy_ranknet_data(200, seed=0)
    X_val, y_val, g_val = _toy_ranknet_data(60, seed=1)
    ranker = RankNetRanker(hidden_sizes=(10,), lr=1e-3, max_epochs=8, batch_size=8, random_state=0,
                           keep_training_state=True,  # the callbacks are training state
                           callbacks=[("swapped", SwappedPairsOnHeldOut(X_val, y_val, g_val))]).fit(X, y, groups)
    counts = dict(ranker.net_.callbacks_)["swapped"].counts  # callbacks are copied at fit time
    assert len(counts) == 9
    assert counts[-1] < 0.25 * counts[0], counts
    assert sum(b < a for a, b in itertools.pairwise(counts)) >= 6, counts  # falls (almost) every epoch


def test_fit_predict_shapes_and_history(data, test_device):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=3, validation_fraction=0.2, random_state=0).fit(X, y, groups=qid)
    scores = ranker.predict(X)
    assert scores.shape == (len(y),) and np.isfinite(scores).all()
    assert ranker.n_iter_ == 3 and ranker.device_ == test_device
    history = ranker.history_
    assert len(history) == 3
    for key in ("train_loss", "valid_loss", "valid_ndcg@10"):
        assert all(np.isfinite(history[:, key]))
    assert ranker.score(X, y, groups=qid) == pytest.approx(ndcg_score(y, scores, qid, k=10))


def test_learns_better_than_random(data):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=15, random_state=0).fit(X, y, groups=qid)
    X_test, y_test, q_test = make_ranking(n_queries=40, n_features=8, random_state=1)
    random_ndcg = ndcg_score(y_test, np.random.default_rng(0).normal(size=len(y_test)), q_test, k=10)
    assert ranker.score(X_test, y_test, q_test) > random_ndcg + 0.1


def test_another_seed_another_model(data):
    # The same seed reproducing is a contract check (check_clone_reproduces); here the converse.
    X, y, qid = data
    a = RankNetRanker(max_epochs=2, dropout=0.2, random_state=7).fit(X, y, qid)
    c = RankNetRanker(max_epochs=2, dropout=0.2, random_state=8).fit(X, y, qid)
    assert not np.allclose(a.predict(X), c.predict(X))


@pytest.mark.parametrize("name", sorted(__import__("sklearn_ltr.losses", fromlist=["LOSSES"]).LOSSES))
def test_every_loss_learns(data, name):
    # Each loss must move the network towards the labels: a loss returning a constant (no
    # gradient) would leave the training NDCG where an untrained network has it.
    X, y, qid = data
    rows = qid < 20
    settings = {"loss": name, "hidden_sizes": (16,), "max_epochs": 6, "random_state": 0}
    trained = RankNetRanker(lr=1e-2, **settings).fit(X[rows], y[rows], qid[rows])
    untrained = RankNetRanker(lr=1e-12, **settings).fit(X[rows], y[rows], qid[rows])
    gain = trained.score(X[rows], y[rows], qid[rows]) - untrained.score(X[rows], y[rows], qid[rows])
    assert gain > 0.02, (name, gain)


def test_callable_loss_and_loss_params(data):
    X, y, qid = data
    from sklearn_ltr.losses import get_loss

    calls = []

    def loss(scores, labels, mask):
        calls.append(scores.shape)
        return get_loss("softmax")(scores, labels, mask)

    RankNetRanker(loss=loss, max_epochs=1).fit(X, y, qid)
    assert calls and all(len(shape) == 2 for shape in calls)
    # loss_params reach the loss: another sigma trains another model from the same seed.
    sigma_1 = RankNetRanker(loss="ranknet", max_epochs=2, random_state=0).fit(X, y, qid).predict(X)
    sigma_4 = RankNetRanker(loss="ranknet", loss_params={"sigma": 4.0}, max_epochs=2, random_state=0).fit(X, y, qid)
    assert not np.allclose(sigma_4.predict(X), sigma_1)


def test_early_stopping_stops_after_patience(data):
    # Restoring the best epoch's weights is checked by the contract suite
    # (check_early_stopping_restores_best); here: stopping itself, and no interruption warning.
    X, y, qid = data
    ranker = RankNetRanker(lr=1e-12, max_epochs=30, early_stopping=True, n_iter_no_change=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingInterruptedWarning)
        ranker.fit(X, y, qid)
    assert ranker.n_iter_ == 3  # no improvement after the first epoch, patience 2
    assert ranker.best_iteration_ == 1
    assert "valid_ndcg@10" in ranker.history_[-1]


def test_user_callbacks_run_and_are_not_mutated(data):
    X, y, qid = data

    class CountEpochs(Callback):
        def initialize(self):
            self.epochs = 0
            return self

        def on_epoch_end(self, net, **kwargs):
            self.epochs += 1
            net.history.record("counted", self.epochs)

    mine = CountEpochs()
    scheduler = LRScheduler(policy="StepLR", step_size=1, gamma=0.5)
    ranker = RankNetRanker(max_epochs=3, callbacks=[("count", mine), ("lr", scheduler)]).fit(X, y, qid)
    assert ranker.history_[:, "counted"] == [1, 2, 3]
    assert not hasattr(mine, "epochs")


def test_long_lists_are_subsampled_in_training_only():
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], [300, 5, 40])
    X = rng.normal(size=(len(groups), 4)).astype(np.float32)
    y = (X[:, 0] > 1).astype(int)
    seen = []

    def loss(scores, labels, mask):
        seen.append(scores.shape[1])
        return (scores * mask).sum() * 0.0 + scores.pow(2).mean()

    ranker = RankNetRanker(loss=loss, max_list_length=50, max_epochs=1, batch_size=1).fit(X, y, groups)
    assert max(seen) == 50
    assert ranker.predict(X, groups).shape == (345,)


@pytest.mark.parametrize("loss", ["ranknet", "softmax"])
def test_single_document_queries_give_nothing_to_learn(loss):
    # One document per query: no pair to order and a softmax over one item, so the loss is 0
    # and the weights never move (the model of 3 epochs is the model of 1).
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    y, qid = [0, 1, 0, 2, 1], [1, 2, 3, 4, 5]
    one = RankNetRanker(loss=loss, max_epochs=1, random_state=0).fit(X, y, qid)
    three = RankNetRanker(loss=loss, max_epochs=3, random_state=0).fit(X, y, qid)
    assert three.history_[:, "train_loss"] == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(three.predict(X), one.predict(X))


def test_single_document_queries_with_batch_norm():
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    ranker = RankNetRanker(max_epochs=2, batch_norm=True, random_state=0).fit(X, [0, 1, 0, 2, 1], [1, 2, 3, 4, 5])
    scores = ranker.predict(X)
    assert np.isfinite(scores).all() and len(np.unique(scores)) == 5  # a real scorer, not a constant


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lr": 0}, "'lr' parameter"),
        ({"batch_size": 0}, "'batch_size' parameter"),
        ({"max_epochs": 1.5}, "'max_epochs' parameter"),
        ({"max_list_length": 1}, "'max_list_length' parameter"),
        ({"validation_fraction": 1.0}, "'validation_fraction' parameter"),
        ({"loss": "focal"}, "focal"),
        ({"optimizer": "lbfgs"}, "'optimizer' parameter"),
        ({"hidden_sizes": (4, 0)}, "'hidden_sizes' parameter"),
        ({"activation": "swish"}, "'activation' parameter"),
        ({"dropout": 1.0}, "'dropout' parameter"),
        ({"device": "tpu"}, "'device' parameter"),
    ],
)
def test_bad_parameters(data, params, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        RankNetRanker(**{"max_epochs": 1, **params}).fit(X, y, qid)


def test_bad_data(data):
    X, y, qid = data
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"(?i)imput"):
        RankNetRanker(max_epochs=1).fit(X_nan, y, qid)
    with pytest.raises(ValueError, match="negative labels"):
        RankNetRanker(max_epochs=1).fit(X, -np.ones(len(y)), qid)
    with pytest.raises(ValueError, match="groups has 3 entries"):
        RankNetRanker(max_epochs=1).fit(X, y, qid[:3])
    with pytest.raises(ValueError, match=r"validation_fraction=0\.001 leaves 0 of 60 queries"):
        RankNetRanker(max_epochs=1, validation_fraction=0.001).fit(X, y, qid)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_request_without_gpu_is_a_clear_error(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="CUDA is not available"):
        RankNetRanker(max_epochs=1, device="cuda").fit(X, y, qid)


def test_routed_grid_search(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            Pipeline([("scale", StandardScaler()), ("rank", RankNetRanker(max_epochs=2, random_state=0))]),
            {"rank__lr": [1e-3, 1e-2]}, cv=GroupKFold(2), scoring=ndcg_scorer,
        ).fit(X, y, groups=qid)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_mq2008_beats_random_scorer(data_dir):
    X, y, qid = load_svmlight_ranking(data_dir / "mq2008" / "Fold1" / "train.txt")
    X_test, y_test, q_test = load_svmlight_ranking(data_dir / "mq2008" / "Fold1" / "test.txt")
    ranker = RankNetRanker(max_epochs=10, random_state=0).fit(X, y, qid)
    ours = ranker.score(X_test, y_test, q_test)
    rng = np.random.default_rng(0)
    random = np.mean([ndcg_score(y_test, rng.normal(size=len(y_test)), q_test, k=10) for _ in range(5)])
    assert ours > random + 0.05, (ours, random)


@cuda
def test_cuda_trained_model_predicts_on_cpu_after_pickling(data):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=2, device="cuda", random_state=0).fit(X, y, qid)
    assert ranker.device_.startswith("cuda")
    blob = pickle.dumps(ranker)
    restored = pickle.loads(blob)
    restored.net_.set_params(device="cpu")
    restored.net_.module_.to("cpu")
    np.testing.assert_allclose(restored.predict(X), ranker.predict(X), rtol=2e-2, atol=2e-2)


# --- failure modes: every one loud, named, and before the work is wasted ----------------------------
def test_ndcg_losses_train_on_labels_of_200(data):
    # 2**200 overflows float32: gains are scaled per query, so an NDCG-type loss still learns.
    X, y, qid = data
    for loss in ("lambdarank", "approx_ndcg", "neuralsort_ndcg", "gumbel_approx_ndcg"):
        ranker = RankNetRanker(loss=loss, max_epochs=2, lr=1e-2, random_state=0).fit(X, y * 50, qid)
        assert np.isfinite(ranker.history_[:, "train_loss"]).all(), loss
        assert np.isfinite(ranker.predict(X)).all(), loss


def _nan_loss(scores, labels, mask):
    return scores.sum() * float("nan")


@pytest.mark.parametrize("params", [{"lr": 1e8, "optimizer": "sgd"}, {"loss": _nan_loss}])
def test_non_finite_training_is_an_error_naming_the_epoch(data, params):
    X, y, qid = data
    with pytest.raises(NonFiniteLossError, match=r"at epoch 1, batch \d+.*(learning rate|lr=)") as caught:
        RankNetRanker(max_epochs=3, random_state=0, **params).fit(X * 1e3, y, qid)
    assert isinstance(caught.value, FloatingPointError) and isinstance(caught.value, ValueError)


def test_predict_refuses_to_return_non_finite_scores(data):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(), max_epochs=1, random_state=0).fit(X, y, qid)
    with pytest.raises(ValueError, match=r"^X holds values beyond float32's range.*Scale the features"):
        ranker.predict(np.full(X.shape, 1e300))  # finite in float64, inf in the network's float32


def test_random_state_instance_is_accepted(data):
    X, y, qid = data
    first = RankNetRanker(max_epochs=1, random_state=np.random.RandomState(0)).fit(X, y, qid).predict(X)
    again = RankNetRanker(max_epochs=1, random_state=np.random.RandomState(0)).fit(X, y, qid).predict(X)
    np.testing.assert_array_equal(first, again)  # the same draws from the same state


def _three_argument_loss(scores, labels):
    return scores.mean()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("random_state", -1), ("random_state", "a"), ("loss_params", "sigma=2"), ("callbacks", ["x"]),
        ("loss", _three_argument_loss), ("early_stopping", "no"), ("batch_norm", "yes"), ("verbose", "loud"),
        ("hidden_sizes", (4, 0)), ("device", "tpu"), ("optimizer", "lbfgs"), ("optimizer", dict),
    ],
)
def test_bad_parameters_name_the_parameter(data, name, value):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=1, **{name: value})
    assert ranker.get_params()[name] is value  # stored verbatim, checked in fit
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of RankNetRanker must be"):
        ranker.fit(X, y, qid)


@pytest.mark.parametrize("options", [{"temperature": 1.0}, {"weights": None}, {"reduction": "sum"}])
def test_bad_loss_params_name_loss_params(data, options):
    X, y, qid = data
    with pytest.raises(InvalidParameterError, match="loss_params of RankNetRanker"):
        RankNetRanker(max_epochs=1, loss_params=options).fit(X, y, qid)


def test_a_query_too_long_for_memory_is_refused_before_training(monkeypatch):
    from sklearn_ltr.training import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda device: 2 * 10**9)  # 2 GB free
    X = np.random.default_rng(0).normal(size=(12_000, 3)).astype(np.float32)
    y = np.arange(12_000) % 3
    ranker = RankNetRanker(max_epochs=1)
    message = r"12000 documents.*the loss 'ranknet' \(pairwise terms\).*max_list_length=\d+"
    with pytest.raises(MemoryError, match=message):
        ranker.fit(X, y, np.zeros(12_000))
    assert not hasattr(ranker, "net_")
    # The advice works: with the suggested cap the same data trains (and predicts every row).
    cap = int(__import__("re").search(r"max_list_length=(\d+)", str(_last_error(ranker, X, y))).group(1))
    fitted = RankNetRanker(max_epochs=1, max_list_length=cap, random_state=0).fit(X, y, np.zeros(12_000))
    assert np.isfinite(fitted.predict(X)).all()


def _last_error(ranker, X, y):
    try:
        ranker.fit(X, y, np.zeros(len(y)))
    except MemoryError as error:
        return error
    raise AssertionError("no MemoryError")


def test_memory_estimate_of_a_batch_by_hand():
    from sklearn_ltr.training._memory import batch_bytes

    # 2 lists of 1,000 documents, 8 [L, L] float32 tensors per list and 10 values per document.
    assert batch_bytes(2, 1000, quadratic=8, linear=10) == 4 * (2000 * 10 + 2 * 1000**2 * 8)


def test_interrupted_fit_warns_with_the_epoch(data):
    X, y, qid = data

    class Interrupt(Callback):
        def on_epoch_end(self, net, **kwargs):
            if len(net.history) == 2:
                raise KeyboardInterrupt

    with pytest.warns(TrainingInterruptedWarning, match=r"after 2 complete epoch\(s\) of max_epochs=5"):
        ranker = RankNetRanker(max_epochs=5, callbacks=[Interrupt()], random_state=0).fit(X, y, qid)
    assert ranker.n_iter_ == 2 and np.isfinite(ranker.predict(X)).all()


def test_zero_weight_queries_do_not_train(data):
    # A query of weight 0 contributes nothing: its labels cannot change the model.
    X, y, qid = data
    weights = np.where(qid < 10, 0.0, 1.0)
    scrambled = y.copy()
    scrambled[qid < 10] = np.random.default_rng(0).permutation(y[qid < 10])
    settings = {"max_epochs": 2, "random_state": 0}
    first = RankNetRanker(**settings).fit(X, y, qid, sample_weight=weights).predict(X)
    second = RankNetRanker(**settings).fit(X, scrambled, qid, sample_weight=weights).predict(X)
    np.testing.assert_array_equal(first, second)
    unweighted = RankNetRanker(**settings).fit(X, scrambled, qid).predict(X)
    assert not np.allclose(unweighted, first)


def test_sample_weight_errors(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="sample_weight must be the same for every row of a query"):
        RankNetRanker(max_epochs=1).fit(X, y, qid, sample_weight=np.arange(len(y), dtype=float))
    with pytest.raises(ValueError, match="sample_weight must be 1-D with one weight per row"):
        RankNetRanker(max_epochs=1).fit(X, y, qid, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="sample_weight must hold finite, non-negative"):
        RankNetRanker(max_epochs=1).fit(X, y, qid, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="takes no per-query weights"):
        RankNetRanker(max_epochs=1, loss=_three_plus_loss).fit(X, y, qid, sample_weight=np.ones(len(y)))


def _three_plus_loss(scores, labels, mask):
    return (scores * mask).pow(2).mean()


@pytest.mark.parametrize("options", [{}, {"batch_norm": True, "dropout": 0.2, "max_list_length": 5}])
def test_packed_batches_train_the_model_padded_batches_train(data, monkeypatch, options):
    """Training on packed rows (no padded feature tensor) is training on the padded batch's real rows."""
    from sklearn_ltr.nn import MLPScorer

    X, y, groups = data
    params = {"hidden_sizes": (8,), "max_epochs": 3, "batch_size": 4, "random_state": 0,
              "validation_fraction": 0.25, **options}
    packed = RankNetRanker(**params).fit(X, y, groups)
    assert packed.net_.packed_inputs
    monkeypatch.setattr(MLPScorer, "packed_inputs", False)
    padded = RankNetRanker(**params).fit(X, y, groups)
    assert not padded.net_.packed_inputs
    np.testing.assert_allclose(packed.predict(X), padded.predict(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(packed.history_[:, "train_loss"], padded.history_[:, "train_loss"], rtol=1e-6)
