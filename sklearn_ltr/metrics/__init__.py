"""Ranking metrics over many queries at once, and routing-aware scorers.

All metrics take ``(y_true, y_score, groups)`` with one query id per row, sort
all rows once by ``(query, -score)`` and never loop over queries in Python.
"""

from sklearn_ltr.metrics._binary import average_precision_score, mrr_score, precision_at_k
from sklearn_ltr.metrics._cascade import err_score
from sklearn_ltr.metrics._dcg import dcg_score, ndcg_per_query, ndcg_score
from sklearn_ltr.metrics._pairs import swapped_pairs
from sklearn_ltr.metrics._scorer import NDCGScorer, RankingScorer, make_ranking_scorer, ndcg_scorer

__all__ = [
    "NDCGScorer",
    "RankingScorer",
    "average_precision_score",
    "dcg_score",
    "err_score",
    "make_ranking_scorer",
    "mrr_score",
    "ndcg_per_query",
    "ndcg_score",
    "ndcg_scorer",
    "precision_at_k",
    "swapped_pairs",
]
