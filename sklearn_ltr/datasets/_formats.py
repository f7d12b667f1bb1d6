"""Readers and writers for the SVMlight/LETOR (``qid:``) and LightGBM (``.query``) ranking formats.

Both formats are plain text, one document per line: ``<label> [qid:<id>] <index>:<value> ...``.
The LETOR format (Qin & Liu, 2013) keeps the query id on every line; LightGBM's format leaves it out
and lists the number of documents of each query, in row order, in a ``.query`` file beside the data.
Parsing is done by :func:`sklearn.datasets.load_svmlight_file`; these functions add the query ids,
the checks and error messages that name the file.
"""

from __future__ import annotations

import bz2
import gzip
import os

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.utils import check_array

from sklearn_ltr._atomic import write_atomically
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr._validation import check_relevance
from sklearn_ltr.datasets._missing import (
    MISSING_VALUES,
    WRITTEN_MISSING_VALUE,
    check_missing_values,
    encode_missing,
    nan_lines,
)
from sklearn_ltr.datasets._text_lines import READ_ERRORS, compression, decompression_error, first_bad_line
from sklearn_ltr.datasets._text_lines import file_name as _name
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

__all__ = ["dump_lightgbm_ranking", "dump_svmlight_ranking", "load_lightgbm_ranking", "load_svmlight_ranking"]


def _parse(path, tokens, **options):
    """``load_svmlight_file`` of ``path`` (a file name or a binary file object), ``tokens`` read as NaN."""
    if not tokens:
        return load_svmlight_file(path, **options)
    if not isinstance(path, (str, os.PathLike)):
        return load_svmlight_file(nan_lines(path, tokens), **options)
    opener = {"gzip": gzip.open, "bzip2": bz2.open}.get(compression(path), open)
    with opener(path, "rb") as f:
        return load_svmlight_file(nan_lines(f, tokens), **options)


def _read(path, *, n_features, dtype, zero_based, query_id, missing_values=MISSING_VALUES):
    """``load_svmlight_file`` with errors that name ``path``; ``missing_values`` tokens read as NaN."""
    if isinstance(path, (str, os.PathLike)) and not os.path.exists(path):
        raise FileNotFoundError(f"no such ranking data file: {_name(path)!r}")
    tokens = check_missing_values(missing_values)
    try:
        return _parse(path, tokens, n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=query_id)
    except InvalidParameterError:  # a bad argument (dtype, n_features, ...), not a bad file
        raise
    except (ValueError, TypeError, OverflowError) as err:
        bad = first_bad_line(path, missing_values=tokens)  # name the line at fault where one is
        if bad is not None:
            raise ValueError(f"could not read {_name(path)!r} as an SVMlight/libsvm ranking file: line {bad[0]}: "
                             f"{bad[1]}.") from err
        reason = str(err) if len(str(err)) <= 200 else str(err)[:200] + "..."
        raise ValueError(
            f"could not read {_name(path)!r} as an SVMlight/libsvm ranking file "
            f"('<label> [qid:<id>] <index>:<value> ...' per line): {reason}"
        ) from err
    except READ_ERRORS as err:
        error = decompression_error(path, err)
        if error is None:
            raise
        raise error from err


def _finish(X, path, dense):
    if X.shape[0] == 0:
        raise ValueError(f"{_name(path)!r} holds no data rows.")
    return X.toarray() if dense else X


def load_svmlight_ranking(path, *, n_features=None, dtype=np.float64, zero_based="auto", dense=True,
                          missing_values=MISSING_VALUES):
    """Load a LETOR / SVMlight ranking file with ``qid:`` query ids.

    Each line reads ``<label> qid:<id> <index>:<value> ... [# comment]``, the format of
    LETOR 3.0/4.0, MSLR-WEB10K/30K and Yahoo! LTR (Qin & Liu, 2013).

    Parameters
    ----------
    path : str, path-like or binary file object
        The file; ``.gz`` and ``.bz2`` files are decompressed on the fly.
    n_features : int, default=None
        Number of columns of ``X``; inferred from the largest feature index when None.
        Pass it to load a test file whose last features are all zero with as many
        columns as its training file.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether feature indices start at 0. "auto" takes the file as one-based
        (the LETOR convention) unless it holds an index 0.
    dense : bool, default=True
        Return ``X`` as a dense ndarray; False keeps scipy's CSR matrix.
    missing_values : str, sequence of str or None, default=("NULL",)
        Value tokens read as NaN, e.g. LETOR 4.0's ``NULL`` (``1:NULL``); ``nan`` is read
        as NaN anyway. ``()`` or None reads numbers only. A sparse ``X`` stores NaN
        explicitly. See the user guide's section on missing values.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64
        Relevance labels.
    groups : ndarray of shape (n_samples,), int64
        The ``qid:`` query id of each row, in file order.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not in SVMlight format, is empty, or has rows without ``qid:``
        (LightGBM-style files keep query sizes in a ``.query`` file instead: use
        :func:`load_lightgbm_ranking`); or if a file named ``*.gz`` or ``*.bz2`` does not
        decompress (truncated, or not compressed). The message names the file and, for a
        malformed line, the line and the reason.

    See Also
    --------
    dump_svmlight_ranking : Write this format.
    load_lightgbm_ranking : Read libsvm rows with a ``.query`` sizes file.

    References
    ----------
    T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import load_svmlight_ranking
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "train.txt"
    ...     _ = path.write_text("2 qid:7 1:0.5 2:1.0\\n0 qid:7 1:0.1\\n1 qid:9 2:3.0 # doc 17\\n")
    ...     X, y, groups = load_svmlight_ranking(path)
    ...     X_wide, _, _ = load_svmlight_ranking(path, n_features=4)
    >>> X
    array([[0.5, 1. ],
           [0.1, 0. ],
           [0. , 3. ]])
    >>> y, groups
    (array([2., 0., 1.]), array([7, 7, 9]))
    >>> X_wide.shape
    (3, 4)
    """
    X, y, qid = _read(path, n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=True,
                      missing_values=missing_values)
    X = _finish(X, path, dense)
    if qid.shape[0] == 0:
        raise ValueError(
            f"{_name(path)!r} has no 'qid:' query ids. LightGBM-style files keep the query sizes "
            f"in a separate '.query' file: use load_lightgbm_ranking for them."
        )
    if qid.shape[0] != X.shape[0]:
        raise ValueError(
            f"only {qid.shape[0]} of the {X.shape[0]} rows of {_name(path)!r} have a 'qid:' query id; "
            f"every row needs one."
        )
    return X, y, qid.astype(np.int64, copy=False)


def _check_dump(X, y, groups, missing_value=None, owner=None):
    """Validate writer inputs; return X (ndarray or CSR, NaN then a sentinel), y, the QueryGroups index and
    the wrapper of the output file that writes NaN as ``missing_value`` (see ``_missing.encode_missing``)."""
    if not sp.issparse(X) and np.ndim(X) != 2:
        raise ValueError(f"X must be 2-D, one row of features per document; got shape {np.shape(X)}.")
    X = check_array(X, accept_sparse="csr", dtype="numeric", input_name="X", ensure_all_finite=False)
    if np.isinf(X.data if sp.issparse(X) else X).any():
        raise ValueError("X contains infinity; the formats write finite features (or NaN, as a missing value).")
    X, wrap = encode_missing(X, missing_value, owner=owner)
    y = check_relevance(y, name="y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows; pass one label per row.")
    return X, y, QueryGroups(groups, n_samples=X.shape[0]), wrap


def _labels(y):
    """Write whole-number labels as integers (``2``, not ``2.0``), as LETOR and LightGBM files do."""
    return y.astype(np.int64) if np.array_equal(y, np.round(y)) else y


def dump_svmlight_ranking(X, y, groups, path, *, zero_based=False, comment=None,
                          missing_value=WRITTEN_MISSING_VALUE):
    """Write a LETOR / SVMlight ranking file with ``qid:`` query ids.

    Rows are written **sorted by query id** (a stable sort: rows of a query keep their
    input order), so that each query's rows are contiguous, as the LETOR convention and
    tools such as SVMrank expect. Reading the file back therefore returns the rows in
    ``sklearn_ltr`` query order, not necessarily in input order. Zero feature values are
    not written (the format is sparse); pass ``n_features`` when reading back. The file is
    written whole or not at all: an error half-way leaves a previous file intact.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Features: finite, or NaN for a missing value.
    y : array-like of shape (n_samples,)
        Non-negative relevance labels; whole numbers are written as integers.
    groups : array-like of shape (n_samples,)
        Integer query id of each row, in any order. String ids are rejected because
        the format stores integer ``qid:`` values; map them first, e.g. with
        ``np.unique(groups, return_inverse=True)[1]``.
    path : str or path-like
        Output file, overwritten.
    zero_based : bool, default=False
        Write zero-based feature indices. The default writes one-based indices, as LETOR
        files do.
    comment : str, default=None
        Text written as ``#`` comment lines at the top of the file.
    missing_value : str or None, default="NULL"
        The token written for a NaN feature: LETOR 4.0's ``NULL``, which the readers
        (``missing_values``' default) and LightGBM read back as missing. ``"nan"`` writes
        what :func:`sklearn.datasets.load_svmlight_file` reads; None refuses NaN.

    See Also
    --------
    load_svmlight_ranking : Read this format.

    References
    ----------
    T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013.

    Examples
    --------
    A round trip: rows come back sorted by query id, each query's rows in input order.

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from sklearn_ltr.datasets import dump_svmlight_ranking, load_svmlight_ranking
    >>> X = np.array([[0.5, 0.0], [1.0, 2.0], [0.0, 3.0]])
    >>> y, groups = [1, 0, 2], [9, 4, 9]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "out.txt"
    ...     dump_svmlight_ranking(X, y, groups, path)
    ...     text = path.read_text()
    ...     X_back, y_back, groups_back = load_svmlight_ranking(path, n_features=2)
    >>> print(text, end="")
    0 qid:4 1:1 2:2
    1 qid:9 1:0.5
    2 qid:9 2:3
    >>> order = np.argsort(groups, kind="stable")
    >>> bool(np.array_equal(X_back, X[order])), y_back.tolist(), groups_back.tolist()
    (True, [0.0, 1.0, 2.0], [4, 9, 9])
    """
    X, y, qg, wrap = _check_dump(X, y, groups, missing_value, owner="dump_svmlight_ranking")
    if qg.ids.dtype.kind not in "iu":
        raise ValueError(
            "groups holds string query ids, but the SVMlight format stores integer 'qid:' values; "
            "map them to integers first, e.g. groups = np.unique(groups, return_inverse=True)[1]."
        )
    qid = qg.ids[qg.codes].astype(np.int64)
    write_atomically(path, lambda f: dump_svmlight_file(
        X[qg.order], _labels(y)[qg.order], wrap(f), zero_based=zero_based, comment=comment, query_id=qid[qg.order],
    ))


#: Largest group size the ``.query`` file may hold (LightGBM reads sizes as 64-bit integers).
_MAX_SIZE = np.iinfo(np.int64).max


def _read_sizes(query_path, n_rows):
    """The group sizes of a ``.query`` file: positive integers, one per line, summing to ``n_rows``.

    Every error names the file and, for a bad size, its line.
    """
    if not os.path.exists(query_path):
        raise FileNotFoundError(
            f"query sizes file {_name(query_path)!r} not found; LightGBM-format data needs one group "
            f"size per line in a '.query' file beside it (or pass query_path)."
        )
    with open(query_path, "rb") as f:
        lines = f.read().splitlines()
    sizes = []
    for number, line in enumerate(lines, 1):
        for token in line.split():
            shown = token[:30].decode("utf-8", errors="replace") + ("..." if len(token) > 30 else "")
            try:
                # int() refuses more than 4,300 digits: a long run of digits is a (too) large integer.
                size = int(token) if len(token) <= 100 or not token.lstrip(b"+-").isdigit() else (
                    -1 if token.startswith(b"-") else _MAX_SIZE + 1)
            except ValueError:
                raise ValueError(
                    f"query sizes file {_name(query_path)!r}, line {number}: {shown!r} is not an integer; the file "
                    f"must hold one integer group size per line."
                ) from None
            if size < 1:
                raise ValueError(
                    f"query sizes file {_name(query_path)!r} has a non-positive size {shown} on line {number}; "
                    f"every query needs at least one row."
                )
            if size > _MAX_SIZE:
                raise ValueError(
                    f"query sizes file {_name(query_path)!r}, line {number}: size {shown} is beyond a 64-bit "
                    f"integer; the data file has {n_rows} rows."
                )
            sizes.append(size)
    if not sizes:
        raise ValueError(f"query sizes file {_name(query_path)!r} is empty.")
    total = sum(sizes)  # Python integers: no overflow
    if total != n_rows:
        raise ValueError(
            f"the group sizes in {_name(query_path)!r} sum to {total}, but the data file has "
            f"{n_rows} rows; they must be equal."
        )
    return np.array(sizes, dtype=np.int64)


def load_lightgbm_ranking(path, *, query_path=None, n_features=None, dtype=np.float64, zero_based="auto", dense=True,
                          missing_values=MISSING_VALUES):
    """Load LightGBM ranking data: libsvm rows plus a ``.query`` file of group sizes.

    The data file holds ``<label> <index>:<value> ...`` lines with the rows of each query
    contiguous; the query file (LightGBM's ``rank.train.query``) holds one group size per
    line, in row order.

    Parameters
    ----------
    path : str or path-like
        The libsvm data file.
    query_path : str or path-like, default=None
        The group sizes file; defaults to ``path + ".query"``.
    n_features : int, default=None
        Number of columns of ``X``; inferred from the largest feature index when None.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether feature indices start at 0; "auto" reads one-based indices unless the
        file holds an index 0.
    dense : bool, default=True
        Return ``X`` as a dense ndarray; False keeps scipy's CSR matrix.
    missing_values : str, sequence of str or None, default=("NULL",)
        Value tokens read as NaN, e.g. LETOR 4.0's ``NULL`` (``1:NULL``); ``nan`` is read
        as NaN anyway. ``()`` or None reads numbers only. A sparse ``X`` stores NaN
        explicitly. See the user guide's section on missing values.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64
    groups : ndarray of shape (n_samples,), int64
        Query number of each row: ``0 .. n_queries - 1`` in file order.

    Raises
    ------
    FileNotFoundError
        If the data file or the query file is missing.
    ValueError
        If a file is malformed or does not decompress, a size is not a positive integer
        that fits in 64 bits (the message names the line), or the sizes do not sum to
        the number of rows.

    See Also
    --------
    dump_lightgbm_ranking : Write this format.
    load_svmlight_ranking : Read files with ``qid:`` ids.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import load_lightgbm_ranking
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "rank.train"
    ...     _ = path.write_text("1 1:0.5\\n0 2:1.0\\n2 1:0.3 2:0.2\\n")
    ...     _ = Path(tmp, "rank.train.query").write_text("2\\n1\\n")  # 2 rows, then 1
    ...     X, y, groups = load_lightgbm_ranking(path)
    >>> X
    array([[0.5, 0. ],
           [0. , 1. ],
           [0.3, 0.2]])
    >>> y, groups
    (array([1., 0., 2.]), array([0, 0, 1]))
    """
    if query_path is None:
        query_path = os.fspath(path) + ".query"
    X, y = _read(path, n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=False,
                 missing_values=missing_values)
    X = _finish(X, path, dense)
    sizes = _read_sizes(query_path, X.shape[0])
    return X, y, np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


def dump_lightgbm_ranking(X, y, groups, path, *, query_path=None, zero_based=False,
                          missing_value=WRITTEN_MISSING_VALUE):
    """Write LightGBM ranking data: a libsvm file and its ``.query`` group sizes file.

    Each file is written whole or not at all: an error half-way leaves a previous file intact.

    Rows are written **sorted by query** (queries in sorted id order, a stable sort
    that keeps each query's rows in input order), since LightGBM needs each query's rows
    contiguous. The ids themselves are not stored: :func:`load_lightgbm_ranking` numbers
    the queries ``0 .. n_queries - 1`` in that order.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Features: finite, or NaN for a missing value.
    y : array-like of shape (n_samples,)
        Non-negative relevance labels; whole numbers are written as integers.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order).
    path : str or path-like
        The libsvm data file, overwritten.
    query_path : str or path-like, default=None
        The group sizes file; defaults to ``path + ".query"``.
    zero_based : bool, default=False
        Write zero-based feature indices (default one-based, like LightGBM's examples).
    missing_value : str or None, default="NULL"
        The token written for a NaN feature; LightGBM's parser and
        :func:`load_lightgbm_ranking` read ``NULL`` as missing. None refuses NaN.

    See Also
    --------
    load_lightgbm_ranking : Read this format.

    Examples
    --------
    A round trip: query ``"q1"`` is written first, and the ids come back as query
    numbers.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import dump_lightgbm_ranking, load_lightgbm_ranking
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "rank.train"
    ...     dump_lightgbm_ranking([[1.0], [2.0], [3.0]], [0, 1, 2], ["q2", "q1", "q2"], path)
    ...     data, sizes = path.read_text(), Path(tmp, "rank.train.query").read_text()
    ...     X, y, groups = load_lightgbm_ranking(path)
    >>> print(data, end="")
    1 1:2
    0 1:1
    2 1:3
    >>> print(sizes, end="")
    1
    2
    >>> X.ravel().tolist(), y.tolist(), groups.tolist()
    ([2.0, 1.0, 3.0], [1.0, 0.0, 2.0], [0, 1, 1])
    """
    X, y, qg, wrap = _check_dump(X, y, groups, missing_value, owner="dump_lightgbm_ranking")
    if query_path is None:
        query_path = os.fspath(path) + ".query"
    # Each file is written whole or not at all: an error half-way leaves any previous file intact.
    write_atomically(path, lambda f: dump_svmlight_file(X[qg.order], _labels(y)[qg.order], wrap(f),
                                                        zero_based=zero_based))
    sizes = "".join(f"{size}\n" for size in qg.sizes).encode()
    write_atomically(query_path, lambda f: f.write(sizes))
