"""Prediction for list-context rankers (DASALC, SetRank) in a canonical row order."""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr._skorch import build_dataset

__all__ = ["ListContextMixin", "canonical_row_order"]


def canonical_row_order(X):
    """Permutation sorting the rows of ``X`` by their bytes: the same rows give the same order.

    Any fixed order works; comparing raw bytes is cheap (``memcmp``) and needs no choice
    of key. Identical rows keep their relative input order.
    """
    X = np.ascontiguousarray(X)
    rows = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    return np.argsort(rows, kind="stable")


class ListContextMixin:
    """Score each query with its documents in a canonical order, whatever the input order.

    A list-context network is permutation equivariant, but in floating point the order in
    which attention sums over the documents changes the last bits of a score (about 1e-7
    in float32). Sorting each query's rows by their bytes before batching makes
    ``predict`` *exactly* invariant to the order of the input rows. Put it before
    :class:`~sklearn_ltr.rankers._neural.NeuralRanker` in the bases.
    """

    _list_context = True

    def _predict(self, X, groups, **extras):
        X = self._validate_predict_data(X, groups)
        query_groups = self._prediction_groups(groups, X.shape[0])
        order = canonical_row_order(X)
        canonical = QueryGroups(query_groups.codes[order])
        extras = {name: np.asarray(values)[order] for name, values in extras.items()}
        scores = np.empty(X.shape[0], dtype=np.float64)
        scores[order] = canonical.unsort(self.net_.score_rows(build_dataset(canonical, X[order], **extras)))
        return scores
