"""Model files of the command line: ``train`` writes them, ``predict`` and ``evaluate`` load them.

A saved model is the fitted estimator itself (a ranker, or a ``Pipeline`` of
preprocessing steps and a ranker), as ``joblib.dump`` writes it, or as ``skops.io.dump``
writes it when the file name ends in ``.skops``: ``joblib.load`` (or ``skops.io.load``
with :data:`~sklearn_ltr.utils.persistence.TRUSTED_TYPES`) returns the estimator, and
``predict`` and ``evaluate`` read a ranker saved so from Python. ``train`` records on the
estimator, in the attribute ``cli_metadata_`` (a dict), what a reader wants to know: the
model name, the number of features, whether predictions need query ids, the
``sklearn_ltr`` version, the parameters, the training file and its scores. A file without
it is described by the estimator (``n_features_in_``, its ranker tags). A dict around the
estimator, the layout of pre-release versions (``format_version`` 1), is refused with a
request to train the model again.

Loading a joblib file unpickles it, which runs any code the file holds: load model files
only from sources you trust. A ``.skops`` file loads only if it references no types but
skops's defaults and the library's own (``TRUSTED_TYPES``).

Models are written by :func:`sklearn_ltr.cli._output.write_atomically`: whole or not at all.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

from sklearn_ltr.cli._data_files import check_input, input_error
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._output import write_atomically
from sklearn_ltr.utils._pipeline import final_estimator

__all__ = ["METADATA_ATTRIBUTE", "MODEL_FORMAT", "MODEL_FORMAT_VERSION", "SavedModel", "load_model", "save_model"]

#: ``format`` entry of a saved model's ``cli_metadata_``, and its layout version (2: the estimator itself, the
#: metadata on it; 1, a dict around the estimator, was a pre-release layout that is no longer read).
MODEL_FORMAT, MODEL_FORMAT_VERSION = "sklearn-ltr model", 2

#: The attribute of a saved estimator that holds what ``train`` records about it.
METADATA_ATTRIBUTE = "cli_metadata_"

#: File name suffix of skops model files (compared case-insensitively).
SKOPS_SUFFIX = ".skops"


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
    final = final_estimator(estimator)
    try:
        from sklearn_ltr.utils import get_ranker_tags

        list_context = bool(get_ranker_tags(final).list_context)
    except Exception:  # not a ranker of this library: ask for query ids, as a list-context model does
        list_context = True
    return getattr(estimator, "n_features_in_", None), list_context, type(final).__name__


def load_model(path):
    """The :class:`SavedModel` of a file written by :func:`save_model` or by ``joblib.dump`` / ``skops.io.dump``.

    Anything else is a :class:`CLIError`, a dict around the estimator (the pre-release
    layout, ``format_version`` 1) included.
    """
    from sklearn_ltr import __version__

    check_input(path, "model file")
    not_ours = (f"{path!r} is not a model file written by 'sklearn-ltr train' (nor a fitted ranker saved with joblib "
                f"or skops)")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as err:
        raise input_error(path, err, "model file") from err
    saved = _load_object(path, not_ours)
    damaged = (f"model file {path!r} is damaged: it lacks a format version, a number of features or an estimator "
               f"with a predict method. Train the model again.")
    if isinstance(saved, dict) and saved.get("format") == MODEL_FORMAT:
        raise CLIError(f"model file {path!r} was written by a pre-release layout of sklearn-ltr (a dict around the "
                       f"estimator, format version {saved.get('format_version')!r}), which is no longer read; "
                       f"re-save it by training the model again with 'sklearn-ltr train'.")
    if not callable(getattr(saved, "predict", None)) or isinstance(saved, type):
        raise CLIError(f"{not_ours} (it holds a {type(saved).__name__}, not an estimator with a predict method).")
    estimator, metadata = saved, getattr(saved, METADATA_ATTRIBUTE, None)
    if metadata is not None and not (isinstance(metadata, dict) and metadata.get("format") == MODEL_FORMAT):
        raise CLIError(damaged)
    metadata = metadata or {}
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
