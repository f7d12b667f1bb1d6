"""Feed-forward document scorer (RankNet's network)."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ACTIVATIONS", "MLPScorer", "scatter_scores"]

ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
}


def scatter_scores(values, mask):
    """Lay per-document values (real documents only, row-major) out as ``[batch, list]``, 0 on padding."""
    out = torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    out[mask] = values
    return out


class _MaskedBatchNorm(nn.BatchNorm1d):
    """Batch norm over real documents that tolerates a batch of one document in training.

    With a single document the batch variance is undefined; the running
    statistics are used instead of failing.
    """

    def forward(self, x):
        if self.training and x.shape[0] < 2:
            return nn.functional.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        return super().forward(x)


class MLPScorer(nn.Module):
    r"""Score each document independently with a multi-layer perceptron.

    .. math:: s_i = w^\top h_L(x_i) + b, \quad h_l = \mathrm{drop}(\phi(\mathrm{BN}(W_l h_{l-1} + b_l)))

    The network sees only real documents (``X[mask]``), so padding can never
    change a score and batch-norm statistics are computed over real documents.

    Parameters
    ----------
    n_features : int
        Input features per document.
    hidden_sizes : sequence of int, default=(64, 32)
        Width of each hidden layer; empty for a linear scorer.
    activation : str, default="relu"
        One of :data:`ACTIVATIONS`.
    dropout : float, default=0.0
        Dropout rate after each hidden layer.
    batch_norm : bool, default=False
        Batch normalisation before each activation.

    References
    ----------
    C. Burges et al. "Learning to rank using gradient descent." ICML 2005.
    """

    def __init__(self, n_features, hidden_sizes=(64, 32), activation="relu", dropout=0.0, batch_norm=False):
        super().__init__()
        layers, width = [], n_features
        for size in hidden_sizes:
            layers.append(nn.Linear(width, size))
            if batch_norm:
                layers.append(_MaskedBatchNorm(size))
            layers.append(ACTIVATIONS[activation]())
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = size
        layers.append(nn.Linear(width, 1))
        self.network = nn.Sequential(*layers)

    def forward(self, X, mask, **unused):
        """Scores ``[batch, list]`` of documents ``X`` ``[batch, list, features]``; 0 on padding."""
        return scatter_scores(self.network(X[mask]).squeeze(-1), mask)
