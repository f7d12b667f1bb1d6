"""Model inspection that keeps queries whole: permutation importance of a ranker's features."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from sklearn_ltr._query_column import query_column_of
from sklearn_ltr.utils._pipeline import final_estimator

__all__ = ["permutation_importance"]


def _query_column_index(estimator, X):
    """Position in ``X`` of the column the estimator (or a Pipeline's last step) reads query ids from."""
    final = final_estimator(estimator)
    column = query_column_of(final)
    if column is None:
        return None
    n_columns = X.shape[1]
    if isinstance(column, str):
        columns = list(getattr(X, "columns", []))
        if column not in columns:
            raise ValueError(
                f"The ranker reads query ids from column {column!r} (query_column), which is not a column of X: "
                f"pass X as a DataFrame with that column."
            )
        return columns.index(column)
    if final is not estimator:
        raise ValueError(
            f"The Pipeline's last step reads query ids from column index {column} of its own input, which need "
            f"not be column {column} of X: name the column (query_column='qid' with a DataFrame), or pass "
            f"groups= and keep the ids out of X."
        )
    return int(column) % n_columns


def permutation_importance(estimator, X, y, *, groups=None, scoring=None, n_repeats=5, n_jobs=None,
                           random_state=None):
    r"""Permutation importance of each feature, scored per query; the query ids are never permuted.

    scikit-learn's :func:`sklearn.inspection.permutation_importance` shuffles one column at
    a time and measures the drop of the score: :math:`i_j = s - \frac{1}{K}\sum_k s_{k,j}`
    (Breiman, 2001). It cannot hand query ids to a ranking scorer, and it would permute a
    column of query ids like a feature (moving documents between queries). This function
    runs it with the query ids given to the scorer: from ``groups``, or from the column of
    ``X`` the ranker reads them from (``query_column``), which is left out of the result
    (scikit-learn's function still shuffles that column once per repeat; its value is
    discarded). Each feature's values are those of scikit-learn's function with the same
    ``random_state``.

    Parameters
    ----------
    estimator : object
        A fitted ranker, or a fitted :class:`~sklearn.pipeline.Pipeline` ending in one.
    X : {array-like, DataFrame} of shape (n_samples, n_columns)
        Rows to score (with the query id column when the ranker has a ``query_column``).
    y : array-like of shape (n_samples,)
        Relevance labels.
    groups : array-like of shape (n_samples,), default=None
        Query id of each row. Needed unless the ranker reads the ids from ``X``; if both
        are there they must agree.
    scoring : callable, default=None
        A ranking scorer ``scorer(estimator, X, y, groups=...)``;
        ``None`` is :data:`sklearn_ltr.ndcg_scorer` (NDCG@10).
    n_repeats : int, default=5
        Permutations per feature.
    n_jobs : int, default=None
        Parallel jobs over features (joblib).
    random_state : int, RandomState instance or None, default=None
        Seed of the permutations.

    Returns
    -------
    result : Bunch
        ``importances_mean``, ``importances_std`` of shape (n_features,) and
        ``importances`` of shape (n_features, n_repeats), one row per feature of ``X``
        in column order, without the query id column; ``feature_indices``: the column of
        ``X`` of each row.

    References
    ----------
    L. Breiman. "Random Forests." Machine Learning 45(1), 5-32, 2001.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.inspection import permutation_importance
    >>> X, y, qid = make_ranking(n_queries=30, n_features=4, random_state=0)
    >>> frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(qid=qid)
    >>> ranker = LambdaMARTRanker(n_estimators=10, n_jobs=1, query_column="qid").fit(frame, y)
    >>> result = permutation_importance(ranker, frame, y, n_repeats=3, random_state=0)
    >>> result.importances.shape, result.feature_indices.tolist()  # four features, no "qid"
    ((4, 3), [0, 1, 2, 3])
    """
    from sklearn.inspection import permutation_importance as sklearn_permutation_importance

    from sklearn_ltr.metrics import ndcg_scorer

    scorer = ndcg_scorer if scoring is None else scoring
    column = _query_column_index(estimator, X)
    if column is not None:
        if groups is not None:  # refuse ids that disagree with the column before any work
            from sklearn_ltr._query_column import resolve_query_column

            resolve_query_column(X, groups, column, owner="permutation_importance", method="call")

        def score(fitted, X_permuted, y_true):
            # The scorer reads the ids from the column (intact unless it is the one permuted,
            # whose result is dropped below).
            return scorer(fitted, X_permuted, y_true)
    elif groups is None:
        from sklearn_ltr.base import _missing_query_ids_message

        raise ValueError(_missing_query_ids_message("permutation_importance"))
    else:
        def score(fitted, X_permuted, y_true):
            # max_samples=1.0 keeps every row in place, so the ids stay aligned with the rows.
            return scorer(fitted, X_permuted, y_true, groups=groups)

    result = sklearn_permutation_importance(
        estimator, X, y, scoring=score, n_repeats=n_repeats, n_jobs=n_jobs, random_state=random_state,
        max_samples=1.0,
    )
    keep = np.array([j for j in range(X.shape[1]) if j != column])
    return Bunch(importances_mean=result.importances_mean[keep], importances_std=result.importances_std[keep],
                 importances=result.importances[keep], feature_indices=keep)
