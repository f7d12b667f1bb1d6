"""Feed-forward document scorer (RankNet's network).

Examples
--------
>>> from sklearn_ltr.nn import ACTIVATIONS, MLPScorer
>>> ACTIVATIONS["relu"]
<class 'torch.nn.modules.activation.ReLU'>
>>> MLPScorer(n_features=5, hidden_sizes=(8,), activation="gelu").network[1]
GELU(approximate='none')
"""

from __future__ import annotations

import torch
from torch import nn

from sklearn_ltr.nn._cost import ModuleCost, bound_arguments

__all__ = ["ACTIVATIONS", "MLPScorer", "ScoreHead", "mlp", "scatter_scores", "set_reduce_sum"]

#: Hidden-layer activations by name: the ``activation`` values of :class:`MLPScorer`,
#: :class:`TwoTowerScorer`, ``RankNetRanker`` and ``TwoTowerDebiasedRanker``. Each value is a
#: ``torch.nn.Module`` class, instantiated once per hidden layer.
ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "leaky_relu": nn.LeakyReLU,
    "elu": nn.ELU,
}


def scatter_scores(values, mask):
    """Lay per-document values (real documents only, row-major) out as ``[batch, list]``, 0 on padding.

    The inverse of ``padded[mask]``: every module scores the real documents ``X[mask]``
    and scatters the scores back with this function, so padded slots hold exactly 0.

    Parameters
    ----------
    values : torch.Tensor of shape (n_real,)
        One value per real document, in the row-major order of ``mask`` (as ``X[mask]``).
    mask : torch.Tensor of bool, shape (batch, list)
        True on real documents; ``mask.sum()`` must equal ``n_real``.

    Returns
    -------
    scores : torch.Tensor of shape (batch, list)
        ``values`` at the real documents, 0 on padding, with the dtype and device of ``values``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import scatter_scores
    >>> mask = torch.tensor([[True, True, False], [True, False, False]])
    >>> padded = scatter_scores(torch.tensor([1.0, 2.0, 3.0]), mask)
    >>> padded
    tensor([[1., 2., 0.],
            [3., 0., 0.]])
    >>> padded[mask]
    tensor([1., 2., 3.])
    """
    out = torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    out[mask] = values
    return out


def set_reduce_sum(module, reduce_sum):
    """Give every submodule of ``module`` that reduces batch statistics the function summing over processes.

    Data-parallel training (:mod:`sklearn_ltr.training`) passes a differentiable
    ``reduce_sum(tensor) -> tensor`` that sums over every process, so that batch statistics
    are those of the global batch; ``None`` restores local statistics. The modules that take
    it declare a ``reduce_sum`` attribute (the masked batch norm, the two-tower click
    loss); the others are left alone.

    Parameters
    ----------
    module : torch.nn.Module
        A scorer or a criterion.
    reduce_sum : callable or None
        Sum over processes, or ``None``.

    Examples
    --------
    >>> from sklearn_ltr.nn import MLPScorer, set_reduce_sum
    >>> scorer = MLPScorer(4, hidden_sizes=(8,), batch_norm=True)
    >>> set_reduce_sum(scorer, lambda tensor: tensor)  # one process: the sum is the tensor
    >>> scorer.network[1].reduce_sum is not None
    True
    >>> set_reduce_sum(scorer, None)
    """
    for submodule in module.modules():
        if hasattr(type(submodule), "reduce_sum"):
            submodule.reduce_sum = reduce_sum


def _global_moments(x, reduce_sum):
    """Mean, biased variance and count of the rows of ``x`` over every process (autograd flows through)."""
    count = torch.full((1,), float(x.shape[0]), dtype=x.dtype, device=x.device)
    sums = reduce_sum(torch.cat([x.sum(dim=0), count]))
    n = sums[-1]
    mean = sums[:-1] / n.clamp(min=1.0)
    # Two passes, as torch's own batch norm: E[(x - mean)^2] loses less precision than E[x^2] - mean^2.
    var = reduce_sum(((x - mean) ** 2).sum(dim=0)) / n.clamp(min=1.0)
    return mean, var, n


class _MaskedBatchNorm(nn.BatchNorm1d):
    """Batch norm over real documents that tolerates a batch of one document in training.

    With a single document the batch variance is undefined; the running
    statistics are used instead of failing. During data-parallel training
    (``reduce_sum`` set by :func:`set_reduce_sum`) the statistics are those of the
    global batch, so that N processes train the model one process would (torch's
    ``SyncBatchNorm`` runs on GPUs only; this also runs on CPU with the gloo backend).
    """

    #: Sum over the processes of data-parallel training, or None (local statistics).
    reduce_sum = None

    def forward(self, x):
        if self.training and self.reduce_sum is not None:
            return self._synced_forward(x)
        if self.training and x.shape[0] < 2:
            return self._running_forward(x)
        return super().forward(x)

    def _running_forward(self, x):
        return nn.functional.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
        )

    def _synced_forward(self, x):
        mean, var, n = _global_moments(x, self.reduce_sum)
        n_rows = int(n.item())
        if n_rows < 2:
            return self._running_forward(x)
        with torch.no_grad():
            self.num_batches_tracked += 1
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
            self.running_mean.mul_(1 - factor).add_(factor * mean.detach())
            self.running_var.mul_(1 - factor).add_(factor * var.detach() * n_rows / (n_rows - 1))
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class ScoreHead(nn.Linear):
    """The last linear layer of a scorer, always computed in float32.

    Under bf16 autocast (``precision="bf16-mixed"``) a ``Linear`` would return bf16 scores:
    8 bits of mantissa, which tie most documents of a long list. This one leaves autocast for
    its own product and upcasts its input, so scores stay float32 whatever the precision of
    the layers before it. Its parameters are a ``Linear``'s (same ``state_dict`` keys).

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import ScoreHead
    >>> head = ScoreHead(4, 1)
    >>> with torch.autocast("cpu", dtype=torch.bfloat16):
    ...     head(torch.randn(3, 4)).dtype
    torch.float32
    """

    def forward(self, x):
        with torch.autocast(x.device.type, enabled=False):
            return super().forward(x.float())


def mlp(n_inputs, hidden_sizes, activation="relu", *, dropout=0.0, batch_norm=False):
    """``Linear`` -> [batch norm] -> activation -> [dropout] per hidden size, then a :class:`ScoreHead` to 1.

    The one MLP builder of :mod:`sklearn_ltr.nn` (the MLP scorer and the two-tower model's
    observation tower).

    Parameters
    ----------
    n_inputs : int
        Input width.
    hidden_sizes : tuple of int
        Width of each hidden layer (empty: a linear model).
    activation : str, default="relu"
        A key of :data:`ACTIVATIONS`.
    dropout : float, default=0.0
        Dropout after each hidden layer (none when 0).
    batch_norm : bool, default=False
        Masked batch norm after each hidden ``Linear``.

    Returns
    -------
    torch.nn.Sequential

    Examples
    --------
    >>> from sklearn_ltr.nn import mlp
    >>> mlp(5, (8,), dropout=0.1)
    Sequential(
      (0): Linear(in_features=5, out_features=8, bias=True)
      (1): ReLU()
      (2): Dropout(p=0.1, inplace=False)
      (3): ScoreHead(in_features=8, out_features=1, bias=True)
    )
    """
    layers, width = [], n_inputs
    for size in hidden_sizes:
        layers.append(nn.Linear(width, size))
        if batch_norm:
            layers.append(_MaskedBatchNorm(size))
        layers.append(ACTIVATIONS[activation]())
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = size
    layers.append(ScoreHead(width, 1))
    return nn.Sequential(*layers)


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

    See Also
    --------
    sklearn_ltr.RankNetRanker : The estimator that trains this network.

    References
    ----------
    C. Burges, T. Shaked, E. Renshaw, A. Lazier, M. Deeds, N. Hamilton and G. Hullender.
    "Learning to rank using gradient descent." ICML 2005.

    Examples
    --------
    A batch of two lists, the second padded from 2 to 4 documents:

    >>> import torch
    >>> from sklearn_ltr.nn import MLPScorer
    >>> _ = torch.manual_seed(0)
    >>> model = MLPScorer(n_features=3, hidden_sizes=(8, 4)).eval()
    >>> X = torch.randn(2, 4, 3)
    >>> mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    >>> with torch.no_grad():
    ...     scores = model(X, mask)
    >>> scores.shape
    torch.Size([2, 4])
    >>> scores[1, 2:].tolist()  # padding scores 0
    [0.0, 0.0]

    Each document is scored on its own: neither padding nor the other documents of its
    list change its score.

    >>> X_other = X.clone()
    >>> X_other[1, 2:] = 100.0  # other values in the padded slots
    >>> X_other[0, 1:] = 0.0  # other documents next to the first one
    >>> with torch.no_grad():
    ...     scores_other = model(X_other, mask)
    >>> torch.equal(scores_other[1], scores[1]), torch.equal(scores_other[0, 0], scores[0, 0])
    (True, True)
    """

    @classmethod
    def memory_cost(cls, **kwargs):
        """:class:`~sklearn_ltr.nn._cost.ModuleCost` of the module built with ``kwargs``: no attention."""
        arguments = bound_arguments(cls, kwargs)
        return ModuleCost(activation_width=sum(arguments["hidden_sizes"]) + 1)

    def __init__(self, n_features, hidden_sizes=(64, 32), activation="relu", dropout=0.0, batch_norm=False):
        super().__init__()
        self.network = mlp(n_features, hidden_sizes, activation, dropout=dropout, batch_norm=batch_norm)

    #: Scores each document on its own: the training batches hand it the real documents only,
    #: packed (``X`` of shape ``(n_real, n_features)``), so no padded feature tensor is built.
    packed_inputs = True

    def forward(self, X, mask, **unused):
        """Score the documents of a padded or packed batch.

        Parameters
        ----------
        X : torch.Tensor of shape (batch, list, n_features) or (n_real, n_features)
            Padded documents, or the real documents only in the row-major order of ``mask``
            (``X_padded[mask]``, as the library's batches give them to a module with
            ``packed_inputs = True``).
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.
        **unused
            Other per-document inputs of the batch, ignored.

        Returns
        -------
        scores : torch.Tensor of shape (batch, list)
            One score per document, 0 on padding.
        """
        if X.dim() == 2:  # packed: the real documents only
            return scatter_scores(self.network(X).squeeze(-1), mask)
        if self.training:  # batch norm's statistics must see real documents only
            return scatter_scores(self.network(X[mask]).squeeze(-1), mask)
        # Scoring: every document on its own, so the padded slots can run too (bucketed batches
        # pad little) and be zeroed after: no gather of the real rows, no scatter, no host sync.
        flat = self.network(X.reshape(-1, X.shape[-1]))  # 2-D: batch norm reads dim 1 as features
        return torch.where(mask, flat.view(mask.shape), 0.0)
