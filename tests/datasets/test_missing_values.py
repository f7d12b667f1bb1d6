"""Missing values in ranking data files: LETOR 4.0's ``NULL`` (and tokens of the user's choice) read as NaN.

Every reader (``load_svmlight_ranking``, ``load_lightgbm_ranking``, ``read_ranking_file``, the
streaming converter ``convert_ranking``, the Dask reader) takes ``missing_values``; the writers
write NaN as ``NULL`` and read it back. MQ2007-agg, whose features are input rankers' ranks with
``NULL`` where a ranker did not retrieve the document, is the real-data check.
"""

import bz2
import gzip
import io
import re

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from sklearn_ltr.datasets import (
    FILE_FORMATS,
    _disk,
    convert_ranking,
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_lightgbm_ranking,
    load_ranking_layout,
    load_svmlight_ranking,
    read_ranking_file,
)
from sklearn_ltr.datasets._missing import check_missing_values, substitute_missing

NAN = np.nan
#: A LETOR 4.0 file by hand: NULL before a space, before a comment, at the end of a line and of the file.
LETOR = (b"2 qid:7 1:NULL 2:0.5 3:NULL\n"
         b"0 qid:7 1:1.5 2:NULL#docid = a:NULL b\n"
         b"# a comment line 1:NULL\n"
         b"1 qid:9 1:NULL 2:NULL 3:4 # docid = c\n"
         b"0 qid:9 2:2 3:NULL")
LETOR_X = np.array([[NAN, 0.5, NAN], [1.5, NAN, 0.0], [NAN, NAN, 4.0], [0.0, 2.0, NAN]])
LETOR_Y, LETOR_QID = [2.0, 0.0, 1.0, 0.0], [7, 7, 9, 9]


def _assert_same(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))  # NaN equals NaN here


def test_null_fields_are_nan_in_every_position(tmp_path):
    path = tmp_path / "letor.txt"
    path.write_bytes(LETOR)
    X, y, qid = load_svmlight_ranking(path)
    _assert_same(X, LETOR_X)
    _assert_same(y, LETOR_Y)
    _assert_same(qid, LETOR_QID)
    X_dense, _, _ = read_ranking_file(path)  # detected as SVMlight from its first data line
    _assert_same(X_dense, LETOR_X)


def test_sparse_output_stores_nan_explicitly(tmp_path):
    path = tmp_path / "letor.txt"
    path.write_bytes(LETOR)
    X, _, _ = load_svmlight_ranking(path, dense=False)
    assert X.format == "csr" and np.isnan(X.data).sum() == np.isnan(LETOR_X).sum() == 6
    _assert_same(X.toarray(), LETOR_X)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress], ids=["gz", "bz2"])
def test_compressed_files_and_file_objects(tmp_path, compress):
    suffix = ".gz" if compress is gzip.compress else ".bz2"
    path = tmp_path / f"letor.txt{suffix}"
    path.write_bytes(compress(LETOR))
    _assert_same(load_svmlight_ranking(path)[0], LETOR_X)
    _assert_same(load_svmlight_ranking(io.BytesIO(LETOR))[0], LETOR_X)


def test_lightgbm_format_with_null(tmp_path):
    path = tmp_path / "rank.train"
    path.write_bytes(b"1 1:NULL 2:0.5\n0 2:NULL\n2 1:3 2:1\n")
    (tmp_path / "rank.train.query").write_text("2\n1\n")
    X, _, groups = load_lightgbm_ranking(path)
    _assert_same(X, [[NAN, 0.5], [0.0, NAN], [3.0, 1.0]])
    _assert_same(groups, [0, 0, 1])
    (tmp_path / "rank.train.query").unlink()
    X_rows, _, none = read_ranking_file(path, require_groups=False, missing_values=("NULL",))
    assert none is None
    _assert_same(X_rows, X)


def test_custom_tokens(tmp_path):
    path = tmp_path / "data.txt"
    path.write_bytes(b"1 qid:1 1:NA 2:? 3:NULL 4:-\n0 qid:1 1:2 2:-1 3:-0.5 4:NAN\n")
    X, _, _ = load_svmlight_ranking(path, missing_values=("NA", "?", "NULL", "-"))
    _assert_same(X, [[NAN, NAN, NAN, NAN], [2.0, -1.0, -0.5, NAN]])  # '-1' and 'NAN' are numbers
    X, _, _ = read_ranking_file(path, missing_values=[*"NA,?".split(","), "NULL", "-"])
    assert np.isnan(X[0]).all()
    with pytest.raises(ValueError, match=re.escape("'1:NA' is not '<index>:<value>'")):
        load_svmlight_ranking(path)  # the default reads NULL only


def test_the_off_switch_gives_the_old_error(tmp_path):
    path = tmp_path / "letor.txt"
    path.write_bytes(LETOR)
    for off in ((), None, []):
        with pytest.raises(ValueError, match=re.escape(f"{path}") + r".*line 1: '1:NULL' is not '<index>:<value>' "
                                              r"\(or 'qid:<integer>'\)") as info:
            load_svmlight_ranking(path, missing_values=off)
        assert "missing_values=('NULL',)" in str(info.value)  # NULL looks like a missing-value marker


@pytest.mark.parametrize(("value", "hint"), [
    ("NA", "missing_values=('NULL', 'NA')"), ("null", "missing_values=('NULL', 'null')"),
    ("?", "missing_values=('NULL', '?')"), ("-", "missing_values=('NULL', '-')"), ("x1", None), ("1e", None),
])  # fmt: skip
def test_a_bad_value_names_the_line_and_the_option_when_it_looks_missing(tmp_path, value, hint):
    path = tmp_path / "data.txt"
    path.write_text(f"1 qid:1 1:NULL 2:0.5\n0 qid:1 1:1 2:{value}\n")
    with pytest.raises(ValueError, match=re.escape(f"line 2: '2:{value}' is not '<index>:<value>'")) as info:
        load_svmlight_ranking(path)
    assert (hint in str(info.value)) if hint else "missing_values" not in str(info.value)


def test_tokens_are_only_values(tmp_path):
    """A label or a query id spelled NULL stays an error; a token inside a longer value is not a token."""
    for content, bad in ((b"NULL qid:1 1:2\n", "the label 'NULL' is not a number"),
                         (b"1 qid:NULL 1:2\n", "'qid:NULL' is not"),
                         (b"1 qid:1 1:NULLS\n", "'1:NULLS' is not")):
        path = tmp_path / "bad.txt"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(f"line 1: {bad}")):
            load_svmlight_ranking(path)
    assert substitute_missing(b"1 qid:1 1:NULLS 2:XNULL 3:NULL\n", (b"NULL",)) == b"1 qid:1 1:NULLS 2:XNULL 3:nan\n"


@pytest.mark.parametrize(("tokens", "error", "message"), [
    (("",), ValueError, "non-empty word"), (("N A",), ValueError, "without whitespace"),
    (("a:b",), ValueError, "':'"), (("1.5",), ValueError, "a number"), (("-1",), ValueError, "a number"),
    ((5,), TypeError, "strings"), (5, TypeError, "a string, a sequence of strings or None"),
])  # fmt: skip
def test_bad_tokens_are_refused(tmp_path, tokens, error, message):
    path = tmp_path / "letor.txt"
    path.write_bytes(LETOR)
    with pytest.raises(error, match=re.escape(message)):
        load_svmlight_ranking(path, missing_values=tokens)
    assert check_missing_values(("NULL", "nan", "NULL", "NA")) == (b"NULL", b"NA")  # nan needs no token


# --------------------------------------------------------------------------- MQ2007-agg, the real data


def _null_counts_by_hand(path):
    """NULL count per feature, rows and all-NULL rows, read with the standard library only."""
    counts, rows, all_null = np.zeros(21, int), 0, 0
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()[2:]
            nulls = [int(field.split(":")[0]) - 1 for field in fields if field.endswith(":NULL")]
            counts[nulls] += 1
            rows += 1
            all_null += len(nulls) == 21
    return counts, rows, all_null


def test_mq2007_agg_loads_with_its_nulls(data_dir):
    folder = data_dir / "mq2007-agg"
    X, y, qid = load_svmlight_ranking(folder / "S1.txt")
    assert X.shape == (14_013, 21) and len(np.unique(qid)) == 339
    counts, n_rows, _ = _null_counts_by_hand(folder / "S1.txt")
    assert n_rows == X.shape[0]
    _assert_same(np.isnan(X).sum(axis=0), counts)  # every NULL is a NaN, and nothing else is
    assert set(np.unique(y)) == {0.0, 1.0, 2.0}
    finite = X[np.isfinite(X)]
    assert finite.min() >= 1 and finite.max() <= 573 and np.array_equal(finite, np.round(finite))  # ranks
    all_null, shares, n_rows = 0, np.zeros(21), 0
    for part in range(1, 6):  # the data README: 22% to 77% of each feature NULL, 968 rows all NULL
        X, _, _ = load_svmlight_ranking(folder / f"S{part}.txt", dtype=np.float32)
        all_null += int(np.isnan(X).all(axis=1).sum())
        shares += np.isnan(X).sum(axis=0)
        n_rows += X.shape[0]
    assert n_rows == 69_623 and all_null == 968
    shares /= n_rows
    assert (round(100 * shares.min()), round(100 * shares.max())) == (22, 77), shares


# --------------------------------------------------------------------------- writers


@pytest.mark.parametrize("name", sorted(FILE_FORMATS))
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_round_trips_through_every_writer(tmp_path, name, sparse, dtype):
    import scipy.sparse as sp

    spec = FILE_FORMATS[name]
    X = np.array([[NAN, 0.5, 2.0], [1.0, NAN, 0.0], [NAN, NAN, NAN], [3.0, 0.0, 1.0]], dtype=dtype)
    X[3, 0] = -(2.0 ** 126)  # the writer's first stand-in for NaN is a feature value here: it takes another
    y, groups = np.array([1, 0, 2, 0]), np.array([4, 4, 9, 9])
    path = tmp_path / f"data{spec.suffixes[0]}"
    spec.writer(sp.csr_matrix(X) if sparse else X, y, groups, path)
    text = path.read_text()
    assert text.count(":NULL") == 5 and "nan" not in text.lower()
    X_back, y_back, _ = spec.reader(path, n_features=3, dtype=dtype)
    _assert_same(X_back, X)
    _assert_same(y_back, y)
    spec.writer(X_back, y_back, groups, tmp_path / f"again{spec.suffixes[0]}")  # read -> write -> read
    assert (tmp_path / f"again{spec.suffixes[0]}").read_text() == text


def test_writer_missing_value_option(tmp_path):
    X, y, groups = np.array([[NAN, 1.0], [2.0, 3.0]]), [1, 0], [1, 1]
    dump_svmlight_ranking(X, y, groups, tmp_path / "nan.txt", missing_value="nan")
    X_sklearn, _ = load_svmlight_file(str(tmp_path / "nan.txt"))  # scikit-learn's own reader reads 'nan'
    _assert_same(X_sklearn.toarray(), X)
    dump_lightgbm_ranking(X, y, groups, tmp_path / "na.train", missing_value="NA")
    assert (tmp_path / "na.train").read_text().startswith("1 1:NA 2:1\n")
    _assert_same(load_lightgbm_ranking(tmp_path / "na.train", missing_values="NA")[0], X)
    with pytest.raises(ValueError, match=r"X contains NaN \(1 value\).*missing_value=None"):
        dump_svmlight_ranking(X, y, groups, tmp_path / "refused.txt", missing_value=None)
    assert not (tmp_path / "refused.txt").exists()
    with pytest.raises(ValueError, match=r"^X contains infinity; the formats write finite features \(or NaN"):
        dump_svmlight_ranking(np.array([[np.inf, 1.0], [2.0, NAN]]), y, groups, tmp_path / "inf.txt")


# --------------------------------------------------------------------------- converter, Dask reader


@pytest.mark.parametrize("block_bytes", [1 << 24, 40], ids=["one-block", "blocks-of-40-bytes"])
def test_converter_round_trip_with_nan(tmp_path, monkeypatch, block_bytes):
    monkeypatch.setattr(_disk, "_BLOCK_BYTES", block_bytes)
    source = tmp_path / "letor.txt.gz"
    source.write_bytes(gzip.compress(LETOR))
    X, y, groups = load_ranking_layout(convert_ranking(source, tmp_path / "letor.ltr"))
    _assert_same(y, LETOR_Y)
    assert X.dtype == np.float32
    _assert_same(X, LETOR_X.astype(np.float32))
    _assert_same(groups, LETOR_QID)
    na = tmp_path / "na.txt"
    na.write_bytes(LETOR.replace(b"NULL", b"NA"))
    X_na, _, _ = load_ranking_layout(convert_ranking(na, tmp_path / "na.ltr", missing_values=["NA"]))
    _assert_same(X_na, X)
    with pytest.raises(ValueError, match=r"line 1: '1:NA' is not '<index>:<value>'.*missing_values=\('NULL', 'NA'\)"):
        convert_ranking(na, tmp_path / "refused.ltr")
    assert not (tmp_path / "refused.ltr").exists()


def test_converter_matches_the_reader_on_mq2007_agg(data_dir, tmp_path):
    source = data_dir / "mq2007-agg" / "S5.txt"
    X, y, groups = load_ranking_layout(convert_ranking(source, tmp_path / "s5.ltr"))
    X_read, y_read, groups_read = load_svmlight_ranking(source, dtype=np.float32)
    _assert_same(X, X_read)
    _assert_same(y, y_read)
    _assert_same(groups, groups_read)


def test_dask_reader_reads_null(tmp_path):
    pytest.importorskip("dask")
    from sklearn_ltr.datasets import read_svmlight_ranking_dask

    path = tmp_path / "letor.txt"
    path.write_bytes(LETOR)  # its last block ends with '3:NULL', no newline
    X, _, qid = read_svmlight_ranking_dask(path, blocksize=40)
    _assert_same(X.compute(scheduler="sync"), LETOR_X.astype(np.float32))
    _assert_same(qid.compute(scheduler="sync"), LETOR_QID)
