"""What ``compare`` prints and saves about its input and its decisions, checked against the data and the p-values.

The JSON's header (the file, its rows and queries, each metric's label and query count) and the
significance marks: a p-value is significant when *below* ``--alpha``, so one equal to it is not,
in the JSON and in the text table alike, with and without a correction.
"""

import html
import json

import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.datasets import dump_svmlight_ranking

QID = np.repeat(np.arange(8), 3)
Y = np.tile([2, 1, 0], 8)
A = np.tile([0.9, 0.5, 0.1], 8)  # every query ranked right
B = np.where(np.arange(24) % 6 < 3, np.tile([0.1, 0.5, 0.9], 8), A)  # every other query reversed


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    paths = {"data": str(tmp / "test.txt"), "a": str(tmp / "a.txt"), "b": str(tmp / "b.txt")}
    dump_svmlight_ranking(np.ones((len(Y), 2)), Y, QID, paths["data"])
    np.savetxt(paths["a"], A)
    np.savetxt(paths["b"], B)
    return paths


def _compare(capsys, files, *options, json_output=True):
    status, out, err = run(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores",
                           files["b"], "--metrics", "ndcg@10,mrr", "--resamples", "200", *options,
                           *(["--json"] if json_output else []))
    assert status == 0, err
    return json.loads(out) if json_output else out


def test_the_json_describes_the_data_and_the_metrics(capsys, files):
    report = _compare(capsys, files)
    assert (report["data"], report["rows"], report["queries"], report["empty_queries"]) == (files["data"], 24, 8, 0)
    assert [system["name"] for system in report["systems"]] == ["a", "b"]
    assert {key: report[key] for key in ("baseline", "tests", "resamples", "confidence_level", "correction", "alpha",
                                         "seed", "report", "empty_query_rule")} == {
        "baseline": "a", "tests": ["t-test", "randomization", "bootstrap"], "resamples": 200,
        "confidence_level": 0.95, "correction": "holm", "alpha": 0.05, "seed": 0, "report": None,
        "empty_query_rule": "default"}
    assert {key: (m["label"], m["n_queries"]) for key, m in report["metrics"].items()} == {
        "ndcg@10": ("NDCG@10", 8), "mrr": ("MRR", 8)}


@pytest.mark.parametrize("correction", ["holm", "none"])
def test_a_p_value_equal_to_alpha_is_not_significant(capsys, files, correction):
    field = "t_pvalue_adjusted" if correction == "holm" else "t_pvalue"
    first = _compare(capsys, files, "--correction", correction)
    p = first["metrics"]["ndcg@10"]["comparisons"][0][field]
    assert 0 < p < 1
    for alpha, significant in ((p, False), (np.nextafter(p, 1.0), True)):
        report = _compare(capsys, files, "--correction", correction, "--alpha", repr(float(alpha)))
        assert report["metrics"]["ndcg@10"]["comparisons"][0]["significant"]["t-test"] is significant
        text = _compare(capsys, files, "--correction", correction, "--alpha", repr(float(alpha)), json_output=False)
        (row,) = [line for line in text.splitlines()[text.splitlines().index("NDCG@10 over 8 queries"):]
                  if line.startswith("b ")][:1]
        assert (f"{p:.4f} *" in row) is significant, row


def test_drop_refuses_a_file_whose_queries_are_all_empty(capsys, files, tmp_path):
    data = tmp_path / "empty.txt"
    dump_svmlight_ranking(np.ones((len(Y), 2)), np.zeros(len(Y)), QID, data)
    status, _, err = run(capsys, "compare", "--data", str(data), "--scores", files["a"], "--scores", files["b"],
                         "--metrics", "mrr", "--empty-queries", "drop")
    assert status == 2
    assert (f"every query of --data {str(data)!r} has no relevant document (no label above 0): --empty-queries drop "
            "leaves none to compare.") in err


def test_the_report_names_the_file_the_baseline_and_alpha(capsys, files, tmp_path):
    report = tmp_path / "report.html"
    text = _compare(capsys, files, "--alpha", "0.01", json_output=False)
    described = text.splitlines()[0]  # the data file's description, as the text output starts
    _compare(capsys, files, "--alpha", "0.01", "--report", str(report))
    page = report.read_text()
    assert "<title>Ranker comparison on test.txt</title>" in page
    assert f'<p class="description">{html.escape(described)}; baseline a</p>' in page
    assert "marks p &lt; 0.01 after correction." in page


def test_the_report_never_overwrites_an_input_and_names_a_bad_path(capsys, files, tmp_path):
    def refused(report):
        status, _, err = run(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores",
                             files["b"], "--metrics", "mrr", "--resamples", "10", "--report", str(report))
        assert status == 2
        return err

    for option, path in (("--data", files["data"]), ("--scores", files["a"]), ("--scores", files["b"])):
        before = open(path).read()
        assert (f"--report {path!r} is {option} {path!r}: writing it would destroy that input. Give --report another "
                "file name; nothing was written.") in refused(path)
        assert open(path).read() == before
    assert f"--report {str(tmp_path)!r} is a directory; give a file name for the report." in refused(tmp_path)
    missing = tmp_path / "missing" / "r.html"
    assert (f"cannot write report --report {str(missing)!r}: folder {str(missing.parent)!r} does not exist"
            in refused(missing))


def test_the_report_without_matplotlib_says_how_to_install_it(capsys, files, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    status, _, err = run(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"],
                         "--metrics", "mrr", "--report", str(tmp_path / "r.html"))
    assert status == 2
    assert ("--report draws its figures with matplotlib, which is not installed: pip install 'sklearn-ltr[benchmark]' "
            "(or pip install matplotlib).") in err


@pytest.mark.parametrize(("value", "marked", "cell"), [(0.5, False, "0.5000"), (0.01, True, "0.0100 *"),
                                                        (1e-4, False, "0.0001"), (3.2e-5, True, "3.2e-05 *"),
                                                        (0.0, False, "0.0e+00")],
                         ids=["half", "marked", "at-1e-4", "below-1e-4-marked", "zero"])
def test_p_value_cells(value, marked, cell):
    """Four decimals down to 1e-4, then scientific notation (never "0.0000"); '*' after a marked one."""
    from sklearn_ltr.cli._compare import _p_cell

    assert _p_cell(value, marked) == cell


@pytest.mark.parametrize(("correction", "head"), [
    ("holm", ["system", "mean", "difference", "95% CI", "t-test p", "t-test p (holm)", "randomization p",
              "randomization p (holm)"]),
    ("none", ["system", "mean", "difference", "95% CI", "t-test p", "randomization p"]),
])
def test_the_text_table_heads_its_columns(capsys, files, correction, head):
    text = _compare(capsys, files, "--correction", correction, json_output=False)
    lines = text.splitlines()
    start = lines.index("NDCG@10 over 8 queries")
    assert [cell for cell in lines[start + 1].split("  ") if cell.strip()] == head
