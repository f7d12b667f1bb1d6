"""Inverse-propensity weights: inverted, clipped, and refused when they are not propensities."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ltr.clicks import PROPENSITY_CLIP, check_propensity, inverse_propensity_weights


def test_weights_invert_the_propensities_and_clip_them():
    weights = inverse_propensity_weights([1.0, 0.5, 0.25, 0.05, 0.02, 0.001])
    # 1 / p up to the clip, then 1 / clip: a propensity never passes through un-inverted.
    assert weights.tolist() == [1.0, 2.0, 4.0, 20.0, 20.0, 20.0]
    assert PROPENSITY_CLIP == 0.05


def test_clip_is_a_lower_bound_of_the_propensity():
    p = np.array([0.9, 0.3, 0.1, 0.01])
    assert inverse_propensity_weights(p, clip=0.2).tolist() == pytest.approx([1 / 0.9, 1 / 0.3, 5.0, 5.0])
    assert inverse_propensity_weights(p, clip=1.0).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert inverse_propensity_weights(p, clip=0.001).tolist() == pytest.approx(1 / p)


@given(st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=30),
       st.floats(min_value=1e-3, max_value=1.0))
def test_weights_lie_between_one_and_the_inverse_clip(values, clip):
    weights = inverse_propensity_weights(values, clip=clip)
    assert np.all(weights >= 1.0) and np.all(weights <= 1 / clip + 1e-9)
    unclipped = np.asarray(values) >= clip
    assert np.allclose(weights[unclipped] * np.asarray(values)[unclipped], 1.0)


@pytest.mark.parametrize(("values", "message"), [
    ([1.0, 2.0], "look like inverse-propensity weights"),
    ([0.5, 0.0], r"in \(0, 1\]; got 0"),
    ([0.5, -0.1], r"got -0\.1"),
    ([0.5, np.nan], "NaN or infinite"),
    ([[0.5, 0.5]], "1-D array"),
    (["a", "b"], "1-D array of numbers"),
])
def test_bad_propensities_are_refused_by_name(values, message):
    with pytest.raises(ValueError, match=message):
        inverse_propensity_weights(values)
    with pytest.raises(ValueError, match=r"^position_bias"):
        check_propensity(values, name="position_bias")


def test_length_and_clip_checks():
    with pytest.raises(ValueError, match="has 2 values but X has 3 rows"):
        check_propensity([0.5, 0.5], 3)
    for clip in (0, 1.5, True, "0.1", np.nan):
        with pytest.raises(ValueError, match="clip must be a number in"):
            inverse_propensity_weights([0.5], clip=clip)


def test_messages_whole():
    with pytest.raises(ValueError) as error:
        inverse_propensity_weights([0.5, 4.0])
    assert str(error.value) == (
        "propensity must hold examination probabilities in (0, 1]; got 4. Values above 1 look like "
        "inverse-propensity weights: pass the propensities themselves (1 / weight).")
    with pytest.raises(ValueError) as error:
        inverse_propensity_weights([0.5, 0.0])
    assert str(error.value) == "propensity must hold examination probabilities in (0, 1]; got 0."
    with pytest.raises(ValueError, match=r"^p_val has 1 values but X has 2 rows"):
        inverse_propensity_weights([0.5], n_samples=2, name="p_val")


def test_a_pandas_series_is_read_as_its_values():
    pd = pytest.importorskip("pandas")
    series = pd.Series([1.0, 0.25, 0.01], index=[10, 11, 12])
    assert inverse_propensity_weights(series).tolist() == [1.0, 4.0, 20.0]
