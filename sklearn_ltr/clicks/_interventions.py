r"""Propensities from randomised swap interventions (RandPair, swap-k; Joachims et al., WSDM 2017).

A swap intervention takes two results of a page, at positions :math:`k` and :math:`k'`, and
shows them in one order or the other at random. Whatever their relevance, each of the two
documents lands at :math:`k` with probability 1/2, so under the position-based model the
expected clicks at the two positions of an intervention are
:math:`\theta_k \bar\gamma` and :math:`\theta_{k'} \bar\gamma` with the same
:math:`\bar\gamma = (\gamma_a + \gamma_b) / 2`. Summed over the interventions on the pair
:math:`(k, k')`,

.. math::

    \hat r_{k,k'} = \frac{C_{k'}(k, k')}{C_k(k, k')} \approx \frac{\theta_{k'}}{\theta_k},

where :math:`C_j(k, k')` counts the clicks at position :math:`j` in those interventions. Swap-k
(every intervention swaps position 1 with a random :math:`k`, Joachims et al., 2017) gives
:math:`\theta_k / \theta_1` directly; RandPair (random pairs, Wang et al., 2016) and
interventions on adjacent positions are combined, as intervention harvesting combines its
pairs, by weighted least squares on the log-ratios with weights
:math:`1 / (1 / C_k + 1 / C_{k'})` (:func:`~sklearn_ltr.clicks._harvesting.solve_log_propensity`).
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
    check_confidence,
    check_log,
    percentile_band,
    run_bootstrap,
)
from sklearn_ltr.clicks._harvesting import solve_log_propensity

__all__ = ["estimate_propensity_swap"]


def _intervention_table(pairs, buckets):
    """``(row_low, row_high)``: for each intervention, its row at the higher (smaller) and the lower position."""
    if pairs.dtype.kind in "iu":
        used = np.flatnonzero(pairs >= 0)
    else:
        used = np.arange(pairs.shape[0])
    ids, codes, counts = np.unique(pairs[used], return_inverse=True, return_counts=True)
    if used.size == 0:
        raise ValueError("pairs marks no intervention (every id is negative); give the two rows of each swap "
                         "intervention one shared id >= 0.")
    if (counts != 2).any():
        bad = ids[np.flatnonzero(counts != 2)[0]].item()
        raise ValueError(f"pairs: intervention {bad!r} has {counts[counts != 2][0]} rows; each swap intervention "
                         f"is two rows (the two swapped results of one page) sharing an id, and rows outside any "
                         f"intervention take the id -1.")
    order = used[np.argsort(codes.reshape(-1), kind="stable")]
    first, second = order[0::2], order[1::2]
    swap = buckets[first] > buckets[second]
    low, high = np.where(swap, second, first), np.where(swap, first, second)
    if (buckets[low] == buckets[high]).any():
        bad = pairs[low[np.flatnonzero(buckets[low] == buckets[high])[0]]].item()
        raise ValueError(f"pairs: the two rows of intervention {bad!r} are at the same position (bucket); a swap "
                         f"intervention shows its two results at two different positions.")
    return low, high


def swap_ratios(low_rows, high_rows, buckets, clicked, max_position):
    """``(low, high, log_ratio, weight)`` of each pair of positions with clicks at both ends (0-based positions)."""
    pair = (buckets[low_rows] - 1) * max_position + (buckets[high_rows] - 1)
    size = max_position * max_position
    clicks_low = np.bincount(pair, clicked[low_rows], minlength=size)
    clicks_high = np.bincount(pair, clicked[high_rows], minlength=size)
    usable = np.flatnonzero((clicks_low > 0) & (clicks_high > 0))
    log_ratio = np.log(clicks_high[usable] / clicks_low[usable])
    weight = 1.0 / (1.0 / clicks_low[usable] + 1.0 / clicks_high[usable])
    return usable // max_position, usable % max_position, log_ratio, weight


def estimate_propensity_swap(clicks, positions, groups, pairs, *, max_position=20, sample_weight=None,
                             n_bootstrap=200, confidence=0.95, random_state=None):
    r"""Examination propensity per position from randomised swap interventions (RandPair, swap-k).

    Each intervention shows two results of a page at positions :math:`k < k'` in an order drawn
    at random; over the interventions on :math:`(k, k')`, the clicks at :math:`k'` over the clicks
    at :math:`k` estimate :math:`\theta_{k'} / \theta_k` whatever the documents' relevance
    (Joachims et al., 2017). The ratios of all pairs are combined by weighted least squares on
    their logarithms with :math:`\theta_1 = 1` (the module docstring of
    ``sklearn_ltr.clicks._interventions`` gives the formulas). Swap-k interventions (position 1
    with a random :math:`k`) give :math:`\theta_k / \theta_1` directly; RandPair's random pairs
    and adjacent pairs are chained.

    The estimate is unbiased only when the order of the two results was random (a coin per
    intervention, independent of the documents): that is what the interventions pay for.

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 if the row's document was clicked, else 0.
    positions : array-like of int of shape (n_samples,)
        1-based display position of each row.
    groups : array-like of shape (n_samples,)
        Query id of each row; the bootstrap resamples queries.
    pairs : array-like of shape (n_samples,)
        Intervention id of each row: the two swapped rows of an intervention share an id (any
        integers or strings); integer ids below 0 (e.g. -1) mark rows outside any intervention,
        which are not used.
    max_position : int, default=20
        Last position estimated on its own: every position at or beyond it shares one value.
        Each of ``1 .. max_position`` must be tied to position 1 by interventions with clicks at
        both positions.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights (weighted clicks).
    n_bootstrap : int, default=200
        Bootstrap replicates (over queries) for the band; 0 skips it.
    confidence : float, default=0.95
        Level of the percentile band.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the bootstrap.

    Returns
    -------
    estimate : PropensityEstimate
        ``method="swap_interventions"``; ``details["n_interventions"]`` counts the interventions
        on each pair of positions ``(k, k')`` (a ``max_position`` square, ``k < k'``).

    Raises
    ------
    ValueError
        Inputs of different lengths, clicks other than 0/1, positions not whole numbers >= 1,
        an intervention id on other than two rows or on two rows at one position, or positions
        that no chain of interventions with clicks ties to position 1.

    See Also
    --------
    estimate_propensity_harvesting : The same ratios from the log's own variation, without interventions.

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback." WSDM 2017.

    X. Wang, M. Bendersky, D. Metzler and M. Najork. "Learning to Rank with Selection Bias in
    Personal Search." SIGIR 2016.

    Examples
    --------
    Swap-k with k = 2 and 3: four interventions on (1, 2), with 4 clicks at position 1 and 2 at
    position 2, and three on (1, 3), with 3 clicks at 1 and 1 at 3:

    >>> from sklearn_ltr.clicks import estimate_propensity_swap
    >>> clicks = [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0]
    >>> positions = [1, 2, 1, 2, 1, 2, 1, 2, 1, 3, 1, 3, 1, 3]
    >>> pairs = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    >>> estimate = estimate_propensity_swap(clicks, positions, [0] * 14, pairs, max_position=3, n_bootstrap=0)
    >>> estimate.propensity.round(3)
    array([1.   , 0.5  , 0.333])
    """
    clicks, buckets, codes, n_queries, weights = check_log(clicks, positions, groups, max_position=max_position,
                                                           sample_weight=sample_weight)
    n = clicks.shape[0]
    pairs = _as_1d(pairs, "pairs", n)
    if pairs.dtype.kind not in "iu":
        pairs = check_groups(pairs, n, name="pairs", against="clicks")
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", 0)
    confidence = check_confidence(confidence)
    max_position = int(max_position)
    low_rows, high_rows = _intervention_table(pairs, buckets)
    pair = (buckets[low_rows] - 1) * max_position + (buckets[high_rows] - 1)
    n_interventions = np.bincount(pair, minlength=max_position ** 2).reshape(max_position, max_position)

    def fit(row_weights):
        # An intervention counts with its query's bootstrap weight (its two rows share it).
        return np.exp(solve_log_propensity(*swap_ratios(low_rows, high_rows, buckets, row_weights * clicks,
                                                        max_position), max_position))

    try:
        propensity = fit(weights)
    except ReplicateError as error:
        raise ValueError(f"{error}: no chain of swap interventions with clicks at both positions ties them to "
                         f"position 1. Lower max_position or run interventions on those positions.") from None
    rng = np.random.default_rng(random_state)
    replicates = run_bootstrap(fit, codes, n_queries, weights, n_bootstrap=n_bootstrap, rng=rng,
                               max_position=max_position)
    lower, upper, failed = percentile_band(replicates, confidence) if n_bootstrap else (None, None, 0)
    n_shown, n_clicks = position_counts(buckets, clicks, weights, max_position=max_position)
    return PropensityEstimate(
        method="swap_interventions", positions=np.arange(1, max_position + 1), propensity=propensity,
        lower=lower, upper=upper, confidence=confidence,
        n_shown=n_shown, n_clicks=n_clicks,
        n_iter=1, converged=True, bootstrap=replicates, n_bootstrap_failed=failed,
        details={"n_interventions": n_interventions},
    )
