"""Tests for sklearn_ltr.cli: demo, train, predict and evaluate on small files and on MQ2008 Fold 1.

Commands run in-process through ``main([...])``; ``python -m sklearn_ltr --help`` and an
error of the ``sklearn-ltr`` console script (when installed) run in a subprocess, to check
the real entry points and their exit status.
"""

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest

from sklearn_ltr import LambdaMARTRanker, __version__
from sklearn_ltr.cli import main
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.datasets import (
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_lightgbm_ranking,
    load_svmlight_ranking,
    make_ranking,
    simulate_clicks,
)
from sklearn_ltr.metrics import average_precision_score, dcg_score, err_score, mrr_score, ndcg_score, precision_at_k

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MODELS = ("lambdamart", "ranknet", "dasalc", "setrank", "two-tower")
# Small budgets: every model trains in about a second on the small file.
SMALL_PARAMS = {
    "lambdamart": ["n_estimators=30", "min_child_samples=5"],
    "ranknet": ["max_epochs=4", "hidden_sizes=(16,)", "lr=0.01"],
    "dasalc": ["max_epochs=4", "hidden_size=16", "n_attention_layers=1", "head_size=8", "noise_std=0.5",
               "lr=0.01"],
    "setrank": ["max_epochs=4", "d_model=16", "n_heads=2", "n_blocks=1", "lr=0.01"],
    "two-tower": ["max_epochs=4", "hidden_sizes=(16,)", "lr=0.01"],
}


def _params(model):
    return [arg for value in SMALL_PARAMS[model] for arg in ("--param", value)]


def run(capsys, *args):
    """``main(args)``: ``(exit status, stdout, stderr)``."""
    status = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return status, out, err


def assert_user_error(capsys, args, *fragments):
    """The command fails with status 2 and one ``sklearn-ltr: error:`` line naming ``fragments``."""
    status, _, err = run(capsys, *args)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sklearn-ltr: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def read_scores(path):
    return np.array([float(line) for line in Path(path).read_text().splitlines()])


def random_ndcg(y, groups, n=20):
    """Mean NDCG@10 of random scores."""
    rng = np.random.default_rng(0)
    return np.mean([ndcg_score(y, rng.normal(size=len(y)), groups, k=10) for _ in range(n)])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Training and test files of the same synthetic data, in both formats."""
    folder = tmp_path_factory.mktemp("cli")
    X, y, groups = make_ranking(n_queries=60, n_features=8, mean_list_length=15, random_state=0)
    train = groups < 40
    paths = {}
    for part, rows in (("train", train), ("test", ~train)):
        paths[f"{part}.txt"] = folder / f"{part}.txt"
        paths[f"{part}.lgb"] = folder / f"{part}.lgb"
        dump_svmlight_ranking(X[rows], y[rows], groups[rows], paths[f"{part}.txt"])
        dump_lightgbm_ranking(X[rows], y[rows], groups[rows], paths[f"{part}.lgb"])
    paths["folder"] = folder
    return paths


@pytest.fixture(scope="module")
def lambdamart_model(files):
    path = files["folder"] / "lambdamart.joblib"
    assert main(["train", "--model", "lambdamart", "--train", str(files["train.txt"]), "--out", str(path),
                 "--threads", "1", *_params("lambdamart")]) == 0
    return path


# --------------------------------------------------------------------------- entry points


def test_python_m_help():
    done = subprocess.run([sys.executable, "-m", "sklearn_ltr", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for command in ("demo", "train", "predict", "evaluate"):
        assert command in done.stdout


def test_console_script(tmp_path):
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    module, _, name = re.search(r'sklearn-ltr = "(.+)"', pyproject.read_text()).group(1).partition(":")
    assert getattr(importlib.import_module(module), name) is main
    script = shutil.which("sklearn-ltr", path=os.path.dirname(sys.executable)) or shutil.which("sklearn-ltr")
    if script is None:
        pytest.skip("the sklearn-ltr console script is not installed (pip install -e . installs it)")
    done = subprocess.run([script, "predict", "--model", str(tmp_path / "none.joblib"), "--data", "x.txt",
                           "--out", "-"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"sklearn-ltr: error: model file '{tmp_path / 'none.joblib'}' "
                                                f"does not exist."]
    assert done.stdout == ""


def test_version_and_usage_errors(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out.strip() == f"sklearn-ltr {__version__}"
    status, _, err = run(capsys, "train", "--model", "xgboost", "--train", "a", "--out", "b")
    assert status == 2 and "invalid choice: 'xgboost'" in err
    status, _, err = run(capsys)
    assert status == 2 and "required" in err


# --------------------------------------------------------------------------- train / predict / evaluate


@pytest.mark.parametrize("model", MODELS)
def test_train_predict_evaluate_every_model(capsys, files, model, tmp_path):
    path, scores_path = tmp_path / "model.joblib", tmp_path / "scores.txt"
    clicks = ["--simulate-clicks", "3"] if model == "two-tower" else []
    status, out, err = run(capsys, "train", "--model", model, "--train", files["train.txt"], "--valid",
                           files["test.txt"], "--out", path, "--threads", "1", *clicks, *_params(model))
    assert status == 0, err
    assert "valid" in out and f"saved model to {path}" in out

    status, _, err = run(capsys, "predict", "--model", path, "--data", files["test.txt"], "--out", scores_path)
    assert status == 0, err
    X, y, groups = load_svmlight_ranking(files["test.txt"])
    scores = read_scores(scores_path)
    assert scores.shape == y.shape and np.isfinite(scores).all()
    assert ndcg_score(y, scores, groups, k=10) > random_ndcg(y, groups)

    bundle = joblib.load(path)
    assert bundle["model"] == model and bundle["n_features"] == X.shape[1]
    assert bundle["sklearn_ltr_version"] == __version__
    np.testing.assert_array_equal(bundle["estimator"].predict(X, groups=groups), scores)

    status, out, _ = run(capsys, "evaluate", "--model", path, "--data", files["test.txt"], "--metrics",
                         "ndcg@10,map@10", "--json")
    assert status == 0
    values = json.loads(out)["metrics"]
    assert values == {"ndcg@10": ndcg_score(y, scores, groups, k=10),
                      "map@10": average_precision_score(y, scores, groups, k=10)}


def test_saved_model_keeps_no_cli_callbacks(files, tmp_path):
    path = tmp_path / "ranknet.joblib"
    assert main(["train", "--model", "ranknet", "--train", str(files["train.txt"]), "--valid",
                 str(files["test.txt"]), "--out", str(path), "--threads", "1", "--progress",
                 *_params("ranknet")]) == 0
    bundle = joblib.load(path)
    pipeline = bundle["estimator"]
    assert [name for name, _ in pipeline.steps] == ["log1p", "scale", "ranker"]
    ranker = pipeline.named_steps["ranker"]
    assert ranker.callbacks is None
    assert not [name for name, _ in ranker.net_.callbacks_ if name.startswith("cli_")]
    assert "vali_ndcg@10" in ranker.history_[-1]  # the validation file was scored every epoch
    assert bundle["params"] == {"max_epochs": 4, "hidden_sizes": (16,), "lr": 0.01}


def test_progress_bars_go_to_stderr(capsys, files, tmp_path):
    status, out, err = run(capsys, "train", "--model", "ranknet", "--train", files["train.txt"], "--out",
                           tmp_path / "m.joblib", "--threads", "1", "--progress", *_params("ranknet"))
    assert status == 0
    assert "0/4 [" in err and "epoch/s" in err  # a tqdm bar over the 4 epochs
    assert "%|" not in out


def test_lightgbm_format_gives_the_same_model(capsys, files, lambdamart_model, tmp_path):
    path = tmp_path / "lgb.joblib"
    status, _, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train.lgb"], "--out", path,
                         "--threads", "1", *_params("lambdamart"))
    assert status == 0, err
    for model, data, fmt in ((path, files["test.lgb"], "auto"), (lambdamart_model, files["test.txt"], "svmlight"),
                             (path, files["test.lgb"], "lightgbm")):
        status, _, err = run(capsys, "predict", "--model", model, "--data", data, "--out",
                             tmp_path / f"{fmt}.txt", "--format", fmt)
        assert status == 0, err
    # Both files hold the same rows in the same order: the two models are the same.
    np.testing.assert_array_equal(read_scores(tmp_path / "auto.txt"), read_scores(tmp_path / "svmlight.txt"))
    np.testing.assert_array_equal(read_scores(tmp_path / "auto.txt"), read_scores(tmp_path / "lightgbm.txt"))
    _, y, _ = load_lightgbm_ranking(files["test.lgb"])
    assert len(read_scores(tmp_path / "auto.txt")) == len(y)


def test_predict_to_stdout_pads_sparse_files_and_skips_query_file(capsys, files, lambdamart_model, tmp_path):
    X, _, _ = load_svmlight_ranking(files["test.txt"])
    narrow = tmp_path / "narrow.txt"
    # Two features short (a sparse file without its last columns), no .query file, no qid.
    dump_svmlight_ranking(X[:, :-2], np.zeros(len(X)), np.zeros(len(X), dtype=int), narrow)
    narrow.write_text("".join(line.replace(" qid:0", "") + "\n" for line in narrow.read_text().splitlines()))
    status, out, err = run(capsys, "predict", "--model", lambdamart_model, "--data", narrow, "--out", "-")
    assert status == 0, err
    scores = np.array([float(v) for v in out.split()])
    padded = np.hstack([X[:, :-2], np.zeros((len(X), 2))])
    np.testing.assert_array_equal(scores, joblib.load(lambdamart_model)["estimator"].predict(padded))


def test_evaluate_metrics_match_the_library(capsys, files, lambdamart_model, tmp_path):
    scores_path = tmp_path / "scores.txt"
    run(capsys, "predict", "--model", lambdamart_model, "--data", files["test.txt"], "--out", scores_path)
    _, y, groups = load_svmlight_ranking(files["test.txt"])
    scores = read_scores(scores_path)
    expected = {
        "ndcg@5": ndcg_score(y, scores, groups, k=5), "ndcg": ndcg_score(y, scores, groups),
        "dcg@3": dcg_score(y, scores, groups, k=3), "map": average_precision_score(y, scores, groups),
        "precision@5": precision_at_k(y, scores, groups, k=5), "mrr": mrr_score(y, scores, groups),
        "err@10": err_score(y, scores, groups, k=10),
    }
    metrics = "NDCG@5,ndcg,dcg@3,map,p@5,mrr,err@10,ndcg@5"  # case-insensitive, alias, duplicate
    for source in (["--model", lambdamart_model], ["--scores", scores_path]):
        status, out, err = run(capsys, "evaluate", *source, "--data", files["test.txt"], "--metrics", metrics,
                               "--json")
        assert status == 0, err
        assert json.loads(out)["metrics"] == expected
    status, out, _ = run(capsys, "evaluate", "--scores", scores_path, "--data", files["test.txt"])
    assert status == 0
    table = dict(line.split() for line in out.splitlines()[2:])
    assert table == {"NDCG@1": f"{ndcg_score(y, scores, groups, k=1):.4f}",
                     "NDCG@5": f"{ndcg_score(y, scores, groups, k=5):.4f}",
                     "NDCG@10": f"{ndcg_score(y, scores, groups, k=10):.4f}",
                     "MAP@10": f"{average_precision_score(y, scores, groups, k=10):.4f}"}


def _click_log(files, folder):
    """A click log of the training queries, each query's rows in display order."""
    X, y, groups = load_svmlight_ranking(files["train.txt"])
    positions, clicks = simulate_clicks(y.astype(int), groups, random_state=0)
    order = np.lexsort((positions, groups))
    path = folder / "clicks.txt"
    dump_svmlight_ranking(X[order], clicks[order], groups[order], path)
    return path, positions[order]


def test_two_tower_trains_on_a_click_log(capsys, files, tmp_path):
    log, positions = _click_log(files, tmp_path)
    for extra in ([], ["--positions", tmp_path / "pos.txt"]):
        (tmp_path / "pos.txt").write_text("".join(f"{p}\n" for p in positions))
        status, out, err = run(capsys, "train", "--model", "two-tower", "--train", log, "--out",
                               tmp_path / "tt.joblib", "--threads", "1", *extra, *_params("two-tower"))
        assert status == 0, err
        assert "click log" in out
    (tmp_path / "pos.txt").write_text("1\n2\n")
    assert_user_error(capsys, ["train", "--model", "two-tower", "--train", log, "--out", tmp_path / "tt.joblib",
                               "--positions", tmp_path / "pos.txt"], "has 2 values", "rows")


# --------------------------------------------------------------------------- MQ2008


@pytest.mark.parametrize("model, params", [
    ("lambdamart", ["n_estimators=100", "learning_rate=0.05", "num_leaves=15", "n_jobs=1"]),
    ("ranknet", ["max_epochs=3"]),
])
def test_mq2008_fold1(capsys, data_dir, model, params, tmp_path):
    fold = data_dir / "mq2008" / "Fold1"
    path, scores_path = tmp_path / "model.joblib", tmp_path / "scores.txt"
    params = [arg for value in params for arg in ("--param", value)]
    status, out, err = run(capsys, "train", "--model", model, "--train", fold / "train.txt", "--valid",
                           fold / "vali.txt", "--out", path, "--threads", "1", *params)
    assert status == 0, err
    assert "9,630 rows, 471 queries, 46 features" in out
    status, _, err = run(capsys, "predict", "--model", path, "--data", fold / "test.txt", "--out", scores_path)
    assert status == 0, err
    X, y, groups = load_svmlight_ranking(fold / "test.txt")
    scores = read_scores(scores_path)
    assert scores.shape == (2874,)
    assert ndcg_score(y, scores, groups, k=10) > random_ndcg(y, groups) + 0.1

    # A second predict gives the same scores, and so does the loaded estimator.
    run(capsys, "predict", "--model", path, "--data", fold / "test.txt", "--out", tmp_path / "again.txt")
    np.testing.assert_array_equal(read_scores(tmp_path / "again.txt"), scores)
    np.testing.assert_array_equal(joblib.load(path)["estimator"].predict(X, groups=groups), scores)

    status, out, _ = run(capsys, "evaluate", "--model", path, "--data", fold / "test.txt", "--metrics",
                         "ndcg@10,map@10", "--json")
    assert json.loads(out)["metrics"] == {"ndcg@10": ndcg_score(y, scores, groups, k=10),
                                          "map@10": average_precision_score(y, scores, groups, k=10)}
    if model == "lambdamart":  # the command line trains the model the Python API trains
        train, vali = (load_svmlight_ranking(fold / f"{part}.txt") for part in ("train", "vali"))
        ranker = LambdaMARTRanker(n_estimators=100, learning_rate=0.05, num_leaves=15, n_jobs=1, random_state=0,
                                  eval_at=(10,), early_stopping_rounds=50).fit(*train, eval_set=[vali])
        np.testing.assert_allclose(ranker.predict(X), scores, rtol=1e-12)


# --------------------------------------------------------------------------- user errors


def test_data_file_errors(capsys, files, tmp_path):
    out = tmp_path / "m.joblib"
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", tmp_path / "missing.txt", "--out", out],
                      "missing.txt", "does not exist")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5 2:0.1\n# a comment\n0 qid:1 1:0.2 2:x\n")
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", bad, "--out", out],
                      "bad.txt", "line 3", "'2:x'")
    no_query = tmp_path / "rows.lgb"
    shutil.copy(files["train.lgb"], no_query)
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", no_query, "--out", out],
                      "rows.lgb.query", "does not exist")
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", files["train.lgb"], "--format",
                               "svmlight", "--out", out], "no 'qid:'", "--format lightgbm")
    bad_sizes = tmp_path / "sizes.lgb"
    shutil.copy(files["train.lgb"], bad_sizes)
    Path(f"{bad_sizes}.query").write_text("3\n4\n")
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", bad_sizes, "--out", out],
                      "sizes.lgb.query", "sum to 7")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", empty, "--out", out], "no data rows")
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", files["train.txt"], "--out",
                               tmp_path / "no" / "m.joblib"], "does not exist")


def test_parameter_errors(capsys, files, tmp_path):
    args = ["train", "--train", files["train.txt"], "--out", tmp_path / "m.joblib", "--threads", "1"]
    message = assert_user_error(capsys, [*args, "--model", "ranknet", "--param", "hidden_size=32"],
                                "unknown parameter 'hidden_size'", "Did you mean 'hidden_sizes'?", "max_epochs")
    assert "callbacks" not in message
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--param", "n_estimators"], "key=value")
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--param", "n_estimators=5", "--param",
                               "n_estimators=6"], "given twice")
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--param", "learning_rate=fast"], "takes a number")
    assert_user_error(capsys, [*args, "--model", "ranknet", "--param", "hidden_sizes=64"], "(64,)")
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--param", "n_estimators=0"],
                      "training lambdamart failed")
    assert_user_error(capsys, [*args, "--model", "dasalc", "--param", "dropout=1.5"], "training dasalc failed",
                      "dropout")
    assert_user_error(capsys, [*args, "--model", "two-tower"], "--simulate-clicks N")
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--simulate-clicks", "3"], "two-tower")
    assert_user_error(capsys, [*args, "--model", "ranknet", "--threads", "0"], "--threads")


def test_model_file_versions_and_traceback(capsys, files, lambdamart_model, tmp_path):
    bundle = joblib.load(lambdamart_model)
    joblib.dump({**bundle, "sklearn_ltr_version": "0.0.1"}, tmp_path / "old.joblib")
    status, out, err = run(capsys, "predict", "--model", tmp_path / "old.joblib", "--data", files["test.txt"],
                           "--out", "-")
    assert status == 0 and len(out.split()) == len(load_svmlight_ranking(files["test.txt"])[1])
    assert err.startswith("sklearn-ltr: warning: ") and "0.0.1" in err
    joblib.dump({**bundle, "format_version": 99}, tmp_path / "new.joblib")
    assert_user_error(capsys, ["predict", "--model", tmp_path / "new.joblib", "--data", files["test.txt"], "--out",
                               "-"], "newer sklearn_ltr")
    with pytest.raises(CLIError, match="does not exist"):
        main(["predict", "--model", str(tmp_path / "none.joblib"), "--data", "x", "--out", "-", "--traceback"])


def test_no_early_stopping_still_reports_validation(capsys, files, tmp_path):
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train.txt"], "--valid",
                           files["test.txt"], "--no-early-stopping", "--out", tmp_path / "m.joblib", "--threads", "1",
                           "--param", "n_estimators=7")
    assert status == 0, err
    assert "rounds 7" in out and "valid 0." in out
    bundle = joblib.load(tmp_path / "m.joblib")
    assert bundle["best_iteration"] is None and 0 < bundle["valid_ndcg@10"] <= 1


def test_model_and_predict_errors(capsys, files, lambdamart_model, tmp_path):
    not_a_model = tmp_path / "list.joblib"
    joblib.dump([1, 2, 3], not_a_model)
    for path in (files["train.txt"], not_a_model):
        assert_user_error(capsys, ["predict", "--model", path, "--data", files["test.txt"], "--out", "-"],
                          "is not a model file written by 'sklearn-ltr train'")
    X, y, groups = load_svmlight_ranking(files["test.txt"])
    wide = tmp_path / "wide.txt"
    dump_svmlight_ranking(np.hstack([X, np.ones((len(X), 1))]), y, groups, wide)
    assert_user_error(capsys, ["predict", "--model", lambdamart_model, "--data", wide, "--out", "-"],
                      "has 9 features", "trained on 8")
    assert_user_error(capsys, ["evaluate", "--model", lambdamart_model, "--data", files["test.txt"], "--metrics",
                               "ndcg@10,auc"], "unknown metric 'auc'", "precision@k")
    assert_user_error(capsys, ["evaluate", "--model", lambdamart_model, "--data", files["test.txt"], "--metrics",
                               "precision"], "needs a cut-off")
    assert_user_error(capsys, ["evaluate", "--model", lambdamart_model, "--data", files["test.txt"], "--metrics",
                               "ndcg@0"], "positive integer")
    (tmp_path / "short.txt").write_text("0.5\n")
    assert_user_error(capsys, ["evaluate", "--scores", tmp_path / "short.txt", "--data", files["test.txt"]],
                      "has 1 values")


# --------------------------------------------------------------------------- demo


def test_demo_lists_every_model(capsys):
    status, out, err = run(capsys, "demo", "--quick", "--queries", "12", "--no-progress")
    assert status == 0, err
    rows = [line.split("  ")[0] for line in out.splitlines()]
    for name in ("random scores", "Ridge regression on labels (pointwise)", "LambdaMARTRanker", "RankNetRanker",
                 "DASALCRanker", "SetRankRanker", "RankNetRanker on clicks (not debiased)",
                 "TwoTowerDebiasedRanker on clicks"):
        assert name in rows, out
    assert "NDCG@10" in out and "fit (s)" in out
    assert "simulated from the training labels" in " ".join(out.split())
    assert "LambdaMARTRanker" in err  # one line per model on stderr without progress bars


def test_demo_on_a_fold_directory(capsys, files, tmp_path):
    shutil.copy(files["train.txt"], tmp_path / "train.txt")
    assert_user_error(capsys, ["demo", "--data", tmp_path], "lacks test.txt")
    shutil.copy(files["test.txt"], tmp_path / "test.txt")  # no vali.txt: nothing early-stops
    status, out, err = run(capsys, "demo", "--quick", "--data", tmp_path, "--no-progress")
    assert status == 0, err
    assert f"LETOR fold {tmp_path}" in out and "TwoTowerDebiasedRanker on clicks" in out
    assert_user_error(capsys, ["demo", "--queries", "5"], "at least 8")
    assert_user_error(capsys, ["demo", "--queries", "50", "--data", tmp_path], "does not apply with --data")
