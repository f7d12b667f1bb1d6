"""Tests for sklearn_ltr.preprocessing.QueryNormalizer: values, NaN, invariances, errors and metadata routing."""

import pickle

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score, cross_validate
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ltr import LambdaMARTRanker, Log1pTransformer, ndcg_score, ndcg_scorer
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.preprocessing import QueryNormalizer

METHODS = ["minmax", "zscore", "sum", "rank"]
CV = GroupKFold(n_splits=3)


def _reference(X, qid, method):
    """The definition, one query and one feature at a time (the transformer has no such loop)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.full(X.shape, np.nan)
    for query in np.unique(qid):
        rows = np.flatnonzero(qid == query)
        for j in range(X.shape[1]):
            x = X[rows, j]
            ok = ~np.isnan(x)
            v = x[ok]
            if not v.size:
                continue
            if method == "minmax":
                r = (v - v.min()) / (v.max() - v.min()) if v.max() > v.min() else np.zeros_like(v)
            elif method == "zscore":
                std = v.std()  # 0 for a constant feature, and when the deviations underflow (subnormal values)
                r = np.zeros_like(v) if v.max() == v.min() else (v - v.mean()) / std if std > 0 else v - v.mean()
            elif method == "sum":
                total = np.abs(v).sum()
                r = v / total if total > 0 else np.zeros_like(v)
            elif method == "rank":
                r = (rankdata(v, method="average") - 1) / (v.size - 1) if v.size > 1 else np.full(v.size, 0.5)
            else:
                r = 1 / v
            column = np.full(x.shape, np.nan)
            column[ok] = r
            out[rows, j] = column
    return out


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=24, n_features=4, random_state=0)
    X = np.sign(X) * np.log1p(np.abs(X.astype(np.float64)))
    order = np.random.default_rng(0).permutation(len(y))  # queries interleaved
    return X[order], y[order], qid[order]


def test_public_names():
    import sklearn_ltr.preprocessing

    assert sklearn_ltr.QueryNormalizer is QueryNormalizer
    assert "QueryNormalizer" in sklearn_ltr.__all__ and "QueryNormalizer" in sklearn_ltr.preprocessing.__all__


# ---------------------------------------------------------------------------------------- values by hand
X_HAND = np.array([[1.0, 4.0], [3.0, 4.0], [2.0, -2.0], [10.0, 2.0], [20.0, 2.0]])
Q_HAND = np.array([7, 7, 7, 3, 3])
S = np.sqrt(2 / 3)  # population std of (1, 2, 3)
EXPECTED = {
    "minmax": [[0.0, 1.0], [1.0, 1.0], [0.5, 0.0], [0.0, 0.0], [1.0, 0.0]],
    "zscore": [[-1 / S, 2 / np.sqrt(8)], [1 / S, 2 / np.sqrt(8)], [0.0, -4 / np.sqrt(8)], [-1.0, 0.0], [1.0, 0.0]],
    "sum": [[1 / 6, 0.4], [3 / 6, 0.4], [2 / 6, -0.2], [1 / 3, 0.5], [2 / 3, 0.5]],
    "rank": [[0.0, 0.75], [1.0, 0.75], [0.5, 0.0], [0.0, 0.5], [1.0, 0.5]],
}


@pytest.mark.parametrize("method", METHODS)
def test_values_by_hand(method):
    # Query 7: feature 0 is (1, 3, 2), feature 1 (4, 4, -2) has a tie; query 3 has a constant feature 1.
    Xt = QueryNormalizer(method=method).fit_transform(X_HAND, groups=Q_HAND)
    assert_allclose(Xt, EXPECTED[method], rtol=1e-12, atol=1e-15)
    assert_allclose(Xt, _reference(X_HAND, Q_HAND, method), rtol=1e-12, atol=1e-15)


def test_default_is_letor_query_level_norm():
    assert QueryNormalizer().method == "minmax"


def test_reciprocal_of_ranks_and_nan_kept():
    X = np.array([[1.0, np.nan], [4.0, 2.0], [2.0, 1.0]])
    Xt = QueryNormalizer(method="reciprocal").fit_transform(X, groups=[1, 1, 2])
    assert_array_equal(Xt, [[1.0, np.nan], [0.25, 0.5], [0.5, 1.0]])
    with pytest.raises(ValueError, match=r"takes ranks, 1 for the best document.*X\[1, 0\] is 0.5, below 1"):
        QueryNormalizer(method="reciprocal").fit_transform([[1.0], [0.5]], groups=[1, 1])


def test_rank_ties_are_averaged_and_larger_values_rank_higher():
    x = np.array([[5.0], [1.0], [5.0], [3.0], [5.0]])
    Xt = QueryNormalizer(method="rank").fit_transform(x, groups=np.zeros(5, dtype=int))
    # ranks 5,1,5,2,5 -> ties (3, 4, 5) share 4; scaled (r - 1) / 4
    assert_array_equal(Xt.ravel(), [0.75, 0.0, 0.75, 0.25, 0.75])
    single = QueryNormalizer(method="rank").fit_transform([[2.0], [9.0]], groups=[1, 2])
    assert_array_equal(single.ravel(), [0.5, 0.5])  # a query's only value: tied with itself


def test_constant_features_give_zero_even_when_the_mean_is_inexact():
    # sum(0.1, 0.1, 0.1) / 3 != 0.1 in floating point: a std from the mean would give +-1 instead of 0.
    X = np.full((3, 1), 0.1)
    for method in ("zscore", "minmax"):
        assert_array_equal(QueryNormalizer(method=method).fit_transform(X, groups=[0, 0, 0]), np.zeros((3, 1)))
    assert_array_equal(QueryNormalizer(method="sum").fit_transform(np.zeros((2, 1)), groups=[0, 0]), np.zeros((2, 1)))


# ------------------------------------------------------------------------------------------------- NaN
@pytest.mark.parametrize("method", [*METHODS, "reciprocal"])
def test_nan_is_ignored_by_the_statistics_and_kept(method):
    X = np.array([[1.0, np.nan], [np.nan, np.nan], [3.0, 2.0], [2.0, np.nan], [5.0, 1.0], [9.0, 3.0]])
    qid = np.array([0, 0, 0, 0, 1, 1])
    Xt = QueryNormalizer(method=method).fit_transform(X, groups=qid)
    assert_array_equal(np.isnan(Xt), np.isnan(X))  # NaN in, NaN out; nothing else NaN
    # The statistics of query 0, feature 0 are those of (1, 3, 2): the NaN row changes nothing.
    without = QueryNormalizer(method=method).fit_transform(X[[0, 2, 3]], groups=qid[[0, 2, 3]])
    assert_allclose(Xt[[0, 2, 3], 0], without[:, 0], rtol=1e-12)
    assert_allclose(Xt, _reference(X, qid, method), rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------------------- invariances
@pytest.mark.parametrize("method", METHODS)
def test_row_order_relabelling_and_a_query_alone(method, data):
    X, _, qid = data
    X = X.copy()
    X[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    normalizer = QueryNormalizer(method=method)
    expected = normalizer.fit_transform(X, groups=qid)
    assert_allclose(expected, _reference(X, qid, method), rtol=1e-10, atol=1e-12)
    perm = np.random.default_rng(2).permutation(len(qid))
    assert_allclose(normalizer.fit_transform(X[perm], groups=qid[perm]), expected[perm], rtol=1e-12, atol=1e-15)
    relabelled = np.array([f"q{(97 * int(q)) % 101:03d}" for q in qid])  # strings, another sort order
    assert_allclose(normalizer.fit_transform(X, groups=relabelled), expected, rtol=1e-12, atol=1e-15)
    for query in np.unique(qid)[:3]:
        rows = qid == query
        alone = normalizer.fit_transform(X[rows], groups=qid[rows])
        assert_allclose(alone, expected[rows], rtol=1e-12, atol=1e-15)


_values = st.one_of(st.sampled_from([-2.0, 0.0, 0.5, 1.0, 3.0, np.nan]), st.floats(-1e3, 1e3))


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(METHODS))
def test_property_equals_the_definition(draw, method):
    n_rows = draw.draw(st.integers(1, 25))
    n_features = draw.draw(st.integers(1, 3))
    X = np.array(draw.draw(st.lists(_values, min_size=n_rows * n_features, max_size=n_rows * n_features)))
    X = X.reshape(n_rows, n_features)
    qid = np.array(draw.draw(st.lists(st.integers(0, 4), min_size=n_rows, max_size=n_rows)))
    Xt = QueryNormalizer(method=method).fit_transform(X, groups=qid)
    assert_allclose(Xt, _reference(X, qid, method), rtol=1e-9, atol=1e-12)
    perm = np.array(draw.draw(st.permutations(range(n_rows))))
    assert_allclose(QueryNormalizer(method=method).fit_transform(X[perm], groups=qid[perm]), Xt[perm],
                    rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- scikit-learn conventions
def test_float32_stays_float32_and_other_input_becomes_float64():
    X = X_HAND.astype(np.float32)
    Xt = QueryNormalizer(method="zscore").fit_transform(X, groups=Q_HAND)
    assert Xt.dtype == np.float32
    assert_allclose(Xt, EXPECTED["zscore"], rtol=1e-6)
    assert QueryNormalizer().fit_transform(X_HAND.astype(int), groups=Q_HAND).dtype == np.float64


def test_fit_records_features_clone_pickle_and_feature_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X_HAND, columns=["bm25", "pagerank"])
    normalizer = QueryNormalizer(method="rank").fit(frame, groups=Q_HAND)
    assert normalizer.n_features_in_ == 2 and list(normalizer.feature_names_in_) == ["bm25", "pagerank"]
    assert list(normalizer.get_feature_names_out()) == ["bm25", "pagerank"]
    assert clone(normalizer).get_params() == {"method": "rank"}
    loaded = pickle.loads(pickle.dumps(normalizer))
    assert_array_equal(loaded.transform(frame, groups=Q_HAND), normalizer.transform(frame, groups=Q_HAND))
    out = normalizer.set_output(transform="pandas").transform(frame, groups=Q_HAND)
    assert list(out.columns) == ["bm25", "pagerank"]
    with pytest.raises(ValueError, match="X has 3 features, but QueryNormalizer is expecting 2"):
        QueryNormalizer().fit(X_HAND, groups=Q_HAND).transform(np.ones((5, 3)), groups=Q_HAND)


def test_stateless_transform_works_unfitted():
    assert_allclose(QueryNormalizer().transform(X_HAND, groups=Q_HAND), EXPECTED["minmax"])


def test_skops_round_trip_with_trusted_types(data):
    sio = pytest.importorskip("skops.io")
    from sklearn_ltr.utils.persistence import TRUSTED_TYPES

    X, _, qid = data
    normalizer = QueryNormalizer(method="zscore").fit(X, groups=qid)
    loaded = sio.loads(sio.dumps(normalizer), trusted=TRUSTED_TYPES)
    assert_array_equal(loaded.transform(X, groups=qid), normalizer.transform(X, groups=qid))


# ------------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("call", ["transform", "fit_transform"])
def test_missing_groups_is_an_error_that_names_routing(call):
    normalizer = QueryNormalizer().fit(X_HAND)
    with pytest.raises(ValueError) as error:
        getattr(normalizer, call)(X_HAND)
    message = str(error.value)
    assert f"QueryNormalizer.{call} needs groups" in message
    assert "sklearn.set_config(enable_metadata_routing=True)" in message and "groups=" in message


def test_wrong_groups_and_bad_input():
    with pytest.raises(ValueError, match="groups has 4 entries but X has 5 rows"):
        QueryNormalizer().fit_transform(X_HAND, groups=Q_HAND[:4])
    with pytest.raises(ValueError, match="groups has 4 entries but X has 5 rows"):
        QueryNormalizer().fit(X_HAND, groups=Q_HAND[:4])
    with pytest.raises(ValueError, match="NaN or infinite query ids"):
        QueryNormalizer().transform(X_HAND, groups=[1.0, 1.0, np.nan, 2.0, 2.0])
    import scipy.sparse as sp

    with pytest.raises(TypeError, match=r"does not take sparse X.*X\.toarray\(\)"):
        QueryNormalizer().fit_transform(sp.csr_matrix(X_HAND), groups=Q_HAND)
    with pytest.raises(ValueError, match="infinity"):
        QueryNormalizer().fit_transform(np.where(X_HAND > 15, np.inf, X_HAND), groups=Q_HAND)
    with pytest.raises(InvalidParameterError, match="'method' parameter of QueryNormalizer"):
        QueryNormalizer(method="l2").fit(X_HAND)
    with pytest.raises(InvalidParameterError, match="'method' parameter of QueryNormalizer"):
        QueryNormalizer(method="l2").transform(X_HAND, groups=Q_HAND)


# ----------------------------------------------------------------------------------- metadata routing
class RecordingRanker(LambdaMARTRanker):
    """LambdaMARTRanker that keeps the features its last ``fit`` saw."""

    def fit(self, X, y, groups=None, **kwargs):
        self.X_fit_ = np.array(X)
        return super().fit(X, y, groups, **kwargs)


def _pipeline(method="zscore"):
    return Pipeline([("norm", QueryNormalizer(method=method)),
                     ("rank", RecordingRanker(n_estimators=5, num_leaves=7, min_child_samples=5, random_state=0,
                                              n_jobs=1))])


def test_requests_groups_by_default():
    routing = QueryNormalizer().get_metadata_routing()
    for method in ("fit", "transform", "fit_transform"):
        assert routing.consumes(method, ["groups"]) == {"groups"}, method


def test_pipeline_fit_predict_score_with_routing(data):
    X, y, qid = data
    expected_X = QueryNormalizer(method="zscore").fit_transform(X, groups=qid)
    ranker = RecordingRanker(n_estimators=5, num_leaves=7, min_child_samples=5, random_state=0, n_jobs=1)
    ranker.fit(expected_X, y, groups=qid)
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = _pipeline().fit(X, y, groups=qid)  # no set_*_request call anywhere
        assert_array_equal(pipeline[-1].X_fit_, expected_X)  # normalised per query, not as one query
        one_query = QueryNormalizer(method="zscore").fit_transform(X, groups=np.zeros(len(qid)))
        assert not np.allclose(pipeline[-1].X_fit_, one_query)
        scores = pipeline.predict(X, groups=qid)
        assert_array_equal(scores, ranker.predict(expected_X))
        assert pipeline.score(X, y, groups=qid) == ndcg_score(y, scores, qid, k=10)
        # A query predicted alone gets the scores it gets among the others.
        rows = qid == qid[0]
        assert_array_equal(pipeline.predict(X[rows], groups=qid[rows]), scores[rows])
        with pytest.raises(ValueError, match="enable_metadata_routing"):
            pipeline.predict(X)


def test_pipeline_without_routing_needs_step_params_and_says_how(data):
    X, y, qid = data
    pipeline = _pipeline().fit(X, y, norm__groups=qid, rank__groups=qid)
    assert_array_equal(pipeline[-1].X_fit_, QueryNormalizer(method="zscore").fit_transform(X, groups=qid))
    with pytest.raises(ValueError, match=r"sklearn\.set_config\(enable_metadata_routing=True\)"):
        pipeline.predict(X, groups=qid)  # without routing a Pipeline gives predict's groups to the last step only


def test_grid_search_with_group_kfold_routes_groups(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(_pipeline(), {"norm__method": ["minmax", "rank"]}, cv=CV, scoring=ndcg_scorer,
                              error_score="raise")
        search.fit(X, y, groups=qid)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    best = search.best_estimator_
    expected_X = QueryNormalizer(method=search.best_params_["norm__method"]).fit_transform(X, groups=qid)
    assert_array_equal(best[-1].X_fit_, expected_X)


def test_cross_val_score_routes_groups_to_fit_transform_and_predict(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(_pipeline(), X, y, cv=CV, scoring=ndcg_scorer, params={"groups": qid},
                                 error_score="raise")
        results = cross_validate(_pipeline(), X, y, cv=CV, scoring=ndcg_scorer, params={"groups": qid},
                                 return_estimator=True, return_indices=True, error_score="raise")
    # Each fold by hand: normalise the training queries and the test queries, each query on its own.
    expected = []
    for train, test in CV.split(X, y, groups=qid):
        Xtr = QueryNormalizer(method="zscore").fit_transform(X[train], groups=qid[train])
        ranker = LambdaMARTRanker(n_estimators=5, num_leaves=7, min_child_samples=5, random_state=0, n_jobs=1)
        ranker.fit(Xtr, y[train], groups=qid[train])
        Xte = QueryNormalizer(method="zscore").fit_transform(X[test], groups=qid[test])
        expected.append(ndcg_score(y[test], ranker.predict(Xte), qid[test], k=10))
    assert_allclose(scores, expected, rtol=1e-12)
    for estimator, train in zip(results["estimator"], results["indices"]["train"], strict=True):
        assert_array_equal(estimator[-1].X_fit_,
                           QueryNormalizer(method="zscore").fit_transform(X[train], groups=qid[train]))


def test_neural_ranker_after_it_in_a_pipeline(data):
    from sklearn_ltr import RankNetRanker

    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = make_pipeline(Log1pTransformer(), QueryNormalizer(method="zscore"),
                                 RankNetRanker(hidden_sizes=(8,), max_epochs=2, random_state=0))
        scores = cross_val_score(pipeline, X, y, cv=CV, scoring=ndcg_scorer, params={"groups": qid},
                                 error_score="raise")
    assert np.isfinite(scores).all()
