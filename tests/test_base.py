"""Tests of the ranker base class: tags, routing requests, groups handling, score."""

import doctest
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags

import sklearn_ltr.base
from sklearn_ltr.base import BaseRanker, MissingGroupsWarning, RankerMixin
from sklearn_ltr.metrics import ndcg_score, ndcg_scorer
from sklearn_ltr.preprocessing import Log1pTransformer

CALLS = []  # (method, groups) seen by RecordingRanker; filled in the test process (n_jobs=1)


class RecordingRanker(BaseRanker):
    """Scores rows by ``X @ coef``; records the ``groups`` every method received."""

    def __init__(self, coef=1.0):
        self.coef = coef

    def fit(self, X, y, groups=None):
        X, y, query_groups = self._validate_fit_data(X, y, groups)
        CALLS.append(("fit", None if groups is None else np.asarray(groups).copy()))
        self.n_queries_ = query_groups.n_queries
        return self

    def predict(self, X, groups=None):
        X = self._validate_predict_data(X, groups)
        CALLS.append(("predict", None if groups is None else np.asarray(groups).copy()))
        return X[:, 0] * self.coef + X[:, 1]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 0] > 1)
    groups = rng.permutation(np.repeat(np.arange(12), 10))  # 12 interleaved queries
    return X, y, groups


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    yield
    sklearn.set_config(enable_metadata_routing=False)


def test_default_metadata_requests():
    routing = RecordingRanker().get_metadata_routing()
    for method in ("fit", "predict", "score"):
        assert getattr(routing, method).requests["groups"] is True
    # score keeps sample_weight in its signature (Pipeline.score needs it) without requesting it.
    assert routing.score.requests["sample_weight"] is None


def test_tags_are_ranker_tags():
    tags = get_tags(RecordingRanker())
    assert tags.estimator_type == "ranker"
    assert tags.target_tags.required
    assert not is_regressor(RecordingRanker()) and not is_classifier(RecordingRanker())
    assert not tags.input_tags.sparse and not tags.input_tags.allow_nan
    pipe = Pipeline([("log1p", Log1pTransformer()), ("rank", RecordingRanker())])
    assert get_tags(pipe).estimator_type == "ranker"
    assert get_tags(GridSearchCV(pipe, {"rank__coef": [1.0]})).estimator_type == "ranker"


def test_mixin_order_in_mro():
    mro = RecordingRanker.__mro__
    assert mro.index(RankerMixin) < mro.index(sklearn.base.BaseEstimator)


def test_score_is_ndcg_at_10(data):
    X, y, groups = data
    ranker = RecordingRanker(coef=-0.5).fit(X, y, groups)
    expected = ndcg_score(y, X[:, 0] * -0.5 + X[:, 1], groups, k=10)
    assert ranker.score(X, y, groups) == pytest.approx(expected, abs=0, rel=1e-15)
    assert ranker.score(X, y, groups) == ndcg_scorer(ranker, X, y, groups=groups)
    assert 0.0 < expected < 1.0


def test_score_rejects_sample_weight(data):
    X, y, groups = data
    ranker = RecordingRanker().fit(X, y, groups)
    with pytest.raises(ValueError, match="does not support sample_weight"):
        ranker.score(X, y, groups, sample_weight=np.ones(len(y)))


def test_groups_none_is_one_query_with_warning(data):
    X, y, _ = data
    with pytest.warns(MissingGroupsWarning, match=r"ONE query.*enable_metadata_routing=True"):
        ranker = RecordingRanker().fit(X, y)
    assert ranker.n_queries_ == 1
    # score never computes a one-query number: missing query ids are an error there.
    with pytest.raises(ValueError, match=r"RecordingRanker.score needs the query id.*query_column="):
        ranker.score(X, y)
    assert ranker.score(X, y, np.zeros(len(y))) == ndcg_score(y, ranker.predict(X), np.zeros(len(y)), k=10)
    # With routing on, the hint about set_config is dropped but the warning stays.
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.warns(MissingGroupsWarning) as record:
            RecordingRanker().fit(X, y)
    assert "set_config" not in str(record[0].message)
    # A single row is a single query: nothing to warn about.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RecordingRanker().fit(X[:1], y[:1])


def test_validation_errors(data):
    X, y, groups = data
    with pytest.raises(ValueError, match="groups has 119 entries but X has 120 rows"):
        RecordingRanker().fit(X, y, groups[:-1])
    with pytest.raises(ValueError, match="negative labels"):
        RecordingRanker().fit(X, y - 1, groups)
    ranker = RecordingRanker().fit(X, y, groups)
    with pytest.raises(ValueError, match="groups has 3 entries but X has 120 rows"):
        ranker.predict(X, groups=groups[:3])
    with pytest.raises(ValueError, match="expecting 3 features"):
        ranker.predict(X[:, :2])
    with pytest.raises(ValueError, match=r"^X contains NaN \(\d+ values; the first in row \d+, column \d+\): "
                                         r"RecordingRanker cannot take missing values"):
        RecordingRanker().fit(np.where(X > 1, np.nan, X), y, groups)
    with pytest.raises(ValueError, match=r"^y has 119 entries but X has 120 rows; pass one relevance label per row"):
        RecordingRanker().fit(X, y[:-1], groups)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        RecordingRanker().predict(X)


def test_dataframe_feature_names_and_pickle(data):
    X, y, groups = data
    frame = pd.DataFrame(X, columns=["bm25", "pagerank", "length"])
    ranker = RecordingRanker().fit(frame, y, groups)
    assert ranker.n_features_in_ == 3
    assert list(ranker.feature_names_in_) == ["bm25", "pagerank", "length"]
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        ranker.predict(X)
    restored = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(restored.predict(frame), ranker.predict(frame))
    assert clone(ranker).get_params() == {"coef": 1.0}


def test_groups_routed_through_pipeline_and_search(data):
    """Routing: groups reach fit, predict and score with no set_*_request call."""
    X, y, groups = data
    sklearn.set_config(enable_metadata_routing=True)
    pipe = Pipeline([("log1p", Log1pTransformer()), ("rank", RecordingRanker())])
    pipe.fit(X, y, groups=groups)
    pipe.predict(X, groups=groups)
    score = pipe.score(X, y, groups=groups)
    assert [method for method, _ in CALLS] == ["fit", "predict", "predict"]
    assert all(np.array_equal(seen, groups) for _, seen in CALLS)
    assert score == ndcg_score(y, pipe.predict(X, groups=groups), groups, k=10)

    CALLS.clear()
    cv = GroupKFold(n_splits=3)
    search = GridSearchCV(pipe, {"rank__coef": [0.5, 2.0]}, cv=cv, scoring=None)
    search.fit(X, y, groups=groups)
    folds = list(cv.split(X, y, groups))
    fits = [seen for method, seen in CALLS if method == "fit"]
    predicts = [seen for method, seen in CALLS if method == "predict"]
    # 2 candidates x 3 folds + the refit; each fold saw exactly its training / test rows' queries.
    assert len(fits) == 7 and len(predicts) == 6
    expected_train = [groups[train] for _ in range(2) for train, _ in folds]
    expected_test = [groups[test] for _ in range(2) for _, test in folds]
    assert sorted(map(bytes, fits[:6])) == sorted(map(bytes, expected_train))
    assert sorted(map(bytes, predicts)) == sorted(map(bytes, expected_test))
    np.testing.assert_array_equal(fits[6], groups)
    # scoring=None uses RankerMixin.score with the routed test-fold groups.
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_doctests():
    results = doctest.testmod(sklearn_ltr.base, optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0 and results.failed == 0
