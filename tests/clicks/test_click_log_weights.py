"""Row weights of the click-log estimators: a weight counts a row that many times, on both sides of the click.

Every function of :mod:`sklearn_ltr.clicks` that takes ``sample_weight`` (the propensity estimators
``estimate_propensity_em``, ``estimate_propensity_document_em`` with both likelihoods,
``estimate_propensity_harvesting``, ``estimate_propensity_swap``, and ``estimate_trust_bias_em``
with documents and with features) is checked for three identities on small simulated logs:

- an integer weight ``w`` on one *clicked* row gives what the log with that row repeated ``w``
  times gives;
- the same for one row that was *not* clicked (a weight that reached only the clicks, e.g. shown
  counts left unweighted, breaks this one);
- a weight of 0 gives what the log without the row gives (the row's query keeps other rows, so the
  bootstrap over queries draws the same queries).

The bootstrap resamples queries: repeating a row inside its query leaves the queries, and so the
seeded draws, unchanged, so the band and the replicates must agree too, not only the estimate.
The swap estimator reads interventions (two rows sharing an id), so there the weighted unit is a
whole intervention, repeated under new ids. The click metrics of :mod:`sklearn_ltr.metrics`
(``ips_dcg_score`` and its relatives, ``click_log_likelihood``, ``click_perplexity``) take no
``sample_weight`` and are not concerned.
"""

import warnings

import numpy as np
import pytest

from sklearn_ltr.clicks import (
    estimate_propensity_document_em,
    estimate_propensity_em,
    estimate_propensity_harvesting,
    estimate_propensity_swap,
    estimate_trust_bias_em,
)

THETA = np.array([1.0, 0.6, 0.35])
# Regression EM and the trust-bias EM with features refit LightGBM trees: leaves of one row and no
# hessian floor make a weight-w row and its w copies fall in the same leaves with the same sums
# (the single feature takes three values, so the bins do not depend on how often a row appears).
TREE_PARAMS = {"min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "num_iterations": 5}


def shuffled_log(seed, n_queries=12, n_docs=3, n_sessions=6):
    """Clicks, positions, queries, documents and one feature of a log whose pages show each query's documents shuffled.

    Under the position-based model with propensities ``THETA``: every document is seen at every
    position, so every estimator (harvesting and document EM included) identifies the curve.
    """
    rng = np.random.default_rng(seed)
    grade = rng.integers(0, 3, size=(n_queries, n_docs))
    position = np.argsort(rng.random((n_queries, n_sessions, n_docs)), axis=2).reshape(-1) + 1
    query = np.repeat(np.arange(n_queries), n_sessions * n_docs)
    document = np.tile(np.arange(n_docs), n_queries * n_sessions)
    feature = grade[query, document].astype(float)
    clicks = (rng.random(position.size) < THETA[position - 1] * (0.2 + 0.3 * feature)).astype(int)
    return clicks, position, query, document, feature[:, None]


def swap_log(seed, n_queries=12, n_interventions=6):
    """A log of swap interventions on (1, 2) and (1, 3): clicks, positions, queries, intervention ids."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_interventions
    lower = rng.integers(2, 4, size=n)
    first_on_top = rng.random(n) < 0.5
    position = np.column_stack([np.where(first_on_top, 1, lower), np.where(first_on_top, lower, 1)])
    clicks = (rng.random((n, 2)) < THETA[position - 1] * rng.uniform(0.3, 0.9, size=(n, 2))).astype(int)
    groups = np.repeat(np.arange(n_queries), 2 * n_interventions)
    return clicks.reshape(-1), position.reshape(-1), groups, np.repeat(np.arange(n), 2)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        # Few EM iterations on purpose: the identities hold at every iteration, converged or not.
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def harvesting(clicks, positions, groups, documents, X, weight):
    return _quiet(estimate_propensity_harvesting, clicks, positions, groups, documents, max_position=3,
                  sample_weight=weight, n_bootstrap=8, random_state=0)


def document_poisson(clicks, positions, groups, documents, X, weight):
    return _quiet(estimate_propensity_document_em, clicks, positions, groups, documents, max_position=3,
                  sample_weight=weight, n_bootstrap=8, random_state=0, tol=1e-12, n_iter=300)


def document_bernoulli(clicks, positions, groups, documents, X, weight):
    return _quiet(estimate_propensity_document_em, clicks, positions, groups, documents, max_position=3,
                  likelihood="bernoulli", sample_weight=weight, n_bootstrap=3, random_state=0, n_iter=40)


def regression_em(clicks, positions, groups, documents, X, weight):
    return _quiet(estimate_propensity_em, X, clicks, positions, groups, max_position=3, sample_weight=weight,
                  n_bootstrap=3, random_state=0, relevance_params=TREE_PARAMS, n_iter=4, n_jobs=1)


def trust_documents(clicks, positions, groups, documents, X, weight):
    return estimate_trust_bias_em(clicks, positions, groups, documents, max_position=3, sample_weight=weight,
                                  n_iter=60)


def trust_features(clicks, positions, groups, documents, X, weight):
    return estimate_trust_bias_em(clicks, positions, groups, X=X, max_position=3, sample_weight=weight, n_iter=4,
                                  relevance_params={**TREE_PARAMS, "num_threads": 1})


ESTIMATORS = [harvesting, document_poisson, document_bernoulli, regression_em, trust_documents, trust_features]


def fields(estimate):
    """The arrays an estimate reports: the curve, its counts and its band, or the trust-bias parameters."""
    if hasattr(estimate, "propensity"):
        return {"propensity": estimate.propensity, "n_shown": estimate.n_shown, "n_clicks": estimate.n_clicks,
                "lower": estimate.lower, "upper": estimate.upper, "bootstrap": estimate.bootstrap}
    return {"alpha": estimate.alpha, "beta": estimate.beta, "theta": estimate.theta,
            "log_likelihood": estimate.log_likelihood}


def assert_same_estimate(left, right):
    left, right = fields(left), fields(right)
    for name in left:
        # Sums of the same terms in another order: rounding only.
        np.testing.assert_allclose(left[name], right[name], rtol=1e-7, atol=1e-9, err_msg=name)


def _row(clicks, clicked, rank=5):
    """A row with the given click (every query has 18 rows: dropping one leaves its query in the log)."""
    candidates = np.flatnonzero(clicks == clicked)
    return int(candidates[rank % candidates.size])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("clicked", [1, 0], ids=["clicked_row", "not_clicked_row"])
def test_an_integer_weight_equals_the_row_repeated(estimator, clicked):
    clicks, positions, groups, documents, X = shuffled_log(3)
    row = _row(clicks, clicked)
    weight = np.ones(clicks.size)
    weight[row] = 3.0
    # The copies go right after the row: the order of the other rows is unchanged.
    index = np.insert(np.arange(clicks.size), row, [row, row])
    weighted = estimator(clicks, positions, groups, documents, X, weight)
    repeated = estimator(clicks[index], positions[index], groups[index], documents[index], X[index], None)
    assert_same_estimate(weighted, repeated)
    if hasattr(weighted, "n_shown"):  # the weight counts: two more rows shown at the row's position
        unweighted = estimator(clicks, positions, groups, documents, X, None)
        bucket = min(positions[row], 3) - 1
        assert weighted.n_shown[bucket] == unweighted.n_shown[bucket] + 2


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("clicked", [1, 0], ids=["clicked_row", "not_clicked_row"])
def test_a_zero_weight_equals_dropping_the_row(estimator, clicked):
    clicks, positions, groups, documents, X = shuffled_log(4)
    row = _row(clicks, clicked, rank=8)
    weight = np.ones(clicks.size)
    weight[row] = 0.0
    keep = np.arange(clicks.size) != row
    zero = estimator(clicks, positions, groups, documents, X, weight)
    dropped = estimator(clicks[keep], positions[keep], groups[keep], documents[keep], X[keep], None)
    assert_same_estimate(zero, dropped)


def _swap(clicks, positions, groups, pairs, weight):
    return estimate_propensity_swap(clicks, positions, groups, pairs, max_position=3, sample_weight=weight,
                                    n_bootstrap=8, random_state=0)


@pytest.mark.parametrize("kind", ["one_click", "no_click", "two_clicks"])
def test_swap_an_integer_weight_on_an_intervention_equals_the_intervention_repeated(kind):
    clicks, positions, groups, pairs = swap_log(5)
    per_pair = clicks.reshape(-1, 2).sum(axis=1)
    chosen = int(np.flatnonzero(per_pair == {"one_click": 1, "no_click": 0, "two_clicks": 2}[kind])[1])
    rows = np.flatnonzero(pairs == chosen)
    weight = np.ones(clicks.size)
    weight[rows] = 4.0
    # Three more copies of the intervention, each with its own id, in the same query.
    index = np.concatenate([np.arange(clicks.size), np.tile(rows, 3)])
    new_pairs = np.concatenate([pairs, np.repeat(pairs.max() + 1 + np.arange(3), 2)])
    weighted = _swap(clicks, positions, groups, pairs, weight)
    repeated = _swap(clicks[index], positions[index], groups[index], new_pairs, None)
    assert_same_estimate(weighted, repeated)
    # An intervention without clicks moves no ratio, but it was shown: the counts say so.
    assert weighted.n_shown.sum() == clicks.size + 6


def test_swap_a_zero_weight_on_an_intervention_equals_dropping_it():
    clicks, positions, groups, pairs = swap_log(6)
    chosen = int(np.flatnonzero(clicks.reshape(-1, 2).sum(axis=1) == 1)[2])
    keep = pairs != chosen
    weight = np.where(keep, 1.0, 0.0)
    assert_same_estimate(_swap(clicks, positions, groups, pairs, weight),
                         _swap(clicks[keep], positions[keep], groups[keep], pairs[keep], None))


@pytest.mark.parametrize("estimator", [harvesting, document_poisson, trust_documents], ids=lambda f: f.__name__)
def test_a_common_weight_leaves_the_estimate_unchanged(estimator):
    # Doubling every row is the log repeated twice: the same rates, hence the same curve; the counts double.
    clicks, positions, groups, documents, X = shuffled_log(7)
    once = estimator(clicks, positions, groups, documents, X, None)
    twice = estimator(clicks, positions, groups, documents, X, np.full(clicks.size, 2.0))
    for name, value in fields(once).items():
        if name in ("n_shown", "n_clicks"):
            np.testing.assert_allclose(fields(twice)[name], 2 * value)
        elif name not in ("lower", "upper", "bootstrap"):
            np.testing.assert_allclose(fields(twice)[name], value, rtol=1e-6, atol=1e-9, err_msg=name)
