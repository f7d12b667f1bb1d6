"""What a ranker saw of each feature in ``fit``, and the checks that no number passes silently.

Two checks of the data, vectorised and cheap enough to run on every call:

- in ``fit``, :func:`check_query_id_columns`: a feature column that holds the query ids (it
  equals ``groups``, or relabels them one to one) warns with
  :class:`~sklearn_ltr.exceptions.QueryIdFeatureWarning`;
- in ``fit``, :meth:`FeatureProfile.of` records each feature's share of missing values (NaN),
  minimum and maximum (the fitted attribute ``feature_profile_``), and in ``predict``
  :func:`check_feature_drift` warns with :class:`~sklearn_ltr.exceptions.FeatureDriftWarning`
  when the rows break that profile in kind: NaN where training had none, no NaN where training
  had many (missing values written as a number), most values outside the training range.

Costs: the profile is two reductions over ``X`` (minimum and maximum; NaN propagates through
the first, so only columns that hold NaN are counted again, in chunks); the query-id check
gathers the first row of each query and compares whole columns only for the few that are whole
numbers, distinct for every query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sklearn_ltr.exceptions import FeatureDriftWarning, QueryIdFeatureWarning, warn_outside_library

__all__ = [
    "FEW_MISSING",
    "MANY_MISSING",
    "MIN_QUERIES_RELABELLED",
    "MIN_ROWS",
    "OUT_OF_RANGE",
    "FeatureProfile",
    "check_feature_drift",
    "check_query_id_columns",
    "column_stats",
    "feature_drift",
    "query_id_candidates",
    "query_id_columns",
    "warn_query_id_columns",
]

#: ``predict`` checks a batch against the profile only from this many rows: on fewer, shares of
#: missing or out-of-range values say little (one row of five is 20%).
MIN_ROWS = 20
#: A feature missing (NaN) in more than this share of the training rows ...
MANY_MISSING = 0.2
#: ... warns when missing in less than this share of the rows of ``predict``: a file that writes
#: missing values as a number (0, -1, 1000) instead of NaN.
FEW_MISSING = 0.01
#: A feature warns when more than this share of its (non-missing) values in ``predict`` lies
#: outside the training range ``[min, max]``: another scale, encoding or column.
OUT_OF_RANGE = 0.5
#: Relative rounding of a float32 value (twice the unit roundoff): the training range's tolerance.
FLOAT32_ROUNDING = 2.0**-23
#: A column that relabels the query ids one to one (a whole number per query, distinct for every
#: query) warns from this many queries on; a column that equals ``groups`` warns from 2 queries.
#: Fewer queries can share no value by chance (a query-level feature such as the query's length).
MIN_QUERIES_RELABELLED = 20

#: Rows per chunk where a per-entry mask is needed (bounded memory).
_CHUNK = 1 << 16
#: Random rows on which ``feature_drift`` screens the columns past the training range before it counts
#: their out-of-range values on every row (for more than four times as many rows).
_SCREEN_ROWS = 4096
#: Features named in one warning; the others are counted.
_LISTED = 5


@dataclass
class FeatureProfile:
    """What ``fit`` saw of each feature: its share of missing values, its minimum and maximum.

    The fitted attribute ``feature_profile_`` of every ranker; ``predict`` checks its rows
    against it (:func:`check_feature_drift`). NaN-aware: the minimum and maximum are those of
    the non-missing values (NaN when a feature was always missing). For sparse ``X`` the
    values not stored count as zeros.

    Attributes
    ----------
    n_samples : int
        Training rows.
    missing : ndarray of shape (n_features,)
        Share of the training rows where the feature is NaN.
    minimum, maximum : ndarray of shape (n_features,)
        Smallest and largest non-missing training value of each feature.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._feature_profile import FeatureProfile
    >>> profile = FeatureProfile.of(np.array([[0.0, np.nan], [2.0, 5.0], [1.0, np.nan], [4.0, 7.0]]))
    >>> profile.missing.tolist(), profile.minimum.tolist(), profile.maximum.tolist()
    ([0.0, 0.5], [0.0, 5.0], [4.0, 7.0])
    """

    n_samples: int
    missing: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray

    @classmethod
    def of(cls, X):
        """The profile of ``X`` (dense or sparse, float32 or float64, validated: no infinity)."""
        missing, minimum, maximum = column_stats(X)
        n_samples = X.shape[0]
        return cls(n_samples, missing / max(n_samples, 1), minimum, maximum)

    @property
    def n_features(self):
        return self.missing.shape[0]


def column_stats(X):
    """Per column: NaN count, and minimum and maximum of the other values (NaN when there are none)."""
    if sp.issparse(X):
        return _sparse_column_stats(X)
    X = np.asarray(X)
    n_features = X.shape[1]
    if X.shape[0] == 0:
        return np.zeros(n_features), np.full(n_features, np.nan), np.full(n_features, np.nan)
    with np.errstate(invalid="ignore"):
        minimum = np.minimum.reduce(X, axis=0).astype(np.float64)  # NaN propagates: it marks the columns with NaN
        maximum = np.maximum.reduce(X, axis=0).astype(np.float64)
    missing = np.zeros(n_features)
    columns = np.flatnonzero(np.isnan(minimum))
    if columns.size:
        low, high = np.full(columns.size, np.inf), np.full(columns.size, -np.inf)
        for start in range(0, X.shape[0], _CHUNK):
            part = X[start:start + _CHUNK, columns]
            missing[columns] += np.isnan(part).sum(axis=0)
            with np.errstate(invalid="ignore"):
                low = np.fmin(low, np.fmin.reduce(part, axis=0))
                high = np.fmax(high, np.fmax.reduce(part, axis=0))
        minimum[columns], maximum[columns] = low, high
        always = missing[columns] == X.shape[0]
        minimum[columns[always]] = maximum[columns[always]] = np.nan
    return missing, minimum, maximum


def _sparse_column_stats(X):
    X = sp.csr_matrix(X)
    n_samples, n_features = X.shape
    data, columns = X.data, X.indices
    nan = np.isnan(data)
    missing = np.bincount(columns[nan], minlength=n_features).astype(np.float64)
    minimum, maximum = np.full(n_features, np.inf), np.full(n_features, -np.inf)
    np.minimum.at(minimum, columns[~nan], data[~nan])
    np.maximum.at(maximum, columns[~nan], data[~nan])
    implicit = np.bincount(columns, minlength=n_features) < n_samples  # some rows hold an unstored zero
    minimum[implicit] = np.minimum(minimum[implicit], 0.0)
    maximum[implicit] = np.maximum(maximum[implicit], 0.0)
    none = np.isinf(minimum)  # no non-missing value at all
    minimum[none] = maximum[none] = np.nan
    return missing, minimum, maximum


def _outside(X, columns, low, high):
    """Per column of ``columns``: values outside ``[low, high]`` and non-missing values."""
    if sp.issparse(X):
        X = sp.csc_matrix(X[:, columns])
        counts = np.diff(X.indptr)
        data = X.data
        stored_column = np.repeat(np.arange(len(columns)), counts)
        with np.errstate(invalid="ignore"):
            out = (data < low[stored_column]) | (data > high[stored_column])
        outside = np.bincount(stored_column[out], minlength=len(columns)).astype(np.float64)
        present = np.bincount(stored_column[~np.isnan(data)], minlength=len(columns)) + X.shape[0] - counts
        zeros_outside = (low > 0) | (high < 0)
        return outside + zeros_outside * (X.shape[0] - counts), present.astype(np.float64)
    outside, present = np.zeros(len(columns)), np.zeros(len(columns))
    # Bounds in X's dtype, so that a float32 X is compared as it is, not upcast to float64: a value
    # and its bound compare alike either way once the bounds are widened by FLOAT32_ROUNDING.
    low, high = np.asarray(low).astype(X.dtype), np.asarray(high).astype(X.dtype)
    for start in range(0, X.shape[0], _CHUNK):
        part = X[start:start + _CHUNK, columns]
        with np.errstate(invalid="ignore"):  # NaN is neither below nor above
            outside += np.count_nonzero(part < low, axis=0) + np.count_nonzero(part > high, axis=0)
        present += part.shape[0] - np.count_nonzero(np.isnan(part), axis=0)
    return outside, present


def _feature_name(index, names):
    return f"feature {index}" if names is None else f"feature {str(names[index])!r} (index {index})"


def _rows(count):
    return "1 row" if count == 1 else f"{int(count)} rows"


def _range(low, high):
    return f"[{low:.4g}, {high:.4g}]"


def feature_drift(profile, X, names=None):
    """``[(feature index, what breaks the profile)]`` for the rows ``X`` (empty under :data:`MIN_ROWS` rows).

    Parameters
    ----------
    profile : FeatureProfile
        What ``fit`` saw.
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The validated rows of ``predict``.
    names : array-like of str, default=None
        Feature names, for the descriptions.

    Returns
    -------
    list of (int, str)
    """
    n_samples = X.shape[0]
    if n_samples < MIN_ROWS or X.shape[1] != profile.n_features:
        return []
    missing, minimum, maximum = column_stats(X)
    share = missing / n_samples
    findings = {}
    for j in np.flatnonzero((profile.missing == 0) & (share > 0)):
        findings[j] = f"NaN in {_rows(missing[j])} ({share[j]:.1%}), where training had none"
    for j in np.flatnonzero((profile.missing > MANY_MISSING) & (share < FEW_MISSING)):
        what = "no NaN" if missing[j] == 0 else f"NaN in only {_rows(missing[j])} ({share[j]:.1%})"
        findings[j] = (f"{what}, where {profile.missing[j]:.0%} of the training rows had NaN (missing values "
                       f"written as a number? the values here run from {minimum[j]:.4g} to {maximum[j]:.4g})")
    known = ~np.isnan(profile.minimum) & ~np.isnan(minimum)
    # The range widened by float32 rounding: a float32 copy of the training rows (or float64 rows of
    # a float32 fit) is not out of range, though a value such as 0.1 rounds up.
    low = profile.minimum - np.abs(profile.minimum) * FLOAT32_ROUNDING
    high = profile.maximum + np.abs(profile.maximum) * FLOAT32_ROUNDING
    with np.errstate(invalid="ignore"):
        beyond = np.flatnonzero(known & ((minimum < low) | (maximum > high)))
    if beyond.size and n_samples > 4 * _SCREEN_ROWS:
        # A few values past the training range are common (heavy tails); a share above OUT_OF_RANGE is
        # not. Screen the columns on random rows first and count exactly only where the screen sees at
        # least half that share: on 4,096 rows a column over 50% shows under 25% with probability below
        # exp(-2 * 4096 * 0.25**2) = 1e-222 (Hoeffding), whatever the rows' order.
        rows = np.sort(np.random.default_rng(0).choice(n_samples, _SCREEN_ROWS, replace=False))
        outside, present = _outside(X[rows], beyond, low[beyond], high[beyond])
        beyond = beyond[outside / np.maximum(present, 1) > OUT_OF_RANGE / 2]
    if beyond.size:
        outside, present = _outside(X, beyond, low[beyond], high[beyond])
        fraction = outside / np.maximum(present, 1)
        for j, value, count in zip(beyond, fraction, present, strict=True):
            if count >= MIN_ROWS and value > OUT_OF_RANGE:
                text = (f"{value:.0%} of the values outside the training range "
                        f"{_range(profile.minimum[j], profile.maximum[j])} (here {_range(minimum[j], maximum[j])})")
                findings[j] = f"{findings[j]}; {text}" if j in findings else text
    return [(int(j), findings[j]) for j in sorted(findings)]


def check_feature_drift(estimator, X, *, name="X"):
    """Warn (:class:`~sklearn_ltr.exceptions.FeatureDriftWarning`) when ``X`` breaks ``estimator.feature_profile_``.

    A model fitted before profiles existed (no ``feature_profile_``) is not checked.
    """
    profile = getattr(estimator, "feature_profile_", None)
    if profile is None:
        return
    names = getattr(estimator, "feature_names_in_", None)
    findings = feature_drift(profile, X, names)
    if not findings:
        return
    listed = "; ".join(f"{_feature_name(j, names)}: {text}" for j, text in findings[:_LISTED])
    more = f"; and {len(findings) - _LISTED} more" if len(findings) > _LISTED else ""
    count = f"{len(findings)} feature" + ("s" if len(findings) > 1 else "")
    warn_outside_library(
        f"{name} ({X.shape[0]} rows) breaks what {type(estimator).__name__} saw of {count} in fit: {listed}{more}. "
        f"Its scores of such rows are extrapolations: check that missing values are NaN (not a number such as "
        f"0, -1 or 1000), and that the columns are the training columns, in the same order and scale.",
        FeatureDriftWarning,
    )


def query_id_columns(X, query_groups, groups=None):
    """``[(column, how)]`` of the columns of ``X`` that hold the query ids.

    A column holds them when it equals ``groups`` (numeric ids, from 2 queries), or when it is
    a whole number, the same on every row of a query and different for every query, with at
    least :data:`MIN_QUERIES_RELABELLED` queries (a relabelling of the ids: string ids, or
    ids numbered otherwise).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Validated features.
    query_groups : QueryGroups
        The rows' queries.
    groups : ndarray of shape (n_samples,), default=None
        The query ids (only their numeric values matter).

    Returns
    -------
    list of (int, str)
        ``how`` is ``"equals"`` or ``"relabels"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._groups import QueryGroups
    >>> qid = np.array([4, 4, 9, 9, 2])
    >>> X = np.column_stack([[0.5, 0.1, 0.3, 0.3, 0.9], qid])
    >>> query_id_columns(X, QueryGroups(qid), qid)
    [(1, 'equals')]
    """
    n_queries = query_groups.n_queries
    if groups is None or n_queries < 2:
        return []
    relabelled = n_queries >= MIN_QUERIES_RELABELLED
    columns, _, equals = query_id_candidates(X, query_groups, relabelled=relabelled)
    return [(int(column), "equals" if equal else "relabels") for column, equal in zip(columns, equals, strict=True)]


def query_id_candidates(X, query_groups, *, relabelled=True):
    """The columns of ``X`` that may hold query ids, their value in each query, and which equal the ids.

    A candidate is a whole number on every row, the same on every row of a query, and
    different for every query; with ``relabelled=False`` only a column equal to the (numeric)
    query ids is one. On the queries of a part of the data (a Dask partition), the caller
    checks that the values stay distinct over all parts.

    Returns
    -------
    columns : ndarray of int
        The candidate columns.
    heads : ndarray of shape (n_queries, len(columns))
        Their value in each query (queries in the order of ``query_groups.ids``).
    equals : ndarray of bool
        Whether each equals the query ids (numeric ids only).
    """
    n_queries, n_features = query_groups.n_queries, X.shape[1]
    first = query_groups.order[query_groups.offsets[:-1]]  # the first row of each query, queries in id order
    columns = np.arange(n_features)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        heads = X[first]
        # Distinct values for every query: at most one query's first row may hold an (unstored) zero.
        columns = np.flatnonzero(np.bincount(heads.indices, minlength=n_features) >= n_queries - 1)
        heads = heads[:, columns].toarray()
    else:
        heads = np.take(np.asarray(X), first, axis=0)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(heads).all(axis=0) & (heads == np.round(heads)).all(axis=0)
    equals = np.zeros(len(columns), dtype=bool)
    if query_groups.ids.dtype.kind in "iu":  # numeric ids: compare the values
        equals = whole & (heads == query_groups.ids.astype(heads.dtype)[:, None]).all(axis=0)
    distinct = np.zeros(len(columns), dtype=bool)
    if relabelled and whole.any():
        ordered = np.sort(heads[:, whole], axis=0)
        distinct[np.flatnonzero(whole)] = (ordered[1:] != ordered[:-1]).all(axis=0)
    keep = []
    codes = query_groups.codes
    for k in np.flatnonzero(equals | distinct):
        column = X[:, [columns[k]]].toarray().ravel() if sp.issparse(X) else np.asarray(X)[:, columns[k]]
        if np.array_equal(column, heads[codes, k]):  # the same value on every row of each query
            keep.append(k)
    return columns[keep], heads[:, keep], equals[keep]


def check_query_id_columns(estimator, X, query_groups, groups):
    """Warn (:class:`~sklearn_ltr.exceptions.QueryIdFeatureWarning`) for each column of ``X`` holding the query ids."""
    if groups is None:
        return
    warn_query_id_columns(estimator, query_id_columns(X, query_groups, groups),
                          getattr(estimator, "feature_names_in_", None))


def warn_query_id_columns(estimator, found, names=None, *, dask=False):
    """One :class:`~sklearn_ltr.exceptions.QueryIdFeatureWarning` per ``(column, how)`` of :func:`query_id_columns`.

    ``dask``: the fix named is ``groups=<the column's name>`` (Dask input has no ``query_column``).
    """
    for column, how in found:
        label = f"column {column}" if names is None else f"column {str(names[column])!r} (index {column})"
        name = repr(str(names[column])) if names is not None else str(column)
        reason = ("it equals groups" if how == "equals" else
                  "one whole number per query, different for every query: a relabelling of groups")
        read = (f"pass groups={name}, the column's name, to read the ids from it" if dask and names is not None else
                f"construct the ranker with query_column={name} to read the ids from it")
        warn_outside_library(
            f"X {label} holds the query ids ({reason}): {type(estimator).__name__} would train on the query id as a "
            f"feature, whose values mean nothing for other queries. Drop the column from X, or {read} (it is then "
            f"left out of the features).",
            QueryIdFeatureWarning,
        )
