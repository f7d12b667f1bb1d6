"""What ``train`` reports: the settings it trained with, and NDCG@10 under ``--empty-queries``.

LambdaMART and RankNet train with the command line's own defaults (``CLI_DEFAULTS``, chosen on
five LETOR folds: studies/results/cli_defaults.md), ``--param`` over them; a ``settings:`` line shows
every parameter that differs from the class's defaults, as a call of the class. The NDCG@10 that
``train`` prints follows ``--empty-queries`` as ``evaluate`` does, with the same footnote.
"""

import re

import joblib
import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr import LambdaMARTRanker, RankNetRanker
from sklearn_ltr.cli._demo import demo_models
from sklearn_ltr.cli._models import CLI_DEFAULTS, describe_settings
from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train_report")
    paths = {}
    for name, seed in (("train", 0), ("valid", 1)):
        X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=seed)
        y = np.where(np.isin(qid, qid[:1]), 0, y)  # the first query without a relevant document
        paths[name] = str(folder / f"{name}.txt")
        dump_svmlight_ranking(X, y, qid, paths[name])
    return paths


def _settings(out):
    (line,) = [line for line in out.splitlines() if line.startswith("settings: ")]
    return line.removeprefix("settings: ")


def test_the_cli_defaults_of_lambdamart():
    assert CLI_DEFAULTS == {"lambdamart": {"n_estimators": 300, "learning_rate": 0.02, "num_leaves": 15,
                                           "eval_at": (10,)},
                            "ranknet": {"lr": 2e-3, "max_epochs": 30}}
    models = demo_models()
    assert models[0][1:3] == ("lambdamart", {})  # the demo's LambdaMART is train's
    assert models[1][1] == "ranknet" and CLI_DEFAULTS["ranknet"].items() <= models[1][2].items()


def test_train_uses_and_prints_them(files, tmp_path, capsys):
    out_path = tmp_path / "m.joblib"
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train"], "--out", out_path,
                           "--threads", "1", "--param", "min_child_samples=5")
    assert status == 0, err
    assert _settings(out) == ("LambdaMARTRanker(eval_at=(10,), learning_rate=0.02, min_child_samples=5, "
                              "n_estimators=300, n_jobs=1, num_leaves=15, random_state=0); every other parameter at "
                              "its default")
    model = joblib.load(out_path)
    assert (model.learning_rate, model.n_estimators, model.num_leaves, model.eval_at) == (0.02, 300, 15, (10,))
    assert model.cli_metadata_["settings"] == _settings(out)


def test_param_overrides_them(files, tmp_path, capsys):
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train"], "--valid",
                           files["valid"], "--out", tmp_path / "m.joblib", "--threads", "1", "--param",
                           "learning_rate=0.1", "--param", "n_estimators=20", "--seed", "3")
    assert status == 0, err
    # --valid adds early stopping; learning_rate=0.1 is the class default, so it is not listed.
    assert _settings(out) == ("LambdaMARTRanker(early_stopping_rounds=50, eval_at=(10,), n_estimators=20, n_jobs=1, "
                              "num_leaves=15, random_state=3); every other parameter at its default")


def test_neural_settings(files, tmp_path, capsys):
    status, out, err = run(capsys, "train", "--model", "ranknet", "--train", files["train"], "--out",
                           tmp_path / "m.joblib", "--param", "max_epochs=2", "--param", "hidden_sizes=(8,)")
    assert status == 0, err
    # RankNet's lr is the command line's; max_epochs the user's.
    assert _settings(out) == ("RankNetRanker(hidden_sizes=(8,), lr=0.002, max_epochs=2, random_state=0); every "
                              "other parameter at its default")
    status, out, err = run(capsys, "train", "--model", "setrank", "--train", files["train"], "--out",
                           tmp_path / "m.joblib", "--param", "max_epochs=1", "--param", "d_model=8")
    assert status == 0, err
    assert _settings(out) == ("SetRankRanker(d_model=8, max_epochs=1, random_state=0); every other parameter at its "
                              "default")  # no command-line defaults of its own


def test_the_settings_line_names_the_eval_at_used(files, tmp_path, capsys):
    """LambdaMART's eval_at is the command line's (10,) with or without --valid, or --param's; the line says which."""
    for extra, eval_at in (([], (10,)), (["--valid", files["valid"]], (10,)),
                           (["--valid", files["valid"], "--param", "eval_at=(3, 5)"], (3, 5))):
        model = tmp_path / "m.joblib"
        status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train"], "--out", model,
                               "--threads", "1", "--param", "n_estimators=5", *extra)
        assert status == 0, err
        assert f"eval_at={eval_at!r}" in _settings(out)
        fitted = joblib.load(model)
        assert tuple(fitted.eval_at) == eval_at
        if extra:  # LightGBM evaluated the validation file at exactly those cut-offs
            assert sorted(fitted.evals_result_["vali"]) == [f"ndcg@{k}" for k in eval_at]


def test_a_resumed_fit_says_from_which_epoch(files, tmp_path, capsys, monkeypatch):
    from sklearn_ltr.training._checkpoint import TrainingCheckpoint

    class Crash(Exception):
        pass

    write = TrainingCheckpoint.on_epoch_end

    def crash_after_epoch_3(self, net, **kwargs):
        write(self, net, **kwargs)
        if len(net.history) == 3:
            raise Crash

    args = ["train", "--model", "ranknet", "--train", files["train"], "--out", tmp_path / "m.joblib", "--param",
            "max_epochs=5", "--param", "hidden_sizes=(8,)", "--param", f"checkpoint_dir={str(tmp_path / 'ckpt')!r}"]
    monkeypatch.setattr(TrainingCheckpoint, "on_epoch_end", crash_after_epoch_3)
    with pytest.raises(Crash):
        run(capsys, *args)
    monkeypatch.undo()
    status, out, err = run(capsys, *args)
    assert status == 0, err
    assert re.search(r"^resumed ranknet \(RankNetRanker\) from epoch 3 of the checkpoint; trained epochs 4-5 in "
                     r"\d+\.\d s \(epochs 5; preprocessing log1p-standardize\)$", out, re.M), out
    status, out, err = run(capsys, *args)  # the checkpoint's fit had ended: nothing left to train
    assert status == 0, err
    assert "resumed ranknet (RankNetRanker) from epoch 5 of the checkpoint; trained no further epoch" in out
    status, out, err = run(capsys, *args[:-2])  # no checkpoint: the line it always was
    assert status == 0, err
    assert re.search(r"^trained ranknet \(RankNetRanker\) in \d+\.\d s \(epochs 5;", out, re.M), out


def test_describe_settings_by_hand():
    assert describe_settings(LambdaMARTRanker()) == "LambdaMARTRanker(); every other parameter at its default"
    assert describe_settings(LambdaMARTRanker(num_leaves=7, learning_rate=0.1, subsample=1)).startswith(
        "LambdaMARTRanker(num_leaves=7);")  # 0.1 and 1 (== 1.0) are the defaults
    assert describe_settings(RankNetRanker(loss="softmax", lr=3e-4)).startswith(
        "RankNetRanker(loss='softmax', lr=0.0003);")


@pytest.mark.parametrize("rule", ["default", "zero", "drop"])
def test_reported_ndcg_is_evaluates(files, tmp_path, capsys, rule):
    model = tmp_path / "m.joblib"
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", files["train"], "--valid",
                           files["valid"], "--out", model, "--threads", "1", "--param", "n_estimators=5",
                           "--empty-queries", rule)
    assert status == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("NDCG@10: ")]
    train_value, valid_value = (float(v) for v in re.findall(r"\d\.\d{4}", line))
    (note,) = [line for line in out.splitlines() if line.startswith("* ")]
    assert "1 of 20 train queries and 1 of 20 valid queries have no relevant document" in note
    for name, value in (("train", train_value), ("valid", valid_value)):
        status, evaluated, err = run(capsys, "evaluate", "--model", model, "--data", files[name], "--metrics",
                                     "ndcg@10", "--empty-queries", rule)
        assert status == 0, err
        assert f"NDCG@10    {value:.4f}" in evaluated
    assert joblib.load(model).cli_metadata_["empty_query_rule"] == rule


def test_demo_states_its_settings_and_the_convention(files, tmp_path, capsys):
    for name, source in (("train.txt", "train"), ("test.txt", "valid")):
        (tmp_path / name).write_text(open(files[source]).read())
    status, out, err = run(capsys, "demo", "--quick", "--data", tmp_path, "--no-progress", "--empty-queries", "zero")
    assert status == 0, err
    text = " ".join(out.split())
    assert "* Test queries: 1 of 20 queries have no relevant document (label > 0): counted as 0 in every metric" in text
    assert ("'sklearn-ltr train' uses the class defaults, except its own for lambdamart n_estimators=300, "
            "learning_rate=0.02, num_leaves=15, eval_at=(10,); ranknet lr=0.002, max_epochs=30.") in text
    settings = out.split("max_epochs=30.\n", 1)[1].splitlines()
    assert [line.split(": ", 1)[0].strip() for line in settings] == [label for label, *_ in demo_models(quick=True)]
    # --quick: 100 trees at 0.05 instead of train's 300 at 0.02; no vali.txt, so no early stopping.
    assert settings[0] == ("  LambdaMARTRanker: LambdaMARTRanker(eval_at=(10,), learning_rate=0.05, n_jobs=1, "
                           "num_leaves=15, random_state=0); every other parameter at its default")
