"""Evaluate many score vectors on the same labelled queries, grouping them once.

Early stopping, a hyper-parameter search and a comparison of rankers score the same
queries again and again with new scores. What does not change between those calls is
built once by :class:`RankingEvaluator`: the query grouping, each row's cell in a
``[n_queries, max_size]`` layout, the gains of the labels and each query's ideal DCG.
A call then sorts the scores within each row of that layout (a segmented sort of short
lists instead of one global sort) and sums the gains of the top ``k`` positions.

Every convention is the one of :func:`~sklearn_ltr.metrics.ndcg_score`, and so are the
values (bit for bit with ``ties="stable"``; with ``ties="average"`` up to the order in
which the gains of tied rows are added).
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.metrics._prepared import PreparedQueries
from sklearn_ltr.metrics._registry import get_metric, is_builtin, parse_metric

__all__ = ["RankingEvaluator"]


class RankingEvaluator(PreparedQueries):
    """Labels and query groups of a fixed set of rows, prepared once for many evaluations.

    Pass it as the ``groups`` argument of any metric of :mod:`sklearn_ltr.metrics`
    (with the same ``y_true``), or call :meth:`score` and :meth:`per_query`. The query
    grouping (validation of the ids, the sort by query) is built once; for NDCG, so are
    the gains of the labels and each query's ideal DCG (per cut-off and gain), since labels
    do not change between the epochs of early stopping or the candidates of a search.
    Each call then only ranks the new scores within their queries. The values are those
    of the metric functions given per-row ids; every convention (ties, queries without
    a relevant document, gains) is the same.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Finite non-negative relevance grades (copied: later changes to the array passed
        do not reach the evaluator).
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, queries may interleave).

    Attributes
    ----------
    y_true : ndarray of shape (n_samples,)
        The labels as read-only float64.
    ids : ndarray of shape (n_queries,)
        Sorted unique query ids; per-query values follow this order.
    n_samples : int
        Number of rows.
    n_queries : int
        Number of queries.

    See Also
    --------
    ndcg_score : NDCG from per-row query ids.

    Notes
    -----
    A metric given an evaluator as ``groups`` checks that ``y_score`` has one score per
    row of it, and raises a ``ValueError`` naming ``groups`` otherwise. When ``y_true`` is
    not the evaluator's own array (``y_true``), it is compared with the labels the
    evaluator was built with; different labels still give the right value (only the
    grouping is reused), at the cost of preparing them again.

    Examples
    --------
    >>> from sklearn_ltr.metrics import RankingEvaluator, ndcg_score
    >>> y_true, groups = [2, 0, 1, 0, 1], [1, 1, 1, 2, 2]
    >>> evaluator = RankingEvaluator(y_true, groups)
    >>> round(evaluator.score([0.2, 0.9, 0.5, 0.3, 0.7], "ndcg"), 4)
    0.7934
    >>> round(evaluator.score([0.9, 0.1, 0.5, 0.3, 0.7], "ndcg@1"), 4)
    1.0
    >>> round(ndcg_score(y_true, [0.2, 0.9, 0.5, 0.3, 0.7], evaluator), 4)  # the same as with the ids
    0.7934
    >>> evaluator.per_query([0.2, 0.9, 0.5, 0.3, 0.7], "mrr").tolist()
    [0.5, 1.0]
    """

    def __repr__(self):
        return f"RankingEvaluator(n_samples={self.n_samples}, n_queries={self.n_queries})"

    def _metric_call(self, y_score, metric, options):
        if isinstance(metric, str) and "@" in metric:
            record, k = parse_metric(metric, owner="RankingEvaluator", parameter="metric")
            if "k" in options:
                raise TypeError(f"RankingEvaluator: metric={metric!r} already has a cut-off; do not pass k too.")
            options = {"k": k, **options}
        else:
            record = get_metric(metric, owner="RankingEvaluator", parameter="metric")
        # A metric registered outside the package takes per-row ids, which the evaluator rebuilds.
        groups = self if is_builtin(record) else self.query_groups.ids[self.query_groups.codes]
        return record, groups, options

    def score(self, y_score, metric="ndcg", **options):
        """Mean of a metric over the queries for the scores ``y_score``.

        Parameters
        ----------
        y_score : array-like of shape (n_samples,)
            Finite predicted scores, one per row, in the evaluator's row order.
        metric : str, default="ndcg"
            A name of :data:`~sklearn_ltr.metrics.METRICS`, optionally with a cut-off
            (``"ndcg@10"``).
        **options
            Options of the metric (``k``, ``gain``, ``empty_value``, ``ties``, ...) and its
            per-row inputs (``propensity=``).

        Returns
        -------
        score : float
            The metric's value over all queries, as its score function returns it.
        """
        record, groups, options = self._metric_call(y_score, metric, options)
        return record.score(self.y_true, y_score, groups, **options)

    def per_query(self, y_score, metric="ndcg", **options):
        """One value of a metric per query, in ``ids`` order.

        Parameters
        ----------
        y_score : array-like of shape (n_samples,)
            Finite predicted scores, one per row, in the evaluator's row order.
        metric : str, default="ndcg"
            A name of :data:`~sklearn_ltr.metrics.METRICS` with per-query values,
            optionally with a cut-off (``"ndcg@10"``).
        **options
            Options of the metric and its per-row inputs.

        Returns
        -------
        values : ndarray of shape (n_queries,)
            NaN for a query the metric leaves out.
        """
        record, groups, options = self._metric_call(y_score, metric, options)
        if record.per_query is None:
            raise ValueError(f"the {record.name!r} metric has no per-query values; use score().")
        return np.asarray(record.per_query(self.y_true, y_score, groups, **options), dtype=np.float64)
