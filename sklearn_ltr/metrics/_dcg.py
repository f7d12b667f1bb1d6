"""Discounted cumulative gain and its normalised form, over many queries at once.

Gains are never computed as ``2**y - 1`` directly: that overflows float64 for labels of
1024 and above (and a sum of gains sooner), and ``inf / inf`` would turn a query's NDCG
into NaN. Each query's gains are divided by the gain of a reference label ``m`` (the
query's largest label), ``G(y) / G(m)`` in [0, 1], computed without forming either gain
(:mod:`sklearn_ltr.metrics._gains`). NDCG is a ratio, so the factor cancels and every
finite label gives its exact value; DCG multiplies it back, and raises when the result
is beyond float64.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import order_within_groups
from sklearn_ltr._validation import check_relevance, check_scores
from sklearn_ltr.metrics._gains import EXPONENTIAL_LABEL_LIMIT, GAIN_RATIOS, gain_of
from sklearn_ltr.metrics._lists import (
    RankedLists,
    mean_over_queries,
    per_query_max,
    per_query_with_empty,
)
from sklearn_ltr.metrics._params import check_metric_params
from sklearn_ltr.metrics._prepared import PreparedQueries, prepared_queries

__all__ = ["dcg_score", "ndcg_per_query", "ndcg_score"]

# The ideal DCG counts each query's grades when there are few (query, grade) cells (at most
# this many per row, or a small table); otherwise (many grades, non-integer grades) it sorts.
_COUNT_CELLS_PER_ROW = 8
_COUNT_CELLS_MIN = 4096
# Whole-number labels up to this use plain gains 2**y - 1 (exact, and their sums stay finite);
# any other label (non-integer, or larger) uses gains scaled by the query's top gain.
_PLAIN_GAIN_MAX_LABEL = 512


def _discount_table(max_size, k):
    """``1 / log2(rank + 2)`` for 0-based ranks ``0 .. max_size - 1``, 0 past the cut-off ``k``."""
    discount = 1.0 / np.log2(np.arange(max_size) + 2.0)
    if k is not None:
        discount[k:] = 0.0
    return discount


def _row_discounts(lists, k, ties):
    """Discount of each sorted row at its rank; tied rows share the mean of their positions' discounts."""
    discount = _discount_table(lists.sizes.max(), k)[lists.ranks]
    runs = lists.tie_runs() if ties == "average" else None
    if runs is not None:
        # Tied documents share the mean discount of the positions they occupy: the
        # expected DCG over random tie orders (scikit-learn's ``ndcg_score`` rule).
        discount = (np.bincount(runs, weights=discount) / np.bincount(runs))[runs]
    return discount


def _small_integer_grades(lists):
    """Whether every label is a whole number up to ``_PLAIN_GAIN_MAX_LABEL``: plain gains are then exact.

    ``2**y - 1`` of such a label is an exact float64 (below 2**53) or within half an ulp,
    and a sum of ``n`` of them is below ``n * 2**512``, far from float64's largest number.
    """
    labels = lists.labels
    return labels.max() <= _PLAIN_GAIN_MAX_LABEL and np.array_equal(labels, np.round(labels))


def _gains(labels, gain, scale):
    """``G(labels) / G(scale)``, or the plain gains ``G(labels)`` when ``scale`` is None."""
    if scale is None:
        return np.exp2(labels) - 1.0 if gain == "exponential" else labels
    return GAIN_RATIOS[gain](labels, scale)


def _scaled_dcg_per_query(lists, gain, discount, scale, labels=None):
    """``DCG / G(scale)`` of each query, ``scale`` one reference label per query (None: plain DCG).

    ``labels`` (default: the sorted rows' labels) must not exceed their query's ``scale``.
    """
    labels = lists.labels if labels is None else labels
    return lists.per_query_sum(_gains(labels, gain, None if scale is None else scale[lists.codes]) * discount)


def _scaled_ideal_dcg_per_query(lists, gain, k, scale):
    """``IDCG / G(scale)`` of each query, the DCG of its rows sorted by label (None: plain IDCG)."""
    labels = lists.labels
    n_levels = int(labels.max()) + 1
    max_cells = max(_COUNT_CELLS_PER_ROW * labels.shape[0], _COUNT_CELLS_MIN)
    if lists.n_queries * n_levels <= max_cells and np.array_equal(labels, np.round(labels)):
        # Integer grades: the ideal list is each query's grade counts, highest first, so the
        # ideal DCG is sum_g gain(g) * (D[end_g] - D[start_g]) with D the cumulative discount.
        # Only the (query, grade) cells that occur are evaluated: at most one per row.
        counts = np.bincount(
            lists.codes * n_levels + labels.astype(np.intp), minlength=lists.n_queries * n_levels
        ).reshape(lists.n_queries, n_levels)[:, ::-1]
        ends = np.cumsum(counts, axis=1)
        cumulative = np.concatenate(([0.0], np.cumsum(_discount_table(lists.sizes.max(), k))))
        query, column = np.nonzero(counts)
        end = ends[query, column]
        weight = cumulative[end] - cumulative[end - counts[query, column]]
        level = (n_levels - 1 - column).astype(np.float64)
        ratio = _gains(level, gain, None if scale is None else scale[query])
        return np.bincount(query, weights=ratio * weight, minlength=lists.n_queries)
    order = order_within_groups(lists.codes, labels, stable=False)
    ratio = _gains(labels[order], gain, None if scale is None else scale[lists.codes])
    return lists.per_query_sum(ratio * _discount_table(lists.sizes.max(), k)[lists.ranks])


def _dcg_per_query(lists, gain, k, ties):
    """DCG of each query in float64; ``ValueError`` naming ``y_true`` when one is beyond float64."""
    discount = _row_discounts(lists, k, ties)
    if _small_integer_grades(lists):
        return _scaled_dcg_per_query(lists, gain, discount, None)
    # Reference label: the largest label that counts (a non-zero discount), so that the
    # top counted gain is exactly 1 after scaling and the scaled DCG never underflows. The
    # labels that do not count are set to 0: above the reference, their ratio could be inf.
    counted = np.where(discount > 0, lists.labels, 0.0)
    scale = per_query_max(counted, lists)
    scaled = _scaled_dcg_per_query(lists, gain, discount, scale, counted)
    mantissa, exponent = gain_of(scale, gain)
    with np.errstate(over="ignore"):
        dcg = np.ldexp(mantissa * scaled, exponent)
    overflow = ~np.isfinite(dcg)
    if overflow.any():
        first = int(np.flatnonzero(overflow)[0])
        query = lists.ids[first : first + 1].tolist()[0]
        limit = (
            f"the exponential gain 2**y - 1 is finite in float64 only for labels below 1024 (up to "
            f"{EXPONENTIAL_LABEL_LIMIT!r}), and a sum of gains overflows sooner"
            if gain == "exponential"
            else "a sum of linear gains this large overflows"
        )
        raise ValueError(
            f"dcg_score cannot represent the DCG of {int(overflow.sum())} of {lists.n_queries} queries: "
            f"y_true's labels are too large (query {query!r} has label {scale[first]:g}); {limit}. "
            f'Pass gain="linear" or rescale y_true (e.g. to grades 0-4). ndcg_score and err_score '
            f"have no such limit."
        )
    return dcg


def _prepared_ndcg_parts(prepared, gain, k):
    """``(padded_gains, ideal, empty)`` of prepared queries for a gain and cut-off, computed once."""
    lists = prepared._label_lists()
    # The reference label of each query (its largest), when plain gains are not exact.
    scale = prepared._cached(
        "scale", lambda: None if _small_integer_grades(lists) else per_query_max(lists.labels, lists)
    )

    def padded_gains():
        groups = prepared.query_groups
        row_gains = _gains(prepared.y_true, gain, None if scale is None else scale[groups.codes])
        cells, size = prepared._layout()
        padded = np.zeros(groups.n_queries * size)
        padded[cells] = row_gains
        return padded.reshape(groups.n_queries, size)

    def parts():
        ideal = _scaled_ideal_dcg_per_query(lists, gain, k, scale)
        empty = ideal <= 0.0 if scale is None else scale <= 0.0
        return prepared._cached(("gains", gain), padded_gains), ideal, empty

    return prepared._cached(("ndcg", gain, k), parts)


def _prepared_ndcg_values(prepared, y_score, k, gain, ties):
    """``(ratio, empty)`` per query of prepared queries, as from per-row ids; None without a layout.

    The gains and the ideal DCG come from the labels' cache; the scores are ranked within
    each query's row of the ``[n_queries, max_size]`` layout (a segmented sort of short
    lists instead of one sort of all rows), and only the candidates for the top ``k``.
    """
    layout = prepared._layout()
    if layout is None:
        return None
    cells, size = layout
    n_queries = prepared.n_queries
    scores = check_scores(y_score, prepared.n_samples, name="y_score")
    gains, ideal, empty = _prepared_ndcg_parts(prepared, gain, k)
    # Negated scores in each query's row, padding (+inf) last; a query's cells are in
    # input row order, so a stable sort of a row ranks tied scores in input order.
    keys = np.full(n_queries * size, -np.inf)
    keys[cells] = scores
    keys = np.negative(keys, out=keys).reshape(n_queries, size)
    if k is not None and k < size:
        keys, gains = _top_candidates(keys, gains, k)
    width = keys.shape[1]
    order = np.argsort(keys, axis=1)
    sorted_keys = np.take_along_axis(keys, order, axis=1)
    # Tied (finite) scores next to each other: the order among them is the sort's own.
    tied = (sorted_keys[:, 1:] == sorted_keys[:, :-1]) & np.isfinite(sorted_keys[:, 1:])
    table = _discount_table(size, k)[:width]
    discount = np.broadcast_to(table, (n_queries, width))
    if tied.any():
        if ties == "stable":
            order = np.argsort(keys, axis=1, kind="stable")
        else:
            # Tied documents share the mean discount of the positions they occupy.
            starts = np.ones((n_queries, width), dtype=bool)
            starts[:, 1:] = ~tied
            runs = np.cumsum(starts.ravel()) - 1
            mean = np.bincount(runs, weights=discount.ravel()) / np.bincount(runs)
            discount = mean[runs].reshape(n_queries, width)
    # Only positions with a non-zero discount add to the DCG.
    used = int(np.flatnonzero(discount.any(axis=0))[-1]) + 1 if discount.any() else 1
    top = np.take_along_axis(gains, order[:, :used], axis=1)
    # Summed position by position within each query, as the sum over sorted rows does.
    rows = np.repeat(np.arange(n_queries), used)
    dcg = np.bincount(rows, weights=(top * discount[:, :used]).ravel(), minlength=n_queries)
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=~empty)
    return ratio, empty


def _top_candidates(keys, gains, k):
    """The rows that can rank in the top ``k`` of each query: ``(keys, gains)`` of shape ``[n_queries, width]``.

    A row ranks in the top ``k`` only if its key is at most the ``k``-th smallest of its query
    (found by a partition, no sort); every row tied with that one is kept, so that a run of
    tied scores across the cut-off is whole. Rows keep their input order within a query.
    """
    n_queries, size = keys.shape
    kth = np.partition(keys, k - 1, axis=1)[:, k - 1]
    keep = (keys <= kth[:, None]) & (keys < np.inf)
    counts = keep.sum(axis=1)
    width = max(int(counts.max()), k)
    if width * 2 > size:  # many ties at the cut-off: the whole rows
        return keys, gains
    flat = np.flatnonzero(keep)
    # Each kept cell's place in the [n_queries, width] layout, rows in their input order.
    starts = np.cumsum(counts) - counts
    place = np.arange(flat.shape[0]) + np.repeat(np.arange(n_queries) * width - starts, counts)
    top_keys = np.full(n_queries * width, np.inf)
    top_keys[place] = keys.ravel()[flat]
    top_gains = np.zeros(n_queries * width)
    top_gains[place] = gains.ravel()[flat]
    top_keys, top_gains = top_keys.reshape(n_queries, width), top_gains.reshape(n_queries, width)
    return top_keys, top_gains


def _ndcg_values(y_true, y_score, groups, k, gain, ties):
    """``(lists, ndcg, empty)``: NDCG of each query, and which queries have no relevant document.

    ``lists`` has the sorted query ids as ``ids``. With a grouping built once (a
    ``RankingEvaluator`` or ``QueryGroups`` as ``groups``), the evaluator's cached gains and
    ideal DCG give the same values without sorting all rows.
    """
    prepared = prepared_queries(y_true, groups)
    if prepared is None:
        # Per-row ids: the same computation on queries prepared for this one call, so that the
        # values are identical whether or not a grouping is reused.
        y_true = check_relevance(y_true, name="y_true")
        check_scores(y_score, y_true.shape[0], name="y_score")
        prepared = PreparedQueries(y_true, groups)
    if prepared is not None:
        values = _prepared_ndcg_values(prepared, y_score, k, gain, ties)
        if values is not None:
            return prepared.query_groups, *values
        y_true, groups = prepared.y_true, prepared.query_groups
    lists = RankedLists(y_true, y_score, groups, stable=ties == "stable")
    if _small_integer_grades(lists):
        # Grades 0, 1, 2, ...: plain gains are exact and their sums finite.
        scale = None
    else:
        # One reference label per query, its largest: both DCG and IDCG are divided by its
        # gain, which cancels in the ratio, so the value is exact for any finite label.
        scale = per_query_max(lists.labels, lists)
    dcg = _scaled_dcg_per_query(lists, gain, _row_discounts(lists, k, ties), scale)
    ideal = _scaled_ideal_dcg_per_query(lists, gain, k, scale)
    # No relevant document (every label 0): IDCG is 0 and NDCG is 0/0, a convention. (With
    # scaled gains, the test is on the largest label: a positive one has a positive gain.)
    empty = ideal <= 0.0 if scale is None else scale <= 0.0
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=~empty)
    return lists, ratio, empty


def dcg_score(y_true, y_score, groups, *, k=None, gain="exponential", ties="average"):
    r"""Mean discounted cumulative gain over queries.

    .. math::
        \mathrm{DCG@}k = \sum_{r=1}^{\min(k, n)} \frac{G(y_{(r)})}{\log_2(r + 1)},
        \qquad G(y) = 2^y - 1 \text{ (exponential) or } y \text{ (linear)}

    where :math:`y_{(r)}` is the label of the document ranked :math:`r`-th by score.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Finite non-negative relevance grades. With the exponential gain, the DCG
        must be a float64: labels up to about 1023 (``2**1024`` overflows).
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
        Mean DCG over queries, computed without overflow of its intermediate gains.

    Raises
    ------
    ValueError
        When the DCG of a query is beyond float64's largest number (about
        1.8e308), naming ``y_true``: with the exponential gain a label of 1024
        or more counted in the top ``k``, or a sum of gains of labels just below
        it. Use ``gain="linear"``, rescale the labels, or :func:`ndcg_score`
        (a ratio, exact for any finite label).
    InvalidParameterError
        When ``k``, ``gain`` or ``ties`` is not one of the values above (a
        ``ValueError``; its message names the parameter).

    References
    ----------
    K. Järvelin and J. Kekäläinen. "Cumulated gain-based evaluation of IR
    techniques." ACM TOIS 20(4), 2002.

    Examples
    --------
    >>> from sklearn_ltr.metrics import dcg_score
    >>> round(dcg_score([3, 0, 1], [0.9, 0.8, 0.1], [7, 7, 7]), 4)
    7.5

    ``2**1100 - 1`` is not a float64: the DCG raises instead of returning ``inf``.

    >>> dcg_score([1100, 0, 1], [0.9, 0.8, 0.1], [7, 7, 7])
    Traceback (most recent call last):
    ...
    ValueError: dcg_score cannot represent the DCG of 1 of 1 queries: y_true's labels are too large ...
    >>> round(dcg_score([1100, 0, 1], [0.9, 0.8, 0.1], [7, 7, 7], gain="linear"), 1)
    1100.5
    """
    check_metric_params("dcg_score", k=k, gain=gain, ties=ties)
    lists = RankedLists(y_true, y_score, groups, stable=ties == "stable")
    return mean_over_queries(_dcg_per_query(lists, gain, k, ties))


def ndcg_per_query(
    y_true, y_score, groups, *, k=None, gain="exponential", empty_value=1.0, ties="average"
):
    """NDCG of each query; see :func:`ndcg_score` for the definition.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Finite non-negative relevance grades (any size: the NDCG is exact for any
        finite label).
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
    check_metric_params("ndcg_per_query", k=k, gain=gain, empty_value=empty_value, ties=ties)
    lists, ratio, empty = _ndcg_values(y_true, y_score, groups, k, gain, ties)
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
        Finite non-negative relevance grades. Any finite label gives the exact
        NDCG, also beyond 1023 where ``2**y`` overflows float64: each query's
        gains are divided by the gain of its largest label, which cancels in
        the ratio.
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
        Mean NDCG over queries, in [0, 1]. Every query counts, except those
        without a relevant document when ``empty_value=None``.

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

    Labels beyond 1023 (``2**y`` overflows float64) still give the exact value:

    >>> round(ndcg_score([1100, 0, 1], [0.1, 0.3, 0.2], [0, 0, 0]), 4)  # ~ (2**1100 / 2) / 2**1100
    0.5
    """
    check_metric_params("ndcg_score", k=k, gain=gain, empty_value=empty_value, ties=ties)
    _, ratio, empty = _ndcg_values(y_true, y_score, groups, k, gain, ties)
    values = per_query_with_empty(ratio, empty, empty_value)
    return mean_over_queries(values, dropped=empty if empty_value is None else None)
