"""Ranking metrics: hand-computed cases, reference implementations, invariances, bad input."""

import decimal
import functools
import itertools
import math
import warnings
from fractions import Fraction

import lightgbm as lgb
import numpy as np
import pytest
import sklearn
import sklearn.metrics
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr.metrics import (
    _dcg,
    average_precision_score,
    dcg_score,
    err_score,
    mrr_score,
    ndcg_per_query,
    ndcg_score,
    precision_at_k,
    swapped_pairs,
)
from sklearn_ltr.metrics._lists import RankedLists, mean_over_queries, segment_cumprod
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

ALL_METRICS = {
    "ndcg": lambda y, s, g: ndcg_score(y, s, g, k=5),
    "ndcg_stable": lambda y, s, g: ndcg_score(y, s, g, ties="stable"),
    "dcg": lambda y, s, g: dcg_score(y, s, g, k=3, gain="linear"),
    "map": lambda y, s, g: average_precision_score(y, s, g, k=4),
    "precision": lambda y, s, g: precision_at_k(y, s, g, k=2),
    "mrr": lambda y, s, g: mrr_score(y, s, g),
    "err": lambda y, s, g: err_score(y, s, g, max_grade=4),
    "swapped": lambda y, s, g: swapped_pairs(y, s, g),
}


# ---------------------------------------------------------------- reference implementations
# Straightforward per-query loops, written from the textbook definitions.


def _queries(y, s, g):
    y, s, g = map(np.asarray, (y, s, g))
    for q in sorted(set(g.tolist())):
        rows = np.flatnonzero(g == q)
        order = rows[np.argsort(-s[rows], kind="stable")]  # ties in input order
        yield y[order].astype(float), s[order]


def ref_dcg(labels, k, gain):
    g = 2.0**labels - 1 if gain == "exponential" else labels
    n = len(labels) if k is None else min(k, len(labels))
    return sum(g[r] / math.log2(r + 2) for r in range(n))


def ref_ndcg(y, s, g, k=None, gain="exponential", empty_value=1.0):
    values = []
    for labels, _ in _queries(y, s, g):
        ideal = ref_dcg(np.sort(labels)[::-1], k, gain)
        if ideal == 0:
            if empty_value is not None:
                values.append(empty_value)
            continue
        values.append(ref_dcg(labels, k, gain) / ideal)
    return np.mean(values)


def ref_ap(y, s, g, k=None):
    values = []
    for labels, _ in _queries(y, s, g):
        rel = labels > 0
        n_rel = rel.sum()
        if n_rel == 0:
            values.append(1.0)
            continue
        cut = len(labels) if k is None else min(k, len(labels))
        total = sum(rel[: r + 1].sum() / (r + 1) for r in range(cut) if rel[r])
        values.append(total / (n_rel if k is None else min(n_rel, k)))
    return np.mean(values)


def ref_err(y, s, g, max_grade):
    values = []
    for labels, _ in _queries(y, s, g):
        p_reach, err = 1.0, 0.0
        for r, label in enumerate(labels, start=1):
            stop = (2**label - 1) / 2**max_grade
            err += p_reach * stop / r
            p_reach *= 1 - stop
        values.append(err)
    return np.mean(values)


def ref_swapped(y, s, g):
    y, s, g = map(np.asarray, (y, s, g))
    count = 0
    for i in range(len(y)):
        for j in range(len(y)):
            count += g[i] == g[j] and y[i] > y[j] and s[i] < s[j]
    return count


# ---------------------------------------------------------------- hand-computed cases


def test_map_worked_example_of_ltr_overview():
    # Two queries of ten documents; relevant at ranks {1,3,6,9,10} and {2,5,7}.
    y = np.zeros(20, dtype=int)
    y[[0, 2, 5, 8, 9]] = 1
    y[[10 + 1, 10 + 4, 10 + 6]] = 1
    scores = np.tile(np.arange(10, 0, -1), 2).astype(float)
    groups = np.repeat([1, 2], 10)
    ap1 = (1 + 2 / 3 + 3 / 6 + 4 / 9 + 5 / 10) / 5
    ap2 = (1 / 2 + 2 / 5 + 3 / 7) / 3
    assert round(ap1, 2) == 0.62 and round(ap2, 2) == 0.44
    assert average_precision_score(y, scores, groups, k=10) == pytest.approx((ap1 + ap2) / 2)
    assert round(average_precision_score(y, scores, groups, k=10), 2) == 0.53
    # The standard NDCG (log2 discount, ideal = the query's own relevant documents).
    _, per_query = ndcg_per_query(y, scores, groups, k=10)
    d = [1 / math.log2(r + 1) for r in range(1, 11)]
    ndcg1 = (d[0] + d[2] + d[5] + d[8] + d[9]) / sum(d[:5])
    ndcg2 = (d[1] + d[4] + d[6]) / sum(d[:3])
    assert round(ndcg1, 3) == 0.830 and round(ndcg2, 3) == 0.634
    np.testing.assert_allclose(per_query, [ndcg1, ndcg2], rtol=1e-12)


def test_exponential_gain_by_hand():
    y, s = [3, 2, 0, 1], [0.4, 0.9, 0.1, 0.3]
    # ranked labels: 2, 3, 1, 0 -> gains 3, 7, 1, 0
    dcg = 3 / math.log2(2) + 7 / math.log2(3) + 1 / math.log2(4)
    ideal = 7 + 3 / math.log2(3) + 1 / math.log2(4)
    assert dcg_score(y, s, [0] * 4) == pytest.approx(dcg)
    assert ndcg_score(y, s, [0] * 4) == pytest.approx(dcg / ideal)
    assert ndcg_score(y, s, [0] * 4, k=1) == pytest.approx(3 / 7)
    assert ndcg_score(y, s, [0] * 4, k=2) == pytest.approx((3 + 7 / math.log2(3)) / (7 + 3 / math.log2(3)))


def test_other_metrics_by_hand():
    y = [0, 2, 1, 0, 0, 1]
    s = [0.9, 0.8, 0.1, 0.5, 0.6, 0.7]
    g = ["a", "a", "a", "b", "b", "b"]
    # a: labels by rank 0, 2, 1; b: 1, 0, 0
    assert mrr_score(y, s, g) == pytest.approx((1 / 2 + 1) / 2)
    assert mrr_score(y, s, g, k=1) == pytest.approx((0 + 1) / 2)
    assert precision_at_k(y, s, g, k=2) == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert precision_at_k(y, s, g, k=5) == pytest.approx((2 / 5 + 1 / 5) / 2)  # short lists still / k
    assert average_precision_score(y, s, g) == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1) / 2)
    err_a = 0 + (1 / 2) * (3 / 4) + (1 / 4) * (1 / 3) * (1 / 4)
    err_b = 1 / 4
    assert err_score(y, s, g, max_grade=2) == pytest.approx((err_a + err_b) / 2)
    assert swapped_pairs(y, s, g) == 2  # a: the 0 above both the 2 and the 1; b: none


def test_ties_average_and_stable():
    y, s, g = [1, 0], [0.5, 0.5], [0, 0]
    assert ndcg_score(y, s, g, ties="stable") == 1.0
    assert ndcg_score(y, s, g[::-1], ties="stable") == 1.0
    assert ndcg_score(y[::-1], s, g, ties="stable") == pytest.approx(1 / math.log2(3))
    expected = (1 + 1 / math.log2(3)) / 2  # mean discount of the two tied positions
    assert ndcg_score(y, s, g) == pytest.approx(expected)
    assert ndcg_score(y[::-1], s, g) == pytest.approx(expected)
    assert swapped_pairs(y, s, g) == 0


def test_empty_queries():
    y = [0, 0, 1, 0]
    s = [0.1, 0.2, 0.3, 0.4]
    g = [1, 1, 2, 2]  # query 1 has no relevant document; query 2 scores 1/log2(3)
    q2 = 1 / math.log2(3)
    assert ndcg_score(y, s, g) == pytest.approx((1 + q2) / 2)
    assert ndcg_score(y, s, g, empty_value=0.0) == pytest.approx(q2 / 2)
    assert ndcg_score(y, s, g, empty_value=None) == pytest.approx(q2)
    ids, values = ndcg_per_query(y, s, g, empty_value=None)
    assert ids.tolist() == [1, 2] and np.isnan(values[0])
    assert average_precision_score(y, s, g, empty_value=0.0) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="empty_value=None drops them all"):
        ndcg_score([0, 0], [1, 2], [0, 0], empty_value=None)


# ---------------------------------------------------------------- reference implementations


@pytest.mark.parametrize("k", [1, 5, 10, None])
def test_linear_ndcg_equals_scikit_learn(k):
    rng = np.random.default_rng(k or 0)
    n_queries, length = 40, 12
    y = rng.integers(0, 4, size=(n_queries, length))
    y[0] = 0  # scikit-learn scores a query with no relevant document 0
    scores = rng.normal(size=(n_queries, length))
    groups = np.repeat(np.arange(n_queries), length)
    expected = sklearn.metrics.ndcg_score(y, scores, k=k)
    ours = ndcg_score(y.ravel(), scores.ravel(), groups, k=k, gain="linear", empty_value=0.0)
    assert ours == pytest.approx(expected, rel=1e-12)
    # scikit-learn averages ties too.
    tied = np.round(scores)
    expected_tied = sklearn.metrics.ndcg_score(y, tied, k=k)
    assert ndcg_score(y.ravel(), tied.ravel(), groups, k=k, gain="linear", empty_value=0.0) == pytest.approx(
        expected_tied, rel=1e-12
    )


def _lightgbm_log(y, scores, sizes, ks):
    """LightGBM's own ndcg@k and map@k for fixed scores: one no-op boosting round on ``init_score``."""
    X = np.zeros((len(y), 1))
    data = lgb.Dataset(X, y, group=sizes, init_score=scores)
    log = {}
    params = {
        "objective": "lambdarank",
        "metric": ["ndcg", "map"],
        "eval_at": ks,
        "min_data_in_leaf": len(y),  # no split: the round adds one constant, keeping ties
        "learning_rate": 1e-12,
        "boost_from_average": False,
        "verbose": -1,
    }
    lgb.train(params, data, num_boost_round=1, valid_sets=[data], valid_names=["t"],
              callbacks=[lgb.record_evaluation(log)])
    return {name: values[-1] for name, values in log["t"].items()}


@pytest.mark.parametrize("tied", [False, True])
def test_ndcg_and_map_equal_lightgbm_evaluation(tied):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 40, size=60)
    n = sizes.sum()
    y = rng.integers(0, 5, n) * (rng.random(n) < 0.5)
    y[: sizes[0]] = 0  # a query without relevant documents
    scores = rng.normal(size=n)
    if tied:
        scores = np.round(scores, 1)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    ks = [1, 3, 5, 10]
    log = _lightgbm_log(y, scores, sizes, ks)
    ties = "stable" if tied else "average"  # LightGBM ranks ties in row order
    for k in ks:
        assert ndcg_score(y, scores, groups, k=k, ties=ties) == pytest.approx(log[f"ndcg@{k}"], abs=1e-12)
        assert average_precision_score(y, scores, groups, k=k) == pytest.approx(log[f"map@{k}"], abs=1e-12)


lists = st.integers(min_value=1, max_value=8).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),  # small range: many ties
        st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(lists, st.sampled_from([1, 3, None]))
def test_metrics_match_reference_loops(data, k):
    y, s, g = data
    assert ndcg_score(y, s, g, k=k, ties="stable") == pytest.approx(ref_ndcg(y, s, g, k))
    assert ndcg_score(y, s, g, k=k, ties="stable", gain="linear", empty_value=None) == pytest.approx(
        ref_ndcg(y, s, g, k, gain="linear", empty_value=None)
    ) if any(v > 0 for v in y) else True
    assert average_precision_score(y, s, g, k=k) == pytest.approx(ref_ap(y, s, g, k))
    assert err_score(y, s, g, max_grade=4) == pytest.approx(ref_err(y, s, g, 4))
    assert swapped_pairs(y, s, g) == ref_swapped(y, s, g)


# ---------------------------------------------------------------- invariances


def _unique_scores(draw, n):
    return draw(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=n, max_size=n, unique=True))


@st.composite
def ranking_data(draw):
    n = draw(st.integers(min_value=1, max_value=30))
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    s = np.array(_unique_scores(draw, n))
    g = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    seed = draw(st.integers(0, 2**32 - 1))
    return y, s, g, seed


@settings(max_examples=100, deadline=None)
@given(ranking_data())
def test_metrics_invariant_to_row_order_and_query_relabelling(data):
    y, s, g, seed = data
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    # Relabel the ids: a random injective map onto strings, which also changes their sort order.
    unique_ids = np.unique(g)
    new_ids = {q: f"id{v}" for q, v in zip(unique_ids, rng.permutation(100)[: len(unique_ids)], strict=True)}
    relabelled = np.array([new_ids[q] for q in g])
    for name, metric in ALL_METRICS.items():
        base = metric(y, s, g)
        assert metric(y[perm], s[perm], g[perm]) == pytest.approx(base), name
        assert metric(y, s, relabelled) == pytest.approx(base), name


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_interleaved_queries_equal_contiguous(sizes, seed):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y = rng.integers(0, 5, n)
    s = rng.permutation(n).astype(float)
    g = np.repeat(np.arange(len(sizes)), sizes)
    interleave = np.argsort(rng.random(n))
    for name, metric in ALL_METRICS.items():
        assert metric(y[interleave], s[interleave], g[interleave]) == pytest.approx(metric(y, s, g)), name


def test_ndcg_average_ties_independent_of_row_order():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 500)
    s = rng.integers(0, 4, 500).astype(float)  # heavy ties
    g = rng.integers(0, 20, 500)
    perm = rng.permutation(500)
    assert ndcg_score(y[perm], s[perm], g[perm], k=5) == pytest.approx(ndcg_score(y, s, g, k=5))


@settings(max_examples=100, deadline=None)
@given(ranking_data())
def test_swapped_pairs_perfect_and_reversed(data):
    y, _, g, _ = data
    perfect = y + np.arange(len(y)) * 1e-6  # distinct scores ordered by label
    assert swapped_pairs(y, perfect, g) == 0
    reverse = -perfect
    unequal = sum(((g == q)[:, None] & (g == q)[None, :] & (y[:, None] > y[None, :])).sum() for q in np.unique(g))
    assert swapped_pairs(y, reverse, g) == unequal
    assert swapped_pairs(y, reverse, g, normalize=True) == (1.0 if unequal else 0.0)
    assert ndcg_score(y, perfect, g) == pytest.approx(1.0)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y_true": [1, 0, 1], "y_score": [1, 2, 3]}, "groups has 2 entries but y_true has 3"),
        ({"y_score": [0.1, 0.2, 0.3]}, "y_score has 3 entries but y_true has 2"),
        ({"y_score": [0.1, np.nan]}, "y_score contains NaN"),
        ({"y_score": [0.1, np.inf]}, "y_score contains NaN or infinite"),
        ({"y_true": [1, -1]}, "y_true contains negative labels"),
        ({"y_true": [1, np.nan]}, "y_true contains NaN"),
        ({"y_true": [], "y_score": [], "groups": []}, "y_true is empty"),
        ({"groups": [1, None]}, "groups contains None or NaN"),
        ({"groups": [1.0, np.nan]}, "groups contains NaN"),
        ({"y_true": [[1, 0], [0, 1]]}, "y_true must be 1-D"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    arguments = {"y_true": [1, 0], "y_score": [0.1, 0.2], "groups": [0, 0], **kwargs}
    for metric in (ndcg_score, dcg_score, average_precision_score, mrr_score, err_score, swapped_pairs):
        with pytest.raises(ValueError, match=match):
            metric(**arguments)


# Every keyword parameter of every metric: (bad value, why it is bad). The check runs on
# entry, before the data is looked at, and raises InvalidParameterError (a ValueError and a
# TypeError) whose message names the parameter and the metric.
BAD_PARAMETERS = {
    "k": [("3", "type"), (2.5, "type"), (True, "type"), (np.float64(3.0), "type"), (0, "value"), (-1, "value")],
    "gain": [(1, "type"), (None, "type"), ("log", "value"), ("Exponential", "value")],
    "ties": [(None, "type"), (0, "type"), ("random", "value"), ("min", "value")],
    "empty_value": [("1", "type"), (True, "type"), (2, "value"), (-0.1, "value"), (math.nan, "value")],
    "max_grade": [("4", "type"), (True, "type"), (-1, "value"), (math.inf, "value"), (math.nan, "value")],
    "normalize": [("yes", "type"), (1, "type"), (None, "type")],
}
METRIC_PARAMETERS = {
    ndcg_score: ["k", "gain", "empty_value", "ties"],
    ndcg_per_query: ["k", "gain", "empty_value", "ties"],
    dcg_score: ["k", "gain", "ties"],
    average_precision_score: ["k", "empty_value"],
    precision_at_k: ["k"],
    mrr_score: ["k"],
    err_score: ["k", "max_grade"],
    swapped_pairs: ["normalize"],
}
BAD_METRIC_CASES = [
    pytest.param(metric, name, value, id=f"{metric.__name__}-{name}-{kind}-{value!r}")
    for metric, names in METRIC_PARAMETERS.items()
    for name in names
    for value, kind in BAD_PARAMETERS[name]
] + [pytest.param(precision_at_k, "k", None, id="precision_at_k-k-None")]


@pytest.mark.parametrize(("metric", "name", "value"), BAD_METRIC_CASES)
def test_bad_parameter_raises_invalid_parameter_error_naming_it(metric, name, value):
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of {metric.__name__} must be"):
        metric([1, 0], [0.1, 0.2], [0, 0], **{name: value})


def test_every_keyword_parameter_is_declared():
    # Guards the table above: a new option of a metric must get a constraint and a bad-value case.
    import inspect

    from sklearn_ltr.metrics._params import CONSTRAINTS

    for metric, names in METRIC_PARAMETERS.items():
        keywords = [p.name for p in inspect.signature(metric).parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert keywords == names, metric.__name__
        assert set(CONSTRAINTS[metric.__name__]) == set(names), metric.__name__


def test_parameter_errors_are_value_errors_and_type_errors():
    with pytest.raises(ValueError, match="'k' parameter"):
        ndcg_score([1, 0], [0.1, 0.2], [0, 0], k=0)
    with pytest.raises(TypeError, match="'gain' parameter"):
        dcg_score([1, 0], [0.1, 0.2], [0, 0], gain=2)


def test_parameters_are_checked_even_when_scikit_learn_skips_validation():
    # k=0 would otherwise zero every discount and score each query ``empty_value``, 1.0.
    with sklearn.config_context(skip_parameter_validation=True), pytest.raises(InvalidParameterError, match="'k'"):
        ndcg_score([1, 0], [0.1, 0.2], [0, 0], k=0)


def test_good_parameter_types_accepted():
    y, s, g = [2, 0, 1], [0.3, 0.2, 0.1], [0, 0, 0]
    assert ndcg_score(y, s, g, k=np.int64(2), empty_value=np.float32(0.5)) == ndcg_score(y, s, g, k=2)
    assert err_score(y, s, g, max_grade=np.int32(4)) == err_score(y, s, g, max_grade=4.0)
    assert swapped_pairs(y, s, g, normalize=np.True_) == pytest.approx(1 / 3)  # the 0 above the 1


def test_data_errors_stay_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="max_grade=1 is below the largest label in y_true"):
        err_score([2], [1], [0], max_grade=1)
    for metric in METRIC_PARAMETERS:
        with pytest.raises(ValueError, match="y_score contains NaN") as info:
            metric([1, 0], [0.1, np.nan], [0, 0])
        assert not isinstance(info.value, InvalidParameterError)


def test_large_label_values_use_sorting_path():
    # Non-integer grades take the sort-based ideal DCG; it must equal the loop reference.
    rng = np.random.default_rng(5)
    y = rng.random(200) * 3
    s = rng.normal(size=200)
    g = rng.integers(0, 10, 200)
    assert ndcg_score(y, s, g, k=7, ties="stable") == pytest.approx(ref_ndcg(y, s, g, 7))


# ---------------------------------------------------------------- large labels: exact values, never NaN
# 2**y overflows float64 from y = 1024 on. NDCG and ERR are ratios and must be exact for any
# finite label; DCG must be exact or raise. References below are exact: Python integers and
# Fractions for integer labels, Decimal with 1200 digits otherwise (2**-1100 needs ~330).

_EXACT = decimal.Context(prec=1200)
# The brief's example: query 1 ranks its labels (0, 1, L), query 2 ranks (0, 2, 1).
_Y_SCORE, _GROUPS = [0.2, 0.9, 0.5, 0.3, 0.7, 0.1], [1, 1, 1, 2, 2, 2]
LARGE_LABELS = [200, 1000, 1100, 1100.5]


def _d(x):
    return decimal.Decimal(float(x))  # exact: every float is a finite decimal


@functools.cache
def _exact_discount(rank):
    """1 / log2(rank + 1) for 1-based ``rank``."""
    return _EXACT.divide(_EXACT.ln(decimal.Decimal(2)), _EXACT.ln(decimal.Decimal(rank + 1)))


def _exact_gain(label, gain="exponential"):
    if gain == "linear":
        return _d(label)
    return _exact_power_of_2_minus_1(float(label))


@functools.cache
def _exact_power_of_2_minus_1(label):
    if label.is_integer():
        return decimal.Decimal(2 ** int(label) - 1)  # an exact integer
    return _EXACT.subtract(_EXACT.power(decimal.Decimal(2), _d(label)), 1)


def _exact_dcg(labels, k, gain, tie_runs=None):
    """DCG of labels in ranked order; ``tie_runs`` (run id per position) averages the discounts of ties."""
    n = len(labels)
    discounts = [_exact_discount(r + 1) if k is None or r < k else decimal.Decimal(0) for r in range(n)]
    if tie_runs is not None:
        for run in set(tie_runs):
            members = [r for r in range(n) if tie_runs[r] == run]
            mean = _EXACT.divide(sum(discounts[r] for r in members), len(members))
            for r in members:
                discounts[r] = mean
    return sum((_EXACT.multiply(_exact_gain(y, gain), d) for y, d in zip(labels, discounts, strict=True)),
               decimal.Decimal(0))


def exact_ndcg_per_query(y, s, g, k=None, gain="exponential", ties="stable"):
    """Exact NDCG of each query (None when it has no relevant document)."""
    values = []
    for labels, scores in _queries(y, s, g):
        runs = np.unique(-scores, return_inverse=True)[1].tolist() if ties == "average" else None
        ideal = _exact_dcg(sorted(labels, reverse=True), k, gain)
        values.append(None if ideal == 0 else _EXACT.divide(_exact_dcg(labels, k, gain, runs), ideal))
    return values


def exact_dcg_per_query(y, s, g, k=None, gain="exponential"):
    return [_exact_dcg(labels, k, gain) for labels, _ in _queries(y, s, g)]


def exact_err(y, s, g, k=None, max_grade=None):
    top = _EXACT.add(_exact_gain(max(map(float, y)) if max_grade is None else max_grade), 1)
    values = []
    for labels, _ in _queries(y, s, g):
        reach, err = decimal.Decimal(1), decimal.Decimal(0)
        for r, label in enumerate(labels[: len(labels) if k is None else k], start=1):
            stop = _EXACT.divide(_exact_gain(label), top)
            err = _EXACT.add(err, _EXACT.divide(_EXACT.multiply(reach, stop), r))
            reach = _EXACT.multiply(reach, _EXACT.subtract(1, stop))
        values.append(err)
    return values


def _mean(values):
    return float(_EXACT.divide(sum(values, decimal.Decimal(0)), len(values)))


def _close(actual, exact):
    """float64 agreement with an exact value: 1e-13 relative, or below the smallest normal number."""
    return actual == pytest.approx(float(exact), rel=1e-13, abs=1e-300)


def test_fraction_reference_of_err_agrees_with_decimal():
    # The Decimal reference is itself checked against exact rational arithmetic (integer labels).
    y, g = [1100, 0, 1, 2, 0, 1], 1100
    stops = [Fraction(2**label - 1, 2**g) for label in (0, 1, 1100)]
    err1 = stops[1] / 2 + (1 - stops[0]) * (1 - stops[1]) * stops[2] / 3
    stops = [Fraction(2**label - 1, 2**g) for label in (0, 2, 1)]
    err2 = stops[1] / 2 + (1 - stops[1]) * stops[2] / 3
    decimal_values = exact_err(y, _Y_SCORE, _GROUPS)
    as_decimal = _EXACT.divide(err1.numerator, err1.denominator)
    assert abs(decimal_values[0] - as_decimal) < decimal.Decimal(10) ** -1000
    assert float(decimal_values[1]) == float(err2)
    assert err_score(y, _Y_SCORE, _GROUPS) == float((err1 + err2) / 2)


def test_brief_example_ndcg_is_the_mean_of_both_queries():
    # Before: 2**1100.5 overflowed, query 1 became NaN and was dropped (the value was query 2's alone).
    y = [1100.5, 0, 1, 2, 0, 1]
    q2 = (3 / math.log2(3) + 1 / 2) / (3 + 1 / math.log2(3))  # ranked gains 0, 3, 1 of ideal 3, 1, 0
    q1 = 0.5  # (1 / log2(3) + (2**1100.5 - 1) / 2) / (2**1100.5 - 1 + 1 / log2(3)) = 0.5 + O(2**-1100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no overflow warning on the way
        assert ndcg_score(y, _Y_SCORE, _GROUPS) == pytest.approx((q1 + q2) / 2, rel=1e-15)
        _, per_query = ndcg_per_query(y, _Y_SCORE, _GROUPS)
    np.testing.assert_allclose(per_query, [q1, q2], rtol=1e-15)


@pytest.mark.parametrize("label", LARGE_LABELS)
@pytest.mark.parametrize("k", [None, 1, 2])
@pytest.mark.parametrize("gain", ["exponential", "linear"])
def test_ndcg_exact_for_large_labels(label, k, gain):
    y = [label, 0, 1, 2, 0, 1]
    exact = exact_ndcg_per_query(y, _Y_SCORE, _GROUPS, k=k, gain=gain)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids, values = ndcg_per_query(y, _Y_SCORE, _GROUPS, k=k, gain=gain)
        mean = ndcg_score(y, _Y_SCORE, _GROUPS, k=k, gain=gain)
    assert ids.tolist() == [1, 2]
    assert all(_close(v, e) for v, e in zip(values, exact, strict=True)), (values, exact)
    assert _close(mean, _EXACT.divide(exact[0] + exact[1], 2))
    if k == 2 and gain == "exponential":
        # Query 1 ranks (0, 1) above its label-L document: NDCG@2 = (1/log2 3) / (2**L - 1 + 1/log2 3).
        assert values[0] == pytest.approx(2.0**-label / math.log2(3), rel=1e-13, abs=1e-300)
        assert values[0] < 1e-60


@pytest.mark.parametrize("label", LARGE_LABELS)
def test_dcg_exact_or_raises_naming_y_true(label):
    y = [label, 0, 1, 2, 0, 1]
    exact = exact_dcg_per_query(y, _Y_SCORE, _GROUPS)
    if max(exact) > decimal.Decimal(np.finfo(np.float64).max):
        # 2**1100 - 1 is not a float64: raise, naming the argument, the limit and the fixes.
        with pytest.raises(ValueError, match=r"y_true's labels are too large") as info:
            dcg_score(y, _Y_SCORE, _GROUPS)
        for part in ("label 1100", "below 1024", "1023.9999999999999", 'gain="linear"', "rescale y_true"):
            assert part in str(info.value)
    else:
        # 2**1000 - 1 is: (2**L - 1) / 2 + 1 / log2(3) for query 1, 3 / log2(3) + 1 / 2 for query 2.
        assert _close(dcg_score(y, _Y_SCORE, _GROUPS), _EXACT.divide(exact[0] + exact[1], 2))
    # The label-L document ranks third: with k=2 every DCG is small and exact.
    exact_k2 = exact_dcg_per_query(y, _Y_SCORE, _GROUPS, k=2)
    assert _close(dcg_score(y, _Y_SCORE, _GROUPS, k=2), _EXACT.divide(exact_k2[0] + exact_k2[1], 2))
    assert dcg_score(y, _Y_SCORE, _GROUPS, k=2) == pytest.approx((1 / math.log2(3) + 3 / math.log2(3)) / 2)
    # Linear gain has no such limit for these labels.
    assert dcg_score(y, _Y_SCORE, _GROUPS, gain="linear") == pytest.approx(
        (1 / math.log2(3) + label / 2 + 2 / math.log2(3) + 1 / 2) / 2, rel=1e-14
    )


@pytest.mark.parametrize("label", LARGE_LABELS)
@pytest.mark.parametrize("max_grade", [None, 1200])
def test_err_exact_for_large_labels(label, max_grade):
    y = [label, 0, 1, 2, 0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = err_score(y, _Y_SCORE, _GROUPS, max_grade=max_grade)
    exact = exact_err(y, _Y_SCORE, _GROUPS, max_grade=max_grade)
    assert _close(value, _EXACT.divide(exact[0] + exact[1], 2))
    if max_grade is None:
        # R(L) = 1 - 2**-L: query 1's third document stops almost every user: ERR = 1/3 + O(2**-L).
        assert value == pytest.approx(1 / 6, rel=1e-14)
    else:
        # R(L) = (2**L - 1) / 2**1200, about 2**(L - 1200): small, and not rounded to 0 or NaN.
        assert value == pytest.approx(2.0 ** (label - 1200) / 6, rel=1e-13)


@pytest.mark.parametrize("label", [*LARGE_LABELS, 1e308])
def test_binary_and_pairwise_metrics_for_large_labels(label):
    # Relevance is label > 0 and pairs compare labels: nothing is exponentiated, the values
    # are those of any positive label. Query 1 ranks relevance (0, 1, 1), query 2 (0, 1, 1).
    y = [label, 0, 1, 2, 0, 1]
    assert average_precision_score(y, _Y_SCORE, _GROUPS) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert precision_at_k(y, _Y_SCORE, _GROUPS, k=2) == 0.5
    assert mrr_score(y, _Y_SCORE, _GROUPS) == 0.5
    assert swapped_pairs(y, _Y_SCORE, _GROUPS) == 5  # q1: 0 above 1 and L, 1 above L; q2: 0 above 2 and 1
    assert swapped_pairs(y, _Y_SCORE, _GROUPS, normalize=True) == pytest.approx(5 / 6)


@pytest.mark.parametrize("label", [1023, 1023.5])
def test_dcg_overflow_of_a_sum_and_of_a_mean(label):
    # One gain 2**L - 1 is finite; the mean of two such queries must not overflow to inf.
    assert dcg_score([label, label], [0, 0], [0, 1]) == pytest.approx(2.0**label, rel=1e-15)
    # A sum of finite gains that is not: 2**1023 * (1 + 1 / log2(3) + 1 / 2) is beyond float64.
    with pytest.raises(ValueError, match="y_true's labels are too large"):
        dcg_score([label] * 3, [2, 1, 0], [0, 0, 0])
    assert ndcg_score([label] * 3, [2, 1, 0], [0, 0, 0]) == 1.0


@pytest.mark.parametrize("gain", ["exponential", "linear"])
@pytest.mark.parametrize("big", [2000.0, 1e308])
def test_dcg_ignores_large_labels_beyond_the_cutoff(gain, big):
    # Only the counted documents matter, however large the others: DCG@1 is the top gain.
    for small in (3.5, 1e-300):
        expected = small if gain == "linear" else math.expm1(small * math.log(2))  # 2**y - 1
        assert dcg_score([big, small], [0, 1], [0, 0], k=1, gain=gain) == pytest.approx(expected, rel=1e-15)
    # Tied with the counted document, the large label shares its discount and counts.
    if gain == "exponential":
        with pytest.raises(ValueError, match="y_true's labels are too large"):
            dcg_score([big, 3.5], [1, 1], [0, 0], k=1)


def test_dcg_just_below_the_float64_maximum():
    # (2**1023 - 1) * (1 + 1 / log2 3) is about 1.46e308: finite, and exact.
    assert dcg_score([1023, 1023], [1, 0], [0, 0]) == pytest.approx(2.0**1023 * (1 + 1 / math.log2(3)), rel=1e-15)


def test_linear_gain_near_the_float64_maximum():
    big = [1e308, 1e308, 1e308]
    assert ndcg_score(big, [3, 2, 1], [0, 0, 0], gain="linear") == 1.0  # was inf / inf = NaN
    assert dcg_score([1e308, 1e308], [0, 0], [0, 1], gain="linear") == 1e308  # the mean, not inf
    with pytest.raises(ValueError, match=r"y_true's labels are too large.*linear gains"):
        dcg_score(big, [3, 2, 1], [0, 0, 0], gain="linear")


@pytest.mark.parametrize("force_sort", [False, True])
def test_ideal_dcg_paths_agree_for_large_labels(monkeypatch, force_sort):
    # Integer grades take the counting path of the ideal DCG; forcing the sort path must not change it.
    if force_sort:
        monkeypatch.setattr(_dcg, "_COUNT_CELLS_PER_ROW", 0)
        monkeypatch.setattr(_dcg, "_COUNT_CELLS_MIN", 0)
    y = [1100, 0, 1, 2, 0, 1, 1100, 1099, 3]
    s = [0.2, 0.9, 0.5, 0.3, 0.7, 0.1, 0.1, 0.5, 0.3]
    g = [1, 1, 1, 2, 2, 2, 3, 3, 3]
    exact = exact_ndcg_per_query(y, s, g, k=2)
    _, values = ndcg_per_query(y, s, g, k=2)
    assert all(_close(v, e) for v, e in zip(values, exact, strict=True))


def test_tiny_labels_keep_their_ratio():
    # Labels near 0 (or subnormal) give gains near 0: the ratio of gains stays exact, never 0/0.
    for tiny in (1e-300, 5e-324):
        y, s = [tiny, 2 * tiny, 0.0], [0.3, 0.2, 0.1]
        expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))  # gains proportional to labels
        assert ndcg_score(y, s, [0, 0, 0]) == pytest.approx(expected, rel=1e-12)
        assert ndcg_score(y, s, [0, 0, 0], gain="linear") == pytest.approx(expected, rel=1e-12)


def test_segment_cumprod_matches_a_loop():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 40, size=30)
    values = rng.random(sizes.sum())
    values[::7] = 0.0
    lists = RankedLists(np.zeros(sizes.sum()), -np.arange(sizes.sum(), dtype=float), np.repeat(np.arange(30), sizes))
    expected = np.concatenate([np.cumprod(values[a:b]) for a, b in itertools.pairwise(lists.offsets)])
    np.testing.assert_allclose(segment_cumprod(values, lists), expected, rtol=1e-14)
    top = lists.ranks < 5
    np.testing.assert_allclose(segment_cumprod(values, lists, limit=5)[top], expected[top], rtol=1e-14)


def test_mean_over_queries_refuses_non_finite_values():
    with pytest.raises(FloatingPointError, match="not finite"):
        mean_over_queries(np.array([0.5, np.nan]))
    assert mean_over_queries(np.array([0.5, np.nan]), dropped=np.array([False, True])) == 0.5


_labels = st.one_of(
    st.integers(0, 4),
    st.integers(0, 1100),
    st.sampled_from([200, 1000, 1022, 1023, 1024, 1100]),
    st.integers(0, 2200).map(lambda n: n / 2),  # halves up to 1100
)
large_label_lists = st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.tuples(
        st.lists(_labels, min_size=n, max_size=n),
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),  # ties
        st.lists(st.sampled_from([1, 2, 3]), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(large_label_lists, st.sampled_from([1, 2, None]), st.sampled_from(["stable", "average"]))
def test_ndcg_and_dcg_equal_exact_reference_for_labels_up_to_1100(data, k, ties):
    y, s, g = data
    exact = exact_ndcg_per_query(y, s, g, k=k, ties=ties)
    ids, values = ndcg_per_query(y, s, g, k=k, ties=ties, empty_value=None)
    assert len(ids) == len(exact)
    for value, expected in zip(values, exact, strict=True):
        assert np.isnan(value) if expected is None else _close(value, expected), (value, expected)
    assert 0.0 <= ndcg_score(y, s, g, k=k, ties=ties) <= 1.0 + 1e-12
    if ties == "stable":
        exact_dcg = exact_dcg_per_query(y, s, g, k=k)
        if max(exact_dcg) > decimal.Decimal(np.finfo(np.float64).max):
            with pytest.raises(ValueError, match="y_true's labels are too large"):
                dcg_score(y, s, g, k=k, ties=ties)
        elif max(exact_dcg) < decimal.Decimal(np.finfo(np.float64).max) * decimal.Decimal("0.999"):
            assert _close(dcg_score(y, s, g, k=k, ties=ties), _EXACT.divide(sum(exact_dcg), len(exact_dcg)))


@settings(max_examples=100, deadline=None)
@given(large_label_lists, st.sampled_from([1, 3, None]), st.sampled_from([None, 1100, 1500.5]))
def test_err_equals_exact_reference_for_labels_up_to_1100(data, k, max_grade):
    y, s, g = data
    expected = exact_err(y, s, g, k=k, max_grade=max_grade)
    assert _close(err_score(y, s, g, k=k, max_grade=max_grade), _EXACT.divide(sum(expected), len(expected)))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=8).flatmap(
        lambda n: st.tuples(
            st.lists(st.one_of(st.just(0.0), st.floats(0, np.finfo(np.float64).max)), min_size=n, max_size=n),
            st.lists(st.floats(-10, 10), min_size=n, max_size=n),
            st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n),
        )
    )
)
def test_no_metric_returns_nan_or_inf_for_any_finite_labels(data):
    # Any finite non-negative labels (0, subnormal, 1e308): a finite value of the metric's range,
    # or, for DCG only, a ValueError naming y_true when the DCG itself is beyond float64.
    y, s, g = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for gain, ties, k in itertools.product(("exponential", "linear"), ("average", "stable"), (1, 2, None)):
            assert 0.0 <= ndcg_score(y, s, g, k=k, gain=gain, ties=ties) <= 1.0 + 1e-12
            try:
                assert np.isfinite(dcg_score(y, s, g, k=k, gain=gain, ties=ties))
            except ValueError as err:
                assert "y_true's labels are too large" in str(err)
        assert 0.0 <= err_score(y, s, g) <= 1.0
        assert 0.0 <= err_score(y, s, g, k=2, max_grade=np.finfo(np.float64).max) <= 1.0
        for metric in (average_precision_score, mrr_score):
            assert 0.0 <= metric(y, s, g) <= 1.0
        assert 0.0 <= precision_at_k(y, s, g, k=3) <= 1.0
        assert 0.0 <= swapped_pairs(y, s, g, normalize=True) <= 1.0


@settings(max_examples=100, deadline=None)
@given(large_label_lists)
def test_binary_metrics_depend_on_label_gt_0_and_pairs_on_label_order(data):
    # Sound invariances: MAP, precision and MRR see only label > 0; swapped pairs only the label order.
    y, s, g = data
    y = np.asarray(y, dtype=float)
    binary = (y > 0).astype(int)
    ranks = np.unique(y, return_inverse=True)[1]
    assert average_precision_score(y, s, g, k=3) == average_precision_score(binary, s, g, k=3)
    assert precision_at_k(y, s, g, k=2) == precision_at_k(binary, s, g, k=2)
    assert mrr_score(y, s, g) == mrr_score(binary, s, g)
    assert swapped_pairs(y, s, g) == swapped_pairs(ranks, s, g)
