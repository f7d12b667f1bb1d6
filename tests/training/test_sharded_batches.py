"""How data-parallel training shares each global batch out, checked on the batches themselves (no process group).

Every process draws the same global batches; process ``r`` of ``N`` takes the queries ``r, r + N, ...``
of each, with ``_share``, its part of the batch's query weight. Checked for 1 to 3 processes, batch
sizes below, at and above the number of processes, with and without query weights (zero weights
included), in training (shuffled, short batches merged) and validation (idle shares).
"""

import itertools

import numpy as np
import pytest
import torch

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.training._batches import QueryDataset
from sklearn_ltr.training._distributed import _GLOBAL_SIZE, _IDLE, _SHARE, ShardedQueryBatches


def _dataset(n_queries, weights=None):
    rng = np.random.default_rng(n_queries)
    sizes = rng.integers(1, 5, n_queries)
    groups = np.repeat(np.arange(n_queries), sizes)
    X = np.arange(len(groups), dtype=np.float32)[:, None]  # a row's feature is its row number
    return QueryDataset.from_arrays(QueryGroups(groups), X, rng.integers(0, 3, len(groups)).astype(np.float32),
                                    query_weights=weights), groups


def _shares(dataset, groups, batch_size, world_size, shuffle):
    """Per process, per global batch: ``(queries, share, global size)``, or ``(None, None, size)`` when idle."""
    out = []
    for rank in range(world_size):
        batches = ShardedQueryBatches(dataset, batch_size, shuffle=shuffle, generator=torch.Generator().manual_seed(5),
                                      rank=rank, world_size=world_size,
                                      subsample_generator=torch.Generator().manual_seed(rank))
        rows = []
        for inputs, _ in batches:
            if inputs.get(_IDLE):
                rows.append((None, None, inputs[_GLOBAL_SIZE]))
                continue
            first_rows = inputs["X"][:, 0, 0].long().numpy()  # each list's first row: its query
            rows.append((groups[first_rows].tolist(), float(inputs[_SHARE]), inputs[_GLOBAL_SIZE]))
        assert len(rows) == len(batches)
        out.append(rows)
    return out


WEIGHTS = {"none": None, "unequal": "unequal", "some zero": "zero"}


def _weights(kind, n_queries):
    if kind is None:
        return None
    weights = np.linspace(0.5, 4.0, n_queries)
    if kind == "zero":
        weights[::3] = 0.0
    return weights


@pytest.mark.parametrize("shuffle", [True, False], ids=["training", "validation"])
@pytest.mark.parametrize("weights", list(WEIGHTS))
@pytest.mark.parametrize(("world_size", "batch_size"), [(1, 1), (1, 3), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3),
                                                        (3, 4), (2, 7)])
def test_every_global_batch_is_shared_out_whole_by_query_weight(world_size, batch_size, weights, shuffle):
    n_queries = 11
    query_weights = _weights(WEIGHTS[weights], n_queries)
    dataset, groups = _dataset(n_queries, query_weights)
    per_rank = _shares(dataset, groups, batch_size, world_size, shuffle)
    seen = []
    for batch in zip(*per_rank, strict=True):
        sizes = {size for _, _, size in batch}
        assert len(sizes) == 1  # every process agrees on the global batch
        (size,) = sizes
        queries = [q for local, _, _ in batch if local is not None for q in local]
        assert len(queries) == size
        seen += queries
        w = np.ones(n_queries) if query_weights is None else query_weights
        total = w[queries].sum()
        for local, share, _ in batch:
            if local is None:
                continue
            assert share == pytest.approx(w[local].sum() / total if total > 0 else 0.0, rel=1e-6)
        shares = sum(share for _, share, _ in batch if share is not None)
        assert shares == pytest.approx(1.0 if total > 0 else 0.0, rel=1e-6)
        if shuffle:  # training: every process has a list (short batches merged), one neighbour at a time
            assert all(local is not None for local, _, _ in batch)
            assert size <= batch_size + 2 * (world_size - 1)
        else:  # validation: batches as they are; a process without a query of the batch is idle
            assert size <= batch_size
            assert [local is None for local, _, _ in batch] == [rank >= size for rank in range(world_size)]
    assert sorted(seen) == list(range(n_queries))  # every query once per epoch


@pytest.mark.parametrize(("world_size", "batch_size"), list(itertools.product([2, 3], [1, 2, 3, 5])))
def test_training_batches_are_the_global_batches_merged_only_where_short(world_size, batch_size):
    """Merging joins a short batch to one neighbour: no batch below the number of processes, none merged needlessly."""
    dataset, groups = _dataset(13)
    (rank0, *_) = _shares(dataset, groups, batch_size, world_size, shuffle=True)
    sizes = [size for _, _, size in rank0]
    assert sum(sizes) == 13 and min(sizes) >= world_size
    plain = -(-13 // batch_size)  # ceil: the batches one process would draw
    if batch_size >= world_size:
        # Only the one short batch (13 % batch_size queries, if below world_size) joins a neighbour.
        assert len(sizes) == plain - (0 < 13 % batch_size < world_size)
    else:
        # Batches join until they hold world_size queries (and the last short group joins the one before):
        # never one batch of everything.
        assert max(sizes) <= batch_size + 2 * (world_size - 1)


def test_the_world_without_a_process_group_is_the_launchers_environment(monkeypatch):
    """Outside a process group: one process of rank 0 when nothing launched it, else the launcher's variables."""
    from sklearn_ltr.training._distributed import process_world

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert process_world() == (0, 1, 0)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert process_world() == (3, 4, 1)
