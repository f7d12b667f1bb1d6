"""``sklearn-ltr compare`` and the comparison report: the CLI's numbers are compare_rankings', the HTML is offline.

Models train through ``main(["train", ...])`` on small synthetic files (as in test_cli.py);
the numbers the command prints are checked against :func:`compare_rankings` on the same
scores, exactly through ``--json`` and to the printed digits in the text table.
"""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_user_error, run  # tests/cli_helpers.py

from sklearn_ltr.cli import main
from sklearn_ltr.datasets import dump_svmlight_ranking, load_svmlight_ranking, make_ranking
from sklearn_ltr.metrics import compare_rankings, paired_significance, plot_comparison, write_comparison_report

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIELDS = ("mean", "mean_difference", "ci_low", "ci_high", "t_statistic", "t_pvalue", "t_pvalue_adjusted",
          "randomization_pvalue", "randomization_pvalue_adjusted")
METRICS = {"ndcg@10": ("ndcg", 10), "map": ("map", None), "mrr": ("mrr", None)}
RESAMPLES = 2000




@pytest.fixture(scope="module")
def systems(tmp_path_factory):
    """A test file, two trained models (LambdaMART, RankNet), their scores files and two more scores files."""
    folder = tmp_path_factory.mktemp("compare")
    X, y, groups = make_ranking(n_queries=90, n_features=8, mean_list_length=12, random_state=1)
    train = groups < 50
    paths = {"train": folder / "train.txt", "test": folder / "test.txt"}
    dump_svmlight_ranking(X[train], y[train], groups[train], paths["train"])
    dump_svmlight_ranking(X[~train], y[~train], groups[~train], paths["test"])
    for name, model, params in (("lm", "lambdamart", ["n_estimators=20", "min_child_samples=5"]),
                                ("rn", "ranknet", ["max_epochs=3", "hidden_sizes=(8,)", "lr=0.01"])):
        paths[name] = folder / f"{name}.joblib"
        assert main(["train", "--model", model, "--train", str(paths["train"]), "--out", str(paths[name]),
                     "--threads", "1", *(a for p in params for a in ("--param", p))]) == 0
        paths[f"{name}.scores"] = folder / f"{name}.scores.txt"
        assert main(["predict", "--model", str(paths[name]), "--data", str(paths["test"]),
                     "--out", str(paths[f"{name}.scores"])]) == 0
    rng = np.random.default_rng(0)
    y_test = y[~train]
    for name, scores in (("noise", rng.normal(size=y_test.size)), ("oracle", y_test + rng.normal(size=y_test.size))):
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text("".join(f"{v!r}\n" for v in scores.tolist()))
    return paths


def read_scores(path):
    return np.array([float(line) for line in Path(path).read_text().splitlines()])


def expected_tables(paths, names, baseline, correction="holm", seed=0):
    """compare_rankings on the scores files, one table per metric."""
    _, y, groups = load_svmlight_ranking(paths["test"])
    scores = {name: read_scores(paths[key]) for name, key in names.items()}
    others = {name: s for name, s in scores.items() if name != baseline}
    return {key: compare_rankings(y, scores[baseline], others, groups, metric=metric, k=k, correction=correction,
                                  n_resamples=RESAMPLES, random_state=seed)
            for key, (metric, k) in METRICS.items()}


def compare_args(paths, *extra):
    return ["compare", "--data", paths["test"], "--model", paths["lm"], "--model", paths["rn"],
            "--scores", paths["noise"], "--scores", paths["oracle"], "--resamples", RESAMPLES, *extra]


NAMES = {"lm": "lm.scores", "rn": "rn.scores", "noise": "noise", "oracle": "oracle"}


def test_json_numbers_equal_compare_rankings(capsys, systems):
    expected = expected_tables(systems, NAMES, "rn")
    # The oracle beats the RankNet baseline, and the correction is not a no-op: an alpha between its raw
    # and its corrected p-value tells which one decides significance.
    oracle = expected["ndcg@10"]["oracle"]
    assert oracle.mean_difference > 0 and oracle.t_pvalue_adjusted > oracle.t_pvalue
    alpha = (oracle.t_pvalue + oracle.t_pvalue_adjusted) / 2
    status, out, err = run(capsys, *compare_args(systems, "--json", "--baseline", "rn", "--alpha", repr(alpha)))
    assert status == 0, err
    report = json.loads(out)
    assert report["baseline"] == "rn" and report["alpha"] == alpha
    assert [s["name"] for s in report["systems"]] == ["lm", "rn", "noise", "oracle"]
    assert [s["source"] for s in report["systems"]] == ["model", "model", "scores", "scores"]
    assert report["correction"] == "holm" and report["resamples"] == RESAMPLES
    assert list(report["metrics"]) == list(expected)
    for key, table in expected.items():
        got = report["metrics"][key]
        assert got["baseline_mean"] == table.baseline_mean and got["n_queries"] == table.n_queries == 40
        assert [row["system"] for row in got["comparisons"]] == ["lm", "noise", "oracle"]
        for row, result in zip(got["comparisons"], table, strict=True):
            for field in FIELDS:
                assert row[field] == getattr(result, field), (key, result.system, field)
            assert row["significant"] == {"t-test": result.t_pvalue_adjusted < alpha,
                                          "randomization": result.randomization_pvalue_adjusted < alpha}
    assert report["metrics"]["ndcg@10"]["comparisons"][2]["significant"]["t-test"] is False


def _numbers(line):
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+(?:e[-+]\d+)?", line)]


def test_text_table_prints_the_same_numbers(capsys, systems):
    status, out, err = run(capsys, *compare_args(systems, "--correction", "bonferroni", "--seed", "3"))
    assert status == 0, err
    expected = expected_tables(systems, NAMES, "lm", correction="bonferroni", seed=3)
    *blocks, footnote = out.split("\n\n")[1:]
    assert len(blocks) == 3 and footnote.startswith("* ") and "no relevant document" in footnote
    for block, (key, table) in zip(blocks, expected.items(), strict=True):
        lines = block.strip().splitlines()
        assert lines[0] == f"{key.upper()} over 40 queries"
        assert "t-test p (bonferroni)" in lines[1]
        assert lines[2].split()[:3] == ["lm", f"{table.baseline_mean:.4f}", "(baseline)"]
        for line, r in zip(lines[3:], table, strict=True):
            assert line.split()[0] == r.system
            want = [r.mean, r.mean_difference, r.ci_low, r.ci_high, r.t_pvalue, r.t_pvalue_adjusted,
                    r.randomization_pvalue, r.randomization_pvalue_adjusted]
            assert _numbers(line) == pytest.approx(want, rel=5e-3, abs=5e-5)
            marks = [cell.endswith("*") for cell in re.split(r"\s{2,}", line)[4:]]
            assert marks == [False, r.t_pvalue_adjusted < 0.05, False, r.randomization_pvalue_adjusted < 0.05]


def test_model_and_its_scores_file_are_the_same_system(capsys, systems):
    status, out, _ = run(capsys, "compare", "--data", systems["test"], "--model", systems["lm"],
                         "--scores", systems["lm.scores"], "--json", "--resamples", 100)
    assert status == 0
    result = json.loads(out)["metrics"]["ndcg@10"]["comparisons"][0]
    assert result["system"] == "lm.scores" and result["mean_difference"] == 0.0 and result["t_pvalue"] == 1.0


def test_names_are_deduplicated_and_baseline_takes_a_path(capsys, systems, tmp_path):
    other = tmp_path / "lm.joblib"
    other.write_bytes(systems["lm"].read_bytes())
    status, out, err = run(capsys, "compare", "--data", systems["test"], "--model", systems["lm"], "--model", other,
                           "--scores", systems["oracle"], "--baseline", systems["oracle"], "--json",
                           "--resamples", 100, "--correction", "none", "--metrics", "NDCG@5")
    assert status == 0, err
    report = json.loads(out)
    assert [s["name"] for s in report["systems"]] == ["lm", "lm-2", "oracle"]
    assert report["baseline"] == "oracle" and report["correction"] is None
    rows = report["metrics"]["ndcg@5"]["comparisons"]
    assert [r["system"] for r in rows] == ["lm", "lm-2"] and rows[0]["t_pvalue_adjusted"] is None


def test_errors_are_one_line(capsys, systems, tmp_path):
    base = ["compare", "--data", systems["test"]]
    assert_user_error(capsys, [*base, "--model", systems["lm"]], "at least two systems", "got 1")
    two = [*base, "--model", systems["lm"], "--scores", systems["oracle"]]
    assert_user_error(capsys, [*two, "--baseline", "nope"], "--baseline 'nope' names no system", "'lm', 'oracle'")
    assert_user_error(capsys, [*two, "--metrics", "ndcg@10,foo"], "--metrics", "foo")
    assert_user_error(capsys, [*two, "--metrics", "swapped_pairs"], "--metrics", "per-query")
    short = tmp_path / "short.txt"
    short.write_text("0.5\n" * 10)
    assert_user_error(capsys, [*base, "--model", systems["lm"], "--scores", short], str(short), "10 values",
                      "rows")
    assert_user_error(capsys, [*two, "--alpha", "1.5"], "--alpha")
    assert_user_error(capsys, [*two, "--resamples", "0"], "--resamples")
    assert_user_error(capsys, [*two, "--report", systems["oracle"]], "--report", "destroy")
    assert_user_error(capsys, [*two, "--report", tmp_path / "missing" / "r.html"], "--report", "does not exist")
    assert_user_error(capsys, [*base, "--model", tmp_path / "none.joblib", "--scores", systems["oracle"]],
                      "does not exist")


# --------------------------------------------------------------------------- the HTML report


class _Page(HTMLParser):
    """Resources (tag, attribute, URL), figures (class, system) and table cells (metric, system, field, value)."""

    def __init__(self):
        super().__init__()
        self.resources, self.figures, self.cells = [], [], []
        self._metric = self._system = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href", "data", "poster"):
            if attrs.get(name) is not None:
                self.resources.append((tag, name, attrs[name]))
        if tag == "figure":
            self.figures.append((attrs.get("class"), attrs.get("data-system")))
        if tag == "table":
            self._metric = attrs.get("data-metric")
        if tag == "tr":
            self._system = attrs.get("data-system")
        if "data-field" in attrs:
            self.cells.append((self._metric, self._system, attrs["data-field"], float(attrs["data-value"])))


def check_page(text, tables, baseline):
    page = _Page()
    page.feed(text)
    assert page.resources, "the figures are images"
    for tag, name, url in page.resources:
        assert not re.match(r"\s*(https?:)?//", url, re.IGNORECASE), (tag, name, url)
        assert url.startswith("data:image/png;base64,"), (tag, name, url[:40])
    assert not re.search(r"""url\(\s*['"]?(https?:)?//|@import""", text), "no remote CSS"
    assert "<script" not in text.lower()
    systems = [r.system for r in tables[0]]
    assert page.figures == [("differences", s) for s in systems] + [("distributions", None)]
    expected = []
    for table in tables:
        expected.append((table.metric, baseline, "mean", table.baseline_mean))
        for r in table:
            expected += [(table.metric, r.system, field, getattr(r, field)) for field in FIELDS
                         if field != "t_statistic" and getattr(r, field) is not None]
    assert sorted(page.cells) == sorted(expected)


def test_cli_report_is_offline_and_holds_the_table(capsys, systems, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "report.html"
    status, out, err = run(capsys, *compare_args(systems, "--baseline", "rn", "--report", path))
    assert status == 0, err
    assert out.strip().endswith(f"wrote report to {path}")
    check_page(path.read_text(encoding="utf-8"), list(expected_tables(systems, NAMES, "rn").values()), "rn")
    assert not [p for p in tmp_path.iterdir() if p.name != "report.html"], "no temporary file left"


def test_python_report_and_to_html(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(30), 6)
    y = rng.integers(0, 3, size=qid.size)
    noise = rng.normal(size=(3, qid.size))
    others = {"better": y + noise[1], "worse <b>": y + 3 * noise[2]}  # a name that needs escaping
    table = compare_rankings(y, y + 2 * noise[0], others, qid, n_resamples=500, random_state=0)
    write_comparison_report(table, tmp_path / "one.html", baseline_name="base")
    check_page((tmp_path / "one.html").read_text(), [table], "base")
    assert "worse &lt;b&gt;" in table.to_html(baseline_name="base")
    assert table.to_html(tmp_path / "two.html") is None and (tmp_path / "two.html").is_file()


def test_report_argument_errors(tmp_path):
    pytest.importorskip("matplotlib")
    a = paired_significance([0.1, 0.2, 0.3], {"x": [0.2, 0.2, 0.4]}, tests="t-test")
    b = paired_significance([0.1, 0.2, 0.3], {"y": [0.2, 0.2, 0.4]}, tests="t-test")
    with pytest.raises(ValueError, match="different systems"):
        write_comparison_report([a, b], tmp_path / "r.html")
    with pytest.raises(ValueError, match="empty"):
        write_comparison_report([], tmp_path / "r.html")
    with pytest.raises(ValueError, match="alpha"):
        a.to_html(alpha=0)
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("tables", [
    lambda table: [table, {"x": [0.1]}], lambda table: [table, "table"], lambda table: [table, table[0]],
    lambda table: table.to_dict(),
], ids=["a dict", "a str", "a result row", "the table's columns"])
def test_the_report_takes_significance_tables_only(tmp_path, tables):
    # The report knows a table by its attributes (it sits below the class in the import graph):
    # anything else is refused with the class named, before any work.
    table = paired_significance([0.1, 0.2, 0.3], {"x": [0.2, 0.2, 0.4]}, tests="t-test")
    with pytest.raises(TypeError, match="tables must hold SignificanceTable objects"):
        write_comparison_report(tables(table), tmp_path / "r.html")
    with pytest.raises(TypeError, match="tables must hold SignificanceTable objects"):
        plot_comparison(tables(table))
    assert not (tmp_path / "r.html").exists()


def test_plot_comparison_draws_sorted_differences():
    plt = pytest.importorskip("matplotlib.pyplot")
    baseline = np.array([0.5, 0.2, 0.9, 0.4])
    table = paired_significance(baseline, {"new": baseline + np.array([0.1, -0.3, 0.0, 0.2])}, tests="t-test")
    figures = plot_comparison(table, baseline_name="old")
    try:
        assert len(figures) == 2
        heights = [bar.get_height() for bar in figures[0].axes[0].patches]
        assert heights == pytest.approx([0.2, 0.1, 0.0, -0.3])
    finally:
        for fig in figures:
            plt.close(fig)


def test_values_are_the_per_query_metric():
    from sklearn_ltr.metrics import ndcg_per_query

    rng = np.random.default_rng(1)
    qid = rng.permutation(np.repeat(np.arange(12) * 3, 5))  # interleaved, not sorted
    y = rng.integers(0, 3, size=qid.size)
    base, other = rng.normal(size=(2, qid.size))
    table = compare_rankings(y, base, {"o": other}, qid, n_resamples=100, random_state=0)
    _, expected = ndcg_per_query(y, base, qid, k=10)
    np.testing.assert_array_equal(table.baseline_values, expected)
    np.testing.assert_array_equal(table.values[0], ndcg_per_query(y, other, qid, k=10)[1])
    with pytest.raises(ValueError):
        table.values[0, 0] = 1.0


def test_to_html_passes_every_option_to_the_report(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    base = rng.uniform(size=40)
    table = paired_significance(base, {"new": base + rng.normal(0.02, 0.1, size=40)}, tests="t-test")
    options = {"baseline_name": "old model", "title": "A title", "description": "A description", "alpha": 0.5}
    write_comparison_report(table, tmp_path / "reference.html", **options)
    reference = (tmp_path / "reference.html").read_text(encoding="utf-8")
    assert table.to_html(**options) == reference
    assert table.to_html(tmp_path / "page.html", **options) is None
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == reference
    # Each option shows on the page: leaving any one out changes it.
    for name in options:
        assert table.to_html(**{k: v for k, v in options.items() if k != name}) != reference, name
    # And the defaults are the report's own.
    write_comparison_report(table, tmp_path / "defaults.html")
    defaults = (tmp_path / "defaults.html").read_text(encoding="utf-8")
    assert table.to_html() == defaults
    assert table.to_html(tmp_path / "page.html") is None
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == defaults


def test_confidence_option_sets_the_interval_level(capsys, systems):
    """``--confidence`` reaches compare_rankings: the interval printed is the one at the level asked for."""
    _, y, groups = load_svmlight_ranking(systems["test"])
    scores = {name: read_scores(systems[key]) for name, key in NAMES.items()}
    expected = compare_rankings(y, scores["rn"], {n: s for n, s in scores.items() if n != "rn"}, groups,
                                metric="ndcg", k=10, n_resamples=RESAMPLES, random_state=0, confidence_level=0.5)
    status, out, err = run(capsys, *compare_args(systems, "--json", "--baseline", "rn", "--confidence", "0.5"))
    assert status == 0, err
    report = json.loads(out)
    assert report["confidence_level"] == 0.5
    for row, result in zip(report["metrics"]["ndcg@10"]["comparisons"], expected, strict=True):
        assert (row["ci_low"], row["ci_high"]) == (result.ci_low, result.ci_high)
    # The 50% interval lies strictly inside the default 95% one on this data (a level that never arrives fails).
    wide = compare_rankings(y, scores["rn"], {"oracle": scores["oracle"]}, groups, metric="ndcg", k=10,
                            n_resamples=RESAMPLES, random_state=0)
    narrow = report["metrics"]["ndcg@10"]["comparisons"][2]
    assert wide[0].ci_low < narrow["ci_low"] < narrow["ci_high"] < wide[0].ci_high
