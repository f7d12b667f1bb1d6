"""The checks of a click log's columns, and its per-position counts: one home for every caller.

:func:`check_clicks` and :func:`check_positions` validate the clicks and display positions that
the simulator, the click models, the propensity estimators, the counterfactual metrics and the
click-trained rankers receive; :func:`position_counts` is the weighted number of impressions and
clicks at each display position that every propensity estimator starts from.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_clicks", "check_positions", "position_counts"]

_DEFAULT_CLICK_FIX = ("Pass one click indicator per shown document, not relevance grades or click counts (a "
                      "document shown twice is two rows).")


def _as_1d(values, name, n_rows, against, what):
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    values = np.asarray(values)
    if n_rows is not None and values.ndim == 1 and values.shape[0] != n_rows:
        raise ValueError(f"{name} has {values.shape[0]} entries but {against} has {n_rows}; pass {what} of every "
                         f"row of {against} (in the same order).")
    return values


def check_clicks(clicks, n_rows=None, *, name="clicks", against="X", fix=None):
    """Click indicators as float64: a non-empty 1-D array of 0 (shown, not clicked) and 1 (clicked).

    Parameters
    ----------
    clicks : array-like of shape (n_rows,)
        One click indicator per shown document (a pandas Series is read as its values).
    n_rows : int, default=None
        Number of rows the clicks must match; None accepts any length.
    name : str, default="clicks"
        Name of the argument in the messages (e.g. ``"y"`` when the labels are clicks).
    against : str, default="X"
        What ``n_rows`` counts, named in the message of a wrong length.
    fix : str, default=None
        Sentence that ends the message of a value other than 0 or 1; None says to pass one click
        indicator per shown document.

    Returns
    -------
    clicks : ndarray of float64 of shape (n_rows,)

    Raises
    ------
    ValueError
        Naming ``name``: not 1-D or not numeric, empty, of the wrong length, NaN, or holding a
        value other than 0 and 1 (the first few such values are shown).

    Examples
    --------
    >>> from sklearn_ltr.clicks import check_clicks
    >>> check_clicks([0, 1, True])
    array([0., 1., 1.])
    >>> check_clicks([0, 2, 1], name="y")
    Traceback (most recent call last):
        ...
    ValueError: y must hold only 0 (not clicked) and 1 (clicked); got values such as 2. Pass one click ...
    """
    values = _as_1d(clicks, name, n_rows, against, "one click indicator (1 clicked, 0 shown and not clicked)")
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a 1-D array of 0/1 click indicators, one per shown document; got dtype "
                         f"{values.dtype} and shape {values.shape}.")
    if values.size == 0:
        raise ValueError(f"{name} is empty; a click log needs at least one row (one per shown document).")
    values = values.astype(np.float64)
    if np.isnan(values).any():
        raise ValueError(f"{name} contains NaN; every shown document is either clicked (1) or not (0).")
    bad = (values != 0) & (values != 1)
    if bad.any():
        shown = ", ".join(f"{v:g}" for v in np.unique(values[bad])[:5])
        raise ValueError(f"{name} must hold only 0 (not clicked) and 1 (clicked); got values such as {shown}. "
                         f"{_DEFAULT_CLICK_FIX if fix is None else fix}")
    return values


def check_positions(positions, n_rows=None, *, name="positions", against="X"):
    """Display positions as int64: a 1-D array of whole numbers >= 1, the 1-based rank of each row (1 = top).

    Parameters
    ----------
    positions : array-like of shape (n_rows,)
        1-based display rank of each row (a pandas Series is read as its values); whole-number
        floats are accepted.
    n_rows : int, default=None
        Number of rows the positions must match; None accepts any length, empty included.
    name : str, default="positions"
        Name of the argument in the messages.
    against : str, default="X"
        What ``n_rows`` counts, named in the message of a wrong length.

    Returns
    -------
    positions : ndarray of int64 of shape (n_rows,)

    Raises
    ------
    ValueError
        Naming ``name``: not 1-D or not numeric (booleans included), of the wrong length, NaN or
        infinite, fractional, or below 1 (with the fix for 0-based ranks).

    Examples
    --------
    >>> from sklearn_ltr.clicks import check_positions
    >>> check_positions([1, 2.0, 10])
    array([ 1,  2, 10])
    >>> check_positions([0, 1, 2])
    Traceback (most recent call last):
        ...
    ValueError: positions are 1-based display ranks; got a value of 0 (< 1). Add 1 to 0-based positions.
    """
    values = _as_1d(positions, name, n_rows, against, "the display position")
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a 1-D array of whole numbers, the 1-based display rank of each row "
                         f"(1 = top); got dtype {values.dtype} and shape {values.shape}.")
    if values.dtype.kind == "f":
        if not np.isfinite(values).all():
            raise ValueError(f"{name} contains NaN or infinite values (missing positions); every row needs the "
                             f"position at which it was shown (drop rows that were not shown).")
        fractional = values != np.round(values)
        if fractional.any():
            raise ValueError(f"{name} must be whole-number display ranks 1, 2, 3, ...; got {values[fractional][0]:g}.")
    if values.size and values.min() < 1:
        raise ValueError(f"{name} are 1-based display ranks; got a value of {values.min():g} (< 1). Add 1 to "
                         f"0-based positions.")
    return values.astype(np.int64)


def position_counts(positions, clicks, weights=None, *, max_position):
    """Weighted impressions and clicks per display position: ``(shown, clicked)``, each of length ``max_position``.

    ``positions`` are 1-based; those beyond ``max_position`` count in its last entry (the bucket of
    every position at or beyond it). ``weights`` (ones when None) weigh each row, in both counts.
    """
    buckets = np.minimum(positions, max_position) - 1
    weights = np.ones(buckets.shape[0]) if weights is None else weights
    shown = np.bincount(buckets, weights, minlength=max_position)
    clicked = np.bincount(buckets, weights * clicks, minlength=max_position)
    return shown, clicked
