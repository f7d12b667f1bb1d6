"""Tests of the click models of sklearn_ltr.clicks: exact probabilities, sampling and their agreement."""

import itertools
import re

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_ltr.clicks import (
    CascadeModel,
    DependentClickModel,
    DynamicBayesianNetwork,
    PositionBasedModel,
    UserBrowsingModel,
    simulate_click_log,
)

MODELS = [
    PositionBasedModel(eta=1.0),
    PositionBasedModel(eta=1.5, trust_bias="vardasbi2020"),
    CascadeModel(epsilon=0.1),
    DependentClickModel(continuation=[0.8, 0.6, 0.5, 0.4, 0.3, 0.2], epsilon=0.05),
    DynamicBayesianNetwork(gamma=0.8),
    DynamicBayesianNetwork(gamma=0.9, satisfaction=0.3, epsilon=0.2),
    UserBrowsingModel(eta=1.0),
    UserBrowsingModel(gamma=np.random.default_rng(0).uniform(0.2, 1.0, (6, 6))),
]
IDS = [f"{type(m).__name__}-{i}" for i, m in enumerate(MODELS)]
PAGE = np.array([2, 0, 4, 1, 3, 0])  # grades of one page in display order, y_max = 4


def _patterns(n):
    """All 2**n click patterns of an n-document page, one page per pattern, flattened."""
    return np.array(list(itertools.product((0, 1), repeat=n)))


def _pattern_probabilities(model, page):
    """P(pattern) = prod_k P(C_k = c_k | c_<k), from the model's conditional probabilities."""
    n = len(page)
    patterns = _patterns(n)
    m = len(patterns)
    cond = model.conditional_click_probability(np.tile(page, m), np.tile(np.arange(1, n + 1), m),
                                               patterns.ravel(), np.repeat(np.arange(m), n), y_max=4)
    cond = cond.reshape(m, n)
    return patterns, np.prod(np.where(patterns == 1, cond, 1 - cond), axis=1)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_conditional_probabilities_add_up_to_the_marginal(model):
    patterns, prob = _pattern_probabilities(model, PAGE)
    assert prob.sum() == pytest.approx(1.0)
    marginal = model.marginal_click_probability(PAGE, np.arange(1, 7), y_max=4)
    np.testing.assert_allclose(prob @ patterns, marginal, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_sampled_click_patterns_have_the_model_probabilities(model):
    n_pages = 20_000
    page = PAGE[:4]
    _, prob = _pattern_probabilities(model, page)
    clicks = model.sample_clicks(np.tile(page, n_pages), np.tile(np.arange(1, 5), n_pages),
                                 np.repeat(np.arange(n_pages), 4), y_max=4, random_state=1).reshape(n_pages, 4)
    counts = np.bincount(clicks @ (2 ** np.arange(3, -1, -1)), minlength=16)
    sigma = np.sqrt(n_pages * prob * (1 - prob))
    assert np.all(np.abs(counts - n_pages * prob) <= 4.5 * sigma + 1e-9), (counts, n_pages * prob)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_simulated_click_rate_per_position_matches_the_marginal(model):
    rng = np.random.default_rng(3)
    n_queries, length = 4000, 6
    y = rng.choice(5, n_queries * length, p=[0.5, 0.3, 0.12, 0.05, 0.03])
    groups = np.repeat(np.arange(n_queries), length)
    log = simulate_click_log(y, groups, click_model=model, w=0.6, sessions=2, y_max=4, random_state=0)
    expected = model.marginal_click_probability(y[log.rows], log.positions, log.sessions, y_max=4)
    for k in range(1, length + 1):
        at = log.positions == k
        sigma = np.sqrt(np.sum(expected[at] * (1 - expected[at])))
        assert abs(log.clicks[at].sum() - expected[at].sum()) <= 4.5 * sigma + 1e-9, k


def test_cascade_by_hand_and_stops_at_the_first_click():
    model = CascadeModel(epsilon=0.2)
    a = 0.2 + 0.8 * np.array([3, 0, 15, 1]) / 15  # r = (2**y - 1) / 15 for y = 2, 0, 4, 1
    expected = [a[0], (1 - a[0]) * a[1], (1 - a[0]) * (1 - a[1]) * a[2], 0.0]
    np.testing.assert_allclose(model.marginal_click_probability([2, 0, 4, 1], [1, 2, 3, 4], y_max=4), expected)
    np.testing.assert_allclose(
        model.conditional_click_probability([2, 0, 4, 1], [1, 2, 3, 4], [0, 1, 0, 0], y_max=4), [a[0], a[1], 0, 0])
    y = np.tile([0, 1, 0, 1, 0], 3000)
    clicks = model.sample_clicks(y, np.tile(np.arange(1, 6), 3000), np.repeat(np.arange(3000), 5), y_max=2,
                                 random_state=0)
    per_page = clicks.reshape(3000, 5).sum(axis=1)
    assert per_page.max() == 1 and per_page.min() == 0


def test_dependent_click_model_by_hand():
    model = DependentClickModel(continuation=[0.3, 0.7, 0.2], epsilon=0.0)
    a = np.array([1.0, 1 / 3, 1.0])  # y = 2, 1, 2 of y_max = 2
    e2 = 1 - a[0] + a[0] * 0.3
    e3 = e2 * (1 - a[1] + a[1] * 0.7)
    np.testing.assert_allclose(model.marginal_click_probability([2, 1, 2], [1, 2, 3], y_max=2),
                               [a[0], e2 * a[1], e3 * a[2]])
    # after a click at rank 1 the user is at rank 2 with probability 0.3; a skip there (prob 1 - 1/3 if
    # examined) leaves P(E_3) = 0.3 (2/3) / (1 - 0.3 / 3)
    cond = model.conditional_click_probability([2, 1, 2], [1, 2, 3], [1, 0, 0], y_max=2)
    np.testing.assert_allclose(cond, [1.0, 0.3 / 3, 0.3 * (2 / 3) / (1 - 0.3 / 3)])


def test_dynamic_bayesian_network_by_hand():
    model = DynamicBayesianNetwork(gamma=0.8, epsilon=0.0)  # satisfaction s = r
    r = np.array([1 / 3, 1.0, 0.0])  # y = 1, 2, 0 of y_max = 2
    e2 = r[0] * 0.8 * (1 - r[0]) + (1 - r[0]) * 0.8
    e3 = e2 * (r[1] * 0.8 * (1 - r[1]) + (1 - r[1]) * 0.8)
    np.testing.assert_allclose(model.marginal_click_probability([1, 2, 0], [1, 2, 3], y_max=2),
                               [r[0], e2 * r[1], e3 * r[2]])
    cond = model.conditional_click_probability([1, 2, 1], [1, 2, 3], [1, 0, 0], y_max=2)
    np.testing.assert_allclose(cond, [1 / 3, 0.8 * (2 / 3), 0.0])  # rank 2 skipped though a = 1: not examined


def test_user_browsing_model_by_hand():
    gamma = np.array([[0.9, 0.0, 0.0], [0.6, 0.5, 0.0], [0.7, 0.4, 0.3]])
    model = UserBrowsingModel(gamma=gamma, epsilon=0.0)
    a = np.array([1 / 3, 1.0, 1 / 3])  # y = 1, 2, 1 of y_max = 2
    p1 = 0.9 * a[0]
    p2 = (p1 * 0.6 + (1 - p1) * 0.5) * a[1]
    # rank 3: last click at 2 (d=1), at 1 and not 2 (d=2), none (d=3)
    last2 = p2
    last1 = p1 * (1 - 0.6 * a[1])
    none = (1 - p1) * (1 - 0.5 * a[1])
    p3 = (last2 * 0.7 + last1 * 0.4 + none * 0.3) * a[2]
    np.testing.assert_allclose(model.marginal_click_probability([1, 2, 1], [1, 2, 3], y_max=2), [p1, p2, p3])
    np.testing.assert_allclose(model.conditional_click_probability([1, 2, 1], [1, 2, 3], [1, 0, 0], y_max=2),
                               [p1, 0.6, 0.4 / 3])


def test_special_cases_reduce_to_simpler_models():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 60)
    positions = np.tile(np.arange(1, 7), 10)
    sessions = np.repeat(np.arange(10), 6)
    clicks = rng.integers(0, 2, 60)
    cascade = CascadeModel(epsilon=0.1)
    for twin in (DependentClickModel(continuation=0.0), DynamicBayesianNetwork(gamma=1.0, satisfaction=1.0)):
        for method in ("marginal_click_probability", "conditional_click_probability"):
            args = (y, positions, clicks, sessions) if method.startswith("cond") else (y, positions, sessions)
            np.testing.assert_allclose(getattr(twin, method)(*args, y_max=4), getattr(cascade, method)(*args, y_max=4))
    # UBM whose examination ignores the last click is the PBM
    theta = 1 / np.arange(1, 7) ** 1.5
    ubm = UserBrowsingModel(gamma=np.repeat(theta[:, None], 6, axis=1))
    pbm = PositionBasedModel(eta=1.5)
    np.testing.assert_allclose(ubm.marginal_click_probability(y, positions, sessions, y_max=4),
                               pbm.marginal_click_probability(y, positions, sessions, y_max=4))
    np.testing.assert_allclose(ubm.conditional_click_probability(y, positions, clicks, sessions, y_max=4),
                               pbm.marginal_click_probability(y, positions, y_max=4))


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_rows_may_come_in_any_order(model):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, 30)
    positions = np.tile(np.arange(1, 7), 5)
    sessions = np.repeat(["e", "b", "x", "a", "c"], 6)
    clicks = rng.integers(0, 2, 30)
    perm = rng.permutation(30)
    np.testing.assert_allclose(model.marginal_click_probability(y[perm], positions[perm], sessions[perm], y_max=4),
                               model.marginal_click_probability(y, positions, sessions, y_max=4)[perm])
    np.testing.assert_allclose(
        model.conditional_click_probability(y[perm], positions[perm], clicks[perm], sessions[perm], y_max=4),
        model.conditional_click_probability(y, positions, clicks, sessions, y_max=4)[perm])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_click_models_clone_and_show_their_parameters(model):
    twin = clone(model)
    assert type(twin) is type(model)
    assert repr(twin) == repr(model)
    assert set(twin.get_params()) == set(type(model)().get_params())


@pytest.mark.parametrize(
    ("model", "kwargs", "message"),
    [(CascadeModel(epsilon=2), {}, "epsilon must be a number in [0, 1]"),
     (DependentClickModel(continuation=[0.5, 0.5]), {}, "continuation gives 2 positions but a page shows 3"),
     (DependentClickModel(continuation=1.5), {}, "continuation must be a number in [0, 1]"),
     (DynamicBayesianNetwork(gamma=-0.1), {}, "gamma must be a number in [0, 1]"),
     (DynamicBayesianNetwork(satisfaction="r"), {}, "satisfaction must be a number in [0, 1]"),
     (UserBrowsingModel(gamma=np.ones((2, 3))), {}, "gamma must be None or a square 2-D array"),
     (UserBrowsingModel(gamma=np.ones((2, 2))), {}, "gamma covers ranks 1..2"),
     (UserBrowsingModel(eta=np.nan), {}, "eta must be a finite number"),
     (CascadeModel(), {"positions": [1, 3, 4]}, "lacks a position above one of its rows"),
     (CascadeModel(), {"positions": [1, 1, 2]}, "share a display position"),
     (CascadeModel(), {"positions": [0, 1, 2]}, "1-based"),
     (CascadeModel(), {"clicks": [0, 2, 1]}, "clicks must hold only 0"),
     (CascadeModel(), {"y": [0, 1.5, 1]}, "whole-number")],
)  # fmt: skip
def test_bad_input_names_the_argument(model, kwargs, message):
    args = {"y": [0, 1, 2], "positions": [1, 2, 3], "clicks": [0, 1, 0], **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        model.conditional_click_probability(args["y"], args["positions"], args["clicks"])
