"""One click-log simulator: result pages of a logging ranker, clicked under a click model.

:func:`simulate_click_log` writes multi-session, top-k and down-sampled logs under any click model;
:func:`simulate_clicks` is its one-page position-based case (also exported by
:mod:`sklearn_ltr.datasets`), with the model's two factors :func:`observation_propensity` and
:func:`click_probability`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ltr._groups import QueryGroups, order_within_groups
from sklearn_ltr._params import check_int
from sklearn_ltr.clicks._checks import check_positions
from sklearn_ltr.clicks._click_models import (
    ClickModel,
    PageLayout,
    PositionBasedModel,
    check_grades,
    check_unit,
    check_y_max,
    generator,
    relevance_probability,
)

__all__ = ["SimulatedClickLog", "click_probability", "observation_propensity", "simulate_click_log", "simulate_clicks"]


@dataclass(frozen=True, eq=False)
class SimulatedClickLog:
    """A simulated click log: one row per impression, sessions one after the other.

    Attributes
    ----------
    rows : ndarray of int64 of shape (n_impressions,)
        Index of the shown document in the simulator's input (``X[log.rows]`` are its features).
    clicks : ndarray of int64 of shape (n_impressions,)
        1 where the document was clicked, else 0.
    positions : ndarray of int64 of shape (n_impressions,)
        1-based display rank in its session.
    sessions : ndarray of int64 of shape (n_impressions,)
        Result-page id, unique per query and session: ``query_index * n_sessions + s``, with
        ``query_index`` the rank of the query id among the sorted unique ids.
    groups : ndarray of shape (n_impressions,)
        Query id of each impression (``groups[rows]`` of the input).
    sample_weight : ndarray of float64 of shape (n_impressions,)
        ``1 / keep_non_clicked`` for kept non-clicked impressions, 1 for clicks: weighted
        sums over the log estimate those over all impressions.
    click_model : ClickModel
        The model the clicks were drawn from.

    Examples
    --------
    >>> from sklearn_ltr.clicks import simulate_click_log
    >>> log = simulate_click_log([2, 0, 1], ["a", "a", "a"], sessions=2, random_state=0)
    >>> log.rows, log.positions, log.sessions
    (array([0, 1, 2, 0, 1, 2]), array([1, 3, 2, 1, 3, 2]), array([0, 0, 0, 1, 1, 1]))
    >>> len(log)
    6
    """

    rows: np.ndarray
    clicks: np.ndarray
    positions: np.ndarray
    sessions: np.ndarray
    groups: np.ndarray
    sample_weight: np.ndarray
    click_model: ClickModel

    def __len__(self):
        return int(self.rows.shape[0])


def _check_scores(scores, n):
    scores = np.asarray(scores)
    if scores.ndim != 1 or scores.shape[0] != n:
        raise ValueError(f"scores must hold one logging-ranker score per row of y ({n}); got shape {scores.shape}.")
    if scores.dtype.kind not in "biuf" or not np.isfinite(scores).all():
        raise ValueError("scores must be finite numbers (the logging ranker's scores, larger shown first).")
    return scores.astype(np.float64)


def display_positions(key, qg, rng):
    """1-based rank of every row in its query by ``key`` descending, ties broken at random."""
    n = key.shape[0]
    shuffle = rng.permutation(n)  # random tie-breaking: the sort below is stable
    order = shuffle[order_within_groups(qg.codes[shuffle], key[shuffle])]
    positions = np.empty(n, dtype=np.int64)
    positions[order] = np.arange(1, n + 1) - qg.offsets[qg.codes[order]]
    return positions


def simulate_click_log(y, groups, *, click_model=None, scores=None, w=1.0, sessions=1, top_k=None,
                       keep_non_clicked=1.0, y_max=None, position_rule=None, random_state=None):
    """Simulate a click log: ``sessions`` result pages of every query, clicked under a click model.

    In each session every query's documents are ranked by a logging ranker: by ``scores``
    descending when given, else by ``w * y + (1 - w) * U`` with ``U ~ Uniform(0, y_max)``
    drawn per document (the simulation of Zhang et al., KDD 2023; ``w = 1`` sorts by
    relevance, ``w = 0`` shuffles); ties are broken uniformly at random, afresh in each
    session. The first ``top_k`` positions are shown and clicked under ``click_model``
    (attractiveness ``r(y) = (2**y - 1) / (2**y_max - 1)``). Non-clicked impressions are then
    kept with probability ``keep_non_clicked`` and weighted ``1 / keep_non_clicked``.

    The random draws, per session: the noise ``U`` (unless ``scores`` are given), a random
    permutation for the ties (or the draws of ``position_rule``), the click model's draws, then the
    down-sampling draws (only when ``keep_non_clicked < 1``). With the default
    :class:`PositionBasedModel` (``eta=1``), no ``top_k`` and ``keep_non_clicked=1``, each session
    is exactly one call of :func:`simulate_clicks` with the same generator.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Whole-number relevance grades, at most ``y_max``.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order).
    click_model : ClickModel, default=None
        :class:`PositionBasedModel`, :class:`CascadeModel`, :class:`DependentClickModel`,
        :class:`DynamicBayesianNetwork` or :class:`UserBrowsingModel`; None means
        ``PositionBasedModel()`` (examination ``1 / position``, click noise 0.1).
    scores : array-like of shape (n_samples,), default=None
        Scores of a logging ranker; when given, ``w`` is unused.
    w : float in [0, 1], default=1.0
        Weight of the label in the logging ranking (its quality) when ``scores`` is None.
    sessions : int >= 1, default=1
        Result pages per query.
    top_k : int >= 1, default=None
        Only the first ``top_k`` positions of a page are shown (are impressions); None shows all.
    keep_non_clicked : float in (0, 1], default=1.0
        Probability of keeping a non-clicked impression in the log.
    y_max : float, default=None
        Highest possible grade (the range of ``U`` and the normaliser of ``r``); defaults to ``y.max()``.
    position_rule : callable, default=None
        How a session's logging scores become display positions: ``position_rule(scores, groups, rng)``
        with ``scores`` the float64 logging score of every row, ``groups`` the query ids and ``rng``
        the session's Generator, returning the 1-based position of every row (each position at most
        once per query). None gives each row its rank in the logging ordering, ties at random. A rule
        serves studies of logs whose positions are not the logging ranks (e.g. a protocol that
        misassigns them).
    random_state : int, RandomState or Generator, default=None
        Seed. An int seeds ``numpy.random.default_rng(random_state)``; a Generator is drawn from
        (and advanced).

    Returns
    -------
    log : SimulatedClickLog
        ``rows``, ``clicks``, ``positions``, ``sessions``, ``groups``, ``sample_weight`` and
        ``click_model``; sessions one after the other, input row order within a session.

    References
    ----------
    Y. Zhang, L. Yan, Z. Qin, H. Zhuang, J. Shen, X. Wang, M. Bendersky and M. Najork,
    "Towards Disentangling Relevance and Bias in Unbiased Learning to Rank", KDD 2023.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.clicks import PositionBasedModel, simulate_click_log
    >>> y = np.array([0, 2, 1, 0, 1])
    >>> qid = np.array([7, 7, 7, 9, 9])
    >>> log = simulate_click_log(y, qid, click_model=PositionBasedModel(eta=2.0), w=1.0, sessions=2,
    ...                          top_k=2, random_state=0)
    >>> log.rows, log.positions
    (array([1, 2, 3, 4, 1, 2, 3, 4]), array([1, 2, 2, 1, 1, 2, 2, 1]))
    >>> log.sessions, log.groups
    (array([0, 0, 2, 2, 1, 1, 3, 3]), array([7, 7, 9, 9, 7, 7, 9, 9]))
    >>> log.click_model.examination(log.positions[:2])
    array([1.  , 0.25])
    """
    y = check_grades(y)
    n = y.shape[0]
    qg = QueryGroups(groups, n_samples=n, against="y")
    groups = np.asarray(groups)
    w = check_unit(w, "w")
    y_max = check_y_max(y, y_max)
    n_sessions = check_int(sessions, "sessions", 1, fix=" (result pages per query)")
    if top_k is not None:
        top_k = check_int(top_k, "top_k", 1, fix=" (or None to show every position)")
    if isinstance(keep_non_clicked, bool) or not isinstance(keep_non_clicked, numbers.Real) \
            or not 0 < keep_non_clicked <= 1:
        raise ValueError(f"keep_non_clicked must be a probability in (0, 1] (1 keeps every impression); "
                         f"got {keep_non_clicked!r}.")
    if scores is not None:
        scores = _check_scores(scores, n)
    if position_rule is not None and not callable(position_rule):
        raise ValueError(f"position_rule must be None or a callable (scores, groups, rng) -> positions; got "
                         f"{position_rule!r}.")
    if click_model is None:
        click_model = PositionBasedModel()
    if not isinstance(click_model, ClickModel):
        raise ValueError(f"click_model must be a click model of sklearn_ltr.clicks (e.g. PositionBasedModel()) "
                         f"or None; got {click_model!r}.")
    click_model._check_params()
    r = relevance_probability(y, y_max)
    codes = qg.codes.astype(np.int64)
    rng = generator(random_state)

    parts = []
    for s in range(n_sessions):
        key = scores if scores is not None else w * y + (1 - w) * rng.uniform(0, y_max, n)
        if position_rule is None:
            positions = display_positions(key, qg, rng)
        else:
            positions = check_positions(position_rule(key, groups, rng), n, name="the positions of position_rule",
                                        against="y")
        rows = np.arange(n) if top_k is None else np.flatnonzero(positions <= top_k)
        positions = positions[rows]
        layout = _layout(click_model, positions, codes[rows])
        clicks = click_model._sample(r[rows], positions, layout, rng)
        weight = np.ones(rows.shape[0])
        if keep_non_clicked < 1:
            kept = (clicks == 1) | (rng.random(rows.shape[0]) < keep_non_clicked)
            rows, positions, clicks = rows[kept], positions[kept], clicks[kept]
            weight = np.where(clicks == 1, 1.0, 1.0 / keep_non_clicked)
        parts.append((rows, clicks, positions, codes[rows] * n_sessions + s, weight))
    rows, clicks, positions, session_ids, weight = (np.concatenate(p) for p in zip(*parts, strict=True))
    return SimulatedClickLog(rows=rows, clicks=clicks, positions=positions, sessions=session_ids,
                             groups=groups[rows], sample_weight=weight, click_model=click_model)


def _layout(click_model, positions, page_codes):
    if not click_model._sequential:
        return None  # the position-based model needs no page structure
    return PageLayout(positions, page_codes, contiguous=True)


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
    >>> from sklearn_ltr.clicks import observation_propensity
    >>> observation_propensity([1, 2, 4])
    array([1.  , 0.5 , 0.25])
    >>> 1 / observation_propensity([1, 2, 4])  # inverse-propensity weights of clicks there
    array([1., 2., 4.])
    """
    return PositionBasedModel(eta=1.0).examination(positions)


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
    >>> from sklearn_ltr.clicks import click_probability
    >>> click_probability([0, 1, 4], y_max=4)
    array([0.1 , 0.16, 1.  ])
    """
    y = check_grades(y)
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
    >>> from sklearn_ltr.clicks import simulate_clicks
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
    # An int seeds a RandomState first (the stream this function has always drawn), not default_rng directly.
    rng = random_state if isinstance(random_state, np.random.Generator) else generator(check_random_state(random_state))
    log = simulate_click_log(y, groups, click_model=PositionBasedModel(eta=1.0, epsilon=epsilon), w=w,
                             y_max=y_max, random_state=rng)
    return log.positions, log.clicks
