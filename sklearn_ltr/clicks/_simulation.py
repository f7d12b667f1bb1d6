"""One click-log simulator: result pages of a logging ranker, clicked under a click model."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from sklearn_ltr._groups import QueryGroups, order_within_groups
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

__all__ = ["SimulatedClickLog", "simulate_click_log"]


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


def _check_int(value, name, low, fix):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}{fix}; got {value!r}.")
    return int(value)


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
                       keep_non_clicked=1.0, y_max=None, random_state=None):
    """Simulate a click log: ``sessions`` result pages of every query, clicked under a click model.

    In each session every query's documents are ranked by a logging ranker: by ``scores``
    descending when given, else by ``w * y + (1 - w) * U`` with ``U ~ Uniform(0, y_max)``
    drawn per document (the simulation of Zhang et al., KDD 2023; ``w = 1`` sorts by
    relevance, ``w = 0`` shuffles); ties are broken uniformly at random, afresh in each
    session. The first ``top_k`` positions are shown and clicked under ``click_model``
    (attractiveness ``r(y) = (2**y - 1) / (2**y_max - 1)``). Non-clicked impressions are then
    kept with probability ``keep_non_clicked`` and weighted ``1 / keep_non_clicked``.

    The random draws, per session: the noise ``U`` (unless ``scores`` are given), a random
    permutation for the ties, the click model's draws, then the down-sampling draws (only when
    ``keep_non_clicked < 1``). With the default :class:`PositionBasedModel` (``eta=1``), no
    ``top_k`` and ``keep_non_clicked=1``, each session is exactly one call of
    :func:`sklearn_ltr.datasets.simulate_clicks` with the same generator.

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
    n_sessions = _check_int(sessions, "sessions", 1, " (result pages per query)")
    if top_k is not None:
        top_k = _check_int(top_k, "top_k", 1, " (or None to show every position)")
    if isinstance(keep_non_clicked, bool) or not isinstance(keep_non_clicked, numbers.Real) \
            or not 0 < keep_non_clicked <= 1:
        raise ValueError(f"keep_non_clicked must be a probability in (0, 1] (1 keeps every impression); "
                         f"got {keep_non_clicked!r}.")
    if scores is not None:
        scores = _check_scores(scores, n)
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
        positions = display_positions(key, qg, rng)
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
