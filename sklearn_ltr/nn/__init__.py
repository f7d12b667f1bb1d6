"""Torch modules of the neural rankers. They know nothing of scikit-learn or skorch.

Every network (:class:`MLPScorer`, :class:`DASALCNet`, :class:`SetRankNet`,
:class:`TwoTowerScorer`) maps ``forward(X, mask, **extra)`` with ``X``
``[batch, list, features]`` and a boolean ``mask`` ``[batch, list]`` (True on real
documents) to scores ``[batch, list]``; padded slots never change a real document's score.
The attention blocks map document representations ``[batch, list, d_model]`` to
``[batch, list, d_model]`` with the same mask.

Examples
--------
The ``activation`` of :class:`MLPScorer` and :class:`TwoTowerScorer` is a key of
:data:`ACTIVATIONS`; the ``combination`` of the two-tower click model one of
:data:`COMBINATIONS`:

>>> import torch
>>> from sklearn_ltr.nn import ACTIVATIONS, COMBINATIONS, MLPScorer, click_log_likelihood
>>> sorted(ACTIVATIONS)
['elu', 'gelu', 'leaky_relu', 'relu', 'sigmoid', 'tanh']
>>> ACTIVATIONS["tanh"]()
Tanh()
>>> scorer = MLPScorer(n_features=3, hidden_sizes=(4,), activation="tanh")
>>> scorer.network
Sequential(
  (0): Linear(in_features=3, out_features=4, bias=True)
  (1): Tanh()
  (2): ScoreHead(in_features=4, out_features=1, bias=True)
)
>>> COMBINATIONS
('additive', 'multiplicative', 'dla')
>>> r, o, clicks = torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0])
>>> {c: round(click_log_likelihood(r, o, clicks, c).exp().item(), 2) for c in COMBINATIONS[:2]}
{'additive': 0.5, 'multiplicative': 0.25}
"""

from sklearn_ltr.nn._attention import MultiHeadAttention, SelfAttentionLayer
from sklearn_ltr.nn._cost import ModuleCost, attention_kernel
from sklearn_ltr.nn._dasalc import DASALCNet
from sklearn_ltr.nn._mlp import ACTIVATIONS, MLPScorer, ScoreHead, mlp, scatter_scores, set_reduce_sum
from sklearn_ltr.nn._set_attention import InducedAttentionBlock, MultiheadAttentionBlock
from sklearn_ltr.nn._setrank import SetRankNet
from sklearn_ltr.nn._two_tower import TwoTowerScorer, gradient_reversal
from sklearn_ltr.nn._two_tower_loss import (
    COMBINATIONS,
    TwoTowerClickLoss,
    TwoTowerOutput,
    click_log_likelihood,
    dual_learning_loss,
    linear_adversary_loss,
)

__all__ = [
    "ACTIVATIONS",
    "COMBINATIONS",
    "DASALCNet",
    "InducedAttentionBlock",
    "MLPScorer",
    "ModuleCost",
    "MultiHeadAttention",
    "MultiheadAttentionBlock",
    "ScoreHead",
    "SelfAttentionLayer",
    "SetRankNet",
    "TwoTowerClickLoss",
    "TwoTowerOutput",
    "TwoTowerScorer",
    "attention_kernel",
    "click_log_likelihood",
    "dual_learning_loss",
    "gradient_reversal",
    "linear_adversary_loss",
    "mlp",
    "scatter_scores",
    "set_reduce_sum",
]
