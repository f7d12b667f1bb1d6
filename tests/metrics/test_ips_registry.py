"""The counterfactual metrics in the registry: their spellings, their per-row input, and compare_rankings on a log."""

import numpy as np
import pytest

from sklearn_ltr.datasets import observation_propensity, simulate_clicks
from sklearn_ltr.metrics import (
    METRICS,
    Metric,
    compare_rankings,
    get_metric,
    ips_dcg_per_query,
    ips_ndcg_per_query,
    ips_ndcg_score,
    paired_significance,
    parse_metric,
)
from sklearn_ltr.model_selection import evaluate_letor_folds
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError


@pytest.fixture(scope="module")
def log():
    """A simulated click log of 80 queries (rows shuffled) and the scores of three rankers."""
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(80) * 5 + 2, rng.integers(3, 12, size=80))
    y = rng.choice(5, size=groups.size, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    order = rng.permutation(groups.size)
    y, groups = y[order], groups[order]
    positions, clicks = simulate_clicks(y, groups, w=0.3, y_max=4, random_state=1)
    propensity = observation_propensity(positions)
    noise = rng.normal(size=(3, y.size))
    scores = {"base": y + 2.0 * noise[0], "good": y + 0.5 * noise[1], "bad": -y + noise[2]}
    return clicks, groups, propensity, scores


@pytest.mark.parametrize(("spelling", "name", "k"), [("ips_ndcg@10", "ips_ndcg", 10), ("ips_dcg", "ips_dcg", None),
                                                     ("ips_dcg@5", "ips_dcg", 5)])
def test_spellings(spelling, name, k):
    metric, cutoff = parse_metric(spelling)
    assert (metric, cutoff) == (METRICS[name], k)
    assert metric.inputs == ("propensity",)
    assert (METRICS["ips_dcg"].label, METRICS["ips_ndcg"].label) == ("IPS-DCG", "IPS-NDCG")
    assert (METRICS["ips_dcg"].empty_value, METRICS["ips_ndcg"].empty_value) == (0.0, 1.0)
    assert list(METRICS["ips_ndcg"].options) == ["k", "clip", "empty_value", "ties"]


def test_a_reader_that_cannot_supply_propensities_refuses_them(tmp_path):
    assert get_metric("ips_ndcg", inputs=("propensity",)) is METRICS["ips_ndcg"]
    assert get_metric("ndcg", inputs=()) is METRICS["ndcg"]
    with pytest.raises(InvalidParameterError, match=r"the 'ips_ndcg' metric also needs propensity \(one value per "
                                                    r"row\), which get_metric does not take\. A metric must be one "
                                                    r"of ndcg\[@k\], .*swapped_pairs \(no per-query values\)\."):
        get_metric("ips_ndcg", inputs=())
    with pytest.raises(InvalidParameterError, match="'ips_dcg' metric also needs propensity"):
        parse_metric("ips_dcg@10", inputs=())
    with pytest.raises(InvalidParameterError, match="which evaluate_letor_folds does not take"):
        evaluate_letor_folds(None, tmp_path, metric="ips_ndcg")


@pytest.mark.parametrize("name", ["ips_dcg", "ips_ndcg"])
@pytest.mark.parametrize("k", [None, 3, 10])
def test_per_query_values_average_to_the_score(log, name, k):
    clicks, groups, propensity, scores = log
    metric = METRICS[name]
    values = metric.per_query(clicks, scores["good"], groups, propensity=propensity, k=k)
    assert values.shape == (80,)
    assert values.mean() == pytest.approx(metric.score(clicks, scores["good"], groups, propensity=propensity, k=k),
                                          rel=1e-14)
    function = {"ips_dcg": ips_dcg_per_query, "ips_ndcg": ips_ndcg_per_query}[name]
    assert np.array_equal(values, function(clicks, scores["good"], groups, propensity, k=k)[1])


def test_compare_rankings_on_a_click_log(log):
    clicks, groups, propensity, scores = log
    others = {"good": scores["good"], "bad": scores["bad"]}
    table = compare_rankings(clicks, scores["base"], others, groups, metric="ips_ndcg", k=10, propensity=propensity,
                             empty_value=None, random_state=0)
    assert table.metric == "ips_ndcg@10"
    # Queries without a click are undefined with empty_value=None, and left out of the pairs.
    with_clicks = np.bincount(np.unique(groups, return_inverse=True)[1], weights=clicks) > 0
    assert table.n_queries == with_clicks.sum() < 80
    assert table.baseline_mean == ips_ndcg_score(clicks, scores["base"], groups, propensity, k=10, empty_value=None)
    # The paired tests are those of paired_significance on the per-query values.
    values = {name: ips_ndcg_per_query(clicks, s, groups, propensity, k=10)[1][with_clicks]
              for name, s in scores.items()}
    direct = paired_significance(values["base"], {"good": values["good"], "bad": values["bad"]}, random_state=0)
    for name in others:
        assert table[name].mean_difference == pytest.approx(direct[name].mean_difference, rel=1e-14)
        assert table[name].t_pvalue == pytest.approx(direct[name].t_pvalue, rel=1e-12)
        assert table[name].randomization_pvalue == direct[name].randomization_pvalue
    assert table["good"].mean_difference > 0 > table["bad"].mean_difference
    assert table["bad"].randomization_pvalue < 0.01
    # The unbiased DCG estimate compares the same rankers, every query counted.
    dcg = compare_rankings(clicks, scores["base"], others, groups, metric="ips_dcg", k=5, propensity=propensity,
                           clip=0.1, random_state=0)
    assert dcg.metric == "ips_dcg@5" and dcg.n_queries == 80
    expected = ips_dcg_per_query(clicks, scores["base"], groups, propensity, k=5, clip=0.1)[1].mean()
    assert dcg.baseline_mean == pytest.approx(expected, rel=1e-14)


def test_compare_rankings_needs_the_propensities_of_an_ips_metric(log):
    clicks, groups, propensity, scores = log
    with pytest.raises(TypeError, match=r"compare_rankings: the 'ips_ndcg' metric needs propensity=\.\.\., one value "
                                        r"per row"):
        compare_rankings(clicks, scores["base"], scores["good"], groups, metric="ips_ndcg")
    with pytest.raises(TypeError, match="the 'ndcg' metric got an unexpected keyword argument 'propensity'"):
        compare_rankings(clicks, scores["base"], scores["good"], groups, metric="ndcg", propensity=propensity)
    with pytest.raises(ValueError, match="propensity has 3 values but clicks has"):
        compare_rankings(clicks, scores["base"], scores["good"], groups, metric="ips_dcg", propensity=[1.0] * 3)
    with pytest.raises(ValueError, match="clicks must hold only 0"):
        compare_rankings(clicks * 2, scores["base"], scores["good"], groups, metric="ips_dcg", propensity=propensity)


def test_an_input_must_be_a_new_keyword():
    def values(y_true, y_score, groups, *, k=None):
        return np.zeros(1)

    with pytest.raises(ValueError, match="input 'k' must be a new keyword name"):
        Metric("bad", None, values, METRICS["ndcg"].options, inputs=("k",))
    with pytest.raises(ValueError, match="input 'groups' must be a new keyword name"):
        Metric("bad", None, values, inputs=("groups",))
    assert Metric("fine", None, values, inputs=["weight"]).inputs == ("weight",)
