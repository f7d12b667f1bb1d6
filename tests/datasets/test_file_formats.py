"""Tests for the registry of file formats: FILE_FORMATS, detect_file_format and read_ranking_file."""

import gzip
import re

import numpy as np
import pytest

from sklearn_ltr.datasets import FILE_FORMATS, FileFormat, detect_file_format, read_ranking_file

FORMATS = sorted(FILE_FORMATS)


def _data():
    """Rows of three queries given out of order, one row all zero but its first feature."""
    X = np.array([[0.5, 0.0, 1.0], [1.0, 2.0, 0.0], [0.25, 0.0, 3.0], [4.0, 0.0, 0.0], [0.0, 1.5, 2.0]])
    return X, np.array([1, 0, 2, 3, 0]), np.array([9, 4, 9, 7, 4])


def test_registry_entries_are_complete():
    assert FORMATS == ["lightgbm", "svmlight"]
    for name, spec in FILE_FORMATS.items():
        assert isinstance(spec, FileFormat) and spec.name == name
        assert spec.title and spec.description and spec.recognized_by and spec.suffixes
        assert all(suffix.startswith(".") for suffix in spec.suffixes)
        assert callable(spec.reader) and callable(spec.writer)
    with pytest.raises(TypeError):
        FILE_FORMATS["csv"] = FILE_FORMATS["svmlight"]  # read-only: a format is added in the module


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_every_format_round_trips_through_the_public_reader(tmp_path, name, compress):
    spec = FILE_FORMATS[name]
    X, y, groups = _data()
    path = tmp_path / f"data{spec.suffixes[0]}"
    spec.writer(X, y, groups, path)
    companions = spec.companions(str(path))
    assert all(tmp_path.joinpath(c).exists() for c in companions), companions
    if compress:
        gz = tmp_path / f"data{spec.suffixes[0]}.gz"
        gz.write_bytes(gzip.compress(path.read_bytes()))
        for companion in companions:  # the companions of data.txt.gz are named after it
            tmp_path.joinpath(str(companion).replace(str(path), str(gz))).write_bytes(open(companion, "rb").read())
        path = gz
    assert detect_file_format(path) == name
    order = np.argsort(groups, kind="stable")
    for fmt in (None, name):
        X_back, y_back, groups_back = read_ranking_file(path, fmt, n_features=X.shape[1])
        np.testing.assert_array_equal(X_back, X[order])
        np.testing.assert_array_equal(y_back, y[order])
        assert len(np.unique(groups_back)) == 3
        np.testing.assert_array_equal(np.unique(groups_back, return_inverse=True)[1],
                                      np.unique(groups[order], return_inverse=True)[1])
    sparse, _, _ = read_ranking_file(path, dense=False, dtype=np.float32)
    assert sparse.format == "csr" and sparse.dtype == np.float32 and sparse.shape == X.shape


def test_read_without_the_companion_files(tmp_path):
    X, y, groups = _data()
    path = tmp_path / "rank.train"
    FILE_FORMATS["lightgbm"].writer(X, y, groups, path)
    (tmp_path / "rank.train.query").unlink()
    X_back, y_back, none = read_ranking_file(path, require_groups=False)
    assert none is None and X_back.shape == X.shape
    np.testing.assert_array_equal(y_back, y[np.argsort(groups, kind="stable")])
    with pytest.raises(FileNotFoundError, match=re.escape(str(path) + ".query")):
        read_ranking_file(path)
    svmlight = tmp_path / "letor.txt"
    FILE_FORMATS["svmlight"].writer(X, y, groups, svmlight)
    assert read_ranking_file(svmlight, require_groups=False)[2] is not None  # its ids are on its lines


@pytest.mark.parametrize(("content", "name"), [
    ("# header\n\n1 qid:3 1:0.5\n", "svmlight"),
    ("1 1:0.5 # qid:3 in a comment\n", "lightgbm"),
    ("1 1:0.5\n0 qid:3 1:1\n", "lightgbm"),  # the first data line decides
])  # fmt: skip
def test_detect_reads_the_first_data_line(tmp_path, content, name):
    path = tmp_path / "data.txt"
    path.write_text(content)
    assert detect_file_format(path) == name


def test_reader_errors_name_the_file_and_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1 qid:1 1:0.5 2:0.1\n# a comment\n0 qid:1 1:0.2 2:x\n")
    with pytest.raises(ValueError, match=re.escape(f"{str(path)!r}") + r".*line 3: '2:x' is not '<index>:<value>'"):
        read_ranking_file(path)
    path.write_text("1 qid:1 1:0.5\nhigh qid:1 1:0.2\n")
    with pytest.raises(ValueError, match=r"line 2: the label 'high' is not a number"):
        read_ranking_file(path, "svmlight")
    path.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match=re.escape(repr(str(path))) + ".*holds no data rows"):
        detect_file_format(path)
    with pytest.raises(ValueError, match=r"unknown ranking file format 'csv'.*'svmlight'"):
        read_ranking_file(path, "csv")
    with pytest.raises(FileNotFoundError):
        read_ranking_file(tmp_path / "missing.txt")
