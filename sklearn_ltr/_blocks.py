"""How rows are cut into batches for scoring: shared by the rankers' ``predict`` and :class:`OnnxScorer`.

Two cuts, NumPy only (no torch):

- :func:`query_blocks`: consecutive blocks of whole queries of about ``documents`` rows,
  so that only one block at a time is copied into float32 (memory stays bounded);
- :func:`padded_batches`: inside a block, queries sorted by length and cut so that each
  batch pads to at most ``documents`` slots (a list that alone is longer is a batch of its
  own), and optionally at most ``max_queries`` lists.

:func:`check_finite_scores` is the one error for a model that scored NaN or infinity.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["check_finite_scores", "padded_batches", "query_blocks"]


def query_blocks(query_groups, documents):
    """Input-row indices of consecutive blocks of whole queries, each of about ``documents`` rows.

    A query starts a new block when its first row would lie past a multiple of
    ``documents``: a block holds at most ``documents`` rows plus one query's.

    Parameters
    ----------
    query_groups : QueryGroups
        The rows' queries.
    documents : int
        Rows per block.

    Returns
    -------
    list of ndarray
        Row indices of each block, query by query.
    """
    starts = query_groups.offsets[:-1]
    block_of_query = starts // documents
    edges = np.flatnonzero(np.diff(block_of_query)) + 1
    bounds = np.concatenate(([0], query_groups.offsets[edges], [query_groups.n_samples]))
    order = query_groups.order
    return [order[lo:hi] for lo, hi in itertools.pairwise(bounds) if hi > lo]


def padded_batches(sizes, documents, max_queries=None, max_padding=None):
    """Query numbers of each batch: queries by length, each batch padding to at most ``documents`` slots.

    A batch pads its lists to its longest, so sorting by length keeps padding small. Walking
    the queries from the shortest, a batch takes the next query while it still fits: at most
    ``documents`` padded slots (a list longer than that is a batch of its own), at most
    ``max_queries`` lists, and at most a ``max_padding`` share of padded slots (a long list
    joining many short ones would otherwise pad them all to its length: with attention the
    cost of a list grows with the square of its padded length).

    Parameters
    ----------
    sizes : array-like of int
        Documents of each query.
    documents : int
        Padded slots per batch (a longer list is a batch of its own).
    max_queries : int, default=None
        At most this many lists per batch.
    max_padding : float, default=None
        At most this share of a batch's slots may be padding (``None``: no limit).

    Returns
    -------
    list of ndarray
        Query numbers of each batch, shortest lists first.

    Examples
    --------
    >>> [b.tolist() for b in padded_batches([3, 1, 2, 5], documents=6)]  # 2 x 2 slots, 1 x 3, 1 x 5
    [[1, 2], [0], [3]]
    >>> [b.tolist() for b in padded_batches([1, 1, 8, 8], documents=100, max_padding=0.25)]
    [[0, 1], [2, 3]]
    """
    sizes = np.asarray(sizes)
    order = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[order].tolist()
    limit = len(order) if max_queries is None else int(max_queries)
    bounds, start, real = [0], 0, 0
    for end, size in enumerate(sorted_sizes):
        count = end - start + 1  # the batch [start, end] with this query; its longest list is `size`
        fits = count <= limit and count * size <= documents
        if fits and max_padding is not None:
            fits = real + size >= (1.0 - max_padding) * count * size
        if end > start and not fits:
            bounds.append(end)
            start, real = end, 0
        real += size
    bounds.append(len(order))
    return [order[lo:hi] for lo, hi in itertools.pairwise(bounds)]


def check_finite_scores(scores, owner):
    """Raise ``ValueError`` when a model scored NaN or infinity: never return such a score."""
    bad = ~np.isfinite(scores)
    if bad.any():
        raise ValueError(
            f"{owner} produced {int(bad.sum())} non-finite scores of {len(scores)}: these rows' features are "
            f"probably far outside the training data's range (scale the features, e.g. with StandardScaler or "
            f"Log1pTransformer, in a Pipeline for both fit and predict)."
        )
    return scores
