"""Metrics given a grouping built once (RankingEvaluator, QueryGroups) equal those given per-row ids."""

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, GroupKFold

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.metrics import (
    RankingEvaluator,
    average_precision_score,
    compare_rankings,
    dcg_score,
    err_score,
    ips_dcg_score,
    ips_ndcg_score,
    mrr_score,
    ndcg_per_query,
    ndcg_score,
    ndcg_scorer,
    precision_at_k,
    swapped_pairs,
)


def _case(seed, n_queries=30, max_len=25, ties=True, string_ids=True):
    """Interleaved, unsorted ids; single-row queries, queries without a relevant row, tied scores."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_len, size=n_queries)
    sizes[0] = 1
    ids = rng.permutation(n_queries * 7)[:n_queries]
    groups = np.repeat(ids, sizes)
    y = rng.choice(5, size=groups.size, p=[0.5, 0.3, 0.12, 0.05, 0.03]).astype(float)
    y[groups == ids[1]] = 0  # no relevant document
    scores = rng.normal(size=groups.size)
    if ties:
        scores = np.round(scores, 1)
    order = rng.permutation(groups.size)
    groups, y, scores = groups[order], y[order], scores[order]
    if string_ids:
        groups = np.char.add("q", groups.astype(str))
    return y, scores, groups


METRICS = [
    (ndcg_score, {}),
    (ndcg_score, {"k": 3}),
    (ndcg_score, {"k": 1, "ties": "stable"}),
    (ndcg_score, {"k": 10, "gain": "linear", "empty_value": 0.0}),
    (ndcg_score, {"k": 5, "empty_value": None}),
    (ndcg_score, {"k": 200}),
    (dcg_score, {"k": 5}),
    (average_precision_score, {"k": 5}),
    (precision_at_k, {"k": 3}),
    (mrr_score, {}),
    (err_score, {"k": 4}),
    (swapped_pairs, {}),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("metric", "options"), METRICS)
def test_prebuilt_grouping_equals_ids(metric, options, seed):
    y, scores, groups = _case(seed, ties=seed % 2 == 0, string_ids=seed % 3 != 0)
    expected = metric(y, scores, groups, **options)
    evaluator = RankingEvaluator(y, groups)
    assert metric(evaluator.y_true, scores, evaluator, **options) == expected
    assert metric(y, scores, QueryGroups(groups), **options) == expected
    # The same evaluator, called again with other scores, gives their value.
    other = np.random.default_rng(seed + 100).normal(size=y.size)
    assert metric(evaluator.y_true, other, evaluator, **options) == metric(y, other, groups, **options)
    assert metric(evaluator.y_true, scores, evaluator, **options) == expected


@pytest.mark.parametrize("seed", range(4))
def test_ips_metrics_with_prebuilt_grouping(seed):
    y, scores, groups = _case(seed)
    clicks = (y > 1).astype(float)
    propensity = np.random.default_rng(seed).uniform(0.1, 1.0, size=y.size)
    for metric in (ips_dcg_score, ips_ndcg_score):
        expected = metric(clicks, scores, groups, propensity, k=5)
        assert metric(clicks, scores, RankingEvaluator(clicks, groups), propensity, k=5) == expected
        assert metric(clicks, scores, QueryGroups(groups), propensity, k=5) == expected


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8),
    k=st.one_of(st.none(), st.integers(1, 14)),
    ties=st.sampled_from(["average", "stable"]),
    gain=st.sampled_from(["exponential", "linear"]),
    data=st.data(),
)
def test_ndcg_per_query_hypothesis(sizes, k, ties, gain, data):
    n = sum(sizes)
    groups = np.repeat(np.arange(len(sizes))[::-1] * 3, sizes)
    perm = np.array(data.draw(st.permutations(range(n))))
    labels = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    scores = np.array(data.draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)), dtype=float)
    groups, labels, scores = groups[perm], labels[perm], scores[perm]
    evaluator = RankingEvaluator(labels, groups)
    ids, expected = ndcg_per_query(labels, scores, groups, k=k, ties=ties, gain=gain, empty_value=None)
    ids2, observed = ndcg_per_query(labels, scores, evaluator, k=k, ties=ties, gain=gain, empty_value=None)
    np.testing.assert_array_equal(ids2, ids)
    np.testing.assert_array_equal(observed, expected)
    # An independent per-query reference: stable ties rank in input order.
    if ties == "stable":
        for q, value in zip(ids, expected, strict=True):
            rows = np.flatnonzero(groups == q)
            ranked = labels[rows][np.argsort(-scores[rows], kind="stable")]
            cut = len(rows) if k is None else min(k, len(rows))
            g = (2.0**ranked - 1) if gain == "exponential" else ranked
            disc = 1 / np.log2(np.arange(cut) + 2.0)
            ideal = (np.sort(g)[::-1][:cut] * disc).sum()
            if ideal == 0:
                assert np.isnan(value)
            else:
                assert value == pytest.approx((g[:cut] * disc).sum() / ideal, abs=1e-12)


def test_evaluator_cache_per_cutoff_and_gain():
    y, scores, groups = _case(1)
    evaluator = RankingEvaluator(y, groups)
    for k in (1, 3, None, 3, 1):
        for gain in ("exponential", "linear"):
            assert evaluator.score(scores, "ndcg", k=k, gain=gain) == ndcg_score(y, scores, groups, k=k, gain=gain)
    assert evaluator.score(scores, "ndcg@3") == ndcg_score(y, scores, groups, k=3)
    np.testing.assert_array_equal(evaluator.per_query(scores, "map@5"),
                                  RankingEvaluator(y, groups).per_query(scores, "map", k=5))


def test_evaluator_with_other_labels_is_not_stale():
    y, scores, groups = _case(2)
    evaluator = RankingEvaluator(y, groups)
    evaluator.score(scores, "ndcg@5")
    relabelled = y[::-1].copy()
    assert ndcg_score(relabelled, scores, evaluator, k=5) == ndcg_score(relabelled, scores, groups, k=5)
    # The evaluator keeps its own copy: changing the array it was built from changes nothing.
    y_mutable = y.copy()
    evaluator = RankingEvaluator(y_mutable, groups)
    before = evaluator.score(scores, "ndcg@5")
    y_mutable[:] = 0
    assert evaluator.score(scores, "ndcg@5") == before
    assert not evaluator.y_true.flags.writeable


def test_mismatched_lengths_name_the_argument():
    y, scores, groups = _case(3)
    evaluator = RankingEvaluator(y, groups)
    with pytest.raises(ValueError, match="groups is a grouping built for"):
        ndcg_score(y[:-1], scores[:-1], evaluator, k=5)
    with pytest.raises(ValueError, match="groups is a grouping built for"):
        average_precision_score(y[:-1], scores[:-1], QueryGroups(groups))
    with pytest.raises(ValueError, match="y_score has"):
        ndcg_score(evaluator.y_true, scores[:-1], evaluator, k=5)
    with pytest.raises(ValueError, match="y_score has"):
        evaluator.score(scores[:-1], "mrr")


def test_uneven_query_sizes_fall_back_to_sorting():
    rng = np.random.default_rng(0)
    groups = np.concatenate([np.zeros(5000, dtype=int), np.arange(1, 400)])
    y = rng.integers(0, 3, size=groups.size).astype(float)
    scores = np.round(rng.normal(size=groups.size), 1)
    evaluator = RankingEvaluator(y, groups)
    assert evaluator._layout() is None
    assert evaluator.score(scores, "ndcg@10") == ndcg_score(y, scores, groups, k=10)


def test_scorer_reuses_the_fold_evaluator():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(40), 10)
    X = rng.normal(size=(groups.size, 3))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=groups.size)), 0, 3)
    scorer = type(ndcg_scorer)(k=5)
    model = LinearRegression().fit(X, y)
    first = scorer(model, X, y, groups=groups)
    cached = scorer._evaluators[next(iter(scorer._evaluators))][2]
    assert first == ndcg_score(y, model.predict(X), groups, k=5)
    # New copies of the same fold hit the cache; other scores give their own value.
    assert scorer(model, X.copy(), y.copy(), groups=groups.copy()) == first
    assert len(scorer._evaluators) == 1 and scorer._evaluators[next(iter(scorer._evaluators))][2] is cached
    other = LinearRegression().fit(X[:, 1:], y)
    assert scorer(other, X[:, 1:], y, groups=groups) == ndcg_score(y, other.predict(X[:, 1:]), groups, k=5)
    # Other labels on the same queries are another fold.
    y2 = y[::-1].copy()
    assert scorer(model, X, y2, groups=groups) == ndcg_score(y2, model.predict(X), groups, k=5)
    import pickle

    assert "_evaluators" not in pickle.loads(pickle.dumps(scorer)).__dict__


def test_grid_search_scores_equal_direct_ndcg():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(30), 8)
    X = rng.normal(size=(groups.size, 4))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=groups.size)), 0, 3)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(LinearRegression(), {"fit_intercept": [True, False]}, cv=GroupKFold(3),
                              scoring=type(ndcg_scorer)(k=5)).fit(X, y, groups=groups)
    for i, params in enumerate(search.cv_results_["params"]):
        for j, (train, test) in enumerate(GroupKFold(3).split(X, y, groups)):
            model = LinearRegression(**params).fit(X[train], y[train])
            expected = ndcg_score(y[test], model.predict(X[test]), groups[test], k=5)
            assert search.cv_results_[f"split{j}_test_score"][i] == expected


def test_compare_rankings_values_unchanged():
    y, scores, groups = _case(4, n_queries=40)
    other = scores + np.random.default_rng(0).normal(scale=0.5, size=scores.size)
    table = compare_rankings(y, scores, {"other": other}, groups, metric="ndcg", k=5, random_state=0)
    expected = ndcg_per_query(y, other, groups, k=5)[1] - ndcg_per_query(y, scores, groups, k=5)[1]
    assert table["other"].mean_difference == pytest.approx(expected.mean(), abs=1e-15)


def test_evaluator_score_and_per_query_by_name_cutoff_and_default():
    """score()/per_query(): "ndcg" by default, a cut-off in the name or as k, each metric's own values."""
    from sklearn_ltr.metrics import mrr_score, ndcg_score

    y_true, groups, y_score = [2, 0, 1, 0, 1, 3], [1, 1, 1, 2, 2, 3], [0.2, 0.9, 0.5, 0.3, 0.7, 0.1]
    evaluator = RankingEvaluator(y_true, groups)
    assert evaluator.score(y_score) == ndcg_score(y_true, y_score, groups)
    assert evaluator.score(y_score, "ndcg@1") == evaluator.score(y_score, "ndcg", k=1) == ndcg_score(
        y_true, y_score, groups, k=1)
    assert evaluator.score(y_score, "mrr") == mrr_score(y_true, y_score, groups)
    # Query 1 ranks grades 0, 1, 2: (1 / log2(3) + 3 / 2) / (3 + 1 / log2(3)) = 0.5869.
    np.testing.assert_allclose(evaluator.per_query(y_score), [0.5869, 1.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(evaluator.per_query(y_score, "ndcg@1"), [0.0, 1.0, 1.0])
    np.testing.assert_allclose(evaluator.per_query(y_score, "mrr"), [0.5, 1.0, 1.0])
    assert repr(evaluator) == "RankingEvaluator(n_samples=6, n_queries=3)"


def test_evaluator_refusals_name_the_evaluator_and_the_fix():
    evaluator = RankingEvaluator([2, 0, 1, 0, 1], [1, 1, 1, 2, 2])
    y_score = [0.2, 0.9, 0.5, 0.3, 0.7]
    with pytest.raises(TypeError, match=r"^RankingEvaluator: metric='ndcg@5' already has a cut-off; do not pass k "
                                        r"too\.$"):
        evaluator.score(y_score, "ndcg@5", k=3)
    for metric in ("nope", "nope@3"):
        with pytest.raises(ValueError, match=r"^The 'metric' parameter of RankingEvaluator must be a registered "
                                             r"metric; got unknown metric 'nope'"):
            evaluator.score(y_score, metric)
    with pytest.raises(ValueError, match=r"^the 'swapped_pairs' metric has no per-query values; use score\(\)\.$"):
        evaluator.per_query(y_score, "swapped_pairs")
