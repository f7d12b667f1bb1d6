"""Prediction as a pipeline: the host prepares the next block of rows while the device scores this one.

The one scoring path of the neural rankers: ``predict`` and the validation of a separate set
(``RankingNet.score_rows``, blocks of a query dataset: :func:`dataset_blocks`) both run
:func:`predict_scores`. It scores blocks of whole lists (:func:`~sklearn_ltr._blocks.query_blocks`). For
each block the host gathers the rows into one float32 staging buffer (lists one after the
other, a row of zeros last for the padding to read), puts each list of a list-context model
in its canonical order (:func:`~sklearn_ltr._blocks.canonical_order`) and plans the padded
batches (:func:`~sklearn_ltr._blocks.padded_batches`). The device receives the block in one
copy, pads each batch with one gather, runs the module and writes the scores of the real
documents back by index: shapes come from the host's plan, so nothing waits for the device
until a block's scores are read.

Everything that differs on CUDA is in :class:`_Transfer`: staging buffers in pinned memory,
copies without blocking on a side stream, events; and background threads that prepare the
next blocks while the main thread drives the device (a module may itself wait for the device,
e.g. for a boolean index, and the host work of a block is mostly NumPy, which releases the
GIL). On CPU the same code runs with plain buffers, no thread, and views instead of copies
where the rows already lie in order in float32.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import itertools
from dataclasses import dataclass

import numpy as np
import torch

from sklearn_ltr._blocks import canonical_order, padded_batches
from sklearn_ltr.training._device import is_cuda

__all__ = [
    "PREDICTION_BLOCK_ROWS", "PREDICTION_MAX_PADDING", "ScoringBlock", "StagedBlock", "dataset_blocks",
    "dataset_inputs", "device_batches", "predict_scores", "prefetched_blocks", "real_slots_without_sync",
]

#: Share of a prediction batch's slots that may be padding.
PREDICTION_MAX_PADDING = 0.25

#: Rows per prediction block (whole queries; a longer query is a block of its own): the
#: float32 copy of a block is what scoring adds to memory (about 36 MB for 136 features).
PREDICTION_BLOCK_ROWS = 1 << 16

#: Threads that prepare blocks on CUDA, and blocks prepared ahead of the one being scored. On an
#: H200 (16 cores) 4 threads made RankNet's predict of 1M documents twice as fast as 1 (host-bound),
#: SetRank's 1.4 times, DASALC's no faster (device-bound). On CPU the host does one thing at a time.
CUDA_THREADS = PREFETCH = 4


@dataclass(frozen=True)
class ScoringBlock:
    """Rows of whole lists to score together.

    Parameters
    ----------
    rows : slice or ndarray of int
        Input rows, list after list (rows of a list in input order).
    sizes : ndarray of int
        Rows of each list.
    canonical : bool
        Whether each list's rows are scored in their canonical order (list-context models).
    """

    rows: slice | np.ndarray
    sizes: np.ndarray
    canonical: bool


class _Transfer:
    """Host and device memory: the one place that differs on CUDA.

    On CUDA, host buffers are pinned (PyTorch's caching host allocator reuses a buffer only
    once the copies that read it are done), blocks go to the device on a side stream that
    the scoring stream waits for, and scores come back without blocking until they are read.
    On CPU every call is a no-op: "the device" is the host.
    """

    def __init__(self, device):
        self.device = torch.device(device)
        self.cuda = is_cuda(device)
        self.stream = torch.cuda.Stream(self.device) if self.cuda else None

    def empty(self, shape, dtype=torch.float32):
        return torch.empty(shape, dtype=dtype, pin_memory=self.cuda)

    def threads(self, threads):
        """A pool of ``threads`` (default: :data:`CUDA_THREADS` on CUDA, none on CPU) to prepare blocks, or ``None``."""
        if threads is None:
            threads = CUDA_THREADS if self.cuda else 0
        if not threads:
            return contextlib.nullcontext(None)
        return concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="sklearn_ltr-predict")

    def to_device(self, tensors):
        """``tensors`` on the device and the event after which they are there (``None`` on CPU)."""
        if not self.cuda:
            return tensors, None
        with torch.cuda.stream(self.stream):
            moved = {name: value.to(self.device, non_blocking=True) for name, value in tensors.items()}
            ready = torch.cuda.Event()
            ready.record(self.stream)
        return moved, ready

    def wait(self, tensors, ready):
        """Make the scoring stream wait for ``ready`` before it reads ``tensors``."""
        if ready is None:
            return
        current = torch.cuda.current_stream(self.device)
        current.wait_event(ready)
        for value in tensors.values():
            value.record_stream(current)  # the allocator must not reuse them while this stream reads

    def to_host(self, scores):
        """Start copying ``scores`` to the host; returns ``(host tensor, event)``."""
        if not self.cuda:
            return scores, None
        host = self.empty(scores.shape, scores.dtype)
        host.copy_(scores, non_blocking=True)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(self.device))
        return host, done


@dataclass
class StagedBlock:
    """A block on the device (in host memory on CPU) with its batch plan.

    Parameters
    ----------
    block : ScoringBlock
        The rows it holds.
    tensors : dict of str to Tensor
        ``"X"`` the features, one row per row of the block (lists one after the other) and,
        unless the block is one list scored as it lies, a row of zeros last for the padding;
        the other per-row inputs likewise; ``"integers"`` the list offsets, the list sizes,
        the lists in batch order and, for a canonical block, the position of each list's
        rows in scoring order followed by that of the zero row.
    batches : list of (int, int, int)
        Each batch's first and end entry in the lists in batch order, and its padded length.
    starts, sizes : ndarray of int
        Host copies of the first row and the size of each list, in batch order.
    ready : torch.cuda.Event or None
        Recorded when the tensors are on the device.
    """

    block: ScoringBlock
    tensors: dict
    batches: list
    starts: np.ndarray
    sizes: np.ndarray
    ready: object = None

    @property
    def n_rows(self):
        return int(self.block.sizes.sum())

    def device_batches(self, packed=False):
        """Yield ``(inputs, slots)``: a batch's padded inputs and the rows its slots score (``n_rows``: padding).

        ``slots`` indexes the block's rows: a slice for one list as it lies, else one index per slot.
        ``packed``: ``"X"`` holds the real documents only, in the row-major order of ``"mask"``
        (for a module with ``packed_inputs = True``), the other inputs stay padded.
        """
        n, m = self.n_rows, len(self.block.sizes)
        features = self.tensors["X"]
        extras = {name: values for name, values in self.tensors.items() if name not in ("X", "integers")}
        integers = self.tensors["integers"]
        offsets, sizes, lists_in_order = integers[:m], integers[m:2 * m], integers[2 * m:3 * m]
        canonical = integers[3 * m:] if self.block.canonical else None
        device = features.device
        for lo, hi, length in self.batches:
            if canonical is None and hi - lo == 1:  # one list as it lies: views, no gather
                start, size = int(self.starts[lo]), int(self.sizes[lo])
                inputs = {name: values[start:start + size].view(1, size, *values.shape[1:])
                          for name, values in (("X", features), *extras.items())}
                inputs["mask"] = torch.ones(1, size, dtype=torch.bool, device=device)
                if packed:
                    inputs["X"] = inputs["X"][0]
                yield inputs, slice(start, start + size)
                continue
            lists = lists_in_order[lo:hi]
            slots = torch.arange(length, device=device)
            mask = slots < sizes[lists][:, None]
            position = torch.where(mask, offsets[lists][:, None] + slots, n)
            index = position if canonical is None else canonical[position]
            inputs = {name: values[index] for name, values in extras.items()}
            inputs["X"] = features[_real_slots(index, mask, self.sizes[lo:hi]) if packed else index]
            inputs["mask"] = mask
            yield inputs, index.reshape(-1)


def _real_slots(index, mask, sizes):
    """``index[mask]``, without waiting for the device: the real slots' count comes from the host's ``sizes``."""
    if index.device.type == "cpu":
        return index[mask]
    return real_slots_without_sync(index, mask, int(sizes.sum()))


def real_slots_without_sync(index, mask, n_real):
    """``index[mask]`` for a ``mask`` with ``n_real`` True entries, computed without reading the device.

    A boolean index reads the mask's count back from the device (a CUDA synchronisation per
    batch); a stable sort of the padding flags puts the real slots first, in row-major order,
    and the host already knows how many there are.
    """
    first = torch.argsort((~mask).reshape(-1).to(torch.uint8), stable=True)[:n_real]
    return index.reshape(-1)[first]


def _stage(block, X, extras, documents, transfer):
    """Gather a block's rows into (pinned) float32 buffers, order its lists and plan its batches."""
    rows, sizes = block.rows, np.asarray(block.sizes, dtype=np.int64)
    n, m = int(sizes.sum()), len(sizes)
    # Float32 rows are gathered straight into the staging buffer; float64 ones are read (and compared,
    # for the canonical order) in their own dtype first.
    gathered = X[rows] if isinstance(rows, slice) or X.dtype != np.float32 else None  # a view for a slice
    tensors = {}
    if not transfer.cuda and m == 1 and not block.canonical and gathered is not None \
            and gathered.dtype == np.float32 and gathered.flags.c_contiguous:
        tensors["X"] = torch.from_numpy(gathered)  # one list as it lies: no copy, no zero row
    elif gathered is None:
        tensors["X"] = _staging(transfer, X, rows)
    else:
        tensors["X"] = _staging(transfer, gathered)
    for name, values in extras.items():
        tensors[name] = _staging(transfer, values[rows])
    plan = padded_batches(sizes, documents(sizes), max_padding=PREDICTION_MAX_PADDING)
    in_order = np.concatenate(plan).astype(np.int64)
    bounds = np.cumsum([0] + [len(lists) for lists in plan])
    batches = [(int(lo), int(hi), int(sizes[lists].max())) for lo, hi, lists in zip(bounds[:-1], bounds[1:], plan,
                                                                                    strict=True)]
    offsets = np.cumsum(sizes) - sizes
    parts = [offsets, sizes, in_order]
    if block.canonical:
        # Rows compare in the input's dtype: float64 rows by their float64 bytes.
        compared = tensors["X"][:n].numpy() if X.dtype == np.float32 else gathered
        parts += [canonical_order(compared, sizes, *(values[rows] for values in extras.values())), [n]]
    integers = transfer.empty((sum(len(part) for part in parts),), torch.int64)
    np.concatenate(parts, out=integers.numpy(), casting="unsafe")
    tensors["integers"] = integers
    tensors, ready = transfer.to_device(tensors)
    return StagedBlock(block, tensors, batches, offsets[in_order], sizes[in_order], ready)


def _staging(transfer, values, rows=None):
    """``values`` (n rows; ``values[rows]`` with ``rows``) as a float32 (pinned) tensor of n + 1 rows, the last zeros.

    ``rows`` (an index array into float32 ``values``) gathers them into the buffer directly, with no
    intermediate copy.
    """
    n = values.shape[0] if rows is None else len(rows)
    staged = transfer.empty((n + 1, *values.shape[1:]))
    staged[-1] = 0.0
    if rows is not None:
        # mode="clip": numpy buffers the output of the default mode="raise"; rows are valid indices.
        np.take(values, rows, axis=0, out=staged[:-1].numpy(), mode="clip")
        return staged
    with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf: the feature check names it
        staged[:-1].numpy()[...] = values
    return staged


def prefetched_blocks(blocks, X, extras, documents, transfer, threads=None):
    """The blocks staged in turn, up to :data:`PREFETCH` ahead on background threads (by default on CUDA)."""
    with transfer.threads(threads) as pool:
        if pool is None:
            for block in blocks:
                yield _stage(block, X, extras, documents, transfer)
            return
        pending = collections.deque()
        for block in blocks:
            pending.append(pool.submit(_stage, block, X, extras, documents, transfer))
            if len(pending) > PREFETCH:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def predict_scores(net, X, blocks, *, documents, extras=None, check_features=False, threads=None):
    """Score the rows of ``blocks`` with ``net``'s module; float64 scores in input row order.

    Parameters
    ----------
    net : RankingNet
        A fitted net: its ``module_``, ``device`` and ``infer``.
    X : ndarray of shape (n_samples, n_features)
        Float32 or float64 features (validated).
    blocks : iterable of ScoringBlock
        The rows to score, whole lists; each row in one block at most.
    documents : callable
        ``documents(sizes)``: padded slots per batch for a block's list sizes.
    extras : dict of str to ndarray, default=None
        Other per-row inputs of the module (e.g. ``initial_rank``), in input row order.
    check_features : bool, default=False
        Check on the device that every staged feature is finite.
    threads : int, default=None
        Threads that prepare the next blocks meanwhile: :data:`CUDA_THREADS` on CUDA, none on CPU.

    Returns
    -------
    scores : ndarray of shape (n_samples,)
        Float64 scores; NaN for rows no block holds.
    finite : bool
        Whether every staged feature was finite (``True`` when not checked).
    """
    extras = {name: np.asarray(values) for name, values in (extras or {}).items()}
    transfer = _Transfer(net.device)
    scores = np.full(X.shape[0], np.nan)
    module = net.module_
    packed = bool(getattr(module, "packed_inputs", False))
    training = module.training
    module.eval()
    bad = torch.zeros((), dtype=torch.bool, device=transfer.device)
    previous = None
    try:
        # Scores are float32 whatever the training precision, even inside a caller's autocast.
        with torch.no_grad(), torch.autocast(transfer.device.type, enabled=False):
            for staged in prefetched_blocks(blocks, X, extras, documents, transfer, threads):
                transfer.wait(staged.tensors, staged.ready)
                if check_features:
                    bad |= ~torch.isfinite(staged.tensors["X"]).all()
                # NaN until scored; one slot past the rows takes the padding's scores.
                block_scores = torch.full((staged.n_rows + 1,), float("nan"), device=transfer.device)
                for inputs, slots in staged.device_batches(packed):
                    block_scores[slots] = net.infer(inputs).reshape(-1).float()
                current = (staged.block.rows, *transfer.to_host(block_scores[:staged.n_rows]))
                if previous is not None:  # read the last block's scores once this one is queued
                    _write(scores, *previous)
                previous = current
            if previous is not None:
                _write(scores, *previous)
    finally:
        module.train(training)
    return scores, not bool(bad)


def device_batches(net, X, blocks, *, documents, extras=None):
    """Yield the inputs of each batch that :func:`predict_scores` gives ``net``'s module, on its device.

    The same blocks, staging and batch plan as :func:`predict_scores`, one block at a time;
    for timing the module alone (benchmarks).
    """
    extras = {name: np.asarray(values) for name, values in (extras or {}).items()}
    transfer = _Transfer(net.device)
    packed = bool(getattr(net.module_, "packed_inputs", False))
    for staged in prefetched_blocks(blocks, X, extras, documents, transfer, threads=0):
        transfer.wait(staged.tensors, staged.ready)
        for inputs, _ in staged.device_batches(packed):
            yield inputs


def dataset_blocks(dataset, block_rows=PREDICTION_BLOCK_ROWS):
    """Blocks (:class:`ScoringBlock`) of every query of a query dataset, each list in its canonical order.

    Consecutive queries of the dataset, cut where ``predict`` cuts the same queries
    (:func:`~sklearn_ltr._blocks.query_block_bounds`: about ``block_rows`` rows a block). A
    block's ``rows`` are the flat row indices of its queries, query after query, each query's
    rows in the dataset's order (``starts`` and ``index`` applied for rows used where they lie),
    a slice when they lie one after the other. Each list is scored in its canonical order
    (:func:`~sklearn_ltr._blocks.canonical_order`), as ``predict`` scores it: the scores of a
    list's rows are those ``predict`` gives them.

    Parameters
    ----------
    dataset : QueryDataset
        The queries to score (``offsets``, ``starts``, ``index``).
    block_rows : int, default=PREDICTION_BLOCK_ROWS
        Rows per block.

    Returns
    -------
    list of ScoringBlock
    """
    offsets = dataset.offsets.cpu().numpy().astype(np.int64)
    sizes = np.diff(offsets)
    starts = dataset.cpu_starts.numpy().astype(np.int64)
    index = None if dataset.index is None else dataset.index.cpu().numpy()
    edges = np.flatnonzero(np.diff(offsets[:-1] // block_rows)) + 1
    blocks = []
    for lo, hi in itertools.pairwise([0, *edges.tolist(), len(sizes)]):
        if hi == lo:
            continue
        rows = np.repeat(starts[lo:hi] - offsets[lo:hi], sizes[lo:hi]) + np.arange(offsets[lo], offsets[hi])
        if index is not None:
            rows = index[rows]
        if rows[-1] - rows[0] + 1 == len(rows) and bool((np.diff(rows) == 1).all()):
            rows = slice(int(rows[0]), int(rows[-1]) + 1)  # one after the other: staged from a view
        blocks.append(ScoringBlock(rows, sizes[lo:hi], canonical=True))
    return blocks


def dataset_inputs(dataset):
    """``(X, extras)`` of a query dataset as host arrays in its flat row order, for :func:`predict_scores`.

    ``X`` is the float32 features (a view of host tensors); ``extras`` the other per-row inputs
    of the module, not the bookkeeping ones whose names start with ``"_"`` (click weights,
    propensities).
    """
    X = dataset.rows["X"].cpu().numpy()
    extras = {name: values.cpu().numpy() for name, values in dataset.rows.items()
              if name != "X" and not name.startswith("_")}
    return X, extras


def _write(scores, rows, block_scores, done):
    if done is not None:
        done.synchronize()
    scores[rows] = block_scores.numpy()
