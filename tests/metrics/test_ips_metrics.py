"""Counterfactual metrics from click logs: IPS-DCG and self-normalised IPS-NDCG."""

import numpy as np
import pytest

from sklearn_ltr.clicks import PROPENSITY_CLIP
from sklearn_ltr.metrics import (
    get_metric,
    ips_dcg_per_query,
    ips_dcg_score,
    ips_ndcg_per_query,
    ips_ndcg_score,
    ndcg_per_query,
)

LOG2_3 = np.log2(3.0)


def _random_log(seed, n_queries=12, max_len=9):
    """An interleaved click log: clicks, scores (with ties), groups and propensities 1 / position."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_len + 1, n_queries)
    groups = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    positions = np.concatenate([rng.permutation(size) + 1 for size in sizes])
    clicks = (rng.random(groups.size) < 0.35).astype(int)
    y_score = rng.integers(0, 6, groups.size) / 2.0
    order = rng.permutation(groups.size)
    return clicks[order], y_score[order], groups[order], 1.0 / positions[order]


def _one_query_at_a_time(clicks, y_score, groups, propensity, k=None, *, clip=PROPENSITY_CLIP, ties="average"):
    """IPS-DCG and IPS-NDCG by a plain loop over queries and ranks: the reference for the vectorised code."""
    ids = np.unique(groups)
    dcg, ndcg = [], []
    for query in ids:
        rows = groups == query
        c, s = np.asarray(clicks)[rows], np.asarray(y_score)[rows]
        w = 1.0 / np.maximum(propensity[rows], clip)
        n = c.size
        cut = n if k is None else min(k, n)
        discount = np.array([1.0 / np.log2(r + 2) if r < cut else 0.0 for r in range(n)])
        order = np.argsort(-s, kind="stable")
        row_discount = np.empty(n)
        for position, i in enumerate(order):
            row_discount[i] = discount[position]
        if ties == "average":
            for value in np.unique(s):
                tied = s == value
                row_discount[tied] = row_discount[tied].mean()
        value = float(np.sum(c * w * row_discount))
        ideal = float(np.sum(np.sort(c * w)[::-1] * discount))
        dcg.append(value)
        ndcg.append(value / ideal if ideal > 0 else 1.0)
    return ids, np.array(dcg), np.array(ndcg)


# ------------------------------------------------------------------------------ hand-computed values


def test_dcg_by_hand_weights_are_inverse_propensities():
    # Query 1: clicked rows weighted 2 (p=0.5) and 4 (p=0.25), ranked 1st and 3rd by y_score.
    clicks = [1, 0, 1, 0]
    y_score = [0.9, 0.5, 0.1, 0.2]
    groups = [1, 1, 1, 1]
    propensity = [0.5, 1.0, 0.25, 1.0]
    ids, values = ips_dcg_per_query(clicks, y_score, groups, propensity)
    assert ids.tolist() == [1]
    # y_score order: row 0 (rank 1), row 1 (rank 2), row 3 (rank 3), row 2 (rank 4).
    assert values[0] == pytest.approx(2.0 / 1.0 + 4.0 / np.log2(5.0), rel=1e-12)
    assert ips_dcg_score(clicks, y_score, groups, propensity, k=3) == pytest.approx(2.0, rel=1e-12)
    # Ideal: weights 4 then 2.
    expected = (2.0 + 4.0 / np.log2(5.0)) / (4.0 + 2.0 / LOG2_3)
    assert ips_ndcg_score(clicks, y_score, groups, propensity) == pytest.approx(expected, rel=1e-12)
    expected_at_3 = 2.0 / (4.0 + 2.0 / LOG2_3)
    assert ips_ndcg_per_query(clicks, y_score, groups, propensity, k=3)[1][0] == pytest.approx(expected_at_3)


def test_weights_are_clipped_at_the_default_and_at_a_given_clip():
    # One click at propensity 0.01, ranked first: its weight is 1 / 0.05 = 20 by default, 100 with clip=0.01.
    args = ([1, 0], [0.9, 0.1], [0, 0], [0.01, 1.0])
    assert PROPENSITY_CLIP == 0.05
    assert ips_dcg_score(*args) == pytest.approx(20.0, rel=1e-12)
    assert ips_dcg_score(*args, clip=0.01) == pytest.approx(100.0, rel=1e-12)
    assert ips_dcg_score(*args, clip=1.0) == pytest.approx(1.0, rel=1e-12)  # no debiasing
    # Clipping changes the self-normalised estimate's ideal too: [click p=0.01 second, click p=0.5 first].
    two = ([1, 1], [0.1, 0.9], [0, 0], [0.01, 0.5])
    assert ips_ndcg_score(*two) == pytest.approx((2 + 20 / LOG2_3) / (20 + 2 / LOG2_3), rel=1e-12)
    assert ips_ndcg_score(*two, clip=0.01) == pytest.approx((2 + 100 / LOG2_3) / (100 + 2 / LOG2_3), rel=1e-12)


def test_ties_average_or_stable():
    # Two rows tied at the top, the clicked one (weight 2) second in row order.
    args = ([0, 1, 0], [0.5, 0.5, 0.1], ["q"] * 3, [1.0, 0.5, 1.0])
    assert ips_dcg_score(*args) == pytest.approx(2.0 * (1.0 + 1.0 / LOG2_3) / 2.0, rel=1e-12)
    assert ips_dcg_score(*args, ties="stable") == pytest.approx(2.0 / LOG2_3, rel=1e-12)
    assert ips_ndcg_score(*args, ties="stable") == pytest.approx(1.0 / LOG2_3, rel=1e-12)


def test_queries_without_a_click():
    args = ([0, 0, 1, 0], [0.3, 0.2, 0.9, 0.1], [1, 1, 2, 2], [1.0, 0.5, 0.5, 1.0])
    ids, dcg = ips_dcg_per_query(*args)
    assert ids.tolist() == [1, 2] and dcg.tolist() == [0.0, 2.0]
    assert ips_ndcg_per_query(*args)[1].tolist() == [1.0, 1.0]
    assert ips_ndcg_per_query(*args, empty_value=0.0)[1].tolist() == [0.0, 1.0]
    values = ips_ndcg_per_query(*args, empty_value=None)[1]
    assert np.isnan(values[0]) and values[1] == 1.0
    assert ips_ndcg_score(*args, empty_value=0.0) == 0.5
    assert ips_ndcg_score(*args, empty_value=None) == 1.0
    with pytest.raises(ValueError, match="empty_value=None drops them all"):
        ips_ndcg_score([0, 0], [0.1, 0.2], [1, 1], [1.0, 1.0], empty_value=None)


# ------------------------------------------------------------------------- equality with a reference


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("ties", ["average", "stable"])
def test_with_propensities_one_equals_dcg_and_ndcg_of_the_clicks(k, ties):
    clicks, y_score, groups, _ = _random_log(0)
    ones = np.ones(clicks.size)
    dcg = get_metric("dcg").per_query
    for gain in ("linear", "exponential"):  # the same on binary labels: 2**1 - 1 = 1
        expected = dcg(clicks, y_score, groups, k=k, gain=gain, ties=ties)
        assert np.array_equal(ips_dcg_per_query(clicks, y_score, groups, ones, k=k, ties=ties)[1], expected)
        ids, expected_ndcg = ndcg_per_query(clicks, y_score, groups, k=k, gain=gain, ties=ties)
        got_ids, got = ips_ndcg_per_query(clicks, y_score, groups, ones, k=k, ties=ties)
        assert np.array_equal(got_ids, ids)
        np.testing.assert_allclose(got, expected_ndcg, rtol=1e-14, atol=0)
    # A clip of 1 makes every weight 1, whatever the propensities.
    propensity = np.linspace(0.1, 1.0, clicks.size)
    assert np.array_equal(
        ips_dcg_per_query(clicks, y_score, groups, propensity, k=k, ties=ties, clip=1.0)[1],
        dcg(clicks, y_score, groups, k=k, gain="linear", ties=ties),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("k", [None, 2, 5])
@pytest.mark.parametrize("ties", ["average", "stable"])
def test_equals_a_loop_over_queries_on_interleaved_logs(seed, k, ties):
    # Rows of a query are scattered over the log: every query must use its own clicks and weights.
    clicks, y_score, groups, propensity = _random_log(seed)
    propensity = np.where(np.arange(clicks.size) % 5 == 0, 0.01, propensity)  # some clipped weights
    ids, dcg, ndcg = _one_query_at_a_time(clicks, y_score, groups, propensity, k, ties=ties)
    got_ids, got_dcg = ips_dcg_per_query(clicks, y_score, groups, propensity, k=k, ties=ties)
    assert np.array_equal(got_ids, ids)
    np.testing.assert_allclose(got_dcg, dcg, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ips_ndcg_per_query(clicks, y_score, groups, propensity, k=k, ties=ties)[1], ndcg,
                               rtol=1e-12, atol=1e-12)
    assert ips_dcg_score(clicks, y_score, groups, propensity, k=k, ties=ties) == pytest.approx(dcg.mean(), rel=1e-12)
    assert ips_ndcg_score(clicks, y_score, groups, propensity, k=k, ties=ties) == pytest.approx(ndcg.mean(), rel=1e-12)


def test_a_query_sees_only_its_own_clicks():
    # Query 5's rows interleave with query 9's; moving a click from one query to the other moves its
    # contribution with it and leaves nothing behind.
    groups = np.array([5, 9, 5, 9, 5, 9])
    y_score = np.array([0.9, 0.8, 0.5, 0.4, 0.1, 0.2])
    propensity = np.array([1.0, 1.0, 0.5, 0.5, 0.25, 0.25])
    only_5 = np.array([0, 0, 1, 0, 0, 0])  # query 5's second row: weight 2, rank 2
    only_9 = np.array([0, 0, 0, 1, 0, 0])  # query 9's second row: weight 2, rank 2
    assert ips_dcg_per_query(only_5, y_score, groups, propensity)[1] == pytest.approx([2 / LOG2_3, 0.0])
    assert ips_dcg_per_query(only_9, y_score, groups, propensity)[1] == pytest.approx([0.0, 2 / LOG2_3])
    # Its ideal ranks the click first: NDCG 1 / log2(3); query 9, without a click, is empty_value.
    assert ips_ndcg_per_query(only_5, y_score, groups, propensity)[1] == pytest.approx([1 / LOG2_3, 1.0])
    assert ips_ndcg_per_query(only_9, y_score, groups, propensity, empty_value=0.0)[1] == pytest.approx(
        [0.0, 1 / LOG2_3])


def test_in_a_query_with_one_click_the_weight_cancels_in_ndcg_only():
    # Documented: IPS-NDCG of a one-click query is the click NDCG whatever the propensity; IPS-DCG scales with it.
    clicks, y_score, groups = [0, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], [1, 1, 1, 1]
    ndcg = [ips_ndcg_score(clicks, y_score, groups, [1.0, 1.0, p, 1.0]) for p in (1.0, 0.5, 0.1)]
    assert ndcg == [pytest.approx(1 / np.log2(4.0), rel=1e-14)] * 3
    dcg = [ips_dcg_score(clicks, y_score, groups, [1.0, 1.0, p, 1.0]) for p in (1.0, 0.5, 0.1)]
    assert dcg == pytest.approx([0.5, 1.0, 5.0], rel=1e-14)


# ---------------------------------------------------------------------------------------- invariances


def test_row_order_and_query_labels_do_not_matter():
    clicks, y_score, groups, propensity = _random_log(4)
    ids, dcg = ips_dcg_per_query(clicks, y_score, groups, propensity, k=4)
    ndcg = ips_ndcg_per_query(clicks, y_score, groups, propensity, k=4)[1]
    order = np.random.default_rng(0).permutation(clicks.size)
    shuffled = (clicks[order], y_score[order], groups[order], propensity[order])
    # Equal up to the order of a sum's terms (ties of the scores change it).
    np.testing.assert_allclose(ips_dcg_per_query(*shuffled, k=4)[1], dcg, rtol=1e-14)
    np.testing.assert_allclose(ips_ndcg_per_query(*shuffled, k=4)[1], ndcg, rtol=1e-14)
    # Relabel the queries in reverse order, as strings: the values follow their queries.
    names = {query: f"q{100 - i:03d}" for i, query in enumerate(ids)}
    relabelled = np.array([names[query] for query in groups])
    new_ids, new_dcg = ips_dcg_per_query(clicks, y_score, relabelled, propensity, k=4)
    assert new_ids.tolist() == sorted(names.values())
    assert np.array_equal(new_dcg, dcg[::-1])
    # A monotone transform of the scores ranks alike.
    assert np.array_equal(ips_dcg_per_query(clicks, 3 * y_score - 1, groups, propensity, k=4)[1], dcg)


# ------------------------------------------------------------------------------ unbiasedness by simulation


def test_ips_dcg_is_unbiased_and_the_naive_estimate_is_not():
    # Position-based model: row i shown at position pos_i is examined with probability 1 / pos_i and,
    # once examined, clicked with probability rho_i. Averaged over simulated logs, the IPS-DCG of a new
    # ranking approaches the DCG of that ranking with the gains rho (linear gain).
    rng = np.random.default_rng(11)
    n_queries, size, n_logs = 4, 8, 20000
    groups = np.repeat(np.arange(n_queries), size)
    positions = np.concatenate([rng.permutation(size) + 1 for _ in range(n_queries)])
    rho = rng.uniform(0.0, 0.9, groups.size)
    new_scores = rho + rng.normal(0.0, 0.2, groups.size)  # the ranking to evaluate, not the logged one
    propensity = 1.0 / positions  # >= 1/8, above the clip: no clipping bias
    truth = get_metric("dcg").per_query(rho, new_scores, groups, k=5, gain="linear")

    # All logs at once: log j's copy of query q is query j * n_queries + q.
    examined = rng.random((n_logs, groups.size)) < propensity
    clicks = (examined & (rng.random((n_logs, groups.size)) < rho)).astype(int).ravel()
    all_groups = (np.arange(n_logs)[:, None] * n_queries + groups).ravel()
    tile = (np.tile(new_scores, n_logs), all_groups, np.tile(propensity, n_logs))
    estimates = ips_dcg_per_query(clicks, tile[0], tile[1], tile[2], k=5)[1].reshape(n_logs, n_queries)
    mean, stderr = estimates.mean(axis=0), estimates.std(axis=0) / np.sqrt(n_logs)
    assert np.all(np.abs(mean - truth) < 4 * stderr)
    assert np.abs(mean - truth).max() < 0.05 * truth.max()
    # Without the weights (clip=1: every click counts 1), the same clicks underestimate badly.
    naive = ips_dcg_per_query(clicks, tile[0], tile[1], tile[2], k=5, clip=1.0)[1].reshape(n_logs, n_queries)
    assert np.all(truth - naive.mean(axis=0) > 10 * stderr)


# ---------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clicks": [0, 2, 1]}, "clicks must hold only 0 .* and 1 .*got values such as 2"),
        ({"clicks": [0, -1, 1]}, "clicks must hold only 0"),
        ({"clicks": [0.0, 0.5, 1.0]}, "got values such as 0.5"),
        ({"clicks": [[0, 1, 1]]}, "clicks must be a 1-D array"),
        ({"clicks": ["a", "b", "c"]}, "clicks must be a 1-D array of 0/1"),
        ({"y_score": [0.1, np.nan, 0.3]}, "y_score contains NaN"),
        ({"y_score": [0.1, 0.2]}, "y_score has 2 entries but clicks has 3"),
        ({"groups": [1, 1]}, "groups has 2 entries but clicks has 3"),
        ({"propensity": [1.0, 0.5]}, "propensity has 2 values but clicks has 3"),
        ({"propensity": [1.0, 2.0, 0.5]}, "look like inverse-propensity weights"),
        ({"propensity": [1.0, 0.0, 0.5]}, r"propensity must hold examination probabilities in \(0, 1\]"),
        ({"propensity": [1.0, np.nan, 0.5]}, "propensity contains NaN"),
    ],
    ids=["clicks-2", "clicks-negative", "clicks-fraction", "clicks-2d", "clicks-strings", "y_score-nan",
         "y_score-length", "groups-length", "propensity-length", "propensity-weights", "propensity-zero",
         "propensity-nan"],
)
@pytest.mark.parametrize("metric", [ips_dcg_score, ips_ndcg_score, ips_dcg_per_query, ips_ndcg_per_query])
def test_bad_input_names_the_argument(metric, change, message):
    args = {"clicks": [0, 1, 1], "y_score": [0.1, 0.2, 0.3], "groups": [1, 1, 2], "propensity": [1.0, 0.5, 0.25]}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        metric(**args)


@pytest.mark.parametrize(("option", "value"), [("k", 0), ("clip", 0.0), ("clip", 1.5), ("ties", "random")])
def test_bad_options_name_the_parameter(option, value):
    with pytest.raises(ValueError, match=f"'{option}' parameter of ips_ndcg_score"):
        ips_ndcg_score([0, 1], [0.1, 0.2], [1, 1], [1.0, 0.5], **{option: value})


# ------------------------------------------------------------------------------------------ trust bias


def test_affine_propensity_reaches_the_registry_and_the_scorer():
    import sklearn
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import GroupKFold, cross_val_score

    from sklearn_ltr.metrics import make_ranking_scorer

    clicks, y_score, groups, propensity = _random_log(3)
    affine = np.column_stack([0.8 * propensity, 0.2 * propensity])
    expected = ips_dcg_per_query(clicks, y_score, groups, affine, k=3)[1]
    per_query = get_metric("ips_dcg").per_query(clicks, y_score, groups, k=3, propensity=affine)
    np.testing.assert_allclose(per_query, expected)
    # Cross-validation splits the (n, 2) propensities by row, like a 1-D one.
    rng = np.random.default_rng(0)
    X = np.column_stack([y_score, rng.normal(size=clicks.size)])
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(LinearRegression(), X, clicks, cv=GroupKFold(2),
                                 scoring=make_ranking_scorer("ips_dcg", k=3),
                                 params={"groups": groups, "propensity": affine})
    folds = list(GroupKFold(2).split(X, clicks, groups))
    by_hand = [ips_dcg_score(clicks[test], LinearRegression().fit(X[train], clicks[train]).predict(X[test]),
                             groups[test], affine[test], k=3) for train, test in folds]
    np.testing.assert_allclose(scores, by_hand)


@pytest.mark.parametrize(("metric", "rows"), [(ips_dcg_score, 3), (ips_ndcg_score, None)])
def test_bad_affine_propensity_names_the_argument(metric, rows):
    clicks, y_score, groups, propensity = _random_log(4)
    affine = np.column_stack([propensity, np.full(clicks.size, 0.5)])  # alpha + beta > 1 at position 1
    with pytest.raises(ValueError, match=r"propensity holds \(alpha, beta\) with alpha \+ beta > 1"):
        metric(clicks, y_score, groups, affine)
    if rows is not None:
        with pytest.raises(ValueError, match="propensity has 3 values but clicks has"):
            metric(clicks, y_score, groups, affine[:rows] * 0.5)


def test_affine_clip_bounds_the_weight_of_a_click():
    # alpha 0.01 is raised to the clip: the click counts (1 - 0.001) / 0.05, not / 0.01.
    value = ips_dcg_score([1], [0.0], [1], [[0.01, 0.001]])
    assert value == pytest.approx(0.999 / PROPENSITY_CLIP)
    assert ips_dcg_score([1], [0.0], [1], [[0.01, 0.001]], clip=0.01) == pytest.approx(0.999 / 0.01)
