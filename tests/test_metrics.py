"""Ranking metrics: hand-computed cases, reference implementations, invariances, bad input."""

import math

import lightgbm as lgb
import numpy as np
import pytest
import sklearn.metrics
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr.metrics import (
    average_precision_score,
    dcg_score,
    err_score,
    mrr_score,
    ndcg_per_query,
    ndcg_score,
    precision_at_k,
    swapped_pairs,
)

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


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", True])
def test_bad_k(k):
    for metric in (ndcg_score, dcg_score, average_precision_score, precision_at_k, mrr_score, err_score):
        with pytest.raises(ValueError, match="k must be"):
            metric([1, 0], [0.1, 0.2], [0, 0], k=k)


def test_bad_options():
    with pytest.raises(ValueError, match="gain must be one of"):
        ndcg_score([1], [1], [0], gain="log")
    with pytest.raises(ValueError, match="ties must be one of"):
        ndcg_score([1], [1], [0], ties="random")
    with pytest.raises(ValueError, match="empty_value must be"):
        ndcg_score([1], [1], [0], empty_value=2)
    with pytest.raises(ValueError, match="max_grade=1 is below"):
        err_score([2], [1], [0], max_grade=1)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        precision_at_k([1], [1], [0], k=None)


def test_large_label_values_use_sorting_path():
    # Non-integer grades take the sort-based ideal DCG; it must equal the loop reference.
    rng = np.random.default_rng(5)
    y = rng.random(200) * 3
    s = rng.normal(size=200)
    g = rng.integers(0, 10, 200)
    assert ndcg_score(y, s, g, k=7, ties="stable") == pytest.approx(ref_ndcg(y, s, g, 7))
