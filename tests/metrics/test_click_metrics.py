"""Tests of click_log_likelihood and click_perplexity (sklearn_ltr.metrics)."""

import re

import numpy as np
import pytest

from sklearn_ltr.clicks import (
    CascadeModel,
    DependentClickModel,
    DynamicBayesianNetwork,
    PositionBasedModel,
    UserBrowsingModel,
    simulate_click_log,
)
from sklearn_ltr.metrics import click_log_likelihood, click_perplexity

# three sessions of two positions, the second session showing only position 1
CLICKS = np.array([1, 0, 0, 1, 1])
PROB = np.array([0.8, 0.5, 0.3, 0.9, 0.6])
SESSIONS = np.array([7, 7, 2, 2, 5])
POSITIONS = np.array([1, 2, 1, 2, 1])


def test_values_by_hand_on_a_tiny_log():
    ppl1 = 2 ** -((np.log2(0.8) + np.log2(0.7) + np.log2(0.6)) / 3)
    ppl2 = 2 ** -((np.log2(0.5) + np.log2(0.9)) / 2)
    np.testing.assert_allclose(click_perplexity(CLICKS, PROB, POSITIONS, per_position=True), [ppl1, ppl2])
    assert click_perplexity(CLICKS, PROB, POSITIONS) == pytest.approx((ppl1 + ppl2) / 2)
    ll = (np.log(0.8) + np.log(0.5) + np.log(0.7) + np.log(0.9) + np.log(0.6)) / 3  # three sessions
    assert click_log_likelihood(CLICKS, PROB, SESSIONS) == pytest.approx(ll)
    np.testing.assert_allclose(click_log_likelihood(CLICKS, PROB, SESSIONS, POSITIONS, per_position=True),
                               [(np.log(0.8) + np.log(0.7) + np.log(0.6)) / 3, (np.log(0.5) + np.log(0.9)) / 2])


def test_extremes_and_rows_in_any_order():
    assert click_perplexity([1, 0], [1.0, 0.0], [1, 2]) == 1.0  # certain and right
    assert click_perplexity([1, 0], [0.5, 0.5], [1, 1]) == pytest.approx(2.0)  # a coin flip
    assert click_perplexity([1], [0.0], [1]) == np.inf  # a click the model rules out
    assert click_log_likelihood([1, 0], [1.0, 0.0], [0, 0]) == 0.0
    per_k = click_perplexity([0, 1], [0.2, 0.6], [1, 3], per_position=True)
    assert np.isnan(per_k[1]) and click_perplexity([0, 1], [0.2, 0.6], [1, 3]) == pytest.approx(np.nanmean(per_k))
    perm = np.random.default_rng(0).permutation(5)
    assert click_perplexity(CLICKS[perm], PROB[perm], POSITIONS[perm]) == pytest.approx(
        click_perplexity(CLICKS, PROB, POSITIONS))
    assert click_log_likelihood(CLICKS[perm], PROB[perm], SESSIONS[perm]) == pytest.approx(
        click_log_likelihood(CLICKS, PROB, SESSIONS))


@pytest.mark.parametrize(
    "truth",
    [DynamicBayesianNetwork(gamma=0.7), CascadeModel(epsilon=0.1), UserBrowsingModel(eta=1.5),
     DependentClickModel(continuation=0.4)],
    ids=lambda m: type(m).__name__,
)
def test_the_true_model_has_the_lowest_perplexity_on_its_own_log(truth):
    rng = np.random.default_rng(0)
    n_queries, length = 3000, 6
    y = rng.choice(5, n_queries * length, p=[0.5, 0.3, 0.12, 0.05, 0.03])
    groups = np.repeat(np.arange(n_queries), length)
    log = simulate_click_log(y, groups, click_model=truth, w=0.5, y_max=4, random_state=1)
    candidates = [truth, PositionBasedModel(eta=1.0), DynamicBayesianNetwork(gamma=0.95, satisfaction=0.9),
                  UserBrowsingModel(eta=0.3), DependentClickModel(continuation=0.9)]
    ppl, ll = [], []
    for model in candidates:
        p = model.conditional_click_probability(y[log.rows], log.positions, log.clicks, log.sessions, y_max=4)
        p = np.clip(p, 1e-6, 1 - 1e-6)  # a wrong model may rule out an observed click
        ppl.append(click_perplexity(log.clicks, p, log.positions))
        ll.append(click_log_likelihood(log.clicks, p, log.sessions))
    assert np.argmin(ppl) == 0, ppl
    assert np.argmax(ll) == 0, ll
    # the true model's conditional probabilities are calibrated: mean prediction = click rate per position
    p = truth.conditional_click_probability(y[log.rows], log.positions, log.clicks, log.sessions, y_max=4)
    for k in range(1, length + 1):
        at = log.positions == k
        sigma = np.sqrt(np.sum(p[at] * (1 - p[at])))
        assert abs(log.clicks[at].sum() - p[at].sum()) < 4.5 * sigma + 1e-9


@pytest.mark.parametrize(
    ("call", "message"),
    [(lambda: click_perplexity([0, 2], [0.1, 0.2], [1, 2]), "clicks must hold only 0 (not clicked) and 1 (clicked)"),
     (lambda: click_perplexity([0, 1], [0.1], [1, 2]), "probability must hold one predicted click probability"),
     (lambda: click_perplexity([0, 1], [0.1, 3.2], [1, 2]), "not ranking scores"),
     (lambda: click_perplexity([0, 1], [0.1, 0.2], [0, 1]), "1-based display rank"),
     (lambda: click_perplexity([], [], []), "clicks is empty"),
     (lambda: click_log_likelihood([0, 1], [0.1, 0.2], [1]), "sessions must hold one session id per impression (2)"),
     (lambda: click_log_likelihood([0, 1], [0.1, 0.2], [1, 1], per_position=True), "needs positions")],
)  # fmt: skip
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
