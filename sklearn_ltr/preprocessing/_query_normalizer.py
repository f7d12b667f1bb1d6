"""Per-query feature normalisation: LETOR's QueryLevelNorm and RankLib's normalisers."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from sklearn_ltr._groups import QueryGroups, check_groups
from sklearn_ltr.utils._sklearn_compat import StrOptions, _num_samples, validate_estimator_params

__all__ = ["QueryNormalizer"]

_CHECK_KWARGS = {"dtype": (np.float64, np.float32), "ensure_all_finite": "allow-nan"}

#: The methods that compute statistics over each query's documents (``"reciprocal"`` does not).
PER_QUERY_METHODS = ("zscore", "minmax", "sum", "rank")


def _missing_groups_message(method):
    return (
        f"QueryNormalizer.{method} needs groups, the query id of every row: it normalises each query's "
        f"documents by that query's statistics and never treats all rows as one query. Pass "
        f"groups=<one query id per row>. Inside a Pipeline, GridSearchCV or cross_val_score, call "
        f"sklearn.set_config(enable_metadata_routing=True) and pass groups=... to fit, predict and score "
        f"(or params={{'groups': qid}} to cross_val_score): QueryNormalizer requests groups by default."
    )


def _by_query(X, query_groups):
    """``(X_sorted, valid, starts, codes)``: rows grouped by query, the non-NaN mask, query starts and codes."""
    X_sorted = X[query_groups.order]
    codes = np.repeat(np.arange(query_groups.n_queries), query_groups.sizes)
    return X_sorted, ~np.isnan(X_sorted), query_groups.offsets[:-1], codes


def _extremes(X_sorted, valid, starts):
    """Per-query min and max of each feature over its non-NaN values (+inf and -inf when there are none)."""
    low = np.minimum.reduceat(np.where(valid, X_sorted, np.inf), starts, axis=0)
    high = np.maximum.reduceat(np.where(valid, X_sorted, -np.inf), starts, axis=0)
    return low, high


def _statistic_scaled(X, query_groups, method):
    """``"zscore"``, ``"minmax"`` and ``"sum"`` on float64 ``X``; rows in input order."""
    X_sorted, valid, starts, codes = _by_query(X, query_groups)
    filled = np.where(valid, X_sorted, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "sum":
            total = np.add.reduceat(np.abs(filled), starts, axis=0)[codes]
            out = np.where(total > 0, X_sorted / np.where(total > 0, total, 1.0), 0.0)
        else:
            low, high = _extremes(X_sorted, valid, starts)
            constant = (low == high)[codes]  # one distinct value (all-NaN features: inf != -inf)
            if method == "minmax":
                low, span = low[codes], (high - low)[codes]
                out = np.where(span > 0, (X_sorted - low) / np.where(span > 0, span, 1.0), 0.0)
            else:  # zscore, two-pass population variance
                count = np.add.reduceat(valid, starts, axis=0)
                mean = (np.add.reduceat(filled, starts, axis=0) / np.maximum(count, 1))[codes]
                centred = X_sorted - mean
                var = np.add.reduceat(np.where(valid, centred * centred, 0.0), starts, axis=0) / np.maximum(count, 1)
                std = np.sqrt(var)[codes]
                out = np.where(std > 0, centred / np.where(std > 0, std, 1.0), centred)
            out = np.where(constant, 0.0, out)
    out[~valid] = np.nan
    return query_groups.unsort(out)


def _within_query_ranks(X, query_groups):
    """``"rank"`` on float64 ``X``: tie-averaged ascending rank within the query, scaled to [0, 1]."""
    n_samples = X.shape[0]
    codes = query_groups.codes.astype(np.intp)
    # Per feature, rows sorted by (query, value): NaN sorts last within its query.
    by_value = np.argsort(X, axis=0, kind="stable")
    order = np.take_along_axis(by_value, np.argsort(codes[by_value], axis=0, kind="stable"), axis=0)
    values = np.take_along_axis(X, order, axis=0)
    starts = query_groups.offsets[:-1]
    sorted_codes = np.repeat(np.arange(query_groups.n_queries), query_groups.sizes)
    first_row = np.zeros(n_samples, dtype=bool)
    first_row[starts] = True
    last_row = np.roll(first_row, -1)
    run_start = np.ones_like(values, dtype=bool)
    run_start[1:] = values[1:] != values[:-1]
    run_start |= first_row[:, None]
    run_end = np.roll(run_start, -1, axis=0)
    run_end |= last_row[:, None]
    position = np.arange(n_samples)[:, None]
    first = np.maximum.accumulate(np.where(run_start, position, 0), axis=0)
    last = np.minimum.accumulate(np.where(run_end, position, n_samples)[::-1], axis=0)[::-1]
    average = (first + last) / 2 - starts[sorted_codes][:, None]  # 0-based, ties averaged
    valid = ~np.isnan(values)
    denominator = (np.add.reduceat(valid, starts, axis=0) - 1)[sorted_codes]
    scaled = np.where(denominator > 0, average / np.maximum(denominator, 1), 0.5)
    scaled[~valid] = np.nan
    out = np.empty_like(X)
    np.put_along_axis(out, order, scaled, axis=0)
    return out


def normalize_per_query(X, query_groups, method):
    """``QueryNormalizer(method).transform`` on a validated float array, computed in float64."""
    X64 = np.asarray(X, dtype=np.float64)
    if method == "reciprocal":
        bad = X64 < 1
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise ValueError(
                f"QueryNormalizer(method='reciprocal') takes ranks, 1 for the best document, with NaN where a "
                f"document is not ranked; X[{row}, {column}] is {float(X64[row, column])!r}, below 1."
            )
        out = 1.0 / X64
    elif method == "rank":
        out = _within_query_ranks(X64, query_groups)
    else:
        out = _statistic_scaled(X64, query_groups, method)
    return out.astype(X.dtype, copy=False)


def _ids_of_rows(n_rows, groups, groups_val, method):
    """The query ids of the ``n_rows`` rows being transformed: ``groups``, or a validation set's ``groups_val``.

    ``Pipeline(transform_input=["X_val"])`` transforms a validation set with every routed
    transform parameter, the training rows' ``groups`` among them; the ids that have one
    entry per row are the rows' own.
    """
    if groups_val is None:
        if groups is None:
            raise ValueError(_missing_groups_message(method))
        return groups
    fits = [name for name, ids in (("groups", groups), ("groups_val", groups_val))
            if ids is not None and _num_samples(ids) == n_rows]
    if fits == ["groups_val"]:
        return groups_val
    if fits == ["groups", "groups_val"] and not np.array_equal(np.asarray(groups), np.asarray(groups_val)):
        raise ValueError(
            f"QueryNormalizer.{method} got groups and groups_val of {n_rows} query ids each, one per row of X, "
            f"and they differ: it cannot tell whether X holds the training rows or the validation set's. Make the "
            f"validation set's size differ from the training rows', or normalise it by hand with "
            f"transform(X_val, groups=groups_val)."
        )
    if groups is None:
        raise ValueError(f"groups_val has {_num_samples(groups_val)} entries but X has {n_rows} rows, and groups "
                         f"is None; pass one query id per row of X.")
    return groups


class QueryNormalizer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Normalise each feature within each query (LETOR's QueryLevelNorm, RankLib's ``-norm``).

    For a query :math:`q` with documents :math:`D_q` and a feature value :math:`x` of a
    document of :math:`q`, the statistics run over the non-NaN values of that feature in
    :math:`D_q`:

    - ``"minmax"`` (the default, LETOR 4.0's QueryLevelNorm, RankLib's ``linear``):
      :math:`(x - \min_q) / (\max_q - \min_q)`, in [0, 1]; 0 when the feature is constant
      within the query.
    - ``"zscore"`` (RankLib's ``zscore``): :math:`(x - \mu_q) / \sigma_q` with the mean
      :math:`\mu_q` and the population standard deviation
      :math:`\sigma_q = \sqrt{\frac{1}{n_q}\sum (x - \mu_q)^2}`, as
      :class:`~sklearn.preprocessing.StandardScaler` (RankLib divides by :math:`n_q - 1`);
      0 when the feature is constant within the query, :math:`x - \mu_q` if
      :math:`\sigma_q` underflows to 0 otherwise.
    - ``"sum"`` (RankLib's ``sum``): :math:`x / \sum_{D_q} |x|`; 0 when that sum is 0.
    - ``"rank"``: the rank of :math:`x` among the query's values, ascending (the largest
      value gets the largest rank, so a feature keeps its direction), scaled to [0, 1]:
      :math:`(r - 1) / (n_q - 1)` with :math:`r` the 1-based rank and :math:`n_q` the
      number of non-NaN values. Tied values share the average of their ranks, so a feature
      constant within the query is 0.5 everywhere, as is a query's single value.
    - ``"reciprocal"``: :math:`1 / x` for features that *are* ranks (1 = best), like the 21
      input rankings of LETOR 4.0's MQ2007-agg: the reciprocal rank, in (0, 1], larger is
      better, and the gap between ranks 1 and 2 weighs more than between 100 and 101. It
      needs no query statistic; values below 1 are refused. Follow it with
      ``SimpleImputer(strategy="constant", fill_value=0, add_indicator=True)`` to read a
      document a ranker did not retrieve (NaN) as an infinitely deep rank.

    ``NaN`` is missing: the statistics ignore it and it stays ``NaN`` in the output (an
    imputer before or after this step decides what it means); a feature that is NaN for all
    of a query's documents stays NaN. The output of a query depends on that query's rows
    only, in any row order, whatever its id and the other queries.

    The transformer is stateless: ``fit`` only validates ``X`` and records
    ``n_features_in_`` (and ``feature_names_in_``), and ``transform`` computes the
    statistics of the queries it is given, so the same query is normalised the same way in
    training and at prediction time. ``transform`` and ``fit_transform`` need ``groups``
    and raise a ``ValueError`` without them. ``fit``, ``transform`` and ``fit_transform``
    request ``groups`` by default, so with ``sklearn.set_config(enable_metadata_routing=True)``
    a ``Pipeline``, ``GridSearchCV`` or ``cross_val_score`` passes the query ids to it.

    Parameters
    ----------
    method : {"minmax", "zscore", "sum", "rank", "reciprocal"}, default="minmax"
        The normalisation, as above.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``. Defined only when `X` has feature names
        that are all strings.

    See Also
    --------
    sklearn_ltr.preprocessing.Log1pTransformer : Symmetric log transform, per value.
    sklearn.preprocessing.StandardScaler : Standardise with statistics of the training rows.

    Notes
    -----
    - Sparse input is refused with a ``TypeError``: centring and scaling per query turns
      zeros into non-zeros, so the output would be dense anyway; pass ``X.toarray()``.
    - Infinite values are refused with a ``ValueError``; float32 input stays float32 (the
      statistics are computed in float64), other input becomes float64.
    - Choosing: ``"minmax"`` reproduces LETOR's QueryLevelNorm files and suits features of
      bounded range; ``"zscore"`` is less sensitive to one extreme document; ``"rank"``
      ignores the scale entirely (robust to heavy tails, but it drops the size of the gaps);
      ``"sum"`` keeps zeros at 0 and the signs; ``"reciprocal"`` is for rank features.

    References
    ----------
    .. [1] T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013
       (QueryLevelNorm: per-query min-max normalisation of each feature).
    .. [2] V. Dang, "RankLib", The Lemur Project, University of Massachusetts
       (``-norm sum|zscore|linear``: per-list normalisers).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.preprocessing import QueryNormalizer
    >>> X = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, np.nan], [10.0, 0.0], [20.0, 4.0]])
    >>> qid = np.array([1, 1, 1, 2, 2])
    >>> QueryNormalizer().fit_transform(X, groups=qid)
    array([[0. , 0. ],
           [1. , 0. ],
           [0.5, nan],
           [0. , 0. ],
           [1. , 1. ]])
    >>> QueryNormalizer(method="rank").fit_transform(X, groups=qid)
    array([[0. , 0.5],
           [1. , 0.5],
           [0.5, nan],
           [0. , 0. ],
           [1. , 1. ]])
    """

    _parameter_constraints = {"method": [StrOptions({*PER_QUERY_METHODS, "reciprocal"})]}  # noqa: RUF012
    __metadata_request__fit = {"groups": True}  # noqa: RUF012
    # groups_val: the ids of a validation set that Pipeline(transform_input=["X_val"]) transforms.
    __metadata_request__transform = {"groups": True, "groups_val": True}  # noqa: RUF012

    def __init__(self, method="minmax"):
        self.method = method

    def _check_input(self, X, *, reset):
        """Validate ``X`` (dense); check feature count and names only against a fitted instance."""
        if sp.issparse(X):
            raise TypeError(
                "QueryNormalizer does not take sparse X: centring and scaling each query turns zeros into "
                "non-zeros, so the output is dense anyway. Pass a dense array (X.toarray())."
            )
        if reset or hasattr(self, "n_features_in_"):
            return validate_data(self, X, reset=reset, **_CHECK_KWARGS)
        return check_array(X, **_CHECK_KWARGS)

    def fit(self, X, y=None, groups=None):
        """Check `X` (and `groups`, if given) and record the number of features (and names).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data; finite or NaN.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row; only checked here (the statistics are those of the data
            ``transform`` is given).

        Returns
        -------
        self : object
            Fitted transformer.
        """
        validate_estimator_params(self)
        X = self._check_input(X, reset=True)
        if groups is not None:
            check_groups(groups, X.shape[0])
        return self

    def transform(self, X, groups=None, groups_val=None):
        """Normalise every feature within each query.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data; finite or NaN. If fitted, it must have the features seen in `fit`.
        groups : array-like of shape (n_samples,)
            Query id of each row, rows of a query in any order. Required (unless
            ``groups_val`` describes the rows of ``X``).
        groups_val : array-like, default=None
            The query ids of a validation set (``fit(..., X_val=, groups_val=)`` of a
            ranker). Inside ``Pipeline(..., transform_input=["X_val"])`` the pipeline
            transforms ``X_val`` with the routed ``groups`` *and* ``groups_val``: the ids
            used are those with one entry per row of ``X``. When both have one per row and
            differ, which set ``X`` is cannot be told, and a ``ValueError`` says so.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            Normalised data, rows in input order: float32 for float32 input, float64 otherwise.
        """
        check_is_fitted(self)  # a no-op: the transformer is stateless (requires_fit=False)
        validate_estimator_params(self)
        X = self._check_input(X, reset=False)
        groups = _ids_of_rows(X.shape[0], groups, groups_val, "transform")
        return normalize_per_query(X, QueryGroups(groups, X.shape[0]), self.method)

    def fit_transform(self, X, y=None, groups=None, groups_val=None):
        """Fit, then normalise every feature within each query (``groups`` reaches both).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data; finite or NaN.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,)
            Query id of each row, rows of a query in any order. Required.
        groups_val : array-like, default=None
            A validation set's query ids, routed beside ``groups``: see :meth:`transform`.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            Normalised data, rows in input order.
        """
        if groups is None and groups_val is None:
            validate_estimator_params(self)
            self._check_input(X, reset=True)  # a wrong X is reported first
            raise ValueError(_missing_groups_message("fit_transform"))
        groups = _ids_of_rows(_num_samples(X), groups, groups_val, "fit_transform")
        return self.fit(X, groups=groups).transform(X, groups=groups)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
