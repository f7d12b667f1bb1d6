"""Each command's header counts a file's own features, and a file that ends far below the model's is warned about.

SVMlight and LightGBM files leave zeros out, so a file's width is its highest feature index:
a file may end before the features of the model that scores it (or of the file it trains
with) and is then padded with zeros. The header must still say the file's own count, and a
file that ends at or below three quarters of the other's features (``FAR_BELOW``) gets a
one-line warning naming the file, its highest index and the other count.
"""

import json

import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.cli import _demo, main
from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N_FEATURES = 8  # the model's, and the widest file's


def _write(path, n_features, n_queries=12, seed=0):
    """An SVMlight file whose highest feature index is ``n_features`` (every row holds it)."""
    X, y, qid = make_ranking(n_queries=n_queries, n_features=n_features, random_state=seed)
    X = np.abs(X) + 1.0  # no zeros: the last index is written on every line
    dump_svmlight_ranking(X, y, qid, path)
    return str(path), len(y), len(np.unique(qid))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    train, _, _ = _write(folder / "train.txt", N_FEATURES)
    path = str(folder / "m.joblib")
    assert main(["train", "--model", "lambdamart", "--train", train, "--out", path, "--param", "n_estimators=5",
                 "--param", "min_child_samples=2", "--threads", "1"]) == 0
    return path


def _warnings(err):
    """The width warnings. (make_ranking with another seed orders its columns otherwise, so scoring such a
    file also warns that its features break what the model saw: FeatureDriftWarning, not counted here.)"""
    return [line for line in err.splitlines() if line.startswith("sklearn-ltr: warning:") and "breaks what" not in line]


def test_far_below_is_three_quarters():
    from sklearn_ltr.cli._data_files import FAR_BELOW, far_below

    assert FAR_BELOW == 0.75
    assert far_below(6, 8) and not far_below(7, 8)  # 6 <= 0.75 * 8 = 6 < 7
    assert far_below(75, 100) and not far_below(76, 100)


def test_train_header_counts_each_files_own_features(tmp_path, capsys):
    train, n_rows, n_queries = _write(tmp_path / "small.txt", 5)
    valid, _, _ = _write(tmp_path / "wide.txt", N_FEATURES, seed=1)
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", train, "--valid", valid,
                           "--out", tmp_path / "m.joblib", "--param", "n_estimators=3", "--threads", "1")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == f"train {train}: {n_rows:,} rows, {n_queries} queries, 5 features (padded to 8)"
    assert lines[1].startswith(f"valid {valid}: ") and lines[1].endswith(", 8 features")
    # 5 of 8 is far below (<= 6): one line naming the file, its highest index and the other file's count.
    (warning,) = _warnings(err)
    assert repr(train) in warning and "up to index 5" in warning and f"--valid {valid!r} has 8" in warning


def test_train_does_not_warn_when_close(tmp_path, capsys):
    train, _, _ = _write(tmp_path / "train.txt", 7)
    valid, _, _ = _write(tmp_path / "valid.txt", N_FEATURES, seed=1)
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", train, "--valid", valid,
                           "--out", tmp_path / "m.joblib", "--param", "n_estimators=3", "--threads", "1")
    assert status == 0 and not _warnings(err), err
    assert "7 features (padded to 8)" in out.splitlines()[0]


@pytest.mark.parametrize("have, warned", [(3, True), (6, True), (7, False), (8, False)])
def test_evaluate_header_and_warning(model, tmp_path, capsys, have, warned):
    data, n_rows, n_queries = _write(tmp_path / "test.txt", have, seed=2)
    status, out, err = run(capsys, "evaluate", "--model", model, "--data", data, "--metrics", "ndcg@10")
    assert status == 0, err
    padded = "" if have == N_FEATURES else f" (padded to {N_FEATURES})"
    assert out.splitlines()[0].startswith(f"{data}: {n_rows:,} rows, {n_queries} queries, {have} features{padded};")
    found = _warnings(err)
    assert len(found) == int(warned), err
    if warned:
        assert repr(data) in found[0] and f"up to index {have} only" in found[0]
        assert f"model {model!r} was trained on {N_FEATURES}" in found[0]


def test_predict_and_compare_warn_too(model, tmp_path, capsys):
    data, _, _ = _write(tmp_path / "short.txt", 3, seed=3)
    status, _, err = run(capsys, "predict", "--model", model, "--data", data, "--out", tmp_path / "s.txt")
    assert status == 0 and len(_warnings(err)) == 1 and "up to index 3" in err
    status, out, err = run(capsys, "compare", "--data", data, "--model", model, "--scores", tmp_path / "s.txt",
                           "--resamples", "50", "--metrics", "ndcg@10")
    assert status == 0 and len(_warnings(err)) == 1 and "up to index 3" in err, err
    assert out.splitlines()[0].endswith(", 3 features")  # compare's header: the file's own count


def test_evaluate_json_is_unchanged_by_the_warning(model, tmp_path, capsys):
    data, _, _ = _write(tmp_path / "short.txt", 3, seed=4)
    status, out, err = run(capsys, "evaluate", "--model", model, "--data", data, "--json")
    assert status == 0 and json.loads(out)["rows"] > 0 and _warnings(err)


def test_demo_fold_description_counts_each_file(tmp_path):
    for name, width, seed in (("train", N_FEATURES, 0), ("vali", N_FEATURES, 1), ("test", 4, 2)):
        _write(tmp_path / f"{name}.txt", width, seed=seed)
    train, _, test, description = _demo._read_fold(str(tmp_path))
    assert "test 12 queries" in description and " / 4 features" in description
    assert f"train 12 queries / {len(train.y):,} rows / 8 features" in description
    assert test.X.shape[1] == N_FEATURES and test.n_file_features == 4
