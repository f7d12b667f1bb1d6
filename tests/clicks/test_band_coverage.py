"""The bootstrap bands of the propensity estimates: which quantiles they are, and how often they hold the truth.

Every :class:`~sklearn_ltr.clicks.PropensityEstimate` with a band (``estimate_propensity_em``,
``estimate_propensity_document_em`` with both likelihoods, ``estimate_propensity_harvesting``,
``estimate_propensity_swap``) builds ``lower`` and ``upper`` with ``percentile_band`` from the
replicates it keeps in ``bootstrap``. ``estimate_trust_bias_em`` reports no band.

- Exact quantiles: ``percentile_band`` on replicates whose quantiles are known by hand; then, for
  each estimator and two levels, ``lower`` and ``upper`` are the ``(1 - c) / 2`` and
  ``(1 + c) / 2`` quantiles of the fitted replicates, the replicates do not depend on the level,
  and failed replicates are left out and counted.
- Coverage: many logs drawn from a known position-based model (fixed seeds); the fraction of 80%
  bands that hold the true ``theta_k / theta_1`` is checked against 80% for the harvesting, swap
  and document-EM (Poisson) estimators. The Bernoulli document EM (a whole EM per replicate) and
  the regression EM (LightGBM fits per replicate) are too slow for a few hundred logs: they get
  the exact-quantile check on their replicates, and share ``percentile_band`` with the three
  simulated here.

Why 80% and not 95%: a band built with ``alpha = 1 - c`` instead of ``(1 - c) / 2`` is a 60%
band where 80% was asked, 20 points below, while at 95% it is a 90% band, 5 points below, which
a few hundred logs cannot tell from the percentile bootstrap's own shortfall at these sizes.
"""

import warnings

import numpy as np
import pytest

from sklearn_ltr.clicks import (
    estimate_propensity_document_em,
    estimate_propensity_em,
    estimate_propensity_harvesting,
    estimate_propensity_swap,
)
from sklearn_ltr.clicks._estimate import percentile_band

THETA = np.array([1.0, 0.6, 0.35])


def shuffled_log(rng, n_queries, n_sessions, n_docs=3):
    """Clicks, positions, queries, documents and a feature: each page shows its query's documents in a random order.

    Position-based model with propensities ``THETA`` and a relevance per (query, document) drawn
    in [0.2, 0.9]; the feature is that relevance (for the regression EM).
    """
    relevance = rng.uniform(0.2, 0.9, size=(n_queries, n_docs))
    position = np.argsort(rng.random((n_queries, n_sessions, n_docs)), axis=2).reshape(-1) + 1
    query = np.repeat(np.arange(n_queries), n_sessions * n_docs)
    document = np.tile(np.arange(n_docs), n_queries * n_sessions)
    gamma = relevance[query, document]
    clicks = (rng.random(position.size) < THETA[position - 1] * gamma).astype(int)
    return clicks, position, query, document, gamma[:, None]


def swap_log(rng, n_queries, n_interventions):
    """Swap interventions on (1, 2) and (1, 3), the two documents' order drawn by a fair coin."""
    n = n_queries * n_interventions
    lower = rng.integers(2, 4, size=n)
    first_on_top = rng.random(n) < 0.5
    position = np.column_stack([np.where(first_on_top, 1, lower), np.where(first_on_top, lower, 1)])
    clicks = (rng.random((n, 2)) < THETA[position - 1] * rng.uniform(0.2, 0.9, size=(n, 2))).astype(int)
    groups = np.repeat(np.arange(n_queries), 2 * n_interventions)
    return clicks.reshape(-1), position.reshape(-1), groups, np.repeat(np.arange(n), 2), None


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few EM iterations on purpose: the band is what is checked
        return function(*args, **kwargs)


def harvesting(log, *, confidence, n_bootstrap, random_state):
    clicks, positions, groups, documents, _ = log
    return estimate_propensity_harvesting(clicks, positions, groups, documents, max_position=3,
                                          n_bootstrap=n_bootstrap, confidence=confidence, random_state=random_state)


def swap(log, *, confidence, n_bootstrap, random_state):
    clicks, positions, groups, pairs, _ = log
    return estimate_propensity_swap(clicks, positions, groups, pairs, max_position=3, n_bootstrap=n_bootstrap,
                                    confidence=confidence, random_state=random_state)


def document_poisson(log, *, confidence, n_bootstrap, random_state):
    clicks, positions, groups, documents, _ = log
    return _quiet(estimate_propensity_document_em, clicks, positions, groups, documents, max_position=3,
                  n_bootstrap=n_bootstrap, confidence=confidence, random_state=random_state, tol=1e-6)


def document_bernoulli(log, *, confidence, n_bootstrap, random_state):
    clicks, positions, groups, documents, _ = log
    return _quiet(estimate_propensity_document_em, clicks, positions, groups, documents, max_position=3,
                  likelihood="bernoulli", n_iter=50, n_bootstrap=n_bootstrap, confidence=confidence,
                  random_state=random_state)


def regression_em(log, *, confidence, n_bootstrap, random_state):
    clicks, positions, groups, _, X = log
    return _quiet(estimate_propensity_em, X, clicks, positions, groups, max_position=3, n_iter=4,
                  relevance_params={"num_iterations": 5}, n_bootstrap=n_bootstrap, confidence=confidence,
                  random_state=random_state, n_jobs=1)


# ------------------------------------------------------------------------------ exact quantiles


@pytest.mark.parametrize(("confidence", "lower", "upper"), [(0.95, 2.5, 97.5), (0.5, 25.0, 75.0), (0.8, 10.0, 90.0)])
def test_percentile_band_is_the_two_tail_quantiles_by_hand(confidence, lower, upper):
    # Replicates 0, 1, ..., 100 (shuffled): the q-quantile (linear interpolation) is 100 q. A second
    # position holds 10 times the first; a row with a NaN is a failed replicate, left out and counted.
    values = np.random.default_rng(0).permutation(101).astype(float)
    replicates = np.column_stack([values, 10 * values])
    replicates = np.vstack([replicates, [np.nan, 5.0], [1e9, np.nan]])
    low, high, failed = percentile_band(replicates, confidence)
    np.testing.assert_allclose(low, [lower, 10 * lower])
    np.testing.assert_allclose(high, [upper, 10 * upper])
    assert failed == 2


def test_percentile_band_without_a_fitted_replicate_is_none():
    assert percentile_band(np.full((3, 2), np.nan), 0.9) == (None, None, 3)


def _log_for(estimator, seed):
    rng = np.random.default_rng(seed)
    return swap_log(rng, 15, 6) if estimator is swap else shuffled_log(rng, 12, 5)


@pytest.mark.parametrize("estimator", [harvesting, swap, document_poisson, document_bernoulli, regression_em],
                         ids=lambda f: f.__name__)
def test_each_band_is_the_two_tail_quantiles_of_its_replicates_at_two_levels(estimator):
    log = _log_for(estimator, 11)
    n_bootstrap = 6 if estimator in (document_bernoulli, regression_em) else 40
    estimates = {c: estimator(log, confidence=c, n_bootstrap=n_bootstrap, random_state=3) for c in (0.95, 0.6)}
    # The level changes only the quantiles taken: the same seed gives the same replicates.
    np.testing.assert_array_equal(estimates[0.95].bootstrap, estimates[0.6].bootstrap)
    for confidence, estimate in estimates.items():
        assert estimate.confidence == confidence
        fitted = estimate.bootstrap[np.isfinite(estimate.bootstrap).all(axis=1)]
        assert fitted.shape[0] == n_bootstrap - estimate.n_bootstrap_failed >= n_bootstrap - 1
        low, high = np.quantile(fitted, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
        np.testing.assert_allclose(estimate.lower, low, rtol=1e-12)
        np.testing.assert_allclose(estimate.upper, high, rtol=1e-12)
    # Position 1 is the reference (1 in every replicate); the others' 95% band holds the 60% one.
    assert (estimates[0.95].lower[1:] <= estimates[0.6].lower[1:]).all()
    assert (estimates[0.95].upper[1:] >= estimates[0.6].upper[1:]).all()
    assert (estimates[0.95].upper[1:] - estimates[0.95].lower[1:] > estimates[0.6].upper[1:]
            - estimates[0.6].lower[1:]).all()


def test_replicates_the_estimator_cannot_fit_are_left_out_of_the_band_and_counted():
    # Swap interventions on (1, 3) only in two queries out of 40: a resample that draws neither has
    # no clicks at position 3 and fails; the band is the quantiles of the others.
    rng = np.random.default_rng(5)
    clicks, positions, groups, pairs, _ = swap_log(rng, 40, 4)
    rare = (positions == 3) & (groups >= 2)
    positions = np.where(rare, 2, positions)
    estimate = estimate_propensity_swap(clicks, positions, groups, pairs, max_position=3, n_bootstrap=60,
                                        confidence=0.9, random_state=0)
    failed = ~np.isfinite(estimate.bootstrap).all(axis=1)
    assert estimate.n_bootstrap_failed == failed.sum() > 0
    low, high = np.quantile(estimate.bootstrap[~failed], [0.05, 0.95], axis=0)
    # 0.05 and (1 - 0.9) / 2 differ in the last bit: equal up to rounding.
    np.testing.assert_allclose(estimate.lower, low, rtol=1e-12)
    np.testing.assert_allclose(estimate.upper, high, rtol=1e-12)


def test_no_band_without_replicates():
    estimate = harvesting(shuffled_log(np.random.default_rng(1), 12, 5), confidence=0.9, n_bootstrap=0,
                          random_state=0)
    assert estimate.lower is None and estimate.upper is None and estimate.bootstrap.shape == (0, 3)


# ------------------------------------------------------------------------------ coverage

#: Logs per estimator, replicates per band, and the sizes of a log (queries, and pages or interventions per query).
N_LOGS, N_BOOTSTRAP, N_QUERIES, PER_QUERY = 200, 60, 30, 16


@pytest.mark.parametrize("estimator", [swap, harvesting, document_poisson], ids=lambda f: f.__name__)
def test_the_80_percent_band_holds_the_true_propensities_about_80_percent_of_the_time(estimator):
    # 200 logs of 30 queries (16 pages, or 16 interventions, each) from THETA; 60 replicates per band.
    # The percentile bootstrap over 30 queries runs a little narrow (ratios of click counts are skewed,
    # and the 10th and 90th percentiles of 60 replicates are noisy): 300 logs of these sizes (seeds
    # 0-299) gave 76-79% at positions 2 and 3 for all three estimators, and 400 logs of 30-60 queries
    # of 8 pages 72-81%. So the band allowed goes 4 points below 80% and then 3 binomial standard
    # errors (0.028 at 200 logs) either way: 67.5% to 88.5% (these seeds give 74.5-80.5%). The
    # planted 1 - c tails make a 60% band, which the same logs hold 55.5-60.5% of the time.
    covered = np.zeros(2)
    for seed in range(N_LOGS):
        rng = np.random.default_rng(seed)
        log = swap_log(rng, N_QUERIES, PER_QUERY) if estimator is swap else shuffled_log(rng, N_QUERIES, PER_QUERY)
        estimate = estimator(log, confidence=0.8, n_bootstrap=N_BOOTSTRAP, random_state=seed)
        truth = THETA[1:] / THETA[0]
        covered += (estimate.lower[1:] <= truth) & (truth <= estimate.upper[1:])
    error = np.sqrt(0.8 * 0.2 / N_LOGS)
    rate = covered / N_LOGS
    assert ((0.8 - 0.04 - 3 * error <= rate) & (rate <= 0.8 + 3 * error)).all(), rate
