"""Give a saved model its query ids the way it was fitted to read them: ``groups=`` or a column of ``X``.

A data file holds features and query ids apart. A ranker fitted with ``query_column`` (a
DataFrame column name or an integer index) reads the ids from ``X`` itself, and a ``groups``
argument as well would have to describe the same partition; so the commands write the file's
ids into that column instead. Supported: a ranker with a named or numbered query column, and
a Pipeline fitted on a DataFrame whose columns include the query column by name (its earlier
steps pass the column through to the ranker).
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.utils._pipeline import final_estimator

__all__ = ["file_features", "model_input", "reads_query_column"]


def _query_column(estimator):
    return getattr(final_estimator(estimator), "query_column", None)


def reads_query_column(estimator):
    """Whether the model reads query ids from a column of ``X`` (a data file must then have them)."""
    return _query_column(estimator) is not None


def _named_input(estimator):
    """The column names ``estimator`` was fitted on, or None (fitted on an array)."""
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(name) for name in names]


def file_features(estimator, n_features):
    """Features a data file must provide: ``n_features`` less the query column when the model counts it."""
    column, names = _query_column(estimator), _named_input(estimator)
    if isinstance(column, str) and names is not None and column in names:
        return n_features - 1
    return n_features


def model_input(estimator, X, groups, *, model_name):
    """``(X, predict keyword arguments)`` that give ``estimator`` the file's query ids ``groups``.

    Raises
    ------
    CLIError
        When the model reads query ids from a column the commands cannot place.
    """
    column = _query_column(estimator)
    if column is None:
        return X, {"groups": groups}
    if groups is None:
        raise CLIError(f"{model_name} reads each row's query id from its column {column!r}, but the data file has no "
                       f"query ids (an SVMlight/LETOR file's qid:, a LightGBM file's .query sizes).")
    names, pipeline = _named_input(estimator), final_estimator(estimator) is not estimator
    if isinstance(column, str):
        import pandas as pd

        if names is not None and column in names:  # a frame with the query column among the features
            features = [name for name in names if name != column]
            frame = pd.DataFrame(X, columns=features)
            frame.insert(names.index(column), column, groups)
            return frame, {}
        if not pipeline:  # a ranker: its feature names leave the query column out
            frame = pd.DataFrame(X, columns=names)
            frame[column] = groups
            return frame, {}
    elif not pipeline:
        index = column if column >= 0 else X.shape[1] + 1 + column
        return np.insert(np.asarray(X), index, np.asarray(groups, dtype=np.float64), axis=1), {}
    raise CLIError(f"{model_name} is a Pipeline whose ranker reads query ids from its column {column!r}, which is not "
                   f"a named column of the Pipeline's input: the commands cannot tell where the file's query ids go. "
                   f"Score it in Python with the ids in that column.")
