"""Ranking data on disk: a folder of NumPy files that training memory-maps, and the streaming converter to it.

The layout (a folder, conventionally named ``*.ltr``) holds three ``.npy`` files of one row
per document, the rows of each query contiguous, and a small JSON description:

===================  ==============================================================
``features.npy``     ``(n_rows, n_features)``, float32 by default, C order
``labels.npy``       ``(n_rows,)`` float64 relevance labels
``qid.npy``          ``(n_rows,)`` query ids (int64 for the text formats)
``layout.json``      format name and version, rows, features, queries, source
===================  ==============================================================

:func:`load_ranking_layout` maps the files (``np.load(..., mmap_mode="r")``): nothing is read
until used, and processes that map one file share its pages in the OS page cache. The neural
rankers train on such a memory-mapped ``X`` batch by batch, without a private copy of it.

:func:`convert_ranking` writes the layout from a file of :data:`~sklearn_ltr.datasets.FILE_FORMATS`
in two streaming passes over blocks of lines (the first counts rows, features and queries,
the second parses and appends), so its memory is one block whatever the file's size;
:func:`write_ranking_layout` writes it from arrays or a DataFrame. Both build the folder
beside its destination and rename it into place only when complete
(:func:`sklearn_ltr._atomic.write_directory_atomically`): a failed conversion leaves no output.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from sklearn_ltr._atomic import write_directory_atomically
from sklearn_ltr.datasets._file_formats import FILE_FORMATS, detect_file_format
from sklearn_ltr.datasets._formats import _read_sizes
from sklearn_ltr.datasets._missing import MISSING_VALUES, check_missing_values, substitute_missing
from sklearn_ltr.datasets._text_lines import READ_ERRORS, compression, decompression_error, first_bad_line
from sklearn_ltr.datasets._text_lines import file_name as _name

__all__ = ["LAYOUT_FILES", "LAYOUT_NAME", "convert_ranking", "is_ranking_layout", "load_ranking_layout",
           "write_ranking_layout"]

#: The ``format`` entry of ``layout.json``, and its version.
LAYOUT_NAME, LAYOUT_VERSION = "sklearn_ltr ranking layout", 1
#: The files of the layout: features, labels, query ids, description.
LAYOUT_FILES = ("features.npy", "labels.npy", "qid.npy", "layout.json")
#: Bytes of text parsed at a time by the converter.
_BLOCK_BYTES = 1 << 24
#: Rows written at a time from arrays.
_BLOCK_ROWS = 1 << 16


def is_ranking_layout(path):
    """Whether ``path`` is a folder holding the layout's description (``layout.json``).

    Examples
    --------
    >>> import tempfile
    >>> from sklearn_ltr.datasets import is_ranking_layout
    >>> is_ranking_layout(tempfile.mkdtemp())
    False"""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "layout.json"))


def load_ranking_layout(path, *, mmap_mode="r"):
    """Open ranking data written by :func:`convert_ranking` or :func:`write_ranking_layout`.

    Parameters
    ----------
    path : str or path-like
        The layout's folder.
    mmap_mode : {"r", "c", None}, default="r"
        How the arrays are opened (:func:`numpy.load`): ``"r"`` maps them read-only, so
        that reading ``X`` costs no private memory and processes share its pages; None
        reads them into memory.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
        Features (a :class:`numpy.memmap` unless ``mmap_mode=None``), rows grouped by query.
    y : ndarray of shape (n_rows,)
        Relevance labels.
    groups : ndarray of shape (n_rows,)
        Query id of each row.

    Raises
    ------
    ValueError
        If ``path`` is not such a folder, or its files disagree with its description.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ltr.datasets import load_ranking_layout, make_ranking, write_ranking_layout
    >>> X, y, qid = make_ranking(n_queries=5, n_features=3, random_state=0)
    >>> path = write_ranking_layout(X, y, qid, os.path.join(tempfile.mkdtemp(), "train.ltr"))
    >>> Xm, ym, qm = load_ranking_layout(path)
    >>> type(Xm).__name__, Xm.dtype, Xm.shape == X.shape, (qm == qid).all()
    ('memmap', dtype('float32'), True, np.True_)
    """
    if not is_ranking_layout(path):
        raise ValueError(f"{os.fspath(path)!r} is not a ranking layout folder (no layout.json); write one with "
                         f"sklearn_ltr.datasets.convert_ranking or 'sklearn-ltr convert'.")
    with open(os.path.join(path, "layout.json"), encoding="utf-8") as f:
        meta = json.load(f)
    if meta.get("format") != LAYOUT_NAME or meta.get("version") != LAYOUT_VERSION:
        raise ValueError(f"{os.fspath(path)!r} holds layout {meta.get('format')!r} version {meta.get('version')!r}; "
                         f"this version of sklearn_ltr reads {LAYOUT_NAME!r} version {LAYOUT_VERSION}.")
    X, y, groups = (np.load(os.path.join(path, name), mmap_mode=mmap_mode, allow_pickle=False)
                    for name in LAYOUT_FILES[:3])
    shape = (meta["n_rows"], meta["n_features"])
    if X.shape != shape or y.shape != shape[:1] or groups.shape != shape[:1]:
        raise ValueError(f"{os.fspath(path)!r} is damaged: layout.json says {shape[0]} rows of {shape[1]} features, "
                         f"the files hold {X.shape}, {y.shape} and {groups.shape}.")
    return X, y, groups


class _LayoutWriter:
    """Append blocks of rows to the three ``.npy`` files of a layout whose shape is known in advance."""

    def __init__(self, folder, n_rows, n_features, dtype, qid_dtype):
        self.folder, self.n_rows, self.written = folder, n_rows, 0
        self.files = {}
        for name, shape, kind in (("features.npy", (n_rows, n_features), dtype),
                                  ("labels.npy", (n_rows,), np.float64), ("qid.npy", (n_rows,), qid_dtype)):
            f = open(os.path.join(folder, name), "wb")
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(kind)),
                                                     "fortran_order": False, "shape": shape})
            self.files[name] = (f, np.dtype(kind))
        self.last_qid, self.seen = None, set()
        self.n_queries = 0

    def append(self, X, y, qid):
        self._check_grouped(qid)
        for name, values in (("features.npy", X), ("labels.npy", y), ("qid.npy", qid)):
            f, dtype = self.files[name]
            f.write(np.ascontiguousarray(values, dtype=dtype).tobytes())
        self.written += len(y)

    def _check_grouped(self, qid):
        if len(qid) == 0:
            return
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        runs = qid[starts].tolist()
        if runs[0] == self.last_qid:
            runs = runs[1:]
        for run in runs:
            if run in self.seen:
                raise ValueError(
                    f"the rows of query {run!r} are not contiguous (the query appears again after other queries); "
                    f"the layout keeps each query's rows together. Sort the rows by query id first."
                )
            self.seen.add(run)
            self.n_queries += 1
        self.last_qid = qid[-1].item() if hasattr(qid[-1], "item") else qid[-1]

    def close(self, source):
        for f, _ in self.files.values():
            f.close()
        if self.written != self.n_rows:
            raise ValueError(f"{source} gave {self.written} rows on its second pass and {self.n_rows} on its first: "
                             f"was it changed during the conversion?")
        f_shape = np.load(os.path.join(self.folder, "features.npy"), mmap_mode="r").shape
        meta = {"format": LAYOUT_NAME, "version": LAYOUT_VERSION, "n_rows": self.n_rows, "n_features": f_shape[1],
                "n_queries": self.n_queries, "source": source}
        with open(os.path.join(self.folder, "layout.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)


def _qid_dtype(groups):
    groups = np.asarray(groups)
    if groups.dtype.kind in "iub":
        return np.int64
    if groups.dtype.kind == "U":
        return groups.dtype
    if groups.dtype.kind == "f":
        return np.float64
    return np.asarray(groups.astype(str)).dtype


def write_ranking_layout(X, y, groups, path, *, dtype=np.float32, overwrite=False):
    """Write in-memory ranking data (arrays or a DataFrame) as the on-disk layout.

    Rows whose queries are contiguous keep their order; otherwise they are put in the
    order of their query ids (stable), the order training uses. Rows are written in blocks
    of 65,536, so the only copy made is one block.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Dense features.
    y : array-like of shape (n_samples,)
        Relevance labels.
    groups : array-like of shape (n_samples,)
        Query id of each row.
    path : str or path-like
        The folder to write (conventionally ``*.ltr``).
    dtype : numpy dtype, default=np.float32
        Dtype of the stored features; float32 is what the neural rankers train on without a copy.
    overwrite : bool, default=False
        Replace an existing folder (only once the new one is complete).

    Returns
    -------
    path : str
        The folder written.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from sklearn_ltr.datasets import load_ranking_layout, write_ranking_layout
    >>> frame = pd.DataFrame({"f1": [0.5, 0.1, 0.9], "f2": [1.0, 0.0, 0.2]})
    >>> path = write_ranking_layout(frame, [1, 0, 2], ["b", "a", "b"], os.path.join(tempfile.mkdtemp(), "d.ltr"))
    >>> load_ranking_layout(path)[2].tolist()  # query 'b' was not contiguous: rows in query order
    ['a', 'b', 'b']
    """
    X = X.to_numpy() if hasattr(X, "to_numpy") else X
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    y, groups = np.asarray(y, dtype=np.float64).ravel(), np.asarray(groups).ravel()
    if X.ndim != 2 or not (X.shape[0] == len(y) == len(groups)):
        raise ValueError(f"write_ranking_layout needs X of shape (n_samples, n_features) and y and groups of "
                         f"n_samples values; got X {X.shape}, y {y.shape}, groups {groups.shape}.")
    qid_dtype = _qid_dtype(groups)
    groups = groups.astype(qid_dtype) if groups.dtype != qid_dtype else groups
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]) if len(groups) else np.array([], int)
    order = None if len(np.unique(groups[starts])) == len(starts) else np.argsort(groups, kind="stable")

    def fill(folder):
        writer = _LayoutWriter(folder, X.shape[0], X.shape[1], dtype, qid_dtype)
        for start in range(0, X.shape[0], _BLOCK_ROWS):
            rows = slice(start, start + _BLOCK_ROWS) if order is None else order[start:start + _BLOCK_ROWS]
            writer.append(X[rows], y[rows], groups[rows])
        writer.close("arrays")

    write_directory_atomically(path, fill, overwrite=overwrite)
    return os.fspath(path)


def _blocks(path):
    """Blocks of whole lines of ``path`` (decompressed), about :data:`_BLOCK_BYTES` each, and their first line."""
    opener = {"gzip": gzip.open, "bzip2": bz2.open}.get(compression(path), open)
    try:
        with opener(path, "rb") as f:
            rest, line = b"", 1
            while True:
                data = f.read(_BLOCK_BYTES)
                if not data:
                    break
                data = rest + data
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
                yield line, data[:cut]
                line += data.count(b"\n", 0, cut)
                rest = data[cut:]
            if rest.strip():
                yield line, rest + b"\n"
    except READ_ERRORS as err:
        error = decompression_error(path, err)
        if error is None:
            raise
        raise error from err


def _parse(path, block, *, query_id, tokens=(), **options):
    try:
        return load_svmlight_file(io.BytesIO(substitute_missing(block, tokens)), query_id=query_id, **options)
    except (ValueError, TypeError, OverflowError) as err:
        bad = first_bad_line(path, missing_values=tokens)
        where = f"line {bad[0]}: {bad[1]}" if bad is not None else str(err)[:200]
        raise ValueError(f"could not read {_name(path)!r} as a libsvm ranking file: {where}.") from err


def _first_pass(path, query_id, tokens):
    """Rows, columns (indices read as zero-based), whether an index 0 occurs, and the qids' dtype."""
    n_rows, n_columns, has_zero = 0, 0, False
    for _, block in _blocks(path):
        if not block.strip(b" \t\r\n"):
            continue
        parsed = _parse(path, block, query_id=query_id, tokens=tokens, zero_based=True, dtype=np.float32)
        X = parsed[0]
        n_rows += X.shape[0]
        n_columns = max(n_columns, X.shape[1])
        has_zero = has_zero or (X.nnz > 0 and int(X.indices.min()) == 0)
    return n_rows, n_columns, has_zero


def convert_ranking(source, path, *, format=None, n_features=None, dtype=np.float32, overwrite=False,
                    missing_values=MISSING_VALUES):
    """Convert a ranking data file to the on-disk layout, streaming: memory stays one block of lines.

    Parameters
    ----------
    source : str or path-like
        A file of a format of :data:`~sklearn_ltr.datasets.FILE_FORMATS` (``.gz`` and ``.bz2``
        decompressed on the fly); a LightGBM file's ``.query`` sizes file is read beside it.
    path : str or path-like
        The folder to write (conventionally ``*.ltr``).
    format : str, default=None
        A key of :data:`~sklearn_ltr.datasets.FILE_FORMATS`; None detects it
        (:func:`~sklearn_ltr.datasets.detect_file_format`).
    n_features : int, default=None
        Columns of ``X``; the largest feature index when None (give the training file's
        number for a test file whose last features are all zero).
    dtype : numpy dtype, default=np.float32
        Dtype of the stored features.
    overwrite : bool, default=False
        Replace an existing folder (only once the new one is complete).
    missing_values : str, sequence of str or None, default=("NULL",)
        Value tokens read as NaN (LETOR 4.0's ``1:NULL``), stored as NaN in the features;
        ``()`` or None reads numbers only.

    Returns
    -------
    path : str
        The folder written. :func:`load_ranking_layout` reads back exactly what
        :func:`~sklearn_ltr.datasets.read_ranking_file` reads from ``source`` with the same
        ``dtype``: features, labels and query ids (for a LightGBM file, the query numbers).

    Raises
    ------
    ValueError
        For a malformed line (named), rows of a query that are not contiguous, a ``.query``
        file that does not match; the destination is then left as it was.
    FileExistsError
        When ``path`` exists and ``overwrite`` is false.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ltr.datasets import convert_ranking, load_ranking_layout
    >>> folder = tempfile.mkdtemp()
    >>> source = os.path.join(folder, "train.txt")
    >>> _ = open(source, "w").write("2 qid:7 1:0.5 3:1.0\\n0 qid:7 2:0.25\\n1 qid:9 1:1.5\\n")
    >>> X, y, groups = load_ranking_layout(convert_ranking(source, os.path.join(folder, "train.ltr")))
    >>> X.tolist(), y.tolist(), groups.tolist()
    ([[0.5, 0.0, 1.0], [0.0, 0.25, 0.0], [1.5, 0.0, 0.0]], [2.0, 0.0, 1.0], [7, 7, 9])
    """
    if not os.path.isfile(source):
        raise FileNotFoundError(f"no such ranking data file: {_name(source)!r}")
    format = detect_file_format(source) if format is None else format
    if format not in FILE_FORMATS:
        raise ValueError(f"unknown ranking file format {format!r}; the formats are "
                         f"{', '.join(map(repr, FILE_FORMATS))}.")
    query_id = not FILE_FORMATS[format].companions(source)  # the ids are on the lines, else in the .query file
    tokens = check_missing_values(missing_values)
    n_rows, n_columns, has_zero = _first_pass(source, query_id, tokens)
    if n_rows == 0:
        raise ValueError(f"{_name(source)!r} holds no data rows.")
    found = n_columns if has_zero else max(n_columns - 1, 1)
    if n_features is not None and n_features < found:
        raise ValueError(f"{_name(source)!r} has feature indices up to {found} but n_features={n_features}; give "
                         f"n_features >= {found} or None.")
    n_features = found if n_features is None else n_features
    sizes = None if query_id else _read_sizes(os.fspath(source) + ".query", n_rows)

    def fill(folder):
        writer = _LayoutWriter(folder, n_rows, n_features, dtype, np.int64)
        query_of_row = None if sizes is None else np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        for _, block in _blocks(source):
            if not block.strip(b" \t\r\n"):
                continue
            parsed = _parse(source, block, query_id=query_id, tokens=tokens, zero_based=has_zero,
                            n_features=n_features, dtype=dtype)
            X, y = parsed[0], parsed[1]
            start = writer.written
            qid = parsed[2] if query_id else query_of_row[start:start + X.shape[0]]
            writer.append(X.toarray(), y, qid)
        writer.close(f"{os.path.basename(os.fspath(source))} ({FILE_FORMATS[format].title})")

    write_directory_atomically(path, fill, overwrite=overwrite)
    return os.fspath(path)
