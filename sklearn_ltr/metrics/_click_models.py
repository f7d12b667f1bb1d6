"""Evaluation of click models on a click log: log-likelihood and perplexity of predicted clicks.

Both take the probability a click model gives each logged impression, usually its
``conditional_click_probability`` (the click given the clicks above it on the page), and the
observed clicks. They are not in the metric registry: the registry's metrics score a
ranking (``y_score``) query by query, whereas these score predicted click probabilities
position by position.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.clicks import check_clicks, check_positions

__all__ = ["click_log_likelihood", "click_perplexity"]


def _check_log(clicks, probability):
    clicks = check_clicks(clicks)
    probability = np.asarray(probability)
    if probability.shape != clicks.shape:
        raise ValueError(f"probability must hold one predicted click probability per click ({clicks.shape[0]}); "
                         f"got shape {probability.shape}.")
    if probability.dtype.kind not in "biuf" or not np.isfinite(probability).all() \
            or probability.min() < 0 or probability.max() > 1:
        raise ValueError("probability must hold click probabilities in [0, 1] (e.g. a click model's "
                         "conditional_click_probability), not ranking scores.")
    return clicks, probability.astype(np.float64)


def _log_terms(clicks, probability, log):
    """``c log p + (1 - c) log (1 - p)`` per impression, 0 * log 0 taken as 0."""
    with np.errstate(divide="ignore"):
        hit = np.where(clicks == 1, log(probability), 0.0)
        miss = np.where(clicks == 0, log(1 - probability), 0.0)
    return hit + miss


def _per_position_mean(values, positions):
    n_positions = int(positions.max())
    count = np.bincount(positions - 1, minlength=n_positions)
    total = np.bincount(positions - 1, weights=values, minlength=n_positions)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def click_log_likelihood(clicks, probability, sessions, positions=None, *, per_position=False):
    """Log-likelihood of a click log under predicted click probabilities.

    The mean over sessions :math:`s` of the log-probability of the session's clicks,

    .. math:: LL = \\frac{1}{|S|} \\sum_{s \\in S} \\sum_k c_{s,k} \\ln p_{s,k}
              + (1 - c_{s,k}) \\ln (1 - p_{s,k}),

    where :math:`p_{s,k}` is the predicted probability of a click at rank :math:`k` of session
    :math:`s` given the clicks above it (a click model's ``conditional_click_probability``):
    the sum over ranks is then :math:`\\ln P(C_1, ..., C_n)`. Higher is better; 0 is a perfect
    prediction, :math:`-\\infty` a click the model rules out (:math:`p = 0`).

    Parameters
    ----------
    clicks : array-like of shape (n_impressions,)
        Observed 0/1 clicks.
    probability : array-like of shape (n_impressions,)
        Predicted click probability of each impression, in [0, 1].
    sessions : array-like of shape (n_impressions,)
        Session (result page) of each impression.
    positions : array-like of shape (n_impressions,), default=None
        1-based display rank of each impression; needed for ``per_position=True``.
    per_position : bool, default=False
        Return one value per position 1, 2, ...: the mean over the sessions that show it of
        :math:`c \\ln p + (1 - c) \\ln (1 - p)` (NaN where no session does).

    Returns
    -------
    log_likelihood : float, or ndarray of float64 of shape (max_position,)

    See Also
    --------
    click_perplexity : the per-position perplexity, base 2.

    References
    ----------
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", Morgan & Claypool,
    2015, section 5.1.

    Examples
    --------
    >>> from sklearn_ltr.metrics import click_log_likelihood
    >>> clicks = [1, 0, 0, 0]
    >>> p = [0.5, 0.25, 0.5, 0.5]
    >>> sessions = [0, 0, 1, 1]
    >>> round(click_log_likelihood(clicks, p, sessions), 4)  # (ln .5 + ln .75 + 2 ln .5) / 2
    -1.1835
    >>> click_log_likelihood(clicks, p, sessions, [1, 2, 1, 2], per_position=True).round(4)
    array([-0.6931, -0.4904])
    """
    clicks, probability = _check_log(clicks, probability)
    if np.ndim(sessions) != 1 or len(sessions) != clicks.shape[0]:
        raise ValueError(f"sessions must hold one session id per impression ({clicks.shape[0]}); "
                         f"got {np.shape(sessions)}.")
    qg = QueryGroups(sessions, clicks.shape[0], against="clicks")
    terms = _log_terms(clicks, probability, np.log)
    if per_position:
        if positions is None:
            raise ValueError("per_position=True needs positions: the 1-based display rank of each impression.")
        return _per_position_mean(terms, check_positions(positions, clicks.shape[0], against="clicks"))
    return float(terms.sum() / qg.n_queries)


def click_perplexity(clicks, probability, positions, *, per_position=False):
    """Perplexity of predicted click probabilities, per position and averaged over positions.

    At position :math:`k`, over the sessions :math:`S_k` that show it,

    .. math:: \\mathrm{PPL}_k = 2^{-\\frac{1}{|S_k|} \\sum_{s \\in S_k}
              c_{s,k} \\log_2 p_{s,k} + (1 - c_{s,k}) \\log_2 (1 - p_{s,k})},

    and the perplexity of the log is the mean of :math:`\\mathrm{PPL}_k` over the positions.
    Lower is better: 1 is a perfect prediction, 2 a coin flip. :math:`p_{s,k}` is usually a click
    model's ``conditional_click_probability`` (the click given the clicks above it).

    Parameters
    ----------
    clicks : array-like of shape (n_impressions,)
        Observed 0/1 clicks.
    probability : array-like of shape (n_impressions,)
        Predicted click probability of each impression, in [0, 1].
    positions : array-like of shape (n_impressions,)
        1-based display rank of each impression.
    per_position : bool, default=False
        Return :math:`\\mathrm{PPL}_k` for positions 1, 2, ... (NaN where no impression is).

    Returns
    -------
    perplexity : float, or ndarray of float64 of shape (max_position,)

    See Also
    --------
    click_log_likelihood : the log-likelihood of the sessions.

    References
    ----------
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", Morgan & Claypool,
    2015, section 5.2.
    L. Zou, H. Mao, X. Chu, J. Tang, W. Ye, S. Wang and D. Yin, "A Large Scale Search Dataset
    for Unbiased Learning to Rank", NeurIPS 2022 (Datasets and Benchmarks).

    Examples
    --------
    >>> from sklearn_ltr.metrics import click_perplexity
    >>> clicks = [1, 0, 0, 0]
    >>> p = [0.5, 0.25, 0.5, 0.5]
    >>> click_perplexity(clicks, p, [1, 2, 1, 2], per_position=True).round(4)  # 2 ** 1, 2 ** 0.7075
    array([2.    , 1.6329])
    >>> round(click_perplexity(clicks, p, [1, 2, 1, 2]), 4)
    1.8164
    """
    clicks, probability = _check_log(clicks, probability)
    positions = check_positions(positions, clicks.shape[0], against="clicks")
    per_k = np.exp2(-_per_position_mean(_log_terms(clicks, probability, np.log2), positions))
    return per_k if per_position else float(np.nanmean(per_k))
