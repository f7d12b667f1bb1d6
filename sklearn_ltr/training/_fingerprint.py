"""What a training checkpoint compares with the fit that would resume from it: parameters and data.

A checkpoint (:mod:`sklearn_ltr.training._checkpoint`) is refused when the resuming fit has other
parameters (:func:`describe_parameters`), other training data (:func:`data_fingerprint`: every row,
per-row input, label, query bound and weight, in the order training sees them) or another separate
validation set (:func:`validation_fingerprint`).
"""

from __future__ import annotations

import hashlib
import numbers

import numpy as np
import torch

from sklearn_ltr.training._callbacks import ValidationNDCG

__all__ = ["data_fingerprint", "describe_parameters", "validation_fingerprint"]

#: Bytes hashed at a time: a memory-mapped array is read through without a copy of it.
_CHUNK = 1 << 24


def describe_parameters(value):
    """A plain, comparable description of a parameter value (nested estimators and callbacks by their parameters).

    Two fits whose parameters have equal descriptions train the same model on the same data.
    Arrays are described by their shape, dtype and a hash of their bytes; classes and functions
    by their qualified names.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Number):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, dict):
        return {str(key): describe_parameters(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe_parameters(item) for item in value]
    if isinstance(value, np.ndarray):
        digest = hashlib.blake2b(np.ascontiguousarray(value).view(np.uint8), digest_size=16).hexdigest() \
            if value.dtype != object else repr(value.tolist())
        return f"array{value.shape} {value.dtype} {digest}"
    if isinstance(value, np.random.RandomState):
        return "RandomState"  # consumed by every fit; the checkpoint holds the streams it seeded
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    if hasattr(value, "get_params"):
        return {"class": type(value).__qualname__, "params": describe_parameters(value.get_params(deep=False))}
    return repr(value)


def _hash_array(digest, array, order=None):
    """Hash ``array``'s rows (``array[order]`` when ``order`` is given) in chunks of about 16 MB."""
    array = np.ascontiguousarray(array) if order is None and not array.flags.c_contiguous else array
    digest.update(f"{array.dtype}{array.shape}".encode())
    rows = max(1, _CHUNK // max(1, array[:1].nbytes))
    for start in range(0, array.shape[0], rows):
        chunk = array[start:start + rows] if order is None else array[order[start:start + rows]]
        digest.update(np.ascontiguousarray(chunk).view(np.uint8))


def _training_order(dataset):
    """The rows of a dataset over rows used where they lie, in the order training sees them; None for another.

    Query by query (each query's rows through ``index``, their canonical order): the rows of the
    dataset that copies them, in its order. Hashed so, the same data has one fingerprint whether
    its rows were used in place or copied, and whatever the order they lie in.
    """
    if not dataset.views:
        return None
    rows, _ = dataset.row_index(torch.arange(len(dataset), device=dataset.starts.device))
    rows = rows.cpu()
    return (rows if dataset.index is None else dataset.index.cpu()[rows]).numpy()


def data_fingerprint(dataset):
    """Hash of a :class:`~sklearn_ltr.training._batches.QueryDataset`: every row, label, query bound and weight.

    The rows are hashed in the order training sees them, so that the same rows in another order
    (shuffled, or the queries interleaved differently: training puts each query's rows in their
    canonical order) and the same rows used in place or copied have the same fingerprint.
    They are hashed in chunks of about 16 MB, so that a memory-mapped dataset is read through the
    page cache without a private copy of it.
    """
    digest = hashlib.blake2b(digest_size=20)
    order = _training_order(dataset)
    for name in sorted(dataset.rows):
        digest.update(name.encode())
        _hash_array(digest, dataset.rows[name].cpu().numpy(), order)
    # In training order each query starts where the one before it ends: the starts of a dataset that copies.
    starts = dataset.offsets[:-1] if dataset.views else dataset.starts
    for name, tensor in (("labels", dataset.labels), ("offsets", dataset.offsets), ("starts", starts),
                         ("query_weights", dataset.query_weights)):
        digest.update(name.encode())
        if tensor is not None:
            _hash_array(digest, tensor.cpu().numpy(), order if name == "labels" else None)
    return digest.hexdigest()


def validation_fingerprint(callbacks):
    """Hash of the separate validation sets that ``callbacks`` score after each epoch; None without one.

    Those of the :class:`~sklearn_ltr.training.ValidationNDCG` callbacks given a set (``fit``'s
    ``X_val``, ``y_val``, ``groups_val``, ``propensity_val`` and further per-row inputs such as
    ``initial_rank_val``): the history's validation values, and the epoch early stopping stops
    at, depend on them. Each set is hashed in the order its callback scores it (each query's
    rows in their canonical order), so that its rows in another order are the same set.

    Parameters
    ----------
    callbacks : list of (str, Callback)
        The initialized callbacks of a net (``net.callbacks_``).

    Returns
    -------
    fingerprint : str or None
    """
    digest, found = hashlib.blake2b(digest_size=20), False
    for name, callback in callbacks:
        dataset = getattr(callback, "dataset_", None)
        if not isinstance(callback, ValidationNDCG) or dataset is None:
            continue
        found = True
        digest.update(name.encode())
        digest.update(data_fingerprint(dataset).encode())
        for values in (callback.y, callback.propensity):  # the dataset holds the features and the extras
            digest.update(b"-" if values is None else b"+")
            if values is not None:
                _hash_array(digest, np.asarray(values, dtype=np.float64)[callback.order_])
    return digest.hexdigest() if found else None
