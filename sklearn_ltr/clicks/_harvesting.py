r"""Intervention harvesting (Agarwal et al., WSDM 2019; Fang et al., SIGIR 2019).

When the same document of the same query was shown at positions :math:`k` and :math:`k'` in
different result pages, the position-based model gives its click rates
:math:`\mathrm{ctr}_k(q, d) = \theta_k \gamma(q, d)` and
:math:`\mathrm{ctr}_{k'}(q, d) = \theta_{k'} \gamma(q, d)`: their ratio is
:math:`\theta_k / \theta_{k'}` whatever the document's relevance. Over the set
:math:`S_{k,k'}` of documents shown at both positions,

.. math::

    \hat r_{k,k'} = \frac{\sum_{(q,d) \in S_{k,k'}} u_{k,k'}(q,d)\, \mathrm{ctr}_k(q,d)}
                         {\sum_{(q,d) \in S_{k,k'}} u_{k,k'}(q,d)\, \mathrm{ctr}_{k'}(q,d)}
    \quad\text{with}\quad u_{k,k'} = \frac{n_k n_{k'}}{n_k + n_{k'}},

estimates :math:`\theta_k / \theta_{k'}` (:math:`n_k` shows at :math:`k`; :math:`u` weighs a
document by how precisely both of its rates are known). All pairs are then combined, as the
AllPairs estimator of Agarwal et al. does, here by weighted least squares on the log-ratios:

.. math::

    \min_{\log\theta} \sum_{k < k'} w_{k,k'} \left(\log\theta_k - \log\theta_{k'} - \log\hat r_{k,k'}\right)^2,
    \qquad \log\theta_1 = 0,

with :math:`w_{k,k'} = 1 / (1 / C_k + 1 / C_{k'})`, the inverse of the delta-method variance of
:math:`\log\hat r_{k,k'}` from the numbers of clicks :math:`C_k` and :math:`C_{k'}` behind it.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import check_groups
from sklearn_ltr._params import check_int
from sklearn_ltr.clicks._checks import position_counts
from sklearn_ltr.clicks._estimate import (
    PropensityEstimate,
    ReplicateError,
    _as_1d,
    _listing,
    check_confidence,
    check_log,
    percentile_band,
    run_bootstrap,
)

__all__ = ["estimate_propensity_harvesting"]


def _position_table(items, buckets, max_position):
    """``(item, bucket, row ids)`` of each distinct (document, position) and the row's index into it."""
    keys = items.astype(np.int64) * max_position + (buckets - 1)
    cells, cell_of_row = np.unique(keys, return_inverse=True)
    return cells // max_position, cells % max_position + 1, cell_of_row.reshape(-1)


def _pairs(cell_item):
    """Index pairs ``(i, j)``, ``i < j``, of the cells (sorted by item, then position) of one item."""
    first, second = [], []
    for offset in range(1, len(cell_item)):
        same = np.flatnonzero(cell_item[offset:] == cell_item[:-offset])
        if same.size == 0:
            break  # cells are sorted by item: no item holds more than `offset` cells
        first.append(same)
        second.append(same + offset)
    if not first:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(first), np.concatenate(second)


def harvest_ratios(table, weights, max_position):
    """The ratio :math:`\\hat r_{k,k'}` and its weight for each pair of positions ``k < k'`` with clicks on both sides.

    Returns ``(low, high, log_ratio, weight, n_documents)``: arrays over the usable pairs, and the
    number of documents shown at both positions of every pair (a ``max_position`` square).
    """
    cell_item, cell_bucket, cell_of_row, first, second = table
    shows = np.bincount(cell_of_row, weights[0], minlength=len(cell_item))
    clicked = np.bincount(cell_of_row, weights[1], minlength=len(cell_item))
    i, j = first, second
    keep = (shows[i] > 0) & (shows[j] > 0)
    i, j = i[keep], j[keep]
    low, high = cell_bucket[i] - 1, cell_bucket[j] - 1  # cells of an item are sorted by position: low < high
    u = shows[i] * shows[j] / (shows[i] + shows[j])
    pair = low * max_position + high
    size = max_position * max_position
    n_documents = np.bincount(pair, minlength=size).reshape(max_position, max_position)
    rate_low = np.bincount(pair, u * clicked[i] / shows[i], minlength=size)
    rate_high = np.bincount(pair, u * clicked[j] / shows[j], minlength=size)
    clicks_low = np.bincount(pair, clicked[i], minlength=size)
    clicks_high = np.bincount(pair, clicked[j], minlength=size)
    usable = np.flatnonzero((rate_low > 0) & (rate_high > 0))
    log_ratio = np.log(rate_high[usable] / rate_low[usable])  # log(theta_high / theta_low)
    weight = 1.0 / (1.0 / clicks_low[usable] + 1.0 / clicks_high[usable])
    return usable // max_position, usable % max_position, log_ratio, weight, n_documents


def solve_log_propensity(low, high, log_ratio, weight, max_position):
    """Weighted least squares for :math:`\\log\\theta_k - \\log\\theta_1` from the pairwise log-ratios.

    Raises ``ReplicateError`` naming the positions that no chain of usable pairs links to position 1.
    """
    linked = np.zeros(max_position, dtype=bool)
    linked[0] = True
    changed = True
    while changed:  # at most max_position sweeps over the pairs
        before = linked.sum()
        reach = linked[low] | linked[high]
        linked[low[reach]] = linked[high[reach]] = True
        changed = linked.sum() > before
    if not linked.all():
        missing = np.flatnonzero(~linked) + 1
        raise ReplicateError(f"positions {_listing(missing)} are linked to position 1 by no document shown (and "
                             f"clicked) at both")
    design = np.zeros((len(low), max_position))
    rows = np.arange(len(low))
    design[rows, high] = 1.0
    design[rows, low] -= 1.0
    root = np.sqrt(weight)
    solution = np.linalg.lstsq(design[:, 1:] * root[:, None], log_ratio * root, rcond=None)[0]
    return np.r_[0.0, solution]


#: Which pairs of positions the estimate combines: every pair, the pairs (1, k), or the pairs (k, k + 1).
PAIRS = ("all", "pivot_one", "adjacent")


def select_pairs(low, high, log_ratio, weight, pairs):
    """The ratios of the pairs that ``pairs`` names (0-based positions ``low < high``)."""
    keep = {"all": np.ones(low.shape, dtype=bool), "pivot_one": low == 0, "adjacent": high == low + 1}[pairs]
    return low[keep], high[keep], log_ratio[keep], weight[keep]


def estimate_propensity_harvesting(clicks, positions, groups, documents, *, max_position=20, sample_weight=None,
                                   n_bootstrap=200, confidence=0.95, random_state=None, pairs="all"):
    r"""Examination propensity per position from documents shown at several positions (intervention harvesting).

    The same document of the same query, shown at positions :math:`k` and :math:`k'` in different
    result pages (by different rankers, or by a ranker whose order varies), is a natural swap
    experiment: under the position-based model its click rates at the two positions stand in the
    ratio :math:`\theta_k / \theta_{k'}`, whatever its relevance (Agarwal et al., 2019). The
    ratios of every pair of positions, pooled over the documents shown at both, are combined by a
    weighted least squares on their logarithms (the module docstring of
    ``sklearn_ltr.clicks._harvesting`` gives the formulas), with :math:`\theta_1 = 1`. No features
    and no relevance model are needed; the estimate is unbiased as long as which position a
    document gets does not depend on anything that changes its click rate but its position.

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 if the row's document was clicked, else 0; one row per document per result page.
    positions : array-like of int of shape (n_samples,)
        1-based display position of each row.
    groups : array-like of shape (n_samples,)
        Query id of each row (not the result page: the pages of a query share it). The bootstrap
        resamples queries.
    documents : array-like of shape (n_samples,)
        Document id of each row, within its query (e.g. its row in the query's candidate list):
        the same (query, document) in two pages is the same document.
    max_position : int, default=20
        Last position estimated on its own: every position at or beyond it shares one value.
        Each of ``1 .. max_position`` must be linked to position 1 by documents shown and clicked
        at both ends of a chain of pairs.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights (e.g. ``1 / keep`` for non-clicked rows kept with probability ``keep``).
    n_bootstrap : int, default=200
        Bootstrap replicates (over queries) for the band; 0 skips the band.
    confidence : float, default=0.95
        Level of the percentile band.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the bootstrap.
    pairs : {"all", "pivot_one", "adjacent"}, default="all"
        The pairs of positions whose ratios are combined: every pair (AllPairs, Agarwal et al.,
        2019); only ``(1, k)``, so that :math:`\theta_k / \theta_1 = \hat r_{1,k}` (pivot-one,
        the harvested counterpart of swap-k); or only ``(k, k + 1)``, chained into
        :math:`\theta_k / \theta_1 = \prod_{j < k} \hat r_{j,j+1}` (adjacent chain, Agarwal et al.,
        2019; Fang et al., 2019). "all" uses the most data.

    Returns
    -------
    estimate : PropensityEstimate
        ``method="intervention_harvesting"``; ``details["n_documents"]`` counts, for each pair of
        positions ``(k, k')`` (``k < k'``, a ``max_position`` square), the documents shown at both.

    Raises
    ------
    ValueError
        Inputs of different lengths, clicks other than 0/1, positions not whole numbers >= 1, NaN,
        a position in ``1 .. max_position`` without clicks, a log where no document was shown at
        two positions, or positions that no chain of such documents links to position 1.

    See Also
    --------
    estimate_propensity_em : Regression EM on the features, for logs without such documents.
    estimate_propensity_document_em : The position-based model's likelihood on the same documents.
    estimate_propensity_swap : The same ratios from randomised swap interventions.

    References
    ----------
    A. Agarwal, I. Zaitsev, X. Wang, C. Li, M. Najork and T. Joachims. "Estimating Position Bias
    without Intrusive Interventions." WSDM 2019.

    Z. Fang, A. Agarwal and T. Joachims. "Intervention Harvesting for Context-Dependent
    Examination-Bias Estimation." SIGIR 2019.

    Examples
    --------
    One document of one query, shown four times at position 1 (two clicks) and four times at
    position 2 (one click): position 2 is examined half as often.

    >>> from sklearn_ltr.clicks import estimate_propensity_harvesting
    >>> clicks = [1, 1, 0, 0, 1, 0, 0, 0]
    >>> positions = [1, 1, 1, 1, 2, 2, 2, 2]
    >>> estimate = estimate_propensity_harvesting(clicks, positions, [7] * 8, [0] * 8, max_position=2,
    ...                                           n_bootstrap=0)
    >>> estimate.propensity
    array([1. , 0.5])
    >>> estimate.propensity_of([2, 2, 1])
    array([0.5, 0.5, 1. ])
    """
    clicks, buckets, codes, n_queries, weights = check_log(clicks, positions, groups, max_position=max_position,
                                                           sample_weight=sample_weight)
    documents = check_groups(_as_1d(documents, "documents", clicks.shape[0]), clicks.shape[0], name="documents",
                             against="clicks")
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", 0)
    confidence = check_confidence(confidence)
    if pairs not in PAIRS:
        raise ValueError(f"pairs must be one of {', '.join(map(repr, PAIRS))}; got {pairs!r}.")
    max_position = int(max_position)
    doc_codes = np.unique(documents, return_inverse=True)[1].reshape(-1)
    items = np.unique(codes.astype(np.int64) * (doc_codes.max() + 1) + doc_codes, return_inverse=True)[1].reshape(-1)
    cell_item, cell_bucket, cell_of_row = _position_table(items, buckets, max_position)
    first, second = _pairs(cell_item)
    if first.size == 0:
        raise ValueError("no document was shown at two different positions of 1..max_position (the same value of "
                         "documents within the same query in groups): intervention harvesting has nothing to "
                         "compare. Check that groups holds query ids (not result-page ids), or estimate from the "
                         "features with estimate_propensity_em.")
    table = (cell_item, cell_bucket, cell_of_row, first, second)

    def fit(row_weights):
        low, high, log_ratio, weight, n_documents = harvest_ratios(table, (row_weights, row_weights * clicks),
                                                                   max_position)
        chosen = select_pairs(low, high, log_ratio, weight, pairs)
        return np.exp(solve_log_propensity(*chosen, max_position)), n_documents

    try:
        propensity, n_documents = fit(weights)
    except ReplicateError as error:
        raise ValueError(f"{error}: their propensity cannot be harvested. Lower max_position, collect result pages "
                         f"that show the same documents at those positions, or use estimate_propensity_em.") from None
    rng = np.random.default_rng(random_state)
    replicates = run_bootstrap(lambda w: fit(w)[0], codes, n_queries, weights, n_bootstrap=n_bootstrap, rng=rng,
                               max_position=max_position)
    lower, upper, failed = percentile_band(replicates, confidence) if n_bootstrap else (None, None, 0)
    n_shown, n_clicks = position_counts(buckets, clicks, weights, max_position=max_position)
    return PropensityEstimate(
        method="intervention_harvesting", positions=np.arange(1, max_position + 1), propensity=propensity,
        lower=lower, upper=upper, confidence=confidence,
        n_shown=n_shown, n_clicks=n_clicks,
        n_iter=1, converged=True, bootstrap=replicates, n_bootstrap_failed=failed,
        details={"n_documents": n_documents},
    )
