"""How a ranking data file ends or is laid out changes nothing that any reader reads.

Every way a text file can end or be laid out (no final newline, CRLF line endings for the whole file or its
last line only, trailing blank lines, trailing spaces and tabs, comment lines last or between queries,
LETOR's inline ``#docid = ...`` comments, tab-separated fields, a last query whose last line has no newline,
a ``NULL`` missing value at the very end), plain, gzip- and bzip2-compressed, is read by every reader: the
SVMlight/LETOR reader (``NULL`` tokens and numbers only, from a path and from a file object), the LightGBM
reader and its ``.query`` file (whose own endings vary too), :func:`read_ranking_file` with format
detection, the Dask reader, the streaming converter :func:`convert_ranking` with blocks smaller than a line
(so queries and lines straddle blocks) loaded back with :func:`load_ranking_layout`, and the command line's
reading of data files, its ``convert`` command and its positions and scores files. Each reads the rows,
labels and query ids it reads from the same data written plainly (``\\n`` endings, a final newline), which
are checked by hand. Empty files, and files of blank or comment lines only, are an error naming the file in
every reader. Errors name the physical line whatever the endings; lines ended by a lone ``\\r`` (classic
Mac OS), where the parser sees no line end, are an error naming the fix.
"""

import bz2
import gzip
import importlib.util
import re

import numpy as np
import pytest
from cli_helpers import assert_user_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_ltr.cli import main
from sklearn_ltr.cli._data_files import check_features, read_ranking, read_rows_of_numbers
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.datasets import (
    _disk,
    convert_ranking,
    load_lightgbm_ranking,
    load_ranking_layout,
    load_svmlight_ranking,
    read_ranking_file,
    read_svmlight_ranking_dask,
)

nan = np.nan
#: The rows: (label, query id, features). Queries 7 and 11 have two rows each; NULL ends a line, and the file.
DOCS = ((2, 7, "1:0.5 3:1.0"), (0, 7, "2:0.25"), (1, 9, "1:1.5 2:NULL"), (1, 11, "2:4"), (0, 11, "1:3 3:NULL"))
X_BY_HAND = np.array([[0.5, 0, 1], [0, 0.25, 0], [1.5, nan, 0], [0, 4, 0], [3, 0, nan]])
Y_BY_HAND = np.array([2.0, 0, 1, 1, 0])
QID_BY_HAND = np.array([7, 7, 9, 11, 11])
#: The line of each query's first row.
STARTS = frozenset(i for i, doc in enumerate(DOCS) if i == 0 or doc[1] != DOCS[i - 1][1])
#: The query numbers the LightGBM readers give the rows: queries numbered in file order.
LIGHTGBM_QUERIES = np.array([0, 0, 1, 2, 2])
HAS_DASK = importlib.util.find_spec("dask") is not None and importlib.util.find_spec("distributed") is not None
COMPRESSIONS = {"": lambda data: data, ".gz": gzip.compress, ".bz2": bz2.compress}


def data_lines(fmt, token="NULL"):
    """The data lines, without endings: with ``qid:`` (svmlight) or without (lightgbm); NULL spelled ``token``."""
    return [f"{label}{f' qid:{qid}' if fmt == 'svmlight' else ''} {features.replace('NULL', token)}"
            for label, qid, features in DOCS]


def _join(lines, end="\n", final=True):
    return end.join(lines) + (end if final else "")


def _between_queries(lines, extra):
    return "".join((extra if i in STARTS else "") + line + "\n" for i, line in enumerate(lines))


def _docid(lines):
    return [f"{line} #docid = GX{i:03d}-00-0000000 inc = 1 prob = 0.0365" for i, line in enumerate(lines)]


#: Every way the same lines can end or be laid out: name -> text of the lines.
LAYOUTS = {
    "plain": _join,
    "no_final_newline": lambda lines: _join(lines, final=False),
    "crlf": lambda lines: _join(lines, "\r\n"),
    "crlf_last_line_only": lambda lines: _join(lines[:-1]) + lines[-1] + "\r\n",
    "crlf_no_final_newline": lambda lines: _join(lines, "\r\n", final=False),
    "trailing_blank_lines": lambda lines: _join(lines) + "\n\n\n",
    "trailing_whitespace_lines": lambda lines: _join(lines) + " \n\t\n \t ",
    "trailing_spaces_and_tabs": lambda lines: _join([line + " \t " for line in lines]),
    "trailing_tab_no_final_newline": lambda lines: _join([line + "\t" for line in lines], final=False),
    "leading_blank_and_comment_lines": lambda lines: "\n# generated\n\n" + _join(lines),
    "comment_last": lambda lines: _join(lines) + "# end of file\n",
    "comment_last_no_newline": lambda lines: _join(lines) + "# end of file",
    "comments_between_queries": lambda lines: _between_queries(lines, "# next query\n"),
    "blank_lines_between_queries": lambda lines: _between_queries(lines, "\n \n"),
    "letor_docid_comments": lambda lines: _join(_docid(lines)),
    "letor_docid_no_final_newline": lambda lines: _join(_docid(lines), final=False),
    "comment_right_after_value": lambda lines: _join([line + "#c" for line in lines]),
    "tab_separated_fields": lambda lines: _join([line.replace(" ", "\t") for line in lines]),
    "crlf_comments_and_blanks_no_final_newline": lambda lines: (
        _between_queries(lines, "# q\r\n\r\n").replace("\n", "\r\n").replace("\r\r", "\r")[:-2]),
}
#: Files without a data row: every reader refuses them with the same message.
EMPTY_LAYOUTS = {"empty": "", "blank_lines_only": "\n \n\t\r\n", "comments_only": "# one\n# two",
                 "comment_and_blanks_crlf": "# LETOR\r\n\r\n"}
#: The ``.query`` sizes file (2, 1, 2), laid out in every way its lines can end.
QUERY_LAYOUTS = {
    "plain": "2\n1\n2\n",
    "no_final_newline": "2\n1\n2",
    "crlf": "2\r\n1\r\n2\r\n",
    "crlf_no_final_newline": "2\r\n1\r\n2",
    "trailing_blank_lines": "2\n1\n2\n\n\n",
    "trailing_spaces_and_tabs": "2 \t\n1\t\n2  \n \t\n",
    "leading_and_between_blank_lines": "\n2\n\n1\n2\n",
}


def write(path, text):
    """Write ``text`` to ``path``, compressed as its suffix says."""
    path.write_bytes(COMPRESSIONS.get(path.suffix, COMPRESSIONS[""])(text.encode()))
    return path


def _arrays(X, y, qid):
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), np.asarray(qid)


def _open(path):
    return {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)(path, "rb")


def _from_file_object(path):
    with _open(path) as f:
        return load_svmlight_ranking(f)


def _converted(path):
    # Blocks of 16 bytes: shorter than a line, so lines and queries straddle blocks, and the last block is a
    # line's end.
    return load_ranking_layout(convert_ranking(path, f"{path}.ltr", dtype=np.float64), mmap_mode=None)


def _cli_converted(path):
    assert main(["convert", str(path), f"{path}.cli.ltr"]) == 0
    return load_ranking_layout(f"{path}.cli.ltr", mmap_mode=None)


def _cli_read(path):
    data = read_ranking(str(path))
    return data.X, data.y, data.groups


def _rows_only(path):
    # No .query file beside the data: the rows, without query ids; the query numbers stand in for them.
    X, y, groups = read_ranking_file(path, require_groups=False)
    assert groups is None
    return X, y, LIGHTGBM_QUERIES


def _dask(path):
    X, y, qid = read_svmlight_ranking_dask(path, blocksize=20, dtype=np.float64)
    partitions = [np.unique(block.compute(scheduler="sync")) for block in qid.blocks]
    ids = np.concatenate(partitions)
    assert len(partitions) > 1 and ids.size == np.unique(ids).size, partitions  # no query split between blocks
    return X.compute(scheduler="sync"), y.compute(scheduler="sync"), qid.compute(scheduler="sync")


#: The readers of each format: name -> (format, NULL's spelling in the file, reader of a path).
READERS = {
    "load_svmlight_ranking": ("svmlight", "NULL", load_svmlight_ranking),
    "load_svmlight_ranking_numbers_only": ("svmlight", "nan", lambda p: load_svmlight_ranking(p, missing_values=None)),
    "load_svmlight_ranking_file_object": ("svmlight", "NULL", _from_file_object),
    "read_ranking_file_svmlight": ("svmlight", "NULL", read_ranking_file),
    "convert_ranking_svmlight": ("svmlight", "NULL", _converted),
    "cli_read_svmlight": ("svmlight", "NULL", _cli_read),
    "read_svmlight_ranking_dask": ("svmlight", "NULL", _dask),
    "load_lightgbm_ranking": ("lightgbm", "NULL", load_lightgbm_ranking),
    "load_lightgbm_ranking_numbers_only": ("lightgbm", "nan", lambda p: load_lightgbm_ranking(p, missing_values=None)),
    "read_ranking_file_lightgbm": ("lightgbm", "NULL", read_ranking_file),
    "read_ranking_file_lightgbm_rows_only": ("lightgbm", "NULL", _rows_only),
    "convert_ranking_lightgbm": ("lightgbm", "NULL", _converted),
    "cli_read_lightgbm": ("lightgbm", "NULL", _cli_read),
}


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(_disk, "_BLOCK_BYTES", 16)


def _needs(reader):
    if "dask" in reader and not HAS_DASK:
        pytest.skip("the dask extra is not installed: pip install 'sklearn-ltr[dask]'")


def _reader_compressions():
    """``(reader, compression)`` pairs: the Dask reader splits files into byte ranges and refuses compressed ones
    (tested below)."""
    return [(reader, compression) for reader in READERS for compression in COMPRESSIONS
            if not (compression and "dask" in reader)]


def read(tmp_path, reader, text, compression="", name="data", query_text=None):
    """What ``reader`` reads from ``text`` written to a file (and its ``.query`` file for LightGBM)."""
    fmt, _, function = READERS[reader]
    path = write(tmp_path / f"{name}.txt{compression}", text)
    if fmt == "lightgbm" and not reader.endswith("rows_only"):
        (tmp_path / f"{path.name}.query").write_text(QUERY_LAYOUTS["plain"] if query_text is None else query_text,
                                                     newline="")
    return _arrays(*function(path))


def assert_same(got, expected):
    assert got[0].shape == expected[0].shape, (got[0].shape, expected[0].shape)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reader", READERS)
def test_the_plainly_written_file_reads_as_computed_by_hand(tmp_path, reader):
    _needs(reader)
    fmt, token, _ = READERS[reader]
    X, y, qid = read(tmp_path, reader, _join(data_lines(fmt, token)))
    np.testing.assert_array_equal(X, X_BY_HAND)
    np.testing.assert_array_equal(y, Y_BY_HAND)
    np.testing.assert_array_equal(qid, QID_BY_HAND if fmt == "svmlight" else LIGHTGBM_QUERIES)


@pytest.mark.parametrize("layout", [name for name in LAYOUTS if name != "plain"])
@pytest.mark.parametrize(("reader", "compression"), _reader_compressions())
def test_every_ending_reads_as_the_plain_file(tmp_path, reader, compression, layout):
    _needs(reader)
    fmt, token, _ = READERS[reader]
    lines = data_lines(fmt, token)
    expected = read(tmp_path, reader, LAYOUTS["plain"](lines), name="plain")
    assert_same(read(tmp_path, reader, LAYOUTS[layout](lines), compression), expected)


@pytest.mark.parametrize("layout", ["no_final_newline", "crlf_no_final_newline", "comment_last_no_newline",
                                    "letor_docid_no_final_newline", "trailing_blank_lines"])
@pytest.mark.parametrize("fmt", ["svmlight", "lightgbm"])
def test_the_command_line_converter_keeps_every_row(tmp_path, fmt, layout):
    lines = data_lines(fmt)
    plain = write(tmp_path / "plain.txt", LAYOUTS["plain"](lines))
    source = write(tmp_path / "data.txt", LAYOUTS[layout](lines))
    for path in (plain, source):
        (tmp_path / f"{path.name}.query").write_text(QUERY_LAYOUTS["plain"])
    X, y, qid = _cli_converted(source)
    assert X.shape == (len(DOCS), 3)
    assert_same(_arrays(X, y, qid), _arrays(*_cli_converted(plain)))


@pytest.mark.parametrize("layout", [name for name in QUERY_LAYOUTS if name != "plain"])
@pytest.mark.parametrize("reader", [name for name, spec in READERS.items()
                                    if spec[0] == "lightgbm" and not name.endswith("rows_only")])
def test_every_ending_of_the_query_file_reads_as_the_plain_one(tmp_path, reader, layout):
    text = LAYOUTS["plain"](data_lines("lightgbm", READERS[reader][1]))
    expected = read(tmp_path, reader, text, name="plain")
    assert_same(read(tmp_path, reader, text, query_text=QUERY_LAYOUTS[layout]), expected)


@pytest.mark.parametrize("layout", list(EMPTY_LAYOUTS))
@pytest.mark.parametrize(("reader", "compression"), _reader_compressions())
def test_a_file_without_data_rows_is_an_error_naming_it(tmp_path, reader, compression, layout):
    _needs(reader)
    error = CLIError if reader.startswith("cli") else ValueError
    # A file object is named by its name, which a bz2 file object lacks.
    named = r"data\.txt.*" if not (reader.endswith("file_object") and compression == ".bz2") else ""
    with pytest.raises(error, match=rf"{named}holds no data rows"):
        read(tmp_path, reader, EMPTY_LAYOUTS[layout], compression)


@pytest.mark.parametrize("compression", list(COMPRESSIONS))
@pytest.mark.parametrize("layout", list(EMPTY_LAYOUTS))
def test_the_command_line_converter_refuses_a_file_without_data_rows(tmp_path, capsys, layout, compression):
    path = write(tmp_path / f"data.txt{compression}", EMPTY_LAYOUTS[layout])
    assert_user_error(capsys, ["convert", path, tmp_path / "data.ltr"], "data.txt", "holds no data rows")
    assert not (tmp_path / "data.ltr").exists()


@pytest.mark.parametrize("text", ["", "\n\n", " \t\r\n", "\n \n"], ids=["empty", "blank", "whitespace", "mixed"])
def test_a_query_file_without_sizes_is_an_error_naming_it(tmp_path, text):
    with pytest.raises(ValueError, match=r"data\.txt\.query' is empty"):
        read(tmp_path, "load_lightgbm_ranking", _join(data_lines("lightgbm")), query_text=text)


@pytest.mark.parametrize("layout", ["plain", "crlf", "no_final_newline", "crlf_no_final_newline",
                                    "comments_between_queries", "crlf_comments_and_blanks_no_final_newline"])
@pytest.mark.parametrize("reader", ["load_svmlight_ranking", "convert_ranking_svmlight", "load_lightgbm_ranking"])
def test_a_bad_line_is_named_by_its_line_in_the_file(tmp_path, reader, layout):
    fmt = READERS[reader][0]
    lines = data_lines(fmt)
    lines[-1] = lines[-1].replace("1:3", "1:abc")  # the last line, whose ending varies
    text = LAYOUTS[layout](lines)
    number = len(text.replace("\r\n", "\n").rstrip("\n").split("\n"))  # the last line holds data in these layouts
    with pytest.raises(ValueError, match=rf"line {number}: '1:abc' is not"):
        read(tmp_path, reader, text)


@pytest.mark.parametrize(("reader", "compression"), [
    pair for pair in _reader_compressions() if "dask" not in pair[0] and "file_object" not in pair[0]])
def test_lines_ended_by_a_lone_carriage_return_are_an_error_naming_the_fix(tmp_path, reader, compression):
    # Classic Mac OS line endings: the parser ends lines at \n only, and would read one long line of bad fields.
    # (A file object cannot be read again to find the line, and the Dask reader names the bytes of its block.)
    text = _join(data_lines(READERS[reader][0], READERS[reader][1]), "\r")
    error = CLIError if reader.startswith("cli") else ValueError
    with pytest.raises(error, match=r"line 1: a carriage return \('\\r'\) ends a line.*convert the line endings"):
        read(tmp_path, reader, text, compression)


@pytest.mark.parametrize("compression", list(COMPRESSIONS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_positions_and_scores_files_read_the_same_whatever_their_endings(tmp_path, layout, compression):
    # The command line's files of one number per row (--positions, --scores), laid out as the data files.
    numbers = ["3", "1", "2.5", "4", "1"]
    path = write(tmp_path / f"positions.txt{compression}", LAYOUTS[layout](numbers))
    np.testing.assert_array_equal(read_rows_of_numbers(path, len(numbers), what="scores file"), [3, 1, 2.5, 4, 1])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_command_line_names_the_line_of_a_missing_value_whatever_the_endings(tmp_path, layout):
    from sklearn.linear_model import LinearRegression  # a model that takes no NaN

    text = LAYOUTS[layout](data_lines("svmlight"))
    path = write(tmp_path / "data.txt", text)
    # The physical line of the first row with a NaN (qid 9), blank and comment lines counted.
    number = next(i for i, line in enumerate(re.split(r"\r?\n", text), 1) if re.match(r"1\s+qid:9", line))
    with pytest.raises(CLIError, match=rf"--data '.*data\.txt', line {number}: feature 2 is nan"):
        check_features(read_ranking(str(path)), LinearRegression(), option="--data", model_name="the model")


@pytest.mark.skipif(not HAS_DASK, reason="the dask extra is not installed: pip install 'sklearn-ltr[dask]'")
@pytest.mark.parametrize("compression", [".gz", ".bz2"])
def test_the_dask_reader_refuses_compressed_files_by_name(tmp_path, compression):
    path = write(tmp_path / f"data.txt{compression}", _join(data_lines("svmlight")))
    with pytest.raises(ValueError, match=rf"data\.txt\{compression}' is compressed.*decompress it"):
        read_svmlight_ranking_dask(path)


# Any mix of the endings, line by line: each line's end, trailing blanks, inline comments, comment and blank lines
# between queries, and the last line's newline or its absence.
_ENDING = st.sampled_from(["\n", "\r\n"])
_BLANKS = st.sampled_from(["", " ", "\t", " \t "])
_EXTRA_LINE = st.tuples(st.sampled_from(["", "# comment", " \t", "#docid = GX1 inc = 1"]), _ENDING)


@st.composite
def _layouts(draw):
    text = ""
    for i, line in enumerate(data_lines("svmlight")):
        if i in STARTS:
            text += "".join(extra + end for extra, end in draw(st.lists(_EXTRA_LINE, max_size=2)))
        separator = draw(st.sampled_from([" ", "\t", "  "]))
        comment = draw(st.sampled_from(["", " #docid = GX0", "#c"]))
        text += line.replace(" ", separator) + draw(_BLANKS) + comment + draw(_ENDING)
    text += "".join(extra + end for extra, end in draw(st.lists(_EXTRA_LINE, max_size=2)))
    return text if draw(st.booleans()) else text.rstrip("\r\n")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_layouts(), compression=st.sampled_from(list(COMPRESSIONS)), block=st.integers(1, 64))
def test_any_mix_of_endings_reads_as_the_plain_file(tmp_path_factory, monkeypatch, text, compression, block):
    tmp_path = tmp_path_factory.mktemp("mix")
    monkeypatch.setattr(_disk, "_BLOCK_BYTES", block)
    readers = ["load_svmlight_ranking", "load_svmlight_ranking_file_object", "read_ranking_file_svmlight",
               "convert_ranking_svmlight", "cli_read_svmlight"] + (["read_svmlight_ranking_dask"] if HAS_DASK and
                                                                   not compression else [])
    for reader in readers:
        assert_same(read(tmp_path, reader, text, compression, name=f"mix-{reader}"),
                    (X_BY_HAND, Y_BY_HAND, QID_BY_HAND))
