"""Query ids carried inside ``X``: a ranker's ``query_column`` parameter.

Metadata routing is how ``groups`` reach a ranker inside scikit-learn's own tools.
Tools that do not route (``cross_val_predict``, ``permutation_importance``, Optuna's
``OptunaSearchCV``, MLflow's pyfunc serving) pass ``X`` and nothing else; a ranker
built with ``query_column=`` reads the query ids from that column of ``X`` in
``fit``, ``predict`` and ``score`` and drops it from the features, so the ids go
wherever ``X`` goes.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from sklearn_ltr._groups import QueryGroups, check_groups
from sklearn_ltr.utils._pipeline import final_estimator, is_pipeline

__all__ = [
    "QUERY_COLUMN_CONSTRAINTS", "QUERY_COLUMN_DOC", "document_query_column", "query_column_of", "query_ids_from_X",
    "resolve_query_column", "split_query_column",
]


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _column_label(query_column):
    return f"query_column={query_column!r}"


def split_query_column(X, query_column, *, owner="the ranker"):
    """Return ``(features, query_ids)``: ``X`` without the query column, and that column.

    Parameters
    ----------
    X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_columns)
        Features plus one column of query ids.
    query_column : str or int
        A DataFrame column name, or an integer column index (negative counts from
        the end) for any 2-D ``X``.
    owner : str, default="the ranker"
        Name used in error messages.

    Returns
    -------
    features : same kind as ``X``, of shape (n_samples, n_columns - 1)
        ``X`` without the query column (a DataFrame stays a DataFrame).
    query_ids : ndarray of shape (n_samples,)
        The validated query ids (integers or strings).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._query_column import split_query_column
    >>> X = np.array([[7, 0.5, 1.0], [7, 0.1, 2.0], [9, 0.3, 3.0]])
    >>> features, qid = split_query_column(X, 0)
    >>> features.tolist(), qid.tolist()
    ([[0.5, 1.0], [0.1, 2.0], [0.3, 3.0]], [7, 7, 9])
    """
    label = _column_label(query_column)
    if _is_dataframe(X):
        columns = list(X.columns)
        if isinstance(query_column, str):
            if query_column not in columns:
                raise ValueError(
                    f"{label} of {owner} is not a column of X (columns: {columns[:10]}"
                    f"{' ...' if len(columns) > 10 else ''}). Pass X with a {query_column!r} column of query ids, "
                    f"or set query_column to the name of the column that holds them."
                )
            position = columns.index(query_column)
        else:
            position = _column_position(query_column, len(columns), label, owner)
        ids = X.iloc[:, position].to_numpy()
        features = X.drop(columns=X.columns[position])
    else:
        if isinstance(query_column, str):
            raise ValueError(
                f"{label} of {owner} names a column, but X is a {type(X).__name__} without column names. Pass X "
                f"as a pandas DataFrame with a {query_column!r} column, or give query_column as an integer column "
                f"index."
            )
        if not sp.issparse(X):
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(
                f"{label} of {owner} needs a 2-D X (rows x columns, one column of query ids); got X of shape "
                f"{X.shape}."
            )
        position = _column_position(query_column, X.shape[1], label, owner)
        keep = np.delete(np.arange(X.shape[1]), position)
        if sp.issparse(X):
            X = sp.csc_matrix(X) if not sp.isspmatrix_csc(X) else X
            ids = X[:, position].toarray().ravel()
            features = X[:, keep].tocsr()
        else:
            ids = X[:, position]
            features = X[:, keep]
    ids = check_groups(ids, len(ids), name=f"the query ids in column {query_column!r} of X ({label})")
    return features, ids


def _column_position(query_column, n_columns, label, owner):
    if not -n_columns <= query_column < n_columns:
        raise ValueError(
            f"{label} of {owner} is out of range for X with {n_columns} columns: pass an index in "
            f"[{-n_columns}, {n_columns - 1}] of the column that holds the query ids."
        )
    return int(query_column) % n_columns


def _same_partition(a, b):
    """Whether two id arrays put the same rows together (possibly under different names)."""
    first, second = QueryGroups(a), QueryGroups(b)
    if first.n_queries != second.n_queries:
        return False
    pairs = first.codes.astype(np.int64) * second.n_queries + second.codes
    return len(np.unique(pairs)) == first.n_queries


def resolve_query_column(X, groups, query_column, *, owner="the ranker", method="fit"):
    """Return ``(features, groups)`` for a ranker's ``query_column`` and the ``groups`` it was given.

    With ``query_column=None`` both come back unchanged. Otherwise the ids come from
    the column, which is dropped from ``X``; ``groups`` given as well must group the
    rows in the same way (e.g. the same ids routed by a search), else a ``ValueError``.
    """
    if query_column is None:
        return X, groups
    features, ids = split_query_column(X, query_column, owner=owner)
    if groups is not None:
        given = check_groups(groups, len(ids))
        if not _same_partition(ids, given):
            raise ValueError(
                f"{owner}.{method} got groups= and query ids in column {query_column!r} of X "
                f"({_column_label(query_column)}), and they group the rows differently. Pass only one of them "
                f"(query_column=None to use groups), or make them the same query ids."
            )
    return features, ids


def query_column_of(estimator):
    """The ``query_column`` an estimator reads its query ids from, or ``None``."""
    getter = getattr(estimator, "_query_column", None)
    if callable(getter):
        return getter()
    return getattr(estimator, "query_column", None)


def query_ids_from_X(estimator, X):
    """Query ids that ``estimator`` reads from ``X`` itself, or ``None`` if it reads none.

    Follows a :class:`~sklearn.pipeline.Pipeline` to its last step: the ids are read
    from ``X`` as the earlier steps transform it, exactly as the last step sees it.
    """
    if is_pipeline(estimator):
        if query_column_of(final_estimator(estimator)) is None:
            return None
        if len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        return query_ids_from_X(estimator[-1], X)
    column = query_column_of(estimator)
    if column is None:
        return None
    return split_query_column(X, column, owner=type(estimator).__name__)[1]


def is_query_column(value):
    """Constraint predicate of ``query_column``: ``None``, a column name or an int index."""
    return value is None or isinstance(value, str) or (
        isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    )


#: The ``query_column`` entry of every ranker's docstring.
QUERY_COLUMN_DOC = """\
query_column : str or int, default=None
    Column of ``X`` that holds the query ids: a DataFrame column name or an
    integer column index. ``fit``, ``predict`` and ``score`` then read the
    ids from it and drop it from the features (``n_features_in_`` does not
    count it), so the ids reach tools that pass only ``X`` (``cross_val_predict``,
    ``permutation_importance``, ``OptunaSearchCV``, MLflow serving). ``groups``
    given as well must group the rows the same way. ``None`` takes the ids
    from ``groups`` only."""


def _query_column_constraints():
    from sklearn_ltr.utils._sklearn_compat import Satisfies

    return [Satisfies("a column name (str) or an integer column index", is_query_column), None]


#: The ``query_column`` constraints of every ranker's ``_parameter_constraints``.
QUERY_COLUMN_CONSTRAINTS = _query_column_constraints()


def document_query_column(cls):
    """Class decorator: replace the ``%(query_column)s`` line of the docstring by the entry."""
    marker = "    %(query_column)s"
    if cls.__doc__ and marker in cls.__doc__:
        entry = "\n".join("    " + line if line else line for line in QUERY_COLUMN_DOC.splitlines())
        cls.__doc__ = cls.__doc__.replace(marker, entry)
    return cls
