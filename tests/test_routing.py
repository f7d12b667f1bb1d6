"""Metadata routing of ``groups`` through searches, cross-validation and pipelines.

``SpyRanker`` writes the ``groups`` each ``fit`` and ``predict`` receives to files, so
that the tests can check, even across ``n_jobs=2`` worker processes, that every fold
saw exactly its own queries.
"""

import uuid
import warnings
from collections import Counter

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import Pipeline

from sklearn_ltr.base import MissingGroupsWarning
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import NDCGScorer, average_precision_score, make_ranking_scorer, ndcg_score, ndcg_scorer
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers import LambdaMARTRanker

CV = GroupKFold(n_splits=3)


class SpyRanker(LambdaMARTRanker):
    """LambdaMARTRanker that logs the groups of every fit and predict under ``log_dir``.

    Defined at module level so that ``clone`` and the ``n_jobs=2`` workers (which
    import it by name) get the same class.
    """

    def __init__(self, log_dir=None, n_estimators=5, num_leaves=7, learning_rate=0.1, min_child_samples=5):
        super().__init__(
            n_estimators=n_estimators, num_leaves=num_leaves, learning_rate=learning_rate,
            min_child_samples=min_child_samples, n_jobs=1, random_state=0,
        )  # fmt: skip
        self.log_dir = log_dir

    def _log(self, method, groups):
        if self.log_dir is not None:
            values = np.array([], dtype=np.int64) if groups is None else np.asarray(groups)
            np.save(self.log_dir / f"{method}-{uuid.uuid4().hex}.npy", values)

    def fit(self, X, y, groups=None, **kwargs):
        self._log("fit", groups)
        return super().fit(X, y, groups, **kwargs)

    def predict(self, X, groups=None):
        self._log("predict", groups)
        return super().predict(X, groups)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=30, n_features=6, shuffle=True, random_state=0)


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _pipeline(log_dir=None):
    return Pipeline([("log1p", Log1pTransformer()), ("rank", SpyRanker(log_dir=log_dir))])


def _logged(log_dir, method):
    return Counter(np.load(path).tobytes() for path in log_dir.glob(f"{method}-*.npy"))


def _assert_folds_saw_own_queries(log_dir, X, y, groups, *, n_candidates, refit=True):
    """Every fit got exactly one training fold's groups (or all, for the refit), every
    predict exactly one test fold's, in row order."""
    folds = list(CV.split(X, y, groups))
    for train, test in folds:
        assert not set(groups[train]) & set(groups[test])
    expected_fits = Counter({groups[train].tobytes(): n_candidates for train, _ in folds})
    if refit:
        expected_fits[groups.tobytes()] += 1
    assert _logged(log_dir, "fit") == expected_fits
    assert set(_logged(log_dir, "predict")) == {groups[test].tobytes() for _, test in folds}


def _manual_cv_scores(make_estimator, X, y, groups, metric):
    scores = []
    for train, test in CV.split(X, y, groups):
        estimator = make_estimator().fit(X[train], y[train], groups=groups[train])
        scores.append(metric(y[test], estimator.predict(X[test]), groups[test]))
    return np.array(scores)


def _ndcg10(y, s, g):
    return ndcg_score(y, s, g, k=10)


def test_grid_search_pipeline(data, routing, tmp_path):
    X, y, groups = data
    grid = {"rank__num_leaves": [3, 7]}
    search = GridSearchCV(_pipeline(tmp_path), grid, cv=CV, scoring=ndcg_scorer).fit(X, y, groups=groups)
    _assert_folds_saw_own_queries(tmp_path, X, y, groups, n_candidates=2)
    # The search's fold scores are the NDCG@10 of each test fold's own queries.
    for i, leaves in enumerate(grid["rank__num_leaves"]):
        pipeline = _pipeline().set_params(rank__num_leaves=leaves)
        expected = _manual_cv_scores(lambda p=pipeline: clone(p), X, y, groups, _ndcg10)
        observed = [search.cv_results_[f"split{j}_test_score"][i] for j in range(3)]
        np.testing.assert_array_equal(observed, expected)
    # GridSearchCV.score routes groups; predict has no groups: use best_estimator_.
    best = search.best_estimator_
    assert search.score(X, y, groups=groups) == ndcg_score(y, best.predict(X, groups=groups), groups, k=10)


def test_randomized_search_pipeline(data, routing, tmp_path):
    X, y, groups = data
    search = RandomizedSearchCV(
        _pipeline(tmp_path), {"rank__learning_rate": [0.05, 0.1, 0.3]}, n_iter=2, cv=CV, scoring=ndcg_scorer,
        random_state=0,
    )  # fmt: skip
    search.fit(X, y, groups=groups)
    _assert_folds_saw_own_queries(tmp_path, X, y, groups, n_candidates=2)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_cross_validate_with_dict_of_scorers(data, routing, tmp_path):
    X, y, groups = data
    scoring = {"ndcg@5": NDCGScorer(k=5), "ndcg@10": ndcg_scorer, "map": make_ranking_scorer("map")}
    result = cross_validate(
        _pipeline(tmp_path), X, y, cv=CV, scoring=scoring, params={"groups": groups}, return_estimator=True
    )
    _assert_folds_saw_own_queries(tmp_path, X, y, groups, n_candidates=1, refit=False)
    for j, (_, test) in enumerate(CV.split(X, y, groups)):
        scores = result["estimator"][j].predict(X[test])
        assert result["test_ndcg@5"][j] == ndcg_score(y[test], scores, groups[test], k=5)
        assert result["test_ndcg@10"][j] == ndcg_score(y[test], scores, groups[test], k=10)
        assert result["test_map"][j] == average_precision_score(y[test], scores, groups[test], k=10)
    assert not np.array_equal(result["test_ndcg@5"], result["test_ndcg@10"])


def test_cross_val_score_params(data, routing, tmp_path):
    X, y, groups = data
    scores = cross_val_score(SpyRanker(tmp_path), X, y, cv=CV, scoring=ndcg_scorer, params={"groups": groups})
    _assert_folds_saw_own_queries(tmp_path, X, y, groups, n_candidates=1, refit=False)
    expected = []
    for train, test in CV.split(X, y, groups):
        ranker = SpyRanker().fit(X[train], y[train], groups[train])
        expected.append(ndcg_score(y[test], ranker.predict(X[test]), groups[test], k=10))
    np.testing.assert_array_equal(scores, expected)


def test_grid_search_n_jobs_2(data, routing, tmp_path):
    X, y, groups = data
    grid = {"rank__num_leaves": [3, 7]}
    parallel = GridSearchCV(_pipeline(tmp_path), grid, cv=CV, scoring=ndcg_scorer, n_jobs=2)
    parallel.fit(X, y, groups=groups)
    _assert_folds_saw_own_queries(tmp_path, X, y, groups, n_candidates=2)  # logged by worker processes
    serial = GridSearchCV(_pipeline(), grid, cv=CV, scoring=ndcg_scorer).fit(X, y, groups=groups)
    np.testing.assert_array_equal(parallel.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"])


def test_without_routing_the_scorer_fails(data):
    """No routing: the fold's groups never reach the scorer, which must refuse to score."""
    X, y, groups = data
    assert not sklearn.get_config()["enable_metadata_routing"]
    search = GridSearchCV(_pipeline(), {"rank__num_leaves": [3, 7]}, cv=CV, scoring=ndcg_scorer, error_score="raise")
    with pytest.raises(ValueError, match=r"set_config\(enable_metadata_routing=True\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MissingGroupsWarning)  # fit also got no groups
            search.fit(X, y, groups=groups)
    # With the default error_score=nan, every score is NaN (not a number) and the warning carries the reason.
    search.set_params(error_score=np.nan)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        search.fit(X, y, groups=groups)
    assert np.isnan(search.cv_results_["mean_test_score"]).all()
    reasons = [str(w.message) for w in record if w.category is not MissingGroupsWarning]
    assert any("enable_metadata_routing=True" in reason for reason in reasons)
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        cross_val_score(
            LambdaMARTRanker(n_estimators=2), X, y, groups=groups, cv=CV, scoring=ndcg_scorer,
            params={"groups": groups}, error_score="raise",
        )  # fmt: skip


def test_without_routing_default_score_refuses(data):
    """scoring=None falls back to RankerMixin.score, which refuses a fold without query ids: never a number."""
    X, y, groups = data
    search = GridSearchCV(SpyRanker(), {"num_leaves": [3]}, cv=CV, error_score="raise")
    with pytest.raises(ValueError, match=r"SpyRanker.score needs the query id.*enable_metadata_routing=True"):
        search.fit(X, y, groups=groups)
    # With scikit-learn's default error_score=nan the failure becomes NaN scores and warnings, not a number.
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        search = GridSearchCV(SpyRanker(), {"num_leaves": [3]}, cv=CV).fit(X, y, groups=groups)
    assert np.isnan(search.cv_results_["mean_test_score"]).all()
    assert any("needs the query id" in str(w.message) for w in record)


def test_pipeline_score_under_routing(data, routing):
    X, y, groups = data
    pipe = _pipeline().fit(X, y, groups=groups)
    assert pipe.score(X, y, groups=groups) == ndcg_scorer(pipe, X, y, groups=groups)
    weights = np.ones(len(y))
    with pytest.raises(ValueError, match=r"sample_weight\] are passed but are not explicitly set"):
        pipe.score(X, y, groups=groups, sample_weight=weights)
    pipe.named_steps["rank"].set_score_request(sample_weight=True)
    with pytest.raises(ValueError, match="does not support sample_weight"):
        pipe.score(X, y, groups=groups, sample_weight=weights)
