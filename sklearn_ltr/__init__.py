"""sklearn_ltr: learning to rank with scikit-learn's interface.

Every estimator takes ``groups``, one query id per row, in ``fit``, ``predict``
and ``score``; see the user guide for metadata routing with ``GridSearchCV``.
"""

__version__ = "0.1.0"

from sklearn_ltr.base import MissingGroupsWarning
from sklearn_ltr.metrics import NDCGScorer, RankingScorer, make_ranking_scorer, ndcg_scorer
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers import (
    DASALCRanker,
    LambdaMARTRanker,
    MissingPositionsWarning,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
)

__all__ = [
    "DASALCRanker",
    "LambdaMARTRanker",
    "Log1pTransformer",
    "MissingGroupsWarning",
    "MissingPositionsWarning",
    "NDCGScorer",
    "RankNetRanker",
    "RankingEnsemble",
    "RankingScorer",
    "SetRankRanker",
    "TwoTowerDebiasedRanker",
    "__version__",
    "make_ranking_scorer",
    "ndcg_scorer",
]
