"""Tests of sklearn_ltr.clicks.simulate_click_log and the position-based click model."""

import re

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_ltr._groups import QueryGroups, order_within_groups
from sklearn_ltr.clicks import PositionBasedModel, SimulatedClickLog, simulate_click_log
from sklearn_ltr.datasets import click_probability, simulate_clicks


def _reference_simulate_clicks(y, groups, *, w, epsilon, y_max, rng):
    """The simulation as it was written before the click models (one page per query)."""
    y = np.asarray(y, dtype=np.float64)
    qg = QueryGroups(groups)
    n = y.shape[0]
    key = w * y + (1 - w) * rng.uniform(0, y_max, n)
    shuffle = rng.permutation(n)
    order = shuffle[order_within_groups(qg.codes[shuffle], key[shuffle])]
    positions = np.empty(n, dtype=np.int64)
    positions[order] = np.arange(1, n + 1) - qg.offsets[qg.codes[order]]
    observed = rng.random(n) < 1.0 / positions
    clicked = rng.random(n) < click_probability(y.astype(int), epsilon=epsilon, y_max=y_max)
    return positions, (observed & clicked).astype(np.int64)


def _data(n_queries=300, seed=0, max_len=12):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_len + 1, n_queries)
    groups = np.repeat(rng.permutation(n_queries) * 3 + 11, sizes)
    y = rng.choice(5, sizes.sum(), p=[0.5, 0.3, 0.12, 0.05, 0.03])
    shuffle = rng.permutation(len(y))  # queries interleaved, not contiguous
    return y[shuffle], groups[shuffle]


@pytest.mark.parametrize(("w", "seed"), [(1.0, 0), (0.7, 3), (0.0, 11)])
def test_default_log_reproduces_simulate_clicks_session_by_session(w, seed):
    y, groups = _data(seed=seed)
    sessions = 4
    log = simulate_click_log(y, groups, w=w, sessions=sessions, random_state=seed)
    rng = np.random.default_rng(seed)
    pages = [simulate_clicks(y, groups, w=w, random_state=rng) for _ in range(sessions)]
    np.testing.assert_array_equal(log.positions, np.concatenate([p for p, _ in pages]))
    np.testing.assert_array_equal(log.clicks, np.concatenate([c for _, c in pages]))
    np.testing.assert_array_equal(log.rows, np.tile(np.arange(len(y)), sessions))
    np.testing.assert_array_equal(log.sample_weight, np.ones(len(log)))
    # ... and both equal the simulation as first written
    rng = np.random.default_rng(seed)
    for s, (positions, clicks) in enumerate(pages):
        ref_positions, ref_clicks = _reference_simulate_clicks(y, groups, w=w, epsilon=0.1, y_max=4.0, rng=rng)
        np.testing.assert_array_equal(positions, ref_positions, err_msg=f"session {s}")
        np.testing.assert_array_equal(clicks, ref_clicks, err_msg=f"session {s}")


def test_simulate_clicks_keeps_its_outputs_for_an_int_seed():
    y, groups = _data(seed=5)
    positions, clicks = simulate_clicks(y, groups, w=0.4, epsilon=0.2, y_max=4, random_state=123)
    seed = np.random.RandomState(123).randint(np.iinfo(np.int32).max)  # the seed rule of simulate_clicks
    ref = _reference_simulate_clicks(y, groups, w=0.4, epsilon=0.2, y_max=4.0, rng=np.random.default_rng(seed))
    np.testing.assert_array_equal(positions, ref[0])
    np.testing.assert_array_equal(clicks, ref[1])


def test_session_ids_are_unique_per_query_and_session():
    y, groups = _data(n_queries=40, seed=1)
    sessions = 3
    log = simulate_click_log(y, groups, w=0.5, sessions=sessions, random_state=0)
    n_queries = len(np.unique(groups))
    assert len(np.unique(log.sessions)) == n_queries * sessions
    np.testing.assert_array_equal(log.groups, groups[log.rows])
    for session in np.unique(log.sessions):
        at = log.sessions == session
        assert len(np.unique(log.groups[at])) == 1  # one query per session id
        size = np.sum(groups == log.groups[at][0])
        np.testing.assert_array_equal(np.sort(log.positions[at]), np.arange(1, size + 1))
    # the id is query_index * sessions + s, query_index the rank of the id among the sorted ids
    query_index = np.searchsorted(np.unique(groups), log.groups)
    s = np.repeat(np.arange(sessions), len(y))
    np.testing.assert_array_equal(log.sessions, query_index * sessions + s)


def test_query_relabelling_changes_only_the_session_numbers():
    y, groups = _data(n_queries=50, seed=2)
    ids = np.unique(groups)
    relabel = dict(zip(ids, [f"q{v}" for v in np.random.default_rng(0).permutation(len(ids))], strict=True))
    renamed = np.array([relabel[g] for g in groups])
    a = simulate_click_log(y, groups, w=0.5, sessions=2, top_k=5, random_state=4)
    b = simulate_click_log(y, renamed, w=0.5, sessions=2, top_k=5, random_state=4)
    for name in ("rows", "clicks", "positions", "sample_weight"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(b.groups, [relabel[g] for g in a.groups])
    # the sessions partition the impressions the same way
    pairs = set(zip(a.sessions.tolist(), b.sessions.tolist(), strict=True))
    assert len(pairs) == len(np.unique(a.sessions)) == len(np.unique(b.sessions))


def test_row_order_permutes_a_deterministic_log():
    # w = 1 with distinct grades fixes the ranking; eta = 0 and epsilon = 0 with grades 0 / y_max fix the clicks
    y = np.array([4, 0, 0, 4, 0, 4, 0])
    score = np.array([5.0, 1.0, 2.0, 3.0, 0.5, 9.0, 4.0])
    groups = np.array([1, 1, 1, 1, 2, 2, 2])
    model = PositionBasedModel(eta=0.0, epsilon=0.0)
    a = simulate_click_log(y, groups, click_model=model, scores=score, random_state=0)
    np.testing.assert_array_equal(a.positions, [1, 4, 3, 2, 3, 1, 2])
    np.testing.assert_array_equal(a.clicks, y == 4)
    perm = np.array([6, 2, 0, 5, 1, 4, 3])
    b = simulate_click_log(y[perm], groups[perm], click_model=model, scores=score[perm], random_state=1)
    np.testing.assert_array_equal(b.positions, a.positions[perm])
    np.testing.assert_array_equal(b.clicks, a.clicks[perm])
    np.testing.assert_array_equal(perm[b.rows], perm)


def test_scores_rank_the_pages_and_ties_are_broken_at_random():
    y = np.zeros(4, dtype=int)
    groups = np.zeros(4, dtype=int)
    log = simulate_click_log(y, groups, scores=[0.1, 3.0, 2.0, -1.0], sessions=3, random_state=0)
    np.testing.assert_array_equal(log.positions, np.tile([3, 1, 2, 4], 3))
    ties = simulate_click_log(y, groups, scores=np.zeros(4), sessions=400, random_state=0)
    first = ties.rows[ties.positions == 1]
    counts = np.bincount(first, minlength=4)
    assert np.all(np.abs(counts - 100) < 4 * np.sqrt(400 * 0.25 * 0.75))


def test_top_k_shows_only_the_first_positions():
    y, groups = _data(n_queries=200, seed=3)
    log = simulate_click_log(y, groups, w=0.5, sessions=2, top_k=3, random_state=0)
    assert log.positions.max() == 3
    sizes = np.bincount(np.searchsorted(np.unique(groups), groups))
    assert len(log) == 2 * np.minimum(sizes, 3).sum()
    for session in np.unique(log.sessions):
        at = log.sessions == session
        np.testing.assert_array_equal(np.sort(log.positions[at]), np.arange(1, at.sum() + 1))
    # the top-k log is the full log restricted to positions <= 3 in the first session (same draws before clicks)
    full = simulate_click_log(y, groups, w=0.5, top_k=None, random_state=0)
    top = simulate_click_log(y, groups, w=0.5, top_k=3, random_state=0)
    np.testing.assert_array_equal(top.rows, np.flatnonzero(full.positions <= 3))
    np.testing.assert_array_equal(top.positions, full.positions[full.positions <= 3])


def test_down_sampling_keeps_every_click_and_weights_the_rest():
    y, groups = _data(n_queries=2000, seed=4)
    keep = 0.25
    full = simulate_click_log(y, groups, w=0.5, random_state=9)
    kept = simulate_click_log(y, groups, w=0.5, keep_non_clicked=keep, random_state=9)
    # one session: the clicks are drawn before the down-sampling, so they are the full log's
    assert set(kept.rows.tolist()) <= set(full.rows.tolist())
    np.testing.assert_array_equal(np.flatnonzero(full.clicks), kept.rows[kept.clicks == 1])
    np.testing.assert_array_equal(kept.positions, full.positions[kept.rows])
    np.testing.assert_array_equal(kept.sample_weight, np.where(kept.clicks == 1, 1.0, 1 / keep))
    n_negative = np.sum(full.clicks == 0)
    n_kept = np.sum(kept.clicks == 0)
    assert abs(n_kept - keep * n_negative) < 4 * np.sqrt(n_negative * keep * (1 - keep))
    # the weighted count of impressions estimates the full log's
    sd = np.sqrt(n_negative * keep * (1 - keep)) / keep
    assert abs(kept.sample_weight.sum() - len(full)) < 4 * sd


def test_down_sampling_reproduces_the_session_loop_of_the_benchmarks():
    """Per session: simulate_clicks, then one uniform draw per row to keep the non-clicked ones."""
    y, groups = _data(n_queries=100, seed=6)
    log = simulate_click_log(y, groups, w=0.3, sessions=3, keep_non_clicked=0.1, random_state=2)
    rng = np.random.default_rng(2)
    rows, clicks, positions = [], [], []
    for _ in range(3):
        p, c = simulate_clicks(y, groups, w=0.3, random_state=rng)
        kept = np.flatnonzero((c == 1) | (rng.random(len(c)) < 0.1))
        rows.append(kept)
        clicks.append(c[kept])
        positions.append(p[kept])
    np.testing.assert_array_equal(log.rows, np.concatenate(rows))
    np.testing.assert_array_equal(log.clicks, np.concatenate(clicks))
    np.testing.assert_array_equal(log.positions, np.concatenate(positions))


def test_position_based_click_rate_matches_its_closed_form():
    rng = np.random.default_rng(0)
    n_queries, length = 6000, 6
    y = rng.choice(5, n_queries * length, p=[0.5, 0.3, 0.12, 0.05, 0.03])
    groups = np.repeat(np.arange(n_queries), length)
    for model in (PositionBasedModel(eta=2.0, epsilon=0.05), PositionBasedModel(eta=0.5, trust_bias="vardasbi2020")):
        log = simulate_click_log(y, groups, click_model=model, w=0.5, sessions=2, y_max=4, random_state=1)
        expected = model.marginal_click_probability(y[log.rows], log.positions, y_max=4)
        alpha, beta = model.affine_parameters(log.positions)
        r = (2.0 ** y[log.rows] - 1) / 15
        np.testing.assert_allclose(expected, alpha * r + beta)
        for k in range(1, length + 1):
            for relevant in (False, True):
                at = (log.positions == k) & ((y[log.rows] >= 3) == relevant)
                sigma = np.sqrt(np.sum(expected[at] * (1 - expected[at])))
                assert abs(log.clicks[at].sum() - expected[at].sum()) < 4 * sigma + 1e-9, (model, k, relevant)


def test_position_based_model_by_hand():
    model = PositionBasedModel(eta=2.0, epsilon=0.2)
    np.testing.assert_allclose(model.examination([1, 2, 3]), [1.0, 1 / 4, 1 / 9])
    alpha, beta = model.affine_parameters([1, 2])
    np.testing.assert_allclose(alpha, [0.8, 0.2])
    np.testing.assert_allclose(beta, [0.2, 0.05])
    # y = 1 of y_max = 2: r = 1 / 3; at position 2: (1/4) * (0.2 + 0.8 / 3)
    np.testing.assert_allclose(model.marginal_click_probability([1, 2], [2, 1], y_max=2), [(0.2 + 0.8 / 3) / 4, 1.0])
    # trust bias: eps_plus for the relevant part, eps_minus for the irrelevant part
    biased = PositionBasedModel(eta=1.0, trust_bias=([0.9, 0.8], [0.3, 0.1]))
    np.testing.assert_allclose(biased.marginal_click_probability([2, 0], [1, 2], y_max=2), [0.9, 0.1 / 2])
    np.testing.assert_allclose(biased.marginal_click_probability([1], [2], y_max=2), [(0.8 / 3 + 0.1 * 2 / 3) / 2])
    alpha, beta = biased.affine_parameters([1, 2])
    np.testing.assert_allclose(alpha, [0.6, 0.35])
    np.testing.assert_allclose(beta, [0.3, 0.05])
    # the published curves of Vardasbi et al. (2020)
    plus, minus = PositionBasedModel(trust_bias="vardasbi2020").trust_bias_curves([1, 5, 10, 20, 25])
    np.testing.assert_allclose(plus, [0.98, 0.94, 0.89, 0.79, 0.79])
    np.testing.assert_allclose(minus, [0.65, 0.13, 0.065, 0.065, 0.065])
    # clicks are independent given the documents: the conditional is the marginal
    np.testing.assert_allclose(biased.conditional_click_probability([2, 0], [1, 2], [1, 0], y_max=2), [0.9, 0.05])


def test_click_model_is_a_scikit_learn_style_object():
    model = PositionBasedModel(eta=2.0, trust_bias="vardasbi2020")
    assert model.get_params() == {"eta": 2.0, "epsilon": 0.1, "trust_bias": "vardasbi2020"}
    assert repr(model) == "PositionBasedModel(eta=2.0, trust_bias='vardasbi2020')"
    twin = clone(model).set_params(eta=0.5)
    assert twin.eta == 0.5 and model.eta == 2.0
    log = simulate_click_log([1, 0], [0, 0], click_model=model, random_state=0)
    assert isinstance(log, SimulatedClickLog) and log.click_model is model
    with pytest.raises(AttributeError):
        log.clicks = None  # frozen


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"sessions": 0}, "sessions must be an integer >= 1"), ({"top_k": 0}, "top_k must be an integer >= 1"),
     ({"keep_non_clicked": 0.0}, "keep_non_clicked must be a probability in (0, 1]"),
     ({"w": -0.1}, "w must be a number in [0, 1]"), ({"scores": [1.0]}, "scores must hold one"),
     ({"scores": [1.0, np.nan, 0.0]}, "scores must be finite"), ({"y_max": 1}, "above y_max=1"),
     ({"click_model": "pbm"}, "click_model must be a click model"),
     ({"click_model": PositionBasedModel(eta=-1)}, "eta must be a finite number >= 0"),
     ({"click_model": PositionBasedModel(trust_bias="agarwal")}, "trust_bias must be None, one of"),
     ({"click_model": PositionBasedModel(trust_bias=([1.0], [0.1, 0.2]))}, "same length"),
     ({"click_model": PositionBasedModel(trust_bias=([1.0], [0.1]))}, "positions 1..1")],
)  # fmt: skip
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        simulate_click_log([0, 1, 2], [1, 1, 1], **kwargs)


def test_position_checks():
    with pytest.raises(ValueError, match="1-based"):
        PositionBasedModel().examination([0, 1])
    with pytest.raises(ValueError, match="share a display position"):
        PositionBasedModel().marginal_click_probability([0, 1], [1, 1], sessions=[5, 5])
