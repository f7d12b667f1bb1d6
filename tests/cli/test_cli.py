"""Tests for sklearn_ltr.cli: demo, train, predict and evaluate on small files and on MQ2008 Fold 1.

Commands run in-process through ``main([...])``; ``python -m sklearn_ltr --help`` and an
error of the ``sklearn-ltr`` console script (when installed) run in a subprocess, to check
the real entry points and their exit status.
"""

import bz2
import errno
import gzip
import importlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import joblib
import numpy as np
import pytest
from cli_helpers import assert_user_error, run  # tests/cli_helpers.py
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ltr import LambdaMARTRanker, __version__
from sklearn_ltr.cli import _commands, _data_files, _epoch_bar, _output, main
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
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
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

    estimator = joblib.load(path)  # the estimator itself, what train recorded on it
    metadata = estimator.cli_metadata_
    assert metadata["model"] == model and metadata["n_features"] == X.shape[1]
    assert metadata["sklearn_ltr_version"] == __version__ and metadata["format_version"] == 2
    np.testing.assert_array_equal(estimator.predict(X, groups=groups), scores)

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
    pipeline = joblib.load(path)
    assert [name for name, _ in pipeline.steps] == ["log1p", "scale", "ranker"]
    ranker = pipeline.named_steps["ranker"]
    assert ranker.callbacks is None
    assert not hasattr(ranker.net_, "callbacks_")  # no training state, the command line's callbacks included
    assert "vali_ndcg@10" in ranker.history_[-1]  # the validation file was scored every epoch
    assert pipeline.cli_metadata_["params"] == {"max_epochs": 4, "hidden_sizes": (16,), "lr": 0.01}


def test_kept_training_state_keeps_no_cli_callbacks(files, tmp_path):
    path = tmp_path / "ranknet.joblib"
    assert main(["train", "--model", "ranknet", "--train", str(files["train.txt"]), "--valid",
                 str(files["test.txt"]), "--out", str(path), "--threads", "1", *_params("ranknet"),
                 "--param", "keep_training_state=true"]) == 0
    ranker = joblib.load(path).named_steps["ranker"]
    names = [name for name, _ in ranker.net_.callbacks_]
    assert "train_loss" in names and not [name for name in names if name.startswith("cli_")]


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
    np.testing.assert_array_equal(scores, joblib.load(lambdamart_model).predict(padded))


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
    np.testing.assert_array_equal(joblib.load(path).predict(X, groups=groups), scores)

    status, out, _ = run(capsys, "evaluate", "--model", path, "--data", fold / "test.txt", "--metrics",
                         "ndcg@10,map@10", "--json")
    assert json.loads(out)["metrics"] == {"ndcg@10": ndcg_score(y, scores, groups, k=10),
                                          "map@10": average_precision_score(y, scores, groups, k=10)}
    if model == "lambdamart":  # the command line trains the model the Python API trains
        train, vali = (load_svmlight_ranking(fold / f"{part}.txt") for part in ("train", "vali"))
        ranker = LambdaMARTRanker(n_estimators=100, learning_rate=0.05, num_leaves=15, n_jobs=1, random_state=0,
                                  eval_at=(10,), early_stopping_rounds=50).fit(*train, eval_set=[vali])
        np.testing.assert_allclose(ranker.predict(X), scores, rtol=1e-12)


# --------------------------------------------------------------------------- the registry of file formats


def test_format_choices_are_the_registry_names():
    import argparse

    from sklearn_ltr.cli._main import build_parser
    from sklearn_ltr.datasets import FILE_FORMATS

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name in ("train", "predict", "evaluate"):
        choices = next(a.choices for a in commands[name]._actions if "--format" in a.option_strings)
        assert list(choices) == ["auto", *FILE_FORMATS], name


@pytest.mark.parametrize("fmt", ["auto", "svmlight"])
def test_data_is_read_through_the_registry(capsys, monkeypatch, files, lambdamart_model, fmt):
    """The command line reads data with the registry's reader: replacing an entry's reader is seen."""
    import dataclasses
    from types import MappingProxyType

    from sklearn_ltr.datasets import FILE_FORMATS, _file_formats

    calls = []

    def reader(path, **options):
        calls.append(str(path))
        return load_svmlight_ranking(path, **options)

    registry = MappingProxyType({**FILE_FORMATS, "svmlight": dataclasses.replace(FILE_FORMATS["svmlight"],
                                                                                  reader=reader)})
    monkeypatch.setattr(_file_formats, "FILE_FORMATS", registry)
    monkeypatch.setattr(_data_files, "FILE_FORMATS", registry)
    status, out, _ = run(capsys, "predict", "--model", lambdamart_model, "--data", files["test.txt"], "--format", fmt,
                         "--out", "-")
    assert status == 0 and len(out.split()) == len(load_svmlight_ranking(files["test.txt"])[1])
    assert calls == [str(files["test.txt"])]


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
    assert_user_error(capsys, [*args, "--model", "lambdamart", "--threads", "1000000000"], "--threads 1000000000",
                      "CPU cores")


def _with_metadata(path, **changes):
    """The model of ``path`` with ``changes`` to its ``cli_metadata_``."""
    estimator = joblib.load(path)
    estimator.cli_metadata_ = {**estimator.cli_metadata_, **changes}
    return estimator


def test_model_file_versions_and_traceback(capsys, files, lambdamart_model, tmp_path):
    joblib.dump(_with_metadata(lambdamart_model, sklearn_ltr_version="0.0.1"), tmp_path / "old.joblib")
    status, out, err = run(capsys, "predict", "--model", tmp_path / "old.joblib", "--data", files["test.txt"],
                           "--out", "-")
    assert status == 0 and len(out.split()) == len(load_svmlight_ranking(files["test.txt"])[1])
    assert err.startswith("sklearn-ltr: warning: ") and "0.0.1" in err
    joblib.dump(_with_metadata(lambdamart_model, format_version=99), tmp_path / "new.joblib")
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
    metadata = joblib.load(tmp_path / "m.joblib").cli_metadata_
    assert metadata["best_iteration"] is None and 0 < metadata["valid_ndcg@10"] <= 1


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


# --------------------------------------------------------------------------- files are never lost


def snapshot(folder):
    """``{relative path: bytes}`` of every file under ``folder`` (hidden temporary files included)."""
    folder = Path(folder)
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def work(files, lambdamart_model, tmp_path):
    """A private folder with copies of the test data (both formats), a model and a positions file."""
    for name in ("train.txt", "test.txt", "train.lgb", "test.lgb"):
        shutil.copy(files[name], tmp_path / name)
    for name in ("train.lgb", "test.lgb"):
        shutil.copy(f"{files[name]}.query", tmp_path / f"{name}.query")
    shutil.copy(lambdamart_model, tmp_path / "model.joblib")
    n_rows = len(load_svmlight_ranking(files["train.txt"])[1])
    (tmp_path / "pos.txt").write_text("1\n" * n_rows)
    return tmp_path


def _train(work, *extra, model="lambdamart"):
    return ["train", "--model", model, "--train", work / "train.txt", "--threads", "1", *_params(model), *extra]


def _spy(monkeypatch, module, name):
    """Replace ``module.name`` by a spy that records its calls and fails: the command must stop before it."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(name)
        raise AssertionError(f"{name} called")

    monkeypatch.setattr(module, name, spy)
    return calls


# (arguments given the private folder, option named in the error, the input it names)
_OUTPUT_IS_AN_INPUT = {
    "predict-data": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.txt", "--out",
                                w / "test.txt"], "--data"),
    "predict-data-dot-slash": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.txt", "--out",
                                          f"{w}/./sub/../test.txt"], "--data"),
    "predict-data-symlink": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.txt", "--out",
                                        w / "link.txt"], "--data"),
    "predict-data-hard-link": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.txt",
                                          "--out", w / "hard.txt"], "--data"),
    "predict-model": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.txt", "--out",
                                 w / "model.joblib"], "--model"),
    "predict-query-sidecar": (lambda w: ["predict", "--model", w / "model.joblib", "--data", w / "test.lgb", "--out",
                                         w / "test.lgb.query"], "query sizes file of --data"),
    "predict-query-sidecar-forced-format": (lambda w: ["predict", "--model", w / "model.joblib", "--data",
                                                       w / "test.lgb", "--format", "lightgbm", "--out",
                                                       w / "test.lgb.query"], "query sizes file of --data"),
    "train-train": (lambda w: _train(w, "--out", w / "train.txt"), "--train"),
    "train-train-symlink": (lambda w: _train(w, "--out", w / "link-train.txt"), "--train"),
    "train-valid": (lambda w: _train(w, "--valid", w / "test.txt", "--out", w / "test.txt"), "--valid"),
    "train-query-sidecar": (lambda w: ["train", "--model", "lambdamart", "--train", w / "train.lgb", "--out",
                                       w / "train.lgb.query"], "query sizes file of --train"),
    "train-valid-query-sidecar": (lambda w: _train(w, "--valid", w / "test.lgb", "--out", w / "test.lgb.query"),
                                  "query sizes file of --valid"),
    "train-positions": (lambda w: ["train", "--model", "two-tower", "--train", w / "train.txt", "--positions",
                                   w / "pos.txt", "--out", w / "pos.txt"], "--positions"),
}


@pytest.mark.parametrize("case", list(_OUTPUT_IS_AN_INPUT))
def test_output_that_names_an_input_is_refused(capsys, monkeypatch, work, case):
    (work / "sub").mkdir()
    (work / "link.txt").symlink_to(work / "test.txt")
    (work / "link-train.txt").symlink_to("train.txt")  # a relative link
    os.link(work / "test.txt", work / "hard.txt")
    make_args, option = _OUTPUT_IS_AN_INPUT[case]
    args = make_args(work)
    fit_calls = _spy(monkeypatch, _commands, "fit_model")
    before = snapshot(work)
    line = assert_user_error(capsys, args, f"--out {str(args[args.index('--out') + 1])!r}", option,
                             "nothing was written")
    assert snapshot(work) == before, line  # every input byte-identical, no file added
    assert fit_calls == []


def test_output_beside_its_input_is_fine(capsys, work):
    """Names that only look alike are not refused: ``test.txt.query`` of an SVMlight file, a sibling name."""
    status, _, err = run(capsys, "predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out",
                         work / "test.txt.query")
    assert status == 0, err
    status, _, err = run(capsys, *_train(work, "--out", work / "train.txt.joblib"))
    assert status == 0, err


@pytest.mark.parametrize("command", ["train", "predict"])
def test_failed_write_keeps_the_previous_file(capsys, monkeypatch, work, command):
    """A save that fails half-way (a full disk) leaves the previous file byte for byte and no temporary file."""
    out = work / ("model-out.joblib" if command == "train" else "scores.txt")
    out.write_bytes(b"the previous file\n")
    before = snapshot(work)

    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if command == "train":
        def half_dump(value, f, *args, **kwargs):  # the serializer writes a fragment, then fails
            f.write(b"half a model")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(joblib, "dump", half_dump)
        args = _train(work, "--out", out)
    else:
        monkeypatch.setattr(os, "fsync", disk_full)  # the scores are written, flushing them fails
        args = ["predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out", out]
    assert_user_error(capsys, args, f"cannot write {'model' if command == 'train' else 'scores'} file",
                      repr(str(out)), "No space left on device")
    assert snapshot(work) == before


def test_interrupted_save_keeps_the_previous_file(capsys, monkeypatch, work):
    out = work / "model-out.joblib"
    out.write_bytes(b"the previous model\n")
    before = snapshot(work)

    def interrupted_dump(value, f, *args, **kwargs):
        f.write(b"half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr(joblib, "dump", interrupted_dump)
    status, _, err = run(capsys, *_train(work, "--out", out))
    assert status == 130 and err.strip() == "sklearn-ltr: interrupted"
    assert snapshot(work) == before


def test_writes_are_whole_files_with_normal_permissions(capsys, work):
    """The atomic write gives a new file the umask's permissions (a temporary file has 0600), keeps an old
    file's permissions, and writes through a symbolic link to its target."""
    umask = os.umask(0o022)
    os.umask(umask)
    scores = work / "scores.txt"
    args = ["predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out"]
    assert run(capsys, *args, scores)[0] == 0
    assert scores.stat().st_mode & 0o777 == 0o666 & ~umask
    scores.chmod(0o640)
    assert run(capsys, *args, scores)[0] == 0
    assert scores.stat().st_mode & 0o777 == 0o640
    (work / "link-scores.txt").symlink_to("scores.txt")
    scores.write_text("old\n")
    assert run(capsys, *args, work / "link-scores.txt")[0] == 0
    assert (work / "link-scores.txt").is_symlink()
    assert len(read_scores(scores)) == len(load_svmlight_ranking(work / "test.txt")[1])
    assert not [p for p in work.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_device_output_is_written_in_place(capsys, work):
    """``--out /dev/null`` or a named pipe is written to, never replaced by a regular file (shown on a pipe:
    replacing /dev/null by mistake would harm the machine running the tests)."""
    pipe = work / "pipe"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    status, _, err = run(capsys, "predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out",
                         pipe)
    reader.join(timeout=10)
    assert status == 0, err
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert len(received[0].splitlines()) == len(load_svmlight_ranking(work / "test.txt")[1])
    assert sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == []


def _unwritable_outputs(work, monkeypatch):
    outputs = {"missing folder": (work / "no" / "m.joblib", "folder"), "a directory": (work, "is a directory"),
               "empty": ("", "--out is empty")}
    if os.path.isdir("/proc"):
        outputs["/proc"] = ("/proc/m.joblib", "cannot create a file in folder '/proc'")
    readonly = work / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    if not os.access(readonly, os.W_OK):  # root may write anyway
        outputs["read-only folder"] = (readonly / "m.joblib", "cannot create a file")
    locked = work / "locked.joblib"
    locked.write_bytes(b"locked")
    locked.chmod(0o444)
    if os.access(locked, os.W_OK):  # root may write anyway: let os.access say what it says to other users
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: path != str(locked) and access(path, mode, **kw))
    outputs["read-only file"] = (locked, "read-only")
    return outputs


def test_unwritable_output_is_found_before_any_work(capsys, monkeypatch, work):
    fit_calls = _spy(monkeypatch, _commands, "fit_model")
    read_calls = _spy(monkeypatch, _commands, "read_ranking")
    load_calls = _spy(monkeypatch, _commands, "load_model")
    outputs = _unwritable_outputs(work, monkeypatch)
    assert {"missing folder", "/proc"} <= set(outputs) or not os.path.isdir("/proc")
    for name, (out, fragment) in outputs.items():
        before = snapshot(work)
        for args in (_train(work, "--out", out),
                     ["predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out", out]):
            line = assert_user_error(capsys, args, fragment)
            assert name == "empty" or str(out) in line, line
        assert snapshot(work) == before, name
    assert fit_calls == read_calls == load_calls == []


# --------------------------------------------------------------------------- Ctrl-C


def test_interrupted_neural_training_exits_130_and_saves_nothing(capsys, monkeypatch, work):
    """The neural rankers catch Ctrl-C, keep the partial model and warn: the command line refuses that model."""
    from sklearn_ltr import RankNetRanker
    from sklearn_ltr.exceptions import TrainingInterruptedWarning

    fit = RankNetRanker.fit

    def interrupted_fit(self, *args, **kwargs):  # trains, then reports an interruption as the library does
        fit(self, *args, **kwargs)
        warnings.warn("fit was interrupted (KeyboardInterrupt) after 1 epoch", TrainingInterruptedWarning,
                      stacklevel=2)
        return self

    monkeypatch.setattr(RankNetRanker, "fit", interrupted_fit)
    out = work / "ranknet.joblib"
    out.write_bytes(b"the previous model\n")
    before = snapshot(work)
    status, stdout, err = run(capsys, *_train(work, "--out", out, model="ranknet"))
    assert status == 130 and err.strip().splitlines()[-1] == "sklearn-ltr: interrupted", err
    assert "saved model" not in stdout
    assert snapshot(work) == before


def test_ctrl_c_inside_neural_training_exits_130(capsys, monkeypatch, work):
    """A real KeyboardInterrupt inside skorch's training loop (raised from the progress bar's callback)."""
    def ctrl_c(self, net, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_epoch_bar.EpochBar, "on_epoch_end", ctrl_c)
    before = snapshot(work)
    status, stdout, err = run(capsys, *_train(work, "--out", work / "m.joblib", "--progress", model="ranknet"))
    assert status == 130, err
    assert err.strip().splitlines()[-1] == "sklearn-ltr: interrupted" and "saved model" not in stdout
    assert snapshot(work) == before


def test_interrupted_lambdamart_exits_130(capsys, monkeypatch, work):
    def ctrl_c(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(LambdaMARTRanker, "fit", ctrl_c)
    before = snapshot(work)
    status, _, err = run(capsys, *_train(work, "--out", work / "m.joblib"))
    assert status == 130 and err.strip() == "sklearn-ltr: interrupted"
    assert snapshot(work) == before


# --------------------------------------------------------------------------- no tracebacks


def _compressed_variants(path, folder):
    """Broken compressed copies of a data file: ``{name: path}``."""
    data = Path(path).read_bytes()
    variants = {}
    for suffix, compress in ((".gz", gzip.compress), (".bz2", bz2.compress)):
        variants[f"truncated{suffix}"] = folder / f"truncated.txt{suffix}"
        variants[f"truncated{suffix}"].write_bytes(compress(data)[:300])
        variants[f"plain{suffix}"] = folder / f"plain.txt{suffix}"
        variants[f"plain{suffix}"].write_bytes(data)
    return variants


def test_broken_compressed_files(capsys, work):
    variants = _compressed_variants(work / "test.txt", work)
    good = work / "good.txt.gz"
    good.write_bytes(gzip.compress((work / "test.txt").read_bytes()))
    assert run(capsys, "predict", "--model", work / "model.joblib", "--data", good, "--out", "-")[0] == 0
    lgb = work / "trunc.lgb.gz"  # LightGBM rows scored without a .query file take another reader
    lgb.write_bytes(gzip.compress((work / "test.lgb").read_bytes())[:300])
    variants["truncated-lightgbm.gz"] = lgb
    for name, path in variants.items():
        before = snapshot(work)
        why = "truncated" if name.startswith("truncated") else "not valid"
        commands = [["predict", "--model", work / "model.joblib", "--data", path, "--out", work / "s.txt"]]
        if name != "truncated-lightgbm.gz":
            commands += [["evaluate", "--model", work / "model.joblib", "--data", path],
                         ["train", "--model", "lambdamart", "--train", path, "--out", work / "m.joblib"]]
        for args in commands:
            assert_user_error(capsys, args, repr(str(path)), why)
        assert snapshot(work) == before


@pytest.mark.parametrize(("sizes", "fragments"), [
    ("9223372036854775808\n", ["line 1", "beyond a 64-bit integer"]),
    ("3\n" + "9" * 5000 + "\n", ["line 2", "beyond a 64-bit integer"]),
    ("4611686018427387904\n4611686018427387904\n", ["sum to 9223372036854775808"]),
    ("5\n-3\n", ["non-positive size -3 on line 2"]),
    ("5\n\n0\n", ["non-positive size 0 on line 3"]),
    ("2.5\n", ["line 1", "'2.5' is not an integer"]),
    ("2\nten\n", ["line 2", "'ten' is not an integer"]),
])  # fmt: skip
def test_bad_query_sidecar(capsys, work, sizes, fragments):
    (work / "train.lgb.query").write_text(sizes)
    before = snapshot(work)
    for args in (["train", "--model", "lambdamart", "--train", work / "train.lgb", "--out", work / "m.joblib"],
                 ["evaluate", "--model", work / "model.joblib", "--data", work / "train.lgb"]):
        assert_user_error(capsys, args, repr(f"{work / 'train.lgb'}.query"), *fragments)
    assert snapshot(work) == before


@pytest.mark.parametrize(("error", "fragment"), [
    (InvalidParameterError("The 'importance_type' parameter must be 'gain' or 'split'. Got 'x'."), "importance_type"),
    (TypeError("unsupported operand type(s) for +: 'int' and 'str'"), "unsupported operand"),
    (OverflowError("Python int too large to convert to C long"), "OverflowError: Python int too large"),
    (MemoryError("the batch needs 900 GB; lower max_list_length"), "MemoryError: the batch needs 900 GB"),
])  # fmt: skip
def test_estimator_errors_are_one_line(capsys, monkeypatch, work, error, fragment):
    def fit(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(LambdaMARTRanker, "fit", fit)
    before = snapshot(work)
    assert_user_error(capsys, _train(work, "--out", work / "m.joblib"), "training lambdamart failed", fragment)
    assert snapshot(work) == before


@pytest.mark.parametrize("error", [MemoryError("a list of 10,000,000 documents does not fit in memory"),
                                   ValueError("a list of 10,000,000 documents does not fit in memory")])
def test_prediction_errors_are_one_line(capsys, monkeypatch, work, error):
    def predict(self, X, groups=None):
        raise error

    monkeypatch.setattr(LambdaMARTRanker, "predict", predict)
    before = snapshot(work)
    for args, fragment in (
            (["predict", "--model", work / "model.joblib", "--data", work / "test.txt", "--out", work / "s.txt"],
             "with model"),
            (["evaluate", "--model", work / "model.joblib", "--data", work / "test.txt"], "with model"),
            (_train(work, "--out", work / "m.joblib"), "with the trained lambdamart model")):
        assert_user_error(capsys, args, fragment, "10,000,000 documents")
    assert snapshot(work) == before


def test_invalid_parameter_value_is_one_line(capsys, work):
    assert_user_error(capsys, _train(work, "--out", work / "m.joblib", "--param", "importance_type=x"),
                      "training lambdamart failed", "importance_type")
    assert_user_error(capsys, _train(work, "--out", work / "m.joblib", "--param", "device=tpu", model="ranknet"),
                      "training ranknet failed", "device")
    assert not (work / "m.joblib").exists()


@pytest.mark.parametrize("bug", [RuntimeError("a bug"), AttributeError("a bug"), KeyError("a bug")])
def test_bugs_keep_their_traceback(capsys, monkeypatch, work, bug):
    """Only the estimators' ValueError, TypeError, OverflowError and MemoryError are user errors."""
    def fit(self, *args, **kwargs):
        raise bug

    monkeypatch.setattr(LambdaMARTRanker, "fit", fit)
    with pytest.raises(type(bug), match="a bug"):
        main([str(arg) for arg in _train(work, "--out", work / "m.joblib")])
    assert not (work / "m.joblib").exists()


def test_labels_the_metrics_reject(capsys, work):
    _, y, _ = load_svmlight_ranking(work / "test.txt")
    scores = work / "scores.txt"
    scores.write_text("".join(f"{v}\n" for v in np.arange(len(y), dtype=float)))
    for name, labels, metric, fragment in (
            ("negative", np.where(np.arange(len(y)) == 3, -1.0, y), "ndcg@1", "negative"),
            ("nan", np.where(np.arange(len(y)) == 3, np.nan, y), "ndcg@1", "NaN"),
            ("huge", np.where(np.arange(len(y)) == 3, 1100.0, y), "dcg", "too large")):
        path = work / f"{name}.txt"
        lines = (work / "test.txt").read_text().splitlines()
        lines = [line for line in lines if not line.startswith("#")]
        path.write_text("".join(f"{label:g} {line.split(' ', 1)[1]}\n" for label, line in zip(labels, lines,
                                                                                               strict=True)))
        for source in (["--model", work / "model.joblib"], ["--scores", scores]):
            assert_user_error(capsys, ["evaluate", *source, "--data", path, "--json", "--metrics", metric],
                              repr(str(path)), metric.upper(), fragment)


@pytest.mark.parametrize(("value", "fragment"), [("nan", "'nan' is not a finite number"),
                                                 ("-inf", "'-inf' is not a finite number"),
                                                 ("1e999", "'1e999' is not a finite number"),
                                                 ("0x1p3", "'0x1p3' is not a number")])
def test_scores_file_with_nan(capsys, work, value, fragment):
    n_rows = len(load_svmlight_ranking(work / "test.txt")[1])
    scores = work / "scores.txt"
    scores.write_text("0.5\n" * 6 + f"{value}\n" + "0.5\n" * (n_rows - 7))
    assert_user_error(capsys, ["evaluate", "--scores", scores, "--data", work / "test.txt"], repr(str(scores)),
                      "line 7", fragment)


def test_positions_file_beyond_int64(capsys, work):
    n_rows = len(load_svmlight_ranking(work / "train.txt")[1])
    log = work / "clicks.txt"
    log.write_text("".join(f"{i % 2} {line.split(' ', 1)[1]}\n" for i, line in
                           enumerate((work / "train.txt").read_text().splitlines()) if not line.startswith("#")))
    for value in ("1e300", "9223372036854775808", "nan"):
        (work / "pos.txt").write_text("1\n" * (n_rows - 1) + f"{value}\n")
        assert_user_error(capsys, ["train", "--model", "two-tower", "--train", log, "--positions", work / "pos.txt",
                                   "--out", work / "m.joblib"], "positions file", f"line {n_rows}", repr(value))
    assert not (work / "m.joblib").exists()


def test_model_that_scores_nan_writes_nothing(capsys, monkeypatch, work):
    def nan_predict(self, X, groups=None):
        scores = np.zeros(len(X))
        scores[4] = np.nan
        return scores

    monkeypatch.setattr(LambdaMARTRanker, "predict", nan_predict)
    out = work / "scores.txt"
    out.write_bytes(b"the previous scores\n")
    before = snapshot(work)
    for target in (out, "-"):
        status, stdout, err = run(capsys, "predict", "--model", work / "model.joblib", "--data", work / "test.txt",
                                  "--out", target)
        assert status == 2 and stdout == ""
        assert err.count("\n") == 1 and err.startswith("sklearn-ltr: error: ") and "NaN" in err and "row 5" in err
        assert repr(str(work / "model.joblib")) in err and repr(str(work / "test.txt")) in err
    assert_user_error(capsys, ["evaluate", "--model", work / "model.joblib", "--data", work / "test.txt"], "NaN",
                      repr(str(work / "model.joblib")))
    assert_user_error(capsys, _train(work, "--out", work / "new.joblib"), "NaN", "not saved")
    assert snapshot(work) == before


def test_write_scores_refuses_nan(tmp_path):
    with pytest.raises(CLIError, match=r"1 of 3 scores are NaN or infinite \(the first on row 2\)"):
        _output.write_scores(str(tmp_path / "s.txt"), [0.5, np.inf, 1.0])
    assert list(tmp_path.iterdir()) == []


def test_damaged_model_files(capsys, work):
    no_features = _with_metadata(work / "model.joblib", n_features=None)
    text_version = _with_metadata(work / "model.joblib", format_version="2")
    foreign = _with_metadata(work / "model.joblib")
    foreign.cli_metadata_ = "a note"
    for name, damaged in (("no-features", no_features), ("text-version", text_version), ("foreign", foreign)):
        joblib.dump(damaged, work / f"{name}.joblib")
        for command in (["predict", "--out", "-"], ["evaluate"]):
            status, _, err = run(capsys, command[0], "--model", work / f"{name}.joblib", "--data", work / "test.txt",
                                 *command[1:])
            last = err.strip().splitlines()[-1]
            assert status == 2 and last.startswith("sklearn-ltr: error: "), err
            assert repr(str(work / f"{name}.joblib")) in last and "damaged" in last, last


# --------------------------------------------------------------------------- one model file for Python and the CLI


def test_pre_release_dict_model_file_is_refused(capsys, work):
    """The dict around the estimator of pre-release versions (format_version 1) is one error: train again."""
    estimator = joblib.load(work / "model.joblib")
    metadata = estimator.cli_metadata_
    old = {**metadata, "format_version": 1, "estimator": estimator}
    for name, layout in (("old", old), ("old-no-features", {k: v for k, v in old.items() if k != "n_features"}),
                         ("old-no-predict", {**old, "estimator": 3}),
                         ("old-text-version", {**old, "format_version": "2"})):
        joblib.dump(layout, work / f"{name}.joblib")
        before = snapshot(work)
        for command in (["predict", "--out", work / "s.txt"], ["evaluate"]):
            line = assert_user_error(capsys, [command[0], "--model", work / f"{name}.joblib", "--data",
                                              work / "test.txt", *command[1:]],
                                     repr(str(work / f"{name}.joblib")), "pre-release layout", "sklearn-ltr train")
            assert "damaged" not in line and "warning" not in line
        assert snapshot(work) == before


@pytest.fixture(scope="module")
def python_models(files):
    """Rankers fitted in Python on the training file, as a user would save them: no CLI metadata."""
    from sklearn.pipeline import make_pipeline

    from sklearn_ltr import DASALCRanker, Log1pTransformer

    X, y, groups = load_svmlight_ranking(files["train.txt"])
    dasalc = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2, random_state=0)
    return {
        "lambdamart": LambdaMARTRanker(n_estimators=10, min_child_samples=5, n_jobs=1, random_state=0).fit(
            X, y, groups=groups),
        "dasalc-pipeline": make_pipeline(Log1pTransformer(), dasalc).fit(X, y, dasalcranker__groups=groups),
    }


@pytest.mark.parametrize("name", ["lambdamart", "dasalc-pipeline"])
@pytest.mark.parametrize("suffix", [".joblib", ".skops"])
def test_predict_takes_a_ranker_saved_from_python(capsys, files, python_models, name, suffix, tmp_path):
    estimator, path = python_models[name], tmp_path / f"model{suffix}"
    if suffix == ".skops":
        pytest.importorskip("skops.io", reason="skops files need the serving extra").dump(estimator, path)
    else:
        joblib.dump(estimator, path)
    status, out, err = run(capsys, "predict", "--model", path, "--data", files["test.txt"], "--out", "-")
    assert status == 0 and err == "", err
    X, _, groups = load_svmlight_ranking(files["test.txt"])
    scores = np.array([float(value) for value in out.split()])
    np.testing.assert_array_equal(scores, estimator.predict(X, groups=groups))
    status, out, err = run(capsys, "evaluate", "--model", path, "--data", files["test.txt"], "--metrics", "ndcg@10")
    assert status == 0 and f"({'LambdaMARTRanker' if name == 'lambdamart' else 'DASALCRanker'})" in out, err
    # A LightGBM file without its .query file: enough for a pointwise model, not for a list-context one.
    lgb = tmp_path / "test.lgb"
    shutil.copy(files["test.lgb"], lgb)
    args = ["predict", "--model", path, "--data", lgb, "--out", "-"]
    if name == "lambdamart":
        assert run(capsys, *args)[0] == 0
    else:
        assert_user_error(capsys, args, "query sizes")


def test_unfitted_estimator_is_refused(capsys, work):
    joblib.dump(LambdaMARTRanker(), work / "unfitted.joblib")
    assert_user_error(capsys, ["predict", "--model", work / "unfitted.joblib", "--data", work / "test.txt", "--out",
                               "-"], "not fitted")


@pytest.mark.parametrize("model", ["lambdamart", "dasalc"])
def test_train_writes_skops_files_by_suffix(capsys, files, model, tmp_path):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    from sklearn_ltr.utils.persistence import TRUSTED_TYPES

    joblib_path, skops_path = tmp_path / "m.joblib", tmp_path / "m.skops"
    for path in (joblib_path, skops_path):
        status, _, err = run(capsys, "train", "--model", model, "--train", files["train.txt"], "--out", path,
                             "--threads", "1", *_params(model))
        assert status == 0, err
    assert sio.get_untrusted_types(file=skops_path)  # a skops file, referencing sklearn_ltr's types ...
    loaded = sio.load(skops_path, trusted=TRUSTED_TYPES)  # ... all of them in TRUSTED_TYPES
    assert loaded.cli_metadata_["model"] == model
    outputs = [run(capsys, "predict", "--model", path, "--data", files["test.txt"], "--out", "-")
               for path in (joblib_path, skops_path)]
    assert outputs[0][0] == outputs[1][0] == 0 and outputs[0][1] == outputs[1][1]  # the same model, the same scores
    X, _, groups = load_svmlight_ranking(files["test.txt"])
    np.testing.assert_array_equal(loaded.predict(X, groups=groups), [float(v) for v in outputs[1][1].split()])


def test_skops_files_with_untrusted_types_are_refused(capsys, files, tmp_path):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    from sklearn_ltr import RankNetRanker

    X, y, groups = load_svmlight_ranking(files["train.txt"])
    ranker = RankNetRanker(hidden_sizes=(4,), max_epochs=1, keep_training_state=True, random_state=0)
    sio.dump(ranker.fit(X, y, groups=groups), tmp_path / "whole.skops")
    assert_user_error(capsys, ["predict", "--model", tmp_path / "whole.skops", "--data", files["test.txt"], "--out",
                               "-"], "torch.optim.adam.Adam", "not loaded", "TRUSTED_TYPES")
    # train refuses to write such a file, and writes nothing.
    assert_user_error(capsys, ["train", "--model", "ranknet", "--train", files["train.txt"], "--out",
                               tmp_path / "new.skops", "--threads", "1", *_params("ranknet"), "--param",
                               "keep_training_state=true"], "cannot save the model as a skops file", "joblib")
    assert not (tmp_path / "new.skops").exists()
    (tmp_path / "text.skops").write_text("not a zip")
    assert_user_error(capsys, ["predict", "--model", tmp_path / "text.skops", "--data", files["test.txt"], "--out",
                               "-"], "is not a model file", "skops")


def test_feature_index_too_large_for_memory(capsys, monkeypatch, work):
    path = work / "wide.txt"
    path.write_text("".join(f"{i % 3} qid:{i // 10} 1:0.5 2147483647:1\n" for i in range(100)))
    for args in (["predict", "--model", work / "model.joblib", "--data", path, "--out", "-"],
                 ["train", "--model", "lambdamart", "--train", path, "--out", work / "m.joblib"]):
        assert_user_error(capsys, args, repr(str(path)), "2,147,483,647", "GiB")
    # Checked against the machine's memory before allocating: 100 x 20,000 float64 is 15 MiB.
    monkeypatch.setattr(_data_files, "physical_memory", lambda: 2**20)
    path.write_text("".join(f"{i % 3} qid:{i // 10} 1:0.5 20000:1\n" for i in range(100)))
    assert_user_error(capsys, ["train", "--model", "lambdamart", "--train", path, "--out", work / "m.joblib"],
                      repr(str(path)), "20,000", "0.0 GiB of memory")
    assert not (work / "m.joblib").exists()


def test_seed_and_simulation_size(capsys, monkeypatch, work):
    from sklearn_ltr.cli import _clicks

    simulations = _spy(monkeypatch, _clicks, "simulate_sessions")
    for seed in ("-1", str(2**32)):
        assert_user_error(capsys, _train(work, "--out", work / "m.joblib", "--seed", seed), "--seed", seed)
        assert_user_error(capsys, ["demo", "--quick", "--seed", seed], "--seed")
    assert_user_error(capsys, _train(work, "--out", work / "m.joblib", "--simulate-clicks", "1000000000000",
                                     model="two-tower"), "--simulate-clicks 1000000000000", "memory")
    assert not (work / "m.joblib").exists() and simulations == []


def test_demo_fold_with_bad_labels(capsys, work):
    fold = work / "fold"
    fold.mkdir()
    shutil.copy(work / "train.txt", fold / "train.txt")
    (fold / "test.txt").write_text("-1 qid:1 1:0.5\n1 qid:1 1:0.7\n")
    assert_user_error(capsys, ["demo", "--quick", "--data", fold], "test.txt", "relevance grades")


def test_closed_standard_output(capsys, monkeypatch, work):
    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    status = main(["predict", "--model", str(work / "model.joblib"), "--data", str(work / "test.txt"), "--out", "-"])
    assert status == 141
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- model files run code


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_help_warns_that_model_files_run_code(capsys, command):
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    options = out[out.index("options:"):]
    option = options[options.index("--model MODEL"):]
    option = option[:option.index(" --", 3)]  # up to the next option
    assert "runs code stored in the file" in option
    assert "load model files only from sources you trust" in option
