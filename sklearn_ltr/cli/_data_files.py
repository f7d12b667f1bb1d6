"""Data files of the commands: ranking data (``--train``, ``--valid``, ``--data``), positions and scores files.

Ranking data is read through the public registry of file formats,
:data:`sklearn_ltr.datasets.FILE_FORMATS` (``--format`` takes its names, or ``auto``), with
:func:`sklearn_ltr.datasets.read_ranking_file`; ``auto`` is
:func:`sklearn_ltr.datasets.detect_file_format`: a ``qid:`` field on the first data line means
SVMlight/LETOR, none means LightGBM (query sizes in ``FILE.query``). ``.gz`` and ``.bz2`` files
are read as well. The library's errors name the file and, for a malformed line, the line and the
reason; this module turns them into :class:`~sklearn_ltr.cli._errors.CLIError` and adds what only
the command line knows (which ``--format`` to use).

:func:`check_features` names the file and the line of the first row whose features the model
cannot take (NaN for a neural model, infinity for any), before the model would report only a row
number of its input.

Value tokens such as LETOR 4.0's ``NULL`` (``1:NULL``) are read as NaN, a missing value:
``--missing-values`` lists them (:data:`MISSING_VALUES_OPTION` by default; ``''`` reads numbers only),
and :func:`missing_values` turns the option into the readers' ``missing_values``.

Positions and scores files hold one number per line (``#`` comments and blank lines skipped).

A file's *features* are its own: the highest feature index it holds (SVMlight and LightGBM
files leave zeros out, so a file may end before the features of the model that scores it,
or of the other file it is trained with). :func:`align_features` pads it with zero columns,
and warns on standard error when the file ends *far* below the others: at or below
:data:`FAR_BELOW` (three quarters) of the features it is padded to. Sparse files seldom end
that early by chance (in LightGBM's 300-feature example data, every query, and 99% of the
single rows, reach feature 277), and a truncated file or one of another feature set does.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.datasets import (
    FILE_FORMATS,
    data_lines,
    detect_file_format,
    is_ranking_layout,
    load_ranking_layout,
    read_ranking_file,
)
from sklearn_ltr.utils._system import physical_memory

__all__ = [
    "FAR_BELOW",
    "FORMATS",
    "MISSING_VALUES_OPTION",
    "RankingFile",
    "align_features",
    "check_features",
    "check_input",
    "data_file_inputs",
    "detect_format",
    "far_below",
    "input_error",
    "missing_values",
    "read_ranking",
    "read_rows_of_numbers",
]

#: File formats of ``--format`` (besides ``auto``): the library's registry.
FORMATS = tuple(FILE_FORMATS)

#: ``--missing-values`` default: the tokens read as NaN, comma-separated (LETOR 4.0's).
MISSING_VALUES_OPTION = "NULL"

#: A file whose highest feature index is at most this fraction of the features it is padded to is
#: warned about (see the module docstring).
FAR_BELOW = 0.75


@dataclass
class RankingFile:
    """The rows of a ranking data file, in file order."""

    path: str
    format: str
    X: np.ndarray
    y: np.ndarray
    #: Query id of each row; None for a LightGBM file read without its ``.query`` file.
    groups: np.ndarray | None
    #: The file's own features (its highest feature index), whatever :func:`align_features` pads ``X`` to.
    n_file_features: int | None = None

    def __post_init__(self):
        if self.n_file_features is None:
            self.n_file_features = int(self.X.shape[1])

    @property
    def n_queries(self):
        return 0 if self.groups is None else len(np.unique(self.groups))

    @property
    def n_missing(self):
        """Number of NaN feature values (missing values)."""
        X = self.X
        low, high = (X.min(), X.max()) if X.size else (0.0, 0.0)
        return 0 if np.isfinite(low) and np.isfinite(high) else int(np.count_nonzero(np.isnan(X)))

    def describe(self):
        """``"PATH: ROWS rows, QUERIES queries, FEATURES features"``: the file's own counts, padded or not.

        A file with missing values adds how many (``, 1,234 missing values (12.3%)``).
        """
        queries = "queries unknown" if self.groups is None else f"{self.n_queries:,} queries"
        padded = "" if self.X.shape[1] == self.n_file_features else f" (padded to {self.X.shape[1]})"
        missing = self.n_missing
        share = f", {missing:,} missing values ({100 * missing / self.X.size:.1f}%)" if missing else ""
        return f"{self.path}: {len(self.y):,} rows, {queries}, {self.n_file_features} features{padded}{share}"


def check_input(path, what="data file"):
    """Raise :class:`CLIError` unless ``path`` is a readable file."""
    if not os.path.exists(path):
        raise CLIError(f"{what} {path!r} does not exist.")
    if os.path.isdir(path):
        raise CLIError(f"{what} {path!r} is a directory, not a file.")


def input_error(path, err, what="data file"):
    """The :class:`CLIError` of an error reading ``path``: the library's message (naming the file), or an I/O error."""
    if isinstance(err, OSError):
        return CLIError(f"cannot read {what} {getattr(err, 'filename', None) or path!r}: {err.strerror or err}.")
    if isinstance(err, ValueError):  # the readers' missing_values=(...) is the option --missing-values here
        message = _option_spelling(str(err)).rstrip(".") + "."
        return CLIError(message if path in message else f"cannot read {what} {path!r}: {message}")
    return CLIError(f"cannot read {what} {path!r}: {type(err).__name__}: {err}.")


#: What reading a file can raise that is the file's fault, not a bug: a malformed or unreadable file.
_READ_ERRORS = (ValueError, OSError, EOFError)


def detect_format(path):
    """The ``--format auto`` name of ``path``'s format (see :func:`sklearn_ltr.datasets.detect_file_format`)."""
    check_input(path)
    try:
        return detect_file_format(path)
    except _READ_ERRORS as err:
        raise input_error(path, err) from err


def data_file_inputs(option, path, fmt="auto"):
    """``[(description, path)]`` that a data file option reads: the file, and its format's companions (``.query``)."""
    if path is None:
        return []
    inputs = [(f"{option} {path!r}", path)]
    if fmt == "auto":
        fmt = detect_format(path) if os.path.isfile(path) else None
    if fmt is not None:
        inputs += [(f"the {what} file of {option} {path!r}", companion)
                   for companion, what in FILE_FORMATS[fmt].companions(path).items()]
    return inputs


def _check_format(path, fmt, detected, require_groups):
    """A :class:`CLIError` when ``path`` cannot be read as ``fmt`` (its first data line reads as ``detected``)."""
    spec, found = FILE_FORMATS[fmt], FILE_FORMATS[detected]
    if fmt != detected and not spec.companions(path):  # the format's query ids are in the file, not there
        beside = "".join(f" ({what} in {companion!r})" for companion, what in found.companions(path).items())
        raise CLIError(f"{path!r} is not {spec.title} data: its first data line has {found.recognized_by}, so it "
                       f"reads as {found.title} data{beside}; use --format {detected} or auto.")
    for companion, what in spec.companions(path).items():
        if os.path.exists(companion) or (spec.rows_reader is not None and not require_groups):
            continue
        if fmt != detected:
            why, fix = f"(--format {fmt})", f"use --format auto to read it as {found.title} data"
        else:
            inline = [other for other in FILE_FORMATS.values() if not other.companions(path)]
            why = f"has {spec.recognized_by}, so it"
            fix = " or ".join(f"put {other.recognized_by} on every line of {path!r}" for other in inline)
        raise CLIError(f"{path!r} {why} is read as {spec.title} data, whose {what} belong in {companion!r}: that file "
                       f"does not exist. Write it, or {fix}.")


def _dense(path, X):
    """``X`` (CSR) as a dense array; a :class:`CLIError` when that cannot fit in memory (a stray feature index)."""
    n_bytes = X.shape[0] * X.shape[1] * X.dtype.itemsize
    memory = physical_memory()
    too_big = (f"{path!r} has feature indices up to {X.shape[1]:,}: its {X.shape[0]:,} rows would take "
               f"{n_bytes / 2**30:,.1f} GiB as dense features")
    if memory is not None and n_bytes > memory:
        raise CLIError(f"{too_big}, more than this machine's {memory / 2**30:,.1f} GiB of memory. Is a feature "
                       f"index wrong?")
    try:
        return X.toarray()
    except MemoryError as err:
        raise CLIError(f"{too_big}, more than the memory available. Is a feature index wrong?") from err


def missing_values(option):
    """The readers' ``missing_values`` of a ``--missing-values`` value: comma-separated tokens, ``''`` none."""
    from sklearn_ltr.datasets import check_missing_values

    tokens = tuple(token.strip() for token in option.split(",") if token.strip())
    try:
        check_missing_values(tokens, name="--missing-values")
    except (TypeError, ValueError) as err:
        raise CLIError(str(err).split(" To treat")[0]) from None
    return tokens


def _option_spelling(message):
    """``message`` with the readers' ``missing_values=(...)`` written as the option ``--missing-values ...``."""
    def option(match):
        try:
            tokens = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            return match.group(0)
        return "--missing-values " + ",".join(tokens if isinstance(tokens, tuple) else (tokens,))

    return re.sub(r"missing_values=(\([^)]*\))", option, message)


def read_ranking(path, fmt="auto", *, require_groups=True, missing=MISSING_VALUES_OPTION):
    """Read a ranking data file into a :class:`RankingFile` (dense features, file row order).

    Parameters
    ----------
    path : str
        A file of a format of :data:`~sklearn_ltr.datasets.FILE_FORMATS`, or a folder written by
        ``sklearn-ltr convert`` (memory-mapped; ``fmt`` is then ignored).
    fmt : str, default="auto"
        A name of :data:`FORMATS`, or ``auto`` (:func:`sklearn_ltr.datasets.detect_file_format`).
    require_groups : bool, default=True
        Whether a LightGBM file needs its ``.query`` file. False reads one without it
        (``groups=None``): enough to score rows with a pointwise model.
    missing : str, default=MISSING_VALUES_OPTION
        ``--missing-values``: comma-separated value tokens read as NaN.
    """
    if is_ranking_layout(path):  # written by 'sklearn-ltr convert': memory-mapped, never copied whole
        try:
            X, y, groups = load_ranking_layout(path)
        except _READ_ERRORS as err:
            raise input_error(path, err) from err
        return RankingFile(path, "layout", X, y, groups)
    detected = detect_format(path)
    fmt = detected if fmt == "auto" else fmt
    _check_format(path, fmt, detected, require_groups)
    try:
        X, y, groups = read_ranking_file(path, fmt, dense=False, require_groups=require_groups,
                                         missing_values=missing_values(missing))
    except _READ_ERRORS as err:
        raise input_error(path, err) from err
    if X.shape[0] == 0:
        raise CLIError(f"data file {path!r} holds no data rows.")
    return RankingFile(path, fmt, np.ascontiguousarray(_dense(path, X)), y, groups)


def far_below(have, n_features):
    """Whether a file whose highest feature index is ``have`` ends far below ``n_features`` (:data:`FAR_BELOW`)."""
    return have <= FAR_BELOW * n_features


def align_features(data, n_features, *, model_name="the model", against=None):
    """Pad ``data.X`` with zero columns up to ``n_features``; more columns than that is an error.

    Sparse files leave out zero values, so a file may end before the model's last features;
    one that ends far below them (:func:`far_below`) gets a one-line warning on standard
    error naming the file, its highest feature index and ``model_name``'s feature count, or,
    with ``against`` (a description of the widest file, e.g. ``"--train 'a.txt'"``), that
    file's.
    """
    have = data.n_file_features
    if data.X.shape[1] > n_features:
        raise CLIError(
            f"{data.path!r} has {have} features (feature index up to {have}), but {model_name} was trained on "
            f"{n_features}; predict and evaluate need the features of the training file."
        )
    if have < n_features and far_below(have, n_features):
        other = f"{against} has {n_features}" if against else f"{model_name} was trained on {n_features}"
        print(f"sklearn-ltr: warning: {data.path!r} has features up to index {have} only, but {other}; features "
              f"{have + 1}-{n_features} are read as 0 in every row. Is the file truncated, or of another feature "
              f"set?", file=sys.stderr)
    if data.X.shape[1] < n_features:
        data.X = np.hstack([data.X, np.zeros((data.X.shape[0], n_features - data.X.shape[1]), dtype=data.X.dtype)])
    return data


def _line_of_row(path, row):
    """The line number of data row ``row`` (0-based) of ``path``: readers keep the rows in file order."""
    for index, (number, _) in enumerate(data_lines(path)):
        if index == row:
            return number
    return None


def _imputes(estimator):
    """Whether ``estimator`` is a Pipeline with an imputer (``SimpleImputer``, ...) among its steps."""
    return hasattr(estimator, "steps") and any(type(step).__name__.endswith("Imputer") for _, step in estimator.steps)


def check_features(data, estimator, *, option, model_name, imputed=False):
    """Raise :class:`CLIError` naming the file and line of the first row whose features ``estimator`` cannot take.

    NaN is refused unless the model treats it as a missing value (LambdaMART) or imputes it (a
    Pipeline with an imputer, ``--preprocessing impute-...``); infinity always.

    Parameters
    ----------
    data : RankingFile
        The rows of the file, in file order.
    estimator : estimator or Pipeline
        The model (or its unfitted ranker) that will train on or score ``data``; a Pipeline's last
        step decides, since its preprocessing passes NaN on.
    option : str
        The option that named the file (``--train``, ``--data``), for the message.
    model_name : str
        The model, for the message.
    imputed : bool, default=False
        Whether NaN is imputed before ``estimator`` sees it (``train --preprocessing impute-...``).
    """
    from sklearn.utils import get_tags

    X = data.X
    low, high = (X.min(), X.max()) if X.size else (0.0, 0.0)
    if np.isfinite(low) and np.isfinite(high):  # NaN propagates: clean files stop here, with no copy
        return
    final = estimator[-1] if hasattr(estimator, "steps") else estimator
    nan = np.isnan(X)
    if nan.any() and not (imputed or _imputes(estimator) or get_tags(final).input_tags.allow_nan):
        where, count = _first_bad_row(data, nan, option)
        raise CLIError(f"{where}, and {model_name} cannot take missing values ({count} NaN). Train with "
                       f"--preprocessing impute-standardize, impute-log1p-standardize or impute (or auto), which "
                       f"impute them, or with --model lambdamart, which treats NaN as a missing value; or fill them "
                       f"in the file.")
    infinite = np.isinf(X)
    if infinite.any():
        where, count = _first_bad_row(data, infinite, option)
        raise CLIError(f"{where}, and {model_name} needs finite features ({count} infinity). Replace them with "
                       f"finite values.")


def _first_bad_row(data, bad, option):
    """``(where, count)``: file, line, feature and value of the first row of ``data`` where ``bad``; how many."""
    rows = np.flatnonzero(bad.any(axis=1))
    row = int(rows[0])
    column = int(np.flatnonzero(bad[row])[0])
    where = (f"{option} {data.path!r}, line {_line_of_row(data.path, row)}: feature {column + 1} is "
             f"{data.X[row, column]}")
    return where, f"{len(rows):,} row{'s' if len(rows) > 1 else ''} of the file hold{'' if len(rows) > 1 else 's'}"


def _short(text, limit=30):
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _number_lines(path, what):
    """``(line_number, fields)`` of the non-blank, non-comment lines of a positions or scores file."""
    try:
        yield from data_lines(path)
    except ValueError as err:  # a .gz/.bz2 file that does not decompress: the reader's message
        raise CLIError(f"cannot read {what} {path!r}: {err}") from err
    except OSError as err:
        raise input_error(path, err, what) from err


def read_rows_of_numbers(path, n_rows, *, what, integer=False):
    """One finite number per data line of ``path`` (``#`` comments and blank lines skipped), ``n_rows`` of them.

    With ``integer``, every number must be a 1-based rank (a whole number from 1 to 2**63 - 1).
    """
    check_input(path, what)
    values = []
    for number, fields in _number_lines(path, what):
        if len(fields) != 1:
            raise CLIError(f"{what} {path!r}, line {number}: expected one number per line, got {len(fields)} fields.")
        try:
            value = float(fields[0])
        except ValueError:
            raise CLIError(f"{what} {path!r}, line {number}: {_short(fields[0])} is not a number.") from None
        if not np.isfinite(value):
            raise CLIError(f"{what} {path!r}, line {number}: {_short(fields[0])} is not a finite number.")
        if integer and not (value.is_integer() and 1 <= value < 2**63):
            raise CLIError(f"{what} {path!r}, line {number}: {_short(fields[0])} is not a 1-based rank "
                           f"(1, 2, 3, ...).")
        values.append(value)
    if len(values) != n_rows:
        raise CLIError(f"{what} {path!r} has {len(values)} values, but the data file has {n_rows} rows; "
                       f"give one per row, in the data file's order.")
    return np.asarray(values, dtype=np.int64 if integer else np.float64)
