"""Propensity estimation from click logs (``sklearn_ltr.clicks``): regression EM and intervention harvesting."""

import pickle

import numpy as np
import pytest

from sklearn_ltr.clicks import (
    PropensityEstimate,
    estimate_propensity_em,
    estimate_propensity_harvesting,
    inverse_propensity_weights,
)
from sklearn_ltr.clicks._em import e_step, run_em, update_theta

FAST_TREES = {"num_iterations": 20}


def _log(n_queries, n_docs, sessions, curve, *, seed=0, n_features=3):
    """A click log of a position-based model: each page shows a query's documents in a random order.

    Relevance is ``sigmoid(3 * x_0 - 1)`` of the first feature; examination ``curve(position)``.
    Returns ``X, clicks, positions, queries, documents``, one row per document per page.
    """
    rng = np.random.default_rng(seed)
    features = rng.random((n_queries, n_docs, n_features))
    relevance = 1 / (1 + np.exp(-(3 * features[..., 0] - 1)))
    rows = []
    for _ in range(sessions):
        positions = np.argsort(rng.random((n_queries, n_docs)), axis=1) + 1
        clicks = rng.random((n_queries, n_docs)) < curve(positions) * relevance
        rows.append((positions, clicks))
    positions = np.concatenate([p.ravel() for p, _ in rows])
    clicks = np.concatenate([c.ravel() for _, c in rows]).astype(int)
    queries = np.tile(np.repeat(np.arange(n_queries), n_docs), sessions)
    documents = np.tile(np.tile(np.arange(n_docs), n_queries), sessions)
    X = np.tile(features.reshape(-1, n_features), (sessions, 1))
    return X, clicks, positions, queries, documents


def _max_relative_error(estimate, curve, positions):
    truth = curve(np.asarray(positions)) / curve(1)
    return np.max(np.abs(estimate.propensity[np.asarray(positions) - 1] - truth) / truth)


# ------------------------------------------------------------------------- hand-computed cases


def test_harvesting_ratio_of_one_document_at_two_positions():
    # Two clicks in four views at position 1, one in four at position 2: theta_2 / theta_1 = (1/4) / (2/4).
    estimate = estimate_propensity_harvesting([1, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 2, 2], [7] * 8, [3] * 8,
                                              max_position=2, n_bootstrap=0)
    np.testing.assert_allclose(estimate.propensity, [1.0, 0.5])
    assert estimate.method == "intervention_harvesting" and estimate.converged and estimate.n_iter == 1
    np.testing.assert_array_equal(estimate.n_shown, [4, 4])
    np.testing.assert_array_equal(estimate.n_clicks, [2, 1])
    assert estimate.details["n_documents"][0, 1] == 1


def test_harvesting_chains_ratios_through_a_middle_position():
    # Document a: positions 1 (1/2 clicked) and 2 (1/4); document b: positions 2 (2/4) and 3 (1/4).
    # No document links 1 and 3 directly: theta_3 = (theta_2 / theta_1) * (theta_3 / theta_2) = 0.5 * 0.5.
    clicks = [1, 0, *[1, 0, 0, 0], *[1, 1, 0, 0], *[1, 0, 0, 0]]
    positions = [1, 1] + [2] * 4 + [2] * 4 + [3] * 4
    documents = ["a"] * 6 + ["b"] * 8
    estimate = estimate_propensity_harvesting(clicks, positions, ["q"] * 14, documents, max_position=3,
                                              n_bootstrap=0)
    np.testing.assert_allclose(estimate.propensity, [1.0, 0.5, 0.25])


def test_harvesting_pools_documents_with_weights_by_their_views():
    # Pair (1, 2): document a (views 2 and 2, u = 1) with rates 1/2 -> 0, document b (views 1 and 1,
    # u = 1/2) with rates 1 -> 1. Ratio = (1 * 0 + 0.5 * 1) / (1 * 0.5 + 0.5 * 1) = 0.5.
    clicks = [1, 0, 0, 0, 1, 1]
    positions = [1, 1, 2, 2, 1, 2]
    documents = ["a", "a", "a", "a", "b", "b"]
    estimate = estimate_propensity_harvesting(clicks, positions, [0] * 6, documents, max_position=2, n_bootstrap=0)
    np.testing.assert_allclose(estimate.propensity, [1.0, 0.5])


def test_e_step_posteriors_by_hand():
    # theta = gamma = 1/2: a non-click is (E, R) = (1, 0), (0, 1) or (0, 0) with probability 1/4 each.
    examined, relevant = e_step(np.array([0.0, 1.0]), np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    np.testing.assert_allclose(examined, [1 / 3, 1])
    np.testing.assert_allclose(relevant, [1 / 3, 1])
    # theta = 0.8, gamma = 0.25: P(E = 1 | C = 0) = 0.8 * 0.75 / 0.8 = 0.75, P(R = 1 | C = 0) = 0.2 * 0.25 / 0.8.
    examined, relevant = e_step(np.array([0.0]), np.array([0.8]), np.array([0.25]))
    np.testing.assert_allclose([examined[0], relevant[0]], [0.75, 0.0625])


def test_em_theta_with_a_known_fixed_relevance():
    # gamma = 0.5 everywhere: the likelihood's maximum is theta_k = ctr_k / gamma, here 0.4 / 0.5 and 0.1 / 0.5.
    clicks = np.array([1, 1, 0, 0, 0] * 2 + [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    buckets = np.array([1] * 10 + [2] * 10)
    gamma = np.full(20, 0.5)
    # (A start at theta = 1 would stay there: a non-click at a surely examined position is surely irrelevant.)
    theta, _, iterations, converged, history = run_em(clicks, buckets, np.ones(20), lambda targets, w: gamma,
                                                      np.array([0.5, 0.5]), gamma, n_iter=20, tol=1e-9)
    np.testing.assert_allclose(theta, [0.8, 0.2], atol=1e-6)
    assert converged and iterations == 2 and np.all(np.diff(history) >= -1e-12)
    # One closed-form step from theta = 1/2: the mean of c + (1 - c) / 3 over each position's rows.
    one = update_theta(clicks, buckets, np.ones(20), np.array([0.5, 0.5]), gamma, shown=np.array([10.0, 10.0]),
                       max_steps=1)
    np.testing.assert_allclose(one, [0.4 + 0.6 / 3, 0.1 + 0.9 / 3])


def test_em_with_features_that_carry_nothing_returns_the_click_rate_ratio():
    # A constant feature: gamma is one number (n_folds=1), so the maximum is theta_k proportional to ctr_k.
    rng = np.random.default_rng(1)
    positions = np.tile([1, 2, 3], 300)
    clicks = (rng.random(900) < 0.6 / positions).astype(int)
    estimate = estimate_propensity_em(np.zeros((900, 1)), clicks, positions, np.repeat(np.arange(300), 3),
                                      max_position=3, n_folds=1, n_bootstrap=0, n_iter=200, tol=1e-7,
                                      relevance_params=FAST_TREES, random_state=0)
    ctr = np.bincount(positions, clicks)[1:] / 300
    np.testing.assert_allclose(estimate.propensity, ctr / ctr[0], rtol=1e-3)
    assert estimate.method == "regression_em" and estimate.converged


# ---------------------------------------------------------------------------- known curves


@pytest.mark.parametrize("curve", [lambda p: 1.0 / p, lambda p: 1.0 / np.sqrt(p)], ids=["1/p", "1/sqrt(p)"])
def test_harvesting_recovers_a_known_curve(curve):
    _, clicks, positions, queries, documents = _log(300, 10, 10, curve)
    estimate = estimate_propensity_harvesting(clicks, positions, queries, documents, max_position=10,
                                              n_bootstrap=50, random_state=0)
    assert _max_relative_error(estimate, curve, range(1, 11)) < 0.15
    truth = curve(np.arange(1, 11)) / curve(1)
    assert ((estimate.lower <= truth + 1e-9) & (truth <= estimate.upper + 1e-9)).sum() >= 8


@pytest.mark.parametrize("curve", [lambda p: 1.0 / p, lambda p: 1.0 / np.sqrt(p)], ids=["1/p", "1/sqrt(p)"])
def test_em_recovers_a_known_curve(curve):
    # One page per query (no document at two positions): only the features separate relevance from position.
    X, clicks, positions, queries, _ = _log(2000, 8, 1, curve, seed=2)
    estimate = estimate_propensity_em(X, clicks, positions, queries, max_position=8, n_bootstrap=0,
                                      relevance_params=FAST_TREES, random_state=0)
    assert _max_relative_error(estimate, curve, range(1, 9)) < 0.15


def test_em_separates_position_from_a_confounded_relevance():
    # Relevant documents (high x_0) are shown higher: the click rates fall faster than the examination.
    rng = np.random.default_rng(3)
    n_queries, n_docs = 3000, 6
    x = rng.random((n_queries, n_docs))
    positions = np.argsort(np.argsort(-(x + rng.random(x.shape)), axis=1), axis=1) + 1
    clicks = (rng.random(x.shape) < (1.0 / positions) * x).astype(int).ravel()
    estimate = estimate_propensity_em(x.reshape(-1, 1), clicks, positions.ravel(), np.repeat(np.arange(n_queries),
                                      n_docs), max_position=6, n_bootstrap=0, n_iter=100, tol=1e-4,
                                      relevance_params={"num_iterations": 20, "learning_rate": 0.3}, random_state=0)
    ctr = np.bincount(positions.ravel(), clicks)[1:] / n_queries
    truth = 1.0 / np.arange(1, 7)
    assert np.max(np.abs(ctr / ctr[0] - truth) / truth) > 0.6  # the naive click-rate ratio: 0.05 at position 6
    # Measured: 0.50 / 0.35 / 0.245 / 0.195 / 0.134 (truth 0.167 at 6, where x and position are most confounded).
    assert _max_relative_error(estimate, lambda p: 1.0 / p, range(1, 6)) < 0.1
    assert _max_relative_error(estimate, lambda p: 1.0 / p, range(1, 7)) < 0.25


# ------------------------------------------------------------------------------ the result


def test_propensity_of_gives_propensities_not_weights():
    estimate = estimate_propensity_harvesting([1, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 2, 2], [7] * 8, [3] * 8,
                                              max_position=2, n_bootstrap=0)
    per_row = estimate.propensity_of([2, 1, 5, 2])
    np.testing.assert_allclose(per_row, [0.5, 1.0, 0.5, 0.5])  # position 5 shares the last bucket's value
    assert per_row.max() <= 1
    # What training does with them: weights 1 / p, so a click at position 2 counts twice.
    np.testing.assert_allclose(inverse_propensity_weights(per_row), [2.0, 1.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="positions are 1-based"):
        estimate.propensity_of([0, 1])


def test_propensity_of_clips_estimates_above_position_one():
    # Position 2 clicked more often than position 1 (noise): its propensity stays at most 1.
    estimate = estimate_propensity_harvesting([1, 0, 1, 1], [1, 1, 2, 2], [0] * 4, [0] * 4, max_position=2,
                                              n_bootstrap=0)
    assert estimate.propensity[1] == pytest.approx(2.0)
    np.testing.assert_allclose(estimate.propensity_of([1, 2]), [1.0, 1.0])


def test_estimate_pickles_and_describes_itself():
    estimate = estimate_propensity_harvesting([1, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 2, 2], [7] * 8, [3] * 8,
                                              max_position=2, n_bootstrap=10, random_state=0)
    again = pickle.loads(pickle.dumps(estimate))
    assert isinstance(again, PropensityEstimate)
    np.testing.assert_array_equal(again.propensity, estimate.propensity)
    assert "intervention_harvesting" in repr(estimate) and "95% band" in repr(estimate)
    assert estimate.max_position == 2 and estimate.bootstrap.shape == (10, 2)


# ----------------------------------------------------------------------- invariances, seeds


@pytest.fixture(scope="module")
def small_log():
    return _log(80, 6, 5, lambda p: 1.0 / p, seed=4)


def test_harvesting_is_invariant_to_row_order_and_query_labels(small_log):
    _, clicks, positions, queries, documents = small_log
    base = estimate_propensity_harvesting(clicks, positions, queries, documents, max_position=6, n_bootstrap=30,
                                          random_state=0)
    order = np.random.default_rng(0).permutation(len(clicks))
    shuffled = estimate_propensity_harvesting(clicks[order], positions[order], queries[order], documents[order],
                                              max_position=6, n_bootstrap=30, random_state=0)
    np.testing.assert_allclose(shuffled.propensity, base.propensity, rtol=1e-12)
    np.testing.assert_allclose(shuffled.lower, base.lower, rtol=1e-12)
    # Any relabelling leaves the estimate; one that keeps the order of the ids also keeps the bootstrap draws.
    relabelled = estimate_propensity_harvesting(clicks, positions, (queries * 7919) % 1000, documents,
                                                max_position=6, n_bootstrap=0)
    np.testing.assert_allclose(relabelled.propensity, base.propensity, rtol=1e-12)
    names = np.array([f"query-{q:03d}" for q in range(80)])[queries]
    named = estimate_propensity_harvesting(clicks, positions, names, documents, max_position=6, n_bootstrap=30,
                                           random_state=0)
    np.testing.assert_allclose(named.upper, base.upper, rtol=1e-12)


def test_em_is_invariant_to_row_order_and_order_keeping_query_labels(small_log):
    X, clicks, positions, queries, _ = small_log
    kwargs = {"max_position": 6, "n_bootstrap": 0, "relevance_params": FAST_TREES, "random_state": 0, "n_jobs": 1}
    base = estimate_propensity_em(X, clicks, positions, queries, **kwargs)
    order = np.random.default_rng(1).permutation(len(clicks))
    shuffled = estimate_propensity_em(X[order], clicks[order], positions[order], queries[order], **kwargs)
    np.testing.assert_allclose(shuffled.propensity, base.propensity, rtol=1e-6)
    relabelled = estimate_propensity_em(X, clicks, positions, 10 * queries + 3, **kwargs)
    np.testing.assert_allclose(relabelled.propensity, base.propensity, rtol=1e-12)


def test_random_state_makes_the_band_reproducible(small_log):
    _, clicks, positions, queries, documents = small_log

    def band(seed):
        e = estimate_propensity_harvesting(clicks, positions, queries, documents, max_position=6, n_bootstrap=40,
                                           random_state=seed)
        return e.lower, e.upper

    np.testing.assert_array_equal(band(3)[0], band(3)[0])
    assert not np.array_equal(band(3)[0], band(4)[0])
    lower, upper = band(3)
    assert np.all(lower <= upper) and lower[0] == upper[0] == 1


def test_em_band_is_reproducible_and_brackets_the_noise(small_log):
    X, clicks, positions, queries, _ = small_log
    kwargs = {"max_position": 4, "n_bootstrap": 4, "relevance_params": {"num_iterations": 5}, "n_jobs": 1}
    first = estimate_propensity_em(X, clicks, positions, queries, random_state=5, **kwargs)
    second = estimate_propensity_em(X, clicks, positions, queries, random_state=5, **kwargs)
    np.testing.assert_array_equal(first.bootstrap, second.bootstrap)
    np.testing.assert_array_equal(first.propensity, second.propensity)
    assert np.all(first.lower <= first.upper) and first.confidence == 0.95


def test_sample_weight_counts_like_repeated_rows(small_log):
    _, clicks, positions, queries, documents = small_log
    twice = np.r_[np.arange(len(clicks)), np.flatnonzero(clicks == 0)]  # every non-click twice
    repeated = estimate_propensity_harvesting(clicks[twice], positions[twice], queries[twice], documents[twice],
                                              max_position=6, n_bootstrap=0)
    weighted = estimate_propensity_harvesting(clicks, positions, queries, documents, max_position=6,
                                              sample_weight=np.where(clicks == 1, 1.0, 2.0), n_bootstrap=0)
    np.testing.assert_allclose(weighted.propensity, repeated.propensity, rtol=1e-12)
    np.testing.assert_array_equal(weighted.n_shown, repeated.n_shown)


# --------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("change", "message"), [
    ({"clicks": [1, 0, 2, 0]}, "clicks must hold only 0 .* and 1 "),
    ({"clicks": [1, 0, np.nan, 0]}, "clicks contains NaN"),
    ({"clicks": [1, 0, 1]}, "positions has 4 entries but clicks has 3"),
    ({"positions": [0, 1, 1, 2]}, "positions are 1-based"),
    ({"positions": [1, 1.5, 1, 2]}, "positions must be whole-number display ranks"),
    ({"positions": [1, np.nan, 1, 2]}, "positions contains NaN"),
    ({"groups": [0, 0, 0]}, "groups has 3 entries but clicks has 4"),
    ({"documents": [0, 0, 1]}, "documents has 3 entries but clicks has 4"),
    ({"positions": [1, 1, 3, 3]}, r"positions 2 of 1..3 were never shown"),
    ({"clicks": [1, 0, 0, 0]}, r"positions 2, 3 of 1..3 were shown but never clicked.*max_position to 1"),
    ({"max_position": 0}, "max_position must be an integer >= 1"),
    ({"n_bootstrap": -1}, "n_bootstrap must be an integer >= 0"),
    ({"confidence": 1.0}, r"confidence must be a number in \(0, 1\)"),
    ({"sample_weight": [1, -1, 1, 1]}, "sample_weight must hold finite weights >= 0"),
])
def test_harvesting_errors_name_the_argument(change, message):
    args = {"clicks": [1, 0, 1, 1], "positions": [1, 2, 3, 2], "groups": [0, 0, 0, 0], "documents": [0, 0, 0, 0],
            "max_position": 3, "n_bootstrap": 0}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        estimate_propensity_harvesting(args.pop("clicks"), args.pop("positions"), args.pop("groups"),
                                       args.pop("documents"), **args)


def test_harvesting_without_documents_at_two_positions_points_to_em():
    # One page per query: every (query, document) is shown once.
    with pytest.raises(ValueError, match=r"no document was shown at two different positions.*estimate_propensity_em"):
        estimate_propensity_harvesting([1, 1, 1, 1], [1, 2, 1, 2], [0, 0, 1, 1], [0, 1, 0, 1], max_position=2)
    # groups holding page ids instead of query ids: the message says to check that too.
    with pytest.raises(ValueError, match="groups holds query ids"):
        estimate_propensity_harvesting([1, 1, 1, 0], [1, 2, 2, 1], [0, 0, 1, 1], [0, 1, 0, 1], max_position=2)


def test_harvesting_names_positions_that_nothing_links_to_position_one():
    # Document a links 1 and 2; document b is shown at 3 and 4 only: 3 and 4 float free.
    clicks = [1, 1, 1, 1, 1, 1, 1, 1]
    positions = [1, 2, 1, 2, 3, 4, 3, 4]
    documents = ["a", "a", "a", "a", "b", "b", "b", "b"]
    with pytest.raises(ValueError, match=r"positions 3, 4 are linked to position 1 by no document.*max_position"):
        estimate_propensity_harvesting(clicks, positions, [0] * 8, documents, max_position=4)


@pytest.mark.parametrize(("change", "message"), [
    ({"X": np.zeros((5, 2))}, "X has 5 rows but clicks has 6"),
    ({"X": np.full((6, 2), np.inf)}, "X contains infinity"),
    ({"n_folds": 4}, "n_folds=4 exceeds the 3 queries"),
    ({"n_iter": 0}, "n_iter must be an integer >= 1"),
    ({"tol": 0}, "tol must be a number > 0"),
    ({"relevance_params": {"objective": "binary"}}, "cannot change the objective"),
    ({"relevance_params": {"n_estimators": 5}}, "as 'num_iterations'"),
    ({"clicks": [1, 0, 1, 0, 1, 2]}, "clicks must hold only 0 .* and 1 "),
])
def test_em_errors_name_the_argument(change, message):
    args = {"X": np.zeros((6, 2)), "clicks": [1, 0, 1, 0, 1, 1], "positions": [1, 2, 1, 2, 1, 2],
            "groups": [0, 0, 1, 1, 2, 2], "max_position": 2, "n_bootstrap": 0}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        estimate_propensity_em(args.pop("X"), args.pop("clicks"), args.pop("positions"), args.pop("groups"), **args)


def test_em_warns_when_it_runs_out_of_iterations(small_log):
    from sklearn.exceptions import ConvergenceWarning

    X, clicks, positions, queries, _ = small_log
    with pytest.warns(ConvergenceWarning, match="did not converge in n_iter=1"):
        estimate = estimate_propensity_em(X, clicks, positions, queries, max_position=4, n_iter=1, n_bootstrap=0,
                                          relevance_params={"num_iterations": 2}, random_state=0)
    assert not estimate.converged and estimate.n_iter == 1


def test_bootstrap_resamples_queries_not_rows():
    # One query: every replicate draws it (with all its rows), so the band collapses onto the estimate.
    _, clicks, positions, _, documents = _log(1, 6, 200, lambda p: 1.0 / p, seed=5)
    estimate = estimate_propensity_harvesting(clicks, positions, np.zeros(len(clicks)), documents, max_position=6,
                                              n_bootstrap=20, random_state=0)
    np.testing.assert_allclose(estimate.lower, estimate.propensity, rtol=1e-12)
    np.testing.assert_allclose(estimate.upper, estimate.propensity, rtol=1e-12)


def test_em_relevance_is_cross_fitted_over_queries():
    from sklearn_ltr.clicks._em import RELEVANCE_PARAMS, LightGBMRelevance

    # Constant features and targets 1 in fold 0, 0 in fold 1: each fold's rows get the other fold's mean.
    folds = np.repeat([0, 1], 50)
    params = {**RELEVANCE_PARAMS, "num_iterations": 5, "num_threads": 1}
    gamma = LightGBMRelevance(np.zeros((100, 1)), params, folds)(np.repeat([0.9, 0.1], 50), np.ones(100))
    np.testing.assert_allclose(gamma, np.repeat([0.1, 0.9], 50), rtol=1e-6)
    in_sample = LightGBMRelevance(np.zeros((100, 1)), params, np.zeros(100, dtype=int))
    np.testing.assert_allclose(in_sample(np.repeat([0.9, 0.1], 50), np.ones(100)), 0.5, rtol=1e-6)
