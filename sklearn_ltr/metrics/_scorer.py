"""Scorers that see each test fold's query ids through metadata routing.

scikit-learn's ``make_scorer(...).set_score_request(groups=True)`` would hand
``groups`` to the metric but not to ``estimator.predict``, which list-context
rankers need; these scorers pass it to both.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from typing import ClassVar

import numpy as np
from sklearn.utils.metadata_routing import MetadataRequest

from sklearn_ltr.metrics._evaluator import RankingEvaluator
from sklearn_ltr.metrics._registry import METRICS, get_metric, is_builtin
from sklearn_ltr.utils._sklearn_compat import Satisfies, _routing_enabled, check_parameters

__all__ = ["NDCGScorer", "RankingScorer", "ips_ndcg_scorer", "make_ranking_scorer", "ndcg_scorer"]


def _union_of_options(metrics):
    """One declaration for the options of several metrics (the same name has the same constraint)."""
    union = {}
    for metric in metrics:
        union.update(metric.options)
    return union


_NO_GROUPS = "{name} needs the query id of every test row, but got groups=None. "

#: Why no ids came, by whether metadata routing is on: forgetting it is the usual cause inside a search.
_NO_ROUTING = (
    "Metadata routing is off, so GridSearchCV, cross_validate and cross_val_score pass groups to the splitter "
    "only, and every fold scores nan: call sklearn.set_config(enable_metadata_routing=True) before the search "
    "and pass groups to its fit (search.fit(X, y, groups=qid)) or params={'groups': qid}. To make a search stop "
    "at the first fold with this error instead of warning for every fold, construct it with error_score='raise'. "
)
_ROUTING_ON = (
    "Metadata routing is on, but no groups reached the scorer: pass groups to the search's or cross-validation's "
    "fit (search.fit(X, y, groups=qid)) or params={'groups': qid}. "
)
_OTHER_WAYS = (
    "Called directly, use scorer(estimator, X, y, groups=qid). For tools that cannot route query ids "
    "(permutation_importance, cross_val_predict, OptunaSearchCV), keep the ids in a column of X and construct "
    "the ranker with query_column=<that column>."
)


def _no_groups_message(name):
    """The error of a scorer given no query ids: the cause first (routing off or on), then every fix."""
    context = _ROUTING_ON if _routing_enabled() else _NO_ROUTING
    return _NO_GROUPS.format(name=name) + context + _OTHER_WAYS


def _no_input_message(name, metric, missing):
    """The error of a scorer given no per-row input (a click log's propensities) that its metric needs."""
    if _routing_enabled():
        context = (f"Metadata routing is on, but no {missing} reached the scorer: pass it to the search's or "
                   f"cross-validation's fit (search.fit(X, clicks, groups=qid, {missing}=...)) or params=. ")
    else:
        context = (f"Metadata routing is off, so a search passes {missing} to the estimator's fit only: call "
                   f"sklearn.set_config(enable_metadata_routing=True) before the search and pass {missing} to its "
                   f"fit. ")
    return (f"{name} needs the {missing} of every test row for the {metric!r} metric (one value per row), but got "
            f"none. " + context + f"Called directly, use scorer(estimator, X, clicks, groups=qid, {missing}=...).")


#: Test folds whose evaluator a scorer keeps: a search scores the same folds once per candidate.
_CACHED_FOLDS = 5


def _as_array(values):
    return np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)


def _predict_accepts_groups(estimator):
    try:
        parameters = inspect.signature(estimator.predict).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return any(p.name == "groups" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class RankingScorer:
    """Score a ranker on held-out queries with a ranking metric.

    Called as ``scorer(estimator, X, y_true, groups=qid)``: it predicts with
    ``estimator.predict(X, groups=groups)`` and evaluates the metric per query.
    It requests ``groups`` through scikit-learn's metadata routing (SLEP006),
    so after ``sklearn.set_config(enable_metadata_routing=True)`` the test
    fold's query ids reach it inside ``GridSearchCV``, ``cross_validate`` and
    ``cross_val_score``. Without them it raises instead of scoring the fold as
    if it were one query.

    The parameters are declared in ``_parameter_constraints`` (scikit-learn
    constraints) and checked when the scorer is constructed, so a bad option
    fails before a search starts: a wrong type or value raises
    ``InvalidParameterError`` (a ``ValueError``) naming the parameter, an option
    that the metric does not take a ``TypeError``.

    A metric with per-row inputs beyond the labels (the ``inputs`` of its
    :class:`~sklearn_ltr.metrics.Metric`: ``propensity`` for the counterfactual ``"ips_dcg"``
    and ``"ips_ndcg"``, whose labels are clicks) gets
    them the same way: the scorer requests them for ``score`` along with ``groups``, and is
    called as ``scorer(estimator, X, clicks, groups=qid, propensity=p)``.

    Parameters
    ----------
    metric : str, default="ndcg"
        A name of :data:`~sklearn_ltr.metrics.METRICS` (or an alias): ``"ndcg"``, ``"dcg"``,
        ``"map"``, ``"precision"``, ``"mrr"``, ``"err"``, ``"swapped_pairs"``, ``"ips_dcg"``,
        ``"ips_ndcg"`` or a registered one. A metric for which lower is better (``"swapped_pairs"``, the fraction of
        swapped pairs) is negated, so that greater is better.
    k : int or None, default=10
        Cut-off passed to the metric (ignored by a metric without one, ``"swapped_pairs"``).
    **metric_params
        Further keyword arguments of the metric, e.g. ``empty_value=0.0``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_ltr.metrics import RankingScorer
    >>> X = np.array([[0.0], [1.0], [2.0], [0.0], [3.0]])
    >>> y, qid = np.array([0, 1, 2, 1, 0]), np.array([1, 1, 1, 2, 2])
    >>> model = LinearRegression().fit(X, y)
    >>> RankingScorer("map", k=None)(model, X, y, groups=qid)  # query 2 is ranked wrong
    0.75
    >>> RankingScorer("mrr")(model, X, y, groups=qid)  # (1 + 1/2) / 2
    0.75

    Without query ids there is nothing to score per query:

    >>> RankingScorer("map")(model, X, y)
    Traceback (most recent call last):
    ...
    ValueError: RankingScorer('map', k=10) needs the query id of every test row, but got groups=None. ...

    A bad option fails at construction:

    >>> RankingScorer("map", k=0)
    Traceback (most recent call last):
    ...
    sklearn...InvalidParameterError: The 'k' parameter of RankingScorer must be an int ... Got 0 instead.
    """

    _parameter_constraints: ClassVar[dict] = {
        # Checked by get_metric, whose error lists the registered metrics.
        "metric": [Satisfies("a name of sklearn_ltr.metrics.METRICS", lambda name: name in METRICS)],
        # Every option of the built-in metrics; the chosen metric's own constraints are checked
        # too (``precision`` needs an integer ``k``; a registered metric may have new options).
        **_union_of_options(METRICS.values()),
        "k": METRICS["ndcg"].options["k"],
    }

    def __init__(self, metric="ndcg", k=10, **metric_params):
        # Fail at construction, not in the middle of a search, on a bad option.
        owner = type(self).__name__
        record = get_metric(metric, owner=owner, parameter="metric")
        self.metric = metric
        self.k = k
        self.metric_params = metric_params
        # An option the metric does not take: TypeError, as a function call would raise.
        record.check_options(owner, dict(metric_params))
        check_parameters(owner, self._parameter_constraints, {"k": k, **metric_params})
        record.check_options(owner, self._metric_kwargs())

    def _metric_kwargs(self):
        takes_k = get_metric(self.metric).takes_k
        return {"k": self.k, **self.metric_params} if takes_k else dict(self.metric_params)

    def __call__(self, estimator, X, y_true, groups=None, sample_weight=None, **inputs):
        """Predict on ``X`` with its query ids and return the mean metric over queries.

        Parameters
        ----------
        estimator : object
            Fitted model with ``predict(X, groups=None)``, or ``predict(X)`` for a
            pointwise model (a regressor), which is then called without ``groups``.
        X : array-like of shape (n_samples, n_features)
            Rows to rank.
        y_true : array-like of shape (n_samples,)
            Relevance grades.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row. Required unless the estimator (or a Pipeline's
            last step) reads them from ``X`` through its ``query_column``; else
            ``None`` raises a ``ValueError`` that says how to enable metadata routing
            (and, inside a search with routing off, that ``error_score='raise'`` stops
            the search at the first fold instead of scoring every fold ``nan``).
        sample_weight : None
            Not supported: must be ``None``.
        **inputs : array-like of shape (n_samples,)
            The per-row inputs that the metric needs (the ``inputs`` of :class:`~sklearn_ltr.metrics.Metric`), e.g.
            ``propensity=`` for ``"ips_ndcg"``; routed like ``groups``.

        Returns
        -------
        score : float
            The metric; greater is better.
        """
        if groups is None:
            # A ranker with a query_column (alone or last in a Pipeline) carries the ids in X.
            from sklearn_ltr._query_column import query_ids_from_X

            groups = query_ids_from_X(estimator, X)
        if groups is None:
            raise ValueError(_no_groups_message(repr(self)))
        if sample_weight is not None:
            raise ValueError(
                f"{self!r} does not support sample_weight: ranking metrics average over queries."
            )
        record = get_metric(self.metric, owner=type(self).__name__, parameter="metric")
        unknown = sorted(set(inputs) - set(record.inputs))
        if unknown:
            raise TypeError(f"{self!r} got an unexpected keyword argument {unknown[0]!r}; its metric takes "
                            f"{list(record.inputs) or 'no per-row input'} beyond groups.")
        missing = [name for name in record.inputs if inputs.get(name) is None]
        if missing:
            raise ValueError(_no_input_message(repr(self), record.name, missing[0]))
        if _predict_accepts_groups(estimator):
            y_score = estimator.predict(X, groups=groups)
        else:
            y_score = estimator.predict(X)
        if is_builtin(record):
            evaluator = self._evaluator(y_true, groups)
            y_true, groups = evaluator.y_true, evaluator
        value = record.score(y_true, y_score, groups, **inputs, **self._metric_kwargs())
        return value if record.higher_is_better else -value

    def _evaluator(self, y_true, groups):
        """The :class:`RankingEvaluator` of a test fold, built once and found again by content.

        A search scores every candidate on the same folds, each time with new copies of the
        fold's arrays: the key is their content (compared in full), not their identity.
        """
        labels, ids = _as_array(y_true), _as_array(groups)
        lock = self.__dict__.setdefault("_cache_lock", threading.Lock())
        with lock:
            cache = self.__dict__.setdefault("_evaluators", OrderedDict())
            for key, (cached_labels, cached_ids, evaluator) in cache.items():
                if (cached_ids.shape == ids.shape and cached_ids.dtype == ids.dtype and np.array_equal(cached_ids, ids)
                        and np.array_equal(cached_labels, labels)):
                    cache.move_to_end(key)
                    return evaluator
        evaluator = RankingEvaluator(labels, ids)
        with lock:
            cache[id(evaluator)] = (labels.copy(), ids.copy(), evaluator)
            while len(cache) > _CACHED_FOLDS:
                cache.popitem(last=False)
        return evaluator

    def __getstate__(self):
        # The evaluators of past folds (and the lock) stay with this process.
        state = dict(self.__dict__)
        state.pop("_evaluators", None)
        state.pop("_cache_lock", None)
        return state

    def get_metadata_routing(self):
        """Request ``groups``, and the metric's per-row inputs, for scoring (scikit-learn metadata routing)."""
        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="groups", alias=True)
        for name in get_metric(self.metric).inputs:
            request.score.add_request(param=name, alias=True)
        return request

    def __repr__(self):
        options = "".join(f", {key}={value!r}" for key, value in self._metric_kwargs().items())
        return f"{type(self).__name__}({self.metric!r}{options})"


class NDCGScorer(RankingScorer):
    """NDCG@k scorer for model selection; see :class:`RankingScorer` and :func:`ndcg_score`.

    Parameters
    ----------
    k : int or None, default=10
        Cut-off.
    **metric_params
        Options of :func:`~sklearn_ltr.metrics.ndcg_score`: ``gain``, ``empty_value``, ``ties``,
        checked at construction (see :class:`RankingScorer`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_ltr import NDCGScorer
    >>> X = np.array([[0.0], [1.0], [2.0], [0.0], [3.0]])
    >>> y, qid = np.array([0, 1, 2, 1, 0]), np.array([1, 1, 1, 2, 2])
    >>> model = LinearRegression().fit(X, y)

    Query 1 is ranked perfectly; query 2's relevant document comes second:

    >>> round(NDCGScorer(k=5)(model, X, y, groups=qid), 4)  # (1 + 1 / log2(3)) / 2
    0.8155
    >>> NDCGScorer(k=1)(model, X, y, groups=qid)  # (1 + 0) / 2
    0.5
    >>> NDCGScorer(k=5, empty_value=0.0)
    NDCGScorer(k=5, empty_value=0.0)
    """

    _parameter_constraints: ClassVar[dict] = dict(METRICS["ndcg"].options)

    def __init__(self, k=10, **metric_params):
        super().__init__("ndcg", k=k, **metric_params)

    def __repr__(self):
        options = "".join(f", {key}={value!r}" for key, value in self.metric_params.items())
        return f"NDCGScorer(k={self.k!r}{options})"


def make_ranking_scorer(metric, k=10, **metric_params):
    """Make a routing-aware scorer for a ranking metric.

    Parameters
    ----------
    metric : str
        A name of :data:`~sklearn_ltr.metrics.METRICS`, as in :class:`RankingScorer`.
    k : int or None, default=10
        Cut-off.
    **metric_params
        Further options of the metric.

    Returns
    -------
    scorer : RankingScorer

    Examples
    --------
    >>> from sklearn_ltr import make_ranking_scorer
    >>> scoring = {"ndcg@5": make_ranking_scorer("ndcg", k=5), "map": make_ranking_scorer("map")}
    >>> scoring
    {'ndcg@5': NDCGScorer(k=5), 'map': RankingScorer('map', k=10)}

    With metadata routing on, ``groups`` reaches both the splitter and the scorers:

    >>> import numpy as np
    >>> import sklearn
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn.model_selection import GroupKFold, cross_validate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    >>> qid = np.repeat(np.arange(8), 5)
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     result = cross_validate(
    ...         LinearRegression(), X, y, cv=GroupKFold(2), scoring=scoring, params={"groups": qid}
    ...     )
    >>> result["test_ndcg@5"].round(4).tolist(), result["test_map"].tolist()
    ([0.9395, 1.0], [1.0, 1.0])
    """
    if metric == "ndcg":
        return NDCGScorer(k=k, **metric_params)
    return RankingScorer(metric, k=k, **metric_params)


def ips_ndcg_scorer(k=10, **metric_params):
    """Make a scorer of the counterfactual NDCG@k of a click log, for model selection without labels.

    The scorer of :func:`~sklearn_ltr.metrics.ips_ndcg_score`: called as
    ``scorer(estimator, X, clicks, groups=qid, propensity=p)``, with the clicks of the logged
    rows in place of labels and the examination propensity of each row. It requests both
    ``groups`` and ``propensity`` through scikit-learn's metadata routing, so inside
    ``GridSearchCV`` or ``cross_validate`` (with ``sklearn.set_config(enable_metadata_routing=True)``)
    each test fold is scored with its own rows' propensities.

    Self-normalised per query, the estimate ignores the propensity of a query's only click (see
    :func:`~sklearn_ltr.metrics.ips_ndcg_per_query`): on logs with about one click per query, select
    with ``make_ranking_scorer("ips_dcg", k=k)``, the unbiased DCG estimate, instead.

    Parameters
    ----------
    k : int or None, default=10
        Cut-off.
    **metric_params
        Options of :func:`~sklearn_ltr.metrics.ips_ndcg_score`: ``clip``, ``empty_value``, ``ties``,
        checked at construction. ``empty_value=None`` averages over the test queries with a click
        only.

    Returns
    -------
    scorer : RankingScorer
        ``RankingScorer("ips_ndcg", k=k, **metric_params)``.

    See Also
    --------
    make_ranking_scorer : The scorer of any registered metric (``"ips_dcg"`` too).

    Examples
    --------
    >>> import numpy as np
    >>> import sklearn
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn.model_selection import GroupKFold, cross_val_score
    >>> from sklearn_ltr.datasets import observation_propensity, simulate_clicks
    >>> from sklearn_ltr.metrics import ips_ndcg_scorer
    >>> rng = np.random.default_rng(0)
    >>> qid = np.repeat(np.arange(40), 8)
    >>> X = rng.normal(size=(qid.size, 3))
    >>> y = np.clip(np.round(X[:, 0] + 1), 0, 2).astype(int)
    >>> positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    >>> propensity = observation_propensity(positions)
    >>> scorer = ips_ndcg_scorer(k=5)
    >>> scorer
    RankingScorer('ips_ndcg', k=5)
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     scores = cross_val_score(LinearRegression(), X, clicks, cv=GroupKFold(2), scoring=scorer,
    ...                              params={"groups": qid, "propensity": propensity})
    >>> scores.shape, bool(np.all((0 <= scores) & (scores <= 1)))
    ((2,), True)
    """
    return RankingScorer("ips_ndcg", k=k, **metric_params)


#: NDCG@10 with exponential gain, LightGBM's empty-query convention and tie-averaging.
ndcg_scorer = NDCGScorer(k=10)
