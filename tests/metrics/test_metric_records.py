"""A metric record (:class:`sklearn_ltr.metrics.Metric`): what it refuses, and its score from per-query values."""

import functools

import numpy as np
import pytest

from sklearn_ltr.metrics import METRICS, Metric, dcg_score, ndcg_score, register_metric


def _values(y_true, y_score, groups):
    return np.array([0.5, np.nan, 1.0])


@pytest.mark.parametrize("name", ["", "ndcg@10", "@", 3, None])
def test_a_metric_name_is_a_non_empty_str_without_a_cut_off(name):
    with pytest.raises(ValueError, match=rf"^a metric name must be a non-empty str without '@'; got {name!r}\.$"):
        Metric(name, None, _values)


def test_a_metric_needs_a_function():
    with pytest.raises(ValueError, match=r"^metric 'none' needs a score or a per_query function \(or both\)\.$"):
        Metric("none", None, None)
    assert Metric("score_only", lambda *args: 1.0, None).per_query is None


def test_the_score_of_per_query_values_is_their_mean_over_the_queries_kept():
    """score=None: the mean of the per-query values, leaving out the NaN ones (queries left out)."""
    metric = Metric("half", None, _values, {"unused": []})
    assert metric.score([0], [0], [0]) == 0.75  # (0.5 + 1.0) / 2, the NaN query left out
    assert metric.score.__name__ == "mean__values"
    assert dict(metric.options) == {"unused": []}
    with pytest.raises(TypeError):
        metric.options["k"] = []  # read-only
    partial = Metric("partial", None, functools.partial(_values))  # a callable without a __name__
    assert partial.score.__name__ == "mean_metric"
    assert metric.label == "HALF"


def test_register_metric_takes_a_record():
    with pytest.raises(TypeError, match=r"^register_metric takes a sklearn_ltr\.metrics\.Metric; got 'str'\.$"):
        register_metric("ndcg")


@pytest.mark.parametrize("name", ["dcg", "ndcg"])
@pytest.mark.parametrize("ties", ["average", "stable"])
def test_per_query_values_follow_the_ties_option(name, ties):
    """Tied scores: ``ties="stable"`` ranks them in row order, and the per-query values agree with the score."""
    y_true, y_score, groups = [3, 0, 0, 1, 2, 0], [0.5, 0.5, 0.5, 0.2, 0.2, 0.9], [1, 1, 1, 2, 2, 2]
    score = {"dcg": dcg_score, "ndcg": ndcg_score}[name]
    values = METRICS[name].per_query(y_true, y_score, groups, k=2, ties=ties)
    assert np.mean(values) == pytest.approx(score(y_true, y_score, groups, k=2, ties=ties), rel=1e-12)
    other = METRICS[name].per_query(y_true, y_score, groups, k=2, ties="stable" if ties == "average" else "average")
    assert not np.allclose(values, other), "ties make no difference here: weak test"


def test_unregistering_an_unknown_metric_names_unregister_metric():
    from sklearn_ltr.metrics import unregister_metric

    with pytest.raises(ValueError, match=r"^The 'name' parameter of unregister_metric must be a registered metric; "
                                         r"got unknown metric 'nope'"):
        unregister_metric("nope")
    with pytest.raises(ValueError, match=r"^'ndcg' is a built-in metric of sklearn_ltr; only registered ones"):
        unregister_metric("ndcg")


def test_the_repr_names_the_options_and_conventions():
    assert repr(METRICS["ndcg"]) == ("Metric('ndcg', options: k, gain, empty_value, ties, higher_is_better=True, "
                                     "empty_value=1.0)")
    assert repr(METRICS["swapped_pairs"]) == ("Metric('swapped_pairs', options: none, higher_is_better=False, "
                                              "empty_value=None)")


def test_aliases_given_as_a_list_are_kept_as_a_tuple():
    """The record is hashable (the command line keys its results by metric), whatever sequence the aliases came in."""
    metric = Metric("listed", None, _values, aliases=["l1", "l2"])
    assert metric.aliases == ("l1", "l2")
    assert {metric: 1}[metric] == 1


def test_the_unknown_name_error_lists_the_metrics_the_caller_accepts():
    from sklearn_ltr.metrics import get_metric, unregister_metric

    register_metric(Metric("score_only", lambda *args: 1.0, None, aliases=("so",)))
    register_metric(Metric("after_it", None, _values))
    try:
        with pytest.raises(ValueError) as every:
            get_metric("auc")
        with pytest.raises(ValueError) as per_query:
            get_metric("so", per_query=True)  # known, without per-query values: the others are listed
    finally:
        unregister_metric("score_only")
        unregister_metric("after_it")
    assert ("err[@k], swapped_pairs (no per-query values), ips_dcg[@k] (needs propensity), ips_ndcg[@k] (needs "
            "propensity), score_only (or so; no per-query values), after_it (sklearn_ltr.metrics.METRICS") in str(
        every.value)
    assert str(per_query.value).endswith("the 'score_only' metric has none. A metric must be one of ndcg[@k], "
                                         "dcg[@k], map[@k] (or ap), precision@k (or p, prec), mrr[@k], err[@k], "
                                         "ips_dcg[@k] (needs propensity), ips_ndcg[@k] (needs propensity), after_it.")


def test_a_per_query_only_score_is_the_float64_mean_of_float32_values():
    values = np.array([0.1, 0.2, 0.7, 0.3], dtype=np.float32)
    metric = Metric("single", None, lambda y_true, y_score, groups: values)
    assert metric.score([0], [0], [0]) == np.mean(values.astype(np.float64))
    assert np.mean(values.astype(np.float64)) != np.mean(values)  # float32 sums round otherwise: not a vacuous test
