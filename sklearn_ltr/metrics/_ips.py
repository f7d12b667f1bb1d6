r"""Counterfactual ranking metrics from click logs: inverse-propensity-scored DCG and NDCG.

A click log has no relevance labels: only which shown documents were clicked and, for each, the
probability :math:`p_i` that its position was examined. Weighting each click by
:math:`w_i = 1 / p_i` (clipped: ``sklearn_ltr.clicks.inverse_propensity_weights``, the
weights training uses too) turns the clicks into an unbiased estimate of the relevance of the
logged documents, so any metric that is linear in binary relevance, DCG first, can be estimated
for a *new* ranking of the same rows (Joachims, Swaminathan and Schnabel, 2017; Agarwal et al.,
2019).

Both metrics are DCG with a linear gain on the weighted clicks :math:`c_i w_i`, so they reuse
:mod:`sklearn_ltr.metrics._dcg` (one sort by ``(query, -score)``, the same tie rule).

Under trust bias users also click non-relevant documents, more so at the top (Agarwal, Wang, Li,
Bendersky and Najork, 2019): :math:`P(c_i = 1) = \alpha_i \gamma_i + \beta_i`, and no
propensity makes :math:`c_i / p_i` unbiased. Every function here then takes ``propensity`` as an
``(n_samples, 2)`` array of per-row :math:`(\alpha_i, \beta_i)`, and the gain of a row becomes its
affine estimate :math:`(c_i - \beta_i) / \max(\alpha_i, \tau)` (Vardasbi, Oosterhuis and de Rijke,
2020), negative for a non-click.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._validation import check_scores
from sklearn_ltr.clicks import PROPENSITY_CLIP, affine_click_weights, check_clicks, inverse_propensity_weights
from sklearn_ltr.metrics._dcg import _row_discounts, _scaled_dcg_per_query, _scaled_ideal_dcg_per_query
from sklearn_ltr.metrics._lists import RankedLists, mean_over_queries, per_query_with_empty
from sklearn_ltr.metrics._params import check_metric_params

__all__ = ["ips_dcg_per_query", "ips_dcg_score", "ips_ndcg_per_query", "ips_ndcg_score"]


def _checked_log(clicks, y_score, groups, propensity):
    """``(clicks, y_score)`` checked, with the lengths of ``groups`` and ``propensity`` against them."""
    clicks = check_clicks(clicks)
    n_samples = clicks.shape[0]
    y_score = check_scores(y_score, None, name="y_score")
    if y_score.shape[0] != n_samples:
        raise ValueError(f"y_score has {y_score.shape[0]} entries but clicks has {n_samples}; pass one score per "
                         f"logged row.")
    n_groups = np.shape(groups)[0] if np.ndim(groups) else None
    if n_groups is not None and n_groups != n_samples:
        raise ValueError(f"groups has {n_groups} entries but clicks has {n_samples}; pass one query id per logged "
                         f"row.")
    n_propensity = np.shape(propensity)[0] if np.ndim(propensity) else None
    if n_propensity is not None and n_propensity != n_samples:
        raise ValueError(f"propensity has {n_propensity} values but clicks has {n_samples}; pass the examination "
                         f"propensity of each logged row.")
    return clicks, y_score


def _weighted_click_lists(clicks, y_score, groups, propensity, clip, ties):
    """:class:`RankedLists` whose labels are the clipped inverse-propensity-weighted clicks ``c_i * w_i``."""
    clicks, y_score = _checked_log(clicks, y_score, groups, propensity)
    weights = inverse_propensity_weights(propensity, clip=clip, n_samples=clicks.shape[0])
    return RankedLists(clicks * weights, y_score, groups, stable=ties == "stable")


def _linear_dcg(labels, y_score, groups, k, ties):
    """``(lists, DCG@k)`` per query of non-negative ``labels`` with the linear gain, ranked by ``y_score``."""
    lists = RankedLists(labels, y_score, groups, stable=ties == "stable")
    return lists, _scaled_dcg_per_query(lists, "linear", _row_discounts(lists, k, ties), None)


def _affine_values(clicks, y_score, groups, propensity, k, clip, ties):
    """``(lists, dcg, ideal)`` of the affine estimates ``c_i w_i - b_i`` (trust bias), by linearity of DCG.

    The estimates are negative for non-clicks; DCG is linear in the gains for a fixed ranking (tied
    scores' discounts do not depend on the labels), so it is the DCG of the non-negative ``c_i w_i``
    minus that of the offsets ``b_i``, both ranked by ``y_score``; the ideal one ranks by the estimates.
    """
    clicks, y_score = _checked_log(clicks, y_score, groups, propensity)
    weights = affine_click_weights(propensity, clip=clip, n_samples=clicks.shape[0])
    gains, offsets = clicks * weights[:, 0], weights[:, 1]
    lists, dcg = _linear_dcg(gains, y_score, groups, k, ties)
    dcg = dcg - _linear_dcg(offsets, y_score, groups, k, ties)[1]
    estimate = gains - offsets
    ideal = _linear_dcg(gains, estimate, groups, k, "stable")[1] - _linear_dcg(offsets, estimate, groups, k,
                                                                               "stable")[1]
    return lists, dcg, ideal


def _ips_values(clicks, y_score, groups, propensity, k, clip, ties):
    """``(lists, ips_dcg, ideal)`` per query: the estimate and the DCG of its weighted clicks sorted by weight."""
    if np.ndim(propensity) == 2:
        return _affine_values(clicks, y_score, groups, propensity, k, clip, ties)
    lists = _weighted_click_lists(clicks, y_score, groups, propensity, clip, ties)
    # Linear gain on the weighted clicks: each clicked row adds w_i / log2(1 + r_i).
    dcg = _scaled_dcg_per_query(lists, "linear", _row_discounts(lists, k, ties), None)
    ideal = _scaled_ideal_dcg_per_query(lists, "linear", k, None)
    return lists, dcg, ideal


def ips_dcg_per_query(clicks, y_score, groups, propensity, *, k=None, clip=PROPENSITY_CLIP, ties="average"):
    r"""Inverse-propensity-scored DCG of each query: an unbiased estimate of its DCG from clicks.

    .. math::
        \widehat{\mathrm{DCG}}@k(q) = \sum_{i \in q:\ c_i = 1,\ r_i \le k}
        \frac{w_i}{\log_2(1 + r_i)}, \qquad w_i = \frac{1}{\max(p_i, \tau)}

    where :math:`c_i` is the click of logged row :math:`i`, :math:`p_i` the probability that
    its logged position was examined, :math:`\tau` the clip, and :math:`r_i` the rank of row
    :math:`i` among its query's logged rows when sorted by ``y_score`` (the new ranking, not the
    logged one).

    When clicks follow the examination hypothesis (:math:`P(c_i = 1) = p_i \rho_i`, with
    :math:`\rho_i` the probability of a click once examined) and every :math:`p_i \ge \tau`,
    the expectation over click logs is exactly the DCG of the ranking with the binary gain
    :math:`\rho_i`: the estimate is **unbiased**. Where a true propensity is below the clip,
    it underestimates (the price of a bounded variance).

    **Trust bias.** With ``propensity`` of shape (n_samples, 2), each row's
    :math:`(\alpha_i, \beta_i)`, every logged row counts with its affine estimate of relevance
    (Vardasbi, Oosterhuis and de Rijke, 2020):

    .. math::
        \widehat{\mathrm{DCG}}@k(q) = \sum_{i \in q:\ r_i \le k}
        \frac{(c_i - \beta_i) / \max(\alpha_i, \tau)}{\log_2(1 + r_i)}

    (non-clicks subtract :math:`\beta_i / \alpha_i`). When :math:`P(c_i = 1) = \alpha_i \gamma_i +
    \beta_i` and every :math:`\alpha_i \ge \tau`, its expectation is exactly the DCG@k of the
    ranking with the gain :math:`\gamma_i = P(R_i = 1)`. ``(p_i, 0)`` is the IPS estimate above.

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 where the logged row was clicked, 0 where it was shown and not clicked.
    y_score : array-like of shape (n_samples,)
        Finite scores of the ranking to evaluate; a higher score ranks higher.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, queries may interleave).
    propensity : array-like of shape (n_samples,) or (n_samples, 2)
        Examination probability :math:`p_i \in (0, 1]` of each row at its logged position
        (the propensity, not its inverse); or, under trust bias, each row's affine click
        parameters :math:`(\alpha_i, \beta_i)` (see :func:`sklearn_ltr.clicks.check_affine`).
    k : int, default=None
        Cut-off: only clicked rows ranked in the top ``k`` by ``y_score`` count. ``None``: all.
    clip : float, default=PROPENSITY_CLIP
        :math:`\tau`, the smallest propensity kept (weights at most :math:`1 / \tau`); the same
        default as training's weights, ``sklearn_ltr.clicks.PROPENSITY_CLIP`` (0.05).
    ties : {"average", "stable"}, default="average"
        How tied scores are ranked, as in :func:`ndcg_score`: ``"average"`` gives tied rows the
        mean discount of their positions, ``"stable"`` ranks them in input row order.

    Returns
    -------
    query_ids : ndarray of shape (n_queries,)
        Sorted unique query ids.
    scores : ndarray of shape (n_queries,)
        The estimate of each query, in ``query_ids`` order; 0 for a query without a click.

    Raises
    ------
    ValueError
        When ``clicks`` holds anything but 0 and 1, ``y_score`` is not finite, the inputs'
        lengths differ, or a propensity is outside (0, 1] (each message names the argument).

    See Also
    --------
    ips_ndcg_per_query : The self-normalised estimate, per query.
    ips_dcg_score : The mean over queries.

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback." WSDM 2017.

    A. Agarwal, K. Takatsu, I. Zaitsev and T. Joachims. "A General Framework for
    Counterfactual Learning-to-Rank." SIGIR 2019.

    A. Agarwal, X. Wang, C. Li, M. Bendersky and M. Najork. "Addressing Trust Bias for
    Unbiased Learning-to-Rank." WWW 2019.

    A. Vardasbi, H. Oosterhuis and M. de Rijke. "When Inverse Propensity Scoring does not Work:
    Affine Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    Query ``"a"``: the clicked row (examined with probability 0.5, weight 2) is ranked second by
    the new scores; query ``"b"`` has no click.

    >>> from sklearn_ltr.metrics import ips_dcg_per_query
    >>> ids, values = ips_dcg_per_query(
    ...     clicks=[0, 1, 0, 0], y_score=[0.9, 0.4, 0.1, 0.3], groups=["a", "a", "b", "b"],
    ...     propensity=[1.0, 0.5, 1.0, 0.5])
    >>> ids.tolist(), values.round(4).tolist()  # 2 / log2(3)
    (['a', 'b'], [1.2619, 0.0])

    Under trust bias, :math:`(\alpha, \beta) = (0.5, 0.25)` for every row: the click counts
    :math:`1.5`, each non-click :math:`-0.5`:

    >>> import numpy as np
    >>> ids, values = ips_dcg_per_query(
    ...     clicks=[0, 1, 0, 0], y_score=[0.9, 0.4, 0.1, 0.3], groups=["a", "a", "b", "b"],
    ...     propensity=np.tile([0.5, 0.25], (4, 1)))
    >>> values.round(4).tolist()  # -0.5 + 1.5 / log2(3), -0.5 - 0.5 / log2(3)
    [0.4464, -0.8155]
    """
    check_metric_params("ips_dcg_per_query", k=k, clip=clip, ties=ties)
    lists, dcg, _ = _ips_values(clicks, y_score, groups, propensity, k, clip, ties)
    return lists.ids, dcg


def ips_dcg_score(clicks, y_score, groups, propensity, *, k=None, clip=PROPENSITY_CLIP, ties="average"):
    r"""Mean inverse-propensity-scored DCG over queries: an unbiased estimate of the mean DCG.

    The mean of :func:`ips_dcg_per_query` over every query, those without a click included (their
    estimate is 0): with correct propensities, the expected value over click logs is the mean DCG@k
    of the ranking with the binary gain "clicked if examined".

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 where the logged row was clicked, 0 otherwise.
    y_score : array-like of shape (n_samples,)
        Finite scores of the ranking to evaluate.
    groups : array-like of shape (n_samples,)
        Query id of each row.
    propensity : array-like of shape (n_samples,) or (n_samples, 2)
        Examination probability of each row at its logged position, in (0, 1]; or each row's
        affine click parameters :math:`(\alpha_i, \beta_i)` of trust bias (see
        :func:`ips_dcg_per_query`).
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    clip : float, default=PROPENSITY_CLIP
        Smallest propensity kept (0.05: weights at most 20).
    ties : {"average", "stable"}, default="average"
        How tied scores are ranked (see :func:`ndcg_score`).

    Returns
    -------
    score : float

    See Also
    --------
    ips_dcg_per_query : The definition, and the values per query.

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback." WSDM 2017.

    Examples
    --------
    >>> from sklearn_ltr.metrics import ips_dcg_score
    >>> clicks, qid = [0, 1, 0, 1], [1, 1, 2, 2]
    >>> propensity = [1.0, 0.5, 1.0, 0.25]
    >>> round(ips_dcg_score(clicks, [0.2, 0.9, 0.5, 0.6], qid, propensity), 4)  # (2 + 4) / 2
    3.0
    >>> round(ips_dcg_score(clicks, [0.9, 0.2, 0.5, 0.6], qid, propensity, k=1), 4)  # (0 + 4) / 2
    2.0
    """
    check_metric_params("ips_dcg_score", k=k, clip=clip, ties=ties)
    _, dcg, _ = _ips_values(clicks, y_score, groups, propensity, k, clip, ties)
    return mean_over_queries(dcg)


def ips_ndcg_per_query(
    clicks, y_score, groups, propensity, *, k=None, clip=PROPENSITY_CLIP, empty_value=1.0, ties="average"
):
    r"""Self-normalised inverse-propensity-scored NDCG of each query.

    .. math::
        \widehat{\mathrm{NDCG}}@k(q) = \frac{\widehat{\mathrm{DCG}}@k(q)}
        {\sum_{j=1}^{\min(k, n_q)} \frac{v_{(j)}}{\log_2(1 + j)}}

    where :math:`\widehat{\mathrm{DCG}}@k(q)` is :func:`ips_dcg_per_query`'s estimate and
    :math:`v_{(1)} \ge v_{(2)} \ge \dots` are the weighted clicks :math:`v_i = c_i w_i` of the
    query sorted in decreasing order: the estimate of the ideal ranking of the weighted clicks.
    The value is in [0, 1] and equals 1 when the ranking puts the clicked rows first, heaviest
    first.

    With affine ``propensity`` (trust bias, see :func:`ips_dcg_per_query`), :math:`v_i` are the
    affine estimates :math:`(c_i - \beta_i) / \max(\alpha_i, \tau)`, negative for non-clicks: the
    denominator is the largest DCG any ranking gets from them, a query whose estimates give no
    positive ideal DCG counts as ``empty_value``, and the value is at most 1 but may be negative.

    This is a **ratio estimate**: numerator and denominator are each unbiased for a DCG (the ideal
    one only up to the ordering of the weighted clicks), but their ratio is not unbiased for the
    NDCG. It is consistent as clicks accumulate on a query, and usually has a much smaller variance
    than the DCG estimate, since the weights of a query partly cancel. Use :func:`ips_dcg_per_query`
    where unbiasedness matters.

    The weights only count *relative to each other within a query*: in a query with one click the
    weight cancels, and the value is the plain click NDCG, :math:`1 / \log_2(1 + r)` of the clicked
    row, whatever its propensity. On logs with about one click per query the estimate is then close
    to NDCG with the clicks as labels, and favours rankings that reproduce the logged one; for
    model selection on such logs prefer :func:`ips_dcg_score` (or ``empty_value=None`` and a log
    with several clicks per query).

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 where the logged row was clicked, 0 otherwise.
    y_score : array-like of shape (n_samples,)
        Finite scores of the ranking to evaluate.
    groups : array-like of shape (n_samples,)
        Query id of each row.
    propensity : array-like of shape (n_samples,) or (n_samples, 2)
        Examination probability of each row at its logged position, in (0, 1]; or each row's
        affine click parameters :math:`(\alpha_i, \beta_i)` of trust bias (see
        :func:`ips_dcg_per_query`).
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    clip : float, default=PROPENSITY_CLIP
        Smallest propensity kept (0.05: weights at most 20).
    empty_value : float or None, default=1.0
        Value of a query without a click (nothing to estimate), as :func:`ndcg_per_query`'s
        convention for a query without a relevant document; ``None`` gives NaN (left out of
        means). With many click-less queries, ``None`` keeps the estimate on the queries that
        carry information.
    ties : {"average", "stable"}, default="average"
        How tied scores are ranked (see :func:`ndcg_score`).

    Returns
    -------
    query_ids : ndarray of shape (n_queries,)
        Sorted unique query ids.
    scores : ndarray of shape (n_queries,)
        The estimate of each query in ``query_ids`` order; ``empty_value`` (NaN for None) for a
        query without a click.

    Raises
    ------
    ValueError
        As :func:`ips_dcg_per_query`.

    See Also
    --------
    ips_dcg_per_query : The unbiased estimate of DCG.

    References
    ----------
    A. Agarwal, K. Takatsu, I. Zaitsev and T. Joachims. "A General Framework for
    Counterfactual Learning-to-Rank." SIGIR 2019.

    Examples
    --------
    Two clicks, with weights 1 and 4; the new ranking puts the weight-1 click first:

    >>> from sklearn_ltr.metrics import ips_ndcg_per_query
    >>> ids, values = ips_ndcg_per_query(
    ...     clicks=[1, 0, 1, 0, 0], y_score=[0.9, 0.5, 0.4, 0.8, 0.3], groups=[7, 7, 7, 8, 8],
    ...     propensity=[1.0, 0.5, 0.25, 1.0, 1.0])
    >>> ids.tolist(), values.round(4).tolist()  # (1 + 4 / log2(4)) / (4 + 1 / log2(3)), no click: 1
    ([7, 8], [0.6478, 1.0])
    """
    check_metric_params("ips_ndcg_per_query", k=k, clip=clip, empty_value=empty_value, ties=ties)
    lists, dcg, ideal = _ips_values(clicks, y_score, groups, propensity, k, clip, ties)
    empty = ideal <= 0.0
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=~empty)
    return lists.ids, per_query_with_empty(ratio, empty, empty_value)


def ips_ndcg_score(
    clicks, y_score, groups, propensity, *, k=None, clip=PROPENSITY_CLIP, empty_value=1.0, ties="average"
):
    r"""Mean self-normalised inverse-propensity-scored NDCG over queries.

    The mean of :func:`ips_ndcg_per_query` (a ratio estimate, see there) over every query; those
    without a click count as ``empty_value``, or are left out with ``empty_value=None``.

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 where the logged row was clicked, 0 otherwise.
    y_score : array-like of shape (n_samples,)
        Finite scores of the ranking to evaluate.
    groups : array-like of shape (n_samples,)
        Query id of each row.
    propensity : array-like of shape (n_samples,) or (n_samples, 2)
        Examination probability of each row at its logged position, in (0, 1]; or each row's
        affine click parameters :math:`(\alpha_i, \beta_i)` of trust bias (see
        :func:`ips_dcg_per_query`).
    k : int, default=None
        Cut-off; ``None`` uses whole lists.
    clip : float, default=PROPENSITY_CLIP
        Smallest propensity kept (0.05: weights at most 20).
    empty_value : float or None, default=1.0
        Value of a query without a click; ``None`` leaves such queries out of the mean.
    ties : {"average", "stable"}, default="average"
        How tied scores are ranked (see :func:`ndcg_score`).

    Returns
    -------
    score : float
        In [0, 1].

    Raises
    ------
    ValueError
        As :func:`ips_dcg_per_query`; also when ``empty_value=None`` and no query has a click.

    See Also
    --------
    ips_ndcg_per_query : The definition, and the values per query.

    References
    ----------
    A. Agarwal, K. Takatsu, I. Zaitsev and T. Joachims. "A General Framework for
    Counterfactual Learning-to-Rank." SIGIR 2019.

    Examples
    --------
    >>> from sklearn_ltr.metrics import ips_ndcg_score
    >>> clicks, qid, propensity = [1, 0, 0, 0], [1, 1, 2, 2], [0.5, 1.0, 1.0, 1.0]
    >>> ips_ndcg_score(clicks, [0.9, 0.1, 0.5, 0.6], qid, propensity)  # query 2 has no click: 1
    1.0
    >>> round(ips_ndcg_score(clicks, [0.1, 0.9, 0.5, 0.6], qid, propensity, empty_value=None), 4)
    0.6309
    """
    check_metric_params("ips_ndcg_score", k=k, clip=clip, empty_value=empty_value, ties=ties)
    _, dcg, ideal = _ips_values(clicks, y_score, groups, propensity, k, clip, ties)
    empty = ideal <= 0.0
    ratio = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=~empty)
    values = per_query_with_empty(ratio, empty, empty_value)
    return mean_over_queries(values, dropped=empty if empty_value is None else None)
