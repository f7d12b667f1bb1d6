"""Files of the command line: ranking data, display positions, ``--param`` values, saved models and scores.

Ranking data comes in two text formats, one document per line (see :mod:`sklearn_ltr.datasets`):

- SVMlight / LETOR: ``<label> qid:<id> <index>:<value> ... [# comment]``;
- LightGBM: ``<label> <index>:<value> ...`` with the rows of each query contiguous, and the
  number of rows of each query, one integer per line, in a sidecar file ``FILE.query``.

``--format auto`` reads the first data line (blank and ``#`` lines skipped): a ``qid:`` field
means SVMlight/LETOR, none means LightGBM. ``.gz`` and ``.bz2`` files are read as well.

A saved model is the fitted estimator itself (a ranker, or a ``Pipeline`` of
preprocessing steps and a ranker), as ``joblib.dump`` writes it, or as ``skops.io.dump``
writes it when the file name ends in ``.skops``: ``joblib.load`` (or ``skops.io.load``
with :data:`~sklearn_ltr.utils.persistence.TRUSTED_TYPES`) returns the estimator, and
``predict`` and ``evaluate`` read a ranker saved so from Python. ``train`` records on the
estimator, in the attribute ``cli_metadata_`` (a dict), what a reader wants to know: the
model name, the number of features, whether predictions need query ids, the
``sklearn_ltr`` version, the parameters, the training file and its scores. A file without
it is described by the estimator (``n_features_in_``, its ranker tags). The dict around
the estimator that earlier versions wrote (``format_version`` 1) still loads, with a
deprecation warning.

Loading a joblib file unpickles it, which runs any code the file holds: load model files
only from sources you trust. A ``.skops`` file loads only if it references no types but
skops's defaults and the library's own (``TRUSTED_TYPES``).

Models and scores are written by :func:`sklearn_ltr.cli._output.write_atomically`: whole or
not at all.
"""

from __future__ import annotations

import ast
import bz2
import difflib
import gzip
import os
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._output import write_atomically

__all__ = [
    "FORMATS",
    "RankingFile",
    "SavedModel",
    "align_features",
    "data_file_inputs",
    "detect_format",
    "load_model",
    "parse_params",
    "read_ranking",
    "read_rows_of_numbers",
    "save_model",
    "write_scores",
]

#: File formats of ``--format`` (besides ``auto``).
FORMATS = ("svmlight", "lightgbm")
_FORMAT_NAMES = {"svmlight": "SVMlight/LETOR", "lightgbm": "LightGBM"}

#: ``format`` entry of a saved model's ``cli_metadata_``, and its layout version (1: a dict around the estimator;
#: 2: the estimator itself, the metadata on it).
MODEL_FORMAT, MODEL_FORMAT_VERSION = "sklearn-ltr model", 2

#: The attribute of a saved estimator that holds what ``train`` records about it.
METADATA_ATTRIBUTE = "cli_metadata_"

#: File name suffix of skops model files (compared case-insensitively).
SKOPS_SUFFIX = ".skops"

#: ``--param`` words read as Python constants whatever their case (shells and config files spell them so).
_CONSTANTS = {"true": True, "false": False, "none": None, "null": None}


@dataclass
class RankingFile:
    """The rows of a ranking data file, in file order."""

    path: str
    format: str
    X: np.ndarray
    y: np.ndarray
    #: Query id of each row; None for a LightGBM file read without its ``.query`` file.
    groups: np.ndarray | None

    @property
    def n_queries(self):
        return 0 if self.groups is None else len(np.unique(self.groups))

    def describe(self):
        queries = "queries unknown" if self.groups is None else f"{self.n_queries:,} queries"
        return f"{self.path}: {len(self.y):,} rows, {queries}, {self.X.shape[1]} features"


def _open_text(path):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(os.path.splitext(path)[1].lower(), open)
    return opener(path, "rt", encoding="utf-8", errors="replace")


def check_input(path, what="data file"):
    """Raise :class:`CLIError` unless ``path`` is a readable file."""
    if not os.path.exists(path):
        raise CLIError(f"{what} {path!r} does not exist.")
    if os.path.isdir(path):
        raise CLIError(f"{what} {path!r} is a directory, not a file.")


def _read_error(path, err, what="data file"):
    """The :class:`CLIError` of an I/O or decompression error (``OSError``, ``EOFError``, ``zlib.error``)."""
    from sklearn_ltr.datasets._formats import _decompression_error

    error = _decompression_error(path, err)
    if error is not None:
        return CLIError(str(error))
    if isinstance(err, OSError):
        return CLIError(f"cannot read {what} {getattr(err, 'filename', None) or path!r}: {err.strerror or err}.")
    return CLIError(f"cannot read {what} {path!r}: {type(err).__name__}: {err}.")


#: What reading a file can raise besides a parse error: I/O errors, and a .gz/.bz2 file that does not decompress.
_READ_ERRORS = (OSError, EOFError, zlib.error)


def data_file_inputs(option, path, fmt="auto"):
    """``[(description, path)]`` that a data file option reads: the file, and the ``.query`` sizes of LightGBM data."""
    if path is None:
        return []
    inputs = [(f"{option} {path!r}", path)]
    sidecar = path + ".query"
    lightgbm = fmt == "lightgbm" or (fmt == "auto" and os.path.isfile(path) and detect_format(path) == "lightgbm")
    if lightgbm:
        inputs.append((f"the query sizes file of {option} {path!r}", sidecar))
    return inputs


def _data_lines(path, what="data file"):
    """``(line_number, fields)`` of the lines that hold data (comments and blank lines skipped).

    An I/O error, or a ``.gz``/``.bz2`` file that does not decompress, is a :class:`CLIError`.
    """
    try:
        with _open_text(path) as f:
            for number, line in enumerate(f, 1):
                fields = line.split("#", 1)[0].split()
                if fields:
                    yield number, fields
    except _READ_ERRORS as err:
        raise _read_error(path, err, what) from err


def detect_format(path):
    """``"svmlight"`` if the first data line of ``path`` has a ``qid:`` field, else ``"lightgbm"``."""
    check_input(path)
    for _, fields in _data_lines(path):
        return "svmlight" if any(field.startswith("qid:") for field in fields[1:]) else "lightgbm"
    raise CLIError(f"data file {path!r} holds no data rows (only blank or '#' comment lines).")


def _short(text, limit=30):
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _bad_field(fields):
    """Why a data line's fields are not ``<label> [qid:<id>] <index>:<value> ...``, or None."""
    try:
        float(fields[0])
    except ValueError:
        return f"the label {_short(fields[0])} is not a number"
    for field in fields[1:]:
        key, sep, value = field.partition(":")
        try:
            if not sep:
                raise ValueError
            if key == "qid":
                int(value)
            elif int(key) < 0:
                raise ValueError
            else:
                float(value)
        except ValueError:
            return f"{_short(field)} is not '<index>:<value>' (or 'qid:<integer>')"
    return None


def _parse_error(path, fmt, err):
    """A message naming the first line of ``path`` that does not parse, else the reader's own reason."""
    if isinstance(err, _READ_ERRORS):
        return str(_read_error(path, err))
    if not isinstance(err.__cause__, _READ_ERRORS):  # not a file that fails to decompress: find the bad line
        try:
            for number, fields in _data_lines(path):
                reason = _bad_field(fields)
                if reason:
                    return f"cannot read {path!r} as {_FORMAT_NAMES[fmt]} data: line {number}: {reason}."
        except CLIError:
            pass  # the reader's own message below
    message = str(err).rstrip(".") + "."  # the library's messages name the file
    return message if path in message else f"cannot read {path!r}: {message}"


def _physical_memory():
    """Bytes of physical memory, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _dense(path, X):
    """``X`` (CSR) as a dense array; a :class:`CLIError` when that cannot fit in memory (a stray feature index)."""
    n_bytes = X.shape[0] * X.shape[1] * X.dtype.itemsize
    memory = _physical_memory()
    too_big = (f"{path!r} has feature indices up to {X.shape[1]:,}: its {X.shape[0]:,} rows would take "
               f"{n_bytes / 2**30:,.1f} GiB as dense features")
    if memory is not None and n_bytes > memory:
        raise CLIError(f"{too_big}, more than this machine's {memory / 2**30:,.1f} GiB of memory. Is a feature "
                       f"index wrong?")
    try:
        return X.toarray()
    except MemoryError as err:
        raise CLIError(f"{too_big}, more than the memory available. Is a feature index wrong?") from err


def read_ranking(path, fmt="auto", *, require_groups=True):
    """Read a ranking data file into a :class:`RankingFile` (dense features, file row order).

    Parameters
    ----------
    path : str
        SVMlight/LETOR or LightGBM file.
    fmt : {"auto", "svmlight", "lightgbm"}, default="auto"
        Format; ``auto`` looks for ``qid:`` on the first data line.
    require_groups : bool, default=True
        Whether a LightGBM file needs its ``.query`` file. False reads one without it
        (``groups=None``): enough to score rows with a pointwise model.
    """
    from sklearn_ltr.datasets import load_lightgbm_ranking, load_svmlight_ranking
    from sklearn_ltr.datasets._formats import _read

    detected = detect_format(path)
    if fmt == "auto":
        fmt = detected
    elif fmt == "svmlight" and detected == "lightgbm":
        raise CLIError(f"{path!r} has no 'qid:' query ids on its first data line, so it is not SVMlight/LETOR "
                       f"data; for LightGBM data (query sizes in {path + '.query'!r}) use --format lightgbm or auto.")
    query_path = path + ".query"
    try:
        if fmt == "svmlight":
            X, y, groups = load_svmlight_ranking(path, dense=False)
        elif os.path.exists(query_path) or require_groups:
            if not os.path.exists(query_path):
                if detected == "lightgbm":
                    why, fix = "has no 'qid:' query ids, so it", f"put 'qid:<id>' on every line of {path!r}"
                else:
                    why, fix = "(--format lightgbm)", "use --format auto to read its 'qid:' query ids"
                raise CLIError(f"{path!r} {why} is read as LightGBM data, whose query sizes (one row count per "
                               f"line) belong in {query_path!r}: that file does not exist. Write it, or {fix}.")
            X, y, groups = load_lightgbm_ranking(path, dense=False)
        else:
            X, y = _read(path, n_features=None, dtype=np.float64, zero_based="auto", query_id=False)
            groups = None
    except CLIError:
        raise
    except (ValueError, *_READ_ERRORS) as err:
        raise CLIError(_parse_error(path, fmt, err)) from err
    if X.shape[0] == 0:
        raise CLIError(f"data file {path!r} holds no data rows.")
    return RankingFile(path, fmt, np.ascontiguousarray(_dense(path, X)), y, groups)


def align_features(data, n_features, *, model_name="the model"):
    """Pad ``data.X`` with zero columns up to ``n_features``; more columns than that is an error.

    Sparse files leave out zero values, so a file may end before the model's last features.
    """
    have = data.X.shape[1]
    if have > n_features:
        raise CLIError(
            f"{data.path!r} has {have} features (feature index up to {have}), but {model_name} was trained on "
            f"{n_features}; predict and evaluate need the features of the training file."
        )
    if have < n_features:
        data.X = np.hstack([data.X, np.zeros((data.X.shape[0], n_features - have), dtype=data.X.dtype)])
    return data


def read_rows_of_numbers(path, n_rows, *, what, integer=False):
    """One finite number per data line of ``path`` (``#`` comments and blank lines skipped), ``n_rows`` of them.

    With ``integer``, every number must be a 1-based rank (a whole number from 1 to 2**63 - 1).
    """
    check_input(path, what)
    values = []
    for number, fields in _data_lines(path, what):
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


def _literal(text):
    text = text.strip()
    if text.lower() in _CONSTANTS:
        return _CONSTANTS[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _check_type(key, value, default, model):
    """A clear error when ``value`` cannot be meant for a parameter whose default is ``default``."""
    def fail(expected):
        raise CLIError(f"--param {key}={value!r}: {model}'s {key} takes {expected} (default {default!r}).")

    if value is None or default is None:
        return
    if isinstance(default, bool):
        if not isinstance(value, bool):
            fail("true or false")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail("a number")
    elif isinstance(default, (tuple, list)) and not isinstance(value, (tuple, list)):
        fail(f"a tuple, e.g. ({value!r},) or {tuple(default)!r}" if isinstance(value, int) else "a tuple")


def parse_params(items, defaults, *, model):
    """``["key=value", ...]`` into a dict; values are Python literals, else strings.

    Values go through :func:`ast.literal_eval` (``0.05``, ``(64, 32)``, ``{"sigma": 2}``,
    ``None``), ``true``/``false``/``none``/``null`` in any case become ``True``/``False``/
    ``None``, and anything else stays a string (``loss=softmax``). A key not in
    ``defaults`` (the ranker's parameters and their default values), a value of the wrong
    kind (a string for a numeric parameter, a number for a tuple, ...), a key given twice or
    an item without ``=`` is a :class:`CLIError`; the ranker checks the values themselves.
    """
    valid = sorted(defaults)
    params = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CLIError(f"--param expects key=value (e.g. --param learning_rate=0.05); got {item!r}.")
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise CLIError(f"unknown parameter {key!r} for --model {model}.{hint} "
                           f"Valid parameters: {', '.join(sorted(valid))}.")
        if key in params:
            raise CLIError(f"--param {key} is given twice.")
        params[key] = _literal(text)
        _check_type(key, params[key], defaults[key], model)
    return params


def _is_skops(path):
    return os.fspath(path).lower().endswith(SKOPS_SUFFIX)


def _skops_io(path):
    try:
        import skops.io
    except ImportError:
        raise CLIError(f"{path!r} is a skops file ({SKOPS_SUFFIX}); reading and writing those needs skops: "
                       f"pip install 'sklearn-ltr[serving]'.") from None
    return skops.io


def _not_trusted(sio, data=None, file=None):
    """The types a skops file references beyond skops's defaults and :data:`TRUSTED_TYPES`."""
    from sklearn_ltr.utils.persistence import TRUSTED_TYPES

    return [name for name in sio.get_untrusted_types(data=data, file=file) if name not in TRUSTED_TYPES]


def save_model(path, estimator, **info):
    """Write ``estimator``, with ``info`` as its ``cli_metadata_``, to ``path`` (see the module docstring).

    A ``.skops`` path gets a skops file, which must reference no type outside
    ``TRUSTED_TYPES`` (a :class:`CLIError` otherwise, nothing written); any other a joblib file.
    """
    from sklearn_ltr import __version__

    setattr(estimator, METADATA_ATTRIBUTE, {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
                                            "sklearn_ltr_version": __version__, **info})
    if _is_skops(path):
        sio = _skops_io(path)
        data = sio.dumps(estimator)
        foreign = _not_trusted(sio, data=data)
        if foreign:
            raise CLIError(f"cannot save the model as a skops file {path!r}: it references types that skops files "
                           f"of sklearn_ltr models do not trust ({', '.join(foreign)}; keep_training_state=True "
                           f"keeps some). Save it as a joblib file (another suffix) instead.")
        write_atomically(path, lambda f: f.write(data), what="model file")
        return
    import joblib

    write_atomically(path, lambda f: joblib.dump(estimator, f), what="model file")


@dataclass
class SavedModel:
    """A model file read by :func:`load_model`: the estimator and what the commands need to know of it."""

    estimator: object
    #: Features the estimator was trained on (data files are padded to it).
    n_features: int
    #: Whether predictions need each row's query id (a list-context model).
    list_context: bool
    #: The ``--model`` name it was trained as, else the ranker's class name.
    name: str
    #: What ``train`` recorded (``cli_metadata_``); empty for a model saved from Python.
    metadata: dict


def _load_object(path, not_ours):
    """The object in a joblib or (by suffix) skops file; a :class:`CLIError` when it cannot be read."""
    import joblib

    from sklearn_ltr.utils.persistence import TRUSTED_TYPES

    sio = _skops_io(path) if _is_skops(path) else None
    if sio is not None:
        try:
            foreign = _not_trusted(sio, file=path)
        except Exception as err:  # not a zip holding a skops schema
            raise CLIError(f"{not_ours} (reading it as a skops file failed: {type(err).__name__}: {err}).") from err
        if foreign:
            raise CLIError(f"skops file {path!r} references types that are neither sklearn_ltr's nor skops's trusted "
                           f"defaults: {', '.join(foreign)}. Loading them could run code, so it is not loaded; "
                           f"review them, then load it in Python with skops.io.load(path, trusted=TRUSTED_TYPES + "
                           f"[...]) (TRUSTED_TYPES from sklearn_ltr.utils.persistence).")
    try:
        return joblib.load(path) if sio is None else sio.load(path, trusted=TRUSTED_TYPES)
    except Exception as err:  # unpickling a foreign file can fail in any way
        raise CLIError(f"{not_ours} (loading it failed: {type(err).__name__}: {err}).") from err


def _describe(estimator):
    """``(n_features, list_context, name)`` of a fitted estimator saved without metadata."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") and estimator.steps else estimator
    try:
        from sklearn_ltr.utils import get_ranker_tags

        list_context = bool(get_ranker_tags(final).list_context)
    except Exception:  # not a ranker of this library: ask for query ids, as a list-context model does
        list_context = True
    return getattr(estimator, "n_features_in_", None), list_context, type(final).__name__


def load_model(path):
    """The :class:`SavedModel` of a file written by :func:`save_model` or by ``joblib.dump`` / ``skops.io.dump``.

    A dict of the old layout (``format_version`` 1) loads too, with a deprecation
    warning on standard error; anything else is a :class:`CLIError`.
    """
    from sklearn_ltr import __version__

    check_input(path, "model file")
    not_ours = (f"{path!r} is not a model file written by 'sklearn-ltr train' (nor a fitted ranker saved with joblib "
                f"or skops)")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as err:
        raise _read_error(path, err, "model file") from err
    saved = _load_object(path, not_ours)
    damaged = (f"model file {path!r} is damaged: it lacks a format version, a number of features or an estimator "
               f"with a predict method. Train the model again.")
    if isinstance(saved, dict) and saved.get("format") == MODEL_FORMAT and "estimator" in saved:
        estimator, metadata = saved["estimator"], {key: value for key, value in saved.items() if key != "estimator"}
        print(f"sklearn-ltr: warning: {path!r} is a model file of the old layout, a dict around the estimator, which "
              f"is deprecated: it still loads, but a later version will not read it. Save the estimator itself, "
              f"e.g. in Python: joblib.dump(joblib.load(path)['estimator'], path) (or train it again).",
              file=sys.stderr)
        if not callable(getattr(estimator, "predict", None)):
            raise CLIError(damaged)
    elif callable(getattr(saved, "predict", None)) and not isinstance(saved, type):
        estimator, metadata = saved, getattr(saved, METADATA_ATTRIBUTE, None)
        if metadata is not None and not (isinstance(metadata, dict) and metadata.get("format") == MODEL_FORMAT):
            raise CLIError(damaged)
        metadata = metadata or {}
    else:
        raise CLIError(f"{not_ours} (it holds a {type(saved).__name__}, not an estimator with a predict method).")
    n_features, list_context, name = _describe(estimator)
    if metadata:
        version, n_features = metadata.get("format_version", 0), metadata.get("n_features")
        list_context, name = metadata.get("list_context", True), metadata.get("model", name)
        if not isinstance(version, int):
            raise CLIError(damaged)
        if version > MODEL_FORMAT_VERSION:
            raise CLIError(f"{path!r} was written by a newer sklearn_ltr ({metadata.get('sklearn_ltr_version')}); "
                           f"upgrade sklearn_ltr (this is {__version__}) to read it.")
        if metadata.get("sklearn_ltr_version") != __version__:
            print(f"sklearn-ltr: warning: {path!r} was saved by sklearn_ltr {metadata.get('sklearn_ltr_version')}, "
                  f"this is {__version__}; its predictions may differ.", file=sys.stderr)
    elif n_features is None:
        raise CLIError(f"model file {path!r} holds a {type(estimator).__name__} that is not fitted (it has no "
                       f"n_features_in_); fit it before saving it.")
    if not (isinstance(n_features, (int, np.integer)) and not isinstance(n_features, bool) and n_features >= 1):
        raise CLIError(damaged)
    return SavedModel(estimator, int(n_features), bool(list_context), str(name), dict(metadata))


def write_scores(path, scores):
    """One score per line (shortest exact decimal form), to ``path`` or standard output for ``-``.

    NaN or infinite scores are refused (a :class:`CLIError`, nothing written): no ranking
    can be read from them.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        bad = np.flatnonzero(~np.isfinite(scores))
        raise CLIError(f"{len(bad):,} of {len(scores):,} scores are NaN or infinite (the first on row {bad[0] + 1}); "
                       f"refusing to write them to {path!r}.")
    text = "".join(f"{score!r}\n" for score in scores.tolist())
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomically(path, lambda f: f.write(text.encode("utf-8")), what="scores file")
