"""Missing values on the command line: ``--missing-values`` on every command that reads data, the impute choices
of ``--preprocessing``, ``auto`` picking them for a neural model on data with NaN, and the demo on such a fold.

The data: queries of LETOR 4.0's MQ2007-agg (``NULL`` for a feature an input ranker did not give),
or small hand-made files with ``NULL``.
"""

import re

import joblib
import numpy as np
import pytest
from cli_helpers import assert_user_error, run  # tests/cli_helpers.py

from sklearn_ltr.datasets import dump_svmlight_ranking, load_ranking_layout, make_ranking

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RANKNET = ["--param", "max_epochs=2", "--param", "hidden_sizes=(8,)"]
DASALC = ["--param", "max_epochs=2", "--param", "hidden_size=8", "--param", "n_attention_layers=1", "--param",
          "head_size=4"]


def _queries(lines, first, last):
    """The lines of the queries ``first`` to ``last - 1`` (in file order) of LETOR lines."""
    order = list(dict.fromkeys(line.split()[1] for line in lines))
    keep = set(order[first:last])
    return "".join(line for line in lines if line.split()[1] in keep)


@pytest.fixture(scope="module")
def fold(data_dir, tmp_path_factory):
    """A small LETOR fold of MQ2007-agg queries (train 24, vali 8, test 10), with NULLs, and an NA copy of test."""
    folder = tmp_path_factory.mktemp("agg_fold")
    lines = (data_dir / "mq2007-agg" / "S1.txt").read_text().splitlines(keepends=True)
    for name, (first, last) in {"train": (0, 24), "vali": (24, 32), "test": (32, 42)}.items():
        (folder / f"{name}.txt").write_text(_queries(lines, first, last))
    (folder / "na.txt").write_text((folder / "test.txt").read_text().replace(":NULL", ":NA"))
    return folder


def test_lambdamart_trains_predicts_and_evaluates_with_null(fold, tmp_path, capsys):
    model = tmp_path / "lm.joblib"
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", fold / "train.txt", "--valid",
                           fold / "vali.txt", "--out", model, "--threads", "1", "--param", "n_estimators=10")
    assert status == 0, err
    assert re.search(r"train .*train.txt: [\d,]+ rows, 24 queries, 21 features, [\d,]+ missing values \(\d+\.\d%\)",
                     out), out
    assert "preprocessing" not in out.split("trained ")[1].splitlines()[0]  # LightGBM takes NaN as it is
    assert joblib.load(model).cli_metadata_["preprocessing"] == "none"
    status, out, err = run(capsys, "predict", "--model", model, "--data", fold / "test.txt", "--out", tmp_path / "s")
    assert status == 0, err
    scores = np.loadtxt(tmp_path / "s")
    assert np.isfinite(scores).all() and len(scores) == len((fold / "test.txt").read_text().splitlines())
    status, out, err = run(capsys, "evaluate", "--model", model, "--data", fold / "test.txt")
    assert status == 0, err
    assert "NDCG@10" in out
    status, out, err = run(capsys, "compare", "--scores", tmp_path / "s", "--scores", tmp_path / "s", "--data",
                           fold / "test.txt", "--resamples", "10")
    assert status == 0, err


@pytest.mark.parametrize(("model", "params", "auto"), [
    ("ranknet", RANKNET, "impute-log1p-standardize"), ("dasalc", DASALC, "impute"),
])  # fmt: skip
def test_auto_preprocessing_imputes_for_a_neural_model(fold, tmp_path, capsys, model, params, auto):
    path = tmp_path / "m.joblib"
    status, out, err = run(capsys, "train", "--model", model, "--train", fold / "train.txt", "--valid",
                           fold / "vali.txt", "--out", path, *params)
    assert status == 0, err
    assert f"; preprocessing {auto} (missing values: mean, with indicator columns))" in out, out
    estimator = joblib.load(path)
    metadata = estimator.cli_metadata_
    assert (metadata["preprocessing"], metadata["impute_strategy"]) == (auto, "mean")
    imputer = estimator.named_steps["impute"]
    assert (type(imputer).__name__, imputer.strategy, imputer.add_indicator) == ("SimpleImputer", "mean", True)
    assert [name for name, _ in estimator.steps][-1] == "ranker"
    status, out, err = run(capsys, "evaluate", "--model", path, "--data", fold / "test.txt")
    assert status == 0, err


def test_impute_strategy_and_explicit_choices(fold, tmp_path, capsys):
    path = tmp_path / "m.joblib"
    status, _, err = run(capsys, "train", "--model", "ranknet", "--train", fold / "train.txt", "--out", path,
                         "--preprocessing", "impute-standardize", "--impute-strategy", "constant=1000", *RANKNET)
    assert status == 0, err
    estimator = joblib.load(path)
    assert [name for name, _ in estimator.steps] == ["impute", "scale", "ranker"]
    assert (estimator.named_steps["impute"].strategy, estimator.named_steps["impute"].fill_value) == ("constant",
                                                                                                      1000.0)
    assert estimator.cli_metadata_["impute_strategy"] == "constant=1000"
    for strategy, fragment in (("constant", "one of mean, median, most_frequent, constant=VALUE"),
                               ("max", "one of mean"), ("constant=x", "needs a number"),
                               ("constant=inf", "finite")):
        assert_user_error(capsys, ["train", "--model", "ranknet", "--train", fold / "train.txt", "--out", path,
                                   "--impute-strategy", strategy, *RANKNET], "--impute-strategy", fragment)


def test_a_neural_model_without_imputation_names_the_fix(fold, tmp_path, capsys):
    assert_user_error(capsys, ["train", "--model", "ranknet", "--train", fold / "train.txt", "--out",
                               tmp_path / "m.joblib", "--preprocessing", "log1p-standardize", *RANKNET],
                      "--train", "line 1: feature 1 is nan", "ranknet cannot take missing values",
                      "--preprocessing impute-standardize, impute-log1p-standardize or impute")
    # A model trained on complete data, without an imputer, cannot score a file with NaN.
    X, y, qid = make_ranking(n_queries=10, n_features=21, random_state=0)
    dump_svmlight_ranking(X, y, qid, tmp_path / "full.txt")
    status, _, err = run(capsys, "train", "--model", "ranknet", "--train", tmp_path / "full.txt", "--out",
                         tmp_path / "full.joblib", *RANKNET)
    assert status == 0, err
    assert_user_error(capsys, ["predict", "--model", tmp_path / "full.joblib", "--data", fold / "test.txt", "--out",
                               tmp_path / "s"], "--data", "cannot take missing values")


def test_missing_values_option_of_every_command(fold, tmp_path, capsys):
    na = fold / "na.txt"
    # NA is not a default token: the error names the line and the option that reads it.
    for command in (["evaluate", "--scores", tmp_path / "s", "--data", na],
                    ["convert", na, tmp_path / "na.ltr"],
                    ["train", "--model", "lambdamart", "--train", na, "--out", tmp_path / "m.joblib"]):
        assert_user_error(capsys, command, "line 1: '1:NA' is not '<index>:<value>'",
                          "read it as NaN with --missing-values NULL,NA.")
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", na, "--out", tmp_path / "m.joblib",
                           "--missing-values", "NULL,NA", "--threads", "1", "--param", "n_estimators=5")
    assert status == 0, err
    assert "missing values" in out
    status, _, err = run(capsys, "convert", na, tmp_path / "na.ltr", "--missing-values", "NA")
    assert status == 0, err
    X, _, _ = load_ranking_layout(tmp_path / "na.ltr")
    assert np.isnan(X).any()
    status, _, err = run(capsys, "predict", "--model", tmp_path / "m.joblib", "--data", na, "--out", tmp_path / "s",
                         "--missing-values", " NA ,")
    assert status == 0, err
    # '' turns it off: NULL is then the error it used to be.
    assert_user_error(capsys, ["evaluate", "--model", tmp_path / "m.joblib", "--data", fold / "test.txt",
                               "--missing-values", ""], "is not '<index>:<value>'", "--missing-values NULL.")
    assert_user_error(capsys, ["predict", "--model", tmp_path / "m.joblib", "--data", na, "--out", tmp_path / "s",
                               "--missing-values", "-1"], "--missing-values holds '-1', a number")


def test_demo_on_a_fold_with_missing_values(fold, capsys):
    status, out, err = run(capsys, "demo", "--quick", "--data", fold, "--no-progress")
    assert status == 0, err
    assert re.search(r"21 features, \d+\.\d% of feature values missing", out), out
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "Ridge regression on labels (pointwise)" in rows and "TwoTowerDebiasedRanker on clicks" in rows
    assert "RankNetRanker: RankNetRanker(" in out
    assert "(missing values imputed: --preprocessing impute-log1p-standardize)" in out
    assert "(missing values imputed: --preprocessing impute)" in out  # DASALC


def test_the_demo_baseline_imputes_only_data_with_nan(monkeypatch):
    """Ridge on data without NaN is the pipeline it always was: no imputer."""
    from sklearn.pipeline import Pipeline

    from sklearn_ltr.cli import _demo
    from sklearn_ltr.cli._data_files import RankingFile

    fitted = []
    fit = Pipeline.fit
    monkeypatch.setattr(Pipeline, "fit", lambda self, *a, **k: fitted.append(self) or fit(self, *a, **k))
    X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=0)
    full = RankingFile("full", "synthetic", X, y, qid)
    _demo._ridge(full, full)
    X = X.copy()
    X[0, 0] = np.nan
    _demo._ridge(RankingFile("nan", "synthetic", X, y, qid), full)
    assert [[name for name, _ in p.steps] for p in fitted] == [
        ["log1ptransformer", "standardscaler", "ridge"],
        ["simpleimputer", "log1ptransformer", "standardscaler", "ridge"]]


def test_an_imputing_model_saves_and_loads_as_skops(fold, tmp_path, capsys):
    pytest.importorskip("skops", reason="the skops model format needs the 'serving' extra")
    path = tmp_path / "m.skops"
    status, _, err = run(capsys, "train", "--model", "ranknet", "--train", fold / "train.txt", "--out", path,
                         "--preprocessing", "impute-standardize", *RANKNET)
    assert status == 0, err
    status, _, err = run(capsys, "predict", "--model", path, "--data", fold / "test.txt", "--out", tmp_path / "s")
    assert status == 0, err
    assert np.isfinite(np.loadtxt(tmp_path / "s")).all()
