"""Torch modules of the neural rankers. They know nothing of scikit-learn or skorch.

Every module maps ``forward(X, mask, **extra)`` with ``X`` ``[batch, list, features]``
and a boolean ``mask`` ``[batch, list]`` (True on real documents) to scores
``[batch, list]``; padded slots never change a real document's score.
"""

from sklearn_ltr.nn._attention import (
    InducedAttentionBlock,
    MultiHeadAttention,
    MultiheadAttentionBlock,
    SelfAttentionLayer,
)
from sklearn_ltr.nn._dasalc import DASALCNet
from sklearn_ltr.nn._mlp import ACTIVATIONS, MLPScorer, scatter_scores
from sklearn_ltr.nn._setrank import SetRankNet
from sklearn_ltr.nn._two_tower import (
    COMBINATIONS,
    TwoTowerClickLoss,
    TwoTowerOutput,
    TwoTowerScorer,
    click_log_likelihood,
    gradient_reversal,
)

__all__ = [
    "ACTIVATIONS",
    "COMBINATIONS",
    "DASALCNet",
    "InducedAttentionBlock",
    "MLPScorer",
    "MultiHeadAttention",
    "MultiheadAttentionBlock",
    "SelfAttentionLayer",
    "SetRankNet",
    "TwoTowerClickLoss",
    "TwoTowerOutput",
    "TwoTowerScorer",
    "click_log_likelihood",
    "gradient_reversal",
    "scatter_scores",
]
