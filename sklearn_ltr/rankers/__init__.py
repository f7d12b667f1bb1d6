"""The public rankers: thin scikit-learn estimators over their backends."""

from sklearn_ltr.rankers._lambdamart import LambdaMARTRanker
from sklearn_ltr.rankers._ranknet import RankNetRanker

__all__ = ["LambdaMARTRanker", "RankNetRanker"]
