"""sklearn_ltr.metrics' one registry of metrics: its records, name parsing, and every reader of it."""

import inspect
import json
import re

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from sklearn_ltr.cli import main
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._metrics import parse_metrics
from sklearn_ltr.datasets import dump_svmlight_ranking
from sklearn_ltr.metrics import (
    METRICS,
    Metric,
    RankingScorer,
    compare_rankings,
    get_metric,
    make_ranking_scorer,
    mrr_score,
    parse_metric,
    register_metric,
    unregister_metric,
)
from sklearn_ltr.model_selection import evaluate_letor_folds
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

BUILTIN = ["ndcg", "dcg", "map", "precision", "mrr", "err", "swapped_pairs"]


class ColumnRanker(BaseEstimator):
    """Scores ``sign * X[:, 0]``."""

    def __init__(self, sign=1.0):
        self.sign = sign

    def fit(self, X, y, groups=None):
        return self

    def predict(self, X, groups=None):
        return self.sign * np.asarray(X)[:, 0]


@pytest.fixture(scope="module")
def data():
    """60 queries of 1 to 9 documents in shuffled rows, query 0 without a relevant document, and two rankings."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(60) * 3 + 1, rng.integers(1, 10, size=60))
    y = rng.choice(4, size=groups.size, p=[0.5, 0.3, 0.15, 0.05]).astype(float)
    y[groups == 1] = 0
    order = rng.permutation(groups.size)
    y, groups = y[order], groups[order]
    good = y + rng.normal(scale=0.5, size=y.size)
    bad = -y + rng.normal(scale=0.5, size=y.size)
    return y, groups, good, bad


def _options(metric):
    return {"k": 5} if metric.takes_k else {}


# ----------------------------------------------------------------------- the built-in records


def test_builtin_records():
    assert list(METRICS)[: len(BUILTIN)] == BUILTIN
    assert {name: METRICS[name].higher_is_better for name in BUILTIN} == {
        **dict.fromkeys(BUILTIN, True), "swapped_pairs": False}
    assert [name for name in BUILTIN if METRICS[name].requires_k] == ["precision"]
    assert [name for name in BUILTIN if not METRICS[name].takes_k] == ["swapped_pairs"]
    assert [name for name in BUILTIN if METRICS[name].per_query is None] == ["swapped_pairs"]
    with pytest.raises(TypeError):
        METRICS["toy"] = METRICS["ndcg"]  # a read-only view: register_metric adds


@pytest.mark.parametrize("name", BUILTIN)
def test_options_are_the_keyword_parameters_of_the_score_function(name):
    metric = METRICS[name]
    keywords = [p.name for p in inspect.signature(metric.score).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert keywords == list(metric.options)
    if "empty_value" in metric.options:  # the declared convention is the function's default
        assert inspect.signature(metric.score).parameters["empty_value"].default == metric.empty_value


@pytest.mark.parametrize("name", [name for name in BUILTIN if METRICS[name].per_query is not None])
@pytest.mark.parametrize("k", [1, 3, None])
def test_per_query_values_average_to_the_score_exactly(data, name, k):
    y, groups, good, _ = data
    metric = METRICS[name]
    if k is None and metric.requires_k:
        pytest.skip("a cut-off is required")
    values = metric.per_query(y, good, groups, k=k)
    assert values.shape == (60,)
    assert values.mean() == metric.score(y, good, groups, k=k)


@pytest.mark.parametrize("name", BUILTIN)
def test_empty_query_convention(data, name):
    """A query without a relevant document gets ``empty_value``, or leaves the value unchanged when None."""
    y, groups, good, _ = data
    metric = METRICS[name]
    if metric.per_query is not None:
        first = metric.per_query(y, good, groups, **_options(metric))[0]  # query 1 (sorted first) is empty
        assert first == metric.empty_value
    else:
        assert metric.empty_value is None
        kept = groups != 1
        assert metric.score(y, good, groups) == metric.score(y[kept], good[kept], groups[kept])


@pytest.mark.parametrize("name", BUILTIN)
def test_higher_is_better_says_which_ranking_is_better(data, name):
    y, groups, good, bad = data
    metric = METRICS[name]
    a, b = (metric.score(y, scores, groups, **_options(metric)) for scores in (good, bad))
    assert (a > b) if metric.higher_is_better else (a < b)
    # For the scorers greater is always better: they negate a metric for which lower is.
    scorer, X = make_ranking_scorer(name, k=5), good[:, None]
    assert scorer(ColumnRanker(1.0), X, y, groups=groups) > scorer(ColumnRanker(-1.0), X, y, groups=groups)


# ------------------------------------------------------------------------------- name parsing


@pytest.mark.parametrize(("spelling", "name", "k"), [
    ("ndcg@10", "ndcg", 10), ("ndcg", "ndcg", None), ("map@5", "map", 5), ("ap@3", "map", 3), ("mrr", "mrr", None),
    ("p@1", "precision", 1), ("prec@20", "precision", 20), ("precision@7", "precision", 7), ("err@12", "err", 12),
    ("swapped_pairs", "swapped_pairs", None), ("dcg@100", "dcg", 100),
])
def test_parse_metric(spelling, name, k):
    metric, cutoff = parse_metric(spelling)
    assert (metric, cutoff) == (METRICS[name], k)
    assert get_metric(spelling.partition("@")[0]) is metric


@pytest.mark.parametrize(("spelling", "match"), [
    ("auc", "got unknown metric 'auc'"),
    ("NDCG@10", "got unknown metric 'NDCG'"),  # case-sensitive; the CLI lower-cases its input
    ("precision", r"needs a cut-off: precision@k, e\.g\. precision@10"),
    ("p", r"needs a cut-off: p@k"),
    ("ndcg@0", "the cut-off after '@' must be a positive integer"),
    ("ndcg@-1", "must be a positive integer"),
    ("map@", "must be a positive integer"),
    ("mrr@2.5", "must be a positive integer"),
    ("swapped_pairs@10", "the 'swapped_pairs' metric takes no cut-off"),
])
def test_parse_metric_errors(spelling, match):
    with pytest.raises(InvalidParameterError, match=match):
        parse_metric(spelling)


def test_a_cut_off_in_a_bare_name_says_to_pass_k():
    with pytest.raises(InvalidParameterError, match=r"without a cut-off; got 'ndcg@10': pass .*metric='ndcg', k=10"):
        get_metric("ndcg@10")


def _unknown_errors(tmp_path):
    """The message of each reader of the registry for metric 'auc'."""
    y, groups = np.array([1, 0, 1, 0]), np.array([1, 1, 2, 2])
    calls = {
        "get_metric": lambda: get_metric("auc"),
        "parse_metric": lambda: parse_metric("auc@5"),
        "RankingScorer": lambda: RankingScorer("auc"),
        "make_ranking_scorer": lambda: make_ranking_scorer("auc"),
        "compare_rankings": lambda: compare_rankings(y, y, y, groups, metric="auc"),
        "evaluate_letor_folds": lambda: evaluate_letor_folds(ColumnRanker(), tmp_path, metric="auc"),
        "cli": lambda: parse_metrics("ndcg@10,AUC"),
    }
    messages = {}
    for caller, call in calls.items():
        with pytest.raises((ValueError, CLIError), match="unknown metric") as info:
            call()
        messages[caller] = str(info.value)
    return messages


def test_unknown_name_is_the_same_error_everywhere(tmp_path):
    messages = _unknown_errors(tmp_path)
    tails = {caller: message[message.index("got unknown metric"):] for caller, message in messages.items()}
    expected = ("got unknown metric 'auc'. A metric must be one of ndcg[@k], dcg[@k], map[@k] (or ap), "
                "precision@k (or p, prec), mrr[@k], err[@k], swapped_pairs (no per-query values), "
                "ips_dcg[@k] (needs propensity), ips_ndcg[@k] (needs propensity) "
                "(sklearn_ltr.metrics.METRICS; add one with register_metric).")
    assert tails == dict.fromkeys(messages, expected)
    assert messages["RankingScorer"].startswith("The 'metric' parameter of RankingScorer must be a registered metric")
    assert messages["compare_rankings"].startswith("The 'metric' parameter of compare_rankings must be")


@pytest.mark.parametrize("call", [
    lambda: compare_rankings([1, 0, 1, 0], [1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 2, 2], metric="swapped_pairs"),
    lambda: parse_metrics("swapped_pairs"),
    lambda: get_metric("swapped_pairs", per_query=True),
])
def test_a_metric_without_per_query_values_is_refused_where_they_are_needed(call):
    match = "a metric with per-query values; the 'swapped_pairs' metric has none"
    with pytest.raises((ValueError, CLIError), match=match):
        call()


# ------------------------------------------------------------ a new metric is one registry entry


def _rank_loss(y_true, y_score, groups, *, k=None, miss=1.0):
    """1 - reciprocal rank of the first relevant document in the top k; ``miss`` where there is none."""
    rr = METRICS["mrr"].per_query(y_true, y_score, groups, k=k)
    return np.where(rr > 0, 1.0 - rr, miss)


@pytest.fixture
def toy():
    options = {"k": METRICS["mrr"].options["k"], "miss": METRICS["ndcg"].options["empty_value"]}
    metric = register_metric(Metric("rank_loss", None, _rank_loss, options, higher_is_better=False, empty_value=1.0,
                                    aliases=("rl",), label="RL"))
    try:
        yield metric
    finally:
        unregister_metric("rank_loss")
    for name in ("rank_loss", "rl"):
        with pytest.raises(ValueError, match="unknown metric"):
            get_metric(name)


def test_a_registered_metric_is_listed_and_parsed(toy):
    assert METRICS["rank_loss"] is toy and get_metric("rl") is toy
    assert parse_metric("rl@3") == (toy, 3)
    listed = "err[@k], swapped_pairs (no per-query values), ips_dcg[@k] (needs propensity), ips_ndcg[@k] (needs " \
        "propensity), rank_loss[@k] (or rl) ("
    with pytest.raises(ValueError, match=re.escape(listed)):
        get_metric("auc")
    with pytest.raises(ValueError, match="'rank_loss' is already registered"):
        register_metric(Metric("rank_loss", None, _rank_loss))
    with pytest.raises(ValueError, match="'rl' is already registered"):
        register_metric(Metric("other", None, _rank_loss, aliases=("rl",)))


def test_a_registered_metric_is_gone_after_unregistering():
    register_metric(Metric("gone", None, _rank_loss, aliases=("gone_too",)))
    unregister_metric("gone_too")
    for name in ("gone", "gone_too"):
        with pytest.raises(ValueError, match=f"unknown metric '{name}'"):
            get_metric(name)
    with pytest.raises(ValueError, match="built-in metric"):
        unregister_metric("ndcg")


def test_the_scorer_factory_accepts_a_registered_metric(toy, data):
    y, groups, good, _ = data
    X = good[:, None]
    model = ColumnRanker()
    scorer = make_ranking_scorer("rank_loss", k=3, miss=0.5)
    assert repr(scorer) == "RankingScorer('rank_loss', k=3, miss=0.5)"
    expected = np.mean(_rank_loss(y, good, groups, k=3, miss=0.5))
    # Lower is better: the scorer negates, so that greater is better in model selection.
    assert scorer(model, X, y, groups=groups) == pytest.approx(-expected, rel=1e-15)
    with pytest.raises(TypeError, match=r"'rank_loss' metric got an unexpected keyword argument 'gain'; its options "
                                        r"are \['k', 'miss'\]"):
        make_ranking_scorer("rank_loss", gain="linear")
    with pytest.raises(InvalidParameterError, match="The 'miss' parameter of RankingScorer must be"):
        RankingScorer("rank_loss", miss=2.0)


def test_significance_accepts_a_registered_metric(toy, data):
    y, groups, good, bad = data
    table = compare_rankings(y, bad, {"good": good}, groups, metric="rl", k=3, tests="t-test")
    assert table.metric == "rank_loss@3"
    assert table.baseline_mean == toy.score(y, bad, groups, k=3)
    assert table["good"].mean_difference < 0  # a loss: the better system has the smaller value
    with pytest.raises(TypeError, match="'rank_loss' metric got an unexpected keyword argument 'gain'"):
        compare_rankings(y, bad, good, groups, metric="rank_loss", gain="linear")


def test_the_cli_accepts_a_registered_metric(toy, data, tmp_path, capsys):
    y, groups, good, _ = data
    order = np.argsort(groups, kind="stable")  # the file lists each query's rows together
    y, groups, good = y[order], groups[order], good[order]
    assert [(m.key, m.label) for m in parse_metrics("RL@3,rank_loss,ndcg@3,rl@3")] == [
        ("rank_loss@3", "RL@3"), ("rank_loss", "RL"), ("ndcg@3", "NDCG@3")]
    dump_svmlight_ranking(good[:, None], y, groups, tmp_path / "data.txt")
    np.savetxt(tmp_path / "scores.txt", good)
    status = main(["evaluate", "--scores", str(tmp_path / "scores.txt"), "--data", str(tmp_path / "data.txt"),
                   "--metrics", "rank_loss@1,mrr@1", "--json"])
    values = json.loads(capsys.readouterr().out)["metrics"]
    assert status == 0
    expected = np.mean(_rank_loss(y, good, groups, k=1))
    assert expected != np.mean(_rank_loss(y, good, groups))  # the cut-off matters on these data
    assert values == {"rank_loss@1": pytest.approx(expected, rel=1e-12), "mrr@1": mrr_score(y, good, groups, k=1)}


def test_letor_folds_select_by_the_registered_direction(toy, data, tmp_path):
    y, groups, good, _ = data
    for s in range(5):
        rows = groups % 5 == s
        dump_svmlight_ranking(good[rows, None], y[rows], groups[rows], tmp_path / f"S{s + 1}.txt")
    grid = {"sign": [-1.0, 1.0]}  # sign 1 ranks by the good scores, sign -1 reverses them
    for metric in ("rank_loss", "mrr"):
        result = evaluate_letor_folds(ColumnRanker(), tmp_path, param_grid=grid, metric=metric, k=3, select_k=3,
                                      folds=[1, 2])
        assert [fold["best_params"] for fold in result.folds] == [{"sign": 1.0}] * 2, metric
    assert sorted(result.per_query) == ["fold", "mrr@3", "query_id"]
