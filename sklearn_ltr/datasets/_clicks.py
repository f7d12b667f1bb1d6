"""Click simulation with a position-based model, for unbiased learning to rank from clicks."""

from __future__ import annotations

import numpy as np

from sklearn_ltr._validation import check_relevance
from sklearn_ltr.clicks._click_models import PositionBasedModel, check_unit, check_y_max, relevance_probability
from sklearn_ltr.clicks._simulation import simulate_click_log
from sklearn_ltr.datasets._synthetic import _generator

__all__ = ["click_probability", "observation_propensity", "simulate_clicks"]


def observation_propensity(positions):
    """Probability that a user examines a result at a display position: ``1 / position``.

    The position-based examination model of Joachims et al. (2017) with severity 1,
    the one :func:`simulate_clicks` uses. Its inverse is the inverse-propensity weight of
    a click at that position.

    Parameters
    ----------
    positions : array-like of int
        1-based display ranks.

    Returns
    -------
    propensity : ndarray of float64, same shape as ``positions``

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel, "Unbiased Learning-to-Rank with Biased
    Feedback", WSDM 2017.

    Examples
    --------
    >>> from sklearn_ltr.datasets import observation_propensity
    >>> observation_propensity([1, 2, 4])
    array([1.  , 0.5 , 0.25])
    >>> 1 / observation_propensity([1, 2, 4])  # inverse-propensity weights of clicks there
    array([1., 2., 4.])
    """
    positions = np.asarray(positions)
    if positions.dtype.kind not in "iuf" or positions.size == 0 or not np.isfinite(positions).all():
        raise ValueError("positions must be a non-empty array of 1-based display ranks.")
    if (positions < 1).any():
        raise ValueError(f"positions are 1-based display ranks; got {positions.min()}.")
    return 1.0 / positions.astype(np.float64)


def click_probability(y, *, epsilon=0.1, y_max=None):
    """Probability that an examined document is clicked: ``eps + (1 - eps) * (2**y - 1) / (2**y_max - 1)``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Non-negative integer relevance labels.
    epsilon : float, default=0.1
        Click noise: the click probability of an examined irrelevant document.
    y_max : float, default=None
        Highest possible grade; defaults to ``y.max()`` (pass 4 for MSLR's 0-4 labels).
        When ``y_max`` is 0 every examined document is clicked with probability ``epsilon``.

    Returns
    -------
    probability : ndarray of float64 of shape (n_samples,)

    References
    ----------
    Y. Zhang, L. Yan, Z. Qin, H. Zhuang, J. Shen, X. Wang, M. Bendersky and M. Najork,
    "Towards Disentangling Relevance and Bias in Unbiased Learning to Rank", KDD 2023.

    Examples
    --------
    >>> from sklearn_ltr.datasets import click_probability
    >>> click_probability([0, 1, 4], y_max=4)
    array([0.1 , 0.16, 1.  ])
    """
    y = check_relevance(y, name="y", integer=True)
    epsilon = check_unit(epsilon, "epsilon")
    return epsilon + (1 - epsilon) * relevance_probability(y, check_y_max(y, y_max))


def simulate_clicks(y, groups, *, w=1.0, epsilon=0.1, y_max=None, random_state=None):
    """Simulate one result page per query and its clicks under a position-based model.

    The simulation of Zhang et al. (KDD 2023) on MSLR-WEB30K. In each query the documents
    are displayed in descending order of ``w * y + (1 - w) * U`` with
    ``U ~ Uniform(0, y_max)`` drawn per document (``w = 1`` sorts by relevance, ``w = 0``
    shuffles; ties are broken uniformly at random). A document at 1-based position ``p``
    is examined with probability ``1 / p`` (:func:`observation_propensity`), and an examined
    document is clicked with probability ``epsilon + (1 - epsilon) * (2**y - 1) / (2**y_max - 1)``
    (:func:`click_probability`). This is the position-based model of Craswell et al. (2008)
    with the examination curve of Joachims et al. (2017).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Non-negative integer relevance labels, at most ``y_max``.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order, rows need not be contiguous).
    w : float in [0, 1], default=1.0
        Weight of the label in the display ranking: the quality of the logging ranker.
    epsilon : float in [0, 1], default=0.1
        Click noise.
    y_max : float, default=None
        Highest possible grade, the upper end of ``U`` and the normaliser of the click
        probability. Defaults to ``y.max()``; with MSLR's labels 0-4 that is the published
        ``Uniform(0, 4)``. Pass it explicitly when a sample may lack the top grade.
    random_state : int, RandomState or Generator, default=None
        Seed; the same seed, labels and groups give the same positions and clicks.

    Returns
    -------
    positions : ndarray of int64 of shape (n_samples,)
        1-based display rank of each row within its query, in input row order; a
        permutation of ``1 .. n_q`` in every query of ``n_q`` rows.
    clicks : ndarray of int64 of shape (n_samples,)
        1 where the document was clicked, else 0.

    References
    ----------
    Y. Zhang, L. Yan, Z. Qin, H. Zhuang, J. Shen, X. Wang, M. Bendersky and M. Najork,
    "Towards Disentangling Relevance and Bias in Unbiased Learning to Rank", KDD 2023.
    N. Craswell, O. Zoeter, M. Taylor and B. Ramsey, "An Experimental Comparison of Click
    Position-Bias Models", WSDM 2008.
    T. Joachims, A. Swaminathan and T. Schnabel, "Unbiased Learning-to-Rank with Biased
    Feedback", WSDM 2017.

    Examples
    --------
    >>> from sklearn_ltr.datasets import simulate_clicks
    >>> y = [0, 2, 1, 0, 1]
    >>> groups = ["a", "a", "a", "b", "b"]
    >>> positions, clicks = simulate_clicks(y, groups, w=1.0, random_state=0)
    >>> positions
    array([3, 1, 2, 2, 1])
    >>> clicks.shape, set(clicks.tolist()) <= {0, 1}
    ((5,), True)

    With ``w=1`` a fully relevant document (``y == y_max``) is shown first, always
    examined, and clicked with probability ``epsilon + (1 - epsilon) = 1``:

    >>> import numpy as np
    >>> y = np.tile([1, 0, 0, 0], 100)
    >>> groups = np.repeat(np.arange(100), 4)
    >>> positions, clicks = simulate_clicks(y, groups, random_state=0)
    >>> bool(np.all(positions[y == 1] == 1)), float(clicks[y == 1].mean())
    (True, 1.0)
    """
    check_unit(epsilon, "epsilon")
    log = simulate_click_log(y, groups, click_model=PositionBasedModel(eta=1.0, epsilon=epsilon), w=w,
                             y_max=y_max, random_state=_generator(random_state))
    return log.positions, log.clicks
