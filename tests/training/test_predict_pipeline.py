"""Predict's pipeline (sklearn_ltr.training._predict) and the canonical order of _blocks."""

import concurrent.futures
import itertools

import numpy as np
import pytest
import torch

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr._blocks import canonical_order, check_finite_scores
from sklearn_ltr.base import BaseRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.rankers import _neural
from sklearn_ltr.training import _predict
from sklearn_ltr.training._predict import ScoringBlock, predict_scores

LIST_CONTEXT = {
    "DASALC": lambda: DASALCRanker(hidden_size=16, n_layers=1, n_attention_layers=2, n_heads=2, head_size=8,
                                   max_epochs=2),
    "SetRank": lambda: SetRankRanker(d_model=16, n_blocks=2, n_heads=2, max_epochs=2),
}


def _memcmp_order(rows, sizes, *tie_breakers):
    """The reference: each list's rows by (bytes of rows, bytes of tie breakers, position), by NumPy's void sort."""
    whole = np.concatenate([np.ascontiguousarray(a).reshape(len(a), a[0].size if len(a) else 1).view(np.uint8)
                            for a in (rows, *tie_breakers)], axis=1)
    keys = whole.view(np.dtype((np.void, whole.shape[1]))).ravel()
    by_bytes = np.argsort(keys, kind="stable")
    lists = np.repeat(np.arange(len(sizes)), sizes)
    return by_bytes[np.argsort(lists[by_bytes], kind="stable")]


@pytest.mark.parametrize("seed", range(40))
def test_canonical_order_is_the_memcmp_order_of_each_list(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 30, rng.integers(1, 12))
    n, n_features = int(sizes.sum()), int(rng.integers(1, 9))
    dtype = (np.float32, np.float64)[seed % 2]
    rows = rng.integers(0, 1 + seed % 4, (n, n_features)).astype(dtype)  # many ties, long equal prefixes
    if seed % 3 == 0:
        rows = rng.normal(size=(n, n_features)).astype(dtype)
    if seed % 5 == 0 and n > 4:
        rows[::2] = rows[1]  # identical rows: kept in their given order
    order = canonical_order(rows, sizes)
    assert np.array_equal(order, _memcmp_order(rows, sizes))
    ranks = rng.integers(0, 3, n).astype(np.float64)
    assert np.array_equal(canonical_order(rows, sizes, ranks), _memcmp_order(rows, sizes, ranks))


def test_canonical_order_by_hand():
    # Lists [1, 2, 1] and [5, 3]. Float32 bytes, little-endian, in memcmp order: 2.0 (00 00 00 40),
    # 3.0 (00 00 40 40), 1.0 (00 00 80 3f), 5.0 (00 00 a0 40): not the order of the values.
    rows = np.array([[1.0], [2.0], [1.0], [5.0], [3.0]], dtype=np.float32)
    assert canonical_order(rows, [3, 2]).tolist() == [1, 0, 2, 4, 3]  # the two 1.0 in their given order
    assert canonical_order(rows, [3, 2], np.array([7, 0, 6, 0, 0])).tolist() == [1, 2, 0, 4, 3]  # tie broken
    # -0.0 and 0.0 differ in their bytes (80 in the last): a fixed order, whatever the input order.
    zeros = np.array([[-0.0], [0.0]])
    assert canonical_order(zeros, [2]).tolist() == [1, 0]
    assert canonical_order(zeros[::-1], [2]).tolist() == [0, 1]
    assert canonical_order(np.zeros((0, 3)), []).tolist() == []


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, n_features=7, shuffle=True, random_state=0)
    return X, y, qid


@pytest.fixture(scope="module", params=sorted(LIST_CONTEXT))
def list_model(request, data):
    X, y, qid = data
    return LIST_CONTEXT[request.param]().set_params(device="cpu", random_state=0).fit(X, y, groups=qid)


def test_predict_is_exactly_invariant_to_row_order(list_model, data):
    X, _, qid = data
    scores = list_model.predict(X, qid)
    for seed in range(3):
        permutation = np.random.default_rng(seed).permutation(len(qid))
        assert np.array_equal(list_model.predict(X[permutation], qid[permutation]), scores[permutation])


def test_without_the_canonical_order_row_order_changes_the_bits(list_model, data, monkeypatch):
    # The guard of the test above: scored in input order, attention sums each list in another order.
    X, _, qid = data
    monkeypatch.setattr(_predict, "canonical_order", lambda rows, sizes, *more: np.arange(len(rows)))
    scores = list_model.predict(X, qid)
    changed = [not np.array_equal(list_model.predict(X[p], qid[p]), scores[p])
               for p in (np.random.default_rng(seed).permutation(len(qid)) for seed in range(3))]
    assert any(changed)


class _FirstFeature(torch.nn.Module):
    """Scores a document by feature 0 plus its initial rank, and a padded slot by 1000 plus its padded value."""

    def forward(self, X, mask, initial_rank=None):
        score = X[..., 0] + (0.0 if initial_rank is None else initial_rank)
        return torch.where(mask, score, 1000.0 + score)


class _Net:
    device, module_ = "cpu", _FirstFeature()

    def infer(self, inputs):
        return self.module_(**inputs)


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("canonical", [False, True])
def test_every_row_gets_its_own_score(canonical, threads):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    rank = rng.integers(1, 9, 200).astype(np.float64)
    groups = np.repeat(np.arange(20), rng.multinomial(200 - 20, np.ones(20) / 20) + 1)
    rng.shuffle(groups)
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    cuts = [0, 3, 11, 12, 20]  # blocks of 3, 8, 1 and 8 queries
    blocks = [ScoringBlock(order[offsets[lo]:offsets[hi]], sizes[lo:hi], canonical) for lo, hi in
              itertools.pairwise(cuts)]
    documents = []
    scores, finite = predict_scores(_Net(), X, blocks, documents=lambda s: documents.append(s) or 16,
                                    extras={"initial_rank": rank}, threads=threads)
    expected = X[:, 0].astype(np.float32).astype(np.float64) + rank  # float32 features, float32 sum
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert finite and len(documents) == len(blocks)
    # A row that no block holds stays NaN.
    partial, _ = predict_scores(_Net(), X, blocks[:2], documents=lambda s: 16)
    assert np.isnan(partial[order[offsets[11]:]]).all() and np.isfinite(partial[order[:offsets[11]]]).all()


@pytest.mark.parametrize("make", [LIST_CONTEXT["SetRank"], lambda: RankNetRanker(hidden_sizes=(8,), max_epochs=1)],
                         ids=["SetRank", "RankNet"])
def test_a_thread_that_prepares_blocks_gives_the_same_scores(make, data, monkeypatch):
    X, y, qid = data
    ranker = make().set_params(device="cpu", random_state=0).fit(X, y, groups=qid)
    expected = ranker.predict(X, qid)
    monkeypatch.setattr(_neural, "_PREDICT_DOCUMENTS", 40)  # many blocks
    alone = ranker.predict(X, qid)
    threads = []

    def pool(transfer, count):
        threads.append(count)
        return concurrent.futures.ThreadPoolExecutor(2)

    monkeypatch.setattr(_predict._Transfer, "threads", pool)
    assert np.array_equal(ranker.predict(X, qid), alone) and threads == [None]
    np.testing.assert_allclose(alone, expected, rtol=1e-5, atol=1e-6)


@pytest.fixture()
def checked_on_device(monkeypatch):
    """The CUDA path's feature check (validation skips it, the pipeline checks the staged blocks), on CPU."""
    monkeypatch.setattr(_neural.NeuralRanker, "_checks_features_on_device", lambda self: True)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_features_checked_on_the_device_give_validations_message(value, data, checked_on_device):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=1, device="cpu", random_state=0).fit(X, y, groups=qid)
    bad = X.copy()
    bad[17, 3] = value
    with pytest.raises(ValueError) as validation:
        BaseRanker._validate_X(ranker, bad)  # the CPU path's check
    with pytest.raises(ValueError) as predict:
        ranker.predict(bad, qid)
    assert str(predict.value) == str(validation.value)
    assert ("NaN" if np.isnan(value) else "infinity") in str(predict.value)


def test_features_checked_on_the_device_change_no_score(list_model, data, checked_on_device, monkeypatch):
    X, _, qid = data
    checked = list_model.predict(X, qid)
    monkeypatch.undo()
    assert np.array_equal(list_model.predict(X, qid), checked)


def test_a_float64_feature_beyond_float32_gets_validations_message(data, checked_on_device):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=1, device="cpu", random_state=0).fit(X, y, groups=qid)
    far = X.astype(np.float64)
    far[5] = 1e300  # finite in float64, infinite once staged in float32
    with pytest.raises(ValueError) as validation:
        BaseRanker._validate_X(ranker, far)  # the CPU path's check
    with pytest.raises(ValueError) as predict:
        ranker.predict(far, qid)
    assert str(predict.value) == str(validation.value)
    assert "float32" in str(predict.value)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_every_non_finite_score_is_refused(value):
    scores = np.array([0.5, value, -2.0, value])
    with pytest.raises(ValueError, match=r"^Model produced 2 non-finite scores of 4: these rows' features"):
        check_finite_scores(scores, "Model")
    finite = np.array([0.5, np.finfo(np.float64).max, -np.finfo(np.float64).max])
    assert check_finite_scores(finite, "Model") is finite


@pytest.mark.parametrize("n_features", [1, 2, 17, 18, 19, 40])
def test_canonical_order_reads_every_byte_of_a_row(n_features):
    # Rows alike but in their last feature (the last 8-byte word of each row, however many words it has),
    # and one alone in its list: every byte takes part, whatever the row's width.
    rows = np.zeros((5, n_features), dtype=np.float32)
    rows[:, -1] = [3.0, 1.0, 2.0, 1.5, 0.5]
    sizes = [4, 1]
    assert np.array_equal(canonical_order(rows, sizes), _memcmp_order(rows, sizes))
    assert canonical_order(rows[:1], [1]).tolist() == [0]
    assert canonical_order(rows[:0], []).tolist() == []


@pytest.mark.parametrize("seed", range(5))
def test_real_slots_without_sync_is_the_boolean_index(seed):
    """The device path of packed prediction batches picks index[mask] without reading the mask's count."""
    from sklearn_ltr.training._predict import real_slots_without_sync

    rng = np.random.default_rng(seed)
    sizes = torch.as_tensor(rng.integers(1, 9, size=rng.integers(1, 7)))
    mask = torch.arange(int(sizes.max()))[None, :] < sizes[:, None]
    index = torch.as_tensor(rng.permutation(mask.numel())).view(mask.shape)
    torch.testing.assert_close(real_slots_without_sync(index, mask, int(sizes.sum())), index[mask])


@pytest.mark.parametrize("cls", [RankNetRanker, DASALCRanker])
def test_prediction_batches_are_the_batches_score_rows_scores(cls):
    """``RankingNet.prediction_batches`` (the benchmarks time the module on them) holds every row once, and the
    module on those batches gives the scores of ``score_rows``."""
    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr.datasets import make_ranking
    from sklearn_ltr.training._batches import QueryDataset

    X, y, qid = make_ranking(n_queries=12, n_features=4, random_state=3)
    params = {"hidden_sizes": (8,)} if cls is RankNetRanker else {"hidden_size": 8, "n_heads": 2, "head_size": 4}
    ranker = cls(**params, max_epochs=1, random_state=0, keep_training_state=True).fit(X, y, groups=qid)
    dataset = QueryDataset.from_arrays(QueryGroups(qid), X)
    net = ranker.net_
    batches = list(net.prediction_batches(dataset))
    assert sum(int(inputs["mask"].sum()) for inputs in batches) == len(X)
    with torch.no_grad():
        module = net.module_.eval()
        # Packed inputs (RankNet: X holds the real rows alone) or padded: scores come back as [lists, length].
        from_batches = np.concatenate([module(inputs["X"], inputs["mask"])[inputs["mask"]].double().numpy()
                                       for inputs in batches])
    np.testing.assert_allclose(np.sort(from_batches), np.sort(net.score_rows(dataset)), rtol=1e-5, atol=1e-6)
