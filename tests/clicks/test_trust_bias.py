"""Trust bias: the affine correction in the click losses and counterfactual metrics, and its EM estimate.

Exact checks by enumeration: on one result page whose clicks follow the trust-bias model
P(c_i = 1) = alpha_i gamma_i + beta_i, the expectation over every click vector of the affine-corrected
loss (or DCG estimate) equals the loss (or DCG) on the relevance probabilities gamma, where IPS's does not.
"""

import itertools
import math

import numpy as np
import pytest
import torch

from sklearn_ltr.clicks import affine_click_weights, check_affine, click_weights, inverse_propensity_weights
from sklearn_ltr.losses import hinge, ranknet, sigmoid_cross_entropy, softmax_cross_entropy
from sklearn_ltr.metrics import dcg_score, ips_dcg_per_query, ips_dcg_score, ips_ndcg_per_query

# One page of four documents at positions 1..4: examination theta, click probability of a relevant
# (eps_plus) and a non-relevant (eps_minus) document once examined, and the relevance probabilities.
THETA = np.array([1.0, 0.7, 0.5, 0.35])
EPS_PLUS = np.array([1.0, 0.95, 0.9, 0.85])
EPS_MINUS = np.array([0.4, 0.25, 0.15, 0.1])
ALPHA, BETA = THETA * (EPS_PLUS - EPS_MINUS), THETA * EPS_MINUS
GAMMA = np.array([0.2, 0.9, 0.5, 0.05])
SCORES = np.array([0.3, 1.2, -0.4, 0.8])


def _click_vectors():
    """Every click vector of the page with its probability under the trust-bias model."""
    p = ALPHA * GAMMA + BETA
    for clicks in itertools.product((0.0, 1.0), repeat=len(p)):
        clicks = np.array(clicks)
        yield clicks, float(np.prod(np.where(clicks == 1, p, 1 - p)))


def _expected_loss(loss, click_weights_of):
    scores = torch.tensor(SCORES[None], dtype=torch.float64)
    total = 0.0
    for clicks, probability in _click_vectors():
        weights = torch.tensor(click_weights_of()[None], dtype=torch.float64)
        value = loss(scores, torch.tensor(clicks[None]), click_weights=weights).item()
        total += probability * value
    return total


def _affine():
    return affine_click_weights(np.column_stack([ALPHA, BETA]))


def _ips():
    return inverse_propensity_weights(THETA)


def _softplus(x):
    return np.log1p(np.exp(x))


def _sigmoid_ce_on(gamma):
    return float(np.mean(-gamma * -_softplus(-SCORES) - (1 - gamma) * -_softplus(SCORES)))


def _softmax_on(gamma):
    log_p = SCORES - np.log(np.exp(SCORES).sum())
    return float(-(gamma * log_p).sum())


def _ranknet_on(gamma):
    n, total = len(SCORES), 0.0
    for i, j in itertools.combinations(range(n), 2):
        d = SCORES[i] - SCORES[j]
        total += gamma[i] * _softplus(-d) + gamma[j] * _softplus(d)
    return total / (n * (n - 1) / 2)


def _hinge_on(gamma, margin=1.0):
    n, total = len(SCORES), 0.0
    for i, j in itertools.combinations(range(n), 2):
        d = SCORES[i] - SCORES[j]
        total += gamma[i] * max(0.0, margin - d) + gamma[j] * max(0.0, margin + d)
    return total / (n * (n - 1) / 2)


LOSSES = [(sigmoid_cross_entropy, _sigmoid_ce_on), (softmax_cross_entropy, _softmax_on), (ranknet, _ranknet_on),
          (hinge, _hinge_on)]


# ------------------------------------------------------------------------------------------ weights


def test_affine_weights_by_hand():
    weights = affine_click_weights([[0.5, 0.25], [0.02, 0.1], [1.0, 0.0]])
    # (1 / alpha, beta / alpha), alpha clipped at 0.05: the estimate of a click (1 - beta) / alpha.
    np.testing.assert_allclose(weights, [[2.0, 0.5], [20.0, 2.0], [1.0, 0.0]])
    np.testing.assert_array_equal(click_weights([[0.5, 0.0]]), [[2.0, 0.0]])
    np.testing.assert_array_equal(click_weights([0.5]), [2.0])


@pytest.mark.parametrize(("values", "match"), [
    ([[0.0, 0.1]], r"propensity\[:, 0\] \(alpha.*must be in \(0, 1\]"),
    ([[0.5, -0.1]], r"propensity\[:, 1\] \(beta.*must be in \[0, 1\)"),
    ([[0.8, 0.3]], r"alpha \+ beta > 1 in row 0"),
    ([[0.5, np.nan]], "NaN or infinite"),
    ([[0.5, 0.1, 0.2]], r"\(n_samples, 2\) array of affine click parameters"),
])
def test_bad_affine_parameters_name_the_argument(values, match):
    with pytest.raises(ValueError, match=match):
        check_affine(values)


def test_affine_rows_must_match():
    with pytest.raises(ValueError, match="propensity has 1 rows but X has 2 rows"):
        check_affine([[0.5, 0.1]], n_samples=2)


# ------------------------------------------------------------------------------------------ losses


@pytest.mark.parametrize(("loss", "on_relevance"), LOSSES)
def test_affine_loss_is_unbiased_by_enumeration(loss, on_relevance):
    # E over clicks of the affine-corrected loss = the same loss on the relevance probabilities, exactly.
    assert _expected_loss(loss, _affine) == pytest.approx(on_relevance(GAMMA), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("loss", "on_relevance"), LOSSES)
def test_ips_loss_is_biased_under_trust_bias(loss, on_relevance):
    # Inverse propensity weighting with the true examination probabilities misses it.
    assert abs(_expected_loss(loss, _ips) - on_relevance(GAMMA)) > 1e-2


def test_on_relevance_references_are_the_library_losses():
    # The hand formulas above are the library's losses on graded targets where those coincide.
    scores, gamma = torch.tensor(SCORES[None]), torch.tensor(GAMMA[None])
    assert sigmoid_cross_entropy(scores, gamma, max_label=1).item() == pytest.approx(_sigmoid_ce_on(GAMMA))
    assert softmax_cross_entropy(scores, gamma).item() * GAMMA.sum() == pytest.approx(_softmax_on(GAMMA))
    # Linear pairwise loss with 0/1 relevance: RankNet on pairs of different labels, twice the tie cost on
    # the pairs of two relevant documents, nothing on pairs of two non-relevant ones.
    binary = np.array([1.0, 0.0, 1.0, 0.0])
    ties = [(0, 2)]
    different = [(i, j) for i, j in itertools.combinations(range(4), 2) if binary[i] != binary[j]]
    manual = sum(_softplus(-(SCORES[i] - SCORES[j]) * (1 if binary[i] > binary[j] else -1)) for i, j in different)
    manual += sum(2 * math.log(2 * math.cosh((SCORES[i] - SCORES[j]) / 2)) for i, j in ties)
    assert _ranknet_on(binary) == pytest.approx(manual / 6)


@pytest.mark.parametrize("loss", [sigmoid_cross_entropy, softmax_cross_entropy, ranknet, hinge])
def test_affine_loss_ignores_padding(loss):
    scores = torch.tensor([[0.3, 1.2, float("nan")]], requires_grad=True)
    clicks = torch.tensor([[1.0, 0.0, 1.0]])
    mask = torch.tensor([[True, True, False]])
    weights = torch.tensor([[[2.0, 0.5], [3.0, 0.6], [float("inf"), -1.0]]])
    value = loss(scores, clicks, mask, click_weights=weights)
    value.backward()
    short = loss(torch.tensor([[0.3, 1.2]]), clicks[:, :2], click_weights=weights[:, :2])
    assert value.item() == pytest.approx(short.item()) and scores.grad[0, 2] == 0


@pytest.mark.parametrize("loss", [sigmoid_cross_entropy, softmax_cross_entropy, ranknet, hinge])
def test_bad_affine_loss_weights_are_refused(loss):
    with pytest.raises(ValueError, match="must be finite and >= 0"):
        loss(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), click_weights=torch.tensor([[[1.0, -0.5], [1.0, 0.0]]]))
    with pytest.raises(ValueError, match=r"affine click_weights must have shape \(1, 2, 2\)"):
        loss(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), click_weights=torch.ones(1, 3, 2))


def test_other_losses_refuse_affine_weights():
    from sklearn_ltr.losses._common import relevant_weights

    with pytest.raises(ValueError, match="takes no affine click weights"):
        relevant_weights(torch.ones(1, 2, 2), torch.ones(1, 2), torch.ones(1, 2, dtype=torch.bool))


# ------------------------------------------------------------------------------------------ metrics


def _expected_metric(metric, propensity, **options):
    groups = np.zeros(len(SCORES), dtype=int)
    return sum(probability * metric(clicks, SCORES, groups, propensity, **options)[1][0]
               for clicks, probability in _click_vectors())


def _dcg_on(gamma, k=None):
    ranks = np.empty(len(SCORES), dtype=int)
    ranks[np.argsort(-SCORES)] = np.arange(1, len(SCORES) + 1)
    discount = np.where(ranks <= (k or len(SCORES)), 1 / np.log2(1 + ranks), 0.0)
    return float((gamma * discount).sum())


@pytest.mark.parametrize("k", [None, 2])
def test_affine_dcg_is_unbiased_by_enumeration(k):
    affine = np.column_stack([ALPHA, BETA])
    assert _expected_metric(ips_dcg_per_query, affine, k=k) == pytest.approx(_dcg_on(GAMMA, k), rel=1e-12)
    # IPS with the true examination probabilities is off: it counts the clicks of non-relevant documents
    # (eps_minus) and misses relevant documents not clicked once examined (1 - eps_plus).
    assert abs(_expected_metric(ips_dcg_per_query, THETA, k=k) - _dcg_on(GAMMA, k)) > 0.03


def test_affine_dcg_by_hand():
    affine = [[0.5, 0.25], [0.8, 0.1], [0.5, 0.25]]
    # Ranked by score: row 1 (click, (1 - 0.1) / 0.8), row 0 (no click, -0.25 / 0.5), row 2 (click, 0.75 / 0.5).
    expected = 0.9 / 0.8 - 0.5 / math.log2(3) + 1.5 / 2
    assert ips_dcg_score([0, 1, 1], [0.5, 0.9, 0.1], [3, 3, 3], affine) == pytest.approx(expected)
    # The ideal ranks by the estimates: 1.5, 1.125, -0.5.
    ideal = 1.5 + 1.125 / math.log2(3) - 0.5 / 2
    _, values = ips_ndcg_per_query([0, 1, 1], [0.5, 0.9, 0.1], [3, 3, 3], affine)
    assert values[0] == pytest.approx(expected / ideal)


def test_beta_zero_is_ips_in_the_metrics():
    rng = np.random.default_rng(0)
    clicks, scores, groups = rng.integers(0, 2, 30), rng.normal(size=30), rng.integers(0, 5, 30)
    propensity = rng.uniform(0.01, 1, 30)
    affine = np.column_stack([propensity, np.zeros(30)])
    for metric in (ips_dcg_per_query, ips_ndcg_per_query):
        np.testing.assert_allclose(metric(clicks, scores, groups, affine, k=5)[1],
                                   metric(clicks, scores, groups, propensity, k=5)[1], rtol=1e-12)


def test_affine_ndcg_of_a_query_without_positive_estimate_is_empty():
    affine = [[0.5, 0.25]] * 2
    _, values = ips_ndcg_per_query([0, 0], [1.0, 0.0], [1, 1], affine, empty_value=None)
    assert np.isnan(values[0])


# ------------------------------------------------------------------------------------------ estimate


def _simulated_trust_log(n_queries, sessions, seed):
    """Every query's four documents shown in a random order per session; clicks by the trust-bias model."""
    rng = np.random.default_rng(seed)
    n_docs = len(THETA)
    relevance = rng.choice(np.linspace(0, 1, 5), size=(n_queries, n_docs))
    query = np.repeat(np.arange(n_queries), sessions * n_docs)
    document = np.tile(np.arange(n_docs), n_queries * sessions)
    positions = np.argsort(rng.random((n_queries * sessions, n_docs)), axis=1).ravel() + 1
    probability = ALPHA[positions - 1] * relevance[query, document] + BETA[positions - 1]
    clicks = (rng.random(query.shape[0]) < probability).astype(int)
    return clicks, positions, query, document, relevance[query, document]


def _invariants(alpha, beta):
    """What the clicks identify: alpha_k / alpha_1 and beta_k - beta_1 alpha_k / alpha_1 (see _trust_em)."""
    ratio = alpha / alpha[0]
    return np.concatenate([ratio[1:], (beta - beta[0] * ratio)[1:]])


@pytest.fixture(scope="module")
def trust_log():
    return _simulated_trust_log(n_queries=50, sessions=200, seed=0)


def test_em_recovers_the_trust_bias_parameters(trust_log):
    from sklearn_ltr.clicks import estimate_trust_bias_em

    clicks, positions, query, document, _ = trust_log
    estimate = estimate_trust_bias_em(clicks, positions, query, document, max_position=4)
    assert estimate.converged
    # 10,000 sessions (2,500 rows per position and document level): each invariant within 0.05 of the truth
    # (over three seeds the largest error was 0.041), where the plain click-through-rate curve, which
    # ignores trust bias, is off by 0.1 or more.
    np.testing.assert_allclose(_invariants(estimate.alpha, estimate.beta), _invariants(ALPHA, BETA), atol=0.05)
    ctr = np.bincount(positions - 1, clicks) / np.bincount(positions - 1)
    assert np.abs(_invariants(ctr, np.zeros(4)) - _invariants(ALPHA, BETA)).max() > 0.1
    # The factorisation is consistent, and each row gets its position's pair.
    np.testing.assert_allclose(estimate.alpha, estimate.theta * (estimate.eps_plus - estimate.eps_minus))
    np.testing.assert_allclose(estimate.beta, estimate.theta * estimate.eps_minus)
    affine = estimate.affine_of([1, 4, 9])
    np.testing.assert_allclose(affine[:2], np.column_stack([estimate.alpha, estimate.beta])[[0, 3]], atol=1e-6)
    np.testing.assert_array_equal(affine[2], affine[1])  # positions past max_position share its values
    # The EM never lowers the likelihood.
    assert np.diff(estimate.log_likelihood).min() > -1e-12


def test_em_estimate_makes_the_dcg_estimate_rank_like_the_truth(trust_log):
    # The scale of alpha and beta is not identified, but the affine DCG estimate with the fitted pairs is an
    # increasing affine map of the true DCG: rankings compare the same way.
    from sklearn_ltr.clicks import estimate_trust_bias_em

    clicks, positions, query, document, relevance = trust_log
    estimate = estimate_trust_bias_em(clicks, positions, query, document, max_position=4)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=clicks.shape[0])
    true, fitted = [], []
    for quality in (-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 4.0):  # rankings from worst to best
        scores = quality * relevance + noise
        true.append(dcg_score(relevance, scores, query, gain="linear"))  # the DCG on the relevance probabilities
        fitted.append(ips_dcg_score(clicks, scores, query, estimate.affine_of(positions)))
    # The fitted estimate orders the rankings as their true DCG does, and is close to an affine map of it.
    assert (np.argsort(true) == np.argsort(fitted)).all()
    assert np.corrcoef(true, fitted)[0, 1] > 0.99


def test_em_refuses_a_log_without_the_relevance_support(trust_log):
    from sklearn_ltr.clicks import estimate_trust_bias_em

    clicks, positions, query, document, _ = trust_log
    with pytest.raises(ValueError, match=r"documents=\.\.\. .* or X=\.\.\."):
        estimate_trust_bias_em(clicks, positions, query, max_position=4)
    with pytest.raises(ValueError, match="documents must hold one document id per row"):
        estimate_trust_bias_em(clicks, positions, query, document[:5], max_position=4)
    with pytest.raises(ValueError, match="never shown"):
        estimate_trust_bias_em(clicks, positions, query, document, max_position=6)


def test_affine_of_refuses_bad_positions(trust_log):
    from sklearn_ltr.clicks import estimate_trust_bias_em

    clicks, positions, query, document, _ = trust_log
    estimate = estimate_trust_bias_em(clicks[:4000], positions[:4000], query[:4000], document[:4000],
                                      max_position=4, n_iter=3)
    with pytest.raises(ValueError, match=r"positions are 1-based display ranks; got a value of 0 \(< 1\)"):
        estimate.affine_of([0, 1])


def test_em_with_features_runs_the_lightgbm_relevance(trust_log):
    pytest.importorskip("lightgbm")
    from sklearn_ltr.clicks import estimate_trust_bias_em

    clicks, positions, query, _, relevance = trust_log
    rows = slice(0, 8000)
    X = np.column_stack([relevance, np.random.default_rng(0).normal(size=relevance.shape[0])])[rows]
    estimate = estimate_trust_bias_em(clicks[rows], positions[rows], query[rows], X=X, max_position=4, n_iter=5,
                                      relevance_params={"num_iterations": 5})
    assert estimate.n_iter == 5 and estimate.relevance.shape == (8000,)
    # Relevant documents are clicked more once examined, and deeper positions say less.
    assert (estimate.eps_plus > estimate.eps_minus).all() and estimate.alpha[0] > estimate.alpha[-1]


def test_em_recovers_the_simulators_trust_bias():
    # The library's click simulator with Vardasbi et al.'s trust-bias curves: 40 queries of five documents
    # (grades 0..4, relevance (2**y - 1) / 15 from 0 to 1) shuffled in each of 200 sessions.
    from sklearn_ltr.clicks import PositionBasedModel, estimate_trust_bias_em, simulate_click_log

    model = PositionBasedModel(trust_bias="vardasbi2020")
    y, groups = np.tile(np.arange(5), 40), np.repeat(np.arange(40), 5)
    log = simulate_click_log(y, groups, click_model=model, w=0.0, sessions=200, random_state=0)
    estimate = estimate_trust_bias_em(log.clicks, log.positions, log.groups, documents=log.rows, max_position=5,
                                      sample_weight=log.sample_weight)
    alpha, beta = model.affine_parameters(np.arange(1, 6))
    # 40,000 rows: over three seeds the largest error of an invariant was 0.044.
    np.testing.assert_allclose(_invariants(estimate.alpha, estimate.beta), _invariants(alpha, beta), atol=0.06)
