"""The counterfactual NDCG scorer: propensities routed like groups, model selection on a click log."""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate

from sklearn_ltr.datasets import observation_propensity, simulate_clicks
from sklearn_ltr.metrics import (
    RankingScorer,
    ips_dcg_score,
    ips_ndcg_score,
    ips_ndcg_scorer,
    make_ranking_scorer,
    ndcg_scorer,
)
from sklearn_ltr.rankers import LambdaMARTRanker


class ColumnRanker(BaseEstimator):
    """Scores ``X[:, column]``; requests ``groups`` like the library's rankers."""

    __metadata_request__fit = __metadata_request__predict = {"groups": True}  # noqa: RUF012

    def __init__(self, column=0):
        self.column = column

    def fit(self, X, y, groups=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X, groups=None):
        return np.asarray(X)[:, self.column].astype(float)


@pytest.fixture(scope="module")
def log():
    """A click log of 90 queries: feature 1 is the relevance plus noise, features 0 and 2 are noise."""
    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(90), rng.integers(4, 11, size=90))
    y = rng.choice(5, size=groups.size, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    X = rng.normal(size=(groups.size, 3))
    X[:, 1] += y
    X[:, 2] += 0.3 * y
    positions, clicks = simulate_clicks(y, groups, w=0.3, y_max=4, random_state=2)
    return X, y, clicks, groups, observation_propensity(positions)


def test_direct_call_equals_the_metric(log):
    X, _, clicks, groups, propensity = log
    model = ColumnRanker(column=1)
    scorer = ips_ndcg_scorer(k=5)
    assert repr(scorer) == "RankingScorer('ips_ndcg', k=5)"
    value = scorer(model, X, clicks, groups=groups, propensity=propensity)
    assert value == ips_ndcg_score(clicks, X[:, 1], groups, propensity, k=5)
    options = ips_ndcg_scorer(k=3, clip=0.2, empty_value=None)
    assert options(model, X, clicks, groups=groups, propensity=propensity) == ips_ndcg_score(
        clicks, X[:, 1], groups, propensity, k=3, clip=0.2, empty_value=None)
    dcg = make_ranking_scorer("ips_dcg", k=10)
    assert dcg(model, X, clicks, groups=groups, propensity=propensity) == ips_dcg_score(
        clicks, X[:, 1], groups, propensity, k=10)
    restored = pickle.loads(pickle.dumps(scorer))
    assert restored(model, X, clicks, groups=groups, propensity=propensity) == value


def test_missing_or_unexpected_inputs(log):
    X, _, clicks, groups, propensity = log
    model = ColumnRanker()
    with pytest.raises(ValueError, match=r"needs the propensity of every test row for the 'ips_ndcg' metric.*"
                                         r"enable_metadata_routing=True"):
        ips_ndcg_scorer()(model, X, clicks, groups=groups)
    with pytest.raises(ValueError, match="needs the query id of every test row"):
        ips_ndcg_scorer()(model, X, clicks, propensity=propensity)
    with pytest.raises(TypeError, match="unexpected keyword argument 'propensity'"):
        ndcg_scorer(model, X, clicks, groups=groups, propensity=propensity)
    with pytest.raises(ValueError, match="propensity has 3 values but clicks has"):
        ips_ndcg_scorer()(model, X, clicks, groups=groups, propensity=[1.0, 0.5, 0.2])
    with pytest.raises(TypeError, match="unexpected keyword argument 'cutoff'"):
        ips_ndcg_scorer(cutoff=3)
    with pytest.raises(ValueError, match="'clip' parameter of RankingScorer"):
        ips_ndcg_scorer(clip=0.0)


def test_routing_requests_groups_and_propensity():
    requests = ips_ndcg_scorer().get_metadata_routing().score.requests
    assert requests == {"groups": True, "propensity": True}
    assert ndcg_scorer.get_metadata_routing().score.requests == {"groups": True}
    assert RankingScorer("ips_dcg").get_metadata_routing().score.requests == {"groups": True, "propensity": True}


def _fold_scores(estimator, X, clicks, groups, propensity, cv, k):
    """IPS-NDCG@k of each test fold, fitting a clone on its training rows: the reference for the search."""
    scores = []
    for train, test in cv.split(X, clicks, groups):
        model = clone(estimator).fit(X[train], clicks[train], groups=groups[train])
        scores.append(ips_ndcg_score(clicks[test], model.predict(X[test], groups=groups[test]), groups[test],
                                     propensity[test], k=k))
    return np.array(scores)


def test_grid_search_selects_by_the_counterfactual_ndcg(log):
    X, _, clicks, groups, propensity = log
    cv = GroupKFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(ColumnRanker(), {"column": [0, 1, 2]}, cv=cv, scoring=ips_ndcg_scorer(k=10),
                              error_score="raise")
        search.fit(X, clicks, groups=groups, propensity=propensity)
    # Each fold is scored with its own rows' propensities: the scores are those computed fold by fold.
    for index, column in enumerate(search.cv_results_["param_column"]):
        expected = _fold_scores(ColumnRanker(column), X, clicks, groups, propensity, cv, 10)
        got = [search.cv_results_[f"split{j}_test_score"][index] for j in range(3)]
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    # The relevant feature wins, then the weakly relevant one, then noise.
    means = search.cv_results_["mean_test_score"]
    assert search.best_params_ == {"column": 1}
    assert means[1] > means[2] > means[0]


def test_cross_validate_a_ranker_on_clicks(log):
    X, _, clicks, groups, propensity = log
    ranker = LambdaMARTRanker(n_estimators=5, num_leaves=4, min_child_samples=5, n_jobs=1, random_state=0)
    cv = GroupKFold(2)
    scoring = {"ips_ndcg@5": ips_ndcg_scorer(k=5), "ndcg@5": make_ranking_scorer("ndcg", k=5)}
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(ranker, X, clicks, cv=cv, scoring=scoring, error_score="raise",
                                params={"groups": groups, "propensity": propensity})
    np.testing.assert_allclose(result["test_ips_ndcg@5"], _fold_scores(ranker, X, clicks, groups, propensity, cv, 5),
                               rtol=1e-12)
    assert not np.allclose(result["test_ips_ndcg@5"], result["test_ndcg@5"])  # the weights count


def test_without_routing_the_search_says_how_to_route(log):
    X, _, clicks, groups, _ = log
    search = GridSearchCV(ColumnRanker(), {"column": [0, 1]}, cv=GroupKFold(2), scoring=ips_ndcg_scorer(),
                          error_score="raise")
    with pytest.raises(ValueError, match="needs the query id of every test row"):
        search.fit(X, clicks, groups=groups)
