"""Significance tests between rankers: scipy as the reference, exact enumeration, corrections, bad input."""

import itertools
import math
import re
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats

from sklearn_ltr.metrics import (
    SignificanceResult,
    SignificanceTable,
    average_precision_score,
    compare_rankings,
    dcg_score,
    err_score,
    get_metric,
    mrr_score,
    ndcg_per_query,
    ndcg_score,
    paired_significance,
    precision_at_k,
)
from sklearn_ltr.metrics import _significance_stats as significance_stats
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError


def make_rankings(n_queries=40, seed=0, n_systems=2, max_length=12):
    """Labels, query ids (interleaved, some queries without a relevant document) and scores of systems."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_length + 1, size=n_queries)
    groups = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    y = rng.choice(5, size=groups.size, p=[0.5, 0.25, 0.15, 0.07, 0.03])
    y[groups == groups[0]] = 0
    shuffle = rng.permutation(groups.size)
    y, groups = y[shuffle], groups[shuffle]
    # The baseline's noise has scale 1; the first system is better (0.5), the next ones worse (2, 3, ...).
    scales = [1.0, 0.5, *range(2, n_systems + 1)]
    scores = [y + rng.normal(scale=scale, size=y.size) for scale in scales]
    return y, groups, scores[0], scores[1:]


def exact_sign_flip_pvalue(d):
    """Two-sided sign-flip p-value by enumerating all 2**n sign vectors, in exact rational arithmetic."""
    d = [Fraction(v) for v in d]
    observed = abs(sum(d))
    hits = sum(abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= observed
               for signs in itertools.product((-1, 1), repeat=len(d)))
    return hits / 2 ** len(d)


def holm_by_hand(p):
    """Holm's adjusted p-values from the textbook definition, with explicit loops."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    for rank, i in enumerate(order):
        adjusted[i] = min(1.0, max((m - r) * p[order[r]] for r in range(rank + 1)))
    return adjusted


# ---------------------------------------------------------------- the paired t-test


@pytest.mark.parametrize("n, seed", [(2, 0), (3, 1), (25, 2), (500, 3), (10_000, 4)])
def test_t_test_equals_scipy_ttest_rel(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=n)
    others = [a + rng.normal(0.02 * j, 0.1 + 0.05 * j, size=n) for j in range(3)]
    table = paired_significance(a, others, tests="t-test")
    for b, result in zip(others, table, strict=True):
        expected = scipy.stats.ttest_rel(b, a)
        assert abs(result.t_pvalue - expected.pvalue) <= 1e-12
        assert result.t_statistic == pytest.approx(expected.statistic, rel=1e-12)
        assert result.mean_difference == pytest.approx(np.mean(b - a), rel=1e-12, abs=1e-15)


def test_t_test_equals_scipy_on_ndcg_per_query():
    y, groups, baseline, (better, worse) = make_rankings(n_queries=60, seed=3)
    table = compare_rankings(y, baseline, {"better": better, "worse": worse}, groups, k=5, tests="t-test")
    _, a = ndcg_per_query(y, baseline, groups, k=5)
    for name, scores in (("better", better), ("worse", worse)):
        _, b = ndcg_per_query(y, scores, groups, k=5)
        assert abs(table[name].t_pvalue - scipy.stats.ttest_rel(b, a).pvalue) <= 1e-12
    assert table["better"].mean_difference > 0 > table["worse"].mean_difference


# ---------------------------------------------------------------- per-query metric values

METRIC_CASES = [
    ("ndcg", 10, {}),
    ("ndcg", None, {"gain": "linear", "empty_value": 0.0, "ties": "stable"}),
    ("ndcg", 3, {"empty_value": None}),
    ("dcg", 5, {}),
    ("dcg", None, {"gain": "linear", "ties": "stable"}),
    ("map", 10, {}),
    ("map", None, {"empty_value": 0.0}),
    ("map", 4, {"empty_value": None}),
    ("precision", 3, {}),
    ("mrr", None, {}),
    ("mrr", 2, {}),
    ("err", None, {}),
    ("err", 5, {"max_grade": 4}),
    ("err", None, {"max_grade": 6.5}),  # above the largest label (4)
]
PUBLIC = {
    "ndcg": ndcg_score, "dcg": dcg_score, "map": average_precision_score,
    "precision": precision_at_k, "mrr": mrr_score, "err": err_score,
}


@pytest.mark.parametrize("metric, k, params", METRIC_CASES)
def test_means_equal_the_public_metric(metric, k, params):
    """The per-query values are the public metric's: their mean is its value, for every system."""
    y, groups, baseline, others = make_rankings(n_queries=50, seed=5)
    scores = np.round(baseline, 1)  # ties, ranked by each metric's own rule
    table = compare_rankings(y, scores, others, groups, metric=metric, k=k, tests="t-test", **params)
    assert table.baseline_mean == pytest.approx(PUBLIC[metric](y, scores, groups, k=k, **params), rel=1e-12)
    for result, other in zip(table, others, strict=True):
        assert result.mean == pytest.approx(PUBLIC[metric](y, other, groups, k=k, **params), rel=1e-12)
    assert table.metric == (metric if k is None else f"{metric}@{k}")
    # empty_value=None leaves out the queries without a relevant document (query 0 at least).
    if "empty_value" in params and params["empty_value"] is None:
        n_queries = len(np.unique(groups[y > 0]))
        assert n_queries < 50
    else:
        n_queries = 50
    assert table.n_queries == n_queries


@pytest.mark.parametrize("metric", ["map", "precision", "mrr", "err", "dcg"])
def test_t_test_on_each_metric_equals_scipy(metric):
    y, groups, baseline, (other, _) = make_rankings(n_queries=30, seed=6)
    per_query = get_metric(metric).per_query
    a = per_query(y, baseline, groups, k=5)
    b = per_query(y, other, groups, k=5)
    table = compare_rankings(y, baseline, other, groups, metric=metric, k=5, tests="t-test")
    assert abs(table[0].t_pvalue - scipy.stats.ttest_rel(b, a).pvalue) <= 1e-12


# ---------------------------------------------------------------- the randomization test


@pytest.mark.parametrize("seed", range(4))
def test_randomization_exact_enumeration_for_10_queries(seed):
    """2**10 <= n_resamples: every sign vector is enumerated, the p-value is exact."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=10)
    b = a + rng.normal(0.1 * seed, 0.2, size=10)
    result = paired_significance(a, b, tests="randomization", n_resamples=10_000)[0]
    expected = exact_sign_flip_pvalue(b - a)
    assert result.randomization_pvalue == pytest.approx(float(expected), abs=1e-15)
    # scipy enumerates all sign flips too (2**10 < its default 9999 resamples).
    reference = scipy.stats.permutation_test(
        (b, a), lambda x, z, axis: np.mean(x - z, axis=axis), permutation_type="samples"
    )
    assert result.randomization_pvalue == pytest.approx(reference.pvalue, abs=1e-12)


def test_randomization_counts_ties_exactly():
    """Differences on a grid: many resampled statistics tie with the observed one up to float rounding."""
    d = np.array([0.1, 0.2, -0.3, 0.3, 0.1, -0.2, 0.4, 0.1, -0.1, 0.3, 0.2, 0.6])
    a = np.linspace(0.2, 0.5, d.size)
    result = paired_significance(a, a + d, tests="randomization", n_resamples=2**12)[0]
    expected = exact_sign_flip_pvalue([Fraction(str(round(v, 1))) for v in d])
    assert result.randomization_pvalue == float(expected)


def test_randomization_monte_carlo_within_error_of_exact():
    rng = np.random.default_rng(11)
    a = rng.uniform(size=14)
    b = a + rng.normal(0.08, 0.2, size=14)
    exact = float(exact_sign_flip_pvalue(b - a))
    n_resamples = 5_000  # < 2**14: Monte-Carlo
    values = [paired_significance(a, b, tests="randomization", n_resamples=n_resamples, random_state=seed)[0]
              .randomization_pvalue for seed in range(4)]
    error = math.sqrt(exact * (1 - exact) / n_resamples)
    assert all(abs(p - exact) < 4.5 * error for p in values), (exact, values)
    assert abs(np.mean(values) - exact) < 4.5 * error / 2
    # Monte-Carlo p-values are (b + 1) / (n + 1).
    assert all(abs(p * (n_resamples + 1) - round(p * (n_resamples + 1))) < 1e-6 for p in values)


def test_randomization_close_to_scipy_permutation_test_monte_carlo():
    rng = np.random.default_rng(12)
    a = rng.uniform(size=40)
    b = a + rng.normal(0.04, 0.15, size=40)
    ours = paired_significance(a, b, tests="randomization", n_resamples=20_000, random_state=0)[0]
    theirs = scipy.stats.permutation_test(
        (b, a), lambda x, z, axis: np.mean(x - z, axis=axis), permutation_type="samples",
        n_resamples=20_000, rng=np.random.default_rng(1),
    ).pvalue
    error = math.sqrt(theirs * (1 - theirs) / 20_000)
    assert 0.01 < theirs < 0.5
    assert abs(ours.randomization_pvalue - theirs) < 5 * math.sqrt(2) * error


def test_randomization_p_value_is_never_zero():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=300)
    b = a + 0.5  # every sign flip gives a smaller |sum|
    result = paired_significance(a, b, tests="randomization", n_resamples=99, random_state=0)[0]
    assert result.randomization_pvalue == pytest.approx(1 / 100, rel=1e-12)
    exact = paired_significance(a[:8], b[:8], tests="randomization", n_resamples=256)[0]
    assert exact.randomization_pvalue == pytest.approx(2 / 256)  # all +1 and all -1


def test_resampling_is_reproducible():
    rng = np.random.default_rng(1)
    a = rng.uniform(size=100)
    b = a + rng.normal(0.02, 0.2, size=100)

    def run(random_state, n=100):
        return paired_significance(a[:n], b[:n], n_resamples=500, random_state=random_state)[0]

    assert run(7) == run(7)
    assert run(np.random.default_rng(7)) == run(np.random.default_rng(7))
    assert run(np.random.RandomState(3)) == run(np.random.RandomState(3))
    assert run(None).t_pvalue == run(7).t_pvalue
    # Another seed, other draws.
    assert run(7).randomization_pvalue != run(8).randomization_pvalue
    assert run(7).ci_low != run(8).ci_low
    # 2**8 <= 500: the exact enumeration does not depend on the seed.
    assert run(7, n=8).randomization_pvalue == run(8, n=8).randomization_pvalue


def test_chunked_resampling_gives_the_same_values(monkeypatch):
    """Resamples are drawn in chunks; tiny chunks (the last one partial) change nothing that is exact."""
    rng = np.random.default_rng(3)
    a = rng.uniform(size=11)  # 2 blocks of 8 queries, the second one padded
    b = a + rng.normal(0.1, 0.2, size=11)
    exact = paired_significance(a, b, tests="randomization", n_resamples=2**11)[0]
    assert exact.randomization_pvalue == pytest.approx(float(exact_sign_flip_pvalue(b - a)), abs=1e-15)
    monkeypatch.setattr(significance_stats, "_CHUNK_ENTRIES", 7)  # 3 sign vectors or 1 resample per chunk
    assert paired_significance(a, b, tests="randomization", n_resamples=2**11)[0] == exact
    small = paired_significance(a, b, tests="bootstrap", n_resamples=4_001, confidence_level=0.8, random_state=0)[0]
    d = b - a
    reference = scipy.stats.bootstrap((d,), np.mean, method="percentile", n_resamples=4_001, confidence_level=0.8,
                                      rng=np.random.default_rng(0)).confidence_interval
    standard_error = d.std(ddof=1) / math.sqrt(d.size)
    assert abs(small.ci_low - reference.low) < 0.15 * standard_error
    assert abs(small.ci_high - reference.high) < 0.15 * standard_error


def test_blocks_of_4_queries_give_the_same_test(monkeypatch):
    """Beyond _BYTE_BLOCKS_MAX_QUERIES the sign-flip sums use blocks of 4 queries: same exact p-value."""
    rng = np.random.default_rng(4)
    a = rng.uniform(size=11)
    b = a + rng.normal(0.1, 0.2, size=11)
    exact = float(exact_sign_flip_pvalue(b - a))
    monkeypatch.setattr(significance_stats, "_BYTE_BLOCKS_MAX_QUERIES", 0)
    assert paired_significance(a, b, tests="randomization", n_resamples=2**11)[0].randomization_pvalue == exact
    values = [paired_significance(a, b, tests="randomization", n_resamples=1_000, random_state=seed)[0]
              .randomization_pvalue for seed in range(3)]
    error = math.sqrt(exact * (1 - exact) / 1_000)
    assert all(abs(p - exact) < 4.5 * error for p in values), (exact, values)


# ---------------------------------------------------------------- the bootstrap


def test_bootstrap_matches_scipy_percentile_interval():
    rng = np.random.default_rng(21)
    a = rng.uniform(size=200)
    b = a + rng.gamma(2.0, 0.05, size=200) - 0.08  # skewed differences
    d = b - a
    ours = paired_significance(a, b, tests="bootstrap", n_resamples=20_000, confidence_level=0.9, random_state=0)[0]
    theirs = scipy.stats.bootstrap((d,), np.mean, method="percentile", n_resamples=20_000, confidence_level=0.9,
                                   rng=np.random.default_rng(1)).confidence_interval
    standard_error = d.std(ddof=1) / math.sqrt(d.size)
    assert abs(ours.ci_low - theirs.low) < 0.08 * standard_error
    assert abs(ours.ci_high - theirs.high) < 0.08 * standard_error
    assert ours.ci_low < d.mean() < ours.ci_high


def test_bootstrap_interval_covers_the_true_difference_at_about_the_nominal_rate():
    rng = np.random.default_rng(22)
    n_datasets, n_queries, true_difference = 300, 40, 0.05
    covered = 0
    for j in range(n_datasets):
        a = rng.uniform(size=n_queries)
        b = a + true_difference + rng.normal(0, 0.2, size=n_queries)
        r = paired_significance(a, b, tests="bootstrap", n_resamples=1_000, confidence_level=0.9, random_state=j)[0]
        covered += r.ci_low <= true_difference <= r.ci_high
    # Binomial(300, ~0.9): standard deviation 0.017; the percentile interval runs a little narrow.
    assert 0.83 <= covered / n_datasets <= 0.96, covered


# ---------------------------------------------------------------- identical systems, invariances


def test_identical_systems_give_p_one_and_an_interval_at_zero():
    y, groups, baseline, _ = make_rankings(n_queries=30, seed=7)
    # The same scores, and scores that rank every query the same way.
    others = {"same": baseline.copy(), "monotone": 3.0 * baseline + 1.0}
    table = compare_rankings(y, baseline, others, groups, n_resamples=1_000, random_state=0, correction="holm")
    for result in table:
        assert result.mean_difference == 0.0
        assert result.t_statistic == 0.0 and result.t_pvalue == 1.0  # scipy gives NaN here
        assert result.randomization_pvalue == 1.0  # (1000 + 1) / (1000 + 1)
        assert result.t_pvalue_adjusted == result.randomization_pvalue_adjusted == 1.0
        assert result.ci_low == result.ci_high == 0.0
    exact = paired_significance([0.1, 0.5, 0.7], [0.1, 0.5, 0.7], tests="randomization")[0]  # 2**3 sign vectors
    assert exact.randomization_pvalue == 1.0


def test_invariant_to_row_order_and_query_relabelling():
    y, groups, baseline, (first, second) = make_rankings(n_queries=40, seed=8)
    kwargs = {"metric": "map", "k": 5, "n_resamples": 3_000, "random_state": 4, "correction": "holm"}
    table = compare_rankings(y, baseline, [first, second], groups, **kwargs)
    rng = np.random.default_rng(0)
    shuffle = rng.permutation(y.size)
    ids = np.unique(groups)
    relabel = dict(zip(ids.tolist(), rng.permutation([f"q{i}" for i in range(ids.size)]).tolist(), strict=True))
    new_groups = np.array([relabel[g] for g in groups.tolist()])[shuffle]
    moved = compare_rankings(y[shuffle], baseline[shuffle], [first[shuffle], second[shuffle]], new_groups, **kwargs)
    for before, after in zip(table, moved, strict=True):
        for field, value in before.to_dict().items():
            assert after.to_dict()[field] == pytest.approx(value, rel=1e-12, abs=1e-15), field
        assert after.randomization_pvalue == before.randomization_pvalue
        assert (after.ci_low, after.ci_high) == (before.ci_low, before.ci_high)


def test_invariant_to_query_order_of_per_query_values():
    rng = np.random.default_rng(9)
    a = rng.uniform(size=60)
    b = a + rng.normal(0.03, 0.1, size=60)
    order = rng.permutation(60)
    one = paired_significance(a, b, n_resamples=2_000, random_state=1)[0]
    two = paired_significance(a[order], b[order], n_resamples=2_000, random_state=1)[0]
    assert one.randomization_pvalue == two.randomization_pvalue
    assert (one.ci_low, one.ci_high) == (two.ci_low, two.ci_high)
    assert one.t_pvalue == pytest.approx(two.t_pvalue, rel=1e-12)


def test_a_system_result_does_not_depend_on_the_others_compared():
    y, groups, baseline, others = make_rankings(n_queries=50, seed=10, n_systems=3)
    kwargs = {"metric": "err", "k": 10, "n_resamples": 2_000, "random_state": 5}
    together = compare_rankings(y, baseline, others, groups, **kwargs)
    alone = compare_rankings(y, baseline, {"x": others[1]}, groups, **kwargs)["x"]
    assert dataclasses_equal_but_name(together[1], alone)
    # The lower-level function on the per-query values gives the same table.
    per_query = get_metric("err").per_query
    values = paired_significance(per_query(y, baseline, groups, k=10), [per_query(y, s, groups, k=10) for s in others],
                                 n_resamples=2_000, random_state=5)
    for left, right in zip(together, values, strict=True):
        assert dataclasses_equal_but_name(left, right)


def dataclasses_equal_but_name(left, right):
    a, b = left.to_dict(), right.to_dict()
    a.pop("system"), b.pop("system")
    return a == b


def test_each_test_runs_alone_with_the_same_values():
    rng = np.random.default_rng(13)
    a = rng.uniform(size=80)
    b = a + rng.normal(0.02, 0.1, size=80)
    both = paired_significance(a, b, n_resamples=1_000, random_state=2)[0]
    randomization = paired_significance(a, b, tests=["randomization"], n_resamples=1_000, random_state=2)[0]
    bootstrap = paired_significance(a, b, tests=("bootstrap",), n_resamples=1_000, random_state=2)[0]
    t_test = paired_significance(a, b, tests="t-test", random_state=2)[0]
    assert randomization.randomization_pvalue == both.randomization_pvalue and randomization.ci_low is None
    assert (bootstrap.ci_low, bootstrap.ci_high) == (both.ci_low, both.ci_high) and bootstrap.t_pvalue is None
    assert t_test.t_pvalue == both.t_pvalue and t_test.randomization_pvalue is None and t_test.ci_low is None



@pytest.mark.parametrize("tests", [("bootstrap", "t-test"), ["bootstrap", "t-test", "bootstrap"],
                                   {"t-test", "bootstrap"}, np.array(["bootstrap", "t-test"])])
def test_tests_are_recorded_once_each_in_report_order_whatever_order_given(tests):
    table = paired_significance([0.1, 0.4, 0.3, 0.8], [0.2, 0.6, 0.3, 0.9], tests=tests, n_resamples=50,
                                random_state=0)
    assert table.tests == ("t-test", "bootstrap")
    assert compare_rankings([0, 1, 2, 0, 1, 2], [1.0, 2, 3, 3, 2, 1], [3.0, 2, 1, 1, 2, 3], [0, 0, 0, 1, 1, 1],
                            tests=tests, n_resamples=50, random_state=0).tests == ("t-test", "bootstrap")


# ---------------------------------------------------------------- corrections


@pytest.mark.parametrize(
    "raw, holm, bonferroni",
    [
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02], [0.04, 0.16, 0.12, 0.02]),
        ([0.2, 0.6, 0.4], [0.6, 0.8, 0.8], [0.6, 1.0, 1.0]),  # the running max lifts 0.6 * 1 to 0.8
        ([0.7, 0.9], [1.0, 1.0], [1.0, 1.0]),  # capped at 1
        ([0.02, 0.02, 0.5], [0.06, 0.06, 0.5], [0.06, 0.06, 1.0]),  # tied p-values
        ([0.3], [0.3], [0.3]),
    ],
)
def test_holm_and_bonferroni_by_hand(raw, holm, bonferroni):
    np.testing.assert_allclose(significance_stats._adjust_pvalues(raw, "holm"), holm, rtol=1e-12)
    np.testing.assert_allclose(holm_by_hand(raw), holm, rtol=1e-12)
    np.testing.assert_allclose(significance_stats._adjust_pvalues(raw, "bonferroni"), bonferroni, rtol=1e-12)
    np.testing.assert_array_equal(significance_stats._adjust_pvalues(raw, None), raw)


def test_holm_is_monotone_and_between_raw_and_bonferroni():
    rng = np.random.default_rng(14)
    for m in (2, 5, 20):
        raw = rng.uniform(0, 0.2, size=m) ** 2
        holm = significance_stats._adjust_pvalues(raw, "holm")
        bonferroni = significance_stats._adjust_pvalues(raw, "bonferroni")
        order = np.argsort(raw)
        assert np.all(np.diff(holm[order]) >= 0)
        assert np.all(raw <= holm) and np.all(holm <= bonferroni) and np.all(holm <= 1)
        np.testing.assert_allclose(holm, holm_by_hand(raw.tolist()), rtol=1e-12)


@pytest.mark.parametrize("correction", ["holm", "bonferroni"])
def test_correction_of_the_systems_compared_with_the_baseline(correction):
    rng = np.random.default_rng(15)
    a = rng.uniform(size=40)
    others = {f"s{j}": a + rng.normal(0.015 * j, 0.1, size=40) for j in range(4)}
    table = paired_significance(a, others, n_resamples=1_000, random_state=0, correction=correction)
    raw_t = [scipy.stats.ttest_rel(b, a).pvalue for b in others.values()]
    raw_r = [r.randomization_pvalue for r in table]
    expected_t = holm_by_hand(raw_t) if correction == "holm" else [min(1.0, 4 * p) for p in raw_t]
    expected_r = holm_by_hand(raw_r) if correction == "holm" else [min(1.0, 4 * p) for p in raw_r]
    np.testing.assert_allclose([r.t_pvalue for r in table], raw_t, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose([r.t_pvalue_adjusted for r in table], expected_t, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose([r.randomization_pvalue_adjusted for r in table], expected_r, rtol=1e-12)
    assert f"{correction.capitalize()}-corrected over 4 systems" in repr(table)
    assert all(r.t_pvalue_adjusted is None for r in paired_significance(a, others, tests="t-test"))


# ---------------------------------------------------------------- the result objects


def test_table_repr_indexing_and_columns():
    y, groups, baseline, (first, second) = make_rankings(n_queries=30, seed=16)
    table = compare_rankings(y, baseline, {"first": first, "second": second}, groups, metric="mrr", k=None,
                             n_resamples=500, random_state=0, correction="bonferroni")
    assert isinstance(table, SignificanceTable) and isinstance(table[0], SignificanceResult)
    text = repr(table)
    lines = text.splitlines()
    assert lines[0].startswith("mrr over 30 queries, baseline mean ")
    assert lines[2].split() == ["system", "mean", "difference", "95%", "CI", "t-test", "p", "(bonferroni)",
                                "randomization", "p", "(bonferroni)"]
    assert lines[3].startswith("first ") and lines[4].startswith("second ")
    assert table["second"] is table[1] and list(table) == [table[0], table[1]] and len(table) == 2
    with pytest.raises(KeyError, match="no system named 'third'"):
        table["third"]
    columns = table.to_dict()
    assert columns["system"] == ["first", "second"]
    assert set(columns) == {field for field in table[0].to_dict()}
    assert all(len(values) == 2 for values in columns.values())
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(columns)
    assert frame.shape == (2, 12) and frame["t_pvalue"].tolist() == columns["t_pvalue"]


def test_tiny_p_values_print_in_scientific_notation():
    a = np.linspace(0, 1, 200)
    table = paired_significance(a, a + 0.1 + 0.01 * np.sin(np.arange(200)), tests="t-test")
    assert "e-" in repr(table).splitlines()[-1]


def test_systems_given_as_one_array_a_sequence_or_a_2d_array():
    rng = np.random.default_rng(17)
    a = rng.uniform(size=20)
    b, c = a + 0.1 * rng.normal(size=20), a + 0.1 * rng.normal(size=20)
    one = paired_significance(a, b, tests="t-test")
    assert [r.system for r in one] == [0]
    for others in ([b, c], (b.tolist(), c.tolist()), np.stack([b, c])):
        table = paired_significance(a, others, tests="t-test")
        assert [r.system for r in table] == [0, 1]
        assert table[0].t_pvalue == one[0].t_pvalue
    pandas = pytest.importorskip("pandas")
    table = paired_significance(pandas.Series(a), pandas.DataFrame({"b": b, "c": c}), tests="t-test")
    assert [r.system for r in table] == ["b", "c"] and table["b"].t_pvalue == one[0].t_pvalue


# ---------------------------------------------------------------- bad input


def _with_nan(values):
    values = np.array(values, dtype=float)
    values[3] = np.nan
    return values


BAD_COMPARE_INPUT = [
    (lambda a: a.update(baseline=a["baseline"][:5]), ValueError, "baseline has 5 entries but y_true has"),
    (lambda a: a.update(others={"x": a["others"]["x"][:5]}), ValueError, r"others\['x'\] has 5 entries but y_true"),
    (lambda a: a.update(others=[a["baseline"], a["baseline"][:5]]), ValueError, r"others\[1\] has 5 entries"),
    (lambda a: a.update(baseline=_with_nan(a["baseline"])), ValueError, "baseline contains NaN"),
    (lambda a: a.update(others={"x": _with_nan(a["others"]["x"])}), ValueError, r"others\['x'\] contains NaN"),
    (lambda a: a.update(others={}), ValueError, "others is empty"),
    (lambda a: a.update(others=[]), ValueError, "others is empty"),
    (lambda a: a.update(groups=a["groups"][:3]), ValueError, "groups has 3 entries but y_true has"),
    (lambda a: a.update(groups=np.zeros_like(a["groups"])), ValueError, "groups has 1 queries.*at least 2 queries"),
    (lambda a: a.update(y_true=a["y_true"] - 1), ValueError, "y_true contains negative labels"),
    (lambda a: a.update(metric="err", max_grade=2), ValueError, "max_grade=2 is below the largest label"),
    (lambda a: a.update(metric="auc"), InvalidParameterError, "'metric' parameter of compare_rankings"),
    (lambda a: a.update(k=0), InvalidParameterError, "'k' parameter of compare_rankings"),
    (lambda a: a.update(metric="precision", k=None), InvalidParameterError, "'k' parameter of compare_rankings"),
    (lambda a: a.update(gain="cubic"), InvalidParameterError, "'gain' parameter of compare_rankings"),
    (lambda a: a.update(metric="map", gain="linear"), TypeError, "'map' metric got an unexpected keyword argument"),
    (lambda a: a.update(n_resamples=0), InvalidParameterError, "'n_resamples' parameter of compare_rankings"),
    (lambda a: a.update(n_resamples=10.5), InvalidParameterError, "'n_resamples' parameter"),
    (lambda a: a.update(n_resamples=True), InvalidParameterError, "'n_resamples' parameter"),
    (lambda a: a.update(confidence_level=1.0), InvalidParameterError, "'confidence_level' parameter"),
    (lambda a: a.update(confidence_level=0), InvalidParameterError, "'confidence_level' parameter"),
    (lambda a: a.update(correction="fdr"), InvalidParameterError, "'correction' parameter"),
    (lambda a: a.update(tests="anova"), InvalidParameterError, "'tests' parameter"),
    (lambda a: a.update(tests=[]), InvalidParameterError, "'tests' parameter"),
    (lambda a: a.update(tests=["t-test", "wilcoxon"]), InvalidParameterError, "'tests' parameter"),
    (lambda a: a.update(random_state=-1), InvalidParameterError, "'random_state' parameter"),
    (lambda a: a.update(random_state="seed"), InvalidParameterError, "'random_state' parameter"),
]


def _case_id(index, match):
    """A test id of plain words: regex escapes and quotes in ids break selecting tests by id (mutmut)."""
    return f"{index:02d}-" + "-".join(re.findall(r"[A-Za-z0-9_]+", match))[:50]


@pytest.mark.parametrize("change, error, match", BAD_COMPARE_INPUT,
                         ids=[_case_id(i, case[2]) for i, case in enumerate(BAD_COMPARE_INPUT)])
def test_compare_rankings_bad_input(change, error, match):
    y, groups, baseline, others = make_rankings(n_queries=10, seed=18)
    arguments = {"y_true": y, "baseline": baseline, "others": {"x": others[0]}, "groups": groups}
    change(arguments)
    with pytest.raises(error, match=match):
        compare_rankings(**arguments)


def test_compare_rankings_too_few_defined_queries():
    y = np.array([0, 0, 0, 1, 0, 0])
    groups = np.array([1, 1, 2, 2, 3, 3])
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    with pytest.raises(ValueError, match=r"3 queries, 1 of them with a defined ndcg.*at least 2"):
        compare_rankings(y, scores, scores[::-1], groups, empty_value=None)
    assert compare_rankings(y, scores, scores[::-1], groups, tests="t-test").n_queries == 3


@pytest.mark.parametrize(
    "baseline, others, options, error, match",
    [
        ([0.1], [0.2], {}, ValueError, "baseline has 1 value.*at least 2 queries"),
        ([0.1, 0.2], [0.2], {}, ValueError, "others has 1 values but baseline has 2"),
        ([0.1, 0.2], {"b": [0.2, 0.1, 0.3]}, {}, ValueError, r"others\['b'\] has 3 values but baseline has 2"),
        ([0.1, np.nan], [0.2, 0.1], {}, ValueError, "baseline contains NaN"),
        ([0.1, 0.2], [0.2, np.inf], {}, ValueError, "others contains NaN or infinite"),
        ([[0.1, 0.2]], [0.2, 0.1], {}, ValueError, "baseline must be 1-D"),
        (["a", "b"], [0.2, 0.1], {}, ValueError, "baseline must be numeric"),
        ([0.1, 0.2], np.zeros((2, 2, 2)), {}, ValueError, "others must be 1-D"),
        ([0.1, 0.2], [0.2, 0.1], {"n_resamples": -5}, InvalidParameterError,
         "'n_resamples' parameter of paired_significance"),
        ([0.1, 0.2], [0.2, 0.1], {"confidence_level": 95}, InvalidParameterError, "'confidence_level' parameter"),
        ([0.1, 0.2], [0.2, 0.1], {"correction": "Holm"}, InvalidParameterError, "'correction' parameter"),
        ([0.1, 0.2], [0.2, 0.1], {"tests": "t_test"}, InvalidParameterError, "'tests' parameter"),
        # A one-shot iterator would be used up by the check and then run no test at all.
        ([0.1, 0.2], [0.2, 0.1], {"tests": iter(["t-test"])}, InvalidParameterError,
         "'tests' parameter .* non-empty collection"),
        ([0.1, 0.2], [0.2, 0.1], {"tests": 3}, InvalidParameterError, "'tests' parameter"),
    ],
)
def test_paired_significance_bad_input(baseline, others, options, error, match):
    with pytest.raises(error, match=match):
        paired_significance(baseline, others, **options)


@pytest.mark.parametrize(("options", "expected"), [
    ({"tests": "t-test"},
     "per-query values over 4 queries, baseline mean 0.4500\n"
     "system       mean    difference  t-test p\n"
     "long name b  0.6000  +0.1500     0.4324\n"
     "c            0.5000  +0.0500     4.1e-47"),
    # A correction names no p-value column when there is none: no correction line.
    ({"tests": "bootstrap", "correction": "holm", "n_resamples": 200, "random_state": 0},
     "per-query values over 4 queries, baseline mean 0.4500, 200 resamples\n"
     "system       mean    difference  95% CI\n"
     "long name b  0.6000  +0.1500     [-0.1250, +0.4000]\n"
     "c            0.5000  +0.0500     [+0.0500, +0.0500]"),
    # 4 queries: the 16 sign flips are enumerated, p = 10/16 and 2/16 before Holm's factor 2 for the smaller.
    ({"tests": "randomization", "correction": "holm", "n_resamples": 200, "random_state": 0},
     "per-query values over 4 queries, baseline mean 0.4500, 200 resamples\n"
     "p-values Holm-corrected over 2 systems\n"
     "system       mean    difference  randomization p (holm)\n"
     "long name b  0.6000  +0.1500     0.6250\n"
     "c            0.5000  +0.0500     0.2500"),
    ({"tests": ("t-test",), "correction": "bonferroni"},
     "per-query values over 4 queries, baseline mean 0.4500\n"
     "p-values Bonferroni-corrected over 2 systems\n"
     "system       mean    difference  t-test p (bonferroni)\n"
     "long name b  0.6000  +0.1500     0.8648\n"
     "c            0.5000  +0.0500     8.3e-47"),
])
def test_table_repr_by_hand(options, expected):
    a = np.array([0.1, 0.5, 0.9, 0.3])
    table = paired_significance(a, {"long name b": np.array([0.2, 0.6, 0.7, 0.9]), "c": a + 0.05}, **options)
    assert repr(table) == expected


@pytest.mark.parametrize(("p", "text"), [(None, "-"), (1.0, "1.0000"), (0.5, "0.5000"), (1e-4, "0.0001"),
                                         (9.9e-5, "9.9e-05"), (0.0, "0.0e+00")])
def test_p_values_print_with_four_decimals_or_in_scientific_notation(p, text):
    from sklearn_ltr.metrics._significance_results import _format_p

    assert _format_p(p) == text


def test_t_test_of_equal_nonzero_differences_is_certain():
    from sklearn_ltr.metrics._significance_stats import _t_test

    # Every difference exactly 0.5: zero variance, nonzero mean (scipy: t = inf, p = 0).
    t, p = _t_test(np.full(6, 0.5))
    assert t == np.inf and p == 0.0
    assert _t_test(np.zeros(6)) == (0.0, 1.0)
    t, p = _t_test(np.array([-1.0, 1.0, -1.0, 1.0]))  # mean 0, variance > 0
    assert t == 0.0 and p == pytest.approx(1.0)


def test_seeded_monte_carlo_results_stay_the_same():
    # random_state pins every resample: a user's seeded p-values and intervals must not move between
    # versions. A deliberate change of the random stream (block width, chunking, dtypes) updates these.
    rng = np.random.default_rng(42)
    a = rng.uniform(size=100)
    others = {"b": a + rng.normal(0.02, 0.1, size=100), "c": a + rng.normal(0.0, 0.1, size=100)}
    table = paired_significance(a, others, n_resamples=3000, random_state=0)
    # 2**100 sign patterns: Monte Carlo, p = (1 + extreme) / (1 + resamples).
    assert [r.randomization_pvalue for r in table] == [171 / 3001, 1870 / 3001]
    np.testing.assert_allclose([[r.ci_low, r.ci_high] for r in table],
                               [[-0.000303995550441803, 0.038160728693217585],
                                [-0.02404876085130457, 0.014787014452425619]], rtol=1e-12)


def test_a_legacy_random_state_pins_the_seeds_and_advances():
    # np.random.RandomState seeds (scikit-learn's check_random_state gives them) draw the two seeds
    # from 4 words of the legacy stream: pinned, as random_state promises, and each call draws anew.
    from sklearn_ltr.metrics._significance_stats import _seeds

    state = np.random.RandomState(0)
    assert _seeds(state) == [264448775794216018, 7722257735678147466]
    assert _seeds(state) == [7166128145106493746, 9114335979556435936]
    rng = np.random.default_rng(42)
    a = rng.uniform(size=100)
    table = paired_significance(a, {"b": a + rng.normal(0.02, 0.1, size=100)}, n_resamples=3000,
                                random_state=np.random.RandomState(0))
    assert table[0].randomization_pvalue == 175 / 3001
    np.testing.assert_allclose([table[0].ci_low, table[0].ci_high], [0.0004087324724193713, 0.03721054333383244],
                               rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-6, 1e6 / 3])
def test_ties_are_counted_at_any_scale_of_the_differences(scale):
    # The tie tolerance is relative to sum(|d|): on differences of order 1e-6 an absolute one would
    # count near values as ties, and on order 1e5 it would miss ties that differ by rounding.
    d = np.array([0.1, 0.2, -0.3, 0.3, 0.1, -0.2, 0.4, 0.1, -0.1, 0.3, 0.2, 0.6])
    expected = float(exact_sign_flip_pvalue([Fraction(str(round(v, 1))) for v in d]))
    result = significance_stats._randomization_pvalues((d * scale)[None], 2**12, 0)
    assert result[0] == expected


def test_blocks_of_8_up_to_the_byte_blocks_limit_inclusive(monkeypatch):
    # Up to _BYTE_BLOCKS_MAX_QUERIES queries, blocks of 8: the seeded Monte Carlo draws (one byte
    # per block) differ from those of blocks of 4, so the limit decides which stream a seed gives.
    rng = np.random.default_rng(5)
    d = rng.normal(0.05, 0.2, size=(1, 40))

    def pvalue(limit):
        monkeypatch.setattr(significance_stats, "_BYTE_BLOCKS_MAX_QUERIES", limit)
        return significance_stats._randomization_pvalues(d, 2_000, 0)[0]

    bytes_, nibbles = pvalue(1 << 17), pvalue(0)
    assert bytes_ != nibbles
    assert pvalue(40) == bytes_ and pvalue(39) == nibbles


def test_paired_significance_defaults_and_its_length_message():
    rng = np.random.default_rng(21)
    a = rng.uniform(size=30)
    table = paired_significance(a, a + rng.normal(0.05, 0.1, size=30), tests="randomization")
    assert table.n_resamples == 10_000  # the documented default
    with pytest.raises(ValueError) as error:
        paired_significance(a, {"new": a[:29]})
    assert str(error.value) == ("others['new'] has 29 values but baseline has 30; pass one value per query, the same "
                                "queries in the same order.")


@pytest.mark.parametrize("random_state", [-1, "seed", 1.5])
def test_paired_significance_validates_random_state_by_name(random_state):
    with pytest.raises(InvalidParameterError, match="'random_state' parameter of paired_significance"):
        paired_significance([0.1, 0.2, 0.3], [0.2, 0.3, 0.5], random_state=random_state)


def test_compare_rankings_defaults_are_ndcg_at_10_and_10000_resamples():
    rng = np.random.default_rng(31)
    qid = np.repeat(np.arange(6), 15)
    y = rng.integers(0, 3, qid.size)
    base, other = rng.normal(size=qid.size), y + rng.normal(size=qid.size)
    table = compare_rankings(y, base, {"other": other}, qid, tests="randomization")
    assert table.metric == "ndcg@10" and table.n_resamples == 10_000
    np.testing.assert_array_equal(table.baseline_values, ndcg_per_query(y, base, qid, k=10)[1])


def test_compare_rankings_with_two_defined_queries_runs():
    y = np.array([1, 0, 0, 2, 0, 1])
    qid = np.repeat([1, 2], 3)
    table = compare_rankings(y, [0.1, 0.2, 0.3, 0.3, 0.2, 0.1], {"b": [0.3, 0.2, 0.1, 0.3, 0.1, 0.2]}, qid,
                             tests="t-test")
    assert table.n_queries == 2


def test_compare_rankings_refuses_a_metric_without_per_query_values():
    y, qid = np.array([1, 0, 0, 2]), np.array([1, 1, 2, 2])
    with pytest.raises(InvalidParameterError) as error:
        compare_rankings(y, [0.1, 0.2, 0.3, 0.4], {"b": [0.4, 0.3, 0.2, 0.1]}, qid, metric="swapped_pairs")
    assert str(error.value).startswith(
        "The 'metric' parameter of compare_rankings must be a metric with per-query values; the 'swapped_pairs' "
        "metric has none.")


def _top_is_relevant(y_true, y_score, groups):
    """1 where the best-scored document of a query is relevant: a metric with no cut-off."""
    groups, y_true, y_score = np.asarray(groups), np.asarray(y_true), np.asarray(y_score)
    queries = np.unique(groups)  # in sorted order, as the per-query values of the built-in metrics
    return np.array([float(y_true[groups == q][np.argmax(y_score[groups == q])] > 0) for q in queries])


def test_compare_rankings_with_a_registered_metric_without_cut_off():
    from sklearn_ltr.metrics import Metric, register_metric, unregister_metric

    register_metric(Metric("sig_top_relevant", None, _top_is_relevant))
    try:
        y = np.array([1, 0, 0, 1, 0, 1, 0, 0, 1])
        qid = np.repeat([1, 2, 3], 3)
        good = y * 10.0 - np.arange(9) * 0.01  # the relevant document first in every query
        bad = -good
        table = compare_rankings(y, bad, {"good": good}, qid, metric="sig_top_relevant", tests="t-test")
        assert table.metric == "sig_top_relevant"  # no @k: the metric takes none
        np.testing.assert_array_equal(table.values[0], [1.0, 1.0, 1.0])
    finally:
        unregister_metric("sig_top_relevant")
