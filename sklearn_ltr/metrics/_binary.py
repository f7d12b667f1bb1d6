"""Metrics of binary relevance (a document is relevant when its label is > 0).

Tied scores are ranked in input row order (as LightGBM's evaluation does).
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.metrics._lists import (
    RankedLists,
    mean_over_queries,
    per_query_with_empty,
    segment_cumsum,
)
from sklearn_ltr.metrics._params import check_metric_params

__all__ = ["average_precision_score", "mrr_score", "precision_at_k"]


# Per-query values (in sorted query-id order) behind the public metrics, which average them;
# the significance tests compare them query by query.
def _ap_per_query(y_true, y_score, groups, *, k=None, empty_value=1.0):
    """AP@k of each query and the mask of queries without a relevant document."""
    lists = RankedLists(y_true, y_score, groups)
    relevant = (lists.labels > 0).astype(np.float64)
    hits = segment_cumsum(relevant, lists)
    precision_sum = lists.per_query_sum(relevant * hits / (lists.ranks + 1.0) * lists.top_k(k))
    n_relevant = lists.per_query_sum(relevant)
    normaliser = n_relevant if k is None else np.minimum(n_relevant, k)
    empty = n_relevant == 0
    ap = np.divide(precision_sum, normaliser, out=np.zeros_like(precision_sum), where=~empty)
    return per_query_with_empty(ap, empty, empty_value), empty


def _precision_per_query(y_true, y_score, groups, *, k=10):
    lists = RankedLists(y_true, y_score, groups)
    return lists.per_query_sum((lists.labels > 0) * lists.top_k(k)) / k


def _mrr_per_query(y_true, y_score, groups, *, k=None):
    lists = RankedLists(y_true, y_score, groups)
    rows = np.flatnonzero((lists.labels > 0) & lists.top_k(k))
    query_of_row = lists.codes[rows]
    # Rows are sorted by (query, rank): a query's first relevant row starts its run.
    first = np.ones(rows.shape[0], dtype=bool)
    first[1:] = query_of_row[1:] != query_of_row[:-1]
    reciprocal = np.zeros(lists.n_queries)
    reciprocal[query_of_row[first]] = 1.0 / (lists.ranks[rows[first]] + 1.0)
    return reciprocal


def average_precision_score(y_true, y_score, groups, *, k=None, empty_value=1.0):
    r"""Mean average precision (MAP@k) over queries, with binary relevance ``label > 0``.

    .. math::
        \mathrm{AP@}k = \frac{1}{\min(R, k)} \sum_{r=1}^{\min(k, n)} P@r \cdot \mathrm{rel}_r,
        \qquad P@r = \frac{1}{r} \sum_{i \le r} \mathrm{rel}_i

    with :math:`R` the number of relevant documents of the query (``min(R, k)``
    is LightGBM's normaliser; with ``k=None`` it is :math:`R`).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative relevance grades; grades above 0 count as relevant.
    y_score : array-like of shape (n_samples,)
        Finite predicted scores; a higher score ranks higher. Ties are ranked in input row order.
    groups : array-like of shape (n_samples,)
        Query id of each row.
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    empty_value : float or None, default=1.0
        AP of a query with no relevant document: 1.0 as in LightGBM, 0.0, or
        ``None`` to drop such queries from the mean.

    Returns
    -------
    score : float

    References
    ----------
    C. D. Manning, P. Raghavan and H. Schütze. *Introduction to Information
    Retrieval*, section 8.4. Cambridge University Press, 2008.

    Examples
    --------
    >>> from sklearn_ltr.metrics import average_precision_score
    >>> y_true = [1, 0, 1, 0]
    >>> y_score = [4, 3, 2, 1]
    >>> round(average_precision_score(y_true, y_score, [0, 0, 0, 0]), 4)  # (1/1 + 2/3) / 2
    0.8333
    >>> average_precision_score(y_true, y_score, [0, 0, 0, 0], k=2)  # (1/1) / min(2, 2)
    0.5

    A query without a relevant document scores ``empty_value``:

    >>> average_precision_score([0, 0], [2, 1], [0, 0])
    1.0
    >>> average_precision_score([0, 0], [2, 1], [0, 0], empty_value=0.0)
    0.0
    """
    check_metric_params("average_precision_score", k=k, empty_value=empty_value)
    values, empty = _ap_per_query(y_true, y_score, groups, k=k, empty_value=empty_value)
    return mean_over_queries(values, dropped=empty if empty_value is None else None)


def precision_at_k(y_true, y_score, groups, *, k=10):
    r"""Mean precision at ``k`` over queries, with binary relevance ``label > 0``.

    .. math:: P@k = \frac{1}{k} \sum_{r=1}^{\min(k, n)} \mathrm{rel}_r

    A list shorter than ``k`` is still divided by ``k`` (the usual TREC rule).
    Ties are ranked in input row order.

    Parameters
    ----------
    y_true, y_score, groups : array-like of shape (n_samples,)
        Relevance grades, scores and query ids, as in :func:`ndcg_score`.
    k : int, default=10
        Cut-off.

    Returns
    -------
    score : float

    Examples
    --------
    >>> from sklearn_ltr.metrics import precision_at_k
    >>> precision_at_k([1, 0, 1, 0], [4, 3, 2, 1], [0, 0, 0, 0], k=2)
    0.5
    >>> precision_at_k([1, 0], [2, 1], [0, 0], k=10)  # a 2-document list is still divided by 10
    0.1
    """
    check_metric_params("precision_at_k", k=k)
    return mean_over_queries(_precision_per_query(y_true, y_score, groups, k=k))


def mrr_score(y_true, y_score, groups, *, k=None):
    r"""Mean reciprocal rank of the first relevant document (``label > 0``).

    .. math:: \mathrm{RR@}k = 1 / r^{*} \text{ if } r^{*} \le k \text{ else } 0

    where :math:`r^{*}` is the rank of the first relevant document; a query
    without one scores 0. Ties are ranked in input row order.

    Parameters
    ----------
    y_true, y_score, groups : array-like of shape (n_samples,)
        Relevance grades, scores and query ids, as in :func:`ndcg_score`.
    k : int, default=None
        Cut-off; ``None`` uses whole lists.

    Returns
    -------
    score : float

    References
    ----------
    E. M. Voorhees. "The TREC-8 question answering track report." TREC 1999.

    Examples
    --------
    >>> from sklearn_ltr.metrics import mrr_score
    >>> y_true, y_score, groups = [0, 1, 0, 0, 0, 1], [3, 2, 1, 3, 2, 1], [0, 0, 0, 1, 1, 1]
    >>> round(mrr_score(y_true, y_score, groups), 4)  # (1/2 + 1/3) / 2
    0.4167
    >>> mrr_score(y_true, y_score, groups, k=2)  # query 1's hit at rank 3 is past the cut-off
    0.25
    """
    check_metric_params("mrr_score", k=k)
    return mean_over_queries(_mrr_per_query(y_true, y_score, groups, k=k))
