"""The on-disk layout: convert_ranking (streaming, atomic), write_ranking_layout, load_ranking_layout, the CLI."""

import gzip
import os

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_user_error, run

from sklearn_ltr.datasets import (
    _disk,
    convert_ranking,
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_ranking_layout,
    make_ranking,
    read_ranking_file,
    write_ranking_layout,
)


def _assert_round_trip(source, layout, dtype=np.float32):
    X, y, groups = load_ranking_layout(layout)
    assert isinstance(X, np.memmap) and X.dtype == dtype
    expected = read_ranking_file(source, dtype=dtype)
    np.testing.assert_array_equal(X, expected[0])
    np.testing.assert_array_equal(y, expected[1])
    np.testing.assert_array_equal(groups, expected[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mq2008_fold1_round_trips_exactly(data_dir, tmp_path, dtype):
    source = data_dir / "mq2008" / "Fold1" / "train.txt"
    layout = convert_ranking(source, tmp_path / "train.ltr", dtype=dtype)
    _assert_round_trip(source, layout, dtype)
    X, _, groups = load_ranking_layout(layout)
    assert X.shape == (9630, 46) and len(np.unique(groups)) == 471


def test_lightgbm_files_round_trip_with_query_numbers(data_dir, tmp_path):
    source = data_dir / "lightgbm-lambdarank" / "rank.train"
    _assert_round_trip(source, convert_ranking(source, tmp_path / "rank.ltr"))


def test_blocks_cut_inside_queries_and_lines_change_nothing(tmp_path, monkeypatch):
    # Blocks of 300 bytes: most queries, and some lines' reads, straddle two blocks.
    X, y, qid = make_ranking(n_queries=15, n_features=4, random_state=0)
    X = np.round(X, 3)
    X[:, 0] = 0.0  # a column of zeros: the stored width comes from the highest index, as the reader's does
    plain, source = tmp_path / "data.txt", tmp_path / "data.txt.gz"
    dump_svmlight_ranking(X, y, qid, plain)
    source.write_bytes(gzip.compress(plain.read_bytes()))
    monkeypatch.setattr(_disk, "_BLOCK_BYTES", 300)
    _assert_round_trip(source, convert_ranking(source, tmp_path / "data.ltr", format="svmlight"))


def test_a_failed_conversion_leaves_nothing_and_keeps_the_previous_output(tmp_path, monkeypatch):
    X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=0)
    good = tmp_path / "good.txt"
    dump_svmlight_ranking(X, y, qid, good)
    layout = convert_ranking(good, tmp_path / "out.ltr")
    before = {name: (tmp_path / "out.ltr" / name).read_bytes() for name in _disk.LAYOUT_FILES}
    # Query 0 again at the end: not contiguous, found in the second block.
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + f"1 qid:{qid[0]} 1:0.5\n")
    monkeypatch.setattr(_disk, "_BLOCK_BYTES", 200)
    with pytest.raises(ValueError, match=r"rows of query .* are not contiguous"):
        convert_ranking(bad, layout, overwrite=True)
    with pytest.raises(ValueError, match=r"line 3: .*"):
        (tmp_path / "broken.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n1 qid:2 x:y\n")
        convert_ranking(tmp_path / "broken.txt", tmp_path / "new.ltr")
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "broken.txt", "good.txt", "out.ltr"]  # no temporary folder
    assert {name: (tmp_path / "out.ltr" / name).read_bytes() for name in _disk.LAYOUT_FILES} == before
    with pytest.raises(FileExistsError, match="overwrite=True"):
        convert_ranking(good, layout)


def test_arrays_and_dataframes_are_written_grouped_by_query(tmp_path, monkeypatch):
    monkeypatch.setattr(_disk, "_BLOCK_ROWS", 7)
    X, y, qid = make_ranking(n_queries=9, n_features=3, shuffle=True, random_state=0)  # queries interleaved
    names = np.array([f"q{q}" for q in qid])
    layout = write_ranking_layout(pd.DataFrame(X, columns=list("abc")), y, names, tmp_path / "df.ltr")
    Xl, yl, gl = load_ranking_layout(layout)
    order = np.argsort(names, kind="stable")
    np.testing.assert_array_equal(Xl, X[order].astype(np.float32))
    np.testing.assert_array_equal(yl, y[order])
    np.testing.assert_array_equal(gl, names[order])
    # Rows already grouped keep their order (here: queries not sorted by id).
    grouped = np.concatenate([np.flatnonzero(qid == q) for q in np.unique(qid)[::-1]])
    layout = write_ranking_layout(X[grouped], y[grouped], qid[grouped], tmp_path / "grouped.ltr")
    np.testing.assert_array_equal(load_ranking_layout(layout)[2], qid[grouped])


def test_the_cli_converts_and_trains_and_predicts_from_the_layout(tmp_path, capsys):
    X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)
    X = np.round(X, 2).astype(np.float32).astype(np.float64)  # float32-exact: text and layout hold the same values
    source = tmp_path / "train.train"
    dump_lightgbm_ranking(X, y, qid, source)
    status, out, _ = run(capsys, "convert", source, tmp_path / "train.ltr")
    assert status == 0 and "wrote" in out
    _assert_round_trip(source, tmp_path / "train.ltr")
    assert_user_error(capsys, ["convert", source, tmp_path / "train.ltr"], "exists", "--overwrite")
    model = tmp_path / "model.joblib"
    status, _, err = run(capsys, "train", "--model", "ranknet", "--train", tmp_path / "train.ltr", "--param",
                         "max_epochs=2", "--out", model)
    assert status == 0, err
    scores = []
    for data in (tmp_path / "train.ltr", source):
        out_path = tmp_path / f"scores-{data.suffix}.txt"
        assert run(capsys, "predict", "--model", model, "--data", data, "--out", out_path)[0] == 0
        scores.append(np.loadtxt(out_path))
    # The layout's float32 features go through ranknet's preprocessing (log1p, scaling) in float32, the
    # text file's in float64: the same model, scores equal to float32 precision.
    np.testing.assert_allclose(scores[0], scores[1], rtol=1e-5, atol=1e-6)
