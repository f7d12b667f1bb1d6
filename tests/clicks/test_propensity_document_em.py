"""``estimate_propensity_document_em``: the position-based model with one relevance per (query, document)."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ltr.clicks import estimate_propensity_document_em, estimate_propensity_em
from sklearn_ltr.clicks._document_em import CellTable, item_codes, poisson_fixed_effects


def _confounded_log(n_queries, n_docs, sessions, eta, *, seed=0, noise=1.0):
    """Pages ordered by ``relevance + noise * U`` (relevant documents high), examination ``(1 / p) ** eta``.

    Returns ``X, clicks, positions, queries, documents``; ``X`` holds a feature that predicts the
    relevance poorly (relevance plus much noise), the way LETOR features do.
    """
    rng = np.random.default_rng(seed)
    relevance = rng.choice([0.05, 0.3, 0.9], size=(n_queries, n_docs), p=[0.6, 0.3, 0.1])
    feature = relevance + rng.normal(0, 0.6, relevance.shape)
    parts = []
    for _ in range(sessions):
        key = relevance + noise * rng.random(relevance.shape)
        positions = np.argsort(np.argsort(-key, axis=1), axis=1) + 1
        clicks = rng.random(relevance.shape) < (1.0 / positions) ** eta * relevance
        parts.append((positions.ravel(), clicks.ravel().astype(int)))
    positions = np.concatenate([p for p, _ in parts])
    clicks = np.concatenate([c for _, c in parts])
    queries = np.tile(np.repeat(np.arange(n_queries), n_docs), sessions)
    documents = np.tile(np.tile(np.arange(n_docs), n_queries), sessions)
    X = np.tile(feature.reshape(-1, 1), (sessions, 1))
    return X, clicks, positions, queries, documents


def _error(estimate, eta, k):
    truth = (1.0 / np.arange(1, k + 1)) ** eta
    return np.max(np.abs(estimate.propensity[:k] - truth) / truth)


def _rows(cells):
    """Rows ``(clicks, positions, documents)`` from ``(document, position, shows, clicks)`` cells."""
    clicks, positions, documents = [], [], []
    for document, position, shows, clicked in cells:
        clicks += [1] * clicked + [0] * (shows - clicked)
        positions += [position] * shows
        documents += [document] * shows
    return np.array(clicks), np.array(positions), np.array(documents)


def test_poisson_fit_by_hand():
    # A: 6 of 10 clicked at 1, 4 of 20 at 2; B: 2 of 10 at both. With theta_1 = 1, gamma_A = 10 / (10 + 20 t),
    # gamma_B = 4 / (10 + 10 t), and position 1's equation 8 = 10 gamma_A + 10 gamma_B gives
    # 8 t**2 + 3 t - 3 = 0: t = (sqrt(105) - 3) / 16 = 0.4529 (the pooled click-rate ratio is 0.5).
    clicks, positions, documents = _rows([("A", 1, 10, 6), ("A", 2, 20, 4), ("B", 1, 10, 2), ("B", 2, 10, 2)])
    estimate = estimate_propensity_document_em(clicks, positions, np.zeros(50), documents, max_position=2,
                                               n_bootstrap=0, tol=1e-12)
    np.testing.assert_allclose(estimate.propensity, [1.0, (np.sqrt(105) - 3) / 16], rtol=1e-9)
    assert estimate.method == "document_em" and estimate.details["n_documents"] == 2
    np.testing.assert_array_equal(estimate.n_shown, [20, 30])
    np.testing.assert_array_equal(estimate.n_clicks, [8, 6])


def test_bernoulli_em_by_hand_on_one_document():
    # One document, two positions: the Bernoulli maximum is the click-rate ratio (3/6) / (4/6) whatever gamma.
    clicks, positions, documents = _rows([("A", 1, 6, 4), ("A", 2, 6, 2)])
    for likelihood in ("poisson", "bernoulli"):
        estimate = estimate_propensity_document_em(clicks, positions, np.zeros(12), documents, max_position=2,
                                                   likelihood=likelihood, n_bootstrap=0, tol=1e-12)
        np.testing.assert_allclose(estimate.propensity, [1.0, 0.5], rtol=1e-6)


def test_documents_of_different_queries_are_different_documents():
    # Document 0 of query 0 has ratio 1/3, document 0 of query 1 ratio 1: as A and B above, 1/2.
    # Were they pooled into one document, the ratio of the sums would be 4/8 as well; so shift B's shows at 1.
    clicks, positions, documents = _rows([(0, 1, 10, 6), (0, 2, 10, 2), (0, 1, 20, 4), (0, 2, 10, 2)])
    queries = np.repeat([0, 1], [20, 30])
    separate = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=2,
                                               n_bootstrap=0, tol=1e-12)
    pooled = estimate_propensity_document_em(clicks, positions, np.zeros(50), documents, max_position=2,
                                             n_bootstrap=0, tol=1e-12)
    np.testing.assert_allclose(pooled.propensity[1], (4 / 20) / (10 / 30), rtol=1e-9)  # one document: rate ratio
    # Separate: gamma_A = 8 / (10 + 10 t), gamma_B = 6 / (20 + 10 t), t = 4 / (10 gamma_A + 10 gamma_B).
    t = separate.propensity[1]
    gamma_a, gamma_b = 8 / (10 + 10 * t), 6 / (20 + 10 * t)
    assert t == pytest.approx(4 / (10 * gamma_a + 10 * gamma_b), rel=1e-9)
    assert abs(t - pooled.propensity[1]) > 0.05


def test_poisson_fixed_point_equations_hold_on_a_log():
    _, clicks, positions, queries, documents = _confounded_log(50, 6, 4, 1.0, seed=1)
    estimate = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=6,
                                               n_bootstrap=0, tol=1e-13)
    theta = estimate.propensity
    items = item_codes(np.unique(queries, return_inverse=True)[1], documents)
    rows_gamma = np.bincount(items, clicks) / np.bincount(items, theta[positions - 1])
    # theta_k = C_k / sum over rows at k of gamma (the M-step's equation at its fixed point).
    expected = np.bincount(positions - 1, clicks) / np.bincount(positions - 1, rows_gamma[items])
    np.testing.assert_allclose(theta, expected / expected[0], rtol=1e-8)


@pytest.mark.parametrize("eta", [1.0, 1.5])
def test_recovers_the_curve_where_the_feature_regression_does_not(eta):
    # The logging order puts relevant documents first, and the feature predicts relevance poorly.
    X, clicks, positions, queries, documents = _confounded_log(1500, 8, 12, eta, seed=2)
    estimate = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=8,
                                               n_bootstrap=0)
    assert estimate.converged
    assert _error(estimate, eta, 8) < 0.15
    regression = estimate_propensity_em(X, clicks, positions, queries, max_position=8, n_bootstrap=0,
                                        relevance_params={"num_iterations": 20}, random_state=0, n_jobs=1)
    # What a feature-only gamma(x) does: the relevance it misses goes to the positions (a steeper curve).
    assert _error(regression, eta, 8) > 0.3
    truth = (1.0 / np.arange(1, 9)) ** eta
    assert (regression.propensity[1:8] < truth[1:]).all()


def test_bernoulli_em_is_flattened_by_few_shows_per_document():
    # The incidental-parameter bias of the classic EM: each document's gamma fits its few clicks.
    _, clicks, positions, queries, documents = _confounded_log(1500, 8, 3, 1.5, seed=3)
    poisson = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=8,
                                              n_bootstrap=0)
    with pytest.warns(ConvergenceWarning):
        bernoulli = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=8,
                                                    likelihood="bernoulli", n_iter=300, n_bootstrap=0)
    assert _error(poisson, 1.5, 8) < 0.3
    truth = (1.0 / np.arange(1, 9)) ** 1.5
    assert (bernoulli.propensity[4:8] > 1.3 * truth[4:]).all()


def test_band_covers_the_truth_and_warm_replicates_equal_cold_ones():
    _, clicks, positions, queries, documents = _confounded_log(300, 6, 10, 1.0, seed=4)
    estimate = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=6,
                                               n_bootstrap=100, random_state=0)
    truth = 1.0 / np.arange(1, 7)
    assert ((estimate.lower <= truth + 1e-9) & (truth <= estimate.upper + 1e-9)).sum() >= 5
    assert np.all(estimate.lower <= estimate.propensity) and np.all(estimate.propensity <= estimate.upper)
    # Replicates start from the estimate: the one maximum is reached all the same (no band narrowed by the start).
    from sklearn_ltr.clicks._estimate import bootstrap_weights, check_log

    c, buckets, codes, n_queries, weights = check_log(clicks, positions, queries, max_position=6)
    table = CellTable(item_codes(codes, documents), buckets, 6)
    row_weights = weights * bootstrap_weights(codes, n_queries, np.random.default_rng(0))
    shows, clicked = table.counts(c, row_weights)
    warm = poisson_fixed_effects(table, shows, clicked, estimate.propensity, n_iter=10000, tol=1e-7)[0]
    cold = poisson_fixed_effects(table, shows, clicked, np.ones(6), n_iter=10000, tol=1e-7)[0]
    np.testing.assert_allclose(warm, cold, rtol=1e-5)
    np.testing.assert_allclose(estimate.bootstrap[0], warm, rtol=1e-5)


def test_invariant_to_row_order_and_labels_and_weights_count_like_rows():
    _, clicks, positions, queries, documents = _confounded_log(60, 5, 4, 1.0, seed=5)
    kwargs = {"max_position": 5, "n_bootstrap": 20, "random_state": 0, "tol": 1e-12}
    base = estimate_propensity_document_em(clicks, positions, queries, documents, **kwargs)
    order = np.random.default_rng(0).permutation(len(clicks))
    shuffled = estimate_propensity_document_em(clicks[order], positions[order], queries[order], documents[order],
                                               **kwargs)
    np.testing.assert_allclose(shuffled.propensity, base.propensity, rtol=1e-9)
    np.testing.assert_allclose(shuffled.upper, base.upper, rtol=1e-6)
    names = np.array([f"doc-{d}" for d in range(5)])[documents]
    named = estimate_propensity_document_em(clicks, positions, queries, names, **kwargs)
    np.testing.assert_allclose(named.propensity, base.propensity, rtol=1e-9)
    twice = np.r_[np.arange(len(clicks)), np.flatnonzero(clicks == 0)]
    repeated = estimate_propensity_document_em(clicks[twice], positions[twice], queries[twice], documents[twice],
                                               max_position=5, n_bootstrap=0, tol=1e-12)
    weighted = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=5,
                                               sample_weight=np.where(clicks == 1, 1.0, 2.0), n_bootstrap=0,
                                               tol=1e-12)
    np.testing.assert_allclose(weighted.propensity, repeated.propensity, rtol=1e-9)


def test_positions_no_document_ties_to_position_one_are_named():
    # A is shown at 1 and 2; B at 3 and 4 only: 3 and 4 float free.
    clicks, positions, documents = _rows([("A", 1, 2, 1), ("A", 2, 2, 1), ("B", 3, 2, 1), ("B", 4, 2, 1)])
    with pytest.raises(ValueError, match=r"positions 3, 4 are tied to position 1 by no clicked document"):
        estimate_propensity_document_em(clicks, positions, np.zeros(8), documents, max_position=4)
    # A document shown at two positions but never clicked ties nothing.
    clicks, positions, documents = _rows([("A", 1, 2, 1), ("B", 1, 2, 0), ("B", 2, 2, 0), ("C", 2, 2, 1)])
    with pytest.raises(ValueError, match=r"positions 2 are tied"):
        estimate_propensity_document_em(clicks, positions, np.zeros(8), documents, max_position=2)


@pytest.mark.parametrize(("change", "message"), [
    ({"likelihood": "gaussian"}, "likelihood must be 'poisson' or 'bernoulli'"),
    ({"tol": 0}, "tol must be a number > 0"),
    ({"n_iter": 0}, "n_iter must be an integer >= 1"),
    ({"documents": [0, 0, 0]}, "documents has 3 entries but clicks has 4"),
    ({"clicks": [1, 0, 2, 1]}, "clicks must hold only 0 .* and 1 "),
    ({"n_bootstrap": -1}, "n_bootstrap must be an integer >= 0"),
])
def test_errors_name_the_argument(change, message):
    args = {"clicks": [1, 0, 1, 1], "positions": [1, 2, 1, 2], "groups": [0, 0, 0, 0], "documents": [0, 0, 1, 1],
            "max_position": 2, "n_bootstrap": 0}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        estimate_propensity_document_em(args.pop("clicks"), args.pop("positions"), args.pop("groups"),
                                        args.pop("documents"), **args)


def test_warns_when_it_runs_out_of_iterations():
    _, clicks, positions, queries, documents = _confounded_log(60, 5, 4, 1.0, seed=6)
    with pytest.warns(ConvergenceWarning, match="did not converge in n_iter=1"):
        estimate = estimate_propensity_document_em(clicks, positions, queries, documents, max_position=5, n_iter=1,
                                                   n_bootstrap=0)
    assert not estimate.converged and estimate.n_iter == 1
