"""``evaluate`` and ``compare`` on a click log: counterfactual metrics from per-row propensities or a curve."""

import json

import numpy as np
import pytest
from cli_helpers import assert_user_error, run

from sklearn_ltr.datasets import dump_svmlight_ranking, observation_propensity, simulate_clicks
from sklearn_ltr.metrics import compare_rankings, ips_dcg_per_query, ips_dcg_score, ips_ndcg_score


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """A simulated click log of 70 queries written as files: data, propensities, positions, a curve, scores."""
    path = tmp_path_factory.mktemp("click_log")
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(70) + 100, rng.integers(3, 10, size=70))
    y = rng.choice(5, size=groups.size, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    X = rng.normal(size=(groups.size, 2))
    positions, clicks = simulate_clicks(y, groups, w=0.3, y_max=4, random_state=3)
    propensity = observation_propensity(positions)
    files = {name: str(path / f"{name}.txt") for name in ("data", "propensities", "positions", "curve", "a", "b",
                                                          "c", "graded")}
    dump_svmlight_ranking(X, clicks, groups, files["data"])
    dump_svmlight_ranking(X, y, groups, files["graded"])
    np.savetxt(files["propensities"], propensity, fmt="%.17g")
    np.savetxt(files["positions"], positions, fmt="%d")
    np.savetxt(files["curve"], 1.0 / np.arange(1, 10), fmt="%.17g")  # positions 1-9
    scores = {"a": y + rng.normal(scale=2.0, size=y.size), "b": y + rng.normal(scale=0.5, size=y.size),
              "c": rng.normal(size=y.size)}
    for name, values in scores.items():
        np.savetxt(files[name], values, fmt="%.17g")
    return files, clicks, groups, positions, propensity, scores


def _json(capsys, *args):
    status, out, err = run(capsys, *args)
    assert status == 0, err
    return json.loads(out)


def test_evaluate_prints_the_counterfactual_metrics(log, capsys):
    files, clicks, groups, _, propensity, scores = log
    status, out, _ = run(capsys, "evaluate", "--data", files["data"], "--scores", files["a"],
                         "--propensities", files["propensities"])
    assert status == 0
    lines = out.splitlines()
    assert lines[1].startswith(f"click log: {clicks.size:,} impressions, {clicks.sum():,} clicks; propensities from")
    dcg, ndcg = (ips_dcg_score(clicks, scores["a"], groups, propensity, k=10),
                 ips_ndcg_score(clicks, scores["a"], groups, propensity, k=10))
    assert lines[2:5] == [f"{'metric':<11}  {'value':>8}", f"{'IPS-DCG@10':<11}  {dcg:8.4f}",
                          f"{'IPS-NDCG@10':<11}  {ndcg:8.4f}"]
    n_empty = int((np.bincount(np.unique(groups, return_inverse=True)[1], weights=clicks) == 0).sum())
    assert lines[5].startswith(f"* {n_empty} of 70 queries have no click: IPS-NDCG@10 counts them as 1")


def test_evaluate_json_equals_the_python_metrics(log, capsys):
    files, clicks, groups, _, propensity, scores = log
    result = _json(capsys, "evaluate", "--data", files["data"], "--scores", files["b"], "--propensities",
                   files["propensities"], "--metrics", "ips_dcg@5,IPS_NDCG@3,ndcg@3", "--json")
    assert result["metrics"] == {
        "ips_dcg@5": ips_dcg_score(clicks, scores["b"], groups, propensity, k=5),
        "ips_ndcg@3": ips_ndcg_score(clicks, scores["b"], groups, propensity, k=3),
        "ndcg@3": pytest.approx(ips_ndcg_score(clicks, scores["b"], groups, np.ones(clicks.size), k=3), rel=1e-14),
    }
    assert result["click_log"] == {"propensities": files["propensities"], "propensity_curve": None, "positions": None,
                                   "clip": 0.05}
    # A curve and the positions give the same propensities, 1 / position, hence the same values.
    curve = _json(capsys, "evaluate", "--data", files["data"], "--scores", files["b"], "--propensity-curve",
                  files["curve"], "--positions", files["positions"], "--metrics", "ips_dcg@5,ips_ndcg@3", "--json")
    assert curve["metrics"] == {key: result["metrics"][key] for key in ("ips_dcg@5", "ips_ndcg@3")}


def test_a_curve_without_positions_uses_the_order_of_the_rows(log, capsys):
    files, clicks, groups, _, _, scores = log
    result = _json(capsys, "evaluate", "--data", files["data"], "--scores", files["c"], "--propensity-curve",
                   files["curve"], "--json")
    rank_in_file = np.concatenate([np.arange(n) for n in np.unique(groups, return_counts=True)[1]]) + 1
    propensity = 1.0 / rank_in_file  # the data file holds each query's rows together, in id order
    assert result["metrics"] == {"ips_dcg@10": ips_dcg_score(clicks, scores["c"], groups, propensity, k=10),
                                 "ips_ndcg@10": ips_ndcg_score(clicks, scores["c"], groups, propensity, k=10)}


@pytest.mark.parametrize(("options", "empty_value"), [([], 1.0), (["--empty-queries", "zero"], 0.0),
                                                       (["--empty-queries", "drop"], None)])
def test_clip_and_empty_queries(log, capsys, options, empty_value):
    files, clicks, groups, _, propensity, scores = log
    result = _json(capsys, "evaluate", "--data", files["data"], "--scores", files["a"], "--propensities",
                   files["propensities"], "--clip", "0.2", "--json", *options)
    expected = ips_ndcg_score(clicks, scores["a"], groups, propensity, k=10, clip=0.2, empty_value=empty_value)
    assert result["metrics"]["ips_ndcg@10"] == pytest.approx(expected, rel=1e-14)
    assert result["click_log"]["clip"] == 0.2
    # The clip counts: the DCG estimate differs from the default clip's (positions 6-9 have p < 0.2).
    dcg = ips_dcg_per_query(clicks, scores["a"], groups, propensity, k=10, clip=0.2)[1]
    kept = dcg if empty_value is not None else dcg[np.isin(np.unique(groups), groups[clicks == 1])]
    assert result["metrics"]["ips_dcg@10"] == pytest.approx(kept.mean(), rel=1e-14)
    assert result["metrics"]["ips_dcg@10"] != pytest.approx(
        ips_dcg_per_query(clicks, scores["a"], groups, propensity, k=10)[1].mean(), rel=1e-6)


def test_compare_on_a_click_log_equals_compare_rankings(log, capsys):
    files, clicks, groups, _, propensity, scores = log
    result = _json(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"],
                   "--scores", files["c"], "--propensities", files["propensities"], "--resamples", "2000", "--json")
    assert list(result["metrics"]) == ["ips_dcg@10", "ips_ndcg@10"]
    for key, metric in (("ips_dcg@10", "ips_dcg"), ("ips_ndcg@10", "ips_ndcg")):
        table = compare_rankings(clicks, scores["a"], {"b": scores["b"], "c": scores["c"]}, groups, metric=metric,
                                 k=10, propensity=propensity, n_resamples=2000, correction="holm", random_state=0)
        got = result["metrics"][key]
        assert got["baseline_mean"] == table.baseline_mean and got["n_queries"] == 70
        for row, expected in zip(got["comparisons"], table, strict=True):
            assert row["system"] == expected.system
            assert row["mean_difference"] == expected.mean_difference
            assert row["t_pvalue"] == expected.t_pvalue
            assert row["randomization_pvalue_adjusted"] == expected.randomization_pvalue_adjusted
    better = result["metrics"]["ips_ndcg@10"]["comparisons"][0]
    assert better["system"] == "b" and better["mean_difference"] > 0 and better["significant"]["randomization"]


def test_compare_drops_the_queries_without_a_click_with_their_propensities(log, capsys):
    files, clicks, groups, _, propensity, scores = log
    result = _json(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"],
                   "--propensity-curve", files["curve"], "--positions", files["positions"], "--metrics", "ips_dcg@10",
                   "--empty-queries", "drop", "--resamples", "100", "--json")
    ids, values = ips_dcg_per_query(clicks, scores["a"], groups, propensity, k=10)
    with_clicks = np.isin(ids, groups[clicks == 1])
    got = result["metrics"]["ips_dcg@10"]
    assert got["n_queries"] == with_clicks.sum() < 70
    assert got["baseline_mean"] == pytest.approx(values[with_clicks].mean(), rel=1e-14)
    assert result["click_log"]["propensity_curve"] == files["curve"]


def test_compare_text_names_the_click_log(log, capsys):
    files = log[0]
    status, out, _ = run(capsys, "compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"],
                         "--propensities", files["propensities"], "--resamples", "100")
    assert status == 0
    assert "click log: " in out.splitlines()[1]
    assert "\nIPS-DCG@10 over 70 queries\n" in out and "\nIPS-NDCG@10 over 70 queries\n" in out


def test_user_errors(log, capsys, tmp_path):
    files = log[0]
    evaluate = ["evaluate", "--data", files["data"], "--scores", files["a"]]
    assert_user_error(capsys, [*evaluate, "--metrics", "ips_ndcg@10"], "ips_ndcg@10 estimates a metric from a click "
                      "log", "give --propensities FILE")
    assert_user_error(capsys, ["compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"],
                               "--metrics", "ips_dcg"], "ips_dcg estimates a metric from a click log")
    assert_user_error(capsys, [*evaluate, "--positions", files["positions"]], "--positions needs --propensity-curve")
    assert_user_error(capsys, [*evaluate, "--propensities", files["propensities"], "--propensity-curve",
                               files["curve"]], "--propensities gives every row's propensity; it excludes")
    assert_user_error(capsys, [*evaluate, "--propensities", files["propensities"], "--clip", "0"], "--clip must be in "
                      "(0, 1]")
    assert_user_error(capsys, ["evaluate", "--data", files["graded"], "--scores", files["a"], "--propensities",
                               files["propensities"]], "need clicks as the labels of --data", "labels 0, 1, 2, 3, 4")
    short = tmp_path / "short.txt"
    short.write_text("1\n0.5\n0.33\n")
    assert_user_error(capsys, [*evaluate, "--propensity-curve", short, "--positions", files["positions"]],
                      "gives 3 positions, but --positions", "has position 9")
    assert_user_error(capsys, [*evaluate, "--propensities", short], "propensities file", "has 3 values, but the data "
                      "file has")
    weights = tmp_path / "weights.txt"
    np.savetxt(weights, 1.0 / np.loadtxt(files["propensities"]))
    assert_user_error(capsys, [*evaluate, "--propensities", weights], "is not an examination probability in (0, 1]",
                      "an inverse-propensity weight?")
    bad_curve = tmp_path / "curve.txt"
    bad_curve.write_text("1\n2\n")
    assert_user_error(capsys, [*evaluate, "--propensity-curve", bad_curve], "line 2: 2 is not an examination "
                      "probability")


def test_help_describes_the_click_log_options(capsys):
    for command in ("evaluate", "compare"):
        status, out, _ = run(capsys, command, "--help")
        assert status == 0
        for option in ("--propensities FILE", "--propensity-curve FILE", "--positions FILE", "--clip TAU"):
            assert option in out, (command, option)
        assert "ips_dcg@10,ips_ndcg@10" in out


def test_compare_report_on_a_click_log_never_overwrites_a_propensity_file(log, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    files = log[0]
    compare = ["compare", "--data", files["data"], "--scores", files["a"], "--scores", files["b"], "--resamples", "50",
               "--propensity-curve", files["curve"], "--positions", files["positions"]]
    for option in ("curve", "positions"):
        before = open(files[option]).read()
        assert_user_error(capsys, [*compare, "--report", files[option]], "writing it would destroy that input")
        assert open(files[option]).read() == before
    report = tmp_path / "report.html"
    status, out, _ = run(capsys, *compare, "--report", report)
    assert status == 0 and out.rstrip().endswith(f"wrote report to {report}")
    assert "IPS-NDCG@10" in report.read_text()


# --------------------------------------------------------------------------- train --simulate-clicks


@pytest.fixture
def graded_file(tmp_path):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(30) + 5, rng.integers(2, 9, size=30))
    y = rng.choice(5, size=groups.size, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    X = rng.normal(size=(groups.size, 3))
    path = tmp_path / "graded.txt"
    dump_svmlight_ranking(X, y, groups, path)
    return path, X, y, groups


def _simulated_rows(monkeypatch, capsys, path, *extra):
    """The click log ``train --model two-tower --simulate-clicks 3`` would train on (the fit itself is stopped)."""
    from sklearn_ltr.cli import _commands
    from sklearn_ltr.cli._errors import CLIError

    seen = []

    def stop(spec, params, rows, *args, **kwargs):
        seen.append(rows)
        raise CLIError("stopped before training")

    monkeypatch.setattr(_commands, "fit_model", stop)
    status, out, err = run(capsys, "train", "--model", "two-tower", "--train", path, "--out", path.parent / "m.joblib",
                           "--simulate-clicks", "3", "--logging-quality", "0.4", "--seed", "7", *extra)
    assert status == 2 and "stopped before training" in err, err
    return seen[0], out


def test_simulated_sessions_are_the_loop_of_simulate_clicks(monkeypatch, capsys, graded_file):
    path, X, y, groups = graded_file
    rows, out = _simulated_rows(monkeypatch, capsys, path)
    rng = np.random.default_rng(7)  # --seed: the generator of the three sessions
    pages = [simulate_clicks(y, groups, w=0.4, random_state=rng) for _ in range(3)]
    np.testing.assert_array_equal(rows.positions, np.concatenate([p for p, _ in pages]))
    np.testing.assert_array_equal(rows.y, np.concatenate([c for _, c in pages]))
    np.testing.assert_allclose(rows.X, np.tile(X, (3, 1)))
    codes = np.unique(groups, return_inverse=True)[1].ravel()
    np.testing.assert_array_equal(rows.groups, np.concatenate([codes * 3 + s for s in range(3)]))
    assert "3 simulated sessions per query (logging quality w=0.4, click model PositionBasedModel())" in out


@pytest.mark.parametrize(("extra", "name"), [(["--click-model", "cascade"], "CascadeModel()"),
                                             (["--click-model", "pbm", "--eta", "2"], "PositionBasedModel(eta=2.0)"),
                                             (["--eta", "0.5"], "PositionBasedModel(eta=0.5)"),
                                             (["--click-model", "ubm", "--eta", "1.5"], "UserBrowsingModel(eta=1.5)"),
                                             (["--click-model", "dcm"], "DependentClickModel()"),
                                             (["--click-model", "dbn"], "DynamicBayesianNetwork()")])
def test_click_model_option(monkeypatch, capsys, graded_file, extra, name):
    from sklearn_ltr.cli._clicks import make_click_model
    from sklearn_ltr.clicks import simulate_click_log

    path, _, y, groups = graded_file
    rows, out = _simulated_rows(monkeypatch, capsys, path, *extra)
    assert f"click model {name})" in out
    model = make_click_model(extra[1] if extra[0] == "--click-model" else "pbm",
                             float(extra[-1]) if "--eta" in extra else None)
    assert repr(model) == name
    log = simulate_click_log(y, groups, click_model=model, w=0.4, sessions=3, random_state=7)
    np.testing.assert_array_equal(rows.y, log.clicks)
    np.testing.assert_array_equal(rows.positions, log.positions)
    if extra[1] == "cascade":
        assert np.bincount(rows.groups, weights=rows.y).max() == 1  # one click at most per session


def test_click_model_option_errors(capsys, graded_file):
    path = graded_file[0]
    train = ["train", "--model", "two-tower", "--train", path, "--out", path.parent / "m.joblib"]
    assert_user_error(capsys, [*train, "--simulate-clicks", "2", "--click-model", "dbn", "--eta", "2"],
                      "--eta", "pbm or ubm")
    assert_user_error(capsys, [*train, "--simulate-clicks", "2", "--eta", "-1"], "--eta must be")
    assert_user_error(capsys, [*train, "--click-model", "cascade"], "--simulate-clicks N")
    status, _, err = run(capsys, *train, "--simulate-clicks", "2", "--click-model", "pcm")
    assert status == 2 and "invalid choice" in err
