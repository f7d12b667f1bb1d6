r"""Two-tower click model: a relevance tower on document features, an observation tower on bias features.

The click logit of a document combines the relevance tower's output :math:`r`
(document features only) and the observation tower's output :math:`o` (display
position or other bias features only). Only :math:`r` is used to rank at
serving time. See :class:`TwoTowerScorer` and :class:`TwoTowerClickLoss`.

Examples
--------
>>> from sklearn_ltr.nn import COMBINATIONS, TwoTowerClickLoss
>>> COMBINATIONS
('additive', 'multiplicative', 'dla')
>>> [TwoTowerClickLoss(combination).combination for combination in COMBINATIONS]
['additive', 'multiplicative', 'dla']
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sklearn_ltr.nn._cost import ModuleCost, bound_arguments
from sklearn_ltr.nn._mlp import MLPScorer, mlp, scatter_scores
from sklearn_ltr.nn._two_tower_loss import TwoTowerOutput

__all__ = ["TwoTowerScorer", "gradient_reversal"]


class _GradientReversal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.weight = weight
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.weight * grad, None


def gradient_reversal(x, weight=1.0):
    r"""Identity in the forward pass; multiplies the gradient by :math:`-\lambda` (``weight``) going back.

    The gradient reversal layer :math:`\mathrm{GRL}_\lambda` of Ganin and Lempitsky:
    :math:`\mathrm{GRL}_\lambda(x) = x` and
    :math:`\partial \mathrm{GRL}_\lambda(x) / \partial x = -\lambda I`. Placed between the
    observation tower and an adversarial head, it trains the head to predict relevance from
    the observation logit while pushing the tower to make that impossible.

    Parameters
    ----------
    x : torch.Tensor
        Input, of any shape.
    weight : float, default=1.0
        :math:`\lambda`, the scale of the reversed gradient.

    Returns
    -------
    out : torch.Tensor
        A tensor equal to ``x`` whose gradient is reversed and scaled.

    References
    ----------
    Y. Ganin and V. Lempitsky. "Unsupervised Domain Adaptation by Backpropagation."
    ICML 2015.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import gradient_reversal
    >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> out = gradient_reversal(x, weight=0.5)
    >>> torch.equal(out, x)
    True
    >>> out.sum().backward()
    >>> x.grad  # d(sum)/dx would be 1; reversed and scaled by 0.5
    tensor([-0.5000, -0.5000])
    """
    return _GradientReversal.apply(x, float(weight))


class TwoTowerScorer(nn.Module):
    r"""Relevance tower on ``X`` plus observation tower on positions (or bias features).

    - relevance tower: an :class:`~sklearn_ltr.nn.MLPScorer`, :math:`r_i = f(x_i)`;
    - observation tower: :math:`o_i = g(b_i)` with :math:`b_i` the one-hot encoding of the
      display rank :math:`\min(p_i, P)` (``P = max_position``) when positions are 1-D, or the
      given bias features when they are 2-D; :math:`g` is an MLP (``observation_hidden_sizes=()``
      makes it linear, i.e. one free logit per position);
    - observation dropout (Zhang et al., 2023): inverted dropout of rate ``observation_dropout`` on
      :math:`o` in training, so the relevance tower must explain the clicks of the dropped rows;
    - gradient reversal (``gradient_reversal > 0``, training only): the output's ``adversary`` is
      :math:`\mathrm{GRL}_\lambda(o_i)`, on which :class:`TwoTowerClickLoss` fits its adversary
      (:func:`linear_adversary_loss`); the adversary's gradient reaches the observation tower
      multiplied by :math:`-\lambda`.

    ``forward(X, mask)`` (no positions: prediction) returns :math:`r` ``[batch, list]``;
    ``forward(X, mask, positions=...)`` (training) returns a :class:`TwoTowerOutput`.

    Parameters
    ----------
    n_features : int
        Document features (input of the relevance tower).
    hidden_sizes : sequence of int, default=(64, 32)
        Hidden layers of the relevance tower (an :class:`~sklearn_ltr.nn.MLPScorer`).
    activation : str, default="relu"
        Activation of both towers, one of :data:`ACTIVATIONS`.
    dropout : float, default=0.0
        Dropout after each hidden layer of the relevance tower.
    batch_norm : bool, default=False
        Batch normalisation in the relevance tower.
    n_bias_features : int or None, default=None
        Width of 2-D bias features; ``None`` means 1-D display ranks, one-hot encoded.
    max_position : int, default=50
        Positions above it share the logit of ``max_position`` (1-D positions only).
    observation_hidden_sizes : sequence of int, default=()
        Hidden layers of the observation tower.
    observation_dropout : float, default=0.0
        Dropout rate on the observation logit during training.
    gradient_reversal : float, default=0.0
        :math:`\lambda`, the scale of the reversed gradient; 0 disables gradient reversal.

    See Also
    --------
    TwoTowerClickLoss : The training loss of this model.
    sklearn_ltr.TwoTowerDebiasedRanker : The estimator that trains it.

    References
    ----------
    H. Guo, J. Yu, Q. Liu, R. Tang and Y. Zhang. "PAL: a Position-bias Aware Learning
    Framework for CTR Prediction in Live Recommender Systems." RecSys 2019.

    Y. Zhang, L. Yan, Z. Qin, H. Zhuang, J. Shen, X. Wang, M. Bendersky and M. Najork.
    "Towards Disentangling Relevance and Bias in Unbiased Learning to Rank." KDD 2023.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import TwoTowerScorer
    >>> _ = torch.manual_seed(0)
    >>> model = TwoTowerScorer(n_features=3, hidden_sizes=(8,), max_position=5, gradient_reversal=0.5)
    >>> X = torch.randn(2, 4, 3)
    >>> mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    >>> positions = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 0.0]])

    With positions (training) the model returns the logits of both towers and the adversary's
    input (the observation logits, whose gradient is reversed); without them (ranking), the
    relevance logits alone:

    >>> output = model(X, mask, positions=positions)
    >>> output.relevance.shape, output.observation.shape, output.adversary.shape
    (torch.Size([2, 4]), torch.Size([2, 4]), torch.Size([2, 4]))
    >>> torch.equal(model(X, mask), output.relevance)
    True

    Positions beyond ``max_position`` share its logit:

    >>> with torch.no_grad():
    ...     logits = model.observation_logits(torch.tensor([1.0, 5.0, 9.0]))
    >>> logits.shape, bool(logits[1] == logits[2])
    (torch.Size([3]), True)
    """

    @classmethod
    def memory_cost(cls, **kwargs):
        """:class:`~sklearn_ltr.nn._cost.ModuleCost`: both towers' layers, no attention."""
        a = bound_arguments(cls, kwargs)
        return ModuleCost(activation_width=sum(a["hidden_sizes"]) + sum(a["observation_hidden_sizes"]) + 2)

    def __init__(self, n_features, hidden_sizes=(64, 32), activation="relu", dropout=0.0, batch_norm=False, *,
                 n_bias_features=None, max_position=50, observation_hidden_sizes=(), observation_dropout=0.0,
                 gradient_reversal=0.0):
        super().__init__()
        self.relevance = MLPScorer(n_features, hidden_sizes, activation, dropout, batch_norm)
        self.n_bias_features = n_bias_features
        self.max_position = int(max_position)
        width = self.max_position if n_bias_features is None else int(n_bias_features)
        self.observation = mlp(width, observation_hidden_sizes, activation)
        self.observation_dropout = nn.Dropout(observation_dropout)
        self.gradient_reversal = float(gradient_reversal)

    def observation_logits(self, positions):
        """Observation logits :math:`o` of rows of positions or bias features.

        Parameters
        ----------
        positions : torch.Tensor of shape (n,) or (n, n_bias_features)
            1-based display ranks (1-D model: rounded, clipped to ``1 .. max_position``) or
            bias features (2-D model).

        Returns
        -------
        logits : torch.Tensor of shape (n,)
            :math:`o` of each row, before observation dropout.
        """
        if self.n_bias_features is None:
            index = positions.round().long().clamp(1, self.max_position) - 1
            features = F.one_hot(index, self.max_position).to(self.observation[0].weight.dtype)
        else:
            features = positions.reshape(positions.shape[0], -1).to(self.observation[0].weight.dtype)
        return self.observation(features).squeeze(-1)

    def forward(self, X, mask, positions=None, **unused):
        """Relevance scores, or the output of every tower when ``positions`` is given.

        Parameters
        ----------
        X : torch.Tensor of shape (batch, list, n_features)
            Padded documents.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.
        positions : torch.Tensor of shape (batch, list) or (batch, list, n_bias_features), default=None
            Display ranks or bias features of the documents; values on padding are ignored.
        **unused
            Other per-document inputs of the batch, ignored.

        Returns
        -------
        output : torch.Tensor of shape (batch, list) or TwoTowerOutput
            Without ``positions``, the relevance logits :math:`r` (0 on padding); with them, a
            :class:`TwoTowerOutput` (its ``adversary`` only in training mode).
        """
        relevance = self.relevance(X, mask)
        if positions is None:
            return relevance
        observation = self.observation_logits(positions[mask])
        adversary = None
        if self.training and self.gradient_reversal > 0:
            adversary = scatter_scores(gradient_reversal(observation, self.gradient_reversal), mask)
        observation = scatter_scores(self.observation_dropout(observation), mask)
        return TwoTowerOutput(relevance, observation, adversary)
