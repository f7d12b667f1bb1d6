"""Input checks shared by metrics, scorers and rankers, with errors that name the argument.

Data (``y_true``, ``y_score``) is checked here with ``ValueError`` messages that name the
array. Settings (a cut-off ``k``, an option string) are declared as scikit-learn
constraints and checked by :func:`sklearn_ltr.utils._sklearn_compat.check_parameters`,
which raises :class:`~sklearn.utils._param_validation.InvalidParameterError` (a
``ValueError`` and a ``TypeError``) naming the parameter.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.utils._sklearn_compat import Interval

__all__ = ["NumberInterval", "check_relevance", "check_scores"]


class NumberInterval(Interval):
    """scikit-learn's :class:`Interval` constraint that also refuses ``True`` and ``False``.

    ``bool`` is an ``int`` subclass, so ``Interval(Integral, 1, None)`` accepts ``k=True``
    as a cut-off of 1; a flag passed where a number is expected is a mistake, not a 1.

    Examples
    --------
    >>> from numbers import Integral
    >>> from sklearn_ltr._validation import NumberInterval
    >>> cutoff = NumberInterval(Integral, 1, None, closed="left")
    >>> cutoff.is_satisfied_by(3), cutoff.is_satisfied_by(True), cutoff.is_satisfied_by(0)
    (True, False, False)
    """

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


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
