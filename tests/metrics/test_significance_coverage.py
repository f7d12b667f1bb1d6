"""The confidence interval of the significance tests: which quantiles it takes, and how often it holds the truth.

``paired_significance`` and ``compare_rankings`` report one interval with a level,
``ci_low``/``ci_high``: the percentile bootstrap of the mean difference over queries (the t-test
reports a statistic and a p-value, no interval). Checked here:

- exact quantiles: the interval is the ``(1 - c) / 2`` and ``(1 + c) / 2`` quantiles of the means
  of resampled queries, for two levels (on the statistics' own function, with the resamples
  redrawn from the same seed); and through the public function, on many queries, against the
  normal quantiles that the bootstrap distribution of a mean approaches;
- ``compare_rankings`` hands its level to the interval (equal to ``paired_significance`` on the
  per-query NDCG at two levels);
- coverage: over a few hundred data sets drawn with a known mean difference (fixed seeds), the
  fraction of intervals that hold it is within binomial error of the level, at 80% and 50%
  (levels where an interval built with ``alpha = 1 - c`` instead of ``(1 - c) / 2``, a 60% and a
  0% interval, falls far outside that error);
- the tests' p-values keep their level under the null (another way to lose a level).
"""

import math

import numpy as np
import pytest
from scipy import special

from sklearn_ltr.metrics import _significance_stats as significance_stats
from sklearn_ltr.metrics import compare_rankings, ndcg_per_query, paired_significance


@pytest.mark.parametrize("confidence", [0.95, 0.6])
def test_bootstrap_interval_is_the_two_tail_quantiles_of_the_resampled_means(confidence):
    rng = np.random.default_rng(0)
    differences = rng.normal(size=(2, 9)) + np.array([[0.0], [1.0]])  # two systems, two means
    intervals = significance_stats._bootstrap_intervals(differences, 500, confidence, np.random.default_rng(7))
    # The reference: the same seed draws the same 500 resamples of 9 queries (one chunk), by hand.
    index = np.random.default_rng(7).integers(0, 9, size=(500, 9))
    for row, interval in zip(differences, intervals, strict=True):
        means = row[index].mean(axis=1)
        expected = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
        np.testing.assert_allclose(interval, expected, rtol=1e-12)


@pytest.mark.parametrize("confidence", [0.95, 0.6])
def test_public_interval_has_the_normal_half_width_on_many_queries(confidence):
    # 2,000 queries of symmetric differences: the bootstrap distribution of the mean is normal to
    # within a few thousandths of a standard error, with standard error s / sqrt(n) (s with ddof=0).
    rng = np.random.default_rng(1)
    a = rng.uniform(size=2_000)
    b = a + 0.01 + rng.normal(0, 0.1, size=2_000)
    d = b - a
    result = paired_significance(a, b, tests="bootstrap", n_resamples=20_000, confidence_level=confidence,
                                 random_state=0)[0]
    standard_error = d.std() / math.sqrt(d.size)
    z = special.ndtri((1 + confidence) / 2)
    # The quantiles of 20,000 resamples are known to about 0.02 standard errors; 0.06 leaves 3 of
    # those, while the 1 - c tail (a z of 1.64 for 1.96, 0.52 for 0.84) is off by 0.3 or more.
    assert abs((result.ci_high - d.mean()) / standard_error - z) < 0.06
    assert abs((d.mean() - result.ci_low) / standard_error - z) < 0.06


def _rankings(n_queries, seed):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_queries), 8)
    y = rng.integers(0, 4, size=groups.size)
    y[::8] = 3  # every query has a relevant document: every NDCG is defined
    baseline = y + rng.normal(size=y.size)
    other = y + rng.normal(scale=0.7, size=y.size)
    return y, groups, baseline, other


@pytest.mark.parametrize("confidence", [0.9, 0.5])
def test_compare_rankings_hands_its_level_to_the_interval(confidence):
    y, groups, baseline, other = _rankings(30, 2)
    table = compare_rankings(y, baseline, [other], groups, k=5, tests="bootstrap", n_resamples=2_000,
                             confidence_level=confidence, random_state=4)
    per_query = [ndcg_per_query(y, scores, groups, k=5)[1] for scores in (baseline, other)]
    reference = paired_significance(*per_query, tests="bootstrap", n_resamples=2_000, confidence_level=confidence,
                                    random_state=4)
    assert table.confidence_level == confidence
    assert (table[0].ci_low, table[0].ci_high) == (reference[0].ci_low, reference[0].ci_high)
    assert table[0].ci_low < table[0].mean_difference < table[0].ci_high


@pytest.mark.parametrize("confidence", [0.8, 0.5])
def test_bootstrap_interval_covers_the_true_difference_at_its_level(confidence):
    # 300 data sets of 60 queries, skewed differences (a gamma of shape 4: NDCG-like gains are not
    # symmetric) with a known mean; 400 resamples each. The percentile interval of a mean runs a
    # little narrow at this size (its spread is the standard deviation with ddof=0, and the skewness
    # shifts it): these seeds give 77% at 80% and 51.7% at 50%. So the band allowed is 3.5 binomial
    # standard errors (0.023 at 80%, 0.029 at 50%) below the level, less 0.02 more for that shortfall,
    # and 3.5 above. The planted 1 - c tails give a 60% interval and an empty one.
    rng = np.random.default_rng(3)
    n_datasets, n_queries, shape, scale = 300, 60, 4.0, 0.05
    true_difference = shape * scale - 0.15
    covered = 0
    for j in range(n_datasets):
        a = rng.uniform(size=n_queries)
        b = a + rng.gamma(shape, scale, size=n_queries) - 0.15
        result = paired_significance(a, b, tests="bootstrap", n_resamples=400, confidence_level=confidence,
                                     random_state=j)[0]
        covered += result.ci_low <= true_difference <= result.ci_high
    error = math.sqrt(confidence * (1 - confidence) / n_datasets)
    assert confidence - 3.5 * error - 0.02 <= covered / n_datasets <= confidence + 3.5 * error, covered


@pytest.mark.parametrize("test", ["t-test", "randomization"])
def test_p_values_keep_their_level_under_the_null(test):
    # Symmetric differences around 0: P(p <= 0.1) is 0.1 for the t-test (normal differences) and at
    # most 0.1 for the sign-flip test (exact under symmetry). 400 data sets: standard error 0.015.
    rng = np.random.default_rng(4)
    field = {"t-test": "t_pvalue", "randomization": "randomization_pvalue"}[test]
    pvalues = []
    for j in range(400):
        a = rng.uniform(size=25)
        b = a + rng.normal(0, 0.1, size=25)
        pvalues.append(getattr(paired_significance(a, b, tests=test, n_resamples=300, random_state=j)[0], field))
    rejected = np.mean(np.asarray(pvalues) <= 0.1)
    assert 0.1 - 3.5 * 0.015 <= rejected <= 0.1 + 3.5 * 0.015, rejected
