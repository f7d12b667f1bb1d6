"""Query datasets and padded, length-bucketed batches."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.training._batches import QueryBatches, QueryDataset


def _dataset(sizes, n_features=3, seed=0, shuffle_rows=True):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    if shuffle_rows:
        groups = groups[rng.permutation(len(groups))]
    X = rng.normal(size=(len(groups), n_features))
    y = rng.integers(0, 3, len(groups)).astype(float)
    qg = QueryGroups(groups)
    return QueryDataset.from_arrays(qg, X, y), qg, X, y


def test_collate_equals_padding_of_the_query_index():
    dataset, qg, X, y = _dataset([3, 1, 4, 2])
    padded_X, mask = qg.pad(X)
    padded_y, _ = qg.pad(y)
    batches = QueryBatches(dataset, batch_size=2)
    queries = torch.tensor([2, 0])
    inputs, labels, rows = batches.collate(queries)
    assert inputs["X"].shape == (2, 4, 3)
    np.testing.assert_allclose(inputs["X"].numpy(), padded_X[[2, 0]], rtol=1e-6)
    np.testing.assert_array_equal(inputs["mask"].numpy(), mask[[2, 0]])
    np.testing.assert_allclose(labels.numpy(), padded_y[[2, 0]])
    assert (rows[~inputs["mask"]] == -1).all()
    # rows address the dataset's flat (query-sorted) rows
    np.testing.assert_allclose(dataset.rows["X"][rows[inputs["mask"]]].numpy(), inputs["X"][inputs["mask"]].numpy())


def test_each_epoch_visits_every_query_once_with_little_padding():
    rng = np.random.default_rng(1)
    sizes = np.clip(np.rint(rng.lognormal(np.log(120) - 0.75**2 / 2, 0.75, size=2000)), 1, 1250).astype(int)
    dataset = QueryDataset(
        {"X": torch.zeros(sizes.sum(), 1)}, torch.zeros(sizes.sum()),
        torch.as_tensor(np.concatenate(([0], np.cumsum(sizes)))),
    )
    batches = QueryBatches(dataset, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    seen, real, slots = [], 0, 0
    for inputs, _, rows in batches.with_rows():
        mask = inputs["mask"]
        real += int(mask.sum())
        slots += mask.numel()
        seen.append(rows[:, 0])
    assert real == sizes.sum()
    starts = torch.sort(torch.cat(seen)).values
    np.testing.assert_array_equal(starts.numpy(), np.concatenate(([0], np.cumsum(sizes)))[:-1])
    assert 1 - real / slots < 0.15  # padded share of all slots
    assert len(batches) == 32


def test_shuffle_is_reproducible_and_changes_between_epochs():
    dataset, *_ = _dataset([5] * 20)
    batches = QueryBatches(dataset, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3))
    first = [rows[:, 0].tolist() for _, _, rows in batches.with_rows()]
    second = [rows[:, 0].tolist() for _, _, rows in batches.with_rows()]
    assert first != second
    again = QueryBatches(dataset, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3))
    assert [rows[:, 0].tolist() for _, _, rows in again.with_rows()] == first


def test_subsampling_keeps_relevant_documents():
    sizes = [30, 6]
    rows, labels = sum(sizes), torch.zeros(sum(sizes))
    relevant = torch.tensor([2, 7, 11, 29])
    labels[relevant] = 1.0
    dataset = QueryDataset({"X": torch.arange(rows, dtype=torch.float32)[:, None]}, labels,
                           torch.tensor([0, 30, 36]))
    batches = QueryBatches(dataset, batch_size=2, max_list_length=8, generator=torch.Generator().manual_seed(0))
    inputs, batch_labels, index = batches.collate(torch.tensor([0, 1]))
    assert inputs["X"].shape[1] == 8
    long_rows = index[0][inputs["mask"][0]]
    assert set(relevant.tolist()) <= set(long_rows.tolist())
    assert len(long_rows) == 8 and (torch.diff(long_rows) > 0).all()  # kept in list order
    assert index[1][inputs["mask"][1]].tolist() == list(range(30, 36))  # short list untouched
    assert batch_labels[0].sum() == 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=12), st.integers(0, 100))
def test_subset_selects_whole_queries(sizes, seed):
    dataset, qg, X, y = _dataset(sizes, seed=seed)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(sizes), size=rng.integers(1, len(sizes) + 1), replace=False))
    sub = dataset.subset(torch.as_tensor(chosen))
    assert len(sub) == len(chosen)
    np.testing.assert_array_equal(sub.sizes.numpy(), qg.sizes[chosen])
    expected_rows = np.concatenate([np.flatnonzero(qg.codes == q) for q in chosen])
    np.testing.assert_allclose(sub.rows["X"].numpy(), X[expected_rows], rtol=1e-6)
    np.testing.assert_allclose(sub.labels.numpy(), y[expected_rows])


def test_getitem_returns_one_query():
    dataset, _, X, y = _dataset([2, 3, 1], shuffle_rows=False)
    for query, rows in enumerate([slice(0, 2), slice(2, 5), slice(5, 6)]):  # a middle query ends before the last
        item, labels = dataset[query]
        np.testing.assert_allclose(item["X"].numpy(), X[rows], rtol=1e-6)
        np.testing.assert_array_equal(labels.numpy(), y[rows])
    with pytest.raises(IndexError):
        dataset[5]
    # At prediction time there are no labels.
    unlabeled = QueryDataset(dataset.rows, None, dataset.offsets)
    item, labels = unlabeled[1]
    assert labels is None and item["X"].shape == (3, 3)


def test_getitem_of_rows_used_in_place_follows_the_index():
    """Rows used where they lie: query ``q``'s ``j``-th row is ``index[starts[q] + j]`` of the flat tensors."""
    X = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    y = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    # Two queries lying at rows 3-5 and 0-2, each in reverse within the index.
    dataset = QueryDataset({"X": X}, y, torch.tensor([0, 3, 6]), starts=torch.tensor([3, 0]),
                           index=torch.tensor([2, 1, 0, 5, 4, 3]))
    for query, rows in enumerate([[5, 4, 3], [2, 1, 0]]):  # query 0: index[3:6]; query 1: index[0:3]
        item, labels = dataset[query]
        np.testing.assert_array_equal(labels.numpy(), y[rows].numpy())
        np.testing.assert_array_equal(item["X"].numpy(), X[rows].numpy())


def test_row_tensor_is_float32_but_the_click_propensity_float64():
    """Extras train in float32 like the features; the click propensities keep the metric's float64."""
    from sklearn_ltr.training._batches import CLICK_PROPENSITY, row_tensor

    assert row_tensor("positions", np.array([1, 2, 3])).dtype == torch.float32
    assert row_tensor("initial_rank", np.array([0.5, 1.5], dtype=np.float64)).dtype == torch.float32
    propensity = row_tensor(CLICK_PROPENSITY, np.array([1 / 3, 0.1], dtype=np.float64))
    assert propensity.dtype == torch.float64 and propensity[0].item() == 1 / 3  # not rounded through float32


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=12),
    batch_size=st.integers(1, 5),
    shuffle=st.booleans(),
    max_list_length=st.sampled_from([None, 2, 4]),
    seed=st.integers(0, 1000),
)
def test_packed_batches_hold_the_padded_batches_real_rows(sizes, batch_size, shuffle, max_list_length, seed):
    """A packed batch's X is the padded batch's X[mask]: same queries, same rows, same order, same extras."""
    dataset, _, _, _ = _dataset(sizes, seed=seed)
    dataset.rows["positions"] = torch.arange(dataset.n_rows, dtype=torch.float32)
    padded, packed = (
        QueryBatches(dataset, batch_size, shuffle=shuffle, max_list_length=max_list_length,
                     generator=torch.Generator().manual_seed(seed), packed=flag)
        for flag in (False, True)
    )
    n_batches = 0
    for (inputs, labels), (packed_inputs, packed_labels) in zip(padded, packed, strict=True):
        mask = inputs["mask"]
        assert packed_inputs["X"].shape == (int(mask.sum()), 3)
        torch.testing.assert_close(packed_inputs["X"], inputs["X"][mask], rtol=0, atol=0)
        torch.testing.assert_close(packed_inputs["mask"], mask)
        torch.testing.assert_close(packed_inputs["positions"], inputs["positions"])  # other inputs stay padded
        torch.testing.assert_close(packed_labels, labels)
        n_batches += 1
    assert n_batches == len(padded)


def test_packed_validation_batches_of_equal_lists_are_views():
    """Consecutive lists of one length need no gather: the packed rows are the flat rows as they lie."""
    dataset, _, _, _ = _dataset([3, 3, 3], shuffle_rows=False)
    batches = QueryBatches(dataset, 3, packed=True)  # not shuffled: validation's batches
    (inputs, _, rows), = list(batches.with_rows())
    assert inputs["X"].shape == (9, 3)
    assert inputs["X"].data_ptr() == dataset.rows["X"].data_ptr()
    torch.testing.assert_close(inputs["X"], dataset.rows["X"][rows.reshape(-1)])
