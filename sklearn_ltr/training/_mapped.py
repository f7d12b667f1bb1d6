"""Training rows used where they lie: a float32 ``X`` grouped by query (a memory map) is never copied.

:func:`in_place_dataset` builds the :class:`~sklearn_ltr.training._batches.QueryDataset` of a
fit over the caller's array itself when each query's rows are contiguous in it (the on-disk
layout of :func:`sklearn_ltr.datasets.convert_ranking` is), in any order of the queries: the
dataset records where each query starts, batches gather their rows from it step by step, and
the validation split is a view. Training sees exactly the data, and the query order, of the
copying path, so the model is the same.

For a memory-mapped array this is what keeps a process's memory to its batches: the pages
read are the OS page cache's, shared by every process that maps the file (the processes of a
``torchrun`` job), and the dataset stays on the host when training runs on a GPU (batches are
moved, not the array). Labels, per-row extras and query bookkeeping are copied, a few bytes
per row against the features' ``4 * n_features``.
"""

from __future__ import annotations

import mmap
import warnings

import numpy as np
import torch

from sklearn_ltr.training._batches import QueryDataset, row_tensor

__all__ = ["in_place_dataset", "is_memory_mapped"]


def is_memory_mapped(array):
    """Whether ``array`` (or an array it is a view of) lies in a memory-mapped file."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def _starts_if_grouped(query_groups):
    """Each query's first row in input order when every query's rows are contiguous there, else None."""
    order, offsets = query_groups.order, query_groups.offsets
    sizes = np.diff(offsets)
    starts = order[offsets[:-1]]
    expected = np.repeat(starts - offsets[:-1], sizes) + np.arange(len(order))
    return starts if np.array_equal(order, expected) else None


def in_place_dataset(query_groups, X, y=None, *, query_weights=None, order=None, **extras):
    """The training dataset over ``X`` itself, or None when it needs a copy.

    A copy is needed when ``X`` is not float32, not C-contiguous, or a query's rows are not
    contiguous in it. ``order`` (default ``query_groups.order``, rows in the order they lie)
    is the order in which training sees each query's rows, e.g. their canonical order
    (:func:`~sklearn_ltr._blocks.canonical_query_order`): the dataset then reads the rows
    where they lie through a permutation of each query's rows (8 bytes per row).

    A memory-mapped ``X`` whose rows are not grouped by query is copied with a warning that
    names the fix (:func:`sklearn_ltr.datasets.write_ranking_layout` groups them).
    """
    usable = isinstance(X, np.ndarray) and X.dtype == np.float32 and X.flags.c_contiguous
    if not usable or query_groups.n_queries == 0:
        return None
    starts = _starts_if_grouped(query_groups)
    mapped = is_memory_mapped(X)
    if starts is None:
        if mapped:
            warnings.warn(
                "fit received a memory-mapped X whose rows are not grouped by query: training copies it into "
                "memory (query by query). Write it grouped (sklearn_ltr.datasets.write_ranking_layout or "
                "convert_ranking) to train from the file without a copy.", UserWarning, stacklevel=5,
            )
        return None
    with warnings.catch_warnings():
        # A read-only map: torch warns that it cannot protect it; training only reads its inputs.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        rows = {"X": torch.from_numpy(X)}
    for name, values in extras.items():
        rows[name] = row_tensor(name, values)
    labels = None if y is None else torch.as_tensor(np.asarray(y, dtype=np.float32))
    weights = None if query_weights is None else torch.as_tensor(query_weights, dtype=torch.float32)
    index = None
    if order is not None and not np.array_equal(order, query_groups.order):
        # Row query_groups.order[i] lies at flat position i of its query's rows: read order[i] there instead.
        index = np.empty(len(order), dtype=np.int64)
        index[query_groups.order] = order
        index = torch.from_numpy(index)
    return QueryDataset(rows, labels, torch.as_tensor(query_groups.offsets, dtype=torch.int64), weights,
                        starts=torch.as_tensor(starts, dtype=torch.int64), on_host=mapped, index=index)
