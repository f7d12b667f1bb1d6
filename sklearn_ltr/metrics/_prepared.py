"""Labels and query groups of a fixed set of rows, prepared once for many evaluations.

The base of :class:`~sklearn_ltr.metrics.RankingEvaluator`: what does not change between
evaluations of new scores on the same rows (the query grouping, each row's cell in a
``[n_queries, max_size]`` layout, the labels sorted by query, and whatever a metric caches
from the labels, such as NDCG's gains and ideal DCG).
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import QueryGroups, as_query_groups
from sklearn_ltr._validation import check_relevance
from sklearn_ltr.metrics._lists import RankedLists

__all__ = ["PreparedQueries", "prepared_queries"]

# The [n_queries, max_size] layout is used while it has at most this many cells per row
# (plus a small constant); with very uneven query sizes the metrics sort rows instead.
_MAX_CELLS_PER_ROW = 4
_MIN_CELLS = 4096


class PreparedQueries:
    """Read-only labels (``y_true``) and the ``query_groups`` of a fixed set of rows, with caches."""

    def __init__(self, y_true, groups):
        labels = np.array(check_relevance(y_true, name="y_true"), dtype=np.float64)
        labels.setflags(write=False)
        self.y_true = labels
        self.query_groups = as_query_groups(groups, labels.shape[0], against="y_true")
        self._cache = {}

    @property
    def ids(self):
        return self.query_groups.ids

    @property
    def n_samples(self):
        return self.query_groups.n_samples

    @property
    def n_queries(self):
        return self.query_groups.n_queries

    def _cached(self, key, compute):
        """``compute()``, computed once per ``key`` (values that depend on the labels only)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def _label_lists(self):
        """The labels sorted by query (``RankedLists`` with all scores equal), built once."""
        return self._cached("lists", lambda: RankedLists.by_query(self.y_true, self.query_groups))

    def _layout(self):
        """``(cells, max_size)``: each row's cell in a ``[n_queries, max_size]`` array, or None if too sparse."""

        def compute():
            groups = self.query_groups
            size = groups.max_size
            if groups.n_queries * size > max(_MAX_CELLS_PER_ROW * groups.n_samples, _MIN_CELLS):
                return None
            return groups.codes.astype(np.intp) * size + groups.positions, size

        return self._cached("layout", compute)


def prepared_queries(y_true, groups):
    """The :class:`PreparedQueries` of ``y_true`` when ``groups`` is a grouping built once; None for per-row ids.

    Prepared queries of the same labels are returned as they are; a bare ``QueryGroups``, or
    prepared queries of other labels, give new ones for ``y_true`` on the same grouping.
    """
    if isinstance(groups, PreparedQueries):
        if y_true is groups.y_true:
            return groups
        labels = check_relevance(y_true, name="y_true")
        if labels.shape[0] == groups.n_samples and np.array_equal(labels, groups.y_true):
            return groups
        return PreparedQueries(labels, as_query_groups(groups, labels.shape[0], against="y_true"))
    if isinstance(groups, QueryGroups):
        labels = check_relevance(y_true, name="y_true")
        return PreparedQueries(labels, as_query_groups(groups, labels.shape[0], against="y_true"))
    return None
