"""Routing-aware ranking scorers."""

import math
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score, cross_validate

from sklearn_ltr import NDCGScorer, RankingScorer, make_ranking_scorer, ndcg_scorer
from sklearn_ltr.metrics import (
    average_precision_score,
    err_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    swapped_pairs,
)
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError


class GroupRecordingRegressor(RegressorMixin, BaseEstimator):
    """Linear model whose predict takes groups and records every call's ids."""

    __metadata_request__predict = {"groups": True}  # noqa: RUF012

    def fit(self, X, y):
        self.model_ = LinearRegression().fit(X, y)
        self.seen_ = []
        return self

    def predict(self, X, groups=None):
        self.seen_.append(None if groups is None else np.asarray(groups).copy())
        return self.model_.predict(X)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.clip(np.rint(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=400) + 1), 0, 4).astype(int)
    qid = rng.integers(0, 40, size=400)
    return X, y, qid


def test_scorer_predicts_with_groups_and_scores_per_query(data):
    X, y, qid = data
    model = GroupRecordingRegressor().fit(X, y)
    value = ndcg_scorer(model, X, y, groups=qid)
    np.testing.assert_array_equal(model.seen_[-1], qid)
    assert value == pytest.approx(ndcg_score(y, model.predict(X), qid, k=10))
    assert 0.5 < value < 1.0


def test_scorer_for_pointwise_estimator_without_groups_in_predict(data):
    X, y, qid = data
    model = LinearRegression().fit(X, y)
    assert NDCGScorer(k=5)(model, X, y, groups=qid) == pytest.approx(ndcg_score(y, model.predict(X), qid, k=5))


@pytest.mark.parametrize(
    ("name", "metric", "kwargs"),
    [
        ("ndcg", ndcg_score, {"k": 3, "gain": "linear"}),
        ("map", average_precision_score, {"k": 5, "empty_value": 0.0}),
        ("precision", precision_at_k, {"k": 5}),
        ("mrr", mrr_score, {"k": None}),
        ("err", err_score, {"k": 10, "max_grade": 4}),
    ],
)
def test_make_ranking_scorer_matches_metric(data, name, metric, kwargs):
    X, y, qid = data
    model = LinearRegression().fit(X, y)
    scorer = make_ranking_scorer(name, **kwargs)
    assert scorer(model, X, y, groups=qid) == pytest.approx(metric(y, model.predict(X), qid, **kwargs))


def test_swapped_pairs_scorer_is_negated_fraction(data):
    X, y, qid = data
    model = LinearRegression().fit(X, y)
    value = make_ranking_scorer("swapped_pairs")(model, X, y, groups=qid)
    assert value == pytest.approx(-swapped_pairs(y, model.predict(X), qid, normalize=True))
    assert -1 < value < 0


def test_missing_groups_names_metadata_routing(data):
    X, y, _ = data
    model = LinearRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"sklearn.set_config\(enable_metadata_routing=True\)"):
        ndcg_scorer(model, X, y)
    with pytest.raises(ValueError, match="does not support sample_weight"):
        ndcg_scorer(model, X, y, groups=np.zeros(len(y)), sample_weight=np.ones(len(y)))


# Every declared parameter of the scorers: (bad value, why it is bad). Each must raise
# InvalidParameterError (a ValueError) naming the parameter when the scorer is built, before
# any search starts, never halfway through one.
BAD_VALUES = {
    "metric": [(3, "type"), (None, "type"), ("auc", "value"), ("NDCG", "value")],
    "k": [("3", "type"), (2.5, "type"), (True, "type"), (0, "value"), (-1, "value")],
    "gain": [(1, "type"), (None, "type"), ("log", "value")],
    "ties": [(None, "type"), ("random", "value")],
    "empty_value": [("1", "type"), (False, "type"), (2, "value"), (-0.5, "value"), (math.nan, "value")],
    "max_grade": [("4", "type"), (-1, "value"), (math.inf, "value")],
    "clip": [("0.1", "type"), (None, "type"), (0, "value"), (1.5, "value"), (math.nan, "value")],
}
# metric name -> options its scorer takes besides ``k``.
METRIC_OPTIONS = {
    "ndcg": ["gain", "empty_value", "ties"],
    "dcg": ["gain", "ties"],
    "map": ["empty_value"],
    "precision": [],
    "mrr": [],
    "err": ["max_grade"],
    "swapped_pairs": [],
    "ips_dcg": ["clip", "ties"],
    "ips_ndcg": ["clip", "empty_value", "ties"],
}


def _scorer_cases():
    for name in ("k", "gain", "empty_value", "ties"):
        for value, kind in BAD_VALUES[name]:
            yield pytest.param(lambda n=name, v=value: NDCGScorer(**{n: v}), "NDCGScorer", name,
                               id=f"NDCGScorer-{name}-{kind}-{value!r}")
    for value, kind in BAD_VALUES["metric"]:
        yield pytest.param(lambda v=value: RankingScorer(v), "RankingScorer", "metric", id=f"metric-{kind}-{value!r}")
        yield pytest.param(lambda v=value: make_ranking_scorer(v), "RankingScorer", "metric",
                           id=f"make-metric-{kind}-{value!r}")
    for metric, options in METRIC_OPTIONS.items():
        owner = "NDCGScorer" if metric == "ndcg" else "RankingScorer"
        for name in ["k", *options]:
            for value, kind in BAD_VALUES[name]:
                yield pytest.param(lambda m=metric, n=name, v=value: make_ranking_scorer(m, **{n: v}), owner, name,
                                   id=f"{metric}-{name}-{kind}-{value!r}")
                yield pytest.param(lambda m=metric, n=name, v=value: RankingScorer(m, **{n: v}), "RankingScorer",
                                   name, id=f"RankingScorer-{metric}-{name}-{kind}-{value!r}")
    yield pytest.param(lambda: make_ranking_scorer("precision", k=None), "RankingScorer", "k", id="precision-k-None")


@pytest.mark.parametrize(("build", "owner", "name"), list(_scorer_cases()))
def test_bad_parameter_fails_at_construction_naming_it(build, owner, name):
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of {owner} must be"):
        build()


def test_parameter_constraints_are_declared():
    # Declared as scikit-learn constraints: a class attribute, parameter -> list of constraints.
    for cls in (RankingScorer, NDCGScorer):
        constraints = cls._parameter_constraints
        assert isinstance(constraints, dict) and all(isinstance(c, list) for c in constraints.values())
    assert set(NDCGScorer._parameter_constraints) == {"k", "gain", "empty_value", "ties"}
    options = {name for names in METRIC_OPTIONS.values() for name in names}
    assert set(RankingScorer._parameter_constraints) == {"metric", "k", *options}


def test_every_metric_option_is_covered():
    # Guards METRIC_OPTIONS: the options a scorer accepts are the metric's keyword parameters.
    import inspect

    from sklearn_ltr.metrics import METRICS

    assert set(METRIC_OPTIONS) == set(METRICS)
    for metric, options in METRIC_OPTIONS.items():
        function, takes_k = METRICS[metric].score, METRICS[metric].takes_k
        keywords = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert keywords == (["k", *options] if takes_k else options), metric


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda: NDCGScorer(k=5, cutoff=3), "cutoff"),
        (lambda: make_ranking_scorer("map", gain="linear"), "gain"),
        (lambda: make_ranking_scorer("swapped_pairs", normalize=False), "normalize"),
        (lambda: make_ranking_scorer("err", empty_value=0.0), "empty_value"),
    ],
)
def test_unknown_option_is_a_type_error_naming_it(build, option):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{option}'; its options are"):
        build()


def test_valid_parameters_accepted():
    assert NDCGScorer(k=np.int64(3), empty_value=np.float64(0.0)).k == 3
    assert make_ranking_scorer("err", k=None, max_grade=4).k is None
    assert make_ranking_scorer("swapped_pairs").metric == "swapped_pairs"


def test_repr_and_pickle(data):
    X, y, qid = data
    assert repr(ndcg_scorer) == "NDCGScorer(k=10)"
    assert repr(NDCGScorer(k=5, empty_value=0.0)) == "NDCGScorer(k=5, empty_value=0.0)"
    assert repr(RankingScorer("map", k=3)) == "RankingScorer('map', k=3)"
    model = LinearRegression().fit(X, y)
    restored = pickle.loads(pickle.dumps(NDCGScorer(k=3)))
    assert restored(model, X, y, groups=qid) == NDCGScorer(k=3)(model, X, y, groups=qid)


def _fold_scores_by_hand(X, y, qid, k=10):
    scores = []
    for train, test in GroupKFold(3).split(X, y, qid):
        model = LinearRegression().fit(X[train], y[train])
        scores.append(ndcg_score(y[test], model.predict(X[test]), qid[test], k=k))
    return scores


def test_routing_gives_each_fold_its_own_queries(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(
            GroupRecordingRegressor(), X, y, cv=GroupKFold(3), scoring=ndcg_scorer, params={"groups": qid}
        )
        results = cross_validate(
            GroupRecordingRegressor(),
            X,
            y,
            cv=GroupKFold(3),
            scoring={"ndcg@5": NDCGScorer(k=5), "map": make_ranking_scorer("map")},
            params={"groups": qid},
            return_estimator=True,
            return_indices=True,
        )
    np.testing.assert_allclose(scores, _fold_scores_by_hand(X, y, qid))
    np.testing.assert_allclose(results["test_ndcg@5"], _fold_scores_by_hand(X, y, qid, k=5))
    for estimator, test in zip(results["estimator"], results["indices"]["test"], strict=True):
        assert all(np.array_equal(seen, qid[test]) for seen in estimator.seen_)


def test_without_routing_scoring_fails_with_the_message(data):
    X, y, qid = data
    search = GridSearchCV(
        LinearRegression(), {"fit_intercept": [True, False]}, cv=GroupKFold(3), scoring=ndcg_scorer,
        error_score="raise",
    )
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        search.fit(X, y, groups=qid)
    # With scikit-learn's default error_score=nan the error becomes a warning and a NaN, never a number.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = cross_val_score(LinearRegression(), X, y, cv=GroupKFold(3), scoring=ndcg_scorer, groups=qid)
    assert np.isnan(scores).all()
    assert any("enable_metadata_routing=True" in str(w.message) for w in caught)


class FitCountingRegressor(LinearRegression):
    """A regressor that counts its fits, to see where a search stops."""

    fits = 0

    def fit(self, X, y):
        type(self).fits += 1
        return super().fit(X, y)


def test_a_search_that_forgot_routing_stops_at_the_first_fold_with_error_score_raise(data):
    X, y, qid = data
    FitCountingRegressor.fits = 0
    search = GridSearchCV(FitCountingRegressor(), {"fit_intercept": [True, False]}, cv=GroupKFold(3),
                          scoring=ndcg_scorer, error_score="raise")
    with pytest.raises(ValueError) as error:
        search.fit(X, y, groups=qid)
    assert FitCountingRegressor.fits == 1  # the first fold's score failed: no further fit
    message = str(error.value)
    assert message.startswith("NDCGScorer(k=10) needs the query id of every test row, but got groups=None. "
                              "Metadata routing is off, so GridSearchCV, cross_validate and cross_val_score pass "
                              "groups to the splitter only, and every fold scores nan: call "
                              "sklearn.set_config(enable_metadata_routing=True) before the search")
    assert "construct it with error_score='raise'" in message


def test_a_search_that_forgot_routing_warns_the_fix_first_and_in_every_fold(data):
    from sklearn_ltr import LambdaMARTRanker, MissingGroupsWarning

    X, y, qid = data
    search = GridSearchCV(LambdaMARTRanker(n_estimators=2, n_jobs=1), {"num_leaves": [3, 7]}, cv=GroupKFold(3),
                          scoring=ndcg_scorer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's default: scikit-learn still shows each fold's warnings
        search.fit(X, y, groups=qid)
    assert np.isnan(search.best_score_)
    first = caught[0]
    assert first.category is MissingGroupsWarning
    assert "sklearn.set_config(enable_metadata_routing=True)" in str(first.message)
    assert "each fold scores nan; error_score='raise' stops a search at the first" in str(first.message)
    failures = [str(w.message) for w in caught if str(w.message).startswith("Scoring failed")]
    assert len(failures) == 6  # 2 candidates x 3 folds, each ending with the scorer's explanation
    assert all("Metadata routing is off" in failure and "error_score='raise'" in failure for failure in failures)


def test_with_routing_on_but_no_groups_the_error_says_routing_is_on(data):
    X, y, _ = data
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError) as error:
            cross_val_score(LinearRegression(), X, y, cv=3, scoring=ndcg_scorer, error_score="raise")
    message = str(error.value)
    assert "Metadata routing is on, but no groups reached the scorer: pass groups to the search's" in message
    assert "Metadata routing is off" not in message
    with pytest.raises(ValueError, match="Metadata routing is off"):  # and the context is read at each call
        ndcg_scorer(LinearRegression().fit(X, y), X, y)
