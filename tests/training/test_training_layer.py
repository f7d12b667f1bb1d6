"""The training layer (sklearn_ltr.training): declared variation points, costs, batches and validation."""

import functools
import itertools
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr import DASALCRanker, RankNetRanker
from sklearn_ltr._blocks import padded_batches, query_block_bounds
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import LOSS_MEMORY, LOSSES, pairwise_tensors, ranknet, register_loss, unregister_loss
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn import DASALCNet, MLPScorer, ModuleCost, SetRankNet, TwoTowerScorer
from sklearn_ltr.training import ValidationNDCG, _memory
from sklearn_ltr.training._batches import QueryDataset
from sklearn_ltr.training._distributed import DataParallelMixin, DataParallelRankingNet, net_class_for
from sklearn_ltr.training._net import RankingNet
from sklearn_ltr.training._predict import dataset_blocks

PACKAGE = Path(__file__).resolve().parents[2] / "sklearn_ltr"


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=40, n_features=6, random_state=0)


# --- Declared, not patched -------------------------------------------------------------------


def _package_grep(pattern):
    hits = []
    for path in PACKAGE.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                hits.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    return hits


def test_no_runtime_class_swap_and_no_module_level_flag():
    assert _package_grep(r"__class__\s*=") == []
    assert _package_grep(r"SYNC_BATCH_NORM") == []


def test_data_parallel_net_is_a_class_written_in_the_source():
    assert DataParallelRankingNet.__mro__[1:3] == (DataParallelMixin, RankingNet)
    assert DataParallelRankingNet.__module__ == "sklearn_ltr.training._distributed"
    # Its inference net is the plain net it composes: it predicts without a process group.
    net = DataParallelRankingNet.__new__(DataParallelRankingNet)
    assert net.inference_class is RankingNet
    two_tower = __import__("sklearn_ltr.rankers._two_tower", fromlist=["x"])
    net = two_tower._DataParallelTwoTowerNet.__new__(two_tower._DataParallelTwoTowerNet)
    assert net.inference_class is two_tower._TwoTowerNet


def test_net_class_is_chosen_when_the_net_is_built(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert net_class_for(False, owner="R") is RankingNet
    with pytest.warns(UserWarning, match=r"R\(distributed=True\) runs as a single process"):
        assert net_class_for(True, owner="R") is RankingNet
    monkeypatch.setenv("WORLD_SIZE", "1")  # torchrun --nproc_per_node 1: the multi-process path
    assert net_class_for(True, owner="R") is DataParallelRankingNet


def test_synchronisation_is_passed_to_the_modules_that_need_it():
    from sklearn_ltr.nn import TwoTowerClickLoss, set_reduce_sum

    module = DASALCNet(n_features=4, hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=1, head_size=4)
    norms = [m for m in module.modules() if hasattr(type(m), "reduce_sum")]
    assert norms and all(m.reduce_sum is None for m in norms)
    calls = []

    def reduce_sum(tensor):
        calls.append(tensor.shape)
        return tensor  # one process: the sum is the tensor itself

    set_reduce_sum(module, reduce_sum)
    module.train()
    X, mask = torch.randn(3, 5, 4), torch.ones(3, 5, dtype=torch.bool)
    module(X, mask)
    assert len(calls) == 2 * len(norms)  # the global mean and variance of every batch norm
    set_reduce_sum(module, None)
    calls.clear()
    module(X, mask)
    assert calls == []
    loss = TwoTowerClickLoss()
    set_reduce_sum(loss, reduce_sum)
    assert loss.reduce_sum is reduce_sum


# --- Costs declared where things are defined ------------------------------------------------


def test_every_registered_loss_declares_its_cost():
    assert set(LOSS_MEMORY) == set(LOSSES)
    assert pairwise_tensors("ranknet") == 8 and pairwise_tensors("pairwise") == 8  # an alias
    assert pairwise_tensors(functools.partial(ranknet, sigma=2.0)) == 8
    assert pairwise_tensors("softmax") == 0
    assert pairwise_tensors(lambda scores, labels, mask: scores.sum()) is None  # never registered


def _toy_loss(scores, labels, mask=None, *, reduction="mean", weights=None):
    return (scores - labels).square().mean()


@pytest.mark.parametrize("bad", [None, -1, 1.5, True, "3"])
def test_a_loss_registered_without_a_cost_is_refused(bad):
    with pytest.raises(TypeError, match=r"pairwise_tensors must be the number of \[list, list\]"):
        register_loss("toy_cost", _toy_loss, pairwise_tensors=bad)
    with pytest.raises(TypeError, match="pairwise_tensors"):
        register_loss("toy_cost", _toy_loss)  # the keyword is required
    assert "toy_cost" not in LOSSES


def test_register_and_unregister_a_loss():
    register_loss("toy_cost", _toy_loss, pairwise_tensors=3, aliases=("toy-cost-alias",))
    try:
        assert pairwise_tensors("toy_cost_alias") == 3  # "-" reads as "_"
        with pytest.raises(ValueError, match="already name a loss"):
            register_loss("toy_cost", _toy_loss, pairwise_tensors=1)
    finally:
        unregister_loss("toy_cost")
    assert "toy_cost" not in LOSSES and "toy_cost_alias" not in __import__("sklearn_ltr.losses").losses.ALIASES


@pytest.mark.parametrize(("module", "kwargs", "expected"), [
    (MLPScorer, {"n_features": 5, "hidden_sizes": (8, 4)}, ModuleCost(0, 0, 13)),
    (DASALCNet, {"n_features": 5, "hidden_size": 8, "n_layers": 2, "n_attention_layers": 3, "n_heads": 2,
                 "head_size": 4}, ModuleCost(3, 2, 8 * 4 + 3 * 2 * 4 * 3, 4, 0.4)),
    (DASALCNet, {"n_features": 5, "dropout": 0.3, "attention_dropout": 0.0},
     ModuleCost(4, 2, 512 * 4 + 2400, 100, 0.0)),
    (SetRankNet, {"n_features": 5, "d_model": 8, "n_blocks": 2, "n_heads": 2},
     ModuleCost(2, 2, 2 * (32 + 16) + 8, 4, 0.1)),
    (SetRankNet, {"n_features": 5, "d_model": 8, "n_blocks": 2, "n_heads": 2, "block": "imsab",
                  "n_inducing_points": 3}, ModuleCost(0, 0, 2 * (32 + 16 + 12) + 8)),
    (TwoTowerScorer, {"n_features": 5, "hidden_sizes": (8,), "observation_hidden_sizes": (4, 2)},
     ModuleCost(0, 0, 8 + 6 + 2)),
])
def test_modules_declare_their_memory_cost_by_hand(module, kwargs, expected):
    assert module.memory_cost(**kwargs) == expected
    assert _memory.module_cost(module, kwargs) == expected


def test_a_module_without_a_declared_cost_is_an_error():
    class Bare(torch.nn.Module):
        def __init__(self, n_features):
            super().__init__()

    with pytest.raises(TypeError, match="Bare declares no memory cost"):
        _memory.module_cost(Bare, {"n_features": 3})


def test_memory_terms_read_the_declarations():
    cost = ModuleCost(2, 3, 10)
    assert _memory.memory_terms(cost, 7, 5, training=True) == (4 * 2 * 3 + 2 + 7, 2 * 5 + 5 * 10)
    assert _memory.memory_terms(cost, 7, 5, training=False) == (2 * 3 + 1, 5 + 2 * 10)
    assert _memory.memory_terms(ModuleCost(activation_width=4), 0, 5, training=True) == (0, 10 + 20)


def test_ranker_memory_estimate_uses_the_loss_declaration(data):
    X, _, _ = data
    linear = RankNetRanker(loss="softmax", hidden_sizes=(8,))._memory_estimate(X.shape[1])
    pairwise = RankNetRanker(loss="lambdarank", hidden_sizes=(8,))._memory_estimate(X.shape[1])
    assert linear.training_quadratic == 0 and pairwise.training_quadratic == 10
    assert pairwise.training_linear == linear.training_linear
    sampled = RankNetRanker(loss="gumbel_approx_ndcg", loss_params={"n_samples": 4}, hidden_sizes=(8,))
    assert sampled._memory_estimate(X.shape[1]).training_quadratic == 5 * 4


def test_an_undeclared_callable_loss_warns_when_lists_are_long(monkeypatch, data):
    X, y, qid = data
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**6)  # 1 MB: any L x L tensor counts

    def custom(scores, labels, mask=None):
        return (scores * 0).sum()

    with pytest.warns(UserWarning, match=r"declares no memory cost.*register_loss"):
        RankNetRanker(loss=custom, max_epochs=1, hidden_sizes=(4,)).fit(X, y, qid)


def test_the_memory_advice_names_each_cap_once(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**6)
    with pytest.raises(MemoryError) as error:
        _memory.MemoryEstimate("R", "cpu", 8, 10, holders="the loss").check_training(np.array([5000]), 1)
    caps = re.findall(r"max_list_length=(\d+)", str(error.value))
    assert len(caps) == 1, str(error.value)


def test_the_memory_advice_is_a_smaller_batch_when_whole_lists_fit_in_one(monkeypatch):
    # Seen on an H200: 1,000 lists of 696 documents did not fit, one list did, and the advice was
    # max_list_length=27684 with batch_size=1, a cap far above the longest list.
    free = 10**7  # budget 8 MB; one list of 300 needs 4 * (300 * 10 + 300**2 * 8) = 2.892 MB
    monkeypatch.setattr(_memory, "available_memory", lambda device: free)
    with pytest.raises(MemoryError) as error:
        _memory.MemoryEstimate("R", "cpu", 8, 10, holders="the loss").check_training(np.array([300] * 8 + [5]), 8)
    budget = _memory.MEMORY_FRACTION * free
    cap = _memory._longest_fitting(8, 8, 10, budget)
    assert cap < 300
    assert str(error.value).endswith(
        f"Set max_list_length={cap} (training lists are then subsampled; prediction still scores whole lists) "
        f"or batch_size=2.")
    # The advised batch is the largest that fits: 2 lists of 300 fit the 8 MB budget, 3 do not.
    assert _memory.batch_bytes(2, 300, quadratic=8, linear=10) <= budget < _memory.batch_bytes(3, 300, quadratic=8,
                                                                                              linear=10)


def test_the_memory_advice_when_only_one_short_list_at_a_time_fits(monkeypatch):
    free = 10**5  # budget 80 kB: 1,000 lists of 2 documents need 208 kB, one list of 5,000 far more
    monkeypatch.setattr(_memory, "available_memory", lambda device: free)
    with pytest.raises(MemoryError) as error:
        _memory.MemoryEstimate("R", "cpu", 8, 10, holders="the loss").check_training(np.array([5000] * 1000), 1000)
    cap = _memory._longest_fitting(1, 8, 10, _memory.MEMORY_FRACTION * free)
    assert str(error.value).endswith(
        f"Set max_list_length={cap} with batch_size=1 (training lists are then subsampled; prediction still scores "
        f"whole lists).")


def test_the_memory_advice_for_a_model_too_large_even_for_short_lists(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda device: 100)
    with pytest.raises(MemoryError, match=r"is available on cpu\. Set a smaller model\.$"):
        _memory.MemoryEstimate("R", "cpu", 8, 10, holders="the loss").check_training(np.array([300, 300]), 2)


def test_sizes_are_in_decimal_units():
    # 1 GB = 10**9 bytes and 1 MB = 10**6: one byte past a rounding boundary rounds up.
    assert _memory._gb(1_050_000_001) == "1.1 GB"
    assert _memory._gb(10_500_001) == "11 MB"
    assert (_memory._gb(99_999_999), _memory._gb(100_000_000)) == ("100 MB", "0.1 GB")


def test_available_memory_of_cuda_without_an_index(monkeypatch):
    seen = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index: seen.append(index) or (123, 456))
    assert _memory.available_memory(torch.device("cuda")) == 123
    assert _memory.available_memory("cuda:1") == 123
    assert seen == [3, 1]


def test_host_memory_probe_is_the_one_of_utils(monkeypatch):
    from sklearn_ltr.utils import _system

    monkeypatch.setattr(_memory, "available_host_memory", lambda: 42)
    assert _memory.available_memory("cpu") == 42
    assert _system.available_host_memory() > 0 and _system.physical_memory() >= _system.available_host_memory()


# --- Batches sized in documents --------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.integers(1, 100), st.none() | st.integers(1, 5))
def test_padded_batches_fit_their_budget(sizes, documents, max_queries):
    batches = padded_batches(sizes, documents, max_queries)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(sizes)))  # every query once
    sizes = np.asarray(sizes)
    assert list(sizes[flat]) == sorted(sizes)  # shortest first
    for batch in batches:
        assert len(batch) == 1 or len(batch) * sizes[batch].max() <= documents
        assert max_queries is None or len(batch) <= max_queries
    for batch, after in itertools.pairwise(batches):  # each batch is as long as it may be
        grown = np.concatenate([batch, after[:1]])
        limited = max_queries is not None and len(batch) == max_queries
        assert limited or len(grown) * sizes[grown].max() > documents


def test_scoring_blocks_of_a_dataset_cover_every_row_once():
    """score_rows' blocks: whole queries in the dataset's order, cut as predict cuts them, each row once."""
    sizes = np.array([3, 9, 1, 4, 4, 7])
    groups = np.repeat(np.arange(len(sizes)), sizes)
    dataset = QueryDataset.from_arrays(QueryGroups(groups), np.arange(len(groups), dtype=float)[:, None])
    blocks = dataset_blocks(dataset, block_rows=8)
    # A query starts a new block where its first row lies past a multiple of 8 rows, as in predict.
    assert [block.sizes.tolist() for block in blocks] == [[3, 9], [1, 4], [4, 7]]
    assert [block.rows for block in blocks] == [slice(0, 12), slice(12, 17), slice(17, 28)]
    bounds = query_block_bounds(QueryGroups(groups), 8)
    assert [block.sizes.tolist() for block in blocks] == [sizes[lo:hi].tolist() for lo, hi in
                                                          itertools.pairwise(bounds)]
    assert all(block.canonical for block in blocks)
    # Rows used where they lie: a subset's blocks name the flat rows of its queries, through the index.
    index = torch.as_tensor(np.concatenate([offset + np.arange(size)[::-1] for offset, size in
                                            zip(np.cumsum(sizes) - sizes, sizes, strict=True)]))
    offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(sizes)]))
    in_place = QueryDataset(dataset.rows, None, offsets, starts=offsets[:-1], index=index)
    subset = in_place.subset(torch.tensor([5, 1]))
    (block,) = dataset_blocks(subset)
    assert block.sizes.tolist() == [7, 9]
    assert block.rows.tolist() == [27, 26, 25, 24, 23, 22, 21, 11, 10, 9, 8, 7, 6, 5, 4, 3]
    assert dataset_blocks(dataset.subset(torch.tensor([], dtype=torch.int64))) == []


@pytest.mark.parametrize("documents", [1, 7, 1 << 16])
def test_predictions_do_not_depend_on_the_prediction_batch(data, documents):
    X, y, qid = data
    ranker = DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=1, head_size=4, max_epochs=1,
                          random_state=0).fit(X, y, qid)
    expected = ranker.predict(X, qid)
    ranker.net_.prediction_documents = documents
    # Padding a list to another length changes the order of float32 sums in attention (~1e-7).
    np.testing.assert_allclose(ranker.predict(X, qid), expected, rtol=1e-5, atol=1e-6)


# --- One validation callback -----------------------------------------------------------------


def test_validation_on_a_separate_set_equals_ndcg_of_predict(data):
    X, y, qid = data
    held_out = qid >= 30
    callback = ValidationNDCG(5, X=X[held_out], y=y[held_out], groups=qid[held_out], name="vali@5")
    ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=3, random_state=0, callbacks=[callback])
    ranker.fit(X[~held_out], y[~held_out], qid[~held_out])
    values = ranker.history_[:, "vali@5"]
    assert len(values) == 3
    expected = ndcg_score(y[held_out], ranker.predict(X[held_out]), qid[held_out], k=5)
    assert values[-1] == pytest.approx(expected, abs=1e-12)


def test_validation_split_values_and_training_mode(data):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=2, validation_fraction=0.25, random_state=0,
                           batch_norm=True, keep_training_state=True).fit(X, y, qid)
    values = ranker.history_[:, "valid_ndcg@10"]
    assert len(values) == 2 and all(0 <= v <= 1 for v in values)
    net = ranker.net_
    net.module_.train()
    net.score_rows(QueryDataset.from_arrays(QueryGroups(qid), X))
    assert net.module_.training  # scoring between epochs leaves the module training


def test_cli_trains_with_the_library_validation_callback():
    source = (PACKAGE / "cli" / "_models.py").read_text()
    assert "ValidationNDCG(" in source and "class ValidationFile" not in source
    assert "module_.train()" not in source


def test_package_layers_hold():
    """The import-linter contracts of pyproject.toml (CI runs lint-imports too)."""
    lint = Path(__import__("sys").executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed (the test extra brings it)")
    result = subprocess.run([str(lint)], cwd=PACKAGE.parent, capture_output=True, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert result.returncode == 0, result.stdout[-3000:]


def test_verbose_table_shows_the_epoch_that_stopped_training(data, capsys):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=40, early_stopping=True, n_iter_no_change=2, lr=0.05,
                           random_state=0, verbose=1).fit(X, y, qid)
    assert len(ranker.history_) < 40  # early stopping fired
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    assert rows == [str(epoch) for epoch in range(1, len(ranker.history_) + 1)]


@pytest.mark.parametrize(("n_bytes", "text"), [(5e6, "5 MB"), (99_999_999, "100 MB"), (1e8, "0.1 GB"),
                                               (1.25e9, "1.2 GB"), (3.96e10, "39.6 GB")])
def test_memory_sizes_in_messages(n_bytes, text):
    assert _memory._gb(n_bytes) == text


@pytest.mark.parametrize(("n_lists", "quadratic", "linear", "budget"),
                         [(1, 8, 10, 8e5), (4, 3, 200, 2.5e6), (16, 1, 64, 6e8), (1, 0.5, 1, 3.3e12), (2, 1, 1, 48),
                          (3, 1, 1, 4 * 3 * (3 + 9)), (1, 1, 0, 4 * 2**48)])
def test_the_advised_list_length_is_the_longest_that_fits(n_lists, quadratic, linear, budget):
    cap = _memory._longest_fitting(n_lists, quadratic, linear, budget)
    assert isinstance(cap, int)
    fits = lambda length: _memory.batch_bytes(n_lists, length, quadratic=quadratic, linear=linear) <= budget  # noqa: E731
    assert fits(cap) and not fits(cap + 1)


def test_the_advised_list_length_search_stops_at_2_to_the_25():
    # Past 10**7 documents the doubling stops: a budget that fits everything advises 2**25 - 1.
    assert _memory._longest_fitting(1, 1e-12, 1e-6, 1e18) == 2**25 - 1


def test_the_memory_error_states_the_sizes_and_the_caps(monkeypatch):
    free = 10**7  # 10 MB: budget 8 MB
    monkeypatch.setattr(_memory, "available_memory", lambda device: free)
    sizes = np.array([3000, 2000, 10])
    with pytest.raises(MemoryError) as error:
        _memory.MemoryEstimate("R", "cpu", 8, 10, holders="the loss", max_list_length=2500).check_training(sizes, 2)
    needed = _memory.batch_bytes(2, 2500, quadratic=8, linear=10)
    budget = _memory.MEMORY_FRACTION * free
    two = _memory._longest_fitting(2, 8, 10, budget)
    one = _memory._longest_fitting(1, 8, 10, budget)
    assert (two, one) == (352, 499)  # 4 * (2 * 352 * 10 + 2 * 352**2 * 8) <= 8e6 < the same at 353
    assert str(error.value) == (
        f"R: the largest training batch (2 lists padded to 2500 documents; the longest query has 3000) needs about "
        f"{_memory._gb(needed)} for the loss, which grows with the square of the list length, but only 10 MB is "
        f"available on cpu. Set max_list_length={two} (training lists are then subsampled; prediction still "
        f"scores whole lists) or max_list_length={one} with batch_size=1.")
    assert _memory._gb(needed) == "0.4 GB"  # 4 * (2 * 2500 * 10 + 2 * 2500**2 * 8) bytes


def test_a_validation_callback_checks_its_own_set():
    """ValidationNDCG given a set of its own (outside a ranker, which checks it first) refuses a bad one by name."""
    from sklearn_ltr.training._callbacks import check_validation_features

    with pytest.raises(ValueError, match=re.escape("ValidationNDCG X must be a 2-D array of features, got an "
                                                   "array of shape (4,).")):
        ValidationNDCG(X=np.ones(4), y=np.zeros(4), groups=np.zeros(4)).initialize()
    with pytest.raises(ValueError, match="groups has 3 entries but X has 4 rows"):
        ValidationNDCG(X=np.ones((4, 2)), y=np.zeros(4), groups=np.zeros(3)).initialize()
    features = check_validation_features(np.array([[1, 2], [3, 4]]), name="X_val")
    assert features.dtype == np.float32  # the training rows' type, whatever the validation set's
