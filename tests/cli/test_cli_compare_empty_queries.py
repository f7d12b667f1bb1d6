"""``compare`` and its report count queries without a relevant document as ``evaluate`` does, and say so.

Every command that reports metrics takes ``--empty-queries default|zero|drop`` with one meaning:
the means ``compare`` prints (text, JSON and the report's tables) must equal ``evaluate``'s on the
same file with the same option; a footnote says how many queries are empty and how they count;
and the report's per-query difference plots leave empty queries out instead of counting them
as ties (every system scores them alike by convention).
"""

import json
import re

import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.datasets import dump_svmlight_ranking
from sklearn_ltr.metrics import compare_rankings

RULES = ("default", "zero", "drop")
METRICS = "ndcg@10,map,mrr"

# Five queries: q1, q2, q3 have a relevant document, q4 and q5 none.
QID = np.array([1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5])
Y = np.array([1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0])
A = np.array([.9, .5, .1, .8, .2, .3, .4, .1, .2, .3, .2, .1])  # q1 right, q2 wrong, q3 wrong
B = np.array([.9, .5, .1, .1, .8, .3, .4, .9, .1, .2, .3, .1])  # q1 same, q2 right, q3 same (tied)


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "test.txt"
    dump_svmlight_ranking(np.ones((len(Y), 2)), Y, QID, data)
    paths = {"data": str(data)}
    for name, scores in (("a", A), ("b", B)):
        paths[name] = str(tmp_path / f"{name}.txt")
        np.savetxt(paths[name], scores)
    return paths


def _compare(files, *options):
    return ["compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"], "--metrics", METRICS,
            "--resamples", "200", *options]


def _evaluate_json(capsys, files, system, rule):
    status, out, err = run(capsys, "evaluate", "--data", files["data"], "--scores", files[system], "--metrics",
                           METRICS, "--empty-queries", rule, "--json")
    assert status == 0, err
    return json.loads(out)["metrics"]


@pytest.mark.parametrize("rule", RULES)
def test_compare_means_equal_evaluate(files, capsys, rule):
    status, out, err = run(capsys, *_compare(files, "--empty-queries", rule, "--json"))
    assert status == 0, err
    result = json.loads(out)
    assert result["empty_queries"] == 2 and result["empty_query_rule"] == rule
    a, b = _evaluate_json(capsys, files, "a", rule), _evaluate_json(capsys, files, "b", rule)
    for key in ("ndcg@10", "map", "mrr"):
        entry = result["metrics"][key]
        assert entry["baseline_mean"] == a[key]  # exactly: the same per-query values, the same mean
        assert entry["comparisons"][0]["mean"] == b[key]
        assert entry["n_queries"] == (3 if rule == "drop" else 5)


def test_by_hand(files, capsys):
    # MRR of a: q1 1, q2 1/2, q3 1/2; of b: 1, 1, 1/2. NDCG@10 and MAP count empty queries 1 by default.
    runs = {rule: json.loads(run(capsys, *_compare(files, "--empty-queries", rule, "--json"))[1])["metrics"]
            for rule in RULES}
    assert runs["default"]["mrr"]["baseline_mean"] == pytest.approx(2 / 5)
    assert runs["drop"]["mrr"]["baseline_mean"] == pytest.approx(2 / 3)
    assert runs["default"]["map"]["baseline_mean"] == pytest.approx((2 + 2) / 5)
    assert runs["zero"]["map"]["baseline_mean"] == pytest.approx(2 / 5)
    assert runs["drop"]["map"]["comparisons"][0]["mean_difference"] == pytest.approx(0.5 / 3)


@pytest.mark.parametrize("rule, text", [
    ("default", "2 of 5 queries have no relevant document (label > 0): NDCG@10, MAP count them as 1 (LightGBM's "
                "convention) and MRR as 0"),
    ("zero", "2 of 5 queries have no relevant document (label > 0): counted as 0 in every metric"),
    ("drop", "2 of 5 queries have no relevant document (label > 0): left out of every metric"),
])
def test_text_footnote_is_evaluates(files, capsys, rule, text):
    status, out, err = run(capsys, *_compare(files, "--empty-queries", rule))
    assert status == 0, err
    assert f"\n* {text}" in out
    status, evaluated, _ = run(capsys, "evaluate", "--data", files["data"], "--scores", files["a"], "--metrics",
                               METRICS, "--empty-queries", rule)
    assert f"* {text}" in evaluated  # the same sentence in both commands
    assert f"over {3 if rule == 'drop' else 5} queries" in out


def test_bad_rule_is_refused_as_evaluate_refuses_it(files, capsys):
    for command in (_compare(files, "--empty-queries", "one"),
                    ["evaluate", "--data", files["data"], "--scores", files["a"], "--empty-queries", "one"]):
        status, _, err = run(capsys, *command)
        assert status == 2 and "--empty-queries: invalid choice: 'one'" in err
        assert re.search(r"choose from '?default'?, '?zero'?, '?drop'?\)", err)


def _report_means(page):
    """``{metric: [baseline mean, system mean]}`` from the report's exact ``data-value`` cells."""
    means = {}
    for section in re.findall(r'<table class="comparison" data-metric="([^"]+)">(.*?)</table>', page, re.S):
        means[section[0]] = [float(v) for v in re.findall(r'data-field="mean" data-value="([^"]+)"', section[1])]
    return means


@pytest.mark.parametrize("rule", RULES)
def test_report_tables_equal_evaluate_and_name_the_rule(files, tmp_path, capsys, rule):
    report = tmp_path / f"{rule}.html"
    status, _, err = run(capsys, *_compare(files, "--empty-queries", rule, "--report", report))
    assert status == 0, err
    page = report.read_text()
    a, b = _evaluate_json(capsys, files, "a", rule), _evaluate_json(capsys, files, "b", rule)
    assert _report_means(page) == {key: [a[key], b[key]] for key in ("ndcg@10", "map", "mrr")}
    notes = re.findall(r'<p class="note[^"]*">(.*?)</p>', page)
    assert any(("left out of every metric" if rule == "drop" else "2 of 5 queries") in n for n in notes)
    plotted = [n for n in notes if "difference plots leave out" in n]
    if rule == "drop":  # nothing left to leave out of the plots
        assert not plotted
    else:
        value = {"default": "1", "zero": "0"}[rule]
        (note,) = plotted
        assert "the 2 of 5 queries" in note and f"NDCG@10 {value}, MAP {value}, MRR 0" in note


def _titles(figure):
    return [ax.get_title() for ax in figure.axes if ax.get_visible()]


def test_plots_do_not_count_empty_queries_as_ties():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_ltr.metrics import plot_comparison

    table = compare_rankings(Y, A, {"b": B}, QID, metric="ndcg", k=10, n_resamples=100, random_state=0)
    empty = np.array([False, False, False, True, True])  # q4, q5, in sorted query-id order
    # q2 better, q1 and q3 tied; q4 and q5 equal only by convention.
    (marked,) = _titles(plot_comparison(table, baseline_name="a", empty_queries=empty)[0])
    assert marked == "NDCG@10: 1 better, 0 worse, 2 tied\n(2 without a relevant document left out)"
    (unmarked,) = _titles(plot_comparison(table, baseline_name="a")[0])
    assert unmarked == "NDCG@10: 1 better, 0 worse, 4 tied"
    figure = plot_comparison(table, baseline_name="a", empty_queries=empty)[0]
    (ax,) = [ax for ax in figure.axes if ax.get_visible()]
    assert len(ax.patches) == 3  # one bar per query with a relevant document
    assert ax.get_legend().get_texts()[0].get_text() == f"mean (all 5) {table['b'].mean_difference:+.4f}"
    plt.close("all")


def test_empty_queries_must_match_the_tables():
    pytest.importorskip("matplotlib")
    from sklearn_ltr.metrics import plot_comparison

    table = compare_rankings(Y, A, {"b": B}, QID, metric="ndcg", k=10, n_resamples=100, random_state=0)
    with pytest.raises(ValueError, match="empty_queries has 4 entries, but the NDCG@10 table compares 5 queries"):
        plot_comparison(table, empty_queries=np.zeros(4, dtype=bool))
    with pytest.raises(ValueError, match="empty_queries must be a 1-D boolean array"):
        plot_comparison(table, empty_queries=[0, 0, 0, 1, 1])
