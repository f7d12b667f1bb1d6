"""Click simulation with a position-based model, for unbiased learning to rank from clicks."""

from __future__ import annotations

import numbers

import numpy as np

from sklearn_ltr._groups import QueryGroups, order_within_groups
from sklearn_ltr._validation import check_relevance
from sklearn_ltr.datasets._synthetic import _generator

__all__ = ["click_probability", "observation_propensity", "simulate_clicks"]


def _check_unit(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1]; got {value!r}.")
    return float(value)


def _check_y_max(y, y_max):
    top = float(y.max())
    if y_max is None:
        return top
    if isinstance(y_max, bool) or not isinstance(y_max, numbers.Real) or not np.isfinite(y_max) or y_max < 0:
        raise ValueError(f"y_max must be a finite number >= 0; got {y_max!r}.")
    if top > y_max:
        raise ValueError(f"y holds a label {top:g} above y_max={y_max:g}; labels must be <= y_max.")
    return float(y_max)


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
    epsilon = _check_unit(epsilon, "epsilon")
    y_max = _check_y_max(y, y_max)
    if y_max <= 0:
        relevance = np.zeros_like(y)
    else:  # (2**y - 1) / (2**y_max - 1) scaled by 2**-y_max: exact, and finite for any grade
        relevance = (np.exp2(y - y_max) - np.exp2(-y_max)) / -np.expm1(-y_max * np.log(2.0))
    return epsilon + (1 - epsilon) * relevance


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
    y = check_relevance(y, name="y", integer=True)
    qg = QueryGroups(groups, n_samples=y.shape[0])
    w = _check_unit(w, "w")
    probability = click_probability(y, epsilon=epsilon, y_max=y_max)
    y_max = _check_y_max(y, y_max)
    rng = _generator(random_state)
    n = y.shape[0]

    key = w * y + (1 - w) * rng.uniform(0, y_max, n)
    shuffle = rng.permutation(n)  # random tie-breaking: the sort below is stable
    order = shuffle[order_within_groups(qg.codes[shuffle], key[shuffle])]
    positions = np.empty(n, dtype=np.int64)
    positions[order] = np.arange(1, n + 1) - qg.offsets[qg.codes[order]]

    observed = rng.random(n) < observation_propensity(positions)
    clicked = rng.random(n) < probability
    return positions, (observed & clicked).astype(np.int64)
