"""``sklearn-ltr export``: a saved model written in each format of the registry, refusals as one-line errors."""

import json

import joblib
import pytest
from cli_helpers import assert_user_error, run
from export_helpers import integer_model, nan_model

from sklearn_ltr.export import EXPORT_FORMATS, to_ranklib, to_xgboost_json


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    _, ranker = integer_model()
    joblib.dump(ranker, folder / "lambdamart.joblib")
    joblib.dump(nan_model()[0], folder / "nan.joblib")
    return folder, ranker


def test_every_tree_format_is_written(saved, capsys):
    folder, ranker = saved
    tree_formats = [name for name, entry in EXPORT_FORMATS.items() if entry.models.startswith("LambdaMARTRanker")]
    assert len(tree_formats) >= 5
    for name in tree_formats:
        out = folder / f"{name}{EXPORT_FORMATS[name].suffix}"
        status, stdout, err = run(capsys, "export", "--model", folder / "lambdamart.joblib", "--format", name,
                                  "--out", out, "--feature-names", "a,b,c")
        assert status == 0, err
        assert stdout.startswith(f"wrote {out} ({name}: ")
        assert out.stat().st_size > 0
    assert (folder / "ranklib.txt").read_text() == to_ranklib(ranker)
    assert json.loads((folder / "xgboost-json.json").read_text()) == to_xgboost_json(
        ranker, feature_names=["a", "b", "c"])


def test_onnx_and_the_model_name(saved, capsys):
    onnx = pytest.importorskip("onnx")
    folder, _ = saved
    status, _, err = run(capsys, "export", "--model", folder / "lambdamart.joblib", "--format", "onnx", "--out",
                         folder / "m.onnx")
    assert status == 0, err
    assert onnx.load(folder / "m.onnx").producer_name == "sklearn_ltr"
    status, _, err = run(capsys, "export", "--model", folder / "lambdamart.joblib", "--format", "elasticsearch-ltr",
                         "--out", folder / "es.json", "--name", "movies")
    assert status == 0, err
    assert json.loads((folder / "es.json").read_text())["path"] == "_ml/trained_models/movies"


def test_refusals_are_one_line_errors_and_write_nothing(saved, capsys):
    folder, _ = saved
    out = folder / "refused.txt"
    assert_user_error(capsys, ["export", "--model", folder / "nan.joblib", "--format", "ranklib", "--out", out],
                      "cannot export", "as ranklib", "RankLib reads a missing feature as 0")
    assert not out.exists()
    assert_user_error(capsys, ["export", "--model", folder / "lambdamart.joblib", "--format", "solr-linear", "--out",
                               out], "exports a fitted RankNetRanker")
    assert_user_error(capsys, ["export", "--model", folder / "lambdamart.joblib", "--format", "xgboost-json", "--out",
                               out, "--feature-names", "a,b"], "feature_names has 2 names; the model takes 3")
    assert_user_error(capsys, ["export", "--model", folder / "lambdamart.joblib", "--format", "onnx", "--out", out,
                               "--feature-names", "a,b,c"], "--format onnx takes no --feature-names")
    assert_user_error(capsys, ["export", "--model", folder / "lambdamart.joblib", "--format", "xgboost-json",
                               "--out", folder / "lambdamart.joblib"], "--out")
    assert not out.exists()
