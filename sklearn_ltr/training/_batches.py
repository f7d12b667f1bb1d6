"""Query datasets and padded, length-bucketed batches built from flat tensors.

One dataset item is one query. The rows of all queries live in flat tensors
sorted by query (``offsets[q]:offsets[q + 1]`` is query ``q``); a batch of
queries is gathered into ``[batch, max_len_in_batch, ...]`` tensors with one
indexing operation, so no Python code runs per row.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["CLICK_PROPENSITY", "CLICK_WEIGHTS", "QueryBatches", "QueryDataset", "row_tensor"]

#: The per-row input holding each document's inverse-propensity weight (``fit(..., propensity=...)``):
#: batched like the features, kept from the module by its leading underscore
#: (:meth:`~sklearn_ltr.training._net.RankingNet.infer`), read by the loss.
CLICK_WEIGHTS = "_click_weights"

#: The per-row input holding each document's propensity as ``fit(..., propensity=...)`` got it (one
#: examination propensity, or the ``(alpha, beta)`` pair of trust bias), in float64: batched and kept
#: from the module like :data:`CLICK_WEIGHTS`, read by the validation of the held-out queries
#: (:class:`~sklearn_ltr.training.ValidationNDCG`), which passes it to
#: :func:`sklearn_ltr.metrics.ips_dcg_score` as the metric takes it.
CLICK_PROPENSITY = "_click_propensity"


def row_tensor(name, values):
    """The per-row input ``name`` as a tensor: float32, except :data:`CLICK_PROPENSITY` in float64 (the metric's)."""
    dtype = torch.float64 if name == CLICK_PROPENSITY else torch.float32
    return torch.as_tensor(np.ascontiguousarray(values), dtype=dtype)


class QueryDataset(torch.utils.data.Dataset):
    """Rows of many queries as flat tensors sorted by query.

    Parameters
    ----------
    rows : dict of str to Tensor
        Per-row inputs of the module (``"X"`` features, optional extras such as
        ``"positions"``), each with the rows of query ``q`` at
        ``offsets[q]:offsets[q + 1]``.
    labels : Tensor or None
        Per-row float labels in the same order (None at prediction time).
    offsets : Tensor of int64, shape (n_queries + 1,)
        Start of each query's rows.
    query_weights : Tensor of shape (n_queries,), default=None
        Weight of each query in the loss (None: all 1).
    starts : Tensor of int64, shape (n_queries,), default=None
        First row of each query in the flat tensors when they are not ``offsets[:-1]``:
        rows used where they lie (a memory-mapped array, :mod:`~sklearn_ltr.training._mapped`),
        ``offsets`` then only counting the queries' rows. Such a dataset's :meth:`subset`
        is a view (no rows copied).
    on_host : bool, default=False
        Keep the flat tensors on the host when the batches go to another device (data
        larger than the device's memory): batches are gathered on the host and moved.
    index : Tensor of int64, shape (n_rows,), default=None
        With ``starts`` only: the ``j``-th row of query ``q`` is row ``index[starts[q] + j]``
        of the flat tensors, a permutation of each query's rows (their canonical order,
        :func:`~sklearn_ltr._blocks.canonical_query_order`, over rows used where they lie).
        ``None``: the rows in the order they lie.
    """

    def __init__(self, rows, labels, offsets, query_weights=None, *, starts=None, on_host=False, index=None):
        self.rows = rows
        self.labels = labels
        self.offsets = offsets
        self.sizes = offsets[1:] - offsets[:-1]
        self.query_weights = query_weights
        self.views = starts is not None
        self.starts = offsets[:-1] if starts is None else starts
        self.on_host = on_host
        if index is not None and not self.views:
            raise ValueError("index needs starts: it permutes the rows of a dataset over rows used where they lie.")
        self.index = index

    @classmethod
    def from_arrays(cls, query_groups, X, y=None, *, query_weights=None, order=None, **extras):
        """Build from per-row NumPy arrays in input order and their :class:`QueryGroups`.

        ``query_weights`` holds one weight per query, in the order of ``query_groups.ids``.
        ``order`` is the order of the rows in the dataset: by query, as ``query_groups.order``
        (the default, rows of a query in input order), or another order of each query's rows
        (training's canonical order, :func:`~sklearn_ltr._blocks.canonical_query_order`).
        """
        order = query_groups.order if order is None else order
        if len(order) and order[0] == 0 and (np.diff(order) == 1).all():
            order = slice(None)  # rows already sorted by query (e.g. a pointwise scorer's chunks): no copy
        rows = {"X": torch.as_tensor(np.ascontiguousarray(X[order]), dtype=torch.float32)}
        for name, values in extras.items():
            rows[name] = row_tensor(name, np.asarray(values)[order])
        labels = None if y is None else torch.as_tensor(np.asarray(y)[order], dtype=torch.float32)
        weights = None if query_weights is None else torch.as_tensor(query_weights, dtype=torch.float32)
        return cls(rows, labels, torch.as_tensor(query_groups.offsets, dtype=torch.int64), weights)

    def __len__(self):
        return self.sizes.shape[0]

    @property
    def cpu_starts(self):
        """``starts`` on the host (cached): batch planning reads them without a device round trip."""
        if getattr(self, "_cpu_starts", None) is None:
            self._cpu_starts = self.starts.cpu()
        return self._cpu_starts

    @property
    def n_rows(self):
        """Rows of the flat tensors (scores of :meth:`RankingNet.score_rows` follow their order)."""
        return int(next(iter(self.rows.values())).shape[0])

    def __getitem__(self, query):
        start = int(self.starts[query])
        rows = slice(start, start + int(self.sizes[query]))
        if self.index is not None:
            rows = self.index[rows]
        item = {name: values[rows] for name, values in self.rows.items()}
        return item, None if self.labels is None else self.labels[rows]

    def row_index(self, queries):
        """Flat row indices of ``queries`` (in the given order) and their sizes."""
        sizes = self.sizes[queries]
        starts = self.starts[queries]
        index = torch.repeat_interleave(starts - torch.cumsum(sizes, 0) + sizes, sizes)
        return index + torch.arange(index.shape[0]), sizes

    def subset(self, queries):
        """A new dataset holding only ``queries`` (a tensor of query numbers)."""
        queries = torch.as_tensor(queries, dtype=torch.int64)
        if self.views:
            sizes = self.sizes[queries]
            offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(sizes, 0)])
            weights = None if self.query_weights is None else self.query_weights[queries]
            return QueryDataset(self.rows, self.labels, offsets, weights, starts=self.starts[queries],
                                on_host=self.on_host, index=self.index)
        index, sizes = self.row_index(queries)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(sizes, 0)])
        rows = {name: values[index] for name, values in self.rows.items()}
        labels = None if self.labels is None else self.labels[index]
        weights = None if self.query_weights is None else self.query_weights[queries.to(self.query_weights.device)]
        return QueryDataset(rows, labels, offsets, weights)

    def to(self, device):
        """The same dataset with every tensor on ``device`` (itself when it stays ``on_host``)."""
        if self.on_host or self.offsets.device == torch.device(device):
            return self
        rows = {name: values.to(device) for name, values in self.rows.items()}
        labels = None if self.labels is None else self.labels.to(device)
        weights = None if self.query_weights is None else self.query_weights.to(device)
        starts = self.starts.to(device) if self.views else None
        index = None if self.index is None else self.index.to(device)
        return QueryDataset(rows, labels, self.offsets.to(device), weights, starts=starts, index=index)


class QueryBatches:
    """Iterate over padded batches of queries, bucketed by list length.

    Each batch is ``({"X": [B, L, F], "mask": [B, L], extras...}, labels [B, L])``
    with ``L`` the longest list in the batch; padding holds zeros. A dataset with
    query weights adds ``"weights"`` ``[B]`` to the inputs. These are the batches of
    training and of the validation of held-out queries; scoring (``predict``, a separate
    validation set) runs :mod:`~sklearn_ltr.training._predict` instead.

    Parameters
    ----------
    dataset : QueryDataset
    batch_size : int
        Queries per batch.
    shuffle : bool, default=False
        Training order: queries are drawn at random in pools of
        ``pool_batches * batch_size``, sorted by length inside a pool so a
        batch holds lists of similar length, and batches come in random order.
        Without shuffling, batches follow list length (least padding).
    max_list_length : int, default=None
        Longer lists are subsampled to this many documents, keeping relevant
        documents (label > 0) first; ``None`` keeps whole lists.
    generator : torch.Generator, default=None
        Source of randomness for shuffling and subsampling.
    device : str or torch.device, default="cpu"
        Where the batches are built.
    pool_batches : int, default=50
        Batches per shuffling pool.
    packed : bool, default=False
        Gather the batch's features as packed rows: ``"X"`` is ``[n_real, F]``, the real
        documents only, in the row-major order of ``"mask"`` (what ``X[mask]`` would give),
        and no padded feature tensor is built. For scorers without list context (modules that
        declare ``packed_inputs = True``): the memory of a batch is then in proportion to its
        real documents. Labels and the other per-row inputs stay padded (the loss reads them so).
    """

    def __init__(
        self, dataset, batch_size, *, shuffle=False, max_list_length=None, generator=None, device="cpu",
        pool_batches=50, packed=False,
    ):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.max_list_length = max_list_length
        self.generator = generator
        self.device = device
        self.pool_batches = pool_batches
        self.packed = packed

    def __len__(self):
        return math.ceil(len(self.dataset) / self.batch_size)

    def _batches(self):
        sizes = self.dataset.sizes.cpu()
        if not self.shuffle:
            order = torch.argsort(sizes, stable=True)
            return list(torch.split(order, self.batch_size))
        order = torch.randperm(len(sizes), generator=self.generator)
        batches = []
        for pool in torch.split(order, self.batch_size * self.pool_batches):
            pool = pool[torch.argsort(sizes[pool], stable=True)]
            batches.extend(torch.split(pool, self.batch_size))
        permutation = torch.randperm(len(batches), generator=self.generator)
        return [batches[i] for i in permutation.tolist()]

    def __iter__(self):
        for queries in self._batches():
            inputs, labels, _ = self.collate(queries)
            yield inputs, labels

    def with_rows(self):
        """Yield ``(inputs, labels, rows)``; ``rows`` [B, L] is each slot's flat row index (-1 on padding)."""
        for queries in self._batches():
            yield self.collate(queries)

    def collate(self, queries):
        """Gather ``queries`` into padded tensors; returns ``(inputs, labels, rows)``."""
        contiguous = None if self.shuffle else self._contiguous(queries)  # training batches stay copies
        if contiguous is not None:
            return contiguous
        dataset = self.dataset
        device = dataset.offsets.device
        queries = queries.to(device)
        sizes = dataset.sizes[queries]
        length = int(sizes.max())
        slots = torch.arange(length, device=device)
        mask = slots[None, :] < sizes[:, None]
        rows = dataset.starts[queries][:, None] + slots[None, :]
        rows = torch.where(mask, rows, torch.zeros_like(rows))
        if dataset.index is not None:  # each query's rows in their canonical order
            rows = dataset.index[rows]
        if self.max_list_length is not None and length > self.max_list_length:
            rows, mask = self._subsample(rows, mask)
        inputs = {name: self._gather(values, rows, mask) for name, values in dataset.rows.items()
                  if not (self.packed and name == "X")}
        if self.packed:  # only the real rows: X[mask] gathered directly, no padded copy first
            inputs["X"] = dataset.rows["X"][rows[mask]].to(self.device, non_blocking=True)
        inputs["mask"] = mask.to(self.device)
        if dataset.query_weights is not None:
            inputs["weights"] = dataset.query_weights[queries].to(self.device)
        labels = None if dataset.labels is None else self._gather(dataset.labels, rows, mask)
        return inputs, labels, torch.where(mask, rows, -1)

    def _contiguous(self, queries):
        """The batch as views of the flat tensors when its lists are consecutive and of one length, else None.

        Such a batch needs no padding, no gather and no copy on the device holding the data:
        validation batches of consecutive equal-length lists take this path.
        Modules read their inputs and never write them (none of :mod:`sklearn_ltr.nn` does).
        """
        if self.dataset.index is not None:  # the rows lie in another order than the dataset's
            return None
        queries = queries.cpu()
        starts = self.dataset.cpu_starts[queries]
        ends = starts + self.dataset.sizes.cpu()[queries]
        n, length = len(queries), int(ends[0] - starts[0])
        if (n == 0 or (self.max_list_length is not None and length > self.max_list_length)
                or not bool(((ends - starts) == length).all()) or not bool((starts[1:] == ends[:-1]).all())):
            return None
        start, stop = int(starts[0]), int(ends[-1])
        device = self.dataset.offsets.device
        view = {name: values[start:stop].view(n, length, *values.shape[1:]).to(self.device, non_blocking=True)
                for name, values in self.dataset.rows.items()}
        if self.packed:  # every slot is real: the packed rows are the rows as they lie
            view["X"] = view["X"].reshape(n * length, *view["X"].shape[2:])
        view["mask"] = torch.ones(n, length, dtype=torch.bool, device=self.device)
        if self.dataset.query_weights is not None:
            view["weights"] = self.dataset.query_weights[queries.to(device)].to(self.device)
        labels = None if self.dataset.labels is None else self.dataset.labels[start:stop].view(n, length).to(
            self.device, non_blocking=True)
        return view, labels, torch.arange(start, stop, device=device).view(n, length)

    def _gather(self, values, rows, mask):
        gathered = values[rows]
        fill = mask.reshape(*mask.shape, *([1] * (gathered.dim() - 2)))
        return torch.where(fill, gathered, 0.0).to(self.device, non_blocking=True)

    def _subsample(self, rows, mask):
        """Keep ``max_list_length`` documents per list: every relevant one first, the rest at random."""
        keys = torch.rand(rows.shape, generator=self.generator).to(rows.device)
        if self.dataset.labels is not None:
            keys = keys + (self.dataset.labels[rows] > 0).to(keys.dtype)
        keys = torch.where(mask, keys, -1.0)
        keep = torch.topk(keys, self.max_list_length, dim=1).indices.sort(dim=1).values
        return torch.gather(rows, 1, keep), torch.gather(mask, 1, keep)

