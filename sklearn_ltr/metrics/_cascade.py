"""Cascade-model metric: expected reciprocal rank."""

from __future__ import annotations

import numpy as np

from sklearn_ltr.metrics._gains import cascade_probabilities
from sklearn_ltr.metrics._lists import RankedLists, mean_over_queries, segment_cumprod
from sklearn_ltr.metrics._params import check_metric_params

__all__ = ["err_score"]


def err_score(y_true, y_score, groups, *, k=None, max_grade=None):
    r"""Mean expected reciprocal rank (ERR@k) over queries.

    Under the cascade model a user scans down the list and stops at rank
    :math:`r` with probability :math:`R_r = (2^{y_{(r)}} - 1) / 2^{g_{\max}}`:

    .. math::
        \mathrm{ERR@}k = \sum_{r=1}^{\min(k, n)} \frac{1}{r} R_r \prod_{i < r} (1 - R_i)

    Ties are ranked in input row order. :math:`R_r` is computed as
    :math:`2^{y - g_{\max}} (1 - 2^{-y})` and :math:`1 - R_r` as
    :math:`1 - 2^{y - g_{\max}} + 2^{-g_{\max}}`, never forming :math:`2^y`, so
    any finite label gives the exact value (``2**y`` overflows float64 from
    1024 on), and no probability rounds to NaN.

    Parameters
    ----------
    y_true, y_score, groups : array-like of shape (n_samples,)
        Relevance grades, scores and query ids, as in :func:`ndcg_score`.
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    max_grade : float, default=None
        :math:`g_{\max}`, the highest grade of the label scale (4 for MSLR,
        2 for LETOR 4.0), finite and at least the largest label. ``None`` uses
        the largest label in ``y_true``; pass the scale's maximum to compare
        numbers across data sets.

    Returns
    -------
    score : float
        Mean ERR over queries, in [0, 1]; a query without a relevant document scores 0.

    References
    ----------
    O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan. "Expected reciprocal rank
    for graded relevance." CIKM 2009.

    Examples
    --------
    >>> from sklearn_ltr.metrics import err_score
    >>> err_score([2, 1], [1.0, 0.0], [0, 0], max_grade=2)  # 3/4 + (1/2)(1/4)(1/4)
    0.78125
    >>> err_score([2, 1], [0.0, 1.0], [0, 0], max_grade=2)  # 1/4 + (1/2)(3/4)(3/4)
    0.53125
    >>> err_score([1100, 0], [1.0, 0.0], [0, 0])  # R = 1 - 2**-1100
    1.0
    """
    check_metric_params("err_score", k=k, max_grade=max_grade)
    return mean_over_queries(_err_per_query(y_true, y_score, groups, k=k, max_grade=max_grade))


def _err_per_query(y_true, y_score, groups, *, k=None, max_grade=None):
    """ERR@k of each query, in sorted query-id order (the public metric averages them)."""
    lists = RankedLists(y_true, y_score, groups)
    top = lists.labels.max()
    if max_grade is None:
        max_grade = top
    elif max_grade < top:
        raise ValueError(f"max_grade={max_grade} is below the largest label in y_true ({top:g}).")
    # R and 1 - R without 2**y or 2**g (which overflow from 1024 on); the product of the
    # 1 - R above a row is a running product within its query: no logarithms, nothing
    # divided out, so no NaN (the old log-space form gave -inf - -inf once R rounded to 1).
    stop, keep_going = cascade_probabilities(lists.labels, float(max_grade))
    through = segment_cumprod(keep_going, lists, limit=k)
    reach = np.ones_like(through)
    reach[1:] = through[:-1]
    reach[lists.offsets[:-1]] = 1.0
    return lists.per_query_sum(reach * stop / (lists.ranks + 1.0) * lists.top_k(k))
