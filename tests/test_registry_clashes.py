"""Every registry (metrics, losses, rankers) refuses a name that clashes with one it holds.

A clash is any spelling its readers would resolve to the existing entry: a name or an alias
equal to an existing name or alias (for losses, in the spellings ``get_loss`` normalises:
case, hyphens, spaces); for rankers, also a public name another ranker exports, or a
``--model`` name. A refused registration leaves the registry as it was.
"""

import numpy as np
import pytest

import sklearn_ltr
from sklearn_ltr.losses import LOSSES, get_loss, pairwise_tensors, ranknet, register_loss, unregister_loss
from sklearn_ltr.losses._registry import ALIASES as LOSS_ALIASES
from sklearn_ltr.metrics import METRICS, Metric, get_metric, register_metric, unregister_metric
from sklearn_ltr.rankers import RANKERS, RankerEntry, register_ranker, unregister_ranker


def _values(y_true, y_score, groups):
    return np.zeros(len(np.unique(groups)))


@pytest.mark.parametrize(("name", "aliases", "taken"), [
    ("ndcg", (), "ndcg"),                 # a built-in name
    ("p", (), "p"),                       # a built-in alias, as a name
    ("new_metric", ("map",), "map"),      # a built-in name, as an alias
    ("new_metric", ("prec",), "prec"),    # a built-in alias, as an alias
    ("new_metric", ("x", "ap"), "ap"),    # the clash is not the first alias
])
def test_register_metric_refuses_a_clash(name, aliases, taken):
    before = (dict(METRICS), get_metric("ap"), get_metric("prec"), get_metric("p"))
    with pytest.raises(ValueError, match=rf"^metric name '{taken}' is already registered; unregister_metric"):
        register_metric(Metric(name, None, _values, aliases=aliases))
    assert (dict(METRICS), get_metric("ap"), get_metric("prec"), get_metric("p")) == before
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("x")


def test_a_registered_metric_s_names_are_taken_until_it_is_unregistered():
    register_metric(Metric("toy_metric", None, _values, aliases=("tm",)))
    try:
        for name, aliases in (("tm", ()), ("other", ("toy_metric",)), ("other", ("tm",))):
            with pytest.raises(ValueError, match="is already registered"):
                register_metric(Metric(name, None, _values, aliases=aliases))
        with pytest.raises(ValueError, match="unknown metric 'other'"):
            get_metric("other")
    finally:
        unregister_metric("tm")
    register_metric(Metric("other", None, _values, aliases=("tm",)))  # free again
    unregister_metric("other")


@pytest.mark.parametrize(("name", "aliases", "taken"), [
    ("ranknet", (), "ranknet"),                       # a built-in name
    ("RankNet", (), "ranknet"),                       # ... in capitals
    ("Approx-NDCG", (), "approx_ndcg"),               # ... with a hyphen
    ("listnet", (), "listnet"),                       # a built-in alias, as a name
    ("new_loss", ("softmax",), "softmax"),            # a built-in name, as an alias
    ("new_loss", ("x", "Sigmoid Cross-Entropy"), "sigmoid_cross_entropy"),  # a built-in alias, spelt otherwise
])
def test_register_loss_refuses_a_clash(name, aliases, taken):
    before = (dict(LOSSES), dict(LOSS_ALIASES), pairwise_tensors("ranknet"))
    with pytest.raises(ValueError, match=rf"\['{taken}'\] already name a loss; unregister_loss first"):
        register_loss(name, ranknet, pairwise_tensors=1, aliases=aliases)
    assert (dict(LOSSES), dict(LOSS_ALIASES), pairwise_tensors("ranknet")) == before
    assert taken in (*LOSSES, *LOSS_ALIASES)
    with pytest.raises(ValueError, match="Unknown loss 'new_loss'"):
        get_loss("new_loss")


def test_the_loss_error_names_every_clash():
    with pytest.raises(ValueError, match=r"\['listnet', 'ranknet'\] already name a loss"):
        register_loss("RankNet", ranknet, pairwise_tensors=1, aliases=("ListNet", "fresh"))


def test_a_registered_loss_s_names_are_taken_until_it_is_unregistered():
    register_loss("toy_loss", ranknet, pairwise_tensors=1, aliases=("tl",))
    try:
        for name, aliases in (("TL", ()), ("other", ("Toy-Loss",)), ("other", ("tl",))):
            with pytest.raises(ValueError, match="already name a loss"):
                register_loss(name, ranknet, pairwise_tensors=1, aliases=aliases)
        assert "other" not in LOSSES
    finally:
        unregister_loss("toy_loss")
    assert "tl" not in LOSS_ALIASES
    register_loss("other", ranknet, pairwise_tensors=1, aliases=("tl",))  # free again
    unregister_loss("other")


def _entry(name="ToyClash", **kwargs):
    return RankerEntry(name, "sklearn_ltr.rankers._lambdamart", **kwargs)


@pytest.mark.parametrize(("entry", "match"), [
    (_entry("RankNetRanker"), r"\['RankNetRanker'\] already exported"),                # a ranker's name
    (_entry("MissingPositionsWarning"), r"\['MissingPositionsWarning'\] already"),     # another's export
    (_entry(also_exports=("DASALCRanker",)), r"\['DASALCRanker'\] already exported"),  # an export = a ranker
    (_entry(also_exports=("MissingPositionsWarning",)), r"\['MissingPositionsWarning'\]"),
    (_entry(cli_name="ranknet"), r"--model 'ranknet' is taken"),                        # a --model name
], ids=["a-ranker-s-name", "another-s-export", "a-ranker-as-export", "an-export-as-export", "a-model-name"])
def test_register_ranker_refuses_a_clash(entry, match):
    before = (dict(RANKERS), sorted(dir(sklearn_ltr)))
    with pytest.raises(ValueError, match=rf"^register_ranker: {match}"):
        register_ranker(entry)
    assert (dict(RANKERS), sorted(dir(sklearn_ltr))) == before


def test_rankers_without_a_model_name_do_not_clash():
    """``cli_name=None`` (left out of the command line) is no name: RankingEnsemble has it too."""
    assert RANKERS["RankingEnsemble"].cli_name is None
    register_ranker(_entry(cli_name=None))
    try:
        assert "ToyClash" in RANKERS
        with pytest.raises(ValueError, match=r"\['ToyClash'\] already exported"):
            register_ranker(_entry(cli_name="toy_clash"))
    finally:
        unregister_ranker("ToyClash")
    assert "ToyClash" not in RANKERS


def test_every_export_is_named_with_its_module_and_loads():
    from sklearn_ltr.rankers._registry import exported_names, load

    names = exported_names()
    assert names["MissingPositionsWarning"] == names["TwoTowerDebiasedRanker"] == "sklearn_ltr.rankers._two_tower"
    for name, module in names.items():
        assert load(name).__module__ == module
    with pytest.raises(AttributeError, match=r"^Nope$"):
        load("Nope")
