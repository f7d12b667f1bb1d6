"""Discounted cumulative gain and its normalised form, over many queries at once."""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import order_within_groups
from sklearn_ltr._validation import check_k
from sklearn_ltr.metrics._lists import (
    RankedLists,
    check_empty_value,
    mean_over_queries,
    per_query_with_empty,
)

__all__ = ["dcg_score", "ndcg_per_query", "ndcg_score"]

_GAINS = {
    "exponential": lambda y: np.exp2(y) - 1.0,
    "linear": lambda y: y,
}
_TIES = ("average", "stable")
# Beyond this many (query, grade) cells the ideal DCG is computed by sorting instead of counting.
_MAX_COUNT_CELLS = 50_000_000


def _check_options(gain, ties):
    if gain not in _GAINS:
        raise ValueError(f"gain must be one of {sorted(_GAINS)}; got {gain!r}.")
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {list(_TIES)}; got {ties!r}.")
    return _GAINS[gain]


def _discount_table(max_size, k):
    """``1 / log2(rank + 2)`` for 0-based ranks ``0 .. max_size - 1``, 0 past the cut-off ``k``."""
    discount = 1.0 / np.log2(np.arange(max_size) + 2.0)
    if k is not None:
        discount[k:] = 0.0
    return discount


def _dcg_per_query(lists, gain_fn, k, ties):
    discount = _discount_table(lists.sizes.max(), k)[lists.ranks]
    runs = lists.tie_runs() if ties == "average" else None
    if runs is not None:
        # Tied documents share the mean discount of the positions they occupy: the
        # expected DCG over random tie orders (scikit-learn's ``ndcg_score`` rule).
        discount = (np.bincount(runs, weights=discount) / np.bincount(runs))[runs]
    return lists.per_query_sum(gain_fn(lists.labels) * discount)


def _ideal_dcg_per_query(lists, gain_fn, k):
    labels = lists.labels
    top = labels.max()
    n_levels = int(top) + 1
    if np.array_equal(labels, np.round(labels)) and lists.n_queries * n_levels <= _MAX_COUNT_CELLS:
        # Integer grades: the ideal list is each query's grade counts, highest first, so the
        # ideal DCG is sum_g gain(g) * (D[end_g] - D[start_g]) with D the cumulative discount.
        counts = np.bincount(
            lists.codes * n_levels + labels.astype(np.intp), minlength=lists.n_queries * n_levels
        ).reshape(lists.n_queries, n_levels)[:, ::-1]
        ends = np.cumsum(counts, axis=1)
        cumulative = np.concatenate(([0.0], np.cumsum(_discount_table(lists.sizes.max(), k))))
        level_gains = gain_fn(np.arange(n_levels, dtype=np.float64)[::-1])
        return (level_gains * (cumulative[ends] - cumulative[ends - counts])).sum(axis=1)
    order = order_within_groups(lists.codes, labels, stable=False)
    return lists.per_query_sum(gain_fn(labels[order]) * _discount_table(lists.sizes.max(), k)[lists.ranks])


def dcg_score(y_true, y_score, groups, *, k=None, gain="exponential", ties="average"):
    r"""Mean discounted cumulative gain over queries.

    .. math::
        \mathrm{DCG@}k = \sum_{r=1}^{\min(k, n)} \frac{G(y_{(r)})}{\log_2(r + 1)},
        \qquad G(y) = 2^y - 1 \text{ (exponential) or } y \text{ (linear)}

    where :math:`y_{(r)}` is the label of the document ranked :math:`r`-th by score.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative relevance grades.
    y_score : array-like of shape (n_samples,)
        Finite predicted scores; a higher score ranks higher.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, queries may interleave).
    k : int, default=None
        Cut-off: only the top ``k`` positions count. ``None`` uses whole lists.
    gain : {"exponential", "linear"}, default="exponential"
        ``2**y - 1`` (Burges et al., 2005) or the label itself (scikit-learn's ``ndcg_score``).
    ties : {"average", "stable"}, default="average"
        ``"average"`` gives tied documents the mean discount of the positions
        they share (the expected value over random tie orders, as in
        scikit-learn); ``"stable"`` ranks ties in input row order (LightGBM's
        evaluation).

    Returns
    -------
    score : float

    References
    ----------
    K. Järvelin and J. Kekäläinen. "Cumulated gain-based evaluation of IR
    techniques." ACM TOIS 20(4), 2002.

    Examples
    --------
    >>> from sklearn_ltr.metrics import dcg_score
    >>> round(dcg_score([3, 0, 1], [0.9, 0.8, 0.1], [7, 7, 7]), 4)
    7.5
    """
    gain_fn = _check_options(gain, ties)
    k = check_k(k)
    lists = RankedLists(y_true, y_score, groups, stable=ties == "stable")
    return float(_dcg_per_query(lists, gain_fn, k, ties).mean())


def ndcg_per_query(
    y_true, y_score, groups, *, k=None, gain="exponential", empty_value=1.0, ties="average"
):
    """NDCG of each query; see :func:`ndcg_score` for the definition.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative relevance grades.
    y_score : array-like of shape (n_samples,)
        Finite predicted scores; a higher score ranks higher.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, queries may interleave).
    k : int, default=None
        Cut-off: only the top ``k`` positions count. ``None`` uses whole lists.
    gain : {"exponential", "linear"}, default="exponential"
        ``2**y - 1`` or ``y``.
    empty_value : float or None, default=1.0
        NDCG of a query whose ideal DCG is 0 (no relevant document); ``None``
        gives NaN for such queries.
    ties : {"average", "stable"}, default="average"
        How tied scores are ranked; see :func:`ndcg_score`.

    Returns
    -------
    query_ids : ndarray of shape (n_queries,)
        Sorted unique query ids.
    scores : ndarray of shape (n_queries,)
        NDCG of each query, in ``query_ids`` order; NaN for queries without a
        relevant document when ``empty_value`` is None.

    Examples
    --------
    >>> from sklearn_ltr.metrics import ndcg_per_query
    >>> ids, values = ndcg_per_query([1, 0, 0, 1], [0.9, 0.1, 0.8, 0.2], ["a", "a", "b", "b"])
    >>> ids.tolist(), values.round(4).tolist()
    (['a', 'b'], [1.0, 0.6309])
    """
    gain_fn = _check_options(gain, ties)
    k = check_k(k)
    empty_value = check_empty_value(empty_value)
    lists = RankedLists(y_true, y_score, groups, stable=ties == "stable")
    dcg = _dcg_per_query(lists, gain_fn, k, ties)
    ideal = _ideal_dcg_per_query(lists, gain_fn, k)
    empty = ideal <= 0.0
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=~empty)
    return lists.ids, per_query_with_empty(ratio, empty, empty_value)


def ndcg_score(y_true, y_score, groups, *, k=None, gain="exponential", empty_value=1.0, ties="average"):
    r"""Mean normalised discounted cumulative gain over queries.

    .. math::
        \mathrm{NDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k},
        \qquad \mathrm{DCG@}k = \sum_{r=1}^{\min(k, n)} \frac{G(y_{(r)})}{\log_2(r + 1)}

    where IDCG is the DCG of the list sorted by its labels, :math:`G(y) = 2^y - 1`
    (exponential, default) or :math:`G(y) = y` (linear).

    Computed for all queries at once with one sort by ``(query, -score)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Non-negative relevance grades.
    y_score : array-like of shape (n_samples,)
        Finite predicted scores; a higher score ranks higher.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, queries may interleave).
    k : int, default=None
        Cut-off: only the top ``k`` positions count. ``None`` uses whole lists.
    gain : {"exponential", "linear"}, default="exponential"
        ``2**y - 1`` (Burges et al., 2005, LightGBM) or ``y`` (scikit-learn).
    empty_value : float or None, default=1.0
        NDCG of a query whose ideal DCG is 0 (no relevant document). The
        default 1.0 is LightGBM's and XGBoost's convention, so the value equals
        ``LGBMRanker``'s own ``ndcg@k`` log; scikit-learn and TF-Ranking use
        0.0; ``None`` drops such queries from the mean (the DASALC paper).
    ties : {"average", "stable"}, default="average"
        ``"average"``: tied scores share the mean discount of their positions,
        the expected NDCG over random tie orders (scikit-learn's rule; the
        result does not depend on row order). ``"stable"``: ties are ranked in
        input row order, as LightGBM's evaluation does.

    Returns
    -------
    score : float
        Mean NDCG over queries, in [0, 1].

    References
    ----------
    K. Järvelin and J. Kekäläinen. "Cumulated gain-based evaluation of IR
    techniques." ACM TOIS 20(4), 2002. C. Burges et al. "Learning to rank using
    gradient descent." ICML 2005.

    Examples
    --------
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> y_true = [2, 0, 1, 0, 1]
    >>> y_score = [0.2, 0.9, 0.5, 0.3, 0.7]
    >>> groups = [1, 1, 1, 2, 2]
    >>> round(ndcg_score(y_true, y_score, groups), 4)  # (0.5869 + 1) / 2
    0.7934
    >>> round(ndcg_score(y_true, y_score, groups, k=1), 4)
    0.5

    A query without a relevant document scores ``empty_value``:

    >>> y_true, y_score, groups = [0, 0, 1, 0], [0.3, 0.2, 0.9, 0.1], [1, 1, 2, 2]
    >>> ndcg_score(y_true, y_score, groups)  # query 1 scores 1.0, as in LightGBM
    1.0
    >>> ndcg_score(y_true, y_score, groups, empty_value=0.0)  # as in scikit-learn
    0.5
    >>> ndcg_score(y_true, y_score, groups, empty_value=None)  # query 1 is dropped
    1.0

    Tied scores share the mean discount of their positions, unless ``ties="stable"``
    ranks them in row order:

    >>> round(ndcg_score([0, 1], [0.5, 0.5], [0, 0]), 4)  # (1 + 1 / log2(3)) / 2
    0.8155
    >>> round(ndcg_score([0, 1], [0.5, 0.5], [0, 0], ties="stable"), 4)  # 1 / log2(3)
    0.6309
    """
    _, values = ndcg_per_query(
        y_true, y_score, groups, k=k, gain=gain, empty_value=empty_value, ties=ties
    )
    return mean_over_queries(values)
