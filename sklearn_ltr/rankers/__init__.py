"""The public rankers: thin scikit-learn estimators over their backends."""

from sklearn_ltr.rankers._dasalc import DASALCRanker
from sklearn_ltr.rankers._ensemble import RankingEnsemble
from sklearn_ltr.rankers._lambdamart import LambdaMARTRanker
from sklearn_ltr.rankers._ranknet import RankNetRanker
from sklearn_ltr.rankers._setrank import SetRankRanker
from sklearn_ltr.rankers._two_tower import MissingPositionsWarning, TwoTowerDebiasedRanker

__all__ = [
    "DASALCRanker",
    "LambdaMARTRanker",
    "MissingPositionsWarning",
    "RankNetRanker",
    "RankingEnsemble",
    "SetRankRanker",
    "TwoTowerDebiasedRanker",
]
