"""Ranked lists for all queries at once: one sort by ``(query, -score)``, no loop over queries.

Every metric of this package starts from :class:`RankedLists`, which validates
the inputs, sorts all rows once and exposes each row's 0-based rank inside its
query. Per-query sums are ``np.bincount`` over the query codes.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import as_query_groups, order_within_groups
from sklearn_ltr._validation import check_relevance, check_scores

__all__ = [
    "RankedLists",
    "mean_over_queries",
    "per_query_max",
    "per_query_with_empty",
    "segment_cumprod",
    "segment_cumsum",
]


class RankedLists:
    """All queries' rows sorted by query, then by score descending.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative relevance grades.
    y_score : array-like of shape (n_samples,)
        Finite predicted scores, higher ranks first.
    groups : array-like of shape (n_samples,) or RankingEvaluator
        Query id of each row (integers or strings, any order), or a grouping built once
        for these rows (a ``QueryGroups`` or a :class:`~sklearn_ltr.metrics.RankingEvaluator`).
    stable : bool, default=True
        Order tied scores by input row order. With ``False`` the tie order is
        arbitrary (faster); only use it when ties are averaged afterwards.

    Attributes
    ----------
    n_queries : int
    ids : ndarray of shape (n_queries,)
        Sorted unique query ids; per-query results follow this order.
    codes : ndarray of shape (n_samples,)
        Query number of each sorted row (non-decreasing).
    labels, scores : ndarray of shape (n_samples,)
        Relevance and score of each sorted row.
    ranks : ndarray of shape (n_samples,)
        0-based rank of each sorted row inside its query.
    sizes, offsets : ndarray
        Rows per query and the start of each query's slice (length ``n_queries + 1``).
    """

    def __init__(self, y_true, y_score, groups, *, stable=True):
        y_true = check_relevance(y_true, name="y_true")
        y_score = check_scores(y_score, y_true.shape[0], name="y_score")
        query_groups = as_query_groups(groups, y_true.shape[0], against="y_true")
        self._fill(y_true, y_score, query_groups, order_within_groups(query_groups.codes, y_score, stable=stable))

    @classmethod
    def by_query(cls, y_true, query_groups):
        """Rows sorted by query only, input order inside each (as if every score were equal).

        ``y_true`` must be checked labels (float64) with one entry per row of ``query_groups``.
        """
        lists = cls.__new__(cls)
        lists._fill(y_true, np.zeros(y_true.shape[0]), query_groups, query_groups.order)
        return lists

    def _fill(self, y_true, y_score, query_groups, order):
        self.n_queries = query_groups.n_queries
        self.ids = query_groups.ids
        self.sizes = query_groups.sizes
        self.offsets = query_groups.offsets
        # Sorted rows are grouped by query number, so their codes need no gather.
        self.codes = np.repeat(np.arange(self.n_queries), self.sizes)
        self.labels = y_true[order]
        self.scores = y_score[order]
        self.ranks = np.arange(order.shape[0]) - np.repeat(self.offsets[:-1], self.sizes)

    def per_query_sum(self, values):
        """Sum ``values`` (one per sorted row) within each query."""
        return np.bincount(self.codes, weights=values, minlength=self.n_queries)

    def tie_runs(self):
        """Index of each sorted row's run of equal scores inside its query, or None without ties."""
        starts = np.empty(self.codes.shape[0], dtype=bool)
        starts[0] = True
        np.not_equal(self.scores[1:], self.scores[:-1], out=starts[1:])
        starts[self.offsets[:-1]] = True
        if starts.all():
            return None
        return np.cumsum(starts) - 1

    def top_k(self, k):
        """Boolean mask of the sorted rows ranked within the first ``k`` (all rows if ``k`` is None)."""
        if k is None:
            return np.ones(self.codes.shape[0], dtype=bool)
        return self.ranks < k


def segment_cumsum(values, lists):
    """Inclusive cumulative sum of ``values`` restarted at the start of each query.

    One global ``np.cumsum`` minus each query's starting offset: exact for counts
    (whole numbers below 2**53), which is all it is used for. Real-valued running
    products use :func:`segment_cumprod`, which never mixes queries.
    """
    total = np.cumsum(values)
    before = np.concatenate(([0], total))[lists.offsets[:-1]]
    return total - before[lists.codes]


def segment_cumprod(values, lists, *, limit=None):
    """Inclusive cumulative product of ``values`` restarted at the start of each query.

    A vectorised Hillis-Steele scan: ``ceil(log2(L))`` passes over all rows at once, each
    multiplying a row by the partial product ``2**p`` rows above it when that row belongs
    to the same query. Nothing is ever divided out, so there is no cancellation between
    queries, a zero factor stays a zero, and nothing becomes NaN.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
        One factor per sorted row.
    lists : RankedLists
    limit : int, default=None
        Only the rows ranked below ``limit`` need a correct product (e.g. a cut-off ``k``);
        fewer passes are then run. ``None``: every row.
    """
    out = np.array(values, dtype=np.float64)
    longest = int(lists.sizes.max()) if limit is None else min(int(limit), int(lists.sizes.max()))
    shift = 1
    while shift < longest:
        above = out[:-shift].copy()
        np.multiply(out[shift:], above, out=out[shift:], where=lists.ranks[shift:] >= shift)
        shift *= 2
    return out


def per_query_max(values, lists):
    """Largest of ``values`` (one per sorted row) within each query."""
    return np.maximum.reduceat(values, lists.offsets[:-1])


def mean_over_queries(values, dropped=None):
    """Mean of per-query values over every query but the ``dropped`` ones (``empty_value=None``).

    Every other query counts: a value that is not finite there is a bug upstream, and
    raises instead of vanishing from the mean. The mean never overflows when the values
    themselves are finite (large DCG values are averaged as ``sum(v / n)``).
    """
    values = np.asarray(values, dtype=np.float64)
    kept = values if dropped is None else values[~dropped]
    if kept.size == 0:
        raise ValueError(
            "every query has no relevant document and empty_value=None drops them all; "
            "there is nothing to average (pass empty_value=0.0 or 1.0)."
        )
    if not np.isfinite(kept).all():
        raise FloatingPointError(
            f"{int((~np.isfinite(kept)).sum())} of {kept.size} per-query values are not finite; "
            "this is a bug in sklearn_ltr.metrics, please report it with the input that caused it."
        )
    with np.errstate(over="ignore"):
        total = kept.sum()
    if np.isfinite(total):
        return float(total / kept.size)
    return float((kept / kept.size).sum())


def per_query_with_empty(per_query, empty, empty_value):
    """Replace the metric of queries without a relevant document by ``empty_value`` (NaN when None)."""
    values = np.array(per_query, dtype=np.float64)
    values[empty] = np.nan if empty_value is None else float(empty_value)
    return values
