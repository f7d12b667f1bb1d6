"""RankNetRanker and the shared skorch machinery behind every neural ranker."""

import itertools
import pickle

import numpy as np
import pytest
import sklearn
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, LRScheduler

from sklearn_ltr import RankNetRanker, ndcg_scorer
from sklearn_ltr._skorch import build_dataset
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking
from sklearn_ltr.metrics import ndcg_score, swapped_pairs

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
                           callbacks=[("swapped", SwappedPairsOnHeldOut(X_val, y_val, g_val))]).fit(X, y, groups)
    counts = dict(ranker.net_.callbacks_)["swapped"].counts  # callbacks are copied at fit time
    assert len(counts) == 9
    assert counts[-1] < 0.25 * counts[0], counts
    assert sum(b < a for a, b in itertools.pairwise(counts)) >= 6, counts  # falls (almost) every epoch


def test_fit_predict_shapes_and_history(data):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=3, validation_fraction=0.2, random_state=0).fit(X, y, groups=qid)
    scores = ranker.predict(X)
    assert scores.shape == (len(y),) and np.isfinite(scores).all()
    assert ranker.n_iter_ == 3 and ranker.device_ == "cpu"
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


def test_same_seed_same_predictions_and_row_order_invariance(data):
    X, y, qid = data
    a = RankNetRanker(max_epochs=2, dropout=0.2, random_state=7).fit(X, y, qid)
    b = RankNetRanker(max_epochs=2, dropout=0.2, random_state=7).fit(X, y, qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    c = RankNetRanker(max_epochs=2, dropout=0.2, random_state=8).fit(X, y, qid)
    assert not np.allclose(a.predict(X), c.predict(X))
    perm = np.random.default_rng(0).permutation(len(y))
    np.testing.assert_allclose(a.predict(X[perm]), a.predict(X)[perm], rtol=1e-6)
    # Relabelling the queries (same order of ids) changes nothing: queries, not ids, are the items.
    d = RankNetRanker(max_epochs=2, dropout=0.2, random_state=7).fit(X, y, qid * 10 + 3)
    np.testing.assert_array_equal(d.predict(X), a.predict(X))


def test_predictions_do_not_depend_on_batch_size(data):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=2, batch_norm=True, random_state=0).fit(X, y, qid)
    dataset_scores = [ranker.net_.score_rows(build_dataset(*_query_index(X, qid)), batch_size=b) for b in (1, 7, 500)]
    np.testing.assert_allclose(dataset_scores[0], dataset_scores[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dataset_scores[0], dataset_scores[2], rtol=1e-5, atol=1e-6)


def _query_index(X, qid):
    from sklearn_ltr._groups import QueryGroups

    return QueryGroups(qid), X


def test_pickle_and_clone(data):
    X, y, qid = data
    ranker = RankNetRanker(max_epochs=2, random_state=0).fit(X, y, qid)
    restored = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(restored.predict(X), ranker.predict(X))
    fresh = clone(ranker)
    assert not hasattr(fresh, "net_") and fresh.get_params() == ranker.get_params()


def test_every_loss_trains(data):
    X, y, qid = data
    from sklearn_ltr.losses import LOSSES

    rows = qid < 15
    for name in LOSSES:
        ranker = RankNetRanker(loss=name, max_epochs=1, random_state=0).fit(X[rows], y[rows], qid[rows])
        assert np.isfinite(ranker.predict(X[rows])).all(), name


def test_callable_loss_and_loss_params(data):
    X, y, qid = data
    from sklearn_ltr.losses import get_loss

    calls = []

    def loss(scores, labels, mask):
        calls.append(scores.shape)
        return get_loss("softmax")(scores, labels, mask)

    RankNetRanker(loss=loss, max_epochs=1).fit(X, y, qid)
    assert calls and all(len(shape) == 2 for shape in calls)
    RankNetRanker(loss="ranknet", loss_params={"sigma": 2.0}, max_epochs=1).fit(X, y, qid)


def test_early_stopping_stops_and_restores(data):
    X, y, qid = data
    ranker = RankNetRanker(lr=1e-12, max_epochs=30, early_stopping=True, n_iter_no_change=2, random_state=0)
    ranker.fit(X, y, qid)
    assert ranker.n_iter_ == 3  # no improvement after the first epoch, patience 2
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


def test_single_document_queries(data):
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    RankNetRanker(max_epochs=2, batch_norm=True).fit(X, [0, 1, 0, 2, 1], groups=[1, 2, 3, 4, 5])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lr": 0}, "lr must be a number > 0"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"max_epochs": 1.5}, "max_epochs must be an integer"),
        ({"max_list_length": 1}, "max_list_length must be an integer >= 2"),
        ({"validation_fraction": 1.0}, "validation_fraction must be"),
        ({"loss": "hinge"}, "hinge"),
        ({"optimizer": "lbfgs"}, "optimizer must be one of"),
        ({"hidden_sizes": (4, 0)}, "hidden_sizes must be positive integers"),
        ({"activation": "swish"}, "activation must be one of"),
        ({"dropout": 1.0}, "dropout must be"),
        ({"device": "tpu"}, "device must be"),
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
