"""Base class and mixin shared by every ranker: validation, metadata routing, ``score``.

Every ranker takes ``groups``, one query id per row, in ``fit``, ``predict`` and
``score``, and asks scikit-learn's metadata routing for it by default, so that with
``sklearn.set_config(enable_metadata_routing=True)`` the ``groups`` given to a
search's or a pipeline's ``fit`` reach each fold's ``fit``, ``predict`` and scorer
with no ``set_*_request`` call.

scikit-learn has no "ranker" estimator type. :class:`RankerMixin` sets the
``estimator_type`` tag to ``"ranker"``: nothing in scikit-learn treats that value
specially (``is_regressor`` and ``is_classifier`` are ``False``), ``Pipeline`` and
``GridSearchCV`` copy it from their last step, and ``check_estimator`` runs the
checks every supervised estimator must pass (``target_tags.required=True``) but not
the regressor checks, which assume ``score`` is R² and feed continuous targets
that graded relevance labels are not. ``GridSearchCV(cv=5)`` therefore uses
``KFold``, as for a regressor; pass ``cv=GroupKFold(...)`` to keep queries whole.
"""

from __future__ import annotations

import warnings

import numpy as np
import sklearn
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_ltr._feature_profile import FeatureProfile, check_feature_drift, check_query_id_columns
from sklearn_ltr._groups import QueryGroups, check_groups
from sklearn_ltr._validation import check_features, check_finite_labels, check_relevance, check_same_length
from sklearn_ltr.utils._tags import Tags

__all__ = ["BaseRanker", "MissingGroupsWarning", "RankerMixin", "resolve_groups"]

#: Cut-off of :meth:`RankerMixin.score`, the NDCG@10 used by ``sklearn_ltr.ndcg_scorer``.
SCORE_K = 10


class MissingGroupsWarning(UserWarning):
    """Warning raised when ``groups=None`` made every row part of a single query.

    Usually a mistake: inside ``GridSearchCV``, ``cross_validate`` or a ``Pipeline``
    without metadata routing, ``groups`` never reaches the ranker. Pass
    ``groups=...`` and call ``sklearn.set_config(enable_metadata_routing=True)``.
    It is a :class:`UserWarning`, shown once per call site by default.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_ltr import MissingGroupsWarning
    >>> from sklearn_ltr.base import resolve_groups
    >>> issubclass(MissingGroupsWarning, UserWarning)
    True
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     query_groups = resolve_groups(None, n_samples=3, method="fit")
    >>> print(caught[0].message)
    groups=None in fit: all 3 rows are treated as ONE query. Pass groups=<one query id per row>. ...
    >>> query_groups.n_queries
    1

    Where one query is intended, silence it by category:

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.filterwarnings("ignore", category=MissingGroupsWarning)
    ...     _ = resolve_groups(None, n_samples=3)
    >>> caught
    []
    """


def _missing_groups_message(n_samples, method):
    message = (
        f"groups=None in {method}: all {n_samples} rows are treated as ONE query. Pass groups=<one query id per row>."
    )
    if not sklearn.get_config()["enable_metadata_routing"]:
        message += (
            " Inside GridSearchCV, cross_validate or a Pipeline, groups only reach the ranker "
            "with metadata routing: call sklearn.set_config(enable_metadata_routing=True) "
            "and pass groups=... to the search's or pipeline's fit. Without it the ranking scorers "
            "cannot score a fold (each fold scores nan; error_score='raise' stops a search at the first)."
        )
    return message


def resolve_groups(groups, n_samples, *, method="fit", warn=True, stacklevel=2):
    """Return the query index (``sklearn_ltr._groups.QueryGroups``) of ``groups``.

    Parameters
    ----------
    groups : array-like of shape (n_samples,) or None
        One query id per row. ``None`` means "all rows are one query" and, when
        ``warn`` is true and there is more than one row, emits a
        :class:`MissingGroupsWarning` that names the fix.
    n_samples : int
        Number of rows of ``X``.
    method : str, default="fit"
        Name of the calling method, for the warning.
    warn : bool, default=True
        Whether ``groups=None`` warns.
    stacklevel : int, default=2
        ``stacklevel`` of the warning, counted from the caller of this function.

    Returns
    -------
    query_groups : QueryGroups
        The query index: sorted unique ``ids``, per-row ``codes``, ``sizes``, ...

    Examples
    --------
    >>> from sklearn_ltr.base import resolve_groups
    >>> query_groups = resolve_groups(["b", "a", "b"], 3)
    >>> query_groups.ids.tolist(), query_groups.codes.tolist(), query_groups.sizes.tolist()
    (['a', 'b'], [1, 0, 1], [1, 2])

    ``groups=None`` makes all rows one query, with a :class:`MissingGroupsWarning`
    unless ``warn=False``:

    >>> resolve_groups(None, 4, warn=False).sizes.tolist()
    [4]
    >>> resolve_groups([1, 2], 3)
    Traceback (most recent call last):
    ...
    ValueError: groups has 2 entries but X has 3 rows; pass exactly one query id per row of X.
    """
    if groups is None:
        if warn and n_samples > 1:
            warnings.warn(_missing_groups_message(n_samples, method), MissingGroupsWarning, stacklevel=stacklevel + 1)
        return QueryGroups(np.zeros(n_samples, dtype=np.int64))
    return QueryGroups(groups, n_samples)


class RankerMixin:
    r"""Mixin for rankers: routing requests for ``groups``, ranker tags and ``score``.

    Put it before :class:`~sklearn.base.BaseEstimator` in the bases. Subclasses
    implement ``fit(X, y, groups=None, ...)`` and ``predict(X, groups=None)``,
    which returns one score per input row, in input row order. The mixin adds
    ``score`` (mean NDCG@10 over queries), the ``"ranker"`` estimator type, and
    a default metadata-routing request for ``groups`` in ``fit``, ``predict`` and
    ``score``.

    Examples
    --------
    A ranker that scores each row by the sum of its features:

    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn.utils import get_tags
    >>> from sklearn_ltr.base import RankerMixin
    >>> class SumRanker(RankerMixin, BaseEstimator):
    ...     def fit(self, X, y, groups=None):
    ...         return self
    ...     def predict(self, X, groups=None):
    ...         return np.asarray(X, dtype=float).sum(axis=1)
    >>> ranker = SumRanker()
    >>> get_tags(ranker).estimator_type
    'ranker'
    >>> sorted(ranker.get_metadata_routing().consumes("fit", ["groups", "sample_weight"]))
    ['groups']

    One query of three documents, scored 1, 2, 3 with labels 0, 2, 1: the ranking
    puts the label-1 document first, so NDCG@10 is
    :math:`(1 + 3 / \log_2 3) / (3 + 1 / \log_2 3)`:

    >>> X, y, qid = np.array([[1.0], [2.0], [3.0]]), [0, 2, 1], [5, 5, 5]
    >>> round(ranker.fit(X, y, qid).score(X, y, groups=qid), 4)
    0.7967
    """

    # Request ``groups`` by default, so routing needs no ``set_*_request`` call.
    __metadata_request__fit = {"groups": True}  # noqa: RUF012
    __metadata_request__predict = {"groups": True}  # noqa: RUF012
    __metadata_request__score = {"groups": True}  # noqa: RUF012

    def __sklearn_tags__(self):
        # scikit-learn's tags plus ``ranker_tags`` (sklearn_ltr.utils.RankerTags), which
        # subclasses adjust: list context, target kind, extra routed inputs.
        tags = Tags.from_sklearn(super().__sklearn_tags__())
        tags.estimator_type = "ranker"
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        return tags

    def _query_column(self):
        """The column of ``X`` holding the query ids (the ``query_column`` parameter), or ``None``."""
        return getattr(self, "query_column", None)

    def score(self, X, y, groups=None, sample_weight=None, **predict_params):
        """Mean NDCG@10 over the queries of ``X``.

        Uses LightGBM's conventions: exponential gain ``2**y - 1``, discount
        ``1 / log2(rank + 1)``, and a query with no relevant document scores 1.
        Tied scores share their gain (scikit-learn's tie averaging), so the
        value does not depend on the order of the rows. This is the value of
        ``sklearn_ltr.ndcg_scorer(self, X, y, groups=groups)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to rank (with the query id column when the ranker has a
            ``query_column``).
        y : array-like of shape (n_samples,)
            Graded relevance labels.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row. Required unless the ranker reads the ids from
            ``X`` (``query_column``): ``None`` then raises a ``ValueError``, since
            scoring all rows as one query would give a wrong number.
        sample_weight : None
            Not supported: must be ``None``. It is in the signature because
            ``Pipeline.score`` passes it under metadata routing.
        **predict_params
            Further per-row inputs of ``predict`` (e.g. SetRank's ``initial_rank``),
            passed on unchanged.

        Returns
        -------
        score : float
            Mean NDCG@10 over queries.
        """
        from sklearn_ltr._query_column import resolve_query_column
        from sklearn_ltr.metrics import ndcg_score

        if sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__}.score does not support sample_weight; NDCG averages "
                f"queries with equal weight. Pass sample_weight=None."
            )
        query_column = self._query_column()
        if query_column is not None:
            _, groups = resolve_query_column(X, groups, query_column, owner=type(self).__name__, method="score")
        elif groups is None:
            validate = getattr(self, "_validate_predict_data", None)
            if validate is not None:  # a wrong X is reported first, as scikit-learn's checks expect
                validate(X)
            raise ValueError(_missing_query_ids_message(f"{type(self).__name__}.score"))
        check_same_length(X, y, "y", what="one relevance label per row of X")
        y_score = self.predict(X, groups=groups, **predict_params)
        return float(ndcg_score(y, y_score, groups, k=SCORE_K))


def _missing_query_ids_message(name):
    """The error of a score asked without query ids: it names the three ways to give them."""
    return (
        f"{name} needs the query id of every row, but got groups=None: scoring all rows as one query would "
        f"give a wrong number. Pass groups=<one query id per row>. Inside GridSearchCV, cross_validate or "
        f"cross_val_score, call sklearn.set_config(enable_metadata_routing=True) and pass groups to fit "
        f"(search.fit(X, y, groups=qid)) or params={{'groups': qid}}. For tools that cannot route query ids "
        f"(permutation_importance, cross_val_predict, OptunaSearchCV), keep the ids in a column of X and "
        f"construct the ranker with query_column=<that column>."
    )


class BaseRanker(RankerMixin, BaseEstimator):
    """Base class for rankers: input validation shared by every ranker.

    Provides ``_validate_fit_data`` (``X``, labels and ``groups`` in one call,
    setting ``n_features_in_``, ``feature_names_in_`` and ``feature_profile_``) and
    ``_validate_predict_data`` (``X`` checked against the fitted features).
    ``fit`` warns (:class:`~sklearn_ltr.exceptions.QueryIdFeatureWarning`) when a feature
    column holds the query ids; ``predict`` warns
    (:class:`~sklearn_ltr.exceptions.FeatureDriftWarning`) when its rows break what ``fit``
    saw of a feature (``feature_profile_``: missing values, range).
    Tags say whether sparse ``X`` and NaN features are accepted; subclasses set
    ``_accept_sparse`` and ``_allow_nan`` to match, and ``_float32_features`` when
    the model computes in float32 (float64 features beyond float32's range are then
    refused). Bad features get the library's message, naming ``X``, how many values
    are at fault, the first of them and the fix; labels of another length than ``X``
    a message naming ``y`` and both lengths.

    Examples
    --------
    A minimal pointwise ranker that scores rows by their first feature:

    >>> import numpy as np
    >>> from sklearn_ltr.base import BaseRanker
    >>> class FirstFeatureRanker(BaseRanker):
    ...     def fit(self, X, y, groups=None):
    ...         X, y, query_groups = self._validate_fit_data(X, y, groups)
    ...         return self
    ...     def predict(self, X, groups=None):
    ...         return self._validate_predict_data(X, groups)[:, 0]
    >>> X = np.array([[0.1], [0.9], [0.5], [0.2]])
    >>> y, qid = [0, 2, 1, 0], [7, 7, 3, 3]
    >>> FirstFeatureRanker().fit(X, y, qid).score(X, y, qid)
    1.0
    """

    #: Sparse formats ``X`` may come in (``False``: dense only).
    _accept_sparse = False
    #: Whether NaN features are accepted (infinities never are).
    _allow_nan = False
    #: Whether relevance labels must be whole numbers 0, 1, 2, ...
    _integer_labels = False
    #: Whether the model computes in float32 (a float64 feature beyond float32's range would be infinite).
    _float32_features = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = bool(self._accept_sparse)
        tags.input_tags.allow_nan = self._allow_nan
        return tags

    def _check_X_kwargs(self):
        return {
            "accept_sparse": self._accept_sparse,
            "dtype": (np.float64, np.float32),
            # Non-finite values are refused by _check_features, whose message names the fix.
            "ensure_all_finite": False,
        }

    def _check_features(self, X, name="X"):
        check_features(X, owner=type(self).__name__, allow_nan=self._allow_nan, float32=self._float32_features,
                       name=name)
        return X

    def _split_query_column(self, X, groups, *, method):
        """``X`` without its query column and the ids read from it (unchanged without ``query_column``)."""
        from sklearn_ltr._query_column import resolve_query_column

        return resolve_query_column(X, groups, self._query_column(), owner=type(self).__name__, method=method)

    def _validate_fit_data(self, X, y, groups, *, method="fit", stacklevel=3):
        """Validate training data; set ``n_features_in_``, ``feature_names_in_`` and ``feature_profile_``.

        Warns (:class:`~sklearn_ltr.exceptions.QueryIdFeatureWarning`) for a feature column
        that holds the query ids; records what the rows hold of each feature
        (:class:`~sklearn_ltr._feature_profile.FeatureProfile`), which ``predict`` checks.

        With a ``query_column``, the ids come from that column of ``X``, which is
        dropped: ``n_features_in_`` and ``feature_names_in_`` describe the features
        the model uses, without the query column.

        Returns
        -------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Float32 or float64 features, rows in input order.
        y : ndarray of shape (n_samples,)
            Float64 relevance labels (non-negative; whole numbers when the
            ranker's ``_integer_labels`` is true).
        query_groups : QueryGroups
            The query index of ``groups`` (one query if ``groups`` is None).
        """
        X, groups = self._split_query_column(X, groups, method=method)
        check_same_length(X, y, "y", what="one relevance label per row of X")
        check_finite_labels(y)
        X, y = validate_data(self, X, y, reset=True, y_numeric=True, **self._check_X_kwargs())
        self._check_features(X)
        y = check_relevance(y, name="y", integer=self._integer_labels)
        query_groups = resolve_groups(groups, X.shape[0], method=method, stacklevel=stacklevel)
        check_query_id_columns(self, X, query_groups, groups)
        self.feature_profile_ = FeatureProfile.of(X)
        return X, y, query_groups

    def _validate_X(self, X, name="X"):
        """Validate more rows (validation or test) against the features seen in ``fit``; ``name`` is for messages."""
        return self._check_features(validate_data(self, X, reset=False, **self._check_X_kwargs()), name=name)

    def _validate_predict_data(self, X, groups=None, *, return_groups=False):
        """Check the ranker is fitted; validate ``X`` and the length of ``groups``.

        Returns ``X`` (without the query column), or ``(X, groups)`` with
        ``return_groups=True``, ``groups`` then read from the query column if there is one.
        """
        check_is_fitted(self)
        X, groups = self._split_query_column(X, groups, method="predict")
        X = self._validate_X(X)
        check_feature_drift(self, X)
        if groups is not None:
            groups = check_groups(groups, X.shape[0])
        return (X, groups) if return_groups else X
