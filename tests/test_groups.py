"""Query-group logic: validation, sorting, run lengths, padding and the way back."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr._groups import QueryGroups, check_groups, order_within_groups


def test_sorting_and_run_lengths_on_interleaved_string_ids():
    qg = QueryGroups(np.array(["b", "a", "c", "b", "a", "a"]))
    assert qg.ids.tolist() == ["a", "b", "c"]
    assert qg.sizes.tolist() == [3, 2, 1]
    assert qg.offsets.tolist() == [0, 3, 5, 6]
    assert qg.order.tolist() == [1, 4, 5, 0, 3, 2]  # stable: input order inside a query
    values = np.arange(6) * 10
    assert qg.sort(values).tolist() == [10, 40, 50, 0, 30, 20]
    assert qg.unsort(qg.sort(values)).tolist() == values.tolist()


def test_padding_round_trip_and_mask():
    groups = np.array([7, 3, 7, 7, 3])
    X = np.arange(10.0).reshape(5, 2)
    qg = QueryGroups(groups)
    padded, mask = qg.pad(X, fill_value=-1)
    assert padded.shape == (2, 3, 2)
    assert mask.tolist() == [[True, True, False], [True, True, True]]
    np.testing.assert_array_equal(padded[0, :2], X[[1, 4]])
    np.testing.assert_array_equal(padded[1], X[[0, 2, 3]])
    assert (padded[0, 2] == -1).all()
    np.testing.assert_array_equal(qg.unpad(padded), X)


def test_integer_encoding_paths_agree():
    dense = np.array([5, 3, 5, 9])
    sparse = np.array([5, 3, 5, 10**12])  # too spread out for the counting path
    a, b = QueryGroups(dense), QueryGroups(sparse)
    assert a.ids.tolist() == [3, 5, 9] and b.ids.tolist() == [3, 5, 10**12]
    np.testing.assert_array_equal(a.codes, b.codes)
    negative = QueryGroups(np.array([-2, 4, -2]))
    assert negative.ids.tolist() == [-2, 4] and negative.codes.tolist() == [0, 1, 0]


def test_many_queries_use_wider_codes():
    groups = np.arange(70_000)[::-1]
    qg = QueryGroups(groups)
    assert qg.codes.dtype == np.uint32
    assert qg.order.tolist()[:3] == [69_999, 69_998, 69_997]


def test_take_selects_queries():
    qg = QueryGroups(["x", "y", "x", "z"])
    assert qg.take([0, 2]).tolist() == [0, 2, 3]


def test_order_within_groups_sorts_by_key_descending_stably():
    codes = np.array([1, 0, 1, 0, 1], dtype=np.uint8)
    key = np.array([0.5, 0.1, 0.9, 0.1, 0.5])
    assert order_within_groups(codes, key).tolist() == [1, 3, 2, 0, 4]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(-5, 5)), min_size=1, max_size=40), st.integers(1, 3))
def test_pad_unpad_sort_unsort_round_trip(ids, width):
    groups = np.array(ids)
    X = np.random.default_rng(0).normal(size=(len(ids), width))
    qg = QueryGroups(groups)
    padded, mask = qg.pad(X)
    assert mask.sum() == len(ids)
    assert (mask.sum(axis=1) == qg.sizes).all()
    np.testing.assert_array_equal(qg.unpad(padded), X)
    np.testing.assert_array_equal(qg.unsort(qg.sort(X)), X)
    sorted_groups = groups[qg.order]
    assert (np.diff(qg.codes[qg.order].astype(int)) >= 0).all()
    assert np.array_equal(np.unique(sorted_groups), qg.ids)
    assert qg.sizes.sum() == len(ids)


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        ([1, 2], "groups has 2 entries but X has 3 rows"),
        ([1.0, np.nan, 2.0], "NaN or infinite query ids"),
        ([1.5, 2.0, 2.0], "non-integral floats"),
        ([1, None, 2], "None or NaN"),
        ([True, False, True], "not booleans"),
        ([1, "a", 2], "only integers or only strings"),
        ([[1, 2], [3, 4], [5, 6]], "must be 1-D"),
        (None, "groups is None"),
    ],
)
def test_bad_groups(groups, match):
    with pytest.raises(ValueError, match=match):
        # Object arrays keep None and mixed types as they come from pandas.
        as_object = groups is not None and any(g is None or isinstance(g, str) for g in groups)
        check_groups(np.array(groups, dtype=object) if as_object else groups, 3)


def test_groups_accepts_common_dtypes():
    pd = pytest.importorskip("pandas")
    assert check_groups(pd.Series([3, 1, 3]), 3).tolist() == [3, 1, 3]
    assert check_groups(np.array([1.0, 2.0, 1.0]), 3).dtype.kind == "i"
    assert check_groups(np.array(["a", "b", "a"], dtype=object), 3).dtype.kind == "U"
    assert check_groups(np.array([[4], [5], [4]]), 3).tolist() == [4, 5, 4]


def test_empty_groups_rejected():
    with pytest.raises(ValueError, match="groups is empty"):
        QueryGroups(np.array([], dtype=int))


def test_check_query_weights_one_weight_per_query_in_query_order():
    from sklearn_ltr._groups import check_query_weights

    groups = QueryGroups(["b", "a", "b", "c", "a"])  # queries in id order: a, b, c
    weights = check_query_weights([2.0, 0.5, 2.0, 0.0, 0.5], groups)
    assert weights.dtype == np.float64 and weights.tolist() == [0.5, 2.0, 0.0]


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ([1.0, 2.0, 3.0, 1.0, 2.0], r"same for every row of a query.*query 'b' has weights from 1 to 3"),
        ([1.0, 1.0, 1.0], r"one weight per row of X \(5\)"),
        ([[1.0]] * 5, r"1-D"),
        ([1.0, np.nan, 1.0, 1.0, np.nan], "finite, non-negative"),
        ([1.0, -1.0, 1.0, 1.0, -1.0], "finite, non-negative"),
        (["a"] * 5, "finite, non-negative"),
        ([0.0] * 5, "weight of zero"),
    ],
)
def test_check_query_weights_errors_name_sample_weight(weights, match):
    from sklearn_ltr._groups import check_query_weights

    with pytest.raises(ValueError, match=match) as caught:
        check_query_weights(np.array(weights, dtype=object if isinstance(weights[0], str) else None),
                            QueryGroups(["b", "a", "b", "c", "a"]))
    assert "sample_weight" in str(caught.value)


def test_sort_passes_none_through_and_pad_gives_a_boolean_mask():
    groups = QueryGroups([2, 1, 2])
    X = np.array([[0.0], [1.0], [2.0]])
    X_sorted, nothing = groups.sort(X, None)
    assert nothing is None and X_sorted[:, 0].tolist() == [1.0, 0.0, 2.0]
    padded, mask = groups.pad(X[:, 0], fill_value=-1)
    assert mask.dtype == bool and mask.tolist() == [[True, False], [True, True]]
    assert padded.tolist() == [[1.0, -1.0], [0.0, 2.0]]


def test_length_errors_name_both_lengths():
    groups = QueryGroups([2, 1, 2])
    with pytest.raises(ValueError, match=r"expected 3 values in query order, got 2"):
        groups.unsort(np.zeros(2))
    with pytest.raises(ValueError, match=r"values has 4 rows but groups has 3"):
        groups.pad(np.zeros(4))


def test_order_within_groups_keeps_input_order_among_ties():
    # Large enough that numpy's quicksort (introsort) is not stable by accident.
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 5, 5000)
    key = rng.integers(0, 3, 5000).astype(float)
    order = order_within_groups(codes, key)
    expected = np.lexsort((np.arange(5000), -key, codes))  # by query, key descending, then input order
    np.testing.assert_array_equal(order, expected)


def test_check_query_weights_accepts_pandas_and_weights_below_one():
    pd = pytest.importorskip("pandas")
    from sklearn_ltr._groups import check_query_weights

    groups = QueryGroups([1, 1, 2])
    assert check_query_weights(pd.Series([0.5, 0.5, 0.25]), groups).tolist() == [0.5, 0.25]
