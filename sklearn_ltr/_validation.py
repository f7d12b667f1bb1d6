"""Input checks shared by metrics, scorers and rankers, with errors that name the argument."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_k", "check_relevance", "check_scores"]


def _as_1d(values, name):
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values.ravel()
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one value per row; got shape {values.shape}.")
    if values.shape[0] == 0:
        raise ValueError(f"{name} is empty: there are no rows to rank.")
    return values


def check_scores(y_score, n_samples=None, *, name="y_score"):
    """Return ``y_score`` as a finite float64 vector of the expected length."""
    y_score = _as_1d(y_score, name)
    if y_score.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric; got dtype {y_score.dtype}.")
    y_score = y_score.astype(np.float64, copy=False)
    if n_samples is not None and y_score.shape[0] != n_samples:
        raise ValueError(f"{name} has {y_score.shape[0]} entries but y_true has {n_samples}; they must match.")
    if not np.isfinite(y_score).all():
        raise ValueError(f"{name} contains NaN or infinite values; rank only finite scores.")
    return y_score


def check_relevance(y, *, name="y_true", integer=False):
    """Return graded relevance labels as a float64 vector.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Relevance grades: finite and non-negative.
    name : str
        Argument name for error messages.
    integer : bool, default=False
        Also require whole numbers (LightGBM's lambdarank and exponential-gain
        click models need grades 0, 1, 2, ...).
    """
    y = _as_1d(y, name)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numeric relevance grades; got dtype {y.dtype}.")
    y = y.astype(np.float64, copy=False)
    if not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinite labels; relevance grades must be finite.")
    if (y < 0).any():
        raise ValueError(f"{name} contains negative labels (min {y.min():g}); relevance grades must be >= 0.")
    if integer and not np.array_equal(y, np.round(y)):
        raise ValueError(f"{name} must hold whole-number relevance grades 0, 1, 2, ...; got non-integer values.")
    return y


def check_k(k, *, name="k"):
    """Validate a cut-off: ``None`` (whole list) or an integer >= 1."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer or None; got {k!r}.")
    if k < 1:
        raise ValueError(f"{name} must be >= 1 (or None for the whole list); got {k}.")
    return int(k)
