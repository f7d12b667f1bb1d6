"""Pointwise squared error."""

from __future__ import annotations

import torch

from sklearn_ltr.losses._common import check_inputs, reduce_queries, safe_divide

__all__ = ["mean_squared_error"]


def mean_squared_error(scores, labels, mask=None, *, reduction="mean", weights=None):
    r"""Pointwise squared error: each score regressed on its document's label.

    .. math::
        \ell_q = \frac{1}{n_q} \sum_{i=1}^{n_q} (s_i - y_i)^2

    The regression baseline of learning to rank (the pointwise approach, e.g. subset ranking
    by regression, Cossock and Zhang, 2006; TF-Ranking's ``MeanSquaredLoss`` and rax's
    ``pointwise_mse_loss``): it fits the labels' values, not their order, so it is neither
    invariant to a shift of a list's scores nor aware of positions. By default the loss is the
    mean of :math:`\ell_q` over queries, each query's documents averaged first, so long lists
    do not outweigh short ones.

    Parameters
    ----------
    scores : torch.Tensor of shape (batch, list)
        Ranking scores, read as predicted labels. Values in padded slots are ignored.
    labels : torch.Tensor of shape (batch, list)
        Relevance labels (graded), the regression targets as given.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.

    Returns
    -------
    torch.Tensor
        Scalar: the mean over queries of the per-query mean squared error (a ``[batch]``
        tensor with ``reduction="none"``). A single-document list gives that document's
        squared error.

    References
    ----------
    .. [1] D. Cossock and T. Zhang. "Subset Ranking Using Regression." COLT 2006.
    .. [2] T.-Y. Liu. "Learning to Rank for Information Retrieval." Foundations and Trends in
       Information Retrieval 3(3), 2009 (section 2, the pointwise approach).

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.losses import mean_squared_error
    >>> scores, labels = torch.tensor([[2.5, 0.0, 1.0]]), torch.tensor([[2.0, 0.0, 2.0]])
    >>> round(mean_squared_error(scores, labels).item(), 4)  # (0.25 + 0 + 1) / 3
    0.4167

    Queries count equally, whatever their lengths:

    >>> mask = torch.tensor([[True, True, True], [True, False, False]])
    >>> scores = torch.tensor([[2.5, 0.0, 1.0], [1.0, 9.0, 9.0]])
    >>> labels = torch.tensor([[2.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    >>> mean_squared_error(scores, labels, mask, reduction="none")
    tensor([0.4167, 1.0000])
    """
    scores, labels, mask = check_inputs(scores, labels, mask)
    per_doc = torch.where(mask, (scores - labels).square(), 0.0)
    n_docs = mask.sum(dim=1).to(scores.dtype)
    return reduce_queries(safe_divide(per_doc.sum(dim=1), n_docs), mask, reduction, weights)
