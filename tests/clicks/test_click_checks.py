"""The one home of click logs: the checks of clicks and positions, the per-position counts, the simulator's exports."""

import re

import numpy as np
import pandas as pd
import pytest

from sklearn_ltr._params import check_int
from sklearn_ltr.clicks import check_clicks, check_positions, simulate_click_log
from sklearn_ltr.clicks._checks import position_counts

# ------------------------------------------------------------------------------------------------ check_clicks


def test_check_clicks_returns_float_zeros_and_ones():
    out = check_clicks([0, 1, True, 1.0])
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(check_clicks(pd.Series([1, 0])), [1.0, 0.0])
    np.testing.assert_array_equal(check_clicks(np.array([0, 1], dtype=np.uint8), 2), [0.0, 1.0])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"clicks": [0, 2, 1, 3, 2]},
     "clicks must hold only 0 (not clicked) and 1 (clicked); got values such as 2, 3. Pass one click indicator per "
     "shown document, not relevance grades or click counts (a document shown twice is two rows)."),
    ({"clicks": [0, -1], "name": "y (clicks)"}, "y (clicks) must hold only 0 (not clicked) and 1 (clicked); got "
                                                "values such as -1."),
    ({"clicks": [0, 0.5], "name": "y", "fix": "Fit labels without propensity."},
     "y must hold only 0 (not clicked) and 1 (clicked); got values such as 0.5. Fit labels without propensity."),
    ({"clicks": [0, 1, 1], "n_rows": 2, "against": "y"},
     "clicks has 3 entries but y has 2; pass one click indicator (1 clicked, 0 shown and not clicked) of every row "
     "of y (in the same order)."),
    ({"clicks": [[0, 1]]}, "clicks must be a 1-D array of 0/1 click indicators, one per shown document; got dtype "
                           "int64 and shape (1, 2)."),
    ({"clicks": ["a", "b"]}, "clicks must be a 1-D array of 0/1 click indicators"),
    ({"clicks": []}, "clicks is empty; a click log needs at least one row (one per shown document)."),
    ({"clicks": [0, np.nan]}, "clicks contains NaN; every shown document is either clicked (1) or not (0)."),
])
def test_check_clicks_messages_name_the_argument_and_the_fix(kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        check_clicks(**kwargs)


# --------------------------------------------------------------------------------------------- check_positions


def test_check_positions_returns_int64_ranks():
    out = check_positions([3, 1.0, 2])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [3, 1, 2])
    np.testing.assert_array_equal(check_positions(pd.Series([2, 1]), 2), [2, 1])
    assert check_positions(np.array([], dtype=np.int64)).shape == (0,)  # an empty column is its caller's business


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"positions": [0, 1, 2]}, "positions are 1-based display ranks; got a value of 0 (< 1). Add 1 to 0-based "
                               "positions."),
    ({"positions": [1, -3]}, "positions are 1-based display ranks; got a value of -3 (< 1)."),
    ({"positions": [1, 2.5, 3.5]}, "positions must be whole-number display ranks 1, 2, 3, ...; got 2.5."),
    ({"positions": [1, np.nan]}, "positions contains NaN or infinite values (missing positions); every row needs "
                                 "the position at which it was shown (drop rows that were not shown)."),
    ({"positions": [1, np.inf]}, "positions contains NaN or infinite values"),
    ({"positions": [1, 2, 3], "n_rows": 2, "against": "clicks"},
     "positions has 3 entries but clicks has 2; pass the display position of every row of clicks (in the same "
     "order)."),
    ({"positions": [[1, 2]]}, "positions must be a 1-D array of whole numbers, the 1-based display rank of each row "
                              "(1 = top); got dtype int64 and shape (1, 2)."),
    ({"positions": [True, True]}, "positions must be a 1-D array of whole numbers"),
    ({"positions": ["1", "2"], "name": "rank"}, "rank must be a 1-D array of whole numbers"),
])
def test_check_positions_messages_name_the_argument_and_the_fix(kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        check_positions(**kwargs)


# --------------------------------------------------------------------------------------------- position_counts


def test_position_counts_by_hand():
    positions = np.array([1, 2, 1, 3, 5, 2])
    clicks = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    shown, clicked = position_counts(positions, clicks, max_position=3)  # 5 falls in the last bucket, 3
    np.testing.assert_array_equal(shown, [2, 2, 2])
    np.testing.assert_array_equal(clicked, [1, 1, 2])
    weights = np.array([2.0, 1.0, 3.0, 0.5, 4.0, 1.0])
    shown, clicked = position_counts(positions, clicks, weights, max_position=4)
    np.testing.assert_array_equal(shown, [5.0, 2.0, 0.5, 4.0])
    np.testing.assert_array_equal(clicked, [2.0, 1.0, 0.5, 4.0])
    shown, clicked = position_counts(np.array([1]), np.array([1.0]), max_position=3)  # unseen positions: 0
    np.testing.assert_array_equal(shown, [1, 0, 0])
    np.testing.assert_array_equal(clicked, [1, 0, 0])


def test_the_estimates_report_the_counts(click_counts_log):
    from sklearn_ltr.clicks import estimate_propensity_harvesting

    clicks, positions, groups = click_counts_log
    estimate = estimate_propensity_harvesting(clicks, positions, groups, np.zeros(len(clicks), dtype=int),
                                              max_position=2, n_bootstrap=0)
    np.testing.assert_array_equal(estimate.n_shown, [4, 4])
    np.testing.assert_array_equal(estimate.n_clicks, [2, 1])


@pytest.fixture
def click_counts_log():
    """One document shown four times at position 1 (two clicks) and four times at 2, 3 (one click at 2)."""
    return [1, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 3, 3], [7] * 8


# --------------------------------------------------------------------------------------------------- check_int


def test_check_int_has_one_order_and_one_message():
    assert check_int(3, "n_iter") == 3
    assert check_int(np.int64(0), "n_bootstrap", 0) == 0
    with pytest.raises(ValueError, match=r"^n_iter must be an integer >= 1; got 0\.$"):
        check_int(0, "n_iter")
    with pytest.raises(ValueError, match=r"^top_k must be an integer >= 1 \(or None\); got True\.$"):
        check_int(True, "top_k", fix=" (or None)")
    with pytest.raises(ValueError, match=r"^sinkhorn_iters must be an integer >= 0; got 1\.5\.$"):
        check_int(1.5, "sinkhorn_iters", minimum=0)


# ----------------------------------------------------------------------------------------- the simulator's home


def test_datasets_re_exports_the_simulator_with_its_outputs():
    import sklearn_ltr.clicks
    import sklearn_ltr.datasets

    for name in ("simulate_clicks", "observation_propensity", "click_probability"):
        assert getattr(sklearn_ltr.datasets, name) is getattr(sklearn_ltr.clicks, name)
    y, groups = np.tile([0, 2, 1, 0, 1], 4), np.repeat(np.arange(4), 5)
    # The outputs of simulate_clicks before it moved to sklearn_ltr.clicks, same seeds.
    positions, clicks = sklearn_ltr.datasets.simulate_clicks(y, groups, w=0.5, random_state=0)
    assert positions.tolist() == [5, 1, 2, 4, 3, 5, 1, 2, 4, 3, 5, 1, 2, 4, 3, 4, 3, 1, 5, 2]
    assert clicks.tolist() == [0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1]
    positions, clicks = sklearn_ltr.datasets.simulate_clicks(y, groups, w=0.5, random_state=np.random.RandomState(1))
    assert positions.tolist() == [4, 1, 2, 5, 3, 3, 1, 2, 5, 4, 5, 3, 2, 4, 1, 5, 2, 1, 4, 3]
    assert clicks.tolist() == [1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]


def test_position_rule_sets_the_positions_of_every_session():
    y, groups = np.array([0, 2, 1, 0, 1]), np.array([7, 7, 7, 9, 9])
    seen = []

    def worst_first(scores, query_ids, rng):  # rank by ascending score: the logging ranking reversed
        seen.append((scores.copy(), query_ids))
        positions = np.empty(len(scores), dtype=np.int64)
        for q in np.unique(query_ids):
            rows = np.flatnonzero(query_ids == q)
            positions[rows[np.argsort(scores[rows], kind="stable")]] = np.arange(1, len(rows) + 1)
        return positions

    log = simulate_click_log(y, groups, sessions=2, position_rule=worst_first, random_state=0)
    assert log.positions.tolist() == [1, 3, 2, 1, 2] * 2
    assert len(seen) == 2 and seen[0][1] is not None
    np.testing.assert_array_equal(seen[0][0], y)  # w = 1: the scores are the labels
    default = simulate_click_log(y, groups, sessions=2, random_state=0)
    assert default.positions.tolist() == [3, 1, 2, 2, 1] * 2


def test_position_rule_is_checked():
    with pytest.raises(ValueError, match="position_rule must be None or a callable"):
        simulate_click_log([0, 1], [1, 1], position_rule="reverse")
    with pytest.raises(ValueError, match=r"^the positions of position_rule are 1-based display ranks; got a value "
                                         r"of 0"):
        simulate_click_log([0, 1], [1, 1], position_rule=lambda scores, groups, rng: np.arange(len(scores)))
    with pytest.raises(ValueError, match="the positions of position_rule has 1 entries but y has 2"):
        simulate_click_log([0, 1], [1, 1], position_rule=lambda scores, groups, rng: np.ones(1))
