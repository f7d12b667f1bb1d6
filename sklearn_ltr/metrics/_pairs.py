"""Pairwise metric: document pairs ranked against their labels."""

from __future__ import annotations

import numpy as np

from sklearn_ltr.metrics._lists import RankedLists, segment_cumsum
from sklearn_ltr.metrics._params import check_metric_params

__all__ = ["swapped_pairs"]


def swapped_pairs(y_true, y_score, groups, *, normalize=False):
    r"""Number of document pairs ranked against their labels, summed over queries.

    .. math::
        \mathrm{swapped} = \sum_q \left|\{(i, j) \in q : y_i > y_j,\ s_i < s_j\}\right|

    A pair with tied scores is not counted (it is not *ordered* against its
    labels), nor is a pair with tied labels. This is the count the RankNet
    tutorial tracks during training (Burges, 2010).

    Cost: one sort plus one pass per distinct label value, :math:`O(n \log n + n L)`.

    Parameters
    ----------
    y_true, y_score, groups : array-like of shape (n_samples,)
        Relevance grades, scores and query ids, as in :func:`ndcg_score`.
    normalize : bool, default=False
        Return the fraction of swapped pairs among all pairs with different
        labels (0 when no query has such a pair) instead of the count.

    Returns
    -------
    swapped : int or float

    References
    ----------
    C. J. C. Burges. "From RankNet to LambdaRank to LambdaMART: an overview."
    Microsoft Research Technical Report MSR-TR-2010-82, 2010.

    Examples
    --------
    >>> from sklearn_ltr.metrics import swapped_pairs
    >>> swapped_pairs([2, 1, 0], [0.1, 0.2, 0.3], [0, 0, 0])  # fully reversed
    3
    >>> swapped_pairs([2, 1, 0], [0.3, 0.2, 0.1], [0, 0, 0])
    0
    >>> round(swapped_pairs([2, 1, 0], [0.1, 0.3, 0.2], [0, 0, 0], normalize=True), 4)  # 2 of 3 pairs
    0.6667
    >>> swapped_pairs([1, 0], [0.5, 0.5], [0, 0])  # tied scores are not swapped
    0
    """
    check_metric_params("swapped_pairs", normalize=normalize)
    lists = RankedLists(y_true, y_score, groups, stable=False)
    levels, level_of_row = np.unique(lists.labels, return_inverse=True)
    runs = lists.tie_runs()
    # Index of the first row of each row's tie run (the row itself when no score is tied).
    run_start = np.arange(lists.codes.shape[0]) if runs is None else np.flatnonzero(np.diff(runs, prepend=-1))[runs]
    # Row x (sorted by score, descending) is the better-labelled half of a swapped
    # pair with every row of its query that scores strictly higher (an earlier tie
    # run) and has a lower label.
    swapped = 0
    for level in range(len(levels) - 1):
        is_level = (level_of_row == level).astype(np.int64)
        before = segment_cumsum(is_level, lists) - is_level
        swapped += int(before[run_start][level_of_row > level].sum())
    if not normalize:
        return swapped
    counts = np.bincount(
        lists.codes * len(levels) + level_of_row, minlength=lists.n_queries * len(levels)
    ).reshape(lists.n_queries, len(levels))
    unequal_pairs = int(((lists.sizes**2 - (counts**2).sum(axis=1)) // 2).sum())
    return swapped / unequal_pairs if unequal_pairs else 0.0
