"""Cascade-model metric: expected reciprocal rank."""

from __future__ import annotations

import numpy as np

from sklearn_ltr._validation import check_k
from sklearn_ltr.metrics._lists import RankedLists, segment_cumsum

__all__ = ["err_score"]


def err_score(y_true, y_score, groups, *, k=None, max_grade=None):
    r"""Mean expected reciprocal rank (ERR@k) over queries.

    Under the cascade model a user scans down the list and stops at rank
    :math:`r` with probability :math:`R_r = (2^{y_{(r)}} - 1) / 2^{g_{\max}}`:

    .. math::
        \mathrm{ERR@}k = \sum_{r=1}^{\min(k, n)} \frac{1}{r} R_r \prod_{i < r} (1 - R_i)

    Ties are ranked in input row order.

    Parameters
    ----------
    y_true, y_score, groups : array-like of shape (n_samples,)
        Relevance grades, scores and query ids, as in :func:`ndcg_score`.
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    max_grade : float, default=None
        :math:`g_{\max}`, the highest grade of the label scale (4 for MSLR,
        2 for LETOR 4.0). ``None`` uses the largest label in ``y_true``; pass the
        scale's maximum to compare numbers across data sets.

    Returns
    -------
    score : float

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
    """
    k = check_k(k)
    lists = RankedLists(y_true, y_score, groups)
    if max_grade is None:
        max_grade = lists.labels.max()
    elif max_grade < lists.labels.max():
        raise ValueError(f"max_grade={max_grade} is below the largest label in y_true ({lists.labels.max():g}).")
    stop = (np.exp2(lists.labels) - 1.0) / np.exp2(max_grade)
    # 1 - R is at least 2**-max_grade > 0, so the log is finite.
    log_continue = np.log1p(-stop)
    reach = np.exp(segment_cumsum(log_continue, lists) - log_continue)
    per_row = reach * stop / (lists.ranks + 1.0) * lists.top_k(k)
    return float(lists.per_query_sum(per_row).mean())
