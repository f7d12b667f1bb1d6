"""Input checks shared by metrics, scorers and rankers, with errors that name the argument.

Data (``y_true``, ``y_score``) is checked here with ``ValueError`` messages that name the
array. Settings (a cut-off ``k``, an option string) are declared as scikit-learn
constraints and checked by :func:`sklearn_ltr.utils._sklearn_compat.check_parameters`,
which raises :class:`~sklearn.utils._param_validation.InvalidParameterError` (a
``ValueError`` and a ``TypeError``) naming the parameter.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sklearn_ltr.utils._sklearn_compat import Interval, _num_samples

__all__ = [
    "NumberInterval", "check_features", "check_finite_labels", "check_relevance", "check_same_length", "check_scores",
]

#: The largest finite float32: a float64 feature beyond it becomes infinite in a float32 model.
FLOAT32_MAX = float(np.finfo(np.float32).max)


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


_NON_FINITE_LABELS = "{name} contains NaN or infinite labels; relevance grades must be finite."


def check_finite_labels(y, *, name="y"):
    """Raise :func:`check_relevance`'s error for NaN or infinite float labels, whatever their shape.

    Called before scikit-learn's ``validate_data``, whose message ("Input y contains NaN.") names no fix.
    """
    values = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y) if y is not None else None
    if values is not None and values.dtype.kind == "f" and not np.isfinite(values).all():
        raise ValueError(_NON_FINITE_LABELS.format(name=name))


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
    if y.dtype.kind in "US":
        raise ValueError(
            f"{name} holds strings (dtype {y.dtype}), not numbers: relevance grades must be numeric. If they are "
            f"numbers written as text ('0', '1', '2'), convert them first: {name}.astype(int) (or "
            f"{name}.astype(float) for fractional grades)."
        )
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numeric relevance grades; got dtype {y.dtype}.")
    y = y.astype(np.float64, copy=False)
    if not np.isfinite(y).all():
        raise ValueError(_NON_FINITE_LABELS.format(name=name))
    if (y < 0).any():
        raise ValueError(f"{name} contains negative labels (min {y.min():g}); relevance grades must be >= 0.")
    if integer and not np.array_equal(y, np.round(y)):
        raise ValueError(f"{name} must hold whole-number relevance grades 0, 1, 2, ...; got non-integer values.")
    return y


def check_same_length(X, values, name, *, what="one value per row of X"):
    """Raise ``ValueError`` naming ``name`` and both lengths when ``values`` has not one entry per row of ``X``.

    Inputs whose length cannot be taken (``None``, a scalar) are left to the checks that follow.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._validation import check_same_length
    >>> check_same_length(np.zeros((3, 2)), [0, 1, 2], "y")
    >>> check_same_length(np.zeros((3, 2)), [0, 1], "y", what="one relevance label per row of X")
    Traceback (most recent call last):
    ...
    ValueError: y has 2 entries but X has 3 rows; pass one relevance label per row of X.
    """
    try:
        n_rows, n_values = _num_samples(X), _num_samples(values)
    except TypeError:
        return
    if n_values != n_rows:
        raise ValueError(f"{name} has {n_values} entries but X has {n_rows} rows; pass {what}.")


def _first_bad(X, bad):
    """``(count, row, column)`` of the entries of ``X`` where the mask ``bad`` (over ``X`` or ``X.data``) is true."""
    count = int(np.count_nonzero(bad))
    if sp.issparse(X):
        coo = X.tocoo()  # same entry order as X.data for CSR, CSC and COO
        rows, columns = coo.row[bad], coo.col[bad]
        first = int(np.argmin(rows))
        return count, int(rows[first]), int(columns[first])
    row, column = divmod(int(np.argmax(bad.reshape(-1))), X.shape[1])
    return count, row, column


def check_features(X, *, owner, allow_nan=False, float32=False, name="X"):
    """Raise ``ValueError`` for features a model cannot take: NaN, infinity, values beyond float32.

    The message names ``name``, how many values are at fault, the first (by row) and the fix.
    Finite, in-range data costs one reduction (a sum; its minimum and maximum for float64 data
    checked against float32's range) and no copy.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Numeric features, as validated by scikit-learn (float32 or float64).
    owner : str
        The estimator, for the message.
    allow_nan : bool, default=False
        Whether NaN is a missing value the model takes (LightGBM); infinity never is.
    float32 : bool, default=False
        Whether the model computes in float32, where a float64 value beyond
        ``3.4e38`` becomes infinite: such values are refused too.
    name : str, default="X"
        Argument name for the message.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._validation import check_features
    >>> X = np.array([[0.0, 1.0], [2.0, np.nan]])
    >>> check_features(X, owner="LambdaMARTRanker", allow_nan=True)
    >>> check_features(X, owner="RankNetRanker")
    Traceback (most recent call last):
    ...
    ValueError: X contains NaN (1 value; the first in row 1, column 1): RankNetRanker cannot take missing values. ...
    """
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.size == 0 or values.dtype.kind != "f":
        return
    limit = FLOAT32_MAX if float32 and values.dtype.itemsize > 4 else np.inf
    # Fast paths with no copy (NaN and infinity propagate; a sum that overflows takes the slow path).
    with np.errstate(over="ignore", invalid="ignore"):
        if limit == np.inf and np.isfinite(values.sum()):
            return
        if limit < np.inf and -limit <= values.min() and values.max() <= limit:
            return
    with np.errstate(invalid="ignore"):
        nan, inf = np.isnan(values), np.isinf(values)
        if nan.any() and not allow_nan:
            count, row, column = _first_bad(X, nan)
            raise ValueError(
                f"{name} contains NaN ({_values(count)}; the first in row {row}, column {column}): {owner} cannot "
                f"take missing values. Impute them (e.g. sklearn.impute.SimpleImputer in a Pipeline before the "
                f"ranker), or use LambdaMARTRanker, which treats NaN as a missing value."
            )
        if inf.any():
            count, row, column = _first_bad(X, inf)
            missing = " or with NaN, which it treats as missing" if allow_nan else ""
            raise ValueError(
                f"{name} contains infinity ({_values(count)}; the first in row {row}, column {column}): {owner} "
                f"needs finite features. Replace them with finite values{missing} (e.g. np.clip or np.nan_to_num)."
            )
        huge = np.abs(values) > limit
    if huge.any():
        count, row, column = _first_bad(X, huge)
        raise ValueError(
            f"{name} holds values beyond float32's range ({_values(count)} of magnitude above {FLOAT32_MAX:.3g}; "
            f"the first in row {row}, column {column}: {float(X[row, column]):g}): "
            f"{owner} computes in float32, where they would be infinite. Scale the features (e.g. "
            f"Log1pTransformer or StandardScaler in a Pipeline, for both fit and predict)."
        )


def _values(count):
    return f"{count} value" if count == 1 else f"{count} values"
