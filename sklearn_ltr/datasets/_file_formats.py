"""The registry of ranking data file formats, and the reader that picks a format by name or content.

:data:`FILE_FORMATS` maps each format's name to a :class:`FileFormat`: its reader and writer, the file
name suffixes it is saved with, the files it keeps beside the data, and how its first data line is
recognized. Everything that needs the list of formats (the command line's ``--format`` choices, its
reading of data files, the tests) reads it here: adding a format is one entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from sklearn_ltr.datasets._formats import (
    _finish,
    _read,
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_lightgbm_ranking,
    load_svmlight_ranking,
)
from sklearn_ltr.datasets._missing import MISSING_VALUES
from sklearn_ltr.datasets._text_lines import COMPRESSION, file_name, first_data_line

__all__ = ["FILE_FORMATS", "FileFormat", "detect_file_format", "read_ranking_file"]


def _no_companions(path):
    return {}


@dataclass(frozen=True)
class FileFormat:
    """A ranking data file format: an entry of :data:`FILE_FORMATS`.

    Parameters
    ----------
    name : str
        The key of the format in :data:`FILE_FORMATS` (the command line's ``--format``).
    title : str
        The name error messages and documents give it, e.g. ``"SVMlight/LETOR"``.
    description : str
        The layout of a line (and of the files beside it), in one sentence.
    suffixes : tuple of str
        File name endings the format is conventionally saved with (a ``.gz`` or ``.bz2``
        ending aside); they decide a file's format only where its content does not.
    reader : callable
        ``reader(path, *, n_features=None, dtype=np.float64, dense=True, missing_values=("NULL",))
        -> (X, y, groups)``.
        Errors are ``FileNotFoundError`` or ``ValueError`` whose message names the file and,
        for a malformed line, the line and the reason.
    writer : callable
        ``writer(X, y, groups, path)``: writes ``path`` (and its companions) so that ``reader``
        reads the rows back, sorted by query.
    recognized_by : str
        What :func:`detect_file_format` looks for on the first data line, in words.
    recognizes : callable or None, default=None
        ``recognizes(fields) -> bool`` on the whitespace-separated fields of the first data
        line (comments stripped). None: the format is recognized by its suffixes only.
    companions : callable, default=no companions
        ``companions(path) -> {companion_path: what it holds}``: files ``reader`` reads
        beside ``path``.
    rows_reader : callable or None, default=None
        ``rows_reader(path, *, n_features=None, dtype=np.float64, dense=True, missing_values=("NULL",))
        -> (X, y)``:
        the rows without their query ids, for a format that keeps the ids in a companion
        file (enough to score rows with a pointwise model). None when the file holds its ids.

    See Also
    --------
    read_ranking_file : Read a file of any registered format.

    Examples
    --------
    >>> from sklearn_ltr.datasets import FILE_FORMATS
    >>> lightgbm = FILE_FORMATS["lightgbm"]
    >>> lightgbm.title, lightgbm.companions("rank.train")
    ('LightGBM', {'rank.train.query': 'query sizes'})
    >>> lightgbm.recognizes(["1", "1:0.5"]), FILE_FORMATS["svmlight"].recognizes(["1", "qid:3", "1:0.5"])
    (True, True)
    """

    name: str
    title: str
    description: str
    suffixes: tuple[str, ...]
    reader: Callable
    writer: Callable
    recognized_by: str
    recognizes: Callable[[list[str]], bool] | None = None
    companions: Callable[[str], dict[str, str]] = field(default=_no_companions)
    rows_reader: Callable | None = None


def _has_qid(fields):
    return any(item.startswith("qid:") for item in fields[1:])


def _has_no_qid(fields):
    return not _has_qid(fields)


def _query_file(path):
    return {os.fspath(path) + ".query": "query sizes"}


def _libsvm_rows(path, *, n_features=None, dtype=np.float64, dense=True, missing_values=MISSING_VALUES):
    """The rows of a libsvm file, ``(X, y)``, without query ids."""
    X, y = _read(path, n_features=n_features, dtype=dtype, zero_based="auto", query_id=False,
                 missing_values=missing_values)
    return _finish(X, path, dense), y


#: dict of str to FileFormat: the ranking data file formats, by name (read-only).
FILE_FORMATS: Mapping[str, FileFormat] = MappingProxyType({
    "svmlight": FileFormat(
        name="svmlight", title="SVMlight/LETOR",
        description="'<label> qid:<id> <index>:<value> ...' per line (LETOR, MSLR-WEB, Yahoo! LTR)",
        suffixes=(".txt", ".svmlight"), reader=load_svmlight_ranking, writer=dump_svmlight_ranking,
        recognized_by="a 'qid:' field", recognizes=_has_qid,
    ),
    "lightgbm": FileFormat(
        name="lightgbm", title="LightGBM",
        description=("'<label> <index>:<value> ...' per line, each query's rows contiguous, and the number of "
                     "rows of each query, one per line, in FILE.query"),
        suffixes=(".train", ".test", ".vali"), reader=load_lightgbm_ranking, writer=dump_lightgbm_ranking,
        recognized_by="no 'qid:' field", recognizes=_has_no_qid, companions=_query_file,
        rows_reader=_libsvm_rows,
    ),
})


def _suffix_formats(path, formats):
    name = os.fspath(path).lower()
    stem, ext = os.path.splitext(name)
    name = stem if ext in COMPRESSION else name
    return [fmt for fmt in formats if any(name.endswith(suffix.lower()) for suffix in fmt.suffixes)]


def detect_file_format(path):
    """The name of the format of the ranking data file ``path``, a key of :data:`FILE_FORMATS`.

    A format recognized by its suffixes only (no ``recognizes``) wins when the file name
    ends with one of them. Else the first data line decides (blank and ``#`` lines skipped;
    ``.gz`` and ``.bz2`` files decompressed): the format whose ``recognizes`` accepts it, and
    where several or none do, the one whose suffixes the name ends with.

    Parameters
    ----------
    path : str or path-like
        The data file.

    Returns
    -------
    name : str
        ``"svmlight"`` for a first data line with a ``qid:`` field, ``"lightgbm"`` for one
        without, or another registered name.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file holds no data line, does not decompress, or matches no format
        (the message names the file).

    See Also
    --------
    read_ranking_file : Read the file in the format found here.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import detect_file_format
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = Path(tmp, "a.txt").write_text("# a comment\\n2 qid:7 1:0.5\\n")
    ...     _ = Path(tmp, "b.txt").write_text("2 1:0.5\\n")
    ...     detect_file_format(Path(tmp, "a.txt")), detect_file_format(Path(tmp, "b.txt"))
    ('svmlight', 'lightgbm')
    """
    by_name_only = _suffix_formats(path, [fmt for fmt in FILE_FORMATS.values() if fmt.recognizes is None])
    if len(by_name_only) == 1:
        return by_name_only[0].name
    fields = first_data_line(path)
    candidates = [fmt for fmt in FILE_FORMATS.values() if fmt.recognizes is not None and fmt.recognizes(fields)]
    if len(candidates) == 1:
        return candidates[0].name
    by_suffix = _suffix_formats(path, candidates or FILE_FORMATS.values())
    if len(by_suffix) == 1:
        return by_suffix[0].name
    raise ValueError(f"cannot tell the format of {file_name(path)!r} from its first data line or its name; "
                     f"give one of {', '.join(map(repr, FILE_FORMATS))}.")


def read_ranking_file(path, format=None, *, n_features=None, dtype=np.float64, dense=True, require_groups=True,
                      missing_values=MISSING_VALUES):
    """Read a ranking data file of any format of :data:`FILE_FORMATS` into ``X, y, groups``.

    Parameters
    ----------
    path : str or path-like
        The data file; ``.gz`` and ``.bz2`` files are decompressed on the fly.
    format : str, default=None
        A key of :data:`FILE_FORMATS`; None picks it with :func:`detect_file_format`
        (from the first data line, else the file name's suffix).
    n_features : int, default=None
        Number of columns of ``X``; inferred from the largest feature index when None.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.
    dense : bool, default=True
        Return ``X`` as a dense ndarray; False keeps scipy's CSR matrix.
    require_groups : bool, default=True
        Whether the query ids must be read. False reads a file whose format keeps them
        in a companion file that is missing (a LightGBM file without its ``.query``
        file): ``groups`` is then None.
    missing_values : str, sequence of str or None, default=("NULL",)
        Value tokens read as NaN (LETOR 4.0's ``1:NULL``); ``()`` or None reads numbers only.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Features, in file row order.
    y : ndarray of shape (n_samples,), float64
        Relevance labels.
    groups : ndarray of shape (n_samples,) or None
        Query id of each row, as the format's reader gives them.

    Raises
    ------
    FileNotFoundError
        If ``path``, or a companion file that is required, does not exist.
    ValueError
        If ``format`` is not registered, or the file is malformed (the message names
        the file and, for a malformed line, the line and the reason).

    See Also
    --------
    FileFormat : An entry of the registry.
    load_svmlight_ranking, load_lightgbm_ranking : The readers of the two formats.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import read_ranking_file
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "rank.train"
    ...     _ = path.write_text("1 1:0.5\\n0 2:1.0\\n2 1:0.3 2:0.2\\n")
    ...     X, y, groups = read_ranking_file(path, require_groups=False)  # no rank.train.query yet
    ...     _ = Path(tmp, "rank.train.query").write_text("2\\n1\\n")
    ...     _, _, groups_now = read_ranking_file(path)  # detected: LightGBM, the sizes read
    >>> X.shape, y.tolist(), groups, groups_now.tolist()
    ((3, 2), [1.0, 0.0, 2.0], None, [0, 0, 1])
    """
    if format is None:
        format = detect_file_format(path)
    elif format not in FILE_FORMATS:
        raise ValueError(f"unknown ranking file format {format!r}; the formats are "
                         f"{', '.join(map(repr, FILE_FORMATS))}.")
    spec = FILE_FORMATS[format]
    options = {"n_features": n_features, "dtype": dtype, "dense": dense, "missing_values": missing_values}
    if not require_groups and spec.rows_reader is not None and not all(
            os.path.exists(companion) for companion in spec.companions(path)):
        return (*spec.rows_reader(path, **options), None)
    return spec.reader(path, **options)
